//! `iolab syscalls [FILE]`: what one system call costs here.

use super::Ctx;
use super::args::OutputArgs;
use clap::Args;
use iolab::Error;
use iolab::experiments::syscalls::report;
use iolab::experiments::syscalls::run_syscalls;
use std::path::PathBuf;

/// What one system call costs here: null call, 1-byte read/pread, lseek, fstat, mmap, a minor
/// fault, an io_uring NOP.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  iolab syscalls\n  iolab syscalls big.bin --repeat 9 --format json\n\nWithout FILE a 1 MiB scratch file is made in the temporary directory and removed."
)]
pub struct SyscallsArgs {
    /// A file to read 1-byte pieces of (default: a 1 MiB scratch file)
    pub file: Option<PathBuf>,
    // Rounds: a round times each call once (a sample of at least 20 ms); `--samples` is
    // `--repeat`'s older name.
    #[command(flatten)]
    pub rounds: super::rounds::RoundArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

impl SyscallsArgs {
    /// Runs it and prints ns per call.
    pub fn run(self, ctx: &Ctx) -> Result<(), Error> {
        let r = run_syscalls(
            self.file.as_deref(),
            &self.rounds.rounds("syscalls"),
            &ctx.command_line,
            &ctx.progress,
        )?;
        ctx.emit(&self.output, &r, || report::syscalls_document(&r))
    }
}
