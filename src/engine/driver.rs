//! The one loop over blocks. A synchronous engine (read, pread, direct, mmap, and every writer)
//! supplies only "move this piece" ([`SyncWorker`]); the loop here cuts blocks into pieces, times
//! each block into the latency log, counts bytes, requests and blocks, and stops at the run's
//! limits. An engine that keeps many requests in flight (io_uring) supplies only "queue this
//! piece", "wait" and "digest what completed" ([`AsyncWorker`]); its loop here counts, times and
//! stops the same way. [`run_parts`] runs one worker per part, each on its own thread.

use super::{EngineOptions, MAX_IO, Moved, ReadMethod, Source};
use crate::error::{Error, Result};
use crate::measure::latency::{Histogram, OpLog};
use crate::workload::{Block, Part, Workload};
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Instant;

mod overlapped;
pub use overlapped::{AsyncWorker, async_workers};

/// One thread's state for moving its part: buffers, descriptors, rings.
pub trait Worker: Send {
    /// Moves the part, calling `log.begin()`/`log.end()` around each block and stopping early
    /// when `end()` says the deadline passed.
    fn run(&mut self, part: &Part, log: &mut OpLog) -> Result<Moved>;
}

/// What moving one piece did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PieceDone {
    /// XOR of the piece's bytes at their file offsets ([`crate::xor::xor_at`]).
    pub xor: u32,
    /// Requests issued to the kernel for it (system calls; 0 for a mapping).
    pub ops: u64,
    /// Pieces the page cache could not serve without waiting (`pread-nowait` only: read again
    /// with a plain pread).
    pub waited: u64,
}

impl PieceDone {
    /// A piece moved by one system call: `bytes`, which lie at `offset` in the file.
    pub fn one_call(offset: u64, bytes: &[u8]) -> PieceDone {
        PieceDone {
            xor: crate::xor::xor_at(offset, bytes),
            ops: 1,
            waited: 0,
        }
    }
}

/// A synchronous engine's per-thread state: it moves one piece at a time, the core does the rest.
pub trait SyncWorker: Send {
    /// The largest piece it takes; larger blocks are cut into pieces of this size.
    fn max_piece(&self) -> u64 {
        MAX_IO
    }

    /// Moves `piece` (all of it, or an error) and says what that took.
    fn piece(&mut self, piece: Block) -> Result<PieceDone>;

    /// After each block, when the run syncs per block (writers): returns the requests issued.
    fn end_block(&mut self, _block: Block) -> Result<u64> {
        Ok(0)
    }

    /// Told the next block before the current one is moved, so that a mapping can start fetching it
    /// (its page-table walk and first cache line) while the current one is XORed, as a plain
    /// loop over a precomputed order lets the CPU do by itself.
    fn next_is(&mut self, _current: Block, _next: Block) {}

    /// Before the part's first block (a worker that maps each run's span maps it here).
    fn begin(&mut self, _part: &Part) -> Result<()> {
        Ok(())
    }

    /// After the part: a last check (a mapping whose file shrank under it).
    fn finish(&mut self) -> Result<()> {
        Ok(())
    }

    /// Whether [`SyncWorker::untimed_blocks`] is worth handing it runs of blocks for; such an
    /// engine takes every block in one piece.
    fn batches(&self) -> bool {
        false
    }

    /// Moves blocks `range` of `part` (by index), none of them timed, in order, and says what
    /// that took together and the bytes moved. An engine whose move is a few instructions (a
    /// mapping's touch or XOR) does it in one tight loop: the CPU then has several blocks'
    /// page walks and loads in flight at once, as a plain loop over a precomputed order has,
    /// where one block per pass of the core loop leaves it one at a time. Only called when
    /// [`SyncWorker::batches`].
    fn untimed_blocks(
        &mut self,
        part: &Part,
        range: std::ops::Range<u64>,
    ) -> Result<(PieceDone, u64)> {
        let mut sum = PieceDone::default();
        let mut bytes = 0;
        for i in range {
            let b = part.block(i);
            let d = self.piece(b)?;
            sum.xor ^= d.xor;
            sum.ops += d.ops + self.end_block(b)?;
            sum.waited += d.waited;
            bytes += b.len;
        }
        Ok((sum, bytes))
    }
}

/// Blocks handed to [`SyncWorker::untimed_blocks`] at once, at most (a progress counter
/// shared with a time series still moves every few microseconds).
const BATCH: u64 = 4096;

/// A [`SyncWorker`] driven by the core loop.
struct SyncLoop<R>(R);

impl<R: SyncWorker> SyncLoop<R> {
    /// Moves one block, timed or not as the log says; false once the deadline has passed.
    #[inline]
    fn block(
        &mut self,
        block: Block,
        next: Option<Block>,
        max: u64,
        moved: &mut Moved,
        log: &mut OpLog,
    ) -> Result<bool> {
        if let Some(next) = next {
            self.0.next_is(block, next);
        }
        log.begin();
        for piece in pieces(block, max) {
            let done = self.0.piece(piece)?;
            moved.xor ^= done.xor;
            moved.ops += done.ops;
            moved.waited += done.waited;
            moved.bytes += piece.len;
        }
        moved.ops += self.0.end_block(block)?;
        moved.blocks += 1;
        Ok(log.end())
    }

    /// A part of its own, taken by index: the runs of untimed blocks between timed ones go to
    /// the engine together.
    fn run_batched(&mut self, part: &Part, log: &mut OpLog, max: u64) -> Result<Moved> {
        let mut moved = Moved::default();
        let n = part.block_count();
        let mut i = 0;
        while i < n {
            let ahead = log.untimed_ahead();
            if ahead > 1 {
                let k = ahead.min(BATCH).min(n - i);
                let (done, bytes) = self.0.untimed_blocks(part, i..i + k)?;
                moved.xor ^= done.xor;
                moved.ops += done.ops;
                moved.waited += done.waited;
                moved.bytes += bytes;
                moved.blocks += k;
                log.skip_untimed(k);
                i += k;
                continue;
            }
            let next = (i + 1 < n).then(|| part.block(i + 1));
            let on_time = self.block(part.block(i), next, max, &mut moved, log)?;
            i += 1;
            if !on_time {
                break;
            }
        }
        Ok(moved)
    }

    /// A part that pauses before its blocks (a replay keeping a program's compute time): each
    /// block after its pause, none batched.
    fn run_paced(&mut self, part: &Part, log: &mut OpLog, max: u64) -> Result<Moved> {
        let mut moved = Moved::default();
        let n = part.block_count();
        for i in 0..n {
            pause(part.gap(i));
            let next = (i + 1 < n).then(|| part.block(i + 1));
            if !self.block(part.block(i), next, max, &mut moved, log)? {
                break;
            }
        }
        Ok(moved)
    }
}

/// Waits `ns` nanoseconds on this thread: asleep for all but the last 200 µs of a pause over
/// 1 ms, then spinning (a sleep overshoots by 50-100 µs, more than a short gap; a spin also
/// keeps the core busy, as the program's computing did).
pub fn pause(ns: u64) {
    if ns == 0 {
        return;
    }
    let until = Instant::now() + std::time::Duration::from_nanos(ns);
    if ns > 1_000_000 {
        std::thread::sleep(std::time::Duration::from_nanos(ns - 200_000));
    }
    while Instant::now() < until {
        std::hint::spin_loop();
    }
}

impl<R: SyncWorker> Worker for SyncLoop<R> {
    fn run(&mut self, part: &Part, log: &mut OpLog) -> Result<Moved> {
        let max = self.0.max_piece();
        self.0.begin(part)?;
        // Not when latencies are recorded: a timed block, moved alone, is slower than the
        // blocks of a run moved together, and the sample would no longer stand for them (cold
        // mapped reads' latencies added up to 1.2x their run).
        let moved = if part.has_gaps() {
            self.run_paced(part, log, max)?
        } else if self.0.batches() && !part.is_shared() && !log.records() {
            self.run_batched(part, log, max)?
        } else {
            let mut moved = Moved::default();
            let mut blocks = part.iter().peekable();
            while let Some(block) = blocks.next() {
                let next = blocks.peek().copied();
                if !self.block(block, next, max, &mut moved, log)? {
                    break;
                }
            }
            moved
        };
        self.0.finish()?;
        Ok(moved)
    }
}

/// Boxes synchronous engines' per-thread states as workers of the core loop.
pub fn sync_workers<R: SyncWorker + 'static>(
    readers: impl IntoIterator<Item = Result<R>>,
) -> Result<Vec<Box<dyn Worker>>> {
    readers
        .into_iter()
        .map(|r| r.map(|r| Box::new(SyncLoop(r)) as Box<dyn Worker>))
        .collect()
}

/// Splits a block into pieces of at most `max` bytes (at least one piece, even when empty).
#[inline]
pub fn pieces(block: Block, max: u64) -> impl Iterator<Item = Block> {
    // One piece without a division when the block fits (every mapped block, most reads).
    let n = if block.len <= max {
        1
    } else {
        block.len.div_ceil(max)
    };
    (0..n).map(move |i| {
        let offset = block.offset + i * max;
        Block {
            offset,
            len: max.min(block.offset + block.len - offset),
        }
    })
}

/// Workers and their parts, ready to run.
pub struct Prepared {
    workers: Vec<Box<dyn Worker>>,
    parts: Vec<Part>,
}

/// The parts of `w` that hold at least one block, and `w` narrowed to that many threads.
pub(crate) fn nonempty_parts(w: &Workload) -> (Vec<Part>, Workload) {
    let parts: Vec<Part> = w
        .parts()
        .into_iter()
        .filter(|p| p.block_count() > 0)
        .collect();
    let sub = Workload {
        threads: parts.len(),
        ..*w
    };
    (parts, sub)
}

/// Sets `method` up for workload `w` on `src` (untimed).
pub fn prepare(
    method: ReadMethod,
    src: &Source,
    w: &Workload,
    opts: &EngineOptions,
) -> Result<Prepared> {
    if w.len > src.size {
        return Err(Error::usage(
            "read past the end",
            format!("asked for {} bytes of a {}-byte file", w.len, src.size),
        )
        .at(&src.path));
    }
    if method.is_direct() && !w.bs.is_multiple_of(super::DIRECT_ALIGN) {
        // fio refuses these too: O_DIRECT moves whole aligned blocks, so an unaligned block
        // would be widened silently (3000-byte blocks read 604 MiB for a 256 MiB file).
        return Err(Error::usage(
            "unaligned block size for O_DIRECT",
            format!(
                "{} bytes is not a multiple of {}: O_DIRECT reads whole aligned blocks",
                w.bs,
                super::DIRECT_ALIGN
            ),
        )
        .at(&src.path)
        .hint("use a block size such as 4K, 64K or 1M"));
    }
    let (parts, sub) = nonempty_parts(w);
    if parts.is_empty() {
        return Ok(Prepared {
            workers: Vec::new(),
            parts,
        });
    }
    let workers = method
        .engine()
        .prepare(&super::Job { src, w: &sub, opts })?;
    Ok(Prepared { workers, parts })
}

/// Sets `method` up for `parts` of `src` given by the caller (one worker each; their blocks
/// may be [`Part::explicit`]), `w` giving the block size and length the workers size their
/// buffers by (untimed).
pub fn prepare_parts(
    method: ReadMethod,
    src: &Source,
    w: &Workload,
    parts: Vec<Part>,
    opts: &EngineOptions,
) -> Result<Prepared> {
    let sub = Workload {
        threads: parts.len().max(1),
        ..*w
    };
    let workers = method
        .engine()
        .prepare(&super::Job { src, w: &sub, opts })?;
    Ok(Prepared { workers, parts })
}

/// How a run is bounded and observed.
#[derive(Debug, Clone, Default)]
pub struct RunLimits {
    /// Operations in all (shared out between the parts); `None`: every block.
    pub max_ops: Option<u64>,
    /// Stop once this instant has passed.
    pub deadline: Option<Instant>,
    /// Record each operation's latency.
    pub latencies: bool,
    /// Count finished blocks here while the run goes on (for a time series).
    pub progress: Option<Arc<AtomicU64>>,
    /// Add each block to `progress` as it finishes, not in batches of
    /// [`OpLog::TALLY_BATCH`]: for large blocks, whose count a short tick must see exactly.
    pub progress_each: bool,
}

impl Prepared {
    /// Does the work: each part on its own thread (the first on the calling thread). The
    /// workers (and their mappings) are released here, inside the caller's timing.
    pub fn run(mut self) -> Result<Moved> {
        self.run_limited(RunLimits::default()).map(|(m, _)| m)
    }

    /// Does the work within `limits`, returning the latencies when asked for. The workers stay
    /// alive: tearing them down (munmap of a mapping, closing files) happens when the caller
    /// drops this, outside the timing if the caller wants it so, as the classic access
    /// benchmark read its clock before munmap.
    pub fn run_limited(&mut self, limits: RunLimits) -> Result<(Moved, Option<Histogram>)> {
        run_parts(&mut self.workers, &self.parts, limits, "read failed")
    }

    /// Runs the workers over other parts of the same file (at most one part per worker), as
    /// `fast` reads a file range by range with the method each range suits.
    pub fn run_over(&mut self, parts: &[Part]) -> Result<Moved> {
        self.run_over_limited(parts, RunLimits::default())
            .map(|(m, _)| m)
    }

    /// [`Prepared::run_over`] within `limits`.
    pub fn run_over_limited(
        &mut self,
        parts: &[Part],
        limits: RunLimits,
    ) -> Result<(Moved, Option<Histogram>)> {
        if parts.len() > self.workers.len() {
            return Err(Error::failed(
                "read failed",
                format!("{} parts for {} workers", parts.len(), self.workers.len()),
            ));
        }
        let n = parts.len();
        run_parts(&mut self.workers[..n], parts, limits, "read failed")
    }
}

/// Runs the first worker of `a` over `pa` and the first worker of `b` over `pb` at the same
/// time, `b` on a thread of its own; returns what each moved and the CPU time its thread spent.
/// Over two [`crate::workload::Workload::shared_parts`] of one range the two take blocks from the
/// same cursor, so they meet the same pages, and CPU time makes the rates fair even when the
/// two threads share a core.
pub fn race(a: &mut Prepared, pa: &Part, b: &mut Prepared, pb: &Part) -> Result<[(Moved, f64); 2]> {
    let (Some(wa), Some(wb)) = (a.workers.first_mut(), b.workers.first_mut()) else {
        return Err(Error::failed("read failed", "nothing to race"));
    };
    // Both start together, each spinning until the other is running: otherwise the calling
    // thread took every block of a short slice while the new one was still starting, and a
    // sleeping barrier left the woken side a millisecond behind on this virtual machine (a
    // 32 MiB slice was gone by then). Yielding while it waits, so one core is enough.
    let ready = std::sync::atomic::AtomicU32::new(0);
    let meet = || {
        use std::sync::atomic::Ordering;
        ready.fetch_add(1, Ordering::AcqRel);
        while ready.load(Ordering::Acquire) < 2 {
            std::thread::yield_now();
        }
    };
    let timed = |w: &mut Box<dyn Worker>, p: &Part| -> Result<(Moved, f64)> {
        let cpu = crate::sys::thread_cpu_secs;
        meet();
        let t = cpu();
        let mut log = OpLog::new(false, None);
        let m = w.run(p, &mut log)?;
        Ok((m, cpu() - t))
    };
    let here = crate::sys::current_cpu();
    let (ra, rb) = std::thread::scope(|s| {
        let h = s.spawn(|| {
            if let Some(cpu) = here {
                crate::sys::start_apart(cpu, 1);
            }
            timed(wb, pb)
        });
        let ra = timed(wa, pa);
        let rb = h
            .join()
            .unwrap_or_else(|_| Err(Error::failed("read failed", "a worker thread panicked")));
        (ra, rb)
    });
    Ok([ra?, rb?])
}

/// Runs `workers[i]` over `parts[i]`, each on its own thread (the first on the calling thread),
/// and adds up what they moved; `failed` names the work in the error of a panicking thread.
pub fn run_parts(
    workers: &mut [Box<dyn Worker>],
    parts: &[Part],
    limits: RunLimits,
    failed: &str,
) -> Result<(Moved, Option<Histogram>)> {
    let mut total = Moved::default();
    if workers.is_empty() || parts.is_empty() {
        return Ok((total, limits.latencies.then(Histogram::default)));
    }
    let mut parts = parts.to_vec();
    if let Some(max) = limits.max_ops {
        let n = parts.len() as u64;
        for (i, p) in parts.iter_mut().enumerate() {
            let i = i as u64;
            p.limit(max * (i + 1) / n - max * i / n);
        }
    }
    let log = || {
        OpLog::new(limits.latencies, limits.deadline)
            .with_progress(limits.progress.clone())
            .tally_each(limits.progress_each)
    };
    let (first, rest) = workers.split_at_mut(1);
    let first = &mut first[0];
    let here = crate::sys::current_cpu();
    let results: Vec<Result<(Moved, OpLog)>> = std::thread::scope(|s| {
        let handles: Vec<_> = rest
            .iter_mut()
            .zip(parts.iter().skip(1))
            .enumerate()
            .map(|(k, (wk, part))| {
                s.spawn(move || {
                    if let Some(cpu) = here {
                        crate::sys::start_apart(cpu, k + 1);
                    }
                    let mut l = log();
                    wk.run(part, &mut l).map(|m| (m, l))
                })
            })
            .collect();
        let mut l = log();
        let mut out = vec![first.run(&parts[0], &mut l).map(|m| (m, l))];
        for h in handles {
            out.push(
                h.join()
                    .unwrap_or_else(|_| Err(Error::failed(failed, "a worker thread panicked"))),
            );
        }
        out
    });
    let mut hist = limits.latencies.then(Histogram::default);
    for r in results {
        let (m, l) = r?;
        total.add(m);
        if let (Some(h), Some(part)) = (&mut hist, l.into_histogram()) {
            h.merge(&part);
        }
    }
    Ok((total, hist))
}

/// Prepares and runs in one go.
pub fn read_all(
    method: ReadMethod,
    src: &Source,
    w: &Workload,
    opts: &EngineOptions,
) -> Result<Moved> {
    prepare(method, src, w, opts)?.run()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_cover_the_block_exactly() {
        let b = Block {
            offset: 10,
            len: 25,
        };
        let p: Vec<Block> = pieces(b, 10).collect();
        assert_eq!(p.len(), 3);
        assert_eq!((p[0].offset, p[0].len), (10, 10));
        assert_eq!((p[2].offset, p[2].len), (30, 5));
        assert_eq!(pieces(b, u64::MAX).count(), 1);
        let empty = Block { offset: 4, len: 0 };
        assert_eq!(pieces(empty, 10).count(), 1);
    }
}
