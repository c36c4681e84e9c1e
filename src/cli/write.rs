//! `iolab write FILE`: one write method and sync mode, repeated, then read back and verified.

use super::args::{self, OutputArgs, WorkloadArgs};
use super::rounds::RoundArgs;
use super::{Ctx, usage};
use clap::Args;
use iolab::Error;
use iolab::engine::write::{SyncMode, WriteMethod};
use iolab::experiments::write::{WriteConfig, run_write};
use std::path::PathBuf;

/// Write a file with one method and sync mode, repeated, then read it back to verify.
#[derive(Debug, Args)]
#[group(id = "amount", required = true, multiple = false)]
#[command(
    after_help = "Examples:\n  iolab write out.bin --size 1G --bs 1M --method write --sync end\n  iolab write out.bin --size 256M --method mmap --sync each --force"
)]
pub struct WriteArgs {
    /// The file to write (created; an existing one needs --force)
    pub file: PathBuf,
    /// Write method
    #[arg(long, value_enum, default_value_t = WriteMethod::Write)]
    pub method: WriteMethod,
    /// Block size
    #[arg(long, default_value = "1M", value_parser = args::size)]
    pub bs: u64,
    /// Bytes to write (or --count)
    #[arg(long, value_parser = args::size, group = "amount")]
    pub size: Option<u64>,
    /// Blocks to write (or --size)
    #[arg(long, value_parser = args::count, group = "amount")]
    pub count: Option<u64>,
    /// Durability
    #[arg(long, value_enum, default_value_t = SyncMode::None)]
    pub sync: SyncMode,
    #[command(flatten)]
    pub workload: WorkloadArgs,
    /// Overwrite an existing file
    #[arg(long)]
    pub force: bool,
    #[command(flatten)]
    pub rounds: RoundArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

impl WriteArgs {
    fn config(&self) -> Result<WriteConfig, String> {
        let len = args::byte_len(self.bs, self.count, self.size)?
            .ok_or_else(|| "give --size or --count".to_string())?;
        Ok(WriteConfig {
            path: self.file.clone(),
            method: self.method,
            bs: self.bs,
            len,
            shape: self.workload.shape(),
            sync: self.sync,
            force: self.force,
            rounds: self.rounds.rounds("write"),
        })
    }

    /// Runs it and prints the runs, their summary and the verification.
    pub fn run(self, ctx: &Ctx) -> Result<(), Error> {
        let cfg = self.config().map_err(usage)?;
        let r = run_write(&cfg, &ctx.command_line, &ctx.progress)?;
        ctx.show(&self.output, &r.warnings, &r, || {
            iolab::experiments::write::report::write_document(&r)
        })
    }
}
