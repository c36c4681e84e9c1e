//! `iolab access` reports: one row per method x pattern x cache.

use super::{AccessResult, AccessRow};
use crate::cache::CacheMode;
use crate::report::{Format, json, markdown_table, table};
use crate::size::format_size;

fn us(ns: u64) -> String {
    format!("{:.1}", ns as f64 / 1000.0)
}

/// Timed operations a percentile needs before a table shows it: p99 from 100, p99.9 from 1,000
/// (below that it is one of the slowest few samples, not a percentile).
pub const P99_MIN_SAMPLES: u64 = 100;
/// See [`P99_MIN_SAMPLES`].
pub const P999_MIN_SAMPLES: u64 = 1000;

fn header(csv: bool) -> Vec<String> {
    let mut h: Vec<String> = [
        "method",
        "pattern",
        "cache",
        "KIOPS",
        "MiB/s",
        "samples",
        "p50 us",
        "p90 us",
        "p99 us",
        "p99.9 us",
        "max us",
        "minflt/op",
        "majflt/op",
        "dev B/B",
        "cache ok",
        "runs",
        "run ms",
        if csv { "bytes/run" } else { "per run" },
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    if csv {
        h.push("unsupported".into());
    }
    h
}

/// The cells of one row for text and Markdown (`csv` false: sizes and `yes`/`NO` for people) or
/// CSV (plain numbers, `true`/`false`, a percentile without enough samples empty, and every
/// row as wide as the header).
pub fn cells(r: &AccessRow, csv: bool) -> Vec<String> {
    let mut row = vec![
        r.method.name().to_string(),
        r.pattern.name().into(),
        r.cache.name().into(),
    ];
    if let Some(why) = &r.unsupported {
        if csv {
            let width = header(true).len();
            row.resize(width - 1, String::new());
            row.push(why.clone());
        } else {
            row.push(format!("unsupported: {why}"));
        }
        return row;
    }
    let l = &r.latency;
    let none = if csv { "" } else { "-" };
    // No block timed (--no-latency), or too few for this percentile: no figure is claimed.
    let pct = |ns: u64, need: u64| {
        if l.ops == 0 || l.ops < need {
            none.to_string()
        } else {
            us(ns)
        }
    };
    row.extend([
        format!("{:.1}", r.kiops.median),
        format!("{:.1}", r.mib_s.median),
        l.ops.to_string(),
        pct(l.p50_ns, 1),
        pct(l.p90_ns, 10),
        pct(l.p99_ns, P99_MIN_SAMPLES),
        pct(l.p999_ns, P999_MIN_SAMPLES),
        pct(l.max_ns, 1),
        format!("{:.4}", r.minor_faults_per_op),
        format!("{:.4}", r.major_faults_per_op),
        r.device_bytes_per_byte
            .map(|d| format!("{d:.2}"))
            .unwrap_or_else(|| if csv { "" } else { "n/a" }.into()),
        if csv {
            crate::report::csv_bool(r.cache_verified)
        } else if r.cache_verified {
            "yes".into()
        } else {
            "NO".into()
        },
        r.kiops.n.to_string(),
        format!(
            "{:.1}",
            1e3 * crate::report::median(r.runs.iter().map(|x| x.counters.wall.as_secs_f64()))
        ),
    ]);
    let bytes = crate::report::median(r.runs.iter().map(|x| x.moved.bytes as f64)) as u64;
    if csv {
        row.push(bytes.to_string());
        row.push(String::new());
    } else {
        row.push(format_size(bytes));
    }
    row
}

/// What the samples and percentile columns mean, under a text or Markdown table.
pub const SAMPLES_NOTE: &str = "samples: blocks timed (short reads are timed one in 16 or more after the first 64); a percentile shows from enough of them: p99 from 100, p99.9 from 1,000 (else -)";

/// `iolab access` in `format`.
pub fn access_report(r: &AccessResult, format: Format) -> String {
    let csv = format == Format::Csv;
    let mut rows = vec![header(csv)];
    rows.extend(r.rows.iter().map(|row| cells(row, csv)));
    let c = &r.config;
    let head = format!(
        "access {} ({}, {} blocks of {}), threads {}, depth {}, {}{}{}",
        c.path.display(),
        format_size(r.file_size),
        r.blocks,
        format_size(c.bs),
        c.threads,
        c.depth,
        match c.rounds.budget {
            Some(b) => format!(
                "rounds until each method is told apart from the first at 95% (at most {:.0} s)",
                b.as_secs_f64()
            ),
            None => format!("{} counted run(s) per cell", c.rounds.repeat),
        },
        c.ops
            .map(|o| format!(", {o} ops per run"))
            .unwrap_or_default(),
        c.duration
            .map(|d| format!(", at most {:.1} s per run", d.as_secs_f64()))
            .unwrap_or_default(),
    );
    let xor = r
        .xor
        .map(|x| format!("Xor value is {x:08x}\n"))
        .unwrap_or_default();
    match format {
        Format::Json => json(r),
        Format::Csv => crate::report::csv_table(&rows),
        Format::Markdown => format!(
            "**{head}**\n\n{}\n{SAMPLES_NOTE}\n\n{xor}",
            markdown_table(&rows)
        ),
        Format::Text => format!(
            "{head}\n\n{}\n{SAMPLES_NOTE}\n{xor}{}",
            table(&rows),
            crate::report::rounds_line(&r.rounds)
        ),
    }
}

/// The classic benchmark's lines: `took <ms>ms` and `iops : <KIOPS>`.
pub fn classic_lines(r: &AccessResult) -> String {
    let Some(row) = r.rows.first() else {
        return String::new();
    };
    let Some(run) = row.runs.iter().rfind(|x| !x.warmup) else {
        return String::new();
    };
    // As the original computed it: whole milliseconds (chrono's duration_cast truncates), and
    // blocks per millisecond with two decimals.
    let ms = run.counters.wall.as_millis();
    let iops = if ms > 0 {
        run.moved.blocks as f64 / ms as f64
    } else {
        run.kiops()
    };
    format!("took {ms}ms\niops : {iops:.2}\n")
}

/// `iolab advise` output: the measured table, then the answer per cache state. CSV is the table
/// alone (one row type); its answer is [`advice_lines`], for stderr.
pub fn advise_report(r: &crate::experiments::advise::AdviseResult, format: Format) -> String {
    match format {
        Format::Json => json(r),
        Format::Csv => access_report(&r.measured, format),
        _ => format!(
            "{}\n{}",
            access_report(&r.measured, format),
            advice_lines(r)
        ),
    }
}

/// `iolab advise`'s answer in words: one line per cache state, uncached against the plain call,
/// and which answer applies now.
pub fn advice_lines(r: &crate::experiments::advise::AdviseResult) -> String {
    let mut out = String::new();
    for a in &r.advice {
        let what = format!("{} {} blocks", r.pattern.name(), format_size(r.bs));
        out.push_str(&if a.clear {
            format!(
                "Advice, {} cache: {} for {what} ({:.1} KIOPS, {:.2}x {}, interval {:.2}-{:.2})",
                a.cache.name(),
                a.best.name(),
                a.kiops,
                a.ratio,
                a.versus.name(),
                a.ci[0],
                a.ci[1]
            )
        } else {
            format!(
                "Advice, {} cache: no method is clearly faster than {} for {what} (best {} at {:.2}x, interval {:.2}-{:.2})",
                a.cache.name(),
                a.versus.name(),
                a.best.name(),
                a.ratio,
                a.ci[0],
                a.ci[1]
            )
        });
        if let Some(d) = a
            .device_bytes_per_byte
            .filter(|_| a.cache == CacheMode::Cold)
        {
            out.push_str(&format!(
                "; the device read {d:.1} bytes per byte used (readahead)"
            ));
        }
        out.push('\n');
    }
    for u in &r.uncached {
        let figures = format!(
            "{:.2}x {}, interval {:.2}-{:.2}",
            u.ratio,
            r.advice
                .first()
                .map_or("the plain call", |a| a.versus.name()),
            u.ci[0],
            u.ci[1]
        );
        let verdict = match (u.matches, u.decided) {
            (true, _) => {
                "as fast as buffered reads here, and it drops the pages it read (RWF_DONTCACHE): for data read once, it leaves the page cache to everything else"
            }
            (false, crate::measure::decide::Decided::Winner) => {
                "slower than buffered reads here: keeping the file out of the cache costs this much"
            }
            _ => "not told apart from buffered reads by these rounds",
        };
        out.push_str(&format!(
            "Uncached, {} cache: {verdict} ({figures})\n",
            u.cache.name()
        ));
    }
    if let Some(c) = r.measured.config.cold_ops {
        out.push_str(&format!(
            "Cold runs read a sparse sample of {c} blocks each (of {}), as a reader that jumps around would.\n",
            r.measured.blocks
        ));
    }
    let now = if r.resident_now >= 0.9 {
        "warm"
    } else if r.resident_now <= 0.1 {
        "cold"
    } else {
        "partly cached: between the two"
    };
    out.push_str(&format!(
        "Right now the file is {:.0}% resident: the {now} answer applies.\n",
        r.resident_now * 100.0
    ));
    out
}
