//! `fast` on the data file, warm and then cold.

use crate::cache::CacheMode;
use crate::error::Result;
use crate::experiments::Observer;
use crate::experiments::fast::{FastConfig, FastResult, run_fast};
use crate::report;
use crate::suite::findings::{Finding, fast_warm_cold};
use crate::suite::{Entry, SuiteContext, SuiteResult};

fn fast(ctx: &SuiteContext<'_>, cache: CacheMode) -> Result<FastResult> {
    let file = ctx.file();
    let src = crate::engine::open_source(file)?;
    crate::cache::prepare(&src.file, src.size, file, cache, false)?;
    drop(src);
    run_fast(&FastConfig {
        path: file.to_path_buf(),
        method: None,
        threads: None,
        bs: None,
        depth: None,
    })
}

/// `fast` with the file resident.
pub struct FastWarm;

impl Entry for FastWarm {
    type Output = FastResult;
    const NAME: &'static str = "fast_warm";
    const TITLE: &'static str = "fast, warm";
    const EXPLAINS: &'static str = "The whole file's XOR as fast as iolab can, with the page cache full. Using the bytes where they are (mmap) avoids one copy per byte.";

    fn run(&self, ctx: &SuiteContext<'_>, _: &dyn Observer) -> Result<FastResult> {
        fast(ctx, CacheMode::Warm)
    }

    fn table(&self, out: &FastResult) -> String {
        report::classic::fast_talk(out)
    }
}

/// `fast` after evicting the file; it also feeds the warm-vs-cold finding.
pub struct FastCold;

impl Entry for FastCold {
    type Output = FastResult;
    const NAME: &'static str = "fast_cold";
    const TITLE: &'static str = "fast, cold";
    const EXPLAINS: &'static str = "The same after evicting the file: the device and readahead set the pace. Several threads faulting their own parts keep more reads in flight.";

    fn run(&self, ctx: &SuiteContext<'_>, _: &dyn Observer) -> Result<FastResult> {
        fast(ctx, CacheMode::Cold)
    }

    fn table(&self, out: &FastResult) -> String {
        report::classic::fast_talk(out)
    }

    fn findings(&self, cold: &FastResult, suite: &SuiteResult) -> Vec<Finding> {
        suite
            .result::<FastResult>(FastWarm::NAME)
            .map(|warm| fast_warm_cold(&warm, cold))
            .into_iter()
            .collect()
    }
}
