//! Whether the page cache serves a buffered ring's reads, and what the ring keeps in flight
//! then.

/// Bytes of slots a buffered ring keeps in use while the page cache serves its reads (the core's
/// L2 here is 2 MiB). Warm 1 GiB at depth 32, three interleaved rounds against the ring that kept
/// 2 MiB in flight over three slots: 1 MiB uring-uncached 9161-9546 MiB/s against 8635-8914,
/// 64 KiB uring 9092-9281 against 8422-8621, random 4 KiB unchanged (4787-5061 against
/// 4824-4977), cold unchanged; fio's io_uring at its best depth (1, one buffer) 7758-8000 in
/// earlier minutes where the ring of two slots ran at 7460-7998.
pub const SERVED_BYTES: usize = 1 << 20;

/// Waits in a row that must find their completions posted before a ring counts as served by the
/// page cache. A cold stream's read-ahead serves some requests at once and makes others wait:
/// taken as served after one, cold 1 MiB uring-uncached fell from 1408-1509 to 1322-1346 MiB/s.
pub const SERVED_STREAK: u32 = 8;

/// Whether the page cache serves a buffered ring's reads: the last [`SERVED_STREAK`] waits
/// found every request in flight completed already, during its submission.
#[derive(Debug, Default)]
pub(super) struct Served {
    streak: u32,
}

impl Served {
    /// A wait found `posted` completions with `busy` requests in flight.
    pub(super) fn saw(&mut self, posted: usize, busy: usize) {
        self.streak = if posted > 0 && posted == busy {
            self.streak.saturating_add(1)
        } else {
            0
        };
    }

    /// The requests a ring of `depth` slots of `slot_len` bytes keeps in flight, with `ready`
    /// completions not yet digested. Served by the page cache, more in flight overlaps nothing:
    /// completions are digested first and at most [`SERVED_BYTES`] of slots are in use, so the
    /// freed slot is taken again (the free list is a stack) and the copy's destination stays in
    /// the core's cache.
    pub(super) fn depth(&self, depth: usize, slot_len: usize, ready: usize) -> usize {
        if self.streak < SERVED_STREAK {
            depth
        } else if ready > 0 {
            0
        } else {
            depth.min((SERVED_BYTES / slot_len.max(1)).max(1))
        }
    }
}
