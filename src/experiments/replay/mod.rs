//! `iolab replay TRACE`: the file reads a traced program made (`iolab trace --out`), replayed
//! with each read method through the harness: same files, same offsets and lengths, each traced
//! thread's reads of a file in its order on a thread of its own, files one after another, as
//! fast as possible. Every method must read the same bytes: the XOR over the reads equals the
//! trace's per file (checked at every run), so a file that changed since the trace is caught.
//! Direct methods read the reads aligned out to 4 KiB; the extra bytes are counted.

mod report;
pub use report::{render, rows};

use crate::cache::{self, CacheMode};
use crate::engine::{self, EngineOptions, Moved, ReadMethod};
use crate::error::{Error, Result};
use crate::experiments::Observer;
use crate::harness::{self, Cells, Comparison, Plan, RoundsTaken};
use crate::measure::finding::Finding;
use crate::measure::stats::{Summary, summarize};
use crate::trace::{Call, FileKind, Trace};
use crate::workload::{Block, Part, Workload};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What to replay and how.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplayConfig {
    /// The trace file.
    pub trace: PathBuf,
    /// The methods, `pread` (the reads as recorded) first.
    pub methods: Vec<ReplayMethod>,
    /// Cache states.
    pub caches: Vec<CacheMode>,
    /// Time the rounds may take.
    #[serde(with = "crate::measure::secs")]
    pub budget: Duration,
    /// As root, also drop every clean page before cold runs.
    pub drop_all: bool,
}

/// A way to replay the reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReplayMethod {
    /// An engine's method over the recorded reads (direct ones aligned out).
    Method(ReadMethod),
    /// Recorded reads that follow one another merged into reads of up to this many bytes, with
    /// pread: what larger requests would change.
    Merged(u64),
}

impl ReplayMethod {
    /// Its name in tables.
    pub fn name(&self) -> String {
        match self {
            ReplayMethod::Method(ReadMethod::Pread) => "as recorded (pread)".to_string(),
            ReplayMethod::Method(m) => m.name().to_string(),
            ReplayMethod::Merged(n) => format!("pread {} merged", crate::size::format_size(*n)),
        }
    }

    /// The default set: as recorded, each mapping hint, io_uring, O_DIRECT both ways, uncached,
    /// and merged 128 KiB reads.
    pub fn defaults() -> Vec<ReplayMethod> {
        use ReadMethod::*;
        let mut v: Vec<ReplayMethod> = [
            Pread,
            Mmap,
            MmapRandom,
            MmapWillneed,
            Uring,
            Direct,
            UringDirect,
            Uncached,
        ]
        .into_iter()
        .map(ReplayMethod::Method)
        .collect();
        v.push(ReplayMethod::Merged(128 << 10));
        v
    }

    fn direct(&self) -> bool {
        matches!(self, ReplayMethod::Method(m) if m.is_direct())
    }
}

/// One file's reads: per traced thread, in order.
#[derive(Debug, Clone)]
struct FileReads {
    path: PathBuf,
    size: u64,
    threads: Vec<Arc<[Block]>>,
    xor: Option<u32>,
}

/// One method in one cache state, summarised.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplayRow {
    /// The method.
    pub method: String,
    /// The cache state.
    pub cache: CacheMode,
    /// Wall time of the replay, seconds.
    pub seconds: Summary,
    /// Bytes read per second (the recorded reads' bytes; direct's extra bytes not counted).
    pub mib_s: Summary,
    /// Bytes read per run, extra aligned bytes included.
    pub bytes: u64,
    /// System calls or io_uring requests per run.
    pub ops: u64,
    /// Why it did not run here.
    pub unsupported: Option<String>,
}

/// What a replay found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplayResult {
    /// The traced command.
    pub command: Vec<String>,
    /// Files replayed.
    pub files: usize,
    /// Reads replayed per run.
    pub reads: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Share of reads that continued the previous one of their file.
    pub sequential: f64,
    /// The most common read size.
    pub typical_read: u64,
    /// Per method and cache state.
    pub rows: Vec<ReplayRow>,
    /// Per cache state: the fastest method against the reads as recorded, or none clearly.
    pub findings: Vec<Finding>,
    /// How the rounds went.
    pub rounds: RoundsTaken,
    /// What the replay leaves out or should be known.
    pub notes: Vec<String>,
}

/// The reads of `t` worth replaying: read calls with a known offset of regular files other than
/// program code.
fn reads_of(t: &Trace) -> (Vec<FileReads>, Vec<String>) {
    let mut per: BTreeMap<u32, BTreeMap<u32, Vec<Block>>> = BTreeMap::new();
    let mut order: Vec<u32> = Vec::new();
    for op in &t.ops {
        let (Some(f), Some(off)) = (op.file, op.off) else {
            continue;
        };
        let Some(info) = t.files.get(f as usize) else {
            continue;
        };
        let readlike = op.call.reads() || op.call == Call::Splice;
        // Program and library files (the loader's reads of their headers) are not the data;
        // /proc and /sys files are the kernel's, made as they are read.
        let kernel = info.path.starts_with("/proc/") || info.path.starts_with("/sys/");
        if !readlike || op.ret <= 0 || info.kind != FileKind::File || info.code || kernel {
            continue;
        }
        if !per.contains_key(&f) {
            order.push(f);
        }
        let block = Block {
            offset: off,
            len: op.ret as u64,
        };
        per.entry(f)
            .or_default()
            .entry(op.tid)
            .or_default()
            .push(block);
    }
    let files: Vec<FileReads> = order
        .into_iter()
        .filter_map(|f| {
            let info = &t.files[f as usize];
            let threads = per.remove(&f)?.into_values().map(Arc::from).collect();
            Some(FileReads {
                path: PathBuf::from(&info.path),
                size: info.size_after.unwrap_or(info.size),
                threads,
                xor: info
                    .xor
                    .as_deref()
                    .and_then(|x| u32::from_str_radix(x, 16).ok()),
            })
        })
        .collect();
    let mut notes = Vec::new();
    let data_file = |f: u32| {
        t.files
            .get(f as usize)
            .is_some_and(|x| x.kind == FileKind::File && !x.code)
    };
    let mapped = t.faults.iter().filter(|x| data_file(x.file)).count();
    if mapped > 0 {
        let read: u64 = files
            .iter()
            .flat_map(|f| f.threads.iter().flat_map(|b| b.iter().map(|b| b.len)))
            .sum();
        let page = crate::sys::page_size() as u64;
        let most = mapped as u64 * page > read;
        notes.push(format!(
            "{mapped} page faults of mapped access are not replayed (only read calls are){}",
            if most {
                ": the program's file data came mostly through its mappings, so this replay covers only a small share of it"
            } else {
                ""
            }
        ));
    }
    let writes = t
        .ops
        .iter()
        .filter(|o| o.call.writes() && o.file.is_some_and(data_file))
        .count();
    if writes > 0 {
        notes.push(format!(
            "{writes} writes to files are not replayed (they would change them)"
        ));
    }
    (files, notes)
}

/// Reads merged where one continues the previous, up to `max` bytes.
fn merged(blocks: &[Block], max: u64) -> Arc<[Block]> {
    let mut out: Vec<Block> = Vec::new();
    for b in blocks {
        match out.last_mut() {
            Some(l) if l.offset + l.len == b.offset && l.len + b.len <= max => l.len += b.len,
            _ => out.push(*b),
        }
    }
    out.into()
}

/// Reads aligned out to O_DIRECT's 4 KiB (ending at the file's end at most).
fn aligned(blocks: &[Block], size: u64) -> Arc<[Block]> {
    let a = engine::DIRECT_ALIGN;
    blocks
        .iter()
        .map(|b| {
            let s = b.offset / a * a;
            let e = (b.offset + b.len).div_ceil(a) * a;
            Block {
                offset: s,
                // The file's end is the last block's end (the engine reads it aligned).
                len: e.min(size).saturating_sub(s),
            }
        })
        .collect()
}

/// One replay run.
#[derive(Debug, Clone, Copy)]
struct Run {
    wall: Duration,
    moved: Moved,
    asked: u64,
}

struct Cell {
    method: ReplayMethod,
    cache: CacheMode,
}

struct ReplayCells<'a> {
    cfg: &'a ReplayConfig,
    files: &'a [FileReads],
    cells: Vec<Cell>,
    asked: u64,
}

impl ReplayCells<'_> {
    fn blocks(&self, m: ReplayMethod, f: &FileReads) -> Vec<Arc<[Block]>> {
        f.threads
            .iter()
            .map(|b| match m {
                ReplayMethod::Merged(n) => merged(b, n),
                _ if m.direct() => aligned(b, f.size),
                _ => b.clone(),
            })
            .collect()
    }

    fn engine_of(m: ReplayMethod) -> ReadMethod {
        match m {
            ReplayMethod::Method(r) => r,
            ReplayMethod::Merged(_) => ReadMethod::Pread,
        }
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
        let (m, mode) = (self.cells[i].method, self.cells[i].cache);
        let mut sources = Vec::with_capacity(self.files.len());
        for f in self.files {
            let src = crate::source::open_source(&f.path)?;
            cache::prepare(&src.file, src.size, &src.path, mode, self.cfg.drop_all)?;
            sources.push(src);
        }
        let opts = EngineOptions::with_depth(16);
        let start = Instant::now();
        let mut moved = Moved::default();
        for (f, src) in self.files.iter().zip(&sources) {
            let lists = self.blocks(m, f);
            let largest = lists.iter().flat_map(|b| b.iter().map(|b| b.len)).max();
            let parts: Vec<Part> = lists
                .into_iter()
                .map(|b| Part::explicit(b, src.size))
                .collect();
            let w = Workload {
                // The workers size their buffers (and pieces) by it.
                bs: largest
                    .unwrap_or(1)
                    .max(1)
                    .next_multiple_of(engine::DIRECT_ALIGN),
                len: src.size,
                pattern: crate::workload::Pattern::Seq,
                seed: 1,
                threads: parts.len(),
            };
            let prepared = engine::prepare_parts(Self::engine_of(m), src, &w, parts, &opts)?;
            let got = prepared.run()?;
            if !m.direct()
                && let Some(want) = f.xor
                && got.xor != want
            {
                return Err(Error::failed(
                    "the file's bytes differ from the trace's",
                    format!(
                        "XOR over the recorded reads is {:08x}, the trace's {want:08x}: it changed since",
                        got.xor
                    ),
                )
                .at(&f.path));
            }
            moved.add(got);
        }
        Ok(Run {
            wall: start.elapsed(),
            moved,
            asked: self.asked,
        })
    }
    fn figure(&self, r: &Run) -> f64 {
        crate::size::mib_per_s(r.asked, r.wall.as_secs_f64())
    }
    fn wall(&self, r: &Run) -> Option<Duration> {
        Some(r.wall)
    }
    fn xor(&self, i: usize, r: &Run) -> Option<(u64, u32)> {
        // Direct methods read more (aligned out): they agree among themselves.
        let direct = self.cells[i].method.direct();
        Some((direct as u64, r.moved.xor))
    }
}

/// Replays `cfg.trace`.
pub fn run_replay(cfg: &ReplayConfig, obs: &dyn Observer) -> Result<ReplayResult> {
    let t = Trace::load(&cfg.trace)?;
    let (files, mut notes) = reads_of(&t);
    if files.is_empty() {
        return Err(Error::usage(
            "nothing to replay",
            "the trace has no read calls of regular files",
        )
        .at(&cfg.trace));
    }
    let (files, gone): (Vec<FileReads>, Vec<FileReads>) =
        files.into_iter().partition(|f| f.path.exists());
    if !gone.is_empty() {
        notes.push(format!(
            "{} file(s) the program read no longer exist and are left out (the first: {})",
            gone.len(),
            gone[0].path.display()
        ));
    }
    if files.is_empty() {
        return Err(
            Error::failed("nothing to replay", "every file the program read is gone")
                .at(&cfg.trace),
        );
    }
    check_unchanged(&t, &files)?;
    let all: Vec<&Block> = files
        .iter()
        .flat_map(|f| f.threads.iter().flat_map(|b| b.iter()))
        .collect();
    let asked: u64 = all.iter().map(|b| b.len).sum();
    let mut cells = Vec::new();
    for &cache in &cfg.caches {
        for &method in &cfg.methods {
            cells.push(Cell { method, cache });
        }
    }
    let per_cache = cfg.methods.len();
    let comparisons: Vec<Comparison> = (0..cfg.caches.len())
        .flat_map(|c| {
            (1..per_cache).map(move |k| Comparison {
                a: c * per_cache + k,
                b: c * per_cache,
            })
        })
        .collect();
    let mut rc = ReplayCells {
        cfg,
        files: &files,
        cells,
        asked,
    };
    let out = harness::run(
        "replay",
        &mut rc,
        &Plan::adaptive(cfg.budget),
        &comparisons,
        obs,
    )?;
    let rounds = RoundsTaken::of(&out);
    notes.extend(out.warnings.iter().cloned());
    let mut rows = Vec::new();
    for (cell, runs) in rc.cells.iter().zip(&out.cells) {
        rows.push(row(cell, &runs.runs, runs.skipped.as_ref(), asked));
    }
    let findings = report::findings(&rows, &cfg.caches, per_cache, &out.verdicts, &comparisons);
    let mut counts: BTreeMap<u64, u64> = BTreeMap::new();
    for b in &all {
        *counts.entry(b.len).or_default() += 1;
    }
    let typical = counts
        .iter()
        .max_by_key(|(len, n)| (**n, **len))
        .map_or(0, |(len, _)| *len);
    let seq = {
        let mut n = 0u64;
        let mut s = 0u64;
        for f in &files {
            for b in &f.threads {
                n += b.len() as u64;
                s += b
                    .windows(2)
                    .filter(|w| w[0].offset + w[0].len == w[1].offset)
                    .count() as u64;
            }
        }
        if n > 0 { s as f64 / n as f64 } else { 0.0 }
    };
    Ok(ReplayResult {
        command: t.command.clone(),
        files: files.len(),
        reads: all.len() as u64,
        bytes: asked,
        sequential: seq,
        typical_read: typical,
        rows,
        findings,
        rounds,
        notes,
    })
}

/// Refuses a file whose size or modification time differs from the trace's (after the run).
fn check_unchanged(t: &Trace, files: &[FileReads]) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    for f in files {
        let info = t
            .files
            .iter()
            .find(|x| std::path::Path::new(&x.path) == f.path);
        let meta =
            std::fs::metadata(&f.path).map_err(|e| Error::io("cannot replay", &f.path, &e))?;
        let Some(info) = info else { continue };
        let mtime = meta.mtime() as i128 * 1_000_000_000 + meta.mtime_nsec() as i128;
        let want_size = info.size_after.unwrap_or(info.size);
        let want_mtime = info.mtime_after_ns.unwrap_or(info.mtime_ns);
        if meta.len() != want_size || mtime != want_mtime {
            return Err(Error::failed(
                "the file changed since the trace",
                format!(
                    "size {} (trace: {want_size}), modified {} s later",
                    meta.len(),
                    (mtime - want_mtime) as f64 / 1e9
                ),
            )
            .at(&f.path)
            .hint("trace the program again"));
        }
    }
    Ok(())
}

fn row(cell: &Cell, runs: &[Run], skipped: Option<&Error>, asked: u64) -> ReplayRow {
    let secs: Vec<f64> = runs.iter().map(|r| r.wall.as_secs_f64()).collect();
    let rates: Vec<f64> = secs
        .iter()
        .map(|s| crate::size::mib_per_s(asked, *s))
        .collect();
    ReplayRow {
        method: cell.method.name(),
        cache: cell.cache,
        seconds: summarize(&secs),
        mib_s: summarize(&rates),
        bytes: runs.first().map_or(0, |r| r.moved.bytes),
        ops: runs.first().map_or(0, |r| r.moved.ops),
        unsupported: skipped.map(|e| e.cause.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(offset: u64, len: u64) -> Block {
        Block { offset, len }
    }

    #[test]
    fn reads_that_follow_merge_up_to_the_limit_and_direct_aligns_out() {
        let reads = [
            b(0, 4096),
            b(4096, 4096),
            b(8192, 100),
            b(20000, 10),
            b(20010, 10),
        ];
        assert_eq!(
            &merged(&reads, 8192)[..],
            &[b(0, 8192), b(8192, 100), b(20000, 20)]
        );
        assert_eq!(&merged(&reads, 1 << 20)[..], &[b(0, 8292), b(20000, 20)]);
        // Aligned out to 4 KiB, ending at the file's end at most.
        assert_eq!(
            &aligned(&[b(5000, 10), b(8192, 100)], 8250)[..],
            &[b(4096, 4096), b(8192, 58)]
        );
    }
}
