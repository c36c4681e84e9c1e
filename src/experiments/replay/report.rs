//! The replay's table and findings: per cache state, the fastest method that beat the reads as
//! recorded at 95%, or a finding that none clearly did.

use super::{ReplayResult, ReplayRow};
use crate::cache::CacheMode;
use crate::harness::Comparison;
use crate::measure::decide::{Decided, Verdict};
use crate::measure::finding::{Better, Finding, Pairing, Side, compare};
use crate::report::{Format, markdown_table, table};
use crate::size::format_size;

/// Per cache state: the method with the largest decided gain over the first method (the reads
/// as recorded), as a finding with its interval; with none decided faster, the comparison with
/// the largest median gain, whose finding then says there is no clear winner.
pub(super) fn findings(
    rows: &[ReplayRow],
    caches: &[CacheMode],
    per_cache: usize,
    verdicts: &[Option<Verdict>],
    comparisons: &[Comparison],
) -> Vec<Finding> {
    let mut out = Vec::new();
    for (c, cache) in caches.iter().enumerate() {
        let base = c * per_cache;
        let mine: Vec<(usize, Verdict)> = comparisons
            .iter()
            .zip(verdicts)
            .enumerate()
            .filter(|(_, (cmp, _))| cmp.b == base)
            .filter_map(|(k, (_, v))| v.map(|v| (k, v)))
            .collect();
        let won = |v: &Verdict| v.decided == Decided::Winner && v.a_larger == Some(true);
        let best = mine
            .iter()
            .filter(|(_, v)| won(v))
            .max_by(|a, b| a.1.ratio.total_cmp(&b.1.ratio))
            .or_else(|| mine.iter().max_by(|a, b| a.1.ratio.total_cmp(&b.1.ratio)));
        let Some(&(k, v)) = best else {
            continue;
        };
        let a = &rows[comparisons[k].a];
        let b = &rows[base];
        let side = |r: &ReplayRow| Side {
            name: r.method.clone(),
            s: r.mib_s.clone(),
            cite: format!("replay: {} {}", r.method, r.cache.name()),
        };
        let key = format!("replay-{}", cache.name());
        let what = format!("the traced program's reads replayed, {}", cache.name());
        if let Some(f) = compare(
            &key,
            &what,
            "MiB/s",
            Better::Higher,
            Pairing::Given(v),
            side(a),
            side(b),
        ) {
            out.push(f);
        }
    }
    out
}

/// The table: one row per method and cache state.
pub fn rows(r: &ReplayResult) -> Vec<Vec<String>> {
    let mut rows = vec![
        [
            "method",
            "cache",
            "MiB/s",
            "interval",
            "seconds",
            "bytes read",
            "requests",
            "note",
        ]
        .map(String::from)
        .to_vec(),
    ];
    for row in &r.rows {
        let note = row.unsupported.clone().unwrap_or_else(|| {
            if row.bytes > r.bytes {
                format!("+{} aligned", format_size(row.bytes - r.bytes))
            } else {
                String::new()
            }
        });
        rows.push(vec![
            row.method.clone(),
            row.cache.name().to_string(),
            format!("{:.0}", row.mib_s.median),
            format!("{:.0}-{:.0}", row.mib_s.ci[0], row.mib_s.ci[1]),
            format!("{:.4}", row.seconds.median),
            format_size(row.bytes),
            row.ops.to_string(),
            note,
        ]);
    }
    rows
}

/// The replay in `format` (JSON is the caller's).
pub fn render(r: &ReplayResult, format: Format) -> String {
    let mut head = vec![format!(
        "replay of {}: {} accesses of {} files, {} per run; {:.0}% sequential, typical access {}",
        r.command.join(" "),
        r.reads,
        r.files,
        format_size(r.bytes),
        100.0 * r.sequential,
        format_size(r.typical_read)
    )];
    for f in &r.findings {
        head.push(format!("finding: {}", f.text));
    }
    for n in &r.notes {
        head.push(format!("note: {n}"));
    }
    head.push(crate::report::rounds_line(&r.rounds));
    let t = rows(r);
    match format {
        Format::Markdown => format!(
            "{}\n\n{}",
            head.iter()
                .map(|l| format!("- {l}"))
                .collect::<Vec<_>>()
                .join("\n"),
            markdown_table(&t)
        ),
        Format::Csv => crate::report::csv_table(&t),
        _ => format!("{}\n\n{}", head.join("\n"), table(&t)),
    }
}

/// The suite's section: the profile's summary, the overhead, the findings, and one row per
/// method with cold and warm side by side.
pub(super) fn suite_section(out: &super::suite::YourProgram, format: Format) -> String {
    let p = &out.profile;
    let o = &out.overhead;
    let r = &out.replay;
    let mut head = vec![
        format!(
            "{} files, {} read in {} calls (typical {}); the kernel's rchar agrees {:+.3}%",
            r.files,
            format_size(p.reads.bytes),
            p.reads.calls,
            format_size(r.typical_read),
            100.0 * (p.rchar_agreement.unwrap_or(f64::NAN) - 1.0)
        ),
        format!(
            "tracing overhead: {:.2}x wall time (min {:.2}, max {:.2}, {} interleaved rounds)",
            o.ratio,
            o.ratio_min,
            o.ratio_max,
            o.traced_s.len()
        ),
    ];
    head.extend(r.findings.iter().map(|f| format!("finding: {}", f.text)));
    let mut t = vec![
        ["method", "cold MiB/s", "warm MiB/s", "requests"]
            .map(String::from)
            .to_vec(),
    ];
    let cell = |m: &str, c: CacheMode| {
        r.rows
            .iter()
            .find(|x| x.method == m && x.cache == c)
            .map_or("-".to_string(), |x| match &x.unsupported {
                Some(_) => "unsupported".into(),
                None => format!(
                    "{:.0} ({:.0}-{:.0})",
                    x.mib_s.median, x.mib_s.ci[0], x.mib_s.ci[1]
                ),
            })
    };
    let mut seen = Vec::new();
    for row in &r.rows {
        if seen.contains(&row.method) {
            continue;
        }
        seen.push(row.method.clone());
        t.push(vec![
            row.method.clone(),
            cell(&row.method, CacheMode::Cold),
            cell(&row.method, CacheMode::Warm),
            row.ops.to_string(),
        ]);
    }
    match format {
        Format::Markdown => format!(
            "{}\n\n{}",
            head.iter()
                .map(|l| format!("- {l}"))
                .collect::<Vec<_>>()
                .join("\n"),
            markdown_table(&t)
        ),
        _ => format!("{}\n\n{}", head.join("\n"), table(&t)),
    }
}
