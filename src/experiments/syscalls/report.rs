//! `iolab syscalls` report.

use crate::experiments::syscalls::SyscallsResult;
use crate::report::{Column, Document, Table, Value};

/// `iolab syscalls`: ns per call, and what 1-byte reads amount to.
pub fn syscalls_document(r: &SyscallsResult) -> Document {
    let mut t = Table::new([
        Column::new("call"),
        Column::new("ns/call"),
        Column::new("ns min"),
        Column::new("ns max"),
        Column::new("calls/s"),
        Column::new("what"),
    ]);
    for row in &r.rows {
        match &row.unsupported {
            Some(why) => t.unsupported(vec![Value::text(&row.name)], why),
            None => t.row(vec![
                Value::text(&row.name),
                Value::Fixed(row.ns.median, 1),
                Value::Fixed(row.ns.min, 1),
                Value::Fixed(row.ns.max, 1),
                Value::Fixed(row.calls_per_s, 0),
                Value::text(&row.what),
            ]),
        }
    }
    Document::new().table(t).para(format!(
        "1-byte reads move {:.2} MiB/s ({:.0} B/s): every byte pays a whole system call",
        r.read_1b_bytes_per_s / 1_048_576.0,
        r.read_1b_bytes_per_s
    ))
}
