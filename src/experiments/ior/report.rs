//! `iolab ior` as IOR prints it (the Results table per iteration, then the summary over the
//! iterations), followed by what iolab adds: the XOR check, each rank's cache, faults and device
//! bytes, and the slowest rank.

use crate::experiments::ior::{IorResult, PhaseResult};
use crate::measure::stats::summarize;
use crate::report::{Column, Document, Shown, Table, Value};
use crate::size::format_size;
use crate::xor::format_xor;

/// The per-iteration rows, IOR's columns.
fn results_table(r: &IorResult) -> Table {
    let mut t = Table::titled(&[
        "access",
        "bw(MiB/s)",
        "IOPS",
        "Latency(s)",
        "block(KiB)",
        "xfer(KiB)",
        "open(s)",
        "wr/rd(s)",
        "close(s)",
        "total(s)",
        "iter",
    ]);
    for p in &r.phases {
        t.row(vec![
            Value::text(&p.access),
            Value::Fixed(p.mib_s, 2),
            Value::Fixed(p.iops, 2),
            Value::Fixed(p.latency_s, 6),
            Value::Count(r.config.block / 1024),
            Value::Count(r.config.transfer / 1024),
            Value::Fixed(p.open_s, 6),
            Value::Fixed(p.xfer_s, 6),
            Value::Fixed(p.close_s, 6),
            Value::Fixed(p.total_s, 6),
            Value::Count(p.iteration as u64),
        ]);
    }
    t
}

/// The summary over iterations per operation, IOR's columns that apply.
fn summary_table(r: &IorResult) -> Table {
    let mut t = Table::titled(&[
        "Operation",
        "Max(MiB)",
        "Min(MiB)",
        "Mean(MiB)",
        "StdDev",
        "Max(OPs)",
        "Min(OPs)",
        "Mean(OPs)",
        "Mean(s)",
        "#Tasks",
        "reps",
        "fPP",
        "reord",
        "segcnt",
        "blksiz",
        "xsize",
        "aggs(MiB)",
        "API",
    ]);
    for op in ["write", "read"] {
        let ps: Vec<&PhaseResult> = r.phases.iter().filter(|p| p.access == op).collect();
        if ps.is_empty() {
            continue;
        }
        let bw = summarize(&ps.iter().map(|p| p.mib_s).collect::<Vec<_>>());
        let ops = summarize(&ps.iter().map(|p| p.iops).collect::<Vec<_>>());
        let secs = ps.iter().map(|p| p.total_s).sum::<f64>() / ps.len() as f64;
        let agg = ps[0].ranks.iter().map(|k| k.bytes).sum::<u64>() as f64 / 1_048_576.0;
        t.row(vec![
            Value::text(op),
            Value::Fixed(bw.max, 2),
            Value::Fixed(bw.min, 2),
            Value::Fixed(bw.mean, 2),
            Value::Fixed(bw.stddev, 2),
            Value::Fixed(ops.max, 2),
            Value::Fixed(ops.min, 2),
            Value::Fixed(ops.mean, 2),
            Value::Fixed(secs, 5),
            Value::Count(r.ranks as u64),
            Value::Count(r.config.iterations as u64),
            Value::Count(u64::from(r.config.file_per_proc)),
            Value::Count(u64::from(r.config.reorder)),
            Value::Count(r.config.segments),
            Value::Count(r.config.block),
            Value::Count(r.config.transfer),
            Value::Fixed(agg, 1),
            Value::text(r.config.api.name().to_uppercase()),
        ]);
    }
    t
}

/// A row per rank and phase: what iolab adds.
fn rank_table(r: &IorResult) -> Table {
    let mut t = Table::new([
        Column::new("access"),
        Column::new("iter"),
        Column::new("rank"),
        Column::new("data of"),
        Column::new("bytes"),
        Column::new("secs"),
        Column::new("resident before").csv("resident_before_pct"),
        Column::new("minflt"),
        Column::new("majflt"),
        Column::new("dev read").csv("dev_read_bytes"),
        Column::new("xor"),
        Column::new("expected"),
        Column::new("ok"),
    ]);
    for p in &r.phases {
        for (i, k) in p.ranks.iter().enumerate() {
            t.row(vec![
                Value::text(&p.access),
                Value::Count(p.iteration as u64),
                Value::Count(i as u64),
                Value::Count(k.data_of as u64),
                Value::Count(k.bytes),
                Value::Fixed(k.close_end - k.open_start, 6),
                if k.resident_before < 0.0 {
                    Value::Missing
                } else {
                    Value::Fixed(k.resident_before * 100.0, 1)
                },
                Value::Count(k.minor_faults),
                Value::Count(k.major_faults),
                Value::Bytes(k.device_read_bytes),
                k.xor.map_or(Value::Missing, |x| Value::text(format_xor(x))),
                Value::text(format_xor(k.expected_xor)),
                k.xor
                    .map_or(Value::Missing, |x| Value::Flag(x == k.expected_xor)),
            ]);
        }
    }
    t
}

/// IOR's report: the per-rank table first for CSV; text and Markdown the Results, the summary,
/// the per-rank table, the slowest ranks, the XOR check and the notes.
pub fn ior_document(r: &IorResult) -> Document {
    let c = &r.config;
    let heading = format!(
        "iolab ior: {} ranks, api {}, {}, block {} x {} segment(s), transfer {}{}{}{}",
        r.ranks,
        c.api.name(),
        if c.file_per_proc {
            "a file per rank"
        } else {
            "one shared file"
        },
        format_size(c.block),
        c.segments,
        format_size(c.transfer),
        if c.fsync { ", fsync" } else { "" },
        if c.reorder {
            ", reordered read-back"
        } else {
            ""
        },
        c.stonewall
            .map(|d| format!(", stonewall {:.0} s", d.as_secs_f64()))
            .unwrap_or_default(),
    );
    let slowest: Vec<String> = r
        .phases
        .iter()
        .filter(|p| p.ranks.len() > 1)
        .map(|p| {
            format!(
                "{} iter {}: slowest rank {}, {:.2}x the fastest",
                p.access, p.iteration, p.slowest_rank, p.slowest_ratio
            )
        })
        .collect();
    Document::new()
        .table(rank_table(r))
        .only(Shown::Data)
        .heading(heading)
        .only(Shown::Text)
        .para("Results:")
        .only(Shown::Text)
        .table(results_table(r))
        .para("Summary of all tests:")
        .only(Shown::Text)
        .table(summary_table(r))
        .para("Per rank (iolab):")
        .only(Shown::Text)
        .table(rank_table(r))
        .items(slowest)
        .only(Shown::Text)
        .para(xor_line(r))
        .only(Shown::Text)
        .items(r.notes.iter().map(|n| format!("note: {n}")).collect())
        .only(Shown::Text)
}

/// What the XOR check said of the data read (or, without reads, written).
fn xor_line(r: &IorResult) -> String {
    let reads: Vec<&PhaseResult> = r.phases.iter().filter(|p| p.access == "read").collect();
    let checked: Vec<&PhaseResult> = if reads.is_empty() {
        r.phases.iter().collect()
    } else {
        reads
    };
    let ok = checked.iter().all(|p| p.verified());
    if checked.iter().any(|p| !p.checked()) {
        return "XOR not checked (--no-verify): bandwidth as IOR measures it without -R; the data moved was not checked".into();
    }
    checked.last().map_or_else(String::new, |p| {
        format!(
            "XOR of all data {}: {} (expected {}): {}",
            if p.access == "read" {
                "read"
            } else {
                "written"
            },
            p.xor.map_or("-".into(), format_xor),
            format_xor(p.expected_xor),
            if ok {
                "verified, every rank's part"
            } else {
                "MISMATCH"
            }
        )
    })
}
