//! `iolab pollute` report: per stream method the hot set alone and under the stream, the stream's
//! own rate, memory and reclaim side by side, then the findings; the per-tick series in text with
//! `--ticks`, and in CSV always (one row per method and tick); a two-panel plot.

use crate::experiments::pollute::{PolluteResult, PolluteTick, StreamRun};
use crate::measure::finding::Finding;
use crate::report::svg::{Plot, Series, line_plot, series_points};
use crate::report::{Format, csv_line, markdown_table, table};
use crate::size::format_size;

const MIB: f64 = (1u64 << 20) as f64;

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "-".into(), |x| format!("{x:.digits$}"))
}

/// Microseconds: one decimal under 10, whole above.
fn us(v: Option<f64>) -> String {
    match v {
        Some(x) if x < 10.0 => format!("{x:.1}"),
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

fn summary_rows(r: &PolluteResult) -> Vec<Vec<String>> {
    let mut rows = vec![SUMMARY_HEADER.iter().map(|s| s.to_string()).collect()];
    for m in r.reads.iter().chain(&r.writes) {
        let mut row = vec![run_label(r, m)];
        match (&m.unsupported, &m.effect) {
            (Some(why), _) => {
                row.push("unsupported".into());
                row.extend(std::iter::repeat_n(String::new(), 9));
                row.push(why.clone());
            }
            (None, None) => {
                row.push("too few ticks".into());
                row.extend(std::iter::repeat_n(String::new(), 10));
            }
            (None, Some(e)) => row.extend([
                format!("{:.0}", e.stream_mib_s.median),
                format!("{:.1}", e.hot_alone.median),
                format!("{:.1}", e.hot_kiops.median),
                format!("{:.1}-{:.1}", e.hot_kiops.ci[0], e.hot_kiops.ci[1]),
                us(e.hot_p99_alone_us),
                us(e.hot_p99_us),
                opt(e.hot_resident_pct, 1),
                opt(e.hot_resident_min_pct, 1),
                opt(e.mem_bytes.map(|b| b as f64 / MIB), 0),
                opt(e.evicted_per_s, 0),
                opt(e.refaults_per_s, 0),
            ]),
        }
        rows.push(row);
    }
    rows
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

fn tick_cells(t: &PolluteTick) -> Vec<String> {
    let per_s = |n: Option<u64>| opt(n.map(|n| n as f64 / t.secs), 0);
    vec![
        format!("{:.2}", t.t),
        if t.streaming { "yes" } else { "no" }.into(),
        format!("{:.1}", t.hot_kiops),
        us(t.hot_p99_us),
        opt(t.hot_resident_pct, 1),
        format!("{:.0}", t.stream_mib_s),
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
        r.config.stream.display(),
        r.stream_size as f64 / r.limit.max(1) as f64,
        format_size(r.config.write_size),
        r.config.before,
        r.config.seconds,
        r.config.tick
    )
}

const NOTES: &str = "Each method ran --passes times, interleaved (#1, #2); a finding names a winner only when every run's interval does. Medians over the hot reader's ticks alone (its first left out) and over the second half of the stream's (the first half holds the stream's start and the hot set's slide); interval: the hot KIOPS median's at 95%. hot resident: the hot file's pages in the page cache under the stream (least: the lowest tick). evicted/s: pages the group evicted to stay under its limit (memory.stat: pgsteal; in cgroup v1 pgpgout, every page uncharged, the pages uncached I/O drops itself included); refaults/s: file pages of the group read again soon after their eviction (workingset_refault_file): the hot set's, or the stream's own read-ahead evicted before it was read. kswapd scan/s: machine-wide, the machine's own pressure. A written stream's file is never kept.\n";

/// `iolab pollute` in `format`, with its findings; `ticks` adds every method's series to text.
pub fn pollute_report(
    r: &PolluteResult,
    findings: &[Finding],
    format: Format,
    ticks: bool,
) -> String {
    let runs = || r.reads.iter().chain(&r.writes);
    match format {
        Format::Json => crate::report::json_with_findings(r, findings),
        Format::Csv => {
            let mut header = vec![
                "direction".to_string(),
                "method".to_string(),
                "run".to_string(),
            ];
            header.extend(TICK_HEADER.iter().map(|s| crate::report::csv_key(s)));
            let mut out = csv_line(&header);
            for m in runs() {
                for t in &m.ticks {
                    let mut row = vec![
                        if m.writes { "write" } else { "read" }.to_string(),
                        m.method.clone(),
                        (m.pass + 1).to_string(),
                    ];
                    let mut cells = crate::report::csv_cells(tick_cells(t));
                    cells[1] = crate::report::csv_bool(t.streaming);
                    row.extend(cells);
                    out.push_str(&csv_line(&row));
                }
            }
            out
        }
        Format::Markdown | Format::Text => {
            let md = format == Format::Markdown;
            let tab = |rows: &[Vec<String>]| {
                if md {
                    markdown_table(rows)
                } else {
                    table(rows)
                }
            };
            let mut out = format!("{}\n\n", heading(r));
            out.push_str(&tab(&summary_rows(r)));
            for f in findings {
                out.push_str(&format!("\nFinding: {}\n", f.text));
            }
            out.push('\n');
            out.push_str(NOTES);
            // Each run's series last, under a `== ` line: report.html folds it (and leaves it
            // out of print).
            if ticks {
                for m in runs().filter(|m| !m.ticks.is_empty()) {
                    out.push_str(&format!("\n== {}\n\n", run_label(r, m)));
                    let mut rows = vec![TICK_HEADER.iter().map(|s| s.to_string()).collect()];
                    rows.extend(m.ticks.iter().map(tick_cells));
                    out.push_str(&tab(&rows));
                }
            }
            out
        }
    }
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
