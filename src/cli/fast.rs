//! `iolab fast FILE`: the whole file's XOR as fast as this machine allows.

use super::Ctx;
use super::args::{self, OutputArgs};
use clap::Args;
use iolab::Error;
use iolab::engine::ReadMethod;
use iolab::experiments::fast::{self, FastConfig, run_fast};
use iolab::report::Format;
use std::path::PathBuf;

/// Read the whole file as fast as this machine allows and print its XOR.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  iolab fast big.bin\n  iolab fast big.bin --method mmap --threads 2\n  iolab fast big.bin --explain\n\nThe XOR goes to stdout; the chosen method, cache state, time and MiB/s to stderr."
)]
pub struct FastArgs {
    /// A regular file to read whole
    pub file: PathBuf,
    /// Force a method instead of auto
    #[arg(long, value_enum)]
    pub method: Option<ReadMethod>,
    /// Force a thread count
    #[arg(long, value_parser = args::threads)]
    pub threads: Option<usize>,
    /// Force a block size
    #[arg(long, value_parser = args::size)]
    pub bs: Option<u64>,
    /// Force an io_uring depth
    #[arg(long, value_parser = args::depth)]
    pub depth: Option<u32>,
    /// Probe the candidates on the resident or the non-resident part when it is at least this
    /// large (smaller parts are read by the rule)
    #[arg(long, value_parser = args::size, default_value = "1GiB", value_name = "SIZE")]
    pub probe_from: u64,
    /// Probe the candidates on every run, and keep nothing. By default the probes of earlier
    /// runs on this machine (mapping against copying for resident data, O_DIRECT against
    /// buffered for the rest), kept in $XDG_CACHE_HOME/iolab/fast-profile.json (~/.cache/iolab
    /// without it), decide each part's method once they agree at 95%; until then the first of
    /// each (mmap, O_DIRECT) reads, so the method does not flip from run to run
    #[arg(long)]
    pub no_profile: bool,
    /// Print what was chosen for each part of the file and why, with the probe's figures
    #[arg(long)]
    pub explain: bool,
    #[command(flatten)]
    pub output: OutputArgs,
}

impl FastArgs {
    /// Whether gathering the JSON's host facts ahead, on a thread of their own, pays: only JSON
    /// carries them, and only a run long enough to hide the thread gains (from 32 MiB, where a
    /// warm run takes milliseconds; on a 4 KiB file waiting for the thread cost 0.2 ms more
    /// than gathering them after the run, on a warm 2 GiB one it saved 0.6 ms, medians of 40
    /// interleaved pairs).
    pub fn host_ahead_pays(&self) -> bool {
        self.output.format == Format::Json
            && std::fs::metadata(&self.file)
                .is_ok_and(|m| m.len() >= iolab::experiments::fast::PER_THREAD)
    }

    /// Runs it: the XOR on stdout, what was chosen and how fast on stderr.
    pub fn run(self, ctx: &Ctx) -> Result<(), Error> {
        let r = run_fast(&FastConfig {
            path: self.file,
            method: self.method,
            threads: self.threads,
            bs: self.bs,
            depth: self.depth,
            probe_from: self.probe_from,
            profile: if self.no_profile {
                None
            } else {
                profile_path()
            },
        })?;
        eprintln!("{}", iolab::shown::line(&fast::report::fast_talk(&r)));
        if self.explain {
            eprint!("{}", iolab::shown::line(&fast::report::fast_explain(&r)));
        }
        ctx.emit(&self.output, &r, || fast::report::fast_document(&r))
    }
}

/// Where the machine's warm profile lives: `$XDG_CACHE_HOME/iolab`, else `~/.cache/iolab` (none
/// without either, or with a relative one, as the XDG rules say).
fn profile_path() -> Option<PathBuf> {
    let dir = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| {
            std::env::var_os("HOME")
                .map(PathBuf::from)
                .filter(|p| p.is_absolute())
                .map(|h| h.join(".cache"))
        })?;
    Some(dir.join("iolab").join(fast::profile::FILE))
}
