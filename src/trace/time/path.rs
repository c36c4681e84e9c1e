//! What made the wall clock: the main thread's life, moment by moment, put to a cause. While
//! the main thread works, sleeps or waits on storage, that is its own cause; while it waits on
//! others (a lock, a child, a pipe, a socket, a poll), the moment goes to what the other traced
//! threads were doing then (their work first; then their own waits on pipes, sockets and
//! polls), and only when none was doing anything to the main thread's wait itself. Idle threads
//! (a pool that waited for work all its life) take no part. So the causes add up to the main
//! thread's life, never more, and a thread is named for a cause only for time it spent in it.
//!
//! "Moment by moment" is at the resolution of the calls each thread made: each kept call and
//! each long timed call ([`crate::trace::Span`]) is placed where it happened; what a thread did
//! between them (its CPU, short waits, faults) is spread over those gaps evenly.

use super::model::{Role, Split, ThreadModel, op_split, timed_split};
use crate::trace::cause::{self, Cause};
use crate::trace::{CallTime, StopCost, Trace};
use rustc_hash::FxHashMap as HashMap;
use serde::{Deserialize, Serialize};

const NC: usize = Cause::ALL.len();

/// One thread's share of a cause of the wall time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ThreadShare {
    /// Its process.
    pub pid: u32,
    /// Its thread id.
    pub tid: u32,
    /// Its name.
    pub name: String,
    /// The wall time it made, ns (never more than it spent in the cause).
    pub ns: u64,
}

/// One cause of the wall time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct WallCause {
    /// The cause.
    pub cause: Cause,
    /// Wall time, ns.
    pub ns: u64,
    /// Of it, waiting for a CPU after wake-ups inside calls, ns.
    pub runq_ns: u64,
    /// The threads it was spent in, most first (at most five).
    pub threads: Vec<ThreadShare>,
}

/// The wall time the main thread lived, by cause.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct WallTime {
    /// The main thread's life, ns: what the causes add up to.
    pub wall_ns: u64,
    /// The main thread.
    pub main_tid: u32,
    /// Of the main thread's life, time it waited on others that was put to what they did.
    pub handed_ns: u64,
    /// By cause, most first.
    pub causes: Vec<WallCause>,
}

impl WallTime {
    /// Its time in `c`, ns.
    pub fn ns(&self, c: Cause) -> u64 {
        self.causes
            .iter()
            .find(|x| x.cause == c)
            .map_or(0, |x| x.ns)
    }
}

/// What each thread's calls were, placed in time: `(start, end, split)`.
struct Placed<'a> {
    t: &'a Trace,
    ops: HashMap<u32, Vec<usize>>,
    spans: HashMap<u32, Vec<usize>>,
    cost: StopCost,
    synced: rustc_hash::FxHashSet<u32>,
}

impl Placed<'_> {
    fn intervals(&self, tid: u32) -> Vec<(u64, u64, Split)> {
        let mut v = Vec::new();
        for &i in self.ops.get(&tid).into_iter().flatten() {
            let op = &self.t.ops[i];
            if op.dur == 0 {
                continue;
            }
            if let Some(s) = op_split(self.t, op, &self.synced, &self.cost) {
                v.push((op.t, op.t + op.dur, s));
            }
        }
        for &i in self.spans.get(&tid).into_iter().flatten() {
            let sp = &self.t.spans[i];
            let c = CallTime {
                call: sp.call.clone(),
                calls: 1,
                errors: 0,
                ns: sp.dur,
                cpu_ns: sp.cpu,
                runq_ns: sp.runq,
            };
            v.push((sp.t, sp.t + sp.dur, timed_split(&c, &self.cost)));
        }
        v
    }
}

/// Time bins over `[lo, hi)`.
struct Bins {
    lo: f64,
    width: f64,
    n: usize,
}

impl Bins {
    /// Adds `amount` spread evenly over `[a, b)` into `out`, and the overlap into `cover`.
    fn spread(&self, a: u64, b: u64, mut add: impl FnMut(usize, f64)) {
        let (a, b) = (a as f64, b as f64);
        if b <= a {
            return;
        }
        let first = (((a - self.lo) / self.width).floor().max(0.0)) as usize;
        let last = ((((b - self.lo) / self.width).ceil()) as usize).min(self.n);
        for i in first..last {
            let s = self.lo + i as f64 * self.width;
            let e = s + self.width;
            let overlap = (b.min(e) - a.max(s)).max(0.0);
            if overlap > 0.0 {
                add(i, overlap / (b - a));
            }
        }
    }
}

/// One thread's causes per bin, ns.
fn thread_bins(m: &ThreadModel, placed: &Placed<'_>, bins: &Bins) -> Vec<[f64; NC]> {
    let mut out = vec![[0.0f64; NC]; bins.n];
    let mut cover = vec![0.0f64; bins.n];
    // The model's polls may be its sockets' or pipes' (model.rs): so are their calls here.
    let mut intervals = placed.intervals(m.tid);
    if let Some(to) = m.polls_as {
        for (_, _, s) in intervals.iter_mut() {
            if s.cause == Some(Cause::Polls) {
                s.cause = Some(to);
            }
        }
    }
    let mut put = [0.0f64; NC];
    for (_, _, s) in &intervals {
        if let Some(c) = s.cause {
            put[c.index()] += s.own as f64;
            put[Cause::Tracer.index()] += s.tracer as f64;
        }
    }
    // The calls placed never hold more of a cause than the thread's model has of it (the model
    // scales a life's causes down when clocks read at different moments overshoot it).
    let mut scale = [1.0f64; NC];
    for c in 0..NC {
        let have = m.ns(Cause::ALL[c]) as f64;
        if put[c] > have {
            scale[c] = have / put[c];
            put[c] = have;
        }
    }
    for (a, b, s) in intervals {
        let len = (b - a) as f64;
        let Some(c) = s.cause else {
            continue;
        };
        let (own, tracer) = (
            s.own as f64 * scale[c.index()],
            s.tracer as f64 * scale[Cause::Tracer.index()],
        );
        // The time it covers shrinks with what it holds: the rest goes to the gaps.
        let whole = (s.own + s.tracer) as f64;
        let held = if whole > 0.0 {
            (own + tracer) / whole
        } else {
            1.0
        };
        bins.spread(a, b, |i, f| {
            out[i][c.index()] += own * f;
            out[i][Cause::Tracer.index()] += tracer * f;
            cover[i] += len * f * held;
        });
    }
    // What the calls placed do not account for, spread over the gaps between them.
    let mut rest = [0.0f64; NC];
    for c in &m.causes {
        rest[c.cause.index()] = (c.ns as f64 - put[c.cause.index()]).max(0.0);
    }
    let mut gap = vec![0.0f64; bins.n];
    let end = m.born_ns + m.alive_ns;
    bins.spread(m.born_ns, end, |i, f| {
        gap[i] = (m.alive_ns as f64 * f - cover[i]).max(0.0);
    });
    let total: f64 = gap.iter().sum();
    if total > 0.0 {
        for (i, g) in gap.iter().enumerate() {
            for c in 0..NC {
                out[i][c] += rest[c] * g / total;
            }
        }
    }
    out
}

/// Whether another thread's time in `c` is work the main thread's wait can be put to.
fn is_work(c: usize) -> bool {
    !Cause::ALL[c].waits_on_others()
}

/// Whether it is another thread's wait on the world outside (a pipe, a socket, a poll).
fn is_outside(c: usize) -> bool {
    matches!(Cause::ALL[c], Cause::Pipes | Cause::Sockets | Cause::Polls)
}

/// How many bins: fine enough to tell phases apart, few enough for many threads.
fn bin_count(threads: usize) -> usize {
    (4_000_000 / (threads.max(1) * NC)).clamp(50, 2000)
}

impl<'a> Placed<'a> {
    /// `t`'s calls and spans by thread, a traced call's stops costing `cost`.
    fn new(t: &'a Trace, cost: &StopCost) -> Self {
        let mut ops: HashMap<u32, Vec<usize>> = HashMap::default();
        for (i, op) in t.ops.iter().enumerate() {
            ops.entry(op.tid).or_default().push(i);
        }
        let mut spans: HashMap<u32, Vec<usize>> = HashMap::default();
        for (i, s) in t.spans.iter().enumerate() {
            spans.entry(s.tid).or_default().push(i);
        }
        Placed {
            t,
            ops,
            spans,
            cost: *cost,
            synced: cause::synced_files(t),
        }
    }
}

/// The main thread's life, bin by bin, put to causes: its own time, and its waits on the others
/// handed to what they did meanwhile.
struct Handed {
    /// The wall time by cause.
    total: [f64; NC],
    /// What stays the main thread's own.
    own: [f64; NC],
    /// Per bin: (the main thread's wait handed to the others' work, their work in the bin).
    to_work: Vec<(f64, f64)>,
    /// Per bin: (the wait handed to their waits on the world outside, those waits in the bin).
    to_outside: Vec<(f64, f64)>,
    /// All the wait handed to others.
    handed: f64,
}

/// Hands the main thread's waits on others (`root`, per bin) to the others' `work`, then to
/// their waits on the world `outside`; what nothing else covered stays the main thread's.
fn hand(root: &[[f64; NC]], work: &[[f64; NC]], outside: &[[f64; NC]]) -> Handed {
    let n = root.len();
    let mut h = Handed {
        total: [0.0; NC],
        own: [0.0; NC],
        to_work: vec![(0.0, 0.0); n],
        to_outside: vec![(0.0, 0.0); n],
        handed: 0.0,
    };
    let waits = |c: usize| Cause::ALL[c].waits_on_others();
    for i in 0..n {
        let r = &root[i];
        let wait: f64 = (0..NC).filter(|&c| waits(c)).map(|c| r[c]).sum();
        for c in (0..NC).filter(|&c| !waits(c)) {
            h.total[c] += r[c];
            h.own[c] += r[c];
        }
        let w: f64 = work[i].iter().sum();
        let a = wait.min(w);
        let o: f64 = outside[i].iter().sum();
        let e = (wait - a).min(o);
        for c in 0..NC {
            if w > 0.0 {
                h.total[c] += a * work[i][c] / w;
            }
            if o > 0.0 {
                h.total[c] += e * outside[i][c] / o;
            }
        }
        // Nothing else was doing anything: the main thread's own wait.
        let left = wait - a - e;
        if wait > 0.0 {
            for c in (0..NC).filter(|&c| waits(c)) {
                let x = left * r[c] / wait;
                h.total[c] += x;
                h.own[c] += x;
            }
        }
        h.handed += a + e;
        h.to_work[i] = (a, w);
        h.to_outside[i] = (e, o);
    }
    h
}

/// The main thread's life by cause, a traced call's stops costing `cost`, or None when the
/// trace has no main thread.
pub fn wall_time(t: &Trace, models: &[ThreadModel], cost: &StopCost) -> Option<WallTime> {
    let main = models.iter().position(|m| m.role == Role::Main)?;
    let root = &models[main];
    if root.alive_ns == 0 {
        return None;
    }
    let placed = Placed::new(t, cost);
    let n = bin_count(models.len());
    let bins = Bins {
        lo: root.born_ns as f64,
        width: (root.alive_ns as f64 / n as f64).max(1.0),
        n,
    };
    let mut work = vec![[0.0f64; NC]; n];
    let mut outside = vec![[0.0f64; NC]; n];
    let mut others = Vec::new();
    for (j, m) in models.iter().enumerate() {
        if j == main || m.role != Role::Working {
            continue;
        }
        let b = thread_bins(m, &placed, &bins);
        for (i, b) in b.iter().enumerate() {
            for c in 0..NC {
                if is_work(c) {
                    work[i][c] += b[c];
                } else if is_outside(c) {
                    outside[i][c] += b[c];
                }
            }
        }
        others.push((j, b));
    }
    let h = hand(&thread_bins(root, &placed, &bins), &work, &outside);
    // Each other thread's share of what was handed to the others, bin by bin.
    let mut credit: HashMap<usize, [f64; NC]> = [(main, h.own)].into_iter().collect();
    for (j, b) in others {
        let mine = credit.entry(j).or_insert([0.0; NC]);
        for (i, b) in b.iter().enumerate() {
            for c in 0..NC {
                let (given, of) = if is_work(c) {
                    h.to_work[i]
                } else if is_outside(c) {
                    h.to_outside[i]
                } else {
                    continue;
                };
                if of > 0.0 {
                    mine[c] += given * b[c] / of;
                }
            }
        }
    }
    Some(WallTime {
        wall_ns: root.alive_ns,
        main_tid: root.tid,
        handed_ns: h.handed as u64,
        causes: wall_causes(&h.total, &credit, models),
    })
}

/// The wall table's rows: each cause's seconds (`total`) with the threads `credit`ed with it,
/// the most first.
fn wall_causes(
    total: &[f64; NC],
    credit: &HashMap<usize, [f64; NC]>,
    models: &[ThreadModel],
) -> Vec<WallCause> {
    let mut causes: Vec<WallCause> = (0..NC)
        .filter(|&c| total[c] >= 0.5)
        .map(|c| {
            let cause = Cause::ALL[c];
            let mut threads: Vec<(ThreadShare, u64)> = credit
                .iter()
                .filter(|(_, v)| v[c] >= 0.5)
                .map(|(&j, v)| {
                    let m = &models[j];
                    // Its runq share of the cause, as in its whole life.
                    let ct = m.causes.iter().find(|x| x.cause == cause);
                    let runq = ct.map_or(0.0, |x| v[c] * x.runq_ns as f64 / (x.ns.max(1)) as f64);
                    (
                        ThreadShare {
                            pid: m.pid,
                            tid: m.tid,
                            name: m.name.clone(),
                            ns: v[c] as u64,
                        },
                        runq as u64,
                    )
                })
                .collect();
            threads.sort_by(|a, b| b.0.ns.cmp(&a.0.ns).then(a.0.tid.cmp(&b.0.tid)));
            let runq_ns = threads
                .iter()
                .map(|x| x.1)
                .sum::<u64>()
                .min(total[c] as u64);
            WallCause {
                cause,
                ns: total[c] as u64,
                runq_ns,
                threads: threads.into_iter().take(5).map(|x| x.0).collect(),
            }
        })
        .collect();
    causes.sort_by(|a, b| b.ns.cmp(&a.ns).then(a.cause.cmp(&b.cause)));
    causes
}
