//! The replay's cells: one method in one cache state. A run prepares the cache of every data file
//! (untimed), then replays each traced thread's segments on a thread of its own, all at once,
//! each segment through the method's engine, and checks every file's XOR.

use super::plan::{Plan, Segment};
use super::{ReplayMethod, aligned, merged};
use crate::cache::{self, CacheMode};
use crate::engine::{self, EngineOptions, Moved, ReadMethod};
use crate::error::{Error, Result};
use crate::harness::Cells;
use crate::source::Source;
use crate::workload::{Block, Part, Pattern, Workload};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// One replay run.
#[derive(Debug, Clone, Copy)]
pub(super) struct Run {
    pub(super) wall: Duration,
    pub(super) moved: Moved,
}

/// A method in a cache state.
#[derive(Debug, Clone, Copy)]
pub(super) struct Cell {
    pub(super) method: ReplayMethod,
    pub(super) cache: CacheMode,
}

pub(super) struct ReplayCells<'a> {
    pub(super) plan: &'a Plan,
    pub(super) cells: Vec<Cell>,
    pub(super) asked: u64,
    pub(super) drop_all: bool,
    pub(super) depth: u32,
    pub(super) keep_gaps: bool,
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
    sources: &[Source],
    opts: &EngineOptions,
    keep_gaps: bool,
) -> Result<(Moved, Vec<u32>)> {
    let mut moved = Moved::default();
    let mut xors = vec![0u32; sources.len()];
    for s in segments {
        let src = &sources[s.file];
        let (blocks, gaps) = blocks_for(m, s, src.size);
        let largest = blocks.iter().map(|b| b.len).max().unwrap_or(1).max(1);
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
        let got = engine::prepare_parts(m.engine(), src, &w, vec![part], opts)?.run()?;
        xors[s.file] ^= got.xor;
        moved.add(got);
    }
    Ok((moved, xors))
}

impl ReplayCells<'_> {
    /// Opens every data file and puts it in the cache state asked (untimed).
    fn sources(&self, mode: CacheMode) -> Result<Vec<Source>> {
        let mut sources = Vec::with_capacity(self.plan.files.len());
        for f in &self.plan.files {
            let src = crate::source::open_source(&f.path)?;
            cache::prepare(&src.file, src.size, &src.path, mode, self.drop_all)?;
            sources.push(src);
        }
        Ok(sources)
    }

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
    type Run = Run;
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
    fn run(&mut self, i: usize) -> Result<Run> {
        let Cell { method, cache } = self.cells[i];
        let sources = self.sources(cache)?;
        let opts = EngineOptions::with_depth(self.depth);
        let start = Instant::now();
        let done: Vec<Result<(Moved, Vec<u32>)>> = std::thread::scope(|scope| {
            let handles: Vec<_> = self
                .plan
                .threads
                .iter()
                .map(|segs| {
                    scope.spawn(|| replay_thread(method, segs, &sources, &opts, self.keep_gaps))
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
        });
        let wall = start.elapsed();
        let mut moved = Moved::default();
        let mut xors = vec![0u32; sources.len()];
        for d in done {
            let (m, x) = d?;
            moved.add(m);
            for (a, b) in xors.iter_mut().zip(x) {
                *a ^= b;
            }
        }
        if !method.direct() {
            self.check(&xors)?;
        }
        Ok(Run { wall, moved })
    }
    fn figure(&self, r: &Run) -> f64 {
        crate::size::mib_per_s(self.asked, r.wall.as_secs_f64())
    }
    fn wall(&self, r: &Run) -> Option<Duration> {
        Some(r.wall)
    }
    fn xor(&self, i: usize, r: &Run) -> Option<(u64, u32)> {
        // Direct methods read more (aligned out): they agree among themselves.
        Some((self.cells[i].method.direct() as u64, r.moved.xor))
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
