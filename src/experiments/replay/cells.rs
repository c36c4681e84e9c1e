//! The replay's cells: one method in one cache state. A run prepares the cache of every data file
//! (untimed), then replays each traced thread's segments on a thread of its own, all at once,
//! each segment through the method's engine, and checks every file's XOR.

use super::plan::{ReplayPlan, Segment};
use super::{ReplayMethod, aligned, merged};
use crate::cache::CacheMode;
use crate::engine::{self, EngineOptions, Moved, ReadMethod};
use crate::error::{Error, Result};
use crate::harness::{CacheSpec, Cell, CellRun, CellWork, Cells, Timed, XorCheck};
use crate::measure::measure;
use crate::source::Source;
use crate::workload::{Block, Part, Pattern, Workload};
use std::sync::Arc;

/// A method in a cache state.
#[derive(Debug, Clone, Copy)]
pub(super) struct ReplayCell {
    pub(super) method: ReplayMethod,
    pub(super) cache: CacheMode,
}

pub(super) struct ReplayCells<'a> {
    pub(super) plan: &'a ReplayPlan,
    /// Every data file, opened once (the harness prepares their cache before each run), with
    /// its version then: a file written during the replay is refused, never replayed as is.
    pub(super) sources: Vec<(Source, crate::source::Version)>,
    pub(super) cells: Vec<ReplayCell>,
    pub(super) asked: u64,
    pub(super) drop_all: bool,
    pub(super) depth: u32,
    pub(super) keep_gaps: bool,
    /// The budget's end, and each cell's even share of the budget: a cell's first run still
    /// going after its share (or any run at the end) is cut short, and the method left out,
    /// said: one slow method (mmap-random, cold) does not take the others' time.
    pub(super) deadline: Option<(std::time::Instant, std::time::Duration)>,
    /// Cells that have run once.
    pub(super) ran: Vec<bool>,
}
/// The blocks of `s` as method `m` reads them, and the gap before each.
fn blocks_for(m: ReplayMethod, s: &Segment, size: u64) -> (Arc<[Block]>, Arc<[u64]>) {
    match m {
        ReplayMethod::Merged(n) => merged(&s.blocks, &s.gaps, n),
        _ if m.direct() => (aligned(&s.blocks, size), s.gaps.clone()),
        _ => (s.blocks.clone(), s.gaps.clone()),
    }
}

/// Replays one thread's segments; returns what it moved and each file's XOR.
fn replay_thread(
    m: ReplayMethod,
    segments: &[Segment],
    sources: &[&Source],
    opts: &EngineOptions,
    keep_gaps: bool,
    deadline: Option<std::time::Instant>,
) -> Result<(Moved, Vec<u32>)> {
    let mut moved = Moved::default();
    let mut xors = vec![0u32; sources.len()];
    for s in segments {
        let src = sources[s.file];
        let (blocks, gaps) = blocks_for(m, s, src.size);
        let largest = blocks.iter().map(|b| b.len).max().unwrap_or(1).max(1);
        let want: u64 = blocks.iter().map(|b| b.len).sum();
        let w = Workload {
            // The workers size their buffers (and pieces) by it.
            bs: largest.next_multiple_of(engine::DIRECT_ALIGN),
            len: src.size,
            pattern: Pattern::Seq,
            seed: 1,
            threads: 1,
        };
        let mut part = Part::explicit(blocks, src.size);
        if keep_gaps {
            part = part.with_gaps(gaps);
        }
        let limits = engine::RunLimits {
            deadline,
            ..Default::default()
        };
        let (got, _) =
            engine::prepare_parts(m.engine(), src, &w, vec![part], opts)?.run_limited(limits)?;
        if got.bytes < want && deadline.is_some_and(|d| std::time::Instant::now() >= d) {
            return Err(Error::new(
                crate::ErrorKind::Unsuited,
                "cut short",
                "not measured: its first run alone took more than its share of the budget (a larger --budget measures it)",
            ));
        }
        xors[s.file] ^= got.xor;
        moved.add(got);
    }
    Ok((moved, xors))
}

/// Opens every data file of `plan`, with its version now.
pub(super) fn open_sources(plan: &ReplayPlan) -> Result<Vec<(Source, crate::source::Version)>> {
    plan.files
        .iter()
        .map(|f| {
            let src = crate::source::open_source(&f.path)?;
            let v = crate::source::Version::of(&src.file)
                .map_err(|e| Error::io("cannot stat", &f.path, &e))?;
            Ok((src, v))
        })
        .collect()
}

impl ReplayCells<'_> {
    /// Each file's XOR against the trace's (methods that read exactly the recorded bytes).
    fn check(&self, xors: &[u32]) -> Result<()> {
        for (f, x) in self.plan.files.iter().zip(xors) {
            if let Some(want) = f.xor
                && *x != want
            {
                return Err(Error::failed(
                    "the file's bytes differ from the trace's",
                    format!("XOR over the recorded accesses is {x:08x}, the trace's {want:08x}: it changed since"),
                )
                .at(&f.path));
            }
        }
        Ok(())
    }
}

impl Cells for ReplayCells<'_> {
    type Extra = ();
    fn count(&self) -> usize {
        self.cells.len()
    }
    fn name(&self, i: usize) -> String {
        format!(
            "{} {}",
            self.cells[i].method.name(),
            self.cells[i].cache.name()
        )
    }
    /// Every data file in the cell's cache state; direct methods read more (aligned out), so
    /// they agree among themselves.
    fn cell(&self, i: usize) -> Cell<'_> {
        let ReplayCell { method, cache } = self.cells[i];
        Cell {
            cache: Some(CacheSpec {
                mode: cache,
                drop_all: self.drop_all,
                files: self.sources.iter().map(|(s, _)| (s, s.size)).collect(),
            }),
            work: CellWork::Own,
            xor: Some(XorCheck::group(method.direct() as u64)),
        }
    }
    /// Each traced thread's segments on a thread of its own, all at once.
    fn own(&mut self, i: usize) -> Result<Timed<()>> {
        let method = self.cells[i].method;
        let first = !std::mem::replace(&mut self.ran[i], true);
        let deadline = self.deadline.map(|(end, share)| {
            let now = std::time::Instant::now();
            if first { end.min(now + share) } else { end }
        });
        let opts = EngineOptions::with_depth(self.depth);
        let sources: Vec<&Source> = self.sources.iter().map(|(s, _)| s).collect();
        let sources = &sources;
        let (done, counters) = measure(|| -> Vec<Result<(Moved, Vec<u32>)>> {
            std::thread::scope(|scope| {
                let handles: Vec<_> = self
                    .plan
                    .threads
                    .iter()
                    .map(|segs| {
                        scope.spawn(|| {
                            replay_thread(method, segs, sources, &opts, self.keep_gaps, deadline)
                        })
                    })
                    .collect();
                handles
                    .into_iter()
                    .map(|h| {
                        h.join().unwrap_or_else(|_| {
                            Err(Error::failed("replay", "a replay thread panicked"))
                        })
                    })
                    .collect()
            })
        });
        let mut moved = Moved::default();
        let mut xors = vec![0u32; sources.len()];
        for d in done {
            let (m, x) = d?;
            moved.add(m);
            for (a, b) in xors.iter_mut().zip(x) {
                *a ^= b;
            }
        }
        for (src, v) in &self.sources {
            v.check(&src.file, &src.path, "replayed")?;
        }
        if !method.direct() {
            self.check(&xors)?;
        }
        Ok(Timed {
            moved,
            counters,
            extra: (),
        })
    }
    fn figure(&self, r: &CellRun<()>) -> f64 {
        crate::size::mib_per_s(self.asked, r.counters.wall.as_secs_f64())
    }
}

impl ReplayMethod {
    /// The engine that moves its bytes.
    pub(super) fn engine(&self) -> ReadMethod {
        match *self {
            ReplayMethod::Method(r) | ReplayMethod::Recorded(r) => r,
            ReplayMethod::Merged(_) => ReadMethod::Pread,
        }
    }
}
