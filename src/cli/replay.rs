//! `iolab replay TRACE`: a traced program's reads replayed with each method.

use super::Ctx;
use super::args::OutputArgs;
use clap::Args;
use iolab::Error;
use iolab::cache::CacheMode;
use iolab::engine::ReadMethod;
use iolab::experiments::replay::{ReplayConfig, ReplayMethod, replay_document, run_replay};
use std::path::PathBuf;

/// Replay the file reads of a traced program (`iolab trace --out`) with each read method, cold
/// and warm, and say which would make it faster here.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  iolab trace --out rg.json -- rg -c fn ~/src\n  iolab replay rg.json\n  iolab replay rg.json --cache cold --methods pread,uring,direct\n  iolab replay sqlite.json --keep-gaps --cache warm\n\nThe budget covers reading the trace too, and a method whose first run alone takes more\nthan its even share is left out and said.\n\nSame files, offsets and lengths; each traced thread's accesses in order on a thread of its\nown, all threads at once; as fast as possible, or with --keep-gaps waiting the program's time
between accesses (io_uring queues ahead during a wait). A page fault is replayed as the 64 KiB window\nit mapped. 'as recorded' reads them with pread (with a mapping when the program's data came\nmostly through its mappings); direct methods read aligned out to 4 KiB (the extra bytes are\nshown); 'pread 128 KiB merged' merges reads that follow one another. Every run checks each\nfile's XOR against the trace's, so a file that changed since is caught. Writes are not replayed."
)]
pub struct ReplayArgs {
    /// The trace file (from iolab trace --out)
    pub trace: PathBuf,
    /// Read methods to compare with the accesses as recorded, comma-separated (default: all):
    /// a read method, or `merged` (the recorded reads that follow one another merged into
    /// reads of up to 128 KiB, with pread)
    #[arg(long, value_delimiter = ',', value_parser = method)]
    pub methods: Option<Vec<ReplayMethod>>,
    /// cold, warm or both
    #[arg(long, default_value = "both", value_parser = ["cold", "warm", "both"])]
    pub cache: String,
    // Rounds (see after_help for what a budget covers).
    #[command(flatten)]
    pub rounds: super::rounds::RoundArgs,
    /// As root, also drop every clean page (drop_caches) before cold runs
    #[arg(long)]
    pub drop_all: bool,
    /// Keep the program's time between accesses (its computing, measured in the trace less
    /// the tracer's cost per stop): each access waits it first. Default: as fast as possible
    #[arg(long)]
    pub keep_gaps: bool,
    #[command(flatten)]
    pub output: OutputArgs,
}

impl ReplayArgs {
    /// Runs it.
    pub fn run(self, ctx: &Ctx) -> Result<(), Error> {
        let methods = match self.methods {
            None => ReplayMethod::defaults(),
            // The accesses as recorded come first in any case.
            Some(list) => list,
        };
        let caches = match self.cache.as_str() {
            "cold" => vec![CacheMode::Cold],
            "warm" => vec![CacheMode::Warm],
            _ => vec![CacheMode::Cold, CacheMode::Warm],
        };
        let cfg = ReplayConfig {
            trace: self.trace,
            methods,
            caches,
            rounds: self.rounds.rounds("replay"),
            drop_all: self.drop_all,
            keep_gaps: self.keep_gaps,
            first: Vec::new(),
        };
        let r = run_replay(&cfg, &ctx.progress)?;
        ctx.emit(&self.output, &r, || replay_document(&r))
    }
}

/// A method of `--methods`: a read method's name, or `merged`.
fn method(s: &str) -> Result<ReplayMethod, String> {
    if s == "merged" {
        return Ok(ReplayMethod::Merged(128 << 10));
    }
    <ReadMethod as clap::ValueEnum>::from_str(s, false)
        .map(ReplayMethod::Method)
        .map_err(|_| {
            let names: Vec<String> = <ReadMethod as clap::ValueEnum>::value_variants()
                .iter()
                .filter_map(|m| {
                    clap::ValueEnum::to_possible_value(m).map(|v| v.get_name().to_string())
                })
                .collect();
            format!("expected one of {}, merged", names.join(", "))
        })
}
