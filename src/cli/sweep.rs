//! `iolab sweep FILE`: throughput against block size per method and cache state, or per write
//! method and sync mode.

use super::args::{self, EngineArgs, OutputArgs};
use super::{Ctx, usage};
use clap::Args;
use iolab::Error;
use iolab::cache::CacheMode;
use iolab::engine::write::SyncMode;
use iolab::experiments::sweep::report;
use iolab::experiments::sweep::{SweepConfig, SweepOp, parse_sizes, run_sweep};
use std::path::PathBuf;

/// Throughput against block size per method and cache state (or, with --op write, sync mode).
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  iolab sweep big.bin --bs 4K..16M --methods read,mmap --cache cold,warm --plot sweep.svg\n  iolab sweep big.bin --bs 4K,64K,1M --size 256M --repeat 5\n  iolab sweep /var/tmp --op write --methods write,mmap --sync none,end,each --size 64M\n\nWith --op write, a scratch file is written next to FILE (or inside it, if a directory) and\nremoved; FILE itself is never written. Per-block sync modes write at most 2048 blocks a run."
)]
pub struct SweepArgs {
    /// The file to read; with --op write, where the scratch file goes
    pub file: PathBuf,
    /// Read or write
    #[arg(long, value_enum, default_value_t = SweepOp::Read)]
    pub op: SweepOp,
    /// Block sizes: a power-of-two range LOW..HIGH, or a list 4K,64K,1M
    #[arg(long, default_value = SweepConfig::DEFAULT_SIZES)]
    pub bs: String,
    /// Methods (default read,mmap; for --op write: write,mmap)
    #[arg(long, value_delimiter = ',')]
    pub methods: Vec<String>,
    /// Cache states for reads
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = SweepConfig::DEFAULT_CACHES)]
    pub cache: Vec<CacheMode>,
    /// Sync modes for writes
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = SweepConfig::DEFAULT_SYNCS)]
    pub sync: Vec<SyncMode>,
    /// Bytes per run (reads: default the whole file with --repeat, else 1 MiB per second of the
    /// budget, at least 16 MiB; writes: 64M)
    #[arg(long, value_parser = args::size)]
    pub size: Option<u64>,
    #[command(flatten)]
    pub engine: EngineArgs,
    // Rounds: each method is compared with the first at each size.
    #[command(flatten)]
    pub rounds: super::rounds::RoundArgs,
    /// Seed of the written data
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// With cold, as root: also drop every clean cache (drop_caches)
    #[arg(long)]
    pub drop_all: bool,
    /// Also write the plot as SVG here
    #[arg(long)]
    pub plot: Option<PathBuf>,
    /// Overwrite an existing --plot file
    #[arg(long)]
    pub force: bool,
    #[command(flatten)]
    pub output: OutputArgs,
}

impl SweepArgs {
    fn config(&self) -> Result<SweepConfig, String> {
        let sizes = parse_sizes(&self.bs).map_err(|e| format!("{}: {}", e.what, e.cause))?;
        let names: Vec<&str> = if self.methods.is_empty() {
            match self.op {
                SweepOp::Read => vec!["read", "mmap"],
                SweepOp::Write => vec!["write", "mmap"],
            }
        } else {
            self.methods.iter().map(|m| m.as_str()).collect()
        };
        let invalid = |n: &str, e: String| format!("invalid method '{n}': {e}");
        let (mut read_methods, mut write_methods) = (Vec::new(), Vec::new());
        for n in names {
            match self.op {
                SweepOp::Read => read_methods.push(n.parse().map_err(|e| invalid(n, e))?),
                SweepOp::Write => write_methods.push(n.parse().map_err(|e| invalid(n, e))?),
            }
        }
        Ok(SweepConfig {
            path: self.file.clone(),
            op: self.op,
            sizes,
            read_methods,
            write_methods,
            caches: self.cache.clone(),
            syncs: self.sync.clone(),
            len: self.size,
            threads: self.engine.threads,
            depth: self.engine.depth,
            rounds: self.rounds.rounds("sweep"),
            seed: self.seed,
            drop_all: self.drop_all,
        })
    }

    /// Runs it, prints the table and writes the plot when asked.
    pub fn run(self, ctx: &Ctx) -> Result<(), Error> {
        let cfg = self.config().map_err(usage)?;
        super::refuse_plot(&self.plot, self.force)?;
        let r = run_sweep(&cfg, &ctx.command_line, &ctx.progress)?;
        super::save_plot(&self.plot, self.force, || report::sweep_plot(&r))?;
        ctx.show(&self.output, &r.warnings, &r, || report::sweep_document(&r))
    }
}
