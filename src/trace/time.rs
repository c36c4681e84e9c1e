//! Where a traced program's time went: per process and per kind of descriptor, from the traced
//! calls' durations (the tracer's own share taken off) and the kernel's accounting of each
//! thread (time on a CPU, waiting for one, alive), and a verdict that tells waiting on files from
//! waiting on pipes, children, metadata, or the CPU.
//!
//! A call's time is on the CPU or off it: a warm read is a copy by the CPU, a cold one waits for
//! storage. Off-CPU time is what a thread was alive less its CPU time, its run-queue wait and
//! the time the tracer held it; the calls' time is put there first (waits for children as
//! measured, then each kind of call, scaled down together when they add up to more than is
//! left: the excess was spent on the CPU inside them). What is left off the CPU outside every
//! traced call is "unseen": sleeps, polls, locks, page faults waiting for storage.

use super::{Call, FileKind, Trace};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What a traced call waited on, by the descriptor it used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum On {
    /// File data: reads, writes, copies and syncs of regular files; io_uring.
    Files,
    /// Opening, stat, reading directories, closing, seeking; mapping and advice.
    Metadata,
    /// Pipes and sockets: another process, or the network, at the other end.
    Pipes,
    /// Terminals and devices (a terminal's read waits for the user).
    Devices,
}

fn on(t: &Trace, op: &super::Op) -> On {
    use Call::*;
    let kind = |f: Option<u32>| f.and_then(|i| t.files.get(i as usize)).map(|x| x.kind);
    let by_kind = |k: Option<FileKind>| match k {
        Some(FileKind::Pipe | FileKind::Socket) => On::Pipes,
        Some(FileKind::Device | FileKind::Other) => On::Devices,
        _ => On::Files,
    };
    match op.call {
        Open | Close | CloseRange | Dup | Fcntl | Lseek | Mmap | Munmap | Mremap | Madvise
        | Stat | Getdents => On::Metadata,
        UringSetup | UringEnter | UringRegister | UringRead | UringWrite | Exec | Wait => On::Files,
        Sendfile | Splice | CopyFileRange => {
            let (a, b) = (by_kind(kind(op.file)), by_kind(kind(op.to_file)));
            if a == On::Pipes || b == On::Pipes {
                On::Pipes
            } else {
                a.max(b)
            }
        }
        _ => by_kind(kind(op.file)),
    }
}

/// One process's time, ns (threads add up).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ProcTime {
    /// Process id.
    pub pid: u32,
    /// Its name.
    pub name: String,
    /// Its threads' lifetimes added up.
    pub alive_ns: u64,
    /// On a CPU (user and system: a warm read's copy is here).
    pub cpu_ns: u64,
    /// Runnable, waiting for a CPU (a busy machine).
    pub runq_ns: u64,
    /// What being traced cost it: held by the tracer at its stops, the stops' own CPU time
    /// and the time they add to each call (both measured at the start: [`super::StopCost`]).
    pub tracer_ns: u64,
    /// Off the CPU in calls on regular files (and io_uring).
    pub files_ns: u64,
    /// Off the CPU in opens, stats, directory reads, closes, seeks, mmap and advice.
    pub metadata_ns: u64,
    /// Off the CPU in calls on pipes and sockets.
    pub pipes_ns: u64,
    /// Off the CPU in calls on terminals and devices.
    pub devices_ns: u64,
    /// Waiting for children (wait4, waitid).
    pub children_ns: u64,
    /// Off the CPU outside every traced call: sleeps, polls, locks, page faults waiting for
    /// storage.
    pub unseen_ns: u64,
    /// Time in traced calls (their own, the tracer's share off), on the CPU or off it.
    pub calls_ns: u64,
}

impl ProcTime {
    fn add(&mut self, o: &ProcTime) {
        self.alive_ns = self.alive_ns.saturating_add(o.alive_ns);
        self.cpu_ns = self.cpu_ns.saturating_add(o.cpu_ns);
        self.runq_ns = self.runq_ns.saturating_add(o.runq_ns);
        self.tracer_ns = self.tracer_ns.saturating_add(o.tracer_ns);
        self.files_ns = self.files_ns.saturating_add(o.files_ns);
        self.metadata_ns = self.metadata_ns.saturating_add(o.metadata_ns);
        self.pipes_ns = self.pipes_ns.saturating_add(o.pipes_ns);
        self.devices_ns = self.devices_ns.saturating_add(o.devices_ns);
        self.children_ns = self.children_ns.saturating_add(o.children_ns);
        self.unseen_ns = self.unseen_ns.saturating_add(o.unseen_ns);
        self.calls_ns = self.calls_ns.saturating_add(o.calls_ns);
    }
}

/// Where the time went, and the verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TimeProfile {
    /// Per process, most time alive first.
    pub procs: Vec<ProcTime>,
    /// All processes added up.
    pub total: ProcTime,
    /// What the time went to, when one kind of work leads the others by 1.5x (`cpu`, `files`,
    /// `metadata`, `runq`, `unseen`, `pipes`, `devices`); None: mixed, or not measured.
    pub went_to: Option<String>,
    /// The verdict in words, with its figures.
    pub verdict: String,
}

/// How far the leader must be ahead of the next to be named.
const LEAD: f64 = 1.5;

/// The tracer's share of the threads' time above which no verdict is named: the stops' cost is
/// measured at the start, and it varies during a run (a stop costs 10 to 80 us here, as the
/// tracer and the program share a CPU or not), so what is left after taking it off is mostly
/// that variation.
const TRACER_MOST: f64 = 0.5;

fn secs(ns: u64) -> String {
    format!("{:.2} s", ns as f64 / 1e9)
}

/// Where `t`'s time went; None for a trace without per-process times (recorded before them).
pub fn time_profile(t: &Trace) -> Option<TimeProfile> {
    if t.procs.is_empty() {
        return None;
    }
    let cost = t.stop_cost.unwrap_or(super::StopCost {
        calls: 0,
        wall_ns: 0,
        cpu_ns: 0,
    });
    // Each process's time in calls, by what they waited on; and what being traced added to
    // them (a call timed from its entry stop to its exit stop gains the stops' own cost).
    let mut in_calls: BTreeMap<u32, BTreeMap<On, u64>> = BTreeMap::new();
    let mut added: BTreeMap<u32, u64> = BTreeMap::new();
    // An io_uring request's time is not a thread's: its waits are in io_uring_enter.
    for op in t.ops.iter().filter(|o| !o.call.is_request()) {
        let own = own_time(op, &cost);
        let a = added.entry(op.pid).or_default();
        *a = a.saturating_add(
            op.dur
                .saturating_sub(op.held_exit.saturating_sub(op.held))
                .saturating_sub(own),
        );
        let c = in_calls
            .entry(op.pid)
            .or_default()
            .entry(on(t, op))
            .or_default();
        *c = c.saturating_add(own);
    }
    let mut procs = Vec::new();
    let mut total = ProcTime::default();
    for p in &t.procs {
        let calls = in_calls.remove(&p.pid).unwrap_or_default();
        // The kernel's side of each stop ran on the thread's CPU time.
        let stop_cpu = p.stops.saturating_mul(cost.cpu_ns).min(p.cpu_ns);
        let stop_wall = added.get(&p.pid).copied().unwrap_or(0);
        let mut r = ProcTime {
            pid: p.pid,
            name: p.name.clone(),
            alive_ns: p.alive_ns,
            cpu_ns: p.cpu_ns - stop_cpu,
            runq_ns: p.runq_ns,
            tracer_ns: p.held_ns.saturating_add(stop_cpu).saturating_add(stop_wall),
            children_ns: p.children_ns,
            calls_ns: calls.values().fold(0u64, |a, b| a.saturating_add(*b)),
            ..ProcTime::default()
        };
        let off = p.alive_ns.saturating_sub(
            [r.cpu_ns, r.runq_ns, r.tracer_ns, r.children_ns]
                .iter()
                .fold(0u64, |a, b| a.saturating_add(*b)),
        );
        let sum: u64 = calls.values().fold(0u64, |a, b| a.saturating_add(*b));
        // More time in calls than off the CPU: the rest was on the CPU inside them.
        let scale = if sum > off {
            off as f64 / sum as f64
        } else {
            1.0
        };
        let part = |w: On| (*calls.get(&w).unwrap_or(&0) as f64 * scale) as u64;
        r.files_ns = part(On::Files);
        r.metadata_ns = part(On::Metadata);
        r.pipes_ns = part(On::Pipes);
        r.devices_ns = part(On::Devices);
        r.unseen_ns = off.saturating_sub(
            [r.files_ns, r.metadata_ns, r.pipes_ns, r.devices_ns]
                .iter()
                .fold(0u64, |a, b| a.saturating_add(*b)),
        );
        total.add(&r);
        procs.push(r);
    }
    procs.sort_by_key(|p| std::cmp::Reverse(p.alive_ns));
    let (mut went_to, mut verdict) = verdict(&total, &procs, t.wall_ns);
    let metadata_calls = t
        .ops
        .iter()
        .filter(|o| matches!(o.call, Call::Stat | Call::Getdents))
        .count();
    let share = total.tracer_ns as f64 / total.alive_ns.max(1) as f64;
    if share > TRACER_MOST {
        went_to = None;
        verdict = format!(
            "undecided: being traced took {:.0}% of the threads' time ({} stops), too much to split the rest reliably (`iolab trace --overhead 3` measures the slowdown{}); as measured, {verdict}",
            100.0 * share,
            t.stops,
            if 2 * metadata_calls > t.ops.len() {
                "; most stops were stat and getdents: --no-metadata leaves them out"
            } else {
                ""
            }
        );
    }
    verdict.push_str(&match t.stop_cost {
        Some(c) => format!(
            "; being traced cost each call {:.1} us and each stop {:.1} us of CPU (measured on {} calls at the start), taken off the figures",
            c.wall_ns as f64 / 1e3,
            c.cpu_ns as f64 / 1e3,
            c.calls
        ),
        None => "; what being traced cost each call was not measured: call and CPU times include it".to_string(),
    });
    Some(TimeProfile {
        procs,
        total,
        went_to,
        verdict,
    })
}

/// A call's own time: entry stop to exit stop, less the tracer's held share and, for a call of
/// two stops, what the stops themselves take ([`super::StopCost::wall_ns`]).
fn own_time(op: &super::Op, cost: &super::StopCost) -> u64 {
    let held = op.dur.saturating_sub(op.held_exit.saturating_sub(op.held));
    if op.dur > 0 {
        held.saturating_sub(cost.wall_ns)
    } else {
        held
    }
}

/// The leading kind of work and the sentence that says so.
fn verdict(total: &ProcTime, procs: &[ProcTime], wall_ns: u64) -> (Option<String>, String) {
    let work = [
        ("cpu", "the CPU", total.cpu_ns),
        (
            "files",
            "waiting on file data (reads, writes, syncs)",
            total.files_ns,
        ),
        (
            "metadata",
            "file-system metadata calls (open, stat, getdents, close, seek, mmap)",
            total.metadata_ns,
        ),
        (
            "unseen",
            "waiting off the CPU outside the traced calls (sleeps, polls, locks, page faults waiting for storage)",
            total.unseen_ns,
        ),
        (
            "runq",
            "waiting for a CPU (the machine was busy)",
            total.runq_ns,
        ),
    ];
    let waits = [
        (
            "pipes",
            "waiting on pipes and sockets (the other end: a process or peer not keeping up, or idle)",
            total.pipes_ns,
        ),
        (
            "devices",
            "waiting on terminals and devices (input, most likely)",
            total.devices_ns,
        ),
    ];
    let mut ranked: Vec<_> = work.iter().collect();
    ranked.sort_by_key(|w| std::cmp::Reverse(w.2));
    let (first, second) = (ranked[0], ranked[1]);
    let top_wait = waits.iter().max_by_key(|w| w.2).unwrap_or(&waits[0]);
    let busiest = |key: &str| {
        procs
            .iter()
            .map(|p| {
                let v = match key {
                    "cpu" => p.cpu_ns,
                    "files" => p.files_ns,
                    "metadata" => p.metadata_ns,
                    "unseen" => p.unseen_ns,
                    "runq" => p.runq_ns,
                    "pipes" => p.pipes_ns,
                    _ => p.devices_ns,
                };
                (v, p)
            })
            .max_by_key(|(v, _)| *v)
            .filter(|(v, _)| *v > 0)
            .map(|(v, p)| format!(" ({} pid {}: {})", p.name, p.pid, secs(v)))
            .unwrap_or_default()
    };
    let figures = format!(
        "over {} of wall time, threads added up: CPU {}, file data {}, metadata {}, pipes and sockets {}, terminals and devices {}, children {}, unseen {}, run queue {}, being traced {}",
        secs(wall_ns),
        secs(total.cpu_ns),
        secs(total.files_ns),
        secs(total.metadata_ns),
        secs(total.pipes_ns),
        secs(total.devices_ns),
        secs(total.children_ns),
        secs(total.unseen_ns),
        secs(total.runq_ns),
        secs(total.tracer_ns)
    );
    let ahead = |a: u64, b: u64| a > 0 && a as f64 >= LEAD * b as f64;
    if ahead(top_wait.2, first.2) {
        return (
            Some(top_wait.0.to_string()),
            format!(
                "time went to {}{}: what would speed it up is at the other end; {figures}",
                top_wait.1,
                busiest(top_wait.0)
            ),
        );
    }
    if ahead(first.2, second.2) {
        let waits = total.pipes_ns.saturating_add(total.children_ns) as f64;
        let more = if waits * 100.0 > total.alive_ns as f64 {
            " (waits on pipes and children are not counted against it: the processes at their other end are counted themselves)"
        } else {
            ""
        };
        return (
            Some(first.0.to_string()),
            format!(
                "time went to {}{}{more}; {figures}",
                first.1,
                busiest(first.0)
            ),
        );
    }
    (
        None,
        format!(
            "mixed: no kind of work leads by {LEAD}x ({} {}, {} {}); {figures}",
            first.0,
            secs(first.2),
            second.0,
            secs(second.2)
        ),
    )
}

/// One directory's metadata calls: stats relative to it (or of it) and reads of its entries.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DirRow {
    /// The directory ("(paths from the working directory, or absolute)" for stats given no
    /// directory descriptor, "(open files: fstat)" for stats of an open file).
    pub path: String,
    /// stat calls (newfstatat, statx, stat, lstat, fstat).
    pub stats: u64,
    /// stat calls that failed (a missing file: a lookup that found nothing).
    pub stat_errors: u64,
    /// getdents calls.
    pub getdents: u64,
    /// Bytes of directory entries they returned.
    pub entry_bytes: u64,
    /// Time in those calls, the tracer's share off, ns.
    pub time_ns: u64,
}

/// Metadata calls per directory, most time first; and the opens that failed (calls, ns).
pub fn metadata_by_dir(t: &Trace) -> (Vec<DirRow>, (u64, u64)) {
    let cost = t.stop_cost.unwrap_or(super::StopCost {
        calls: 0,
        wall_ns: 0,
        cpu_ns: 0,
    });
    let mut rows: BTreeMap<Option<u32>, DirRow> = BTreeMap::new();
    let mut failed_opens = (0u64, 0u64);
    for op in &t.ops {
        let own = own_time(op, &cost);
        match op.call {
            Call::Stat | Call::Getdents => {}
            Call::Open if op.ret < 0 => {
                failed_opens.0 = failed_opens.0.saturating_add(1);
                failed_opens.1 = failed_opens.1.saturating_add(own);
                continue;
            }
            _ => continue,
        }
        // A stat of an open file (fstat) names no directory: one row for them all.
        let dir = op.file.filter(|&i| {
            t.files
                .get(i as usize)
                .is_some_and(|x| x.kind == FileKind::Dir)
        });
        let key = match (op.file, dir) {
            (Some(_), None) => Some(u32::MAX),
            _ => dir,
        };
        let r = rows.entry(key).or_default();
        r.time_ns = r.time_ns.saturating_add(own);
        if op.call == Call::Stat {
            r.stats = r.stats.saturating_add(1);
            r.stat_errors = r.stat_errors.saturating_add((op.ret < 0) as u64);
        } else {
            r.getdents = r.getdents.saturating_add(1);
            r.entry_bytes = r.entry_bytes.saturating_add(op.ret.max(0) as u64);
        }
    }
    let mut out: Vec<DirRow> = rows
        .into_iter()
        .map(|(f, mut r)| {
            r.path = match (f, f.and_then(|i| t.files.get(i as usize))) {
                (_, Some(info)) => info.path.clone(),
                (Some(_), None) => "(open files: fstat)".to_string(),
                (None, None) => "(paths from the working directory, or absolute)".to_string(),
            };
            r
        })
        .collect();
    out.sort_by_key(|r| std::cmp::Reverse(r.time_ns));
    (out, failed_opens)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A process's times, ms.
    fn proc(name: &str, cpu: u64, files: u64, pipes: u64, runq: u64) -> ProcTime {
        let (cpu, files, pipes, runq) = (cpu * MS, files * MS, pipes * MS, runq * MS);
        ProcTime {
            pid: 1,
            name: name.into(),
            alive_ns: cpu + files + pipes + runq,
            cpu_ns: cpu,
            files_ns: files,
            pipes_ns: pipes,
            runq_ns: runq,
            ..ProcTime::default()
        }
    }

    const MS: u64 = 1_000_000;

    fn total(ps: &[ProcTime]) -> ProcTime {
        let mut t = ProcTime::default();
        for p in ps {
            t.add(p);
        }
        t
    }

    #[test]
    fn a_leader_is_named_only_when_it_leads_by_half_again() {
        let ps = [proc("tar", 100, 40, 1900, 0), proc("gzip", 1900, 10, 50, 0)];
        let (w, text) = verdict(&total(&ps), &ps, 2000 * MS);
        assert_eq!(w.as_deref(), Some("cpu"), "{text}");
        assert!(text.contains("gzip pid 1: 1.90"), "{text}");
        // Pipe waits led by far, but the CPU at the other end is counted: not "pipes".
        let close = [proc("a", 1000, 700, 0, 0)];
        let (w, text) = verdict(&total(&close), &close, 2000 * MS);
        assert_eq!(w, None, "{text}");
        assert!(text.starts_with("mixed"), "{text}");
        let files = [proc("dd", 100, 1000, 0, 0)];
        assert_eq!(
            verdict(&total(&files), &files, 1100 * MS).0.as_deref(),
            Some("files")
        );
        // Waiting on a pipe whose other end was not traced (or idle): said as such.
        let idle = [proc("cat", 10, 0, 5000, 0)];
        assert_eq!(
            verdict(&total(&idle), &idle, 5000 * MS).0.as_deref(),
            Some("pipes")
        );
    }
}
