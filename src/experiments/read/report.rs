//! Reports of measured runs (`iolab read`, `iolab write`): one row per run, then the summary.
//! CSV is a row per run with every setting and counter in plain numbers.

use super::{ReadResult, RunRecord, Runs};
use crate::report::{Column, Document, Shown, Table, Value};
use crate::size::format_size;
use crate::workload::Shape;
use crate::xor::format_xor;

/// One setting of a run set: its CSV column and its value.
pub(crate) struct Setting {
    key: &'static str,
    value: Value,
}

impl Setting {
    /// A setting in words.
    pub(crate) fn new(key: &'static str, text: impl Into<String>) -> Self {
        Setting {
            key,
            value: Value::text(text),
        }
    }
}

/// The common view of a set of measured runs.
pub(crate) struct RunSet<'a> {
    pub(crate) headline: String,
    /// Each setting's CSV column and value.
    pub(crate) config: Vec<Setting>,
    pub(crate) runs: &'a Runs,
    pub(crate) xor: u32,
    pub(crate) with_cache: bool,
    /// Show the pieces the page cache could not serve without waiting (`pread-nowait`).
    pub(crate) misses: bool,
}

/// `iolab read`: its runs, their summary and the XOR.
pub fn read_document(r: &ReadResult) -> Document {
    let c = &r.config;
    let fs = match (&r.host.filesystem, &r.host.device) {
        (Some(f), Some(d)) => format!(", {f} on {d}"),
        _ => String::new(),
    };
    let set = RunSet {
        headline: format!(
            "read {} ({}{fs}), {} of it",
            crate::shown::path(&c.path),
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
                    value: Value::Flag(c.shape.sqpoll),
                },
                Setting::new("cache", c.cache.name()),
            ],
        ),
        runs: &r.runs,
        xor: r.xor,
        with_cache: true,
        misses: c.method == crate::engine::ReadMethod::PreadNowait,
    };
    document(&set)
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
            value: Value::Bytes(bs),
        },
        Setting::new("pattern", shape.pattern.name()),
        Setting::new("threads", shape.threads.to_string()),
    ];
    v.extend(more);
    v
}

fn run_label(i: usize, runs: &[RunRecord]) -> String {
    let warmups = runs.iter().filter(|r| r.warmup).count();
    if runs[i].warmup {
        format!("w{}", i + 1)
    } else {
        (i + 1 - warmups).to_string()
    }
}

/// CPU seconds (user, system) to `decimals` places, minor and major faults, context switches and
/// requests: the counter columns every runs table has, in this order.
fn counter_cells(r: &RunRecord, decimals: usize) -> [Value; 6] {
    let c = &r.counters;
    [
        Value::Fixed(c.user.as_secs_f64(), decimals),
        Value::Fixed(c.sys.as_secs_f64(), decimals),
        Value::Count(c.minor_faults),
        Value::Count(c.major_faults),
        Value::Count(c.context_switches),
        Value::Count(r.moved.ops),
    ]
}

/// The runs as people read them: a row per run, warm-ups marked.
fn people_table(set: &RunSet) -> Table {
    let mut titles = vec![
        "run", "time s", "MiB/s", "user s", "sys s", "minflt", "majflt", "ctxsw", "ops", "dev read",
    ];
    if set.misses {
        titles.push("missed");
    }
    if set.with_cache {
        titles.extend(["resident", "cache ok"]);
    }
    let mut t = Table::titled(&titles);
    for (i, r) in set.runs.runs.iter().enumerate() {
        let c = &r.counters;
        let mut row = vec![
            Value::text(run_label(i, &set.runs.runs)),
            Value::Fixed(c.wall.as_secs_f64(), 4),
            Value::Fixed(r.mib_per_s(), 1),
        ];
        row.extend(counter_cells(r, 3));
        row.push(c.device_read_bytes.map_or(Value::Missing, Value::Bytes));
        if set.misses {
            row.push(Value::Count(r.moved.waited));
        }
        if set.with_cache {
            let c = r.cache.as_ref();
            row.push(c.map_or(Value::text(""), |c| {
                Value::text(if c.visible {
                    format!("{:.1}%", c.residency.percent())
                } else {
                    "not visible".into()
                })
            }));
            row.push(Value::Flag(c.is_some_and(|c| c.verified)));
        }
        t.row(row);
    }
    t
}

/// The runs as data: a row per run with every setting, counter and check.
fn data_table(set: &RunSet) -> Table {
    let mut t = Table::new(
        set.config
            .iter()
            .map(|s| Column::new(s.key).csv(s.key))
            .chain(
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
                .map(Column::new),
            ),
    );
    for (i, r) in set.runs.runs.iter().enumerate() {
        let c = &r.counters;
        let mut row: Vec<Value> = set.config.iter().map(|s| s.value.clone()).collect();
        row.extend([
            Value::text(run_label(i, &set.runs.runs)),
            Value::Flag(r.warmup),
            Value::Fixed(c.wall.as_secs_f64(), 6),
            Value::Fixed(r.mib_per_s(), 3),
            Value::Count(r.moved.bytes),
            Value::text(format_xor(r.moved.xor)),
        ]);
        row.extend(counter_cells(r, 6));
        row.extend([
            c.device_read_bytes.map_or(Value::Missing, Value::Count),
            Value::fixed_or_missing(
                r.cache
                    .as_ref()
                    .filter(|c| c.visible)
                    .map(|c| c.residency.percent()),
                2,
            ),
            r.cache
                .as_ref()
                .map_or(Value::Missing, |c| Value::Flag(c.verified)),
            if set.misses {
                Value::Count(r.moved.waited)
            } else {
                Value::Missing
            },
        ]);
        t.row(row);
    }
    t
}

/// The settings in one line.
fn config_line(set: &RunSet) -> String {
    set.config
        .iter()
        .map(|s| format!("{} {}", s.key.trim_end_matches("_bytes"), s.value.shown()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A run set's report: its headline, settings, runs, summary and XOR; CSV a row per run.
pub(crate) fn document(set: &RunSet) -> Document {
    let (r, s) = (&set.runs.rate, &set.runs.seconds);
    Document::new()
        .table(data_table(set))
        .only(Shown::Data)
        .heading(&set.headline)
        .para(config_line(set))
        .table(people_table(set))
        .para(format!(
            "median {:.1} MiB/s, interval {:.1}-{:.1} at {:.0}%{} (min {:.1}, max {:.1}, mean {:.1}, stddev {:.1}) over {} runs; time median {:.4} s",
            r.median,
            r.ci[0],
            r.ci[1],
            100.0 * r.ci_level,
            if r.ci_level < 0.95 {
                " (too few runs for 95%: --repeat 6 or more)"
            } else {
                ""
            },
            r.min,
            r.max,
            r.mean,
            r.stddev,
            r.n,
            s.median
        ))
        .para(if set.misses {
            "missed: blocks (or 64 MiB pieces) the page cache could not serve without waiting (RWF_NOWAIT said EAGAIN); a plain pread read them"
        } else {
            ""
        })
        .para(format!("Xor value is {}", format_xor(set.xor)))
}
