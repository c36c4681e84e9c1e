//! `iolab sweep`: throughput against block size, per method and cache state (reads) or per
//! method and sync mode (writes). Runs are interleaved: each round visits every cell once.

use super::host::{Host, host_facts};
use crate::cache::CacheMode;
use crate::engine::write::{SyncMode, WriteMethod, WriteTarget, open_target};
use crate::engine::{self, EngineOptions, Moved, ReadMethod, Source};
use crate::error::{Error, Result};
use crate::harness::{
    self, CacheSpec, Cell, CellRun, Cells, Comparison, Limits, Observer, ReadBack, Rounds,
    RoundsTaken, XorCheck,
};
use crate::measure::Counters;
use crate::measure::stats::{Summary, summarize};
use crate::workload::{Pattern, Shape};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

pub mod findings;
pub mod report;
pub mod suite;

crate::named_enum! {
    /// What a sweep measures.
    pub enum SweepOp {
        /// Reads of the file.
        Read = "read",
        /// Writes of a scratch file beside it.
        Write = "write",
    }
}

/// What `iolab sweep` measures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SweepConfig {
    /// The file to read, or where the write scratch file goes.
    pub path: PathBuf,
    /// Reads or writes.
    pub op: SweepOp,
    /// Block sizes.
    pub sizes: Vec<u64>,
    /// Read methods (reads).
    pub read_methods: Vec<ReadMethod>,
    /// Write methods (writes).
    pub write_methods: Vec<WriteMethod>,
    /// Cache states (reads).
    pub caches: Vec<CacheMode>,
    /// Sync modes (writes).
    pub syncs: Vec<SyncMode>,
    /// Bytes per run: reads default to the whole file, writes to 64 MiB.
    pub len: Option<u64>,
    /// Threads, each with its own contiguous part.
    pub threads: usize,
    /// io_uring requests in flight per thread.
    pub depth: u32,
    /// Rounds (interleaved, each visits every cell once): exactly `repeat`, or with a budget
    /// adaptive ones that go on, look by look, until every comparison (each method against the
    /// first at each block size and cache state or sync mode) is decided at 95%.
    #[serde(flatten)]
    pub rounds: Rounds,
    /// Seed of the random order (and of written data).
    pub seed: u64,
    /// With a cold cache, as root: also drop every clean cache (drop_caches).
    pub drop_all: bool,
}

impl SweepConfig {
    /// What each block size is measured with: method x cache state (reads) or method x sync
    /// mode (writes); refuses settings that cannot give a result.
    fn kinds(&self) -> Result<Vec<CellKind>> {
        if self.sizes.is_empty() || self.sizes.contains(&0) {
            return Err(Error::usage(
                "invalid block sizes",
                "give at least one, each at least 1 byte",
            ));
        }
        if self.threads == 0 {
            return Err(Error::usage(
                "invalid count",
                "--threads must be at least 1",
            ));
        }
        self.rounds.check()?;
        let whats: Vec<CellKind> = match self.op {
            SweepOp::Read => self
                .read_methods
                .iter()
                .flat_map(|&method| {
                    self.caches
                        .iter()
                        .map(move |&cache| CellKind::Read { method, cache })
                })
                .collect(),
            SweepOp::Write => self
                .write_methods
                .iter()
                .flat_map(|&method| {
                    self.syncs
                        .iter()
                        .map(move |&sync| CellKind::Write { method, sync })
                })
                .collect(),
        };
        if whats.is_empty() {
            return Err(Error::usage(
                "nothing to measure",
                "give at least one method and cache or sync mode",
            ));
        }
        Ok(whats)
    }

    /// Cache states measured by default.
    pub const DEFAULT_CACHES: [CacheMode; 2] = [CacheMode::Cold, CacheMode::Warm];
    /// Sync modes measured by default.
    pub const DEFAULT_SYNCS: [SyncMode; 4] = [
        SyncMode::None,
        SyncMode::End,
        SyncMode::Each,
        SyncMode::Dsync,
    ];
    /// Block sizes by default.
    pub const DEFAULT_SIZES: &str = "512..16M";

    /// Sequential blocks with this sweep's threads, seed and depth.
    fn shape(&self) -> Shape {
        Shape {
            pattern: Pattern::Seq,
            seed: self.seed,
            threads: self.threads,
            depth: self.depth,
            sqpoll: false,
        }
    }
}

/// Per-block sync modes wait for the device at every block; their runs stop after this many.
pub const SYNCED_BLOCKS: u64 = 2048;
/// Default bytes per write run.
pub const WRITE_LEN: u64 = 64 << 20;

/// One run of one cell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SweepRun {
    /// Wall time, CPU time, faults and context switches of the measured work.
    pub counters: Counters,
    /// Bytes moved, their XOR and the requests issued.
    pub moved: Moved,
    /// It started from the asked cache state.
    pub cache_verified: bool,
}

/// What one cell measures: a read method from a cache state, or a write method with a sync mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "op", rename_all = "lowercase")]
pub enum CellKind {
    /// Reads.
    Read {
        /// The read method.
        method: ReadMethod,
        /// The cache state before each run.
        cache: CacheMode,
    },
    /// Writes.
    Write {
        /// The write method.
        method: WriteMethod,
        /// The durability.
        sync: SyncMode,
    },
}

/// One block size x method x cache state (or sync mode), with its runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SweepCell {
    /// Block size.
    pub bs: u64,
    /// What is measured.
    #[serde(flatten)]
    pub kind: CellKind,
    /// The counted runs.
    pub runs: Vec<SweepRun>,
    /// Throughput over the runs.
    pub mib_s: Summary,
    /// System calls (or io_uring entries) per GiB moved.
    pub syscalls_per_gib: f64,
    /// Minor faults per GiB moved.
    pub minor_faults_per_gib: f64,
    /// Major faults per GiB moved.
    pub major_faults_per_gib: f64,
    /// Every run started from the asked cache state.
    pub cache_verified: bool,
    /// Why the method could not run at this block size here.
    pub unsupported: Option<String>,
}

impl SweepCell {
    /// The method's name.
    pub fn method_name(&self) -> &'static str {
        match self.kind {
            CellKind::Read { method, .. } => method.name(),
            CellKind::Write { method, .. } => method.name(),
        }
    }

    /// The read method and cache state, for a read cell.
    pub fn read(&self) -> Option<(ReadMethod, CacheMode)> {
        match self.kind {
            CellKind::Read { method, cache } => Some((method, cache)),
            CellKind::Write { .. } => None,
        }
    }

    /// The write method and sync mode, for a write cell.
    pub fn write(&self) -> Option<(WriteMethod, SyncMode)> {
        match self.kind {
            CellKind::Write { method, sync } => Some((method, sync)),
            CellKind::Read { .. } => None,
        }
    }

    /// The cache state or sync mode, as the table shows it.
    pub fn mode_name(&self) -> &'static str {
        match self.kind {
            CellKind::Read { cache, .. } => cache.name(),
            CellKind::Write { sync, .. } => sync.name(),
        }
    }

    /// The series this cell belongs to in a plot: method and cache or sync.
    pub fn series(&self) -> String {
        match self.kind {
            CellKind::Read { method, cache } => format!("{} {}", method.name(), cache.name()),
            CellKind::Write { method, sync } => format!("{} sync={}", method.name(), sync.name()),
        }
    }
}

/// What `iolab sweep` found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SweepResult {
    /// The machine it ran on.
    pub host: Host,
    /// What was asked.
    pub config: SweepConfig,
    /// Size of the file read (0 for writes).
    pub file_size: u64,
    /// One cell per block size x method x cache state or sync mode.
    pub cells: Vec<SweepCell>,
    /// What the user should know about these figures.
    pub warnings: Vec<String>,
    /// How the rounds went: how many, why they ended, under how many planned looks.
    #[serde(default)]
    pub rounds: RoundsTaken,
}

/// What the sweep's cells move: the first `len` bytes of the file read, or `len` bytes into a
/// scratch file beside the path (never kept).
enum Subject {
    Read { src: Source, len: u64 },
    Write { target: WriteTarget, len: u64 },
}

/// Measures every cell `repeat` times, each round visiting every cell once.
pub fn run_sweep(cfg: &SweepConfig, command_line: &str, obs: &dyn Observer) -> Result<SweepResult> {
    let whats = cfg.kinds()?;
    let mut cells: Vec<SweepCell> = Vec::new();
    for &bs in &cfg.sizes {
        for &kind in &whats {
            cells.push(SweepCell {
                bs,
                kind,
                runs: Vec::new(),
                mib_s: summarize(&[]),
                syscalls_per_gib: 0.0,
                minor_faults_per_gib: 0.0,
                major_faults_per_gib: 0.0,
                cache_verified: true,
                unsupported: None,
            });
        }
    }
    let mut warnings = Vec::new();
    let subject = match cfg.op {
        SweepOp::Read => read_subject(cfg)?,
        SweepOp::Write => write_subject(cfg)?,
    };
    let (file_size, read_len) = match &subject {
        Subject::Read { src, len } => (src.size, *len),
        Subject::Write { .. } => (0, 0),
    };
    if cfg.op == SweepOp::Read && cfg.len.is_none() && read_len < file_size {
        let shrunk = format!(
            "each run reads the first {} of the {} file, sized to the {} budget (--size {} reads it whole)",
            crate::size::format_size(read_len),
            crate::size::format_size(file_size),
            crate::measure::secs::human(cfg.rounds.budget.unwrap_or_default()),
            match crate::size::format_size(file_size) {
                whole if !whole.contains('.') => whole.replace(' ', ""),
                _ => file_size.to_string(),
            }
        );
        obs.plan("sweep", &format!("sweep: {shrunk}"), None);
        warnings.push(shrunk);
    }
    let comparisons = comparisons(&cells);
    let mut set = SweepCells {
        cfg,
        cells: &cells,
        subject: &subject,
        opts: EngineOptions::with_depth(cfg.depth),
    };
    let mut out = harness::run("sweep", &mut set, &cfg.rounds, &comparisons, obs)?;
    for (cell, done) in cells.iter_mut().zip(out.cells.iter_mut()) {
        cell.runs = std::mem::take(&mut done.runs)
            .into_iter()
            .map(|r| SweepRun {
                cache_verified: r.cache.as_ref().is_none_or(|c| c.verified),
                counters: r.counters,
                moved: r.moved,
            })
            .collect();
        if let Some(e) = done.skipped.take() {
            warnings.push(format!(
                "{} bs {}: {}",
                cell.method_name(),
                cell.bs,
                e.cause
            ));
            cell.unsupported = Some(e.cause);
        }
    }
    let rounds = RoundsTaken::of(&out);
    warnings.append(&mut out.warnings);
    let cells: Vec<SweepCell> = cells.into_iter().map(finish).collect();
    warnings.extend(after_warnings(cfg, &cells, read_len, file_size));
    Ok(SweepResult {
        host: host_facts(Some(&cfg.path), command_line),
        config: cfg.clone(),
        file_size,
        cells,
        warnings,
        rounds,
    })
}

/// The read sweep's file: its first `--len` bytes (all of them by default).
fn read_subject(cfg: &SweepConfig) -> Result<Subject> {
    let src = engine::open_source(&cfg.path)?;
    let len = cfg
        .len
        .unwrap_or_else(|| budget_len(cfg, src.size))
        .min(src.size);
    if len == 0 {
        return Err(Error::usage("nothing to read", "the file is empty").at(&cfg.path));
    }
    Ok(Subject::Read { src, len })
}

/// Bytes a read run takes without `--size`: the whole file with fixed rounds; under a budget,
/// 1 MiB per second of it (at least 16 MiB and four of the largest blocks), so that the first
/// look of the default 64 cells (~3 s a round here) fits a third of it and later looks can
/// decide: a 1 GiB file whole would take ~15 s a round, past a minute before any verdict.
pub fn budget_len(cfg: &SweepConfig, file_size: u64) -> u64 {
    let Some(budget) = cfg.rounds.budget else {
        return file_size;
    };
    let largest = cfg.sizes.iter().copied().max().unwrap_or(0);
    let len = ((budget.as_secs_f64() * (1 << 20) as f64) as u64)
        .max(16 << 20)
        .max(4 * largest);
    // Whole blocks of the largest size, as a prefix of the file.
    let len = len.div_ceil(largest.max(1)) * largest.max(1);
    len.min(file_size)
}

/// The write sweep's scratch file beside the path (never kept), with room for `--len` bytes.
fn write_subject(cfg: &SweepConfig) -> Result<Subject> {
    let dir = if cfg.path.is_dir() {
        cfg.path.clone()
    } else {
        cfg.path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| ".".into())
    };
    let target = open_target(&dir.join("iolab-sweep-scratch"), false)?;
    let len = cfg.len.unwrap_or(WRITE_LEN);
    target.check_space(len)?;
    Ok(Subject::Write { target, len })
}

/// What the user should know once the sweep ran: per-block syncs cut short, cells whose runs
/// did not start in the asked cache state, cold prefixes read ahead past their end.
fn after_warnings(
    cfg: &SweepConfig,
    cells: &[SweepCell],
    read_len: u64,
    file_size: u64,
) -> Vec<String> {
    let mut warnings = Vec::new();
    if cfg.op == SweepOp::Write
        && cfg
            .syncs
            .iter()
            .any(|s| matches!(s, SyncMode::Each | SyncMode::Dsync | SyncMode::Osync))
    {
        warnings.push(format!(
            "per-block sync modes write at most {SYNCED_BLOCKS} blocks per run"
        ));
    }
    if cells.iter().any(|c| !c.cache_verified) {
        warnings.push("some runs did not start in the asked cache state (marked)".into());
    }
    if cfg.op == SweepOp::Read && cfg.caches.contains(&CacheMode::Cold) && read_len < file_size {
        warnings.push(format!(
            "cold runs read the first {} of a {} file: the kernel reads ahead past that end (read's window with its sequential hint is twice a mapping's), device time a run pays for and does not count; to compare methods cold, read a whole file",
            crate::size::format_size(read_len),
            crate::size::format_size(file_size)
        ));
    }
    warnings
}

/// At every block size and cache state (or sync mode), each method against the first; for
/// writes also, per method, each sync mode against the first.
fn comparisons(cells: &[SweepCell]) -> Vec<Comparison> {
    let mut out = Vec::new();
    for (b, cb) in cells.iter().enumerate() {
        let first = cells.iter().position(|ca| {
            ca.bs == cb.bs
                && match (ca.kind, cb.kind) {
                    (CellKind::Read { cache: x, .. }, CellKind::Read { cache: y, .. }) => x == y,
                    (CellKind::Write { sync: x, .. }, CellKind::Write { sync: y, .. }) => x == y,
                    _ => false,
                }
        });
        if let Some(a) = first.filter(|&a| a != b) {
            out.push(Comparison { a, b });
        }
        if let CellKind::Write { method, .. } = cb.kind {
            let first = cells.iter().position(|ca| {
                ca.bs == cb.bs
                    && matches!(ca.kind, CellKind::Write { method: m, .. } if m == method)
            });
            if let Some(a) = first.filter(|&a| a != b) {
                out.push(Comparison { a, b });
            }
        }
    }
    out
}

/// The sweep's cells as the harness sees them.
struct SweepCells<'a> {
    cfg: &'a SweepConfig,
    cells: &'a [SweepCell],
    subject: &'a Subject,
    opts: EngineOptions,
}

impl Cells for SweepCells<'_> {
    type Extra = ();
    fn count(&self) -> usize {
        self.cells.len()
    }
    fn name(&self, i: usize) -> String {
        let c = &self.cells[i];
        format!(
            "{} {} {}",
            c.method_name(),
            c.mode_name(),
            crate::size::format_size(c.bs)
        )
    }
    /// A read: the file's first bytes in the cell's cache state, in the cell's block size,
    /// every read cell's XOR the same. A write: the scratch file, at most [`SYNCED_BLOCKS`]
    /// blocks a run when syncing per block.
    fn cell(&self, i: usize) -> Cell<'_> {
        let (cfg, bs) = (self.cfg, self.cells[i].bs);
        match (self.cells[i].kind, self.subject) {
            (CellKind::Read { method, cache }, Subject::Read { src, len }) => Cell {
                cache: Some(CacheSpec::file(src, *len, cache, cfg.drop_all)),
                work: harness::CellWork::Read {
                    method,
                    src,
                    workload: cfg.shape().workload(bs, *len),
                    opts: self.opts,
                    limits: Limits::default(),
                },
                xor: Some(XorCheck::when_whole(0, *len)),
            },
            (CellKind::Write { method, sync }, Subject::Write { target, len }) => {
                let per_block = matches!(sync, SyncMode::Each | SyncMode::Dsync | SyncMode::Osync);
                let len = if per_block {
                    (*len).min(bs.saturating_mul(SYNCED_BLOCKS))
                } else {
                    *len
                };
                Cell {
                    cache: None,
                    work: harness::CellWork::Write {
                        method,
                        target,
                        workload: cfg.shape().workload(bs, len),
                        sync,
                        read_back: ReadBack::Never,
                    },
                    xor: None,
                }
            }
            // run_sweep makes the subject of the sweep's op: a cell of the other op has no
            // work (the harness says so).
            _ => Cell::own(),
        }
    }
    fn figure(&self, r: &CellRun<()>) -> f64 {
        r.mib_per_s()
    }
}

fn finish(mut c: SweepCell) -> SweepCell {
    let rates: Vec<f64> = c
        .runs
        .iter()
        .map(|r| crate::size::mib_per_s(r.moved.bytes, r.counters.wall.as_secs_f64()))
        .collect();
    c.mib_s = summarize(&rates);
    let gib = c.runs.iter().map(|r| r.moved.bytes).sum::<u64>() as f64 / (1u64 << 30) as f64;
    if gib > 0.0 {
        c.syscalls_per_gib = c.runs.iter().map(|r| r.moved.ops).sum::<u64>() as f64 / gib;
        c.minor_faults_per_gib =
            c.runs.iter().map(|r| r.counters.minor_faults).sum::<u64>() as f64 / gib;
        c.major_faults_per_gib =
            c.runs.iter().map(|r| r.counters.major_faults).sum::<u64>() as f64 / gib;
    }
    c.cache_verified = c.runs.iter().all(|r| r.cache_verified);
    c
}

/// Block sizes from `512..16M` (powers of two) or a list `4K,64K,1M`.
pub fn parse_sizes(text: &str) -> Result<Vec<u64>> {
    if let Some((a, b)) = text.split_once("..") {
        let (lo, hi) = (crate::size::parse_size(a)?, crate::size::parse_size(b)?);
        if lo == 0 || lo > hi {
            return Err(Error::usage(
                format!("invalid block-size range '{text}'"),
                "expected LOW..HIGH with 0 < LOW <= HIGH, e.g. 512..16M",
            ));
        }
        let mut v = Vec::new();
        let mut s = lo;
        while s <= hi {
            v.push(s);
            match s.checked_mul(2) {
                Some(n) => s = n,
                None => break,
            }
        }
        return Ok(v);
    }
    text.split(',').map(crate::size::parse_size).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_size_ranges_and_lists() {
        assert_eq!(parse_sizes("512..4K").unwrap(), vec![512, 1024, 2048, 4096]);
        assert_eq!(parse_sizes("4K,1M").unwrap(), vec![4096, 1 << 20]);
        assert_eq!(parse_sizes("3..7").unwrap(), vec![3, 6]);
        assert!(parse_sizes("4K..1K").is_err());
        assert!(parse_sizes("0..1K").is_err());
        assert!(parse_sizes("4Q").is_err());
    }
}
