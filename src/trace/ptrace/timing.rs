//! Each thread's times for the ptrace tracer: its CPU and run-queue time read from its schedstat
//! at the stops of each call (kept open: half a microsecond a read), the calls the trace times
//! but does not keep (summed per thread and call, a long one kept as a span), and its life
//! when it ends.

use super::ops::{Other, State, sched_delta};
use crate::sys::monotonic_ns;
use crate::trace::ThreadTimes;

impl State {
    /// The launcher exec'd the program: its calibration calls are done, and what a stop costs
    /// is their medians.
    pub(super) fn calibrated(&mut self) {
        let calls = std::mem::take(&mut self.calibration);
        let n = calls.len();
        if n < 3 {
            return;
        }
        let median = |mut v: Vec<u64>| {
            v.sort_unstable();
            v[v.len() / 2]
        };
        // From one stat's entry to the next: two stops, the stat's own work (about a
        // microsecond) and the loop's.
        let cycles: Vec<u64> = calls
            .windows(2)
            .map(|w| w[1].2.saturating_sub(w[0].2) / 2)
            .collect();
        self.rec.stop_cost = Some(crate::trace::StopCost {
            calls: n as u32,
            wall_ns: median(calls.iter().map(|c| c.0).collect()),
            cpu_ns: median(cycles),
            runq_ns: median(calls.iter().map(|c| c.1).collect()),
        });
    }

    /// Thread `tid` is about to exit: its I/O counters and its times, final now, join the sums.
    pub(super) fn exiting(&mut self, tid: i32) {
        let Some(t) = self.tasks.get(&tid) else {
            return;
        };
        let now = monotonic_ns().saturating_sub(self.rec.t0);
        let (pid, last) = (
            t.pid,
            self.tasks.values().filter(|x| x.pid == t.pid).count() == 1,
        );
        // Completions the program reaped without a call since its last io_uring_enter.
        self.uring_leave(pid, tid, now, last);
        let Some(born) = self.tasks.get(&tid).map(|t| t.born) else {
            return;
        };
        self.thread_done(pid, tid, born, now, false);
        if let Some(io) = crate::trace::KernelIo::of_thread(pid, tid) {
            let k = &mut self.rec.kernel;
            k.rchar += io.rchar;
            k.wchar += io.wchar;
            k.syscr += io.syscr;
            k.syscw += io.syscw;
            k.read_bytes += io.read_bytes;
            k.write_bytes += io.write_bytes;
            k.threads += 1;
        }
    }

    /// Thread `tid` is gone: its life joins the trace's threads with what was last read of it,
    /// if its exit was not seen (a thread killed outright may skip the exit's stop).
    pub(super) fn gone(&mut self, tid: i32) {
        if let Some(t) = self.tasks.get(&tid).filter(|t| !t.done) {
            let (pid, born) = (t.pid, t.born);
            let now = monotonic_ns().saturating_sub(self.rec.t0);
            self.thread_done(pid, tid, born, now, false);
        }
        self.tasks.remove(&tid);
        self.forget_sched(tid);
    }

    /// The threads still running when the trace ends: their times so far, marked running.
    pub(super) fn close_running(&mut self) {
        let now = monotonic_ns().saturating_sub(self.rec.t0);
        let mut live: Vec<(i32, u32, u64)> = self
            .tasks
            .iter()
            .map(|(&tid, t)| (tid, t.pid, t.born))
            .collect();
        live.sort_unstable();
        for (tid, pid, born) in live {
            self.thread_done(pid, tid, born, now, true);
        }
    }

    /// A timed call `o` of `tid` returned `ret` at `t`, the thread's schedstat then `sched`.
    pub fn other_exit(&mut self, tid: i32, o: Other, ret: i64, t: u64, sched: Option<(u64, u64)>) {
        let held = self.tasks.get(&tid).map_or(o.held, |x| x.held);
        let own = t
            .saturating_sub(o.t)
            .saturating_sub(held.saturating_sub(o.held));
        let d = sched_delta(o.sched, sched);
        self.rec
            .timed(tid, o.nr, o.t, own, d, ret < 0 && ret > -4096);
    }

    /// Thread `tid`'s CPU and run-queue time so far, ns, from its schedstat (kept open while
    /// it lives: a read costs about half a microsecond).
    pub fn sched(&mut self, tid: i32) -> Option<(u64, u64)> {
        use std::os::unix::fs::FileExt;
        if !self.sched_files.contains_key(&tid) {
            let pid = self.tasks.get(&tid)?.pid;
            let f = std::fs::File::open(format!("/proc/{pid}/task/{tid}/schedstat")).ok()?;
            self.sched_files.insert(tid, (f, (0, 0)));
        }
        let (f, last) = self.sched_files.get_mut(&tid)?;
        let mut buf = [0u8; 96];
        let now = f
            .read_at(&mut buf, 0)
            .ok()
            .and_then(|n| crate::trace::record::parse_schedstat(&buf[..n]));
        if let Some(v) = now {
            *last = v;
        }
        Some(now.unwrap_or(*last))
    }

    /// Thread `tid` is gone (or exec'd under another id): its schedstat is closed.
    pub fn forget_sched(&mut self, tid: i32) {
        self.sched_files.remove(&tid);
    }

    /// Thread `tid` of process `pid`, first seen at `born`, ended (or the trace did, `running`
    /// then) at `now`: its life and timed calls join the trace's threads.
    pub fn thread_done(&mut self, pid: u32, tid: i32, born: u64, now: u64, running: bool) {
        if let Some(t) = self.tasks.get_mut(&tid) {
            if t.done {
                return;
            }
            t.done = true;
        }
        let (held, stops) = self.tasks.get(&tid).map_or((0, 0), |t| (t.held, t.stops));
        let (cpu, runq) = self.sched(tid).unwrap_or((0, 0));
        self.forget_sched(tid);
        let name = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/comm"))
            .map(|n| n.trim_end().to_string())
            .unwrap_or_default();
        let calls = self
            .rec
            .timed
            .remove(&tid)
            .unwrap_or_default()
            .into_values()
            .collect();
        self.rec.thread_times.push(ThreadTimes {
            pid,
            tid: tid as u32,
            name,
            born,
            end: now,
            running,
            cpu_ns: cpu,
            runq_ns: runq,
            held_ns: held,
            stops,
            calls,
            // ptrace holds a thread left running at one of its stops: not a call's wait.
            in_call: None,
        });
    }
}
