//! The main job end to end: `iolab suite --quick`, its files, its schema, a browser rendering it,
//! re-rendering with `iolab report`, and an interrupted run leaving nothing behind.

mod common;
use common::{Lack, skip};

use common::iolab;

use std::path::Path;
use std::time::{Duration, Instant};

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A small well-formedness check: every tag closed in order, one root.
fn well_formed(xml: &str) -> Result<usize, String> {
    let mut stack: Vec<String> = Vec::new();
    let mut elements = 0;
    let mut rest = xml;
    while let Some(i) = rest.find('<') {
        rest = &rest[i + 1..];
        let end = rest.find('>').ok_or("unclosed <")?;
        let tag = &rest[..end];
        rest = &rest[end + 1..];
        if let Some(name) = tag.strip_prefix('/') {
            let open = stack.pop().ok_or(format!("stray </{name}>"))?;
            if open != name.trim() {
                return Err(format!("<{open}> closed by </{name}>"));
            }
        } else if !tag.starts_with('?') && !tag.starts_with('!') {
            elements += 1;
            if !tag.ends_with('/') {
                stack.push(tag.split_whitespace().next().unwrap_or("").to_string());
            }
        }
    }
    if stack.is_empty() {
        Ok(elements)
    } else {
        Err(format!("unclosed {stack:?}"))
    }
}

/// report.md as a CommonMark viewer sees it: every `## ` line of the text is a level-2 heading,
/// every plot an image, and no code block swallows what follows it.
fn check_markdown(md: &str) {
    use pulldown_cmark::{Event, HeadingLevel, Parser, Tag, TagEnd};
    let wanted: Vec<&str> = md.lines().filter_map(|l| l.strip_prefix("## ")).collect();
    let mut headings = Vec::new();
    let mut images = 0;
    let mut in_h2 = false;
    let mut in_code = false;
    let mut text = String::new();
    for ev in Parser::new(md) {
        match ev {
            Event::Start(Tag::Heading {
                level: HeadingLevel::H2,
                ..
            }) => {
                in_h2 = true;
                text.clear();
            }
            Event::End(TagEnd::Heading(HeadingLevel::H2)) => {
                in_h2 = false;
                headings.push(text.clone());
            }
            Event::Start(Tag::CodeBlock(_)) => in_code = true,
            Event::End(TagEnd::CodeBlock) => in_code = false,
            Event::Start(Tag::Image { .. }) => images += 1,
            Event::Text(t) if in_h2 => text.push_str(&t),
            Event::Text(t) if in_code => assert!(
                !t.lines()
                    .any(|l| l.starts_with("## ") || l.starts_with("![")),
                "a code block swallowed a section: {t}"
            ),
            _ => {}
        }
    }
    assert_eq!(headings.len(), wanted.len(), "{headings:?} vs {wanted:?}");
    let plots = md.lines().filter(|l| l.starts_with("![")).count();
    assert!(
        plots > 0 && images == plots,
        "{images} images of {plots} plot lines"
    );
}

fn check_report(dir: &Path) -> serde_json::Value {
    for f in ["results.json", "report.md", "report.html"] {
        assert!(dir.join(f).is_file(), "missing {f}");
    }
    check_markdown(&std::fs::read_to_string(dir.join("report.md")).unwrap());
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("results.json")).unwrap()).unwrap();
    // The documented schema, generated from the types, holds for what was written: every
    // required key, type, constant and bound, through every experiment's result.
    let schema: serde_json::Value =
        serde_json::from_str(include_str!("../docs/results.schema.json")).unwrap();
    if let Err(e) = conforms(&schema, &schema, &v, "") {
        panic!("results.json does not follow docs/results.schema.json: {e}");
    }
    for e in iolab::suite::REGISTRY {
        let o = &v[e.name()];
        assert!(
            o["seconds"].is_number() && (o["result"].is_object() || o["error"].is_string()),
            "{}: {o}",
            e.name()
        );
    }
    assert_eq!(v["schema"], "iolab-suite/1");
    // What else the machine did is always said, busy or not.
    assert!(
        v["interference"]["busy"].is_boolean(),
        "{}",
        v["interference"]
    );
    assert!(v["interference"]["reasons"].is_array());
    let finding_keys = &schema["$defs"]["Finding"]["required"];
    for f in v["findings"].as_array().unwrap() {
        for k in finding_keys.as_array().unwrap() {
            assert!(
                f.get(k.as_str().unwrap()).is_some(),
                "finding lacks {k}: {f}"
            );
        }
        assert!(f["winner"].is_string() || f["winner"].is_null(), "{f}");
        // A winner exactly when the interval decided one.
        assert_eq!(f["winner"].is_string(), f["decided"] == "winner", "{f}");
        let ci = f["ci"].as_array().unwrap();
        let (lo, hi) = (ci[0].as_f64().unwrap(), ci[1].as_f64().unwrap());
        let text = f["text"].as_str().unwrap();
        if (lo, hi) == (0.0, 0.0) {
            // Too few rounds for an interval: undecided, said, none printed.
            assert_eq!(f["decided"], "undecided", "{f}");
            assert!(text.contains("undecided (budget: "), "{f}");
            assert!(!text.contains(", interval "), "{f}");
            continue;
        }
        assert!(lo <= hi, "{f}");
        // The ratio printed is the one whose interval is printed.
        let r = f["ratio"].as_f64().unwrap();
        assert!(lo <= r && r <= hi, "{f}");
        // An interval printed decides as the verdict says: at 95%.
        assert!(f["level"].as_f64().unwrap() >= 0.95, "{f}");
        assert!(text.contains("at 95%"), "{f}");
        assert!(
            text.contains("per-round ratios (paired); for context, the medians")
                || text.contains("(medians); their ratio")
                || text.contains("geometric mean of independent runs' ratios")
                || text.contains("for context, the pooled medians"),
            "{f}"
        );
        // A ratio printed as the two medians' is their ratio, within rounding (either way round:
        // the text puts the winner first).
        if text.contains("(medians); their ratio") {
            let m: Vec<f64> = f["sides"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x["median"].as_f64().unwrap())
                .collect();
            let q = m[0] / m[1];
            assert!(
                (q / r - 1.0).abs() < 0.01 || (q * r - 1.0).abs() < 0.01,
                "{q} vs {r}: {f}"
            );
        }
        // A decided finding holds at 95%.
        if f["decided"] != "undecided" {
            assert!(f["level"].as_f64().unwrap() >= 0.95, "{f}");
        }
    }
    assert!(
        v["findings"].as_array().unwrap().len() >= 5,
        "{}",
        v["findings"]
    );
    for f in v["findings"].as_array().unwrap() {
        assert!(
            !f["cites"].as_array().unwrap().is_empty(),
            "a finding without its rows: {f}"
        );
    }
    let mut plots = 0;
    for e in std::fs::read_dir(dir.join("plots")).unwrap() {
        let p = e.unwrap().path();
        let svg = std::fs::read_to_string(&p).unwrap();
        well_formed(&svg).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        plots += 1;
    }
    assert!(plots >= 6, "{plots} plots");
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert_eq!(html.matches("<svg").count(), plots, "every plot inline");
    for bad in [
        "src=\"http",
        "href=\"http",
        "<link",
        "<script",
        "url(http",
        "@import",
    ] {
        assert!(!html.contains(bad), "external reference: {bad}");
    }
    // Markdown is rendered, not shown: no emphasis marks or table rules left as text.
    for raw in ["**", "|---"] {
        assert!(!html.contains(raw), "literal {raw} in report.html");
    }
    assert!(html.contains("<b>"), "bold text is bold");
    v
}

#[test]
fn quick_suite_writes_a_whole_report_and_removes_its_data() {
    let parent = tempfile::tempdir().unwrap();
    let out = parent.path().join("rep");
    let t = Instant::now();
    let o = iolab()
        .args([
            "suite",
            "--quick",
            "--size",
            "128M",
            "--out",
            out.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let secs = t.elapsed().as_secs_f64();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    eprintln!("suite --quick --size 128M took {secs:.1} s");
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("Findings:") && text.contains("report.html"),
        "{text}"
    );
    let v = check_report(&out);
    // Section texts say what this run did, from its own figures, and name no deleted path.
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        md.contains("Here the window was 20-100 ms"),
        "run2's window"
    );
    assert!(md.contains(" runs read it with "), "fast's choice");
    assert!(
        !md.contains(".iolab-data-"),
        "the deleted data folder is named"
    );
    let names: Vec<_> = std::fs::read_dir(parent.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["rep"], "the generated data is removed");
    assert_eq!(
        v["data"]["classic_files"].as_array().unwrap().len(),
        10 + 1 + 4 + 4 + 3
    );

    // Re-render, alone and with two hosts side by side; a second render gets a dated folder.
    let r1 = out.join("results.json");
    iolab()
        .args([
            "report",
            r1.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ])
        .assert()
        .success();
    let dated: Vec<_> = std::fs::read_dir(parent.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p != &out)
        .collect();
    assert_eq!(dated.len(), 1, "a dated folder beside the old report");
    check_report(&dated[0]);
    let both = parent.path().join("both");
    iolab()
        .args([
            "report",
            r1.to_str().unwrap(),
            r1.to_str().unwrap(),
            "--out",
            both.to_str().unwrap(),
        ])
        .assert()
        .success();
    let html = std::fs::read_to_string(both.join("report.html")).unwrap();
    assert!(html.contains("Hosts side by side") && html.contains("host 2"));
    // Hosts side by side in numbers: each finding's ratio per host and host 2 over host 1 (the
    // same results twice: 1.000), and each compared side's median per host.
    let md = std::fs::read_to_string(both.join("report.md")).unwrap();
    let hosts = md.split("## Hosts side by side").nth(1).unwrap();
    let ratio_rows: Vec<&str> = hosts
        .lines()
        .take_while(|l| !l.starts_with("## "))
        .filter(|l| l.starts_with("| ") && l.trim_end().ends_with("| 1.000 |"))
        .collect();
    let n = v["findings"].as_array().unwrap().len();
    assert!(ratio_rows.len() >= 2 * n, "{n} findings: {hosts}");
    // A run against itself as the baseline: nothing moved, exit 0; a decided finding that names
    // another winner in B: exit 1, said (hyperfine's and criterion's habit).
    iolab()
        .args(["report", "--baseline", s(&r1), s(&r1)])
        .assert()
        .success()
        .stdout(predicates::str::contains("0 reversed"));
    let decided = |winner: &str| {
        let mut x = v.clone();
        x["findings"][0]["decided"] = serde_json::json!("winner");
        x["findings"][0]["winner"] = serde_json::json!(winner);
        x
    };
    let (a, b) = (parent.path().join("a.json"), parent.path().join("b.json"));
    std::fs::write(&a, decided("left").to_string()).unwrap();
    std::fs::write(&b, decided("right").to_string()).unwrap();
    iolab()
        .args(["report", "--baseline", s(&a), s(&b)])
        .assert()
        .code(1)
        .stdout(predicates::str::contains("REVERSED"));
    // Two undecided runs, their ratios 4x apart and their intervals apart: noise, exit 0.
    let undecided = |ratio: f64| {
        let mut x = v.clone();
        x["findings"][0]["decided"] = serde_json::json!("undecided");
        x["findings"][0]["winner"] = serde_json::Value::Null;
        x["findings"][0]["ratio"] = serde_json::json!(ratio);
        x["findings"][0]["ci"] = serde_json::json!([ratio * 0.99, ratio * 1.01]);
        x
    };
    std::fs::write(&a, undecided(1.0).to_string()).unwrap();
    std::fs::write(&b, undecided(4.0).to_string()).unwrap();
    iolab()
        .args(["report", "--baseline", s(&a), s(&b)])
        .assert()
        .success()
        .stdout(predicates::str::contains("held (undecided)"));
    iolab()
        .args(["report", "--baseline", s(&a)])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("--baseline compares two results"));
    std::fs::remove_file(&a).unwrap();
    std::fs::remove_file(&b).unwrap();
    // A finding whose experiment was not measured is listed as not judged, with why.
    let mut lacking = v.clone();
    lacking["access"]["result"] = serde_json::Value::Null;
    lacking["access"]["error"] = serde_json::json!("no access here");
    let kept: Vec<serde_json::Value> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["key"] != "random-4k-warm")
        .cloned()
        .collect();
    lacking["findings"] = serde_json::json!(kept);
    let lacks = parent.path().join("lacking.json");
    std::fs::write(&lacks, serde_json::to_string(&lacking).unwrap()).unwrap();
    let shown = parent.path().join("lacking-report");
    iolab()
        .args(["report", lacks.to_str().unwrap(), "--out"])
        .arg(&shown)
        .assert()
        .success();
    let md = std::fs::read_to_string(shown.join("report.md")).unwrap();
    assert!(
        md.contains("- random-4k-warm: not judged: 'access: sequential vs random 4 KiB' was not measured: no access here"),
        "{md}"
    );
    // In the run itself every finding was judged, or its experiment says why not.
    for line in text.lines().filter(|l| l.contains(": not judged: ")) {
        assert!(line.contains("was not measured"), "{line}");
    }
    if common::is_root() {
        assert!(
            v["pollute"]["result"].is_object() || v["pollute"]["kind"] == "unsupported",
            "pollute ran in the suite: {}",
            v["pollute"]
        );
    }
    let o = iolab()
        .args(["report", both.join("report.md").to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "not a results file");

    // A stored result that no longer parses is refused, naming the section, never dropped.
    let mut broken = v.clone();
    broken["sweep_read"]["result"]["cells"] = serde_json::json!("not cells");
    let bad = parent.path().join("broken.json");
    std::fs::write(&bad, serde_json::to_string(&broken).unwrap()).unwrap();
    let o = iolab()
        .args(["report", bad.to_str().unwrap(), "--out"])
        .arg(parent.path().join("never"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("cannot render section 'sweep_read'"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(!parent.path().join("never").exists());

    // Strings of a hostile results file reach report.md as text, never as HTML.
    let mut hostile = v.clone();
    let script = "<script>alert(1)</script>";
    hostile["host"]["hostname"] = serde_json::json!(script);
    hostile["host"]["cpu_model"] = serde_json::json!(format!("cpu & {script}"));
    hostile["findings"][0]["text"] = serde_json::json!(script);
    hostile["findings"][0]["cites"] = serde_json::json!([script]);
    let evil = parent.path().join("hostile.json");
    std::fs::write(&evil, serde_json::to_string(&hostile).unwrap()).unwrap();
    let rendered = parent.path().join("hostile-report");
    iolab()
        .args(["report", evil.to_str().unwrap(), "--out"])
        .arg(&rendered)
        .assert()
        .success();
    for f in ["report.md", "report.html"] {
        let text = std::fs::read_to_string(rendered.join(f)).unwrap();
        assert!(
            !text.contains("<script"),
            "{f} carries raw HTML from results.json"
        );
        assert!(text.contains("&lt;script&gt;"), "{f} shows the text");
    }

    let plots = std::fs::read_dir(out.join("plots")).unwrap().count();
    browser_renders(&out.join("report.html"), plots);
}

/// Headless Chromium loads the page from disk: a non-blank screenshot, every plot in the DOM,
/// no console errors; at 390 and 1280 px no sideways scroll and no element wider than the page
/// outside a scrolling box, plot text of at least 10 px, no literal `**`, no two plot labels
/// overlapping (their rotated boxes); printed, at most 12 pages.
fn browser_renders(html: &Path, plots: usize) {
    let Some(chromium) = ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .find(|c| which(c))
    else {
        return skip(
            Lack::Setup,
            "browser check: no chromium here (.ci/run installs Debian's chromium)",
        );
    };
    let profile = tempfile::tempdir().unwrap();
    let shot = profile.path().join("shot.png");
    let flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
        "--window-size=1200,3000",
    ];
    let url = format!("file://{}", html.display());
    let run = |extra: &[String]| {
        std::process::Command::new(chromium)
            .args(flags)
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .args(extra)
            .arg(&url)
            .output()
            .unwrap()
    };
    let o = run(&[format!("--screenshot={}", shot.display())]);
    assert!(
        shot.exists(),
        "no screenshot: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let png = std::fs::read(&shot).unwrap();
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 20_000,
        "blank-looking screenshot ({} bytes)",
        png.len()
    );
    let o = run(&[
        "--dump-dom".to_string(),
        "--enable-logging=stderr".to_string(),
        "--v=0".to_string(),
    ]);
    let dom = String::from_utf8_lossy(&o.stdout);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(
        dom.matches("class=\"plot\"").count(),
        plots,
        "every plot element present"
    );
    assert!(dom.contains("Findings"));
    assert!(
        !stderr.contains("CONSOLE") && !stderr.contains("Uncaught"),
        "console errors: {stderr}"
    );
    // Layout at a phone's width and a desk's: the page is loaded in a frame of that width and
    // measured from outside it (headless windows are at least 500 px wide).
    let wrap = profile.path().join("wrap.html");
    for width in [390, 1280] {
        std::fs::write(&wrap, layout_probe(html, width)).unwrap();
        let o = std::process::Command::new(chromium)
            .args(flags)
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .args([
                "--allow-file-access-from-files",
                "--virtual-time-budget=5000",
                "--dump-dom",
            ])
            .arg(format!("file://{}", wrap.display()))
            .output()
            .unwrap();
        let dom = String::from_utf8_lossy(&o.stdout);
        let json = dom
            .split("<output id=\"probe\">")
            .nth(1)
            .and_then(|r| r.split("</output>").next())
            .unwrap_or_else(|| panic!("{width} px: no measurement in {dom}"));
        let m: serde_json::Value = serde_json::from_str(&json.replace("&amp;", "&")).unwrap();
        eprintln!("layout at {width} px: {m}");
        assert_eq!(m["vw"], width, "{m}");
        assert!(
            m["scrollW"].as_u64() <= m["clientW"].as_u64(),
            "{width} px: the page scrolls sideways: {m}"
        );
        let widths: Vec<u64> = m["plots"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w.as_u64().unwrap())
            .collect();
        assert_eq!(widths.len(), plots, "{m}");
        assert!(
            widths.iter().all(|w| *w >= 300),
            "{width} px: a plot under 300 px: {m}"
        );
        assert!(
            m["tables"].as_u64().unwrap() >= 10,
            "tables are <table>s: {m}"
        );
        assert_eq!(m["pres"], 0, "no table left as preformatted text: {m}");
        assert!(
            m["contents"].as_u64().unwrap() >= 10,
            "a contents list: {m}"
        );
        assert_eq!(
            m["badLinks"],
            serde_json::json!([]),
            "every link resolves: {m}"
        );
        assert_eq!(
            m["wide"],
            serde_json::json!([]),
            "{width} px: elements wider than the page outside a scrolling box: {m}"
        );
        assert!(
            m["minPlotText"].as_f64().unwrap() >= 10.0,
            "{width} px: plot text under 10 px: {m}"
        );
        assert_eq!(m["stars"], false, "literal ** in the page: {m}");
        assert_eq!(
            m["overlaps"],
            serde_json::json!([]),
            "{width} px: plot labels that overlap: {m}"
        );
    }
    // Printed: whole plots, no repeated tables, at most 12 pages for the quick suite.
    let pdf = profile.path().join("report.pdf");
    run(&[
        format!("--print-to-pdf={}", pdf.display()),
        "--no-pdf-header-footer".into(),
    ]);
    let bytes = std::fs::read(&pdf).unwrap();
    let pages = count_pdf_pages(&bytes);
    eprintln!("printed: {pages} pages");
    assert!((1..=12).contains(&pages), "{pages} printed pages");
}

/// `/Type /Page` objects (not `/Pages`) in a PDF.
fn count_pdf_pages(pdf: &[u8]) -> usize {
    let text = String::from_utf8_lossy(pdf);
    text.match_indices("/Type")
        .filter(|(i, _)| {
            let rest = text[i + 5..].trim_start();
            rest.starts_with("/Page") && !rest.starts_with("/Pages")
        })
        .count()
}

/// A page that loads the report in a frame `width` px wide and writes what it measured into an
/// `<output id="probe">`: the frame's widths, each plot's width, tables, links that do not
/// resolve.
fn layout_probe(report: &Path, width: u32) -> String {
    format!(
        r##"<!DOCTYPE html><html><body style="margin:0"><iframe id="f" src="file://{}" style="width:{width}px;height:900px;border:0"></iframe>
<script>
document.getElementById('f').addEventListener('load', function () {{
  const d = this.contentDocument, w = this.contentWindow, b = d.documentElement;
  const r = {{
    vw: w.innerWidth, scrollW: b.scrollWidth, clientW: b.clientWidth,
    plots: [...d.querySelectorAll('figure.plot svg')].map(e => Math.round(e.getBoundingClientRect().width)),
    tables: d.querySelectorAll('table').length, pres: d.querySelectorAll('pre').length,
    contents: d.querySelectorAll('nav a[href^="#"]').length,
    badLinks: [...d.querySelectorAll('a[href^="#"]')].map(a => a.getAttribute('href').slice(1)).filter(id => !d.getElementById(id)),
    wide: [...d.body.querySelectorAll('*')].filter(e => {{
      const q = e.getBoundingClientRect();
      if (q.width === 0 || (q.right <= w.innerWidth + 1 && q.left >= -1)) return false;
      for (let a = e.parentElement; a && a !== d.body; a = a.parentElement) {{
        const o = w.getComputedStyle(a).overflowX;
        if (o === 'auto' || o === 'scroll' || o === 'hidden') return false;
      }}
      return true;
    }}).slice(0, 5).map(e => e.tagName + '.' + e.className + ' ' + Math.round(e.getBoundingClientRect().right) + ': ' + (e.textContent || '').slice(0, 40)),
    minPlotText: Math.min(...[...d.querySelectorAll('figure.plot svg text')].filter(t => t.textContent.trim()).map(t => Math.round(10 * t.getBoundingClientRect().height) / 10)),
    stars: d.body.innerText.includes('**'),
    overlaps: [...d.querySelectorAll('figure.plot svg')].flatMap(svg => {{
      // Each text's box as four corners on the page (rotated labels stay rotated), and two
      // boxes overlap when no edge of either separates them by more than 1 px.
      const quad = x => {{ const b = x.getBBox(), m = x.getScreenCTM();
        return [[b.x, b.y], [b.x + b.width, b.y], [b.x + b.width, b.y + b.height], [b.x, b.y + b.height]]
          .map(([px, py]) => [m.a * px + m.c * py + m.e, m.b * px + m.d * py + m.f]); }};
      const apart = (p, q) => [p, q].some(poly => poly.some(([x1, y1], i) => {{
        const [x2, y2] = poly[(i + 1) % 4], nx = y2 - y1, ny = x1 - x2, len = Math.hypot(nx, ny) || 1;
        const a = p.map(([x, y]) => (x * nx + y * ny) / len), c = q.map(([x, y]) => (x * nx + y * ny) / len);
        return Math.min(...a) - Math.max(...c) >= -1 || Math.min(...c) - Math.max(...a) >= -1;
      }}));
      const t = [...svg.querySelectorAll('text')].filter(x => x.textContent.trim()).map(x => [x.textContent.trim(), quad(x)]);
      const hits = [];
      for (let i = 0; i < t.length; i++) for (let j = i + 1; j < t.length; j++)
        if (!apart(t[i][1], t[j][1])) hits.push((svg.closest('figure').id || '?') + ': "' + t[i][0] + '" / "' + t[j][0] + '"');
      return hits;
    }}).slice(0, 8)
  }};
  const p = document.createElement('output'); p.id = 'probe'; p.textContent = JSON.stringify(r);
  document.body.appendChild(p);
}});
</script></body></html>"##,
        report.display()
    )
}

fn which(cmd: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(cmd).is_file()))
}

#[test]
fn an_interrupted_suite_leaves_nothing() {
    let parent = tempfile::tempdir().unwrap();
    let out = parent.path().join("rep");
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("iolab"))
        .args(["suite", "--size", "256M", "--out", out.to_str().unwrap()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(400));
    // kill(1) sends SIGINT, as Ctrl-C would.
    std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    let status = child.wait().unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
    // 128 + SIGINT, as shells expect of a program stopped by Ctrl-C (issue 11 asks for it; it
    // was 1 before).
    assert_eq!(status.code(), Some(130), "{err}");
    assert!(err.contains("interrupted"), "{err}");
    let left: Vec<_> = std::fs::read_dir(parent.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// Two CPU-bound processes compete with a quick suite: it says so (a `Warning:` line on stdout
/// and first in report.md, `"busy": true` in results.json, the busy experiments marked).
#[test]
fn a_busy_machine_is_seen_and_said() {
    let spin = || {
        std::process::Command::new("sh")
            .args(["-c", "while :; do :; done"])
            .spawn()
    };
    let (Ok(mut a), Ok(mut b)) = (spin(), spin()) else {
        return skip(Lack::Setup, "cannot start sh");
    };
    let parent = tempfile::tempdir().unwrap();
    let out = parent.path().join("rep");
    let o = iolab()
        .args([
            "suite",
            "--quick",
            "--size",
            "16M",
            "--wait-quiet",
            "1s",
            "--out",
        ])
        .arg(&out)
        .output();
    let _ = (a.kill(), b.kill(), a.wait(), b.wait());
    let o = o.unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    // The wait for a quiet machine says it gave up, and why.
    assert!(
        err.contains("gave up waiting for a quiet machine before run_read after 1 s: still busy ("),
        "{err}"
    );
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.starts_with("Warning: "), "{stdout}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    assert_eq!(v["interference"]["busy"], true, "{}", v["interference"]);
    assert!(!v["interference"]["reasons"].as_array().unwrap().is_empty());
    assert!(v["interference"]["other_cpu_cores"].as_f64().unwrap() > 0.5);
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    // The title, then the warning.
    assert!(
        md.starts_with("# iolab report\n\nWarning: "),
        "{}",
        &md[..200.min(md.len())]
    );
    assert!(md.contains("**Busy while measured:**"));
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("<p class=\"warn\"><b>Warning: "));
}

/// `--list` names every experiment; `--only` runs the chosen ones into a report of their own
/// (and no other), which `iolab report` renders again; an unknown name is refused up front.
#[test]
fn only_runs_the_chosen_experiments_into_a_report() {
    let list = iolab().args(["suite", "--list"]).output().unwrap();
    assert!(list.status.success());
    let listed = String::from_utf8_lossy(&list.stdout).into_owned();
    for key in [
        "run_read",
        "fast_warm",
        "access",
        "syscalls",
        "your_program",
    ] {
        assert!(
            listed.lines().any(|l| l.starts_with(key)),
            "{key}: {listed}"
        );
    }
    let parent = tempfile::tempdir().unwrap();
    let bad = iolab()
        .args(["suite", "--only", "syscals", "--out"])
        .arg(parent.path().join("no"))
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(
        err.contains("no experiment 'syscals'") && err.contains("syscalls"),
        "{err}"
    );
    assert!(
        std::fs::read_dir(parent.path()).unwrap().next().is_none(),
        "nothing made"
    );
    let out = parent.path().join("rep");
    let o = iolab()
        .args([
            "suite", "--quick", "--size", "16M", "--only", "syscalls", "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    assert!(v["syscalls"]["result"]["rows"].is_array(), "{v}");
    for other in ["access", "fast_warm", "run_read"] {
        assert!(v.get(other).is_none(), "{other} was not asked for");
    }
    assert_eq!(v["config"]["only"], serde_json::json!(["syscalls"]));
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("system calls"), "{md}");
    let again = parent.path().join("again");
    let o = iolab()
        .args(["report"])
        .arg(out.join("results.json"))
        .arg("--out")
        .arg(&again)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(again.join("report.html").is_file());
    // Only the suite's own data folder was made beside the report, and it is gone.
    let left: Vec<String> = std::fs::read_dir(parent.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(left.iter().all(|n| n == "rep" || n == "again"), "{left:?}");
}

/// Whether `value` follows `node` of JSON schema `root`, as far as the keywords the generated
/// schema uses (`$ref`, `anyOf`, `oneOf`, `type`, `required`, `properties`, `items`,
/// `additionalProperties`, `const`, `enum`, `minimum`); the first place it does not, if any.
fn conforms(
    root: &serde_json::Value,
    node: &serde_json::Value,
    value: &serde_json::Value,
    at: &str,
) -> Result<(), String> {
    use serde_json::Value;
    if node == &Value::Bool(true) {
        return Ok(());
    }
    if let Some(r) = node["$ref"].as_str() {
        let def = r
            .strip_prefix("#/$defs/")
            .ok_or(format!("{at}: $ref {r}"))?;
        conforms(root, &root["$defs"][def], value, at)?;
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(any) = node[key].as_array() {
            let errors: Vec<String> = any
                .iter()
                .filter_map(|n| conforms(root, n, value, at).err())
                .collect();
            if errors.len() == any.len() {
                return Err(format!("{at}: none of {key}: {}", errors.join("; ")));
            }
        }
    }
    if let Some(t) = node.get("type") {
        let types: Vec<&str> = match t {
            Value::String(s) => vec![s.as_str()],
            Value::Array(a) => a.iter().filter_map(|x| x.as_str()).collect(),
            _ => vec![],
        };
        let is = |t: &str| match t {
            "object" => value.is_object(),
            "array" => value.is_array(),
            "string" => value.is_string(),
            "boolean" => value.is_boolean(),
            "null" => value.is_null(),
            "number" => value.is_number(),
            "integer" => value.is_i64() || value.is_u64(),
            _ => false,
        };
        if !types.iter().any(|t| is(t)) {
            return Err(format!("{at}: {value} is not {types:?}"));
        }
    }
    if let Some(c) = node.get("const")
        && c != value
    {
        return Err(format!("{at}: {value} is not {c}"));
    }
    if let Some(e) = node["enum"].as_array()
        && !e.contains(value)
    {
        return Err(format!("{at}: {value} is not one of {e:?}"));
    }
    if let (Some(min), Some(x)) = (node["minimum"].as_f64(), value.as_f64())
        && x < min
    {
        return Err(format!("{at}: {x} is below {min}"));
    }
    if let Some(obj) = value.as_object() {
        for k in node["required"].as_array().into_iter().flatten() {
            let k = k.as_str().unwrap_or_default();
            if !obj.contains_key(k) {
                return Err(format!("{at}: lacks {k}"));
            }
        }
        for (k, v) in obj {
            let sub = &node["properties"][k];
            let sub = if sub.is_null() {
                &node["additionalProperties"]
            } else {
                sub
            };
            if sub.is_object() {
                conforms(root, sub, v, &format!("{at}/{k}"))?;
            }
        }
    }
    if let (Some(items), Some(a)) = (node.get("items"), value.as_array()) {
        for (i, x) in a.iter().enumerate() {
            conforms(root, items, x, &format!("{at}/{i}"))?;
        }
    }
    Ok(())
}
