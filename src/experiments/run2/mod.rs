//! `iolab run2 FILE BLOCK_SIZE` (alias `calibrate`): find a block count whose read takes a time
//! inside a window (default 5–15 s), doubling the count and bisecting when a step overshoots. If
//! the file ends first, say so and predict the file size that would reach the window.

use super::Observer;
use super::run::{ClassicResult, RunConfig, RunOp, run_classic_times};
use crate::cache::CacheMode;
use crate::engine::ReadMethod;
use crate::engine::write::{SyncMode, WriteMethod};
use crate::error::{Error, Result};
use crate::measure::stats::{Summary, summarize};
use crate::size::mib_per_s;
use crate::workload::Shape;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::Duration;

pub mod report;
pub mod suite;

/// What `iolab run2` looks for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Run2Config {
    /// The file to read.
    pub path: PathBuf,
    /// Block size in bytes.
    pub bs: u64,
    /// The shortest acceptable read.
    #[serde(with = "crate::measure::secs")]
    #[schemars(with = "f64")]
    pub min: Duration,
    /// The longest acceptable read.
    #[serde(with = "crate::measure::secs")]
    #[schemars(with = "f64")]
    pub max: Duration,
    /// The read method.
    pub method: ReadMethod,
    /// Threads, each with its own contiguous part.
    pub threads: usize,
    /// The cache state before each read.
    pub cache: CacheMode,
    /// With a cold cache, as root: also drop every clean cache (drop_caches).
    pub drop_all: bool,
}

/// One read tried.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Run2Step {
    /// Blocks read.
    pub count: u64,
    /// How it went.
    pub run: ClassicResult,
}

/// How the search ended.
// One per run: a large variant costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub enum Run2Outcome {
    /// A count whose read fell inside the window.
    Found,
    /// The whole file read faster than the window's low end.
    FileEnded {
        /// Bytes that would take the window's low and high end at the measured rate (its
        /// median over the whole-file reads).
        predicted_min_bytes: u64,
        /// The largest file size predicted to fit the window, bytes.
        predicted_max_bytes: u64,
        /// The same two sizes at the ends of the rate's interval: `[low end's, high end's]`
        /// each as `[at the slow end, at the fast end]`.
        #[serde(default)]
        predicted_ci: [[u64; 2]; 2],
        /// Where the measured rate came from: the page cache or the device.
        rate_from: RateSource,
        /// The measured rate, MiB/s: the median of the whole-file reads.
        rate_mib_s: f64,
        /// The rate of every whole-file read (at least three), MiB/s, with the median's interval.
        #[serde(default)]
        rate: Summary,
        /// How many of those reads found the file resident (the rate is the cache's when most
        /// did).
        #[serde(default)]
        resident_reads: usize,
        /// When the file that fits the window could not stay in the page cache (larger than
        /// MemTotal), the same prediction from the device's rate, measured cold.
        #[serde(default)]
        from_device: Option<DevicePrediction>,
    },
    /// Even one block takes longer than the window.
    OneBlockTooSlow,
    /// Neighbouring counts straddle the window (the rate jumps, e.g. where the cache ends).
    Straddled,
}

/// Where a measured rate came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum RateSource {
    /// The file was (almost) all in the page cache.
    Cache,
    /// Not: the device delivered at least part of it.
    Device,
}

/// The window's file sizes at the device's rate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DevicePrediction {
    /// The cold rate, MiB/s (the median of whole-file reads, each after evicting it).
    pub rate_mib_s: f64,
    /// Every cold read's rate, MiB/s, with the median's interval.
    #[serde(default)]
    pub rate: Summary,
    /// Bytes that would take the window's low end at that rate.
    pub predicted_min_bytes: u64,
    /// Bytes that would take its high end.
    pub predicted_max_bytes: u64,
}

/// What `iolab run2` found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Run2Result {
    /// What was asked.
    pub config: Run2Config,
    /// Size of the file in bytes.
    pub file_size: u64,
    /// How the search ended.
    pub outcome: Run2Outcome,
    /// Every step tried, in order; the last is the answer (or the closest).
    pub steps: Vec<Run2Step>,
}

impl Run2Result {
    /// The last read tried.
    pub fn last(&self) -> Option<&Run2Step> {
        self.steps.last()
    }
}

const MAX_STEPS: usize = 80;

/// Whole-file reads a prediction rests on, at least.
pub const PREDICTION_READS: usize = 3;
/// Up to this many while they are cheap (their time together under the window's low end): six
/// are the fewest whose order statistics give the median a 95% interval.
pub const PREDICTION_READS_MAX: usize = 6;

/// How many whole-file reads a prediction takes: at least [`PREDICTION_READS`], up to
/// [`PREDICTION_READS_MAX`] while their time together stays under `budget` at the pace of a
/// whole-file read already made (`last`; without one, the fewest).
fn prediction_reads(budget: Duration, last: Option<Duration>) -> usize {
    match last {
        Some(t) if !t.is_zero() => ((budget.as_secs_f64() / t.as_secs_f64()) as usize)
            .clamp(PREDICTION_READS, PREDICTION_READS_MAX),
        _ => PREDICTION_READS,
    }
}

/// Rates (MiB/s) of `n` whole-file reads in `cache`, run by the harness; and the reads.
fn whole_file_rates(
    count: u64,
    cache: CacheMode,
    n: usize,
    read: &Reads<'_>,
) -> Result<(Summary, Vec<ClassicResult>)> {
    let reads = read(count, cache, n)?;
    let rates: Vec<f64> = reads
        .iter()
        .map(|r| mib_per_s(r.bytes, r.counters.wall.as_secs_f64()))
        .collect();
    Ok((summarize(&rates), reads))
}

/// `n` classic reads of `count` blocks in a cache state.
type Reads<'a> = dyn Fn(u64, CacheMode, usize) -> Result<Vec<ClassicResult>> + 'a;

/// The outcome when the whole file reads faster than the window: sizes predicted from the
/// median rate of at least three more whole-file reads, with the interval, saying
/// whether that rate was the cache's; when the predicted file could not be cached, from the
/// device's rate too, measured by reading the file cold as many times. Returns the extra reads.
fn file_ended(
    cfg: &Run2Config,
    size: u64,
    last: Duration,
    read: &Reads<'_>,
) -> Result<(Run2Outcome, Vec<ClassicResult>)> {
    let mib = 1_048_576.0;
    let window = |mib_s: f64| {
        (
            (mib_s * mib * cfg.min.as_secs_f64()) as u64,
            (mib_s * mib * cfg.max.as_secs_f64()) as u64,
        )
    };
    let count = size.div_ceil(cfg.bs.max(1));
    // Fresh reads, not the search's last: that one may have found the file in another state
    // (partly resident as the search began, resident after it).
    let n = prediction_reads(cfg.min, Some(last));
    let (rate, mut extra) = whole_file_rates(count, cfg.cache, n, read)?;
    let resident_reads = extra
        .iter()
        .filter(|r| {
            r.cache
                .as_ref()
                .is_some_and(|c| c.residency.fraction() >= crate::cache::WARM_MIN)
        })
        .count();
    let cached = resident_reads * 2 > extra.len();
    let (lo, hi) = window(rate.median);
    let (slow, fast) = (window(rate.ci[0]), window(rate.ci[1]));
    let memory = crate::cache::meminfo::read().mem_total;
    let from_device = if cached && memory > 0 && hi > memory {
        let n = prediction_reads(cfg.min, None);
        let (cold, mut reads) = whole_file_rates(count, CacheMode::Cold, n, read)?;
        extra.append(&mut reads);
        let (dlo, dhi) = window(cold.median);
        Some(DevicePrediction {
            rate_mib_s: cold.median,
            rate: cold,
            predicted_min_bytes: dlo,
            predicted_max_bytes: dhi,
        })
    } else {
        None
    };
    let outcome = Run2Outcome::FileEnded {
        predicted_min_bytes: lo,
        predicted_max_bytes: hi,
        predicted_ci: [[slow.0, fast.0], [slow.1, fast.1]],
        rate_from: if cached {
            RateSource::Cache
        } else {
            RateSource::Device
        },
        rate_mib_s: rate.median,
        rate,
        resident_reads,
        from_device,
    };
    Ok((outcome, extra))
}

/// Doubles the block count until a read lands in the window, then narrows it down.
pub fn run_run2(cfg: &Run2Config, obs: &dyn Observer) -> Result<Run2Result> {
    if cfg.min >= cfg.max {
        return Err(Error::usage(
            "invalid window",
            "its low end must be below its high end",
        ));
    }
    let size = crate::engine::open_source(&cfg.path)?.size;
    if size == 0 {
        return Err(Error::usage("nothing to calibrate", "the file is empty").at(&cfg.path));
    }
    let blocks_in_file = size.div_ceil(cfg.bs.max(1));
    let read = |count: u64, cache: CacheMode, n: usize| {
        let cfg = RunConfig {
            path: cfg.path.clone(),
            op: RunOp::Read,
            bs: cfg.bs,
            count,
            read_method: cfg.method,
            write_method: WriteMethod::Write,
            shape: Shape {
                seed: 0,
                threads: cfg.threads,
                ..Shape::SEQUENTIAL
            },
            cache,
            drop_all: cfg.drop_all,
            sync: SyncMode::None,
            force: false,
        };
        run_classic_times(&cfg, n)
    };
    // One read per step: the search itself needs no repeats.
    let step = |count: u64| -> Result<ClassicResult> {
        read(count, cfg.cache, 1)?
            .pop()
            .ok_or_else(|| Error::failed("run2", "the harness made no run"))
    };
    let mut steps: Vec<Run2Step> = Vec::new();
    let (mut fast, mut slow): (Option<u64>, Option<u64>) = (None, None);
    let mut count = 1u64;
    let outcome = loop {
        let run = step(count)?;
        let t = run.counters.wall;
        let whole = run.bytes >= size;
        steps.push(Run2Step { count, run });
        obs.progress("run2", steps.len(), MAX_STEPS);
        if t >= cfg.min && t <= cfg.max {
            // Done early: the count ends where the search did, not at the ceiling.
            obs.progress("run2", steps.len(), steps.len());
            break Run2Outcome::Found;
        }
        if t < cfg.min {
            if whole {
                let (outcome, extra) = file_ended(cfg, size, t, &read)?;
                steps.extend(extra.into_iter().map(|run| Run2Step { count, run }));
                break outcome;
            }
            fast = Some(count);
        } else {
            if count == 1 {
                break Run2Outcome::OneBlockTooSlow;
            }
            slow = Some(count);
        }
        let next = match (fast, slow) {
            (Some(f), Some(s)) => {
                if s - f <= 1 {
                    break Run2Outcome::Straddled;
                }
                // Geometric middle: the time grows with the count.
                (((f as f64) * (s as f64)).sqrt() as u64).clamp(f + 1, s - 1)
            }
            (Some(f), None) => f.saturating_mul(2).min(blocks_in_file),
            (None, Some(s)) => (s / 2).max(1),
            (None, None) => unreachable!("one of them was just set"),
        };
        if steps.len() >= MAX_STEPS {
            break Run2Outcome::Straddled;
        }
        count = next;
    };
    Ok(Run2Result {
        config: cfg.clone(),
        file_size: size,
        outcome,
        steps,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prediction_reads_are_planned_from_a_whole_file_read_already_made() {
        let s = Duration::from_secs;
        // As many as fit under the budget at that pace, between three and six.
        assert_eq!(prediction_reads(s(5), Some(Duration::from_millis(1200))), 4);
        assert_eq!(prediction_reads(s(5), Some(Duration::from_millis(10))), 6);
        assert_eq!(prediction_reads(s(5), Some(s(4))), 3);
        // Without a pace (cold reads not yet made), the fewest.
        assert_eq!(prediction_reads(s(5), None), PREDICTION_READS);
        assert_eq!(
            prediction_reads(s(5), Some(Duration::ZERO)),
            PREDICTION_READS
        );
    }
}
