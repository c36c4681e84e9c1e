//! `iolab squeeze FILE --memory SIZE`: each method inside a memory cgroup smaller than the file,
//! a row per second; and the hidden `squeeze-worker` that runs one method inside the group.

use super::args::{self, OutputArgs};
use super::{Ctx, own_program, refuse_plot, save_plot, usage};
use clap::Args;
use iolab::Error;
use iolab::engine::ReadMethod;
use iolab::experiments::squeeze::{
    self, SqueezeConfig, SqueezePattern, SqueezeWorker, run_squeeze, run_worker,
};
use std::path::PathBuf;
use std::time::Duration;

/// Read a file larger than the memory allowed: mmap vs pread vs O_DIRECT under eviction.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  iolab squeeze big.bin --memory 128M\n  iolab squeeze big.bin --memory 128M --methods mmap,uring-direct --seconds 10\n  iolab squeeze big.bin --memory 256M --pattern uniform --threads 4 --format csv > series.csv\n  iolab squeeze big.bin --memory 128M --plot squeeze.svg\n\nEach method runs in a fresh memory cgroup limited to --memory (cgroup v2 where its\nhierarchy has the memory controller, else v1), made under the hierarchy's root (needs\nroot) or under --cgroup-parent, and removed afterwards, also on Ctrl-C. The file's pages\nare evicted before each method, so the page cache it fills is charged to its group.\nThe file must be larger than --memory; 8x shows the effect well (the CIDR 2022 paper\n\"Are You Sure You Want to Use MMAP in Your DBMS?\" used data far larger than memory)."
)]
pub struct SqueezeArgs {
    #[command(flatten)]
    pub group: args::GroupArgs,
    /// Methods, each in a group of its own, one after the other
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = SqueezeConfig::DEFAULT_METHODS)]
    pub methods: Vec<ReadMethod>,
    /// random: a new permutation of the blocks per pass; uniform: draws with replacement (as
    /// mmapbench); seq: in file order
    #[arg(long, value_enum, default_value_t = SqueezePattern::Random)]
    pub pattern: SqueezePattern,
    /// Bytes per read
    #[arg(long, default_value = "4K", value_parser = args::size)]
    pub bs: u64,
    /// Reading threads [default: the CPU count]
    #[arg(long, value_parser = args::threads)]
    pub threads: Option<usize>,
    /// io_uring requests in flight per thread
    #[arg(long, default_value_t = 32, value_parser = args::depth)]
    pub depth: u32,
    /// How long each run of a method lasts
    #[arg(long, default_value = "10s", value_parser = args::duration)]
    pub seconds: Duration,
    /// Runs of each method, interleaved: a run's seconds share its state, so a finding takes
    /// the runs as the unit (Student's t over their ratios) and decides from 3 runs on
    #[arg(long, default_value_t = SqueezeConfig::DEFAULT_PASSES, value_parser = args::positive)]
    pub passes: usize,
    /// Time between samples (shorter gives a short run the samples an interval at 95% needs:
    /// seven steady samples a method)
    #[arg(long, default_value = "1s", value_parser = args::duration)]
    pub tick: Duration,
    /// Seed of the random order
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Also write the plot (throughput per second per method, TLB shootdowns below) as SVG
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
    /// Overwrite the --plot file if it exists
    #[arg(long)]
    pub force: bool,
    #[command(flatten)]
    pub output: OutputArgs,
}

impl SqueezeArgs {
    /// Runs every method and prints the series, the steady states and the finding.
    pub fn run(self, ctx: &Ctx) -> Result<(), Error> {
        if self.seconds < Duration::from_millis(500) {
            return Err(usage("--seconds must be at least 0.5s".into()));
        }
        if self.tick < Duration::from_millis(100) || self.tick > self.seconds {
            return Err(usage(
                "--tick must be at least 100ms and at most --seconds".into(),
            ));
        }
        refuse_plot(&self.plot, self.force)?;
        let mut cfg = SqueezeConfig::new(self.group.file, self.group.memory, own_program()?);
        cfg.methods = self.methods;
        cfg.reads.pattern = self.pattern;
        cfg.reads.bs = self.bs;
        if let Some(t) = self.threads {
            cfg.reads.threads = t;
        }
        cfg.reads.depth = self.depth;
        cfg.reads.seconds = self.seconds.as_secs_f64();
        cfg.reads.tick = self.tick.as_secs_f64();
        cfg.reads.seed = self.seed;
        cfg.passes = self.passes;
        cfg.cgroup_parent = self.group.cgroup_parent;
        let r = run_squeeze(&cfg, &ctx.progress)?;
        let findings = squeeze::findings::squeeze(&r);
        save_plot(&self.plot, self.force, || squeeze::report::squeeze_plot(&r))?;
        let doc = iolab::report::WithFindings {
            result: &r,
            findings: &findings,
        };
        ctx.show(&self.output, &r.warnings, &doc, || {
            squeeze::report::squeeze_document(&r, &findings)
        })
    }
}

/// Internal: runs one method of `squeeze` inside its group (started by `iolab squeeze`).
#[derive(Debug, Args)]
pub struct SqueezeWorkerArgs {
    /// The method and its settings, as JSON
    pub config: String,
}

impl SqueezeWorkerArgs {
    /// Waits for "go" on stdin, then writes one JSON line per second to stdout.
    pub fn run(self) -> Result<(), Error> {
        super::run_worker::<SqueezeWorker>("squeeze-worker", &self.config, run_worker)
    }
}
