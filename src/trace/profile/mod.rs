//! A trace reduced to what a user reads: per file the bytes asked and returned, unique bytes,
//! re-reads, sequential share, request sizes, residency before and after, faults; per call the
//! count and time; the trace's byte totals beside the kernel's own accounting.

use super::{Call, Ended, FileKind, KernelIo, Trace};
mod tally;

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use tally::{Acc, Tally, tally};

/// Byte and call totals of one kind of access.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Totals {
    /// Calls.
    pub calls: u64,
    /// Bytes asked for.
    pub asked: u64,
    /// Bytes moved (what the calls returned).
    pub bytes: u64,
    /// Time in the calls as the tracer saw them, ns (threads add up).
    pub time_ns: u64,
}

/// One file's access.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FileProfile {
    /// Its path.
    pub path: String,
    /// Its later names, in order (renames the program made of it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub renamed: Vec<String>,
    /// Its size after the run (when first seen, if it was gone by then).
    pub size: u64,
    /// Read calls on it.
    pub reads: Totals,
    /// Write calls on it.
    pub writes: Totals,
    /// Bytes read at least once.
    pub unique: u64,
    /// Share of the bytes read that had been read before (0..1).
    pub reread: f64,
    /// Share of read calls that started where the previous read of the file ended (0..1).
    pub sequential: f64,
    /// Its typical read: the byte-weighted median of the lengths its reads returned (half of
    /// the bytes came in reads this long or shorter), so that a 3-byte sniff before 64 KiB
    /// reads, or copy_file_range's "as much as you can", does not stand for the reads.
    pub typical_request: u64,
    /// Bytes resident before its first open and after the run (None where hidden).
    pub resident_before: Option<u64>,
    /// Bytes resident after the run.
    pub resident_after: Option<u64>,
    /// Page faults sampled on its mappings.
    pub faults: u64,
    /// Distinct pages those faults were on.
    pub fault_pages: u64,
    /// Mapped at all (mmap calls).
    pub mapped: bool,
    /// Opened with O_DIRECT: its reads bypassed the page cache.
    #[serde(default)]
    pub direct: bool,
    /// The program dropped its own cached pages of it (fadvise DONTNEED).
    #[serde(default)]
    pub dropped: bool,
    /// Program code (mapped executable).
    pub code: bool,
    /// XOR of the bytes its reads returned.
    pub xor: Option<String>,
    /// The page cache's work for it (the kernel tracer's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache: Option<super::CacheWork>,
}

/// One system call's count and time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CallRow {
    /// The call.
    pub call: String,
    /// Times called.
    pub calls: u64,
    /// Calls that failed.
    pub errors: u64,
    /// Bytes moved (read and write calls).
    pub bytes: u64,
    /// Time in it as the tracer saw it, ns.
    pub time_ns: u64,
}

/// The profile of a trace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Profile {
    /// The program and its arguments.
    pub command: Vec<String>,
    /// Its wall time, traced, seconds.
    pub wall_s: f64,
    /// How it ended.
    pub ended: Ended,
    /// Stopped by an interruption.
    pub interrupted: bool,
    /// Processes and threads.
    pub processes: u32,
    /// Threads.
    pub threads: u32,
    /// Stops for the tracer.
    pub stops: u64,
    /// Every read-like call the kernel counts in rchar (any descriptor: files, pipes, terminals).
    pub reads: Totals,
    /// Of those, reads of regular files.
    pub file_reads: Totals,
    /// Every call the kernel counts in wchar (writes to any descriptor, sendfile,
    /// copy_file_range).
    pub writes: Totals,
    /// Bytes written to regular files: write calls, and the destinations of sendfile, splice
    /// and copy_file_range.
    #[serde(default)]
    pub file_writes: Totals,
    /// io_uring read and write requests (not in `reads`/`writes`: the kernel counts them in
    /// neither rchar nor wchar), and what was seen of the rings (None: no ring).
    #[serde(default)]
    pub uring_reads: Totals,
    #[serde(default)]
    #[allow(missing_docs)]
    pub uring_writes: Totals,
    #[serde(default)]
    #[allow(missing_docs)]
    pub uring: Option<super::UringSeen>,
    /// The page cache's work for the whole run (the kernel tracer's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache: Option<super::CacheSeen>,
    /// Time in all traced calls over the wall time (threads add up, so it can pass 1).
    pub io_share: f64,
    /// The kernel's accounting.
    pub kernel: KernelIo,
    /// The trace's read bytes, plus the kernel's reads at exec, over the kernel's rchar (1 = they
    /// agree).
    pub rchar_agreement: Option<f64>,
    /// The trace's write bytes over the kernel's wchar (1 = they agree).
    #[serde(default)]
    pub wchar_agreement: Option<f64>,
    /// Why `device_per_unique` is not given: the program also read data its calls do not show
    /// (mapped access of data files, io_uring), which the unique bytes would not count.
    #[serde(default)]
    pub device_per_unique_withheld: Option<String>,
    /// Bytes read from storage (kernel) per unique byte the program read from files.
    pub device_per_unique: Option<f64>,
    /// Bytes the run brought into the page cache: every regular file's residency after the run
    /// less before its first open, in whole pages (where both are visible; files it wrote left
    /// out), summed.
    pub cache_growth: u64,
    /// Files that held fewer pages in the cache after the run than before, or none once read:
    /// evictions during it.
    #[serde(default)]
    pub shrunk_files: usize,
    /// The block devices' cache growth over the run: file-system metadata (system-wide).
    #[serde(default)]
    pub metadata_growth: u64,
    /// `cache_growth` plus `metadata_growth` over the kernel's bytes from storage (1: every
    /// storage read is accounted for; below: pages evicted during the run, or reads the cache
    /// did not keep; above: another program's metadata reads).
    pub device_agreement: Option<f64>,
    /// Sizes of file reads: (length returned, rounded up to a power of two; calls).
    pub request_sizes: Vec<(u64, u64)>,
    /// Regular files, most bytes first (code files apart).
    pub files: Vec<FileProfile>,
    /// Program and library files the program mapped executable (the loader's reads of their
    /// headers included), by faults.
    pub code_files: Vec<FileProfile>,
    /// Per call.
    pub calls: Vec<CallRow>,
    /// Page faults on file mappings sampled, and lost.
    pub faults: u64,
    /// Bytes of data files (not program code) the faults mapped: their distinct fault-around
    /// windows ([`super::fault_window`]), each counted once.
    #[serde(default)]
    pub mapped_bytes: u64,
    /// Faults the kernel dropped.
    pub faults_lost: u64,
    /// Why faults were not sampled.
    pub faults_unavailable: Option<String>,
    /// Notes from the trace.
    pub notes: Vec<String>,
    /// Where the time went, per process and kind of wait (None for a trace recorded before
    /// per-process times were).
    #[serde(default)]
    pub time: Option<super::time::TimeProfile>,
    /// Bytes and calls per interval of the run (phases).
    #[serde(default)]
    pub timeline: super::timeline::Timeline,
    /// Metadata calls per directory (stat, getdents), most time first.
    #[serde(default)]
    pub metadata_dirs: Vec<super::time::DirRow>,
    /// Opens that failed: calls and time, ns.
    #[serde(default)]
    pub failed_opens: (u64, u64),
    /// What to change, most pressing first (`advice::RULES`; [`super::advice::profiled`] fills
    /// it, empty from [`profile`] alone).
    #[serde(default)]
    pub advice: Vec<super::recommend::Recommendation>,
}

/// Total length of the union of `ranges` (start, len).
pub fn union_len(ranges: &mut [(u64, u64)]) -> u64 {
    ranges.sort_unstable();
    let mut total = 0;
    let mut cur: Option<(u64, u64)> = None;
    for &(s, l) in ranges.iter() {
        let e = s.saturating_add(l);
        match cur {
            Some((cs, ce)) if s <= ce => cur = Some((cs, ce.max(e))),
            Some((cs, ce)) => {
                total += ce - cs;
                cur = Some((s, e));
            }
            None => cur = Some((s, e)),
        }
    }
    if let Some((cs, ce)) = cur {
        total += ce - cs;
    }
    total
}

/// The byte-weighted median of `sizes` (length -> calls): the smallest length such that reads
/// of that length or shorter returned at least half the bytes; 0 for none.
fn weighted_median(sizes: &HashMap<u64, u64>) -> u64 {
    let mut v: Vec<(u64, u64)> = sizes.iter().map(|(s, n)| (*s, *n)).collect();
    v.sort_unstable();
    let total: u128 = v.iter().map(|(s, n)| *s as u128 * *n as u128).sum();
    let mut acc = 0u128;
    for (s, n) in v {
        acc += s as u128 * n as u128;
        if 2 * acc >= total {
            return s;
        }
    }
    0
}

/// Each regular file's profile from its tally: data files, code files, and the unique bytes read.
fn file_profiles(t: &Trace, acc: BTreeMap<u32, Acc>) -> (Vec<FileProfile>, Vec<FileProfile>, u64) {
    let mut files = Vec::new();
    let mut code_files = Vec::new();
    let mut unique_total = 0u64;
    for (f, mut a) in acc {
        let Some(info) = t.files.get(f as usize) else {
            continue;
        };
        if info.kind != FileKind::File {
            continue;
        }
        let unique = union_len(&mut a.ranges);
        unique_total += unique;
        let typical = weighted_median(&a.sizes);
        let p = FileProfile {
            path: info.path.clone(),
            renamed: info.renamed.clone(),
            size: info.size_after.unwrap_or(info.size),
            reads: a.reads,
            writes: a.writes,
            unique,
            reread: if a.reads.bytes > 0 {
                1.0 - unique as f64 / a.reads.bytes as f64
            } else {
                0.0
            },
            sequential: if a.reads.calls > 0 {
                a.seq as f64 / a.reads.calls as f64
            } else {
                0.0
            },
            typical_request: typical,
            resident_before: info.resident_before,
            resident_after: info.resident_after,
            faults: a.faults,
            fault_pages: a.fault_pages.len() as u64,
            mapped: a.mapped,
            direct: a.direct,
            dropped: a.dropped,
            code: info.code,
            xor: info.xor.clone(),
            cache: info.cache,
        };
        if info.code && p.writes.calls == 0 {
            code_files.push(p);
        } else {
            files.push(p);
        }
    }
    (files, code_files, unique_total)
}

/// What the program read that its read calls do not show, if anything: page faults on data
/// files (not program code), io_uring.
/// Faults count when the distinct pages they were on pass 1% of the `unique` bytes read by
/// calls (the loader's cache, faulted by every program, does not).
fn unseen_reads(t: &Trace, unique: u64) -> Option<String> {
    let pages: HashSet<(u32, u64)> = t
        .faults
        .iter()
        .filter(|f| t.files.get(f.file as usize).is_some_and(|x| !x.code))
        .map(|f| (f.file, f.off / 4096))
        .collect();
    let faults = if pages.len() as u64 * 4096 * 100 > unique {
        pages.len()
    } else {
        0
    };
    // What io_uring moved is in the ops, unless some requests were unseen or the trace is
    // from before they were read.
    let uring = match &t.uring {
        Some(u) => u.unseen > 0,
        None => t
            .ops
            .iter()
            .any(|o| matches!(o.call, Call::UringSetup | Call::UringEnter)),
    };
    match (faults, uring) {
        (0, false) => None,
        (n, false) => Some(format!(
            "the program mapped data files ({n} pages faulted): bytes no read call shows"
        )),
        (0, true) => Some("some io_uring requests were not seen".to_string()),
        (n, true) => Some(format!(
            "the program mapped data files ({n} pages faulted) and read through io_uring: bytes no read call shows"
        )),
    }
}

/// The distinct fault windows on data files, in bytes.
fn mapped_bytes(t: &Trace) -> u64 {
    let windows: HashSet<(u32, u64)> = t
        .faults
        .iter()
        .filter(|f| t.files.get(f.file as usize).is_some_and(|x| !x.code))
        .map(|f| (f.file, super::fault_window(f.off, 0).0))
        .collect();
    windows
        .iter()
        .map(|&(f, start)| super::fault_window(start, t.files[f as usize].size).1)
        .sum()
}

/// The profile of `t`, without advice ([`super::advice::profiled`] adds it). The time model and
/// the timeline read the trace alone: they are made on a second thread meanwhile (the program
/// has ended, its cores are free; `iolab trace` of `rg -c -j2` over /usr/lib took 0.964x the
/// time, 7 interleaved rounds, docs/benchmarks.md).
pub fn profile(t: &Trace) -> Profile {
    std::thread::scope(|s| {
        let aside = s.spawn(|| (super::time::time_profile(t), super::timeline::timeline(t)));
        let p = counted(t);
        let (time, timeline) = aside
            .join()
            .unwrap_or_else(|e| std::panic::resume_unwind(e));
        Profile {
            time,
            timeline,
            ..p
        }
    })
}

/// The profile of `t` but its time model and timeline: the calls, files and sizes counted.
fn counted(t: &Trace) -> Profile {
    let Tally {
        acc,
        reads,
        file_reads,
        writes,
        file_writes,
        uring_reads,
        uring_writes,
        calls,
        sizes,
        io_ns,
    } = tally(t);
    let (mut files, mut code_files, unique_total) = file_profiles(t, acc);
    let weight = |p: &FileProfile| p.reads.bytes + p.writes.bytes + p.fault_pages * 4096;
    // By weight, the heaviest first; ties by path, compared for ties only (rg's 73,000
    // files: a sort of every path first took 45 ms). The records are large: their places
    // are sorted, then each is moved about once, in place.
    let weights: Vec<u64> = files.iter().map(weight).collect();
    let mut order: Vec<usize> = (0..files.len()).collect();
    order.sort_unstable_by(|&i, &j| {
        (weights[j].cmp(&weights[i]))
            .then_with(|| files[i].path.cmp(&files[j].path))
            .then(i.cmp(&j))
    });
    super::order::put_in_order(&mut files, order);
    code_files.sort_by(|a, b| b.faults.cmp(&a.faults).then(a.path.cmp(&b.path)));
    let (cache_growth, shrunk_files) = super::storage::cache_growth(t);
    let (metadata_dirs, failed_opens) = super::time::metadata_by_dir(t);
    let wall_s = t.wall_ns as f64 / 1e9;
    let mut calls: Vec<CallRow> = calls.into_values().collect();
    calls.sort_by_key(|c| std::cmp::Reverse(c.time_ns));
    Profile {
        command: t.command.clone(),
        wall_s,
        ended: t.ended,
        interrupted: t.interrupted,
        processes: t.processes,
        threads: t.threads,
        stops: t.stops,
        reads,
        file_reads,
        writes,
        file_writes,
        uring_reads,
        uring_writes,
        uring: t.uring.clone(),
        cache: t.cache,
        io_share: if t.wall_ns > 0 {
            io_ns as f64 / t.wall_ns as f64
        } else {
            0.0
        },
        kernel: t.kernel,
        rchar_agreement: (t.kernel.threads > 0 && t.kernel.rchar > 0)
            .then(|| (reads.bytes + t.kernel.exec_rchar) as f64 / t.kernel.rchar as f64),
        wchar_agreement: (t.kernel.threads > 0 && t.kernel.wchar > 0)
            .then(|| writes.bytes as f64 / t.kernel.wchar as f64),
        device_per_unique: (unique_total > 0
            && t.kernel.threads > 0
            && unseen_reads(t, unique_total).is_none())
        .then(|| t.kernel.read_bytes as f64 / unique_total as f64),
        device_per_unique_withheld: unseen_reads(t, unique_total),
        cache_growth,
        shrunk_files,
        metadata_growth: t.kernel.buffers_growth,
        device_agreement: (t.kernel.threads > 0 && t.kernel.read_bytes > 0)
            .then(|| (cache_growth + t.kernel.buffers_growth) as f64 / t.kernel.read_bytes as f64),
        request_sizes: sizes.into_iter().collect(),
        files,
        code_files,
        calls,
        faults: t.faults.len() as u64,
        mapped_bytes: mapped_bytes(t),
        faults_lost: t.faults_lost,
        faults_unavailable: t.faults_unavailable.clone(),
        notes: t.notes.clone(),
        time: None,
        timeline: Default::default(),
        metadata_dirs,
        failed_opens,
        advice: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_storage_ratio_is_withheld_when_mapped_data_is_not_in_the_read_calls() {
        use crate::trace::fixture::{file, op, trace};
        let faults: Vec<serde_json::Value> = (0..64)
            .map(|i| serde_json::json!({"t": i, "tid": 7, "file": 1, "off": i * 4096}))
            .collect();
        let t = trace(
            vec![
                file("/d/read", 65536, 0, 65536),
                file("/d/mapped", 1 << 20, 0, 1 << 20),
            ],
            vec![op(0, 1, "read", Some(0), 0, 65536)],
            serde_json::Value::Array(faults),
        );
        let p = profile(&t);
        assert_eq!(p.device_per_unique, None);
        assert!(
            p.device_per_unique_withheld
                .unwrap()
                .contains("64 pages faulted")
        );
        // Reads alone: given.
        let t = trace(
            vec![file("/d/read", 65536, 0, 65536)],
            vec![op(0, 1, "read", Some(0), 0, 65536)],
            serde_json::json!([]),
        );
        assert!(profile(&t).device_per_unique.is_some());
    }

    #[test]
    fn the_typical_read_is_where_half_the_bytes_came() {
        // rg's 3-byte sniff before its 64 KiB reads; most calls are the sniffs.
        let sizes: HashMap<u64, u64> = [(3, 100), (65536, 20)].into_iter().collect();
        assert_eq!(weighted_median(&sizes), 65536);
        let even: HashMap<u64, u64> = [(100, 1), (300, 1)].into_iter().collect();
        assert_eq!(weighted_median(&even), 300);
        let small: HashMap<u64, u64> = [(4096, 3), (1000, 1)].into_iter().collect();
        assert_eq!(weighted_median(&small), 4096);
        assert_eq!(weighted_median(&HashMap::default()), 0);
    }

    #[test]
    fn union_of_ranges_counts_overlaps_once() {
        assert_eq!(union_len(&mut []), 0);
        assert_eq!(union_len(&mut [(0, 10), (5, 10), (20, 5)]), 20);
        assert_eq!(union_len(&mut [(10, 5), (0, 10)]), 15);
        assert_eq!(union_len(&mut [(0, 100), (10, 5)]), 100);
    }
}
