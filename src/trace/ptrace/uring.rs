//! io_uring requests, read from the program's own rings: the submission queue at each
//! `io_uring_enter` (the entries between the kernel's head and the program's tail are what the
//! call submits), the completion queue after it, at munmap of a ring and at each thread's exit
//! (a program may reap completions without a call). A read or write request and its completion
//! become one [`Op`] (`uring_read`/`uring_write`) on the file, at the offset, with the bytes the
//! completion returned, of the thread that saw the completion, when it saw it. Layouts from `include/uapi/linux/io_uring.h` (stable ABI).

use super::ops::{Pending, State};
use super::rings::{Req, Ring, SETUP_NO_MMAP, SETUP_NO_SQARRAY};
use crate::sys::ptrace;
use crate::trace::{Call, Op};

/// `io_uring_params` offsets: flags, features, then `sq_off` and `cq_off`.
const P_FLAGS: usize = 8;
const P_FEATURES: usize = 20;
const P_SQ: usize = 40;
const P_CQ: usize = 80;
const PARAMS_LEN: usize = 120;

/// More entries than a ring can have (the kernel's limit is 32768 submissions and twice as many
/// completions): a mask this large was not read from a ring.
const MAX_ENTRIES: u32 = 1 << 17;
/// The ring offsets the kernel gives lie within its rings (65536 completions of 32 bytes at
/// most, then the submission index array): larger ones were not read from the kernel.
const MAX_OFFSET: u32 = 1 << 23;

const OFF_SQ_RING: u64 = 0;
const OFF_CQ_RING: u64 = 0x800_0000;
const OFF_SQES: u64 = 0x1000_0000;

/// `io_uring_enter` flag: the descriptor is an index into the registered rings.
const ENTER_REGISTERED_RING: u64 = 1 << 4;
/// SQE flags: a registered file's index instead of a descriptor; no completion on success.
const SQE_FIXED_FILE: u8 = 1 << 0;
const SQE_CQE_SKIP_SUCCESS: u8 = 1 << 6;

const OP_READV: u8 = 1;
const OP_WRITEV: u8 = 2;
const OP_READ_FIXED: u8 = 4;
const OP_WRITE_FIXED: u8 = 5;
const OP_READ: u8 = 22;
const OP_WRITE: u8 = 23;

const REGISTER_FILES: u64 = 2;
const UNREGISTER_FILES: u64 = 3;
const REGISTER_FILES_UPDATE: u64 = 6;
const REGISTER_FILES2: u64 = 13;
const REGISTER_FILES_UPDATE2: u64 = 14;
const REGISTER_RING_FDS: u64 = 20;

fn u32_at(b: &[u8], at: usize) -> u32 {
    b.get(at..at + 4)
        .map_or(0, |x| u32::from_ne_bytes(x.try_into().unwrap_or_default()))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    b.get(at..at + 8)
        .map_or(0, |x| u64::from_ne_bytes(x.try_into().unwrap_or_default()))
}

fn read_exact(tid: i32, addr: u64, len: usize) -> Option<Vec<u8>> {
    let mut b = vec![0u8; len];
    match ptrace::read_mem(tid, addr, &mut b) {
        Ok(n) if n == len => Some(b),
        _ => None,
    }
}

impl State {
    /// `io_uring_setup` returned ring descriptor `fd` to thread `tid` of process `pid`, with
    /// the ring's layout written to the params at `params`.
    pub(super) fn uring_setup(&mut self, pid: u32, tid: i32, fd: i32, params: u64) {
        let Some(p) = read_exact(tid, params, PARAMS_LEN) else {
            return;
        };
        let mut r = Ring {
            flags: u32_at(&p, P_FLAGS),
            single_mmap: u32_at(&p, P_FEATURES) & 1 != 0,
            ..Ring::default()
        };
        for (i, v) in r.sq.iter_mut().enumerate() {
            *v = u32_at(&p, P_SQ + 4 * i);
        }
        for (i, v) in r.cq.iter_mut().enumerate() {
            *v = u32_at(&p, P_CQ + 4 * i);
        }
        if r.sq.iter().chain(&r.cq).any(|&o| o >= MAX_OFFSET) {
            return;
        }
        if r.flags & SETUP_NO_MMAP != 0 {
            // The program's own memory: the SQEs at sq_off.user_addr, the rings at cq_off's.
            r.sqes = Some(u64_at(&p, P_SQ + 32));
            r.sq_ring = Some(u64_at(&p, P_CQ + 32));
            r.cq_ring = r.sq_ring;
        }
        self.rings.rings.insert((pid, fd), r);
    }

    /// Process `pid` mapped `fd` at `addr` from `off`: a ring's part, if `fd` is a ring.
    pub(super) fn uring_mapped(&mut self, pid: u32, fd: i32, off: u64, addr: u64) {
        if let Some(r) = self.rings.rings.get_mut(&(pid, fd)) {
            match off {
                OFF_SQ_RING => r.sq_ring = Some(addr),
                OFF_CQ_RING => r.cq_ring = Some(addr),
                OFF_SQES => r.sqes = Some(addr),
                _ => {}
            }
        }
    }

    /// The ring `io_uring_enter`'s first argument names in process `pid`.
    fn ring_key(&self, pid: u32, fd: u64, flags: u64) -> Option<(u32, i32)> {
        if flags & ENTER_REGISTERED_RING == 0 {
            return Some((pid, fd as i32));
        }
        if let Some(&real) = self.rings.registered.get(&(pid, fd as u32)) {
            return Some((pid, real));
        }
        // One ring in the process: that one.
        let mut own = self.rings.rings.keys().filter(|k| k.0 == pid);
        match (own.next(), own.next()) {
            (Some(&k), None) => Some(k),
            _ => None,
        }
    }

    /// Thread `tid` of `pid` enters `io_uring_enter(fd, to_submit, min_complete, flags)` at
    /// `t`: the submissions it hands over are read, and completions so far.
    pub(super) fn uring_enter(&mut self, pid: u32, tid: i32, args: &[u64; 6], t: u64) {
        let Some(key) = self.ring_key(pid, args[0], args[3]) else {
            self.uring_unseen(args[1], "it named a registered ring iolab could not tell");
            return;
        };
        self.uring_reap(key, tid, t);
        let Some(r) = self.rings.rings.get(&key) else {
            self.uring_unseen(args[1], "its ring was set up before iolab saw it");
            return;
        };
        if let Some(why) = r.readable() {
            self.uring_unseen(args[1], why);
            return;
        }
        let (Some(ring), Some(sqes)) = (r.sq_ring, r.sqes) else {
            return;
        };
        let (sq, size, flags) = (r.sq, r.sqe_size(), r.flags);
        let Some(hdr) = read_exact(
            tid,
            ring,
            sq[..4].iter().max().map_or(0, |&m| m as usize) + 4,
        ) else {
            return;
        };
        let (head, tail) = (u32_at(&hdr, sq[0] as usize), u32_at(&hdr, sq[1] as usize));
        let mask = u32_at(&hdr, sq[2] as usize);
        if mask >= MAX_ENTRIES {
            return;
        }
        let n = tail.wrapping_sub(head).min(args[1] as u32).min(mask + 1);
        for i in 0..n {
            let pos = head.wrapping_add(i) & mask;
            let idx = if flags & SETUP_NO_SQARRAY != 0 {
                pos
            } else {
                let at = ring.wrapping_add(sq[6] as u64 + 4 * pos as u64);
                match read_exact(tid, at, 4) {
                    Some(b) => u32_at(&b, 0) & mask,
                    None => continue,
                }
            };
            if let Some(sqe) = read_exact(tid, sqes.wrapping_add(idx as u64 * size), 64) {
                self.uring_submitted(key, pid, tid, &sqe, t);
            }
        }
    }

    /// One submission queue entry: a read or write is kept until its completion.
    fn uring_submitted(&mut self, key: (u32, i32), pid: u32, tid: i32, sqe: &[u8], t: u64) {
        let (opcode, sflags, fd) = (sqe[0], sqe[1], u32_at(sqe, 4) as i32);
        let (off, addr, len, user_data) = (
            u64_at(sqe, 8),
            u64_at(sqe, 16),
            u32_at(sqe, 24),
            u64_at(sqe, 32),
        );
        self.rec.uring.requests += 1;
        let call = match opcode {
            OP_READ | OP_READV | OP_READ_FIXED => Call::UringRead,
            OP_WRITE | OP_WRITEV | OP_WRITE_FIXED => Call::UringWrite,
            _ => {
                self.rec.uring.other += 1;
                return;
            }
        };
        let len = if matches!(opcode, OP_READV | OP_WRITEV) {
            self.iov_sum(tid, addr, len as u64)
        } else {
            len as u64
        };
        let (fd, file) = if sflags & SQE_FIXED_FILE != 0 {
            let fixed = self
                .rings
                .rings
                .get(&key)
                .and_then(|r| r.fixed.get(fd as usize).copied().flatten());
            match fixed {
                Some(f) => f,
                None => {
                    self.uring_unseen(1, "it used a registered file iolab could not tell");
                    return;
                }
            }
        } else {
            (fd, self.desc(tid, fd).map(|d| d.borrow().file))
        };
        // An offset of -1: the file's position, which the request moves.
        let off = if off == u64::MAX {
            self.desc(tid, fd).map(|d| {
                let at = d.borrow().pos;
                d.borrow_mut().pos += len;
                at
            })
        } else {
            Some(off)
        };
        let req = Req {
            call,
            t,
            fd,
            file,
            off,
            len,
            opcode,
        };
        if sflags & SQE_CQE_SKIP_SUCCESS != 0 {
            // No completion comes on success: taken as done, whole, now.
            self.uring_done(pid, tid, req, len as i64, t);
        } else if let Some(r) = self.rings.rings.get_mut(&key) {
            r.in_flight.entry(user_data).or_default().push_back(req);
        }
    }

    /// Request `r`'s completion, `res`, seen at `t` by thread `tid` (stopped then): an op of
    /// that thread at that time, so that each thread's ops stay in the order it made its calls
    /// (the thread that reaps a completion is the one that gets its data), lasting from its
    /// submission.
    fn uring_done(&mut self, pid: u32, tid: i32, r: Req, res: i64, t: u64) {
        self.rec.ops.push(Op {
            t,
            dur: t.saturating_sub(r.t),
            pid,
            tid: tid as u32,
            call: r.call,
            fd: r.fd,
            file: r.file,
            off: r.off,
            len: r.len,
            ret: res,
            arg: Some(r.opcode as u64),
            to_file: None,
            to_off: None,
            held: 0,
            held_exit: 0,
            stops: 0,
            cpu: 0,
            runq: 0,
        });
        self.rec.uring_completed(r.call);
    }

    fn uring_unseen(&mut self, n: u64, why: &str) {
        self.rec.uring.unseen += n;
        if self.rec.uring.why.is_none() {
            self.rec.uring.why = Some(why.to_string());
        }
    }

    /// Reads the completions ring `key` has posted since the last look (through thread `tid`,
    /// stopped), at `t`.
    pub(super) fn uring_reap(&mut self, key: (u32, i32), tid: i32, t: u64) {
        let Some(r) = self.rings.rings.get(&key) else {
            return;
        };
        let Some(base) = r.cq_base() else {
            return;
        };
        let (cq, size) = (r.cq, r.cqe_size());
        let Some(hdr) = read_exact(tid, base, (cq[5] as usize).max(16)) else {
            return;
        };
        let (tail, mask) = (u32_at(&hdr, cq[1] as usize), u32_at(&hdr, cq[2] as usize));
        if mask >= MAX_ENTRIES {
            return;
        }
        let entries = mask + 1;
        let head = u32_at(&hdr, cq[0] as usize);
        // The first look starts at the program's head: what it reaped before is not ours.
        let mut from = r.cq_seen.unwrap_or(head);
        if tail.wrapping_sub(from) > entries {
            // Overwritten before iolab looked: those completions are lost.
            self.uring_unseen(
                tail.wrapping_sub(from).wrapping_sub(entries) as u64,
                "completions were overwritten between two looks",
            );
            from = tail.wrapping_sub(entries);
        }
        let mut done = Vec::new();
        let mut i = from;
        while i != tail {
            let at = base.wrapping_add(cq[5] as u64 + (i & mask) as u64 * size);
            if let Some(c) = read_exact(tid, at, 16) {
                done.push((u64_at(&c, 0), u32_at(&c, 8) as i32 as i64));
            }
            i = i.wrapping_add(1);
        }
        let Some(r) = self.rings.rings.get_mut(&key) else {
            return;
        };
        r.cq_seen = Some(tail);
        let mut reqs = Vec::new();
        for (user_data, res) in done {
            if let Some(req) = r.in_flight.get_mut(&user_data).and_then(|q| q.pop_front()) {
                reqs.push((req, res));
            }
        }
        for (req, res) in reqs {
            self.uring_done(key.0, tid, req, res, t);
        }
    }

    /// Every ring of process `pid`: completions read (thread `tid` is stopped at its exit, a
    /// munmap or an exec), and with `gone` the rings forgotten, their requests still in flight
    /// counted unseen.
    pub(super) fn uring_leave(&mut self, pid: u32, tid: i32, t: u64, gone: bool) {
        let keys: Vec<(u32, i32)> = self
            .rings
            .rings
            .keys()
            .filter(|k| k.0 == pid)
            .copied()
            .collect();
        for k in keys {
            self.uring_reap(k, tid, t);
            if gone && let Some(r) = self.rings.rings.remove(&k) {
                let left: u64 = r.in_flight.values().map(|q| q.len() as u64).sum();
                if left > 0 {
                    self.uring_unseen(left, "their completions were not seen before the ring went");
                }
            }
        }
    }

    /// Call `p` of thread `tid` of `pid` returned `ret` at `t`: what it did to the rings.
    pub(super) fn uring_follow(&mut self, pid: u32, tid: i32, p: &Pending, ret: i64, t: u64) {
        let a = &p.args;
        match p.call {
            Call::UringSetup if ret >= 0 => self.uring_setup(pid, tid, ret as i32, a[1]),
            Call::UringEnter => {
                if let Some(key) = self.ring_key(pid, a[0], a[3]) {
                    self.uring_reap(key, tid, t);
                }
            }
            Call::UringRegister => self.uring_register(pid, tid, a, ret),
            Call::Mmap if ret >= 0 => self.uring_mapped(pid, a[4] as i32, a[5], ret as u64),
            // Taken at its entry: the ring, if it is one, is still mapped.
            Call::Munmap if self.rings.rings.keys().any(|k| k.0 == pid) => {
                self.uring_leave(pid, tid, t, false)
            }
            _ => {}
        }
    }

    /// `io_uring_register(fd, opcode, arg, nr)` returned `ret`: registered files and rings.
    pub(super) fn uring_register(&mut self, pid: u32, tid: i32, a: &[u64; 6], ret: i64) {
        if ret < 0 {
            return;
        }
        // The high bit: the descriptor is a registered ring's index.
        let (opcode, flags) = (a[1] & 0x7fff_ffff, (a[1] >> 31) * ENTER_REGISTERED_RING);
        let Some(key) = self.ring_key(pid, a[0], flags) else {
            return;
        };
        let fds = |list: Vec<i32>, st: &mut State| -> Vec<Option<(i32, Option<u32>)>> {
            list.into_iter()
                .map(|fd| (fd >= 0).then(|| (fd, st.desc(tid, fd).map(|d| d.borrow().file))))
                .collect()
        };
        let ints = |addr: u64, n: u64| -> Vec<i32> {
            let n = n.min(1 << 16) as usize;
            read_exact(tid, addr, 4 * n)
                .map(|b| (0..n).map(|i| u32_at(&b, 4 * i) as i32).collect())
                .unwrap_or_default()
        };
        match opcode {
            REGISTER_FILES => {
                let list = fds(ints(a[2], a[3]), self);
                if let Some(r) = self.rings.rings.get_mut(&key) {
                    r.fixed = list;
                }
            }
            REGISTER_FILES2 => {
                // struct io_uring_rsrc_register { nr, flags, resv2, data, tags }.
                let Some(b) = read_exact(tid, a[2], 32) else {
                    return;
                };
                let list = fds(ints(u64_at(&b, 16), u32_at(&b, 0) as u64), self);
                if let Some(r) = self.rings.rings.get_mut(&key) {
                    r.fixed = list;
                }
            }
            REGISTER_FILES_UPDATE | REGISTER_FILES_UPDATE2 => {
                // struct io_uring_files_update / rsrc_update2 { offset, resv, data (fds) ... }.
                let Some(b) = read_exact(tid, a[2], 16) else {
                    return;
                };
                let at = u32_at(&b, 0) as usize;
                let n = if opcode == REGISTER_FILES_UPDATE2 {
                    read_exact(tid, a[2] + 24, 4).map_or(0, |x| u32_at(&x, 0) as u64)
                } else {
                    a[3]
                };
                let list = fds(ints(u64_at(&b, 8), n), self);
                if let Some(r) = self.rings.rings.get_mut(&key) {
                    if r.fixed.len() < at + list.len() {
                        r.fixed.resize(at + list.len(), None);
                    }
                    for (i, f) in list.into_iter().enumerate() {
                        r.fixed[at + i] = f;
                    }
                }
            }
            UNREGISTER_FILES => {
                if let Some(r) = self.rings.rings.get_mut(&key) {
                    r.fixed.clear();
                }
            }
            REGISTER_RING_FDS => {
                // struct io_uring_rsrc_update { offset (out), resv, data (the ring's fd) }.
                let n = (ret as u64).min(a[3]).min(64) as usize;
                if let Some(b) = read_exact(tid, a[2], 16 * n) {
                    for i in 0..n {
                        let (idx, fd) = (u32_at(&b, 16 * i), u64_at(&b, 16 * i + 8) as i32);
                        self.rings.registered.insert((pid, idx), fd);
                    }
                }
            }
            _ => {}
        }
    }
}
