//! The classic programs' output lines, and the cache report.

use super::{Format, json, markdown_table, table};
use crate::experiments::cache_cmd::CacheReport;
use crate::experiments::classic::{ClassicResult, Op};
use crate::experiments::fast::FastResult;
use crate::size::{format_size, mib_per_s};
use crate::xor::format_xor;

mod fast;
pub use fast::fast_explain;

/// `iolab run` output: the NYU course program's lines, its numbers as C++'s `cout` printed a
/// double (six significant digits), its MB being MiB; the XOR of what was written too.
pub fn run_lines(r: &ClassicResult) -> String {
    let secs = r.seconds();
    let mb = g6(r.bytes as f64 / 1_048_576.0);
    let rate = g6(mib_per_s(r.bytes, secs));
    let mut out = match r.op {
        Op::Read => format!(
            "Reading {} in chunks of {} .....\nNumber of blocks read: {} blocks\nSize of the file read: {mb} MB\nTime taken: {} seconds\nRate at which file was read: {rate} MiB/sec\n",
            r.path.display(),
            r.bs,
            r.blocks,
            g6(secs),
        ),
        Op::Write => format!(
            "Size of the file that was written: {mb} MB\nTime taken: {} seconds\nRate at which file was written: {rate} MiB/sec\n",
            g6(secs),
        ),
    };
    out.push_str(&format!("Xor value is {}\n", format_xor(r.xor)));
    out
}

/// A number as C++'s `cout << double` prints it by default (`%g`, six significant digits):
/// `0.00390625`, `256`, `4893.71`, `1.5e+07`.
pub fn g6(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    // The exponent after rounding to six digits decides the form, as %g does.
    let sci = format!("{v:.5e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let trim = |t: &str| {
        if t.contains('.') {
            t.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            t.to_string()
        }
    };
    if (-4..6).contains(&exp) {
        trim(&format!("{v:.*}", (5 - exp) as usize))
    } else {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", trim(mantissa), exp.abs())
    }
}

/// The classic run as one table row (for `--format csv|markdown`).
pub fn run_rows(r: &ClassicResult) -> Vec<Vec<String>> {
    let secs = r.seconds();
    vec![
        ["op", "method", "blocks", "bytes", "secs", "MiB/s", "xor"]
            .map(String::from)
            .to_vec(),
        vec![
            match r.op {
                Op::Read => "read".into(),
                Op::Write => "write".into(),
            },
            r.method.clone(),
            r.blocks.to_string(),
            r.bytes.to_string(),
            format!("{secs:.6}"),
            format!("{:.2}", mib_per_s(r.bytes, secs)),
            if r.op == Op::Read {
                format_xor(r.xor)
            } else {
                String::new()
            },
        ],
    ]
}

/// `iolab fast` as one table row (for `--format csv|markdown`).
pub fn fast_rows(r: &FastResult) -> Vec<Vec<String>> {
    let secs = r.counters.wall.as_secs_f64();
    vec![
        [
            "method",
            "threads",
            "bs bytes",
            "depth",
            "bytes",
            "secs",
            "MiB/s",
            "resident %",
            "xor",
        ]
        .map(String::from)
        .to_vec(),
        vec![
            r.choice.method.name().to_string(),
            r.choice.threads.to_string(),
            r.choice.bs.to_string(),
            r.choice.depth.to_string(),
            r.bytes.to_string(),
            format!("{secs:.6}"),
            format!("{:.1}", mib_per_s(r.bytes, secs)),
            format!("{:.1}", r.resident * 100.0),
            format_xor(r.xor),
        ],
    ]
}

/// run2's search, a row per step (for `--format csv|markdown`).
pub fn run2_rows(r: &crate::experiments::run2::Run2Result) -> Vec<Vec<String>> {
    let mut rows = vec![
        [
            "step",
            "block size",
            "block count",
            "bytes",
            "secs",
            "MiB/s",
            "xor",
        ]
        .map(String::from)
        .to_vec(),
    ];
    for (i, step) in r.steps.iter().enumerate() {
        let secs = step.run.seconds();
        rows.push(vec![
            (i + 1).to_string(),
            r.config.bs.to_string(),
            step.run.blocks.to_string(),
            step.run.bytes.to_string(),
            format!("{secs:.6}"),
            format!("{:.2}", mib_per_s(step.run.bytes, secs)),
            format_xor(step.run.xor),
        ]);
    }
    rows
}

/// run2's steps as a Markdown table, then what the search found.
pub fn run2_markdown(r: &crate::experiments::run2::Run2Result) -> String {
    let outcome: String = run2_lines(r)
        .lines()
        .skip(6)
        .map(|l| format!("{l}\n"))
        .collect();
    format!("{}\n{outcome}", super::markdown_table(&run2_rows(r)))
}

/// `fast` repeated, a row per run, then the median.
pub fn fast_series_markdown(s: &crate::experiments::fast::FastSeries) -> String {
    let mut rows = vec![
        [
            "run",
            "method",
            "threads",
            "bs",
            "secs",
            "MiB/s",
            "resident at open",
            "why",
        ]
        .map(String::from)
        .to_vec(),
    ];
    for (i, r) in s.runs.iter().enumerate() {
        let secs = r.counters.wall.as_secs_f64();
        rows.push(vec![
            (i + 1).to_string(),
            r.choice.method.name().to_string(),
            r.choice.threads.to_string(),
            format_size(r.choice.bs),
            format!("{secs:.4}"),
            format!("{:.1}", mib_per_s(r.bytes, secs)),
            format!("{:.0}%", r.resident * 100.0),
            r.choice.reason.clone(),
        ]);
    }
    format!(
        "{}\nmedian {:.1} MiB/s over {} runs (interval {:.1}-{:.1} at {:.0}%)\n",
        super::markdown_table(&rows),
        s.mib_s.median,
        s.mib_s.n,
        s.mib_s.ci[0],
        s.mib_s.ci[1],
        100.0 * s.mib_s.ci_level
    )
}

/// `iolab fast`'s line on stderr: what it chose and how fast it went.
pub fn fast_talk(r: &FastResult) -> String {
    let secs = r.counters.wall.as_secs_f64();
    format!(
        "iolab fast: {} with {} thread(s), bs {}: {} in {:.4} s, {:.1} MiB/s; cache {:.0}% resident at open ({})",
        r.choice.method.name(),
        r.choice.threads,
        format_size(r.choice.bs),
        format_size(r.bytes),
        secs,
        mib_per_s(r.bytes, secs),
        r.resident * 100.0,
        r.choice.reason
    )
}

/// A series of `fast` runs: each run's line, then the median and its interval.
pub fn fast_series(s: &crate::experiments::fast::FastSeries) -> String {
    let mut out: String = s.runs.iter().map(|r| fast_talk(r) + "\n").collect();
    out.push_str(&format!(
        "median {:.1} MiB/s over {} runs (interval {:.1}-{:.1} at {:.0}%)\n",
        s.mib_s.median,
        s.mib_s.n,
        s.mib_s.ci[0],
        s.mib_s.ci[1],
        100.0 * s.mib_s.ci_level
    ));
    out
}

/// `iolab cache` output.
pub fn cache_report(r: &CacheReport, format: Format) -> String {
    if format == Format::Json {
        return json(r);
    }
    let mut rows = vec![vec![
        "file".to_string(),
        "size".into(),
        "resident pages".into(),
        "resident".into(),
    ]];
    for f in &r.files {
        rows.push(vec![
            f.path.display().to_string(),
            format_size(f.size),
            format!("{}/{}", f.residency.resident_pages, f.residency.total_pages),
            format!("{:.1}%", f.residency.percent()),
        ]);
    }
    if r.files.len() > 1 || !r.unreadable.is_empty() {
        let (n, bytes, res, pages) = crate::experiments::cache_cmd::total(&r.files);
        let pct = if pages == 0 {
            100.0
        } else {
            100.0 * res as f64 / pages as f64
        };
        let unreadable = if r.unreadable.is_empty() {
            String::new()
        } else {
            format!(", {} unreadable left out", r.unreadable.len())
        };
        rows.push(vec![
            format!("total ({n} files{unreadable})"),
            format_size(bytes),
            format!("{res}/{pages}"),
            format!("{pct:.1}%"),
        ]);
    }
    let p = &r.page_cache;
    let pc = format!(
        "page cache: Cached {}, Buffers {}, Dirty {}, Writeback {}, Active(file) {}, Inactive(file) {}; MemTotal {}, MemAvailable {}",
        format_size(p.cached),
        format_size(p.buffers),
        format_size(p.dirty),
        format_size(p.writeback),
        format_size(p.active_file),
        format_size(p.inactive_file),
        format_size(p.mem_total),
        format_size(p.mem_available)
    );
    let bars: String = r
        .files
        .iter()
        .filter_map(|f| {
            f.map.as_ref().map(|m| {
                format!(
                    "{} [{}] {:.1}%\n",
                    f.path.display(),
                    residency_bar(m),
                    f.residency.percent()
                )
            })
        })
        .collect();
    let pc = if bars.is_empty() {
        pc
    } else {
        format!("{bars}{pc}")
    };
    match format {
        Format::Csv => {
            let mut out = super::csv_line(
                &[
                    "file",
                    "size_bytes",
                    "resident_pages",
                    "total_pages",
                    "resident_pct",
                ]
                .map(String::from),
            );
            for f in &r.files {
                out.push_str(&super::csv_line(&[
                    f.path.display().to_string(),
                    f.size.to_string(),
                    f.residency.resident_pages.to_string(),
                    f.residency.total_pages.to_string(),
                    format!("{:.2}", f.residency.percent()),
                ]));
            }
            out
        }
        Format::Markdown => format!("{}\n{pc}\n", markdown_table(&rows)),
        _ => format!("{}{pc}\n", table(&rows)),
    }
}

/// `iolab run2` output: the classic program's lines for the count found (or the closest), then
/// what happened, and the prediction when the file was too small.
pub fn run2_lines(r: &crate::experiments::run2::Run2Result) -> String {
    use crate::experiments::run2::Run2Outcome;
    let Some(last) = r.last() else {
        return String::new();
    };
    let run = &last.run;
    let secs = run.seconds();
    let mut out = format!(
        "Block size: {}\nBlock count: {}\nFile size read: {:.2} MiB\nTime taken: {:.6} seconds\nRate: {:.2} MiB/s\nXor value is {}\n",
        r.config.bs,
        run.blocks,
        run.bytes as f64 / 1_048_576.0,
        secs,
        mib_per_s(run.bytes, secs),
        format_xor(run.xor)
    );
    let window = format!(
        "{}-{}",
        human_duration(r.config.min),
        human_duration(r.config.max)
    );
    out.push_str(&match &r.outcome {
        Run2Outcome::Found => format!("Found: {} blocks read in {secs:.3} s, inside {window} ({} steps)\n", last.count, r.steps.len()),
        Run2Outcome::FileEnded {
            predicted_min_bytes,
            predicted_max_bytes,
            predicted_ci,
            rate_from,
            rate_mib_s,
            rate,
            resident_reads,
            from_device,
        } => {
            let from = match (rate_from, *resident_reads == rate.n, *resident_reads == 0) {
                (crate::experiments::run2::RateSource::Cache, true, _) => "the page cache's rate (the file was resident)".to_string(),
                (crate::experiments::run2::RateSource::Device, _, true) => "the device's rate (the file was not all resident)".to_string(),
                (crate::experiments::run2::RateSource::Cache, ..) => format!("mostly the page cache's rate ({resident_reads} of {} reads found the file resident)", rate.n),
                (crate::experiments::run2::RateSource::Device, ..) => format!("mostly the device's rate (only {resident_reads} of {} reads found the file resident)", rate.n),
            };
            let mut s = format!(
                "The file ends before the window: all {} bytes read in {secs:.3} s. At its rate, {rate_mib_s:.1} MiB/s {}, {from}, a file of {} to {} ({} to {} bytes) would take {window}; over the rate's interval, the low end is {} to {} and the high end {} to {}\n",
                r.file_size,
                rate_spread(rate),
                format_size(*predicted_min_bytes),
                format_size(*predicted_max_bytes),
                predicted_min_bytes,
                predicted_max_bytes,
                format_size(predicted_ci[0][0]),
                format_size(predicted_ci[0][1]),
                format_size(predicted_ci[1][0]),
                format_size(predicted_ci[1][1]),
            );
            if let Some(d) = from_device {
                s.push_str(&format!(
                    "A file that large does not fit in this machine's memory, so it could not be read from the cache: at the device's rate, {:.1} MiB/s {} (this file read cold), a file of {} to {} ({} to {} bytes) would take {window}\n",
                    d.rate_mib_s,
                    rate_spread(&d.rate),
                    format_size(d.predicted_min_bytes),
                    format_size(d.predicted_max_bytes),
                    d.predicted_min_bytes,
                    d.predicted_max_bytes
                ));
            }
            s
        }
        Run2Outcome::OneBlockTooSlow => format!("One block already takes {secs:.3} s, above {window}: use a smaller block size\n"),
        Run2Outcome::Straddled => format!(
            "No count lands inside {window}: neighbouring counts straddle it (the rate jumps, e.g. where the cached part ends); closest shown\n"
        ),
    });
    out
}

/// `(median of 4 whole-file reads, 75% interval 5012.3..5230.9)`.
fn rate_spread(rate: &crate::measure::stats::Summary) -> String {
    format!(
        "(median of {} whole-file reads, {:.0}% interval {:.1}..{:.1})",
        rate.n,
        rate.ci_level * 100.0,
        rate.ci[0],
        rate.ci[1]
    )
}

/// `15 s`, `50 ms`, `200 us`, `2 ns`.
pub fn human_duration(d: std::time::Duration) -> String {
    let s = d.as_secs_f64();
    let (v, unit) = if s >= 1.0 {
        (s, "s")
    } else if s >= 1e-3 {
        (s * 1e3, "ms")
    } else if s >= 1e-6 {
        (s * 1e6, "us")
    } else {
        (s * 1e9, "ns")
    };
    let v = format!("{v:.3}");
    format!("{} {unit}", v.trim_end_matches('0').trim_end_matches('.'))
}

/// One character per slice: `#` all resident, `o` half or more, `.` some, ` ` none.
pub fn residency_bar(map: &[f64]) -> String {
    map.iter()
        .map(|f| match f {
            f if *f >= 0.999 => '#',
            f if *f >= 0.5 => 'o',
            f if *f > 0.0 => '.',
            _ => ' ',
        })
        .collect()
}

/// `iolab cache meminfo`.
pub fn meminfo_report(p: &crate::cache::meminfo::PageCache, format: Format) -> String {
    let rows: Vec<(&str, u64)> = vec![
        ("MemTotal", p.mem_total),
        ("MemAvailable", p.mem_available),
        ("Cached", p.cached),
        ("Buffers", p.buffers),
        ("Dirty", p.dirty),
        ("Writeback", p.writeback),
        ("Active(file)", p.active_file),
        ("Inactive(file)", p.inactive_file),
    ];
    match format {
        Format::Json => json(p),
        Format::Csv => {
            let mut out = super::csv_line(&["field".to_string(), "bytes".into()]);
            for (k, v) in rows {
                out.push_str(&super::csv_line(&[k.to_string(), v.to_string()]));
            }
            out
        }
        _ => {
            let mut t = vec![vec!["field".to_string(), "size".into(), "bytes".into()]];
            t.extend(
                rows.iter()
                    .map(|(k, v)| vec![k.to_string(), format_size(*v), v.to_string()]),
            );
            if format == Format::Markdown {
                markdown_table(&t)
            } else {
                table(&t)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn bars_show_slices() {
        assert_eq!(residency_bar(&[1.0, 0.6, 0.1, 0.0]), "#o. ");
    }

    #[test]
    fn numbers_print_as_cout_printed_them() {
        // printf("%g") of each, as C++'s cout prints a double by default.
        for (v, want) in [
            (256.0, "256"),
            (0.00390625, "0.00390625"),
            (4893.7123, "4893.71"),
            (0.052312, "0.052312"),
            (123456.7, "123457"),
            (1234567.0, "1.23457e+06"),
            (999999.7, "1e+06"),
            (0.0000123, "1.23e-05"),
            (0.0001, "0.0001"),
            (1.0, "1"),
            (0.0, "0"),
        ] {
            assert_eq!(g6(v), want, "{v}");
        }
    }

    #[test]
    fn durations_read_naturally() {
        assert_eq!(human_duration(Duration::from_secs(15)), "15 s");
        assert_eq!(human_duration(Duration::from_millis(50)), "50 ms");
        assert_eq!(human_duration(Duration::from_nanos(2)), "2 ns");
        assert_eq!(human_duration(Duration::from_micros(1500)), "1.5 ms");
    }
}
