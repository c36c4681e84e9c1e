//! What a replay does, from a trace: the data files and what their bytes must XOR to, and per
//! traced thread its accesses in time order (read calls, and the windows its page faults
//! mapped), cut into segments of consecutive accesses to one file.

use crate::error::{Error, Result};
use crate::trace::{Call, FileKind, Trace, mapped_ranges};
use crate::workload::Block;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;

/// A data file of the replay.
#[derive(Debug, Clone)]
pub(super) struct DataFile {
    pub(super) path: PathBuf,
    /// XOR of every access's bytes (reads and fault windows), when the trace has both parts.
    pub(super) xor: Option<u32>,
}

/// Consecutive accesses of one thread to one file.
#[derive(Debug, Clone)]
pub(super) struct Segment {
    pub(super) file: usize,
    pub(super) blocks: Arc<[Block]>,
    /// The program's time between its previous access and each of these, ns (what
    /// `--keep-gaps` waits).
    pub(super) gaps: Arc<[u64]>,
}

/// The whole replay.
#[derive(Debug, Clone, Default)]
pub(super) struct ReplayPlan {
    pub(super) files: Vec<DataFile>,
    /// Per traced thread, its segments in order.
    pub(super) threads: Vec<Vec<Segment>>,
    /// Bytes of read calls and of fault windows.
    pub(super) read_bytes: u64,
    pub(super) mapped_bytes: u64,
    pub(super) notes: Vec<String>,
    /// The gaps: the largest sum of one thread's (what a run waits at least), ns; those
    /// unknown (after a page fault that may have waited for storage, kept as none); a stop's
    /// mean cost beyond the tracer's hold.
    pub(super) gaps_ns: u64,
    pub(super) gaps_unknown: usize,
    pub(super) stop_ns: u64,
}

impl ReplayPlan {
    /// Every access.
    pub(super) fn blocks(&self) -> impl Iterator<Item = &Block> {
        self.threads
            .iter()
            .flat_map(|t| t.iter().flat_map(|s| s.blocks.iter()))
    }
}

fn hex(x: &Option<String>) -> Option<u32> {
    x.as_deref().and_then(|x| u32::from_str_radix(x, 16).ok())
}

/// Refuses, in one line, a trace that names a file it does not list or whose reads or faults
/// fall past their file's end (the file as traced, before or after the run): replaying it would
/// read what the program never could.
pub(super) fn validate(t: &Trace) -> Result<()> {
    let bad = |what: String| Err(Error::usage("not a trace this iolab can replay", what));
    let files = t.files.len();
    for (k, op) in t.ops.iter().enumerate() {
        let Some(f) = op.file else { continue };
        let Some(info) = t.files.get(f as usize) else {
            return bad(format!(
                "call {k} names file {f}, and the trace lists {files}"
            ));
        };
        let readlike = op.call.reads() || op.call == Call::Splice;
        if let (true, Some(off)) = (readlike && op.ret > 0 && data(t, f), op.off) {
            let end = off.checked_add(op.ret as u64);
            let size = info.size.max(info.size_after.unwrap_or(0));
            if end.is_none_or(|e| e > size) {
                return bad(format!(
                    "call {k} reads {} bytes at {off} of {}, past its end ({size} bytes)",
                    op.ret,
                    crate::shown::text(&info.path)
                ));
            }
        }
    }
    for (k, fault) in t.faults.iter().enumerate() {
        let Some(info) = t.files.get(fault.file as usize) else {
            return bad(format!(
                "fault {k} names file {}, and the trace lists {files}",
                fault.file
            ));
        };
        let size = info.size.max(info.size_after.unwrap_or(0));
        if data(t, fault.file) && fault.off >= size {
            return bad(format!(
                "fault {k} is at {} of {}, past its end ({size} bytes)",
                fault.off,
                crate::shown::text(&info.path)
            ));
        }
    }
    Ok(())
}

/// Whether file `i` of `t` is data: a regular file, not program code, not the kernel's.
fn data(t: &Trace, i: u32) -> bool {
    t.files
        .get(i as usize)
        .is_some_and(|x| x.kind == FileKind::File && !x.code && !x.is_kernels())
}

/// The accesses to data files of `t`, read calls and page faults, in time order.
fn events(t: &Trace) -> Vec<Event> {
    let mut events: Vec<Event> = Vec::new();
    for op in &t.ops {
        let readlike = op.call.reads() || op.call == Call::Splice;
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
                mapped: false,
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
                mapped: true,
            });
        }
    }
    events.sort_by_key(|e| (e.t, e.tid));
    events
}

/// The plan of `t`: its data files' read calls and fault windows, per thread in time order.
pub(super) fn plan(t: &Trace) -> ReplayPlan {
    let events = events(t);
    let mut index: BTreeMap<u32, usize> = BTreeMap::new();
    let mut p = ReplayPlan::default();
    let mut threads: BTreeMap<u32, Vec<(usize, Block, u64)>> = BTreeMap::new();
    let (mut read, mut faulted) = (BTreeSet::new(), BTreeSet::new());
    let gaps = gaps(t, &events);
    p.stop_ns = gaps.stop_ns;
    p.gaps_unknown = gaps.unknown;
    for (e, gap) in events.iter().zip(gaps.ns) {
        let f = e.file;
        let i = *index.entry(f).or_insert_with(|| {
            p.files.push(DataFile {
                path: PathBuf::from(&t.files[f as usize].path),
                xor: None,
            });
            p.files.len() - 1
        });
        if e.mapped {
            p.mapped_bytes += e.block.len;
            faulted.insert(f);
        } else {
            p.read_bytes += e.block.len;
            read.insert(f);
        }
        threads.entry(e.tid).or_default().push((i, e.block, gap));
    }
    p.gaps_ns = threads
        .values()
        .map(|v| v.iter().map(|x| x.2).sum())
        .max()
        .unwrap_or(0);
    // A file's expected XOR covers both kinds of access it had.
    for (&f, &i) in &index {
        let info = &t.files[f as usize];
        let r = if read.contains(&f) {
            hex(&info.xor)
        } else {
            Some(0)
        };
        let m = if faulted.contains(&f) {
            hex(&info.mapped_xor)
        } else {
            Some(0)
        };
        p.files[i].xor = r.zip(m).map(|(a, b)| a ^ b);
    }
    p.threads = threads.into_values().map(segments).collect();
    p
}

/// An access: a read call, or the range a page fault stands for.
struct Event {
    t: u64,
    /// When the program went on after it (a read's return, a cached fault's time); `None`
    /// when not known.
    end: Option<u64>,
    /// The tracer's hold of the thread so far and its stops so far, at `t` and at `end`.
    marks: ((u64, u64), (u64, u64)),
    tid: u32,
    file: u32,
    block: Block,
    mapped: bool,
}

/// The program's time before each event since its thread's previous one.
struct Gaps {
    /// Per event, ns.
    ns: Vec<u64>,
    unknown: usize,
    stop_ns: u64,
}

/// What a stop costs a thread beyond the tracer's hold: resuming it and telling the tracer of
/// its next stop. A traced call's time from its entry stop's resumption to its exit stop is that
/// and the call's own work, small unless the call waited. The cost is not one figure: here a
/// stop takes 3-5 us while the tracer and the program share a virtual CPU and 50-70 us while
/// waking the other costs a virtual CPU's interrupt, and a run moves between the two (sqlite3's
/// start-up mostly the first, its scan mostly the second). So near a moment it is the mean over
/// the thread's [`WINDOW`] nearest calls of two stops, leaving out calls over 1 ms (they
/// waited for storage, a lock or a pipe).
struct StopCosts {
    threads: BTreeMap<u32, ThreadCalls>,
    /// The mean over every thread's calls kept.
    mean: u64,
}

/// A thread's two-stop calls: their entry times, and running sums of their costs (those kept)
/// and of their number (one more entry each, from 0).
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

/// A thread's accesses cut into runs of one file.
fn segments(list: Vec<(usize, Block, u64)>) -> Vec<Segment> {
    let mut out: Vec<(usize, Vec<Block>, Vec<u64>)> = Vec::new();
    for (f, b, g) in list {
        match out.last_mut() {
            Some((lf, v, gv)) if *lf == f => {
                v.push(b);
                gv.push(g);
            }
            _ => out.push((f, vec![b], vec![g])),
        }
    }
    out.into_iter()
        .map(|(file, v, g)| Segment {
            file,
            blocks: v.into(),
            gaps: g.into(),
        })
        .collect()
}

/// Notes on what the replay leaves out, and the files gone since the trace taken out.
pub(super) fn prune(t: &Trace, p: &mut ReplayPlan) -> Result<()> {
    let writes = t
        .ops
        .iter()
        .filter(|o| o.call.writes() && o.file.is_some_and(|f| data(t, f)))
        .count();
    if writes > 0 {
        p.notes.push(format!(
            "{writes} writes to files are not replayed (they would change them)"
        ));
    }
    if p.mapped_bytes > 0 {
        p.notes.push(format!(
            "mapped access replayed as the range each page fault stands for (its {} KiB window, or up to the next fault of a forward scan; {} of the {} replayed): the program may have touched less",
            crate::trace::FAULT_AROUND >> 10,
            crate::size::format_size(p.mapped_bytes),
            crate::size::format_size(p.mapped_bytes + p.read_bytes),
        ));
    }
    let gone: Vec<usize> = (0..p.files.len())
        .filter(|&i| !p.files[i].path.exists())
        .collect();
    if let Some(&first) = gone.first() {
        p.notes.push(format!(
            "{} file(s) the program read no longer exist and are left out (the first: {})",
            gone.len(),
            crate::shown::path(&p.files[first].path)
        ));
        for t in p.threads.iter_mut() {
            t.retain(|s| !gone.contains(&s.file));
        }
    }
    if p.threads.iter().all(|t| t.is_empty()) {
        return Err(Error::usage(
            "nothing to replay",
            "the trace has no reads or mapped access of regular files that still exist",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    use crate::trace::fixture::{file, op};

    /// A one-thread trace of an 8 KiB file, `resident` bytes of it cached, with `ops` and
    /// `faults`.
    fn trace(resident: u64, ops: Vec<serde_json::Value>, faults: serde_json::Value) -> Trace {
        crate::trace::fixture::trace(vec![file("/data/x", 8192, resident, 8192)], ops, faults)
    }

    /// `o` with the tracer's marks: held before its entry and after its exit, and the
    /// thread's stops up to its entry stop.
    fn marked(
        mut o: serde_json::Value,
        held: u64,
        held_exit: u64,
        stops: u64,
    ) -> serde_json::Value {
        o["held"] = json!(held);
        o["held_exit"] = json!(held_exit);
        o["stops"] = json!(stops);
        o
    }

    #[test]
    fn gaps_are_the_time_between_accesses_less_the_tracers_share() {
        // read 0..4096 from 1000 to 1500 (the thread's stops 1 and 2); a write (3, 4) and a
        // dup the trace does not keep (5, 6); read 4096..8192 entered at 10000 (stop 7). The
        // tracer held the thread 100 ns at each stop.
        let ops = vec![
            marked(op(1000, 500, "read", Some(0), 0, 4096), 0, 100, 1),
            marked(op(3000, 400, "write", None, 0, 10), 200, 300, 3),
            marked(op(10000, 300, "read", Some(0), 4096, 4096), 600, 700, 7),
        ];
        let p = plan(&trace(8192, ops, json!([])));
        // A stop's cost beyond the hold: the calls' times less their entry holds, averaged.
        assert_eq!(p.stop_ns, (400 + 300 + 200) / 3);
        let seg = &p.threads[0][0];
        assert_eq!(seg.blocks.len(), 2);
        // The first access waits nothing; the second the 8500 ns between the reads less the
        // 500 ns held (stops 2 to 6) and five stops (3 to 7).
        assert_eq!(&seg.gaps[..], &[0, 8500 - 500 - 5 * 300]);
        assert_eq!(p.gaps_ns, 6500);
        assert_eq!(p.gaps_unknown, 0);
    }

    #[test]
    fn a_stops_cost_is_the_nearest_calls_and_a_call_that_waited_is_left_out() {
        // 40 calls of 4 us, a read that waited 5 ms for storage, 40 calls of 60 us.
        let mut ops: Vec<_> = (0..81u64)
            .map(|i| {
                let cost = match i {
                    0..40 => 4_000,
                    40 => 5_000_000,
                    _ => 60_000,
                };
                marked(
                    op(i * 10_000_000, cost, "pread", Some(0), 0, 4096),
                    0,
                    0,
                    1 + 2 * i,
                )
            })
            .collect();
        let costs = StopCosts::new(&trace(0, std::mem::take(&mut ops), json!([])));
        assert_eq!(costs.at(7, 0), 4_000);
        assert_eq!(costs.at(7, 800_000_000), 60_000);
        // Across the change: the 32 nearest calls, the one that waited left out.
        assert_eq!(costs.at(7, 405_000_000), (15 * 4_000 + 16 * 60_000) / 31);
        assert_eq!(costs.mean, (40 * 4_000 + 40 * 60_000) / 80);
        // A thread with no calls of two stops: the mean.
        assert_eq!(costs.at(8, 0), costs.mean);
    }

    #[test]
    fn a_gap_short_of_a_stops_cost_is_taken_from_the_next() {
        // Each call took 100 ns: a stop's cost. 50 ns between the first two reads, 750 between
        // the last two, one stop in each.
        let ops = vec![
            marked(op(0, 100, "read", Some(0), 0, 1024), 0, 0, 1),
            marked(op(150, 100, "read", Some(0), 1024, 1024), 0, 0, 3),
            marked(op(1000, 100, "read", Some(0), 2048, 1024), 0, 0, 5),
        ];
        let p = plan(&trace(8192, ops, json!([])));
        assert_eq!(p.stop_ns, 100);
        // 50 - 100 waits nothing and owes 50; 750 - 100 - 50: the thread's sum is kept.
        assert_eq!(&p.threads[0][0].gaps[..], &[0, 0, 600]);
    }

    #[test]
    fn the_time_after_a_fault_that_may_have_waited_for_storage_is_unknown() {
        let ops = vec![op(50, 100, "close", None, 0, 0)];
        let faults = json!([{"t": 1000, "tid": 7, "file": 0, "off": 0},
                            {"t": 5000, "tid": 7, "file": 0, "off": 4096}]);
        // Not cached when traced: the second fault's wait is unknown, kept as none.
        let p = plan(&trace(0, ops.clone(), faults.clone()));
        assert_eq!(p.gaps_unknown, 1);
        assert_eq!(p.gaps_ns, 0);
        // Cached: the time between the faults is the program's.
        let p = plan(&trace(8192, ops, faults));
        assert_eq!(p.gaps_unknown, 0);
        assert_eq!(p.gaps_ns, 4000);
    }
}
