//! A cell as an experiment declares it, and one run of it as the harness makes it. The
//! experiment says *what*: the cache state its files must be in, the work (an engine's read, a
//! write engine's write, or work of its own that times itself) and which runs must agree on
//! their XOR. The harness does the protocol, the same for every experiment, as fio's core
//! invalidates the cache for every engine (`td_io_open_file`):
//! 1. put every file of the cell into the asked state and verify it (`mincore`/`cachestat`);
//! 2. open or map through the engine (untimed);
//! 3. time the work alone, kernel counters beside it;
//! 4. close after the clock (as the classic access benchmark read its clock before munmap);
//! 5. where the kernel hides residency, judge the state from the device bytes the run read;
//! 6. read written data back and check it (outside the clock);
//! 7. record it all in the run ([`CellRun`]).

use crate::cache::{self, CacheMode, CacheState};
use crate::engine::write::{SyncMode, WriteMethod, WriteTarget, prepare_write, verify_written};
use crate::engine::{self, EngineOptions, Moved, ReadMethod, RunLimits};
use crate::error::Result;
use crate::measure::latency::Histogram;
use crate::measure::{Counters, measure};
use crate::source::Source;
use crate::workload::Workload;
use std::time::{Duration, Instant};

/// The cache state a cell's files are put in before each of its runs.
pub struct CacheSpec<'a> {
    /// The state asked for.
    pub mode: CacheMode,
    /// With `Cold`, as root: also drop every clean cache (drop_caches), once per run.
    pub drop_all: bool,
    /// Each file, and how many of its bytes from offset 0 the state is about.
    pub files: Vec<(&'a Source, u64)>,
    /// Files put in the state as well as can be, not verified: a replay's small incidental
    /// files (the loader's cache, a locale file) that other processes keep mapped, so that
    /// no eviction makes them cold. The state's note says which stayed.
    pub incidental: Vec<(&'a Source, u64)>,
}

impl<'a> CacheSpec<'a> {
    /// One file's first `len` bytes in state `mode`.
    pub fn file(src: &'a Source, len: u64, mode: CacheMode, drop_all: bool) -> CacheSpec<'a> {
        CacheSpec {
            mode,
            drop_all,
            files: vec![(src, len)],
            incidental: Vec::new(),
        }
    }
}

/// How long and how much one read run may go on, and whether it times each block.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Limits {
    /// Operations in all (shared out between the parts); `None`: every block.
    pub max_ops: Option<u64>,
    /// The run stops after this long.
    pub duration: Option<Duration>,
    /// Record each operation's latency (the run's [`CellRun::latency`]).
    pub latencies: bool,
}

/// What a cell does in its timed window.
pub enum CellWork<'a> {
    /// A read by an engine: prepared (opened, mapped) before the clock, released after it.
    Read {
        /// The read method.
        method: ReadMethod,
        /// The file.
        src: &'a Source,
        /// Its blocks.
        workload: Workload,
        /// Depth, hints and the like.
        opts: EngineOptions,
        /// Operations, duration, latencies.
        limits: Limits,
    },
    /// A write by a write engine into `target`, read back after the clock as `read_back`
    /// says and checked against the data's definition.
    Write {
        /// The write method.
        method: WriteMethod,
        /// Where it writes.
        target: &'a WriteTarget,
        /// Its blocks.
        workload: Workload,
        /// Durability.
        sync: SyncMode,
        /// Which runs' data is read back and checked.
        read_back: ReadBack,
    },
    /// Work that times itself ([`super::Cells::own`]): from open to close as `fast` and the
    /// course's programs do, several files at once, another process.
    Own,
}

/// Which runs of a write cell are read back and checked against the data written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadBack {
    /// Every run, right after its clock stopped.
    Each,
    /// What the cell's last run left, once the rounds are over (reading back between runs
    /// would leave the data cached for the next one).
    Last,
    /// None (a sweep's many block sizes).
    Never,
}

/// Runs that must agree on their XOR: every run of every cell in `group` that moved
/// `bytes` bytes (any run, when `None`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct XorCheck {
    /// Cells reading the same bytes share a group.
    pub group: u64,
    /// Only runs that moved exactly this many bytes are compared (a limited run read less).
    pub bytes: Option<u64>,
}

impl XorCheck {
    /// Every run in `group`.
    pub fn group(group: u64) -> XorCheck {
        XorCheck { group, bytes: None }
    }

    /// The runs in `group` that moved `bytes`.
    pub fn when_whole(group: u64, bytes: u64) -> XorCheck {
        XorCheck {
            group,
            bytes: Some(bytes),
        }
    }
}

/// A cell as declared: its cache state, its work and its check.
pub struct Cell<'a> {
    /// The state its files are put in (and verified) before each run; `None` when it reads no
    /// cached input (a write, a transfer, a system call).
    pub cache: Option<CacheSpec<'a>>,
    /// What is timed.
    pub work: CellWork<'a>,
    /// Which runs must agree on their XOR; `None` when a run says nothing of a known set of
    /// bytes (touched or copied blocks, a sample).
    pub xor: Option<XorCheck>,
}

impl Cell<'_> {
    /// A cell that times itself, with no cache state and no XOR check (a transfer, a call).
    pub fn own() -> Cell<'static> {
        Cell {
            cache: None,
            work: CellWork::Own,
            xor: None,
        }
    }
}

/// What a cell that times itself ([`CellWork::Own`]) hands back.
#[derive(Debug, Clone, Default)]
pub struct Timed<E> {
    /// What it moved.
    pub moved: Moved,
    /// Its timed window's counters.
    pub counters: Counters,
    /// What else the experiment keeps of the run.
    pub extra: E,
}

/// One run of a cell, as the harness recorded it.
#[derive(Debug, Clone)]
pub struct CellRun<E> {
    /// Wall time, CPU time, faults, context switches and device bytes of the timed work.
    pub counters: Counters,
    /// Bytes moved, their XOR and the requests issued.
    pub moved: Moved,
    /// The cache state the run started from, verified (`None` for cells without one).
    pub cache: Option<CacheState>,
    /// Each operation's latency, when the cell's limits asked for them.
    pub latency: Option<Histogram>,
    /// What the cell's own work kept ([`Timed::extra`]); the default for engine work.
    pub extra: E,
}

impl<E> CellRun<E> {
    /// MiB/s of the bytes moved over the timed wall time.
    pub fn mib_per_s(&self) -> f64 {
        crate::size::mib_per_s(self.moved.bytes, self.counters.wall.as_secs_f64())
    }
}

/// Puts every file of `spec` into its state (evicting each, then dropping every cache once
/// when asked) and verifies it; one state for all of them.
pub(super) fn prepare(spec: &CacheSpec<'_>) -> Result<CacheState> {
    // The incidental files first: the data files' state is the last word.
    let mut stayed = Vec::new();
    for (src, len) in &spec.incidental {
        let s = cache::prepare(&src.file, *len, &src.path, spec.mode, false)?;
        if !s.verified {
            stayed.push(crate::shown::path(&src.path));
        }
    }
    let mut all: Option<CacheState> = None;
    let last = spec.files.len().saturating_sub(1);
    for (k, (src, len)) in spec.files.iter().enumerate() {
        // drop_caches is machine-wide: written once, after the last file's eviction.
        let drop_all = spec.drop_all && k == last;
        let s = cache::prepare(&src.file, *len, &src.path, spec.mode, drop_all)?;
        all = Some(match all {
            None => s,
            Some(a) => a.and(s),
        });
    }
    let mut state = all.unwrap_or_else(|| CacheState::nothing(spec.mode));
    if let Some(first) = stayed.first() {
        let note = format!(
            "{} small file(s) the program also read stayed {} (other processes keep them mapped; the first: {first}); the data files are {}",
            stayed.len(),
            if spec.mode == CacheMode::Cold {
                "cached"
            } else {
                "as they were"
            },
            spec.mode.name()
        );
        state.note = Some(match state.note.take() {
            Some(n) => format!("{n}; {note}"),
            None => note,
        });
    }
    Ok(state)
}

/// One run of a declared cell whose work is an engine's: the whole protocol of the module's
/// doc. (Work of the cell's own goes through [`prepare`] and [`finish`].)
pub(super) fn run_cell<E: Default>(cell: Cell<'_>) -> Result<CellRun<E>> {
    let state = cell.cache.as_ref().map(prepare).transpose()?;
    let mut latency = None;
    let (moved, counters) = match cell.work {
        CellWork::Read {
            method,
            src,
            workload,
            opts,
            limits,
        } => {
            let mut prepared = engine::prepare(method, src, &workload, &opts)?;
            let limits = RunLimits {
                max_ops: limits.max_ops,
                deadline: limits.duration.map(|d| Instant::now() + d),
                latencies: limits.latencies,
                progress: None,
                progress_each: false,
            };
            let (out, counters) = measure(|| prepared.run_limited(limits));
            // Unmapped and closed after the clock.
            drop(prepared);
            let (moved, hist) = out?;
            latency = hist;
            (moved, counters)
        }
        CellWork::Write {
            method,
            target,
            workload,
            sync,
            read_back,
        } => {
            let prepared = prepare_write(method, target, &workload, sync)?;
            let (moved, counters) = measure(|| prepared.run());
            let moved = moved?;
            if read_back == ReadBack::Each {
                check_written(target, &workload, moved.xor)?;
            }
            (moved, counters)
        }
        CellWork::Own => {
            return Err(crate::error::Error::failed(
                "harness",
                "work of the cell's own goes through Cells::own",
            ));
        }
    };
    let mut run = finish(
        state,
        Timed {
            moved,
            counters,
            extra: E::default(),
        },
    )?;
    run.latency = latency;
    Ok(run)
}

/// The record of a run that started from `state`: the state judged from the device where
/// residency is hidden.
pub(super) fn finish<E>(mut state: Option<CacheState>, t: Timed<E>) -> Result<CellRun<E>> {
    if let Some(s) = state.as_mut() {
        s.judge_by_device(t.moved.bytes, t.counters.device_read_bytes);
    }
    Ok(CellRun {
        counters: t.counters,
        moved: t.moved,
        cache: state,
        latency: None,
        extra: t.extra,
    })
}

/// Reads what `target` holds and checks it is the data `workload` writes, whose XOR the
/// engine gave as `xor`.
fn check_written(target: &WriteTarget, workload: &Workload, xor: u32) -> Result<()> {
    verify_written(&target.tmp, workload, xor).map_err(|e| e.at(&target.path))
}

/// For a write cell declared with [`ReadBack::Last`]: reads back what its last run left.
pub(super) fn check_last<E>(cell: &Cell<'_>, last: Option<&CellRun<E>>) -> Result<()> {
    if let (
        CellWork::Write {
            target,
            workload,
            read_back: ReadBack::Last,
            ..
        },
        Some(run),
    ) = (&cell.work, last)
    {
        check_written(target, workload, run.moved.xor)?;
    }
    Ok(())
}
