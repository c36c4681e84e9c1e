//! `iolab read FILE`: one read method, repeated, with statistics and kernel counters.

use super::args::{self, CacheArgs, OutputArgs, WorkloadArgs};
use super::{Ctx, out, usage, warn_all};
use clap::Args;
use iolab::Error;
use iolab::cache::CacheMode;
use iolab::engine::ReadMethod;
use iolab::experiments::read::{ReadConfig, run_read};
use iolab::report;
use std::path::PathBuf;

/// `iolab read`.
#[derive(Debug, Args)]
pub struct ReadArgs {
    /// A regular file to read
    pub file: PathBuf,
    /// Read method
    #[arg(long, value_enum, default_value_t = ReadMethod::Read)]
    pub method: ReadMethod,
    /// Block size
    #[arg(long, default_value = "1M", value_parser = args::size)]
    pub bs: u64,
    /// Blocks to read (default: the whole file)
    #[arg(long, value_parser = args::count, conflicts_with = "size")]
    pub count: Option<u64>,
    /// Bytes to read from the start (default: the whole file)
    #[arg(long, value_parser = args::size)]
    pub size: Option<u64>,
    #[command(flatten)]
    pub workload: WorkloadArgs,
    #[command(flatten)]
    pub cache: CacheArgs,
    /// Counted runs
    #[arg(long, default_value = "5", value_parser = args::positive)]
    pub repeat: usize,
    /// Uncounted runs first
    #[arg(long, default_value_t = 1)]
    pub warmup: usize,
    #[command(flatten)]
    pub output: OutputArgs,
}

impl ReadArgs {
    fn config(&self) -> Result<ReadConfig, String> {
        let len = match (self.count, self.size) {
            (Some(c), _) => Some(self.bs.checked_mul(c).ok_or_else(|| {
                format!("--bs {} x --count {c} does not fit in 64 bits", self.bs)
            })?),
            (None, s) => s,
        };
        Ok(ReadConfig {
            path: self.file.clone(),
            method: self.method,
            bs: self.bs,
            len,
            pattern: self.workload.pattern,
            seed: self.workload.seed,
            threads: self.workload.engine.threads,
            depth: self.workload.engine.depth,
            cache: self.cache.cache.unwrap_or(CacheMode::Warm),
            drop_all: self.cache.drop_all,
            repeat: self.repeat,
            warmup: self.warmup,
        })
    }

    /// Runs it and prints the runs and their summary.
    pub fn run(self, ctx: &Ctx) -> Result<(), Error> {
        let cfg = self.config().map_err(usage)?;
        let r = run_read(&cfg, &ctx.command_line, &ctx.progress)?;
        warn_all(&r.warnings);
        out(&report::runs::read_report(&r, self.output.format));
        Ok(())
    }
}
