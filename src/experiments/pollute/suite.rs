//! Streaming beside a hot set: each stream method in a memory cgroup a quarter of the data file
//! (at least 64 MiB).

use super::findings;
use super::report::{pollute_document, pollute_plot};
use crate::engine::write::WriteMethod;
use crate::error::{Error, Result};
use crate::experiments::Observer;
use crate::experiments::entry::{About, Entry, SuiteContext, SuiteResult};
use crate::experiments::pollute::{PolluteConfig, PolluteResult, StreamMethod, run_pollute};
use crate::measure::finding::Finding;

/// `pollute` with the data file as the stream and a group a quarter of its size (at least
/// [`MIN_MEMORY`]).
pub struct Pollute;

/// The stream file is this many times the group's memory.
pub const OVERSIZE: u64 = 4;
/// The smallest group the suite gives pollute.
pub const MIN_MEMORY: u64 = 64 << 20;

impl Entry for Pollute {
    type Output = PolluteResult;
    fn about(&self) -> &'static About {
        &About {
            name: "pollute",
            title: "a stream beside a hot set",
            explains: "A hot set, read at random by a thread that never stops, shares a memory cgroup with a stream through a file larger than the group may hold; each stream method in turn. Uncached I/O (RWF_DONTCACHE, Linux 6.14+) reads and writes through the page cache but drops its pages once done, so a buffered stream no longer pushes other data out; O_DIRECT and fadvise(DONTNEED) behind the reader are the older ways to the same end.",
        }
    }

    fn run(&self, ctx: &SuiteContext<'_>, obs: &dyn Observer) -> Result<PolluteResult> {
        let worker = ctx.cfg.worker.clone().ok_or_else(|| {
            Error::unsupported(
                "cannot run pollute",
                "it runs each stream in a process of its own and needs the iolab program (run by `iolab suite`)",
            )
        })?;
        let size = std::fs::metadata(ctx.file()).map(|m| m.len()).unwrap_or(0);
        // A group under 64 MiB leaves too little for the worker itself: at 32 MiB it was
        // killed in one quick suite of a 64 MiB file out of several.
        let memory = (size / OVERSIZE).max(MIN_MEMORY);
        if size < 2 * memory {
            return Err(Error::new(
                crate::error::ErrorKind::Unsuited,
                "cannot run pollute",
                format!(
                    "its stream must be at least twice the group's memory ({}), and the data file is {}: run the suite with --size {} or more",
                    crate::size::format_size(memory),
                    crate::size::format_size(size),
                    crate::size::format_size(2 * memory)
                ),
            ));
        }
        let mut cfg = PolluteConfig::new(ctx.file().to_path_buf(), memory, worker);
        // Each run of a method gives one ratio: within one run the ticks share its state (the
        // hot set under a read stream ran at 5, 56 and 35 KIOPS in three runs, and two quick
        // suites of two runs each named opposite winners for the written streams), so the
        // verdict takes the runs as the unit and needs three of each (`decide::MIN_RUNS`).
        // On this project's VM the hot set slid for about a second after a stream started.
        cfg.before = ctx.scale(0.4, 1.0);
        cfg.seconds = ctx.scale(1.0, 3.5);
        cfg.tick = ctx.scale(0.08, 0.3125);
        cfg.passes = crate::measure::decide::MIN_RUNS;
        if ctx.cfg.quick {
            cfg.reads = vec![StreamMethod::Read, StreamMethod::Uncached];
            cfg.writes = vec![WriteMethod::Write, WriteMethod::Uncached];
        }
        run_pollute(&cfg, obs)
    }

    fn document(&self, out: &PolluteResult) -> crate::report::Document {
        pollute_document(out, &findings::pollute(out), false)
    }

    fn plot(&self, out: &PolluteResult) -> Option<String> {
        Some(pollute_plot(out))
    }

    fn finding_keys(&self) -> &'static [&'static str] {
        &["pollute-read", "pollute-write"]
    }

    fn explain(&self, out: &PolluteResult) -> Option<String> {
        Some(format!(
            "Here the hot set was {}, the group's limit {} and the read stream {} ({:.1}x the limit).",
            crate::size::format_size(out.hot_size),
            crate::size::format_size(out.limit),
            crate::size::format_size(out.stream_size),
            out.stream_size as f64 / out.limit.max(1) as f64
        ))
    }

    fn findings(&self, out: &PolluteResult, _: &SuiteResult) -> Vec<Finding> {
        findings::pollute(out)
    }
}
