//! The events `bpf/iolab.bpf.c` writes to its ring buffer, read from their bytes. The layouts
//! are the C structs of `bpf/iolab.h`, field for field (natural alignment, no padding the C
//! compiler would add: every struct there is laid out in 8-byte units); a record of another
//! length is refused, so a probe and a reader out of step say so instead of reading garbage.

/// A descriptor's file as the kernel had it at a call's entry (`struct fileid`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FileId {
    /// The file system's device, in the kernel's encoding (major << 20 | minor).
    pub kdev: u64,
    /// Inode number.
    pub ino: u64,
    /// The descriptor's position.
    pub pos: u64,
    /// The inode's size.
    pub size: u64,
    /// Pages of the file in the page cache (its mapping's `nrpages`).
    pub nrpages: u64,
    /// Modification time, s and ns.
    pub mtime: (i64, u32),
    /// The inode's generation: a file that reuses a freed inode number has another one (0
    /// where the file system keeps none).
    pub generation: u32,
    /// Type and permission bits.
    pub mode: u32,
    /// The open file's flags.
    pub flags: u32,
}

/// A call between its entry and exit (`struct pending`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CallArgs {
    /// System-call number.
    pub nr: u64,
    /// When it was entered (CLOCK_MONOTONIC, ns).
    pub t: u64,
    /// Its six arguments.
    pub args: [u64; 6],
    /// An iovec's sum, a copy's source offset, openat2's flags, or rchar at an exec's entry.
    pub extra: u64,
    /// The iovec was longer than the probe reads; a copy's destination offset.
    pub extra2: u64,
    /// The file of its descriptor (the source of a copy).
    pub f: Option<FileId>,
    /// The destination of a copy.
    pub g: Option<FileId>,
}

/// A finished call (`struct ev_call`, `struct ev_open`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallEv {
    /// Process and thread.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// When it returned.
    pub t1: u64,
    /// Its result.
    pub ret: i64,
    /// The descriptor's position after it (the destination's, for a copy).
    pub pos_exit: u64,
    /// rchar at an exec's return.
    pub rchar: u64,
    /// Pages it brought into the page cache (read from storage, or made by a write).
    pub added: u32,
    /// Time off the CPU during the call, ns.
    pub off: u64,
    /// Of it, runnable and waiting for a CPU, ns.
    pub runq: u64,
    /// Its entry.
    pub entry: CallArgs,
    /// An open's path, as the program gave it.
    pub path: Option<Vec<u8>>,
    /// The opened file's path from the root, as the kernel walked its dentries and mounts.
    pub kpath: Option<Vec<u8>>,
}

/// A process or thread event (`struct ev_task`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskEv {
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// When.
    pub t: u64,
    /// Fork: the child's process id.
    pub other_pid: u32,
    /// Fork: the child's thread id; exec: the thread id before.
    pub other_tid: u32,
    /// Exit: the last thread of its process.
    pub group_dead: bool,
    /// Exit: the exit code as wait gives it.
    pub exit_code: i32,
    /// Exit: the thread's I/O counters (rchar, wchar, syscr, syscw, read_bytes, write_bytes).
    pub io: [u64; 6],
    /// Exit: time on a CPU and waiting for one, ns.
    pub cpu_ns: u64,
    /// Exit: time runnable, waiting for a CPU, ns.
    pub runq_ns: u64,
    /// Exit: its name.
    pub comm: String,
}

/// A page fault (`struct ev_fault`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FaultEv {
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// When.
    pub t: u64,
    /// The faulting address.
    pub addr: u64,
}

/// An io_uring read or write, submitted and completed (`struct ev_uring`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UringEv {
    /// Process id.
    pub pid: u32,
    /// The thread that submitted it.
    pub tid: u32,
    /// Its opcode (IORING_OP_*).
    pub opcode: u32,
    /// When it was submitted and completed.
    pub t0: u64,
    /// When it completed.
    pub t1: u64,
    /// The completion's result: bytes, or -errno.
    pub res: i64,
    /// Its offset (-1: the file's position).
    pub off: i64,
    /// Its position at the completion (after the bytes it moved, where the kernel moves it).
    pub pos: u64,
    /// Bytes asked for.
    pub len: u64,
    /// Its descriptor, or its registered file's index (`fixed`).
    pub fd: i64,
    /// `fd` is a registered file's index.
    pub fixed: bool,
    /// Its file.
    pub f: Option<FileId>,
}

/// A call timed only that lasted [`crate::trace::SPAN_NS`] or more (`struct ev_span`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpanEv {
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// System-call number.
    pub nr: u32,
    /// When it was entered and left (CLOCK_MONOTONIC, ns).
    pub t0: u64,
    /// When it returned.
    pub t1: u64,
    /// Time off the CPU during it, ns.
    pub off: u64,
    /// Of it, waiting for a CPU.
    pub runq: u64,
    /// Its result.
    pub ret: i64,
}

/// One record of the ring buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record {
    /// A call (an open with its path).
    Call(CallEv),
    /// A process or thread made.
    Fork(TaskEv),
    /// An exec.
    Exec(TaskEv),
    /// A thread's exit.
    Exit(TaskEv),
    /// A page fault.
    Fault(FaultEv),
    /// An io_uring request.
    Uring(UringEv),
    /// A long call timed only.
    Span(SpanEv),
}

const EV_CALL: u32 = 1;
const EV_OPEN: u32 = 2;
const EV_FORK: u32 = 3;
const EV_EXEC: u32 = 4;
const EV_EXIT: u32 = 5;
const EV_FAULT: u32 = 6;
const EV_URING: u32 = 7;
const EV_SPAN: u32 = 8;

const FILEID: usize = 80;
const PENDING: usize = 64 + 16 + 2 * FILEID;
/// `struct ev_call`'s size.
pub const CALL: usize = 64 + PENDING;
/// `struct ev_open`'s size.
pub const OPEN: usize = CALL + 2 * (8 + PATH);

/// Bytes of a path in an open's event (`PATH_BYTES`).
const PATH: usize = 256;
/// `struct ev_task`'s size.
pub const TASK: usize = 120;
/// `struct ev_fault`'s size.
pub const FAULT: usize = 32;
/// `struct ev_uring`'s size.
pub const URING: usize = 80 + FILEID;
/// `struct ev_span`'s size.
pub const SPAN: usize = 56;

struct Rd<'a>(&'a [u8]);

impl Rd<'_> {
    fn u64(&self, at: usize) -> u64 {
        u64::from_ne_bytes(self.0[at..at + 8].try_into().unwrap_or_default())
    }
    fn u32(&self, at: usize) -> u32 {
        u32::from_ne_bytes(self.0[at..at + 4].try_into().unwrap_or_default())
    }
    fn file(&self, at: usize) -> Option<FileId> {
        (self.u64(at + 72) != 0).then(|| FileId {
            kdev: self.u64(at),
            ino: self.u64(at + 8),
            pos: self.u64(at + 16),
            size: self.u64(at + 24),
            nrpages: self.u64(at + 32),
            mtime: (self.u64(at + 40) as i64, self.u32(at + 48)),
            generation: self.u32(at + 52),
            mode: self.u32(at + 56),
            flags: self.u32(at + 60),
        })
    }
    fn entry(&self, at: usize) -> CallArgs {
        let mut args = [0u64; 6];
        for (i, a) in args.iter_mut().enumerate() {
            *a = self.u64(at + 16 + 8 * i);
        }
        CallArgs {
            nr: self.u64(at),
            t: self.u64(at + 8),
            args,
            extra: self.u64(at + 64),
            extra2: self.u64(at + 72),
            f: self.file(at + 80),
            g: self.file(at + 80 + FILEID),
        }
    }
    /// A path's bytes: its length (the NUL included) at `at`, the bytes after.
    fn path(&self, at: usize) -> Vec<u8> {
        let len = (self.u64(at) as usize).min(PATH);
        let p = &self.0[at + 8..at + 8 + len];
        p.strip_suffix(&[0]).unwrap_or(p).to_vec()
    }

    fn task(&self) -> TaskEv {
        let comm = &self.0[104..120];
        let end = comm.iter().position(|&b| b == 0).unwrap_or(comm.len());
        TaskEv {
            pid: self.u32(4),
            tid: self.u32(8),
            t: self.u64(16),
            other_pid: self.u32(24),
            other_tid: self.u32(28),
            group_dead: self.u32(32) != 0,
            exit_code: self.u32(36) as i32,
            io: std::array::from_fn(|i| self.u64(40 + 8 * i)),
            cpu_ns: self.u64(88),
            runq_ns: self.u64(96),
            comm: String::from_utf8_lossy(&comm[..end]).into_owned(),
        }
    }
}

/// The event in `bytes` (one ring-buffer record), or why it cannot be read.
pub fn parse(bytes: &[u8]) -> Result<Record, String> {
    if bytes.len() < 8 {
        return Err(format!("a record of {} bytes", bytes.len()));
    }
    let r = Rd(bytes);
    let kind = r.u32(0);
    let want = match kind {
        EV_CALL => CALL,
        EV_OPEN => OPEN,
        EV_FORK | EV_EXEC | EV_EXIT => TASK,
        EV_FAULT => FAULT,
        EV_URING => URING,
        EV_SPAN => SPAN,
        k => return Err(format!("an event of kind {k}")),
    };
    if bytes.len() < want {
        return Err(format!(
            "an event of kind {kind} of {} bytes (the reader expects {want}: the probe and iolab are out of step)",
            bytes.len()
        ));
    }
    Ok(match kind {
        EV_CALL | EV_OPEN => Record::Call(CallEv {
            pid: r.u32(4),
            tid: r.u32(8),
            t1: r.u64(16),
            ret: r.u64(24) as i64,
            pos_exit: r.u64(32),
            rchar: r.u64(40),
            added: r.u32(12),
            off: r.u64(48),
            runq: r.u64(56),
            entry: r.entry(64),
            path: (kind == EV_OPEN).then(|| r.path(CALL)),
            kpath: (kind == EV_OPEN)
                .then(|| r.path(CALL + 8 + PATH))
                .filter(|p| !p.is_empty()),
        }),
        EV_FORK => Record::Fork(r.task()),
        EV_EXEC => Record::Exec(r.task()),
        EV_EXIT => Record::Exit(r.task()),
        EV_URING => Record::Uring(UringEv {
            pid: r.u32(4),
            tid: r.u32(8),
            opcode: r.u32(12),
            t0: r.u64(16),
            t1: r.u64(24),
            res: r.u64(32) as i64,
            off: r.u64(40) as i64,
            pos: r.u64(48),
            len: r.u64(56),
            fd: r.u64(64) as i64,
            fixed: r.u64(72) != 0,
            f: r.file(80),
        }),
        EV_SPAN => Record::Span(SpanEv {
            pid: r.u32(4),
            tid: r.u32(8),
            nr: r.u32(12),
            t0: r.u64(16),
            t1: r.u64(24),
            off: r.u64(32),
            runq: r.u64(40),
            ret: r.u64(48) as i64,
        }),
        _ => Record::Fault(FaultEv {
            pid: r.u32(4),
            tid: r.u32(8),
            t: r.u64(16),
            addr: r.u64(24),
        }),
    })
}

/// A device number in the kernel's encoding (major << 20 | minor) as `stat` gives it.
pub fn user_dev(kdev: u64) -> u64 {
    let (major, minor) = (kdev >> 20, kdev & 0xf_ffff);
    libc::makedev(major as u32, minor as u32)
}
