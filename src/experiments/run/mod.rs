//! `iolab run FILE -r|-w BLOCK_SIZE BLOCK_COUNT`: the classic course program. One run, timed from
//! open to close as the original was; the harness puts the cache in the asked state (and
//! verifies it) before the clock starts.

use crate::cache::{CacheMode, CacheState};
use crate::engine::write::{SyncMode, WriteMethod, open_target, prepare_write, verify_written};
use crate::engine::{self, EngineOptions, Moved, ReadMethod, Source};
use crate::error::{Error, Result};
use crate::harness::{self, CacheSpec, Cell, CellWork, Cells, Rounds, Silent, Timed, XorCheck};
use crate::measure::{Counters, measure};
use crate::workload::Shape;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

pub mod report;
pub mod suite;

/// Read or write, the classic `-r`/`-w`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum RunOp {
    /// `-r`.
    Read,
    /// `-w`.
    Write,
}

/// What `iolab run` does.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RunConfig {
    /// The file to read or write.
    pub path: PathBuf,
    /// Read or write.
    pub op: RunOp,
    /// Block size in bytes.
    pub bs: u64,
    /// Blocks to move.
    pub count: u64,
    /// The method for `-r`.
    pub read_method: ReadMethod,
    /// The method for `-w`.
    pub write_method: WriteMethod,
    /// Order, seed, threads and depth.
    #[serde(flatten)]
    pub shape: Shape,
    /// The cache state before a read.
    pub cache: CacheMode,
    /// With a cold cache, as root: also drop every clean cache (drop_caches).
    pub drop_all: bool,
    /// Durability of writes.
    pub sync: SyncMode,
    /// Replace an existing file with `-w`.
    pub force: bool,
}

/// What `iolab run` did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ClassicResult {
    /// The file read or written.
    #[serde(default)]
    pub path: PathBuf,
    /// Block size in bytes.
    #[serde(default)]
    pub bs: u64,
    /// Read or write.
    pub op: RunOp,
    /// The method used, by name.
    pub method: String,
    /// Blocks moved (the last may be partial).
    pub blocks: u64,
    /// Bytes moved.
    pub bytes: u64,
    /// `bs * count`, what was asked.
    pub asked_bytes: u64,
    /// XOR of the bytes as little-endian u32 words (see [`crate::xor`]).
    #[serde(with = "crate::xor::hex")]
    #[schemars(with = "String")]
    pub xor: u32,
    /// Counters from open to close.
    pub counters: Counters,
    /// The cache state before a read.
    pub cache: Option<CacheState>,
    /// What the user should know about this result.
    pub notes: Vec<String>,
}

impl ClassicResult {
    /// Wall seconds from open to close.
    pub fn seconds(&self) -> f64 {
        self.counters.wall.as_secs_f64()
    }
}

/// `bs * count`, refusing zero and overflow.
pub fn asked_bytes(bs: u64, count: u64) -> Result<u64> {
    if bs == 0 {
        return Err(Error::usage(
            "invalid block size",
            "it must be at least 1 byte",
        ));
    }
    if count == 0 {
        return Err(Error::usage("invalid block count", "it must be at least 1"));
    }
    bs.checked_mul(count).ok_or_else(|| {
        Error::usage(
            "invalid block count",
            format!("{bs} x {count} bytes does not fit in 64 bits"),
        )
    })
}

/// Runs the classic program once, timed from open to close.
pub fn run_classic(cfg: &RunConfig) -> Result<ClassicResult> {
    let mut runs = run_classic_times(cfg, 1)?;
    runs.pop()
        .ok_or_else(|| Error::failed("run", "the harness made no run"))
}

/// Runs the classic program `n` times through the harness (the cache put in its state and
/// verified before each read; every run's XOR the same).
pub fn run_classic_times(cfg: &RunConfig, n: usize) -> Result<Vec<ClassicResult>> {
    cfg.shape.check()?;
    let asked = asked_bytes(cfg.bs, cfg.count)?;
    let src = match cfg.op {
        RunOp::Read => Some(engine::open_source(&cfg.path)?),
        RunOp::Write => None,
    };
    let mut cell = ClassicCell { cfg, asked, src };
    let runs = harness::run("run", &mut cell, &Rounds::fixed(n, 0), &[], &Silent)?
        .into_single()?
        .runs;
    Ok(runs
        .into_iter()
        .filter_map(|r| {
            let mut c = r.extra?;
            if let Some(note) = r.cache.as_ref().and_then(|s| s.note.clone()) {
                c.notes.push(note);
            }
            c.cache = r.cache;
            Some(c)
        })
        .collect())
}

/// The classic program as the harness's one cell.
struct ClassicCell<'a> {
    cfg: &'a RunConfig,
    asked: u64,
    /// The file a read reads (its cache state is prepared through it).
    src: Option<Source>,
}

impl Cells for ClassicCell<'_> {
    type Extra = Option<ClassicResult>;
    fn count(&self) -> usize {
        1
    }
    fn name(&self, _: usize) -> String {
        format!("run {}", crate::shown::path(&self.cfg.path))
    }
    fn cell(&self, _: usize) -> Cell<'_> {
        Cell {
            cache: self.src.as_ref().map(|src| {
                let len = self.asked.min(src.size);
                CacheSpec::file(src, len, self.cfg.cache, self.cfg.drop_all)
            }),
            work: CellWork::Own,
            xor: Some(XorCheck::group(0)),
        }
    }
    /// Timed from open to close, as the course program was.
    fn own(&mut self, _: usize) -> Result<Timed<Self::Extra>> {
        let r = match self.cfg.op {
            RunOp::Read => classic_read(self.cfg, self.asked)?,
            RunOp::Write => classic_write(self.cfg, self.asked)?,
        };
        Ok(Timed {
            moved: Moved {
                bytes: r.bytes,
                xor: r.xor,
                ..Moved::default()
            },
            counters: r.counters,
            extra: Some(r),
        })
    }
}

fn classic_read(cfg: &RunConfig, asked: u64) -> Result<ClassicResult> {
    let size = engine::open_source(&cfg.path)?.size;
    let len = asked.min(size);
    let mut notes = Vec::new();
    if len < asked {
        notes.push(format!(
            "the file is shorter than asked: read it to its end, {len} of {asked} bytes"
        ));
    }
    let w = cfg.shape.workload(cfg.bs, len);
    // The course program gave the kernel no access hint: neither does its imitation.
    let opts = EngineOptions {
        file_hint: false,
        prefetch: false,
        ..EngineOptions::with_depth(cfg.shape.depth)
    };
    let (moved, counters) = measure(|| -> Result<Moved> {
        let src = engine::open_source(&cfg.path)?;
        engine::read_all(cfg.read_method, &src, &w, &opts)
    });
    let moved = moved?;
    Ok(ClassicResult {
        path: cfg.path.clone(),
        bs: cfg.bs,
        op: RunOp::Read,
        method: cfg.read_method.name().into(),
        blocks: w.blocks(),
        bytes: moved.bytes,
        asked_bytes: asked,
        xor: moved.xor,
        counters,
        cache: None,
        notes,
    })
}

fn classic_write(cfg: &RunConfig, asked: u64) -> Result<ClassicResult> {
    let w = cfg.shape.workload(cfg.bs, asked);
    let (moved, counters) = measure(|| -> Result<Moved> {
        let target = open_target(&cfg.path, cfg.force)?;
        target.check_space(asked)?;
        let moved = prepare_write(cfg.write_method, &target, &w, cfg.sync).and_then(|p| p.run())?;
        target.commit()?;
        Ok(moved)
    });
    let moved = moved?;
    // Outside the timed window, as the course program did not: read the file back and check it
    // holds exactly the data written.
    verify_written(&cfg.path, &w, moved.xor)?;
    Ok(ClassicResult {
        path: cfg.path.clone(),
        bs: cfg.bs,
        op: RunOp::Write,
        method: format!("{} (sync {})", cfg.write_method.name(), cfg.sync.name()),
        blocks: w.blocks(),
        bytes: moved.bytes,
        asked_bytes: asked,
        xor: moved.xor,
        counters,
        cache: None,
        notes: Vec::new(),
    })
}
