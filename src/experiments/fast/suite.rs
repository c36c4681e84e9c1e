//! `fast` on the data file, warm and then cold.

use super::findings::fast_warm_cold;
use crate::cache::CacheMode;
use crate::engine::{Moved, Source};
use crate::error::Result;
use crate::experiments::entry::{About, Entry, SuiteContext, SuiteResult};
use crate::experiments::fast::{FastConfig, FastResult, FastSeries, run_fast};
use crate::harness::{
    BudgetClass, CacheSpec, Cell, CellRun, CellWork, Cells, Observer, Timed, XorCheck,
};
use crate::measure::finding::Finding;

/// `fast` with the file resident, or after evicting it; cold also feeds the warm-vs-cold finding.
pub struct Fast {
    cache: CacheMode,
}

/// `fast` with the file resident.
pub const FAST_WARM: Fast = Fast {
    cache: CacheMode::Warm,
};
/// `fast` after evicting the file.
pub const FAST_COLD: Fast = Fast {
    cache: CacheMode::Cold,
};

impl Entry for Fast {
    type Output = FastSeries;
    fn about(&self) -> &'static About {
        match self.cache {
            CacheMode::Warm => &About {
                name: "fast_warm",
                title: "fast, warm",
                explains: "The whole file's XOR as fast as iolab can, with the page cache full. Using the bytes where they are (mmap) avoids one copy per byte, but small page-cache folios can make the copy (pread) win, so a large file is probed first.",
            },
            _ => &About {
                name: "fast_cold",
                title: "fast, cold",
                explains: "The same after evicting the file: the device and readahead set the pace, so what counts is how many reads a method keeps in flight.",
            },
        }
    }

    /// Runs enough for the median interval of each side at 97.5%, so that the warm-against-
    /// cold ratio of medians holds at 95%; the harness puts the cache into this entry's state
    /// and verifies it before each, and every run carries its verdict.
    fn run(&self, ctx: &SuiteContext<'_>, obs: &dyn Observer) -> Result<FastSeries> {
        let mut cell = FastCell {
            src: crate::engine::open_source(ctx.file())?,
            cache: self.cache,
        };
        let rounds = ctx.rounds(BudgetClass::Ratio);
        let runs = crate::harness::run("fast", &mut cell, &rounds, &[], obs)?.into_single()?;
        Ok(FastSeries::of(
            runs.runs.into_iter().filter_map(with_cache).collect(),
        ))
    }

    fn document(&self, out: &FastSeries) -> crate::report::Document {
        super::report::fast_series(out)
    }

    fn finding_keys(&self) -> &'static [&'static str] {
        match self.cache {
            CacheMode::Warm => &[],
            _ => &["fast-warm-cold"],
        }
    }

    fn explain(&self, out: &FastSeries) -> Option<String> {
        fast_says(out)
    }

    fn findings(&self, this: &FastSeries, suite: &SuiteResult) -> Vec<Finding> {
        if self.cache == CacheMode::Warm {
            return Vec::new();
        }
        suite
            .result::<FastSeries>(FAST_WARM.about().name)
            .and_then(|warm| fast_warm_cold(&warm, this))
            .into_iter()
            .collect()
    }
}

/// `fast` on the file from one cache state, as the harness runs it.
struct FastCell {
    src: Source,
    cache: CacheMode,
}

impl Cells for FastCell {
    type Extra = Option<FastResult>;
    fn count(&self) -> usize {
        1
    }
    fn name(&self, _: usize) -> String {
        format!("fast {}", self.cache.name())
    }
    fn cell(&self, _: usize) -> Cell<'_> {
        Cell {
            cache: Some(CacheSpec::file(&self.src, self.src.size, self.cache, false)),
            work: CellWork::Own,
            xor: Some(XorCheck::group(0)),
        }
    }
    /// `fast` times itself, from open to close.
    fn own(&mut self, _: usize) -> Result<Timed<Option<FastResult>>> {
        let r = run_fast(&FastConfig::new(self.src.path.clone()))?;
        Ok(Timed {
            moved: Moved {
                bytes: r.bytes,
                xor: r.xor,
                ..Moved::default()
            },
            counters: r.counters,
            extra: Some(r),
        })
    }
    fn figure(&self, r: &CellRun<Option<FastResult>>) -> f64 {
        r.extra.as_ref().map_or(0.0, FastResult::mib_per_s)
    }
}

/// A run's result with the cache state it started from.
fn with_cache(run: CellRun<Option<FastResult>>) -> Option<FastResult> {
    let mut r = run.extra?;
    r.cache = run.cache;
    Some(r)
}

/// What `fast` chose in these runs and why, from the runs themselves: one sentence per
/// distinct choice, with how many runs made it.
fn fast_says(s: &FastSeries) -> Option<String> {
    let mut seen: Vec<(String, String, usize)> = Vec::new();
    for r in &s.runs {
        let c = &r.choice;
        let plan = format!(
            "{} with {} thread(s) in {} blocks",
            c.method.name(),
            c.threads,
            crate::size::format_size(c.bs)
        );
        match seen.iter_mut().find(|(p, _, _)| *p == plan) {
            Some(e) => e.2 += 1,
            None => seen.push((plan, c.reason.clone(), 1)),
        }
    }
    if seen.is_empty() {
        return None;
    }
    let n = s.runs.len();
    let parts: Vec<String> = seen
        .iter()
        .map(|(plan, why, k)| format!("{k} of {n} runs read it with {plan} ({why})"))
        .collect();
    Some(format!("Here {}.", parts.join("; ")))
}
