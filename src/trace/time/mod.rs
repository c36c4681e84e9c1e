//! Where a traced program's time went, per thread and by cause ([`model`]), what made its
//! wall clock ([`path`]), and the verdict that names it ([`verdict`]).
//!
//! Each thread's life is on a CPU, waiting for one, or blocked, and blocked by what it was
//! blocked in: a call's time off the CPU is the call's cause (a read of a regular file: file
//! data; fdatasync: durability; futex: locks; ...), and what a thread was blocked in outside
//! every call is page faults. The verdict follows the wall clock, never a sum over threads: the
//! main thread's life, with the time it waited on others put to what they did meanwhile; idle
//! threads (a pool waiting for work) are named apart and never headline.

pub mod model;
pub mod path;
pub mod verdict;

use super::{Call, FileKind, Trace};
use crate::trace::cause::Cause;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub use model::{CauseTime, Role, ThreadModel};
pub use path::{ThreadShare, WallCause, WallTime};
pub use verdict::{Decision, TimeVerdict};

/// Where the time went: per thread, the wall clock by cause, and the verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TimeProfile {
    /// Per thread, by cause: the main thread first, then the working threads (longest life
    /// first), then the idle ones.
    pub threads: Vec<ThreadModel>,
    /// The main thread's life by cause, others' work in place of its waits on them (None: no
    /// main thread was seen).
    pub wall: Option<WallTime>,
    /// What the program was bound by.
    pub verdict: TimeVerdict,
    /// What being traced cost each call, as the figures above have it taken off.
    pub tracer_note: String,
}

/// Where `t`'s time went; None for a trace without per-thread times (recorded before them).
pub fn time_profile(t: &Trace) -> Option<TimeProfile> {
    if t.thread_times.is_empty() {
        return None;
    }
    let root = model::root_of(t);
    let cost = t.stop_cost.unwrap_or(model::NO_COST);
    let mut threads = model::threads(t, root, &cost);
    let wall = path::wall_time(t, &threads, &cost);
    let mut verdict = verdict::verdict(t, &threads, wall.as_ref());
    // The ptrace tracer's stops cost what the calibration measured at the start, and a stop
    // costs several times more or less as the tracer and the program share a CPU or not: a
    // verdict stands only if it stands at a quarter and at twice that cost.
    if t.stop_cost.is_some() && verdict.decided != Decision::Undecided {
        let other: Vec<TimeVerdict> = [0.25, 2.0]
            .iter()
            .map(|&k| {
                let c = model::scaled(&cost, k);
                let th = model::threads(t, root, &c);
                let w = path::wall_time(t, &th, &c);
                verdict::verdict(t, &th, w.as_ref())
            })
            .collect();
        verdict = verdict::robust(verdict, &other);
    }
    let rank = |m: &ThreadModel| match m.role {
        Role::Main => 0,
        Role::Working => 1,
        Role::Idle => 2,
    };
    threads.sort_by(|a, b| {
        rank(a)
            .cmp(&rank(b))
            .then(b.alive_ns.cmp(&a.alive_ns))
            .then(a.tid.cmp(&b.tid))
    });
    let tracer_note = match t.stop_cost {
        Some(c) => format!(
            "being traced cost each call {:.1} us, each stop {:.1} us of CPU and {:.1} us waiting for a CPU (measured on {} calls at the start), taken off the figures",
            c.wall_ns as f64 / 1e3,
            c.cpu_ns as f64 / 1e3,
            c.runq_ns as f64 / 1e3,
            c.calls
        ),
        None if t.tracer == Some(super::Tracer::Ebpf) => {
            "the kernel tracer stops nothing: the figures are the program's own".to_string()
        }
        None => "what being traced cost each call was not measured: call and CPU times include it"
            .to_string(),
    };
    Some(TimeProfile {
        threads,
        wall,
        verdict,
        tracer_note,
    })
}

/// Every cause's total over the threads with role `role` (or all), ns.
pub fn sum_by_cause(threads: &[ThreadModel], role: Option<Role>) -> BTreeMap<Cause, u64> {
    let mut out = BTreeMap::new();
    for m in threads.iter().filter(|m| role.is_none_or(|r| m.role == r)) {
        for c in &m.causes {
            *out.entry(c.cause).or_insert(0) += c.ns;
        }
    }
    out
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
    let cost = t.stop_cost.unwrap_or(model::NO_COST);
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
mod tests;
