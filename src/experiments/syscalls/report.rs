//! `iolab syscalls` report.

use crate::experiments::syscalls::SyscallsResult;
use crate::report::{Format, json, markdown_table, table};

/// `iolab syscalls` in `format`.
pub fn syscalls_report(r: &SyscallsResult, format: Format) -> String {
    if format == Format::Json {
        return json(r);
    }
    let mut rows = vec![
        ["call", "ns/call", "ns min", "ns max", "calls/s", "what"]
            .iter()
            .map(|s| s.to_string())
            .collect::<Vec<_>>(),
    ];
    for row in &r.rows {
        match &row.unsupported {
            Some(why) => rows.push(vec![
                row.name.clone(),
                "unsupported".into(),
                String::new(),
                String::new(),
                String::new(),
                why.clone(),
            ]),
            None => rows.push(vec![
                row.name.clone(),
                format!("{:.1}", row.ns.median),
                format!("{:.1}", row.ns.min),
                format!("{:.1}", row.ns.max),
                format!("{:.0}", row.calls_per_s),
                row.what.clone(),
            ]),
        }
    }
    let classic = format!(
        "1-byte reads move {:.2} MiB/s ({:.0} B/s): every byte pays a whole system call",
        r.read_1b_bytes_per_s / 1_048_576.0,
        r.read_1b_bytes_per_s
    );
    match format {
        Format::Csv => crate::report::csv_table(&rows),
        Format::Markdown => format!("{}\n{classic}\n", markdown_table(&rows)),
        _ => format!("{}\n{classic}\n", table(&rows)),
    }
}
