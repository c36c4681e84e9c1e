//! A traced call's entry and exit: what to capture while the thread stops at the entry (the
//! position a `read` starts at, the sum of an iovec, an offset behind a pointer), and at the
//! exit the [`Op`] it was, with the model of descriptors and mappings brought up to date.

use crate::sys::ptrace::{self, Regs};
use crate::trace::calls::Call;
use crate::trace::decode::{Extra, Len, Off, decode, extra, open_flags, rename_paths};
use crate::trace::model::{Desc, Fds, Slot};
use crate::trace::record::Recording;
use crate::trace::{FileKind, Op};
use rustc_hash::FxHashMap as HashMap;
use std::cell::RefCell;
use std::rc::Rc;

/// A traced thread.
#[derive(Debug, Clone)]
pub struct Task {
    /// Its process id.
    pub pid: u32,
    /// Its process's descriptors (shared by the threads).
    pub fds: Rc<RefCell<Fds>>,
    /// Its address space.
    pub mm: u32,
    /// The call it is in, between its entry and exit stops.
    pub pending: Option<Pending>,
    /// A call the trace only times ([`crate::trace::CallTime`]), between its entry and exit stops.
    pub other: Option<Other>,
    /// It has stopped once (its first stop, ptrace's SIGSTOP, is swallowed).
    pub started: bool,
    /// Time the tracer has held it at its stops so far, ns.
    pub held: u64,
    /// Its stops so far.
    pub stops: u64,
    /// When the tracer first saw it, ns.
    pub born: u64,
    /// Its life and calls are in the trace's threads already.
    pub done: bool,
}

/// A call the trace times but does not keep, entered and not yet left.
#[derive(Debug, Clone)]
pub struct Other {
    /// Its number.
    pub nr: i64,
    /// When it was entered.
    pub t: u64,
    /// The thread's held time then.
    pub held: u64,
    /// The thread's CPU and run-queue time then.
    pub sched: Option<(u64, u64)>,
}

/// A call entered and not yet left.
#[derive(Debug, Clone)]
pub struct Pending {
    pub(super) call: Call,
    pub(super) args: [u64; 6],
    t: u64,
    fd: i32,
    file: Option<u32>,
    off: Option<u64>,
    len: u64,
    arg: Option<u64>,
    /// Where a copy (sendfile, splice, copy_file_range) writes: the file and offset.
    to: Option<(u32, Option<u64>)>,
    held: u64,
    stops: u64,
    /// The thread's CPU and run-queue time at the entry stop (its schedstat), ns.
    pub(super) sched: Option<(u64, u64)>,
    /// A rename's names as the program gave them, each with its directory descriptor.
    renames: Option<Box<RenameNames>>,
}

/// A rename's old and new names, each with the directory descriptor it starts from.
type RenameNames = ((i32, Vec<u8>), (i32, Vec<u8>));

impl Pending {
    /// For an execve: the thread's rchar when it entered the call.
    pub fn exec_rchar(&self) -> Option<u64> {
        (self.call == Call::Exec).then_some(self.arg).flatten()
    }
}

/// Everything the ptrace tracer keeps while the program runs: the trace's record, and its own
/// model of the program (threads at their stops, descriptors, rings).
pub struct State {
    /// What the trace records, as either tracer records it.
    pub rec: Recording,
    /// Live threads.
    pub tasks: HashMap<i32, Task>,
    /// Files by device, inode and birth time: an inode number a deleted file freed and a new
    /// file took is a new file (its birth time differs).
    pub(super) by_id: HashMap<(u64, u64, Option<std::time::SystemTime>), u32>,
    /// The program's io_uring rings, read from its memory.
    pub rings: super::rings::Rings,
    /// Each live thread's schedstat, open, and what it said last (a thread killed outright is
    /// gone before its times can be read again).
    pub(super) sched_files: HashMap<i32, (std::fs::File, (u64, u64))>,
    /// The launcher's calibration stats: each one's own time, run-queue wait, and the thread's
    /// CPU time at its entry, ns.
    pub calibration: Vec<(u64, u64, u64)>,
}

impl State {
    /// An empty state with its time origin.
    pub fn new(t0: u64) -> Self {
        State {
            rec: Recording::new(t0),
            tasks: HashMap::default(),
            by_id: HashMap::default(),
            rings: Default::default(),
            sched_files: HashMap::default(),
            calibration: Vec::new(),
        }
    }

    /// The description behind `fd` in thread `tid`'s table; one is made from /proc for a
    /// descriptor the program had before iolab saw it open (inherited stdin, say).
    pub(super) fn desc(&mut self, tid: i32, fd: i32) -> Option<Rc<RefCell<Desc>>> {
        let task = self.tasks.get(&tid)?.clone();
        if let Some(s) = task.fds.borrow().0.get(&fd) {
            return Some(s.desc.clone());
        }
        let file = self.identify(task.pid, fd)?;
        let info =
            std::fs::read_to_string(format!("/proc/{}/fdinfo/{fd}", task.pid)).unwrap_or_default();
        let field = |name: &str| {
            info.lines()
                .find_map(|l| l.strip_prefix(name))
                .map(|v| v.trim().to_string())
        };
        let pos = field("pos:").and_then(|v| v.parse().ok()).unwrap_or(0);
        let flags = field("flags:")
            .and_then(|v| u64::from_str_radix(&v, 8).ok())
            .unwrap_or(0);
        let desc = Rc::new(RefCell::new(Desc {
            file,
            pos,
            append: flags & libc::O_APPEND as u64 != 0,
        }));
        task.fds.borrow_mut().0.insert(
            fd,
            Slot {
                desc: desc.clone(),
                cloexec: flags & libc::O_CLOEXEC as u64 != 0,
            },
        );
        Some(desc)
    }

    /// The file a copy writes to through `fd`, and where: at `at` (an offset the call was
    /// given) or at the descriptor's position (None for a pipe or a socket).
    fn destination(&mut self, tid: i32, fd: i32, at: Option<u64>) -> Option<(u32, Option<u64>)> {
        let d = self.desc(tid, fd)?;
        let (file, pos) = (d.borrow().file, d.borrow().pos);
        let seekable = self
            .rec
            .files
            .get(file as usize)
            .is_some_and(|f| matches!(f.kind, FileKind::File | FileKind::Device));
        Some((file, at.or(seekable.then_some(pos))))
    }

    pub(super) fn iov_sum(&self, tid: i32, addr: u64, count: u64) -> u64 {
        let n = count.min(1024) as usize;
        let mut buf = vec![0u8; n * 16];
        let got = ptrace::read_mem(tid, addr, &mut buf).unwrap_or(0);
        buf[..got]
            .chunks_exact(16)
            .map(|c| u64::from_ne_bytes(c[8..16].try_into().unwrap_or_default()))
            .fold(0u64, |a, b| a.saturating_add(b))
    }

    fn peek_u64(&self, tid: i32, addr: u64) -> Option<u64> {
        if addr == 0 {
            return None;
        }
        let mut b = [0u8; 8];
        match ptrace::read_mem(tid, addr, &mut b) {
            Ok(8) => Some(u64::from_ne_bytes(b)),
            _ => None,
        }
    }

    /// What to keep of call `call` entered by `tid` with `regs` at `t`.
    pub fn enter(&mut self, tid: i32, call: Call, regs: &Regs, t: u64) -> Pending {
        use Call::*;
        let a = regs.args;
        let mut p = Pending {
            call,
            args: a,
            t,
            fd: -1,
            file: None,
            off: None,
            len: 0,
            arg: None,
            to: None,
            held: self.tasks.get(&tid).map_or(0, |t| t.held),
            stops: self.tasks.get(&tid).map_or(0, |t| t.stops),
            sched: None,
            renames: None,
        };
        let pos_of = |st: &mut State, fd: i32| st.desc(tid, fd).map(|d| d.borrow().pos);
        let d = decode(call, regs.nr);
        p.fd = d.fd.map_or(-1, |i| a[i] as i32);
        p.len = match d.len {
            Len::None => 0,
            Len::Arg(i) => a[i],
            Len::Iov(addr, count) => self.iov_sum(tid, a[addr], a[count]),
        };
        p.off = match d.off {
            Off::None | Off::Result => None,
            Off::Arg(i) => Some(a[i]),
            Off::Position => pos_of(self, p.fd),
            Off::ArgOrPosition(i) if a[i] == u64::MAX => pos_of(self, p.fd),
            Off::ArgOrPosition(i) => Some(a[i]),
            Off::Pointer(i) => self.peek_u64(tid, a[i]).or_else(|| pos_of(self, p.fd)),
        };
        p.arg = match d.extra {
            Extra::OpenFlags => Some(open_flags(regs.nr, &a, || {
                self.peek_u64(tid, a[2]).unwrap_or(0)
            })),
            _ => extra(&d, &a),
        };
        if let Some((to, at)) = d.to {
            let at = at.and_then(|i| self.peek_u64(tid, a[i]));
            p.to = self.destination(tid, a[to] as i32, at);
        }
        match call {
            UringEnter => {
                let pid = self.tasks.get(&tid).map_or(0, |t| t.pid);
                self.uring_enter(pid, tid, &a, t);
            }
            Exec => p.arg = rchar_of(self.tasks.get(&tid).map_or(0, |t| t.pid), tid),
            Rename | Unlink => {
                let ((fa, pa), (fb, pb)) = rename_paths(regs.nr, &a);
                let to = if call == Rename {
                    read_cstr(tid, pb)
                } else {
                    Some(Vec::new())
                };
                if let (Some(x), Some(y)) = (read_cstr(tid, pa), to) {
                    p.renames = Some(Box::new(((fa, x), (fb, y))));
                }
            }
            _ => {}
        }
        if p.fd >= 0 && !matches!(call, Mmap) {
            p.file = self.desc(tid, p.fd).map(|d| d.borrow().file);
        }
        p
    }
}

/// The NUL-terminated string at `addr` in thread `tid`'s memory (at most PATH_MAX bytes).
fn read_cstr(tid: i32, addr: u64) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    let mut buf = [0u8; 256];
    while out.len() < libc::PATH_MAX as usize {
        // A read stops at the end of a mapped page: read up to it, then on from there.
        let at = addr + out.len() as u64;
        let room = (4096 - (at % 4096) as usize).min(buf.len());
        let n = ptrace::read_mem(tid, at, &mut buf[..room]).ok()?;
        if n == 0 {
            return None;
        }
        if let Some(end) = buf[..n].iter().position(|&b| b == 0) {
            out.extend_from_slice(&buf[..end]);
            return Some(out);
        }
        out.extend_from_slice(&buf[..n]);
    }
    None
}

/// Thread `tid`'s rchar so far (/proc/PID/task/TID/io).
pub fn rchar_of(pid: u32, tid: i32) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/io")).ok()?;
    crate::measure::parse_io_field(&text, "rchar")
}

impl State {
    /// Call `p` of `tid` returned `ret` at `t`, the thread's schedstat then `sched`: the model
    /// follows it, and its [`Op`] is kept.
    pub fn exit(&mut self, tid: i32, p: Pending, ret: i64, t: u64, sched: Option<(u64, u64)>) {
        use Call::*;
        let Some(task) = self.tasks.get(&tid).cloned() else {
            return;
        };
        let (cpu, runq) = sched_delta(p.sched, sched);
        let mut op = Op {
            t: p.t,
            dur: t.saturating_sub(p.t),
            pid: task.pid,
            tid: tid as u32,
            call: p.call,
            fd: p.fd,
            file: p.file,
            off: p.off,
            len: p.len,
            ret,
            arg: p.arg,
            to_file: p.to.map(|t| t.0),
            to_off: p.to.and_then(|t| t.1),
            held: p.held,
            held_exit: task.held,
            stops: p.stops,
            cpu,
            runq,
        };
        let keep = match p.call {
            Stat if self.rec.launching => {
                let own = op.dur.saturating_sub(op.held_exit.saturating_sub(op.held));
                self.calibration
                    .push((own, runq, p.sched.map_or(0, |s| s.0)));
                false
            }
            Open | Close | CloseRange | Dup | Fcntl => {
                self.descriptors(&task, tid, &p, ret, &mut op)
            }
            Mmap | Munmap | Mremap | Madvise | Msync => self.memory(&task, &p, ret, t, &mut op),
            Rename | Unlink => {
                if let (0, Some(n)) = (ret, &p.renames) {
                    let ((fa, a), (fb, b)) = &**n;
                    op.file = if p.call == Rename {
                        self.rec.renamed(task.pid, (*fa, a), (*fb, b))
                    } else {
                        self.rec.unlinked(task.pid, (*fa, a))
                    };
                }
                true
            }
            Exec => {
                // Timed as the calls that are not kept (its exit is seen only when it fails).
                let own = op.dur.saturating_sub(op.held_exit.saturating_sub(op.held));
                self.rec
                    .timed(tid, libc::SYS_execve, op.t, own, (cpu, runq), ret < 0);
                false
            }
            _ => {
                self.positions(&task, tid, &p, ret, &mut op);
                true
            }
        };
        if keep {
            self.rec.ops.push(op);
        }
        // After the call's own op: completions it reaped are the thread's next ops.
        self.uring_follow(task.pid, tid, &p, ret, t);
    }

    /// Opens, closes and dups: the descriptor table follows; whether the op is kept.
    fn descriptors(&mut self, task: &Task, tid: i32, p: &Pending, ret: i64, op: &mut Op) -> bool {
        use Call::*;
        let a = p.args;
        if ret < 0 {
            return matches!(p.call, Open | Close);
        }
        match p.call {
            Open => {
                let fd = ret as i32;
                op.fd = fd;
                if let Some(file) = self.identify(task.pid, fd) {
                    op.file = Some(file);
                    let flags = p.arg.unwrap_or(0);
                    let desc = Desc {
                        file,
                        pos: 0,
                        append: flags & libc::O_APPEND as u64 != 0,
                    };
                    task.fds.borrow_mut().0.insert(
                        fd,
                        Slot {
                            desc: Rc::new(RefCell::new(desc)),
                            cloexec: flags & libc::O_CLOEXEC as u64 != 0,
                        },
                    );
                }
                true
            }
            Close => {
                task.fds.borrow_mut().0.remove(&p.fd);
                true
            }
            CloseRange => {
                let cloexec_only = a[2] & 4 != 0; // CLOSE_RANGE_CLOEXEC
                task.fds
                    .borrow_mut()
                    .close_range(a[0] as u32, a[1] as u32, cloexec_only);
                false
            }
            _ => {
                let cmd = a[1] as i32;
                let dups = p.call == Dup || cmd == libc::F_DUPFD || cmd == libc::F_DUPFD_CLOEXEC;
                if dups && let Some(d) = self.desc(tid, a[0] as i32) {
                    let cloexec = (p.call == Dup && a[2] & libc::O_CLOEXEC as u64 != 0)
                        || (p.call == Fcntl && cmd == libc::F_DUPFD_CLOEXEC);
                    task.fds
                        .borrow_mut()
                        .0
                        .insert(ret as i32, Slot { desc: d, cloexec });
                } else if cmd == libc::F_SETFD {
                    if let Some(s) = task.fds.borrow_mut().0.get_mut(&(a[0] as i32)) {
                        s.cloexec = a[2] & libc::FD_CLOEXEC as u64 != 0;
                    }
                } else if cmd == libc::F_SETFL
                    && let Some(d) = self.desc(tid, a[0] as i32)
                {
                    d.borrow_mut().append = a[2] & libc::O_APPEND as u64 != 0;
                }
                false
            }
        }
    }

    /// Reads, writes and seeks: the positions they move.
    fn positions(&mut self, task: &Task, tid: i32, p: &Pending, ret: i64, op: &mut Op) {
        use Call::*;
        let a = p.args;
        let advance = |st: &mut State, fd: i32, by: i64| {
            if by > 0
                && let Some(d) = st.desc(tid, fd)
            {
                d.borrow_mut().pos += by as u64;
            }
        };
        match p.call {
            Read | Readv => advance(self, p.fd, ret),
            Write | Writev if ret >= 0 => {
                if let Some(d) = self.desc(tid, p.fd) {
                    if d.borrow().append {
                        // An O_APPEND write went to the end: where that was, from the size now.
                        let size = std::fs::metadata(format!("/proc/{}/fd/{}", task.pid, p.fd))
                            .map(|m| m.len())
                            .unwrap_or(0);
                        op.off = Some(size.saturating_sub(ret as u64));
                        d.borrow_mut().pos = size;
                    } else {
                        d.borrow_mut().pos += ret as u64;
                    }
                }
            }
            Preadv | Preadv2 | Pwritev | Pwritev2 if a[3] == u64::MAX => advance(self, p.fd, ret),
            Lseek if ret >= 0 => {
                op.off = Some(ret as u64);
                if let Some(d) = self.desc(tid, p.fd) {
                    d.borrow_mut().pos = ret as u64;
                }
            }
            Sendfile => {
                if a[2] == 0 {
                    advance(self, p.fd, ret);
                }
                // sendfile writes at the destination's position, and moves it.
                advance(self, a[0] as i32, ret);
            }
            Splice | CopyFileRange => {
                if a[1] == 0 {
                    advance(self, p.fd, ret);
                }
                if a[3] == 0 {
                    advance(self, a[2] as i32, ret);
                }
            }
            _ => {}
        }
    }
}

/// What a call added to a thread's CPU and run-queue times between its two stops, ns.
pub(super) fn sched_delta(before: Option<(u64, u64)>, after: Option<(u64, u64)>) -> (u64, u64) {
    match (before, after) {
        (Some(a), Some(b)) => (b.0.saturating_sub(a.0), b.1.saturating_sub(a.1)),
        _ => (0, 0),
    }
}
