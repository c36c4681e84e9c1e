//! The suite's report: `results.json`, `report.md`, `plots/*.svg` and a self-contained
//! `report.html` (inline CSS and SVG, no network), rendered from one or several results; each
//! experiment's section comes from its registry entry.

use crate::experiments::entry::{Experiment, Section, SuiteResult};
use crate::measure::decide::Decided;
use crate::measure::finding::Finding;
use crate::report::escape_html as esc;
use crate::report::json;
use crate::size::format_size;

mod hosts;
pub(crate) use crate::report::markdown::{fenced, md_to_html};
use crate::report::markdown::{md_esc, spaced_tables};
use hosts::{comparison, host_rows};

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
        "the range that holds the true ratio at the stated confidence (95%), from the spread of the runs",
    ),
    (
        "winner, within 5%, undecided",
        "a finding names a winner only when its whole interval lies outside 1/1.05 .. 1.05 (one side at least 5% faster), says within 5% only when the whole interval lies inside it, and is undecided otherwise: more rounds, or a quieter machine, might decide it",
    ),
    (
        "paired (Hodges-Lehmann)",
        "the two sides ran in the same interleaved rounds: the ratio is the centre of the per-round ratios (Hodges-Lehmann: the median of the means of every pair of them, on their logarithms), with its Wilcoxon signed-rank interval; the medians printed beside it are context, and their ratio may differ",
    ),
    (
        "ratio of medians",
        "the two sides were measured apart: the ratio is one side's median over the other's, with the interval the two medians' own intervals allow",
    ),
    (
        "geometric mean of independent runs' ratios",
        "each of several independent runs (a squeezed or polluted cache settles differently from run to run) gave one ratio, each run one observation: the ratio is their geometric mean and the interval Student's t over the runs (three at least, else undecided (budget)); the pooled medians printed after it are context",
    ),
    (
        "busy",
        "other processes, the kernel or the hypervisor used the CPU or the disk while this was measured; such figures are marked",
    ),
];

/// The box above the findings: the verdict rule and the kinds of ratio, in plain words (the
/// rule [`crate::measure::decide`] applies; tested against it).
pub const HOW_TO_READ: &str = "How to read a finding: it compares two sides by a ratio (the first named over the second) with its 95% interval. It names a winner only when the whole interval lies outside 1/1.05 .. 1.05 (one side at least 5% ahead), says `within 5%` only when the whole interval lies inside that band, and says `undecided` otherwise (more rounds or a quieter machine might decide it); `undecided (budget: N rounds)` had too few rounds for an interval at 95% and prints none. The ratio says what it is: `paired` is the median of per-round ratios of two sides measured in the same rounds (the medians printed after it are context); `ratio of medians` is the quotient of the two medians printed; a `geometric mean of independent runs' ratios` comes from several runs, each run one observation, its interval Student's t over them (three runs at least). Method: docs/methodology.md.";

/// Text escaped for HTML, its `code` spans as code.
fn with_code(text: &str) -> String {
    if text.matches('`').count() % 2 == 1 {
        return esc(text);
    }
    text.split('`')
        .enumerate()
        .map(|(i, part)| {
            if i % 2 == 1 {
                format!("<code>{}</code>", esc(part))
            } else {
                esc(part)
            }
        })
        .collect()
}

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

/// report.html's style sheet: the page, its tables and plots, and the printed page.
const STYLE: &str = concat!(
    "*{box-sizing:border-box}",
    "body{font-family:system-ui,sans-serif;max-width:64rem;margin:0 auto;padding:1rem;line-height:1.45;color:#111;overflow-wrap:anywhere}",
    "h1{font-size:1.6rem}h2{font-size:1.25rem;border-bottom:1px solid #ccc;margin-top:2rem}",
    "nav ol{columns:2;font-size:.9rem;padding-left:1.4rem}@media (max-width:40rem){nav ol{columns:1}}",
    "pre{overflow-x:auto;background:#f6f6f6;padding:.6rem;font-size:.75rem;border:1px solid #ddd;white-space:pre}",
    "figure{margin:.5rem 0;width:100%;max-width:44rem}figure svg{width:100%;max-width:100%;height:auto;display:block}",
    ".cite{color:#555;font-size:.85em}.err,.warn{color:#a00}",
    ".tw{overflow-x:auto;max-width:100%;margin:.5rem 0}",
    "table{border-collapse:collapse;font-size:.8rem;font-variant-numeric:tabular-nums}",
    "td,th{border:1px solid #ccc;padding:.2rem .45rem;vertical-align:top;text-align:left;white-space:normal;overflow-wrap:normal;min-width:3.5rem}td.num{white-space:nowrap;min-width:0}",
    "code{background:#f0f0f0;padding:0 .2em;border-radius:3px;font-size:.9em}",
    ".how{border:1px solid #99c;background:#f5f5ff;padding:.4rem .8rem;margin:.6rem 0;font-size:.9rem}",
    "th{background:#eef}td.num{text-align:right}td.bad{background:#fdd;color:#900;font-weight:bold}",
    ".tw th:first-child,.tw td:first-child{position:sticky;left:0;background:#fff;z-index:1}.tw th:first-child{background:#eef}",
    "table.host td{white-space:normal}table.host td:first-child{font-weight:bold;white-space:nowrap}",
    "li.nj{color:#666}p.lines{font-size:.85rem}details{margin:.4rem 0}summary{cursor:pointer;font-weight:600}",
    "dl.gloss dt{font-weight:bold;margin-top:.4rem}dl.gloss dd{margin-left:1rem}",
    "@media print{body{max-width:none;padding:0;font-size:8.5pt}nav,details{display:none}",
    ".tw{overflow:visible}table{font-size:6.5pt}td,th{white-space:normal;padding:.1rem .25rem}",
    ".tw th:first-child,.tw td:first-child{position:static}tr,li,figure,dt,dd{break-inside:avoid}",
    "h2{break-after:avoid;margin-top:1rem}dl.gloss{columns:2;column-gap:1.2rem}dl.gloss dt{break-after:avoid}figure{overflow:visible}figure svg{max-height:7cm;width:auto;min-width:0;max-width:100%;margin:0 auto}}",
);

/// Renders one report from `results` (several: hosts side by side), a section per experiment of
/// `registry` that has an outcome.
pub fn render(results: &[SuiteResult], registry: &[&dyn Experiment]) -> Rendered {
    let r = &results[0];
    let mut plots = Vec::new();
    let secs = sections(r, registry, &mut plots);
    let markdown = markdown(results, &secs);
    let html = html(results, &secs, &plots);
    let results_json = if results.len() == 1 {
        json(r)
    } else {
        json(&results.to_vec())
    };
    Rendered {
        results_json,
        markdown,
        html,
        plots,
    }
}

/// Each measured experiment's section, its plot pushed onto `plots`.
fn sections(
    r: &SuiteResult,
    registry: &[&dyn Experiment],
    plots: &mut Vec<(String, String)>,
) -> Vec<Section> {
    // The data files are removed after the run (unless kept): their folder is left out of the
    // tables, which then name the files alone (`random.bin`), not a path that no longer exists.
    let data_dir = format!("{}/", crate::shown::path(&r.config.dir));
    let unpath = |t: String| {
        if r.config.keep_data || data_dir.len() <= 1 {
            t
        } else {
            t.replace(&data_dir, "")
        }
    };
    registry
        .iter()
        .filter_map(|e| r.outcome(e.name()).map(|o| e.section(o, plots)))
        .map(|s| Section {
            table: s.table.map(unpath),
            markdown: s.markdown.map(unpath),
            error: s.error.map(unpath),
            ..s
        })
        .collect()
}

/// report.md: the title, a busy machine's warning, the host, the findings, the hosts side by
/// side, each section and the glossary.
fn markdown(results: &[SuiteResult], secs: &[Section]) -> String {
    let r = &results[0];
    // The title, then a busy machine is said first.
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
    md += &format!("> {HOW_TO_READ}\n\n");
    let forest = crate::report::forest::text(&crate::report::forest::of_findings(&r.findings), 48);
    if !forest.is_empty() {
        md += &format!("```text\n{forest}```\n\n");
    }
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
    for s in secs {
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
    md
}

/// report.html: the same as report.md, its tables real tables, the plots inline, with contents.
fn html(results: &[SuiteResult], secs: &[Section], plots: &[(String, String)]) -> String {
    let r = &results[0];
    let warning = r.interference.warning();
    let missing = super::not_judged(r);
    let mut html = format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>iolab report</title><style>{STYLE}{}</style></head><body>",
        crate::report::forest::STYLE
    );
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
    for s in secs {
        html.push_str(&format!(
            "<li><a href=\"#{}\">{}</a></li>",
            s.name,
            esc(s.title)
        ));
    }
    html.push_str("<li><a href=\"#glossary\">Glossary</a></li></ol></nav>");
    html.push_str("<h2 id=\"findings\">Findings</h2>");
    html.push_str(&format!(
        "<div class=\"how\">{}</div>",
        with_code(HOW_TO_READ)
    ));
    html.push_str(&crate::report::forest::html(
        &crate::report::forest::of_findings(&r.findings),
        "Each finding's ratio (first side over second) and its 95% interval, on a log axis",
    ));
    html.push_str("<ul>");
    for f in &r.findings {
        html.push_str(&format!(
            "<li>{} <span class=\"cite\">(from {})</span></li>",
            with_code(&f.text),
            cites_html(&f.cites, secs)
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
    for s in secs {
        html.push_str(&html_section(s, plots));
    }
    html.push_str("<h2 id=\"glossary\">Glossary</h2><dl class=\"gloss\">");
    for (term, meaning) in GLOSSARY {
        html.push_str(&format!("<dt>{}</dt><dd>{}</dd>", esc(term), esc(meaning)));
    }
    html.push_str("</dl>");
    html.push_str("</body></html>\n");
    html
}

/// One experiment's section of report.html: heading, explanation, plot, tables, time.
fn html_section(s: &Section, plots: &[(String, String)]) -> String {
    let mut html = String::new();
    html.push_str(&format!(
        "<section id=\"{}\"><h2>{}</h2><p>{}</p>",
        s.name,
        esc(s.title),
        with_code(&s.why)
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
    html
}

#[cfg(test)]
mod tests;
