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
mod squeeze;
mod suite;
mod sweep;
mod syscalls;
mod transfer;
mod vm;
mod write;

use clap::{Parser, Subcommand};
use iolab::Error;
use iolab::experiments::Observer;
use iolab::measure::interference::Probe;
use iolab::report::Format;
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

/// The subcommands. Each one's description and examples sit on its argument type, in its file.
#[derive(Debug, Subcommand)]
pub enum Command {
    Suite(suite::SuiteArgs),
    Report(report::ReportArgs),
    Advise(advise::AdviseArgs),
    Run(run::RunArgs),
    Read(read::ReadArgs),
    Write(write::WriteArgs),
    Fast(fast::FastArgs),
    Access(access::AccessArgs),
    Sweep(sweep::SweepArgs),
    Run2(run2::Run2Args),
    Syscalls(syscalls::SyscallsArgs),
    Vm(vm::VmArgs),
    Send(send::SendArgs),
    Recv(recv::RecvArgs),
    Transfer(transfer::TransferArgs),
    Squeeze(squeeze::SqueezeArgs),
    /// Internal: one method of `squeeze`, run inside its memory cgroup.
    #[command(hide = true, name = "squeeze-worker")]
    SqueezeWorker(squeeze::WorkerArgs),
    #[command(subcommand)]
    Cache(cache::CacheCommand),
    /// The classic sender: master N f1 .. fN fcntl|mmap (port 2325).
    Master(classic_net::ClassicArgs),
    /// The classic receiver: slave N f1 .. fN fcntl|mmap IP (writes f1 .. fN).
    Slave(classic_net::ClassicArgs),
}

/// What every subcommand gets besides its arguments.
pub struct Ctx {
    /// Progress on stderr.
    pub progress: Progress,
    /// The exact command line, for the result's host facts.
    pub command_line: String,
    /// What else the machine does, sampled from the start of the command.
    pub probe: Probe,
}

impl Ctx {
    /// The context of this process.
    pub fn new() -> Ctx {
        Ctx {
            progress: Progress {
                tty: std::io::stderr().is_terminal(),
            },
            command_line: command_line(),
            probe: Probe::start(),
        }
    }

    /// Prints a result's warnings on stderr, then the result (see [`Ctx::emit`]).
    pub fn show(&self, format: Format, warnings: &[String], text: &str) -> Result<(), Error> {
        warn_all(warnings);
        self.emit(format, text);
        Ok(())
    }

    /// Prints a result: JSON gets a top-level `interference` object (what else the machine was
    /// doing since the command started); other formats are printed as they are, with a warning on
    /// stderr when the machine was busy.
    pub fn emit(&self, format: Format, text: &str) {
        self.progress.clear();
        let interference = self.probe.finish();
        if format == Format::Json
            && let Ok(serde_json::Value::Object(mut map)) = serde_json::from_str(text)
        {
            map.insert("interference".into(), serde_json::json!(interference));
            out(&iolab::report::json(&map));
        } else {
            out(text);
        }
        if let Some(w) = interference.warning() {
            eprintln!("iolab: {w}");
        }
    }
}

/// Runs the subcommand.
pub fn dispatch(command: Command, ctx: &Ctx) -> Result<(), Error> {
    match command {
        Command::Suite(a) => a.run(ctx),
        Command::Report(a) => a.run(),
        Command::Advise(a) => a.run(ctx),
        Command::Run(a) => a.run(ctx),
        Command::Read(a) => a.run(ctx),
        Command::Write(a) => a.run(ctx),
        Command::Fast(a) => a.run(ctx),
        Command::Cache(c) => c.run(ctx),
        Command::Access(a) => a.run(ctx),
        Command::Sweep(a) => a.run(ctx),
        Command::Run2(a) => a.run(ctx),
        Command::Syscalls(a) => a.run(ctx),
        Command::Vm(a) => a.run(ctx),
        Command::Send(a) => a.run(ctx),
        Command::Recv(a) => a.run(ctx),
        Command::Master(a) => a.run_master(ctx),
        Command::Slave(a) => a.run_slave(ctx),
        Command::Transfer(a) => a.run(ctx),
        Command::Squeeze(a) => a.run(ctx),
        Command::SqueezeWorker(a) => a.run(),
    }
}

/// Progress on stderr, only when a person is watching.
pub struct Progress {
    tty: bool,
}

impl Progress {
    /// Clears the progress line, so what is printed next starts on a clean line.
    pub fn clear(&self) {
        if self.tty {
            eprint!("\r\x1b[K");
        }
    }
}

impl Observer for Progress {
    fn progress(&self, what: &str, done: usize, total: usize) {
        if self.tty {
            // The line is cleared first: a shorter line must not leave the end of a longer one.
            eprint!(
                "\r\x1b[K{what}: {done} of {total}{}",
                if done >= total { "\r\x1b[K" } else { "" }
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

    #[test]
    fn each_command_keeps_its_own_run_defaults() {
        // Defaults shared through one generic group would render once for all commands.
        let parse = |args: &[&str]| Cli::try_parse_from(args).expect("parses").command;
        let Command::Read(r) = parse(&["iolab", "read", "f"]) else {
            unreachable!()
        };
        let Command::Write(w) = parse(&["iolab", "write", "f", "--size", "1M"]) else {
            unreachable!()
        };
        assert_eq!((r.runs.repeat, r.runs.warmup), (5, 1));
        assert_eq!((w.runs.repeat, w.runs.warmup), (3, 0));
    }
}
