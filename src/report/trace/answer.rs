//! The answer's part of `iolab trace`'s profile: the wall clock by cause, each thread's life by
//! cause, and the advice with its gain.

use super::pct;
use crate::report::{Document, Table, Value};
use crate::trace::advice::{Level, Recommendation, Remedy};
use crate::trace::time::{TimeProfile, WallTime};

/// What a piece of advice's gain is here: measured by replay, how to measure it, or why it
/// cannot be.
pub fn gain_text(a: &Recommendation) -> String {
    match (&a.measured, a.remedy, &a.unmeasured) {
        (Some(g), Some(r), _) => format!(
            "measured here by replay ({}, {}): {}: {:.2}x the recorded reads' speed, {}",
            r.name(),
            a.cache.map_or("", |c| c.name()),
            g.decided,
            g.ratio,
            crate::measure::decide::interval_words(g.ci, (g.level, g.asked), g.rounds)
        ),
        (None, Some(r), _) => format!(
            "measure it here: `iolab trace --advise` does, or `iolab replay TRACE --cache {} --methods {}` on the trace --out kept",
            a.cache.map_or("both", |c| c.name()),
            match r {
                Remedy::Merged => "merged",
                Remedy::Buffered => "pread",
                other => other.name(),
            }
        ),
        (_, None, Some(why)) => format!("not measured: {why}"),
        _ => String::new(),
    }
}

/// The advice, most pressing first: the evidence, the change, the gain.
pub fn advice_document(advice: &[Recommendation]) -> Document {
    if advice.is_empty() {
        return Document::new()
            .para("what to change: no rule fired (none of their evidence is in this trace)");
    }
    let items = advice
        .iter()
        .map(|a| {
            let level = match a.level {
                Level::High => "high",
                Level::Warn => "warn",
                Level::Info => "info",
            };
            format!(
                "[{level}] {}: {}. Change: {}. {}",
                a.title,
                a.evidence,
                a.change,
                gain_text(a)
            )
        })
        .collect();
    Document::new().para("what to change:").items(items)
}

/// The wall clock by cause: what made the main thread's life, with the threads each cause was
/// spent in.
pub fn wall_table(w: &WallTime) -> Table {
    let mut tab = Table::titled(&["cause", "s", "share", "waiting for a CPU s", "threads"]);
    // Causes under a thousandth of the wall time say nothing at this table's precision.
    for c in w.causes.iter().filter(|c| c.ns * 1000 >= w.wall_ns) {
        // The threads with a twentieth of the cause or more (the first in any case).
        let who: Vec<String> = c
            .threads
            .iter()
            .enumerate()
            .filter(|(i, t)| *i == 0 || t.ns * 20 >= c.ns)
            .map(|(_, t)| t)
            .take(3)
            .map(|t| {
                format!(
                    "{} ({}) {:.3}",
                    crate::shown::line(&t.name),
                    t.tid,
                    t.ns as f64 / 1e9
                )
            })
            .collect();
        tab.row(vec![
            Value::text(c.cause.label()),
            Value::Fixed(c.ns as f64 / 1e9, 3),
            pct(c.ns as f64 / w.wall_ns.max(1) as f64),
            Value::Fixed(c.runq_ns as f64 / 1e9, 3),
            Value::text(who.join(", ")),
        ]);
    }
    tab
}

/// Each thread's life by cause, seconds (at most `limit` rows; idle threads in one row): the
/// columns are the causes any row has.
pub fn threads_table(t: &TimeProfile, limit: usize) -> Table {
    use crate::trace::cause::Cause;
    use crate::trace::time::{CauseTime, Role, ThreadModel};
    // An idle thread that synced or moved file data (a server's background writer, its
    // checkpointer) has its own row: what it did is the server's durability, not noise.
    let quiet = |m: &ThreadModel| {
        m.role == Role::Idle && m.ns(Cause::Durability) + m.ns(Cause::FileData) < 1_000_000
    };
    let (idle, rest): (Vec<&ThreadModel>, Vec<&ThreadModel>) =
        t.threads.iter().partition(|m| quiet(m));
    // Threads that lived under a hundredth of the wall time (a pool opening files at the start)
    // are one row: each alone would read 0.000.
    let wall = t.wall.as_ref().map_or(0, |w| w.wall_ns);
    let (shown, short): (Vec<&ThreadModel>, Vec<&ThreadModel>) = rest
        .into_iter()
        .partition(|m| m.role != Role::Working || m.alive_ns * 100 >= wall);
    let more = shown.len().saturating_sub(limit);
    let mut rows: Vec<(String, String, u64, Vec<CauseTime>)> = shown
        .iter()
        .take(limit)
        .map(|m| {
            let role = match m.role {
                Role::Main => "main",
                Role::Idle => "idle, wrote or synced",
                Role::Working => "working",
            };
            (
                format!("{} ({}/{})", crate::shown::line(&m.name), m.pid, m.tid),
                role.to_string() + if m.running { ", running" } else { "" },
                m.alive_ns,
                m.causes.clone(),
            )
        })
        .collect();
    let group = |ms: &[&ThreadModel]| -> Vec<CauseTime> {
        Cause::ALL
            .iter()
            .map(|&c| CauseTime {
                cause: c,
                ns: ms.iter().map(|m| m.ns(c)).sum(),
                cpu_ns: 0,
                runq_ns: 0,
                calls: Vec::new(),
            })
            .filter(|x| x.ns > 0)
            .collect()
    };
    if more > 0 {
        let rest: Vec<&ThreadModel> = shown.iter().skip(limit).copied().collect();
        rows.push((
            format!("{more} more working thread(s)"),
            "working".into(),
            rest.iter().map(|m| m.alive_ns).sum(),
            group(&rest),
        ));
    }
    if !short.is_empty() {
        rows.push((
            format!("{} short-lived thread(s)", short.len()),
            "working".into(),
            short.iter().map(|m| m.alive_ns).sum(),
            group(&short),
        ));
    }
    if !idle.is_empty() {
        rows.push((
            format!("{} idle thread(s)", idle.len()),
            "idle".into(),
            idle.iter().map(|m| m.alive_ns).sum(),
            group(&idle),
        ));
    }
    let used: Vec<Cause> = Cause::ALL
        .iter()
        .copied()
        .filter(|c| {
            rows.iter()
                .any(|r| r.3.iter().any(|x| x.cause == *c && x.ns >= 1_000_000))
        })
        .collect();
    let mut titles = vec![
        "thread (pid/tid)".to_string(),
        "role".into(),
        "alive s".into(),
    ];
    titles.extend(used.iter().map(|c| format!("{} s", c.short())));
    let titles: Vec<&str> = titles.iter().map(|s| s.as_str()).collect();
    let mut tab = Table::titled(&titles);
    let s = |ns: u64| Value::Fixed(ns as f64 / 1e9, 3);
    for (name, role, alive, causes) in rows {
        let mut row = vec![Value::text(name), Value::text(role), s(alive)];
        row.extend(
            used.iter()
                .map(|c| s(causes.iter().find(|x| x.cause == *c).map_or(0, |x| x.ns))),
        );
        tab.row(row);
    }
    tab
}
