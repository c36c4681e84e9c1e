//! `iolab cache`'s report (residency maps, the page cache's lines from /proc/meminfo).

use super::CacheReport;
use crate::report::{Format, json, markdown_table, table};
use crate::size::format_size;

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
        rows.push(vec![
            format!("total ({n} files{unreadable})"),
            format_size(bytes),
            format!("{res}/{pages}"),
            format!("{pct:.1}%"),
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
    let bars: String = r
        .files
        .iter()
        .filter_map(|f| {
            f.map.as_ref().map(|m| {
                format!(
                    "{} [{}] {:.1}%\n",
                    f.path.display(),
                    residency_bar(m),
                    f.residency.percent()
                )
            })
        })
        .collect();
    let pc = if bars.is_empty() {
        pc
    } else {
        format!("{bars}{pc}")
    };
    match format {
        Format::Csv => {
            let mut out = crate::report::csv_line(
                &[
                    "file",
                    "size_bytes",
                    "resident_pages",
                    "total_pages",
                    "resident_pct",
                ]
                .map(String::from),
            );
            for f in &r.files {
                out.push_str(&crate::report::csv_line(&[
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

/// `iolab cache meminfo`.
pub fn meminfo_report(p: &crate::cache::meminfo::PageCache, format: Format) -> String {
    let rows: Vec<(&str, u64)> = vec![
        ("MemTotal", p.mem_total),
        ("MemAvailable", p.mem_available),
        ("Cached", p.cached),
        ("Buffers", p.buffers),
        ("Dirty", p.dirty),
        ("Writeback", p.writeback),
        ("Active(file)", p.active_file),
        ("Inactive(file)", p.inactive_file),
    ];
    match format {
        Format::Json => json(p),
        Format::Csv => {
            let mut out = crate::report::csv_line(&["field".to_string(), "bytes".into()]);
            for (k, v) in rows {
                out.push_str(&crate::report::csv_line(&[k.to_string(), v.to_string()]));
            }
            out
        }
        _ => {
            let mut t = vec![vec!["field".to_string(), "size".into(), "bytes".into()]];
            t.extend(
                rows.iter()
                    .map(|(k, v)| vec![k.to_string(), format_size(*v), v.to_string()]),
            );
            if format == Format::Markdown {
                markdown_table(&t)
            } else {
                table(&t)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bars_show_slices() {
        assert_eq!(residency_bar(&[1.0, 0.6, 0.1, 0.0]), "#o. ");
    }
}
