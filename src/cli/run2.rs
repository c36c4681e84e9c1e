//! `iolab run2 FILE BLOCK_SIZE` (`calibrate`): a block count whose read takes 5-15 s.

use super::args::{self, CacheArgs, OutputArgs};
use super::{Ctx, usage};
use clap::Args;
use iolab::Error;
use iolab::cache::CacheMode;
use iolab::engine::ReadMethod;
use iolab::experiments::run2::{Run2Config, run_run2};

use std::path::PathBuf;
use std::time::Duration;

/// Find a block count whose read takes 5-15 s (the classic run2), or predict the file size.
#[derive(Debug, Args)]
#[command(
    visible_alias = "calibrate",
    after_help = "Examples:\n  iolab run2 big.bin 4096\n  iolab calibrate big.bin 1M --target 1s..3s --cache cold"
)]
pub struct Run2Args {
    /// A regular file to read
    pub file: PathBuf,
    /// Block size: 4096, 4K, 1MiB...
    #[arg(value_parser = args::size, allow_hyphen_values = true)]
    pub block_size: u64,
    /// The time window one read should take
    #[arg(long, default_value = "5s..15s", value_parser = args::window)]
    pub target: (Duration, Duration),
    /// Read method
    #[arg(long, value_enum, default_value_t = ReadMethod::Read)]
    pub method: ReadMethod,
    /// Threads, each with its own part
    #[arg(long, default_value = "1", value_parser = args::threads)]
    pub threads: usize,
    #[command(flatten)]
    pub cache: CacheArgs,
    /// Output on stdout: the classic lines (text) or JSON with every step
    #[command(flatten)]
    pub output: OutputArgs,
}

impl Run2Args {
    /// Runs it and prints the classic lines (or JSON with every step).
    pub fn run(self, ctx: &Ctx) -> Result<(), Error> {
        if self.block_size == 0 {
            return Err(usage(
                "invalid block size: it must be at least 1 byte".into(),
            ));
        }
        let cfg = Run2Config {
            path: self.file,
            bs: self.block_size,
            min: self.target.0,
            max: self.target.1,
            method: self.method,
            threads: self.threads,
            cache: self.cache.cache.unwrap_or(CacheMode::Asis),
            drop_all: self.cache.drop_all,
        };
        let r = run_run2(&cfg, &ctx.progress)?;
        ctx.emit(&self.output, &r, || {
            iolab::experiments::run2::report::run2_document(&r)
        })
    }
}
