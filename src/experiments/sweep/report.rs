//! `iolab sweep` reports: the table and the plot.

use super::{SweepOp, SweepResult};
use crate::report::svg::{Plot, Point, Series, line_plot};
use crate::report::{Column, Document, Shown, Table, Value, median};

/// `iolab sweep`: a row per block size x method x cache state (or sync mode).
pub fn sweep_document(r: &SweepResult) -> Document {
    let mode = if r.config.op == SweepOp::Read {
        "cache"
    } else {
        "sync"
    };
    let mut t = Table::new([
        Column::new("bs").csv("bs_bytes"),
        Column::new("method"),
        Column::new(mode),
        Column::new("MiB/s median"),
        Column::new("MiB/s min"),
        Column::new("MiB/s max"),
        Column::new("runs"),
        Column::new("bytes/run"),
        Column::new("run ms"),
        Column::new("syscalls/GiB"),
        Column::new("minflt/GiB"),
        Column::new("majflt/GiB"),
        Column::new("cache ok"),
    ]);
    t.may_be_unsupported = true;
    for c in &r.cells {
        let lead = vec![
            Value::Bytes(c.bs),
            Value::text(c.method_name()),
            Value::text(c.mode_name()),
        ];
        if let Some(why) = &c.unsupported {
            t.unsupported(lead, why);
            continue;
        }
        let median = |f: &dyn Fn(&super::SweepRun) -> f64| median(c.runs.iter().map(f));
        let mut row = lead;
        row.extend([
            Value::Fixed(c.mib_s.median, 1),
            Value::Fixed(c.mib_s.min, 1),
            Value::Fixed(c.mib_s.max, 1),
            Value::Count(c.mib_s.n as u64),
            Value::Bytes(median(&|r| r.moved.bytes as f64) as u64),
            Value::Fixed(1e3 * median(&|r| r.counters.wall.as_secs_f64()), 1),
            Value::Fixed(c.syscalls_per_gib, 0),
            Value::Fixed(c.minor_faults_per_gib, 0),
            Value::Fixed(c.major_faults_per_gib, 0),
            match c.read() {
                Some(_) => Value::Flag(c.cache_verified),
                None => Value::Missing,
            },
        ]);
        t.row(row);
    }
    Document::new()
        .heading(format!(
            "sweep {} of {}",
            op_name(r),
            crate::shown::path(&r.config.path)
        ))
        .only(Shown::Text)
        .table(t)
        .para(crate::report::rounds_line(&r.rounds))
        .only(Shown::Text)
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
