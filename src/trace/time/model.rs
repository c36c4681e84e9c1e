//! Each thread's time by cause: its life (from the tracer's first sight to its exit) is its
//! calls, each the call's cause (what the call cost the program: its time on a CPU, waiting for
//! one after its wake-up, and blocked, all three said), and what it did outside them: computing
//! (on a CPU), waiting for a CPU (the machine was busy), and blocked, which outside every call is
//! page faults (every call that can wait is timed: [`crate::trace::calls::UNTIMED`] lists those
//! that are not). The ptrace tracer's share (held at its stops, and what each stop costs,
//! measured at the start) is its own cause.

use crate::trace::cause::{self, Cause};
use crate::trace::{CallTime, Op, StopCost, ThreadTimes, Trace};
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One call's time: its own (the call's cause's), of it on a CPU and waiting for one, and the
/// tracer's share of its wall time.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Split {
    /// What it was.
    pub cause: Option<Cause>,
    /// Its own time, ns.
    pub own: u64,
    /// Of `own`, on a CPU (the kernel's work for it).
    pub cpu: u64,
    /// Of `own`, runnable and waiting for a CPU.
    pub runq: u64,
    /// The tracer's share of its wall time, ns.
    pub tracer: u64,
}

/// How a call of wall time `dur` (the tracer's hold off), `cpu` and `runq` of it as measured,
/// splits, given what each call's stops cost ([`StopCost`]; none for the kernel tracer).
/// `stops2`: the call had two stops (an entry and an exit).
pub fn split(dur: u64, cpu: u64, runq: u64, cost: &StopCost, stops2: bool) -> Split {
    let (wall, c, q) = if stops2 {
        (cost.wall_ns, cost.cpu_ns, cost.runq_ns)
    } else {
        (0, 0, 0)
    };
    let own = dur.saturating_sub(wall);
    let cpu = cpu.saturating_sub(c).min(own);
    let runq = runq.saturating_sub(q).min(own - cpu);
    Split {
        cause: None,
        own,
        runq,
        cpu,
        tracer: dur - own,
    }
}

/// What a thread did with its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The program's first thread: its life is the wall time the user waited for.
    Main,
    /// A thread that did work of its own.
    Working,
    /// A thread that waited for work nearly all its life (a pool on a condition variable, an
    /// event loop with nothing to do): never the answer.
    Idle,
}

/// A call's share of a cause in one thread.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CallShare {
    /// The call.
    pub call: String,
    /// Times called.
    pub calls: u64,
    /// Its own time, ns.
    pub ns: u64,
    /// Of it, on a CPU.
    pub cpu_ns: u64,
}

/// One cause's time in one thread.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CauseTime {
    /// The cause.
    pub cause: Cause,
    /// Time, ns.
    pub ns: u64,
    /// Of it, on a CPU inside its calls (the kernel's work for them: a warm read's copy), ns.
    #[serde(default)]
    pub cpu_ns: u64,
    /// Of it, runnable and waiting for a CPU after a wake-up inside its calls, ns.
    pub runq_ns: u64,
    /// The calls it was spent in, most time first (at most five).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub calls: Vec<CallShare>,
}

/// One thread's life, by cause: the causes add up to `alive_ns`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ThreadModel {
    /// Its process.
    pub pid: u32,
    /// Its thread id.
    pub tid: u32,
    /// Its name.
    pub name: String,
    /// What it did with its life.
    pub role: Role,
    /// When the tracer first saw it, ns from the start.
    pub born_ns: u64,
    /// Its life while traced, ns.
    pub alive_ns: u64,
    /// Still running when the trace ended.
    pub running: bool,
    /// By cause, most time first; they add up to `alive_ns`.
    pub causes: Vec<CauseTime>,
    /// What its polls count as (its sockets or its pipes), when not as polls.
    #[serde(skip)]
    pub polls_as: Option<Cause>,
}

impl ThreadModel {
    /// Its time in `c`, ns.
    pub fn ns(&self, c: Cause) -> u64 {
        self.causes
            .iter()
            .find(|x| x.cause == c)
            .map_or(0, |x| x.ns)
    }

    /// Its time in causes where it waited for work (on others), the tracer's share included.
    pub fn waiting_ns(&self) -> u64 {
        self.causes
            .iter()
            .filter(|c| c.cause.is_waiting())
            .map(|c| c.ns)
            .sum()
    }

    /// Whether it waited for work nearly all the life it had of its own (its life less being
    /// traced: a thread that made thousands of calls under ptrace spent most of its life
    /// stopped, and was busy, not idle).
    pub fn is_idle(&self) -> bool {
        let life = self.alive_ns.saturating_sub(self.ns(Cause::Tracer));
        life > 0 && (life - self.waiting_ns().min(life)) as f64 <= IDLE_WORK * life as f64
    }
}

/// The share of its life below which a thread that did nothing else is idle.
pub const IDLE_WORK: f64 = 0.05;

/// Per cause and call name: count, time, CPU time.
type CallSumsOf = HashMap<(Cause, String), (u64, u64, u64)>;

/// Causes and calls being added up for one thread.
#[derive(Default)]
struct Sums {
    ns: [u64; Cause::ALL.len()],
    cpu: [u64; Cause::ALL.len()],
    runq: [u64; Cause::ALL.len()],
    calls: CallSumsOf,
    /// The calls' own CPU.
    cpu_in: u64,
    /// Calls of two stops (an entry and an exit).
    calls2: u64,
}

impl Sums {
    fn call(&mut self, name: &str, calls: u64, s: &Split) {
        let Some(c) = s.cause else {
            return;
        };
        self.ns[c.index()] += s.own;
        self.cpu[c.index()] += s.cpu;
        self.runq[c.index()] += s.runq;
        self.cpu_in += s.cpu;
        let e = self.calls.entry((c, name.to_string())).or_default();
        e.0 += calls;
        e.1 += s.own;
        e.2 += s.cpu;
    }
}

/// Every kept call's split, as the trace holds them (a request of io_uring: none; the thread
/// waited for it in io_uring_enter).
pub fn op_split(t: &Trace, op: &Op, synced: &HashSet<u32>, cost: &StopCost) -> Option<Split> {
    if op.call.is_request() {
        return None;
    }
    let dur = op.dur.saturating_sub(op.held_exit.saturating_sub(op.held));
    let mut s = split(dur, op.cpu, op.runq, cost, op.dur > 0);
    s.cause = Some(cause::of_op(t, op, synced));
    Some(s)
}

/// A timed call's split (a [`CallTime`] or a [`crate::trace::Span`]: `calls` of them).
pub fn timed_split(c: &CallTime, cost: &StopCost) -> Split {
    let per = |x: u64| x / c.calls.max(1);
    // Each call's stops cost what the calibration measured: split one mean call, then scale.
    let one = split(per(c.ns), per(c.cpu_ns), per(c.runq_ns), cost, true);
    Split {
        cause: Some(cause::of_call_name(&c.call)),
        own: one.own * c.calls,
        runq: one.runq * c.calls,
        cpu: one.cpu * c.calls,
        tracer: one.tracer * c.calls,
    }
}

/// The zero cost: the kernel tracer's calls, or a trace that did not measure it.
pub const NO_COST: StopCost = StopCost {
    calls: 0,
    wall_ns: 0,
    cpu_ns: 0,
    runq_ns: 0,
};

/// `cost` with each of its parts `k` times as large.
pub fn scaled(cost: &StopCost, k: f64) -> StopCost {
    let x = |v: u64| (v as f64 * k) as u64;
    StopCost {
        calls: cost.calls,
        wall_ns: x(cost.wall_ns),
        cpu_ns: x(cost.cpu_ns),
        runq_ns: x(cost.runq_ns),
    }
}

/// Each thread of `t` by cause, in the order the trace lists them, a traced call's stops
/// costing `cost`; `root` is the main thread's id.
pub fn threads(t: &Trace, root: Option<u32>, cost: &StopCost) -> Vec<ThreadModel> {
    let cost = *cost;
    let synced = cause::synced_files(t);
    // Per thread: the kept calls' causes, the run-queue wait they measured, their tracer share.
    let mut acc: BTreeMap<u32, (Sums, u64, u64)> = BTreeMap::new();
    for op in &t.ops {
        let Some(s) = op_split(t, op, &synced, &cost) else {
            continue;
        };
        let a = acc.entry(op.tid).or_default();
        a.0.call(op.call.name(), 1, &s);
        a.0.calls2 += (op.dur > 0) as u64;
        a.1 += op.runq;
        a.2 += s.tracer;
    }
    t.thread_times
        .iter()
        .map(|th| {
            let (mut a, mut runq_in, mut tracer_in) = acc.remove(&th.tid).unwrap_or_default();
            for c in &th.calls {
                let s = timed_split(c, &cost);
                a.call(&c.call, c.calls, &s);
                a.calls2 += c.calls;
                runq_in += c.runq_ns;
                tracer_in += s.tracer;
            }
            model(th, a, runq_in, tracer_in, &cost, root)
        })
        .collect()
}

/// A poll waits on what the thread polls: its sockets when it waited on sockets at least four
/// times as long as on pipes (a program's output to a pipe takes microseconds), its pipes the
/// other way round (which descriptors a poll named is not recorded); else it stays a poll. The
/// polls' time is moved there; what they are.
fn polls_are(a: &mut Sums) -> Option<Cause> {
    let (socks, pipes) = (a.ns[Cause::Sockets.index()], a.ns[Cause::Pipes.index()]);
    let polls_are = if socks > 0 && socks >= 4 * pipes {
        Some(Cause::Sockets)
    } else if pipes > 0 && pipes >= 4 * socks {
        Some(Cause::Pipes)
    } else {
        None
    };
    if let Some(to) = polls_are {
        let (from, to) = (Cause::Polls.index(), to.index());
        a.ns[to] += std::mem::take(&mut a.ns[from]);
        a.cpu[to] += std::mem::take(&mut a.cpu[from]);
        a.runq[to] += std::mem::take(&mut a.runq[from]);
    }
    polls_are
}

/// Clocks read at different moments can add up to a little more than the life: scaled to it.
fn scale_to(a: &mut Sums, alive: u64) {
    let sum: u64 = a.ns.iter().sum();
    if sum > alive && sum > 0 {
        let k = alive as f64 / sum as f64;
        for i in 0..Cause::ALL.len() {
            a.ns[i] = (a.ns[i] as f64 * k) as u64;
            a.runq[i] = a.runq[i].min(a.ns[i]);
            a.cpu[i] = a.cpu[i].min(a.ns[i] - a.runq[i]);
        }
    }
}

/// The calls of each cause (polls put where `polls_are` says they waited).
fn calls_by_cause(calls: CallSumsOf, polls_are: Option<Cause>) -> HashMap<Cause, Vec<CallShare>> {
    let mut by: HashMap<Cause, Vec<CallShare>> = HashMap::default();
    for ((c, name), (n, ns, cpu_ns)) in calls {
        let c = match (c, polls_are) {
            (Cause::Polls, Some(to)) => to,
            _ => c,
        };
        by.entry(c).or_default().push(CallShare {
            call: name,
            calls: n,
            ns,
            cpu_ns,
        });
    }
    by
}

/// One thread's model from its calls' sums.
fn model(
    th: &ThreadTimes,
    mut a: Sums,
    runq_in_calls: u64,
    tracer_in_calls: u64,
    cost: &StopCost,
    root: Option<u32>,
) -> ThreadModel {
    let alive = th.alive_ns();
    let stop_cpu = th.stops.saturating_mul(cost.cpu_ns).min(th.cpu_ns);
    // Computing outside calls: the thread's CPU less the stops' and its calls' own.
    let cpu = (th.cpu_ns - stop_cpu).saturating_sub(a.cpu_in);
    let tracer = th
        .held_ns
        .saturating_add(stop_cpu)
        .saturating_add(tracer_in_calls);
    // Waiting for a CPU outside calls: the thread's run-queue time less what its calls
    // measured of it (the calls' own share is their cause's; the stops' is the tracer's).
    let runq_out = th.runq_ns.saturating_sub(runq_in_calls);
    let in_calls: u64 = a.ns.iter().sum();
    let measured = [cpu, runq_out, tracer, in_calls]
        .iter()
        .fold(0u64, |x, y| x.saturating_add(*y));
    // Each stop also costs the thread, outside its calls, what one costs inside a call: the
    // tracer's noticing it and resuming it (inside a call of two stops, one of each).
    let left = alive.saturating_sub(measured);
    let tracer_out = th
        .stops
        .saturating_sub(a.calls2)
        .saturating_mul(cost.wall_ns)
        .min(left);
    // What is left of its life was blocked outside every call seen: in page faults, or, for a
    // thread blocked in a call at the end, in that call (entered before the trace, or not
    // yet returned).
    let rest = left - tracer_out;
    let tracer = tracer + tracer_out;
    let rest_cause = th
        .in_call
        .as_deref()
        .map_or(Cause::Faults, cause::of_call_name);
    a.ns[Cause::Cpu.index()] += cpu;
    a.ns[Cause::RunQueue.index()] += runq_out;
    a.runq[Cause::RunQueue.index()] += runq_out;
    a.ns[Cause::Tracer.index()] += tracer;
    a.ns[rest_cause.index()] += rest;
    scale_to(&mut a, alive);
    let polls_are = polls_are(&mut a);
    let mut calls = calls_by_cause(std::mem::take(&mut a.calls), polls_are);
    let mut causes: Vec<CauseTime> = Cause::ALL
        .iter()
        .filter(|c| a.ns[c.index()] > 0)
        .map(|&c| {
            let mut cs = calls.remove(&c).unwrap_or_default();
            cs.sort_by(|x, y| y.ns.cmp(&x.ns).then(x.call.cmp(&y.call)));
            cs.truncate(5);
            CauseTime {
                cause: c,
                ns: a.ns[c.index()],
                cpu_ns: a.cpu[c.index()],
                runq_ns: a.runq[c.index()].min(a.ns[c.index()]),
                calls: cs,
            }
        })
        .collect();
    causes.sort_by(|x, y| y.ns.cmp(&x.ns).then(x.cause.cmp(&y.cause)));
    let mut m = ThreadModel {
        pid: th.pid,
        tid: th.tid,
        name: th.name.clone(),
        role: Role::Working,
        born_ns: th.born,
        alive_ns: alive,
        running: th.running,
        causes,
        polls_as: polls_are,
    };
    m.role = if Some(th.tid) == root {
        Role::Main
    } else if m.is_idle() {
        Role::Idle
    } else {
        Role::Working
    };
    m
}

/// The main thread of `t`: the first thread of its first process.
pub fn root_of(t: &Trace) -> Option<u32> {
    let first = t.root.or_else(|| t.thread_times.first().map(|x| x.pid))?;
    t.thread_times
        .iter()
        .filter(|x| x.pid == first)
        .min_by_key(|x| (x.tid != first, x.born, x.tid))
        .map(|x| x.tid)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_calls_time_splits_into_its_own_cpu_its_wait_and_the_tracers_share() {
        let cost = StopCost {
            calls: 200,
            wall_ns: 20_000,
            cpu_ns: 3_000,
            runq_ns: 1_000,
        };
        // 1 ms in fdatasync, 50 us of it on the CPU, 100 us waiting for one.
        let s = split(1_000_000, 53_000, 101_000, &cost, true);
        assert_eq!(s.tracer, 20_000);
        assert_eq!(s.cpu, 50_000);
        assert_eq!(s.runq, 100_000);
        assert_eq!(s.own, 1_000_000 - 20_000);
        // A call shorter than a stop: all tracer, nothing left to split.
        let s = split(10_000, 9_000, 5_000, &cost, true);
        assert_eq!((s.own, s.cpu, s.runq, s.tracer), (0, 0, 0, 10_000));
        // The kernel tracer: no cost.
        let s = split(1_000, 200, 300, &NO_COST, true);
        assert_eq!((s.own, s.cpu, s.runq, s.tracer), (1_000, 200, 300, 0));
    }
}
