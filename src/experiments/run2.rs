//! `iolab run2 FILE BLOCK_SIZE` (alias `calibrate`): find a block count whose read takes a time
//! inside a window (default 5–15 s), doubling the count and bisecting when a step overshoots. If
//! the file ends first, say so and predict the file size that would reach the window.

use super::Observer;
use super::classic::{ClassicResult, Op, RunConfig, run_classic};
use crate::cache::CacheMode;
use crate::engine::ReadMethod;
use crate::engine::write::{SyncMode, WriteMethod};
use crate::error::{Error, Result};
use crate::workload::Shape;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::Duration;

/// What `iolab run2` looks for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Run2Config {
    /// The file to read.
    pub path: PathBuf,
    /// Block size in bytes.
    pub bs: u64,
    /// The shortest acceptable read.
    #[serde(with = "crate::measure::secs")]
    pub min: Duration,
    /// The longest acceptable read.
    #[serde(with = "crate::measure::secs")]
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Run2Step {
    /// Blocks read.
    pub count: u64,
    /// How it went.
    pub run: ClassicResult,
}

/// How the search ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Run2Outcome {
    /// A count whose read fell inside the window.
    Found,
    /// The whole file read faster than the window's low end.
    FileEnded {
        /// Bytes that would take the window's low and high end at the measured rate.
        predicted_min_bytes: u64,
        /// The largest file size predicted to fit the window, bytes.
        predicted_max_bytes: u64,
        /// Where the measured rate came from: the page cache or the device.
        rate_from: RateSource,
        /// The measured rate, MiB/s.
        rate_mib_s: f64,
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RateSource {
    /// The file was (almost) all in the page cache.
    Cache,
    /// Not: the device delivered at least part of it.
    Device,
}

/// The window's file sizes at the device's rate.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct DevicePrediction {
    /// The cold rate, MiB/s (the whole file read after evicting it).
    pub rate_mib_s: f64,
    /// Bytes that would take the window's low end at that rate.
    pub predicted_min_bytes: u64,
    /// Bytes that would take its high end.
    pub predicted_max_bytes: u64,
}

/// What `iolab run2` found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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

/// The outcome when the whole file reads faster than the window: sizes predicted from the rate
/// measured, saying whether that rate was the cache's; when the predicted file could not be
/// cached, from the device's rate too, measured by reading the file once cold.
fn file_ended(
    cfg: &Run2Config,
    size: u64,
    t: std::time::Duration,
    last: &ClassicResult,
    read: &dyn Fn(u64, CacheMode) -> Result<ClassicResult>,
) -> Result<Run2Outcome> {
    let window = |bytes_per_s: f64| {
        (
            (bytes_per_s * cfg.min.as_secs_f64()) as u64,
            (bytes_per_s * cfg.max.as_secs_f64()) as u64,
        )
    };
    let rate = size as f64 / t.as_secs_f64().max(1e-9);
    let cached = last
        .cache
        .as_ref()
        .is_some_and(|c| c.residency.fraction() >= crate::cache::WARM_MIN);
    let (lo, hi) = window(rate);
    let memory = crate::cache::meminfo::read().mem_total;
    let from_device = if cached && memory > 0 && hi > memory {
        let cold = read(size.div_ceil(cfg.bs.max(1)), CacheMode::Cold)?;
        let cold_rate = cold.bytes as f64 / cold.counters.wall.as_secs_f64().max(1e-9);
        let (dlo, dhi) = window(cold_rate);
        Some(DevicePrediction {
            rate_mib_s: cold_rate / 1_048_576.0,
            predicted_min_bytes: dlo,
            predicted_max_bytes: dhi,
        })
    } else {
        None
    };
    Ok(Run2Outcome::FileEnded {
        predicted_min_bytes: lo,
        predicted_max_bytes: hi,
        rate_from: if cached {
            RateSource::Cache
        } else {
            RateSource::Device
        },
        rate_mib_s: rate / 1_048_576.0,
        from_device,
    })
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
    let read = |count: u64, cache: CacheMode| {
        run_classic(&RunConfig {
            path: cfg.path.clone(),
            op: Op::Read,
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
        })
    };
    let step = |count: u64| read(count, cfg.cache);
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
                let last = &steps[steps.len() - 1].run;
                break file_ended(cfg, size, t, last, &read)?;
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
