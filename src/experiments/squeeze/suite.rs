//! Bigger than memory: each method in a memory cgroup an eighth of the data file.

use super::findings;
use super::report::{squeeze_document, squeeze_plot};
use crate::error::{Error, Result};
use crate::experiments::Observer;
use crate::experiments::entry::{About, Entry, SuiteContext, SuiteResult};
use crate::experiments::squeeze::{SqueezeConfig, SqueezeResult, run_squeeze};
use crate::measure::finding::Finding;

/// `squeeze` on the data file with `--memory` an eighth of it.
pub struct Squeeze;

/// The file is this many times the group's memory.
pub const OVERSIZE: u64 = 8;

impl Entry for Squeeze {
    type Output = SqueezeResult;
    fn about(&self) -> &'static About {
        &About {
            name: "squeeze",
            title: "bigger than memory",
            explains: "Each method reads random 4 KiB blocks of a file several times larger than the memory its cgroup may use, so every new page evicts another; a mapping pays for eviction with page-table updates and TLB shootdowns, O_DIRECT with io_uring bypasses the cache altogether. The steady state starts once the group is full.",
        }
    }

    fn run(&self, ctx: &SuiteContext<'_>, obs: &dyn Observer) -> Result<SqueezeResult> {
        let worker = ctx.cfg.worker.clone().ok_or_else(|| {
            Error::unsupported(
                "cannot run squeeze",
                "it runs each method in a process of its own and needs the iolab program (run by `iolab suite`)",
            )
        })?;
        let size = std::fs::metadata(ctx.file()).map(|m| m.len()).unwrap_or(0);
        let memory = (size / OVERSIZE).max(SqueezeConfig::MIN_MEMORY);
        let mut cfg = SqueezeConfig::new(ctx.file().to_path_buf(), memory, worker);
        // A steady state needs 3 whole seconds after the group fills (one to two seconds).
        // Quick: a sample every half second, for the 7 samples a side that an interval at 95%
        // of two sides' ratio needs: 5 s left some methods 6 (a level of 0.94), 6 s left 8-11.
        // Quick at a sample every fifth of a second: 3.6 s left 8 or more after the fill
        // (steady from 2 s at the most in the quick suite's runs).
        // Full: three runs of each, 6 s each (the steady state needs 3 whole seconds after the
        // fill), where one run of 10 s was before: the suite's time about as it was.
        cfg.reads.seconds = ctx.scale(3.6, 6.0);
        cfg.reads.tick = ctx.scale(0.2, 1.0);
        // A run's seconds share its state (one run of each named mmap-random in one quick
        // suite and pread in the next): the findings take the runs as the unit, three of each
        // in the full suite; the quick suite has time for one, and says its findings are
        // undecided for that reason.
        cfg.passes = if ctx.cfg.quick {
            1
        } else {
            SqueezeConfig::DEFAULT_PASSES
        };
        run_squeeze(&cfg, obs)
    }

    fn document(&self, out: &SqueezeResult) -> crate::report::Document {
        squeeze_document(out, &findings::squeeze(out))
    }

    fn plot(&self, out: &SqueezeResult) -> Option<String> {
        Some(squeeze_plot(out))
    }

    fn finding_keys(&self) -> &'static [&'static str] {
        &["squeeze-random-4096"]
    }

    fn explain(&self, out: &SqueezeResult) -> Option<String> {
        Some(format!(
            "Here the file was {} and the group's limit {} ({:.1}x), {} s per method.",
            crate::size::format_size(out.file_size),
            crate::size::format_size(out.limit),
            out.oversize,
            out.config.reads.seconds
        ))
    }

    fn findings(&self, out: &SqueezeResult, _: &SuiteResult) -> Vec<Finding> {
        findings::squeeze(out)
    }
}
