//! The trace's record while the program runs, the same whichever tracer fills it: the files
//! seen, each call kept ([`Op`]: process, thread, file, call, offset, length, result, times),
//! the mappings over time, each thread's life and timed calls, the kernel's counters and the
//! notes. The ptrace tracer (`ptrace/`) and the kernel tracer (`ebpf/`) each keep their own
//! state beside it, and [`super::finish::finish`] turns it into a [`super::Trace`].

use super::model::Spaces;
use super::{
    CacheSeen, Call, CallTime, FileInfo, FileKind, KernelIo, Op, Span, StopCost, ThreadTimes,
    UringSeen,
};
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::collections::{BTreeMap, BTreeSet};

/// What a trace has recorded so far.
pub struct Recording {
    /// CLOCK_MONOTONIC at the start, ns.
    pub t0: u64,
    /// Files seen, in order.
    pub files: Vec<FileInfo>,
    /// Calls recorded.
    pub ops: Vec<Op>,
    /// File mappings over time.
    pub spaces: Spaces,
    /// The kernel's counters of exited threads.
    pub kernel: KernelIo,
    /// Processes seen.
    pub processes: u32,
    /// Threads seen.
    pub threads: u32,
    /// Stops the tracer answered (the ptrace tracer's; the kernel's runs on).
    pub stops: u64,
    /// What io_uring moved, as seen.
    pub uring: UringSeen,
    /// The page cache's work for the whole run (the kernel tracer fills it).
    pub cache: Option<CacheSeen>,
    /// Notes, each once.
    pub notes: BTreeSet<String>,
    /// The launcher (`iolab trace-exec`) has not exec'd the program yet.
    pub launching: bool,
    /// The launcher's counts at the program's execve, taken off the kernel's sums.
    pub baseline: Option<KernelIo>,
    /// The program's first process.
    pub root: Option<u32>,
    /// Per thread, its life and the calls only timed (as each thread exited).
    pub thread_times: Vec<ThreadTimes>,
    /// Per live thread, the calls only timed so far, by number.
    pub timed: HashMap<i32, BTreeMap<i64, CallTime>>,
    /// Timed calls that lasted [`super::SPAN_NS`] or more.
    pub spans: Vec<Span>,
    /// What a traced call costs, from the launcher's calibration (ptrace).
    pub stop_cost: Option<StopCost>,
    /// Files whose name the program removed (unlink, or a rename over it): gone, or gone by
    /// that name, after the run.
    pub unnamed: HashSet<u32>,
}

impl Recording {
    /// Nothing recorded yet, from time origin `t0`.
    pub fn new(t0: u64) -> Self {
        Recording {
            t0,
            files: Vec::new(),
            ops: Vec::new(),
            spaces: Spaces::default(),
            kernel: KernelIo::default(),
            processes: 0,
            threads: 0,
            stops: 0,
            uring: UringSeen::default(),
            cache: None,
            notes: BTreeSet::new(),
            launching: true,
            baseline: None,
            root: None,
            thread_times: Vec::new(),
            timed: HashMap::default(),
            spans: Vec::new(),
            stop_cost: None,
            unnamed: HashSet::default(),
        }
    }

    /// Adds file `f` to the files seen: its index.
    pub fn add_file(&mut self, f: FileInfo) -> u32 {
        self.files.push(f);
        (self.files.len() - 1) as u32
    }

    /// An io_uring request completed: a read (`UringRead`) or a write counted.
    pub fn uring_completed(&mut self, call: Call) {
        if call == Call::UringRead {
            self.uring.reads += 1;
        } else {
            self.uring.writes += 1;
        }
    }

    /// Adds a note (once).
    pub fn note(&mut self, text: &str) {
        if !self.notes.contains(text) {
            self.notes.insert(text.to_string());
        }
    }

    /// Thread `tid` left call number `nr`, entered at `t`, after `own` ns of its own (the
    /// tracer's hold off), `cpu` and `runq` of them: added to its timed calls, and kept as a
    /// span when it lasted [`super::SPAN_NS`] or more.
    pub fn timed(&mut self, tid: i32, nr: i64, t: u64, own: u64, sched: (u64, u64), failed: bool) {
        let (cpu, runq) = sched;
        self.timed
            .entry(tid)
            .or_default()
            .entry(nr)
            .or_insert_with(|| CallTime {
                call: super::cause::call_name(nr),
                ..CallTime::default()
            })
            .add(own, cpu, runq, failed);
        if own >= super::SPAN_NS {
            self.spans.push(Span {
                t,
                dur: own,
                tid: tid as u32,
                call: super::cause::call_name(nr),
                cpu,
                runq,
            });
        }
    }
}

impl FileInfo {
    /// A file first seen by `name`, of `kind`, as (device, inode) `id`, with `size` bytes and
    /// modified at `mtime_ns`: nothing known yet of its end, its cache or its XOR.
    pub fn first_seen(
        name: &std::path::Path,
        kind: FileKind,
        (dev, ino): (u64, u64),
        size: u64,
        mtime_ns: i128,
    ) -> FileInfo {
        let (path, path_hex) = FileInfo::path_fields(name);
        FileInfo {
            path,
            path_hex,
            renamed: Vec::new(),
            kind,
            dev,
            ino,
            size,
            size_after: None,
            mtime_ns,
            mtime_after_ns: None,
            resident_before: None,
            resident_after: None,
            xor: None,
            code: false,
            mapped_xor: None,
            cache: None,
        }
    }
}

/// The CPU and run-queue times of a schedstat line (`ns on a CPU, ns waiting, time slices`).
pub fn parse_schedstat(text: &[u8]) -> Option<(u64, u64)> {
    let text = std::str::from_utf8(text).ok()?;
    let mut f = text.split_whitespace().map(|x| x.parse::<u64>().ok());
    Some((f.next()??, f.next()??))
}
