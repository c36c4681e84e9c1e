//! The suite's report: `results.json`, `report.md`, `plots/*.svg` and a self-contained
//! `report.html` (inline CSS and SVG, no network), rendered from one or several results; each
//! experiment's section comes from its registry entry.

use super::entry::{Experiment, Section, SuiteResult};
use super::findings::Finding;
use crate::measure::decide::Decided;
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

/// The host block: one fact per row.
fn host_rows(r: &SuiteResult) -> Vec<(&'static str, String)> {
    let h = &r.host;
    vec![
        (
            "date",
            if h.date.is_empty() {
                "?".into()
            } else {
                h.date.replace('T', " ").replace('Z', " UTC")
            },
        ),
        (
            "host",
            if h.hostname.is_empty() {
                "?".into()
            } else {
                h.hostname.clone()
            },
        ),
        ("CPU", format!("{} ({} cores)", h.cpu_model, h.cores)),
        ("memory", format_size(h.memory_bytes)),
        ("kernel", h.kernel.clone()),
        (
            "file system",
            format!(
                "{} on {}",
                h.filesystem.as_deref().unwrap_or("?"),
                h.device.as_deref().unwrap_or("?")
            ),
        ),
        (
            "iolab",
            format!(
                "{}{}",
                h.iolab_version,
                h.git_commit
                    .as_deref()
                    .map(|c| format!(", commit {c}"))
                    .unwrap_or_default()
            ),
        ),
        (
            "run",
            format!(
                "{} suite: {} random file, {} classic transfer files ({}), {:.1} s",
                if r.config.quick {
                    "quick (--quick)"
                } else {
                    "full"
                },
                format_size(r.data.random_size),
                r.data.classic_files.len(),
                format_size(r.data.classic_bytes),
                r.seconds
            ),
        ),
        ("command", h.command_line.clone()),
    ]
    .into_iter()
    .chain(
        h.free_page_reporting
            .clone()
            .map(|s| ("free page reporting", s)),
    )
    .chain(h.idle_reclaim.clone().map(|s| ("idle reclaim", s)))
    .collect()
}

/// The column heading of one host among several: its name, date and kind of run.
fn host_heading(i: usize, r: &SuiteResult) -> String {
    let h = &r.host;
    let name = if h.hostname.is_empty() {
        &h.cpu_model
    } else {
        &h.hostname
    };
    format!(
        "host {}: {}{}, {}",
        i + 1,
        name,
        if h.date.is_empty() {
            String::new()
        } else {
            format!(" {}", &h.date[..h.date.len().min(10)])
        },
        if r.config.quick { "quick" } else { "full" }
    )
}

/// Several hosts side by side, as Markdown: each finding's ratio, interval and verdict per host
/// and the ratio of each host's ratio to the first host's; then the compared figures (medians)
/// per host with their ratio to the first host's. Numbers stay numbers, one per cell.
fn comparison(results: &[SuiteResult]) -> String {
    let mut keys: Vec<&str> = Vec::new();
    for r in results {
        for f in &r.findings {
            if !keys.contains(&f.key.as_str()) {
                keys.push(&f.key);
            }
        }
    }
    let names: Vec<String> = (1..=results.len()).map(|i| format!("host {i}")).collect();
    let find = |r: &'_ SuiteResult, k: &str| r.findings.iter().find(|f| f.key == k).cloned();
    let num = |v: f64| {
        if v.is_finite() && v > 0.0 {
            format!("{v:.3}")
        } else {
            "-".into()
        }
    };
    // Hosts.
    let mut md = crate::report::markdown_table(
        &std::iter::once(vec!["host".to_string(), "which".to_string()])
            .chain(results.iter().enumerate().map(|(i, r)| {
                let h = host_heading(i, r);
                let which = h.split_once(": ").map_or(h.as_str(), |(_, w)| w);
                vec![names[i].clone(), md_esc(which)]
            }))
            .collect::<Vec<_>>(),
    );
    // Findings: ratio, interval, verdict per host.
    let mut header = vec!["finding".to_string(), "ratio of".to_string()];
    for n in &names {
        header.push(format!("{n} ratio"));
        header.push(format!("{n} interval"));
        header.push(format!("{n} verdict"));
    }
    for n in names.iter().skip(1) {
        header.push(format!("{n} / host 1"));
    }
    let mut rows = vec![header];
    for k in &keys {
        let per: Vec<Option<Finding>> = results.iter().map(|r| find(r, k)).collect();
        let of = per
            .iter()
            .flatten()
            .find(|f| f.sides.len() == 2)
            .map(|f| format!("{} / {}", f.sides[0].name, f.sides[1].name))
            .unwrap_or_default();
        let mut row = vec![k.to_string(), md_esc(&of)];
        for f in &per {
            match f {
                Some(f) => {
                    row.push(num(f.ratio));
                    row.push(if f.ci[1] > 0.0 {
                        format!("{:.3}-{:.3}", f.ci[0], f.ci[1])
                    } else {
                        "-".into()
                    });
                    row.push(md_esc(&verdict(f)));
                }
                None => row.extend(["-".to_string(), "-".into(), "not judged".into()]),
            }
        }
        let first = per[0].as_ref().map(|f| f.ratio);
        for f in per.iter().skip(1) {
            row.push(match (first, f) {
                (Some(a), Some(f)) if a > 0.0 => num(f.ratio / a),
                _ => "-".into(),
            });
        }
        rows.push(row);
    }
    md.push('\n');
    md.push_str(&crate::report::markdown_table(&rows));
    // Figures: each side's median per host.
    let mut header = vec!["finding".to_string(), "side".into(), "unit".into()];
    header.extend(names.iter().cloned());
    header.extend(names.iter().skip(1).map(|n| format!("{n} / host 1")));
    let mut rows = vec![header];
    for k in &keys {
        let per: Vec<Option<Finding>> = results.iter().map(|r| find(r, k)).collect();
        let mut sides: Vec<(String, String)> = Vec::new();
        for f in per.iter().flatten() {
            for s in &f.sides {
                if !sides.iter().any(|(n, _)| *n == s.name) {
                    sides.push((s.name.clone(), s.unit.clone()));
                }
            }
        }
        for (side, unit) in sides {
            let medians: Vec<Option<f64>> = per
                .iter()
                .map(|f| {
                    f.as_ref()
                        .and_then(|f| f.sides.iter().find(|s| s.name == side))
                        .map(|s| s.median)
                })
                .collect();
            let mut row = vec![k.to_string(), md_esc(&side), md_esc(&unit)];
            row.extend(
                medians
                    .iter()
                    .map(|m| m.map_or("-".into(), |v| format!("{v:.1}"))),
            );
            for m in medians.iter().skip(1) {
                row.push(match (medians[0], m) {
                    (Some(a), Some(b)) if a > 0.0 => num(b / a),
                    _ => "-".into(),
                });
            }
            rows.push(row);
        }
    }
    if rows.len() > 1 {
        md.push('\n');
        md.push_str(&crate::report::markdown_table(&rows));
    }
    md.push_str("\nratio: the finding's first side over its second (medians, or the median of per-round ratios when paired); verdict: the side named the winner, `=` within 5%, `?` undecided; host N / host 1: that host's figure over the first host's.\n");
    md
}

/// A finding's verdict in one word: the winner, `=` (within 5%) or `?` (undecided).
fn verdict(f: &Finding) -> String {
    match (&f.winner, f.decided) {
        (Some(w), _) => w.clone(),
        (None, Some(Decided::Equivalent)) => "=".into(),
        _ => "?".into(),
    }
}

/// What the tables' abbreviations mean.
const GLOSSARY: &[(&str, &str)] = &[
    (
        "MiB/s",
        "mebibytes (2^20 bytes) moved per second of wall time; the median of the counted runs unless said otherwise",
    ),
    ("KIOPS", "thousands of block reads per second"),
    (
        "p50 .. p99.9",
        "latency percentiles of single operations: half of them, 99% of them, 99.9% of them took at most this long",
    ),
    (
        "samples",
        "operations whose time was taken; a percentile is shown only from enough of them: p99 from 100, p99.9 from 1,000",
    ),
    (
        "cold / warm",
        "the file's pages were evicted from the page cache before the run / were all cached before the run",
    ),
    (
        "cache ok",
        "the residency asked for was checked before the run (cachestat or mincore) and found; 'no' marks a run whose cache state was not the one asked",
    ),
    (
        "minflt, majflt",
        "minor page faults (the page was in memory, only the mapping was made) and major ones (the page had to be read from the device)",
    ),
    (
        "minflt/op, minflt/GiB",
        "faults per operation or per GiB read",
    ),
    (
        "dev B/B, amplification",
        "bytes the device delivered per byte the program asked for (readahead reads more than a random 4 KiB needs)",
    ),
    ("syscalls/GiB", "system calls made per GiB read"),
    (
        "TLB/s",
        "TLB shootdowns per second: interrupts that make other cores forget an unmapped page",
    ),
    (
        "interval",
        "the range that holds the true ratio at the stated confidence, from the spread of the runs; a finding names a winner only when the whole interval is on one side of 1",
    ),
    (
        "busy",
        "other processes, the kernel or the hypervisor used the CPU or the disk while this was measured; such figures are marked",
    ),
];

/// `1048576` -> `1 MiB` in a citation; other words as they are.
fn readable(cite_rest: &str) -> String {
    cite_rest
        .split(' ')
        .map(|w| match w.parse::<u64>() {
            Ok(n) if n >= 1024 && n.is_power_of_two() => format_size(n),
            _ => w.to_string(),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The section a citation points at: `sweep read: ...` is `sweep_read`, `fast: warm` is
/// `fast_warm`.
fn cited_section<'a>(cite: &str, secs: &'a [Section]) -> Option<&'a Section> {
    let (prefix, rest) = cite.split_once(": ").unwrap_or((cite, ""));
    let key = prefix.replace(' ', "_");
    let first = rest.split([' ', ':']).next().unwrap_or_default();
    secs.iter()
        .find(|s| s.name == key)
        .or_else(|| secs.iter().find(|s| s.name == format!("{key}_{first}")))
}

/// A finding's citations as HTML: per cited section a link to it and its rows in plain words.
fn cites_html(cites: &[String], secs: &[Section]) -> String {
    let mut groups: Vec<(String, Option<&Section>, Vec<String>)> = Vec::new();
    for c in cites {
        let (prefix, rest) = c.split_once(": ").unwrap_or((c, ""));
        let sec = cited_section(c, secs);
        let label = sec
            .map(|s| s.title.to_string())
            .unwrap_or_else(|| prefix.to_string());
        // `fast: warm` found `fast_warm`: its title already says "warm".
        let rest = match sec {
            Some(s) if s.name.ends_with(&format!("_{rest}")) => "",
            _ => rest,
        };
        match groups.iter_mut().find(|g| g.0 == label) {
            Some(g) => g.2.push(readable(rest)),
            None => groups.push((label, sec, vec![readable(rest)])),
        }
    }
    groups
        .iter()
        .map(|(label, sec, rows)| {
            let head = match sec {
                Some(s) => format!("<a href=\"#{}\">{}</a>", s.name, esc(label)),
                None => esc(label),
            };
            let rows: Vec<&String> = rows.iter().filter(|r| !r.is_empty()).collect();
            if rows.is_empty() {
                head
            } else {
                format!(
                    "{head}: {}",
                    esc(&rows
                        .iter()
                        .map(|r| r.as_str())
                        .collect::<Vec<_>>()
                        .join(", "))
                )
            }
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// A table cell as HTML: numbers right-aligned; a 'no' under a check column marked.
fn cell_html(tag: &str, text: &str, header: &str) -> String {
    let t = text.trim();
    let numeric = t
        .trim_start_matches(['-', '+'])
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_digit());
    // An XOR is hex: a label, not a quantity.
    let numeric = numeric && !header.eq_ignore_ascii_case("xor");
    let check = header.contains("ok") || header.contains("verified");
    let class = if tag == "td" && check && (t == "no" || t.starts_with("no ")) {
        " class=\"bad\""
    } else if tag == "td" && numeric {
        " class=\"num\""
    } else {
        ""
    };
    format!("<{tag}{class}>{}</{tag}>", esc(t))
}

/// A report's Markdown as HTML, parsed by pulldown-cmark (CommonMark with tables): tables go into
/// a scrolling wrapper with numbers right-aligned and a failed check marked ([`cell_html`]),
/// a paragraph keeps its lines, bold and code are kept, and `== ` blocks fold into `<details>`.
/// Raw HTML in the text is shown as text, never passed through (a results.json may be hostile).
pub(crate) fn md_to_html(md: &str) -> String {
    let mut html = String::new();
    let mut chunk = String::new();
    let mut open_details = false;
    for line in md.lines() {
        if let Some(title) = line.strip_prefix("== ") {
            html.push_str(&markdown_chunk(&chunk));
            chunk.clear();
            if open_details {
                html.push_str("</details>");
            }
            html.push_str(&format!("<details><summary>{}</summary>", esc(title)));
            open_details = true;
        } else {
            chunk.push_str(line);
            chunk.push('\n');
        }
    }
    html.push_str(&markdown_chunk(&chunk));
    if open_details {
        html.push_str("</details>");
    }
    html
}

/// One block of Markdown (no `== ` lines) as HTML.
fn markdown_chunk(md: &str) -> String {
    use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};
    let mut html = String::new();
    // In a table: the header row's cells (for each column's kind), the cell being read, and
    // whether the row is the header.
    let mut header: Vec<String> = Vec::new();
    let mut cell: Option<String> = None;
    let mut in_head = false;
    let mut column = 0;
    let text = |html: &mut String, cell: &mut Option<String>, t: &str| match cell {
        Some(c) => c.push_str(t),
        None => html.push_str(&esc(t)),
    };
    for event in Parser::new_ext(&spaced_tables(md), Options::ENABLE_TABLES) {
        match event {
            Event::Start(Tag::Paragraph) => html.push_str("<p class=\"lines\">"),
            Event::End(TagEnd::Paragraph) => html.push_str("</p>"),
            Event::Start(Tag::Table(_)) => {
                header.clear();
                html.push_str("<div class=\"tw\"><table>");
            }
            Event::End(TagEnd::Table) => html.push_str("</table></div>"),
            Event::Start(Tag::TableHead) => {
                in_head = true;
                column = 0;
                html.push_str("<tr>");
            }
            Event::End(TagEnd::TableHead) => {
                in_head = false;
                html.push_str("</tr>");
            }
            Event::Start(Tag::TableRow) => {
                column = 0;
                html.push_str("<tr>");
            }
            Event::End(TagEnd::TableRow) => html.push_str("</tr>"),
            Event::Start(Tag::TableCell) => cell = Some(String::new()),
            Event::End(TagEnd::TableCell) => {
                let c = cell.take().unwrap_or_default();
                if in_head {
                    header.push(c.clone());
                }
                let tag = if in_head { "th" } else { "td" };
                let h = header.get(column).map(String::as_str).unwrap_or("");
                html.push_str(&cell_html(tag, &c, h));
                column += 1;
            }
            Event::Start(Tag::Strong) if cell.is_none() => html.push_str("<b>"),
            Event::End(TagEnd::Strong) if cell.is_none() => html.push_str("</b>"),
            Event::Start(Tag::Emphasis) if cell.is_none() => html.push_str("<i>"),
            Event::End(TagEnd::Emphasis) if cell.is_none() => html.push_str("</i>"),
            Event::Start(Tag::List(Some(_))) => html.push_str("<ol>"),
            Event::End(TagEnd::List(true)) => html.push_str("</ol>"),
            Event::Start(Tag::List(None)) => html.push_str("<ul>"),
            Event::End(TagEnd::List(false)) => html.push_str("</ul>"),
            Event::Start(Tag::Item) => html.push_str("<li>"),
            Event::End(TagEnd::Item) => html.push_str("</li>"),
            Event::Start(Tag::Heading { level, .. }) => html.push_str(&format!("<{level}>")),
            Event::End(TagEnd::Heading(level)) => html.push_str(&format!("</{level}>")),
            Event::Start(Tag::CodeBlock(_)) => html.push_str("<pre>"),
            Event::End(TagEnd::CodeBlock) => html.push_str("</pre>"),
            Event::Code(t) if cell.is_none() => html.push_str(&format!("<code>{}</code>", esc(&t))),
            Event::Text(t) | Event::Code(t) | Event::Html(t) | Event::InlineHtml(t) => {
                text(&mut html, &mut cell, &t)
            }
            Event::SoftBreak | Event::HardBreak if cell.is_none() => html.push_str("<br>"),
            Event::SoftBreak | Event::HardBreak => text(&mut html, &mut cell, " "),
            _ => {}
        }
    }
    html
}

/// Markdown with a blank line before and after every table, so that CommonMark viewers see
/// each one as a table and not as part of a paragraph.
fn spaced_tables(md: &str) -> String {
    let mut out = String::new();
    let mut prev_table = false;
    let mut prev_blank = true;
    for line in md.lines() {
        let is_table = line.trim_start().starts_with('|');
        let blank = line.trim().is_empty();
        if is_table != prev_table && !blank && !prev_blank {
            out.push('\n');
        }
        out.push_str(line);
        out.push('\n');
        prev_table = is_table;
        prev_blank = blank;
    }
    out
}

/// Renders one report from `results` (several: hosts side by side), a section per experiment of
/// `registry` that has an outcome.
pub fn render(results: &[SuiteResult], registry: &[&dyn Experiment]) -> Rendered {
    let r = &results[0];
    let mut plots = Vec::new();
    // The data files are removed after the run (unless kept): their folder is left out of the
    // tables, which then name the files alone (`random.bin`), not a path that no longer exists.
    let data_dir = format!("{}/", r.config.dir.display());
    let unpath = |t: String| {
        if r.config.keep_data || data_dir.len() <= 1 {
            t
        } else {
            t.replace(&data_dir, "")
        }
    };
    let secs: Vec<Section> = registry
        .iter()
        .filter_map(|e| r.outcome(e.name()).map(|o| e.section(o, &mut plots)))
        .map(|s| Section {
            table: s.table.map(unpath),
            markdown: s.markdown.map(unpath),
            error: s.error.map(unpath),
            ..s
        })
        .collect();
    // Markdown: the title, then a busy machine is said first.
    let warning = r.interference.warning();
    let mut md = String::from("# iolab report\n\n");
    if let Some(w) = &warning {
        md += &format!("{}\n\n", md_esc(w));
    }
    md += &crate::report::markdown_table(
        &std::iter::once(vec!["fact".to_string(), "value".to_string()])
            .chain(
                host_rows(r)
                    .into_iter()
                    .map(|(k, v)| vec![k.to_string(), md_esc(&v)]),
            )
            .collect::<Vec<_>>(),
    );
    md += "\n## Findings\n\n";
    for f in &r.findings {
        md.push_str(&format!(
            "- {} _(from {})_\n",
            md_esc(&f.text),
            md_esc(&f.cites.join("; "))
        ));
    }
    let missing = super::not_judged(r);
    for (key, why) in &missing {
        md.push_str(&format!("- {}: not judged: {}\n", md_esc(key), md_esc(why)));
    }
    if results.len() > 1 {
        md.push_str("\n## Hosts side by side\n\n");
        md.push_str(&comparison(results));
    }
    for s in &secs {
        md.push_str(&format!("\n## {}\n\n{}\n\n", s.title, s.why));
        if let Some(b) = &s.busy {
            md.push_str(&format!("**Busy while measured:** {}.\n\n", md_esc(b)));
        }
        if let Some(p) = &s.plot {
            md.push_str(&format!("![{}](plots/{p}.svg)\n\n", s.title));
        }
        match (&s.markdown, &s.table) {
            (Some(m), _) => md.push_str(&spaced_tables(&md_esc(m))),
            (None, Some(t)) => md.push_str(&fenced(t)),
            (None, None) => {}
        }
        if let Some(e) = &s.error {
            md.push_str(&format!("**Not measured:** {}\n", md_esc(e)));
        }
    }
    md.push_str("\n## Glossary\n\n");
    for (term, meaning) in GLOSSARY {
        md.push_str(&format!("- **{term}**: {meaning}\n"));
    }
    // HTML
    let mut html = String::from(concat!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">",
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>iolab report</title><style>",
        "*{box-sizing:border-box}",
        "body{font-family:system-ui,sans-serif;max-width:64rem;margin:0 auto;padding:1rem;line-height:1.45;color:#111;overflow-wrap:anywhere}",
        "h1{font-size:1.6rem}h2{font-size:1.25rem;border-bottom:1px solid #ccc;margin-top:2rem}",
        "nav ol{columns:2;font-size:.9rem;padding-left:1.4rem}@media (max-width:40rem){nav ol{columns:1}}",
        "pre{overflow-x:auto;background:#f6f6f6;padding:.6rem;font-size:.75rem;border:1px solid #ddd;white-space:pre}",
        "figure{margin:.5rem 0;width:100%;max-width:44rem;overflow-x:auto}figure svg{width:100%;min-width:34rem;height:auto;display:block}",
        ".cite{color:#555;font-size:.85em}.err,.warn{color:#a00}",
        ".tw{overflow-x:auto;max-width:100%;margin:.5rem 0}",
        "table{border-collapse:collapse;font-size:.8rem;font-variant-numeric:tabular-nums}",
        "td,th{border:1px solid #ccc;padding:.2rem .45rem;vertical-align:top;text-align:left;white-space:nowrap;overflow-wrap:normal}",
        "th{background:#eef}td.num{text-align:right}td.bad{background:#fdd;color:#900;font-weight:bold}",
        ".tw th:first-child,.tw td:first-child{position:sticky;left:0;background:#fff;z-index:1}.tw th:first-child{background:#eef}",
        "table.host td{white-space:normal}table.host td:first-child{font-weight:bold;white-space:nowrap}",
        "li.nj{color:#666}p.lines{font-size:.85rem}details{margin:.4rem 0}summary{cursor:pointer;font-weight:600}",
        "dl.gloss dt{font-weight:bold;margin-top:.4rem}dl.gloss dd{margin-left:1rem}",
        "@media print{body{max-width:none;padding:0;font-size:9pt}nav,details{display:none}",
        ".tw{overflow:visible}table{font-size:6.5pt}td,th{white-space:normal;padding:.1rem .25rem}",
        ".tw th:first-child,.tw td:first-child{position:static}tr,li,figure,dt,dd{break-inside:avoid}",
        "h2{break-after:avoid;margin-top:1rem}figure{overflow:visible}figure svg{max-height:7cm;width:auto;min-width:0;max-width:100%;margin:0 auto}}",
        "</style></head><body>"
    ));
    if let Some(w) = &warning {
        html.push_str(&format!("<p class=\"warn\"><b>{}</b></p>", esc(w)));
    }
    html.push_str("<h1>iolab report</h1><div class=\"tw\"><table class=\"host\">");
    for (k, v) in host_rows(r) {
        html.push_str(&format!("<tr><td>{}</td><td>{}</td></tr>", esc(k), esc(&v)));
    }
    html.push_str("</table></div>");
    // Contents.
    html.push_str(
        "<nav><h2 id=\"contents\">Contents</h2><ol><li><a href=\"#findings\">Findings</a></li>",
    );
    if results.len() > 1 {
        html.push_str("<li><a href=\"#hosts\">Hosts side by side</a></li>");
    }
    for s in &secs {
        html.push_str(&format!(
            "<li><a href=\"#{}\">{}</a></li>",
            s.name,
            esc(s.title)
        ));
    }
    html.push_str("<li><a href=\"#glossary\">Glossary</a></li></ol></nav>");
    html.push_str("<h2 id=\"findings\">Findings</h2><ul>");
    for f in &r.findings {
        html.push_str(&format!(
            "<li>{} <span class=\"cite\">(from {})</span></li>",
            esc(&f.text),
            cites_html(&f.cites, &secs)
        ));
    }
    for (key, why) in &missing {
        html.push_str(&format!(
            "<li class=\"nj\">{}: not judged: {}</li>",
            esc(key),
            esc(why)
        ));
    }
    html.push_str("</ul>");
    if results.len() > 1 {
        html.push_str("<h2 id=\"hosts\">Hosts side by side</h2>");
        html.push_str(&md_to_html(&comparison(results)));
    }
    for s in &secs {
        html.push_str(&format!(
            "<section id=\"{}\"><h2>{}</h2><p>{}</p>",
            s.name,
            esc(s.title),
            esc(&s.why)
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
            html.push_str(&format!(
                "<figure class=\"plot\" id=\"{}-plot\">{svg}</figure>",
                s.name
            ));
        }
        match (&s.markdown, &s.table) {
            (Some(m), _) => html.push_str(&md_to_html(m)),
            (None, Some(t)) => html.push_str(&format!("<pre>{}</pre>", esc(t))),
            (None, None) => {}
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
    html.push_str("<h2 id=\"glossary\">Glossary</h2><dl class=\"gloss\">");
    for (term, meaning) in GLOSSARY {
        html.push_str(&format!("<dt>{}</dt><dd>{}</dd>", esc(term), esc(meaning)));
    }
    html.push_str("</dl>");
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

/// Text from a results file as Markdown shows it: `&`, `<` and `>` as entities, so that no
/// string (a host name, a cause, a table cell of a hostile results.json) passes as HTML to
/// whatever renders report.md, as report.html escapes them. Fenced code needs none (Markdown
/// shows it as it is), and Markdown's own emphasis in iolab's tables is kept.
fn md_esc(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
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
mod tests;
