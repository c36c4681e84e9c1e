//! Turning results into bytes: text tables, the classic programs' lines, JSON, CSV and Markdown.
//! Every function here is pure (`result -> String`); printing is the binary's job.

pub mod forest;
pub mod markdown;
pub mod svg;
pub mod table;
pub mod trace;

pub use table::{Column, Document, Shown, Table, Value, output, render};

use serde::Serialize;

crate::named_enum! {
    /// Output formats of `--format`.
    pub enum Format {
        /// Aligned text tables (and the classic programs' lines).
        Text = "text",
        /// Pretty JSON.
        Json = "json",
        /// Comma-separated values with a header line.
        Csv = "csv",
        /// A Markdown table.
        Markdown = "markdown" | "md",
    }
}

/// Text made safe inside HTML or SVG, in element content and in quoted attributes alike.
pub fn escape_html(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

/// Pretty JSON with a trailing newline.
pub fn json<T: Serialize>(value: &T) -> String {
    let mut s =
        serde_json::to_string_pretty(value).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"));
    s.push('\n');
    s
}

fn numeric(cell: &str) -> bool {
    cell.trim_start_matches('-')
        .starts_with(|c: char| c.is_ascii_digit())
}

/// Fixed-width table from rows of cells (first row is the header): columns whose cells are
/// mostly numbers are right-aligned, the others left-aligned.
pub fn table(rows: &[Vec<String>]) -> String {
    let mut out = String::new();
    for row in padded(rows) {
        out.push_str(row.join("  ").trim_end());
        out.push('\n');
    }
    out
}

/// Every cell padded to its column's width (the widest cell of the column): right-aligned in
/// columns whose cells below the header are mostly numbers, left-aligned in the others.
pub(crate) fn padded(rows: &[Vec<String>]) -> Vec<Vec<String>> {
    let cols = rows.iter().map(|r| r.len()).max().unwrap_or(0);
    let column = |c: usize| rows.iter().filter_map(move |r| r.get(c));
    let widths: Vec<usize> = (0..cols)
        .map(|c| column(c).map(|s| s.chars().count()).max().unwrap_or(0))
        .collect();
    let right: Vec<bool> = (0..cols)
        .map(|c| {
            let body: Vec<&String> = column(c).skip(1).collect();
            body.iter().filter(|s| numeric(s)).count() * 2 > body.len()
        })
        .collect();
    rows.iter()
        .map(|row| {
            row.iter()
                .enumerate()
                .map(|(i, cell)| {
                    if right[i] {
                        format!("{cell:>w$}", w = widths[i])
                    } else {
                        format!("{cell:<w$}", w = widths[i])
                    }
                })
                .collect()
        })
        .collect()
}

/// A Markdown table from rows of cells (first row is the header); a `|` in a cell is escaped, so
/// that it stays in its cell, and a line break becomes a space.
pub fn markdown_table(rows: &[Vec<String>]) -> String {
    let mut out = String::new();
    for (i, row) in rows.iter().enumerate() {
        let cells: Vec<String> = row
            .iter()
            .map(|c| c.replace('|', "\\|").replace(['\n', '\r'], " "))
            .collect();
        out.push_str(&format!("| {} |\n", cells.join(" | ")));
        if i == 0 {
            out.push_str(&format!(
                "|{}\n",
                row.iter().map(|_| "---|").collect::<String>()
            ));
        }
    }
    out
}

/// A column name as every CSV header writes it: lower case, words and units joined by `_`
/// (`MiB/s` -> `mib_s`, `p99 us` -> `p99_us`, `cache ok` -> `cache_ok`).
pub fn csv_key(header: &str) -> String {
    let mut key = String::new();
    for c in header.chars() {
        if c.is_ascii_alphanumeric() {
            key.push(c.to_ascii_lowercase());
        } else if c == 'µ' {
            key.push('u');
        } else if c == '%' {
            key.push_str(if key.is_empty() { "pct" } else { "_pct" });
        } else if !key.is_empty() && !key.ends_with('_') {
            key.push('_');
        }
    }
    key.trim_end_matches('_').replace("__", "_")
}

/// Rows as CSV (the first row is the header, written as [`csv_key`]s).
pub fn csv_table(rows: &[Vec<String>]) -> String {
    rows.iter()
        .enumerate()
        .map(|(i, row)| {
            if i == 0 {
                csv_line(&row.iter().map(|h| csv_key(h)).collect::<Vec<_>>())
            } else {
                csv_line(row)
            }
        })
        .collect()
}

/// A CSV line, quoted as the csv crate quotes (RFC 4180).
pub fn csv_line(cells: &[String]) -> String {
    let mut w = csv::WriterBuilder::new()
        .terminator(csv::Terminator::Any(b'\n'))
        .from_writer(Vec::new());
    // Writing into a Vec cannot fail; a row of no cells is an empty line.
    let _ = w.write_record(cells);
    let bytes = w.into_inner().unwrap_or_default();
    let line = String::from_utf8_lossy(&bytes).into_owned();
    if line.is_empty() { "\n".into() } else { line }
}

/// A result with its findings: as JSON, the result's fields and a top-level `findings` array.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct WithFindings<'a, T: Serialize> {
    /// The result.
    #[serde(flatten)]
    pub result: &'a T,
    /// What it concludes.
    pub findings: &'a [crate::measure::finding::Finding],
}

/// A result as JSON with its findings added as a top-level `findings` array.
pub fn json_with_findings<T: Serialize>(
    r: &T,
    findings: &[crate::measure::finding::Finding],
) -> String {
    json(&WithFindings {
        result: r,
        findings,
    })
}

/// A boolean as every CSV and JSON output spells it.
pub fn csv_bool(b: bool) -> String {
    if b { "true" } else { "false" }.into()
}

/// The median of some figures (0 for none), for a table's cell.
pub(crate) fn median(v: impl Iterator<Item = f64>) -> f64 {
    crate::measure::stats::summarize(&v.collect::<Vec<_>>()).median
}

/// How a harness's rounds went, in one line for a text table's foot (empty for fixed rounds).
pub fn rounds_line(r: &crate::harness::RoundsTaken) -> String {
    let Some(stop) = r.stop else {
        return String::new();
    };
    if r.comparisons == 0 {
        return format!("\n{} rounds\n", r.rounds);
    }
    let why = match stop {
        crate::harness::Stop::Decided => format!(
            "every comparison decided at {}",
            crate::measure::decide::percent(r.level)
        ),
        crate::harness::Stop::Budget => format!(
            "the time budget ended them; {} of {} comparisons undecided",
            r.undecided, r.comparisons
        ),
        crate::harness::Stop::Capped if r.rounds < crate::measure::decide::LOOKS[0] => format!(
            "undecided: budget: the time budget (a cap) ended them before the first look was complete; {} of {} comparisons undecided",
            r.undecided, r.comparisons
        ),
        crate::harness::Stop::Capped => format!(
            "the time budget (a cap) ended them; {} of {} comparisons undecided",
            r.undecided, r.comparisons
        ),
        crate::harness::Stop::LastLook => format!(
            "the last planned look; {} of {} comparisons undecided",
            r.undecided, r.comparisons
        ),
    };
    let mut out = format!(
        "\nup to {} interleaved rounds after {} of {} planned looks: {why}\n",
        r.rounds, r.looks, r.planned_looks
    );
    for c in &r.compared {
        let v = &c.verdict;
        let said = match (v.decided, v.a_larger) {
            (crate::measure::decide::Decided::Winner, Some(true)) => "the first is larger",
            (crate::measure::decide::Decided::Winner, _) => "the first is smaller",
            (crate::measure::decide::Decided::Equivalent, _) => "within 5%",
            _ => "undecided",
        };
        out.push_str(&format!(
            "  {} / {}: {:.2}x ({}), {}: {said}\n",
            c.a,
            c.b,
            v.ratio,
            v.kind.says(),
            v.interval_words()
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_headers_have_one_style() {
        assert_eq!(csv_key("MiB/s"), "mib_s");
        assert_eq!(csv_key("p99 us"), "p99_us");
        assert_eq!(csv_key("cache ok"), "cache_ok");
        assert_eq!(csv_key("resident %"), "resident_pct");
        assert_eq!(csv_key("dev B/B"), "dev_b_b");
        assert_eq!(csv_key("mib_s"), "mib_s");
        assert_eq!(csv_key("hot p99 µs"), "hot_p99_us");
        let rows = vec![
            vec!["MiB/s".to_string(), "time s".into()],
            vec!["1.5".into(), "2".into()],
        ];
        assert_eq!(csv_table(&rows), "mib_s,time_s\n1.5,2\n");
    }

    #[test]
    fn one_escape_for_html_and_svg_covers_quotes() {
        assert_eq!(
            escape_html(r#"<a href="x">Tom's & Jerry's</a>"#),
            "&lt;a href=&quot;x&quot;&gt;Tom&#39;s &amp; Jerry&#39;s&lt;/a&gt;"
        );
    }

    #[test]
    fn tables_align_and_escape() {
        let rows = vec![
            vec!["a".to_string(), "bb".into()],
            vec!["ccc".into(), "d".into()],
        ];
        assert_eq!(table(&rows), "a    bb\nccc  d\n");
        let nums = vec![
            vec!["x".to_string(), "n".into()],
            vec!["ab".into(), "10".into()],
            vec!["c".into(), "7".into()],
        ];
        assert_eq!(table(&nums), "x    n\nab  10\nc    7\n");
        assert_eq!(
            markdown_table(&rows),
            "| a | bb |\n|---|---|\n| ccc | d |\n"
        );
        assert_eq!(
            csv_line(&["x,y".into(), "q\"".into()]),
            "\"x,y\",\"q\"\"\"\n"
        );
    }
}
