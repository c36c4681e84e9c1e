//! Transfer reports: the classic per-file lines of each side, and the method-pair matrix.

use super::TransferResult;
use crate::report::{Format, json, markdown_table, table};
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

/// One side of a transfer in `format`. Text: `Transmission time: <ms> ms, File size: <bytes>
/// bytes` per file or per run as the course printed it (`%lf`: six decimals), then, with
/// [`Lines::Full`], the totals. With `--pages`, each file's page descriptors come before its
/// line, as the course's dmesg lines did.
pub fn side_report(r: &SideReport, format: Format, lines: Lines) -> String {
    match format {
        Format::Json => return json(r),
        Format::Csv | Format::Markdown => {
            let mut rows = vec![
                ["role", "method", "file", "bytes", "ms", "MiB/s", "blake3"]
                    .map(String::from)
                    .to_vec(),
            ];
            for f in &r.files {
                rows.push(vec![
                    r.role.clone(),
                    f.method.clone(),
                    f.name.clone(),
                    f.bytes.to_string(),
                    format!("{:.6}", f.time.as_secs_f64() * 1000.0),
                    format!("{:.2}", f.mib_s),
                    if f.blake3.is_empty() {
                        if format == Format::Csv { "" } else { "-" }.to_string()
                    } else {
                        f.blake3.clone()
                    },
                ]);
            }
            return crate::report::table_as(format, &rows);
        }
        Format::Text => {}
    }
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
pub fn matrix(r: &TransferResult, format: Format) -> String {
    if format == Format::Json {
        return json(r);
    }
    let mut rows = vec![
        [
            "sender",
            "receiver",
            "time ms",
            "time ms min",
            "time ms max",
            "MiB/s",
            "sender CPU s",
            "receiver CPU s",
        ]
        .map(String::from)
        .to_vec(),
    ];
    for p in &r.pairs {
        rows.push(vec![
            p.sender.name().into(),
            p.receiver.name().into(),
            format!("{:.3}", p.seconds.median * 1000.0),
            format!("{:.3}", p.seconds.min * 1000.0),
            format!("{:.3}", p.seconds.max * 1000.0),
            format!("{:.1}", p.mib_s.median),
            format!("{:.4}", p.sender_cpu_s.median),
            format!("{:.4}", p.receiver_cpu_s.median),
        ]);
    }
    let head = format!(
        "transfer over loopback: {} file(s), {} per run, {} run(s) per pair, {} connection(s), chunk {}, map {}{}\n\n",
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
    );
    match format {
        Format::Csv => crate::report::csv_table(&rows),
        Format::Markdown => format!("{head}{}", markdown_table(&rows)),
        _ => format!("{head}{}", table(&rows)),
    }
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
