//! What a replay does, from a trace: the data files and what their bytes must XOR to, and per
//! traced thread its accesses in time order (read calls, and the windows its page faults
//! mapped), cut into segments of consecutive accesses to one file.
//!
//! Built in one pass over the trace's calls, which are never all held (ten million reads are
//! 1.1 GB as calls): a first pass over them sums up what the plan needs from all of them
//! ([`CallSums`]), and the second hands each to a [`Builder`], which keeps per access its
//! block (and with `--keep-gaps` its gap), 16 or 24 bytes.

pub(super) use super::thread::Segment;
use super::thread::{Costing, PlannedAccess, Thread, stop_cost};
use crate::error::{Error, Result};
use crate::trace::{Call, Fault, FileInfo, FileKind, Op, Trace, mapped_ranges};
use crate::workload::Block;
use serde::de;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;

/// A data file of the replay.
#[derive(Debug, Clone)]
pub(super) struct DataFile {
    pub(super) path: PathBuf,
    /// XOR of every access's bytes (reads and fault windows), when the trace has both parts.
    pub(super) xor: Option<u32>,
    /// Its device and inode as traced (None when the trace has none).
    pub(super) id: Option<(u64, u64)>,
}

/// The whole replay.
#[derive(Debug, Clone, Default)]
pub(super) struct ReplayPlan {
    pub(super) files: Vec<DataFile>,
    /// Per traced thread, its segments in order.
    pub(super) threads: Vec<Vec<Segment>>,
    /// Bytes of read calls and of fault windows.
    pub(super) read_bytes: u64,
    pub(super) mapped_bytes: u64,
    /// Writes to data files (not replayed).
    pub(super) writes: u64,
    /// Of `read_bytes`, those of files the program opened with O_DIRECT.
    pub(super) direct_bytes: u64,
    /// The program used io_uring.
    pub(super) uring: bool,
    /// Some of what it moved through io_uring is not in the trace ([`ReplayPlan::with_uring`]).
    pub(super) uring_unseen: bool,
    /// Of `read_bytes`, those of io_uring read requests.
    pub(super) uring_bytes: u64,
    pub(super) notes: Vec<String>,
    /// Files the program read that the replay leaves out: path, bytes its reads returned,
    /// and why (the kernel's files, program code, files gone since).
    pub(super) left_out: Vec<(PathBuf, u64, &'static str)>,
    /// The gaps: the largest sum of one thread's (what a run waits at least), ns; those
    /// unknown (after a page fault that may have waited for storage, kept as none); a stop's
    /// mean cost beyond the tracer's hold.
    pub(super) gaps_ns: u64,
    pub(super) gaps_unknown: usize,
    pub(super) stop_ns: u64,
    /// The time the program's threads spent in the read calls replayed (the tracer's share
    /// off), ns: what the replay's methods could save at most.
    pub(super) read_ns: u64,
}

impl ReplayPlan {
    /// The plan, told what the trace saw of the program's io_uring requests: all of them are
    /// in its calls unless `seen` counts some unseen; a trace from before they were read
    /// (`None`) has none of them.
    pub(super) fn with_uring(mut self, seen: Option<&crate::trace::UringSeen>) -> Self {
        self.uring_unseen = seen.map_or(self.uring, |s| s.unseen > 0);
        self
    }

    /// Every access.
    pub(super) fn blocks(&self) -> impl Iterator<Item = &Block> {
        self.threads
            .iter()
            .flat_map(|t| t.iter().flat_map(|s| s.blocks.iter()))
    }

    /// Bytes the accesses to each file replay.
    pub(super) fn bytes_per_file(&self) -> Vec<u64> {
        let mut v = vec![0u64; self.files.len()];
        for s in self.threads.iter().flatten() {
            if let Some(x) = v.get_mut(s.file) {
                *x += s.blocks.iter().map(|b| b.len).sum::<u64>();
            }
        }
        v
    }

    /// Leaves the files `out` out: their accesses are dropped, the other files renumbered.
    pub(super) fn leave_out(&mut self, out: &BTreeSet<usize>) {
        let mut renumber = HashMap::new();
        let mut kept = Vec::new();
        for (i, f) in std::mem::take(&mut self.files).into_iter().enumerate() {
            if !out.contains(&i) {
                renumber.insert(i, kept.len());
                kept.push(f);
            }
        }
        self.files = kept;
        for t in self.threads.iter_mut() {
            t.retain(|s| !out.contains(&s.file));
            for s in t.iter_mut() {
                s.file = renumber[&s.file];
            }
        }
    }
}

fn hex(x: &Option<String>) -> Option<u32> {
    x.as_deref().and_then(|x| u32::from_str_radix(x, 16).ok())
}

/// The access a call made with a read, if it made one: its file, offset and bytes.
fn read_of(op: &Op) -> Option<(u32, Block)> {
    let readlike = op.call.reads_file();
    match (readlike && op.ret > 0, op.file, op.off) {
        (true, Some(f), Some(offset)) => Some((
            f,
            Block {
                offset,
                len: op.ret as u64,
            },
        )),
        _ => None,
    }
}

/// What a replay needs from all of a trace's calls before it can take them one by one.
#[derive(Debug, Default, Clone)]
pub(super) struct CallSums {
    /// Calls.
    pub(super) calls: u64,
    /// Calls that read bytes at a known offset (of any file).
    pub(super) reads: u64,
    /// The kept stop costs' sum and number.
    cost_sum: u64,
    cost_n: u64,
    /// Per file: when the first of them was entered.
    first_read: HashMap<u32, u64>,
}

impl CallSums {
    fn add(&mut self, op: &Op) {
        self.calls += 1;
        if let Some(Some(c)) = stop_cost(op) {
            self.cost_sum = self.cost_sum.saturating_add(c);
            self.cost_n += 1;
        }
        if let Some((f, _)) = read_of(op) {
            self.reads += 1;
            let first = self.first_read.entry(f).or_insert(op.t);
            *first = op.t.min(*first);
        }
    }

    fn of(ops: &[Op]) -> CallSums {
        let mut s = CallSums::default();
        ops.iter().for_each(|o| s.add(o));
        s
    }
}

/// Summed as they are read (a trace file's first pass).
impl<'de> de::Deserialize<'de> for CallSums {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct Sums;
        impl<'de> de::Visitor<'de> for Sums {
            type Value = CallSums;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an array of calls")
            }
            fn visit_seq<A: de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> std::result::Result<CallSums, A::Error> {
                let mut s = CallSums::default();
                while let Some(op) = seq.next_element::<Op>()? {
                    s.add(&op);
                }
                Ok(s)
            }
        }
        d.deserialize_seq(Sums)
    }
}

fn refuse(what: String) -> Error {
    Error::usage("not a trace this iolab can replay", what)
}

/// Whether file `i` is data: a regular file, not program code, not the kernel's.
fn data(files: &[FileInfo], i: u32) -> bool {
    files
        .get(i as usize)
        .is_some_and(|x| x.kind == FileKind::File && !x.code && !x.is_kernels())
}

/// A file's size as traced, before or after the run, whichever is larger.
fn largest(info: &FileInfo) -> u64 {
    info.size.max(info.size_after.unwrap_or(0))
}

/// The plan of an in-memory trace.
pub(super) fn plan(t: &Trace, keep_gaps: bool) -> Result<ReplayPlan> {
    let sums = CallSums::of(&t.ops);
    let mut b = Builder::new(&t.files, &t.faults, &sums, keep_gaps)?;
    for op in &t.ops {
        b.op(op)?;
    }
    Ok(b.finish().with_uring(t.uring.as_ref()))
}

/// Builds a plan from the calls handed to it one by one, in the trace's order.
pub(super) struct Builder<'t> {
    files: &'t [FileInfo],
    faults: &'t [Fault],
    /// Each fault's range (its window, or up to the next fault of a forward scan).
    ranges: Vec<(u64, u64)>,
    /// Trace file index to plan file index.
    index: HashMap<u32, usize>,
    threads: BTreeMap<u32, Thread>,
    costing: Costing,
    plan: ReplayPlan,
    /// Calls seen, and the files read by calls and by faults.
    calls: u64,
    read: BTreeSet<u32>,
    faulted: BTreeSet<u32>,
    /// Bytes read from regular files that are not data (the kernel's, program code), by file.
    not_data: BTreeMap<u32, u64>,
    /// Files opened with O_DIRECT.
    direct: BTreeSet<u32>,
}

impl<'t> Builder<'t> {
    /// A builder for a trace of `files` and `faults` whose calls summed to `sums`; refuses, in
    /// one line, a fault that names a file the trace does not list or falls past its end.
    pub(super) fn new(
        files: &'t [FileInfo],
        faults: &'t [Fault],
        sums: &CallSums,
        keep_gaps: bool,
    ) -> Result<Builder<'t>> {
        // A time a file system can hold is nanoseconds in 64 bits (years 1678 to 2262).
        let plausible = |t: i128| i64::try_from(t).is_ok();
        if let Some((k, f)) = files.iter().enumerate().find(|(_, f)| {
            !plausible(f.mtime_ns) || f.mtime_after_ns.is_some_and(|t| !plausible(t))
        }) {
            return Err(refuse(format!(
                "file {k} ({}) has a modification time no file system holds ({} ns)",
                crate::shown::path(&f.os_path()),
                f.mtime_after_ns
                    .filter(|&t| !plausible(t))
                    .unwrap_or(f.mtime_ns)
            )));
        }
        for (k, fault) in faults.iter().enumerate() {
            let Some(info) = files.get(fault.file as usize) else {
                return Err(refuse(format!(
                    "fault {k} names file {}, and the trace lists {}",
                    fault.file,
                    files.len()
                )));
            };
            if data(files, fault.file) && fault.off >= largest(info) && info.size_after.is_some() {
                return Err(refuse(format!(
                    "fault {k} is at {} of {}, past its end ({} bytes)",
                    fault.off,
                    crate::shown::path(&info.os_path()),
                    largest(info)
                )));
            }
        }
        let size = |f: u32| files.get(f as usize).map_or(0, |x| x.size);
        let ranges = mapped_ranges(faults, size);
        let mut threads: BTreeMap<u32, Thread> = BTreeMap::new();
        // Files in the order of their first access.
        let mut firsts: Vec<(u64, u32)> = sums
            .first_read
            .iter()
            .filter(|(f, _)| data(files, **f))
            .map(|(f, t)| (*t, *f))
            .collect();
        for (i, (fault, (_, len))) in faults.iter().zip(&ranges).enumerate() {
            if *len > 0 && data(files, fault.file) {
                threads
                    .entry(fault.tid)
                    .or_default()
                    .faults
                    .push_back(i as u32);
                firsts.push((fault.t, fault.file));
            }
        }
        firsts.sort_unstable();
        let mut plan = ReplayPlan {
            stop_ns: sums.cost_sum / sums.cost_n.max(1),
            ..ReplayPlan::default()
        };
        let mut index = HashMap::new();
        for &(_, f) in &firsts {
            index.entry(f).or_insert_with(|| {
                let file = &files[f as usize];
                plan.files.push(DataFile {
                    path: file.last_path(),
                    xor: None,
                    id: (file.ino != 0).then_some((file.dev, file.ino)),
                });
                plan.files.len() - 1
            });
        }
        Ok(Builder {
            files,
            faults,
            ranges,
            index,
            threads,
            costing: Costing {
                first: firsts.first().map_or(0, |f| f.0),
                mean: plan.stop_ns,
                keep_gaps,
            },
            plan,
            calls: 0,
            read: BTreeSet::new(),
            faulted: BTreeSet::new(),
            not_data: BTreeMap::new(),
            direct: BTreeSet::new(),
        })
    }

    /// The next call; refuses, in one line, a call that names a file the trace does not list,
    /// reads past its file's end (as traced, before or after the run), or comes before its
    /// thread's previous one: replaying it would read what the program never could.
    pub(super) fn op(&mut self, op: &Op) -> Result<()> {
        let k = self.calls;
        self.calls += 1;
        let files = self.files;
        // Its read of a data file, if it made one.
        let any = read_of(op);
        let read = any.filter(|(f, _)| data(files, *f));
        if let Some((f, b)) = any
            && read.is_none()
            && files
                .get(f as usize)
                .is_some_and(|x| x.kind == FileKind::File)
        {
            *self.not_data.entry(f).or_default() += b.len;
        }
        self.check_file(k, op, read)?;
        let th = self.threads.entry(op.tid).or_default();
        if th.last_entry().is_some_and(|t| t > op.t) {
            return Err(refuse(format!(
                "call {k} of thread {} was entered before the one it follows",
                op.tid
            )));
        }
        // The thread's faults before this call, then the call.
        while let Some(&i) = th.faults.front() {
            if self.faults[i as usize].t >= op.t {
                break;
            }
            th.faults.pop_front();
            let a = fault_access(
                th,
                &self.faults[i as usize],
                self.ranges[i as usize],
                files,
                &self.index,
            );
            self.plan.mapped_bytes += a.block.len;
            self.faulted.insert(self.faults[i as usize].file);
            th.access(a);
        }
        match op.call {
            Call::Open if op.ret >= 0 && op.arg.unwrap_or(0) & libc::O_DIRECT as u64 != 0 => {
                self.direct.extend(op.file);
            }
            Call::UringSetup | Call::UringEnter => self.plan.uring = true,
            _ => {}
        }
        if let Some((f, block)) = read
            && let Some(&file) = self.index.get(&f)
        {
            self.plan.read_bytes += block.len;
            if op.call == Call::UringRead {
                self.plan.uring_bytes += block.len;
            }
            if self.direct.contains(&f) {
                self.plan.direct_bytes += block.len;
            }
            self.read.insert(f);
            if op.call != Call::UringRead {
                let held = op.dur.saturating_sub(op.held_exit.saturating_sub(op.held));
                let cost = if op.stops > 0 { self.plan.stop_ns } else { 0 };
                self.plan.read_ns += held.saturating_sub(cost);
            }
            th.access(PlannedAccess {
                t: op.t,
                end: Some(op.t.saturating_add(op.dur)),
                marks: Some(((op.held, op.stops), (op.held_exit, op.stops + 1))),
                before: th.before(op.t),
                file,
                block,
            });
        }
        th.call(op);
        th.settle(self.costing, false);
        Ok(())
    }

    /// Call `k`'s file: listed in the trace, counted when written, and its read (`read`) within
    /// the file's end as traced.
    fn check_file(&mut self, k: u64, op: &Op, read: Option<(u32, Block)>) -> Result<()> {
        let files = self.files;
        let Some(f) = op.file else {
            return Ok(());
        };
        let Some(info) = files.get(f as usize) else {
            return Err(refuse(format!(
                "call {k} names file {f}, and the trace lists {}",
                files.len()
            )));
        };
        if op.call.writes_file() && data(files, f) {
            self.plan.writes += 1;
        }
        // A file gone after the run (a temporary file) grew while it lived, by an unknown
        // size: it is left out (`prune`), not checked.
        if let Some((_, b)) = read
            && b.offset
                .checked_add(b.len)
                .is_none_or(|e| e > largest(info) && info.size_after.is_some())
        {
            return Err(refuse(format!(
                "call {k} reads {} bytes at {} of {}, past its end ({} bytes)",
                b.len,
                b.offset,
                crate::shown::path(&info.os_path()),
                largest(info)
            )));
        }
        Ok(())
    }

    /// The plan, once every call was handed over.
    pub(super) fn finish(mut self) -> ReplayPlan {
        let mut p = std::mem::take(&mut self.plan);
        for (&f, &bytes) in &self.not_data {
            let info = &self.files[f as usize];
            let why = if info.is_kernels() {
                "a /proc or /sys file: the kernel makes its bytes as they are read"
            } else {
                "program code"
            };
            p.left_out.push((info.last_path(), bytes, why));
        }
        for th in self.threads.values_mut() {
            while let Some(i) = th.faults.pop_front() {
                let fault = &self.faults[i as usize];
                let a = fault_access(th, fault, self.ranges[i as usize], self.files, &self.index);
                p.mapped_bytes += a.block.len;
                self.faulted.insert(fault.file);
                th.access(a);
            }
            th.settle(self.costing, true);
        }
        p.gaps_ns = self.threads.values().map(|t| t.gaps_sum).max().unwrap_or(0);
        p.gaps_unknown = self.threads.values().map(|t| t.unknown).sum();
        // A file's expected XOR covers both kinds of access it had.
        for (&f, &i) in &self.index {
            let info = &self.files[f as usize];
            let r = if self.read.contains(&f) {
                hex(&info.xor)
            } else {
                Some(0)
            };
            let m = if self.faulted.contains(&f) {
                hex(&info.mapped_xor)
            } else {
                Some(0)
            };
            p.files[i].xor = r.zip(m).map(|(a, b)| a ^ b);
        }
        p.threads = std::mem::take(&mut self.threads)
            .into_values()
            .map(Thread::segments)
            .filter(|s| !s.is_empty())
            .collect();
        p
    }
}

/// The access fault `f` stands for, its range `range`, on thread `th`.
fn fault_access(
    th: &Thread,
    f: &Fault,
    (offset, len): (u64, u64),
    files: &[FileInfo],
    index: &HashMap<u32, usize>,
) -> PlannedAccess {
    // A fault on a file that was not all cached may have waited for storage: how long it took
    // is not recorded, so the time after it cannot be told apart from the program's own.
    let cached = files
        .get(f.file as usize)
        .is_some_and(|x| x.resident_before.is_some_and(|r| r >= x.size));
    PlannedAccess {
        t: f.t,
        end: cached.then_some(f.t),
        marks: None,
        before: th.before(f.t),
        file: index.get(&f.file).copied().unwrap_or(0),
        block: Block { offset, len },
    }
}

#[cfg(test)]
mod tests;
