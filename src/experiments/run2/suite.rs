//! The classic `run2`: a block count whose read lands in a time window.

use crate::cache::CacheMode;
use crate::engine::ReadMethod;
use crate::error::Result;
use crate::experiments::Observer;
use crate::experiments::entry::{About, Entry, SuiteContext};
use crate::experiments::run2::{Run2Config, Run2Outcome, Run2Result, run_run2};
use std::time::Duration;

/// `run2 FILE 1M`, with a short window in `--quick`.
pub struct Run2;

impl Entry for Run2 {
    type Output = Run2Result;
    fn about(&self) -> &'static About {
        &About {
            name: "run2",
            title: "run2: a block count for a time window",
            explains: "Doubles the block count until one read lands in a time window (the course's is 5-15 s). A file that is read whole faster than that gets the size that would take the window, predicted from the measured rate.",
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

    fn document(&self, out: &Run2Result) -> crate::report::Document {
        super::report::run2_document(out)
    }

    fn explain(&self, out: &Run2Result) -> Option<String> {
        Some(run2_says(out))
    }
}

/// This run's window and what came of it, in one sentence.
fn run2_says(r: &Run2Result) -> String {
    let (lo, hi) = (r.config.min.as_secs_f64(), r.config.max.as_secs_f64());
    let window = if hi < 1.0 {
        format!("{:.0}-{:.0} ms", lo * 1e3, hi * 1e3)
    } else {
        format!("{lo:.0}-{hi:.0} s")
    };
    let short = if r.config.min < Duration::from_secs(5) {
        " (shortened for this run)"
    } else {
        ""
    };
    let what = match &r.outcome {
        Run2Outcome::Found => match r.last() {
            Some(s) => format!(
                "{} blocks of {} read in {:.3} s",
                s.count,
                crate::size::format_size(r.config.bs),
                s.run.counters.wall.as_secs_f64()
            ),
            None => "a count was found".into(),
        },
        Run2Outcome::FileEnded {
            predicted_min_bytes,
            predicted_max_bytes,
            rate_mib_s,
            rate,
            ..
        } => format!(
            "the whole {} file read faster, at {rate_mib_s:.0} MiB/s (median of {} whole-file reads, {:.0}% interval {:.0}-{:.0}), so a file of {} to {} would take the window",
            crate::size::format_size(r.file_size),
            rate.n,
            rate.ci_level * 100.0,
            rate.ci[0],
            rate.ci[1],
            crate::size::format_size(*predicted_min_bytes),
            crate::size::format_size(*predicted_max_bytes)
        ),
        Run2Outcome::OneBlockTooSlow => "even one block took longer than the window".into(),
        Run2Outcome::Straddled => {
            "neighbouring counts straddled the window (the rate jumped between them)".into()
        }
    };
    format!("Here the window was {window}{short}: {what}.")
}
