//! `iolab read`: one read method over a file, with warm-up runs, repeats, the cache put into the
//! asked state and verified before every run, and the kernel's counters beside each time.

pub mod report;

use super::host::{Host, host_facts};
use crate::cache::{CacheMode, CacheState};
use crate::engine::{self, EngineOptions, Moved, ReadMethod, Source, Work};
use crate::error::{Error, Result};
use crate::harness::{self, CacheSpec, Cell, CellRuns, Cells, Limits, Observer, Rounds, XorCheck};
use crate::measure::Counters;
use crate::measure::stats::{Summary, summarize};
use crate::workload::{Shape, Workload};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// What `iolab read` measures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
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
    pub rounds: Rounds,
    /// What each block is used for: XOR (the default), or `copy` (moved into a buffer and not
    /// used, as fio's reads are; the XOR then checks nothing).
    #[serde(default)]
    pub work: Work,
}

/// One run, counted or warm-up.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
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

/// Warm-up and counted runs, and the statistics of the counted ones (flattened into results).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
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
    /// The runs of one cell as the harness measured them (warm-ups first, marked), and the
    /// statistics of the counted ones.
    pub fn of<E>(cell: CellRuns<E>) -> Runs {
        let record = |warmup: bool| {
            move |r: harness::CellRun<E>| RunRecord {
                warmup,
                counters: r.counters,
                moved: r.moved,
                cache: r.cache,
            }
        };
        let runs: Vec<RunRecord> = (cell.warmups.into_iter().map(record(true)))
            .chain(cell.runs.into_iter().map(record(false)))
            .collect();
        let counted = || runs.iter().filter(|r| !r.warmup);
        let rate = summarize(&counted().map(|r| r.mib_per_s()).collect::<Vec<_>>());
        let seconds = summarize(
            &counted()
                .map(|r| r.counters.wall.as_secs_f64())
                .collect::<Vec<_>>(),
        );
        Runs {
            runs,
            rate,
            seconds,
        }
    }

    /// The XOR the runs moved (the harness made them agree).
    pub fn xor(&self) -> u32 {
        self.runs.first().map_or(0, |r| r.moved.xor)
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
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
    #[schemars(with = "String")]
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

/// `iolab read`'s one cell: a method over the file's first `len` bytes in the asked state.
struct ReadCell<'a> {
    cfg: &'a ReadConfig,
    src: &'a Source,
    w: Workload,
    opts: EngineOptions,
}

impl Cells for ReadCell<'_> {
    type Extra = ();
    fn count(&self) -> usize {
        1
    }
    fn name(&self, _: usize) -> String {
        self.cfg.method.name().to_string()
    }
    fn cell(&self, _: usize) -> Cell<'_> {
        Cell {
            cache: Some(CacheSpec::file(
                self.src,
                self.w.len,
                self.cfg.cache,
                self.cfg.drop_all,
            )),
            work: harness::CellWork::Read {
                method: self.cfg.method,
                src: self.src,
                workload: self.w,
                opts: self.opts,
                limits: Limits::default(),
            },
            xor: Some(XorCheck::group(0)),
        }
    }
}

/// Reads the file `repeat` times after `warmup` runs, the cache prepared and verified before each.
pub fn run_read(cfg: &ReadConfig, command_line: &str, obs: &dyn Observer) -> Result<ReadResult> {
    cfg.shape.check()?;
    cfg.rounds.check()?;
    let src = engine::open_source(&cfg.path)?;
    let (len, mut warnings) = resolve_len(cfg.bs, cfg.len, src.size)?;
    let mut cell = ReadCell {
        cfg,
        src: &src,
        w: cfg.shape.workload(cfg.bs, len),
        opts: EngineOptions {
            work: cfg.work,
            ..EngineOptions::of_shape(&cfg.shape)
        },
    };
    // The harness puts the cache into the asked state and verifies it before every run.
    let measured =
        harness::run("read", &mut cell, &cfg.rounds, &[], obs).map_err(|e| e.at(&src.path))?;
    let runs = Runs::of(measured.into_single()?);
    let xor = runs.xor();
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
