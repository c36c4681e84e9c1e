//! `iolab fast FILE`: the whole file's XOR as fast as this machine allows. The method is chosen
//! (`auto`) from the file's residency, its size and the cores; the rule and the measurements
//! behind it are in docs/methodology.md. Timed from open to close, choice included.

use crate::cache;
use crate::engine::{self, EngineOptions, ReadMethod};
use crate::error::{Error, Result};
use crate::measure::{Counters, measure};
use crate::workload::{Pattern, Workload};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// What `iolab fast` may be told.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
}

/// What auto chose and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Choice {
    /// The method.
    pub method: ReadMethod,
    /// Threads.
    pub threads: usize,
    /// Block size.
    pub bs: u64,
    /// io_uring depth.
    pub depth: u32,
    /// Why, in words.
    pub reason: String,
}

/// What `iolab fast` did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FastResult {
    /// What was chosen and why.
    pub choice: Choice,
    /// Resident fraction of the file when it was opened.
    pub resident: f64,
    /// Bytes read (the whole file).
    pub bytes: u64,
    /// XOR of the bytes as little-endian u32 words (DESIGN §2).
    pub xor: u32,
    /// Counters from open to close.
    pub counters: Counters,
}

impl FastResult {
    /// Its throughput, whole process from open to close.
    pub fn mib_per_s(&self) -> f64 {
        crate::size::mib_per_s(self.bytes, self.counters.wall.as_secs_f64())
    }
}

/// `fast` repeated: every run, and their throughput.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
/// Resident fraction from which the file counts as warm.
pub const WARM: f64 = 0.9;

/// The auto rule (see docs/methodology.md).
pub fn choose(size: u64, resident: f64, cores: usize) -> Choice {
    let threads_for = |size: u64| (size / PER_THREAD).clamp(1, cores.max(1) as u64) as usize;
    if size < SMALL {
        return Choice {
            method: ReadMethod::Pread,
            threads: 1,
            bs: SMALL,
            depth: 1,
            reason: format!(
                "small file (< {}): one pread",
                crate::size::format_size(SMALL)
            ),
        };
    }
    let threads = threads_for(size);
    let state = if resident >= WARM { "warm" } else { "cold" };
    Choice {
        method: ReadMethod::Mmap,
        threads,
        bs: 4 << 20,
        depth: 1,
        reason: format!(
            "{state} ({:.0}% resident): mmap, XOR in place, {threads} thread(s) each faulting its own part",
            resident * 100.0
        ),
    }
}

/// Reads the whole file with the chosen (or forced) method; timed from open to close, choice included.
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
    let (out, counters) = measure(|| -> Result<(Choice, f64, engine::Moved)> {
        let src = engine::open_source(&cfg.path)?;
        let resident = cache::residency_of(&src.file, src.size, &src.path)?.fraction();
        let mut choice = choose(src.size, resident, crate::sys::cpus());
        if let Some(m) = cfg.method {
            choice.method = m;
            choice.reason = "method forced with --method".into();
        }
        if let Some(t) = cfg.threads {
            choice.threads = t;
        }
        if let Some(b) = cfg.bs {
            choice.bs = b;
        }
        if let Some(d) = cfg.depth {
            choice.depth = d;
        }
        let w = Workload {
            bs: choice.bs,
            len: src.size,
            pattern: Pattern::Seq,
            seed: 0,
            threads: choice.threads,
        };
        let opts = EngineOptions::with_depth(choice.depth);
        let moved = match engine::read_all(choice.method, &src, &w, &opts) {
            Err(e) if cfg.method.is_none() && e.what == "cannot map" => {
                // Auto never fails for lack of a mapping: fall back to buffered pread.
                choice.reason = format!("{} ({}); fell back to pread", choice.reason, e.cause);
                choice.method = ReadMethod::Pread;
                engine::read_all(choice.method, &src, &w, &opts)?
            }
            r => r?,
        };
        Ok((choice, resident, moved))
    });
    let (choice, resident, moved) = out?;
    Ok(FastResult {
        choice,
        resident,
        bytes: moved.bytes,
        xor: moved.xor,
        counters,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule_picks_by_size_residency_and_cores() {
        assert_eq!(choose(100, 0.0, 2).method, ReadMethod::Pread);
        let warm = choose(2 << 30, 1.0, 2);
        assert_eq!((warm.method, warm.threads), (ReadMethod::Mmap, 2));
        assert!(warm.reason.starts_with("warm"));
        assert_eq!(choose(40 << 20, 1.0, 8).threads, 1);
        let cold = choose(2 << 30, 0.1, 2);
        assert_eq!((cold.method, cold.threads), (ReadMethod::Mmap, 2));
        assert!(cold.reason.starts_with("cold"));
    }
}
