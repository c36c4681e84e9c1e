//! Findings: the answers people come for, derived from the measurements (never written by hand),
//! each citing the rows it comes from.

use crate::cache::CacheMode;
use crate::engine::ReadMethod;
use crate::engine::write::{SyncMode, WriteMethod};
use crate::experiments::access::AccessRow;
use crate::experiments::fast::FastResult;
use crate::experiments::sweep::{CellKind, SweepCell};
use crate::experiments::syscalls::SyscallsResult;
use crate::experiments::transfer::TransferResult;
use crate::transfer::{RecvMethod, SendMethod};
use crate::workload::Pattern;
use serde::{Deserialize, Serialize};

/// One answer the measurements give, with the rows it comes from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    /// A stable key, for comparing hosts.
    pub key: String,
    /// The finding in words, with its figures.
    pub text: String,
    /// The measured value the finding turns on (a ratio, or ns).
    pub value: f64,
    /// The rows it comes from, as `experiment: row`.
    pub cites: Vec<String>,
}

fn ratio_text(a_name: &str, a: f64, b_name: &str, b: f64) -> String {
    let r = a / b;
    if (r - 1.0).abs() < 0.03 {
        format!("{a_name} and {b_name} within 3% ({a:.1} vs {b:.1})")
    } else if r >= 1.0 {
        format!("{a_name} {r:.2}x {b_name} ({a:.1} vs {b:.1})")
    } else {
        format!("{b_name} {:.2}x {a_name} ({b:.1} vs {a:.1})", 1.0 / r)
    }
}

fn access_row(rows: &[AccessRow], m: ReadMethod, p: Pattern, c: CacheMode) -> Option<&AccessRow> {
    rows.iter().find(|r| {
        r.method == m && r.pattern == p && r.cache == c && r.unsupported.is_none() && r.kiops.n > 0
    })
}

/// Random 4 KiB, warm: the best mmap variant against pread.
pub fn random_warm(rows: &[AccessRow]) -> Option<Finding> {
    let pread = access_row(rows, ReadMethod::Pread, Pattern::Random, CacheMode::Warm)?;
    let best = rows
        .iter()
        .filter(|r| {
            r.method.is_mmap()
                && r.pattern == Pattern::Random
                && r.cache == CacheMode::Warm
                && r.unsupported.is_none()
                && r.kiops.n > 0
        })
        .max_by(|a, b| a.kiops.median.total_cmp(&b.kiops.median))?;
    Some(Finding {
        key: "random-4k-warm".into(),
        text: format!(
            "random 4 KiB reads, warm: {} KIOPS",
            ratio_text(
                best.method.name(),
                best.kiops.median,
                "pread",
                pread.kiops.median
            )
        ),
        value: best.kiops.median / pread.kiops.median,
        cites: vec![
            format!("access: {} random warm", best.method.name()),
            "access: pread random warm".into(),
        ],
    })
}

fn sweep_cell(cells: &[SweepCell], bs: u64, kind: CellKind) -> Option<&SweepCell> {
    cells
        .iter()
        .find(|c| c.bs == bs && c.kind == kind && c.unsupported.is_none() && c.mib_s.n > 0)
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

/// Sequential reads, cold and warm, at the largest block size swept: read against mmap.
pub fn sequential(cells: &[SweepCell], cache: CacheMode) -> Option<Finding> {
    let bs = cells.iter().map(|c| c.bs).max()?;
    let read = sweep_cell(cells, bs, read_cell(ReadMethod::Read, cache))?;
    let mmap = sweep_cell(cells, bs, read_cell(ReadMethod::Mmap, cache))?;
    Some(Finding {
        key: format!("sequential-{}", cache.name()),
        text: format!(
            "sequential {} reads in {} blocks: {} MiB/s",
            cache.name(),
            crate::size::format_size(bs),
            ratio_text("mmap", mmap.mib_s.median, "read", read.mib_s.median)
        ),
        value: mmap.mib_s.median / read.mib_s.median,
        cites: vec![
            format!("sweep read: read {} {bs}", cache.name()),
            format!("sweep read: mmap {} {bs}", cache.name()),
        ],
    })
}

/// The smallest warm block size from which mmap beats read at every larger size.
pub fn mmap_crossover(cells: &[SweepCell]) -> Option<Finding> {
    let mut sizes: Vec<u64> = cells
        .iter()
        .filter(|c| c.read().is_some_and(|(_, cache)| cache == CacheMode::Warm))
        .map(|c| c.bs)
        .collect();
    sizes.sort();
    sizes.dedup();
    let wins: Vec<(u64, bool)> = sizes
        .iter()
        .filter_map(|&bs| {
            let r = sweep_cell(cells, bs, read_cell(ReadMethod::Read, CacheMode::Warm))?;
            let m = sweep_cell(cells, bs, read_cell(ReadMethod::Mmap, CacheMode::Warm))?;
            Some((bs, m.mib_s.median > r.mib_s.median))
        })
        .collect();
    let first = wins
        .iter()
        .rposition(|(_, w)| !w)
        .map(|i| i + 1)
        .unwrap_or(0);
    let text = match wins.get(first) {
        None if wins.is_empty() => "warm: no block size had both read and mmap".to_string(),
        None => "warm: read still beats mmap at the largest block size swept".to_string(),
        Some((bs, _)) if first == 0 => format!(
            "warm: mmap beat read at every block size swept (from {})",
            crate::size::format_size(*bs)
        ),
        Some((bs, _)) => format!(
            "warm: mmap beats read from {} blocks up",
            crate::size::format_size(*bs)
        ),
    };
    Some(Finding {
        key: "mmap-crossover-warm".into(),
        text,
        value: wins.get(first).map(|(b, _)| *b as f64).unwrap_or(0.0),
        cites: wins
            .iter()
            .map(|(b, _)| format!("sweep read: read/mmap warm {b}"))
            .collect(),
    })
}

/// What a system call costs.
pub fn syscall_costs(s: &SyscallsResult) -> Option<Finding> {
    let ns = |n: &str| {
        s.rows
            .iter()
            .find(|r| r.name == n && r.unsupported.is_none())
            .map(|r| r.ns.median)
    };
    let (read, lseek, null) = (ns("read-1b")?, ns("lseek")?, ns("getppid")?);
    Some(Finding {
        key: "syscall-cost".into(),
        text: format!(
            "1-byte reads cost {read:.0} ns, lseek {lseek:.0} ns, a null system call {null:.0} ns: 1-byte reads move {:.1} MiB/s",
            1e9 / read / 1_048_576.0
        ),
        value: read,
        cites: vec![
            "syscalls: read-1b".into(),
            "syscalls: lseek".into(),
            "syscalls: getppid".into(),
        ],
    })
}

/// The price of fsync after every block, at the largest block size swept.
pub fn fsync_cost(cells: &[SweepCell]) -> Option<Finding> {
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
    let r = none.mib_s.median / each.mib_s.median;
    let size = crate::size::format_size(bs);
    let text = if r >= 1.05 {
        format!(
            "fsync after every {size} block costs {r:.1}x: write() {:.1} MiB/s into the page cache, {:.1} MiB/s synced",
            none.mib_s.median, each.mib_s.median
        )
    } else {
        format!(
            "fsync after every {size} block cost nothing measurable here: {:.1} MiB/s synced vs {:.1} MiB/s unsynced (write-back throttling slowed the unsynced run)",
            each.mib_s.median, none.mib_s.median
        )
    };
    Some(Finding {
        key: "fsync-each".into(),
        text,
        value: r,
        cites: vec![
            format!("sweep write: write none {bs}"),
            format!("sweep write: write each {bs}"),
        ],
    })
}

/// The whole file's XOR warm against cold: what the page cache is worth.
pub fn fast_warm_cold(w: &FastResult, c: &FastResult) -> Finding {
    let rate = |f: &FastResult| crate::size::mib_per_s(f.bytes, f.counters.wall.as_secs_f64());
    Finding {
        key: "fast-warm-cold".into(),
        text: format!(
            "the whole file's XOR: {:.0} MiB/s warm ({}), {:.0} MiB/s cold ({}): the page cache is worth {:.1}x",
            rate(w),
            w.choice.method.name(),
            rate(c),
            c.choice.method.name(),
            rate(w) / rate(c)
        ),
        value: rate(w) / rate(c),
        cites: vec!["fast: warm".into(), "fast: cold".into()],
    }
}

/// The fastest transfer pair against plain read:write (none without a read:write row, and none
/// when read:write is itself the fastest: a pair is never compared with itself).
pub fn transfer_best(t: &TransferResult) -> Option<Finding> {
    let best = t
        .pairs
        .iter()
        .max_by(|a, b| a.mib_s.median.total_cmp(&b.mib_s.median))?;
    let base = t
        .pairs
        .iter()
        .find(|p| p.sender == SendMethod::Read && p.receiver == RecvMethod::Write)?;
    let name = |s: SendMethod, r: RecvMethod| format!("{}:{}", s.name(), r.name());
    let best_name = name(best.sender, best.receiver);
    let same = best.sender == base.sender && best.receiver == base.receiver;
    let text = if same {
        format!(
            "moving the classic files over loopback: read:write was the fastest pair ({:.1} MiB/s)",
            base.mib_s.median
        )
    } else {
        format!(
            "moving the classic files over loopback: {best_name} fastest, {}",
            ratio_text(
                &best_name,
                best.mib_s.median,
                "read:write",
                base.mib_s.median
            )
        )
    };
    let mut cites = vec![format!("transfer: {best_name}")];
    if !same {
        cites.push("transfer: read:write".into());
    }
    Some(Finding {
        key: "transfer-best".into(),
        text,
        value: best.mib_s.median / base.mib_s.median,
        cites,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::latency::LatencySummary;
    use crate::measure::stats::summarize;

    fn arow(m: ReadMethod, p: Pattern, c: CacheMode, kiops: f64) -> AccessRow {
        AccessRow {
            method: m,
            pattern: p,
            cache: c,
            runs: Vec::new(),
            kiops: summarize(&[kiops]),
            mib_s: summarize(&[kiops * 4.0 / 1.024]),
            latency: LatencySummary::default(),
            minor_faults_per_op: 0.0,
            major_faults_per_op: 0.0,
            device_bytes_per_byte: None,
            cache_verified: true,
            unsupported: None,
        }
    }

    fn cell(
        bs: u64,
        m: &str,
        cache: Option<CacheMode>,
        sync: Option<SyncMode>,
        mib: f64,
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
            mib_s: summarize(&[mib]),
            syscalls_per_gib: 0.0,
            minor_faults_per_gib: 0.0,
            major_faults_per_gib: 0.0,
            cache_verified: true,
            unsupported: None,
        }
    }

    #[test]
    fn random_warm_picks_the_best_mmap_and_cites_it() {
        let rows = vec![
            arow(ReadMethod::Pread, Pattern::Random, CacheMode::Warm, 1000.0),
            arow(ReadMethod::Mmap, Pattern::Random, CacheMode::Warm, 1900.0),
            arow(
                ReadMethod::MmapRandom,
                Pattern::Random,
                CacheMode::Warm,
                1500.0,
            ),
            arow(ReadMethod::Mmap, Pattern::Random, CacheMode::Cold, 9000.0),
        ];
        let f = random_warm(&rows).unwrap();
        assert!((f.value - 1.9).abs() < 1e-9);
        assert!(f.text.contains("mmap 1.90x pread"), "{}", f.text);
        assert_eq!(f.cites[0], "access: mmap random warm");
        assert!(
            random_warm(&rows[1..]).is_none(),
            "no pread row, no finding"
        );
    }

    #[test]
    fn sequential_within_three_percent_and_crossover() {
        let cells = vec![
            cell(4096, "read", Some(CacheMode::Cold), None, 1000.0),
            cell(4096, "mmap", Some(CacheMode::Cold), None, 900.0),
            cell(1 << 20, "read", Some(CacheMode::Cold), None, 2000.0),
            cell(1 << 20, "mmap", Some(CacheMode::Cold), None, 2040.0),
            cell(4096, "read", Some(CacheMode::Warm), None, 6000.0),
            cell(4096, "mmap", Some(CacheMode::Warm), None, 5000.0),
            cell(1 << 20, "read", Some(CacheMode::Warm), None, 20000.0),
            cell(1 << 20, "mmap", Some(CacheMode::Warm), None, 25000.0),
        ];
        let f = sequential(&cells, CacheMode::Cold).unwrap();
        assert!(f.text.contains("within 3%"), "{}", f.text);
        let w = sequential(&cells, CacheMode::Warm).unwrap();
        assert!(w.text.contains("mmap 1.25x read"), "{}", w.text);
        let x = mmap_crossover(&cells).unwrap();
        assert_eq!(x.text, "warm: mmap beats read from 1 MiB blocks up");
        assert_eq!(x.value, (1u64 << 20) as f64);
    }

    #[test]
    fn fsync_cost_is_the_ratio_at_the_largest_block() {
        let cells = vec![
            cell(65536, "write", None, Some(SyncMode::None), 4000.0),
            cell(65536, "write", None, Some(SyncMode::Each), 100.0),
            cell(1 << 20, "write", None, Some(SyncMode::None), 4000.0),
            cell(1 << 20, "write", None, Some(SyncMode::Each), 1000.0),
        ];
        let f = fsync_cost(&cells).unwrap();
        assert_eq!(f.value, 4.0);
        let odd = vec![
            cell(16 << 20, "write", None, Some(SyncMode::None), 800.0),
            cell(16 << 20, "write", None, Some(SyncMode::Each), 1600.0),
        ];
        assert!(
            fsync_cost(&odd)
                .unwrap()
                .text
                .contains("cost nothing measurable")
        );
        assert!(f.text.contains("1 MiB block costs 4.0x"), "{}", f.text);
    }
}
