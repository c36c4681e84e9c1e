//! `pollute`: "if I stream a big file, what happens to my working set?" A hot set (a file read
//! at random, 4 KiB at a time, by a reader that never stops) shares a memory cgroup with a stream
//! through a file several times larger than the group may hold. Each stream method runs in a
//! fresh group in a child process (see [`super::child`]): the hot set is loaded inside it, read
//! alone for a baseline, then read while the stream runs. Per tick the child reports the hot
//! reader's KIOPS and p99, the hot set's residency, the stream's MiB/s, the group's memory,
//! reclaim (/proc/vmstat pgscan/pgsteal, kswapd and direct) and device reads. The same for
//! streams written (`write`, `uncached`, `direct`) into a file that is never kept.
//!
//! A buffered stream's pages are charged to the group and must be reclaimed as it goes; the
//! hot set keeps its place only as far as the LRU tells its pages from the stream's. Uncached
//! I/O (`RWF_DONTCACHE`, Linux 6.14+) drops the stream's pages once read or written back,
//! O_DIRECT never caches them, and `fadvise-dontneed` after each 8 MiB is the portable trick.

pub mod findings;
pub mod report;
mod streams;
pub mod suite;
mod worker;
use streams::{jobs, stream_run};

pub use worker::{Reclaim, parse_vmstat, run_worker};

use crate::cache::cgroup::{self, Controller, GroupFiles};
use crate::engine::ReadMethod;
use crate::engine::write::WriteMethod;
use crate::error::{Error, ErrorKind, Result};
use crate::harness::Observer;
use crate::harness::grouped::{GroupRun, Groups, unsupported_before};
use crate::measure::stats::{Summary, summarize};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

mod effect;
pub use effect::effect;

crate::named_enum! {
    /// How the stream reads its file.
    pub enum StreamMethod {
        /// read(2), buffered: every page goes through the group's page cache.
        Read = "read",
        /// preadv2 with RWF_DONTCACHE: through the cache, each page dropped once read.
        Uncached = "uncached",
        /// O_DIRECT: the cache is never used.
        Direct = "direct",
        /// A mapping read in order, no hint.
        Mmap = "mmap",
        /// A mapping with MADV_SEQUENTIAL (pages behind the reader are reclaimed first).
        MmapSeq = "mmap-seq",
        /// read(2), then POSIX_FADV_DONTNEED on each 8 MiB behind it: the portable trick.
        FadviseDontneed = "fadvise-dontneed" | "fadvise",
    }
}

impl StreamMethod {
    /// The engine that reads the stream; `None` for `fadvise-dontneed`, which has a loop of its own.
    pub fn engine(self) -> Option<ReadMethod> {
        match self {
            StreamMethod::Read => Some(ReadMethod::Read),
            StreamMethod::Uncached => Some(ReadMethod::Uncached),
            StreamMethod::Direct => Some(ReadMethod::Direct),
            StreamMethod::Mmap => Some(ReadMethod::Mmap),
            StreamMethod::MmapSeq => Some(ReadMethod::MmapSeq),
            StreamMethod::FadviseDontneed => None,
        }
    }
}

/// What to run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PolluteConfig {
    /// The file the read streams go through (larger than `memory`; 4x by default in the suite).
    pub stream: PathBuf,
    /// The hot set's file; `None`: a temporary file of `hot_size` is made beside `stream`.
    pub hot: Option<PathBuf>,
    /// Size of the temporary hot file.
    pub hot_size: u64,
    /// The memory limit of each method's group, in bytes.
    pub memory: u64,
    /// Read stream methods, each in a group of its own.
    pub reads: Vec<StreamMethod>,
    /// Write stream methods, each in a group of its own.
    pub writes: Vec<WriteMethod>,
    /// Bytes a written stream writes before it starts over (4x `memory` by default).
    pub write_size: u64,
    /// Bytes per hot read.
    pub hot_bs: u64,
    /// Bytes per stream request.
    pub stream_bs: u64,
    /// Seconds of the hot reader alone before the stream starts.
    pub before: f64,
    /// Seconds of the stream.
    pub seconds: f64,
    /// Seconds between samples.
    pub tick: f64,
    /// Runs of each method, interleaved (every method once, then again): ticks within one run
    /// share its state, so a finding takes the runs as the unit (three at least to decide).
    #[serde(default = "one")]
    pub passes: usize,
    /// Make the groups under this directory (a delegated subtree) instead of the hierarchy's root.
    pub cgroup_parent: Option<PathBuf>,
    /// The program that runs a method (iolab itself, `pollute-worker`); not part of the result.
    #[serde(skip)]
    pub worker: PathBuf,
}

impl PolluteConfig {
    /// The read streams compared by default.
    pub const DEFAULT_READS: [StreamMethod; 6] = [
        StreamMethod::Read,
        StreamMethod::Uncached,
        StreamMethod::Direct,
        StreamMethod::Mmap,
        StreamMethod::MmapSeq,
        StreamMethod::FadviseDontneed,
    ];
    /// The write streams compared by default.
    pub const DEFAULT_WRITES: [WriteMethod; 3] = [
        WriteMethod::Write,
        WriteMethod::Uncached,
        WriteMethod::Direct,
    ];
    /// The hot set's default size.
    pub const DEFAULT_HOT: u64 = 256 << 20;
    /// Room the group needs beyond the hot set (the process itself, the stream's buffers).
    pub const HEADROOM: u64 = 12 << 20;

    /// The defaults for streaming `stream` in groups of `memory`, run by `worker`.
    pub fn new(stream: PathBuf, memory: u64, worker: PathBuf) -> PolluteConfig {
        PolluteConfig {
            stream,
            hot: None,
            hot_size: Self::DEFAULT_HOT.min(memory / 2),
            memory,
            reads: Self::DEFAULT_READS.to_vec(),
            writes: Self::DEFAULT_WRITES.to_vec(),
            write_size: memory.saturating_mul(4),
            hot_bs: 4096,
            stream_bs: 1 << 20,
            before: 2.0,
            seconds: 8.0,
            tick: 0.5,
            passes: crate::measure::decide::MIN_RUNS,
            cgroup_parent: None,
            worker,
        }
    }
}

fn one() -> usize {
    1
}

/// What the stream does, as the child is told.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum StreamJob {
    /// Read `path` in order with an engine, from the start again at the end.
    Read {
        /// The file.
        path: PathBuf,
        /// The engine.
        method: ReadMethod,
        /// Bytes per request.
        bs: u64,
    },
    /// Read `path` with read(2), dropping each 8 MiB behind with POSIX_FADV_DONTNEED.
    Dontneed {
        /// The file.
        path: PathBuf,
        /// Bytes per request.
        bs: u64,
    },
    /// Write `size` bytes to a file in `dir` that is never kept, over and over.
    Write {
        /// Where the file is made.
        dir: PathBuf,
        /// The write method.
        method: WriteMethod,
        /// Bytes per request.
        bs: u64,
        /// Bytes per pass.
        size: u64,
    },
}

impl StreamJob {
    /// Bytes per request.
    pub fn bs(&self) -> u64 {
        match self {
            StreamJob::Read { bs, .. } | StreamJob::Dontneed { bs, .. } => *bs,
            StreamJob::Write { bs, .. } => *bs,
        }
    }
}

/// What the child is asked to run (one JSON argument).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PolluteWorker {
    /// The hot set's file.
    pub hot: PathBuf,
    /// Bytes per hot read.
    pub hot_bs: u64,
    /// The stream.
    pub stream: StreamJob,
    /// Seconds before the stream starts.
    pub before: f64,
    /// Seconds of the stream.
    pub seconds: f64,
    /// Seconds between samples.
    pub tick: f64,
    /// The group it runs in.
    pub group: Option<GroupFiles>,
}

/// One tick of one method.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PolluteTick {
    /// Seconds since the hot reader started, at the end of the tick.
    pub t: f64,
    /// The tick's length in seconds.
    pub secs: f64,
    /// The stream was running during the tick.
    pub streaming: bool,
    /// Hot reads finished.
    pub hot_ops: u64,
    /// Thousands of hot reads per second.
    pub hot_kiops: f64,
    /// The 99th percentile of the tick's hot read latencies, in microseconds.
    pub hot_p99_us: Option<f64>,
    /// Share of the hot set in the page cache at the end of the tick, in percent.
    pub hot_resident_pct: Option<f64>,
    /// Bytes the stream moved.
    pub stream_bytes: u64,
    /// The stream's MiB/s.
    pub stream_mib_s: f64,
    /// The group's memory at the end of the tick (page cache included).
    pub mem_current: Option<u64>,
    /// Bytes read from the hot file's device (everyone's).
    pub dev_read_bytes: Option<u64>,
    /// Pages scanned by kswapd (machine-wide, /proc/vmstat: the machine's own pressure).
    pub scan_kswapd: Option<u64>,
    /// Pages scanned by direct reclaim outside any group's limit (machine-wide).
    pub scan_direct: Option<u64>,
    /// Pages the group evicted to stay under its limit (its memory.stat: v2 `pgsteal`, v1
    /// `pgpgout`, pages uncharged).
    pub group_evicted: Option<u64>,
    /// The group's file pages read again after their eviction (`workingset_refault_file`).
    pub group_refaults: Option<u64>,
}

/// The child's totals.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PolluteDone {
    /// Hot reads in all.
    pub hot_ops: u64,
    /// The hot set's size.
    pub hot_bytes: u64,
    /// Bytes the stream moved.
    pub stream_bytes: u64,
    /// Times it went through its file (or started to).
    pub laps: u64,
    /// The device `dev_read_bytes` counts.
    pub device: Option<String>,
}

/// What the child says: a tick, the end, or why it could not run.
pub type PolluteMessage = crate::harness::child::Message<PolluteTick, PolluteDone>;

/// One stream method's run, and what its ticks say.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StreamRun {
    /// The method's name (a read stream's [`StreamMethod`] or a write stream's [`WriteMethod`]).
    pub method: String,
    /// A written stream.
    pub writes: bool,
    /// Which run of the method this is (from 0; see [`PolluteConfig::passes`]).
    #[serde(default)]
    pub pass: usize,
    /// Why it could not run here.
    pub unsupported: Option<String>,
    /// Every tick.
    pub ticks: Vec<PolluteTick>,
    /// The child's totals.
    pub done: Option<PolluteDone>,
    /// What the ticks say.
    pub effect: Option<Effect>,
}

/// The hot set before and under the stream, and the stream itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Effect {
    /// Hot KIOPS per tick alone (the baseline ticks after the first).
    pub hot_alone: Summary,
    /// Hot KIOPS per tick under the stream (the second half of the stream's ticks).
    pub hot_kiops: Summary,
    /// Median p99 of the hot reads under the stream, microseconds.
    pub hot_p99_us: Option<f64>,
    /// Median p99 alone, microseconds.
    pub hot_p99_alone_us: Option<f64>,
    /// Median share of the hot set resident under the stream, percent.
    pub hot_resident_pct: Option<f64>,
    /// The least share resident at any tick under the stream, percent.
    pub hot_resident_min_pct: Option<f64>,
    /// The stream's MiB/s per tick (the same ticks).
    pub stream_mib_s: Summary,
    /// Median memory of the group under the stream.
    pub mem_bytes: Option<u64>,
    /// Pages scanned per second under the stream by kswapd, machine-wide.
    pub scan_kswapd_per_s: Option<f64>,
    /// Pages the group evicted per second under the stream.
    pub evicted_per_s: Option<f64>,
    /// The group's refaults per second under the stream: evicted file pages read again.
    pub refaults_per_s: Option<f64>,
    /// Device MiB/s under the stream (median).
    pub dev_mib_s: Option<f64>,
    /// Ticks behind `hot_kiops`.
    pub ticks: usize,
}

/// What `pollute` found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PolluteResult {
    /// What was asked.
    pub config: PolluteConfig,
    /// The stream file's size.
    pub stream_size: u64,
    /// The hot set's size.
    pub hot_size: u64,
    /// The cgroup hierarchy used.
    pub cgroup: Controller,
    /// The limit the kernel held.
    pub limit: u64,
    /// Read streams, in the order run.
    pub reads: Vec<StreamRun>,
    /// Write streams, in the order run.
    pub writes: Vec<StreamRun>,
    /// What the user should know.
    pub warnings: Vec<String>,
}

fn check(cfg: &PolluteConfig) -> Result<()> {
    let bad = |why: &str| Err(Error::usage("invalid setting", why.to_string()));
    if cfg.reads.is_empty() && cfg.writes.is_empty() {
        return bad("no stream methods: give --reads or --writes");
    }
    if cfg.hot_bs == 0 || cfg.stream_bs == 0 {
        return bad("block sizes must be at least 1 byte");
    }
    if cfg.passes == 0 {
        return bad("--passes must be at least 1");
    }
    if !(cfg.seconds > 0.0 && cfg.before > 0.0 && cfg.tick >= 0.05) {
        return bad("--seconds and --before must be positive, --tick at least 0.05 s");
    }
    if cfg.before < 2.0 * cfg.tick || cfg.seconds < 3.0 * cfg.tick {
        return bad(
            "--before must hold two ticks and --seconds three (the first of each is left out)",
        );
    }
    if cfg.writes.contains(&WriteMethod::Direct) && !cfg.stream_bs.is_multiple_of(4096) {
        return bad("a direct write stream needs a block size that is a multiple of 4096");
    }
    Ok(())
}

/// A hot file made for the run, removed when dropped.
struct TempHot {
    path: PathBuf,
    _partial: crate::output::Partial,
}

impl Drop for TempHot {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// The hot set's size, once the stream file and the sizes suit the experiment: the file is on a
/// disk, the hot set and the process fit the limit, and a read stream is larger than it.
fn hot_size(cfg: &PolluteConfig, stream: &crate::engine::Source) -> Result<u64> {
    if crate::sys::fs_magic(&stream.file).is_ok_and(|m| m == 0x0102_1994 || m == 0x8584_58f6) {
        return Err(Error::new(
            ErrorKind::Unsuited,
            "the file lives in memory",
            "on tmpfs or ramfs its pages are the file itself and cannot be evicted; put it on a disk file system",
        )
        .at(&cfg.stream));
    }
    let hot_size = match &cfg.hot {
        Some(p) => crate::source::open_source(p)?.size,
        None => cfg.hot_size,
    };
    if hot_size.saturating_add(PolluteConfig::HEADROOM) > cfg.memory {
        return Err(Error::usage(
            "the hot set does not fit the memory limit",
            format!(
                "{} of hot set and {} of room for the process need more than the {} of --memory",
                crate::size::format_size(hot_size),
                crate::size::format_size(PolluteConfig::HEADROOM),
                crate::size::format_size(cfg.memory)
            ),
        )
        .hint("a larger --memory or a smaller --hot-size"));
    }
    if !cfg.reads.is_empty() && stream.size <= cfg.memory {
        return Err(Error::usage(
            "the stream fits in the memory limit",
            format!(
                "{} of stream file, {} of --memory: nothing would be pushed out; give a file 4x the limit or a smaller --memory",
                crate::size::format_size(stream.size),
                crate::size::format_size(cfg.memory)
            ),
        )
        .at(&cfg.stream));
    }
    Ok(hot_size)
}

/// The hot set's file: `--hot`, or one of `hot_size` random bytes made in `dir` (removed when
/// the second value is dropped).
fn hot_set(
    cfg: &PolluteConfig,
    dir: &Path,
    hot_size: u64,
    obs: &dyn Observer,
) -> Result<(std::path::PathBuf, Option<TempHot>)> {
    if let Some(p) = &cfg.hot {
        return Ok((p.clone(), None));
    }
    let path = crate::output::temp_path(&dir.join("iolab-pollute-hot"), "")?;
    let partial = crate::output::track(&path);
    let temp = TempHot {
        path: path.clone(),
        _partial: partial,
    };
    obs.progress("pollute: making the hot set", 0, 1);
    crate::workload::write_random(&path, hot_size, 7)?;
    Ok((path, Some(temp)))
}

/// Runs every stream method of `cfg` against the hot set, each in a fresh group. Fails with
/// [`ErrorKind::Unsupported`] and the reason without root (or a delegated parent) or without a
/// memory controller.
pub fn run_pollute(cfg: &PolluteConfig, obs: &dyn Observer) -> Result<PolluteResult> {
    check(cfg)?;
    let stream = crate::engine::open_source(&cfg.stream)?;
    let dir = cfg
        .stream
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .to_path_buf();
    let hot_size = hot_size(cfg, &stream)?;
    let controller = cgroup::controller(cfg.cgroup_parent.as_deref())?;
    let mut warnings = Vec::new();
    let (hot_path, _temp) = hot_set(cfg, &dir, hot_size, obs)?;
    let hot = crate::engine::open_source(&hot_path)?;
    let jobs = jobs(cfg, &dir);
    let total_ticks = ((cfg.before + cfg.seconds) / cfg.tick).round() as usize;
    let runs: Vec<(usize, &(String, bool, StreamJob))> = (0..cfg.passes)
        .flat_map(|p| jobs.iter().map(move |j| (p, j)))
        .collect();
    let n_runs = runs.len();
    // Both files start out of the cache: the hot set is loaded inside the group (so it is
    // charged there), the stream comes from the device.
    let groups = Groups {
        exe: &cfg.worker,
        subcommand: "pollute-worker",
        controller: &controller,
        memory: cfg.memory,
        cold: vec![&hot, &stream],
    };
    let done = groups.run(
        n_runs,
        obs,
        |i, before: &[Option<GroupRun<PolluteTick, PolluteDone>>]| {
            let (pass, (name, writing, _)) = runs[i];
            // A method unsupported in the first pass is not tried again.
            let unsupported = unsupported_before(&before[..i], |j| runs[j].1.0 == *name);
            (pass == 0 || !unsupported).then(|| {
                format!(
                    "pollute: {} stream {name} ({} of {n_runs})",
                    if *writing { "written" } else { "read" },
                    i + 1
                )
            })
        },
        |i, group| PolluteWorker {
            hot: hot_path.clone(),
            hot_bs: cfg.hot_bs,
            stream: runs[i].1.2.clone(),
            before: cfg.before,
            seconds: cfg.seconds,
            tick: cfg.tick,
            group: Some(group.clone()),
        },
        |k, _| (k, total_ticks),
    )?;
    let limit = done.iter().flatten().last().map_or(cfg.memory, |r| r.limit);
    let streams: Vec<StreamRun> = runs
        .into_iter()
        .zip(done)
        .filter_map(|((pass, (name, writing, _)), run)| {
            let run = run?;
            Some(stream_run(
                name,
                *writing,
                pass,
                run.ticks,
                run.end,
                &mut warnings,
            ))
        })
        .collect::<Result<_>>()?;
    let (writes, reads): (Vec<StreamRun>, Vec<StreamRun>) =
        streams.into_iter().partition(|r| r.writes);
    Ok(PolluteResult {
        config: cfg.clone(),
        stream_size: stream.size,
        hot_size,
        cgroup: controller,
        limit,
        reads,
        writes,
        warnings,
    })
}

#[cfg(test)]
mod tests;
