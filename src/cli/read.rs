//! `iolab read FILE`: one read method, repeated, with statistics and kernel counters.

use super::args::{self, CacheArgs, OutputArgs, WorkloadArgs};
use super::rounds::RoundArgs;
use super::{Ctx, usage};
use clap::Args;
use iolab::Error;
use iolab::cache::CacheMode;
use iolab::engine::{ReadMethod, Work};
use iolab::experiments::read::{ReadConfig, run_read};
use iolab::workload::Shape;
use std::path::PathBuf;

/// Read a file with one method, repeated, with statistics and kernel counters.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  iolab read big.bin --method mmap --cache warm --repeat 5\n  iolab read big.bin --method pread --bs 4K --pattern random --size 256M\n  iolab read big.bin --method uring-direct --depth 32 --cache cold --format json\n  iolab read big.bin --method uncached --cache cold   # leaves the file out of the cache\n  iolab read big.bin --method pread-nowait            # counts blocks the cache missed"
)]
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
    /// What each block is used for: xor every 32-bit word, or copy (moved into a buffer and
    /// not used, as fio's reads are; a mapping is copied out of)
    #[arg(long, value_enum, default_value_t = Work::Xor)]
    pub work: Work,
    /// io_uring methods: a kernel thread polls the submission queue (IORING_SETUP_SQPOLL), so
    /// queuing a read is no system call; the thread spends a core while reads flow
    #[arg(long)]
    pub sqpoll: bool,
    #[command(flatten)]
    pub cache: CacheArgs,
    #[command(flatten)]
    pub rounds: RoundArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

impl ReadArgs {
    fn config(&self) -> Result<ReadConfig, String> {
        let len = args::byte_len(self.bs, self.count, self.size)?;
        if self.sqpoll && !self.method.uses_depth() {
            return Err(format!(
                "--sqpoll applies to the io_uring methods (uring, uring-direct, uring-uncached), not {}",
                self.method.name()
            ));
        }
        Ok(ReadConfig {
            path: self.file.clone(),
            method: self.method,
            bs: self.bs,
            len,
            shape: Shape {
                sqpoll: self.sqpoll,
                ..self.workload.shape()
            },
            cache: self.cache.cache.unwrap_or(CacheMode::Warm),
            drop_all: self.cache.drop_all,
            rounds: self.rounds.rounds("read"),
            work: self.work,
        })
    }

    /// Runs it and prints the runs and their summary.
    pub fn run(self, ctx: &Ctx) -> Result<(), Error> {
        let cfg = self.config().map_err(usage)?;
        let r = run_read(&cfg, &ctx.command_line, &ctx.progress)?;
        ctx.show(&self.output, &r.warnings, &r, || {
            iolab::experiments::read::report::read_document(&r)
        })
    }
}
