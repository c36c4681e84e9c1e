//! The kernel tracer's events turned into the trace's neutral record ([`Recording`]): the same
//! [`Op`]s, files, faults and counters the ptrace tracer records, so that the profile, the timeline and replay
//! read either alike. The kernel gives each call its file (device and inode) and the
//! descriptor's position, so no model of descriptors is needed here; files are named from
//! /proc while their descriptors are open, else from the path an open was given.

mod attached;
mod files;
mod kernel;
pub use kernel::CacheEntry;

use super::events::{CallEv, FaultEv, FileId, Record, TaskEv};
use crate::trace::calls::{Call, Calls};
use crate::trace::decode::{Decode, Len, Off, decode, extra, open_dirfd, open_flags, rename_paths};
use crate::trace::faults::FaultSample;
use crate::trace::record::Recording;
use crate::trace::{FileKind, KernelIo, Op};
use rustc_hash::FxHashMap as HashMap;
use std::collections::BTreeSet;

/// mmap's failure values: -4095..-1 as an address.
const MAP_FAILED_MIN: u64 = (-4095i64) as u64;

/// The events so far, as a trace's state.
pub struct Convert {
    /// What the trace records, as either tracer records it.
    pub rec: Recording,
    calls: Calls,
    /// The program's first process (the launcher until it execs the program).
    root: u32,
    /// Files by (kernel device, inode): the latest file of that inode and its generation
    /// (None while only its mapping at the attach was seen).
    by_id: HashMap<(u64, u64), (Option<u32>, u32)>,
    /// Files by (kernel device, inode, generation).
    by_gen: HashMap<(u64, u64, u32), u32>,
    /// Each process's address space (in `rec.spaces`).
    mm: HashMap<u32, u32>,
    /// When each thread was first seen, ns from the start, and its process.
    born: HashMap<u32, u64>,
    /// Each thread's process.
    pid_of: HashMap<u32, u32>,
    /// A thread running at the attach: its CPU and run-queue times then.
    sched_before: HashMap<u32, (u64, u64)>,
    /// Processes whose last thread has not exited.
    pub live: BTreeSet<u32>,
    /// Each followed process's birth (clock ticks since boot): with its pid, what names it
    /// and no later process given that pid.
    births: HashMap<u32, u64>,
    /// Live processes found ended at the last sweep, their exit event not yet seen.
    suspects: BTreeSet<u32>,
    /// Processes found ended whose exit event never came (the ring buffer was full).
    pub exits_lost: u64,
    /// Threads seen.
    tids: BTreeSet<u32>,
    /// Page faults, by address.
    pub faults: Vec<FaultSample>,
    /// Events that could not be read.
    pub unreadable: u64,
    /// The first of those, why.
    pub unreadable_why: Option<String>,
    /// io_uring_enter calls.
    pub uring_enters: u64,
    /// io_uring completions not yet seen by their thread, by thread.
    completed: HashMap<u32, Vec<Op>>,
    /// Read-like calls that brought pages into the page cache, by file.
    missed_reads: HashMap<u32, u64>,
    /// Bytes read with O_DIRECT, by file.
    direct_reads: HashMap<u32, u64>,
    /// A process traced from the middle of its run: its threads' counters at the attach.
    io_before: HashMap<u32, [u64; 6]>,
    /// When each thread's counters were read at the attach, and at the end (it still ran),
    /// monotonic ns: its calls are those that ended between the two.
    io_from: HashMap<u32, u64>,
    io_until: HashMap<u32, u64>,
    /// The launcher's exec has been seen, its execve's return not yet: the baseline's rchar
    /// is then taken at that call's entry.
    baseline_rchar_due: bool,
    /// When the program's first process ended, ns from the start.
    pub root_ended: Option<u64>,
    /// Its exit status then, as wait gives it.
    pub root_exit: Option<i32>,
    /// Bytes moved so far through each pipe, socket or device, each way.
    streams: HashMap<(u32, bool), u64>,
    /// Processes that see the file system as iolab does (its mount namespace and root): the
    /// kernel's walk of an opened file's path names it for iolab too.
    shares_mounts: HashMap<u32, bool>,
    /// Each file's last close: when, and the file as the kernel had it then.
    closed: HashMap<u32, (u64, FileId)>,
}

impl Convert {
    /// Nothing seen yet of a program whose launcher is process `root`, started at `t0`
    /// (CLOCK_MONOTONIC ns).
    pub fn new(root: u32, t0: u64) -> Self {
        let mut st = Recording::new(t0);
        st.root = Some(root);
        let mut mm = HashMap::default();
        mm.insert(root, st.spaces.fresh(root, 0));
        st.processes = 1;
        st.threads = 1;
        let mut born = HashMap::default();
        born.insert(root, 0);
        Convert {
            rec: st,
            calls: Calls::new(),
            root,
            by_id: HashMap::default(),
            by_gen: HashMap::default(),
            mm,
            born,
            pid_of: [(root, root)].into_iter().collect(),
            sched_before: HashMap::default(),
            live: [root].into(),
            births: super::alive::stat(root)
                .map(|(b, _)| (root, b))
                .into_iter()
                .collect(),
            suspects: BTreeSet::new(),
            exits_lost: 0,
            tids: [root].into(),
            faults: Vec::new(),
            unreadable: 0,
            unreadable_why: None,
            uring_enters: 0,
            completed: HashMap::default(),
            missed_reads: HashMap::default(),
            direct_reads: HashMap::default(),
            io_before: HashMap::default(),
            io_from: HashMap::default(),
            io_until: HashMap::default(),
            baseline_rchar_due: false,
            root_ended: None,
            root_exit: None,
            streams: HashMap::default(),
            shares_mounts: HashMap::default(),
            closed: HashMap::default(),
        }
    }

    fn rel(&self, t: u64) -> u64 {
        t.saturating_sub(self.rec.t0)
    }

    /// Takes one ring-buffer record.
    pub fn take(&mut self, bytes: &[u8]) {
        match super::events::parse(bytes) {
            Ok(Record::Call(c)) => self.call(c),
            Ok(Record::Fork(e)) => self.fork(&e),
            Ok(Record::Exec(e)) => self.exec(&e),
            Ok(Record::Exit(e)) => self.exit(&e),
            Ok(Record::Fault(f)) => self.fault(&f),
            Ok(Record::Uring(u)) => self.uring(&u),
            Ok(Record::Span(e)) => self.span(&e),
            Err(why) => {
                self.unreadable += 1;
                self.unreadable_why.get_or_insert(why);
            }
        }
    }

    fn fork(&mut self, e: &TaskEv) {
        let t = self.rel(e.t);
        if self.tids.insert(e.other_tid) {
            self.rec.threads += 1;
        }
        self.born.insert(e.other_tid, t);
        self.pid_of.insert(e.other_tid, e.other_pid);
        if e.other_pid != e.pid && self.live.insert(e.other_pid) {
            self.rec.processes += 1;
            if e.start != 0 {
                self.births
                    .insert(e.other_pid, super::alive::ticks(e.start));
            }
            let parent = self.mm.get(&e.pid).copied();
            let mm = match parent {
                Some(p) => self.rec.spaces.fork(p, e.other_pid, t),
                None => self.rec.spaces.fresh(e.other_pid, t),
            };
            self.mm.insert(e.other_pid, mm);
        }
    }

    /// Looks for live processes that have ended without their exit event: one found ended
    /// (gone, a zombie, or its pid another process's) at two sweeps in a row, with every
    /// event read between them, lost its exit event; it is followed no longer.
    pub fn sweep(&mut self) {
        let ended: BTreeSet<u32> = self
            .live
            .iter()
            .copied()
            .filter(|&p| match self.births.get(&p) {
                Some(&b) => !super::alive::running(p, b),
                None => super::alive::stat(p).is_none_or(|(_, ended)| ended),
            })
            .collect();
        for &p in ended.intersection(&self.suspects) {
            self.live.remove(&p);
            self.births.remove(&p);
            self.exits_lost += 1;
        }
        self.suspects = ended.difference(&self.suspects).copied().collect();
    }

    /// Sends `sig` to every live process whose birth is known, each through a pidfd checked
    /// to be that process (never to a pid that has passed to another).
    pub fn signal_live(&self, sig: i32) {
        for &p in &self.live {
            if let Some(&b) = self.births.get(&p) {
                super::alive::signal(p, b, sig);
            }
        }
    }

    fn exec(&mut self, e: &TaskEv) {
        let t = self.rel(e.t);
        if self.rec.launching && e.pid == self.root {
            // The launcher's own counts (iolab starting up) are not the program's; its rchar
            // is taken at the execve's entry (when its return comes), as the kernel's reads
            // for the exec are the program's (`exec_rchar`).
            self.rec.launching = false;
            self.baseline_rchar_due = true;
            self.rec.baseline = Some(KernelIo {
                rchar: e.io[0],
                wchar: e.io[1],
                syscr: e.io[2],
                syscw: e.io[3],
                read_bytes: e.io[4],
                write_bytes: e.io[5],
                ..KernelIo::default()
            });
        }
        let mm = self.rec.spaces.fresh(e.pid, t);
        self.mm.insert(e.pid, mm);
    }

    fn exit(&mut self, e: &TaskEv) {
        let t = self.rel(e.t);
        // A thread read at the end that ended after: its counters are in already.
        if !self.io_until.contains_key(&e.tid) {
            let io = self.since_attach(e.tid, e.io);
            self.add_io(&io);
        }
        let born = self.born.remove(&e.tid).unwrap_or(0);
        let (cpu0, runq0) = self.sched_before.remove(&e.tid).unwrap_or((0, 0));
        self.rec.thread_times.push(crate::trace::ThreadTimes {
            pid: e.pid,
            tid: e.tid,
            name: e.comm.clone(),
            born,
            end: t,
            running: false,
            cpu_ns: e.cpu_ns.saturating_sub(cpu0),
            runq_ns: e.runq_ns.saturating_sub(runq0),
            ..Default::default()
        });
        if e.group_dead {
            self.live.remove(&e.pid);
            self.births.remove(&e.pid);
            self.suspects.remove(&e.pid);
            if e.pid == self.root {
                self.root_ended = Some(t);
                self.root_exit = Some(e.exit_code);
            }
        }
    }

    fn fault(&mut self, f: &FaultEv) {
        if self.rec.launching && f.pid == self.root {
            return;
        }
        self.faults.push(FaultSample {
            pid: f.pid,
            tid: f.tid,
            t: f.t,
            addr: f.addr,
        });
    }

    fn call(&mut self, c: CallEv) {
        use Call::*;
        let Some(call) = self.calls.get(c.entry.nr as i64) else {
            return;
        };
        if self.rec.launching && c.pid == self.root {
            return;
        }
        if call == Exec && c.ret == 0 && c.pid == self.root {
            self.program_exec(&c);
        }
        let a = c.entry.args;
        let t = self.rel(c.entry.t);
        let mut op = Op {
            t,
            dur: c.t1.saturating_sub(c.entry.t),
            pid: c.pid,
            tid: c.tid,
            call,
            fd: -1,
            file: None,
            off: None,
            len: 0,
            ret: c.ret,
            arg: None,
            to_file: None,
            to_off: None,
            held: 0,
            held_exit: 0,
            stops: 0,
            cpu: c.t1.saturating_sub(c.entry.t).saturating_sub(c.off),
            runq: c.runq,
        };
        self.pid_of.insert(c.tid, c.pid);
        let f = c.entry.f;
        // The kernel's positions are those after the call.
        let pos = f.map(|f| f.pos);
        let d = decode(call, c.entry.nr as i64);
        let keep = match call {
            Open => {
                self.opened(&c, &mut op);
                true
            }
            Close | Fsync | Fdatasync | Ftruncate | Read | Readv | Write | Writev | Pread
            | Pwrite | Preadv | Preadv2 | Pwritev | Pwritev2 | Lseek | SyncFileRange
            | Readahead | Fallocate | Fadvise | Getdents => {
                op.fd = d.fd.map_or(-1, |i| a[i] as i32);
                op.file = self.file_of(c.pid, op.fd, f);
                if let (Close, 0, Some(i), Some(id)) = (call, c.ret, op.file, f) {
                    self.closing(i, op.t, id);
                }
                self.positioned(&d, &c, &mut op, pos);
                self.streamed(call, &mut op);
                true
            }
            Sendfile | Splice | CopyFileRange => self.copied(&d, &c, &mut op),
            Mmap | Munmap | Mremap | Madvise | Msync => self.memory(call, &c, &mut op),
            Stat => {
                op.fd = d.fd.map_or(-1, |i| a[i] as i32);
                if op.fd >= 0 {
                    op.file = self.file_of(c.pid, op.fd, f);
                }
                true
            }
            UringEnter => {
                self.uring_enters += 1;
                true
            }
            Rename | Unlink => {
                let ((fa, _), (fb, _)) = rename_paths(c.entry.nr as i64, &a);
                op.file = match (c.ret, c.path.as_deref(), c.renamed_to.as_deref()) {
                    (0, Some(from), Some(to)) => self.rec.renamed(c.pid, (fa, from), (fb, to)),
                    (0, Some(name), None) => self.rec.unlinked(c.pid, (fa, name)),
                    _ => None,
                };
                true
            }
            UringSetup | UringRegister => true,
            Exec => {
                if c.ret == 0 {
                    self.rec.kernel.exec_rchar += c.rchar.saturating_sub(c.entry.extra);
                }
                let sched = (op.cpu, op.runq);
                let nr = c.entry.nr as i64;
                self.rec
                    .timed(c.tid as i32, nr, op.t, op.dur, sched, c.ret < 0);
                false
            }
            CloseRange | Dup | Fcntl | UringRead | UringWrite => false,
        };
        self.missed(&c, call, op.file);
        let after = self.seen(&c);
        if keep {
            self.rec.ops.push(op);
        }
        self.rec.ops.extend(after);
    }

    /// The program's first exec: the kernel's counters before it are the baseline. What the
    /// exec itself read (the program's header and first pages) is the program's, in
    /// read_bytes as in rchar.
    fn program_exec(&mut self, c: &CallEv) {
        if !self.baseline_rchar_due {
            return;
        }
        self.baseline_rchar_due = false;
        if let Some(b) = self.rec.baseline.as_mut() {
            b.rchar = c.entry.extra;
            b.read_bytes = c.entry.extra2;
        }
    }

    /// An open: its flags, and the file it opened, named.
    fn opened(&mut self, c: &CallEv, op: &mut Op) {
        let (a, f, nr) = (c.entry.args, c.entry.f, c.entry.nr as i64);
        op.arg = Some(open_flags(nr, &a, || c.entry.extra));
        if c.ret >= 0
            && let Some(id) = f
        {
            op.fd = c.ret as i32;
            let dirfd = open_dirfd(nr, &a);
            // The kernel's own path of the opened file when it walked it whole;
            // else the program's, made absolute from its directory if it still can be.
            let path = match c.kpath.as_deref() {
                Some(k) => Some((k, libc::AT_FDCWD)),
                None => c.path.as_deref().map(|p| (p, dirfd)),
            };
            let from_kernel = c.kpath.is_some() && self.shares_mounts(c.pid);
            let key = (id.kdev, id.ino);
            op.file = self.file_at(c.pid, Some(op.fd), Some(&id), key, path, from_kernel);
        }
    }

    /// sendfile, splice, copy_file_range: source and destination, where each was; whether
    /// the op is kept.
    fn copied(&mut self, d: &Decode, c: &CallEv, op: &mut Op) -> bool {
        let (a, f) = (c.entry.args, c.entry.f);
        let pos = f.map(|f| f.pos);
        let (Some(src), Some((dst, dst_at)), Off::Pointer(src_at), Len::Arg(len)) =
            (d.fd, d.to, d.off, d.len)
        else {
            return false;
        };
        op.fd = a[src] as i32;
        op.file = self.file_of(c.pid, op.fd, f);
        op.arg = extra(d, &a);
        // An offset given by pointer is moved by the call, as the position is: the probe
        // read it at the exit.
        op.off = if a[src_at] != 0 {
            Some(before(c.entry.extra, c.ret))
        } else {
            pos.map(|p| before(p, c.ret))
        };
        if !self.is_regular(op.file) {
            op.off = Some(self.stream(op.file, false, c.ret));
        }
        op.len = a[len];
        if let Some(g) = c.entry.g {
            op.to_file = self.file_of(c.pid, a[dst] as i32, Some(g));
            let seekable = op
                .to_file
                .and_then(|i| self.rec.files.get(i as usize))
                .is_some_and(|x| matches!(x.kind, FileKind::File | FileKind::Device));
            op.to_off = if dst_at.is_some_and(|j| a[j] != 0) {
                Some(before(c.entry.extra2, c.ret))
            } else if seekable {
                Some(before(g.pos, c.ret))
            } else {
                None
            };
        }
        true
    }

    /// Reads, writes and the calls on one descriptor: where they worked, as the table of
    /// [`decode`] says. `pos` is the descriptor's position after the call.
    fn positioned(&self, d: &Decode, c: &CallEv, op: &mut Op, pos: Option<u64>) {
        let a = c.entry.args;
        let moved = pos.map(|p| before(p, c.ret));
        op.off = match d.off {
            Off::None | Off::Pointer(_) => None,
            Off::Arg(i) => Some(a[i]),
            Off::Position => moved,
            Off::ArgOrPosition(i) if a[i] == u64::MAX => moved,
            Off::ArgOrPosition(i) => Some(a[i]),
            Off::Result => (c.ret >= 0).then_some(c.ret as u64),
        };
        op.len = match d.len {
            Len::None => 0,
            Len::Arg(i) => a[i],
            // The probe summed the iovec.
            Len::Iov(..) => c.entry.extra,
        };
        op.arg = extra(d, &a);
    }

    fn is_regular(&self, file: Option<u32>) -> bool {
        file.and_then(|i| self.rec.files.get(i as usize))
            .is_some_and(|f| f.kind == FileKind::File)
    }

    /// A pipe's, socket's or device's reads and writes at their place in its stream (the
    /// kernel keeps no position for them; the ptrace tracer's model counts, and so does this).
    fn streamed(&mut self, call: Call, op: &mut Op) {
        use Call::*;
        let write = match call {
            Read | Readv => false,
            Write | Writev => true,
            Preadv2 | Pwritev2 | Preadv | Pwritev if op.off.is_some() && op.fd >= 0 => {
                return;
            }
            _ => return,
        };
        if !self.is_regular(op.file) && op.file.is_some() {
            op.off = Some(self.stream(op.file, write, op.ret));
        }
    }

    /// The stream position of `file` in one direction before a transfer of `ret` bytes.
    fn stream(&mut self, file: Option<u32>, write: bool, ret: i64) -> u64 {
        let at = self
            .streams
            .entry((file.unwrap_or(u32::MAX), write))
            .or_insert(0);
        let was = *at;
        *at += ret.max(0) as u64;
        was
    }

    /// The mapping calls: the address space follows; file mappings and advice on them kept.
    fn memory(&mut self, call: Call, c: &CallEv, op: &mut Op) -> bool {
        use Call::*;
        let a = c.entry.args;
        let t = op.t;
        let mm = *self
            .mm
            .entry(c.pid)
            .or_insert_with(|| self.rec.spaces.fresh(c.pid, t));
        match call {
            Mmap => {
                self.positioned(&decode(call, c.entry.nr as i64), c, op, None);
                op.fd = a[4] as i32;
                let addr = c.ret as u64;
                if addr >= MAP_FAILED_MIN {
                    return false;
                }
                let anonymous = a[3] & libc::MAP_ANONYMOUS as u64 != 0 || op.fd < 0;
                let file = if anonymous {
                    None
                } else {
                    self.file_of(c.pid, op.fd, c.entry.f)
                };
                self.rec.spaces.map(mm, addr, a[1], file, a[5], t);
                let Some(f) = file else {
                    return false;
                };
                if a[2] & libc::PROT_EXEC as u64 != 0 {
                    self.rec.files[f as usize].code = true;
                }
                op.file = Some(f);
                true
            }
            Munmap => {
                if c.ret >= 0 {
                    self.rec.spaces.unmap(mm, a[0], a[1], t);
                }
                false
            }
            Mremap => {
                if (c.ret as u64) < MAP_FAILED_MIN {
                    let old = self.rec.spaces.at(mm, a[0]);
                    self.rec.spaces.unmap(mm, a[0], a[1], t);
                    if let Some(m) = old {
                        let off = m.off + (a[0] - m.start);
                        self.rec
                            .spaces
                            .map(mm, c.ret as u64, a[2], Some(m.file), off, t);
                    }
                }
                false
            }
            _ => {
                self.positioned(&decode(call, c.entry.nr as i64), c, op, None);
                match self.rec.spaces.at(mm, a[0]) {
                    Some(m) => {
                        op.file = Some(m.file);
                        op.off = Some(m.off + (a[0] - m.start));
                        true
                    }
                    None => false,
                }
            }
        }
    }
}

/// Where a transfer of `ret` bytes that ended at `after` began.
fn before(after: u64, ret: i64) -> u64 {
    after.saturating_sub(ret.max(0) as u64)
}
