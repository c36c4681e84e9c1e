//! `squeeze`: reading a file larger than the memory it may use (the question of Crotty, Leis and
//! Pavlo, CIDR 2022). Each method runs for a while in a child process inside a fresh memory cgroup
//! whose limit is smaller than the file, so the page cache the method fills must be evicted as it
//! goes. The child prints one sample per second (throughput, device bytes, TLB shootdowns,
//! faults, the group's memory and pressure, and the work a CPU-bound companion thread still got
//! done) as JSON lines; the parent makes and removes the groups and chooses each method's steady
//! state from the series: the seconds after the group first filled.
//!
//! Why a child process: memory is charged to the group of the process that faults or reads the
//! page, so the method's process must be inside the group and the measuring parent outside it.

use crate::cache::cgroup::{self, Controller, GroupFiles};
use crate::engine::{self, EngineOptions, Moved, ReadMethod, RunLimits, Work};
use crate::error::{Error, ErrorKind, Result};
use crate::experiments::Observer;
use crate::harness::grouped::{GroupRun, Groups, unsupported_before};
use crate::measure::latency::{Histogram, LatencySummary};
use crate::measure::series;
use crate::measure::stats::{Summary, summarize};
use crate::workload::{Pattern, Workload};
use serde::{Deserialize, Serialize};
use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

crate::named_enum! {
    /// Where each read goes.
    pub enum SqueezePattern {
        /// A seeded permutation of the blocks, a new one each time the file has been gone
        /// through: every read of a lap is a different block.
        Random = "random" | "rand",
        /// Blocks drawn at random with replacement, as mmapbench draws them: with the file N
        /// times the memory, about 1 read in N finds its block still cached.
        Uniform = "uniform",
        /// In file order, from the start again at the end.
        Seq = "seq" | "sequential",
    }
}

/// How each method reads: the same in the run's config and in each child's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SqueezeReads {
    /// Where the reads go.
    pub pattern: SqueezePattern,
    /// Bytes per read.
    pub bs: u64,
    /// Reading threads.
    pub threads: usize,
    /// io_uring requests in flight per thread.
    pub depth: u32,
    /// Seconds per method.
    pub seconds: f64,
    /// Seconds between samples (1 by default; shorter gives a short run enough samples for
    /// an interval at 95%).
    #[serde(default = "one_second")]
    pub tick: f64,
    /// Seed of the random order.
    pub seed: u64,
}

impl Default for SqueezeReads {
    /// Random 4 KiB reads, a thread per CPU, depth 32, 10 s a method, a sample a second.
    fn default() -> SqueezeReads {
        SqueezeReads {
            pattern: SqueezePattern::Random,
            bs: 4096,
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            depth: 32,
            seconds: SqueezeConfig::DEFAULT_SECONDS,
            tick: 1.0,
            seed: 1,
        }
    }
}

/// What to run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SqueezeConfig {
    /// The file (larger than `memory`).
    pub path: PathBuf,
    /// The memory limit of each method's group, in bytes.
    pub memory: u64,
    /// The methods, each in a group of its own, one after the other.
    pub methods: Vec<ReadMethod>,
    /// How each method reads.
    #[serde(flatten)]
    pub reads: SqueezeReads,
    /// Make the groups under this directory (a delegated subtree) instead of the hierarchy's root.
    pub cgroup_parent: Option<PathBuf>,
    /// Runs of each method, interleaved (every method once, then again): a run's seconds share
    /// its state (how its group settled), so a finding takes the runs as the unit.
    #[serde(default = "one_pass")]
    pub passes: usize,
    /// The program that runs a method (iolab itself, `squeeze-worker`); not part of the result.
    #[serde(skip)]
    pub worker: PathBuf,
}

fn one_second() -> f64 {
    1.0
}

fn one_pass() -> usize {
    1
}

impl SqueezeConfig {
    /// Refuses settings that cannot give a result.
    pub fn check(&self) -> Result<()> {
        if self.methods.is_empty() {
            return Err(Error::usage("no methods", "--methods names none"));
        }
        if self.passes == 0 {
            return Err(Error::usage("no runs", "--passes must be at least 1"));
        }
        if self.reads.bs == 0
            || self.reads.threads == 0
            || self.reads.seconds.is_nan()
            || self.reads.seconds <= 0.0
            || self.reads.tick.is_nan()
            || self.reads.tick < 0.05
        {
            return Err(Error::usage(
                "invalid setting",
                "--bs, --threads and --seconds must be positive",
            ));
        }
        if self.memory < SqueezeConfig::MIN_MEMORY {
            return Err(Error::usage(
                "memory limit too small",
                format!(
                    "{} bytes: the reading process needs some memory of its own; use at least 16MiB",
                    self.memory
                ),
            ));
        }
        Ok(())
    }

    /// The methods of the paper's comparison.
    pub const DEFAULT_METHODS: [ReadMethod; 4] = [
        ReadMethod::Mmap,
        ReadMethod::MmapRandom,
        ReadMethod::Pread,
        ReadMethod::UringDirect,
    ];
    /// Seconds per method.
    pub const DEFAULT_SECONDS: f64 = 10.0;
    /// Runs of each method: a verdict over runs needs [`crate::measure::decide::MIN_RUNS`].
    pub const DEFAULT_PASSES: usize = crate::measure::decide::MIN_RUNS;
    /// The smallest limit: the worker process itself needs a few MiB of its own.
    pub const MIN_MEMORY: u64 = 16 << 20;

    /// The defaults for `path` with `memory`, run by `worker`.
    pub fn new(path: PathBuf, memory: u64, worker: PathBuf) -> SqueezeConfig {
        SqueezeConfig {
            path,
            memory,
            methods: Self::DEFAULT_METHODS.to_vec(),
            reads: SqueezeReads::default(),
            cgroup_parent: None,
            passes: Self::DEFAULT_PASSES,
            worker,
        }
    }
}

/// One second (or the last part of one) of one method.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SqueezeTick {
    /// Seconds since the method started, at the end of this interval.
    pub t: f64,
    /// The interval's length in seconds.
    pub secs: f64,
    /// Reads finished (blocks).
    pub ops: u64,
    /// Thousands of reads per second.
    pub kiops: f64,
    /// MiB read per second (reads x block size).
    pub mib_s: f64,
    /// Bytes the file's device read in the interval (/proc/diskstats; the whole device, so
    /// other readers count too).
    pub dev_read_bytes: Option<u64>,
    /// Bytes this method's process caused to be read from storage (/proc/self/io).
    pub own_read_bytes: Option<u64>,
    /// TLB shootdown interrupts, summed over CPUs (/proc/interrupts; machine-wide).
    pub tlb_shootdowns: Option<u64>,
    /// Minor page faults of the method's process.
    pub minor_faults: u64,
    /// Major page faults (the page had to be read from the device).
    pub major_faults: u64,
    /// The group's memory at the end of the interval.
    pub mem_current: Option<u64>,
    /// The most the group ever held, so far.
    pub mem_peak: Option<u64>,
    /// Microseconds some task stalled on memory in the interval (PSI "some"; of the group on
    /// cgroup v2, else of the whole machine: see `pressure_scope`).
    pub pressure_us: Option<u64>,
    /// Units of work the CPU-bound companion thread did (10,000 `exp(log(x))` each, as
    /// mmapbench's companion counts).
    pub cpu_work: u64,
}

/// What the child says: a sample, the end, or why it could not run.
pub type SqueezeMessage = crate::harness::child::Message<SqueezeTick, SqueezeDone>;

/// The child's totals.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SqueezeDone {
    /// Bytes read and reads.
    pub moved: Moved,
    /// Times the order was gone through (or, timed out, started).
    pub laps: u64,
    /// Latency of single reads (a sample of them for short ones).
    pub latency: LatencySummary,
    /// The device `dev_read_bytes` counts, as /proc/diskstats names it.
    pub device: Option<String>,
    /// "group" or "system": whose pressure `pressure_us` is.
    pub pressure_scope: Option<String>,
}

pub use analysis::{AMPLIFIED, FULL_AT, amplification, explain, needed_bytes, steady_state};
pub use worker::{SqueezeWorker, companion_alone, run_worker};

mod analysis;
pub mod findings;
pub mod report;
pub mod suite;
mod worker;

/// The steady part of one method's series.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Steady {
    /// Seconds into the run where it starts.
    pub from_s: f64,
    /// Why there (the group filled at that second, or why not).
    pub why: String,
    /// Whole seconds in it.
    pub seconds: usize,
    /// KIOPS per second.
    pub kiops: Summary,
    /// MiB/s per second.
    pub mib_s: Summary,
    /// Device MiB read per second (median).
    pub dev_mib_s: Option<f64>,
    /// TLB shootdowns per second (median).
    pub tlb_per_s: Option<f64>,
    /// Major faults per second (median).
    pub major_faults_per_s: f64,
    /// Memory pressure: share of each second some task stalled (median, percent).
    pub pressure_pct: Option<f64>,
    /// The companion's work per second over its rate alone (median, percent).
    pub cpu_left_pct: Option<f64>,
}

/// One method's run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MethodSeries {
    /// The method.
    pub method: ReadMethod,
    /// Which run of the method this is (from 0; see [`SqueezeConfig::passes`]).
    #[serde(default)]
    pub pass: usize,
    /// Why it did not run here, when it could not.
    pub unsupported: Option<String>,
    /// The file's resident share before it started (evicted: near 0).
    pub resident_before_pct: f64,
    /// One row per second.
    pub ticks: Vec<SqueezeTick>,
    /// The child's totals.
    pub done: Option<SqueezeDone>,
    /// The group's peak memory, read after the method ended.
    pub peak: Option<u64>,
    /// Bytes the method had to get from the device at least: the distinct blocks it read that
    /// were not resident at the start.
    pub needed_bytes: u64,
    /// Device bytes over the whole run (sum of the ticks).
    pub dev_read_bytes: Option<u64>,
    /// The steady state, when there is one.
    pub steady: Option<Steady>,
}

impl MethodSeries {
    /// The method's name, and which run this is when there are several (`mmap (run 2)`).
    pub fn label(&self, passes: usize) -> String {
        if passes > 1 {
            format!("{} (run {})", self.method.name(), self.pass + 1)
        } else {
            self.method.name().to_string()
        }
    }
}

/// A squeeze run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SqueezeResult {
    /// What was asked.
    pub config: SqueezeConfig,
    /// The file's size.
    pub file_size: u64,
    /// File size over the limit.
    pub oversize: f64,
    /// Where the groups were made.
    pub cgroup: Controller,
    /// The limit as the kernel held it.
    pub limit: u64,
    /// The companion's units per second, alone, before the methods ran.
    pub companion_alone: f64,
    /// One per method, in the order they ran.
    pub methods: Vec<MethodSeries>,
    /// Warnings (a peak over the limit, a device that was not found).
    pub warnings: Vec<String>,
    /// The file's device's readahead (`queue/read_ahead_kb`), in KiB, where sysfs shows it.
    #[serde(default)]
    pub read_ahead_kb: Option<u64>,
    /// What the series say, computed from them (see [`explain`]).
    #[serde(default)]
    pub explanations: Vec<String>,
}

/// Refuses a file the memory limit cannot squeeze: one that fits in it, or one that lives in
/// memory (tmpfs, ramfs), whose pages cannot be evicted.
fn squeezable(cfg: &SqueezeConfig, src: &engine::Source) -> Result<()> {
    if src.size <= cfg.memory {
        return Err(Error::usage(
            "the file fits in the memory limit",
            format!(
                "{} bytes of file, {} bytes of --memory: nothing would be evicted; give a file larger than the limit (8x shows the effect well) or a smaller --memory",
                src.size, cfg.memory
            ),
        )
        .at(&cfg.path));
    }
    const TMPFS_MAGIC: i64 = 0x0102_1994;
    const RAMFS_MAGIC: i64 = 0x8584_58f6;
    if let Ok(m) = crate::sys::fs_magic(&src.file)
        && (m == TMPFS_MAGIC || m == RAMFS_MAGIC)
    {
        return Err(Error::new(
            ErrorKind::Unsuited,
            "the file lives in memory",
            "on tmpfs or ramfs its pages are the file itself: they cannot be evicted, so a memory limit squeezes nothing; put it on a disk file system",
        )
        .at(&cfg.path));
    }
    Ok(())
}

/// Runs every method of `cfg` in a fresh group each. Fails with [`ErrorKind::Unsupported`] and
/// the reason without root (or a delegated parent) or without a memory controller.
pub fn run_squeeze(cfg: &SqueezeConfig, obs: &dyn Observer) -> Result<SqueezeResult> {
    cfg.check()?;
    let src = engine::open_source(&cfg.path)?;
    squeezable(cfg, &src)?;
    let controller = cgroup::controller(cfg.cgroup_parent.as_deref())?;
    obs.progress("squeeze: companion alone", 0, 1);
    let alone = companion_alone(Duration::from_millis(500));
    let mut warnings = Vec::new();
    let blocks = src.size / cfg.reads.bs;
    let read_ahead_kb = src
        .file
        .metadata()
        .ok()
        .and_then(|m| read_ahead_kb(std::os::unix::fs::MetadataExt::dev(&m)));
    let n = cfg.methods.len();
    // Every method once, then again: run j is method j % n in its pass j / n.
    let jobs = n * cfg.passes;
    let method = |j: usize| cfg.methods[j % n];
    let groups = Groups {
        exe: &cfg.worker,
        subcommand: "squeeze-worker",
        controller: &controller,
        memory: cfg.memory,
        cold: vec![&src],
    };
    let done = groups.run(
        jobs,
        obs,
        |j, before: &[Option<GroupRun<SqueezeTick, SqueezeDone>>]| {
            // A method unsupported in the first pass is not tried again.
            let unsupported = unsupported_before(&before[..j.min(n)], |i| method(i) == method(j));
            (j < n || !unsupported)
                .then(|| format!("squeeze {} ({} of {jobs})", method(j).name(), j + 1))
        },
        |j, group| SqueezeWorker {
            path: src.path.clone(),
            method: method(j),
            reads: cfg.reads.clone(),
            group: Some(group.clone()),
        },
        |_, t| (t.t.round() as usize, cfg.reads.seconds.ceil() as usize),
    )?;
    let limit = done.iter().flatten().last().map_or(cfg.memory, |r| r.limit);
    let methods: Vec<MethodSeries> = done
        .into_iter()
        .enumerate()
        .filter_map(|(j, run)| {
            let run = run?;
            let (end, limit) = (run.end, run.limit);
            let mut m = MethodSeries::started(method(j), j / n, run.ticks, run.peak, &run.cache);
            Some(ended(&mut m, end, cfg, blocks, limit, alone, &mut warnings).map(|()| m))
        })
        .collect::<Result<_>>()?;
    let explanations = explain(&methods, cfg.reads.bs, read_ahead_kb);
    Ok(SqueezeResult {
        config: cfg.clone(),
        file_size: src.size,
        oversize: src.size as f64 / limit as f64,
        cgroup: controller,
        limit,
        companion_alone: alone,
        methods,
        warnings,
        explanations,
        read_ahead_kb,
    })
}

impl MethodSeries {
    /// A run of `method` in pass `pass` from its samples, before what it ended with.
    fn started(
        method: ReadMethod,
        pass: usize,
        ticks: Vec<SqueezeTick>,
        peak: Option<u64>,
        cache: &crate::cache::CacheState,
    ) -> MethodSeries {
        MethodSeries {
            method,
            pass,
            unsupported: None,
            resident_before_pct: cache.residency.percent(),
            dev_read_bytes: ticks.iter().map(|t| t.dev_read_bytes).sum::<Option<u64>>(),
            ticks,
            done: None,
            peak,
            needed_bytes: 0,
            steady: None,
        }
    }
}

/// What a method's worker ended with goes into its series: when done, the bytes it needed from
/// the device, its steady state and a warning for a peak over the limit; unsupported, a warning;
/// a failure, the error.
fn ended(
    series: &mut MethodSeries,
    end: SqueezeMessage,
    cfg: &SqueezeConfig,
    blocks: u64,
    limit: u64,
    alone: f64,
    warnings: &mut Vec<String>,
) -> Result<()> {
    let resident = series.resident_before_pct;
    match end {
        SqueezeMessage::Done(d) => {
            series.needed_bytes =
                (needed_bytes(cfg.reads.pattern, d.moved.blocks, blocks, cfg.reads.bs) as f64
                    * (1.0 - resident / 100.0)) as u64;
            if d.device.is_none() {
                warnings.push(format!(
                    "{}: the file's device is not in /proc/diskstats; device bytes are not counted",
                    series.method.name()
                ));
            }
            series.done = Some(d);
            series.steady = steady_state(
                &series.ticks,
                cfg.reads.tick,
                limit,
                series.method.is_direct(),
                alone,
            );
            if let Some(p) = series.peak
                && p as f64 > 1.05 * limit as f64
            {
                warnings.push(format!(
                    "{}: the group's peak {} bytes exceeds its limit {} by more than 5%",
                    series.method.name(),
                    p,
                    limit
                ));
            }
        }
        SqueezeMessage::Failed {
            error,
            unsupported: true,
        } => {
            warnings.push(format!("{}: {error}", series.method.name()));
            series.unsupported = Some(error);
        }
        SqueezeMessage::Failed { error, .. } => {
            return Err(Error::failed("the method failed", error).on(series.method.name()));
        }
        SqueezeMessage::Tick(_) => unreachable!("run_child ends on done or failed"),
    }
    Ok(())
}

/// `queue/read_ahead_kb` of the block device `st_dev` names (for a partition, its disk's).
pub fn read_ahead_kb(dev: u64) -> Option<u64> {
    let (ma, mi) = series::dev_numbers(dev);
    let base = PathBuf::from(format!("/sys/dev/block/{ma}:{mi}"));
    [base.join("queue"), base.join("../queue")]
        .iter()
        .find_map(|q| std::fs::read_to_string(q.join("read_ahead_kb")).ok())
        .and_then(|t| t.trim().parse().ok())
}

#[cfg(test)]
mod tests;
