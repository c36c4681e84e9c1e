//! The plan as it was built before it streamed: every call held, every access sorted by time,
//! then each thread's gaps. Kept only to check the streaming [`super::plan::Builder`] against
//! it, on random traces of several threads whose calls end out of order, with page faults
//! between and at the same moments as calls.

use super::plan::{Builder, CallSums, plan};
use crate::trace::{FileKind, Trace, TraceFile, mapped_ranges};
use crate::workload::Block;
use serde_json::json;
use std::collections::BTreeMap;

/// Per thread (in thread id order): its accesses as (file path, block, gap); and the gaps
/// unknown and a stop's mean cost.
type Reference = (Vec<Vec<(String, Block, u64)>>, usize, u64);

fn data(t: &Trace, i: u32) -> bool {
    t.files
        .get(i as usize)
        .is_some_and(|x| x.kind == FileKind::File && !x.code && !x.is_kernels())
}

struct Event {
    t: u64,
    end: Option<u64>,
    marks: ((u64, u64), (u64, u64)),
    tid: u32,
    file: u32,
    block: Block,
}

fn events(t: &Trace) -> Vec<Event> {
    let mut events: Vec<Event> = Vec::new();
    for op in &t.ops {
        let readlike = op.call.reads_file();
        if let (true, Some(f), Some(off)) = (readlike && op.ret > 0, op.file, op.off)
            && data(t, f)
        {
            events.push(Event {
                t: op.t,
                end: Some(op.t.saturating_add(op.dur)),
                marks: ((op.held, op.stops), (op.held_exit, op.stops + 1)),
                tid: op.tid,
                file: f,
                block: Block {
                    offset: off,
                    len: op.ret as u64,
                },
            });
        }
    }
    let size = |f: u32| t.files.get(f as usize).map_or(0, |x| x.size);
    // A fault on a file that was not all cached may have waited for storage: how long it took
    // is not recorded, so the time after it cannot be told apart from the program's own.
    let cached = |f: u32| {
        t.files
            .get(f as usize)
            .is_some_and(|x| x.resident_before.is_some_and(|r| r >= x.size))
    };
    // A fault happens while its thread runs: the tracer's hold so far is the one its next
    // call notes at entry (or its last call's at exit).
    // (entry, (held, stops) before its entry stop, the same after its exit stop)
    type Mark = (u64, (u64, u64), (u64, u64));
    let mut calls: BTreeMap<u32, Vec<Mark>> = BTreeMap::new();
    for op in &t.ops {
        calls.entry(op.tid).or_default().push((
            op.t,
            (op.held, op.stops.saturating_sub(1)),
            (op.held_exit, op.stops + (op.dur > 0) as u64),
        ));
    }
    let marks_at = |tid: u32, at: u64| {
        calls.get(&tid).map_or((0, 0), |v| {
            let i = v.partition_point(|c| c.0 <= at);
            v.get(i)
                .map(|c| c.1)
                .or_else(|| i.checked_sub(1).map(|j| v[j].2))
                .unwrap_or((0, 0))
        })
    };
    for (fault, (offset, len)) in t.faults.iter().zip(mapped_ranges(&t.faults, size)) {
        if len > 0 && data(t, fault.file) {
            let m = marks_at(fault.tid, fault.t);
            events.push(Event {
                t: fault.t,
                end: cached(fault.file).then_some(fault.t),
                marks: (m, m),
                tid: fault.tid,
                file: fault.file,
                block: Block { offset, len },
            });
        }
    }
    events.sort_by_key(|e| (e.t, e.tid));
    events
}

struct Gaps {
    ns: Vec<u64>,
    unknown: usize,
    stop_ns: u64,
}

struct StopCosts {
    threads: BTreeMap<u32, ThreadCalls>,
    mean: u64,
}

#[derive(Default)]
struct ThreadCalls {
    times: Vec<u64>,
    sums: Vec<u64>,
    counts: Vec<u64>,
}

/// Calls a stop's cost near a moment is averaged over.
const WINDOW: usize = 32;

/// A call longer than this waited for something: its time says nothing of a stop's cost.
const WAITED_NS: u64 = 1_000_000;

impl StopCosts {
    fn new(t: &Trace) -> StopCosts {
        let mut threads: BTreeMap<u32, ThreadCalls> = BTreeMap::new();
        let (mut sum, mut n) = (0u64, 0u64);
        for o in t.ops.iter().filter(|o| o.dur > 0) {
            let cost = o.dur.saturating_sub(o.held_exit.saturating_sub(o.held));
            let kept = cost <= WAITED_NS;
            let c = threads.entry(o.tid).or_insert_with(|| ThreadCalls {
                sums: vec![0],
                counts: vec![0],
                ..ThreadCalls::default()
            });
            c.times.push(o.t);
            c.sums
                .push(c.sums.last().unwrap_or(&0) + if kept { cost } else { 0 });
            c.counts.push(c.counts.last().unwrap_or(&0) + kept as u64);
            if kept {
                sum += cost;
                n += 1;
            }
        }
        StopCosts {
            threads,
            mean: sum / n.max(1),
        }
    }

    /// A stop's cost for thread `tid` near time `at`, ns.
    fn at(&self, tid: u32, at: u64) -> u64 {
        let Some(ThreadCalls {
            times,
            sums,
            counts,
        }) = self.threads.get(&tid)
        else {
            return self.mean;
        };
        let i = times.partition_point(|&x| x < at);
        let lo = i.saturating_sub(WINDOW / 2);
        let hi = (lo + WINDOW).min(times.len());
        let lo = hi.saturating_sub(WINDOW);
        let n = counts[hi] - counts[lo];
        if n == 0 {
            return self.mean;
        }
        (sums[hi] - sums[lo]) / n
    }
}

/// The time each thread spent between its accesses, less what the tracer added: the time it
/// held the thread at its stops (noted in the trace), and [`StopCosts`] per stop. A thread's
/// first access keeps its time after the first access of all (threads that started later
/// start later).
fn gaps(t: &Trace, events: &[Event]) -> Gaps {
    let costs = StopCosts::new(t);
    let first = events.first().map_or(0, |e| e.t);
    // Per thread: when its previous access ended (None: not known), and the marks then.
    let mut last: BTreeMap<u32, (Option<u64>, (u64, u64))> = BTreeMap::new();
    let mut out = Gaps {
        ns: Vec::with_capacity(events.len()),
        unknown: 0,
        stop_ns: costs.mean,
    };
    // Per thread, what the gaps so far were short of covering a stop's mean cost (a stop
    // cheaper than the mean leaves less than nothing): taken from the gaps that follow, so that
    // a thread's gaps add up to its time less the tracer's mean share, not to a sum of
    // remainders that only the stops dearer than the mean leave.
    let mut owed: BTreeMap<u32, i128> = BTreeMap::new();
    for e in events {
        let previous = last.insert(e.tid, (e.end, e.marks.1));
        // A thread's first access: what it owes from before (its start) is not carried.
        let fresh = previous.is_none();
        let (since, (held, stops)) = previous.unwrap_or((Some(first), (0, 0)));
        let (held_now, stops_now) = e.marks.0;
        let gap = match since {
            Some(from) => {
                let owe = owed.entry(e.tid).or_default();
                let g = e.t.saturating_sub(from) as i128
                    - held_now.saturating_sub(held) as i128
                    - (costs.at(e.tid, e.t) * stops_now.saturating_sub(stops)) as i128
                    + *owe;
                *owe = if fresh { 0 } else { g.min(0) };
                g.max(0) as u64
            }
            None => {
                out.unknown += 1;
                0
            }
        };
        out.ns.push(gap);
    }
    out
}

/// The old plan of `t`.
fn reference(t: &Trace) -> Reference {
    let events = events(t);
    let gaps = gaps(t, &events);
    let mut threads: BTreeMap<u32, Vec<(String, Block, u64)>> = BTreeMap::new();
    for (e, gap) in events.iter().zip(gaps.ns) {
        let path = t.files[e.file as usize].path.clone();
        threads.entry(e.tid).or_default().push((path, e.block, gap));
    }
    (threads.into_values().collect(), gaps.unknown, gaps.stop_ns)
}

/// The streaming plan of `t`, in the reference's shape.
fn streamed(p: &super::plan::ReplayPlan) -> Reference {
    let threads = p
        .threads
        .iter()
        .map(|segs| {
            segs.iter()
                .flat_map(|s| {
                    let path = p.files[s.file].path.to_string_lossy().into_owned();
                    s.blocks
                        .iter()
                        .zip(s.gaps.iter())
                        .map(move |(b, g)| (path.clone(), *b, *g))
                })
                .collect()
        })
        .collect();
    (threads, p.gaps_unknown, p.stop_ns)
}

/// A small random number generator (xorshift), for traces that are the same on every run.
struct Random(u64);

impl Random {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n.max(1)
    }
}

/// A trace of 1-3 threads of `calls` calls each (reads of a cached file, an uncached one and
/// program code, writes, closes of one stop, calls that waited), ending out of order across
/// threads, and page faults between calls and at the moments calls were entered.
fn random_trace(seed: u64, calls: u64) -> Trace {
    use crate::trace::fixture::{file, trace};
    let mut r = Random(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let size = 1 << 20;
    let mut files = vec![
        file("/data/cached", size, size, size),
        file("/data/cold", size, 0, size),
        file("/lib/code.so", size, size, size),
    ];
    files[2]["code"] = json!(true);
    let (mut ops, mut faults) = (Vec::new(), Vec::new());
    for tid in 7..7 + 1 + r.below(3) as u32 {
        let (mut t, mut held, mut stops) = (r.below(5000), 0u64, 0u64);
        for _ in 0..calls {
            t += [0, 1, 500, 3000][r.below(4) as usize];
            let kind = r.below(10);
            let dur = match kind {
                0..=1 => 0,
                2 => 2_000_000,
                _ => 100 + r.below(3000),
            };
            let (call, f) = match kind {
                0..=1 => ("close", None),
                3 => ("write", Some(r.below(2) as u32)),
                _ => ("pread", Some(r.below(3) as u32)),
            };
            stops += 1 + r.below(2);
            held += r.below(200);
            let entry = (held, stops);
            if dur > 0 {
                stops += 1;
                held += r.below(200);
            }
            let off = r.below(size - 8192);
            let len = 1 + r.below(8192);
            ops.push(
                json!({"t": t, "dur": dur, "pid": 7, "tid": tid, "call": call, "fd": 3,
                "file": f, "off": f.map(|_| off), "len": len, "ret": len, "arg": null,
                "held": entry.0, "held_exit": held, "stops": entry.1}),
            );
            // A fault now and then: at the call's entry, or in the time after it.
            if r.below(4) == 0 {
                let at = t + [0, dur, dur + 1][r.below(3) as usize];
                faults.push(json!({"t": at, "tid": tid, "file": r.below(2),
                    "off": r.below(size / 4096) * 4096}));
            }
            t += dur;
        }
    }
    // The trace lists calls as they end, and faults in time order.
    ops.sort_by_key(|o| o["t"].as_u64().unwrap() + o["dur"].as_u64().unwrap());
    faults.sort_by_key(|f| f["t"].as_u64().unwrap());
    trace(files, ops, json!(faults))
}

#[test]
fn the_streamed_plan_is_the_one_that_held_every_call() {
    let dir = tempfile::tempdir().unwrap();
    for seed in 0..200 {
        let calls = if seed % 10 == 0 { 600 } else { 40 };
        let t = random_trace(seed, calls);
        let want = reference(&t);
        let p = plan(&t, true).unwrap();
        assert_eq!(streamed(&p), want, "seed {seed}");
        // The same from the file, its calls read twice and never held.
        let path = dir.path().join("t.json");
        std::fs::write(&path, serde_json::to_vec(&t).unwrap()).unwrap();
        let f = TraceFile::<CallSums>::open(&path).unwrap();
        let mut b = Builder::new(&f.trace.files, &f.trace.faults, &f.trace.ops, true).unwrap();
        f.calls(&mut |op| b.op(op)).unwrap();
        assert_eq!(streamed(&b.finish()), want, "seed {seed}, from the file");
    }
}

#[test]
fn a_thread_whose_calls_go_back_in_time_is_refused() {
    let mut t = random_trace(3, 20);
    let tid = t.ops[0].tid;
    let last = t.ops.iter().rposition(|o| o.tid == tid).unwrap();
    t.ops[last].t = 0;
    let e = plan(&t, true).unwrap_err();
    assert!(
        e.cause.contains("entered before the one it follows"),
        "{}",
        e.cause
    );
}
