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

use crate::cache::cgroup::{self, Controller, GroupFiles, MemoryGroup};
use crate::engine::{self, EngineOptions, Moved, ReadMethod, RunLimits, Work};
use crate::error::{Error, ErrorKind, Result};
use crate::experiments::Observer;
use crate::measure::latency::{Histogram, LatencySummary};
use crate::measure::series;
use crate::measure::stats::{Summary, summarize};
use crate::workload::{Pattern, Workload};
use serde::{Deserialize, Serialize};
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
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

/// What to run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SqueezeConfig {
    /// The file (larger than `memory`).
    pub path: PathBuf,
    /// The memory limit of each method's group, in bytes.
    pub memory: u64,
    /// The methods, each in a group of its own, one after the other.
    pub methods: Vec<ReadMethod>,
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
    /// Make the groups under this directory (a delegated subtree) instead of the hierarchy's root.
    pub cgroup_parent: Option<PathBuf>,
    /// The program that runs a method (iolab itself, `squeeze-worker`); not part of the result.
    #[serde(skip)]
    pub worker: PathBuf,
}

fn one_second() -> f64 {
    1.0
}

impl SqueezeConfig {
    /// The methods of the paper's comparison.
    pub const DEFAULT_METHODS: [ReadMethod; 4] = [
        ReadMethod::Mmap,
        ReadMethod::MmapRandom,
        ReadMethod::Pread,
        ReadMethod::UringDirect,
    ];
    /// Seconds per method.
    pub const DEFAULT_SECONDS: f64 = 20.0;
    /// The smallest limit: the worker process itself needs a few MiB of its own.
    pub const MIN_MEMORY: u64 = 16 << 20;

    /// The defaults for `path` with `memory`, run by `worker`.
    pub fn new(path: PathBuf, memory: u64, worker: PathBuf) -> SqueezeConfig {
        SqueezeConfig {
            path,
            memory,
            methods: Self::DEFAULT_METHODS.to_vec(),
            pattern: SqueezePattern::Random,
            bs: 4096,
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            depth: 32,
            seconds: Self::DEFAULT_SECONDS,
            tick: 1.0,
            seed: 1,
            cgroup_parent: None,
            worker,
        }
    }
}

/// One second (or the last part of one) of one method.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Tick {
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
pub type Message = super::child::Message<Tick, WorkerDone>;

/// The child's totals.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkerDone {
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

/// What the child is asked to run (passed as one JSON argument).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkerConfig {
    /// The file.
    pub path: PathBuf,
    /// The method.
    pub method: ReadMethod,
    /// The order.
    pub pattern: SqueezePattern,
    /// Bytes per read.
    pub bs: u64,
    /// Threads.
    pub threads: usize,
    /// io_uring depth.
    pub depth: u32,
    /// How long.
    pub seconds: f64,
    /// Seconds between samples.
    #[serde(default = "one_second")]
    pub tick: f64,
    /// Seed.
    pub seed: u64,
    /// The group it runs in (for its memory figures), if any.
    pub group: Option<GroupFiles>,
}

/// The companion's unit of work: 10,000 rounds of `x = exp(ln(x))`, as in mmapbench.
fn companion_unit(x: f64) -> f64 {
    let mut x = std::hint::black_box(x.max(1.0));
    for _ in 0..10_000 {
        x = x.ln().exp();
    }
    x
}

/// Runs the companion until `stop`, counting units into `work`.
fn companion(stop: &AtomicBool, work: &AtomicU64) {
    let mut x = 1.5;
    while !stop.load(Ordering::Relaxed) {
        x = companion_unit(x);
        work.fetch_add(1, Ordering::Relaxed);
    }
    std::hint::black_box(x);
}

/// Units per second of the companion alone on an otherwise idle process, over `d`.
pub fn companion_alone(d: Duration) -> f64 {
    let start = Instant::now();
    let mut x = 1.5;
    let mut n = 0u64;
    while start.elapsed() < d {
        x = companion_unit(x);
        n += 1;
    }
    std::hint::black_box(x);
    n as f64 / start.elapsed().as_secs_f64()
}

/// Counters at one moment, in the child.
#[derive(Debug, Clone, Copy)]
struct Snap {
    at: Instant,
    ops: u64,
    dev: Option<u64>,
    own: Option<u64>,
    tlb: Option<u64>,
    minflt: u64,
    majflt: u64,
    mem: Option<u64>,
    peak: Option<u64>,
    psi: Option<u64>,
    work: u64,
}

struct Sampler {
    ops: Arc<AtomicU64>,
    work: Arc<AtomicU64>,
    device: Option<(u32, u32)>,
    group: Option<GroupFiles>,
    bs: u64,
    start: Instant,
}

impl Sampler {
    fn psi(&self) -> Option<u64> {
        self.group
            .as_ref()
            .and_then(|g| g.pressure_us())
            .or_else(|| {
                std::fs::read_to_string("/proc/pressure/memory")
                    .ok()
                    .and_then(|t| crate::measure::interference::parse_psi_total(&t))
            })
    }

    fn snap(&self) -> Snap {
        let u = crate::sys::rusage_self();
        Snap {
            at: Instant::now(),
            ops: self.ops.load(Ordering::Relaxed),
            dev: self
                .device
                .and_then(|(ma, mi)| series::device_read_bytes(ma, mi)),
            own: crate::measure::proc_self_read_bytes(),
            tlb: series::tlb_shootdowns_now(),
            minflt: u.minflt,
            majflt: u.majflt,
            mem: self.group.as_ref().and_then(|g| g.usage()),
            peak: self.group.as_ref().and_then(|g| g.peak()),
            psi: self.psi(),
            work: self.work.load(Ordering::Relaxed),
        }
    }

    fn tick(&self, a: &Snap, b: &Snap) -> Tick {
        let secs = b.at.duration_since(a.at).as_secs_f64().max(1e-9);
        let ops = b.ops.saturating_sub(a.ops);
        let d = |x: Option<u64>, y: Option<u64>| Some(y?.saturating_sub(x?));
        Tick {
            t: b.at.duration_since(self.start).as_secs_f64(),
            secs,
            ops,
            kiops: ops as f64 / secs / 1e3,
            mib_s: (ops * self.bs) as f64 / secs / (1u64 << 20) as f64,
            dev_read_bytes: d(a.dev, b.dev),
            own_read_bytes: d(a.own, b.own),
            tlb_shootdowns: d(a.tlb, b.tlb),
            minor_faults: b.minflt.saturating_sub(a.minflt),
            major_faults: b.majflt.saturating_sub(a.majflt),
            mem_current: b.mem,
            mem_peak: b.peak,
            pressure_us: d(a.psi, b.psi),
            cpu_work: b.work.saturating_sub(a.work),
        }
    }
}

fn send(out: &mut dyn Write, m: &Message) -> Result<()> {
    super::child::send(out, m)
}

/// The child: waits for one line on `go` (the parent has moved it into the group by then), runs
/// the method for `cfg.seconds`, and writes a [`Message`] per line to `out`: a tick per second,
/// then `done` (or `failed`).
pub fn run_worker(cfg: &WorkerConfig, go: &mut dyn BufRead, out: &mut dyn Write) -> Result<()> {
    super::child::serve::<Tick, WorkerDone>(go, out, |out| work(cfg, out))
}

fn work(cfg: &WorkerConfig, out: &mut dyn Write) -> Result<()> {
    let src = engine::open_source(&cfg.path)?;
    let len = src.size - src.size % cfg.bs.max(1);
    if len == 0 {
        return Err(Error::usage(
            "file too small",
            format!("smaller than one block of {} bytes", cfg.bs),
        )
        .at(&cfg.path));
    }
    let meta = src
        .file
        .metadata()
        .map_err(|e| Error::io("cannot stat", &cfg.path, &e))?;
    let (ma, mi) = series::dev_numbers(std::os::unix::fs::MetadataExt::dev(&meta));
    let diskstats = std::fs::read_to_string("/proc/diskstats").unwrap_or_default();
    let device = series::diskstats_name(&diskstats, ma, mi);
    let w = Workload {
        bs: cfg.bs,
        len,
        pattern: match cfg.pattern {
            SqueezePattern::Seq => Pattern::Seq,
            _ => Pattern::Random,
        },
        seed: cfg.seed,
        threads: cfg.threads.max(1),
    };
    // One byte per block, no prefetch hint: what mmapbench's loop does (`sum += p[rnd(gen)]`);
    // a read copies the block into its buffer, as any read must.
    let opts = EngineOptions {
        depth: cfg.depth,
        work: Work::Touch,
        file_hint: true,
        prefetch: false,
        map_each_run: false,
        sqpoll: false,
    };
    let mut prepared = engine::prepare(cfg.method, &src, &w, &opts)?;
    let ops = Arc::new(AtomicU64::new(0));
    let work = Arc::new(AtomicU64::new(0));
    let stop = AtomicBool::new(false);
    let start = Instant::now();
    let deadline = start + Duration::from_secs_f64(cfg.seconds.max(0.0));
    let sampler = Sampler {
        ops: ops.clone(),
        work: work.clone(),
        device: device.as_ref().map(|_| (ma, mi)),
        group: cfg.group.clone(),
        bs: cfg.bs,
        start,
    };
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    // The first sample before any reading thread starts, so every read falls after it.
    let mut last = sampler.snap();
    let result = std::thread::scope(|s| {
        s.spawn(|| companion(&stop, &work));
        let io = s.spawn(|| {
            let mut total = Moved::default();
            let mut hist = Histogram::default();
            let mut laps = 0u64;
            let r = (|| -> Result<()> {
                while Instant::now() < deadline {
                    let lap_seed = cfg.seed.wrapping_add(laps);
                    let parts = match cfg.pattern {
                        SqueezePattern::Random => Workload {
                            seed: lap_seed,
                            ..w
                        }
                        .parts(),
                        SqueezePattern::Uniform => w.uniform_parts(lap_seed),
                        SqueezePattern::Seq => w.parts(),
                    };
                    let limits = RunLimits {
                        max_ops: None,
                        deadline: Some(deadline),
                        latencies: true,
                        progress: Some(ops.clone()),
                        progress_each: false,
                    };
                    let (m, h) = prepared.run_over_limited(&parts, limits)?;
                    total.add(m);
                    if let Some(h) = h {
                        hist.merge(&h);
                    }
                    laps += 1;
                }
                Ok(())
            })();
            let _ = done_tx.send(());
            r.map(|()| (total, hist, laps))
        });
        let mut k = 1u32;
        let mut sent: Result<()> = Ok(());
        loop {
            // A sample every second; the last one when the reads have stopped (at the deadline,
            // after the requests still in flight), so every read is in some sample.
            let next =
                (start + Duration::from_secs_f64(k as f64 * cfg.tick.max(0.05))).min(deadline);
            let finished = if next >= deadline {
                let _ = done_rx.recv();
                true
            } else {
                let wait = next.saturating_duration_since(Instant::now());
                match done_rx.recv_timeout(wait) {
                    Ok(()) | Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => true,
                    Err(std::sync::mpsc::RecvTimeoutError::Timeout) => false,
                }
            };
            let now = sampler.snap();
            let t = sampler.tick(&last, &now);
            if sent.is_ok() {
                sent = send(out, &Message::Tick(t));
            }
            last = now;
            k += 1;
            if finished {
                break;
            }
        }
        stop.store(true, Ordering::Relaxed);
        let io = io
            .join()
            .unwrap_or_else(|_| Err(Error::failed("read failed", "a reading thread panicked")));
        sent.and(io)
    });
    let (moved, hist, laps) = result?;
    send(
        out,
        &Message::Done(WorkerDone {
            moved,
            laps,
            latency: hist.summary(),
            device,
            pressure_scope: match (&cfg.group, sampler.psi()) {
                (_, None) => None,
                (Some(g), Some(_)) if g.pressure_us().is_some() => Some("group".into()),
                _ => Some("system".into()),
            },
        }),
    )
}

/// The steady part of one method's series.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MethodSeries {
    /// The method.
    pub method: ReadMethod,
    /// Why it did not run here, when it could not.
    pub unsupported: Option<String>,
    /// The file's resident share before it started (evicted: near 0).
    pub resident_before_pct: f64,
    /// One row per second.
    pub ticks: Vec<Tick>,
    /// The child's totals.
    pub done: Option<WorkerDone>,
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

/// A squeeze run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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

/// The group counts as full from the first second its memory reached this share of the limit.
pub const FULL_AT: f64 = 0.9;

/// Chooses the steady window of a series: the whole seconds after the group first held
/// [`FULL_AT`] of `limit` (its page cache is full: from there on every new page evicts one). A
/// method that bypasses the cache never fills it: its window starts after its first second.
/// `None` with fewer than 3 whole seconds to summarise.
pub fn steady_state(
    ticks: &[Tick],
    tick: f64,
    limit: u64,
    direct: bool,
    companion_alone: f64,
) -> Option<Steady> {
    let whole = |t: &Tick| t.secs >= 0.9 * tick;
    let full = ticks.iter().position(|t| {
        t.mem_current
            .is_some_and(|m| m as f64 >= FULL_AT * limit as f64)
    });
    let (start, why) = match full {
        Some(i) => (
            i + 1,
            format!(
                "after the group first held {:.0}% of its limit (second {})",
                100.0 * FULL_AT,
                i + 1
            ),
        ),
        None if direct => (
            1,
            "O_DIRECT bypasses the page cache, so the group never fills: from the second second"
                .to_string(),
        ),
        None => (
            ticks.len() / 2,
            "the group never filled during the run: the second half, not a steady state under pressure".to_string(),
        ),
    };
    let rows: Vec<&Tick> = ticks.iter().skip(start).filter(|t| whole(t)).collect();
    if rows.len() < 3 {
        return None;
    }
    let med = |v: Vec<f64>| summarize(&v).median;
    let opt_med = |v: Vec<Option<f64>>| -> Option<f64> {
        let v: Option<Vec<f64>> = v.into_iter().collect();
        v.map(med)
    };
    Some(Steady {
        from_s: rows[0].t - rows[0].secs,
        why,
        seconds: rows.len(),
        kiops: summarize(&rows.iter().map(|t| t.kiops).collect::<Vec<_>>()),
        mib_s: summarize(&rows.iter().map(|t| t.mib_s).collect::<Vec<_>>()),
        dev_mib_s: opt_med(
            rows.iter()
                .map(|t| {
                    t.dev_read_bytes
                        .map(|b| b as f64 / t.secs / (1u64 << 20) as f64)
                })
                .collect(),
        ),
        tlb_per_s: opt_med(
            rows.iter()
                .map(|t| t.tlb_shootdowns.map(|n| n as f64 / t.secs))
                .collect(),
        ),
        major_faults_per_s: med(rows
            .iter()
            .map(|t| t.major_faults as f64 / t.secs)
            .collect()),
        pressure_pct: opt_med(
            rows.iter()
                .map(|t| t.pressure_us.map(|us| us as f64 / 1e4 / t.secs))
                .collect(),
        ),
        cpu_left_pct: (companion_alone > 0.0).then(|| {
            med(rows
                .iter()
                .map(|t| 100.0 * t.cpu_work as f64 / t.secs / companion_alone)
                .collect())
        }),
    })
}

/// Bytes of `reads` reads of `bs` bytes that must come from the device when none of the file's
/// `blocks` blocks is cached at the start: every distinct block once. A permutation or a scan
/// reads `min(reads, blocks)` distinct blocks; uniform draws about `blocks (1 - e^(-reads/blocks))`
/// (taken 2% low for the chance in it).
pub fn needed_bytes(pattern: SqueezePattern, reads: u64, blocks: u64, bs: u64) -> u64 {
    let distinct = match pattern {
        SqueezePattern::Random | SqueezePattern::Seq => reads.min(blocks),
        SqueezePattern::Uniform if blocks == 0 => 0,
        SqueezePattern::Uniform => {
            let n = blocks as f64;
            (0.98 * n * (1.0 - (-(reads as f64) / n).exp())) as u64
        }
    };
    distinct * bs
}

/// Runs every method of `cfg` in a fresh group each. Fails with [`ErrorKind::Unsupported`] and
/// the reason without root (or a delegated parent) or without a memory controller.
pub fn run_squeeze(cfg: &SqueezeConfig, obs: &dyn Observer) -> Result<SqueezeResult> {
    if cfg.methods.is_empty() {
        return Err(Error::usage("no methods", "--methods names none"));
    }
    if cfg.bs == 0
        || cfg.threads == 0
        || cfg.seconds.is_nan()
        || cfg.seconds <= 0.0
        || cfg.tick.is_nan()
        || cfg.tick < 0.05
    {
        return Err(Error::usage(
            "invalid setting",
            "--bs, --threads and --seconds must be positive",
        ));
    }
    if cfg.memory < SqueezeConfig::MIN_MEMORY {
        return Err(Error::usage(
            "memory limit too small",
            format!(
                "{} bytes: the reading process needs some memory of its own; use at least 16MiB",
                cfg.memory
            ),
        ));
    }
    let src = engine::open_source(&cfg.path)?;
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
    let controller = cgroup::controller(cfg.cgroup_parent.as_deref())?;
    obs.progress("squeeze: companion alone", 0, 1);
    let alone = companion_alone(Duration::from_millis(500));
    let mut methods = Vec::new();
    let mut warnings = Vec::new();
    let mut limit = cfg.memory;
    let blocks = src.size / cfg.bs;
    let read_ahead_kb = src
        .file
        .metadata()
        .ok()
        .and_then(|m| read_ahead_kb(std::os::unix::fs::MetadataExt::dev(&m)));
    for (i, &method) in cfg.methods.iter().enumerate() {
        if crate::sys::interrupted() {
            return Err(Error::failed("interrupted", "stopped by a signal"));
        }
        crate::cache::evict(&src.file, &src.path, false)?;
        let resident = crate::cache::residency_of(&src.file, src.size, &src.path)?.percent();
        let group = MemoryGroup::create(&controller, cfg.memory)?;
        limit = group.files().limit().unwrap_or(cfg.memory);
        let wc = WorkerConfig {
            path: src.path.clone(),
            method,
            pattern: cfg.pattern,
            bs: cfg.bs,
            threads: cfg.threads,
            depth: cfg.depth,
            seconds: cfg.seconds,
            tick: cfg.tick,
            seed: cfg.seed,
            group: Some(group.files().clone()),
        };
        let what = format!(
            "squeeze {} ({} of {})",
            method.name(),
            i + 1,
            cfg.methods.len()
        );
        let (ticks, end) = run_child(&cfg.worker, &wc, &group, |t| {
            obs.progress(&what, t.t.round() as usize, cfg.seconds.ceil() as usize);
        })?;
        let peak = group.files().peak();
        group.remove()?;
        let mut m = MethodSeries {
            method,
            unsupported: None,
            resident_before_pct: resident,
            dev_read_bytes: ticks.iter().map(|t| t.dev_read_bytes).sum::<Option<u64>>(),
            ticks,
            done: None,
            peak,
            needed_bytes: 0,
            steady: None,
        };
        match end {
            Message::Done(d) => {
                m.needed_bytes = (needed_bytes(cfg.pattern, d.moved.blocks, blocks, cfg.bs) as f64
                    * (1.0 - resident / 100.0)) as u64;
                if d.device.is_none() {
                    warnings.push(format!(
                        "{}: the file's device is not in /proc/diskstats; device bytes are not counted",
                        method.name()
                    ));
                }
                m.done = Some(d);
                m.steady = steady_state(&m.ticks, cfg.tick, limit, method.is_direct(), alone);
                if let Some(p) = m.peak
                    && p as f64 > 1.05 * limit as f64
                {
                    warnings.push(format!(
                        "{}: the group's peak {} bytes exceeds its limit {} by more than 5%",
                        method.name(),
                        p,
                        limit
                    ));
                }
            }
            Message::Failed {
                error,
                unsupported: true,
            } => {
                warnings.push(format!("{}: {error}", method.name()));
                m.unsupported = Some(error);
            }
            Message::Failed { error, .. } => {
                return Err(Error::failed("the method failed", error).on(method.name()));
            }
            Message::Tick(_) => unreachable!("run_child ends on done or failed"),
        }
        methods.push(m);
    }
    let explanations = explain(&methods, cfg.bs, read_ahead_kb);
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

/// `queue/read_ahead_kb` of the block device `st_dev` names (for a partition, its disk's).
pub fn read_ahead_kb(dev: u64) -> Option<u64> {
    let (ma, mi) = series::dev_numbers(dev);
    let base = PathBuf::from(format!("/sys/dev/block/{ma}:{mi}"));
    [base.join("queue"), base.join("../queue")]
        .iter()
        .find_map(|q| std::fs::read_to_string(q.join("read_ahead_kb")).ok())
        .and_then(|t| t.trim().parse().ok())
}

/// Device bytes read per byte used above which readahead is named as the cause.
pub const AMPLIFIED: f64 = 4.0;

/// Bytes the method's own process read from storage per byte it used (reads x block size),
/// from the steady seconds when there are any, else the whole run.
pub fn amplification(m: &MethodSeries, bs: u64) -> Option<f64> {
    let from = m.steady.as_ref().map_or(0.0, |s| s.from_s);
    let rows: Vec<&Tick> = m
        .ticks
        .iter()
        .filter(|t| t.t - t.secs >= from - 1e-9)
        .collect();
    let used: u64 = rows.iter().map(|t| t.ops * bs).sum();
    let read: u64 = rows
        .iter()
        .map(|t| t.own_read_bytes.or(t.dev_read_bytes))
        .sum::<Option<u64>>()?;
    (used > 0).then(|| read as f64 / used as f64)
}

/// What the series say, from the figures that produced them: a method that read from the device
/// [`AMPLIFIED`] times or more the bytes it used is named, with readahead as the cause only when
/// the device reads ahead more than one block.
pub fn explain(methods: &[MethodSeries], bs: u64, read_ahead_kb: Option<u64>) -> Vec<String> {
    methods
        .iter()
        .filter(|m| m.unsupported.is_none() && !m.method.is_direct())
        .filter_map(|m| {
            let amp = amplification(m, bs)?;
            if amp < AMPLIFIED {
                return None;
            }
            let cause = match read_ahead_kb {
                Some(ra) if ra * 1024 > bs => format!(
                    "the kernel reads ahead around each miss (read_ahead_kb {ra} on this device) and the group evicts most of it before it is used"
                ),
                _ => "the kernel reads ahead around each miss and the group evicts most of it before it is used".to_string(),
            };
            Some(format!(
                "{}: {amp:.0}x the bytes it used came from the device: {cause}; a random hint (mmap-random, or pread's POSIX_FADV_RANDOM) reads just the block",
                m.method.name()
            ))
        })
        .collect()
}

/// Runs one method in a child inside `group`; returns its ticks and its last message (done or
/// failed).
fn run_child(
    exe: &Path,
    wc: &WorkerConfig,
    group: &MemoryGroup,
    each: impl FnMut(&Tick),
) -> Result<(Vec<Tick>, Message)> {
    super::child::run_in_group(exe, "squeeze-worker", wc, group, each)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tick(t: f64, kiops: f64, mem: u64) -> Tick {
        Tick {
            t,
            secs: 1.0,
            ops: (kiops * 1e3) as u64,
            kiops,
            mib_s: kiops * 1e3 * 4096.0 / (1 << 20) as f64,
            dev_read_bytes: Some((kiops * 1e3) as u64 * 4096),
            tlb_shootdowns: Some(100),
            mem_current: Some(mem),
            cpu_work: 50,
            ..Default::default()
        }
    }

    #[test]
    fn steady_state_starts_after_the_group_fills() {
        let limit = 100 << 20;
        // Fast while filling, then slower; the window must leave out the filling seconds.
        let mut ticks: Vec<Tick> = (0..3)
            .map(|i| tick(i as f64 + 1.0, 90.0, (i + 1) * (25 << 20)))
            .collect();
        ticks.extend((3..10).map(|i| tick(i as f64 + 1.0, 20.0 + i as f64 * 0.1, 99 << 20)));
        let s = steady_state(&ticks, 1.0, limit, false, 100.0).unwrap();
        // Second 4 (index 3) is the first at 90%: the window starts after it.
        assert_eq!(s.seconds, 6);
        assert!((s.from_s - 4.0).abs() < 1e-9, "{}", s.from_s);
        assert!(s.kiops.max < 21.0, "no filling second in it: {:?}", s.kiops);
        assert_eq!(s.tlb_per_s, Some(100.0));
        assert_eq!(s.cpu_left_pct, Some(50.0));
        assert!(s.why.contains("second 4"), "{}", s.why);
        // O_DIRECT never fills the group: from the second second.
        let flat: Vec<Tick> = (0..6)
            .map(|i| tick(i as f64 + 1.0, 30.0, 1 << 20))
            .collect();
        let d = steady_state(&flat, 1.0, limit, true, 0.0).unwrap();
        assert_eq!((d.seconds, d.cpu_left_pct), (5, None));
        // Not direct and never full: the second half, said so.
        let n = steady_state(&flat, 1.0, limit, false, 0.0).unwrap();
        assert_eq!(n.seconds, 3);
        assert!(n.why.contains("never filled"));
        // Too short: nothing.
        assert!(steady_state(&flat[..3], 1.0, limit, false, 0.0).is_none());
    }

    #[test]
    fn a_last_partial_second_is_left_out() {
        let limit = 10 << 20;
        let mut ticks: Vec<Tick> = (0..5)
            .map(|i| tick(i as f64 + 1.0, 10.0, 10 << 20))
            .collect();
        let mut last = tick(5.3, 1.0, 10 << 20);
        last.secs = 0.3;
        ticks.push(last);
        let s = steady_state(&ticks, 1.0, limit, false, 0.0).unwrap();
        assert_eq!(s.seconds, 4);
        assert_eq!(s.kiops.min, 10.0);
    }

    fn series(method: ReadMethod, ticks: Vec<Tick>) -> MethodSeries {
        MethodSeries {
            method,
            unsupported: None,
            resident_before_pct: 0.0,
            ticks,
            done: None,
            peak: None,
            needed_bytes: 0,
            dev_read_bytes: None,
            steady: None,
        }
    }

    #[test]
    fn readahead_is_named_only_where_the_bytes_say_so() {
        let mut amplified: Vec<Tick> = (0..4).map(|i| tick(i as f64 + 1.0, 0.2, 0)).collect();
        for t in &mut amplified {
            // 200 reads of 4 KiB a second, 8 MiB from the device for each.
            t.own_read_bytes = Some(t.ops * (8 << 20));
        }
        let plain: Vec<Tick> = (0..4)
            .map(|i| {
                let mut t = tick(i as f64 + 1.0, 20.0, 0);
                t.own_read_bytes = Some(t.ops * 4096);
                t
            })
            .collect();
        let methods = vec![
            series(ReadMethod::Mmap, amplified.clone()),
            series(ReadMethod::MmapRandom, plain),
            series(ReadMethod::UringDirect, amplified),
        ];
        let amp = amplification(&methods[0], 4096).unwrap();
        assert!((amp - 2048.0).abs() < 1.0, "{amp}");
        let e = explain(&methods, 4096, Some(8192));
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(e[0].starts_with("mmap: 2048x") && e[0].contains("read_ahead_kb 8192"));
        // No readahead figure: the cause without it.
        let e = explain(&methods, 4096, None);
        assert!(!e[0].contains("read_ahead_kb"));
        // Nothing amplified: nothing said.
        assert!(explain(&methods[1..2], 4096, Some(8192)).is_empty());
    }

    #[test]
    fn needed_bytes_count_distinct_blocks() {
        assert_eq!(
            needed_bytes(SqueezePattern::Random, 10, 100, 4096),
            10 * 4096
        );
        assert_eq!(
            needed_bytes(SqueezePattern::Seq, 500, 100, 4096),
            100 * 4096
        );
        let u = needed_bytes(SqueezePattern::Uniform, 100, 100, 1);
        // 100 draws of 100: about 63 distinct.
        assert!((58..=63).contains(&u), "{u}");
    }

    #[test]
    fn a_worker_without_a_group_writes_ticks_then_done() {
        let (_dir, path) = crate::testutil::file_with("sq.bin", &vec![7u8; 4 << 20]);
        let cfg = WorkerConfig {
            path,
            method: ReadMethod::Pread,
            pattern: SqueezePattern::Uniform,
            bs: 4096,
            threads: 2,
            depth: 4,
            seconds: 1.3,
            tick: 1.0,
            seed: 3,
            group: None,
        };
        let mut out = Vec::new();
        run_worker(&cfg, &mut &b"go\n"[..], &mut out).unwrap();
        let msgs: Vec<Message> = String::from_utf8(out)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let ticks: Vec<&Tick> = msgs
            .iter()
            .filter_map(|m| match m {
                Message::Tick(t) => Some(t),
                _ => None,
            })
            .collect();
        let Some(Message::Done(done)) = msgs.last() else {
            panic!("ends with done: {msgs:?}")
        };
        assert_eq!(ticks.len(), 2, "one per second and the last 0.3 s");
        assert!((ticks[0].secs - 1.0).abs() < 0.1);
        let counted: u64 = ticks.iter().map(|t| t.ops).sum();
        assert_eq!(
            counted, done.moved.blocks,
            "every read counted in some second"
        );
        assert!(done.moved.blocks > 0 && done.laps >= 1);
        assert!(ticks.iter().all(|t| t.mem_current.is_none()));
        assert!(ticks[0].cpu_work > 0, "the companion ran");
    }

    #[test]
    fn a_failure_is_reported_as_a_message() {
        let (_dir, path) = crate::testutil::file_with("tiny.bin", b"abc");
        let cfg = WorkerConfig {
            path,
            method: ReadMethod::Pread,
            pattern: SqueezePattern::Random,
            bs: 4096,
            threads: 1,
            depth: 1,
            seconds: 0.1,
            tick: 1.0,
            seed: 1,
            group: None,
        };
        let mut out = Vec::new();
        run_worker(&cfg, &mut &b"go\n"[..], &mut out).unwrap();
        let m: Message = serde_json::from_str(String::from_utf8(out).unwrap().trim()).unwrap();
        match m {
            Message::Failed { error, unsupported } => {
                assert!(!unsupported);
                assert!(error.contains("smaller than one block"), "{error}");
            }
            other => panic!("{other:?}"),
        }
    }
}
