//! `iolab advise FILE`: which method for this file and access pattern, measured here.

use super::Ctx;
use super::args::{self, OutputArgs};
use clap::Args;
use iolab::Error;
use iolab::experiments::advise::run_advise;
use iolab::report;
use iolab::workload::Pattern;
use std::path::PathBuf;

/// Which method for this file and access pattern, here: measured, warm and cold.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  iolab advise big.bin --pattern random --bs 4K\n  iolab advise big.bin --pattern seq --bs 1M --threads 2\n  iolab advise big.bin --budget 10s"
)]
pub struct AdviseArgs {
    /// A regular file
    pub file: PathBuf,
    /// Access pattern
    #[arg(long, value_enum, default_value_t = Pattern::Random)]
    pub pattern: Pattern,
    /// Block size
    #[arg(long, default_value = "4K", value_parser = args::size)]
    pub bs: u64,
    /// Threads
    #[arg(long, default_value = "1", value_parser = args::threads)]
    pub threads: usize,
    // Rounds: every method is compared with the others, warm and cold.
    #[command(flatten)]
    pub rounds: super::rounds::RoundArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

impl AdviseArgs {
    /// Runs it and prints the measured advice.
    pub fn run(self, ctx: &Ctx) -> Result<(), Error> {
        let r = run_advise(
            &self.file,
            self.pattern,
            self.bs,
            self.threads,
            self.rounds.rounds("advise"),
            &ctx.command_line,
            &ctx.progress,
        )?;
        let format = self.output.format;
        ctx.show(&self.output, &r.measured.warnings, &r, || {
            iolab::experiments::advise::advise_document(&r)
        })?;
        // CSV carries the rows alone; the answer in words goes beside it, on stderr.
        if format == report::Format::Csv {
            super::talk(iolab::experiments::advise::advice_lines(&r).trim_end());
        }
        Ok(())
    }
}
