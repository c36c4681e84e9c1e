//! `iolab cache`'s report (residency maps, the page cache's lines from /proc/meminfo).

use super::CacheReport;
use crate::report::{Column, Document, Shown, Table, Value};
use crate::size::format_size;

/// `iolab cache`: each file's residency (and a total), its map with `--map`, the page
/// cache's lines; CSV a row per file.
pub fn cache_document(r: &CacheReport) -> Document {
    let mut data = Table::new([
        Column::new("file"),
        Column::new("size").csv("size_bytes"),
        Column::new("resident pages"),
        Column::new("total pages"),
        Column::new("resident %").csv("resident_pct"),
        Column::new("visible"),
    ]);
    let mut t = Table::titled(&["file", "size", "resident pages", "resident"]);
    for f in &r.files {
        // A residency the kernel hides is never printed as one (it says "all resident").
        let res = f.residency.as_ref();
        data.row(vec![
            Value::text(crate::shown::path(&f.path).into_owned()),
            Value::Bytes(f.size),
            res.map_or(Value::Missing, |r| Value::Count(r.resident_pages)),
            Value::Count(f.pages),
            res.map_or(Value::Missing, |r| Value::Fixed(r.percent(), 2)),
            Value::Flag(f.visible),
        ]);
        let (pages, pct) = match res {
            Some(r) => (
                format!("{}/{}", r.resident_pages, f.pages),
                format!("{:.1}%", r.percent()),
            ),
            None => (format!("?/{}", f.pages), HIDDEN.to_string()),
        };
        t.row(vec![
            Value::text(crate::shown::path(&f.path).into_owned()),
            Value::Bytes(f.size),
            Value::text(pages),
            Value::text(pct),
        ]);
    }
    let seen: Vec<super::FileResidency> = r.files.iter().filter(|f| f.visible).cloned().collect();
    let hidden = r.files.len() - seen.len();
    if r.files.len() > 1 || !r.unreadable.is_empty() {
        let (n, bytes, _, _) = super::total(&r.files);
        // Residency sums only what the kernel shows this user.
        let (_, _, res, pages) = super::total(&seen);
        let mut what = format!("total ({n} files");
        if !r.unreadable.is_empty() {
            what += &format!(", {} unreadable left out", r.unreadable.len());
        }
        if hidden > 0 {
            what += &format!(", {hidden} hidden");
        }
        what.push(')');
        let (res, pct) = if seen.is_empty() && hidden > 0 {
            ("?".to_string(), HIDDEN.to_string())
        } else if pages == 0 {
            (res.to_string(), "100.0%".to_string())
        } else {
            let of_seen = if hidden > 0 { " of those shown" } else { "" };
            (
                res.to_string(),
                format!("{:.1}%{of_seen}", 100.0 * res as f64 / pages as f64),
            )
        };
        t.row(vec![
            Value::text(what),
            Value::Bytes(bytes),
            Value::text(format!("{res}/{pages}")),
            Value::text(pct),
        ]);
    }
    let p = &r.page_cache;
    let bars: String = r
        .files
        .iter()
        .filter_map(|f| {
            let (m, r) = (f.map.as_ref()?, f.residency.as_ref()?);
            Some(format!(
                "{} [{}] {:.1}%\n",
                crate::shown::path(&f.path),
                residency_bar(m),
                r.percent()
            ))
        })
        .collect();
    Document::new()
        .table(data)
        .only(Shown::Data)
        .table(t)
        .lines(bars)
        .para(format!(
            "page cache: Cached {}, Buffers {}, Dirty {}, Writeback {}, Active(file) {}, Inactive(file) {}; MemTotal {}, MemAvailable {}",
            format_size(p.cached),
            format_size(p.buffers),
            format_size(p.dirty),
            format_size(p.writeback),
            format_size(p.active_file),
            format_size(p.inactive_file),
            format_size(p.mem_total),
            format_size(p.mem_available)
        ))
}

/// What a table shows for a residency the kernel hides from this user.
pub const HIDDEN: &str = "hidden (no write access)";

/// One character per slice: `#` all resident, `o` half or more, `.` some, ` ` none.
pub fn residency_bar(map: &[f64]) -> String {
    map.iter()
        .map(|f| match f {
            f if *f >= 0.999 => '#',
            f if *f >= 0.5 => 'o',
            f if *f > 0.0 => '.',
            _ => ' ',
        })
        .collect()
}

/// `iolab cache meminfo`: a row per field, its size and its bytes (CSV: its bytes).
pub fn meminfo_document(p: &crate::cache::meminfo::PageCache) -> Document {
    let mut data = Table::titled(&["field", "bytes"]);
    let mut t = Table::titled(&["field", "size", "bytes"]);
    for (k, v) in [
        ("MemTotal", p.mem_total),
        ("MemAvailable", p.mem_available),
        ("Cached", p.cached),
        ("Buffers", p.buffers),
        ("Dirty", p.dirty),
        ("Writeback", p.writeback),
        ("Active(file)", p.active_file),
        ("Inactive(file)", p.inactive_file),
    ] {
        data.row(vec![Value::text(k), Value::Count(v)]);
        t.row(vec![Value::text(k), Value::Bytes(v), Value::Count(v)]);
    }
    Document::new().table(data).only(Shown::Data).table(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bars_show_slices() {
        assert_eq!(residency_bar(&[1.0, 0.6, 0.1, 0.0]), "#o. ");
    }
}
