//! The replay's table and findings: per cache state, the fastest method that beat the reads as
//! recorded at 95%, or a finding that none clearly did.

use super::plan::ReplayPlan;
use super::{ReplayResult, ReplayRow};
use crate::cache::CacheMode;
use crate::measure::decide::{Decided, Verdict};
use crate::measure::finding::{Better, Finding, Pairing, Side, compare};
use crate::report::{Column, Document, Table, Value};
use crate::size::format_size;

/// Per cache state: the first method (in the methods' order) decided faster than the accesses as
/// recorded, as a finding with its interval and the other methods decided faster after it; with
/// none decided faster, the comparison with the largest median gain, whose finding then says
/// there is no clear winner (or that the recorded accesses were faster). Its winner is
/// [`OTHER`] for any method faster than the recorded accesses (the text names which), or the
/// recorded accesses.
/// The winner of a replay finding when a method beat the accesses as recorded.
pub const OTHER: &str = "another method";

pub(super) fn findings(
    rows: &[ReplayRow],
    caches: &[CacheMode],
    pairs: &[(usize, usize, Option<Verdict>)],
) -> Vec<Finding> {
    let mut out = Vec::new();
    for cache in caches {
        // Each pair of this cache state: a method (its row) against the recorded accesses.
        let mine: Vec<(usize, usize, Verdict)> = pairs
            .iter()
            .filter(|(_, b, _)| rows[*b].cache == *cache)
            .filter_map(|&(a, b, v)| v.map(|v| (a, b, v)))
            .collect();
        let won = |v: &Verdict| v.decided == Decided::Winner && v.a_larger == Some(true);
        // The first decided winner in the methods' order, not the largest ratio: methods of
        // one family (the mapping hints) often beat the recorded reads by overlapping margins,
        // and which of them is largest changes from run to run; the others are named after it.
        let winners: Vec<&(usize, usize, Verdict)> =
            mine.iter().filter(|(_, _, v)| won(v)).collect();
        let best = winners
            .first()
            .copied()
            .or_else(|| mine.iter().max_by(|a, b| a.2.ratio.total_cmp(&b.2.ratio)));
        let Some(&(ka, kb, v)) = best else {
            continue;
        };
        let a = &rows[ka];
        let b = &rows[kb];
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
            let also: Vec<String> = winners
                .iter()
                .skip(1)
                .map(|(k, _, v)| {
                    let m = &rows[*k].method;
                    format!("{m} {:.2}x ({:.2}-{:.2})", v.ratio, v.ci[0], v.ci[1])
                })
                .collect();
            let mut f = f;
            // The question the key answers is whether the recorded reads can be beaten: every
            // other method is one side. Which of them is decided first moves from run to run
            // (mmap in one quick suite, pread 128 KiB merged in the next, both 1.2x with
            // overlapping intervals), so the winner is named as the class and the text names
            // each method with its interval.
            if let Some(w) = f.winner.as_mut()
                && *w != b.method
            {
                *w = OTHER.to_string();
            }
            if !also.is_empty() {
                f.text.push_str(&format!(
                    "; also faster than as recorded: {}",
                    also.join(", ")
                ));
            }
            out.push(f);
        }
    }
    out
}

/// The table: one row per method and cache state.
pub fn replay_table(r: &ReplayResult) -> Table {
    let mut t = Table::new(
        [
            "method",
            "cache",
            "MiB/s",
            "interval",
            "seconds",
            "bytes read",
            "requests",
            "cache ok",
        ]
        .iter()
        .map(|c| Column::new(c))
        .chain([Column::new("note")]),
    );
    for row in &r.rows {
        let lead = vec![Value::text(&row.method), Value::text(row.cache.name())];
        if let Some(why) = &row.unsupported {
            t.unsupported(lead, why);
            continue;
        }
        let mut cells = lead;
        cells.extend([
            Value::Fixed(row.mib_s.median, 0),
            Value::text(format!("{:.0}-{:.0}", row.mib_s.ci[0], row.mib_s.ci[1])),
            Value::Fixed(row.seconds.median, 4),
            Value::Bytes(row.bytes),
            Value::Count(row.ops),
            Value::Flag(row.cache_verified),
            Value::text(if row.bytes > r.bytes {
                format!("+{} aligned", format_size(row.bytes - r.bytes))
            } else {
                String::new()
            }),
        ]);
        t.row(cells);
    }
    t
}

/// The replay: what was replayed, its findings and notes, how the rounds went, the table.
pub fn replay_document(r: &ReplayResult) -> Document {
    let mut head = vec![format!(
        "replay of {}: {} accesses of {} files, {} per run; {:.0}% sequential, typical access {}",
        r.command
            .iter()
            .map(|a| crate::shown::word(std::ffi::OsStr::new(a)))
            .collect::<Vec<_>>()
            .join(" "),
        r.reads,
        r.files,
        format_size(r.bytes),
        100.0 * r.sequential,
        format_size(r.typical_read)
    )];
    head.extend(r.findings.iter().map(|f| format!("finding: {}", f.text)));
    head.extend(r.notes.iter().map(|n| format!("note: {n}")));
    head.push(crate::report::rounds_line(&r.rounds));
    Document::new().items(head).table(replay_table(r))
}

/// What the replay checked: every run of a method that reads the recorded bytes gave each
/// file's XOR as the trace has it (else it stopped with an error); direct methods, which read
/// aligned out, agreed among themselves.
pub(super) fn verified(
    plan: &super::plan::ReplayPlan,
    cells: &[super::cells::ReplayCell],
    runs: &[crate::harness::CellRuns<()>],
) -> String {
    let (mut exact, mut direct) = (0usize, 0usize);
    for (c, r) in cells.iter().zip(runs) {
        let n = r.runs.len() + r.warmups.len();
        if c.method.direct() {
            direct += n;
        } else {
            exact += n;
        }
    }
    if exact + direct == 0 {
        return "verified: nothing (no run completed within the budget)".to_string();
    }
    let with = plan.files.iter().filter(|f| f.xor.is_some()).count();
    let mut s = format!(
        "verified: {exact} run(s) reading the recorded bytes each gave the XOR the trace has for {with} of {} file(s)",
        plan.files.len()
    );
    if with < plan.files.len() {
        s.push_str(" (the others have none: traced with --no-xor, or changed during the run; every run's XOR over all the bytes agreed with the first's)");
    }
    if direct > 0 {
        s.push_str(&format!(
            "; {direct} O_DIRECT run(s), which read aligned out, agreed among themselves"
        ));
    }
    if let Some(left) = left_out(plan) {
        s.push_str("; ");
        s.push_str(&left);
    }
    s
}

/// The files the program read that the replay left out, with their share of the bytes read,
/// and why (the largest named).
fn left_out(plan: &super::plan::ReplayPlan) -> Option<String> {
    let (path, most, why) = plan.left_out.iter().max_by_key(|(_, b, _)| *b)?;
    let left: u64 = plan.left_out.iter().map(|(_, b, _)| b).sum();
    let total = left + plan.bytes_per_file().iter().sum::<u64>();
    Some(format!(
        "not replayed, so not verified: {} more file(s) the program read, {} of the {} its accesses read ({:.0}%), the largest {} ({}, {})",
        plan.left_out.len(),
        crate::size::format_size(left),
        crate::size::format_size(total),
        100.0 * left as f64 / total.max(1) as f64,
        crate::shown::path(path),
        crate::size::format_size(*most),
        why
    ))
}

/// Notes on what the replay leaves out, and the files gone since the trace taken out.
pub(super) fn prune(p: &mut ReplayPlan) -> crate::error::Result<()> {
    let notes = plan_notes(p);
    p.notes.extend(notes);
    let gone: std::collections::BTreeSet<usize> = (0..p.files.len())
        .filter(|&i| !p.files[i].path.exists())
        .collect();
    if let Some(&first) = gone.first() {
        let bytes = p.bytes_per_file();
        let total: u64 = bytes.iter().sum();
        let left: u64 = gone.iter().map(|&i| bytes[i]).sum();
        p.notes.push(format!(
            "{} file(s) the program read no longer exist (temporary files, most likely) and are left out, {} of the {} its accesses read (the first: {})",
            gone.len(),
            crate::size::format_size(left),
            crate::size::format_size(total),
            crate::shown::path(&p.files[first].path)
        ));
        for &i in &gone {
            let path = p.files[i].path.clone();
            p.left_out.push((path, bytes[i], "no longer exists"));
        }
        p.leave_out(&gone);
    }
    if p.threads.iter().all(|t| t.is_empty()) {
        return Err(crate::error::Error::usage(
            "nothing to replay",
            "the trace has no reads or mapped access of regular files that still exist",
        ));
    }
    Ok(())
}

/// What a plan leaves out or replays in its own way, one note each: writes, io_uring requests,
/// O_DIRECT reads, mapped access.
pub(super) fn plan_notes(p: &super::plan::ReplayPlan) -> Vec<String> {
    let mut notes = Vec::new();
    if p.writes > 0 {
        notes.push(format!(
            "{} writes to files are not replayed (they would change them)",
            p.writes
        ));
    }
    if p.uring_unseen {
        notes.push(
            "the program used io_uring, and not all it read through it is in the trace: this replay (and its verdict) covers only what the trace saw".to_string(),
        );
    } else if p.uring_bytes > 0 {
        notes.push(format!(
            "the program used io_uring: {} of the reads were its requests (read from its rings), replayed by each method as the other reads are",
            crate::size::format_size(p.uring_bytes)
        ));
    }
    if p.direct_bytes > 0 {
        notes.push(format!(
            "{} of the reads were of files the program opened with O_DIRECT",
            crate::size::format_size(p.direct_bytes)
        ));
    }
    if p.mapped_bytes > 0 {
        notes.push(format!(
            "mapped access replayed as the range each page fault stands for (its {} KiB window, or a whole 2 MiB block in a scan of large folios; {} of the {} the trace's accesses came to): the program may have touched less",
            crate::trace::FAULT_AROUND >> 10,
            crate::size::format_size(p.mapped_bytes),
            crate::size::format_size(p.mapped_bytes + p.read_bytes),
        ));
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::decide::RatioKind;
    use crate::measure::stats::summarize;

    fn row(method: &str, rates: &[f64]) -> ReplayRow {
        ReplayRow {
            method: method.into(),
            cache: CacheMode::Warm,
            seconds: summarize(&[1.0]),
            mib_s: summarize(rates),
            bytes: 1,
            ops: 1,
            cache_verified: true,
            unsupported: None,
        }
    }

    fn verdict(ratio: f64, decided: Decided) -> Option<Verdict> {
        Some(Verdict {
            ratio,
            ci: [ratio * 0.9, ratio * 1.1],
            level: 0.95,
            asked: 0.95,
            rounds: 8,
            kind: RatioKind::Paired,
            decided,
            a_larger: (decided == Decided::Winner).then_some(ratio > 1.0),
        })
    }

    #[test]
    fn the_first_decided_winner_in_order_is_named_and_the_others_after_it() {
        let rows = [
            row("as recorded (pread)", &[100.0; 8]),
            row("mmap", &[150.0; 8]),
            row("mmap-willneed", &[170.0; 8]),
            row("direct", &[50.0; 8]),
        ];
        let pairs = |vs: [Option<Verdict>; 3]| -> Vec<(usize, usize, Option<Verdict>)> {
            vs.into_iter()
                .enumerate()
                .map(|(i, v)| (i + 1, 0, v))
                .collect()
        };
        let vs = [
            verdict(1.5, Decided::Winner),
            verdict(1.7, Decided::Winner),
            verdict(0.5, Decided::Winner),
        ];
        let f = findings(&rows, &[CacheMode::Warm], &pairs(vs));
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].winner.as_deref(), Some(OTHER), "{}", f[0].text);
        assert!(f[0].text.contains(": mmap 1.50x faster"), "{}", f[0].text);
        // Only a hint decided: the winner is still the class, the text names the hint.
        let vs2 = [
            verdict(1.5, Decided::Undecided),
            verdict(1.7, Decided::Winner),
            verdict(0.5, Decided::Winner),
        ];
        let g = findings(&rows, &[CacheMode::Warm], &pairs(vs2));
        assert_eq!(g[0].winner.as_deref(), Some(OTHER), "{}", g[0].text);
        // Another family decided alone (a merged pread, as in a quick suite of 2026-11-28):
        // the same winner, so two runs cannot name two.
        let rows3 = [
            row("as recorded (pread)", &[100.0; 8]),
            row("pread 128 KiB merged", &[120.0; 8]),
        ];
        let h = findings(
            &rows3,
            &[CacheMode::Warm],
            &[(1, 0, verdict(1.2, Decided::Winner))],
        );
        assert_eq!(h[0].winner.as_deref(), Some(OTHER), "{}", h[0].text);
        // The recorded reads faster than all: they are named.
        let k = findings(
            &rows3,
            &[CacheMode::Warm],
            &[(1, 0, verdict(0.7, Decided::Winner))],
        );
        assert_eq!(
            k[0].winner.as_deref(),
            Some("as recorded (pread)"),
            "{}",
            k[0].text
        );
        assert!(g[0].text.starts_with("the traced"), "{}", g[0].text);
        assert!(g[0].text.contains("mmap-willneed 1.70x"), "{}", g[0].text);
        assert!(
            f[0].text
                .contains("also faster than as recorded: mmap-willneed 1.70x"),
            "{}",
            f[0].text
        );
        // None decided faster: no winner named.
        let vs = [
            verdict(1.02, Decided::Equivalent),
            verdict(1.2, Decided::Undecided),
            verdict(0.5, Decided::Winner),
        ];
        let f = findings(&rows, &[CacheMode::Warm], &pairs(vs));
        assert_eq!(f[0].winner, None, "{}", f[0].text);
    }
}
