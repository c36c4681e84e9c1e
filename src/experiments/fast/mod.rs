//! `iolab fast FILE`: the whole file's XOR as fast as this machine allows. The method is chosen
//! (`auto`) from the file's residency, its size and the cores; the rule and the measurements
//! behind it are in docs/methodology.md. Timed from open to close, choice included.

use crate::cache;
use crate::engine::{self, EngineOptions, Prepared, ReadMethod, Source};
use crate::error::{Error, Result};
use crate::measure::{Counters, measure};
use crate::workload::{Pattern, Workload};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::Instant;

mod probing;
use probing::{Probed, probe_cost, race_cold, race_warm};

pub mod findings;
mod parts;
pub mod profile;
pub mod report;
pub mod suite;
use parts::{read_part, read_ranges, segments, workload};
pub use probing::{PROBE_BUDGET, secs_at_pace};

/// What `iolab fast` may be told.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FastConfig {
    /// The file to read whole.
    pub path: PathBuf,
    /// Forced method; `None` is auto.
    pub method: Option<ReadMethod>,
    /// Forced thread count; `None` is auto.
    pub threads: Option<usize>,
    /// Forced block size; `None` is auto.
    pub bs: Option<u64>,
    /// Forced io_uring depth; `None` is auto.
    pub depth: Option<u32>,
    /// Parts (warm or cold) at least this large are probed ([`PROBE_FROM`] unless a test wants
    /// the probe on a small file).
    #[serde(default = "probe_from_default")]
    pub probe_from: u64,
    /// The machine's warm profile ([`profile`]): races kept here decide the warm method once
    /// they agree at 95%; `None` races every run and keeps nothing.
    #[serde(default)]
    pub profile: Option<PathBuf>,
}

fn probe_from_default() -> u64 {
    PROBE_FROM
}

impl FastConfig {
    /// Auto for everything.
    pub fn new(path: PathBuf) -> FastConfig {
        FastConfig {
            path,
            method: None,
            threads: None,
            bs: None,
            depth: None,
            probe_from: PROBE_FROM,
            profile: None,
        }
    }
}

/// A way to read: method, threads, block size, depth.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ReadPlan {
    /// The method.
    pub method: ReadMethod,
    /// Threads.
    pub threads: usize,
    /// Block size.
    pub bs: u64,
    /// io_uring depth.
    pub depth: u32,
}

impl ReadPlan {
    fn label(&self) -> String {
        let mut s = format!(
            "{} x{} bs {}",
            self.method.name(),
            self.threads,
            crate::size::format_size(self.bs)
        );
        if self.method.engine().info().uses_depth {
            s.push_str(&format!(" depth {}", self.depth));
        }
        s
    }
}

/// One candidate tried on a slice of the file of its own (its bytes count towards the XOR).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Trial {
    /// What was tried.
    pub plan: ReadPlan,
    /// Whether the slice was resident (the warm choice) or not (the cold one).
    pub warm: bool,
    /// Where the slice starts.
    pub offset: u64,
    /// Its length.
    pub bytes: u64,
    /// How long reading it took, preparation included.
    pub secs: f64,
    /// Its rate over the slice's second half (the first half starts the pipeline); for a race,
    /// its bytes per CPU second.
    pub mib_s: f64,
    /// Raced: the candidates read one slice side by side, block by block, each taking the next
    /// free block (`bytes` is what this one read, `secs` its thread's CPU time).
    #[serde(default)]
    pub raced: bool,
}

/// How the resident (warm) or the non-resident (cold) part of the file was read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Use {
    /// Resident part or not.
    pub warm: bool,
    /// The plan that read it (after the probe).
    pub plan: ReadPlan,
    /// Bytes of the file in this part (probe slices included).
    pub bytes: u64,
    /// Why this plan.
    pub why: String,
    /// Wall time of this part's probe: the candidates' slices with their setup, and the
    /// winner's setup for the rest (0 without a probe).
    #[serde(default)]
    pub probe_secs: f64,
    /// Bytes the probe read (they count towards the XOR, and are not read again).
    #[serde(default)]
    pub probe_bytes: u64,
    /// The chosen plan's pace over the rest of the part, MiB/s (0 when the probe left nothing).
    #[serde(default)]
    pub rest_mib_s: f64,
    /// Of `probe_secs`, the winner's own start when it was the first candidate probed on a
    /// non-resident part: its setup and the first half of its slice, where the part's stream
    /// begins (queue filling, buffers faulted in). A run without a probe pays it too (0 when the
    /// winner had no such start in the probe).
    #[serde(default)]
    pub start_secs: f64,
    /// Bytes read in `start_secs`.
    #[serde(default)]
    pub start_bytes: u64,
    /// What the probe cost: `probe_secs` less `start_secs`, beyond reading the other
    /// `probe_bytes - start_bytes` at `rest_mib_s`.
    #[serde(default)]
    pub probe_cost_secs: f64,
    /// What the machine's profile said for this part, when it was asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<profile::Learned>,
}

/// What auto chose and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Choice {
    /// The method (of the part with the most bytes).
    pub method: ReadMethod,
    /// Threads.
    pub threads: usize,
    /// Block size.
    pub bs: u64,
    /// io_uring depth.
    pub depth: u32,
    /// Why, in words.
    pub reason: String,
    /// Each part (warm, cold) and its plan; one entry when the file is all one state.
    #[serde(default)]
    pub uses: Vec<Use>,
    /// The candidates tried, each on its own slice.
    #[serde(default)]
    pub probes: Vec<Trial>,
    /// Time the probes cost: each part's probe wall time beyond reading the bytes it read at the
    /// pace the chosen plan kept over the rest of the part (0 without a probe).
    #[serde(default)]
    pub probe_cost_secs: f64,
}

/// What `iolab fast` did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FastResult {
    /// What was chosen and why.
    pub choice: Choice,
    /// Resident fraction of the file when it was opened.
    pub resident: f64,
    /// Bytes read (the whole file).
    pub bytes: u64,
    /// XOR of the bytes as little-endian u32 words (see [`crate::xor`]).
    #[serde(with = "crate::xor::hex")]
    #[schemars(with = "String")]
    pub xor: u32,
    /// Counters from open to close.
    pub counters: Counters,
    /// Throughput, whole process from open to close.
    #[serde(default)]
    pub mib_s: f64,
    /// The cache state the run started from, as the harness verified it (the suite's runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache: Option<cache::CacheState>,
}

impl FastResult {
    /// Its throughput, whole process from open to close.
    pub fn mib_per_s(&self) -> f64 {
        crate::size::mib_per_s(self.bytes, self.counters.wall.as_secs_f64())
    }
}

/// `fast` repeated: every run, and their throughput.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FastSeries {
    /// Every run, in order.
    pub runs: Vec<FastResult>,
    /// MiB/s over the runs.
    pub mib_s: crate::measure::stats::Summary,
}

impl FastSeries {
    /// The series of `runs`.
    pub fn of(runs: Vec<FastResult>) -> FastSeries {
        let rates: Vec<f64> = runs.iter().map(FastResult::mib_per_s).collect();
        FastSeries {
            mib_s: crate::measure::stats::summarize(&rates),
            runs,
        }
    }
}

/// Files below this are read with one pread: mapping or threads cost more than they save.
pub const SMALL: u64 = 1 << 20;
/// Each extra thread needs at least this much of the file to pay for itself.
pub const PER_THREAD: u64 = 32 << 20;
/// Resident fraction from which a range counts as warm.
pub const WARM: f64 = 0.9;
/// Residency is mapped in chunks of this size (a multiple of every probed block size).
pub const CHUNK: u64 = 8 << 20;
/// A part (warm or cold) at least this large is probed rather than read by the rule.
pub const PROBE_FROM: u64 = 1 << 30;
/// Probe slices are apart by this much, so one candidate's readahead does not serve the next.
pub const PROBE_GAP: u64 = 16 << 20;
const ALIGN: u64 = 4 << 20;

/// The auto rule without a probe (see docs/methodology.md): one pread for a small file, else
/// mmap with one thread per [`PER_THREAD`] up to the cores.
pub fn choose(size: u64, resident: f64, cores: usize) -> Choice {
    if size < SMALL {
        let plan = ReadPlan {
            method: ReadMethod::Pread,
            threads: 1,
            bs: SMALL,
            depth: 1,
        };
        let why = format!(
            "small file (< {}): one pread",
            crate::size::format_size(SMALL)
        );
        return choice_of(plan, why, Vec::new(), Vec::new(), 0.0);
    }
    let plan = mmap_plan(size, cores);
    let state = if resident >= WARM { "warm" } else { "cold" };
    let why = format!(
        "{state} ({:.0}% resident): mmap, XOR in place, {} thread(s) each faulting its own part",
        resident * 100.0,
        plan.threads
    );
    choice_of(plan, why, Vec::new(), Vec::new(), 0.0)
}

fn choice_of(
    plan: ReadPlan,
    reason: String,
    uses: Vec<Use>,
    probes: Vec<Trial>,
    cost: f64,
) -> Choice {
    Choice {
        method: plan.method,
        threads: plan.threads,
        bs: plan.bs,
        depth: plan.depth,
        reason,
        uses,
        probes,
        probe_cost_secs: cost,
    }
}

fn threads_for(bytes: u64, cores: usize) -> usize {
    (bytes / PER_THREAD).clamp(1, cores.max(1) as u64) as usize
}

fn mmap_plan(bytes: u64, cores: usize) -> ReadPlan {
    ReadPlan {
        method: ReadMethod::Mmap,
        threads: threads_for(bytes, cores),
        bs: 4 << 20,
        depth: 1,
    }
}

/// The candidates for a part of `bytes` bytes, in the order they are tried (each probed with the
/// plan that reads the rest if it wins): resident data mapped or copied by pread (small
/// page-cache folios can make the copy win; the two race on one thread each); data on the
/// device read with O_DIRECT through io_uring in 1 MiB requests 8 deep (tried first, the usual
/// winner on this project's virtual disk once its buffers sit on huge pages), then buffered
/// preads behind the kernel's readahead (stopped early when its pace would overrun the probe's
/// budget).
pub fn candidates(warm: bool, bytes: u64, cores: usize) -> Vec<ReadPlan> {
    let threads = threads_for(bytes, cores);
    if warm {
        let mmap = mmap_plan(bytes, cores);
        let pread = ReadPlan {
            method: ReadMethod::Pread,
            threads,
            bs: 1 << 20,
            depth: 1,
        };
        vec![mmap, pread]
    } else {
        // 1 MiB requests, 8 in flight in all: on this VM the device gives its best with 8 MiB
        // in flight (fio too: 1M at depth 8 4562 MiB/s against 3866 at depth 32, medians of 8
        // rounds), and every buffer slot's first touch costs about 1.4 ms per MiB here, so a
        // larger queue (4 MiB x 8, 32 MiB) paid 45-60 ms of faults before its steady state.
        // Split over the threads, each with its ring: one thread both submitting and XORing
        // fell behind fio's 1M x 8 (2748-3011 MiB/s against 2872-3156); two threads of 4 read
        // faster than one of 8 in each of 8 interleaved rounds (median 1.1x), the same bytes
        // in flight and the same buffers to fault.
        let direct = ReadPlan {
            method: ReadMethod::UringDirect,
            threads,
            bs: 1 << 20,
            depth: (8 / threads as u32).max(1),
        };
        // The buffered challenger: one thread of 1 MiB preads behind the kernel's readahead. It
        // is stepped one block at a time, so its least cost is one read (1.7-2.7 ms for the
        // first MiB here); the mapping it replaced paid its setup and a 4 MiB block first (7-10
        // ms, 2-2.5% of a cold 2 GiB run).
        let buffered = ReadPlan {
            method: ReadMethod::Pread,
            threads: 1,
            bs: 1 << 20,
            depth: 1,
        };
        vec![direct, buffered]
    }
}

/// The probe slice of each candidate for a part of `bytes` (when cold), or the one slice both
/// race over (when warm): 1/64 of it, at least 32 MiB, in whole 4 MiB units, so each half starts
/// on a block. (The warm race took 1/16 while its threads could start on one CPU; started apart,
/// 1/64 rates them as well and costs a quarter as much.)
pub fn probe_len(_warm: bool, bytes: u64) -> u64 {
    ((bytes / 64).max(32 << 20) / ALIGN) * ALIGN
}

/// Prepares a plan. A mapping is made per run and part, in the worker's thread, and released
/// there: its setup and teardown are paid inside `fast`'s time anyway (it is timed to close), so
/// they are spread over the threads and, for a probe, counted in the candidate's own slice.
fn prepare_plan(src: &Source, plan: &ReadPlan) -> Result<Prepared> {
    let opts = EngineOptions {
        map_each_run: true,
        ..EngineOptions::with_depth(plan.depth)
    };
    engine::prepare(plan.method, src, &workload(plan, src.size), &opts)
}

/// Auto: each part of the file (resident or not) read by the plan that measured fastest on it
/// (the resident part, once the machine's profile has decided, by the plan it decided).
fn auto(
    src: &Source,
    resident: f64,
    probe_from: u64,
    mut learn: Option<&mut [profile::MachineProfile; 2]>,
) -> Result<(Choice, engine::Moved)> {
    let cores = crate::sys::cpus();
    if src.size < SMALL {
        let c = choose(src.size, resident, cores);
        let plan = ReadPlan {
            method: c.method,
            threads: c.threads,
            bs: c.bs,
            depth: c.depth,
        };
        let moved = prepare_plan(src, &plan)?.run()?;
        return Ok((c, moved));
    }
    let segs = segments(src, resident);
    let mut moved = engine::Moved::default();
    let mut uses = Vec::new();
    let mut probes = Vec::new();
    for warm in [true, false] {
        let ranges: Vec<(u64, u64)> = segs
            .iter()
            .filter(|s| s.2 == warm)
            .map(|s| (s.0, s.1))
            .collect();
        if ranges.is_empty() {
            continue;
        }
        let learning = learn.as_deref_mut().map(|l| &mut l[usize::from(!warm)]);
        let (m, used) = read_part(src, probe_from, warm, &ranges, cores, &mut probes, learning)?;
        moved.add(m);
        uses.push(used);
    }
    let main = uses
        .iter()
        .max_by_key(|u| u.bytes)
        .map(|u| u.plan)
        .unwrap_or_else(|| mmap_plan(src.size, cores));
    let reason = uses
        .iter()
        .map(|u| {
            format!(
                "{} {} ({}): {}",
                if u.warm { "warm" } else { "cold" },
                crate::size::format_size(u.bytes),
                u.plan.label(),
                u.why
            )
        })
        .collect::<Vec<_>>()
        .join("; ");
    let cost = uses.iter().map(|u| u.probe_cost_secs).sum();
    Ok((choice_of(main, reason, uses, probes, cost), moved))
}

/// The machine's profile for the resident and the non-resident parts of `src` (each with its
/// part's two candidates), when `cfg` keeps one and the file is large enough to be probed.
fn profiles(cfg: &FastConfig, src: &Source) -> Option<[profile::MachineProfile; 2]> {
    use std::os::unix::fs::MetadataExt;
    let path = cfg.profile.as_ref()?;
    let dev = src.file.metadata().ok()?.dev();
    (src.size >= cfg.probe_from).then(|| {
        [false, true].map(|cold| {
            let c = candidates(!cold, src.size, 1);
            profile::MachineProfile::open(path, dev, cold, [c[0].method, c[1].method])
        })
    })
}

/// Reads the whole file with the chosen (or forced) method; timed from open to close, choice
/// and probe included.
pub fn run_fast(cfg: &FastConfig) -> Result<FastResult> {
    if cfg.threads == Some(0) {
        return Err(Error::usage(
            "invalid thread count",
            "--threads must be at least 1",
        ));
    }
    if cfg.bs == Some(0) {
        return Err(Error::usage(
            "invalid block size",
            "it must be at least 1 byte",
        ));
    }
    let forced =
        cfg.method.is_some() || cfg.threads.is_some() || cfg.bs.is_some() || cfg.depth.is_some();
    let mut opened = None;
    let mut learn = None;
    let (out, counters) = measure(|| -> Result<(Choice, f64, engine::Moved)> {
        let src = engine::open_source(&cfg.path)?;
        opened = Some(crate::source::Version::of(&src.file).map(|v| (v, src.file.try_clone())));
        let resident = cache::residency_of(&src.file, src.size, &src.path)?.fraction();
        if !forced {
            learn = profiles(cfg, &src);
            let auto = auto(&src, resident, cfg.probe_from, learn.as_mut());
            return match auto {
                Err(e) if e.kind == crate::error::ErrorKind::Unsupported => {
                    // Auto never fails for lack of a method (a mapping, io_uring): fall back to
                    // buffered pread.
                    let mut choice = choose(src.size, resident, crate::sys::cpus());
                    choice.reason = format!("{} ({}); fell back to pread", choice.reason, e.cause);
                    choice.method = ReadMethod::Pread;
                    let plan = ReadPlan {
                        method: ReadMethod::Pread,
                        threads: choice.threads,
                        bs: 1 << 20,
                        depth: 1,
                    };
                    choice.bs = plan.bs;
                    let moved = prepare_plan(&src, &plan)?.run()?;
                    Ok((choice, resident, moved))
                }
                r => r.map(|(c, m)| (c, resident, m)),
            };
        }
        let mut choice = choose(src.size, resident, crate::sys::cpus());
        if let Some(m) = cfg.method {
            choice.method = m;
            choice.reason = "method forced with --method".into();
        } else {
            choice.reason = format!("{} (forced settings: no probe)", choice.reason);
        }
        let plan = ReadPlan {
            method: choice.method,
            threads: cfg.threads.unwrap_or(choice.threads),
            bs: cfg.bs.unwrap_or(choice.bs),
            depth: cfg
                .depth
                .unwrap_or(if choice.method.engine().info().uses_depth {
                    32
                } else {
                    choice.depth
                }),
        };
        (choice.threads, choice.bs, choice.depth) = (plan.threads, plan.bs, plan.depth);
        let moved = read_ranges(
            &mut prepare_plan(&src, &plan)?,
            &plan,
            src.size,
            &[(0, src.size)],
        )?;
        Ok((choice, resident, moved))
    });
    let (mut choice, resident, moved) = out?;
    // Off the clock: this run's races kept in the profile, and what it said to each part.
    if let Some(profiles) = learn.as_mut() {
        for u in choice.uses.iter_mut() {
            let p = &mut profiles[usize::from(!u.warm)];
            u.profile = p.asked.then(|| p.save());
        }
    }
    // Outside the clock: the XOR is the file's only if nobody wrote it meanwhile.
    if let Some(Ok((version, Ok(file)))) = opened {
        version.check(&file, &cfg.path, "read")?;
    }
    Ok(FastResult {
        choice,
        resident,
        bytes: moved.bytes,
        xor: moved.xor,
        mib_s: crate::size::mib_per_s(moved.bytes, counters.wall.as_secs_f64()),
        counters,
        cache: None,
    })
}

#[cfg(test)]
mod tests;
