//! Reports of measured runs (`iolab read`, `iolab write`): one row per run, then the summary.

use super::{ReadResult, RunRecord, Runs};
use crate::report::{Format, csv_bool, csv_line, json, markdown_table, table};
use crate::size::format_size;
use crate::workload::Shape;
use crate::xor::format_xor;

/// One setting of a run set: its CSV column, as the settings line shows it, as CSV holds it.
pub(crate) struct Setting {
    key: &'static str,
    text: String,
    csv: String,
}

impl Setting {
    pub(crate) fn new(key: &'static str, text: impl Into<String>) -> Self {
        let text = text.into();
        Setting {
            key,
            csv: text.clone(),
            text,
        }
    }
}

/// The common view of a set of measured runs.
pub(crate) struct RunSet<'a> {
    pub(crate) headline: String,
    /// Each setting's CSV column, its text and its CSV value (numbers plain, booleans
    /// `true`/`false`).
    pub(crate) config: Vec<Setting>,
    pub(crate) runs: &'a Runs,
    pub(crate) xor: u32,
    pub(crate) with_cache: bool,
    /// Show the pieces the page cache could not serve without waiting (`pread-nowait`).
    pub(crate) misses: bool,
}

/// `iolab read` in `format`.
pub fn read_report(r: &ReadResult, format: Format) -> String {
    if format == Format::Json {
        return json(r);
    }
    let c = &r.config;
    let fs = match (&r.host.filesystem, &r.host.device) {
        (Some(f), Some(d)) => format!(", {f} on {d}"),
        _ => String::new(),
    };
    let set = RunSet {
        headline: format!(
            "read {} ({}{fs}), {} of it",
            c.path.display(),
            format_size(r.file_size),
            format_size(r.bytes)
        ),
        config: settings(
            c.method.name(),
            c.bs,
            &c.shape,
            [
                Setting::new("depth", c.shape.depth.to_string()),
                Setting {
                    key: "sqpoll",
                    text: if c.shape.sqpoll { "yes" } else { "no" }.into(),
                    csv: csv_bool(c.shape.sqpoll),
                },
                Setting::new("cache", c.cache.name()),
            ],
        ),
        runs: &r.runs,
        xor: r.xor,
        with_cache: true,
        misses: c.method == crate::engine::ReadMethod::PreadNowait,
    };
    render(&set, format)
}

/// CPU seconds (user, system) to `decimals` places, minor and major faults, context switches and
/// requests: the counter columns every runs table has, in this order.
fn counter_cells(r: &RunRecord, decimals: usize) -> [String; 6] {
    let c = &r.counters;
    [
        format!("{:.*}", decimals, c.user.as_secs_f64()),
        format!("{:.*}", decimals, c.sys.as_secs_f64()),
        c.minor_faults.to_string(),
        c.major_faults.to_string(),
        c.context_switches.to_string(),
        r.moved.ops.to_string(),
    ]
}

/// The settings line: method, block size, order, threads, then what is particular to the command.
pub(crate) fn settings(
    method: &str,
    bs: u64,
    shape: &Shape,
    more: impl IntoIterator<Item = Setting>,
) -> Vec<Setting> {
    let mut v = vec![
        Setting::new("method", method),
        Setting {
            key: "bs_bytes",
            text: format_size(bs),
            csv: bs.to_string(),
        },
        Setting::new("pattern", shape.pattern.name()),
        Setting::new("threads", shape.threads.to_string()),
    ];
    v.extend(more);
    v
}

pub(crate) fn render(set: &RunSet, format: Format) -> String {
    match format {
        Format::Csv => csv(set),
        Format::Markdown => markdown(set),
        _ => text(set),
    }
}

fn run_label(i: usize, runs: &[RunRecord]) -> String {
    let warmups = runs.iter().filter(|r| r.warmup).count();
    if runs[i].warmup {
        format!("w{}", i + 1)
    } else {
        (i + 1 - warmups).to_string()
    }
}

fn rows(set: &RunSet) -> Vec<Vec<String>> {
    let mut header: Vec<String> = [
        "run", "time s", "MiB/s", "user s", "sys s", "minflt", "majflt", "ctxsw", "ops", "dev read",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    if set.misses {
        header.push("missed".into());
    }
    if set.with_cache {
        header.push("resident".into());
        header.push("cache ok".into());
    }
    let mut out = vec![header];
    for (i, r) in set.runs.runs.iter().enumerate() {
        let c = &r.counters;
        let mut row = vec![
            run_label(i, &set.runs.runs),
            format!("{:.4}", c.wall.as_secs_f64()),
            format!("{:.1}", r.mib_per_s()),
        ];
        row.extend(counter_cells(r, 3));
        row.push(
            c.device_read_bytes
                .map(format_size)
                .unwrap_or_else(|| "n/a".into()),
        );
        if set.misses {
            row.push(r.moved.waited.to_string());
        }
        if set.with_cache {
            let c = r.cache.as_ref();
            row.push(
                c.map(|c| {
                    if c.visible {
                        format!("{:.1}%", c.residency.percent())
                    } else {
                        "not visible".into()
                    }
                })
                .unwrap_or_default(),
            );
            row.push(if c.is_some_and(|c| c.verified) {
                "yes".into()
            } else {
                "NO".into()
            });
        }
        out.push(row);
    }
    out
}

fn summary_line(set: &RunSet) -> String {
    let (r, s) = (&set.runs.rate, &set.runs.seconds);
    format!(
        "median {:.1} MiB/s (min {:.1}, max {:.1}, mean {:.1}, stddev {:.1}) over {} runs; time median {:.4} s",
        r.median, r.min, r.max, r.mean, r.stddev, r.n, s.median
    )
}

fn config_line(set: &RunSet) -> String {
    set.config
        .iter()
        .map(|s| format!("{} {}", s.key.trim_end_matches("_bytes"), s.text))
        .collect::<Vec<_>>()
        .join(", ")
}

fn text(set: &RunSet) -> String {
    let mut out = format!("{}\n{}\n\n", set.headline, config_line(set));
    out.push_str(&table(&rows(set)));
    out.push('\n');
    out.push_str(&summary_line(set));
    out.push('\n');
    if set.misses {
        out.push_str("missed: blocks (or 64 MiB pieces) the page cache could not serve without waiting (RWF_NOWAIT said EAGAIN); a plain pread read them\n");
    }
    out.push_str(&format!("Xor value is {}\n", format_xor(set.xor)));
    out
}

fn markdown(set: &RunSet) -> String {
    let mut out = format!("**{}**\n\n{}\n\n", set.headline, config_line(set));
    out.push_str(&markdown_table(&rows(set)));
    out.push_str(&format!(
        "\n{}\n\nXOR `{}`\n",
        summary_line(set),
        format_xor(set.xor)
    ));
    out
}

fn csv(set: &RunSet) -> String {
    let mut header: Vec<String> = set.config.iter().map(|s| s.key.to_string()).collect();
    header.extend(
        [
            "run",
            "warmup",
            "wall_s",
            "mib_s",
            "bytes",
            "xor",
            "user_s",
            "sys_s",
            "minor_faults",
            "major_faults",
            "context_switches",
            "ops",
            "device_read_bytes",
            "resident_pct",
            "cache_verified",
            "cache_missed",
        ]
        .iter()
        .map(|s| s.to_string()),
    );
    let mut out = csv_line(&header);
    for (i, r) in set.runs.runs.iter().enumerate() {
        let c = &r.counters;
        let mut row: Vec<String> = set.config.iter().map(|s| s.csv.clone()).collect();
        row.extend([
            run_label(i, &set.runs.runs),
            csv_bool(r.warmup),
            format!("{:.6}", c.wall.as_secs_f64()),
            format!("{:.3}", r.mib_per_s()),
            r.moved.bytes.to_string(),
            format_xor(r.moved.xor),
        ]);
        row.extend(counter_cells(r, 6));
        row.extend([
            c.device_read_bytes
                .map(|b| b.to_string())
                .unwrap_or_default(),
            r.cache
                .as_ref()
                .filter(|c| c.visible)
                .map(|c| format!("{:.2}", c.residency.percent()))
                .unwrap_or_default(),
            r.cache
                .as_ref()
                .map(|c| csv_bool(c.verified))
                .unwrap_or_default(),
            if set.misses {
                r.moved.waited.to_string()
            } else {
                String::new()
            },
        ]);
        out.push_str(&csv_line(&row));
    }
    out
}
