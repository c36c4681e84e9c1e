//! Page-aligned I/O buffers. A misaligned read() buffer halves the copy rate and O_DIRECT needs
//! alignment; large buffers ask for transparent huge pages, which doubled O_DIRECT throughput on
//! this project's machines. A dropped buffer is kept for the next one of its size
//! (up to [`POOL_BYTES`] in all): a program keeps its I/O buffer across runs, as IOR and fio do,
//! and faulting in and releasing a fresh 2 MiB huge page took about 1 ms of a 45 ms phase.

use std::alloc::{Layout, alloc, dealloc};

const HUGE: usize = 2 << 20;
/// From this size a buffer is rounded up to whole huge pages.
const HUGE_FROM: usize = 256 << 10;

/// At most this many bytes of dropped buffers are kept for reuse.
pub const POOL_BYTES: usize = 64 << 20;

/// A dropped buffer's memory, kept for the next buffer of the same layout.
struct Pooled(*mut u8, Layout);

// SAFETY: a pooled allocation is owned by the pool alone until it is taken out again.
unsafe impl Send for Pooled {}

static POOL: std::sync::Mutex<Vec<Pooled>> = std::sync::Mutex::new(Vec::new());

/// A kept allocation of `layout`, if there is one.
fn take(layout: Layout) -> Option<*mut u8> {
    let mut pool = POOL.lock().ok()?;
    let i = pool.iter().position(|p| p.1 == layout)?;
    Some(pool.swap_remove(i).0)
}

/// Keeps `ptr` for reuse, or gives it back to the allocator when the pool is full.
fn put(ptr: *mut u8, layout: Layout) {
    if let Ok(mut pool) = POOL.lock() {
        let kept: usize = pool.iter().map(|p| p.1.size()).sum();
        if kept + layout.size() <= POOL_BYTES {
            pool.push(Pooled(ptr, layout));
            return;
        }
    }
    // SAFETY: allocated in new() with this exact layout and no longer referenced.
    unsafe { dealloc(ptr, layout) };
}

/// A zeroed, aligned buffer: pre-touched heap memory ([`AlignedBuf::new`]), or a mapping whose
/// pages arrive on first use ([`AlignedBuf::untouched`]).
pub struct AlignedBuf {
    ptr: *mut u8,
    len: usize,
    layout: Layout,
    /// Made by `untouched`: its own mapping, unmapped on drop (not pooled).
    mapped: bool,
}

// SAFETY: the buffer is exclusively owned memory, like a Vec<u8>.
unsafe impl Send for AlignedBuf {}
// SAFETY: shared references only allow reads of plain bytes.
unsafe impl Sync for AlignedBuf {}

impl AlignedBuf {
    /// A buffer of `len` bytes (at least 1), 4 KiB aligned, or from 256 KiB on 2 MiB aligned and
    /// backed by transparent huge pages.
    pub fn new(len: usize) -> Self {
        let len = len.max(1);
        let align = if len >= HUGE_FROM { HUGE } else { 4096 };
        let cap = len.div_ceil(align) * align;
        let layout = Layout::from_size_align(cap, align).expect("valid buffer layout");
        if let Some(ptr) = take(layout) {
            // SAFETY: a kept allocation of this layout, its pages already touched; zeroed again
            // as a new buffer is.
            unsafe { std::ptr::write_bytes(ptr, 0, cap) };
            return AlignedBuf {
                ptr,
                len,
                layout,
                mapped: false,
            };
        }
        // Not `alloc_zeroed`: for this alignment it zeroes (touches) every page before the advice
        // below could apply, and the buffer ended up on 4 KiB pages. On 4 KiB pages a 1 MiB
        // O_DIRECT read needs 256 segments, and a virtio disk taking 254 per request split every
        // one of them in two (4097 requests for 2048 reads of 1 MiB).
        // SAFETY: layout has non-zero size.
        let ptr = unsafe { alloc(layout) };
        if ptr.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        if align == HUGE {
            // SAFETY: ptr..ptr+cap is our own allocation; the advice only changes page size.
            unsafe { libc::madvise(ptr.cast(), cap, libc::MADV_HUGEPAGE) };
        }
        // Zero (and so touch) every page now, after the advice, so the first measured run does
        // not pay for faults.
        // SAFETY: ptr is valid for cap bytes, owned by us alone.
        unsafe { std::ptr::write_bytes(ptr, 0, cap) };
        AlignedBuf {
            ptr,
            len,
            layout,
            mapped: false,
        }
    }

    /// A buffer of `len` bytes whose pages are not touched now: from 256 KiB a mapping of its own,
    /// 2 MiB aligned and advised onto huge pages, each page zeroed by the kernel when first used
    /// (smaller ones, or when the mapping fails, are as [`AlignedBuf::new`]). For an io_uring
    /// ring's 32 MiB of slots: touching them up front took 5-90 ms here (the host backs memory the
    /// guest had freed only when it is touched again), while the first reads into them overlap
    /// those faults with the device's time.
    pub fn untouched(len: usize) -> Self {
        let len = len.max(1);
        if len < HUGE_FROM {
            return AlignedBuf::new(len);
        }
        let cap = len.div_ceil(HUGE) * HUGE;
        let Ok(layout) = Layout::from_size_align(cap, HUGE) else {
            return AlignedBuf::new(len);
        };
        let span = cap + HUGE;
        // SAFETY: a fresh private anonymous mapping; no existing memory is named.
        let raw = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                span,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if raw == libc::MAP_FAILED {
            return AlignedBuf::new(len);
        }
        let base = raw as usize;
        let start = base.next_multiple_of(HUGE);
        let (head, tail) = (start - base, base + span - (start + cap));
        // SAFETY: both ranges lie inside the mapping just made and outside [start, start+cap),
        // which is all this buffer keeps; the advice only changes page size.
        unsafe {
            if head > 0 {
                libc::munmap(raw, head);
            }
            if tail > 0 {
                libc::munmap((start + cap) as *mut libc::c_void, tail);
            }
            libc::madvise(start as *mut libc::c_void, cap, libc::MADV_HUGEPAGE);
        }
        AlignedBuf {
            ptr: start as *mut u8,
            len,
            layout,
            mapped: true,
        }
    }

    /// Bytes asked for.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Never true: a buffer holds at least one byte.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The bytes.
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: ptr is valid for len initialised (zeroed) bytes for the life of self.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    /// The bytes, to write.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as above, and &mut self gives exclusive access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }

    /// Where the bytes start, for the kernel to write into.
    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        if self.mapped {
            // SAFETY: the mapping made in `untouched`, of exactly this size, no longer referenced.
            unsafe { libc::munmap(self.ptr.cast(), self.layout.size()) };
        } else {
            put(self.ptr, self.layout);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_and_zeroed() {
        for len in [0usize, 1, 4095, 4096, 1 << 20, 3 << 20] {
            let b = AlignedBuf::new(len);
            assert_eq!(b.as_slice().as_ptr() as usize % 4096, 0);
            assert!(b.as_slice().iter().all(|x| *x == 0));
            assert_eq!(b.len(), len.max(1));
        }
    }

    #[test]
    fn a_dropped_buffer_is_reused_zeroed_and_the_pool_is_bounded() {
        // A size no other test uses, so that parallel tests do not take it first.
        let len = (13 << 20) + 12345;
        let mut a = AlignedBuf::new(len);
        a.as_mut_slice().fill(7);
        let ptr = a.as_slice().as_ptr();
        drop(a);
        let b = AlignedBuf::new(len);
        assert_eq!(b.as_slice().as_ptr(), ptr, "the kept allocation is reused");
        assert!(b.as_slice().iter().all(|x| *x == 0));
        // Many at once: the pool keeps no more than POOL_BYTES of them.
        let many: Vec<_> = (0..6).map(|_| AlignedBuf::new(len)).collect();
        drop(many);
        let kept: usize = POOL.lock().unwrap().iter().map(|p| p.1.size()).sum();
        assert!(kept <= POOL_BYTES, "{kept}");
    }

    #[test]
    fn a_large_buffer_sits_on_huge_pages_where_the_kernel_gives_them() {
        let thp = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled")
            .unwrap_or_default();
        if !(thp.contains("[always]") || thp.contains("[madvise]")) {
            eprintln!(
                "skipped: transparent huge pages are off here ({})",
                thp.trim()
            );
            return;
        }
        // A size no other test uses (the pool would hand back an older allocation), as large as
        // an io_uring ring's 32 slots of 1 MiB: zeroing before the advice left those on 4 KiB
        // pages while an 8 MiB buffer still came out huge.
        let b = AlignedBuf::new((40 << 20) + 4321);
        let at = b.as_slice().as_ptr() as u64;
        let rows = crate::vm::smaps::read_self().unwrap();
        let row = rows
            .iter()
            .find(|r| r.start <= at && at < r.end)
            .expect("the buffer's mapping");
        // 42 MiB rounded: at least 18 of its 21 huge pages (a fragmented machine may refuse some).
        assert!(
            row.anon_huge_kb >= 36 << 10,
            "only {} KiB of the buffer's {} KiB mapping on huge pages",
            row.anon_huge_kb,
            row.size_kb
        );
    }

    #[test]
    fn an_untouched_buffer_is_zeroed_aligned_and_not_resident_until_used() {
        for len in [1usize, 100 << 10, (9 << 20) + 777] {
            let mut b = AlignedBuf::untouched(len);
            assert_eq!(b.len(), len);
            assert_eq!(b.as_slice().as_ptr() as usize % 4096, 0);
            if len >= HUGE_FROM {
                let at = b.as_slice().as_ptr() as u64;
                assert_eq!(at % HUGE as u64, 0);
                let rows = crate::vm::smaps::read_self().unwrap();
                let row = rows.iter().find(|r| r.start <= at && at < r.end).unwrap();
                assert_eq!(row.rss_kb, 0, "nothing touched yet");
                assert_eq!(
                    row.size_kb,
                    10 << 10,
                    "its own mapping, in whole huge pages"
                );
            }
            assert!(b.as_slice().iter().all(|x| *x == 0));
            b.as_mut_slice().fill(3);
            assert!(b.as_slice().iter().all(|x| *x == 3));
        }
    }
}
