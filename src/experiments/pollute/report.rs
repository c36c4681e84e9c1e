//! `iolab pollute` report: per stream method the hot set alone and under the stream, the stream's
//! own rate, memory and reclaim side by side, then the findings; the per-tick series in text with
//! `--ticks`, and in CSV always (one row per method and tick); a two-panel plot.

use crate::experiments::pollute::{PolluteResult, PolluteTick, StreamRun};
use crate::measure::finding::Finding;
use crate::report::svg::{Plot, Series, line_plot, series_points};
use crate::report::{Column, Document, Shown, Table, Value};
use crate::size::format_size;

const MIB: f64 = (1u64 << 20) as f64;

fn opt(v: Option<f64>, digits: usize) -> Value {
    Value::fixed_or_missing(v, digits)
}

/// Microseconds: one decimal under 10, whole above.
fn us(v: Option<f64>) -> Value {
    match v {
        Some(x) if x < 10.0 => Value::Fixed(x, 1),
        other => opt(other, 0),
    }
}

const SUMMARY_HEADER: [&str; 12] = [
    "stream",
    "stream MiB/s",
    "hot KIOPS alone",
    "hot KIOPS under",
    "interval",
    "p99 µs alone",
    "p99 µs under",
    "hot resident %",
    "least %",
    "group MiB",
    "evicted/s",
    "refaults/s",
];

fn label(m: &StreamRun) -> String {
    format!("{} {}", if m.writes { "write" } else { "read" }, m.method)
}

/// The label with the run's number when there are several.
fn run_label(r: &PolluteResult, m: &StreamRun) -> String {
    if r.config.passes > 1 {
        format!("{} #{}", label(m), m.pass + 1)
    } else {
        label(m)
    }
}

fn summary_table(r: &PolluteResult) -> Table {
    let mut t = Table::titled(&SUMMARY_HEADER);
    for m in r.reads.iter().chain(&r.writes) {
        let lead = vec![Value::text(run_label(r, m))];
        match (&m.unsupported, &m.effect) {
            (Some(why), _) => t.unsupported(lead, why),
            (None, None) => t.unsupported(lead, "too few ticks"),
            (None, Some(e)) => {
                let mut row = lead;
                row.extend([
                    Value::Fixed(e.stream_mib_s.median, 0),
                    Value::Fixed(e.hot_alone.median, 1),
                    Value::Fixed(e.hot_kiops.median, 1),
                    Value::text(format!("{:.1}-{:.1}", e.hot_kiops.ci[0], e.hot_kiops.ci[1])),
                    us(e.hot_p99_alone_us),
                    us(e.hot_p99_us),
                    opt(e.hot_resident_pct, 1),
                    opt(e.hot_resident_min_pct, 1),
                    opt(e.mem_bytes.map(|b| b as f64 / MIB), 0),
                    opt(e.evicted_per_s, 0),
                    opt(e.refaults_per_s, 0),
                ]);
                t.row(row);
            }
        }
    }
    t
}

const TICK_HEADER: [&str; 11] = [
    "t s",
    "stream",
    "hot KIOPS",
    "hot p99 µs",
    "hot resident %",
    "stream MiB/s",
    "group MiB",
    "dev MiB/s",
    "evicted/s",
    "refaults/s",
    "kswapd scan/s",
];

fn tick_cells(t: &PolluteTick) -> Vec<Value> {
    let per_s = |n: Option<u64>| opt(n.map(|n| n as f64 / t.secs), 0);
    vec![
        Value::Fixed(t.t, 2),
        Value::Flag(t.streaming),
        Value::Fixed(t.hot_kiops, 1),
        us(t.hot_p99_us),
        opt(t.hot_resident_pct, 1),
        Value::Fixed(t.stream_mib_s, 0),
        opt(t.mem_current.map(|b| b as f64 / MIB), 0),
        opt(t.dev_read_bytes.map(|b| b as f64 / t.secs / MIB), 0),
        per_s(t.group_evicted),
        per_s(t.group_refaults),
        per_s(t.scan_kswapd),
    ]
}

fn heading(r: &PolluteResult) -> String {
    format!(
        "a {} hot set read at random ({} reads, one thread) beside a stream in a {} memory cgroup of {}: reads through {} ({:.1}x the limit), writes of {} a pass; {:.1} s alone, then {:.1} s with the stream, a sample every {} s",
        format_size(r.hot_size),
        format_size(r.config.hot_bs),
        r.cgroup.version.name(),
        format_size(r.limit),
        crate::shown::path(&r.config.stream),
        r.stream_size as f64 / r.limit.max(1) as f64,
        format_size(r.config.write_size),
        r.config.before,
        r.config.seconds,
        r.config.tick
    )
}

const NOTES: &str = "Each method ran --passes times, interleaved (#1, #2); a finding takes each run as one observation (Student's t over the runs' ratios, three runs at least). Medians over the hot reader's ticks alone (its first left out) and over the second half of the stream's (the first half holds the stream's start and the hot set's slide); interval: the hot KIOPS median's at 95%. hot resident: the hot file's pages in the page cache under the stream (least: the lowest tick). evicted/s: pages the group evicted to stay under its limit (memory.stat: pgsteal; in cgroup v1 pgpgout, every page uncharged, the pages uncached I/O drops itself included); refaults/s: file pages of the group read again soon after their eviction (workingset_refault_file): the hot set's, or the stream's own read-ahead evicted before it was read. kswapd scan/s: machine-wide, the machine's own pressure. A written stream's file is never kept.\n";

/// `iolab pollute` with its findings: the summary, the findings, what the columns mean, and
/// with `ticks` every run's series (folded). CSV: a row per method, run and tick.
pub fn pollute_document(r: &PolluteResult, findings: &[Finding], ticks: bool) -> Document {
    let runs = || r.reads.iter().chain(&r.writes);
    let mut all = Table::new(
        ["direction", "method", "run"]
            .iter()
            .chain(&TICK_HEADER)
            .map(|c| Column::new(c)),
    );
    for m in runs() {
        for t in &m.ticks {
            let mut row = vec![
                Value::text(if m.writes { "write" } else { "read" }),
                Value::text(&m.method),
                Value::Count(m.pass as u64 + 1),
            ];
            row.extend(tick_cells(t));
            all.row(row);
        }
    }
    let mut doc = Document::new()
        .table(all)
        .only(Shown::Data)
        .heading(heading(r))
        .table(summary_table(r))
        .items(
            findings
                .iter()
                .map(|f| format!("Finding: {}", f.text))
                .collect(),
        )
        .para(NOTES);
    // Each run's series last, under a `== ` line: report.html folds it (and leaves it out of
    // print).
    if ticks {
        for m in runs().filter(|m| !m.ticks.is_empty()) {
            let mut t = Table::titled(&TICK_HEADER);
            for tick in &m.ticks {
                t.row(tick_cells(tick));
            }
            doc = doc.fold(run_label(r, m)).table(t);
        }
    }
    doc
}

/// The hot reader's KIOPS over time per stream method, and below it the hot set's residency.
pub fn pollute_plot(r: &PolluteResult) -> String {
    let series = |f: &dyn Fn(&PolluteTick) -> Option<f64>| -> Vec<Series> {
        r.reads
            .iter()
            .chain(&r.writes)
            .filter(|m| !m.ticks.is_empty())
            .map(|m| Series {
                name: run_label(r, m),
                points: series_points(m.ticks.iter().map(|t| (t.t, f(t)))),
            })
            .collect()
    };
    let top = line_plot(&Plot::over_time(
        format!(
            "hot set of {}: random {} reads; the stream starts at {:.1} s",
            format_size(r.hot_size),
            format_size(r.config.hot_bs),
            r.config.before
        ),
        "seconds",
        "hot KIOPS",
        series(&|t| Some(t.hot_kiops)),
    ));
    let bottom = line_plot(&Plot::over_time(
        "the hot set's residency",
        "seconds",
        "% resident",
        series(&|t| t.hot_resident_pct),
    ));
    crate::report::svg::stack(
        &[top, bottom],
        "hot reads per second and the hot set's residency while a stream runs",
    )
}
