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
    /// The budget's end, and what a cell's first run may take: a cell's first run still going
    /// after its share (or any run at the end) is cut short, and the method left out, said:
    /// one slow method (uring-direct of 4 KiB reads, mmap-random cold) does not take the
    /// others' rounds. The recorded accesses' share is an even share of the budget; every
    /// other method's, a share of the rounds a first verdict needs ([`Share`]).
    pub(super) deadline: Option<(std::time::Instant, Share)>,
    /// Cells that have run once.
    pub(super) ran: Vec<bool>,
    /// Per source, whether it is incidental: under [`INCIDENTAL`] of the replayed bytes (the
    /// loader's cache, a locale file), put in the cell's state as well as can be, not verified.
    pub(super) incidental: Vec<bool>,
}

/// What a cell's first run may take: the recorded accesses (every comparison needs them) an
/// even share of the budget; every other method what is left of the time one round may take
/// for the rounds of a first verdict to fit, once the methods that ran before it took theirs.
/// So the methods that come first (the advised ones) keep their rounds, and one slow method
/// does not take the others'.
#[derive(Debug, Clone, Copy)]
pub(super) struct Share {
    /// The recorded accesses' share.
    pub(super) recorded: std::time::Duration,
    /// The time one round may take.
    pub(super) round: std::time::Duration,
    /// The rounds of a first verdict (its warm-up included).
    pub(super) rounds: usize,
    /// The first runs' time so far.
    pub(super) spent: std::time::Duration,
}

impl Share {
    /// The shares of `budget` among `cells`.
    pub(super) fn of(budget: std::time::Duration, cells: usize) -> Share {
        let rounds = crate::measure::decide::LOOKS[0] + 1;
        Share {
            recorded: budget / cells.max(1) as u32,
            round: budget / rounds as u32,
            rounds,
            spent: std::time::Duration::ZERO,
        }
    }

    /// What a first run may take now.
    fn now(&self, recorded: bool) -> std::time::Duration {
        if recorded {
            self.recorded
        } else {
            self.round.saturating_sub(self.spent)
        }
    }
}

/// The share of the replayed bytes under which a file is incidental to a cell's cache state.
pub(super) const INCIDENTAL: f64 = 0.01;

/// Which of `plan`'s files are incidental ([`INCIDENTAL`]).
pub(super) fn incidental(plan: &ReplayPlan) -> Vec<bool> {
    let bytes = plan.bytes_per_file();
    let total = bytes.iter().sum::<u64>().max(1) as f64;
    bytes
        .iter()
        .map(|&b| (b as f64) < INCIDENTAL * total)
        .collect()
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

/// Opens every data file of `plan`, with its version now, each only if it is the file traced
/// (device and inode). Run by root on a trace another user owns, the files are opened on a
/// thread with that user's rights only: the trace's paths are that user's words, and root must
/// not read for them what they may not (a trace naming /etc/shadow would have its XOR printed).
pub(super) fn open_sources(
    plan: &ReplayPlan,
    trace: &std::path::Path,
) -> Result<Vec<(Source, crate::source::Version)>> {
    let open_all = || -> Result<Vec<(Source, crate::source::Version)>> {
        plan.files
            .iter()
            .map(|f| {
                let src = crate::source::open_source_of(&f.path, f.id)?;
                let v = crate::source::Version::of(&src.file)
                    .map_err(|e| Error::io("cannot stat", &f.path, &e))?;
                Ok((src, v))
            })
            .collect()
    };
    match owner_not_root(trace) {
        None => open_all(),
        Some((uid, gid)) => std::thread::scope(|s| {
            s.spawn(|| {
                crate::sys::drop_thread_rights(uid, gid).map_err(|e| {
                    Error::failed(
                        "cannot open the trace's files",
                        format!("could not take the rights of its owner (uid {uid}) on a thread: {e}"),
                    )
                    .at(trace)
                })?;
                open_all().map_err(|e| {
                    e.hint(format!(
                        "the trace is user {uid}'s: root opens its files with that user's rights only"
                    ))
                })
            })
            .join()
            .unwrap_or_else(|_| {
                Err(Error::failed(
                    "cannot open the trace's files",
                    "the thread that opens them failed",
                ))
            })
        }),
    }
}

/// The owner (uid, gid) of file `trace` when iolab runs as root and the file is another user's;
/// None otherwise (also when there is no such file: a trace made in this process).
fn owner_not_root(trace: &std::path::Path) -> Option<(u32, u32)> {
    use std::os::unix::fs::MetadataExt;
    if !rustix::process::geteuid().is_root() {
        return None;
    }
    let m = std::fs::metadata(trace).ok()?;
    (m.uid() != 0).then_some((m.uid(), m.gid()))
}

impl ReplayCells<'_> {
    /// A run the deadline cut short, in words: on a method's first run, why it is not
    /// measured (the methods before it fill a round, or one run takes more than its share).
    fn cut_short(
        &self,
        e: Error,
        share: Option<std::time::Duration>,
        first: bool,
        recorded: bool,
    ) -> Error {
        match (e.kind, share, self.deadline) {
            (crate::ErrorKind::Unsuited, Some(share), Some((_, s))) if first && share.is_zero() => {
                Error::new(
                    crate::ErrorKind::Unsuited,
                    "cut short",
                    format!(
                        "not measured: the methods before it fill the time a round may take ({:.2} s, for the {} rounds a first verdict needs; a larger --budget measures it)",
                        s.round.as_secs_f64(),
                        s.rounds
                    ),
                )
            }
            (crate::ErrorKind::Unsuited, Some(share), Some((_, s))) if first => Error::new(
                crate::ErrorKind::Unsuited,
                "cut short",
                format!(
                    "not measured: one run takes more than its share of the budget, {:.2} s ({}; a larger --budget measures it)",
                    share.as_secs_f64(),
                    if recorded {
                        "an even share among the methods".to_string()
                    } else {
                        format!(
                            "what is left of a round once the methods before it ran, for the {} rounds a first verdict needs",
                            s.rounds
                        )
                    }
                ),
            ),
            _ => e,
        }
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
        let (small, data): (Vec<_>, Vec<_>) = self
            .sources
            .iter()
            .zip(&self.incidental)
            .partition(|(_, small)| **small);
        Cell {
            cache: Some(CacheSpec {
                mode: cache,
                drop_all: self.drop_all,
                files: data.into_iter().map(|((s, _), _)| (s, s.size)).collect(),
                incidental: small.into_iter().map(|((s, _), _)| (s, s.size)).collect(),
            }),
            work: CellWork::Own,
            xor: Some(XorCheck::group(method.direct() as u64)),
        }
    }
    /// Each traced thread's segments on a thread of its own, all at once.
    fn own(&mut self, i: usize) -> Result<Timed<()>> {
        let method = self.cells[i].method;
        let first = !std::mem::replace(&mut self.ran[i], true);
        let recorded = matches!(method, ReplayMethod::Recorded(_));
        let share = self.deadline.map(|(_, s)| s.now(recorded));
        let began = std::time::Instant::now();
        let deadline = self.deadline.map(|(end, s)| {
            if first {
                end.min(began + s.now(recorded))
            } else {
                end
            }
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
                        std::thread::Builder::new().spawn_scoped(scope, || {
                            replay_thread(method, segs, sources, &opts, self.keep_gaps, deadline)
                        })
                    })
                    .collect();
                // A thread the system would not make is an error of the replay, not an abort.
                handles
                    .into_iter()
                    .map(|h| match h {
                        Ok(h) => h.join().unwrap_or_else(|_| {
                            Err(Error::failed("replay", "a replay thread panicked"))
                        }),
                        Err(e) => Err(Error::failed(
                            "cannot start a replay thread",
                            crate::error::describe_io(&e),
                        )),
                    })
                    .collect()
            })
        });
        // A method that stays takes its place in every round; one cut short leaves them.
        let cut = done.iter().any(|d| d.is_err());
        if first
            && !cut
            && let Some((_, s)) = self.deadline.as_mut()
        {
            s.spent += began.elapsed();
        }
        let mut moved = Moved::default();
        let mut xors = vec![0u32; sources.len()];
        for d in done {
            let (m, x) = d.map_err(|e| self.cut_short(e, share, first, recorded))?;
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
