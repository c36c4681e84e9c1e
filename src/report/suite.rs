//! The suite's report: `results.json`, `report.md`, `plots/*.svg` and a self-contained
//! `report.html` (inline CSS and SVG, no network), rendered from one or several results.

use super::svg::{Bars, Plot, Point, Series, bar_chart, line_plot};
use super::{Format, json};
use crate::experiments::suite::{Outcome, SuiteResult};
use crate::size::format_size;

/// Everything the report directory holds, as bytes to write.
pub struct Rendered {
    pub results_json: String,
    pub markdown: String,
    pub html: String,
    /// `(file name, svg)` for `plots/`.
    pub plots: Vec<(String, String)>,
}

struct Section {
    title: &'static str,
    why: &'static str,
    plot: Option<String>,
    table: Option<String>,
    error: Option<String>,
    seconds: f64,
}

fn section<T>(
    title: &'static str,
    why: &'static str,
    o: &Outcome<T>,
    plot: Option<String>,
    table: impl FnOnce(&T) -> String,
) -> Section {
    Section {
        title,
        why,
        plot: o.result.as_ref().and(plot),
        table: o.result.as_ref().map(table),
        error: o.error.clone(),
        seconds: o.seconds,
    }
}

fn access_plot(r: &SuiteResult) -> Option<String> {
    let a = r.access.result.as_ref()?;
    let mut groups: Vec<String> = Vec::new();
    for row in &a.rows {
        if !groups.contains(&row.method.name().to_string()) {
            groups.push(row.method.name().into());
        }
    }
    let series: Vec<(String, _, _)> = a
        .config
        .caches
        .iter()
        .flat_map(|c| {
            a.config
                .patterns
                .iter()
                .map(move |p| (format!("{} {}", p.name(), c.name()), *p, *c))
        })
        .collect();
    let cell = |g: &str, p, c| {
        a.rows.iter().find(|r| {
            r.method.name() == g && r.pattern == p && r.cache == c && r.unsupported.is_none()
        })
    };
    Some(bar_chart(&Bars {
        title: "4 KiB block reads by method, pattern and cache (p99 latency on top)".into(),
        y_label: "KIOPS (log scale)".into(),
        values: groups
            .iter()
            .map(|g| {
                series
                    .iter()
                    .map(|(_, p, c)| cell(g, *p, *c).map(|r| r.kiops.median))
                    .collect()
            })
            .collect(),
        notes: groups
            .iter()
            .map(|g| {
                series
                    .iter()
                    .map(|(_, p, c)| {
                        cell(g, *p, *c)
                            .map(|r| format!("{:.0}us", r.latency.p99_ns as f64 / 1000.0))
                    })
                    .collect()
            })
            .collect(),
        series: series.iter().map(|s| s.0.clone()).collect(),
        groups,
        log_y: true,
    }))
}

fn write_plot(r: &SuiteResult) -> Option<String> {
    let s = r.sweep_write.result.as_ref()?;
    let bs = s.cells.iter().map(|c| c.bs).max()?;
    let syncs: Vec<String> = s
        .config
        .syncs
        .iter()
        .map(|x| x.name().to_string())
        .collect();
    let methods: Vec<String> = s
        .config
        .write_methods
        .iter()
        .map(|m| m.name().to_string())
        .collect();
    let val = |sync: &str, m: &str| {
        s.cells
            .iter()
            .find(|c| {
                c.bs == bs
                    && c.method == m
                    && c.sync.map(|x| x.name()) == Some(sync)
                    && c.mib_s.n > 0
            })
            .map(|c| c.mib_s.median)
    };
    Some(bar_chart(&Bars {
        title: format!("write throughput by sync mode, {} blocks", format_size(bs)),
        y_label: "MiB/s (log scale)".into(),
        values: syncs
            .iter()
            .map(|y| methods.iter().map(|m| val(y, m)).collect())
            .collect(),
        notes: vec![],
        series: methods,
        groups: syncs,
        log_y: true,
    }))
}

fn transfer_plot(r: &SuiteResult) -> Option<String> {
    let t = r.transfer.result.as_ref()?;
    let series = t
        .pairs
        .iter()
        .map(|p| {
            let mut pts: Vec<Point> = p
                .runs
                .iter()
                .flat_map(|(_, recv)| recv.files.iter())
                .filter(|f| f.bytes > 0)
                .map(|f| {
                    let ms = f.time.as_secs_f64() * 1000.0;
                    Point {
                        x: f.bytes as f64,
                        y: ms,
                        lo: ms,
                        hi: ms,
                    }
                })
                .collect();
            pts.sort_by(|a, b| a.x.total_cmp(&b.x));
            Series {
                name: format!("{}:{}", p.sender.name(), p.receiver.name()),
                points: pts,
            }
        })
        .collect();
    Some(line_plot(&Plot {
        title: "transfer time per file by size and method pair (receiver side)".into(),
        x_label: "file size (bytes, log2 scale)".into(),
        y_label: "ms (log scale)".into(),
        log2_x: true,
        log_y: true,
        series,
    }))
}

fn vm_plot(r: &SuiteResult) -> Option<String> {
    let v = r.vm.result.as_ref()?;
    let pts = |f: &dyn Fn(&crate::experiments::vm::Stage) -> u64| {
        v.stages
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let y = f(s) as f64;
                Point {
                    x: (i + 1) as f64,
                    y,
                    lo: y,
                    hi: y,
                }
            })
            .collect()
    };
    Some(line_plot(&Plot {
        title: "a mapped 10 MiB file, stage by stage".into(),
        x_label: "stage (see the table)".into(),
        y_label: "KiB".into(),
        log2_x: false,
        log_y: false,
        series: vec![
            Series {
                name: "VmSize".into(),
                points: pts(&|s| s.vm_size_kb),
            },
            Series {
                name: "VmRSS".into(),
                points: pts(&|s| s.vm_rss_kb),
            },
            Series {
                name: "file mapping RSS".into(),
                points: pts(&|s| s.map_row().map(|m| m.rss_kb).unwrap_or(0)),
            },
            Series {
                name: "file mapping Dirty".into(),
                points: pts(&|s| s.map_row().map(|m| m.dirty_kb).unwrap_or(0)),
            },
        ],
    }))
}

fn syscalls_plot(r: &SuiteResult) -> Option<String> {
    let s = r.syscalls.result.as_ref()?;
    let rows: Vec<_> = s.rows.iter().filter(|x| x.unsupported.is_none()).collect();
    Some(bar_chart(&Bars {
        title: "cost of one call".into(),
        y_label: "ns per call (log scale)".into(),
        groups: rows.iter().map(|x| x.name.clone()).collect(),
        series: vec!["ns/call".into()],
        values: rows.iter().map(|x| vec![Some(x.ns.median)]).collect(),
        notes: rows
            .iter()
            .map(|x| vec![Some(format!("{:.0}", x.ns.median))])
            .collect(),
        log_y: true,
    }))
}

fn sections(r: &SuiteResult, plots: &mut Vec<(String, String)>) -> Vec<Section> {
    let mut plot = |name: &str, svg: Option<String>| -> Option<String> {
        let svg = svg?;
        plots.push((format!("{name}.svg"), svg));
        Some(name.to_string())
    };
    let t = Format::Text;
    vec![
        section(
            "run: the classic program",
            "Reads the whole file in 1 MiB blocks with read(2), then writes a file, timed from open to close as the course program did. The cache is as it is, so the read measures whatever the page cache held.",
            &r.run_read,
            None,
            super::classic::run_lines,
        ),
        section(
            "run -w",
            "Writes 1 MiB blocks with write(2) and no sync: the time is copying into the page cache, not reaching the device.",
            &r.run_write,
            None,
            super::classic::run_lines,
        ),
        section(
            "run2: a 5-15 s read",
            "Doubles the block count until one read lands in the window. A file that is read whole faster than that gets the size that would take the window, predicted from the measured rate.",
            &r.run2,
            None,
            super::classic::run2_lines,
        ),
        section(
            "fast, warm",
            "The whole file's XOR as fast as iolab can, with the page cache full. Using the bytes where they are (mmap) avoids one copy per byte.",
            &r.fast_warm,
            None,
            super::classic::fast_talk,
        ),
        section(
            "fast, cold",
            "The same after evicting the file: the device and readahead set the pace. Several threads faulting their own parts keep more reads in flight.",
            &r.fast_cold,
            None,
            super::classic::fast_talk,
        ),
        section(
            "sweep: read throughput vs block size",
            "Small blocks pay one system call each (read) or one fault per folio (mmap); large blocks amortise them. Cold, the device and readahead dominate and the methods converge.",
            &r.sweep_read,
            plot(
                "sweep-read",
                r.sweep_read.result.as_ref().map(super::sweep::sweep_plot),
            ),
            |x| super::sweep::sweep_report(x, t),
        ),
        section(
            "sweep: writes and durability",
            "Without sync a write only dirties the page cache; fsync per block waits for the device every time. Mappings write back through msync.",
            &r.sweep_write,
            plot("sweep-write", write_plot(r)),
            |x| super::sweep::sweep_report(x, t),
        ),
        section(
            "access: sequential vs random 4 KiB",
            "Random access defeats readahead, so cold random reads wait for the device on every block; warm, mmap skips the system call and the copy. Faults per op show fault-around and large folios, device bytes per byte show readahead waste.",
            &r.access,
            plot("access", access_plot(r)),
            |x| super::access::access_report(x, t),
        ),
        section(
            "system calls",
            "Every read pays a kernel entry and exit, far more than the vDSO clock; a minor fault costs more than a read of a cached page.",
            &r.syscalls,
            plot("syscalls", syscalls_plot(r)),
            |x| super::syscalls::syscalls_report(x, t),
        ),
        section(
            "vm: a mapped file, stage by stage",
            "mmap reserves address space (VmSize) without memory; touches fault pages in many at a time (fault-around, large folios), and writes make them dirty until msync.",
            &r.vm,
            plot("vm", vm_plot(r)),
            |x| super::vm::vm_report(x, t),
        ),
        section(
            "transfer: the classic files over loopback",
            "Each pair moves the same files sender to receiver; the receiver stores them, so the file system's write path is part of the cost. splice and sendfile avoid copies through user space.",
            &r.transfer,
            plot("transfer", transfer_plot(r)),
            |x| super::transfer::matrix(x, t),
        ),
    ]
}

fn host_line(r: &SuiteResult) -> String {
    let h = &r.host;
    format!(
        "{}; {} x {}; {} RAM; {} on {}; iolab {}",
        h.kernel,
        h.cores,
        h.cpu_model,
        format_size(h.memory_bytes),
        h.filesystem.as_deref().unwrap_or("?"),
        h.device.as_deref().unwrap_or("?"),
        h.iolab_version
    )
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Findings of several hosts side by side (one column each), keyed by finding.
fn comparison(results: &[SuiteResult]) -> Vec<Vec<String>> {
    let mut keys: Vec<String> = Vec::new();
    for r in results {
        for f in &r.findings {
            if !keys.contains(&f.key) {
                keys.push(f.key.clone());
            }
        }
    }
    let mut rows = vec![
        std::iter::once("finding".to_string())
            .chain(
                results
                    .iter()
                    .enumerate()
                    .map(|(i, r)| format!("host {}: {}", i + 1, r.host.cpu_model)),
            )
            .collect(),
    ];
    for k in keys {
        let mut row = vec![k.clone()];
        for r in results {
            row.push(
                r.findings
                    .iter()
                    .find(|f| f.key == k)
                    .map(|f| f.text.clone())
                    .unwrap_or_else(|| "-".into()),
            );
        }
        rows.push(row);
    }
    rows
}

pub fn render(results: &[SuiteResult]) -> Rendered {
    let r = &results[0];
    let mut plots = Vec::new();
    let secs = sections(r, &mut plots);
    // Markdown
    let mut md = format!(
        "# iolab report\n\nHost: {}\n\nData: {} random file, {} classic transfer files ({}). Suite ran {:.1} s{}.\n\n## Findings\n\n",
        host_line(r),
        format_size(r.data.random_size),
        r.data.classic_files.len(),
        format_size(r.data.classic_bytes),
        r.seconds,
        if r.config.quick { " (--quick)" } else { "" }
    );
    for f in &r.findings {
        md.push_str(&format!("- {} _(from {})_\n", f.text, f.cites.join("; ")));
    }
    if results.len() > 1 {
        md.push_str("\n## Hosts side by side\n\n");
        md.push_str(&super::markdown_table(&comparison(results)));
    }
    for s in &secs {
        md.push_str(&format!("\n## {}\n\n{}\n\n", s.title, s.why));
        if let Some(p) = &s.plot {
            md.push_str(&format!("![{}](plots/{p}.svg)\n\n", s.title));
        }
        if let Some(t) = &s.table {
            md.push_str(&format!("```text\n{}```\n", t));
        }
        if let Some(e) = &s.error {
            md.push_str(&format!("**Not measured:** {e}\n"));
        }
    }
    // HTML
    let mut html = String::from(concat!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">",
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>iolab report</title><style>",
        "body{font-family:system-ui,sans-serif;max-width:60rem;margin:0 auto;padding:1rem;line-height:1.45;color:#111}",
        "h1{font-size:1.6rem}h2{font-size:1.25rem;border-bottom:1px solid #ccc;margin-top:2rem}",
        "pre{overflow-x:auto;background:#f6f6f6;padding:.6rem;font-size:.75rem;border:1px solid #ddd}",
        "svg{max-width:100%;height:auto;display:block;margin:.5rem 0}.cite{color:#555;font-size:.85em}",
        ".err{color:#a00}table{border-collapse:collapse;font-size:.85rem}td,th{border:1px solid #ccc;padding:.2rem .4rem;vertical-align:top}",
        "@media print{pre{white-space:pre-wrap}h2{break-after:avoid}figure{break-inside:avoid}}",
        "</style></head><body>"
    ));
    html.push_str(&format!("<h1>iolab report</h1><p><b>Host:</b> {}</p><p><b>Data:</b> {} random file, {} classic transfer files ({}); suite ran {:.1} s{}.</p>",
        esc(&host_line(r)), format_size(r.data.random_size), r.data.classic_files.len(), format_size(r.data.classic_bytes), r.seconds, if r.config.quick { " (--quick)" } else { "" }));
    html.push_str("<h2 id=\"findings\">Findings</h2><ul>");
    for f in &r.findings {
        html.push_str(&format!(
            "<li>{} <span class=\"cite\">(from {})</span></li>",
            esc(&f.text),
            esc(&f.cites.join("; "))
        ));
    }
    html.push_str("</ul>");
    if results.len() > 1 {
        html.push_str("<h2>Hosts side by side</h2><table>");
        for (i, row) in comparison(results).iter().enumerate() {
            let tag = if i == 0 { "th" } else { "td" };
            html.push_str("<tr>");
            for c in row {
                html.push_str(&format!("<{tag}>{}</{tag}>", esc(c)));
            }
            html.push_str("</tr>");
        }
        html.push_str("</table>");
    }
    for s in &secs {
        html.push_str(&format!(
            "<section><h2>{}</h2><p>{}</p>",
            esc(s.title),
            esc(s.why)
        ));
        if let Some(p) = &s.plot
            && let Some((_, svg)) = plots.iter().find(|(n, _)| n == &format!("{p}.svg"))
        {
            html.push_str(&format!("<figure class=\"plot\">{svg}</figure>"));
        }
        if let Some(t) = &s.table {
            html.push_str(&format!("<pre>{}</pre>", esc(t)));
        }
        if let Some(e) = &s.error {
            html.push_str(&format!(
                "<p class=\"err\"><b>Not measured:</b> {}</p>",
                esc(e)
            ));
        }
        html.push_str(&format!(
            "<p class=\"cite\">{:.1} s</p></section>",
            s.seconds
        ));
    }
    html.push_str("</body></html>\n");
    let results_json = if results.len() == 1 {
        json(r)
    } else {
        json(&results.to_vec())
    };
    Rendered {
        results_json,
        markdown: md,
        html,
        plots,
    }
}

/// Reads a results.json: one suite result, or a list of them.
pub fn load(path: &std::path::Path) -> crate::error::Result<Vec<SuiteResult>> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| crate::error::Error::io("cannot read", path, &e))?;
    serde_json::from_str::<SuiteResult>(&text)
        .map(|r| vec![r])
        .or_else(|_| serde_json::from_str::<Vec<SuiteResult>>(&text))
        .map_err(|e| {
            crate::error::Error::usage("not an iolab suite result", e.to_string())
                .at(path)
                .hint("give the results.json that `iolab suite` wrote")
        })
}
