//! `iolab squeeze` report: per method a row per second, the steady states side by side, the
//! finding; CSV is the time series itself (one row per method and second); a two-panel plot.

use crate::experiments::squeeze::{MethodSeries, SqueezeResult, SqueezeTick, amplification};
use crate::measure::finding::Finding;
use crate::report::svg::{Plot, Series, line_plot, series_points};
use crate::report::{Format, csv_line, markdown_table, table};
use crate::size::format_size;

const MIB: f64 = (1u64 << 20) as f64;

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "-".into(), |x| format!("{x:.digits$}"))
}

fn tick_cells(r: &SqueezeResult, t: &SqueezeTick) -> Vec<String> {
    let per_s = |n: u64| n as f64 / t.secs;
    vec![
        format!("{:.1}", t.t),
        format!("{:.2}", t.kiops),
        format!("{:.1}", t.mib_s),
        opt(t.dev_read_bytes.map(|b| b as f64 / t.secs / MIB), 1),
        opt(t.tlb_shootdowns.map(per_s), 0),
        format!("{:.0}", per_s(t.minor_faults)),
        format!("{:.0}", per_s(t.major_faults)),
        opt(t.mem_current.map(|b| b as f64 / MIB), 1),
        opt(t.mem_peak.map(|b| b as f64 / MIB), 1),
        opt(t.pressure_us.map(|us| us as f64 / 1e4 / t.secs), 1),
        if r.companion_alone > 0.0 {
            format!(
                "{:.0}",
                100.0 * t.cpu_work as f64 / t.secs / r.companion_alone
            )
        } else {
            "-".into()
        },
    ]
}

const TICK_HEADER: [&str; 11] = [
    "t s",
    "KIOPS",
    "MiB/s",
    "dev MiB/s",
    "TLB/s",
    "minflt/s",
    "majflt/s",
    "mem MiB",
    "peak MiB",
    "PSI %",
    "cpu left %",
];

fn header(cells: &[&str]) -> Vec<String> {
    cells.iter().map(|s| s.to_string()).collect()
}

fn summary_rows(r: &SqueezeResult) -> Vec<Vec<String>> {
    let mut rows = vec![header(&[
        "method",
        "KIOPS (steady)",
        "interval",
        "MiB/s",
        "dev MiB/s",
        "read/used",
        "TLB/s",
        "majflt/s",
        "PSI %",
        "cpu left %",
        "peak MiB",
        "steady from",
    ])];
    for m in &r.methods {
        if let Some(why) = &m.unsupported {
            let mut row = vec![m.method.name().to_string(), "unsupported".into()];
            row.extend(std::iter::repeat_n(String::new(), 9));
            row.push(why.clone());
            rows.push(row);
            continue;
        }
        let peak = opt(m.peak.map(|p| p as f64 / MIB), 1);
        let amp = opt(amplification(m, r.config.reads.bs), 2);
        match &m.steady {
            Some(s) => rows.push(vec![
                m.method.name().to_string(),
                format!("{:.2}", s.kiops.median),
                format!("{:.2}-{:.2}", s.kiops.ci[0], s.kiops.ci[1]),
                format!("{:.1}", s.mib_s.median),
                opt(s.dev_mib_s, 1),
                amp,
                opt(s.tlb_per_s, 0),
                format!("{:.0}", s.major_faults_per_s),
                opt(s.pressure_pct, 1),
                opt(s.cpu_left_pct, 0),
                peak,
                format!("{:.0} s", s.from_s),
            ]),
            None => {
                let mut row = vec![m.method.name().to_string(), "no steady state".into()];
                row.extend(std::iter::repeat_n(String::new(), 3));
                row.push(amp);
                row.extend(std::iter::repeat_n(String::new(), 4));
                row.push(peak);
                row.push("under 3 whole seconds after filling".into());
                rows.push(row);
            }
        }
    }
    rows
}

fn heading(r: &SqueezeResult) -> String {
    format!(
        "{}: {} in a {} memory cgroup ({} limit, the file {:.1}x larger), {} {} reads, {} thread(s), {:.0} s per method",
        r.config.path.display(),
        format_size(r.file_size),
        r.cgroup.version.name(),
        format_size(r.limit),
        r.oversize,
        r.config.reads.pattern.name(),
        format_size(r.config.reads.bs),
        r.config.reads.threads,
        r.config.reads.seconds
    )
}

fn method_heading(m: &MethodSeries) -> String {
    let steady = m.steady.as_ref().map_or_else(
        || "no steady state".to_string(),
        |s| format!("steady from {:.0} s: {}", s.from_s, s.why),
    );
    format!(
        "{} (resident before: {:.1}%; {steady})",
        m.method.name(),
        m.resident_before_pct
    )
}

fn notes(r: &SqueezeResult) -> String {
    let mut out = String::from(
        "dev MiB/s: the file's device as /proc/diskstats counts it (machine-wide); read/used: bytes the method's process read from storage per byte it used, in the steady state (readahead makes it above 1); TLB/s: machine-wide shootdown interrupts; cpu left: a CPU-bound companion thread's work per second against its rate alone",
    );
    if let Some(scope) = r
        .methods
        .iter()
        .find_map(|m| m.done.as_ref().and_then(|d| d.pressure_scope.clone()))
    {
        out.push_str(&format!("; PSI: memory pressure of the {scope}"));
    }
    out.push('\n');
    out
}

/// `iolab squeeze` in `format`, with its finding.
pub fn squeeze_report(r: &SqueezeResult, findings: &[Finding], format: Format) -> String {
    match format {
        Format::Json => crate::report::json_with_findings(r, findings),
        Format::Csv => {
            let mut out = csv_line(
                &std::iter::once("method".to_string())
                    .chain(TICK_HEADER.iter().map(|s| crate::report::csv_key(s)))
                    .collect::<Vec<_>>(),
            );
            for m in &r.methods {
                for t in &m.ticks {
                    let mut row = vec![m.method.name().to_string()];
                    row.extend(crate::report::csv_cells(tick_cells(r, t)));
                    out.push_str(&csv_line(&row));
                }
            }
            out
        }
        Format::Markdown => {
            let mut out = format!("{}\n\n{}\n", heading(r), markdown_table(&summary_rows(r)));
            for f in findings {
                out.push_str(&format!("\nFinding: {}\n", f.text));
            }
            for e in &r.explanations {
                out.push_str(&format!("\nWhy: {e}\n"));
            }
            out.push_str(&format!("\n{}", notes(r)));
            // Each method's series last, under a `== ` line: report.html folds it (and leaves
            // it out of print).
            for m in r.methods.iter().filter(|m| !m.ticks.is_empty()) {
                out.push_str(&format!("\n== {}\n\n", method_heading(m)));
                let mut rows = vec![header(&TICK_HEADER)];
                rows.extend(m.ticks.iter().map(|t| tick_cells(r, t)));
                out.push_str(&markdown_table(&rows));
            }
            out
        }
        Format::Text => {
            let mut out = format!("{}\n", heading(r));
            for m in &r.methods {
                if m.ticks.is_empty() {
                    continue;
                }
                out.push_str(&format!("\n{}\n", method_heading(m)));
                let mut rows = vec![header(&TICK_HEADER)];
                rows.extend(m.ticks.iter().map(|t| tick_cells(r, t)));
                out.push_str(&table(&rows));
            }
            out.push_str("\nSteady state (medians over its seconds):\n");
            out.push_str(&table(&summary_rows(r)));
            for f in findings {
                out.push_str(&format!("\nFinding: {}\n", f.text));
            }
            for e in &r.explanations {
                out.push_str(&format!("Why: {e}\n"));
            }
            out.push_str(&notes(r));
            out
        }
    }
}

/// Throughput over time per method, and below it TLB shootdowns per second: one SVG.
pub fn squeeze_plot(r: &SqueezeResult) -> String {
    let series = |f: &dyn Fn(&SqueezeTick) -> Option<f64>| -> Vec<Series> {
        r.methods
            .iter()
            .filter(|m| !m.ticks.is_empty())
            .map(|m| Series {
                name: m.method.name().into(),
                points: series_points(m.ticks.iter().map(|t| (t.t, f(t)))),
            })
            .collect()
    };
    let since = "seconds since the method started";
    let top = line_plot(&Plot::over_time(
        format!(
            "{} {} reads, file {:.1}x the memory limit",
            r.config.reads.pattern.name(),
            format_size(r.config.reads.bs),
            r.oversize
        ),
        since,
        "KIOPS",
        series(&|t| Some(t.kiops)),
    ));
    let bottom = line_plot(&Plot::over_time(
        "TLB shootdowns (machine-wide)",
        since,
        "shootdowns per second",
        series(&|t| t.tlb_shootdowns.map(|n| n as f64 / t.secs)),
    ));
    crate::report::svg::stack(
        &[top, bottom],
        "reads per second and TLB shootdowns over time",
    )
}
