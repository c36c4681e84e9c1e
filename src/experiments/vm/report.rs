//! `iolab vm` report: a `pmap -x` table per stage with the file's row marked, deltas, the
//! explanation, and page descriptors.

use super::{PageCacheChange, PageInfo, Stage, VmResult};
use crate::report::{Format, csv_line, json, markdown_table, table};
use crate::size::format_size;

fn stage_rows(s: &Stage) -> Vec<Vec<String>> {
    let mut rows = vec![
        ["", "Address", "Kbytes", "RSS", "Dirty", "Mode", "Mapping"]
            .map(String::from)
            .to_vec(),
    ];
    for (i, r) in s.rows.iter().enumerate() {
        rows.push(vec![
            if Some(i) == s.file_row {
                "=>".into()
            } else {
                String::new()
            },
            format!("{:016x}", r.start),
            r.size_kb.to_string(),
            r.rss_kb.to_string(),
            r.dirty_kb.to_string(),
            r.perms.clone(),
            if r.name.is_empty() {
                "[ anon ]".into()
            } else {
                r.name.clone()
            },
        ]);
    }
    let (k, rss, d) = s.totals();
    rows.push(vec![
        String::new(),
        "total kB".into(),
        k.to_string(),
        rss.to_string(),
        d.to_string(),
        String::new(),
        String::new(),
    ]);
    rows
}

fn page_line(p: &PageInfo) -> String {
    let e = &p.entry;
    let mut bits = Vec::new();
    for (on, name) in [
        (e.present, "present"),
        (e.swapped, "swapped"),
        (e.file_or_shared, "file/shared"),
        (e.exclusive, "exclusive"),
        (e.soft_dirty, "soft-dirty"),
    ] {
        if on {
            bits.push(name);
        }
    }
    if bits.is_empty() {
        bits.push("not present");
    }
    let pfn = if e.pfn != 0 {
        format!(" pfn 0x{:x}", e.pfn)
    } else {
        String::new()
    };
    let flags = p
        .flags
        .as_ref()
        .map(|f| format!(" flags {}", f.join(" ")))
        .unwrap_or_default();
    format!(
        "  page at offset {}: {}{pfn}{flags}\n",
        p.offset,
        bits.join(", ")
    )
}

fn page_cache_lines(p: &PageCacheChange) -> String {
    let delta = p.after.cached as i64 - p.before.cached as i64;
    format!(
        "page cache around reading the whole file (evicted first):\n  Cached {} -> {} ({:+} KiB; the file is {} KiB: {:.0}% of it)\n  Buffers {} -> {}, Dirty {} -> {}, Writeback {} -> {}, Active(file) {} -> {}, Inactive(file) {} -> {}\n",
        format_size(p.before.cached),
        format_size(p.after.cached),
        delta / 1024,
        p.file_size / 1024,
        100.0 * delta as f64 / p.file_size.max(1) as f64,
        format_size(p.before.buffers),
        format_size(p.after.buffers),
        format_size(p.before.dirty),
        format_size(p.after.dirty),
        format_size(p.before.writeback),
        format_size(p.after.writeback),
        format_size(p.before.active_file),
        format_size(p.after.active_file),
        format_size(p.before.inactive_file),
        format_size(p.after.inactive_file),
    )
}

/// A stage's figures, as its table row and its CSV line show them: VmSize, VmRSS, the mapping's
/// RSS and Dirty (kB), minor and major faults.
fn stage_figures(s: &crate::experiments::vm::Stage) -> [String; 6] {
    [
        s.vm_size_kb.to_string(),
        s.vm_rss_kb.to_string(),
        s.map_row().map(|m| m.rss_kb).unwrap_or(0).to_string(),
        s.map_row().map(|m| m.dirty_kb).unwrap_or(0).to_string(),
        s.delta.minor_faults.to_string(),
        s.delta.major_faults.to_string(),
    ]
}

/// One row per stage: the sizes a `pmap -x` summary would show and the faults taken.
pub fn stages_rows(r: &VmResult) -> Vec<Vec<String>> {
    let mut rows = vec![
        [
            "stage",
            "VmSize kB",
            "VmRSS kB",
            "file RSS kB",
            "file Dirty kB",
            "minor faults",
            "major faults",
        ]
        .map(String::from)
        .to_vec(),
    ];
    for (i, s) in r.stages.iter().enumerate() {
        let mut row = vec![format!("{} {}", i + 1, s.name)];
        row.extend(stage_figures(s));
        rows.push(row);
    }
    rows
}

/// `iolab vm` in `format`.
pub fn vm_report(r: &VmResult, format: Format) -> String {
    match format {
        Format::Json => return json(r),
        Format::Csv => return stages_csv(r),
        _ => {}
    }
    let mut out = format!(
        "vm tour of {} ({}), mapped at 0x{:x}\n",
        r.path.display(),
        format_size(r.file_size),
        r.map_start
    );
    for (i, s) in r.stages.iter().enumerate() {
        out.push_str(&format!("\n== stage {}: {}\n", i + 1, s.name));
        out.push_str(&match format {
            Format::Markdown => markdown_table(&stage_rows(s)),
            _ => table(&stage_rows(s)),
        });
        let d = &s.delta;
        out.push_str(&format!(
            "VmSize {} kB ({:+}), VmRSS {} kB ({:+}); file mapping RSS {} kB ({:+}), Dirty {} kB ({:+}); faults minor +{} major +{}\n",
            s.vm_size_kb,
            d.vm_size_kb,
            s.vm_rss_kb,
            d.vm_rss_kb,
            s.map_row().map(|m| m.rss_kb).unwrap_or(0),
            d.map_rss_kb,
            s.map_row().map(|m| m.dirty_kb).unwrap_or(0),
            d.map_dirty_kb,
            d.minor_faults,
            d.major_faults
        ));
        out.push_str(&format!("-> {}\n", s.explanation));
        for p in &s.pages {
            out.push_str(&page_line(p));
        }
    }
    if let Some(n) = &r.page_note {
        out.push_str(&format!("\nnote: {n}\n"));
    }
    if let Some(p) = &r.page_cache {
        out.push('\n');
        out.push_str(&page_cache_lines(p));
    }
    out
}

/// One CSV row per stage: the sizes and their changes.
fn stages_csv(r: &VmResult) -> String {
    let mut out = csv_line(
        &[
            "stage",
            "name",
            "vm_size_kb",
            "vm_rss_kb",
            "map_rss_kb",
            "map_dirty_kb",
            "minor_faults",
            "major_faults",
        ]
        .map(String::from),
    );
    for (i, s) in r.stages.iter().enumerate() {
        let mut row = vec![(i + 1).to_string(), s.name.clone()];
        row.extend(stage_figures(s));
        out.push_str(&csv_line(&row));
    }
    out
}

/// Part B's `free -m` lines before, after the reads and after the writes.
pub fn partb_free_rows(r: &crate::experiments::partb::PartBResult) -> Vec<Vec<String>> {
    let mut free = vec![
        [
            "free -m",
            "total",
            "used",
            "free",
            "shared",
            "buff/cache",
            "available",
        ]
        .map(String::from)
        .to_vec(),
    ];
    for (when, f) in [
        ("before", &r.free_before),
        ("after reads", &r.free_after_reads),
        ("after writes", &r.free_after_writes),
    ] {
        free.push(vec![
            format!("Mem: {when}"),
            f.total.to_string(),
            f.used.to_string(),
            f.free.to_string(),
            f.shared.to_string(),
            f.buff_cache.to_string(),
            f.available.to_string(),
        ]);
    }
    free
}

/// `iolab vm --part-b`: the five ways side by side, `free -m` before and after, the explanation.
pub fn partb_report(r: &crate::experiments::partb::PartBResult, format: Format) -> String {
    if format == Format::Json {
        return json(r);
    }
    let mut rows = vec![
        [
            "how",
            "MiB/s",
            "MiB/s min",
            "MiB/s max",
            "calls/run",
            "faults/run",
        ]
        .map(String::from)
        .to_vec(),
    ];
    for c in [
        &r.read,
        &r.mmap_read,
        &r.write_fsync_each,
        &r.mmap_write_msync_end,
        &r.write_fsync_end,
    ] {
        rows.push(vec![
            c.name.clone(),
            format!("{:.1}", c.mib_s.median),
            format!("{:.1}", c.mib_s.min),
            format!("{:.1}", c.mib_s.max),
            c.syscalls.to_string(),
            c.faults.to_string(),
        ]);
    }
    let free = partb_free_rows(r);
    match format {
        Format::Csv => crate::report::csv_table(&rows),
        Format::Markdown => format!(
            "{}\n{}\n{}\n",
            markdown_table(&rows),
            markdown_table(&free),
            r.explanation.join("\n\n")
        ),
        _ => format!(
            "Part B: {} ({}), blocks of {}, writes of {}, {} round(s)\n\n{}\n{}\n{}\n",
            r.config.path.display(),
            format_size(r.read_len),
            format_size(r.config.bs),
            format_size(r.config.write_len),
            r.config.rounds.repeat,
            table(&rows),
            table(&free),
            r.explanation.join("\n")
        ),
    }
}
