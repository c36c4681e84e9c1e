//! `iolab write FILE`: one write method and sync mode, repeated, then read back and verified.

use super::args::{self, OutputArgs, WorkloadArgs};
use super::{Ctx, out, usage, warn_all};
use clap::Args;
use iolab::Error;
use iolab::engine::write::{SyncMode, WriteMethod};
use iolab::experiments::write::{WriteConfig, run_write};
use iolab::report;
use std::path::PathBuf;

/// `iolab write`.
#[derive(Debug, Args)]
pub struct WriteArgs {
    /// The file to write (created; an existing one needs --force)
    pub file: PathBuf,
    /// Write method
    #[arg(long, value_enum, default_value_t = WriteMethod::Write)]
    pub method: WriteMethod,
    /// Block size
    #[arg(long, default_value = "1M", value_parser = args::size)]
    pub bs: u64,
    /// Blocks to write
    #[arg(long, value_parser = args::count, conflicts_with = "size", required_unless_present = "size")]
    pub count: Option<u64>,
    /// Bytes to write
    #[arg(long, value_parser = args::size)]
    pub size: Option<u64>,
    /// Durability
    #[arg(long, value_enum, default_value_t = SyncMode::None)]
    pub sync: SyncMode,
    #[command(flatten)]
    pub workload: WorkloadArgs,
    /// Overwrite an existing file
    #[arg(long)]
    pub force: bool,
    /// Counted runs
    #[arg(long, default_value = "3", value_parser = args::positive)]
    pub repeat: usize,
    /// Uncounted runs first
    #[arg(long, default_value_t = 0)]
    pub warmup: usize,
    #[command(flatten)]
    pub output: OutputArgs,
}

impl WriteArgs {
    fn config(&self) -> Result<WriteConfig, String> {
        let len = match (self.count, self.size) {
            (Some(c), _) => self
                .bs
                .checked_mul(c)
                .ok_or_else(|| format!("--bs {} x --count {c} does not fit in 64 bits", self.bs))?,
            (None, Some(s)) => s,
            (None, None) => return Err("give --size or --count".into()),
        };
        Ok(WriteConfig {
            path: self.file.clone(),
            method: self.method,
            bs: self.bs,
            len,
            pattern: self.workload.pattern,
            seed: self.workload.seed,
            threads: self.workload.engine.threads,
            sync: self.sync,
            force: self.force,
            repeat: self.repeat,
            warmup: self.warmup,
        })
    }

    /// Runs it and prints the runs, their summary and the verification.
    pub fn run(self, ctx: &Ctx) -> Result<(), Error> {
        let cfg = self.config().map_err(usage)?;
        let r = run_write(&cfg, &ctx.command_line, &ctx.progress)?;
        warn_all(&r.warnings);
        out(&report::runs::write_report(&r, self.output.format));
        Ok(())
    }
}
