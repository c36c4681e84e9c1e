//! `iolab write`: one write method and sync mode, with warm-up runs and repeats; each run starts
//! from an empty file, and the result is read back and checked against the XOR written.

pub mod report;

use super::host::{Host, host_facts};
use super::read::Runs;
use crate::engine;
use crate::engine::write::{SyncMode, WriteMethod, WriteTarget, open_target};
use crate::error::{Error, Result};
use crate::harness::{self, Cell, Cells, Observer, ReadBack, Rounds, XorCheck};
use crate::workload::{Shape, Workload};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// What `iolab write` measures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct WriteConfig {
    /// The file to write.
    pub path: PathBuf,
    /// The write method.
    pub method: WriteMethod,
    /// Block size in bytes.
    pub bs: u64,
    /// Bytes to move.
    pub len: u64,
    /// Order, seed, threads and depth.
    #[serde(flatten)]
    pub shape: Shape,
    /// Durability.
    pub sync: SyncMode,
    /// Replace an existing file.
    pub force: bool,
    /// Warm-up and counted runs.
    #[serde(flatten)]
    pub rounds: Rounds,
}

/// What `iolab write` found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct WriteResult {
    /// The machine it ran on.
    pub host: Host,
    /// What was asked.
    pub config: WriteConfig,
    /// Bytes written per run.
    pub bytes: u64,
    /// XOR of the bytes written.
    #[serde(with = "crate::xor::hex")]
    #[schemars(with = "String")]
    pub xor: u32,
    /// The file read back after the last run had the XOR that was written.
    pub verified: bool,
    /// The runs and their statistics.
    #[serde(flatten)]
    pub runs: Runs,
    /// What the user should know about these figures.
    pub warnings: Vec<String>,
}

/// Checks a write request: block size, size, threads.
pub fn check_write(cfg: &WriteConfig) -> Result<()> {
    if cfg.bs == 0 {
        return Err(
            Error::usage("invalid block size", "it must be at least 1 byte").hint("e.g. --bs 1M"),
        );
    }
    if cfg.len == 0 {
        return Err(
            Error::usage("invalid size", "it must be at least 1 byte").hint("e.g. --size 256M")
        );
    }
    cfg.shape.check()?;
    cfg.rounds.check()?;
    Ok(())
}

/// `iolab write`'s one cell: the method and sync mode into the target, every run the same
/// data (their XORs agree), the last run's file read back.
struct WriteCell<'a> {
    cfg: &'a WriteConfig,
    target: &'a WriteTarget,
    w: Workload,
}

impl Cells for WriteCell<'_> {
    type Extra = ();
    fn count(&self) -> usize {
        1
    }
    fn name(&self, _: usize) -> String {
        format!("{} sync {}", self.cfg.method.name(), self.cfg.sync.name())
    }
    fn cell(&self, _: usize) -> Cell<'_> {
        Cell {
            cache: None,
            work: harness::CellWork::Write {
                method: self.cfg.method,
                target: self.target,
                workload: self.w,
                sync: self.cfg.sync,
                read_back: ReadBack::Last,
            },
            xor: Some(XorCheck::group(0)),
        }
    }
}

/// Writes the file `repeat` times after `warmup` runs, then reads it back to verify.
pub fn run_write(cfg: &WriteConfig, command_line: &str, obs: &dyn Observer) -> Result<WriteResult> {
    check_write(cfg)?;
    let target = open_target(&cfg.path, cfg.force)?;
    // On failure the target is dropped uncommitted, which removes the partial output.
    let result = write_runs(cfg, &target, command_line, obs)?;
    target.commit()?;
    Ok(result)
}

fn write_runs(
    cfg: &WriteConfig,
    target: &engine::write::WriteTarget,
    command_line: &str,
    obs: &dyn Observer,
) -> Result<WriteResult> {
    target.check_space(cfg.len)?;
    let mut cell = WriteCell {
        cfg,
        target,
        w: cfg.shape.workload(cfg.bs, cfg.len),
    };
    // The harness reads back what the last run left (outside any timing): its XOR must be the
    // one the data's definition gives, computed without the write path.
    let measured =
        harness::run("write", &mut cell, &cfg.rounds, &[], obs).map_err(|e| e.at(&cfg.path))?;
    let runs = Runs::of(measured.into_single()?);
    let xor = runs.xor();
    let mut warnings = Vec::new();
    if cfg.sync == SyncMode::None {
        warnings.push(
            "--sync none: times include only copying into the page cache, not reaching the device"
                .into(),
        );
    }
    warnings.extend(runs.outlier_warning());
    Ok(WriteResult {
        host: host_facts(Some(&cfg.path), command_line),
        config: cfg.clone(),
        bytes: cfg.len,
        xor,
        verified: true,
        runs,
        warnings,
    })
}
