//! One typed table, and the document around it, rendered in every format by one renderer each
//! (as hyperfine's exporters render one result): an experiment says *what* its cells hold (a
//! size, a rate to so many decimals, a count, a yes/no, a missing figure) and the renderers say
//! how each format writes it. Text and Markdown show sizes for people (`8.0 MiB`, `yes`/`NO`,
//! `-` for a missing figure); CSV writes plain numbers, `true`/`false` and an empty cell, with
//! units in its headers. No experiment matches on the output format: [`render`] does, once.

use super::{Format, csv_key, csv_line, markdown_table};
use crate::size::format_size;

/// What one cell holds.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// Words (a method, a state, a name).
    Text(String),
    /// A whole number of things.
    Count(u64),
    /// A figure to so many decimals.
    Fixed(f64, usize),
    /// Bytes: a human size in text and Markdown, the number in CSV.
    Bytes(u64),
    /// Yes or no: `yes`/`NO` for people, `true`/`false` in CSV.
    Flag(bool),
    /// No figure (too few samples, not measured): `-`, or an empty CSV cell.
    Missing,
}

impl Value {
    /// Words.
    pub fn text(s: impl Into<String>) -> Value {
        Value::Text(s.into())
    }

    /// A figure to `decimals` places, or [`Value::Missing`] without one.
    pub fn fixed_or_missing(v: Option<f64>, decimals: usize) -> Value {
        v.map_or(Value::Missing, |v| Value::Fixed(v, decimals))
    }

    /// The cell as people read it (text and Markdown): words with a hidden character (an
    /// escape, a new line, U+2028) in `$'...'` quoting, so that a file name keeps its row.
    pub fn shown(&self) -> String {
        self.for_people()
    }

    fn for_people(&self) -> String {
        match self {
            Value::Text(s) => crate::shown::text(s).into_owned(),
            Value::Count(n) => n.to_string(),
            Value::Fixed(v, d) => format!("{v:.d$}"),
            Value::Bytes(b) => format_size(*b),
            Value::Flag(true) => "yes".into(),
            Value::Flag(false) => "NO".into(),
            Value::Missing => "-".into(),
        }
    }

    fn for_csv(&self) -> String {
        match self {
            Value::Bytes(b) => b.to_string(),
            Value::Flag(b) => super::csv_bool(*b),
            Value::Missing => String::new(),
            Value::Text(s) => s.clone(),
            other => other.for_people(),
        }
    }
}

/// A column: its header for people (with its unit where the unit is fixed: `MiB/s`, `p99 us`)
/// and its CSV header (lower case, unit included: `bs_bytes`).
#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    /// The header in text and Markdown.
    pub title: String,
    /// The header in CSV.
    pub csv: String,
}

impl Column {
    /// A column whose CSV header is its title's [`csv_key`].
    pub fn new(title: &str) -> Column {
        Column {
            title: title.into(),
            csv: csv_key(title),
        }
    }

    /// The same column with its own CSV header (where CSV spells a unit the title leaves to
    /// the cells: `bs` holds `4.0 KiB` for people and `bs_bytes` 4096 in CSV).
    pub fn csv(mut self, key: &str) -> Column {
        self.csv = key.into();
        self
    }
}

/// A row: its cells, or, for something that could not be measured here, its leading cells
/// and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// Its cells (the leading ones only, when it was not measured).
    pub cells: Vec<Value>,
    /// Why it was not measured.
    pub unsupported: Option<String>,
}

/// A table of typed cells.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    /// Its columns.
    pub columns: Vec<Column>,
    /// Its rows.
    pub rows: Vec<Row>,
    /// CSV gets a last column `unsupported` with each row's reason (every row as wide as the
    /// header), for tables whose rows may not all be measured.
    pub may_be_unsupported: bool,
}

impl Table {
    /// An empty table of these columns.
    pub fn new(columns: impl IntoIterator<Item = Column>) -> Table {
        Table {
            columns: columns.into_iter().collect(),
            rows: Vec::new(),
            may_be_unsupported: false,
        }
    }

    /// Columns titled `titles`, each CSV header its title's key.
    pub fn titled(titles: &[&str]) -> Table {
        Table::new(titles.iter().map(|t| Column::new(t)))
    }

    /// Adds a row.
    pub fn row(&mut self, cells: Vec<Value>) {
        self.rows.push(Row {
            cells,
            unsupported: None,
        });
    }

    /// Adds a row that could not be measured: its leading cells, and why (text shows
    /// `unsupported: why` after them; CSV leaves the figures empty and says why last).
    pub fn unsupported(&mut self, lead: Vec<Value>, why: &str) {
        self.may_be_unsupported = true;
        self.rows.push(Row {
            cells: lead,
            unsupported: Some(why.to_string()),
        });
    }

    /// Header and rows for people.
    fn for_people(&self) -> Vec<Vec<String>> {
        let mut rows = vec![self.columns.iter().map(|c| c.title.clone()).collect()];
        for r in &self.rows {
            let mut cells: Vec<String> = r.cells.iter().map(Value::for_people).collect();
            if let Some(why) = &r.unsupported {
                cells.push(not_measured(why));
            }
            rows.push(cells);
        }
        rows
    }

    /// Header and rows for CSV, every row as wide as the header.
    fn for_csv(&self) -> Vec<Vec<String>> {
        let width = self.columns.len();
        let mut head: Vec<String> = self.columns.iter().map(|c| c.csv.clone()).collect();
        if self.may_be_unsupported {
            head.push("unsupported".into());
        }
        let mut rows = vec![head];
        for r in &self.rows {
            let mut cells: Vec<String> = r.cells.iter().map(Value::for_csv).collect();
            cells.resize(width, String::new());
            if self.may_be_unsupported {
                cells.push(r.unsupported.clone().unwrap_or_default());
            }
            rows.push(cells);
        }
        rows
    }
}

/// What a block of a document holds.
#[derive(Debug, Clone, PartialEq)]
pub enum Content {
    /// A title line (bold in Markdown).
    Heading(String),
    /// A table.
    Table(Table),
    /// A paragraph: what the figures mean, a note, a verdict.
    Para(String),
    /// Lines kept as they are (a course program's output, a plot in characters).
    Lines(String),
    /// Items, one a line in text and a list in Markdown (findings, notes).
    Items(Vec<String>),
    /// The start of a part the report may fold away (`== title`; report.html folds it into a
    /// `<details>`).
    Fold(String),
}

/// Which formats show a block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shown {
    /// Text and Markdown.
    Both,
    /// The terminal's text alone (a line about the rounds, a program's own output).
    Text,
    /// Markdown (and so the HTML report) alone.
    Markdown,
    /// Neither: a table for CSV and JSON alone (the data behind what text shows otherwise).
    Data,
}

/// One block of a document and where it shows.
#[derive(Debug, Clone, PartialEq)]
pub struct Element {
    /// What it holds.
    pub content: Content,
    /// Where it shows.
    pub shown: Shown,
}

/// A report: blocks in order. CSV is its first table (one table with units in its headers);
/// text and Markdown show every block meant for them, a blank line apart.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Document {
    /// The blocks, in order.
    pub blocks: Vec<Element>,
}

impl Document {
    /// An empty document.
    pub fn new() -> Document {
        Document::default()
    }

    fn push(mut self, content: Content, shown: Shown) -> Document {
        self.blocks.push(Element { content, shown });
        self
    }

    /// A title line.
    pub fn heading(self, s: impl Into<String>) -> Document {
        self.push(Content::Heading(s.into()), Shown::Both)
    }

    /// A table.
    pub fn table(self, t: Table) -> Document {
        self.push(Content::Table(t), Shown::Both)
    }

    /// A paragraph (nothing when empty).
    pub fn para(self, s: impl Into<String>) -> Document {
        let s = s.into();
        if s.trim().is_empty() {
            return self;
        }
        self.push(Content::Para(s.trim_end().to_string()), Shown::Both)
    }

    /// Lines kept as they are (nothing when empty).
    pub fn lines(self, s: impl Into<String>) -> Document {
        let s = s.into();
        if s.trim().is_empty() {
            return self;
        }
        self.push(Content::Lines(s.trim_end().to_string()), Shown::Both)
    }

    /// Items: a line each in text, a list in Markdown (nothing when there are none).
    pub fn items(self, items: Vec<String>) -> Document {
        let items: Vec<String> = items
            .into_iter()
            .map(|i| i.trim().to_string())
            .filter(|i| !i.is_empty())
            .collect();
        if items.is_empty() {
            return self;
        }
        self.push(Content::Items(items), Shown::Both)
    }

    /// The start of a part that may be folded away.
    pub fn fold(self, title: impl Into<String>) -> Document {
        self.push(Content::Fold(title.into()), Shown::Both)
    }

    /// The last block added shows only where `shown` says.
    pub fn only(mut self, shown: Shown) -> Document {
        if let Some(b) = self.blocks.last_mut() {
            b.shown = shown;
        }
        self
    }

    /// Another document's blocks after these.
    pub fn then(mut self, other: Document) -> Document {
        self.blocks.extend(other.blocks);
        self
    }

    /// The tables, in order.
    pub fn tables(&self) -> impl Iterator<Item = &Table> {
        self.blocks.iter().filter_map(|b| match &b.content {
            Content::Table(t) => Some(t),
            _ => None,
        })
    }
}

/// `doc` in `format`: the one place that matches on the output format. JSON, which commands
/// print from their typed results, is here the tables as arrays of objects keyed by their CSV
/// headers.
pub fn render(doc: &Document, format: Format) -> String {
    match format {
        Format::Text => text(doc),
        Format::Markdown => markdown(doc),
        Format::Csv => csv(doc),
        Format::Json => tables_json(doc),
    }
}

/// A command's output in `format`: JSON is the value `value` makes (the typed result, not a
/// rendering of its tables), the other formats the report `doc` makes; only the one asked for
/// is made.
pub fn output<T: serde::Serialize>(
    format: Format,
    value: impl FnOnce() -> T,
    doc: impl FnOnce() -> Document,
) -> String {
    match format {
        Format::Json => super::json(&value()),
        other => render(&doc(), other),
    }
}

/// Aligned text for a terminal.
pub fn text(doc: &Document) -> String {
    let parts: Vec<String> = doc
        .blocks
        .iter()
        .filter(|b| matches!(b.shown, Shown::Both | Shown::Text))
        .map(|b| match &b.content {
            Content::Heading(s) | Content::Para(s) | Content::Lines(s) => format!("{s}\n"),
            Content::Fold(s) => format!("== {s}\n"),
            Content::Items(v) => v.iter().map(|i| format!("{i}\n")).collect(),
            Content::Table(t) => aligned(t),
        })
        .collect();
    parts.join("\n")
}

/// A table aligned for a terminal: the columns as wide as their measured cells (a row that was
/// not measured says why after its leading cells, without widening a column).
fn aligned(t: &Table) -> String {
    let rows = t.for_people();
    let whys: Vec<Option<&String>> = std::iter::once(None)
        .chain(t.rows.iter().map(|r| r.unsupported.as_ref()))
        .collect();
    // The reason is left out of the widths; the leading cells count.
    let widths: Vec<Vec<String>> = rows
        .iter()
        .zip(&whys)
        .map(|(cells, why)| cells[..cells.len() - usize::from(why.is_some())].to_vec())
        .collect();
    let mut out = String::new();
    for (cells, why) in super::padded(&widths).iter().zip(&whys) {
        let mut line = cells.join("  ");
        if let Some(why) = why {
            line = format!("{line}  {}", not_measured(why));
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// Markdown: bold headings, real tables, paragraphs, lists.
pub fn markdown(doc: &Document) -> String {
    let parts: Vec<String> = doc
        .blocks
        .iter()
        .filter(|b| matches!(b.shown, Shown::Both | Shown::Markdown))
        .map(|b| match &b.content {
            Content::Heading(s) => format!("**{}**\n", s.replace('*', "\\*")),
            Content::Fold(s) => format!("== {s}\n"),
            Content::Items(v) => v.iter().map(|i| format!("- {i}\n")).collect(),
            Content::Para(s) => format!("{s}\n"),
            // A paragraph that keeps its lines (report.html breaks them; no preformatted
            // text, which a phone scrolls sideways).
            Content::Lines(s) => format!("{s}\n"),
            Content::Table(t) => markdown_table(&t.for_people()),
        })
        .collect();
    parts.join("\n")
}

/// CSV: the first table, shown or [`Shown::Data`] (a document without one is an empty line).
pub fn csv(doc: &Document) -> String {
    match doc.tables().next() {
        Some(t) => t.for_csv().iter().map(|r| csv_line(r)).collect(),
        None => "\n".into(),
    }
}

/// HTML: the Markdown rendered as report.html shows every section (tables in a scrolling
/// wrapper, numbers right-aligned, text escaped).
pub fn html(doc: &Document) -> String {
    super::markdown::md_to_html(&markdown(doc))
}

/// The tables as JSON: an array per table, an object per row keyed by the CSV headers (numbers
/// where the CSV cell is one).
fn tables_json(doc: &Document) -> String {
    let tables: Vec<Vec<serde_json::Map<String, serde_json::Value>>> = doc
        .tables()
        .map(|t| {
            let rows = t.for_csv();
            let (head, body) = rows.split_first().expect("a header");
            body.iter()
                .map(|r| {
                    head.iter()
                        .zip(r)
                        .map(|(k, v)| {
                            let value = match (v.parse::<u64>(), v.parse::<f64>()) {
                                (Ok(n), _) => serde_json::json!(n),
                                (_, Ok(n)) if n.is_finite() => serde_json::json!(n),
                                _ if v == "true" || v == "false" => {
                                    serde_json::Value::Bool(v == "true")
                                }
                                _ if v.is_empty() => serde_json::Value::Null,
                                _ => serde_json::Value::String(v.clone()),
                            };
                            (k.clone(), value)
                        })
                        .collect()
                })
                .collect()
        })
        .collect();
    super::json(&tables)
}

/// A row's reason for having no figures, as printed: "unsupported: why", unless the reason
/// already says it was not measured (a budget that ran out: the method is supported).
fn not_measured(why: &str) -> String {
    if why.starts_with("not measured") {
        why.to_string()
    } else {
        format!("unsupported: {why}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One table with every kind of cell, an unmeasured row and every kind of block: each
    /// format pinned by a snapshot.
    fn sample() -> Document {
        let mut t = Table::new([
            Column::new("bs").csv("bs_bytes"),
            Column::new("method"),
            Column::new("MiB/s"),
            Column::new("runs"),
            Column::new("cache ok"),
            Column::new("p99 us"),
        ]);
        t.row(vec![
            Value::Bytes(4096),
            Value::text("read"),
            Value::Fixed(1234.567, 1),
            Value::Count(8),
            Value::Flag(true),
            Value::Fixed(12.25, 1),
        ]);
        t.row(vec![
            Value::Bytes(1 << 20),
            Value::text("mmap, hinted"),
            Value::Fixed(9876.5, 1),
            Value::Count(8),
            Value::Flag(false),
            Value::Missing,
        ]);
        t.unsupported(
            vec![Value::Bytes(1 << 20), Value::text("uring")],
            "io_uring is disabled",
        );
        Document::new()
            .heading("sweep of big.bin")
            .table(t)
            .para("p99 from 100 samples (else -)")
            .para("up to 8 rounds")
            .only(Shown::Text)
            .lines("took 12ms\niops : 3.40")
            .only(Shown::Markdown)
            .items(vec!["Finding: read is 1.2x mmap".into(), " ".into()])
            .fold("each run")
            .para("run 1: 1234.6 MiB/s")
    }

    #[test]
    fn text_snapshot() {
        insta::assert_snapshot!(render(&sample(), Format::Text));
    }

    #[test]
    fn markdown_snapshot() {
        insta::assert_snapshot!(render(&sample(), Format::Markdown));
    }

    #[test]
    fn csv_snapshot() {
        insta::assert_snapshot!(render(&sample(), Format::Csv));
    }

    #[test]
    fn html_snapshot() {
        insta::assert_snapshot!(html(&sample()));
    }

    #[test]
    fn json_snapshot() {
        insta::assert_snapshot!(render(&sample(), Format::Json));
    }

    #[test]
    fn csv_rows_are_as_wide_as_the_header_and_hold_no_text_for_people() {
        let csv = render(&sample(), Format::Csv);
        let mut reader = ::csv::ReaderBuilder::new()
            .has_headers(false)
            .from_reader(csv.as_bytes());
        let rows: Vec<::csv::StringRecord> = reader.records().map(|r| r.unwrap()).collect();
        assert_eq!(rows.len(), 4);
        for r in &rows {
            assert_eq!(r.len(), 7, "{r:?}");
            for cell in r {
                assert!(!["yes", "NO", "-"].contains(&cell), "{cell} in {r:?}");
                assert!(!cell.ends_with("iB"), "a human size: {r:?}");
            }
        }
        assert_eq!(&rows[3][6], "io_uring is disabled");
        assert_eq!(&rows[3][2], "", "no figure for an unmeasured row");
    }
}
