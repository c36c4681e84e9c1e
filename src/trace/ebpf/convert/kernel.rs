//! What only the kernel tracer sees: the program's io_uring requests (from their submission
//! to their completion, whatever thread or worker ran them) and the page cache's work for it
//! per file (pages read into the cache, made by writes, dirtied), from the probes' `cache` map;
//! and the calls it times without keeping them (the `calltime` map, long ones as spans).

use super::{Convert, before};
use crate::trace::calls::Call;
use crate::trace::ebpf::abi::{CacheKey, CacheVal, CallKey, CallVal};
use crate::trace::ebpf::events::{CallEv, SpanEv, UringEv};
use crate::trace::{CacheSeen, CacheWork, FileKind, Op};
use rustc_hash::FxHashMap as HashMap;

/// IORING_OP_READV, READ_FIXED, READ.
const URING_READS: [u32; 3] = [1, 4, 22];
/// The probes' `nr` for pages brought in outside any call (a fault) and by io_uring's workers.
pub const NR_FAULT: u64 = 0xffff;
pub const NR_URING: u64 = 0xfffe;

/// One entry of the probes' `cache` map: (kernel device, inode, call number) and (pages
/// added, pages dirtied, mode, rdev).
pub type CacheEntry = (CacheKey, CacheVal);

impl Convert {
    /// A request's completion: an op of the thread that submitted it, held until that thread's
    /// next call shows when the thread saw it ([`Convert::seen`]).
    pub(super) fn uring(&mut self, u: &UringEv) {
        if self.rec.launching && u.pid == self.root {
            return;
        }
        let read = URING_READS.contains(&u.opcode);
        let fd = if u.fixed { -1 } else { u.fd as i32 };
        let file = u.f.and_then(|f| {
            let fd = (!u.fixed).then_some(fd);
            self.file_at(u.pid, fd, Some(&f), (f.kdev, f.ino), None, false)
        });
        // An offset of -1 is the file's position, which the request moved.
        let off = if u.off >= 0 {
            Some(u.off as u64)
        } else if self.is_regular(file) {
            Some(before(u.pos, u.res))
        } else {
            None
        };
        let t = self.rel(u.t1);
        let op = Op {
            t,
            dur: u.t1.saturating_sub(u.t0),
            pid: u.pid,
            tid: u.tid,
            call: if read {
                Call::UringRead
            } else {
                Call::UringWrite
            },
            fd,
            file,
            off,
            len: u.len,
            ret: u.res,
            arg: Some(u.opcode as u64),
            to_file: None,
            to_off: None,
            held: 0,
            held_exit: 0,
            stops: 0,
            cpu: 0,
            runq: 0,
        };
        self.rec.uring_completed(op.call);
        self.completed.entry(u.tid).or_default().push(op);
    }

    /// Thread `c.tid`'s call `c` has ended: its completions held so far were seen by it, at
    /// the call's return if they came during the call (as the ptrace tracer sees them when
    /// io_uring_enter returns), else when they came. Returns those that come after the call.
    pub(super) fn seen(&mut self, c: &CallEv) -> Vec<Op> {
        let Some(held) = self.completed.remove(&c.tid) else {
            return Vec::new();
        };
        let (entry, exit) = (self.rel(c.entry.t), self.rel(c.t1));
        let mut after = Vec::new();
        for mut op in held {
            if op.t >= entry {
                op.dur += exit - op.t.min(exit);
                op.t = exit;
                after.push(op);
            } else {
                self.rec.ops.push(op);
            }
        }
        after
    }

    /// Completions no later call of their thread saw: as they came.
    pub fn flush_completed(&mut self) {
        for (_, ops) in std::mem::take(&mut self.completed) {
            self.rec.ops.extend(ops);
        }
    }

    /// A read-like call that brought pages into the cache, or read past it (O_DIRECT):
    /// counted against its file.
    pub(super) fn missed(&mut self, c: &CallEv, call: Call, file: Option<u32>) {
        let (Some(i), true) = (file, call.reads()) else {
            return;
        };
        if c.ret > 0
            && c.entry
                .f
                .is_some_and(|f| f.flags & libc::O_DIRECT as u32 != 0)
        {
            *self.direct_reads.entry(i).or_insert(0) += c.ret as u64;
        }
        if c.added > 0 {
            *self.missed_reads.entry(i).or_insert(0) += 1;
        }
    }

    /// The page cache's work per file, from the probes' map: each file's [`CacheWork`]; what
    /// went to files not otherwise in the trace (file-system metadata on a block device's own
    /// cache, files the program never opened) summed in the trace's [`CacheSeen`].
    pub fn cache_work(&mut self, entries: &[CacheEntry], files_lost: u64) {
        let page = crate::sys::page_size() as u64;
        // A regular file with no entry had nothing brought in: the cache served it whole.
        for f in &mut self.rec.files {
            if f.kind == FileKind::File {
                f.cache = Some(CacheWork::default());
            }
        }
        let mut seen = CacheSeen {
            files_lost,
            ..CacheSeen::default()
        };
        for (k, v) in entries {
            let (kdev, ino, added, dirtied, mode) = (k.dev, k.ino, v.added, v.dirtied, v.mode);
            let (nr, generation) = (k.nr & 0xffff_ffff, (k.nr >> 32) as u32);
            let (added, dirtied) = (added * page, dirtied * page);
            let call = self.calls.get(nr as i64);
            let by_write = call.is_some_and(|c| c.writes_file() || c == Call::Ftruncate);
            seen.added += added;
            seen.dirtied += dirtied;
            if by_write {
                seen.by_writes += added;
            }
            let file = (self.by_gen.get(&(kdev, ino, generation)).copied())
                .or_else(|| self.by_id.get(&(kdev, ino)).map(|&(_, i)| i));
            let Some(i) = file else {
                if (mode as u32) & libc::S_IFMT == libc::S_IFBLK {
                    seen.metadata += added;
                } else {
                    seen.unnamed += added;
                }
                continue;
            };
            let info = &mut self.rec.files[i as usize];
            if !matches!(info.kind, FileKind::File | FileKind::Device | FileKind::Dir) {
                continue;
            }
            let w = info.cache.get_or_insert_with(CacheWork::default);
            w.dirtied += dirtied;
            match (nr, call) {
                _ if by_write => w.by_writes += added,
                (NR_FAULT, _) => w.by_faults += added,
                (NR_URING, _) | (_, Some(Call::UringEnter)) => w.by_uring += added,
                (_, Some(c)) if c.reads() => w.by_reads += added,
                _ => w.by_other += added,
            }
        }
        for (&i, &n) in &self.missed_reads {
            if let Some(f) = self.rec.files.get_mut(i as usize) {
                f.cache.get_or_insert_with(CacheWork::default).reads_missed = n;
            }
        }
        for (&i, &n) in &self.direct_reads {
            if let Some(f) = self.rec.files.get_mut(i as usize) {
                f.cache.get_or_insert_with(CacheWork::default).direct = n;
                seen.direct += n;
            }
        }
        self.rec.cache = Some(seen);
    }
}

impl Convert {
    /// A long call timed only: when the thread waited in it.
    pub(super) fn span(&mut self, e: &SpanEv) {
        if self.rec.launching && e.pid == self.root {
            return;
        }
        let dur = e.t1.saturating_sub(e.t0);
        self.rec.spans.push(crate::trace::Span {
            t: self.rel(e.t0),
            dur,
            tid: e.tid,
            call: crate::trace::cause::call_name(e.nr as i64),
            cpu: dur.saturating_sub(e.off),
            runq: e.runq,
        });
    }

    /// The threads still running (their exit not seen).
    pub fn running(&self) -> Vec<u32> {
        let mut v: Vec<u32> = self.born.keys().copied().collect();
        v.sort_unstable();
        v
    }

    /// The calls timed only, from the probes' map (`(tid, nr)` to count, errors, ns, ns off
    /// the CPU, ns waiting for one), and those timed here (exec), given to their threads;
    /// threads still running get their times so far (from /proc), marked running.
    pub fn timed_calls(&mut self, entries: &[(CallKey, CallVal)], end: u64) {
        use crate::trace::CallTime;
        let mut by_tid: HashMap<u32, Vec<CallTime>> = HashMap::default();
        for &(CallKey { tid, nr }, v) in entries {
            let (calls, errors, ns, off, runq) = (v.calls, v.errors, v.ns, v.off, v.runq);
            by_tid.entry(tid).or_default().push(CallTime {
                call: crate::trace::cause::call_name(nr as i64),
                calls,
                errors,
                ns,
                cpu_ns: ns.saturating_sub(off),
                runq_ns: runq,
            });
        }
        for (tid, calls) in std::mem::take(&mut self.rec.timed) {
            by_tid
                .entry(tid as u32)
                .or_default()
                .extend(calls.into_values());
        }
        // Threads still running: their times so far.
        let mut live: Vec<(u32, u64)> = self.born.iter().map(|(&t, &b)| (t, b)).collect();
        live.sort_unstable();
        for (tid, born) in live {
            let pid = self.pid_of.get(&tid).copied().unwrap_or(tid);
            let Some((cpu, runq)) = std::fs::read(format!("/proc/{pid}/task/{tid}/schedstat"))
                .ok()
                .and_then(|b| crate::trace::record::parse_schedstat(&b))
            else {
                continue;
            };
            let (cpu0, runq0) = self.sched_before.get(&tid).copied().unwrap_or((0, 0));
            let name = crate::trace::threads::name_of(pid, tid);
            self.rec.thread_times.push(crate::trace::ThreadTimes {
                pid,
                tid,
                name,
                born,
                end,
                running: true,
                cpu_ns: cpu.saturating_sub(cpu0),
                runq_ns: runq.saturating_sub(runq0),
                in_call: crate::trace::threads::blocked_in(pid, tid),
                ..Default::default()
            });
        }
        for th in &mut self.rec.thread_times {
            if let Some(mut calls) = by_tid.remove(&th.tid) {
                calls.sort_by(|a, b| b.ns.cmp(&a.ns).then(a.call.cmp(&b.call)));
                th.calls = calls;
            }
        }
        self.rec.thread_times.sort_by_key(|t| (t.born, t.tid));
    }
}
