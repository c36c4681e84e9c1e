//! `iolab trace`: run any program and record its file I/O. The program (its threads and children)
//! runs under ptrace with a seccomp filter, so it stops only at the file system calls iolab cares
//! about ([`calls`]); page faults on its file mappings are sampled by a perf software event with
//! their addresses ([`faults`]). No root is needed. What a trace holds is [`Trace`], written as
//! versioned JSON (`docs/trace.schema.md`); [`profile`] reduces it to what the user reads, and
//! [`iolog`] writes fio's iolog version 3 so that fio can replay it too.

pub mod advice;
mod cachework;
mod choose;
pub mod decode;
mod target;
mod threads;
pub use target::{Target, attach};
pub use threads::{
    CALIBRATION_CALLS, CallTime, ProcTimes, SPAN_NS, Span, StopCost, ThreadTimes, calibrate,
};
pub mod calls;
pub mod cause;
pub mod ebpf;
mod faults;
mod file;
mod finish;
pub mod iolog;
mod launch;
mod model;
pub mod order;
pub mod overhead;
pub mod profile;
mod ptrace;
mod recommend;
mod record;
mod rename;
mod storage;
pub mod time;
pub mod timeline;
pub use cachework::{CacheSeen, CacheWork, hit_ratio};

pub use calls::Call;
use serde::{Deserialize, Serialize};
use std::ffi::OsString;

/// The trace file's schema name; a reader refuses other versions.
pub const SCHEMA: &str = "iolab-trace/1";

/// What to trace and how.
#[derive(Debug, Clone)]
pub struct TraceConfig {
    /// The program and its arguments.
    pub command: Vec<OsString>,
    /// The iolab binary: the traced child starts as `iolab trace-exec -- COMMAND`, which installs
    /// the seccomp filter once the tracer is attached and then execs the command, so that the
    /// command's own exec (and what the kernel reads for it) is seen.
    pub launcher: std::path::PathBuf,
    /// Sample page faults on file mappings (perf software event); off: mapped access is seen
    /// only as its mmap calls.
    pub faults: bool,
    /// Compute each file's XOR over the bytes the program read, after it ends (re-reads them).
    pub xor: bool,
    /// Stop at stat and getdents calls too (metadata time per directory).
    pub metadata: bool,
    /// The program's stdin, stdout and stderr on /dev/null (else iolab's own).
    pub quiet: bool,
    /// Which tracer.
    pub tracer: TracerChoice,
}

/// How the traced program ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Ended {
    /// Its exit code, when it exited.
    pub code: Option<i32>,
    /// The signal that killed it, when one did.
    pub signal: Option<i32>,
}

impl Ended {
    /// The exit code a shell would give: the code, or 128 + the signal.
    pub fn shell_code(&self) -> i32 {
        match (self.code, self.signal) {
            (Some(c), _) => c,
            (None, Some(s)) => 128 + s,
            _ => 1,
        }
    }
}

/// What kind of thing a descriptor was open on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FileKind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A pipe or FIFO.
    Pipe,
    /// A socket.
    Socket,
    /// A character or block device (a terminal, /dev/null, a disk).
    Device,
    /// Anything else (an eventfd, a memfd's anon inode, ...).
    Other,
}

/// One file (or pipe, socket, device) the program used.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FileInfo {
    /// Its path when first seen (`pipe:[N]`, `socket:[N]` for those); bytes that are not
    /// UTF-8 are U+FFFD here, and `path_hex` holds them all.
    pub path: String,
    /// The path's bytes in hex, when they are not UTF-8 (JSON text cannot hold them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path_hex: Option<String>,
    /// Its later names, in order: the renames of it the program made (absolute paths).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub renamed: Vec<String>,
    /// What it is.
    pub kind: FileKind,
    /// Device and inode (the identity; paths can change).
    pub dev: u64,
    /// Inode number.
    pub ino: u64,
    /// Size when first seen.
    pub size: u64,
    /// Size after the program ended (None if it was gone).
    pub size_after: Option<u64>,
    /// Modification time (ns since the epoch) when first seen.
    pub mtime_ns: i128,
    /// Modification time after the program ended.
    pub mtime_after_ns: Option<i128>,
    /// Bytes in the page cache when first seen (None where the kernel does not show it).
    pub resident_before: Option<u64>,
    /// Bytes in the page cache after the program ended.
    pub resident_after: Option<u64>,
    /// XOR (DESIGN's, each byte by its file offset) of every byte the program's read calls
    /// returned, counted as often as read, re-read from the file after it ended; None when not
    /// computed, not read, or the file changed during the run.
    pub xor: Option<String>,
    /// Mapped with execute permission (a program or a library: its code).
    pub code: bool,
    /// XOR of the windows its page faults mapped ([`fault_window`]), each counted as often as
    /// it faulted, re-read after the run; None when not computed, none, or the file changed.
    #[serde(default)]
    pub mapped_xor: Option<String>,
    /// The page cache's work for the program on it (the kernel tracer's; None with ptrace).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache: Option<CacheWork>,
}

impl FileInfo {
    /// `path` as the trace holds it: as text, and its bytes in hex when they are not UTF-8.
    pub fn path_fields(path: &std::path::Path) -> (String, Option<String>) {
        use std::os::unix::ffi::OsStrExt;
        let bytes = path.as_os_str().as_bytes();
        let hex = std::str::from_utf8(bytes)
            .is_err()
            .then(|| bytes.iter().map(|b| format!("{b:02x}")).collect());
        (path.to_string_lossy().into_owned(), hex)
    }

    /// Its name at the end of the trace: its last rename's, else its path (where its bytes
    /// are after the run: what iolab reads again, and what a replay opens).
    pub fn last_path(&self) -> std::path::PathBuf {
        match self.renamed.last() {
            Some(p) => p.into(),
            None => self.os_path(),
        }
    }

    /// Its path, byte for byte.
    pub fn os_path(&self) -> std::path::PathBuf {
        use std::os::unix::ffi::OsStringExt;
        let bytes = self.path_hex.as_deref().and_then(|h| {
            (h.len() % 2 == 0)
                .then(|| {
                    (0..h.len())
                        .step_by(2)
                        .map(|i| u8::from_str_radix(h.get(i..i + 2)?, 16).ok())
                        .collect::<Option<Vec<u8>>>()
                })
                .flatten()
        });
        match bytes {
            Some(b) => OsString::from_vec(b).into(),
            None => self.path.clone().into(),
        }
    }

    /// Whether it is the kernel's (under /proc or /sys): its bytes are made when read, and a
    /// process's own files there are gone with it, so nothing replays them.
    pub fn is_kernels(&self) -> bool {
        self.path.starts_with("/proc/") || self.path.starts_with("/sys/")
    }
}

/// Bytes the kernel maps around a page fault on a file (fault-around, 16 pages by default).
pub const FAULT_AROUND: u64 = 64 << 10;

/// The largest a single fault can map: a PMD-sized folio.
pub const FAULT_MAX: u64 = 2 << 20;

/// The window a fault at file offset `off` stands for: the [`FAULT_AROUND`]-aligned window
/// holding it, clipped to a file of `size` bytes: `(start, len)`.
pub fn fault_window(off: u64, size: u64) -> (u64, u64) {
    let start = off / FAULT_AROUND * FAULT_AROUND;
    (start, FAULT_AROUND.min(size.saturating_sub(start)))
}

/// The file range each fault of `faults` (in time order) stands for, `(start, len)` in the same
/// order: its [`fault_window`], grown up to the same thread's next fault on the file only when
/// both faults' pages are the first of consecutive [`FAULT_MAX`] blocks: a forward scan over large folios
/// mapped whole (a PMD mapping maps all 2 MiB at the first touch, so the bytes between two such
/// faults were reached without another). Any other gap is an access that skipped: a scan of 4
/// KiB pages faults every 64 KiB (contiguous windows), and a program touching one byte per MiB
/// faults every MiB and mapped 64 KiB at each, not the MiB between. `size` gives a file's size
/// by index.
pub fn mapped_ranges(faults: &[Fault], size: impl Fn(u32) -> u64) -> Vec<(u64, u64)> {
    let mut out: Vec<(u64, u64)> = faults
        .iter()
        .map(|f| fault_window(f.off, size(f.file)))
        .collect();
    let mut last: rustc_hash::FxHashMap<(u32, u32), usize> = Default::default();
    for (i, f) in faults.iter().enumerate() {
        if let Some(&j) = last.get(&(f.tid, f.file)) {
            // The faults' own pages: a scan's first touch of a folio is its first page.
            let prev = faults[j].off;
            if prev.is_multiple_of(FAULT_MAX) && f.off == prev + FAULT_MAX {
                out[j].1 = FAULT_MAX.min(size(f.file).saturating_sub(prev));
            }
        }
        last.insert((f.tid, f.file), i);
    }
    out
}

/// One traced system call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Op {
    /// When it was entered, ns from the program's start.
    pub t: u64,
    /// Its duration as the tracer saw it (entry stop to exit stop), ns.
    pub dur: u64,
    /// Process (thread group) id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// The call.
    pub call: Call,
    /// The descriptor (the source for sendfile, splice, copy_file_range; -1 for none).
    pub fd: i32,
    /// Index into [`Trace::files`] of what `fd` was open on.
    pub file: Option<u32>,
    /// The file offset the call worked at (a read's position; a mapping's offset).
    pub off: Option<u64>,
    /// Bytes asked for (a read's count, the sum of an iovec, a mapping's length).
    pub len: u64,
    /// The result: bytes moved, a descriptor, an address, or minus an errno.
    pub ret: i64,
    /// One more argument where it matters: open's flags, lseek's whence, madvise's and fadvise's
    /// advice, mmap's protection << 32 | flags, the destination descriptor of sendfile/splice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arg: Option<u64>,
    /// Where sendfile, splice and copy_file_range wrote: index into [`Trace::files`] of the
    /// destination descriptor's file (None for other calls, and in traces from before it was
    /// recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to_file: Option<u32>,
    /// The destination offset those calls wrote at (None where the destination has no
    /// position: a pipe, a socket).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to_off: Option<u64>,
    /// The time the tracer had held this thread at its stops (from noticing a stop to resuming
    /// the thread) before this call's entry, ns: the difference between two calls' `held` is
    /// the tracer's share of the time between them.
    #[serde(default)]
    pub held: u64,
    /// The same at this call's exit stop (`held` for a call of one stop).
    #[serde(default)]
    pub held_exit: u64,
    /// The thread's stops so far, this call's entry stop included (every stop: calls the trace
    /// keeps or not, events, signals).
    #[serde(default)]
    pub stops: u64,
    /// Of `dur`, the time the thread ran on a CPU inside the call, ns (0 where not measured:
    /// traces from before it was, a call of one stop, an io_uring request). The kernel's own
    /// accounting: the thread's schedstat at the ptrace tracer's two stops, its time off the
    /// CPU (context switches) for the kernel tracer.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cpu: u64,
    /// Of `dur`, the time the thread was runnable and waited for a CPU inside the call (after
    /// its wake-up, say), ns: what a busy machine added to it.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub runq: u64,
}

fn is_zero(x: &u64) -> bool {
    *x == 0
}

/// A page fault on a file mapping, from the perf sample's address and the mappings iolab saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Fault {
    /// When, ns from the program's start.
    pub t: u64,
    /// Thread id.
    pub tid: u32,
    /// Index into [`Trace::files`].
    pub file: u32,
    /// The file offset of the faulting page.
    pub off: u64,
}

/// What iolab saw of the program's io_uring requests, read from its rings.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct UringSeen {
    /// Requests submitted through `io_uring_enter` and read from the submission queue.
    pub requests: u64,
    /// Of them, reads and writes of files whose completion was seen (each an op).
    pub reads: u64,
    /// As `reads`, for writes.
    pub writes: u64,
    /// Requests of other kinds (network, sync, open, timeouts): counted, not kept.
    pub other: u64,
    /// Requests iolab could not read or whose result it did not see.
    pub unseen: u64,
    /// Why, for the first of those.
    pub why: Option<String>,
}

/// Sums of `/proc/PID/task/TID/io` over every traced thread, read as each one exited: the
/// kernel's own accounting, to check the trace against.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct KernelIo {
    /// Bytes returned by read-like calls (read, readv, pread, preadv, sendfile, copy_file_range,
    /// and the kernel's own reads at exec).
    pub rchar: u64,
    /// Bytes passed to write-like calls.
    pub wchar: u64,
    /// Read-like calls.
    pub syscr: u64,
    /// Write-like calls.
    pub syscw: u64,
    /// Bytes the threads caused to be fetched from storage.
    pub read_bytes: u64,
    /// Bytes the threads caused to be sent to storage.
    pub write_bytes: u64,
    /// Threads whose counters were read (all of them, unless one could not be).
    pub threads: u32,
    /// Of rchar, what the kernel itself read from program files at each exec (their headers):
    /// rchar at the exec's return less rchar at its entry.
    pub exec_rchar: u64,
    /// How much the block devices' own cache (`Buffers` in /proc/meminfo: file-system metadata
    /// such as inodes, directories and extent blocks) grew over the run. System-wide: another
    /// program's metadata reads count too.
    #[serde(default)]
    pub buffers_growth: u64,
}

impl KernelIo {
    /// Thread `tid`'s I/O counters so far (/proc/PID/task/TID/io), as both tracers read them.
    pub fn of_thread(pid: u32, tid: i32) -> Option<KernelIo> {
        let text = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/io")).ok()?;
        let field = |name| crate::measure::parse_io_field(&text, name).unwrap_or(0);
        Some(KernelIo {
            rchar: field("rchar"),
            wchar: field("wchar"),
            syscr: field("syscr"),
            syscw: field("syscw"),
            read_bytes: field("read_bytes"),
            write_bytes: field("write_bytes"),
            ..KernelIo::default()
        })
    }
}

/// A whole trace: what `iolab trace` records and `iolab replay` reads.
pub type Trace = TraceOf<Vec<Op>>;

/// A trace whose calls are held as `O`: a [`Trace`] holds them all; a [`TraceFile`] holds
/// only what a pass over them summed up, and hands them out one by one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TraceOf<O> {
    /// [`SCHEMA`].
    pub schema: String,
    /// The program and its arguments.
    pub command: Vec<String>,
    /// The working directory it ran in.
    pub cwd: String,
    /// Wall time from its start to its end, ns.
    pub wall_ns: u64,
    /// How it ended.
    pub ended: Ended,
    /// Stopped by Ctrl-C (or SIGTERM) to iolab: what was recorded until then.
    pub interrupted: bool,
    /// Processes and threads traced.
    pub processes: u32,
    /// Threads (processes included).
    pub threads: u32,
    /// Times the program stopped for the tracer (two per traced call, plus events).
    pub stops: u64,
    /// Files, pipes, sockets and devices the program used.
    pub files: Vec<FileInfo>,
    /// Traced calls in the order they ended (one thread's in the order it made them).
    pub ops: O,
    /// Page faults on file mappings (empty when not sampled).
    pub faults: Vec<Fault>,
    /// Page-fault samples the kernel dropped (its buffer was full); mapped access undercounted.
    pub faults_lost: u64,
    /// Why page faults were not sampled, when they were not.
    pub faults_unavailable: Option<String>,
    /// The kernel's accounting of the traced threads.
    pub kernel: KernelIo,
    /// What the trace cannot see or may have got wrong, one sentence each.
    pub notes: Vec<String>,
    /// Per process, where its time went outside its traced calls (traces from before per-thread
    /// times were recorded; empty in newer ones, which have `thread_times`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub procs: Vec<ProcTimes>,
    /// The program's first process (the command's, or the first one attached to).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root: Option<u32>,
    /// Per thread, its life as the kernel accounted it and the calls not kept in `ops` (empty
    /// in traces from before it was recorded).
    #[serde(default)]
    pub thread_times: Vec<ThreadTimes>,
    /// Calls not kept in `ops` that lasted at least [`SPAN_NS`], in the order they ended.
    #[serde(default)]
    pub spans: Vec<Span>,
    /// What a traced call costs by being traced, measured at the start.
    #[serde(default)]
    pub stop_cost: Option<StopCost>,
    /// The program's io_uring requests (None: it set up no ring, or the trace is from before
    /// they were read; then what io_uring moved is not in `ops`).
    #[serde(default)]
    pub uring: Option<UringSeen>,
    /// The page cache's work for the whole run (the kernel tracer's; None with ptrace).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache: Option<CacheSeen>,
    /// The tracer that recorded it (None in traces from before there were two).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tracer: Option<Tracer>,
}

/// Which tracer records a program.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Tracer {
    /// ptrace with a seccomp filter: stops the program at each traced call; needs no rights.
    Ptrace,
    /// eBPF programs on the kernel's tracepoints: the program runs on; needs root (or
    /// CAP_BPF and CAP_PERFMON).
    Ebpf,
}

/// The tracer a user asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TracerChoice {
    /// The eBPF tracer where it can run, else ptrace (the reason said in the trace's notes).
    Auto,
    /// The eBPF tracer, or an error saying why it cannot run.
    Ebpf,
    /// The ptrace tracer.
    #[default]
    Ptrace,
    /// The eBPF tracer doing less than a trace needs, to measure what its probes cost
    /// (bench/compare-trace): the trace holds no file call.
    Floor(ProbeFloor),
}

/// How little the eBPF probes do under [`TracerChoice::Floor`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProbeFloor {
    /// Attached to the system calls, and nothing past finding the thread: the tracepoints'
    /// own cost.
    Attached,
    /// Every call timed only (sums per thread and call), none recorded: what timing every
    /// call costs.
    Sums,
}

pub use choose::{Chosen, choose, fallback_note, own_proc};
pub use file::TraceFile;
pub use ptrace::Lingering;

/// Runs `cfg.command` traced until it and everything it started have ended (or `interrupted`
/// says to stop it), and returns what it did, by the tracer `cfg.tracer` chooses.
pub fn run(cfg: &TraceConfig, interrupted: &dyn Fn() -> bool) -> crate::Result<Trace> {
    run_for(cfg, interrupted, true).map(|(t, _)| t)
}

/// Runs `cfg.command` traced until it ends, and with `follow` until everything it started has
/// ended too. The ptrace tracer returns what was left running, still traced, to be served
/// ([`Lingering::serve`]); the kernel tracer leaves it running untraced. `Auto` falls back to
/// ptrace where the kernel tracer cannot run, and says why in the trace's notes.
pub fn run_for(
    cfg: &TraceConfig,
    interrupted: &dyn Fn() -> bool,
    follow: bool,
) -> crate::Result<(Trace, Lingering)> {
    let fallback = match choose(cfg)? {
        Chosen::Kernel(loaded) => {
            return Ok((loaded.run(cfg, interrupted, follow)?, Lingering::default()));
        }
        Chosen::Ptrace(why) => why,
    };
    let (mut t, lingering) = ptrace::run_for(cfg, interrupted, follow)?;
    if let Some(why) = fallback {
        t.notes.insert(0, fallback_note(&why));
    }
    Ok((t, lingering))
}

/// Traces made by hand for tests: JSON parts, as `iolab trace --out` writes them.
#[cfg(test)]
pub(crate) mod fixture {
    use super::{SCHEMA, Trace};
    use serde_json::{Value, json};

    /// A regular file of `size` bytes, `before` and `after` of them cached.
    pub(crate) fn file(path: &str, size: u64, before: u64, after: u64) -> Value {
        json!({"path": path, "kind": "file", "dev": 1, "ino": 2, "size": size,
            "size_after": size, "mtime_ns": 0, "mtime_after_ns": 0,
            "resident_before": before, "resident_after": after, "xor": "00000000",
            "code": false})
    }

    /// A call of thread 7 on file index `file` at offset `off`, entered at `t` and lasting
    /// `dur` ns, returning `ret`.
    pub(crate) fn op(t: u64, dur: u64, call: &str, file: Option<u32>, off: u64, ret: i64) -> Value {
        json!({"t": t, "dur": dur, "pid": 7, "tid": 7, "call": call, "fd": 3, "file": file,
               "off": file.map(|_| off), "len": ret.max(0), "ret": ret, "arg": null})
    }

    /// A one-process trace of `files`, `ops` and `faults`.
    pub(crate) fn trace(files: Vec<Value>, ops: Vec<Value>, faults: Value) -> Trace {
        serde_json::from_value(json!({
            "schema": SCHEMA, "command": ["x"], "cwd": "/", "wall_ns": 1_000_000,
            "ended": {"code": 0, "signal": null}, "interrupted": false, "processes": 1,
            "threads": 1, "stops": 9, "files": files, "ops": ops,
            "faults": faults, "faults_lost": 0, "faults_unavailable": null,
            "kernel": {"rchar": 0, "wchar": 0, "syscr": 0, "syscw": 0, "read_bytes": 0,
                       "write_bytes": 0, "threads": 1, "exec_rchar": 0},
            "notes": [], "procs": [], "root": 7,
            "thread_times": [{"pid": 7, "tid": 7, "name": "x", "born": 0, "end": 1_000_000,
                "cpu_ns": 0, "runq_ns": 0}]
        }))
        .unwrap()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn faults(offs: &[u64]) -> Vec<Fault> {
        offs.iter()
            .enumerate()
            .map(|(i, &off)| Fault {
                t: i as u64,
                tid: 1,
                file: 0,
                off,
            })
            .collect()
    }

    #[test]
    fn a_fault_stands_for_its_window_unless_large_folios_were_scanned() {
        let size = |_| 64 << 20;
        // One byte per MiB: 64 KiB at each, nothing between.
        let sparse = faults(&[0, 1 << 20, 2 << 20, 3 << 20]);
        assert_eq!(
            mapped_ranges(&sparse, size),
            vec![
                (0, 65536),
                (1 << 20, 65536),
                (2 << 20, 65536),
                (3 << 20, 65536)
            ]
        );
        // 4 KiB pages scanned: a fault every 64 KiB, windows end to end.
        let pages = faults(&[0, 65536, 131072]);
        assert_eq!(
            mapped_ranges(&pages, size),
            vec![(0, 65536), (65536, 65536), (131072, 65536)]
        );
        // Folios mapped whole: a fault at each 2 MiB start stands for the whole block.
        let folios = faults(&[0, 2 << 20, 4 << 20]);
        assert_eq!(
            mapped_ranges(&folios, size),
            vec![(0, 2 << 20), (2 << 20, 2 << 20), (4 << 20, 65536)]
        );
        // A fault inside a block, then the next block's start: not a folio scan.
        let offset = faults(&[1 << 20, 2 << 20]);
        assert_eq!(mapped_ranges(&offset, size)[0], (1 << 20, 65536));
    }
}
