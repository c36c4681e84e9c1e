//! The host block of a report and, for several results, the hosts side by side in numbers.

use super::*;

/// The host block: one fact per row.
pub(super) fn host_rows(r: &SuiteResult) -> Vec<(&'static str, String)> {
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
    .chain(io_rows(&h.io))
    .collect()
}

/// The facts that decide I/O, one per row; one said as unknown where sysfs has none.
pub(super) fn io_rows(io: &crate::experiments::host_io::IoFacts) -> Vec<(&'static str, String)> {
    let or = |v: &Option<String>, none: &str| v.clone().unwrap_or_else(|| none.to_string());
    vec![
        ("device", or(&io.device_model, "? (no model in sysfs)")),
        (
            "read-ahead",
            io.read_ahead_kb
                .map(|k| format!("{k} KiB (read_ahead_kb)"))
                .unwrap_or_else(|| "? (no block device)".into()),
        ),
        ("I/O scheduler", or(&io.scheduler, "? (no block device)")),
        ("mount options", or(&io.mount_options, "?")),
        ("transparent huge pages", or(&io.thp, "? (no THP in sysfs)")),
        (
            "CPU governor",
            or(&io.governor, "none (no cpufreq: fixed by the host)"),
        ),
    ]
}

/// The column heading of one host among several: its name, date and kind of run.
pub(super) fn host_heading(i: usize, r: &SuiteResult) -> String {
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
            // Date and time: two runs of one host on one day are told apart.
            format!(" {} UTC", h.date[..h.date.len().min(16)].replace('T', " "))
        },
        if r.config.quick { "quick" } else { "full" }
    )
}

/// Several hosts side by side, as Markdown: each finding's ratio, interval and verdict per host
/// and the ratio of each host's ratio to the first host's; then the compared figures (medians)
/// per host with their ratio to the first host's. Numbers stay numbers, one per cell.
pub(super) fn comparison(results: &[SuiteResult]) -> String {
    let mut keys: Vec<&str> = Vec::new();
    for r in results {
        for f in &r.findings {
            if !keys.contains(&f.key.as_str()) {
                keys.push(&f.key);
            }
        }
    }
    let names: Vec<String> = (1..=results.len()).map(|i| format!("host {i}")).collect();
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
    md.push('\n');
    if results
        .iter()
        .any(|r| r.config.quick != results[0].config.quick)
    {
        md.push_str("**Configs differ:** quick and full suites measure some findings with other data, rounds or settings; their ratios are set side by side, not compared (`iolab report --baseline` refuses them).\n\n");
    }
    md.push_str(&crate::report::markdown_table(&finding_rows(
        results, &keys, &names,
    )));
    let rows = figure_rows(results, &keys, &names);
    if rows.len() > 1 {
        md.push('\n');
        md.push_str(&crate::report::markdown_table(&rows));
    }
    md.push_str("\nratio: the finding's first side over its second (medians, or the median of per-round ratios when paired); verdict: the side named the winner, `=` within 5%, `?` undecided; host N / host 1: that host's figure over the first host's, [its interval from both intervals' ends].\n");
    md
}

/// A positive figure with three decimals, else `-`.
fn num(v: f64) -> String {
    if v.is_finite() && v > 0.0 {
        format!("{v:.3}")
    } else {
        "-".into()
    }
}

/// The finding `key` of each host, where it has one.
fn per_host(results: &[SuiteResult], key: &str) -> Vec<Option<Finding>> {
    results
        .iter()
        .map(|r| r.findings.iter().find(|f| f.key == key).cloned())
        .collect()
}

/// Findings: ratio, interval and verdict per host, and each host's ratio over the first's.
fn finding_rows(results: &[SuiteResult], keys: &[&str], names: &[String]) -> Vec<Vec<String>> {
    let mut header = vec!["finding".to_string(), "ratio of".to_string()];
    for n in names {
        header.push(format!("{n} ratio"));
        header.push(format!("{n} interval"));
        header.push(format!("{n} verdict"));
    }
    for n in names.iter().skip(1) {
        header.push(format!("{n} / host 1"));
    }
    let mut rows = vec![header];
    for k in keys {
        let per = per_host(results, k);
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
        for f in per.iter().skip(1) {
            row.push(match (&per[0], f) {
                (Some(a), Some(b)) if a.ratio > 0.0 && b.ratio > 0.0 => {
                    let x = b.ratio / a.ratio;
                    if a.ci[0] > 0.0 && b.ci[0] > 0.0 {
                        // The widest the two intervals allow.
                        format!(
                            "{} [{:.3}-{:.3}]",
                            num(x),
                            b.ci[0] / a.ci[1],
                            b.ci[1] / a.ci[0]
                        )
                    } else {
                        num(x)
                    }
                }
                _ => "-".into(),
            });
        }
        rows.push(row);
    }
    rows
}

/// Figures: each side's median per host, and each host's over the first's.
fn figure_rows(results: &[SuiteResult], keys: &[&str], names: &[String]) -> Vec<Vec<String>> {
    let mut header = vec!["finding".to_string(), "side".into(), "unit".into()];
    header.extend(names.iter().cloned());
    header.extend(names.iter().skip(1).map(|n| format!("{n} / host 1")));
    let mut rows = vec![header];
    for k in keys {
        let per = per_host(results, k);
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
    rows
}

/// A finding's verdict in one word: the winner, `=` (within 5%) or `?` (undecided).
pub(super) fn verdict(f: &Finding) -> String {
    match (&f.winner, f.decided) {
        (Some(w), _) => w.clone(),
        (None, Some(Decided::Equivalent)) => "=".into(),
        _ => "?".into(),
    }
}
