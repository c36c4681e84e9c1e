//! The program's I/O over time: its run cut into equal intervals, and per interval the bytes it
//! read and wrote of regular files, mapped by page faults, moved through pipes and sockets, its
//! calls and metadata calls, and the file that moved the most; so that phases show (a database
//! that scans then sorts, tar that reads while gzip compresses).

use super::{Call, FileKind, Trace};
use rustc_hash::FxHashMap as HashMap;
use serde::{Deserialize, Serialize};

/// Intervals a timeline is cut into (fewer for a run shorter than [`MIN_STEP_NS`] each).
pub const INTERVALS: u64 = 20;

/// The shortest interval, ns.
pub const MIN_STEP_NS: u64 = 1_000_000;

/// One interval of the timeline.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TimelineRow {
    /// Its start, s from the program's start.
    pub from_s: f64,
    /// Bytes read from regular files (calls, splice, io_uring requests).
    pub file_read: u64,
    /// Bytes written to regular files (calls, copies' destinations, io_uring requests).
    pub file_written: u64,
    /// Pages of regular files faulted in mappings, in bytes (4 KiB each; fault-around maps more).
    pub mapped: u64,
    /// Bytes read and written through pipes and sockets.
    pub pipes: u64,
    /// Traced calls that started in it (io_uring requests not counted).
    pub calls: u64,
    /// Of them, metadata calls (open, close, stat, getdents, lseek, mmap and the like).
    pub metadata_calls: u64,
    /// The file that moved the most bytes in it (reads, writes, faults), if any.
    pub busiest: Option<String>,
}

/// The timeline of a trace: the interval's length, s, and the intervals in order.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Timeline {
    /// Each interval's length, s.
    pub step_s: f64,
    /// The intervals, from the program's start to its end.
    pub rows: Vec<TimelineRow>,
}

/// The timeline of `t` (empty for a run with no calls).
pub fn timeline(t: &Trace) -> Timeline {
    let end = t
        .ops
        .iter()
        .map(|o| o.t.saturating_add(o.dur))
        .chain(t.faults.iter().map(|f| f.t))
        .max()
        .unwrap_or(0)
        .max(t.wall_ns);
    if end == 0 || (t.ops.is_empty() && t.faults.is_empty()) {
        return Timeline::default();
    }
    let step = end.div_ceil(INTERVALS).max(MIN_STEP_NS);
    let n = end.div_ceil(step).max(1) as usize;
    let mut rows: Vec<TimelineRow> = (0..n)
        .map(|i| TimelineRow {
            from_s: (i as u64 * step) as f64 / 1e9,
            ..TimelineRow::default()
        })
        .collect();
    let mut by_file: Vec<HashMap<u32, u64>> = vec![HashMap::default(); n];
    let at = |ns: u64| ((ns / step) as usize).min(n - 1);
    let kind = |f: Option<u32>| f.and_then(|i| t.files.get(i as usize)).map(|x| x.kind);
    for op in &t.ops {
        let moved = op.ret.max(0) as u64;
        // A call is counted when it started, a request when its completion was seen.
        let i = at(op.t);
        let r = &mut rows[i];
        if !op.call.is_request() {
            r.calls += 1;
            if is_metadata(op.call) {
                r.metadata_calls += 1;
            }
        }
        let moves = op.call.reads_file() || op.call.writes_file() || op.call.copies();
        if !moves || moved == 0 {
            continue;
        }
        let mut count = |f: Option<u32>, read: bool, r: &mut TimelineRow| match kind(f) {
            Some(FileKind::File) => {
                if read {
                    r.file_read += moved;
                } else {
                    r.file_written += moved;
                }
                if let Some(f) = f {
                    *by_file[i].entry(f).or_default() += moved;
                }
            }
            Some(FileKind::Pipe | FileKind::Socket) => r.pipes += moved,
            _ => {}
        };
        count(op.file, op.call.reads_file() || op.call.copies(), r);
        if op.call.copies() {
            count(op.to_file, false, r);
        }
    }
    for f in &t.faults {
        if t.files.get(f.file as usize).is_some_and(|x| !x.code) {
            let i = at(f.t);
            rows[i].mapped += 4096;
            *by_file[i].entry(f.file).or_default() += 4096;
        }
    }
    for (r, files) in rows.iter_mut().zip(by_file) {
        r.busiest = files
            .into_iter()
            .max_by_key(|&(f, b)| (b, std::cmp::Reverse(f)))
            .and_then(|(f, _)| t.files.get(f as usize))
            .map(|x| x.path.clone());
    }
    Timeline {
        step_s: step as f64 / 1e9,
        rows,
    }
}

fn is_metadata(c: Call) -> bool {
    use Call::*;
    matches!(
        c,
        Open | Close
            | CloseRange
            | Dup
            | Fcntl
            | Lseek
            | Mmap
            | Munmap
            | Mremap
            | Madvise
            | Stat
            | Getdents
            | Rename
            | Unlink
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::fixture::{file, op, trace};
    use serde_json::json;

    #[test]
    fn phases_fall_in_their_intervals_and_nothing_is_lost() {
        // A 1 s run: a file read in the first half, written in the second.
        let mut ops = Vec::new();
        for k in 0..10u64 {
            ops.push(op(k * 50_000_000, 1000, "read", Some(0), k * 4096, 4096));
        }
        for k in 0..5u64 {
            let mut w = op(
                600_000_000 + k * 50_000_000,
                1000,
                "write",
                Some(1),
                0,
                8192,
            );
            w["len"] = json!(8192);
            ops.push(w);
        }
        let mut t = trace(
            vec![file("/d/in", 40960, 0, 40960), file("/d/out", 40960, 0, 0)],
            ops,
            json!([]),
        );
        t.wall_ns = 1_000_000_000;
        let tl = timeline(&t);
        assert_eq!(tl.rows.len(), INTERVALS as usize);
        assert!((tl.step_s - 0.05).abs() < 1e-9);
        let read: u64 = tl.rows.iter().map(|r| r.file_read).sum();
        let written: u64 = tl.rows.iter().map(|r| r.file_written).sum();
        assert_eq!((read, written), (40960, 40960));
        // The reads are all before 0.5 s, the writes all after.
        assert!(tl.rows[..10].iter().all(|r| r.file_written == 0));
        assert!(tl.rows[10..].iter().all(|r| r.file_read == 0));
        assert_eq!(tl.rows[0].busiest.as_deref(), Some("/d/in"));
        assert_eq!(tl.rows[12].busiest.as_deref(), Some("/d/out"));
        assert_eq!(tl.rows.iter().map(|r| r.calls).sum::<u64>(), 15);
    }

    #[test]
    fn mapped_data_counts_each_fault_window_once() {
        // Two faults in one 64 KiB window, one a MiB on, one on a 10 KiB file: 64 + 64 + 10 KiB.
        let f = |t: u64, file: u32, off: u64| json!({"t": t, "tid": 7, "file": file, "off": off});
        let t = trace(
            vec![file("/d/big", 4 << 20, 0, 0), file("/d/small", 10240, 0, 0)],
            vec![op(0, 10, "read", Some(0), 0, 1)],
            json!([f(1, 0, 0), f(2, 0, 4096), f(3, 0, 1 << 20), f(4, 1, 8192)]),
        );
        let p = crate::trace::profile::profile(&t);
        assert_eq!(p.mapped_bytes, (64 << 10) + (64 << 10) + 10240);
        let tl = timeline(&t);
        assert_eq!(tl.rows.iter().map(|r| r.mapped).sum::<u64>(), 4 * 4096);
    }
}
