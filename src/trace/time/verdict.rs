//! The verdict: what the program was bound by, in one sentence with its figures, from the wall
//! clock ([`super::path`]): the cause that made at least [`LEAD`] times the wall time of any
//! other, the calls and threads it was spent in, and the causes after it.

use super::model::{Role, ThreadModel};
use super::path::{WallCause, WallTime};
use crate::trace::Trace;
use crate::trace::cause::Cause;
use serde::{Deserialize, Serialize};

/// How far the leading cause must be ahead of the next to be named.
pub const LEAD: f64 = 1.5;

/// The tracer's share of the wall time above which no verdict is named: the stops' cost is
/// measured at the start, and it varies during a run (a stop costs 10 to 80 us here, as the
/// tracer and the program share a CPU or not), so what is left after taking it off is mostly
/// that variation.
pub const TRACER_MOST: f64 = 0.5;

/// How the verdict came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// One cause made at least [`LEAD`] times the wall time of any other.
    Bound,
    /// No cause leads by that much: the two first are named.
    Mixed,
    /// Being traced took too much of the time to split the rest, or no main thread was seen.
    Undecided,
}

/// What the program was bound by.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TimeVerdict {
    /// How it came out.
    pub decided: Decision,
    /// The cause it was bound by (`bound`), or the first of two (`mixed`).
    pub cause: Option<Cause>,
    /// That cause's wall time, ns.
    pub ns: u64,
    /// The wall time it is part of (the main thread's life), ns.
    pub wall_ns: u64,
    /// Threads that waited for work all their life (left out of the verdict).
    pub idle_threads: u32,
    /// The verdict in words, with its figures.
    pub text: String,
}

/// A time in the unit that reads best.
pub fn secs(ns: u64) -> String {
    let s = ns as f64 / 1e9;
    if s >= 10.0 {
        format!("{s:.1} s")
    } else if s >= 1.0 {
        format!("{s:.2} s")
    } else if s >= 1e-3 {
        format!("{:.1} ms", s * 1e3)
    } else {
        format!("{:.0} us", s * 1e6)
    }
}

/// A count with thousands separated.
fn count(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// What it is, as the verdict says it, for a trace by the ptrace tracer (`stopped`) or not:
/// the ptrace tracer cannot tell time blocked outside calls from stops that cost more than the
/// calibration measured.
pub fn phrase_for(c: Cause, stopped: bool) -> &'static str {
    match c {
        Cause::Faults if stopped => {
            "time off the CPU outside calls (page faults waiting for storage, or the tracer's stops costing more than measured)"
        }
        _ => c.phrase(),
    }
}

/// The calls a wall cause was spent in, from its first thread's model: "fdatasync x2,004
/// (1.82 ms each)".
fn calls_of(w: &WallCause, threads: &[ThreadModel]) -> String {
    let Some(first) = w.threads.first() else {
        return String::new();
    };
    let Some(m) = threads.iter().find(|m| m.tid == first.tid) else {
        return String::new();
    };
    let Some(ct) = m.causes.iter().find(|c| c.cause == w.cause) else {
        return String::new();
    };
    let parts: Vec<String> = ct
        .calls
        .iter()
        .take(2)
        .filter(|c| c.calls > 0)
        .map(|c| {
            let on_cpu = if c.cpu_ns as f64 > 0.2 * c.ns as f64 {
                format!(
                    ", {:.0}% of it on a CPU",
                    100.0 * c.cpu_ns as f64 / c.ns.max(1) as f64
                )
            } else {
                String::new()
            };
            format!(
                "{} x{} ({} each{on_cpu})",
                c.call,
                count(c.calls),
                secs(c.ns / c.calls.max(1))
            )
        })
        .collect();
    if parts.is_empty() {
        String::new()
    } else {
        format!(" in {}", parts.join(", "))
    }
}

/// Who made a wall cause: the main thread alone, or the threads with their share (those with
/// a twentieth of it or more).
fn who(w: &WallCause, wall: &WallTime) -> String {
    let named: Vec<String> = w
        .threads
        .iter()
        .take(3)
        .filter(|s| s.ns * 20 >= w.ns)
        .map(|s| {
            let role = if s.tid == wall.main_tid {
                "the main thread"
            } else {
                "thread"
            };
            format!(
                "{role} {} (pid {}, tid {}) {}",
                crate::shown::line(&s.name),
                s.pid,
                s.tid,
                secs(s.ns)
            )
        })
        .collect();
    let big: Vec<_> = w.threads.iter().filter(|s| s.ns * 20 >= w.ns).collect();
    match big.as_slice() {
        [] => String::new(),
        [one] if one.tid == wall.main_tid => format!(
            ", by the main thread {} (pid {})",
            crate::shown::line(&one.name),
            one.pid
        ),
        _ => format!(", by {}", named.join(", ")),
    }
}

/// "undecided" when the ptrace tracer's stops took too much of `wall_ns` (`tracer` of it) to
/// split the rest reliably, with what would trace with fewer stops.
fn traced_too_much(t: &Trace, wall_ns: u64, tracer: u64) -> String {
    let stat_calls = t
        .ops
        .iter()
        .filter(|o| {
            matches!(
                o.call,
                crate::trace::Call::Stat | crate::trace::Call::Getdents
            )
        })
        .count();
    format!(
        "undecided: being traced took {:.0}% of the {} wall time ({} stops), too much to split the rest reliably: try --tracer ebpf (as root), or `iolab trace --overhead 3` to measure the slowdown{}",
        100.0 * tracer as f64 / wall_ns.max(1) as f64,
        secs(wall_ns),
        t.stops,
        if 2 * stat_calls > t.ops.len() {
            "; most stops were stat and getdents: --no-metadata leaves them out"
        } else {
            ""
        }
    )
}

/// What a verdict's shares are of: the wall time, less the ptrace tracer's share when it had one.
fn of_text(wall_ns: u64, own: u64, tracer: u64) -> String {
    if tracer > 0 {
        format!(
            "the program's {} (the traced {} wall time less {} of being traced)",
            secs(own),
            secs(wall_ns),
            secs(tracer)
        )
    } else {
        format!("the {} wall time", secs(wall_ns))
    }
}

/// The sentence on the main thread's waits handed to the others, when they were a twentieth of
/// `total` or more.
fn handed_text(handed_ns: u64, total: f64) -> String {
    if handed_ns as f64 > 0.05 * total {
        format!(
            " The main thread waited on the others for {}: that time is put to what they did meanwhile.",
            secs(handed_ns)
        )
    } else {
        String::new()
    }
}

/// " Then: ..." for the next three causes of `rest` of 1% or more of `total` ns.
fn then_text(rest: &[&WallCause], total: f64) -> String {
    let named: Vec<String> = rest
        .iter()
        .take(3)
        .filter(|c| 100.0 * c.ns as f64 / total >= 1.0)
        .map(|c| format!("{} {}", c.cause.short(), secs(c.ns)))
        .collect();
    if named.is_empty() {
        String::new()
    } else {
        format!(" Then: {}.", named.join(", "))
    }
}

/// The verdict on `threads` and their wall time.
pub fn verdict(t: &Trace, threads: &[ThreadModel], wall: Option<&WallTime>) -> TimeVerdict {
    let idle = threads.iter().filter(|m| m.role == Role::Idle).count() as u32;
    let idle_note = match idle {
        0 => String::new(),
        n => format!(
            " {n} idle thread(s) (waiting for work nearly all their life: on locks, polls, pipes or sockets) are left out."
        ),
    };
    let Some(wall) = wall else {
        return TimeVerdict {
            decided: Decision::Undecided,
            cause: None,
            ns: 0,
            wall_ns: t.wall_ns,
            idle_threads: idle,
            text: "undecided: the program's first thread was not traced (it ended before the trace began?)".to_string(),
        };
    };
    let tracer = wall.ns(Cause::Tracer);
    // Shares are of the program's own time: the wall time less the ptrace tracer's share.
    let own = wall.wall_ns.saturating_sub(tracer).max(1);
    let total = own as f64;
    let ranked: Vec<&WallCause> = wall
        .causes
        .iter()
        .filter(|c| c.cause != Cause::Tracer)
        .collect();
    let pct = |ns: u64| 100.0 * ns as f64 / total;
    let stopped = t.stop_cost.is_some();
    let of = of_text(wall.wall_ns, own, tracer);
    let then = |from: usize| then_text(&ranked[from.min(ranked.len())..], total);
    let handed = handed_text(wall.handed_ns, total);
    let mut v = TimeVerdict {
        decided: Decision::Undecided,
        cause: ranked.first().map(|c| c.cause),
        ns: ranked.first().map_or(0, |c| c.ns),
        wall_ns: wall.wall_ns,
        idle_threads: idle,
        text: String::new(),
    };
    if tracer as f64 > TRACER_MOST * wall.wall_ns as f64 && t.stop_cost.is_none() {
        v.cause = None;
        v.text = traced_too_much(t, wall.wall_ns, tracer);
        return v;
    }
    let Some(first) = ranked.first() else {
        v.text = "undecided: nothing was measured".to_string();
        return v;
    };
    let second = ranked.get(1).map_or(0, |c| c.ns);
    let runq = if first.runq_ns as f64 > 0.05 * first.ns as f64 {
        format!(
            "; of it {} waiting for a CPU after wake-ups",
            secs(first.runq_ns)
        )
    } else {
        String::new()
    };
    if first.ns as f64 >= LEAD * second as f64 && first.ns > 0 {
        v.decided = Decision::Bound;
        v.text = format!(
            "bound by {}: {} ({:.0}%) of {of}{}{}{runq}.{}{handed}{idle_note}",
            phrase_for(first.cause, stopped),
            secs(first.ns),
            pct(first.ns),
            calls_of(first, threads),
            who(first, wall),
            then(1),
        );
    } else {
        let b = ranked[1];
        v.decided = Decision::Mixed;
        v.text = format!(
            "mixed: no cause leads by {LEAD}x: {} {} ({:.0}%){}{} and {} {} ({:.0}%){}{} of {of}.{}{handed}{idle_note}",
            phrase_for(first.cause, stopped),
            secs(first.ns),
            pct(first.ns),
            calls_of(first, threads),
            who(first, wall),
            phrase_for(b.cause, stopped),
            secs(b.ns),
            pct(b.ns),
            calls_of(b, threads),
            who(b, wall),
            then(2),
        );
    }
    v
}

/// `v`, the verdict at the stop cost measured, if the verdicts `other` at other stop costs
/// agree with it; else undecided, saying why.
pub fn robust(mut v: TimeVerdict, other: &[TimeVerdict]) -> TimeVerdict {
    let same = other
        .iter()
        .all(|o| o.decided == v.decided && o.cause == v.cause);
    if same {
        return v;
    }
    let alt = other
        .iter()
        .find(|o| o.decided != v.decided || o.cause != v.cause)
        .map(|o| match (o.decided, o.cause) {
            (Decision::Bound, Some(c)) => format!("bound by {}", c.phrase()),
            (Decision::Mixed, _) => "mixed".to_string(),
            _ => "undecided".to_string(),
        })
        .unwrap_or_default();
    v.decided = Decision::Undecided;
    v.cause = None;
    v.text = format!(
        "undecided: the answer depends on what each of the tracer's stops cost, which varies during a run (at the cost measured at the start, {}; at a quarter or twice that, {alt}): trace with --tracer ebpf (as root), or fewer stops (--no-metadata)",
        v.text.trim_end_matches('.')
    );
    v
}
