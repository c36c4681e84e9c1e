//! `iolab transfer FILES`: every sender x receiver pair over loopback, repeated.

use super::Ctx;
use super::args::{self, FileList, OutputArgs};
use clap::Args;
use iolab::Error;
use iolab::experiments::transfer::report;
use iolab::experiments::transfer::{TransferConfig, all_pairs, run_transfer};
use iolab::transfer::{RecvMethod, SendMethod};

/// Every sender x receiver method pair over loopback, repeated: the matrix.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  iolab transfer big.bin small*.txt\n  iolab transfer big.bin --methods read:write,mmap:mmap,sendfile:splice --repeat 5\n  iolab transfer notes.txt --methods fcntl:fcntl,mmap:mmap --classic-sizes"
)]
pub struct TransferArgs {
    #[command(flatten)]
    pub files: FileList,
    /// Sender:receiver pairs (default: all 12)
    #[arg(long, value_delimiter = ',', value_parser = args::method_pair)]
    pub methods: Vec<(SendMethod, RecvMethod)>,
    // Rounds: with --budget every pair is compared with every other.
    #[command(flatten)]
    pub rounds: super::rounds::RoundArgs,
    /// Parallel connections
    #[arg(long, default_value = "1", value_parser = args::positive)]
    pub connections: usize,
    /// fsync each received file inside its timed window
    #[arg(long)]
    pub sync: bool,
    /// The receiver verifies but stores nothing
    #[arg(long)]
    pub discard: bool,
    #[command(flatten)]
    pub sizes: args::SizeArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

impl TransferArgs {
    /// Runs the matrix and prints it.
    pub fn run(self, ctx: &Ctx) -> Result<(), Error> {
        let cfg = TransferConfig {
            files: self.files.files,
            pairs: if self.methods.is_empty() {
                all_pairs()
            } else {
                self.methods
            },
            rounds: self.rounds.rounds("transfer"),
            connections: self.connections,
            sync: self.sync,
            discard: self.discard,
            sizes: self.sizes.sizes(),
        };
        let r = run_transfer(&cfg, &ctx.command_line, &ctx.progress)?;
        ctx.emit(&self.output, &r, || report::matrix(&r))
    }
}
