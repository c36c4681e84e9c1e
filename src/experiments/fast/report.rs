//! `iolab fast`'s outputs: the classic line and table, `--explain` (each part's plan, the
//! probes and what probing cost), and the suite's series.

use super::{FastResult, FastSeries};
use crate::report::{Column, Document, Shown, Table, Value};
use crate::size::{format_size, mib_per_s};
use crate::xor::format_xor;

/// `iolab fast --explain`: each part of the file, the plan that read it and why; each probe.
pub fn fast_explain(r: &FastResult) -> String {
    let c = &r.choice;
    let mut out = format!(
        "explain: {:.1}% of the file resident at open; {}\n",
        r.resident * 100.0,
        c.reason
    );
    if !c.uses.is_empty() {
        out.push_str(&uses_table(c));
    }
    if c.probes.is_empty() {
        out.push_str("no probe: forced settings, a small file, or parts too small to probe\n");
        return out;
    }
    out.push_str(&probes_table(c));
    out.push_str(&probe_cost(r));
    out
}

/// The plan of each part of the file (resident or not): method, threads, block, depth and why.
pub(super) fn uses_table(c: &crate::experiments::fast::Choice) -> String {
    let mut rows = vec![vec![
        "part".to_string(),
        "bytes".into(),
        "method".into(),
        "threads".into(),
        "bs".into(),
        "depth".into(),
        "why".into(),
    ]];
    for u in &c.uses {
        rows.push(vec![
            if u.warm { "resident" } else { "not resident" }.into(),
            format_size(u.bytes),
            u.plan.method.name().into(),
            u.plan.threads.to_string(),
            format_size(u.plan.bs),
            u.plan.depth.to_string(),
            u.why.clone(),
        ]);
    }
    crate::report::table(&rows)
}

/// Every probe: the plan tried, where, how much and how fast.
pub(super) fn probes_table(c: &crate::experiments::fast::Choice) -> String {
    let mut rows = vec![vec![
        "probe".to_string(),
        "part".into(),
        "slice at".into(),
        "bytes".into(),
        "secs".into(),
        "MiB/s".into(),
    ]];
    for p in &c.probes {
        rows.push(vec![
            format!(
                "{} x{} bs {} depth {}",
                p.plan.method.name(),
                p.plan.threads,
                format_size(p.plan.bs),
                p.plan.depth
            ),
            if p.warm { "resident" } else { "not resident" }.into(),
            format_size(p.offset),
            format_size(p.bytes),
            format!("{:.4}", p.secs),
            format!("{:.0}", p.mib_s),
        ]);
    }
    format!(
        "{}(MiB/s: a slice's second half, or all it read when it stopped short, its pace taking it past the probe's budget of {}% of the part's time; raced: bytes per CPU second)\n",
        crate::report::table(&rows),
        100.0 * crate::experiments::fast::PROBE_BUDGET
    )
}

/// What probing cost the run, and per part what the chosen plan would have taken instead.
pub(super) fn probe_cost(r: &FastResult) -> String {
    let c = &r.choice;
    let wall = r.counters.wall.as_secs_f64();
    let parts: Vec<String> = c
        .uses
        .iter()
        .filter(|u| u.probe_secs > 0.0)
        .map(|u| {
            let own = if u.start_bytes > 0 {
                format!(
                    "; the chosen plan's own start (its setup and first {}, which a run without a probe pays too) was {:.1} ms of that",
                    crate::size::format_size(u.start_bytes),
                    u.start_secs * 1e3
                )
            } else {
                String::new()
            };
            let others = u.probe_bytes.saturating_sub(u.start_bytes);
            let at_pace = if u.rest_mib_s > 0.0 {
                format!(
                    "the chosen plan, at its pace over the rest ({:.0} MiB/s), reads {} in {:.1} ms",
                    u.rest_mib_s,
                    if u.start_bytes > 0 {
                        format!("the other {}", crate::size::format_size(others))
                    } else {
                        "those".to_string()
                    },
                    crate::experiments::fast::secs_at_pace(others, u.rest_mib_s) * 1e3
                )
            } else {
                "nothing was left to set a pace".to_string()
            };
            format!(
                "{} part: the probe took {:.1} ms for {}, setups included{own}; {at_pace}",
                if u.warm { "resident" } else { "not resident" },
                u.probe_secs * 1e3,
                crate::size::format_size(u.probe_bytes),
            )
        })
        .collect();
    format!(
        "probe cost: {:.1} ms ({:.1}% of the {:.3} s run){}{}\n",
        c.probe_cost_secs * 1e3,
        100.0 * c.probe_cost_secs / wall.max(1e-9),
        wall,
        if parts.is_empty() { "" } else { ": " },
        parts.join("; ")
    )
}

/// `iolab fast`: the course's line in text (`Xor value is ...`), one table row otherwise.
pub fn fast_document(r: &FastResult) -> Document {
    let secs = r.counters.wall.as_secs_f64();
    let mut t = Table::new([
        Column::new("method"),
        Column::new("threads"),
        Column::new("bs").csv("bs_bytes"),
        Column::new("depth"),
        Column::new("bytes"),
        Column::new("secs"),
        Column::new("MiB/s"),
        Column::new("resident %"),
        Column::new("xor"),
    ]);
    t.row(vec![
        Value::text(r.choice.method.name()),
        Value::Count(r.choice.threads as u64),
        Value::Bytes(r.choice.bs),
        Value::Count(r.choice.depth as u64),
        Value::Count(r.bytes),
        Value::Fixed(secs, 6),
        Value::Fixed(mib_per_s(r.bytes, secs), 1),
        Value::Fixed(r.resident * 100.0, 1),
        Value::text(format_xor(r.xor)),
    ]);
    Document::new()
        .table(t)
        .only(Shown::Markdown)
        .lines(format!("Xor value is {}", format_xor(r.xor)))
        .only(Shown::Text)
}

/// The median of a series and its interval, in words.
fn series_median(s: &FastSeries) -> String {
    format!(
        "median {:.1} MiB/s over {} runs (interval {:.1}-{:.1} at {:.0}%)",
        s.mib_s.median,
        s.mib_s.n,
        s.mib_s.ci[0],
        s.mib_s.ci[1],
        100.0 * s.mib_s.ci_level
    )
}

/// `fast` repeated: a row per run (text: each run's line), then the median.
pub fn fast_series(s: &FastSeries) -> Document {
    let mut t = Table::titled(&[
        "run",
        "method",
        "threads",
        "bs",
        "secs",
        "MiB/s",
        "resident at open",
        "cache ok",
        "why",
    ]);
    for (i, r) in s.runs.iter().enumerate() {
        let secs = r.counters.wall.as_secs_f64();
        t.row(vec![
            Value::Count(i as u64 + 1),
            Value::text(r.choice.method.name()),
            Value::Count(r.choice.threads as u64),
            Value::Bytes(r.choice.bs),
            Value::Fixed(secs, 4),
            Value::Fixed(mib_per_s(r.bytes, secs), 1),
            Value::text(format!("{:.0}%", r.resident * 100.0)),
            r.cache
                .as_ref()
                .map_or(Value::Missing, |c| Value::Flag(c.verified)),
            Value::text(&r.choice.reason),
        ]);
    }
    Document::new()
        .table(t)
        .only(Shown::Markdown)
        .lines(
            s.runs
                .iter()
                .map(|r| fast_talk(r) + "\n")
                .collect::<String>(),
        )
        .only(Shown::Text)
        .para(series_median(s))
}

/// `iolab fast`'s line on stderr: what it chose and how fast it went.
pub fn fast_talk(r: &FastResult) -> String {
    let secs = r.counters.wall.as_secs_f64();
    format!(
        "iolab fast: {} with {} thread(s), bs {}: {} in {:.4} s, {:.1} MiB/s; cache {:.0}% resident at open ({})",
        r.choice.method.name(),
        r.choice.threads,
        format_size(r.choice.bs),
        format_size(r.bytes),
        secs,
        mib_per_s(r.bytes, secs),
        r.resident * 100.0,
        r.choice.reason
    )
}
