//! What the sweeps conclude: read against mmap in sequence (cold and warm), where mmap starts
//! to win, and what an fsync per block costs.

use super::{CellKind, SweepCell};
use crate::cache::CacheMode;
use crate::engine::ReadMethod;
use crate::engine::write::{SyncMode, WriteMethod};
use crate::measure::decide::{Decided, Spend};
use crate::measure::finding::{Better, Finding, Pairing, Side, compare, usable};

fn sweep_cell(cells: &[SweepCell], bs: u64, kind: CellKind) -> Option<&SweepCell> {
    cells
        .iter()
        .find(|c| c.bs == bs && c.kind == kind && usable(&c.mib_s, &c.unsupported))
}

fn read_cell(m: ReadMethod, cache: CacheMode) -> CellKind {
    CellKind::Read { method: m, cache }
}

fn write_cell(sync: SyncMode) -> CellKind {
    CellKind::Write {
        method: WriteMethod::Write,
        sync,
    }
}

fn sweep_side(c: &SweepCell, op: &str) -> Side {
    Side {
        name: c.method_name().into(),
        s: c.mib_s.clone(),
        cite: format!("sweep {op}: {} {} {}", c.method_name(), c.mode_name(), c.bs),
    }
}

/// read against mmap at block size `bs` from `cache`.
fn read_vs_mmap(
    cells: &[SweepCell],
    spend: Spend,
    bs: u64,
    cache: CacheMode,
    key: &str,
) -> Option<Finding> {
    let read = sweep_cell(cells, bs, read_cell(ReadMethod::Read, cache))?;
    let mmap = sweep_cell(cells, bs, read_cell(ReadMethod::Mmap, cache))?;
    let what = format!(
        "sequential {} reads in {} blocks",
        cache.name(),
        crate::size::format_size(bs)
    );
    compare(
        key,
        &what,
        "MiB/s",
        Better::Higher,
        Pairing::Paired(spend),
        sweep_side(mmap, "read"),
        sweep_side(read, "read"),
    )
}

/// The block size of the `sequential-*` findings.
pub const SEQUENTIAL_BS: u64 = 1 << 20;

/// Sequential reads, cold and warm, at 1 MiB blocks ([`SEQUENTIAL_BS`]; the largest swept
/// where 1 MiB was not): mmap against read. `spend`: the level and looks the harness planned for the
/// sweep's rounds.
pub fn sequential(cells: &[SweepCell], spend: Spend, cache: CacheMode) -> Option<Finding> {
    // One comparison under one key in every run: 1 MiB blocks, swept by the quick suite and
    // the full one alike (the largest size swept only where 1 MiB was not).
    let bs = if cells.iter().any(|c| c.bs == SEQUENTIAL_BS) {
        SEQUENTIAL_BS
    } else {
        cells.iter().map(|c| c.bs).max()?
    };
    read_vs_mmap(
        cells,
        spend,
        bs,
        cache,
        &format!("sequential-{}", cache.name()),
    )
}

/// Warm: the smallest block size from which mmap is clearly faster than read at every larger
/// size swept; its ratio and interval are those at that size.
pub fn mmap_crossover(cells: &[SweepCell], spend: Spend) -> Option<Finding> {
    let mut sizes: Vec<u64> = cells
        .iter()
        .filter(|c| c.read().is_some_and(|(_, cache)| cache == CacheMode::Warm))
        .map(|c| c.bs)
        .collect();
    sizes.sort();
    sizes.dedup();
    let per_size: Vec<(u64, Finding)> = sizes
        .iter()
        .filter_map(|&bs| Some((bs, read_vs_mmap(cells, spend, bs, CacheMode::Warm, "")?)))
        .collect();
    let (last_bs, last) = per_size.last()?;
    let mmap_wins = |f: &Finding| f.winner.as_deref() == Some("mmap");
    let from = per_size
        .iter()
        .rposition(|(_, f)| !mmap_wins(f))
        .map(|i| i + 1)
        .unwrap_or(0);
    let size = |bs: u64| crate::size::format_size(bs);
    let detail = |f: &Finding| {
        f.text
            .split_once(": ")
            .map_or(f.text.clone(), |(_, d)| d.into())
    };
    let (text, winner, at) = match per_size.get(from) {
        Some((bs, f)) => (
            format!(
                "warm: mmap is clearly faster than read from {} blocks up (at {}: {})",
                size(*bs),
                size(*bs),
                detail(f)
            ),
            Some("mmap".to_string()),
            f,
        ),
        None => (
            format!(
                "warm: mmap is not clearly faster than read at the largest block size swept, {} ({})",
                size(*last_bs),
                detail(last)
            ),
            None,
            last,
        ),
    };
    Some(Finding {
        key: "mmap-crossover-warm".into(),
        text,
        decided: if winner.is_some() {
            Some(Decided::Winner)
        } else {
            last.decided
        },
        winner,
        ratio: at.ratio,
        ratio_kind: at.ratio_kind,
        ci: at.ci,
        level: at.level,
        rounds: at.rounds,
        cites: per_size.iter().flat_map(|(_, f)| f.cites.clone()).collect(),
        sides: at.sides.clone(),
    })
}

/// The price of fsync after every block, at 1 MiB blocks (or the largest swept).
pub fn fsync_cost(cells: &[SweepCell], spend: Spend) -> Option<Finding> {
    let sizes: Vec<u64> = cells
        .iter()
        .filter(|c| c.write().is_some_and(|(_, sync)| sync == SyncMode::Each))
        .map(|c| c.bs)
        .collect();
    let bs = if sizes.contains(&(1 << 20)) {
        1 << 20
    } else {
        *sizes.iter().max()?
    };
    let none = sweep_cell(cells, bs, write_cell(SyncMode::None))?;
    let each = sweep_cell(cells, bs, write_cell(SyncMode::Each))?;
    let side = |c: &SweepCell, name: &str| Side {
        name: name.into(),
        ..sweep_side(c, "write")
    };
    compare(
        "fsync-each",
        &format!("write() in {} blocks", crate::size::format_size(bs)),
        "MiB/s",
        Better::Higher,
        Pairing::Paired(spend),
        side(none, "no sync"),
        side(each, "fsync after every block"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::finding::eight;
    use crate::measure::stats::summarize;

    const LOOKS: Spend = Spend::looks(crate::measure::decide::LOOKS.len());

    const W: Option<CacheMode> = Some(CacheMode::Warm);
    const C: Option<CacheMode> = Some(CacheMode::Cold);

    fn cell(
        bs: u64,
        m: &str,
        cache: Option<CacheMode>,
        sync: Option<SyncMode>,
        mib: &[f64],
    ) -> SweepCell {
        let kind = match (cache, sync) {
            (Some(cache), _) => read_cell(m.parse().unwrap(), cache),
            (_, Some(sync)) => CellKind::Write {
                method: m.parse().unwrap(),
                sync,
            },
            _ => unreachable!("a cell reads or writes"),
        };
        SweepCell {
            bs,
            kind,
            runs: Vec::new(),
            mib_s: summarize(mib),
            syscalls_per_gib: 0.0,
            minor_faults_per_gib: 0.0,
            major_faults_per_gib: 0.0,
            cache_verified: true,
            unsupported: None,
        }
    }

    /// The noisy quick-suite data the issue recorded: four runs said "read 1.76x", "read 5.21x",
    /// "mmap 1.17x", "read 1.48x" for sequential cold reads. Per round, such data straddle 1.
    #[test]
    fn recorded_noise_gives_no_clear_difference() {
        let cells = vec![
            cell(16 << 20, "read", C, None, &[1813.0, 3643.0, 2400.0]),
            cell(16 << 20, "mmap", C, None, &[1030.0, 3850.0, 1620.0]),
        ];
        let f = sequential(&cells, Spend::ONCE, CacheMode::Cold).unwrap();
        assert_eq!(f.winner, None, "{}", f.text);
        assert!(
            f.text.contains(
                "undecided (budget: 3 rounds, too few for an interval at 95%; 0.72x without"
            ),
            "{}",
            f.text
        );
        // Eight such rounds still straddle 1: undecided, never a winner.
        let cells = vec![
            cell(16 << 20, "read", C, None, &eight(&[1813.0, 3643.0, 2400.0])),
            cell(16 << 20, "mmap", C, None, &eight(&[1030.0, 3850.0, 1620.0])),
        ];
        let f = sequential(&cells, LOOKS, CacheMode::Cold).unwrap();
        assert_eq!(f.decided, Some(Decided::Undecided), "{}", f.text);
        assert!(f.ci[0] < 1.0 && f.ci[1] > 1.0, "{f:?}");
        // One run per cell (what --quick used to do) cannot name a winner either: no interval.
        let one = vec![
            cell(1 << 20, "read", C, None, &[1000.0]),
            cell(1 << 20, "mmap", C, None, &[5000.0]),
        ];
        let f = sequential(&one, LOOKS, CacheMode::Cold).unwrap();
        assert_eq!(f.winner, None, "{}", f.text);
    }

    #[test]
    fn sequential_and_crossover_name_winners_only_where_every_round_agrees() {
        let cells = vec![
            cell(4096, "read", W, None, &eight(&[6000.0, 6100.0, 5900.0])),
            cell(4096, "mmap", W, None, &eight(&[5000.0, 5100.0, 4900.0])),
            cell(65536, "read", W, None, &eight(&[9000.0, 9500.0, 8800.0])),
            cell(65536, "mmap", W, None, &eight(&[9100.0, 9300.0, 9000.0])),
            cell(
                1 << 20,
                "read",
                W,
                None,
                &eight(&[20000.0, 21000.0, 19000.0]),
            ),
            cell(
                1 << 20,
                "mmap",
                W,
                None,
                &eight(&[25000.0, 26000.0, 24500.0]),
            ),
        ];
        let w = sequential(&cells, LOOKS, CacheMode::Warm).unwrap();
        assert_eq!(w.winner.as_deref(), Some("mmap"), "{}", w.text);
        assert!(w.text.contains("mmap 1.25x faster than read"), "{}", w.text);
        let x = mmap_crossover(&cells, LOOKS).unwrap();
        assert_eq!(x.winner.as_deref(), Some("mmap"));
        assert!(
            x.text
                .starts_with("warm: mmap is clearly faster than read from 1 MiB"),
            "{}",
            x.text
        );
        assert_eq!(x.key, "mmap-crossover-warm");
    }

    #[test]
    fn fsync_cost_is_the_ratio_at_one_mib() {
        let w = |bs: u64, sync, mib: &[f64]| cell(bs, "write", None, Some(sync), mib);
        let (none, each) = (SyncMode::None, SyncMode::Each);
        let cells = vec![
            w(65536, none, &[4000.0; 8]),
            w(65536, each, &[100.0; 8]),
            w(1 << 20, none, &eight(&[4000.0, 4100.0, 3900.0])),
            w(1 << 20, each, &[1000.0; 8]),
        ];
        let f = fsync_cost(&cells, LOOKS).unwrap();
        assert!((f.ratio - 4.0).abs() < 0.02, "{f:?}");
        assert_eq!(f.winner.as_deref(), Some("no sync"));
        let odd = vec![
            w(16 << 20, none, &eight(&[800.0, 1700.0, 900.0])),
            w(16 << 20, each, &eight(&[1600.0, 1500.0, 1650.0])),
        ];
        let o = fsync_cost(&odd, LOOKS).unwrap();
        assert_eq!(o.winner, None, "{}", o.text);
    }

    #[test]
    fn findings_never_compare_a_thing_with_itself() {
        let a = cell(1 << 20, "read", W, None, &[100.0; 3]);
        let side = |c| sweep_side(c, "read");
        let p = Pairing::Paired(Spend::ONCE);
        assert!(compare("k", "w", "MiB/s", Better::Higher, p, side(&a), side(&a)).is_none());
    }
}
