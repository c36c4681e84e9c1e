//! `iolab vm` report: a `pmap -x` table per stage with the file's row marked, deltas, the
//! explanation, and page descriptors.

use super::{PageCacheChange, PageInfo, Stage, VmResult};
use crate::report::{Column, Document, Shown, Table, Value};
use crate::size::format_size;

/// A stage's `pmap -x` table, the file's row marked, with totals.
fn stage_table(s: &Stage) -> Table {
    let mut t = Table::titled(&["", "Address", "Kbytes", "RSS", "Dirty", "Mode", "Mapping"]);
    for (i, r) in s.rows.iter().enumerate() {
        t.row(vec![
            Value::text(if Some(i) == s.file_row { "=>" } else { "" }),
            Value::text(format!("{:016x}", r.start)),
            Value::Count(r.size_kb),
            Value::Count(r.rss_kb),
            Value::Count(r.dirty_kb),
            Value::text(&r.perms),
            Value::text(if r.name.is_empty() {
                "[ anon ]"
            } else {
                &r.name
            }),
        ]);
    }
    let (k, rss, d) = s.totals();
    t.row(vec![
        Value::text(""),
        Value::text("total kB"),
        Value::Count(k),
        Value::Count(rss),
        Value::Count(d),
        Value::text(""),
        Value::text(""),
    ]);
    t
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

/// A stage's figures: VmSize, VmRSS, the mapping's RSS and Dirty (kB), minor and major faults.
fn stage_figures(s: &crate::experiments::vm::Stage) -> [Value; 6] {
    [
        Value::Count(s.vm_size_kb),
        Value::Count(s.vm_rss_kb),
        Value::Count(s.map_row().map(|m| m.rss_kb).unwrap_or(0)),
        Value::Count(s.map_row().map(|m| m.dirty_kb).unwrap_or(0)),
        Value::Count(s.delta.minor_faults),
        Value::Count(s.delta.major_faults),
    ]
}

/// One row per stage: the sizes a `pmap -x` summary would show and the faults taken.
pub fn stages_table(r: &VmResult) -> Table {
    let mut t = Table::new([
        Column::new("#").csv("stage"),
        Column::new("stage").csv("name"),
        Column::new("VmSize kB").csv("vm_size_kb"),
        Column::new("VmRSS kB").csv("vm_rss_kb"),
        Column::new("file RSS kB").csv("map_rss_kb"),
        Column::new("file Dirty kB").csv("map_dirty_kb"),
        Column::new("minor faults"),
        Column::new("major faults"),
    ]);
    for (i, s) in r.stages.iter().enumerate() {
        let mut row = vec![Value::Count(i as u64 + 1), Value::text(&s.name)];
        row.extend(stage_figures(s));
        t.row(row);
    }
    t
}

/// `iolab vm`: each stage's `pmap -x` table, what changed and why, its pages; the page cache
/// around reading the file. CSV: a row per stage.
pub fn vm_document(r: &VmResult) -> Document {
    let mut doc = Document::new()
        .table(stages_table(r))
        .only(Shown::Data)
        .heading(format!(
            "vm tour of {} ({}), mapped at 0x{:x}",
            crate::shown::path(&r.path),
            format_size(r.file_size),
            r.map_start
        ));
    for (i, s) in r.stages.iter().enumerate() {
        let d = &s.delta;
        doc = doc
            .fold(format!("stage {}: {}", i + 1, s.name))
            .table(stage_table(s))
            .para(format!(
                "VmSize {} kB ({:+}), VmRSS {} kB ({:+}); file mapping RSS {} kB ({:+}), Dirty {} kB ({:+}); faults minor +{} major +{}",
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
            ))
            .para(format!("-> {}", s.explanation))
            .lines(s.pages.iter().map(page_line).collect::<String>());
    }
    doc.para(
        r.page_note
            .as_ref()
            .map(|n| format!("note: {n}"))
            .unwrap_or_default(),
    )
    .lines(
        r.page_cache
            .as_ref()
            .map(page_cache_lines)
            .unwrap_or_default(),
    )
}

/// Part B's `free -m` lines before, after the reads and after the writes.
pub fn partb_free_table(r: &crate::experiments::partb::PartBResult) -> Table {
    let mut t = Table::titled(&[
        "free -m",
        "total",
        "used",
        "free",
        "shared",
        "buff/cache",
        "available",
    ]);
    for (when, f) in [
        ("before", &r.free_before),
        ("after reads", &r.free_after_reads),
        ("after writes", &r.free_after_writes),
    ] {
        t.row(vec![
            Value::text(format!("Mem: {when}")),
            Value::Count(f.total),
            Value::Count(f.used),
            Value::Count(f.free),
            Value::Count(f.shared),
            Value::Count(f.buff_cache),
            Value::Count(f.available),
        ]);
    }
    t
}

/// `iolab vm --part-b`: the five ways side by side, `free -m` before and after, the explanation.
pub fn partb_document(r: &crate::experiments::partb::PartBResult) -> Document {
    let mut t = Table::titled(&[
        "how",
        "MiB/s",
        "MiB/s min",
        "MiB/s max",
        "calls/run",
        "faults/run",
    ]);
    for c in [
        &r.read,
        &r.mmap_read,
        &r.write_fsync_each,
        &r.mmap_write_msync_end,
        &r.write_fsync_end,
    ] {
        t.row(vec![
            Value::text(&c.name),
            Value::Fixed(c.mib_s.median, 1),
            Value::Fixed(c.mib_s.min, 1),
            Value::Fixed(c.mib_s.max, 1),
            Value::Count(c.syscalls),
            Value::Count(c.faults),
        ]);
    }
    Document::new()
        .heading(format!(
            "Part B: {} ({}), blocks of {}, writes of {}, {} round(s)",
            crate::shown::path(&r.config.path),
            format_size(r.read_len),
            format_size(r.config.bs),
            format_size(r.config.write_len),
            r.config.rounds.repeat,
        ))
        .only(Shown::Text)
        .table(t)
        .table(partb_free_table(r))
        .para(r.explanation.join("\n\n"))
}
