//! What the parent makes of a method's series: its steady window (from the second the group
//! filled), the bytes a pattern must read from the device, read amplification, and the
//! explanations the figures support.

use super::*;

/// The group counts as full from the first second its memory reached this share of the limit.
pub const FULL_AT: f64 = 0.9;

/// Chooses the steady window of a series: the whole seconds after the group first held
/// [`FULL_AT`] of `limit` (its page cache is full: from there on every new page evicts one). A
/// method that bypasses the cache never fills it: its window starts after its first second.
/// `None` with fewer than 3 whole seconds to summarise.
pub fn steady_state(
    ticks: &[SqueezeTick],
    tick: f64,
    limit: u64,
    direct: bool,
    companion_alone: f64,
) -> Option<Steady> {
    let whole = |t: &SqueezeTick| t.secs >= 0.9 * tick;
    let full = ticks.iter().position(|t| {
        t.mem_current
            .is_some_and(|m| m as f64 >= FULL_AT * limit as f64)
    });
    let (start, why) = match full {
        Some(i) => (
            i + 1,
            format!(
                "after the group first held {:.0}% of its limit (second {})",
                100.0 * FULL_AT,
                i + 1
            ),
        ),
        None if direct => (
            1,
            "O_DIRECT bypasses the page cache, so the group never fills: from the second second"
                .to_string(),
        ),
        None => (
            ticks.len() / 2,
            "the group never filled during the run: the second half, not a steady state under pressure".to_string(),
        ),
    };
    let rows: Vec<&SqueezeTick> = ticks.iter().skip(start).filter(|t| whole(t)).collect();
    if rows.len() < 3 {
        return None;
    }
    let med = |v: Vec<f64>| summarize(&v).median;
    let opt_med = |v: Vec<Option<f64>>| -> Option<f64> {
        let v: Option<Vec<f64>> = v.into_iter().collect();
        v.map(med)
    };
    Some(Steady {
        from_s: rows[0].t - rows[0].secs,
        why,
        seconds: rows.len(),
        kiops: summarize(&rows.iter().map(|t| t.kiops).collect::<Vec<_>>()),
        mib_s: summarize(&rows.iter().map(|t| t.mib_s).collect::<Vec<_>>()),
        dev_mib_s: opt_med(
            rows.iter()
                .map(|t| {
                    t.dev_read_bytes
                        .map(|b| b as f64 / t.secs / (1u64 << 20) as f64)
                })
                .collect(),
        ),
        tlb_per_s: opt_med(
            rows.iter()
                .map(|t| t.tlb_shootdowns.map(|n| n as f64 / t.secs))
                .collect(),
        ),
        major_faults_per_s: med(rows
            .iter()
            .map(|t| t.major_faults as f64 / t.secs)
            .collect()),
        pressure_pct: opt_med(
            rows.iter()
                .map(|t| t.pressure_us.map(|us| us as f64 / 1e4 / t.secs))
                .collect(),
        ),
        cpu_left_pct: (companion_alone > 0.0).then(|| {
            med(rows
                .iter()
                .map(|t| 100.0 * t.cpu_work as f64 / t.secs / companion_alone)
                .collect())
        }),
    })
}

/// Bytes of `reads` reads of `bs` bytes that must come from the device when none of the file's
/// `blocks` blocks is cached at the start: every distinct block once. A permutation or a scan
/// reads `min(reads, blocks)` distinct blocks; uniform draws about `blocks (1 - e^(-reads/blocks))`
/// (taken 2% low for the chance in it).
pub fn needed_bytes(pattern: SqueezePattern, reads: u64, blocks: u64, bs: u64) -> u64 {
    let distinct = match pattern {
        SqueezePattern::Random | SqueezePattern::Seq => reads.min(blocks),
        SqueezePattern::Uniform if blocks == 0 => 0,
        SqueezePattern::Uniform => {
            let n = blocks as f64;
            (0.98 * n * (1.0 - (-(reads as f64) / n).exp())) as u64
        }
    };
    distinct * bs
}

/// Device bytes read per byte used above which readahead is named as the cause.
pub const AMPLIFIED: f64 = 4.0;

/// Bytes the method's own process read from storage per byte it used (reads x block size),
/// from the steady seconds when there are any, else the whole run.
pub fn amplification(m: &MethodSeries, bs: u64) -> Option<f64> {
    let from = m.steady.as_ref().map_or(0.0, |s| s.from_s);
    let rows: Vec<&SqueezeTick> = m
        .ticks
        .iter()
        .filter(|t| t.t - t.secs >= from - 1e-9)
        .collect();
    let used: u64 = rows.iter().map(|t| t.ops * bs).sum();
    let read: u64 = rows
        .iter()
        .map(|t| t.own_read_bytes.or(t.dev_read_bytes))
        .sum::<Option<u64>>()?;
    (used > 0).then(|| read as f64 / used as f64)
}

/// What the series say, from the figures that produced them: a method that read from the device
/// [`AMPLIFIED`] times or more the bytes it used is named, with readahead as the cause only when
/// the device reads ahead more than one block.
pub fn explain(methods: &[MethodSeries], bs: u64, read_ahead_kb: Option<u64>) -> Vec<String> {
    // Said once per method: of its runs, the first that shows it.
    let mut said = Vec::new();
    methods
        .iter()
        .filter(|m| m.unsupported.is_none() && !m.method.is_direct())
        .filter_map(|m| {
            let amp = amplification(m, bs)?;
            if amp < AMPLIFIED || said.contains(&m.method) {
                return None;
            }
            said.push(m.method);
            let cause = match read_ahead_kb {
                Some(ra) if ra * 1024 > bs => format!(
                    "the kernel reads ahead around each miss (read_ahead_kb {ra} on this device) and the group evicts most of it before it is used"
                ),
                _ => "the kernel reads ahead around each miss and the group evicts most of it before it is used".to_string(),
            };
            Some(format!(
                "{}: {amp:.0}x the bytes it used came from the device: {cause}; a random hint (mmap-random, or pread's POSIX_FADV_RANDOM) reads just the block",
                m.method.name()
            ))
        })
        .collect()
}
