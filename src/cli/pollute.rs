//! `iolab pollute FILE --memory SIZE`: what a stream through FILE does to a hot set sharing its
//! memory cgroup, per stream method; and the hidden `pollute-worker` that runs one inside it.

use super::args::{self, OutputArgs};
use super::{Ctx, own_program, refuse_plot, save_plot, usage};
use clap::Args;
use iolab::Error;
use iolab::engine::write::WriteMethod;
use iolab::experiments::pollute::{
    self, PolluteConfig, PolluteWorker, StreamMethod, run_pollute, run_worker,
};
use std::path::PathBuf;
use std::time::Duration;

/// Stream a big file beside a hot working set: which stream method leaves it fast.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  iolab pollute big.bin --memory 512M\n  iolab pollute big.bin --memory 256M --hot-size 128M --reads read,uncached --writes none\n  iolab pollute big.bin --memory 512M --hot db.bin --seconds 10 --ticks\n  iolab pollute big.bin --memory 512M --format csv > series.csv --plot pollute.svg\n\nA hot set (--hot FILE, or a temporary file of --hot-size made beside FILE) is loaded\ninside a fresh memory cgroup limited to --memory and read at random, 4 KiB at a time,\nby one thread that never stops. After --before seconds a stream starts in the same group:\nit reads FILE in order (over and over) with each --reads method, or writes a file that is\nnever kept (4x --memory a pass) with each --writes method. Per tick: the hot reads' rate\nand p99, the hot set's residency, the stream's MiB/s, the group's memory and reclaim.\n\nMethods: read (buffered), uncached (RWF_DONTCACHE, Linux 6.14+: pages dropped once\nread or written back), direct (O_DIRECT), mmap, mmap-seq, fadvise-dontneed (read, then\nPOSIX_FADV_DONTNEED on each 8 MiB behind it). Groups are made under the hierarchy's root\n(needs root) or under --cgroup-parent, and removed afterwards, also on Ctrl-C. FILE must\nbe larger than --memory (4x shows the effect well)."
)]
pub struct PolluteArgs {
    #[command(flatten)]
    pub group: args::GroupArgs,
    /// The hot set: a file of yours, read at random (default: a temporary one of --hot-size)
    #[arg(long, value_name = "FILE", conflicts_with = "hot_size")]
    pub hot: Option<PathBuf>,
    /// Size of the temporary hot set [default: 256 MiB or half of --memory, the smaller]
    #[arg(long, value_parser = args::size, value_name = "SIZE")]
    pub hot_size: Option<u64>,
    /// Read stream methods, or `none`
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "read,uncached,direct,mmap,mmap-seq,fadvise-dontneed"
    )]
    pub reads: Vec<String>,
    /// Write stream methods, or `none`
    #[arg(long, value_delimiter = ',', default_value = "write,uncached,direct")]
    pub writes: Vec<String>,
    /// Bytes a written stream writes before it starts over [default: 4x --memory]
    #[arg(long, value_parser = args::size, value_name = "SIZE")]
    pub write_size: Option<u64>,
    /// Bytes per stream request
    #[arg(long, default_value = "1M", value_parser = args::size)]
    pub bs: u64,
    /// The hot reader alone before the stream starts
    #[arg(long, default_value = "2s", value_parser = args::duration)]
    pub before: Duration,
    /// How long each stream runs
    #[arg(long, default_value = "8s", value_parser = args::duration)]
    pub seconds: Duration,
    /// Time between samples
    #[arg(long, default_value = "500ms", value_parser = args::duration)]
    pub tick: Duration,
    /// Runs of each method, interleaved: ticks within one run share its state, so a finding
    /// takes the runs as the unit (Student's t over their ratios) and decides from 3 runs on
    #[arg(long, default_value_t = 3, value_parser = args::positive)]
    pub passes: usize,
    /// Also print every method's ticks (text and Markdown; CSV always has them)
    #[arg(long)]
    pub ticks: bool,
    /// Also write the plot (hot KIOPS and residency over time per method) as SVG
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
    /// Overwrite the --plot file if it exists
    #[arg(long)]
    pub force: bool,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `none` (alone) for no methods, else each name parsed.
fn methods<T>(
    names: &[String],
    what: &str,
    parse: impl Fn(&str) -> Option<T>,
) -> Result<Vec<T>, Error> {
    if names.len() == 1 && names[0].trim().eq_ignore_ascii_case("none") {
        return Ok(Vec::new());
    }
    names
        .iter()
        .map(|n| parse(n).ok_or_else(|| usage(format!("--{what}: unknown method '{n}'"))))
        .collect()
}

impl PolluteArgs {
    /// Runs every stream method and prints the summary and the findings.
    pub fn run(self, ctx: &Ctx) -> Result<(), Error> {
        refuse_plot(&self.plot, self.force)?;
        let mut cfg = PolluteConfig::new(self.group.file, self.group.memory, own_program()?);
        cfg.hot = self.hot;
        if let Some(h) = self.hot_size {
            cfg.hot_size = h;
        }
        cfg.reads = methods(&self.reads, "reads", StreamMethod::from_name)?;
        cfg.writes = methods(&self.writes, "writes", WriteMethod::from_name)?;
        if let Some(w) = self.write_size {
            cfg.write_size = w;
        }
        cfg.stream_bs = self.bs;
        cfg.before = self.before.as_secs_f64();
        cfg.seconds = self.seconds.as_secs_f64();
        cfg.tick = self.tick.as_secs_f64();
        cfg.passes = self.passes;
        cfg.cgroup_parent = self.group.cgroup_parent;
        let r = run_pollute(&cfg, &ctx.progress)?;
        let findings = pollute::findings::pollute(&r);
        save_plot(&self.plot, self.force, || pollute::report::pollute_plot(&r))?;
        let doc = iolab::report::WithFindings {
            result: &r,
            findings: &findings,
        };
        ctx.show(&self.output, &r.warnings, &doc, || {
            pollute::report::pollute_document(&r, &findings, self.ticks)
        })
    }
}

/// Internal: runs one stream of `pollute` inside its group (started by `iolab pollute`).
#[derive(Debug, Args)]
pub struct PolluteWorkerArgs {
    /// The stream and its settings, as JSON
    pub config: String,
}

impl PolluteWorkerArgs {
    /// Waits for "go" on stdin, then writes one JSON line per tick to stdout.
    pub fn run(self) -> Result<(), Error> {
        super::run_worker::<PolluteWorker>("pollute-worker", &self.config, run_worker)
    }
}
