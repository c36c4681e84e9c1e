//! `iolab run2`'s outputs: its lines, table and Markdown.

use super::Run2Result;
use crate::report::{Document, Shown, Table, Value};
use crate::size::{format_size, mib_per_s};
use crate::xor::format_xor;

/// run2's search, a row per step.
pub fn run2_table(r: &Run2Result) -> Table {
    let mut t = Table::titled(&[
        "step",
        "block size",
        "block count",
        "bytes",
        "secs",
        "MiB/s",
        "xor",
    ]);
    for (i, step) in r.steps.iter().enumerate() {
        let secs = step.run.seconds();
        t.row(vec![
            Value::Count(i as u64 + 1),
            Value::Count(r.config.bs),
            Value::Count(step.run.blocks),
            Value::Count(step.run.bytes),
            Value::Fixed(secs, 6),
            Value::Fixed(mib_per_s(step.run.bytes, secs), 2),
            Value::text(format_xor(step.run.xor)),
        ]);
    }
    t
}

/// `iolab run2`: in text the classic program's lines and what the search found; otherwise
/// the steps as a table, then what the search found.
pub fn run2_document(r: &Run2Result) -> Document {
    let lines = run2_lines(r);
    let outcome: String = lines.lines().skip(6).map(|l| format!("{l}\n")).collect();
    Document::new()
        .lines(lines)
        .only(Shown::Text)
        .table(run2_table(r))
        .only(Shown::Markdown)
        .para(outcome)
        .only(Shown::Markdown)
}

/// `iolab run2` output: the classic program's lines for the count found (or the closest), then
/// what happened, and the prediction when the file was too small.
pub fn run2_lines(r: &Run2Result) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn durations_read_naturally() {
        assert_eq!(human_duration(Duration::from_secs(15)), "15 s");
        assert_eq!(human_duration(Duration::from_millis(50)), "50 ms");
        assert_eq!(human_duration(Duration::from_nanos(2)), "2 ns");
        assert_eq!(human_duration(Duration::from_micros(1500)), "1.5 ms");
    }
}
