//! `iolab squeeze` report: per method a row per second, the steady states side by side, the
//! finding; CSV is the time series itself (one row per method and second); a two-panel plot.

use crate::experiments::squeeze::{MethodSeries, SqueezeResult, SqueezeTick, amplification};
use crate::measure::finding::Finding;
use crate::report::svg::{Plot, Series, line_plot, series_points};
use crate::report::{Column, Document, Shown, Table, Value};
use crate::size::format_size;

const MIB: f64 = (1u64 << 20) as f64;

fn opt(v: Option<f64>, digits: usize) -> Value {
    Value::fixed_or_missing(v, digits)
}

fn tick_cells(r: &SqueezeResult, t: &SqueezeTick) -> Vec<Value> {
    let per_s = |n: u64| n as f64 / t.secs;
    vec![
        Value::Fixed(t.t, 1),
        Value::Fixed(t.kiops, 2),
        Value::Fixed(t.mib_s, 1),
        opt(t.dev_read_bytes.map(|b| b as f64 / t.secs / MIB), 1),
        opt(t.tlb_shootdowns.map(per_s), 0),
        Value::Fixed(per_s(t.minor_faults), 0),
        Value::Fixed(per_s(t.major_faults), 0),
        opt(t.mem_current.map(|b| b as f64 / MIB), 1),
        opt(t.mem_peak.map(|b| b as f64 / MIB), 1),
        opt(t.pressure_us.map(|us| us as f64 / 1e4 / t.secs), 1),
        opt(
            (r.companion_alone > 0.0)
                .then(|| 100.0 * t.cpu_work as f64 / t.secs / r.companion_alone),
            0,
        ),
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

fn summary_table(r: &SqueezeResult) -> Table {
    let mut t = Table::titled(&[
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
    ]);
    for m in &r.methods {
        let lead = vec![Value::text(m.label(r.config.passes))];
        if let Some(why) = &m.unsupported {
            t.unsupported(lead, why);
            continue;
        }
        let peak = opt(m.peak.map(|p| p as f64 / MIB), 1);
        let amp = opt(amplification(m, r.config.reads.bs), 2);
        let mut row = lead;
        match &m.steady {
            Some(s) => row.extend([
                Value::Fixed(s.kiops.median, 2),
                Value::text(format!("{:.2}-{:.2}", s.kiops.ci[0], s.kiops.ci[1])),
                Value::Fixed(s.mib_s.median, 1),
                opt(s.dev_mib_s, 1),
                amp,
                opt(s.tlb_per_s, 0),
                Value::Fixed(s.major_faults_per_s, 0),
                opt(s.pressure_pct, 1),
                opt(s.cpu_left_pct, 0),
                peak,
                Value::text(format!("{:.0} s", s.from_s)),
            ]),
            None => row.extend([
                Value::text("no steady state"),
                Value::Missing,
                Value::Missing,
                Value::Missing,
                amp,
                Value::Missing,
                Value::Missing,
                Value::Missing,
                Value::Missing,
                peak,
                Value::text("under 3 whole seconds after filling"),
            ]),
        }
        t.row(row);
    }
    t
}

fn heading(r: &SqueezeResult) -> String {
    format!(
        "{}: {} in a {} memory cgroup ({} limit, the file {:.1}x larger), {} {} reads, {} thread(s), {:.0} s per method and run, {} run(s) of each",
        crate::shown::path(&r.config.path),
        format_size(r.file_size),
        r.cgroup.version.name(),
        format_size(r.limit),
        r.oversize,
        r.config.reads.pattern.name(),
        format_size(r.config.reads.bs),
        r.config.reads.threads,
        r.config.reads.seconds,
        r.config.passes
    )
}

fn method_heading(r: &SqueezeResult, m: &MethodSeries) -> String {
    let steady = m.steady.as_ref().map_or_else(
        || "no steady state".to_string(),
        |s| format!("steady from {:.0} s: {}", s.from_s, s.why),
    );
    format!(
        "{} (resident before: {:.1}%; {steady})",
        m.label(r.config.passes),
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
    out
}

/// A method's series: a row per second.
fn ticks_table(r: &SqueezeResult, m: &MethodSeries) -> Table {
    let mut t = Table::titled(&TICK_HEADER);
    for tick in &m.ticks {
        t.row(tick_cells(r, tick));
    }
    t
}

/// `iolab squeeze` with its finding: the steady states side by side, the findings and why,
/// what the columns mean, then each method's series (folded). Text puts the series first, as
/// they came. CSV: a row per method and second.
pub fn squeeze_document(r: &SqueezeResult, findings: &[Finding]) -> Document {
    let mut all = Table::new(
        std::iter::once("method")
            .chain(TICK_HEADER)
            .map(Column::new),
    );
    for m in &r.methods {
        for t in &m.ticks {
            let mut row = vec![Value::text(m.label(r.config.passes))];
            row.extend(tick_cells(r, t));
            all.row(row);
        }
    }
    let with_ticks = || r.methods.iter().filter(|m| !m.ticks.is_empty());
    let mut doc = Document::new()
        .table(all)
        .only(Shown::Data)
        .heading(heading(r));
    for m in with_ticks() {
        doc = doc
            .para(method_heading(r, m))
            .only(Shown::Text)
            .table(ticks_table(r, m))
            .only(Shown::Text);
    }
    doc = doc
        .para("Steady state (medians over its seconds):")
        .only(Shown::Text)
        .table(summary_table(r))
        .items(
            findings
                .iter()
                .map(|f| format!("Finding: {}", f.text))
                .collect(),
        )
        .items(r.explanations.iter().map(|e| format!("Why: {e}")).collect())
        .para(notes(r));
    // Each method's series last in Markdown, under a `== ` line: report.html folds it (and
    // leaves it out of print).
    for m in with_ticks() {
        doc = doc
            .fold(method_heading(r, m))
            .only(Shown::Markdown)
            .table(ticks_table(r, m))
            .only(Shown::Markdown);
    }
    doc
}

/// Throughput over time per method, and below it TLB shootdowns per second: one SVG.
pub fn squeeze_plot(r: &SqueezeResult) -> String {
    let series = |f: &dyn Fn(&SqueezeTick) -> Option<f64>| -> Vec<Series> {
        r.methods
            .iter()
            .filter(|m| !m.ticks.is_empty())
            .map(|m| Series {
                name: m.label(r.config.passes),
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
