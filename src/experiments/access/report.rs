//! `iolab access` reports: one row per method x pattern x cache.

use super::{AccessResult, AccessRow};
use crate::report::{Column, Document, Shown, Table, Value, median};
use crate::size::format_size;

/// Timed operations a percentile needs before a table shows it: p99 from 100, p99.9 from 1,000
/// (below that it is one of the slowest few samples, not a percentile).
pub const P99_MIN_SAMPLES: u64 = 100;
/// See [`P99_MIN_SAMPLES`].
pub const P999_MIN_SAMPLES: u64 = 1000;

/// The columns of the access table.
fn columns() -> Table {
    let mut t = Table::new(
        [
            "method",
            "pattern",
            "cache",
            "KIOPS",
            "MiB/s",
            "samples",
            "p50 us",
            "p90 us",
            "p99 us",
            "p99.9 us",
            "max us",
            "minflt/op",
            "majflt/op",
            "dev B/B",
            "cache ok",
            "runs",
            "run ms",
        ]
        .iter()
        .map(|t| Column::new(t))
        .chain([Column::new("per run").csv("bytes_run")]),
    );
    t.may_be_unsupported = true;
    t
}

/// One row: its figures, or why it was not measured.
fn add_row(t: &mut Table, r: &AccessRow) {
    let lead = vec![
        Value::text(r.method.name()),
        Value::text(r.pattern.name()),
        Value::text(r.cache.name()),
    ];
    if let Some(why) = &r.unsupported {
        return t.unsupported(lead, why);
    }
    let l = &r.latency;
    // No block timed (--no-latency), or too few for this percentile: no figure is claimed.
    let pct = |ns: u64, need: u64| {
        if l.ops == 0 || l.ops < need {
            Value::Missing
        } else {
            Value::Fixed(ns as f64 / 1000.0, 1)
        }
    };
    let mut row = lead;
    row.extend([
        Value::Fixed(r.kiops.median, 1),
        Value::Fixed(r.mib_s.median, 1),
        Value::Count(l.ops),
        pct(l.p50_ns, 1),
        pct(l.p90_ns, 10),
        pct(l.p99_ns, P99_MIN_SAMPLES),
        pct(l.p999_ns, P999_MIN_SAMPLES),
        pct(l.max_ns, 1),
        Value::Fixed(r.minor_faults_per_op, 4),
        Value::Fixed(r.major_faults_per_op, 4),
        Value::fixed_or_missing(r.device_bytes_per_byte, 2),
        Value::Flag(r.cache_verified),
        Value::Count(r.kiops.n as u64),
        Value::Fixed(
            1e3 * median(r.runs.iter().map(|x| x.counters.wall.as_secs_f64())),
            1,
        ),
        Value::Bytes(median(r.runs.iter().map(|x| x.moved.bytes as f64)) as u64),
    ]);
    t.row(row);
}

/// What the samples and percentile columns mean, under a text or Markdown table.
pub const SAMPLES_NOTE: &str = "samples: blocks timed (short reads are timed one in 16 or more after the first 64); a percentile shows from enough of them: p99 from 100, p99.9 from 1,000 (else -)";

/// `iolab access`: a row per method x pattern x cache state, and how the rounds went.
pub fn access_document(r: &AccessResult) -> Document {
    let mut t = columns();
    for row in &r.rows {
        add_row(&mut t, row);
    }
    let c = &r.config;
    let head = format!(
        "access {} ({}, {} blocks of {}), threads {}, depth {}, {}{}{}",
        crate::shown::path(&c.path),
        format_size(r.file_size),
        r.blocks,
        format_size(c.bs),
        c.threads,
        c.depth,
        match c.rounds.budget {
            Some(b) => format!(
                "rounds until each method is told apart from the first at {} (at most {:.0} s)",
                crate::measure::decide::percent(c.rounds.level),
                b.as_secs_f64()
            ),
            None => format!("{} counted run(s) per cell", c.rounds.repeat),
        },
        c.ops
            .map(|o| format!(", {o} ops per run"))
            .unwrap_or_default(),
        c.duration
            .map(|d| format!(", at most {:.1} s per run", d.as_secs_f64()))
            .unwrap_or_default(),
    );
    Document::new()
        .heading(head)
        .table(t)
        .para(SAMPLES_NOTE)
        .para(
            r.xor
                .map(|x| format!("Xor value is {x:08x}"))
                .unwrap_or_default(),
        )
        .para(crate::report::rounds_line(&r.rounds))
        .only(Shown::Text)
}

/// The classic benchmark's lines: `took <ms>ms` and `iops : <KIOPS>`.
pub fn classic_lines(r: &AccessResult) -> String {
    let Some(row) = r.rows.first() else {
        return String::new();
    };
    let Some(run) = row.runs.iter().rfind(|x| !x.warmup) else {
        return String::new();
    };
    // As the original computed it: whole milliseconds (chrono's duration_cast truncates), and
    // blocks per millisecond with two decimals.
    let ms = run.counters.wall.as_millis();
    let iops = if ms > 0 {
        run.moved.blocks as f64 / ms as f64
    } else {
        run.kiops()
    };
    format!("took {ms}ms\niops : {iops:.2}\n")
}
