//! `iolab sweep` reports: the table and the plot.

use super::{SweepOp, SweepResult};
use crate::report::svg::{Plot, Point, Series, line_plot};
use crate::report::{Format, json, markdown_table, table};
use crate::size::format_size;

/// `iolab sweep` in `format`.
pub fn sweep_report(r: &SweepResult, format: Format) -> String {
    if format == Format::Json {
        return json(r);
    }
    let mode = if r.config.op == SweepOp::Read {
        "cache"
    } else {
        "sync"
    };
    let csv = format == Format::Csv;
    let mut rows = vec![
        [
            if csv { "bs bytes" } else { "bs" },
            "method",
            mode,
            "MiB/s median",
            "MiB/s min",
            "MiB/s max",
            "runs",
            "bytes/run",
            "run ms",
            "syscalls/GiB",
            "minflt/GiB",
            "majflt/GiB",
            "cache ok",
            "unsupported",
        ]
        .iter()
        .take(if csv { 14 } else { 13 })
        .map(|s| s.to_string())
        .collect::<Vec<_>>(),
    ];
    for c in &r.cells {
        let mut row = vec![
            if csv {
                c.bs.to_string()
            } else {
                format_size(c.bs)
            },
            c.method_name().to_string(),
            c.mode_name().to_string(),
        ];
        if let Some(why) = &c.unsupported {
            if csv {
                row.resize(13, String::new());
                row.push(why.clone());
            } else {
                row.push(format!("unsupported: {why}"));
            }
        } else {
            row.extend([
                format!("{:.1}", c.mib_s.median),
                format!("{:.1}", c.mib_s.min),
                format!("{:.1}", c.mib_s.max),
                c.mib_s.n.to_string(),
                if csv {
                    crate::report::median(c.runs.iter().map(|r| r.moved.bytes as f64)).to_string()
                } else {
                    format_size(
                        crate::report::median(c.runs.iter().map(|r| r.moved.bytes as f64)) as u64,
                    )
                },
                format!(
                    "{:.1}",
                    1e3 * crate::report::median(
                        c.runs.iter().map(|r| r.counters.wall.as_secs_f64())
                    )
                ),
                format!("{:.0}", c.syscalls_per_gib),
                format!("{:.0}", c.minor_faults_per_gib),
                format!("{:.0}", c.major_faults_per_gib),
                match (c.read(), c.cache_verified, csv) {
                    (None, _, true) => String::new(),
                    (None, _, false) => "-".into(),
                    (Some(_), ok, true) => crate::report::csv_bool(ok),
                    (Some(_), true, false) => "yes".into(),
                    (Some(_), false, false) => "NO".into(),
                },
            ]);
            if csv {
                row.push(String::new());
            }
        }
        rows.push(row);
    }
    match format {
        Format::Csv => crate::report::csv_table(&rows),
        Format::Markdown => markdown_table(&rows),
        _ => format!(
            "sweep {} of {}\n\n{}{}",
            op_name(r),
            r.config.path.display(),
            table(&rows),
            crate::report::rounds_line(&r.rounds)
        ),
    }
}

fn op_name(r: &SweepResult) -> &'static str {
    match r.config.op {
        SweepOp::Read => "read",
        SweepOp::Write => "write",
    }
}

/// Throughput against block size: one line per method x cache (or sync), min-max error bars.
pub fn sweep_plot(r: &SweepResult) -> String {
    let mut series: Vec<Series> = Vec::new();
    for c in r
        .cells
        .iter()
        .filter(|c| c.unsupported.is_none() && c.mib_s.n > 0)
    {
        let name = c.series();
        let point = Point {
            x: c.bs as f64,
            y: c.mib_s.median,
            lo: c.mib_s.min,
            hi: c.mib_s.max,
        };
        match series.iter_mut().find(|s| s.name == name) {
            Some(s) => s.points.push(point),
            None => series.push(Series {
                name,
                points: vec![point],
            }),
        }
    }
    let op = op_name(r);
    line_plot(&Plot {
        title: format!("{op} throughput vs block size"),
        x_label: "block size (bytes, log2 scale)".into(),
        y_label: "MiB/s (median, bars min-max)".into(),
        log2_x: true,
        log_y: false,
        series,
    })
}
