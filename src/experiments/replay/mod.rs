//! `iolab replay TRACE`: the file reads a traced program made (`iolab trace --out`), replayed
//! with each read method through the harness: same files, same offsets and lengths, each traced
//! thread's reads of a file in its order on a thread of its own, files one after another, as
//! fast as possible. Every method must read the same bytes: the XOR over the reads equals the
//! trace's per file (checked at every run), so a file that changed since the trace is caught.
//! Direct methods read the reads aligned out to 4 KiB; the extra bytes are counted.

pub mod advised;
mod cells;
mod phases;
mod plan;
#[cfg(test)]
mod reference;
mod report;
pub mod suite;
mod thread;
pub use report::{replay_document, replay_table};

use crate::cache::CacheMode;
use crate::engine::{self, ReadMethod};
use crate::error::{Error, Result};
use crate::harness::{CellRun, Observer, Rounds, RoundsTaken};
use crate::measure::finding::Finding;
use crate::measure::stats::{Summary, summarize};
use crate::trace::Trace;
use crate::workload::Block;
use cells::{ReplayCell, open_sources};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

/// What to replay and how.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ReplayConfig {
    /// The trace file.
    pub trace: PathBuf,
    /// The methods, the accesses as recorded first (its engine is chosen from the trace).
    pub methods: Vec<ReplayMethod>,
    /// Cache states.
    pub caches: Vec<CacheMode>,
    /// Rounds: adaptive within a budget.
    #[serde(flatten)]
    pub rounds: Rounds,
    /// As root, also drop every clean page before cold runs.
    pub drop_all: bool,
    /// Wait before each access the program's time since its previous one (its computing).
    #[serde(default)]
    pub keep_gaps: bool,
    /// Methods measured first, each in a cache state, against the accesses as recorded (the
    /// advice's changes); the other methods and cache states get what is left of the budget.
    /// Empty: what the trace's shape suggests comes first.
    #[serde(default)]
    pub first: Vec<(ReplayMethod, CacheMode)>,
}

/// A way to replay the reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ReplayMethod {
    /// The accesses as the program made them: with pread when it read them with calls, through
    /// a mapping when its page faults carried most of its data.
    Recorded(ReadMethod),
    /// An engine's method over the recorded reads (direct ones aligned out).
    Method(ReadMethod),
    /// Recorded reads that follow one another merged into reads of up to this many bytes, with
    /// pread: what larger requests would change.
    Merged(u64),
}

impl ReplayMethod {
    /// Its name in tables.
    pub fn name(&self) -> String {
        match self {
            ReplayMethod::Recorded(m) => format!("as recorded ({})", m.name()),
            ReplayMethod::Method(m) => m.name().to_string(),
            ReplayMethod::Merged(n) => format!("pread {} merged", crate::size::format_size(*n)),
        }
    }

    /// The default set: as recorded (pread), each mapping hint, io_uring, O_DIRECT both ways, uncached,
    /// and merged 128 KiB reads.
    pub fn defaults() -> Vec<ReplayMethod> {
        use ReadMethod::*;
        let mut v = vec![ReplayMethod::Recorded(Pread)];
        v.extend(
            [
                Mmap,
                MmapRandom,
                MmapWillneed,
                Uring,
                Direct,
                UringDirect,
                Uncached,
            ]
            .into_iter()
            .map(ReplayMethod::Method),
        );
        v.push(ReplayMethod::Merged(128 << 10));
        v
    }

    fn direct(&self) -> bool {
        self.engine().is_direct()
    }
}

/// One method in one cache state, summarised.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ReplayRow {
    /// The method.
    pub method: String,
    /// The cache state.
    pub cache: CacheMode,
    /// Wall time of the replay, seconds.
    pub seconds: Summary,
    /// Bytes read per second (the recorded reads' bytes; direct's extra bytes not counted).
    pub mib_s: Summary,
    /// Bytes read per run, extra aligned bytes included.
    pub bytes: u64,
    /// System calls or io_uring requests per run.
    pub ops: u64,
    /// Every counted run started from the asked cache state, verified (by residency, or where
    /// the kernel hides it by the device bytes the run read).
    #[serde(default = "yes")]
    pub cache_verified: bool,
    /// Why it did not run here.
    pub unsupported: Option<String>,
}

/// What a replay found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ReplayResult {
    /// The traced command.
    pub command: Vec<String>,
    /// Files replayed.
    pub files: usize,
    /// Reads replayed per run.
    pub reads: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Share of reads that continued the previous one of their file.
    pub sequential: f64,
    /// The most common read size.
    pub typical_read: u64,
    /// Per method and cache state.
    pub rows: Vec<ReplayRow>,
    /// Per cache state: the fastest method against the reads as recorded, or none clearly.
    pub findings: Vec<Finding>,
    /// How the rounds went.
    pub rounds: RoundsTaken,
    /// What the replay leaves out or should be known.
    pub notes: Vec<String>,
    /// With `--keep-gaps`: the program's time between accesses that its busiest thread waits
    /// in a run, seconds (threads wait at once).
    #[serde(default)]
    pub kept_gaps_s: Option<f64>,
    /// The time the traced program's threads spent in the read calls replayed, seconds (the
    /// tracer's share off): what any method could save at most.
    #[serde(default)]
    pub traced_read_s: f64,
    /// The traced program's wall time, seconds.
    #[serde(default)]
    pub traced_wall_s: f64,
    /// Each method against the accesses as recorded in its cache state, the first part's first.
    #[serde(default)]
    pub gains: Vec<MethodGain>,
}

/// One method against the accesses as recorded, in one cache state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MethodGain {
    /// The method, as the table names it.
    pub method: String,
    /// The cache state.
    pub cache: CacheMode,
    /// Its verdict against the accesses as recorded (None: a side has no run).
    pub verdict: Option<crate::measure::decide::Verdict>,
}

/// Reads merged where one continues the previous, up to `max` bytes; a merged read's gap is
/// the sum of its reads' (the program's compute time is kept, now before the larger read).
fn merged(blocks: &[Block], gaps: &[u64], max: u64) -> (Arc<[Block]>, Arc<[u64]>) {
    let mut out: Vec<Block> = Vec::new();
    let mut out_gaps: Vec<u64> = Vec::new();
    for (i, b) in blocks.iter().enumerate() {
        let g = gaps.get(i).copied().unwrap_or(0);
        match (out.last_mut(), out_gaps.last_mut()) {
            (Some(l), Some(lg)) if l.offset + l.len == b.offset && l.len + b.len <= max => {
                l.len += b.len;
                *lg += g;
            }
            _ => {
                out.push(*b);
                out_gaps.push(g);
            }
        }
    }
    (out.into(), out_gaps.into())
}

/// Reads aligned out to O_DIRECT's 4 KiB (ending at the file's end at most).
fn aligned(blocks: &[Block], size: u64) -> Arc<[Block]> {
    let a = engine::DIRECT_ALIGN;
    blocks
        .iter()
        .map(|b| {
            let s = b.offset / a * a;
            let e = (b.offset + b.len).div_ceil(a) * a;
            Block {
                offset: s,
                // The file's end is the last block's end (the engine reads it aligned).
                len: e.min(size).saturating_sub(s),
            }
        })
        .collect()
}

/// Memory a replay holds per read call and per page fault of its trace: the plan's block (16
/// bytes) and with `--keep-gaps` its gap (8), and per fault its range, its place in its
/// thread's list and its access; with a margin. Measured: 222 MB peak for ten million reads
/// (1.7 GB of trace), 42 MB for one million.
const MEMORY_PER_READ: u64 = 32;
const MEMORY_PER_FAULT: u64 = 96;

/// Refuses, in one line, a trace whose replay would need more memory than the machine (or this
/// process's memory cgroup) has available: the trace's calls are never all held, its reads'
/// blocks and its faults are.
fn fits_in_memory(path: &std::path::Path, reads: u64, faults: u64) -> Result<()> {
    let need = reads
        .saturating_mul(MEMORY_PER_READ)
        .saturating_add(faults.saturating_mul(MEMORY_PER_FAULT));
    let mut available = crate::cache::meminfo::read().mem_available;
    if let Some(group) = crate::cache::cgroup::own_headroom() {
        available = available.min(group);
    }
    if available > 0 && need > available / 10 * 8 {
        return Err(Error::usage(
            "the trace is too large to replay here",
            format!(
                "{reads} reads and {faults} page faults need about {} of memory to replay, and {} is available",
                crate::size::format_size(need),
                crate::size::format_size(available)
            ),
        )
        .at(path)
        .hint("trace a shorter run of the program"));
    }
    Ok(())
}

/// Replays `cfg.trace`, read twice and never held whole: once for all but its calls (and what
/// the plan needs from all of them), once to plan the calls one by one.
pub fn run_replay(cfg: &ReplayConfig, obs: &dyn Observer) -> Result<ReplayResult> {
    let started = std::time::Instant::now();
    // A large trace takes a while to read (a 1.7 GB one, 27 s here): said as it goes.
    obs.progress("reading the trace", 0, 1);
    let f = crate::trace::TraceFile::<plan::CallSums>::open(&cfg.trace)?;
    let t = &f.trace;
    fits_in_memory(&cfg.trace, t.ops.reads, t.faults.len() as u64)?;
    let mut b = plan::Builder::new(&t.files, &t.faults, &t.ops, cfg.keep_gaps)
        .map_err(|e| e.at(&cfg.trace))?;
    let total = t.ops.calls as usize;
    let mut done = 0usize;
    let calls = f
        .calls(&mut |op| {
            done += 1;
            if done.is_multiple_of(1 << 18) {
                obs.progress("planning the trace's calls", done, total);
            }
            b.op(op)
        })
        .map_err(|e| e.at(&cfg.trace))?;
    if calls != t.ops.calls {
        return Err(Error::failed(
            "the trace changed while it was read",
            format!("{} calls, then {calls}", t.ops.calls),
        )
        .at(&cfg.trace));
    }
    let plan = b.finish().with_uring(t.uring.as_ref());
    let traced = phases::Traced {
        command: &t.command,
        files: &t.files,
        wall_ns: t.wall_ns,
    };
    phases::replay_plan(plan, traced, cfg, obs, started)
}

/// Replays trace `t` (`cfg.trace` names it in messages).
pub fn replay_trace(t: &Trace, cfg: &ReplayConfig, obs: &dyn Observer) -> Result<ReplayResult> {
    let started = std::time::Instant::now();
    let plan = plan::plan(t, cfg.keep_gaps).map_err(|e| e.at(&cfg.trace))?;
    let traced = phases::Traced {
        command: &t.command,
        files: &t.files,
        wall_ns: t.wall_ns,
    };
    phases::replay_plan(plan, traced, cfg, obs, started)
}

/// What `--keep-gaps` keeps: the program's time between accesses, and what was taken out.
fn gaps_note(plan: &plan::ReplayPlan) -> String {
    let mut s = format!(
        "gaps kept: the program's time between accesses, its busiest thread's {:.3} s a run (less the tracer's holds, and its stops at their cost nearby, {:.1} us on average)",
        plan.gaps_ns as f64 / 1e9,
        plan.stop_ns as f64 / 1e3
    );
    if plan.gaps_unknown > 0 {
        s.push_str(&format!(
            "; {} gaps after page faults on files not cached when traced are kept as none (the fault's wait for storage cannot be told from computing)",
            plan.gaps_unknown
        ));
    }
    s
}

/// The methods to run: the first is the accesses as recorded, with a mapping when the program's
/// page faults carried more of its data than its read calls (and then plain `mmap` is not
/// repeated among the others).
fn methods_for(asked: &[ReplayMethod], plan: &plan::ReplayPlan) -> Vec<ReplayMethod> {
    // As the program read most of its bytes: mapped, with O_DIRECT, or with read calls.
    let mapped = plan.mapped_bytes > plan.read_bytes;
    let direct = !mapped && 2 * plan.direct_bytes > plan.read_bytes;
    let first = ReplayMethod::Recorded(if mapped {
        ReadMethod::Mmap
    } else if direct {
        ReadMethod::Direct
    } else {
        ReadMethod::Pread
    });
    let mut v = vec![first];
    v.extend(asked.iter().copied().filter(|m| match m {
        ReplayMethod::Recorded(_) => false,
        ReplayMethod::Merged(_) => true,
        ReplayMethod::Method(e) => *e != first.engine(),
    }));
    v
}

/// io_uring's depth: a thread's accesses do not wait for one another's data in a replay, so up
/// to 16 in flight, fewer when the threads' segments are shorter.
fn depth_of(plan: &plan::ReplayPlan) -> u32 {
    let longest = plan
        .threads
        .iter()
        .flat_map(|t| t.iter().map(|s| s.blocks.len()))
        .max()
        .unwrap_or(1);
    longest.clamp(1, 16) as u32
}

/// The share of accesses that continue their thread's previous one (of the same file), and the
/// most common access size.
fn shape(plan: &plan::ReplayPlan) -> (f64, u64) {
    let (mut n, mut s) = (0u64, 0u64);
    let mut counts: BTreeMap<u64, u64> = BTreeMap::new();
    for thread in &plan.threads {
        // A long run of one file is cut into several segments: it continues across the cut.
        let mut last: Option<(usize, Block)> = None;
        for seg in thread {
            for b in seg.blocks.iter() {
                n += 1;
                s +=
                    last.is_some_and(|(f, l)| f == seg.file && l.offset + l.len == b.offset) as u64;
                *counts.entry(b.len).or_default() += 1;
                last = Some((seg.file, *b));
            }
        }
    }
    let typical = counts
        .iter()
        .max_by_key(|(len, n)| (**n, **len))
        .map_or(0, |(len, _)| *len);
    (if n > 0 { s as f64 / n as f64 } else { 0.0 }, typical)
}

/// Refuses, in one line, a plan that would read past the end of a file as it is now (a trace
/// whose sizes lie passes [`plan::Builder`] and [`check_unchanged`]).
fn within_files(
    plan: &plan::ReplayPlan,
    sources: &[(crate::source::Source, crate::source::Version)],
) -> Result<()> {
    for seg in plan.threads.iter().flatten() {
        let Some((src, _)) = sources.get(seg.file) else {
            continue;
        };
        if let Some(b) = seg
            .blocks
            .iter()
            .find(|b| b.offset.checked_add(b.len).is_none_or(|end| end > src.size))
        {
            return Err(Error::usage(
                "not a trace this iolab can replay",
                format!(
                    "it reads {} bytes at {} of a file of {} bytes",
                    b.len, b.offset, src.size
                ),
            )
            .at(&src.path));
        }
    }
    Ok(())
}

/// The share of the replayed bytes below which a file that changed since the trace is left out
/// (the loader's cache after a package install, a locale file) rather than refused.
const NEGLIGIBLE: f64 = 0.01;

/// Files whose size or modification time differ from the trace's (after the run): one that
/// carries under [`NEGLIGIBLE`] of the replayed bytes is left out and said; a data file that
/// carries more is refused.
fn check_unchanged(files: &[crate::trace::FileInfo], plan: &mut plan::ReplayPlan) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    let bytes = plan.bytes_per_file();
    let total: u64 = bytes.iter().sum::<u64>().max(1);
    let mut minor = std::collections::BTreeSet::new();
    for (i, f) in plan
        .files
        .iter()
        .enumerate()
        .filter(|(_, f)| f.path.exists())
    {
        let Some(info) = files.iter().find(|x| x.last_path() == f.path) else {
            continue;
        };
        let meta =
            std::fs::metadata(&f.path).map_err(|e| Error::io("cannot replay", &f.path, &e))?;
        let mtime = meta.mtime() as i128 * 1_000_000_000 + meta.mtime_nsec() as i128;
        let want_size = info.size_after.unwrap_or(info.size);
        let want_mtime = info.mtime_after_ns.unwrap_or(info.mtime_ns);
        if meta.len() == want_size && mtime == want_mtime {
            continue;
        }
        let share = bytes[i] as f64 / total as f64;
        if share < NEGLIGIBLE {
            minor.insert(i);
            continue;
        }
        return Err(Error::failed(
            "the file changed since the trace",
            format!(
                "size {} (trace: {want_size}), modified {} s later; it carries {:.1}% of the replayed bytes",
                meta.len(),
                mtime.saturating_sub(want_mtime) as f64 / 1e9,
                100.0 * share
            ),
        )
        .at(&f.path)
        .hint("trace the program again"));
    }
    if let Some(&first) = minor.first() {
        let left: u64 = minor.iter().map(|&i| bytes[i]).sum();
        plan.notes.push(format!(
            "{} file(s) changed since the trace, each under {:.0}% of the replayed bytes, are left out ({} in all; the first: {})",
            minor.len(),
            100.0 * NEGLIGIBLE,
            crate::size::format_size(left),
            crate::shown::path(&plan.files[first].path)
        ));
        plan.leave_out(&minor);
        if plan.threads.iter().all(|t| t.is_empty()) {
            return Err(Error::usage(
                "nothing to replay",
                "every file the trace read changed since",
            ));
        }
    }
    Ok(())
}

fn yes() -> bool {
    true
}

fn row(cell: &ReplayCell, runs: &[CellRun<()>], skipped: Option<&Error>, asked: u64) -> ReplayRow {
    let secs: Vec<f64> = runs.iter().map(|r| r.counters.wall.as_secs_f64()).collect();
    let rates: Vec<f64> = secs
        .iter()
        .map(|s| crate::size::mib_per_s(asked, *s))
        .collect();
    ReplayRow {
        method: cell.method.name(),
        cache: cell.cache,
        seconds: summarize(&secs),
        mib_s: summarize(&rates),
        bytes: runs.first().map_or(0, |r| r.moved.bytes),
        ops: runs.first().map_or(0, |r| r.moved.ops),
        cache_verified: runs
            .iter()
            .all(|r| r.cache.as_ref().is_none_or(|c| c.verified)),
        unsupported: skipped.map(|e| e.cause.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(offset: u64, len: u64) -> Block {
        Block { offset, len }
    }

    #[test]
    fn reads_that_follow_merge_up_to_the_limit_and_direct_aligns_out() {
        let reads = [
            b(0, 4096),
            b(4096, 4096),
            b(8192, 100),
            b(20000, 10),
            b(20010, 10),
        ];
        let gaps = [1, 2, 3, 4, 5];
        let (m, g) = merged(&reads, &gaps, 8192);
        assert_eq!(&m[..], &[b(0, 8192), b(8192, 100), b(20000, 20)]);
        // Each merged read waits its reads' gaps.
        assert_eq!(&g[..], &[3, 3, 9]);
        let (m, g) = merged(&reads, &gaps, 1 << 20);
        assert_eq!(&m[..], &[b(0, 8292), b(20000, 20)]);
        assert_eq!(&g[..], &[6, 9]);
        // Aligned out to 4 KiB, ending at the file's end at most.
        assert_eq!(
            &aligned(&[b(5000, 10), b(8192, 100)], 8250)[..],
            &[b(4096, 4096), b(8192, 58)]
        );
    }
}
