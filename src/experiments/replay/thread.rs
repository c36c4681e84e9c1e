//! One traced thread's accesses as the plan is built: the program's time before each (less
//! what the tracer added), and its segments. The calls pass once, in the thread's order; an
//! access waits only for the few calls after it that decide what a stop cost near it, so a
//! thread holds a window of calls, not all of them.

use crate::trace::Op;
use crate::workload::Block;
use std::collections::VecDeque;
use std::sync::Arc;

/// Consecutive accesses of one thread to one file.
#[derive(Debug, Clone)]
pub(super) struct Segment {
    pub(super) file: usize,
    pub(super) blocks: Arc<[Block]>,
    /// The program's time between its previous access and each of these, ns (what
    /// `--keep-gaps` waits; empty without it).
    pub(super) gaps: Arc<[u64]>,
}

/// The tracer's hold of a thread so far and its stops so far.
pub(super) type Marks = (u64, u64);

/// An access: a read call, or the range a page fault stands for.
#[derive(Debug, Clone)]
pub(super) struct PlannedAccess {
    pub(super) t: u64,
    /// When the program went on after it (a read's return, a cached fault's time); `None`
    /// when not known.
    pub(super) end: Option<u64>,
    /// The marks at `t` and at `end`; for a fault, not known until the thread's next call.
    pub(super) marks: Option<(Marks, Marks)>,
    /// The thread's calls of two stops entered before it.
    pub(super) before: usize,
    /// Index into the plan's files.
    pub(super) file: usize,
    pub(super) block: Block,
}

/// Calls a stop's cost near a moment is averaged over.
pub(super) const WINDOW: usize = 32;

/// A call longer than this waited for something: its time says nothing of a stop's cost.
const WAITED_NS: u64 = 1_000_000;

/// Accesses per segment at most: a long run of one file is cut, so that no segment's blocks
/// are ever held twice while it is sealed (16 MiB of blocks).
const CHUNK: usize = 1 << 20;

/// What a stop costs a thread beyond the tracer's hold, as call `o` shows it: `None` for a call
/// of one stop, `Some(None)` for one that waited. Resuming a thread and being told of its next
/// stop is not one figure: here a stop takes 3-5 us while the tracer and the program share a
/// virtual CPU and 50-70 us while waking the other costs a virtual CPU's interrupt, and a run
/// moves between the two (sqlite3's start-up mostly the first, its scan mostly the second). So
/// near a moment it is the mean over the thread's [`WINDOW`] nearest calls of two stops,
/// leaving out calls over 1 ms (they waited for storage, a lock or a pipe).
pub(super) fn stop_cost(o: &Op) -> Option<Option<u64>> {
    (o.dur > 0).then(|| {
        let cost = o.dur.saturating_sub(o.held_exit.saturating_sub(o.held));
        (cost <= WAITED_NS).then_some(cost)
    })
}

/// What the thread's accesses are turned into, shared by every thread of a plan.
#[derive(Debug, Clone, Copy)]
pub(super) struct Costing {
    /// When the first access of all was made: a thread's first access keeps its time after it
    /// (threads that started later start later).
    pub(super) first: u64,
    /// A stop's mean cost over every thread's calls kept: where a thread's window has none.
    pub(super) mean: u64,
    /// Keep each access's gap (only `--keep-gaps` waits them).
    pub(super) keep_gaps: bool,
}

#[derive(Debug, Default)]
pub(super) struct Thread {
    /// Its calls of two stops from number `base` on: (entry, cost if kept).
    costs: VecDeque<(u64, Option<u64>)>,
    base: usize,
    /// Its last call's entry and the marks after its exit.
    last_call: Option<(u64, Marks)>,
    /// Its page faults on data files not yet placed among its calls: indexes, in time order.
    pub(super) faults: VecDeque<u32>,
    /// Accesses whose gap is not decided yet, in order.
    pending: VecDeque<PlannedAccess>,
    /// When its previous access ended (`None`: not known), and the marks then.
    previous: Option<(Option<u64>, Marks)>,
    /// What the gaps so far were short of covering a stop's mean cost (a stop cheaper than the
    /// mean leaves less than nothing): taken from the gaps that follow, so that a thread's gaps
    /// add up to its time less the tracer's mean share, not to a sum of remainders that only the
    /// stops dearer than the mean leave.
    owed: i128,
    /// The sum of its gaps, ns.
    pub(super) gaps_sum: u64,
    /// Gaps not known (after a page fault that may have waited for storage), kept as none.
    pub(super) unknown: usize,
    segments: Vec<Segment>,
    open: Option<(usize, Vec<Block>, Vec<u64>)>,
}

impl Thread {
    /// Calls of two stops seen.
    fn total(&self) -> usize {
        self.base + self.costs.len()
    }

    /// When its last call was entered.
    pub(super) fn last_entry(&self) -> Option<u64> {
        self.last_call.map(|c| c.0)
    }

    /// Its calls of two stops entered before `t` (every access comes at or after its last
    /// call's entry, whose calls are still held).
    pub(super) fn before(&self, t: u64) -> usize {
        self.base + self.costs.partition_point(|c| c.0 < t)
    }

    /// An access, decided once enough calls after it are seen.
    pub(super) fn access(&mut self, a: PlannedAccess) {
        self.pending.push_back(a);
    }

    /// Call `o`, next in the thread's order: the faults before it take their marks from its
    /// entry; its cost joins the window.
    pub(super) fn call(&mut self, o: &Op) {
        let entry = (o.held, o.stops.saturating_sub(1));
        for a in self.pending.iter_mut().rev() {
            if a.marks.is_none() && a.t < o.t {
                a.marks = Some((entry, entry));
            }
        }
        if let Some(cost) = stop_cost(o) {
            self.costs.push_back((o.t, cost));
        }
        self.last_call = Some((o.t, (o.held_exit, o.stops + (o.dur > 0) as u64)));
    }

    /// A stop's cost near an access with `before` calls before it: the mean of the kept costs
    /// of the [`WINDOW`] calls around it (fewer at the thread's ends), else `mean`.
    pub(super) fn cost_near(&self, before: usize, mean: u64) -> u64 {
        let lo = before.saturating_sub(WINDOW / 2);
        let hi = (lo + WINDOW).min(self.total());
        let lo = hi.saturating_sub(WINDOW);
        let (mut sum, mut n) = (0u64, 0u64);
        for (_, c) in self
            .costs
            .range(lo.saturating_sub(self.base)..hi.saturating_sub(self.base))
        {
            if let Some(c) = c {
                sum = sum.saturating_add(*c);
                n += 1;
            }
        }
        sum.checked_div(n).unwrap_or(mean)
    }

    /// Decides the accesses whose window is complete; every one when the calls are `done`.
    pub(super) fn settle(&mut self, c: Costing, done: bool) {
        while let Some(a) = self.pending.front() {
            let window_seen = self.total() >= a.before.saturating_sub(WINDOW / 2) + WINDOW;
            if !done && (a.marks.is_none() || !window_seen) {
                break;
            }
            let Some(a) = self.pending.pop_front() else {
                break;
            };
            let gap = self.gap(&a, c);
            self.push(a.file, a.block, gap, c.keep_gaps);
        }
        self.trim();
    }

    /// The time the thread spent before access `a` since its previous one, less what the
    /// tracer added: the time it held the thread at its stops (noted in the trace), and a
    /// stop's cost near it per stop.
    fn gap(&mut self, a: &PlannedAccess, c: Costing) -> u64 {
        // A fault after the thread's last call: the marks after that call's exit.
        let last = self.last_call.map_or((0, 0), |l| l.1);
        let marks = a.marks.unwrap_or((last, last));
        let previous = self.previous.replace((a.end, marks.1));
        // A thread's first access: what it owes from before (its start) is not carried.
        let fresh = previous.is_none();
        let (since, (held, stops)) = previous.unwrap_or((Some(c.first), (0, 0)));
        let (held_now, stops_now) = marks.0;
        let Some(from) = since else {
            self.unknown += 1;
            return 0;
        };
        let cost = self.cost_near(a.before, c.mean) as i128;
        let g = a.t.saturating_sub(from) as i128
            - held_now.saturating_sub(held) as i128
            - cost * stops_now.saturating_sub(stops) as i128
            + self.owed;
        self.owed = if fresh { 0 } else { g.min(0) };
        let gap = g.clamp(0, u64::MAX as i128) as u64;
        self.gaps_sum = self.gaps_sum.saturating_add(gap);
        gap
    }

    /// Forgets the calls no access can still need: those before the window of the first
    /// access waiting, or of any later one (entered at or after the last call).
    fn trim(&mut self) {
        if self.costs.len() < 4 * WINDOW {
            return;
        }
        let total = self.total();
        let last = self.costs.back().map(|c| c.0);
        let same = self
            .costs
            .iter()
            .rev()
            .take_while(|c| Some(c.0) == last)
            .count();
        let mut keep = total
            .saturating_sub(WINDOW)
            .min((total - same).saturating_sub(WINDOW / 2));
        if let Some(a) = self.pending.front() {
            keep = keep.min(a.before.saturating_sub(WINDOW / 2));
        }
        let drop = keep.saturating_sub(self.base).min(self.costs.len());
        self.costs.drain(..drop);
        self.base += drop;
    }

    /// PlannedAccess `block` of file `file`, after `gap` ns, onto the thread's segments.
    fn push(&mut self, file: usize, block: Block, gap: u64, keep_gaps: bool) {
        match &mut self.open {
            Some((f, blocks, gaps)) if *f == file && blocks.len() < CHUNK => {
                blocks.push(block);
                if keep_gaps {
                    gaps.push(gap);
                }
            }
            _ => {
                self.seal();
                self.open = Some((
                    file,
                    vec![block],
                    if keep_gaps { vec![gap] } else { vec![] },
                ));
            }
        }
    }

    fn seal(&mut self) {
        if let Some((file, blocks, gaps)) = self.open.take() {
            self.segments.push(Segment {
                file,
                blocks: blocks.into(),
                gaps: gaps.into(),
            });
        }
    }

    /// Its segments, in order.
    pub(super) fn segments(mut self) -> Vec<Segment> {
        self.seal();
        self.segments
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::fixture::op;

    fn call(t: u64, dur: u64, stops: u64) -> Op {
        let mut o: Op = serde_json::from_value(op(t, dur, "pread", Some(0), 0, 4096)).unwrap();
        o.stops = stops;
        o
    }

    #[test]
    fn a_stops_cost_is_the_nearest_calls_and_a_call_that_waited_is_left_out() {
        // 40 calls of 4 us, a read that waited 5 ms for storage, 40 calls of 60 us.
        let mut th = Thread::default();
        for i in 0..81u64 {
            let cost = match i {
                0..40 => 4_000,
                40 => 5_000_000,
                _ => 60_000,
            };
            th.call(&call(i * 10_000_000, cost, 1 + 2 * i));
        }
        let mean = (40 * 4_000 + 40 * 60_000) / 80;
        assert_eq!(th.cost_near(th.before(0), mean), 4_000);
        assert_eq!(th.cost_near(th.before(800_000_000), mean), 60_000);
        // Across the change: the 32 nearest calls, the one that waited left out.
        assert_eq!(
            th.cost_near(th.before(405_000_000), mean),
            (15 * 4_000 + 16 * 60_000) / 31
        );
        // A thread with no calls of two stops: the mean.
        assert_eq!(Thread::default().cost_near(0, mean), mean);
    }

    #[test]
    fn forgotten_calls_are_never_ones_a_waiting_access_needs() {
        // A long run of calls, an access every call: each access's cost is the same whether
        // the thread forgets old calls as it goes or holds them all.
        let costing = Costing {
            first: 0,
            mean: 7,
            keep_gaps: true,
        };
        let (mut trimmed, mut whole) = (Thread::default(), Vec::new());
        let mut all = Thread::default();
        for i in 0..1000u64 {
            let o = call(i * 1000, 1 + i % 97, 2 * i + 1);
            let a = PlannedAccess {
                t: o.t,
                end: Some(o.t + o.dur),
                marks: Some(((0, 2 * i + 1), (0, 2 * i + 2))),
                before: trimmed.before(o.t),
                file: 0,
                block: Block { offset: i, len: 1 },
            };
            whole.push(a.clone());
            trimmed.access(a);
            trimmed.call(&o);
            trimmed.settle(costing, false);
            all.call(&o);
        }
        trimmed.settle(costing, true);
        assert!(
            trimmed.costs.len() < 4 * WINDOW + 2,
            "{}",
            trimmed.costs.len()
        );
        for a in whole {
            all.access(a);
        }
        all.settle(costing, true);
        let (a, b) = (trimmed.segments(), all.segments());
        assert_eq!(a.len(), 1);
        assert_eq!(a[0].gaps, b[0].gaps);
    }
}
