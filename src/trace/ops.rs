//! A traced call's entry and exit: what to capture while the thread stops at the entry (the
//! position a `read` starts at, the sum of an iovec, an offset behind a pointer), and at the
//! exit the [`Op`] it was, with the model of descriptors and mappings brought up to date.

use super::calls::Call;
use super::model::{Desc, Fds, Slot, Spaces};
use super::{FileInfo, FileKind, KernelIo, Op, ProcTimes};
use crate::sys::ptrace::{self, Regs};
use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
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
    /// It has stopped once (its first stop, ptrace's SIGSTOP, is swallowed).
    pub started: bool,
    /// Time the tracer has held it at its stops so far, ns.
    pub held: u64,
    /// Its stops so far.
    pub stops: u64,
    /// When the tracer first saw it, ns.
    pub born: u64,
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
}

impl Pending {
    /// For an execve: the thread's rchar when it entered the call.
    pub fn exec_rchar(&self) -> Option<u64> {
        (self.call == Call::Exec).then_some(self.arg).flatten()
    }
}

/// Everything the tracer keeps while the program runs.
pub struct State {
    /// CLOCK_MONOTONIC at the start, ns.
    pub t0: u64,
    /// Live threads.
    pub tasks: HashMap<i32, Task>,
    /// Files seen, in order.
    pub files: Vec<FileInfo>,
    /// Files by device, inode and birth time: an inode number a deleted file freed and a new
    /// file took is a new file (its birth time differs).
    by_id: HashMap<(u64, u64, Option<std::time::SystemTime>), u32>,
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
    /// Stops answered.
    pub stops: u64,
    /// The program's io_uring rings and what was seen of them.
    pub uring: super::uring::Rings,
    /// The page cache's work for the whole run (the kernel tracer fills it).
    pub cache: Option<super::CacheSeen>,
    /// Notes, each once.
    pub notes: BTreeSet<String>,
    /// The launcher (`iolab trace-exec`) has not exec'd the program yet.
    pub launching: bool,
    /// The launcher's counts at the program's execve, taken off the kernel's sums.
    pub baseline: Option<KernelIo>,
    /// Per process, its threads' times (read as each exited).
    pub procs: std::collections::BTreeMap<u32, ProcTimes>,
    /// The launcher's calibration stats: each one's own time, ns; its thread's CPU time at the
    /// first one's entry.
    pub calibration: (Vec<u64>, Option<u64>),
    /// What a traced call costs, from the calibration.
    pub stop_cost: Option<super::StopCost>,
}

impl State {
    /// An empty state with its time origin.
    pub fn new(t0: u64) -> Self {
        State {
            t0,
            tasks: HashMap::new(),
            files: Vec::new(),
            by_id: HashMap::new(),
            ops: Vec::new(),
            spaces: Spaces::default(),
            kernel: KernelIo::default(),
            processes: 0,
            threads: 0,
            stops: 0,
            uring: Default::default(),
            cache: None,
            notes: BTreeSet::new(),
            launching: true,
            baseline: None,
            procs: Default::default(),
            calibration: (Vec::new(), None),
            stop_cost: None,
        }
    }

    /// Adds a note (once).
    pub fn note(&mut self, text: &str) {
        if !self.notes.contains(text) {
            self.notes.insert(text.to_string());
        }
    }

    /// The file behind descriptor `fd` of process `pid`, registered on first sight.
    pub(super) fn identify(&mut self, pid: u32, fd: i32) -> Option<u32> {
        let link = format!("/proc/{pid}/fd/{fd}");
        let meta = std::fs::metadata(&link).ok()?;
        let key = (meta.dev(), meta.ino(), meta.created().ok());
        if let Some(&i) = self.by_id.get(&key) {
            return Some(i);
        }
        let (path, path_hex) = std::fs::read_link(&link)
            .map(|p| FileInfo::path_fields(&p))
            .unwrap_or_else(|_| (link.clone(), None));
        let ft = meta.file_type();
        let kind = if ft.is_file() {
            FileKind::File
        } else if ft.is_dir() {
            FileKind::Dir
        } else if ft.is_fifo() {
            FileKind::Pipe
        } else if ft.is_socket() {
            FileKind::Socket
        } else if ft.is_char_device() || ft.is_block_device() {
            FileKind::Device
        } else {
            FileKind::Other
        };
        let resident_before = if kind == FileKind::File {
            resident_bytes(&link, meta.len())
        } else {
            None
        };
        self.files.push(FileInfo {
            path,
            path_hex,
            kind,
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.len(),
            size_after: None,
            mtime_ns: meta.mtime() as i128 * 1_000_000_000 + meta.mtime_nsec() as i128,
            mtime_after_ns: None,
            resident_before,
            resident_after: None,
            xor: None,
            code: false,
            mapped_xor: None,
            cache: None,
        });
        let i = (self.files.len() - 1) as u32;
        self.by_id.insert(key, i);
        Some(i)
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
        };
        let fd0 = a[0] as i32;
        let pos_of = |st: &mut State, fd: i32| st.desc(tid, fd).map(|d| d.borrow().pos);
        match call {
            Open => {
                p.arg = Some(
                    match regs.nr {
                        #[cfg(target_arch = "x86_64")]
                        libc::SYS_open => a[1],
                        #[cfg(target_arch = "x86_64")]
                        libc::SYS_creat => (libc::O_CREAT | libc::O_WRONLY | libc::O_TRUNC) as u64,
                        libc::SYS_openat2 => self.peek_u64(tid, a[2]).unwrap_or(0),
                        _ => a[2],
                    } & 0xffff_ffff,
                );
            }
            Read | Readv | Write | Writev => {
                p.fd = fd0;
                p.off = pos_of(self, fd0);
                p.len = if matches!(call, Readv | Writev) {
                    self.iov_sum(tid, a[1], a[2])
                } else {
                    a[2]
                };
            }
            Pread | Pwrite => {
                p.fd = fd0;
                p.off = Some(a[3]);
                p.len = a[2];
            }
            Preadv | Preadv2 | Pwritev | Pwritev2 => {
                p.fd = fd0;
                p.len = self.iov_sum(tid, a[1], a[2]);
                p.off = if a[3] == u64::MAX {
                    pos_of(self, fd0)
                } else {
                    Some(a[3])
                };
                if matches!(call, Preadv2 | Pwritev2) {
                    p.arg = Some(a[5]);
                }
            }
            Sendfile => {
                p.fd = a[1] as i32;
                p.off = self
                    .peek_u64(tid, a[2])
                    .or_else(|| pos_of(self, a[1] as i32));
                p.len = a[3];
                p.arg = Some(a[0]);
                p.to = self.destination(tid, fd0, None);
            }
            Splice | CopyFileRange => {
                p.fd = fd0;
                p.off = self.peek_u64(tid, a[1]).or_else(|| pos_of(self, fd0));
                p.len = a[4];
                p.arg = Some(a[2]);
                let at = self.peek_u64(tid, a[3]);
                p.to = self.destination(tid, a[2] as i32, at);
            }
            UringEnter => {
                let pid = self.tasks.get(&tid).map_or(0, |t| t.pid);
                self.uring_enter(pid, tid, &a, t);
            }
            UringSetup | UringRegister => {}
            Exec => p.arg = rchar_of(self.tasks.get(&tid).map_or(0, |t| t.pid), tid),
            Stat => {
                if self.launching && self.calibration.1.is_none() {
                    self.calibration.1 = cpu_of(self.tasks.get(&tid).map_or(0, |t| t.pid), tid);
                }
                p.fd = match regs.nr {
                    #[cfg(target_arch = "x86_64")]
                    libc::SYS_stat | libc::SYS_lstat => -1,
                    _ => fd0,
                };
            }
            Getdents => {
                p.fd = fd0;
                p.len = a[2];
            }
            _ => from_args(&mut p),
        }
        if p.fd >= 0 && !matches!(call, Mmap) {
            p.file = self.desc(tid, p.fd).map(|d| d.borrow().file);
        }
        p
    }
}

/// What the arguments alone say of the calls that need nothing else.
fn from_args(p: &mut Pending) {
    use Call::*;
    let a = p.args;
    let fd0 = a[0] as i32;
    match p.call {
        Lseek => {
            p.fd = fd0;
            p.arg = Some(a[2]);
        }
        Close | Fsync | Fdatasync | Ftruncate => {
            p.fd = fd0;
            if p.call == Ftruncate {
                p.len = a[1];
            }
        }
        SyncFileRange | Readahead => {
            p.fd = fd0;
            p.off = Some(a[1]);
            p.len = a[2];
        }
        Fallocate => {
            p.fd = fd0;
            p.off = Some(a[2]);
            p.len = a[3];
            p.arg = Some(a[1]);
        }
        Fadvise => {
            p.fd = fd0;
            p.off = Some(a[1]);
            p.len = a[2];
            p.arg = Some(a[3]);
        }
        Mmap => {
            p.fd = a[4] as i32;
            p.off = Some(a[5]);
            p.len = a[1];
            p.arg = Some((a[2] << 32) | (a[3] & 0xffff_ffff));
        }
        Madvise | Msync => {
            p.len = a[1];
            p.arg = Some(a[2]);
        }
        _ => {}
    }
}

/// Thread `tid`'s time on a CPU so far, ns (/proc/PID/task/TID/schedstat).
pub fn cpu_of(pid: u32, tid: i32) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/schedstat")).ok()?;
    text.split_whitespace().next()?.parse().ok()
}

/// Thread `tid`'s rchar so far (/proc/PID/task/TID/io).
pub fn rchar_of(pid: u32, tid: i32) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/io")).ok()?;
    crate::measure::parse_io_field(&text, "rchar")
}

fn resident_bytes(link: &str, size: u64) -> Option<u64> {
    let f = std::fs::File::open(link).ok()?;
    let path = std::path::Path::new(link);
    if !crate::cache::residency_visible(&f, path) {
        return None;
    }
    let r = crate::cache::residency_of(&f, size, path).ok()?;
    Some((r.resident_pages * r.page_size).min(size))
}

impl State {
    /// Call `p` of `tid` returned `ret` at `t`: the model follows it, and its [`Op`] is kept.
    pub fn exit(&mut self, tid: i32, p: Pending, ret: i64, t: u64) {
        use Call::*;
        let Some(task) = self.tasks.get(&tid).cloned() else {
            return;
        };
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
        };
        let keep = match p.call {
            Stat if self.launching => {
                let own = op.dur.saturating_sub(op.held_exit.saturating_sub(op.held));
                self.calibration.0.push(own);
                false
            }
            Wait => {
                let own = op.dur.saturating_sub(op.held_exit.saturating_sub(op.held));
                self.procs.entry(task.pid).or_default().children_ns += own;
                false
            }
            Open | Close | CloseRange | Dup | Fcntl => {
                self.descriptors(&task, tid, &p, ret, &mut op)
            }
            Mmap | Munmap | Mremap | Madvise | Msync => self.memory(&task, &p, ret, t, &mut op),
            Exec => false,
            _ => {
                self.positions(&task, tid, &p, ret, &mut op);
                true
            }
        };
        if keep {
            self.ops.push(op);
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
