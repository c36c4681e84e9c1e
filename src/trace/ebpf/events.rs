//! The events `bpf/iolab.bpf.c` writes to its ring buffer, as iolab uses them: each read from
//! its `#[repr(C)]` record of [`super::abi`] (the C structs of `bpf/iolab.h`, checked field for
//! field against the object's BTF by a test); a record shorter than its kind's is refused, so a
//! probe and a reader out of step say so instead of reading garbage.

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
    /// A rename's new name, as the program gave it (`path` is then its old one).
    pub renamed_to: Option<Vec<u8>>,
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
    /// Fork: the child's birth, ns since boot (what, with its pid, names that process and no
    /// later one given the same pid).
    pub start: u64,
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

/// One record of the ring buffer. It lives only from the ring to its conversion: boxing the
/// call (the largest) would cost an allocation per call on the tracer's busiest path.
#[allow(clippy::large_enum_variant)]
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
const EV_RENAME: u32 = 9;

use super::abi::{RawCall, RawFault, RawFileId, RawOpen, RawSpan, RawTask, RawUring, read};
use std::mem::size_of;

impl RawFileId {
    /// The file, when the probe read one.
    fn file(&self) -> Option<FileId> {
        (self.ok != 0).then_some(FileId {
            kdev: self.dev,
            ino: self.ino,
            pos: self.pos,
            size: self.size,
            nrpages: self.nrpages,
            mtime: (self.mtime_sec, self.mtime_nsec),
            generation: self.generation,
            mode: self.mode,
            flags: self.flags,
        })
    }
}

/// A path's bytes: `len` of them (the NUL included) from `bytes`.
fn path(len: u64, bytes: &[u8]) -> Vec<u8> {
    let p = &bytes[..(len as usize).min(bytes.len())];
    p.strip_suffix(&[0]).unwrap_or(p).to_vec()
}

impl RawCall {
    fn event(&self) -> CallEv {
        let p = &self.p;
        CallEv {
            pid: self.pid,
            tid: self.tid,
            t1: self.t1,
            ret: self.ret,
            pos_exit: self.pos_exit,
            rchar: self.rchar,
            added: self.added,
            off: self.off,
            runq: self.runq,
            entry: CallArgs {
                nr: p.nr,
                t: p.t,
                args: p.args,
                extra: p.extra,
                extra2: p.extra2,
                f: p.f.file(),
                g: p.g.file(),
            },
            path: None,
            kpath: None,
            renamed_to: None,
        }
    }
}

impl RawTask {
    fn event(&self) -> TaskEv {
        let end = self.comm.iter().position(|&b| b == 0).unwrap_or(16);
        TaskEv {
            pid: self.pid,
            tid: self.tid,
            t: self.t,
            other_pid: self.other_pid,
            other_tid: self.other_tid,
            group_dead: self.group_dead != 0,
            exit_code: self.exit_code,
            io: [
                self.rchar,
                self.wchar,
                self.syscr,
                self.syscw,
                self.read_bytes,
                self.write_bytes,
            ],
            cpu_ns: self.cpu_ns,
            runq_ns: self.runq_ns,
            start: self.start,
            comm: String::from_utf8_lossy(&self.comm[..end]).into_owned(),
        }
    }
}

/// The event in `bytes` (one ring-buffer record), or why it cannot be read. Each kind is read
/// as its `#[repr(C)]` record ([`super::abi`], checked against the object's BTF).
pub fn parse(bytes: &[u8]) -> Result<Record, String> {
    let Some(kind) = read::<u32>(bytes) else {
        return Err(format!("a record of {} bytes", bytes.len()));
    };
    let want = match kind {
        EV_CALL => size_of::<RawCall>(),
        EV_OPEN | EV_RENAME => size_of::<RawOpen>(),
        EV_FORK | EV_EXEC | EV_EXIT => size_of::<RawTask>(),
        EV_FAULT => size_of::<RawFault>(),
        EV_URING => size_of::<RawUring>(),
        EV_SPAN => size_of::<RawSpan>(),
        k => return Err(format!("an event of kind {k}")),
    };
    let short = || {
        format!(
            "an event of kind {kind} of {} bytes (the reader expects {want}: the probe and iolab are out of step)",
            bytes.len()
        )
    };
    Ok(match kind {
        EV_CALL => Record::Call(read::<RawCall>(bytes).ok_or_else(short)?.event()),
        EV_OPEN => {
            let o = read::<RawOpen>(bytes).ok_or_else(short)?;
            let mut c = o.c.event();
            c.path = Some(path(o.len, &o.path));
            c.kpath = Some(path(o.klen, &o.kpath)).filter(|p| !p.is_empty());
            Record::Call(c)
        }
        EV_RENAME => {
            let o = read::<RawOpen>(bytes).ok_or_else(short)?;
            let mut c = o.c.event();
            c.path = Some(path(o.len, &o.path)).filter(|p| !p.is_empty());
            c.renamed_to = Some(path(o.klen, &o.kpath)).filter(|p| !p.is_empty());
            Record::Call(c)
        }
        EV_FORK => Record::Fork(read::<RawTask>(bytes).ok_or_else(short)?.event()),
        EV_EXEC => Record::Exec(read::<RawTask>(bytes).ok_or_else(short)?.event()),
        EV_EXIT => Record::Exit(read::<RawTask>(bytes).ok_or_else(short)?.event()),
        EV_URING => {
            let u = read::<RawUring>(bytes).ok_or_else(short)?;
            Record::Uring(UringEv {
                pid: u.pid,
                tid: u.tid,
                opcode: u.opcode,
                t0: u.t0,
                t1: u.t1,
                res: u.res,
                off: u.off,
                pos: u.pos,
                len: u.len,
                fd: u.fd,
                fixed: u.fixed != 0,
                f: u.f.file(),
            })
        }
        EV_SPAN => {
            let s = read::<RawSpan>(bytes).ok_or_else(short)?;
            Record::Span(SpanEv {
                pid: s.pid,
                tid: s.tid,
                nr: s.nr,
                t0: s.t0,
                t1: s.t1,
                off: s.off,
                runq: s.runq,
                ret: s.ret,
            })
        }
        _ => {
            let f = read::<RawFault>(bytes).ok_or_else(short)?;
            Record::Fault(FaultEv {
                pid: f.pid,
                tid: f.tid,
                t: f.t,
                addr: f.addr,
            })
        }
    })
}

/// A device number in the kernel's encoding (major << 20 | minor) as `stat` gives it.
pub fn user_dev(kdev: u64) -> u64 {
    let (major, minor) = (kdev >> 20, kdev & 0xf_ffff);
    libc::makedev(major as u32, minor as u32)
}
