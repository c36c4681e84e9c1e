//! `iolab recv`: receive files from `iolab send` into a directory, verified by BLAKE3.

use super::Ctx;
use super::args::{self, NetArgs};
use clap::Args;
use iolab::Error;
use iolab::experiments::transfer::report;
use iolab::transfer::RecvMethod;
use iolab::transfer::receiver::{self, RecvConfig};
use std::path::PathBuf;
use std::time::Duration;

/// Receive files from `iolab send` (connects) into a directory, verified by BLAKE3.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  iolab recv --connect 127.0.0.1:2325 --out incoming/\n  iolab recv --raw a.txt b.txt --classic-sizes --method mmap   (from nc -l or the course's master)\n  iolab recv --method splice --sync --retry 10s\n  iolab recv --discard --format json\n\nFiles are written under a temporary name and renamed when complete and verified."
)]
pub struct RecvArgs {
    /// Output paths for the files in the order sent, exactly as many as the sender sends
    /// (default: the senders' names in --out; with --raw, one per file, required)
    pub names: Vec<PathBuf>,
    /// The sender: HOST:PORT
    #[arg(long, default_value = "127.0.0.1:2325")]
    pub connect: String,
    /// Directory for received files
    #[arg(long, default_value = ".")]
    pub out: PathBuf,
    /// Receiver method (fcntl = write)
    #[arg(long, value_enum, default_value_t = RecvMethod::Write)]
    pub method: RecvMethod,
    /// Refuse files larger than this (default: the free space of the output filesystem)
    #[arg(long, value_parser = args::size)]
    pub max_size: Option<u64>,
    /// Replace existing files
    #[arg(long)]
    pub force: bool,
    /// fsync each file inside its timed window
    #[arg(long)]
    pub sync: bool,
    /// Receive and verify, store nothing
    #[arg(long)]
    pub discard: bool,
    /// With --raw: store the bytes and nothing else, computing no BLAKE3 of them (there is none
    /// to check a raw stream against), as nc or socat do
    #[arg(long, requires = "raw")]
    pub no_hash: bool,
    /// Keep retrying a refused connection this long
    #[arg(long, default_value = "0s", value_parser = args::duration_or_zero)]
    pub retry: Duration,
    #[command(flatten)]
    pub net: NetArgs,
}

impl RecvArgs {
    /// Receives the files and prints this side's report.
    pub fn run(self, ctx: &Ctx) -> Result<(), Error> {
        // Names given: exactly those files, as the classic slave takes them (a sender with more
        // or fewer is an error, never a stray file in the working directory or a name left
        // unwritten with exit 0). A raw stream's names are its connections already.
        let exact = !self.names.is_empty() && !self.net.raw;
        let cfg = RecvConfig {
            exact,
            names: self.names,
            max_size: self.max_size,
            force: self.force,
            sync: self.sync,
            discard: self.discard,
            retry: self.retry,
            no_hash: self.no_hash,
            ..self.net.recv_config(self.connect, self.out, self.method)?
        };
        // A request that cannot run is refused before anything else is said.
        cfg.check()?;
        if !cfg.discard && !cfg.out_dir.is_dir() {
            return Err(
                Error::usage("invalid output directory", "not a directory").at(&cfg.out_dir)
            );
        }
        if cfg.link.token.is_none() {
            // The other half of send's warning: nothing proves who is at that address.
            super::talk(format!(
                "iolab: warning: no token: whatever listens at {} may send you files (up to --max-size each, never over yours without --force)",
                cfg.connect
            ));
        }
        let r = receiver::receive(&cfg)?;
        if let Some(n) = &r.pages_note {
            super::talk(format!("iolab: note: {n}"));
        }
        ctx.emit(&self.net.output, &r, || {
            report::side_document(&r, report::Lines::Full)
        })
    }
}
