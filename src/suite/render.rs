//! The suite's report: `results.json`, `report.md`, `plots/*.svg` and a self-contained
//! `report.html` (inline CSS and SVG, no network), rendered from one or several results; each
//! experiment's section comes from its registry entry.

use super::entry::{Experiment, Section, SuiteResult};
use crate::report::escape_html as esc;
use crate::report::json;
use crate::size::format_size;

/// Everything the report directory holds, as bytes to write.
pub struct Rendered {
    /// results.json.
    pub results_json: String,
    /// report.md.
    pub markdown: String,
    /// report.html.
    pub html: String,
    /// `(file name, svg)` for `plots/`.
    pub plots: Vec<(String, String)>,
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

/// Renders one report from `results` (several: hosts side by side), a section per experiment of
/// `registry` that has an outcome.
pub fn render(results: &[SuiteResult], registry: &[&dyn Experiment]) -> Rendered {
    let r = &results[0];
    let mut plots = Vec::new();
    let secs: Vec<Section> = registry
        .iter()
        .filter_map(|e| r.outcome(e.name()).map(|o| e.section(o, &mut plots)))
        .collect();
    // Markdown: a busy machine is said first.
    let warning = r.interference.warning();
    let mut md = warning
        .as_ref()
        .map(|w| format!("{w}\n\n"))
        .unwrap_or_default();
    md += &format!(
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
        md.push_str(&crate::report::markdown_table(&comparison(results)));
    }
    for s in &secs {
        md.push_str(&format!("\n## {}\n\n{}\n\n", s.title, s.why));
        if let Some(b) = &s.busy {
            md.push_str(&format!("**Busy while measured:** {b}.\n\n"));
        }
        if let Some(p) = &s.plot {
            md.push_str(&format!("![{}](plots/{p}.svg)\n\n", s.title));
        }
        if let Some(t) = &s.table {
            md.push_str(&fenced(t));
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
        ".err,.warn{color:#a00}table{border-collapse:collapse;font-size:.85rem}td,th{border:1px solid #ccc;padding:.2rem .4rem;vertical-align:top}",
        "@media print{pre{white-space:pre-wrap}h2{break-after:avoid}figure{break-inside:avoid}}",
        "</style></head><body>"
    ));
    if let Some(w) = &warning {
        html.push_str(&format!("<p class=\"warn\"><b>{}</b></p>", esc(w)));
    }
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
        if let Some(b) = &s.busy {
            html.push_str(&format!(
                "<p class=\"warn\"><b>Busy while measured:</b> {}.</p>",
                esc(b)
            ));
        }
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

/// `text` as a CommonMark fenced code block: the fence on lines of its own (a table without a
/// final newline once ended the fence on its last line, and everything after rendered as code),
/// and longer than any run of backticks inside.
pub(crate) fn fenced(text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    let nl = if text.ends_with('\n') { "" } else { "\n" };
    format!("{fence}text\n{text}{nl}{fence}\n\n")
}

#[cfg(test)]
mod tests {
    use super::fenced;

    #[test]
    fn fences_close_on_their_own_line_and_outlast_backticks_inside() {
        assert_eq!(fenced("a\nb"), "```text\na\nb\n```\n\n");
        assert_eq!(fenced("a\n"), "```text\na\n```\n\n");
        let f = fenced("x ``` y\n");
        assert!(
            f.starts_with("````text\n") && f.ends_with("\n````\n\n"),
            "{f}"
        );
    }
}
