//! The classic programs' output lines, and the cache report.

use super::{Format, json, markdown_table, table};
use crate::experiments::cache_cmd::CacheReport;
use crate::experiments::classic::{ClassicResult, Op};
use crate::experiments::fast::FastResult;
use crate::size::{format_size, mib_per_s};
use crate::xor::format_xor;

/// `iolab run` output, as the course program printed it.
pub fn run_lines(r: &ClassicResult) -> String {
    let secs = r.seconds();
    let verb = match r.op {
        Op::Read => "read",
        Op::Write => "written",
    };
    let mut out = format!(
        "Number of blocks {verb}: {}\nSize {verb}: {:.2} MiB\nTime taken: {:.6} seconds\nRate: {:.2} MiB/s\n",
        r.blocks,
        r.bytes as f64 / 1_048_576.0,
        secs,
        mib_per_s(r.bytes, secs)
    );
    if r.op == Op::Read {
        out.push_str(&format!("Xor value is {}\n", format_xor(r.xor)));
    }
    out
}

/// `iolab fast`'s line on stderr: what it chose and how fast it went.
pub fn fast_talk(r: &FastResult) -> String {
    let secs = r.counters.wall.as_secs_f64();
    format!(
        "iolab fast: {} with {} thread(s), bs {}: {} in {:.4} s, {:.1} MiB/s; cache {:.0}% resident at open ({})",
        r.choice.method.name(),
        r.choice.threads,
        format_size(r.choice.bs),
        format_size(r.bytes),
        secs,
        mib_per_s(r.bytes, secs),
        r.resident * 100.0,
        r.choice.reason
    )
}

/// `iolab cache` output.
pub fn cache_report(r: &CacheReport, format: Format) -> String {
    if format == Format::Json {
        return json(r);
    }
    let mut rows = vec![vec![
        "file".to_string(),
        "size".into(),
        "resident pages".into(),
        "resident".into(),
    ]];
    for f in &r.files {
        rows.push(vec![
            f.path.display().to_string(),
            format_size(f.size),
            format!("{}/{}", f.residency.resident_pages, f.residency.total_pages),
            format!("{:.1}%", f.residency.percent()),
        ]);
    }
    let p = &r.page_cache;
    let pc = format!(
        "page cache: Cached {}, Buffers {}, Dirty {}, Writeback {}, Active(file) {}, Inactive(file) {}; MemTotal {}, MemAvailable {}",
        format_size(p.cached),
        format_size(p.buffers),
        format_size(p.dirty),
        format_size(p.writeback),
        format_size(p.active_file),
        format_size(p.inactive_file),
        format_size(p.mem_total),
        format_size(p.mem_available)
    );
    match format {
        Format::Csv => {
            let mut out = super::csv_line(
                &[
                    "file",
                    "size",
                    "resident_pages",
                    "total_pages",
                    "resident_pct",
                ]
                .map(String::from),
            );
            for f in &r.files {
                out.push_str(&super::csv_line(&[
                    f.path.display().to_string(),
                    f.size.to_string(),
                    f.residency.resident_pages.to_string(),
                    f.residency.total_pages.to_string(),
                    format!("{:.2}", f.residency.percent()),
                ]));
            }
            out
        }
        Format::Markdown => format!("{}\n{pc}\n", markdown_table(&rows)),
        _ => format!("{}{pc}\n", table(&rows)),
    }
}
