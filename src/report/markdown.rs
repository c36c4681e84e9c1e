//! Markdown for report.md and its conversion to report.html by pulldown-cmark: tables in a
//! scrolling wrapper with numbers right-aligned, `== ` blocks folded, text from a results file
//! escaped on both paths.

use super::escape_html as esc;

/// A table cell as HTML: numbers right-aligned; a 'no' under a check column marked.
pub fn cell_html(tag: &str, text: &str, header: &str) -> String {
    let t = text.trim();
    let numeric = t
        .trim_start_matches(['-', '+'])
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_digit());
    // An XOR is hex: a label, not a quantity.
    let numeric = numeric && !header.eq_ignore_ascii_case("xor");
    let check = header.contains("ok") || header.contains("verified");
    let no = t.eq_ignore_ascii_case("no") || t.starts_with("no ");
    let class = if tag == "td" && check && no {
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
pub fn md_to_html(md: &str) -> String {
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
pub fn markdown_chunk(md: &str) -> String {
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
pub fn spaced_tables(md: &str) -> String {
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

/// Text from a results file as Markdown shows it: `&`, `<` and `>` as entities, so that no
/// string (a host name, a cause, a table cell of a hostile results.json) passes as HTML to
/// whatever renders report.md, as report.html escapes them. Fenced code needs none (Markdown
/// shows it as it is), and Markdown's own emphasis in iolab's tables is kept.
pub fn md_esc(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// `text` as a CommonMark fenced code block: the fence on lines of its own (a table without a
/// final newline once ended the fence on its last line, and everything after rendered as code),
/// and longer than any run of backticks inside.
pub fn fenced(text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    let nl = if text.ends_with('\n') { "" } else { "\n" };
    format!("{fence}text\n{text}{nl}{fence}\n\n")
}
