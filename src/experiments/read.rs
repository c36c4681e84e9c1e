//! `iolab read`: one read method over a file, with warm-up runs, repeats, the cache put into the
//! asked state and verified before every run, and the kernel's counters beside each time.

use super::Observer;
use super::host::{Host, host_facts};
use crate::cache::{self, CacheMode, CacheState};
use crate::engine::{self, Moved, ReadMethod, Work};
use crate::error::{Error, Result};
use crate::measure::stats::{Summary, summarize};
use crate::measure::{Counters, measure};
use crate::workload::Shape;
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
    /// Order, seed, threads and depth.
    #[serde(flatten)]
    pub shape: Shape,
    /// The page-cache state asked for before each run.
    pub cache: CacheMode,
    /// With a cold cache, as root: also drop every clean cache (drop_caches).
    pub drop_all: bool,
    /// Warm-up and counted runs.
    #[serde(flatten)]
    pub runs: Repeats,
    /// What each block is used for: XOR (the default), or `copy` (moved into a buffer and not
    /// used, as fio's reads are; the XOR then checks nothing).
    #[serde(default)]
    pub work: Work,
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

/// How many runs: `warmup` uncounted ones first, then `repeat` counted ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Repeats {
    /// Counted runs (at least 1).
    pub repeat: usize,
    /// Uncounted runs first.
    pub warmup: usize,
}

impl Repeats {
    /// Refuses zero counted runs.
    pub fn check(&self) -> Result<()> {
        if self.repeat == 0 {
            return Err(Error::usage(
                "invalid repeat count",
                "--repeat must be at least 1",
            ));
        }
        Ok(())
    }
}

/// Warm-up and counted runs, and the statistics of the counted ones (flattened into results).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Runs {
    /// Counted runs then warm-ups are marked; statistics use counted runs only.
    pub runs: Vec<RunRecord>,
    /// MiB/s over the counted runs.
    #[serde(rename = "mib_s", alias = "rate")]
    pub rate: Summary,
    /// Seconds over the counted runs.
    pub seconds: Summary,
}

impl Runs {
    /// Runs `one` `warmup` times uncounted, then `repeat` times counted, reporting progress as
    /// `what`; then summarises the counted runs.
    pub fn measure(
        Repeats { repeat, warmup }: Repeats,
        what: &str,
        obs: &dyn Observer,
        mut one: impl FnMut() -> Result<(Moved, Counters, Option<CacheState>)>,
    ) -> Result<Runs> {
        let runs: Vec<RunRecord> = crate::harness::repeat(what, warmup, repeat, obs, || {
            let (moved, counters, cache) = one()?;
            Ok(RunRecord {
                warmup: false,
                counters,
                moved,
                cache,
            })
        })?
        .into_iter()
        .enumerate()
        .map(|(i, r)| RunRecord {
            warmup: i < warmup,
            ..r
        })
        .collect();
        let counted = || runs.iter().filter(|r| !r.warmup);
        let rate = summarize(&counted().map(|r| r.mib_per_s()).collect::<Vec<_>>());
        let seconds = summarize(
            &counted()
                .map(|r| r.counters.wall.as_secs_f64())
                .collect::<Vec<_>>(),
        );
        Ok(Runs {
            runs,
            rate,
            seconds,
        })
    }

    /// The XOR every run moved, or `mismatch(first, other)` as the error when they differ.
    pub fn same_xor(&self, mismatch: impl FnOnce(u32, u32) -> Error) -> Result<u32> {
        let xor = self.runs.first().map_or(0, |r| r.moved.xor);
        match self.runs.iter().find(|r| r.moved.xor != xor) {
            Some(bad) => Err(mismatch(xor, bad.moved.xor)),
            None => Ok(xor),
        }
    }

    /// The counted runs.
    pub fn counted(&self) -> impl Iterator<Item = &RunRecord> {
        self.runs.iter().filter(|r| !r.warmup)
    }

    /// The warning to give when the rates have outliers.
    pub fn outlier_warning(&self) -> Option<String> {
        (!self.rate.outliers.is_empty()).then(|| {
            format!(
                "{} outlier run(s) by median absolute deviation: the machine may be busy; try more --warmup or --repeat",
                self.rate.outliers.len()
            )
        })
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
    #[serde(with = "crate::xor::hex")]
    pub xor: u32,
    /// The runs and their statistics.
    #[serde(flatten)]
    pub runs: Runs,
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

impl ReadConfig {
    /// Counted runs by default.
    pub const DEFAULT_REPEAT: usize = 5;
    /// Uncounted runs first by default.
    pub const DEFAULT_WARMUP: usize = 1;
}

/// Reads the file `repeat` times after `warmup` runs, the cache prepared and verified before each.
pub fn run_read(cfg: &ReadConfig, command_line: &str, obs: &dyn Observer) -> Result<ReadResult> {
    cfg.shape.check()?;
    cfg.runs.check()?;
    let src = engine::open_source(&cfg.path)?;
    let (len, mut warnings) = resolve_len(cfg.bs, cfg.len, src.size)?;
    let w = cfg.shape.workload(cfg.bs, len);
    let opts = engine::EngineOptions {
        work: cfg.work,
        ..cfg.shape.engine_options()
    };
    let runs = Runs::measure(cfg.runs, "read", obs, || {
        // Cache state is established and verified right before each run, outside the timing.
        let mut state = cache::prepare(&src.file, len, &src.path, cfg.cache, cfg.drop_all)?;
        let prepared = engine::prepare(cfg.method, &src, &w, &opts)?;
        let (moved, counters) = measure(|| prepared.run());
        let moved = moved?;
        state.judge_by_device(moved.bytes, counters.device_read_bytes);
        Ok((moved, counters, Some(state)))
    })?;
    let x = crate::xor::format_xor;
    let xor = runs.same_xor(|a, b| {
        let why = format!(
            "runs disagree ({} vs {}): the file changed while measuring",
            x(a),
            x(b)
        );
        Error::failed("checksum mismatch", why).at(&src.path)
    })?;
    let note = || runs.counted().find_map(|r| r.cache.as_ref()?.note.clone());
    let unverified = runs
        .counted()
        .filter(|r| r.cache.as_ref().is_some_and(|c| !c.verified))
        .count();
    if unverified > 0 {
        warnings.push(format!(
            "{unverified} of {} runs did not start {}: {}",
            runs.counted().count(),
            cfg.cache.name(),
            note().unwrap_or_default()
        ));
    } else if let Some(note) = note() {
        warnings.push(note);
    }
    warnings.extend(runs.outlier_warning());
    if cfg.work != Work::Xor {
        warnings.push(format!(
            "--work {}: the bytes were not used, so the XOR printed checks nothing",
            cfg.work.name()
        ));
    }
    Ok(ReadResult {
        host: host_facts(Some(&cfg.path), command_line),
        config: cfg.clone(),
        file_size: src.size,
        bytes: len,
        xor,
        runs,
        warnings,
    })
}
