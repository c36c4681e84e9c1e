//! `iolab trace`'s profile as text and Markdown: a summary, the files table, the calls table.

use super::{Format, markdown_table, table};
use crate::size::format_size;
use crate::trace::profile::{FileProfile, Profile};

fn pct(x: f64) -> String {
    format!("{:.0}%", 100.0 * x)
}

fn opt_size(x: Option<u64>) -> String {
    x.map_or("hidden".to_string(), format_size)
}

fn ms(ns: u64) -> String {
    format!("{:.1}", ns as f64 / 1e6)
}

/// The summary lines.
pub fn summary(p: &Profile) -> Vec<String> {
    let mut l = Vec::new();
    let how = match (p.ended.code, p.ended.signal) {
        (Some(c), _) => format!("exit code {c}"),
        (None, Some(s)) => format!("killed by signal {s}"),
        _ => "end unknown".into(),
    };
    l.push(format!(
        "{}: {:.3} s traced, {how}{}; {} process(es), {} thread(s), stopped {} times for the tracer",
        p.command.join(" "),
        p.wall_s,
        if p.interrupted { ", interrupted" } else { "" },
        p.processes,
        p.threads,
        p.stops
    ));
    l.push(format!(
        "reads: {} calls, {} returned ({} from regular files); writes: {} calls, {}",
        p.reads.calls,
        format_size(p.reads.bytes),
        format_size(p.file_reads.bytes),
        p.writes.calls,
        format_size(p.writes.bytes)
    ));
    match p.rchar_agreement {
        Some(a) => l.push(format!(
            "kernel's count (/proc io, {} threads): rchar {} = traced reads {} + exec headers {} {:+.3}%; from storage {}, to storage {}",
            p.kernel.threads,
            format_size(p.kernel.rchar),
            format_size(p.reads.bytes),
            format_size(p.kernel.exec_rchar),
            100.0 * (a - 1.0),
            format_size(p.kernel.read_bytes),
            format_size(p.kernel.write_bytes)
        )),
        None => l.push("kernel's count: not read (no thread's /proc io was readable)".into()),
    }
    if let Some(d) = p.device_agreement {
        l.push(format!(
            "from storage {}; brought into the cache by the run {}: {} of file pages + {} of file-system metadata ({:+.1}%; {})",
            format_size(p.kernel.read_bytes),
            format_size(p.cache_growth + p.metadata_growth),
            format_size(p.cache_growth),
            format_size(p.metadata_growth),
            100.0 * (d - 1.0),
            match p.shrunk_files {
                0 => "evictions during the run and other programs' metadata reads make a difference".to_string(),
                n => format!("{n} file(s) held fewer cached pages after the run than before, or none once read: pages were evicted during it, and what was read and evicted is missed"),
            }
        ));
    }
    l.push(format!(
        "time in traced calls: {} of the wall time (tracer-side, so each call includes ~2 stops){}",
        pct(p.io_share),
        p.device_per_unique
            .map(|d| format!("; storage bytes per unique file byte read: {d:.2}"))
            .unwrap_or_default()
    ));
    if let Some(why) = &p.faults_unavailable {
        l.push(format!(
            "page faults: not sampled ({why}); mapped access shows only as mmap calls"
        ));
    } else {
        l.push(format!(
            "page faults on file mappings: {}{}",
            p.faults,
            if p.faults_lost > 0 {
                format!(" ({} lost)", p.faults_lost)
            } else {
                String::new()
            }
        ));
    }
    if !p.request_sizes.is_empty() {
        let sizes: Vec<String> = p
            .request_sizes
            .iter()
            .map(|(s, n)| format!("{}:{n}", format_size(*s)))
            .collect();
        l.push(format!(
            "file read sizes (asked, up to): {}",
            sizes.join(" ")
        ));
    }
    for n in &p.notes {
        l.push(format!("note: {n}"));
    }
    l
}

/// The files table (regular files, most bytes first; at most `limit` rows).
pub fn file_rows(files: &[FileProfile], limit: usize) -> Vec<Vec<String>> {
    let mut rows = vec![
        [
            "file",
            "size",
            "reads",
            "read",
            "unique",
            "re-read",
            "seq",
            "typical",
            "res before",
            "res after",
            "faults",
            "writes",
            "xor",
        ]
        .map(String::from)
        .to_vec(),
    ];
    for f in files.iter().take(limit) {
        rows.push(vec![
            f.path.clone(),
            format_size(f.size),
            f.reads.calls.to_string(),
            format_size(f.reads.bytes),
            format_size(f.unique),
            pct(f.reread),
            pct(f.sequential),
            if f.typical_request > 0 {
                format_size(f.typical_request)
            } else {
                "-".into()
            },
            opt_size(f.resident_before),
            opt_size(f.resident_after),
            if f.mapped || f.faults > 0 {
                format!("{} ({} pages)", f.faults, f.fault_pages)
            } else {
                "-".into()
            },
            format_size(f.writes.bytes),
            f.xor.clone().unwrap_or_else(|| "-".into()),
        ]);
    }
    rows
}

/// The calls table.
pub fn call_rows(p: &Profile) -> Vec<Vec<String>> {
    let mut rows = vec![
        ["call", "calls", "errors", "bytes", "ms", "us/call"]
            .map(String::from)
            .to_vec(),
    ];
    for c in &p.calls {
        rows.push(vec![
            c.call.clone(),
            c.calls.to_string(),
            c.errors.to_string(),
            format_size(c.bytes),
            ms(c.time_ns),
            format!("{:.1}", c.time_ns as f64 / 1e3 / c.calls.max(1) as f64),
        ]);
    }
    rows
}

/// The whole profile in `format` (JSON is the caller's: the typed profile).
pub fn render(p: &Profile, format: Format, limit: usize) -> String {
    let (used, idle): (Vec<FileProfile>, Vec<FileProfile>) = p
        .files
        .iter()
        .cloned()
        .partition(|f| f.reads.calls > 0 || f.writes.calls > 0 || f.faults > 0);
    let files = file_rows(&used, limit);
    let calls = call_rows(p);
    let more = used.len().saturating_sub(limit);
    let mut more_line = if more > 0 {
        format!("... and {more} more file(s) read or written (--files N shows more)\n")
    } else {
        String::new()
    };
    if !idle.is_empty() {
        more_line.push_str(&format!(
            "{} more file(s) opened or mapped, never read, written or faulted on\n",
            idle.len()
        ));
    }
    let code = if p.code_files.is_empty() {
        String::new()
    } else {
        let faults: u64 = p.code_files.iter().map(|f| f.faults).sum();
        format!(
            "code: {} program/library file(s) mapped executable, {faults} page faults on them\n",
            p.code_files.len()
        )
    };
    match format {
        Format::Markdown => {
            let mut s = String::new();
            for l in summary(p) {
                s.push_str(&format!("- {l}\n"));
            }
            s.push('\n');
            s.push_str(&markdown_table(&files));
            s.push_str(&more_line);
            s.push_str(&code);
            s.push('\n');
            s.push_str(&markdown_table(&calls));
            s
        }
        _ => {
            let mut s = summary(p).join("\n");
            s.push_str("\n\n");
            s.push_str(&table(&files));
            s.push_str(&more_line);
            s.push_str(&code);
            s.push('\n');
            s.push_str(&table(&calls));
            s
        }
    }
}
