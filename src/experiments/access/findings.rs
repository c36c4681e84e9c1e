//! What `access` concludes: random 4 KiB warm, a mapping against pread.

use super::AccessRow;
use crate::cache::CacheMode;
use crate::engine::ReadMethod;
use crate::measure::decide::Spend;
use crate::measure::finding::{Better, Finding, Pairing, Side, compare, usable};
use crate::workload::Pattern;

fn access_row(rows: &[AccessRow], m: ReadMethod, p: Pattern, c: CacheMode) -> Option<&AccessRow> {
    rows.iter().find(|r| {
        r.method == m && r.pattern == p && r.cache == c && usable(&r.kiops, &r.unsupported)
    })
}

/// Random 4 KiB, warm: a mapping (no hint) against pread. The same two cells every run: picking
/// the best of several mapping variants by median would name a different variant from run to
/// run when they are within noise of each other.
///
/// `spend`: the level and looks the harness planned for these rows' rounds.
pub fn random_warm(rows: &[AccessRow], spend: Spend) -> Option<Finding> {
    let pread = access_row(rows, ReadMethod::Pread, Pattern::Random, CacheMode::Warm)?;
    let mmap = access_row(rows, ReadMethod::Mmap, Pattern::Random, CacheMode::Warm)?;
    let side = |r: &AccessRow| Side {
        name: r.method.name().into(),
        s: r.kiops.clone(),
        cite: format!("access: {} random warm", r.method.name()),
    };
    compare(
        "random-4k-warm",
        "random 4 KiB reads, warm",
        "KIOPS",
        Better::Higher,
        Pairing::Paired(spend),
        side(mmap),
        side(pread),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::decide::Decided;
    use crate::measure::finding::eight;
    use crate::measure::latency::LatencySummary;
    use crate::measure::stats::summarize;

    const LOOKS: Spend = Spend::looks(crate::measure::decide::LOOKS.len());

    fn arow(m: ReadMethod, p: Pattern, c: CacheMode, kiops: &[f64]) -> AccessRow {
        AccessRow {
            method: m,
            pattern: p,
            cache: c,
            runs: Vec::new(),
            kiops: summarize(kiops),
            mib_s: summarize(&kiops.iter().map(|k| k * 4.0 / 1.024).collect::<Vec<_>>()),
            latency: LatencySummary::default(),
            minor_faults_per_op: 0.0,
            major_faults_per_op: 0.0,
            device_bytes_per_byte: None,
            cache_verified: true,
            unsupported: None,
        }
    }

    #[test]
    fn random_warm_compares_mmap_with_pread_and_names_it_only_when_clear() {
        let rows = vec![
            arow(
                ReadMethod::Pread,
                Pattern::Random,
                CacheMode::Warm,
                &eight(&[1000.0, 900.0, 1100.0]),
            ),
            arow(
                ReadMethod::Mmap,
                Pattern::Random,
                CacheMode::Warm,
                &eight(&[1900.0, 1700.0, 2100.0]),
            ),
            arow(
                ReadMethod::MmapRandom,
                Pattern::Random,
                CacheMode::Warm,
                &[1500.0; 8],
            ),
            arow(
                ReadMethod::Mmap,
                Pattern::Random,
                CacheMode::Cold,
                &[9000.0; 8],
            ),
        ];
        let f = random_warm(&rows, LOOKS).unwrap();
        assert_eq!(f.winner.as_deref(), Some("mmap"), "{}", f.text);
        assert!((f.ratio - 1.9).abs() < 0.05, "{f:?}");
        assert!(
            f.text.contains("mmap 1.90x faster than pread"),
            "{}",
            f.text
        );
        assert_eq!(f.cites[0], "access: mmap random warm");
        assert_eq!(
            (f.decided, f.level, f.rounds),
            (Some(Decided::Winner), 0.95, 8)
        );
        // The ratio printed is the one whose interval is printed.
        assert!(f.ci[0] <= f.ratio && f.ratio <= f.ci[1], "{f:?}");
        assert!(f.text.contains("per-round ratios (paired)"), "{}", f.text);
        // Three rounds (what --quick used to take) decide nothing.
        let three: Vec<AccessRow> = rows
            .iter()
            .map(|r| AccessRow {
                kiops: summarize(&r.kiops.samples[..3]),
                ..r.clone()
            })
            .collect();
        let f = random_warm(&three, Spend::ONCE).unwrap();
        assert_eq!(
            (f.winner.as_deref(), f.decided),
            (None, Some(Decided::Undecided))
        );
        assert!(f.text.contains("undecided (budget: 3 rounds"), "{}", f.text);
        assert!(
            !f.text.contains(", interval") && !f.text.contains("at only"),
            "no interval printed: {}",
            f.text
        );
        assert_eq!(f.ci, [0.0, 0.0]);
        assert!(
            random_warm(&rows[1..], LOOKS).is_none(),
            "no pread row, no finding"
        );
    }
}
