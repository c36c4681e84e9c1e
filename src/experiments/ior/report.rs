//! `iolab ior` as IOR prints it (the Results table per iteration, then the summary over the
//! iterations), followed by what iolab adds: the XOR check, each rank's cache, faults and device
//! bytes, and the slowest rank.

use crate::experiments::ior::{IorResult, PhaseResult};
use crate::measure::stats::summarize;
use crate::report::{Format, csv_table, json, markdown_table, table};
use crate::size::format_size;
use crate::xor::format_xor;

/// The per-iteration rows, IOR's columns.
fn results_rows(r: &IorResult) -> Vec<Vec<String>> {
    let mut rows = vec![
        [
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
        ]
        .map(String::from)
        .to_vec(),
    ];
    for p in &r.phases {
        rows.push(vec![
            p.access.clone(),
            format!("{:.2}", p.mib_s),
            format!("{:.2}", p.iops),
            format!("{:.6}", p.latency_s),
            (r.config.block / 1024).to_string(),
            (r.config.transfer / 1024).to_string(),
            format!("{:.6}", p.open_s),
            format!("{:.6}", p.xfer_s),
            format!("{:.6}", p.close_s),
            format!("{:.6}", p.total_s),
            p.iteration.to_string(),
        ]);
    }
    rows
}

/// The summary over iterations per operation, IOR's columns that apply.
fn summary_rows(r: &IorResult) -> Vec<Vec<String>> {
    let mut rows = vec![
        [
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
        ]
        .map(String::from)
        .to_vec(),
    ];
    for op in ["write", "read"] {
        let ps: Vec<&PhaseResult> = r.phases.iter().filter(|p| p.access == op).collect();
        if ps.is_empty() {
            continue;
        }
        let bw = summarize(&ps.iter().map(|p| p.mib_s).collect::<Vec<_>>());
        let ops = summarize(&ps.iter().map(|p| p.iops).collect::<Vec<_>>());
        let secs = ps.iter().map(|p| p.total_s).sum::<f64>() / ps.len() as f64;
        let agg = ps[0].ranks.iter().map(|k| k.bytes).sum::<u64>() as f64 / 1_048_576.0;
        rows.push(vec![
            op.into(),
            format!("{:.2}", bw.max),
            format!("{:.2}", bw.min),
            format!("{:.2}", bw.mean),
            format!("{:.2}", bw.stddev),
            format!("{:.2}", ops.max),
            format!("{:.2}", ops.min),
            format!("{:.2}", ops.mean),
            format!("{secs:.5}"),
            r.ranks.to_string(),
            r.config.iterations.to_string(),
            u8::from(r.config.file_per_proc).to_string(),
            u8::from(r.config.reorder).to_string(),
            r.config.segments.to_string(),
            r.config.block.to_string(),
            r.config.transfer.to_string(),
            format!("{agg:.1}"),
            r.config.api.name().to_uppercase(),
        ]);
    }
    rows
}

/// A row per rank and phase: what iolab adds; `csv`: plain numbers, `true`/`false` (empty when
/// not checked), a missing figure empty.
fn rank_rows(r: &IorResult, csv: bool) -> Vec<Vec<String>> {
    let mut rows = vec![
        [
            "access",
            "iter",
            "rank",
            "data of",
            "bytes",
            "secs",
            if csv {
                "resident before %"
            } else {
                "resident before"
            },
            "minflt",
            "majflt",
            if csv { "dev read bytes" } else { "dev read" },
            "xor",
            "expected",
            "ok",
        ]
        .map(String::from)
        .to_vec(),
    ];
    for p in &r.phases {
        for (i, k) in p.ranks.iter().enumerate() {
            rows.push(vec![
                p.access.clone(),
                p.iteration.to_string(),
                i.to_string(),
                k.data_of.to_string(),
                k.bytes.to_string(),
                format!("{:.6}", k.close_end - k.open_start),
                match (k.resident_before < 0.0, csv) {
                    (true, true) => String::new(),
                    (true, false) => "-".into(),
                    (false, true) => format!("{:.1}", k.resident_before * 100.0),
                    (false, false) => format!("{:.1}%", k.resident_before * 100.0),
                },
                k.minor_faults.to_string(),
                k.major_faults.to_string(),
                if csv {
                    k.device_read_bytes.to_string()
                } else {
                    format_size(k.device_read_bytes)
                },
                k.xor.map_or(if csv { "" } else { "-" }.into(), format_xor),
                format_xor(k.expected_xor),
                match (k.xor, csv) {
                    (None, true) => String::new(),
                    (Some(x), true) => crate::report::csv_bool(x == k.expected_xor),
                    (None, false) => "not checked".into(),
                    (Some(x), false) if x == k.expected_xor => "yes".into(),
                    (Some(_), false) => "no".into(),
                },
            ]);
        }
    }
    rows
}

/// The report in `format`.
pub fn ior_report(r: &IorResult, format: Format) -> String {
    match format {
        Format::Json => return json(r),
        Format::Csv => return csv_table(&rank_rows(r, true)),
        Format::Markdown => {
            return format!(
                "{}\n{}\n{}",
                markdown_table(&results_rows(r)),
                markdown_table(&summary_rows(r)),
                markdown_table(&rank_rows(r, false))
            );
        }
        Format::Text => {}
    }
    let c = &r.config;
    let mut out = format!(
        "iolab ior: {} ranks, api {}, {}, block {} x {} segment(s), transfer {}{}{}{}\n\nResults:\n\n",
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
    out.push_str(&table(&results_rows(r)));
    out.push_str("\nSummary of all tests:\n");
    out.push_str(&table(&summary_rows(r)));
    out.push_str("\nPer rank (iolab):\n");
    out.push_str(&table(&rank_rows(r, false)));
    for p in &r.phases {
        if p.ranks.len() > 1 {
            out.push_str(&format!(
                "{} iter {}: slowest rank {}, {:.2}x the fastest\n",
                p.access, p.iteration, p.slowest_rank, p.slowest_ratio
            ));
        }
    }
    let reads: Vec<&PhaseResult> = r.phases.iter().filter(|p| p.access == "read").collect();
    let checked: Vec<&PhaseResult> = if reads.is_empty() {
        r.phases.iter().collect()
    } else {
        reads
    };
    let ok = checked.iter().all(|p| p.verified());
    if checked.iter().any(|p| !p.checked()) {
        out.push_str(
            "XOR not checked (--no-verify): bandwidth as IOR measures it without -R; the data moved was not checked\n",
        );
    } else if let Some(p) = checked.last() {
        out.push_str(&format!(
            "XOR of all data {}: {} (expected {}): {}\n",
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
        ));
    }
    for n in &r.notes {
        out.push_str(&format!("note: {n}\n"));
    }
    out
}
