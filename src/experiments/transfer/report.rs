//! Transfer reports: the classic per-file lines of each side, and the method-pair matrix.

use super::TransferResult;
use crate::report::{Column, Document, Shown, Table, Value};
use crate::size::{format_size, mib_per_s};
use crate::transfer::SideReport;

/// Which lines a side prints in text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lines {
    /// iolab's: a `Transmission time` line per file and the totals.
    Full,
    /// The 2019 course program's: a `Transmission time` line per file, nothing else.
    ClassicPerFile,
    /// The 2020 course program's: one `Transmission time` line for the run (all files' bytes,
    /// from the first connection to the last file done).
    ClassicRun,
}

/// One side of a transfer. Text: `Transmission time: <ms> ms, File size: <bytes> bytes` per
/// file or per run as the course printed it (`%lf`: six decimals), then, with [`Lines::Full`],
/// the totals; with `--pages`, each file's page descriptors come before its line, as the
/// course's dmesg lines did. CSV and Markdown: a row per file.
pub fn side_document(r: &SideReport, lines: Lines) -> Document {
    let mut t = Table::new([
        Column::new("role"),
        Column::new("method"),
        Column::new("file"),
        Column::new("bytes"),
        Column::new("ms"),
        Column::new("MiB/s"),
        Column::new("blake3"),
    ]);
    for f in &r.files {
        t.row(vec![
            Value::text(&r.role),
            Value::text(&f.method),
            Value::text(&f.name),
            Value::Count(f.bytes),
            Value::Fixed(f.time.as_secs_f64() * 1000.0, 6),
            Value::Fixed(f.mib_s, 2),
            if f.blake3.is_empty() {
                Value::Missing
            } else {
                Value::text(&f.blake3)
            },
        ]);
    }
    Document::new()
        .table(t)
        .only(Shown::Markdown)
        .lines(side_lines(r, lines))
        .only(Shown::Text)
}

/// A side's lines as the terminal shows them.
fn side_lines(r: &SideReport, lines: Lines) -> String {
    let mut out = String::new();
    for f in &r.files {
        for p in &f.pages {
            out.push_str(&p.line());
            out.push('\n');
        }
        if lines != Lines::ClassicRun {
            out.push_str(&transmission_line(f.time, f.bytes));
        }
    }
    match lines {
        Lines::ClassicPerFile => return out,
        Lines::ClassicRun => {
            out.push_str(&transmission_line(r.wall, r.bytes()));
            return out;
        }
        Lines::Full => {}
    }
    let secs = r.wall.as_secs_f64();
    out.push_str(&format!(
        "Total: {} file(s), {} bytes in {:.4} ms over {} connection(s), {:.2} MiB/s ({} {}{}, chunk {}, map {}); CPU {:.3} s user, {:.3} s system\n",
        r.files.len(),
        r.bytes(),
        secs * 1000.0,
        r.connections,
        mib_per_s(r.bytes(), secs),
        r.role,
        r.method,
        if r.raw { ", raw" } else { "" },
        r.sizes.chunk,
        r.sizes
            .map_size
            .map(|m| m.to_string())
            .unwrap_or_else(|| "whole file".into()),
        r.cpu_user.as_secs_f64(),
        r.cpu_sys.as_secs_f64()
    ));
    out
}

/// The course programs' line, in true units: milliseconds (not the course's microseconds x
/// 0.0001) and bytes (not its size / 8).
fn transmission_line(time: std::time::Duration, bytes: u64) -> String {
    format!(
        "Transmission time: {:.6} ms, File size: {bytes} bytes\n",
        time.as_secs_f64() * 1000.0
    )
}

/// The matrix of method pairs.
pub fn matrix(r: &TransferResult) -> Document {
    let mut t = Table::titled(&[
        "sender",
        "receiver",
        "time ms",
        "time ms min",
        "time ms max",
        "MiB/s",
        "sender CPU s",
        "receiver CPU s",
    ]);
    for p in &r.pairs {
        t.row(vec![
            Value::text(p.sender.name()),
            Value::text(p.receiver.name()),
            Value::Fixed(p.seconds.median * 1000.0, 3),
            Value::Fixed(p.seconds.min * 1000.0, 3),
            Value::Fixed(p.seconds.max * 1000.0, 3),
            Value::Fixed(p.mib_s.median, 1),
            Value::Fixed(p.sender_cpu_s.median, 4),
            Value::Fixed(p.receiver_cpu_s.median, 4),
        ]);
    }
    Document::new()
        .para(format!(
            "transfer over loopback: {} file(s), {} per run, {} run(s) per pair, {} connection(s), chunk {}, map {}{}",
            r.config.files.len(),
            format_size(r.bytes),
            // The runs each pair made (the harness's rounds), not the configured count.
            runs_per_pair(r),
            r.config.connections,
            format_size(r.config.sizes.chunk as u64),
            r.config
                .sizes
                .map_size
                .map(|m| format_size(m as u64))
                .unwrap_or_else(|| "whole file".into()),
            if r.config.discard {
                ", receiver discards"
            } else {
                ""
            }
        ))
        .table(t)
}

/// The runs per pair: one figure when all pairs made as many, else the range.
fn runs_per_pair(r: &TransferResult) -> String {
    let n: Vec<usize> = r.pairs.iter().map(|p| p.seconds.n).collect();
    match (n.iter().min(), n.iter().max()) {
        (Some(a), Some(b)) if a != b => format!("{a}-{b}"),
        (Some(a), _) => a.to_string(),
        _ => "0".into(),
    }
}
