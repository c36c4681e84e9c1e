//! The classic `run2`: a block count whose read lands in a time window.

use crate::cache::CacheMode;
use crate::engine::ReadMethod;
use crate::error::Result;
use crate::experiments::Observer;
use crate::experiments::run2::{Run2Config, Run2Result, run_run2};
use crate::report;
use crate::suite::entry::{About, Entry, SuiteContext};
use std::time::Duration;

/// `run2 FILE 1M`, with a short window in `--quick`.
pub struct Run2;

impl Entry for Run2 {
    type Output = Run2Result;
    fn about(&self) -> &'static About {
        &About {
            name: "run2",
            title: "run2: a 5-15 s read",
            explains: "Doubles the block count until one read lands in the window. A file that is read whole faster than that gets the size that would take the window, predicted from the measured rate.",
        }
    }

    fn run(&self, ctx: &SuiteContext<'_>, obs: &dyn Observer) -> Result<Run2Result> {
        let (min, max) = ctx.scale(
            (Duration::from_millis(20), Duration::from_millis(100)),
            (Duration::from_secs(5), Duration::from_secs(15)),
        );
        let cfg = Run2Config {
            path: ctx.file().to_path_buf(),
            bs: 1 << 20,
            min,
            max,
            method: ReadMethod::Read,
            threads: 1,
            cache: CacheMode::Asis,
            drop_all: false,
        };
        run_run2(&cfg, obs)
    }

    fn table(&self, out: &Run2Result) -> String {
        report::classic::run2_lines(out)
    }

    fn markdown(&self, out: &Run2Result) -> Option<String> {
        Some(report::classic::run2_markdown(out))
    }
}
