//! `iolab access FILE`: sequential vs random block access per method and cache state; also the
//! classic form `FILE seq|random read|mmap [adv_seq|adv_random]`.

use super::args::{self, EngineArgs, OutputArgs};
use super::{Ctx, usage, warn_all};
use clap::Args;
use iolab::Error;
use iolab::cache::CacheMode;
use iolab::engine::{ReadMethod, Work};
use iolab::experiments::access::report;
use iolab::experiments::access::{AccessConfig, run_access};
use iolab::report::{Document, Shown};
use iolab::workload::Pattern;
use std::path::PathBuf;
use std::time::Duration;

/// Sequential vs random block access per method and cache state: KIOPS and latency.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  iolab access big.bin\n  iolab access big.bin --methods pread,mmap --patterns random --cache cold --duration 5s\n  iolab access big.bin random mmap adv_random      (the classic form)\n\nThe classic form does the original's work: one byte touched per block, no file hint,\nevery whole block read once, no time limit (--work xor and --duration change that), the
run timed as a whole (no per-block latency: the modern form has the percentiles).\nThe madvise hint of mmap-seq/mmap-random/mmap-willneed is applied alone; the classic\nbenchmark OR-ed it with MADV_WILLNEED, so every one of its advice rows measured WILLNEED."
)]
pub struct AccessArgs {
    /// A regular file to read
    pub file: PathBuf,
    /// The classic form: seq|random read|mmap [adv_seq|adv_random] (one run, cache as is)
    #[arg(value_name = "CLASSIC", num_args = 0..=3)]
    pub classic: Vec<String>,
    /// Block size
    #[arg(long, default_value = "4K", value_parser = args::size)]
    pub bs: u64,
    /// Patterns to measure
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = AccessConfig::DEFAULT_PATTERNS)]
    pub patterns: Vec<Pattern>,
    /// Methods to measure
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = AccessConfig::DEFAULT_METHODS)]
    pub methods: Vec<ReadMethod>,
    /// Cache states to measure
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = AccessConfig::DEFAULT_CACHES)]
    pub cache: Vec<CacheMode>,
    /// With cold, as root: also drop every clean cache (drop_caches)
    #[arg(long)]
    pub drop_all: bool,
    #[command(flatten)]
    pub engine: EngineArgs,
    /// Operations per run (default: every block once)
    #[arg(long, value_parser = args::count)]
    pub ops: Option<u64>,
    /// Each run stops after this long (cold random reads are slow) [default: with --budget, a
    /// share of it (about 0.1 s in a minute); with --repeat, 10s; the classic form: none, every
    /// block is read]
    #[arg(long, value_parser = args::duration)]
    pub duration: Option<Duration>,
    /// What each block is used for: xor every word, touch one byte as the classic benchmark
    /// did, or copy it into a buffer (what read() does; mmap copies out of the mapping)
    /// [default: xor; the classic form: touch]
    #[arg(long, value_enum)]
    pub work: Option<Work>,
    /// Seed of the random order
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Time no block (no latency percentiles; KIOPS from each run's own clock): beside a timed
    /// run, it shows what timing the blocks costs
    #[arg(long)]
    pub no_latency: bool,
    // Rounds: each method is compared with the first in every pattern and cache state.
    #[command(flatten)]
    pub rounds: super::rounds::RoundArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// The method named by the classic form's words: `read|mmap [adv_seq|adv_random]`.
fn classic_method(method: &str, advice: Option<&str>) -> Result<ReadMethod, String> {
    match (method, advice) {
        ("read", None) => Ok(ReadMethod::Read),
        ("mmap", None) => Ok(ReadMethod::Mmap),
        ("mmap", Some("adv_seq")) => Ok(ReadMethod::MmapSeq),
        ("mmap", Some("adv_random")) => Ok(ReadMethod::MmapRandom),
        ("read", Some(_)) => Err("adv_seq/adv_random are madvise hints: they apply to mmap".into()),
        ("mmap", Some(a)) => Err(format!(
            "unknown madvise hint '{a}': expected adv_seq or adv_random (or none)"
        )),
        (m, _) => Err(format!(
            "unknown classic method '{m}': expected read or mmap [adv_seq|adv_random]"
        )),
    }
}

impl AccessArgs {
    fn config(&self) -> Result<AccessConfig, String> {
        let mut cfg = AccessConfig {
            bs: self.bs,
            patterns: self.patterns.clone(),
            methods: self.methods.clone(),
            caches: self.cache.clone(),
            threads: self.engine.threads,
            depth: self.engine.depth,
            ops: self.ops,
            duration: self.duration,
            rounds: self.rounds.rounds("access"),
            seed: self.seed,
            drop_all: self.drop_all,
            work: self.work.unwrap_or(Work::Xor),
            untimed: self.no_latency,
            ..AccessConfig::new(self.file.clone())
        };
        cfg.duration = Some(self.duration.unwrap_or_else(|| cfg.run_length()));
        if !self.classic.is_empty() {
            let words: Vec<&str> = self.classic.iter().map(|s| s.as_str()).collect();
            let (pattern, method, advice) = match words.as_slice() {
                [p, m] => (*p, *m, None),
                [p, m, a] => (*p, *m, Some(*a)),
                _ => {
                    return Err(
                        "the classic form is FILE seq|random read|mmap [adv_seq|adv_random]".into(),
                    );
                }
            };
            // The original's work: one touched byte per block, no file hint, every whole block
            // read once, no time limit (unless --work or --duration say otherwise).
            cfg = AccessConfig {
                patterns: vec![pattern.parse()?],
                methods: vec![classic_method(method, advice)?],
                work: self.work.unwrap_or(Work::Touch),
                duration: self.duration,
                bs: self.bs,
                threads: self.engine.threads,
                depth: self.engine.depth,
                ops: self.ops,
                seed: self.seed,
                drop_all: self.drop_all,
                ..AccessConfig::classic(self.file.clone())
            };
        }
        Ok(cfg)
    }

    /// Runs it and prints the table (the classic form adds the original's lines first).
    pub fn run(self, ctx: &Ctx) -> Result<(), Error> {
        let cfg = self.config().map_err(usage)?;
        let r = run_access(&cfg, &ctx.command_line, &ctx.progress)?;
        warn_all(&r.warnings);
        let classic = !self.classic.is_empty();
        ctx.emit(&self.output, &r, || {
            let mut doc = Document::new();
            if classic {
                doc = doc.lines(report::classic_lines(&r)).only(Shown::Text);
            }
            doc.then(report::access_document(&r))
        })
    }
}
