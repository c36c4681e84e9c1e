//! `iolab run FILE -r|-w BLOCK_SIZE BLOCK_COUNT`: the classic course program.

use super::Ctx;
use super::args::{self, CacheArgs, OutputArgs, WorkloadArgs};
use super::usage;
use clap::Args;
use iolab::Error;
use iolab::cache::CacheMode;
use iolab::engine::ReadMethod;
use iolab::engine::write::{SyncMode, WriteMethod};
use iolab::experiments::run::{RunConfig, RunOp, run_classic};

use std::path::PathBuf;

/// The classic program: read or write BLOCK_COUNT blocks of BLOCK_SIZE, print time, rate, XOR.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  iolab run big.bin -r 4K 262144\n  iolab run out.bin -w 1M 1024 --sync end\n  iolab run big.bin -r 1M 2048 --method mmap --cache cold"
)]
#[command(group(clap::ArgGroup::new("op").required(true).args(["read", "write"])))]
pub struct RunArgs {
    /// The file to read, or to write (created; an existing one needs --force)
    pub file: PathBuf,
    /// Read the file
    #[arg(short = 'r')]
    pub read: bool,
    /// Write the file (needs --force if it exists)
    #[arg(short = 'w')]
    pub write: bool,
    /// Block size: 4096, 4K, 1MiB, 4KB (1000-based)...
    #[arg(value_parser = args::size, allow_hyphen_values = true)]
    pub block_size: u64,
    /// Number of blocks
    #[arg(value_parser = args::count, allow_hyphen_values = true)]
    pub block_count: u64,
    /// Read method (default read) or write method (default write)
    #[arg(long)]
    pub method: Option<String>,
    #[command(flatten)]
    pub workload: WorkloadArgs,
    #[command(flatten)]
    pub cache: CacheArgs,
    /// Durability of writes
    #[arg(long, value_enum, default_value_t = SyncMode::None)]
    pub sync: SyncMode,
    /// Overwrite an existing file with -w
    #[arg(long)]
    pub force: bool,
    #[command(flatten)]
    pub output: OutputArgs,
}

impl RunArgs {
    fn config(&self) -> Result<RunConfig, String> {
        let op = if self.read { RunOp::Read } else { RunOp::Write };
        let (mut read_method, mut write_method) = (ReadMethod::Read, WriteMethod::Write);
        if let Some(m) = &self.method {
            match op {
                RunOp::Read => read_method = m.parse()?,
                RunOp::Write => write_method = m.parse()?,
            }
        }
        Ok(RunConfig {
            path: self.file.clone(),
            op,
            bs: self.block_size,
            count: self.block_count,
            read_method,
            write_method,
            shape: self.workload.shape(),
            cache: self.cache.cache.unwrap_or(CacheMode::Asis),
            drop_all: self.cache.drop_all,
            sync: self.sync,
            force: self.force,
        })
    }

    /// Runs it and prints the classic lines (or JSON).
    pub fn run(self, ctx: &Ctx) -> Result<(), Error> {
        let cfg = self.config().map_err(usage)?;
        let r = run_classic(&cfg)?;
        ctx.show(&self.output, &r.notes, &r, || {
            iolab::experiments::run::report::run_document(&r)
        })
    }
}
