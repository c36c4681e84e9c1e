//! `iolab access`: sequential vs random block access, per method and cache state, in KIOPS with
//! latency percentiles, faults per operation and read amplification (device bytes per useful
//! byte). Cells are interleaved across repeats so drift favours no method.

use super::host::{Host, host_facts};
use crate::cache::{CacheMode, CacheState};
use crate::engine::{self, EngineOptions, Moved, ReadMethod, Work};
use crate::error::{Error, Result};
use crate::harness::{
    self, CacheSpec, CellRun, Cells, Comparison, Limits, Observer, Rounds, RoundsTaken, XorCheck,
};
use crate::measure::Counters;
use crate::measure::latency::{Histogram, LatencySummary};
use crate::measure::stats::{Summary, summarize};
use crate::workload::{Pattern, Workload};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::Duration;

pub mod findings;
pub mod report;
pub mod suite;

/// What `iolab access` measures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AccessConfig {
    /// The file to read.
    pub path: PathBuf,
    /// Block size in bytes.
    pub bs: u64,
    /// Patterns to measure.
    pub patterns: Vec<Pattern>,
    /// Methods to measure.
    pub methods: Vec<ReadMethod>,
    /// Cache states to measure.
    pub caches: Vec<CacheMode>,
    /// Threads, each with its own contiguous part.
    pub threads: usize,
    /// io_uring requests in flight per thread.
    pub depth: u32,
    /// Operations per run (all threads together); `None`: every block once.
    pub ops: Option<u64>,
    /// Operations per cold run, when cold runs should sample fewer blocks than warm ones (a sparse
    /// random sample: reading every block once lets readahead bring the whole file in).
    #[serde(default)]
    pub cold_ops: Option<u64>,
    /// Each run stops after this long.
    #[serde(default, with = "crate::measure::secs::option")]
    #[schemars(with = "Option<f64>")]
    pub duration: Option<Duration>,
    /// Rounds (each visits every cell once): exactly `repeat`, or with a budget adaptive ones
    /// that go on, look by look, until each method is told apart from the first at 95% in every
    /// pattern and cache state.
    #[serde(flatten)]
    pub rounds: Rounds,
    /// With a budget: compare only in this pattern and cache state; the other cells get
    /// `repeat` rounds.
    #[serde(default)]
    pub focus: Option<(Pattern, CacheMode)>,
    /// Seed of the random order (and of written data).
    pub seed: u64,
    /// With a cold cache, as root: also drop every clean cache (drop_caches).
    pub drop_all: bool,
    /// What each block's bytes are used for: XOR (default) or one touched byte (classic).
    #[serde(default)]
    pub work: Work,
    /// The classic benchmark's conditions: no `posix_fadvise` hint, and whole blocks only (it
    /// read `size / bs` blocks, dropping a partial last one).
    #[serde(default)]
    pub classic: bool,
    /// No block timed (`--no-latency`): no percentiles, and what the timing costs shows beside
    /// a timed run of the same loop.
    #[serde(default)]
    pub untimed: bool,
}

/// One run of one cell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AccessRun {
    /// An uncounted warm-up run.
    pub warmup: bool,
    /// Wall time, CPU time, faults and context switches of the measured work.
    pub counters: Counters,
    /// Bytes moved, their XOR and the requests issued.
    pub moved: Moved,
    /// The cache state it started from, verified.
    pub cache: CacheState,
    /// Per-operation latency percentiles.
    pub latency: LatencySummary,
}

impl AccessRun {
    /// Thousands of block operations per second.
    pub fn kiops(&self) -> f64 {
        kiops(&self.moved, &self.counters)
    }
}

/// One method x pattern x cache cell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AccessRow {
    /// The read method.
    pub method: ReadMethod,
    /// Sequential or seeded random order.
    pub pattern: Pattern,
    /// The cache state.
    pub cache: CacheMode,
    /// Every counted run.
    pub runs: Vec<AccessRun>,
    /// Thousands of operations per second over the counted runs.
    pub kiops: Summary,
    /// Throughput over the counted runs.
    pub mib_s: Summary,
    /// Over every counted operation of every counted run.
    pub latency: LatencySummary,
    /// Minor page faults per operation.
    pub minor_faults_per_op: f64,
    /// Major page faults per operation.
    pub major_faults_per_op: f64,
    /// Bytes read from the device per byte the workload asked for (readahead waste shows here).
    pub device_bytes_per_byte: Option<f64>,
    /// Every counted run started in the asked cache state.
    pub cache_verified: bool,
    /// Why the cell could not run (unsupported method), instead of runs.
    pub unsupported: Option<String>,
}

/// What `iolab access` found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AccessResult {
    /// The machine it ran on.
    pub host: Host,
    /// What was asked.
    pub config: AccessConfig,
    /// Size of the file in bytes.
    pub file_size: u64,
    /// Blocks in the file at this block size.
    pub blocks: u64,
    /// The XOR of the whole file, when some run read every block.
    #[serde(default, with = "crate::xor::hex::option")]
    #[schemars(with = "Option<String>")]
    pub xor: Option<u32>,
    /// One row per method x pattern x cache state.
    pub rows: Vec<AccessRow>,
    /// What the user should know about these figures.
    pub warnings: Vec<String>,
    /// How the rounds went.
    #[serde(default)]
    pub rounds: RoundsTaken,
}

struct AccessCell {
    method: ReadMethod,
    pattern: Pattern,
    cache: CacheMode,
    runs: Vec<CellRun<()>>,
    unsupported: Option<String>,
}

impl AccessConfig {
    /// Methods measured by default.
    pub const DEFAULT_METHODS: [ReadMethod; 7] = [
        ReadMethod::Read,
        ReadMethod::Pread,
        ReadMethod::Mmap,
        ReadMethod::MmapSeq,
        ReadMethod::MmapRandom,
        ReadMethod::MmapWillneed,
        ReadMethod::Uring,
    ];
    /// Patterns measured by default.
    pub const DEFAULT_PATTERNS: [Pattern; 2] = [Pattern::Seq, Pattern::Random];
    /// Cache states measured by default, in the order the rounds visit them.
    pub const DEFAULT_CACHES: [CacheMode; 2] = [CacheMode::Warm, CacheMode::Cold];
    /// The classic benchmark's four ways: read, and mmap with no hint, adv_seq and adv_random
    /// (each hint alone: the original OR-ed it with MADV_WILLNEED).
    pub const CLASSIC_METHODS: [ReadMethod; 4] = [
        ReadMethod::Read,
        ReadMethod::Mmap,
        ReadMethod::MmapSeq,
        ReadMethod::MmapRandom,
    ];

    /// Refuses settings that cannot give a result.
    pub fn check(&self) -> Result<()> {
        if self.bs == 0 {
            return Err(Error::usage(
                "invalid block size",
                "it must be at least 1 byte",
            ));
        }
        if self.threads == 0 {
            return Err(Error::usage(
                "invalid count",
                "--threads must be at least 1",
            ));
        }
        self.rounds.check()?;
        if self.ops == Some(0) {
            return Err(Error::usage("invalid --ops", "it must be at least 1"));
        }
        if self.methods.is_empty() || self.patterns.is_empty() || self.caches.is_empty() {
            return Err(Error::usage(
                "nothing to measure",
                "give at least one method, pattern and cache state",
            ));
        }
        Ok(())
    }

    /// The classic benchmark's run of `path` (srajangarg/mmap-bench's `read FILE seq|random
    /// read|mmap [adv_seq|adv_random]`): its four ways, both orders, the cache as it is, 4 KiB
    /// blocks, and the original's work: one byte touched per block, no file hint, an lseek
    /// before every read, every whole block once, no time limit, the run timed and no block on
    /// its own (no latency percentiles: timing blocks is work the original did not do); one
    /// counted run.
    pub fn classic(path: PathBuf) -> AccessConfig {
        AccessConfig {
            methods: Self::CLASSIC_METHODS.to_vec(),
            caches: vec![CacheMode::Asis],
            duration: None,
            rounds: Rounds::fixed(1, 0),
            seed: 0,
            work: Work::Touch,
            classic: true,
            untimed: true,
            ..AccessConfig::new(path)
        }
    }

    /// `path` read as `iolab access` reads by default: 4 KiB blocks, both orders, every default
    /// method, warm and cold, one thread (io_uring 32 deep), runs of at most 10 s, the default
    /// counted and warm-up rounds, XOR of every word, seed 1.
    pub fn new(path: PathBuf) -> AccessConfig {
        AccessConfig {
            path,
            bs: 4096,
            patterns: Self::DEFAULT_PATTERNS.to_vec(),
            methods: Self::DEFAULT_METHODS.to_vec(),
            caches: Self::DEFAULT_CACHES.to_vec(),
            threads: 1,
            depth: 32,
            ops: None,
            cold_ops: None,
            duration: Some(Duration::from_secs(10)),
            rounds: Self::ROUNDS,
            focus: None,
            seed: 1,
            drop_all: false,
            work: Work::Xor,
            classic: false,
            untimed: false,
        }
    }

    /// The budget of `iolab access` without --repeat or --budget.
    pub const BUDGET: Duration = Duration::from_secs(60);

    /// How long each run lasts without --duration: with a budget, a third of its even share of
    /// the first look's runs (warm-ups included; the rest is left for setting up cache states
    /// and for later looks), between 50 ms and 10 s; with fixed rounds, 10 s.
    pub fn run_length(&self) -> Duration {
        let Some(budget) = self.rounds.budget else {
            return Duration::from_secs(10);
        };
        let cells = self.patterns.len() * self.methods.len() * self.caches.len();
        let runs = cells.max(1) * (crate::measure::decide::LOOKS[0] + self.rounds.warmup);
        (budget / (3 * runs as u32)).clamp(Duration::from_millis(50), Duration::from_secs(10))
    }

    /// Rounds by default: three counted after one warm-up (the first touches of fresh
    /// page-cache memory are slow).
    pub const ROUNDS: Rounds = Rounds {
        repeat: 3,
        warmup: 1,
        budget: None,
        level: crate::measure::decide::LEVEL,
    };
}

/// Each method against the first, in every pattern and cache state (only in `focus`'s, when
/// given).
fn against_the_first(cells: &[AccessCell], focus: Option<(Pattern, CacheMode)>) -> Vec<Comparison> {
    (0..cells.len())
        .filter(|&b| focus.is_none_or(|(p, c)| cells[b].pattern == p && cells[b].cache == c))
        .filter_map(|b| {
            let a = cells
                .iter()
                .position(|c| c.pattern == cells[b].pattern && c.cache == cells[b].cache)?;
            (a != b).then_some(Comparison { a, b })
        })
        .collect()
}

/// The warning for cells with runs that did not start in the asked cache state, if any.
fn unverified_warning(rows: &[AccessRow]) -> Option<String> {
    let unverified = rows
        .iter()
        .filter(|r| !r.cache_verified && r.unsupported.is_none())
        .count();
    (unverified > 0).then(|| {
        format!(
            "{unverified} cell(s) had runs that did not start in the asked cache state (marked)"
        )
    })
}

/// Measures every method x pattern x cache cell, rounds interleaved.
pub fn run_access(
    cfg: &AccessConfig,
    command_line: &str,
    obs: &dyn Observer,
) -> Result<AccessResult> {
    cfg.check()?;
    let src = engine::open_source(&cfg.path)?;
    let mut warnings = Vec::new();
    if src.size == 0 {
        warnings.push("the file is empty: nothing to read".into());
    }
    let mut cells: Vec<AccessCell> = Vec::new();
    for &cache in &cfg.caches {
        for &pattern in &cfg.patterns {
            for &method in &cfg.methods {
                cells.push(AccessCell {
                    method,
                    pattern,
                    cache,
                    runs: Vec::new(),
                    unsupported: None,
                });
            }
        }
    }
    let opts = EngineOptions {
        depth: cfg.depth,
        work: cfg.work,
        file_hint: !cfg.classic,
        prefetch: !cfg.classic,
        map_each_run: false,
        sqpoll: false,
        // The classic benchmark's sequential loop sought to every block it read.
        seek_each: cfg.classic,
    };
    // The classic benchmark read size / bs whole blocks.
    let len = if cfg.classic {
        src.size - src.size % cfg.bs
    } else {
        src.size
    };
    let blocks = Workload {
        bs: cfg.bs,
        len,
        pattern: Pattern::Seq,
        seed: 0,
        threads: 1,
    }
    .blocks();
    let comparisons = against_the_first(&cells, cfg.focus);
    let mut set = AccessCells {
        cfg,
        src: &src,
        cells: &cells,
        opts,
        len,
    };
    let mut out = harness::run("access", &mut set, &cfg.rounds, &comparisons, obs)?;
    let rounds = RoundsTaken::of(&out);
    warnings.append(&mut out.warnings);
    let mut whole_xor = None;
    for (cell, done) in cells.iter_mut().zip(out.cells.iter_mut()) {
        if let Some(e) = done.skipped.take() {
            warnings.push(format!("{}: {}", cell.method.name(), e.cause));
            cell.unsupported = Some(e.cause);
        }
        for run in std::mem::take(&mut done.runs) {
            if run.moved.blocks == blocks && blocks > 0 && cfg.work == Work::Xor {
                whole_xor = Some(run.moved.xor);
            }
            cell.runs.push(run);
        }
    }
    let rows: Vec<AccessRow> = cells.into_iter().map(row).collect();
    warnings.extend(unverified_warning(&rows));
    Ok(AccessResult {
        host: host_facts(Some(&cfg.path), command_line),
        config: cfg.clone(),
        file_size: src.size,
        blocks,
        xor: whole_xor,
        rows,
        warnings,
        rounds,
    })
}

/// The access cells as the harness sees them.
struct AccessCells<'a> {
    cfg: &'a AccessConfig,
    src: &'a engine::Source,
    cells: &'a [AccessCell],
    opts: EngineOptions,
    len: u64,
}

impl Cells for AccessCells<'_> {
    type Extra = ();
    fn count(&self) -> usize {
        self.cells.len()
    }
    fn name(&self, i: usize) -> String {
        let c = &self.cells[i];
        format!(
            "{} {} {}",
            c.method.name(),
            c.pattern.name(),
            c.cache.name()
        )
    }
    /// The whole file in the cell's cache state, its blocks in the cell's order; the XOR of
    /// every word agrees between the runs that read every block.
    fn cell(&self, i: usize) -> harness::Cell<'_> {
        let (cfg, src, cell) = (self.cfg, self.src, &self.cells[i]);
        let workload = Workload {
            bs: cfg.bs,
            len: self.len,
            pattern: cell.pattern,
            seed: cfg.seed,
            threads: cfg.threads,
        };
        let limits = Limits {
            max_ops: match cell.cache {
                CacheMode::Cold => cfg.cold_ops.or(cfg.ops),
                _ => cfg.ops,
            },
            duration: cfg.duration,
            latencies: !cfg.untimed,
        };
        harness::Cell {
            cache: Some(CacheSpec::file(src, src.size, cell.cache, cfg.drop_all)),
            work: harness::CellWork::Read {
                method: cell.method,
                src,
                workload,
                opts: self.opts,
                limits,
            },
            // Touching or copying a block says nothing of the file's XOR.
            xor: (self.len > 0 && cfg.work == Work::Xor)
                .then_some(XorCheck::when_whole(0, self.len)),
        }
    }
    fn figure(&self, r: &CellRun<()>) -> f64 {
        kiops(&r.moved, &r.counters)
    }
}

/// Thousands of block operations per second.
fn kiops(moved: &Moved, counters: &Counters) -> f64 {
    moved.blocks as f64 / counters.wall.as_secs_f64().max(1e-12) / 1000.0
}

/// A run as the result keeps it (its histogram apart).
fn access_run(r: CellRun<()>) -> (AccessRun, Histogram) {
    let hist = r.latency.unwrap_or_default();
    let run = AccessRun {
        warmup: false,
        counters: r.counters,
        moved: r.moved,
        cache: r
            .cache
            .unwrap_or_else(|| CacheState::nothing(CacheMode::Asis)),
        latency: hist.summary(),
    };
    (run, hist)
}

fn row(cell: AccessCell) -> AccessRow {
    let runs: Vec<(AccessRun, Histogram)> = cell.runs.into_iter().map(access_run).collect();
    let counted: Vec<&(AccessRun, Histogram)> = runs.iter().filter(|(r, _)| !r.warmup).collect();
    let mut hist = Histogram::default();
    for (_, h) in &counted {
        hist.merge(h);
    }
    let ops: u64 = counted.iter().map(|(r, _)| r.moved.blocks).sum();
    let bytes: u64 = counted.iter().map(|(r, _)| r.moved.bytes).sum();
    let per_op = |f: fn(&Counters) -> u64| {
        if ops == 0 {
            0.0
        } else {
            counted.iter().map(|(r, _)| f(&r.counters)).sum::<u64>() as f64 / ops as f64
        }
    };
    let dev: Option<u64> = counted
        .iter()
        .map(|(r, _)| r.counters.device_read_bytes)
        .sum();
    AccessRow {
        method: cell.method,
        pattern: cell.pattern,
        cache: cell.cache,
        kiops: summarize(&counted.iter().map(|(r, _)| r.kiops()).collect::<Vec<_>>()),
        mib_s: summarize(
            &counted
                .iter()
                .map(|(r, _)| crate::size::mib_per_s(r.moved.bytes, r.counters.wall.as_secs_f64()))
                .collect::<Vec<_>>(),
        ),
        latency: hist.summary(),
        minor_faults_per_op: per_op(|c| c.minor_faults),
        major_faults_per_op: per_op(|c| c.major_faults),
        device_bytes_per_byte: dev.filter(|_| bytes > 0).map(|d| d as f64 / bytes as f64),
        cache_verified: counted.iter().all(|(r, _)| r.cache.verified),
        unsupported: cell.unsupported,
        runs: runs.into_iter().map(|(r, _)| r).collect(),
    }
}
