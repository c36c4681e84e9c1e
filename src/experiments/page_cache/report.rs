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
    ]);
    let mut t = Table::titled(&["file", "size", "resident pages", "resident"]);
    for f in &r.files {
        data.row(vec![
            Value::text(crate::shown::path(&f.path).into_owned()),
            Value::Bytes(f.size),
            Value::Count(f.residency.resident_pages),
            Value::Count(f.residency.total_pages),
            Value::Fixed(f.residency.percent(), 2),
        ]);
        t.row(vec![
            Value::text(crate::shown::path(&f.path).into_owned()),
            Value::Bytes(f.size),
            Value::text(format!(
                "{}/{}",
                f.residency.resident_pages, f.residency.total_pages
            )),
            Value::text(format!("{:.1}%", f.residency.percent())),
        ]);
    }
    if r.files.len() > 1 || !r.unreadable.is_empty() {
        let (n, bytes, res, pages) = super::total(&r.files);
        let pct = if pages == 0 {
            100.0
        } else {
            100.0 * res as f64 / pages as f64
        };
        let unreadable = if r.unreadable.is_empty() {
            String::new()
        } else {
            format!(", {} unreadable left out", r.unreadable.len())
        };
        t.row(vec![
            Value::text(format!("total ({n} files{unreadable})")),
            Value::Bytes(bytes),
            Value::text(format!("{res}/{pages}")),
            Value::text(format!("{pct:.1}%")),
        ]);
    }
    let p = &r.page_cache;
    let bars: String = r
        .files
        .iter()
        .filter_map(|f| {
            f.map.as_ref().map(|m| {
                format!(
                    "{} [{}] {:.1}%\n",
                    crate::shown::path(&f.path),
                    residency_bar(m),
                    f.residency.percent()
                )
            })
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
