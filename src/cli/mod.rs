//! The command line, part of the binary: clap definitions (one file per subcommand, shared
//! argument groups in [`args`]) and each subcommand's mapping to a library config, its call and
//! its output. The library knows nothing of clap's argument structs.

mod access;
mod advise;
pub mod args;
mod cache;
mod classic_net;
mod fast;
mod read;
mod recv;
mod report;
mod run;
mod run2;
mod send;
mod suite;
mod sweep;
mod syscalls;
mod transfer;
mod vm;
mod write;

use clap::{Parser, Subcommand};
use iolab::Error;
use iolab::experiments::Observer;
use std::io::{IsTerminal, Write};

const ABOUT: &str = "Measure, explain and exploit the ways Linux moves file data: read/pread, mmap \
with madvise, O_DIRECT and io_uring, with repeats, statistics and a verified page cache.";

/// iolab's command line.
#[derive(Debug, Parser)]
#[command(name = "iolab", version, about = ABOUT, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// The main job: make data, run every experiment, write one report (HTML, Markdown, JSON, SVG).
    #[command(
        after_help = "Examples:\n  iolab suite --quick\n  iolab suite --size 4G --out ~/iolab-report\n  iolab suite --quick --size 64M --keep-data --dir /var/tmp/iolab-data\n\nThe report goes to --out (a dated folder beside it if it exists, unless --force)."
    )]
    Suite(suite::SuiteArgs),
    /// Re-render report(s) from results.json files; several give hosts side by side.
    Report(report::ReportArgs),
    /// Which method for this file and access pattern, here: measured, warm and cold.
    #[command(
        after_help = "Examples:\n  iolab advise big.bin --pattern random --bs 4K\n  iolab advise big.bin --pattern seq --bs 1M --threads 2"
    )]
    Advise(advise::AdviseArgs),
    /// The classic program: read or write BLOCK_COUNT blocks of BLOCK_SIZE, print time, rate, XOR.
    #[command(
        after_help = "Examples:\n  iolab run big.bin -r 4K 262144\n  iolab run out.bin -w 1M 1024 --sync end\n  iolab run big.bin -r 1M 2048 --method mmap --cache cold"
    )]
    Run(run::RunArgs),
    /// Read a file with one method, repeated, with statistics and kernel counters.
    #[command(
        after_help = "Examples:\n  iolab read big.bin --method mmap --cache warm --repeat 5\n  iolab read big.bin --method pread --bs 4K --pattern random --size 256M\n  iolab read big.bin --method uring-direct --depth 32 --cache cold --format json"
    )]
    Read(read::ReadArgs),
    /// Write a file with one method and sync mode, repeated, then read it back to verify.
    #[command(
        after_help = "Examples:\n  iolab write out.bin --size 1G --bs 1M --method write --sync end\n  iolab write out.bin --size 256M --method mmap --sync each --force"
    )]
    Write(write::WriteArgs),
    /// Read the whole file as fast as this machine allows and print its XOR.
    #[command(
        after_help = "Examples:\n  iolab fast big.bin\n  iolab fast big.bin --method mmap --threads 2\n\nThe XOR goes to stdout; the chosen method, cache state, time and MiB/s to stderr."
    )]
    Fast(fast::FastArgs),
    /// Page-cache residency of files (like vmtouch), evict them, or load them.
    #[command(subcommand)]
    Cache(cache::CacheCommand),
    /// Sequential vs random block access per method and cache state: KIOPS and latency.
    #[command(
        after_help = "Examples:\n  iolab access big.bin\n  iolab access big.bin --methods pread,mmap --patterns random --cache cold --duration 5s\n  iolab access big.bin random mmap adv_random      (the classic form)\n\nThe madvise hint of mmap-seq/mmap-random/mmap-willneed is applied alone; the classic\nbenchmark OR-ed it with MADV_WILLNEED, so every one of its advice rows measured WILLNEED."
    )]
    Access(access::AccessArgs),
    /// Throughput against block size per method and cache state (or, with --op write, sync mode).
    #[command(
        after_help = "Examples:\n  iolab sweep big.bin --bs 4K..16M --methods read,mmap --cache cold,warm --plot sweep.svg\n  iolab sweep big.bin --bs 4K,64K,1M --size 256M --repeat 5\n  iolab sweep /var/tmp --op write --methods write,mmap --sync none,end,each --size 64M\n\nWith --op write, a scratch file is written next to FILE (or inside it, if a directory) and\nremoved; FILE itself is never written. Per-block sync modes write at most 2048 blocks a run."
    )]
    Sweep(sweep::SweepArgs),
    /// Find a block count whose read takes 5-15 s (the classic run2), or predict the file size.
    #[command(
        visible_alias = "calibrate",
        after_help = "Examples:\n  iolab run2 big.bin 4096\n  iolab calibrate big.bin 1M --target 1s..3s --cache cold"
    )]
    Run2(run2::Run2Args),
    /// What one system call costs here: null call, 1-byte read/pread, lseek, fstat, mmap, a minor
    /// fault, an io_uring NOP.
    #[command(
        after_help = "Examples:\n  iolab syscalls\n  iolab syscalls big.bin --samples 9 --format json\n\nWithout FILE a 1 MiB scratch file is made in the temporary directory and removed."
    )]
    Syscalls(syscalls::SyscallsArgs),
    /// The pmap lab: VM size and RSS of a mapped file stage by stage, with page descriptors.
    #[command(
        after_help = "Examples:\n  iolab vm data.bin --create 10M\n  iolab vm data.bin --touch 0,10000,4M --write\n  iolab vm data.bin --page-cache --format json\n\nWith --write every touched byte is written back unchanged through a MAP_SHARED mapping:\nthe pages turn dirty, the content stays the same. PFNs and kpageflags need root."
    )]
    Vm(vm::VmArgs),
    /// Serve files to a receiver over TCP (listens; default 127.0.0.1:2325).
    #[command(
        after_help = "Examples:\n  iolab send big.bin --method sendfile\n  iolab send a b c --listen 0.0.0.0:2325 --token s3cret --connections 2\n\nThe token may also come from IOLAB_TOKEN. Only 127.0.0.1 is used unless --listen says otherwise."
    )]
    Send(send::SendArgs),
    /// Receive files from `iolab send` (connects) into a directory, verified by BLAKE3.
    #[command(
        after_help = "Examples:\n  iolab recv --connect 127.0.0.1:2325 --out incoming/\n  iolab recv --method splice --sync --retry 10s\n  iolab recv --discard --format json\n\nFiles are written under a temporary name and renamed when complete and verified."
    )]
    Recv(recv::RecvArgs),
    /// The classic sender: master N f1 .. fN fcntl|mmap (port 2325).
    Master(classic_net::ClassicArgs),
    /// The classic receiver: slave N f1 .. fN fcntl|mmap IP (writes f1 .. fN).
    Slave(classic_net::ClassicArgs),
    /// Every sender x receiver method pair over loopback, repeated: the matrix.
    #[command(
        after_help = "Examples:\n  iolab transfer big.bin small*.txt\n  iolab transfer big.bin --methods read:write,mmap:mmap,sendfile:splice --repeat 5"
    )]
    Transfer(transfer::TransferArgs),
}

/// What every subcommand gets besides its arguments.
pub struct Ctx {
    /// Progress on stderr.
    pub progress: Progress,
    /// The exact command line, for the result's host facts.
    pub command_line: String,
}

impl Ctx {
    /// The context of this process.
    pub fn new() -> Ctx {
        Ctx {
            progress: Progress {
                tty: std::io::stderr().is_terminal(),
            },
            command_line: command_line(),
        }
    }
}

/// Runs the subcommand.
pub fn dispatch(command: Command, ctx: &Ctx) -> Result<(), Error> {
    match command {
        Command::Suite(a) => a.run(ctx),
        Command::Report(a) => a.run(),
        Command::Advise(a) => a.run(ctx),
        Command::Run(a) => a.run(),
        Command::Read(a) => a.run(ctx),
        Command::Write(a) => a.run(ctx),
        Command::Fast(a) => a.run(),
        Command::Cache(c) => c.run(),
        Command::Access(a) => a.run(ctx),
        Command::Sweep(a) => a.run(ctx),
        Command::Run2(a) => a.run(ctx),
        Command::Syscalls(a) => a.run(ctx),
        Command::Vm(a) => a.run(),
        Command::Send(a) => a.run(),
        Command::Recv(a) => a.run(),
        Command::Master(a) => a.run_master(),
        Command::Slave(a) => a.run_slave(),
        Command::Transfer(a) => a.run(ctx),
    }
}

/// Progress on stderr, only when a person is watching.
pub struct Progress {
    tty: bool,
}

impl Observer for Progress {
    fn progress(&self, what: &str, done: usize, total: usize) {
        if self.tty {
            eprint!(
                "\r{what}: run {done} of {total}{}",
                if done == total { "\r\x1b[K" } else { "" }
            );
        }
    }
}

fn command_line() -> String {
    std::env::args()
        .map(|a| {
            if a.contains(' ') || a.is_empty() {
                format!("'{a}'")
            } else {
                a
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Writes results to stdout; a closed stdout (e.g. `| head`) is not an error worth a message.
pub fn out(text: &str) {
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
}

/// Each warning as one line on stderr.
pub fn warn_all(warnings: &[String]) {
    for w in warnings {
        eprintln!("iolab: warning: {w}");
    }
}

/// A usage error (exit 2) from a config mapping's message.
pub fn usage(msg: String) -> Error {
    Error::usage("usage", msg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn command_definition_is_consistent() {
        Cli::command().debug_assert();
    }
}
