//! `iolab vm FILE --part-b`: the pmap lab's Part B, measured. Reading the file with read() against
//! a mapping (warm), and writing with write() and an fsync per block against writing a mapping
//! with one msync at the end, plus write() with one fsync at the end (the same durability as the
//! mapping), rounds interleaved; the page cache as `free -m` shows it before and after; and an
//! explanation of when the lab's direction (mmap writes much faster) appears and when it reverses.

use super::host::{Host, host_facts};
use crate::cache::CacheMode;
use crate::cache::meminfo::{self, FreeLine};
use crate::engine::write::{SyncMode, WriteMethod, WriteTarget, open_target};
use crate::engine::{self, EngineOptions, ReadMethod, Source};
use crate::error::{Error, Result};
use crate::harness::{
    self, CacheSpec, Cell, CellRun, CellWork, Cells, Limits, Observer, ReadBack, Rounds,
};
use crate::measure::stats::{Ratio, Summary, summarize};
use crate::workload::{Pattern, Workload};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// What Part B measures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PartBConfig {
    /// The file to read; the writes go to a scratch file beside it, removed afterwards.
    pub path: PathBuf,
    /// Block size of every read and write.
    pub bs: u64,
    /// Bytes written per write run.
    pub write_len: u64,
    /// Rounds (each runs every cell once).
    #[serde(flatten)]
    pub rounds: Rounds,
}

impl PartBConfig {
    /// Block size by default.
    pub const DEFAULT_BS: u64 = 4096;
    /// Bytes written per run by default (at most the file's size).
    pub const DEFAULT_WRITE_LEN: u64 = 16 << 20;
}

/// One way of moving the data, over the counted rounds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PartBCell {
    /// What it does, in words.
    pub name: String,
    /// MiB/s per counted round.
    pub mib_s: Summary,
    /// Requests to the kernel per run (reads, writes, fsyncs, msyncs).
    pub syscalls: u64,
    /// Page faults per run (minor + major).
    pub faults: u64,
    /// For reads: every counted run started warm, verified (by residency, or where the kernel
    /// hides it by the device bytes the run read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_verified: Option<bool>,
}

/// What Part B found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PartBResult {
    /// The machine it ran on.
    pub host: Host,
    /// What was asked.
    pub config: PartBConfig,
    /// Bytes read per read run (the whole file).
    pub read_len: u64,
    /// read() of the whole file, warm.
    pub read: PartBCell,
    /// A mapping of the whole file, every word XORed, warm.
    pub mmap_read: PartBCell,
    /// write() with an fsync after every block.
    pub write_fsync_each: PartBCell,
    /// Writing a mapping, one msync at the end.
    pub mmap_write_msync_end: PartBCell,
    /// write() with one fsync at the end: the mapping's durability.
    pub write_fsync_end: PartBCell,
    /// mmap read over read().
    pub read_ratio: Option<Ratio>,
    /// mmap write (one msync) over write() with an fsync per block: the lab's comparison.
    pub lab_ratio: Option<Ratio>,
    /// mmap write (one msync) over write() with one fsync: like for like.
    pub fair_ratio: Option<Ratio>,
    /// `free -m` at the start.
    pub free_before: FreeLine,
    /// `free -m` after the reads.
    pub free_after_reads: FreeLine,
    /// `free -m` after the writes.
    pub free_after_writes: FreeLine,
    /// What the figures say, computed from them.
    pub explanation: Vec<String>,
}

struct MethodTally {
    rates: Vec<f64>,
    syscalls: u64,
    faults: u64,
    cache_verified: Option<bool>,
}

impl MethodTally {
    fn cell(self, name: &str) -> PartBCell {
        PartBCell {
            name: name.into(),
            mib_s: summarize(&self.rates),
            syscalls: self.syscalls,
            faults: self.faults,
            cache_verified: self.cache_verified,
        }
    }
}

/// Runs Part B.
pub fn run_partb(cfg: &PartBConfig, command_line: &str, obs: &dyn Observer) -> Result<PartBResult> {
    if cfg.bs == 0 || cfg.write_len == 0 || cfg.rounds.repeat == 0 {
        return Err(Error::usage(
            "invalid Part B settings",
            "--bs, --size and --repeat must be at least 1",
        ));
    }
    let src = engine::open_source(&cfg.path)?;
    if src.size == 0 {
        return Err(Error::usage("nothing to read", "the file is empty").at(&cfg.path));
    }
    let free_before = meminfo::read().free_m();
    let [rd, mr] = reads(cfg, &src, obs)?;
    let free_after_reads = meminfo::read().free_m();
    let [we, me, wend] = writes(cfg, obs)?;
    let free_after_writes = meminfo::read().free_m();
    let read = rd.cell("read() warm");
    let mmap_read = mr.cell("mmap read warm");
    let write_fsync_each = we.cell("write() + fsync per block");
    let mmap_write_msync_end = me.cell("mmap write + one msync");
    let write_fsync_end = wend.cell("write() + one fsync");
    let read_ratio = Ratio::of(&mmap_read.mib_s, &read.mib_s);
    let lab_ratio = Ratio::of(&mmap_write_msync_end.mib_s, &write_fsync_each.mib_s);
    let fair_ratio = Ratio::of(&mmap_write_msync_end.mib_s, &write_fsync_end.mib_s);
    let mut r = PartBResult {
        host: host_facts(Some(&cfg.path), command_line),
        config: cfg.clone(),
        read_len: src.size,
        read,
        mmap_read,
        write_fsync_each,
        mmap_write_msync_end,
        write_fsync_end,
        read_ratio,
        lab_ratio,
        fair_ratio,
        free_before,
        free_after_reads,
        free_after_writes,
        explanation: Vec::new(),
    };
    r.explanation = explain(&r);
    Ok(r)
}

/// The rates, calls, faults and cache verdicts of a cell's counted runs.
fn acc(runs: &[CellRun<()>]) -> MethodTally {
    let mut a = MethodTally {
        rates: runs.iter().map(CellRun::mib_per_s).collect(),
        syscalls: 0,
        faults: 0,
        cache_verified: None,
    };
    for r in runs {
        a.syscalls = r.moved.ops;
        a.faults = r.counters.minor_faults + r.counters.major_faults;
        if let Some(c) = &r.cache {
            a.cache_verified = Some(a.cache_verified.unwrap_or(true) && c.verified);
        }
    }
    a
}

/// Part B's cells: the file read warm with read() and through a mapping; or written with
/// write() and an fsync per block, through a mapping and one msync, and with write() and one
/// fsync, each run read back and checked.
enum PartBCells<'a> {
    Reads {
        src: &'a Source,
        w: Workload,
    },
    Writes {
        target: &'a WriteTarget,
        w: Workload,
    },
}

/// The write cells: method and durability.
const WRITES: [(WriteMethod, SyncMode); 3] = [
    (WriteMethod::Write, SyncMode::Each),
    (WriteMethod::Mmap, SyncMode::End),
    (WriteMethod::Write, SyncMode::End),
];

/// The read cells.
const READS: [ReadMethod; 2] = [ReadMethod::Read, ReadMethod::Mmap];

impl Cells for PartBCells<'_> {
    type Extra = ();
    fn count(&self) -> usize {
        match self {
            PartBCells::Reads { .. } => READS.len(),
            PartBCells::Writes { .. } => WRITES.len(),
        }
    }
    fn name(&self, i: usize) -> String {
        match self {
            PartBCells::Reads { .. } => READS[i].name().to_string(),
            PartBCells::Writes { .. } => {
                let (m, s) = WRITES[i];
                format!("{} sync {}", m.name(), s.name())
            }
        }
    }
    fn cell(&self, i: usize) -> Cell<'_> {
        match self {
            PartBCells::Reads { src, w } => Cell {
                cache: Some(CacheSpec::file(src, src.size, CacheMode::Warm, false)),
                work: CellWork::Read {
                    method: READS[i],
                    src,
                    workload: *w,
                    opts: EngineOptions::default(),
                    limits: Limits::default(),
                },
                xor: None,
            },
            PartBCells::Writes { target, w } => Cell {
                cache: None,
                work: CellWork::Write {
                    method: WRITES[i].0,
                    target,
                    workload: *w,
                    sync: WRITES[i].1,
                    read_back: ReadBack::Each,
                },
                xor: None,
            },
        }
    }
}

/// The file read warm with read() and through a mapping, rounds interleaved.
fn reads(cfg: &PartBConfig, src: &Source, obs: &dyn Observer) -> Result<[MethodTally; 2]> {
    let mut cells = PartBCells::Reads {
        src,
        w: Workload {
            bs: cfg.bs,
            len: src.size,
            pattern: Pattern::Seq,
            seed: 0,
            threads: 1,
        },
    };
    let mut out = harness::run("part B reads", &mut cells, &cfg.rounds, &[], obs)?;
    out.require_all()?;
    Ok([acc(&out.cells[0].runs), acc(&out.cells[1].runs)])
}

/// `write_len` written by each write cell into a scratch file beside the read one (never
/// kept), rounds interleaved.
fn writes(cfg: &PartBConfig, obs: &dyn Observer) -> Result<[MethodTally; 3]> {
    let dir = cfg
        .path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."));
    let scratch = dir.join(format!(".iolab-partb-{}", std::process::id()));
    let target = open_target(&scratch, false)?;
    target.check_space(cfg.write_len)?;
    let mut cells = PartBCells::Writes {
        target: &target,
        w: Workload {
            bs: cfg.bs,
            len: cfg.write_len,
            pattern: Pattern::Seq,
            seed: 1,
            threads: 1,
        },
    };
    let mut out = harness::run("part B writes", &mut cells, &cfg.rounds, &[], obs)
        .map_err(|e| e.at(&cfg.path))?;
    out.require_all()?;
    let accs = [
        acc(&out.cells[0].runs),
        acc(&out.cells[1].runs),
        acc(&out.cells[2].runs),
    ];
    // The scratch file goes before free -m is read after the writes.
    drop(target);
    Ok(accs)
}

/// "a is 2.31x b (interval 2.1-2.5)", or that the runs show no clear difference.
fn compare(a: &str, b: &str, ratio: Option<Ratio>) -> (Option<bool>, String) {
    match ratio {
        None => (None, format!("{a} and {b}: not enough runs to compare")),
        Some(q) => {
            let span = format!("interval {:.2}-{:.2}, {} runs", q.ci[0], q.ci[1], q.runs);
            match q.clear() {
                Some(true) => (Some(true), format!("{a} is {:.2}x {b} ({span})", q.ratio)),
                Some(false) => (
                    Some(false),
                    format!(
                        "{b} is {:.2}x {a} (interval {:.2}-{:.2}, {} runs)",
                        1.0 / q.ratio,
                        1.0 / q.ci[1],
                        1.0 / q.ci[0],
                        q.runs
                    ),
                ),
                None => (
                    None,
                    format!(
                        "no clear difference between {a} and {b} (ratio {:.2}, {span})",
                        q.ratio
                    ),
                ),
            }
        }
    }
}

/// The explanation, from the figures alone.
pub fn explain(r: &PartBResult) -> Vec<String> {
    let bs = crate::size::format_size(r.config.bs);
    let blocks = r.config.write_len.div_ceil(r.config.bs);
    let mut out = Vec::new();
    let (_, reads) = compare("mmap read", "read()", r.read_ratio);
    let pages = r.read_len.div_ceil(crate::sys::page_size() as u64);
    let faults = r.mmap_read.faults;
    let per_fault = if faults > 0 {
        pages as f64 / faults as f64
    } else {
        0.0
    };
    let mapping = if faults == 0 {
        "without a page fault (already mapped)".to_string()
    } else if per_fault >= 1.5 {
        format!(
            "after {faults} page fault(s), {per_fault:.1} pages each (fault-around and large folios map cached neighbours at once)"
        )
    } else {
        format!("after {faults} page fault(s), one page each (no fault-around here)")
    };
    out.push(format!(
        "Reading, warm: {reads}. read() copies each {bs} block out of the page cache ({} calls per run); the mapping reads the {pages} cached pages in place {mapping}.",
        r.read.syscalls
    ));
    let (lab, text) = compare(
        "mmap write + one msync",
        "write() + fsync per block",
        r.lab_ratio,
    );
    out.push(format!("Writing, the lab's comparison: {text}."));
    match lab {
        Some(true) => out.push(format!(
            "This is the lab's direction (mmap 212 MB/s vs write() 23.6 MB/s): write() waited for the device {blocks} times, once per {bs} block, while the mapping's dirty pages went to the device together in the one msync at the end."
        )),
        Some(false) => out.push(
            "The lab's direction does not appear here: the device completes an fsync so fast that waiting once per block costs less than the mapping's page faults.".into(),
        ),
        None => {}
    }
    let (fair, text) = compare(
        "mmap write + one msync",
        "write() + one fsync",
        r.fair_ratio,
    );
    out.push(format!(
        "With the same durability (one fsync for write(), one msync for the mapping): {text}."
    ));
    match (lab, fair) {
        (Some(true), Some(false)) | (Some(true), None) => out.push(
            "So the lab's gap comes from syncing every block, not from the mapping: without a sync per block write() is as fast or faster, since it takes no page fault per page and writes whole blocks into the page cache.".into(),
        ),
        (_, Some(true)) => out.push(
            "Here the mapping wins even like for like: copying into mapped pages cost less than the write() calls.".into(),
        ),
        _ => {}
    }
    let f = |l: &FreeLine| l.buff_cache as i64;
    let read_delta = f(&r.free_after_reads) - f(&r.free_before);
    let write_delta = f(&r.free_after_writes) - f(&r.free_after_reads);
    let file_mib = (r.read_len >> 20) as i64;
    let reads_said = if file_mib > 0 && read_delta >= file_mib / 2 {
        "reading brought the file into the page cache"
    } else if read_delta.abs() <= (file_mib / 2).max(8) {
        "the file was already cached, so reading it added about nothing"
    } else {
        "other processes changed the page cache meanwhile"
    };
    out.push(format!(
        "Page cache (buff/cache of free -m): {} MiB before, {} MiB after reading ({read_delta:+}: {reads_said}), {} MiB after writing ({write_delta:+}; the scratch file is deleted at the end, which frees its cached pages).",
        r.free_before.buff_cache, r.free_after_reads.buff_cache, r.free_after_writes.buff_cache,
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(rates: &[f64]) -> PartBCell {
        PartBCell {
            name: String::new(),
            mib_s: summarize(rates),
            syscalls: 10,
            faults: 3,
            cache_verified: None,
        }
    }

    fn result(lab_a: &[f64], lab_b: &[f64], fair_b: &[f64]) -> PartBResult {
        let (read, mmap_read) = (cell(&[100.0, 101.0, 99.0]), cell(&[100.5, 99.5, 100.0]));
        let (we, me, wend) = (cell(lab_b), cell(lab_a), cell(fair_b));
        PartBResult {
            host: host_facts(None, ""),
            config: PartBConfig {
                path: "f".into(),
                bs: 4096,
                write_len: 1 << 20,
                rounds: Rounds::fixed(3, 0),
            },
            read_len: 1 << 20,
            read_ratio: Ratio::of(&mmap_read.mib_s, &read.mib_s),
            lab_ratio: Ratio::of(&me.mib_s, &we.mib_s),
            fair_ratio: Ratio::of(&me.mib_s, &wend.mib_s),
            read,
            mmap_read,
            write_fsync_each: we,
            mmap_write_msync_end: me,
            write_fsync_end: wend,
            free_before: FreeLine::default(),
            free_after_reads: FreeLine::default(),
            free_after_writes: FreeLine::default(),
            explanation: Vec::new(),
        }
    }

    #[test]
    fn the_labs_direction_is_named_only_when_the_data_show_it() {
        let r = result(
            &[200.0, 210.0, 190.0],
            &[20.0, 22.0, 21.0],
            &[400.0, 390.0, 410.0],
        );
        let text = explain(&r).join("\n");
        assert!(
            text.contains("no clear difference between mmap read and read()"),
            "{text}"
        );
        assert!(
            text.contains("mmap write + one msync is 9.55x write() + fsync per block"),
            "{text}"
        );
        assert!(text.contains("This is the lab's direction"), "{text}");
        assert!(
            text.contains(
                "write() + one fsync is 2.00x mmap write + one msync (interval 1.86-2.16"
            ),
            "{text}"
        );
        assert!(text.contains("comes from syncing every block"), "{text}");
        // The same rates: no winner, no direction claimed.
        let r = result(
            &[100.0, 101.0, 99.0],
            &[100.5, 99.5, 100.0],
            &[100.0, 100.2, 99.8],
        );
        let text = explain(&r).join("\n");
        assert!(!text.contains("lab's direction"), "{text}");
        assert_eq!(text.matches("no clear difference").count(), 3, "{text}");
    }
}
