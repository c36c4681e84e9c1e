//! `iolab read`: one read method over a file, with warm-up runs, repeats, the cache put into the
//! asked state and verified before every run, and the kernel's counters beside each time.

use super::Observer;
use super::host::{Host, host_facts};
use crate::cache::{self, CacheMode, CacheState};
use crate::engine::{self, EngineOptions, Moved, ReadMethod};
use crate::error::{Error, Result};
use crate::measure::stats::{Summary, summarize};
use crate::measure::{Counters, measure};
use crate::workload::{Pattern, Workload};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// What `iolab read` measures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReadConfig {
    /// The file to read.
    pub path: PathBuf,
    /// The read method.
    pub method: ReadMethod,
    /// Block size in bytes.
    pub bs: u64,
    /// Bytes to read from offset 0; `None` reads the whole file.
    pub len: Option<u64>,
    /// Sequential or seeded random order.
    pub pattern: Pattern,
    /// Seed of the random order (and of written data).
    pub seed: u64,
    /// Threads, each with its own contiguous part.
    pub threads: usize,
    /// io_uring requests in flight per thread.
    pub depth: u32,
    /// The page-cache state asked for before each run.
    pub cache: CacheMode,
    /// With a cold cache, as root: also drop every clean cache (drop_caches).
    pub drop_all: bool,
    /// Counted runs.
    pub repeat: usize,
    /// Uncounted runs first.
    pub warmup: usize,
}

/// One run, counted or warm-up.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// An uncounted warm-up run.
    pub warmup: bool,
    /// Wall time, CPU time, faults and context switches of the measured work.
    pub counters: Counters,
    /// Bytes moved, their XOR and the requests issued.
    pub moved: Moved,
    /// The verified cache state before the run (reads only).
    pub cache: Option<CacheState>,
}

impl RunRecord {
    /// Its throughput.
    pub fn mib_per_s(&self) -> f64 {
        crate::size::mib_per_s(self.moved.bytes, self.counters.wall.as_secs_f64())
    }
}

/// What `iolab read` found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReadResult {
    /// The machine it ran on.
    pub host: Host,
    /// What was asked.
    pub config: ReadConfig,
    /// Size of the file in bytes.
    pub file_size: u64,
    /// Bytes read per run.
    pub bytes: u64,
    /// XOR of the bytes read (the same in every run).
    pub xor: u32,
    /// Counted runs then warm-ups are marked; statistics use counted runs only.
    pub runs: Vec<RunRecord>,
    /// MiB/s over the counted runs.
    pub rate: Summary,
    /// Seconds over the counted runs.
    pub seconds: Summary,
    /// What the user should know about these figures.
    pub warnings: Vec<String>,
}

/// Checks the shape of a read request against the file: the bytes to read and any warnings.
pub fn resolve_len(bs: u64, len: Option<u64>, size: u64) -> Result<(u64, Vec<String>)> {
    if bs == 0 {
        return Err(
            Error::usage("invalid block size", "it must be at least 1 byte").hint("e.g. --bs 4K"),
        );
    }
    let mut warnings = Vec::new();
    let len = match len {
        None => size,
        Some(0) => return Err(Error::usage("invalid size", "it must be at least 1 byte")),
        Some(l) if l > size => {
            warnings.push(format!(
                "the file is shorter than asked: read its {size} bytes, not {l}"
            ));
            size
        }
        Some(l) => l,
    };
    if size == 0 {
        warnings.push("the file is empty: nothing to read, XOR is 00000000".into());
    }
    Ok((len, warnings))
}

/// Reads the file `repeat` times after `warmup` runs, the cache prepared and verified before each.
pub fn run_read(cfg: &ReadConfig, command_line: &str, obs: &dyn Observer) -> Result<ReadResult> {
    if cfg.threads == 0 {
        return Err(Error::usage(
            "invalid thread count",
            "--threads must be at least 1",
        ));
    }
    if cfg.repeat == 0 {
        return Err(Error::usage(
            "invalid repeat count",
            "--repeat must be at least 1",
        ));
    }
    let src = engine::open_source(&cfg.path)?;
    let (len, mut warnings) = resolve_len(cfg.bs, cfg.len, src.size)?;
    let w = Workload {
        bs: cfg.bs,
        len,
        pattern: cfg.pattern,
        seed: cfg.seed,
        threads: cfg.threads,
    };
    let opts = EngineOptions { depth: cfg.depth };
    let total = cfg.warmup + cfg.repeat;
    let mut runs = Vec::with_capacity(total);
    for i in 0..total {
        // Cache state is established and verified right before each run, outside the timing.
        let state = cache::prepare(&src.file, len, &src.path, cfg.cache, cfg.drop_all)?;
        let prepared = engine::prepare(cfg.method, &src, &w, &opts)?;
        let (moved, counters) = measure(|| prepared.run());
        let moved = moved?;
        runs.push(RunRecord {
            warmup: i < cfg.warmup,
            counters,
            moved,
            cache: Some(state),
        });
        obs.progress("read", i + 1, total);
    }
    let xor = runs[0].moved.xor;
    if let Some(bad) = runs.iter().find(|r| r.moved.xor != xor) {
        return Err(Error::failed(
            "checksum mismatch",
            format!(
                "runs disagree ({} vs {}): the file changed while measuring",
                crate::xor::format_xor(xor),
                crate::xor::format_xor(bad.moved.xor)
            ),
        )
        .at(&src.path));
    }
    let counted: Vec<&RunRecord> = runs.iter().filter(|r| !r.warmup).collect();
    let unverified = counted
        .iter()
        .filter(|r| r.cache.as_ref().is_some_and(|c| !c.verified))
        .count();
    if unverified > 0 {
        let note = counted
            .iter()
            .find_map(|r| r.cache.as_ref().and_then(|c| c.note.clone()))
            .unwrap_or_default();
        warnings.push(format!(
            "{unverified} of {} runs did not start {}: {note}",
            counted.len(),
            cfg.cache.name()
        ));
    } else if let Some(note) = counted
        .iter()
        .find_map(|r| r.cache.as_ref().and_then(|c| c.note.clone()))
    {
        warnings.push(note);
    }
    let rate = summarize(&counted.iter().map(|r| r.mib_per_s()).collect::<Vec<_>>());
    let seconds = summarize(
        &counted
            .iter()
            .map(|r| r.counters.wall.as_secs_f64())
            .collect::<Vec<_>>(),
    );
    if !rate.outliers.is_empty() {
        warnings.push(format!(
            "{} outlier run(s) by median absolute deviation: the machine may be busy; try more --warmup or --repeat",
            rate.outliers.len()
        ));
    }
    Ok(ReadResult {
        host: host_facts(Some(&cfg.path), command_line),
        config: cfg.clone(),
        file_size: src.size,
        bytes: len,
        xor,
        runs,
        rate,
        seconds,
        warnings,
    })
}
