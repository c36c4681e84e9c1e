use super::{GLOSSARY, fenced, md_to_html, readable, spaced_tables};

#[test]
fn markdown_tables_become_html_tables_and_stages_fold() {
    let md = "intro line\n| bs | MiB/s | cache ok | xor |\n|---|---|---|---|\n| 4 KiB | 12.5 | no | 0efb4b5f |\n\n== stage 1: start\n| a | b |\n|---|---|\n| x | 1 |\nwhy it moved\n";
    let html = md_to_html(md);
    assert_eq!(html.matches("<table>").count(), 2, "{html}");
    assert!(
        html.contains("<th>MiB/s</th>") && !html.contains("---"),
        "{html}"
    );
    assert!(
        html.contains("<td class=\"num\">4 KiB</td><td class=\"num\">12.5</td>"),
        "{html}"
    );
    assert!(
        html.contains("<td class=\"bad\">no</td><td>0efb4b5f</td>"),
        "{html}"
    );
    assert!(
        html.contains("<details><summary>stage 1: start</summary>"),
        "{html}"
    );
    assert!(html.trim_end().ends_with("</details>"), "{html}");
    assert!(
        html.starts_with("<p class=\"lines\">intro line</p>"),
        "{html}"
    );
    // Markdown keeps tables apart from the lines around them.
    assert_eq!(
        spaced_tables("a\n| x |\n|---|\nb\n"),
        "a\n\n| x |\n|---|\n\nb\n"
    );
}

#[test]
fn a_pipe_in_a_cell_bold_and_raw_html_render_as_meant() {
    let md = crate::report::markdown_table(&[
        vec!["method".into(), "note".into()],
        vec!["read".into(), "a | b".into()],
    ]);
    let html = md_to_html(&format!("**Busy:** <script>x</script> here\n\n{md}"));
    assert!(html.contains("<td>a | b</td>"), "{html}");
    assert!(html.contains("<b>Busy:</b>"), "{html}");
    assert!(
        !html.contains("<script>") && html.contains("&lt;script&gt;"),
        "{html}"
    );
    assert!(!html.contains("**"), "{html}");
}

#[test]
fn citations_read_as_words_and_big_numbers_as_sizes() {
    assert_eq!(readable("mmap warm 1048576"), "mmap warm 1 MiB");
    assert_eq!(readable("read-1b 3000"), "read-1b 3000");
}

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

/// The glossary states the rule `decide` applies: a winner outside 1/1.05 .. 1.05, within 5%
/// inside it, undecided across its edge (it once said "on one side of 1").
#[test]
fn the_glossary_states_the_verdict_rule_the_decisions_use() {
    use crate::measure::decide::{Decided, MARGIN, decide};
    let rule = GLOSSARY
        .iter()
        .find(|(t, _)| t.contains("undecided"))
        .map(|(_, m)| *m)
        .unwrap();
    assert!(rule.contains(&format!("1/{MARGIN} .. {MARGIN}")), "{rule}");
    assert_eq!(decide([MARGIN, 1.3]).0, Decided::Winner);
    assert_eq!(decide([0.5, 1.0 / MARGIN]).0, Decided::Winner);
    assert_eq!(
        decide([1.0 / MARGIN + 0.01, MARGIN - 0.01]).0,
        Decided::Equivalent
    );
    // One side of 1 but across the margin: not a winner.
    assert_eq!(decide([1.01, 1.3]).0, Decided::Undecided);
    assert!(!GLOSSARY.iter().any(|(_, m)| m.contains("one side of 1")));
}
