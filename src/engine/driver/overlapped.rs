//! The core loop for engines that keep many requests in flight (io_uring): queue, wait, digest.

use super::*;

/// An engine's per-thread state that keeps many requests in flight (io_uring): it queues reads
/// of pieces into buffers of its own and digests them as they complete; the core loop decides
/// what to queue and when to stop, counts blocks and times them.
pub trait AsyncWorker: Send {
    /// The largest piece it takes; larger blocks are cut into pieces of this size.
    fn max_piece(&self) -> u64;

    /// Before the part's first block (a ring is claimed by the thread that submits).
    fn begin(&mut self) -> Result<()> {
        Ok(())
    }

    /// Whether another request may be queued now (under the depth, with a free buffer).
    fn has_room(&self) -> bool;

    /// Queues a read of `piece`; returns the slot its completion will name.
    fn queue(&mut self, piece: Block) -> Result<usize>;

    /// Hands what is queued to the kernel without waiting (before the loop pauses); a failure
    /// shows again in the next [`AsyncWorker::wait`].
    fn submit(&mut self) {}

    /// Requests queued or in flight whose completion has not been reaped.
    fn in_flight(&self) -> usize;

    /// Hands what is queued to the kernel and waits for at least one completion. An error is
    /// returned only once no request can still write into a buffer (every one reaped, or the
    /// buffers given up for good).
    fn wait(&mut self) -> Result<()>;

    /// The next reaped completion, digested: its slot (free again) and what it moved.
    fn digest(&mut self) -> Option<(usize, Result<PieceDone>)>;
}

/// What the loop knows of a request in flight: its block, bytes, and for a block of one piece
/// its start (a block of several pieces keeps its start in the open-block table).
#[derive(Debug, Clone, Copy)]
pub(super) struct InFlight {
    block: usize,
    len: u64,
    single: bool,
    started: Option<(Instant, u64)>,
}

/// An [`AsyncWorker`] driven by the core loop: the device keeps as many requests as the
/// engine has room for; completed ones are digested one at a time, refilling the queue between
/// them. A block counts once, when its last piece is digested, and is timed from its first
/// piece's queueing to then, sampled as the synchronous loop samples; the deadline is checked
/// at timed blocks, as there.
pub(super) struct AsyncLoop<A>(A);

impl<A: AsyncWorker> Worker for AsyncLoop<A> {
    fn run(&mut self, part: &Part, log: &mut OpLog) -> Result<Moved> {
        let w = &mut self.0;
        w.begin()?;
        let max = w.max_piece();
        let mut todo = part.iter().enumerate().flat_map(|(i, b)| {
            let n = if b.len <= max { 1 } else { b.len.div_ceil(max) };
            pieces(b, max).map(move |p| (i, n, p))
        });
        let mut slots: Vec<Option<InFlight>> = Vec::new();
        let mut open = OpenBlocks::default();
        let mut moved = Moved::default();
        // On failure stop queueing but keep reaping: the kernel may still write into buffers in
        // flight, so the run returns only when none is.
        let mut failure: Option<Error> = None;
        let mut stopped = false;
        // The block whose first piece was queued last: a pause (a replay's kept gap) comes
        // before a block's first piece, with what is queued already handed to the kernel, so
        // that the requests in flight proceed during it.
        let mut last = None;
        loop {
            while failure.is_none() && !stopped && w.has_room() {
                let Some((block, count, piece)) = todo.next() else {
                    break;
                };
                if last != Some(block) {
                    last = Some(block);
                    let gap = part.gap(block as u64);
                    if gap > 0 {
                        w.submit();
                        pause(gap);
                    }
                }
                let single = count == 1;
                let started = open.queued(block, count, log);
                match w.queue(piece) {
                    Ok(slot) => {
                        if slot >= slots.len() {
                            slots.resize(slot + 1, None);
                        }
                        slots[slot] = Some(InFlight {
                            block,
                            len: piece.len,
                            single,
                            started,
                        });
                    }
                    Err(e) => failure = Some(e),
                }
            }
            if let Some((slot, done)) = w.digest() {
                let Some(req) = slots.get_mut(slot).and_then(Option::take) else {
                    continue;
                };
                if failure.is_some() {
                    continue;
                }
                let done = match done {
                    Ok(d) => d,
                    Err(e) => {
                        failure = Some(e);
                        continue;
                    }
                };
                moved.xor ^= done.xor;
                moved.ops += done.ops;
                moved.waited += done.waited;
                moved.bytes += req.len;
                if let Some(started) = open.completed(&req) {
                    moved.blocks += 1;
                    if !log.end_overlapped(started) {
                        stopped = true;
                    }
                }
                continue;
            }
            if w.in_flight() == 0 {
                break;
            }
            w.wait()?;
        }
        match failure {
            Some(e) => Err(e),
            None => Ok(moved),
        }
    }
}

/// Blocks of several pieces in flight: pieces left and the block's start.
#[derive(Default)]
struct OpenBlocks(std::collections::HashMap<usize, (u64, Option<(Instant, u64)>)>);

impl OpenBlocks {
    /// A piece of `block`, of `count` pieces, is queued: the start its request keeps (a block
    /// of one piece), or none (a block of several keeps its start here, from its first piece).
    fn queued(&mut self, block: usize, count: u64, log: &mut OpLog) -> Option<(Instant, u64)> {
        if count == 1 {
            return log.start_overlapped();
        }
        self.0
            .entry(block)
            .or_insert_with(|| (count, log.start_overlapped()));
        None
    }

    /// `req` completed: its block's start once the block's last piece has.
    fn completed(&mut self, req: &InFlight) -> Option<Option<(Instant, u64)>> {
        if req.single {
            return Some(req.started);
        }
        match self.0.get_mut(&req.block) {
            Some((left, _)) if *left > 1 => {
                *left -= 1;
                None
            }
            _ => self.0.remove(&req.block).map(|(_, s)| s),
        }
    }
}

/// Boxes engines' per-thread states that keep requests in flight as workers of the core loop.
pub fn async_workers<A: AsyncWorker + 'static>(
    workers: impl IntoIterator<Item = Result<A>>,
) -> Result<Vec<Box<dyn Worker>>> {
    workers
        .into_iter()
        .map(|w| w.map(|w| Box::new(AsyncLoop(w)) as Box<dyn Worker>))
        .collect()
}
