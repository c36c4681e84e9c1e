//! `uring`, `uring-direct` and `uring-uncached`: io_uring reads with up to `--depth` requests in
//! flight per thread, each into its own page-aligned buffer; completions are XORed as they arrive
//! (XOR does not care about order). `uring-direct` opens with O_DIRECT and widens each read to the
//! alignment; `uring-uncached` reads with `RWF_DONTCACHE` (as `uncached` does with preadv2). The
//! engine queues, waits and digests ([`AsyncWorker`]); the shared loop in `driver` chooses the
//! pieces, counts and times the blocks and stops at the run's limits, as for every engine.
//!
//! The one place outside `sys/` with `unsafe`: pushing an entry onto the ring hands the kernel a
//! buffer address, and the rule that makes it sound (the buffer lives, untouched, until its
//! completion is reaped) is kept by this worker: a slot is freed only when its completion is
//! digested, a failed wait reaps every request before it returns ([`drain`]), and a worker
//! dropped with requests in flight reaps them first (or gives its buffers up for good).

use super::direct::{
    aligned_cover, direct_buffer_len, direct_piece_max, open_direct, xor_direct_piece,
};
use super::{
    AsyncWorker, EngineInfo, Job, MAX_IO, PieceDone, ReadEngine, Work, Workers, buffer_len,
    pread_full, shrank,
};
use crate::error::{Error, Result, describe_io};
use crate::sys::buf::AlignedBuf;
use crate::workload::Block;
use io_uring::{IoUring, opcode, types};
use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::sync::Arc;

mod ring;
use ring::{Tuning, tuned_ring};
mod served;
mod slots;
use served::Served;
use slots::{give_back, spare_slots, take_free};

/// The io_uring engines: buffered, or with O_DIRECT.
pub struct Uring {
    direct: bool,
    /// Flags of every read (`RWF_DONTCACHE` for `uring-uncached`).
    rw_flags: i32,
}

impl Uring {
    /// `uring`: buffered reads through the page cache.
    pub const BUFFERED: Uring = Uring {
        direct: false,
        rw_flags: 0,
    };
    /// `uring-uncached`: buffered reads whose pages leave the cache once read (RWF_DONTCACHE).
    pub const UNCACHED: Uring = Uring {
        direct: false,
        rw_flags: libc::RWF_DONTCACHE,
    };
    /// `uring-direct`: O_DIRECT reads.
    pub const DIRECT: Uring = Uring {
        direct: true,
        rw_flags: 0,
    };
}

/// Creates a ring, turning the kernel's refusal into "unsupported" with the reason.
pub fn new_ring(depth: u32, method: &str) -> Result<IoUring> {
    IoUring::new(depth.max(1)).map_err(|e| {
        let why = match e.raw_os_error() {
            Some(libc::ENOSYS) => "this kernel has no io_uring".to_string(),
            Some(libc::EPERM) => {
                "io_uring is disabled here (kernel.io_uring_disabled or a seccomp policy)"
                    .to_string()
            }
            Some(libc::ENOMEM) => "no memory for the ring (RLIMIT_MEMLOCK too low?)".to_string(),
            _ => format!("io_uring_setup failed: {}", describe_io(&e)),
        };
        Error::unsupported(format!("method {method} unsupported"), why)
    })
}

/// Submits `k` (at most the ring's size) NOP requests, waits for them, returns how many completed.
pub fn nop_batch(ring: &mut IoUring, k: usize) -> Result<usize> {
    for _ in 0..k {
        let nop = opcode::Nop::new().build();
        // SAFETY: a NOP references no memory, so nothing must outlive its completion.
        unsafe { ring.submission().push(&nop) }
            .map_err(|_| Error::failed("io_uring failed", "submission queue full"))?;
    }
    ring.submit_and_wait(k)
        .map_err(|e| Error::failed("io_uring failed", describe_io(&e)))?;
    Ok(ring.completion().count())
}

/// Waits until `busy` requests have completed: `wait` blocks for at least one completion and
/// returns how many it reaped. Interrupted or failing waits are retried a bounded number of
/// times; false when requests may still be in flight after that.
fn drain(mut busy: usize, mut wait: impl FnMut() -> std::io::Result<usize>) -> bool {
    let mut failures = 0;
    while busy > 0 {
        match wait() {
            Ok(n) => busy = busy.saturating_sub(n),
            Err(e) if e.raw_os_error() == Some(libc::EINTR) => {}
            Err(_) => {
                failures += 1;
                if failures > 100 {
                    return false;
                }
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        }
    }
    true
}

/// O_DIRECT requests are handed to the kernel as they are queued (as fio does by default), not
/// all free slots at once: on this project's virtual disk, refilling 32 slots in one submission
/// held random 4 KiB reads at 0.83x fio (each request took 40% longer in the device); in five
/// interleaved rounds batches of 1, 2, 4 and 8 gave 65-69, 60-66, 59-64 and 59-63 KIOPS against
/// fio's 63-71. Buffered reads served from the page cache complete during submission, and there
/// one submission for all free slots is 15-30% faster than one per 4.
pub const DIRECT_BATCH: usize = 1;

/// From this size a ring's buffer region is neither touched nor registered up front: its pages
/// are faulted in by the first reads into them, while the device works. Registering pins (and so
/// faults in) the whole region before the first request: for 32 slots of 1 MiB that took 5-90
/// ms on this VM, against 1-2 µs to pin a 1 MiB buffer per request. Smaller regions (random
/// 4 KiB at depth 32: 128 KiB) are registered as fio does.
pub const UNTOUCHED_FROM: usize = 4 << 20;

struct UringWorker {
    /// Declared before `bufs`: the ring (and its registration of them) goes first.
    ring: IoUring,
    tuning: Tuning,
    /// The thread that enabled a deferred ring: the only one that may submit to it.
    issuer: Option<std::thread::ThreadId>,
    depth_asked: u32,
    /// The ring was made with a polling kernel thread.
    sqpoll: bool,
    name: &'static str,
    file: Arc<File>,
    /// One region for all slots (so it sits on huge pages), `slot_len` bytes each.
    bufs: AlignedBuf,
    slot_len: usize,
    /// Requests in flight at most.
    depth: usize,
    /// Requests queued before they are handed to the kernel without waiting.
    submit_every: usize,
    /// Buffered reads: `submit_every` follows the page cache (see [`UringWorker::wait`]).
    adapt: bool,
    /// Buffered reads: whether the page cache serves them (see [`Served`]).
    served: Served,
    direct: bool,
    /// Flags of every read.
    rw_flags: i32,
    path: PathBuf,
    work: Work,
    /// The piece each slot's request reads (None: the slot is free).
    pieces: Vec<Option<Block>>,
    /// Free slots: O_DIRECT takes the one freed longest ago (front), buffered reads the one
    /// freed last (back); see [`UringWorker::take_free`].
    free: std::collections::VecDeque<usize>,
    /// Requests handed to the ring whose completion has not been reaped.
    busy: usize,
    /// Completions reaped but not yet digested: their slots are not free yet.
    ready: std::collections::VecDeque<(usize, i32)>,
}

impl ReadEngine for Uring {
    fn info(&self) -> EngineInfo {
        EngineInfo {
            mapped: false,
            direct: self.direct,
            uses_depth: true,
        }
    }

    fn prepare(&self, job: &Job<'_>) -> Result<Workers> {
        let (src, w, opts) = (job.src, job.w, job.opts);
        let name = match (self.direct, self.rw_flags) {
            (true, _) => "uring-direct",
            (false, 0) => "uring",
            (false, _) => "uring-uncached",
        };
        // Buffered: a descriptor of its own with the pattern's fadvise hint, as fio gives by
        // default: without POSIX_FADV_RANDOM each cold random 4 KiB read started a read-ahead
        // of up to read_ahead_kb (8 MiB here), and uring-uncached ran at 0.80x fio.
        let file = Arc::new(if self.direct {
            open_direct(src, name)?
        } else {
            super::open_advised(job)?
        });
        if self.rw_flags != 0 {
            // The flag goes through the same kernel path for io_uring as for preadv2.
            super::pread::probe(&file, &src.path, src.size, self.rw_flags, name)?;
        }
        let depth = buffered_depth(self.direct, w, opts.depth.clamp(1, 4096));
        let len = if self.direct {
            direct_buffer_len(w)
        } else {
            buffer_len(w)
        };
        let slots = depth as usize + spare_slots(self.direct, len);
        super::async_workers((0..w.threads).map(|_| {
            let region = len * slots;
            let mut bufs = if region >= UNTOUCHED_FROM {
                AlignedBuf::untouched(region)
            } else {
                AlignedBuf::new(region)
            };
            let (ring, tuning) = tuned_ring(depth, name, file.as_raw_fd(), &mut bufs, opts.sqpoll)
                .map_err(|e| e.at(&src.path))?;
            Ok(UringWorker {
                ring,
                tuning,
                issuer: None,
                depth_asked: depth,
                sqpoll: opts.sqpoll,
                name,
                file: file.clone(),
                bufs,
                slot_len: len,
                depth: depth as usize,
                // A polling kernel thread that has gone to sleep is woken only by a submit;
                // while it polls, a submit is a flag check, no system call.
                // Buffered: one submission for every free slot while the page cache serves the
                // reads, one per request once it does not (see `wait`).
                submit_every: if self.direct || opts.sqpoll {
                    DIRECT_BATCH
                } else {
                    depth as usize
                },
                adapt: !self.direct && !opts.sqpoll,
                served: Served::default(),
                direct: self.direct,
                rw_flags: self.rw_flags,
                path: src.path.clone(),
                work: opts.work,
                // `depth` slots plus spares (see [`slots`]), so a completed block is digested
                // while the slot read next is already in flight.
                pieces: vec![None; slots],
                free: (0..slots).rev().collect(),
                busy: 0,
                ready: std::collections::VecDeque::with_capacity(slots),
            })
        }))
    }
}

/// In-flight bytes a buffered sequential run keeps at most (at least 2 requests): the kernel's
/// read-ahead gives the device its parallelism, and more requests only cost. 1 MiB blocks of a
/// 1 GiB file, 5 runs each: cold `uring` 1879 MiB/s at depth 2 against 1111 at 32, cold
/// `uring-uncached` 1531 against 1210; warm `uring-uncached` 6044 against 5059 (a 33 MiB ring
/// region is faulted in during the run; 3 MiB is touched when the ring is set up).
pub const BUFFERED_SEQ_BYTES: u64 = 2 << 20;

/// The depth a worker keeps: `asked`, but for buffered sequential reads no more than
/// [`BUFFERED_SEQ_BYTES`] in flight (and at least 2 requests).
pub fn buffered_depth(direct: bool, w: &crate::workload::Workload, asked: u32) -> u32 {
    if direct || w.pattern != crate::workload::Pattern::Seq {
        return asked;
    }
    let cap = (BUFFERED_SEQ_BYTES / w.bs.max(1)).max(2);
    asked.min(cap.min(u32::MAX as u64) as u32)
}

fn slot_of(bufs: &mut AlignedBuf, slot_len: usize, i: usize) -> &mut [u8] {
    &mut bufs.as_mut_slice()[i * slot_len..(i + 1) * slot_len]
}

impl UringWorker {
    /// Moves the posted completions to `ready`, and for buffered reads sets how many requests
    /// go to the kernel at once.
    fn reap(&mut self) {
        let in_flight = self.busy;
        for c in self.ring.completion() {
            self.busy -= 1;
            self.ready.push_back((c.user_data() as usize, c.result()));
        }
        if self.adapt {
            // Every request done by the time the wait returns: the page cache served them during
            // submission, where one submission for all free slots is 15-30% faster than one per
            // 4. Some still out: the device serves them, and a request handed over as soon as it
            // is queued keeps it busier (cold random 4 KiB uring-uncached at depth 32: 115 KIOPS
            // one at a time against 90 in batches of 32, fio 95-106, 3 runs each).
            self.submit_every = if self.busy == 0 && in_flight > 1 {
                self.depth
            } else {
                DIRECT_BATCH
            };
        }
    }

    fn slot(&self, i: usize) -> &[u8] {
        &self.bufs.as_slice()[i * self.slot_len..(i + 1) * self.slot_len]
    }

    fn slot_mut(&mut self, i: usize) -> &mut [u8] {
        slot_of(&mut self.bufs, self.slot_len, i)
    }

    /// Makes this thread the ring's one issuer (a deferred ring is enabled by the thread that
    /// submits; a later run on another thread gets a ring of its own).
    fn claim(&mut self) -> Result<()> {
        if !self.tuning.deferred {
            return Ok(());
        }
        let me = std::thread::current().id();
        match self.issuer {
            Some(t) if t == me => return Ok(()),
            Some(_) => {
                let fd = self.file.as_raw_fd();
                let (ring, tuning) =
                    tuned_ring(self.depth_asked, self.name, fd, &mut self.bufs, self.sqpoll)?;
                self.ring = ring;
                self.tuning = tuning;
                if !tuning.deferred {
                    self.issuer = None;
                    return Ok(());
                }
            }
            None => {}
        }
        self.ring
            .submitter()
            .register_enable_rings()
            .map_err(|e| Error::io("io_uring failed", &self.path, &e))?;
        self.issuer = Some(me);
        Ok(())
    }

    /// Puts `entry` on the submission queue. A polling kernel thread commits the queue's head
    /// only after a batch, so completions of the batch can arrive while the queue still looks
    /// full: then it waits (yielding, at most a second) for the thread to catch up.
    ///
    /// # Safety
    /// As for [`io_uring::squeue::SubmissionQueue::push`]: what `entry` points to outlives it.
    unsafe fn push(&mut self, entry: &io_uring::squeue::Entry) -> bool {
        // SAFETY: passed on from the caller.
        if unsafe { self.ring.submission().push(entry) }.is_ok() {
            return true;
        }
        if !self.sqpoll {
            return false;
        }
        let until = std::time::Instant::now() + std::time::Duration::from_secs(1);
        while std::time::Instant::now() < until {
            let _ = self.ring.submit();
            std::thread::yield_now();
            // SAFETY: passed on from the caller.
            if unsafe { self.ring.submission().push(entry) }.is_ok() {
                return true;
            }
        }
        false
    }

    /// The read of `len` bytes at `start` into `ptr`, through what this ring has registered.
    fn entry(&self, ptr: *mut u8, len: u32, start: u64, slot: usize) -> io_uring::squeue::Entry {
        let fd = types::Fd(self.file.as_raw_fd());
        let e = match (self.tuning.fixed_file, self.tuning.fixed_buf) {
            (true, true) => opcode::ReadFixed::new(types::Fixed(0), ptr, len, 0)
                .offset(start)
                .rw_flags(self.rw_flags)
                .build(),
            (false, true) => opcode::ReadFixed::new(fd, ptr, len, 0)
                .offset(start)
                .rw_flags(self.rw_flags)
                .build(),
            (true, false) => opcode::Read::new(types::Fixed(0), ptr, len)
                .offset(start)
                .rw_flags(self.rw_flags)
                .build(),
            (false, false) => opcode::Read::new(fd, ptr, len)
                .offset(start)
                .rw_flags(self.rw_flags)
                .build(),
        };
        e.user_data(slot as u64)
    }

    /// The bytes to read for a piece: the piece itself, or its aligned cover for O_DIRECT.
    fn io_range(&self, piece: Block) -> (u64, u64) {
        if self.direct {
            aligned_cover(piece)
        } else {
            (piece.offset, piece.len)
        }
    }

    /// XORs a completed read of `n` bytes into slot `slot` holding `piece`.
    fn complete(&mut self, slot: usize, piece: Block, n: usize) -> Result<u32> {
        let (start, _) = self.io_range(piece);
        let skip = (piece.offset - start) as usize;
        let want = skip + piece.len as usize;
        if n >= want {
            let b = &self.slot(slot)[skip..want];
            return Ok(self.work.digest(piece.offset, b));
        }
        if self.direct {
            // A short O_DIRECT read: finish synchronously through the same aligned path.
            let buf = slot_of(&mut self.bufs, self.slot_len, slot);
            return xor_direct_piece(&self.file, buf, piece, &self.path, self.work);
        }
        let buf = &mut slot_of(&mut self.bufs, self.slot_len, slot)[..want];
        let rest = if self.rw_flags == 0 {
            pread_full(&self.file, &mut buf[n..], start + n as u64)
        } else {
            super::pread::preadv2_full(&self.file, &mut buf[n..], start + n as u64, self.rw_flags)
        }
        .map_err(|e| Error::io("read failed", &self.path, &e))?;
        if n + rest < want {
            return Err(shrank(&self.path, start + (n + rest) as u64));
        }
        Ok(self.work.digest(piece.offset, &buf[skip..want]))
    }

    /// The slot the next request reads into (see [`slots::take_free`]).
    fn take_free(&mut self) -> Option<usize> {
        take_free(&mut self.free, self.direct)
    }

    /// Puts back a slot [`UringWorker::take_free`] gave that was not used.
    fn give_back(&mut self, slot: usize) {
        give_back(&mut self.free, self.direct, slot)
    }
}

impl AsyncWorker for UringWorker {
    /// Pieces fit a slot, even for parts of another workload (`Prepared::run_over`).
    fn max_piece(&self) -> u64 {
        if self.direct {
            direct_piece_max(self.slot_len)
        } else {
            (self.slot_len as u64).min(MAX_IO)
        }
    }

    fn begin(&mut self) -> Result<()> {
        if self.depth == 0 {
            return Err(Error::failed(
                "read failed",
                "this ring failed earlier and its buffers were given up",
            )
            .at(&self.path));
        }
        self.claim()
    }

    /// `depth` requests in flight, from free slots (spares included) before any completed
    /// block is digested; while the page cache serves the ring, digested first and at most
    /// [`served::SERVED_BYTES`] of them (see [`Served::depth`]).
    fn has_room(&self) -> bool {
        self.busy
            < self
                .served
                .depth(self.depth, self.slot_len, self.ready.len())
            && !self.free.is_empty()
    }

    fn queue(&mut self, piece: Block) -> Result<usize> {
        let Some(slot) = self.take_free() else {
            return Err(Error::failed("read failed", "no free io_uring slot").at(&self.path));
        };
        let (start, len) = self.io_range(piece);
        let ptr = self.slot_mut(slot).as_mut_ptr();
        let entry = self.entry(ptr, len as u32, start, slot);
        // SAFETY: the buffer of `slot` stays alive and untouched until its completion is reaped
        // and digested (the slot is not freed before then, and the core loop does not return
        // while any request is in flight: `in_flight` counts it), and the file outlives the
        // ring's use of it (registered or not: the worker holds it). The queue has room: no
        // more than depth entries are ever outstanding (a polling thread's lag is waited out).
        if !unsafe { self.push(&entry) } {
            self.give_back(slot);
            return Err(
                Error::failed("read failed", "io_uring submission queue full").at(&self.path),
            );
        }
        self.pieces[slot] = Some(piece);
        self.busy += 1;
        if self.ring.submission().len() >= self.submit_every {
            // A failure here shows again in the wait, which handles it.
            let _ = self.ring.submit();
        }
        Ok(slot)
    }

    fn submit(&mut self) {
        // A failure here shows again in the next wait, which handles it (reaping first).
        let _ = self.ring.submit();
    }

    fn in_flight(&self) -> usize {
        self.busy + self.ready.len()
    }

    fn wait(&mut self) -> Result<()> {
        if self.adapt {
            // Hand over what is queued first: served from the page cache, it completes during
            // that submission, and the completions are there without waiting.
            if !self.ring.submission().is_empty() {
                let _ = self.ring.submit();
            }
            let posted = self.ring.completion().len();
            self.served.saw(posted, self.busy);
            if posted > 0 {
                self.reap();
                return Ok(());
            }
        }
        loop {
            match self.ring.submit_and_wait(1) {
                Ok(_) => break,
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
                Err(e) => {
                    // The kernel may still write into the buffers in flight: reap every
                    // completion before returning, or, if the ring cannot be waited on any
                    // more, never free those buffers.
                    let err = Error::io("io_uring submit failed", &self.path, &e);
                    let ring = &mut self.ring;
                    let drained = drain(self.busy, || {
                        ring.submit_and_wait(1)?;
                        Ok(ring.completion().count())
                    });
                    self.busy = 0;
                    self.ready.clear();
                    if !drained {
                        std::mem::forget(std::mem::replace(&mut self.bufs, AlignedBuf::new(0)));
                        self.depth = 0;
                    }
                    return Err(err);
                }
            }
        }
        self.reap();
        Ok(())
    }

    fn digest(&mut self) -> Option<(usize, Result<PieceDone>)> {
        let (slot, res) = self.ready.pop_front()?;
        self.free.push_back(slot);
        let piece = self.pieces.get_mut(slot).and_then(Option::take)?;
        let done = if res < 0 {
            let e = std::io::Error::from_raw_os_error(-res);
            Err(Error::io("read failed", &self.path, &e))
        } else {
            self.complete(slot, piece, res as usize)
                .map(|xor| PieceDone {
                    xor,
                    ops: 1,
                    waited: 0,
                })
        };
        Some((slot, done))
    }
}

impl Drop for UringWorker {
    /// Never frees buffers the kernel may still write into (a run that unwound mid-way).
    fn drop(&mut self) {
        if self.busy == 0 {
            return;
        }
        let ring = &mut self.ring;
        let drained = drain(self.busy, || {
            ring.submit_and_wait(1)?;
            Ok(ring.completion().count())
        });
        if !drained {
            std::mem::forget(std::mem::replace(&mut self.bufs, AlignedBuf::new(0)));
        }
    }
}

#[cfg(test)]
mod tests;
