//! The trace's record of each thread's time: its life and CPU as the kernel accounted it
//! ([`ThreadTimes`]), the calls it made that are timed but not kept ([`CallTime`], long ones as
//! [`Span`]s), what a traced call costs by being traced ([`StopCost`]), and the per-process times
//! of traces from before threads were recorded ([`ProcTimes`]).

use serde::{Deserialize, Serialize};

/// A system call the trace times but does not keep one by one (futex, poll, nanosleep, recv,
/// unlink, wait4, ...): per thread and call, its count and time.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CallTime {
    /// The system call's name (as strace names it: `futex`, `clock_nanosleep`, `recvfrom`).
    pub call: String,
    /// Times called.
    pub calls: u64,
    /// Calls that failed.
    #[serde(default)]
    pub errors: u64,
    /// Time in them, ns, the tracer's hold at their stops off (the ptrace tracer's stops' own
    /// cost is in it: [`StopCost`] says how much a call).
    pub ns: u64,
    /// Of it, on a CPU.
    pub cpu_ns: u64,
    /// Of it, runnable and waiting for a CPU.
    pub runq_ns: u64,
}

impl CallTime {
    /// Adds one call of `ns` (`cpu` and `runq` of it), failed or not.
    pub fn add(&mut self, ns: u64, cpu: u64, runq: u64, failed: bool) {
        self.calls += 1;
        self.errors += failed as u64;
        self.ns = self.ns.saturating_add(ns);
        self.cpu_ns = self.cpu_ns.saturating_add(cpu);
        self.runq_ns = self.runq_ns.saturating_add(runq);
    }
}

/// A call of the kind [`CallTime`] sums that lasted at least [`SPAN_NS`]: when a thread
/// waited, so that the time model can tell what the other threads did meanwhile.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Span {
    /// When it was entered, ns from the start.
    pub t: u64,
    /// How long it lasted, ns (the tracer's hold off).
    pub dur: u64,
    /// The thread.
    pub tid: u32,
    /// The system call's name.
    pub call: String,
    /// Of `dur`, on a CPU.
    #[serde(default)]
    pub cpu: u64,
    /// Of `dur`, waiting for a CPU.
    #[serde(default)]
    pub runq: u64,
}

/// The shortest call kept as a [`Span`]: a thousand a second at most per thread.
pub const SPAN_NS: u64 = 1_000_000;

/// One thread's life as the kernel accounted it (`/proc/PID/task/TID/schedstat` as it ended,
/// or when the trace did), and the calls it made that the trace times but does not keep.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ThreadTimes {
    /// Its process.
    pub pid: u32,
    /// Its thread id.
    pub tid: u32,
    /// Its name (`comm`: a thread's own, such as `rocksdb:low0`).
    pub name: String,
    /// When the tracer first saw it, ns from the start.
    pub born: u64,
    /// When it exited, or when the trace ended for one still running, ns from the start.
    pub end: u64,
    /// It was still running when the trace ended.
    #[serde(default)]
    pub running: bool,
    /// Time on a CPU (user and system) while traced, ns.
    pub cpu_ns: u64,
    /// Time runnable, waiting for a CPU, while traced, ns.
    pub runq_ns: u64,
    /// Time the tracer held it at its stops, ns (ptrace).
    #[serde(default)]
    pub held_ns: u64,
    /// Its stops for the tracer (ptrace).
    #[serde(default)]
    pub stops: u64,
    /// The calls it made that are not in the trace's `ops`, by call.
    #[serde(default)]
    pub calls: Vec<CallTime>,
    /// Still running at the end: the system call it was blocked in then (from
    /// /proc/PID/task/TID/syscall), whose end the trace never saw; its time since is that
    /// call's cause, not page faults.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_call: Option<String>,
}

/// The name of a running thread: its `comm`, or for a process's first thread the title a
/// server gave it in its command line when that starts with the comm and a colon
/// (`postgres: checkpointer`, `nginx: worker process`).
pub fn name_of(pid: u32, tid: u32) -> String {
    let comm = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/comm"))
        .map(|n| n.trim_end().to_string())
        .unwrap_or_default();
    if pid != tid || comm.is_empty() {
        return comm;
    }
    let mut head = [0u8; 256];
    let n = std::fs::File::open(format!("/proc/{pid}/cmdline"))
        .and_then(|mut f| std::io::Read::read(&mut f, &mut head))
        .unwrap_or(0);
    let arg0 = head[..n].split(|&b| b == 0).next().unwrap_or_default();
    match std::str::from_utf8(arg0) {
        Ok(title) if title.starts_with(&format!("{comm}: ")) => title.trim_end().to_string(),
        _ => comm,
    }
}

/// The system call thread `tid` of process `pid` is blocked in now (`/proc/.../syscall`), by
/// name; None when it runs, waits outside a call, or cannot be read.
pub fn blocked_in(pid: u32, tid: u32) -> Option<String> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/syscall")).ok()?;
    let nr: i64 = text.split_whitespace().next()?.parse().ok()?;
    (nr >= 0).then(|| super::cause::call_name(nr))
}

impl ThreadTimes {
    /// Its life while traced, ns.
    pub fn alive_ns(&self) -> u64 {
        self.end.saturating_sub(self.born)
    }
}

/// Where one traced process's time went outside its traced calls, from the kernel's own
/// accounting of its threads (`/proc/PID/task/TID/schedstat`, read as each thread exited).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ProcTimes {
    /// Process id.
    pub pid: u32,
    /// Its name (`comm`) when its last thread exited.
    pub name: String,
    /// Threads whose times were read.
    pub threads: u32,
    /// Its threads' lifetimes added up, ns (from when the tracer saw each one to its exit).
    pub alive_ns: u64,
    /// Time its threads ran on a CPU, ns (user and system).
    pub cpu_ns: u64,
    /// Time its threads were runnable and waited for a CPU, ns.
    pub runq_ns: u64,
    /// Time the tracer held its threads at their stops, ns.
    pub held_ns: u64,
    /// Time its threads were blocked in wait4/waitid (waiting for a child), ns, the tracer's
    /// share taken off.
    pub children_ns: u64,
    /// Its threads' stops for the tracer.
    #[serde(default)]
    pub stops: u64,
}

/// What one traced call costs the program by being traced, measured at the start on calls
/// whose own cost is about a microsecond (the launcher stats `/` [`CALIBRATION_CALLS`] times
/// under the filter before it runs the program).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StopCost {
    /// Calls measured.
    pub calls: u32,
    /// The median time from a call's entry stop to its exit stop, the tracer's held share off,
    /// ns: the wall time a traced call gains.
    pub wall_ns: u64,
    /// CPU time the thread spent per stop (the kernel's side of stopping and resuming it), ns.
    pub cpu_ns: u64,
    /// The median time such a call waited for a CPU (resumed by the tracer, the thread waits
    /// to run again), ns.
    #[serde(default)]
    pub runq_ns: u64,
}

/// How many calls the launcher makes for [`StopCost`].
pub const CALIBRATION_CALLS: u32 = 200;

/// The launcher's calibration: [`CALIBRATION_CALLS`] stats of `/`, under the filter, before the
/// program is exec'd.
pub fn calibrate() {
    for _ in 0..CALIBRATION_CALLS {
        let _ = std::fs::metadata("/");
    }
}

#[cfg(test)]
mod name_tests {
    use std::os::unix::process::CommandExt;

    #[test]
    fn a_server_process_is_named_by_its_title_a_plain_one_by_its_comm() {
        for (arg0, want) in [("sleep: worker", "sleep: worker"), ("sleep", "sleep")] {
            let mut c = std::process::Command::new("sleep")
                .arg0(arg0)
                .arg("5")
                .spawn()
                .unwrap();
            // Until its exec is complete (its command line and its name are the new ones).
            let pid = c.id();
            let done = |_: &u32| {
                std::fs::read(format!("/proc/{pid}/cmdline"))
                    .is_ok_and(|b| b.starts_with(arg0.as_bytes()))
                    && std::fs::read_to_string(format!("/proc/{pid}/comm"))
                        .is_ok_and(|n| n == "sleep\n")
            };
            let ready = (0..500u32).find(|i| {
                let ok = done(i);
                if !ok {
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
                ok
            });
            let name = super::name_of(pid, pid);
            let _ = c.kill();
            let _ = c.wait();
            assert!(ready.is_some(), "sleep never ran");
            assert_eq!(name, want);
        }
    }
}
