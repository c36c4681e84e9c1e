//! `iolab advise FILE`: which method for this file and access pattern, here — answered by a
//! short measurement of the candidates, warm and cold, not by a rule of thumb.

use super::Observer;
use super::access::{AccessConfig, AccessResult, AccessRow, run_access};
use crate::cache::CacheMode;
use crate::engine::ReadMethod;
use crate::error::Result;
use crate::harness::Rounds;
use crate::measure::decide;
use crate::report::Document;
use crate::size::format_size;
use crate::workload::Pattern;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::Duration;

/// The answer for one cache state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Advice {
    /// The cache state it applies to.
    pub cache: CacheMode,
    /// The fastest method measured other than `versus` (by median): the plain call is never
    /// compared with itself.
    pub best: ReadMethod,
    /// Its median KIOPS.
    pub kiops: f64,
    /// The best method against the plain system call of the pattern (read or pread).
    pub versus: ReadMethod,
    /// Its lead over that call (best / versus), paired by round.
    pub ratio: f64,
    /// The interval of `ratio`.
    #[serde(default)]
    pub ci: [f64; 2],
    /// The lead is clear (interval above 1 by 5%); otherwise the plain call does as well.
    #[serde(default)]
    pub clear: bool,
    /// Bytes the best method made the device read per byte it used (readahead's share).
    #[serde(default)]
    pub device_bytes_per_byte: Option<f64>,
}

/// Uncached reads against the plain call, for one cache state: what reading without keeping the
/// file in the page cache costs here.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct UncachedAdvice {
    /// The cache state it applies to.
    pub cache: CacheMode,
    /// uncached / the plain call (read or pread), paired by round.
    pub ratio: f64,
    /// Its interval.
    pub ci: [f64; 2],
    /// What the interval decided.
    pub decided: decide::Decided,
    /// Uncached is at least as fast: within 5%, or faster.
    pub matches: bool,
}

/// What `iolab advise` found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AdviseResult {
    /// The file.
    pub path: PathBuf,
    /// The access pattern advised for.
    pub pattern: Pattern,
    /// Block size in bytes.
    pub bs: u64,
    /// Resident fraction when asked: which of the two answers applies now.
    pub resident_now: f64,
    /// One answer per cache state.
    pub advice: Vec<Advice>,
    /// Uncached reads against the plain call, per cache state (none where the kernel or file
    /// system lacks them: `unsupported` in the measured rows says why).
    #[serde(default)]
    pub uncached: Vec<UncachedAdvice>,
    /// The measurements behind it.
    pub measured: AccessResult,
}

/// Blocks a cold run reads: for a random pattern a sparse sample (1/64 of the blocks, 64 to 4096),
/// as a program that reads here and there would; for a sequential one, every block.
fn sparse_sample(size: u64, bs: u64, pattern: Pattern) -> u64 {
    let blocks = size.div_ceil(bs.max(1)).max(1);
    match pattern {
        Pattern::Random => (blocks / 64).clamp(64.min(blocks), 4096),
        Pattern::Seq => blocks,
    }
}

/// Measures the candidate methods warm and cold for `pattern` and `bs` and says which wins.
pub fn run_advise(
    path: &std::path::Path,
    pattern: Pattern,
    bs: u64,
    threads: usize,
    rounds: Rounds,
    command_line: &str,
    obs: &dyn Observer,
) -> Result<AdviseResult> {
    let resident_now = crate::cache::residency(path)?.fraction();
    let hint = if pattern == Pattern::Seq {
        ReadMethod::MmapSeq
    } else {
        ReadMethod::MmapRandom
    };
    let cfg = AccessConfig {
        path: path.to_path_buf(),
        bs,
        patterns: vec![pattern],
        methods: vec![
            ReadMethod::Read,
            ReadMethod::Pread,
            ReadMethod::Mmap,
            hint,
            ReadMethod::Uring,
            ReadMethod::Uncached,
        ],
        caches: vec![CacheMode::Warm, CacheMode::Cold],
        threads,
        depth: 32,
        ops: None,
        cold_ops: Some(sparse_sample(
            crate::engine::open_source(path)?.size,
            bs,
            pattern,
        )),
        duration: None,
        work: Default::default(),
        classic: false,
        untimed: false,
        rounds,
        focus: None,
        seed: 1,
        drop_all: false,
    };
    let cfg = AccessConfig {
        duration: Some(cfg.run_length().min(Duration::from_millis(100))),
        ..cfg
    };
    let measured = run_access(&cfg, command_line, obs)?;
    let baseline = if pattern == Pattern::Seq {
        ReadMethod::Read
    } else {
        ReadMethod::Pread
    };
    let advice = advice(&measured, baseline);
    let uncached = uncached_advice(&measured, baseline);
    Ok(AdviseResult {
        path: path.to_path_buf(),
        pattern,
        bs,
        resident_now,
        advice,
        uncached,
        measured,
    })
}

/// A row with a measured figure.
fn usable(r: &&AccessRow) -> bool {
    r.unsupported.is_none() && r.kiops.n > 0
}

/// Per cache state, the fastest method against the plain call, with the paired interval.
fn advice(measured: &AccessResult, baseline: ReadMethod) -> Vec<Advice> {
    [CacheMode::Warm, CacheMode::Cold]
        .into_iter()
        .filter_map(|c| {
            let rows: Vec<&AccessRow> = measured
                .rows
                .iter()
                .filter(|r| r.cache == c)
                .filter(usable)
                .collect();
            // The fastest of the others: the plain call is never compared with itself.
            let best = rows
                .iter()
                .filter(|r| r.method != baseline)
                .max_by(|a, b| a.kiops.median.total_cmp(&b.kiops.median))?;
            let base = rows.iter().find(|r| r.method == baseline)?;
            let (a, b) = (&best.kiops.samples, &base.kiops.samples);
            let m = a.len().min(b.len());
            let r = decide::paired(&a[..m], &b[..m], measured.rounds.spend())?;
            Some(Advice {
                cache: c,
                best: best.method,
                kiops: best.kiops.median,
                versus: baseline,
                ratio: r.ratio,
                ci: r.ci,
                clear: r.decided == decide::Decided::Winner && r.a_larger == Some(true),
                device_bytes_per_byte: best.device_bytes_per_byte,
            })
        })
        .collect()
}

/// Per cache state, the uncached read against the plain call: whether it keeps up.
fn uncached_advice(measured: &AccessResult, baseline: ReadMethod) -> Vec<UncachedAdvice> {
    [CacheMode::Warm, CacheMode::Cold]
        .into_iter()
        .filter_map(|c| {
            let row = |m: ReadMethod| {
                measured
                    .rows
                    .iter()
                    .filter(usable)
                    .find(|r| r.cache == c && r.method == m)
            };
            let (u, base) = (row(ReadMethod::Uncached)?, row(baseline)?);
            let (a, b) = (&u.kiops.samples, &base.kiops.samples);
            let m = a.len().min(b.len());
            let r = decide::paired(&a[..m], &b[..m], measured.rounds.spend())?;
            Some(UncachedAdvice {
                cache: c,
                ratio: r.ratio,
                ci: r.ci,
                decided: r.decided,
                matches: r.decided == decide::Decided::Equivalent
                    || (r.decided == decide::Decided::Winner && r.a_larger == Some(true)),
            })
        })
        .collect()
}

/// `iolab advise` output: the measured table, then the answer per cache state (not in CSV,
/// which is the table alone: one row type; its answer is [`advice_lines`], for stderr).
pub fn advise_document(r: &AdviseResult) -> Document {
    super::access::report::access_document(&r.measured).lines(advice_lines(r))
}

/// `iolab advise`'s answer in words: one line per cache state, uncached against the plain call,
/// and which answer applies now.
pub fn advice_lines(r: &AdviseResult) -> String {
    let mut out = String::new();
    for a in &r.advice {
        let what = format!("{} {} blocks", r.pattern.name(), format_size(r.bs));
        out.push_str(&if a.clear {
            format!(
                "Advice, {} cache: {} for {what} ({:.1} KIOPS, {:.2}x {}, interval {:.2}-{:.2})",
                a.cache.name(),
                a.best.name(),
                a.kiops,
                a.ratio,
                a.versus.name(),
                a.ci[0],
                a.ci[1]
            )
        } else {
            format!(
                "Advice, {} cache: no method is clearly faster than {} for {what} (the fastest of the others, {}, at {:.2}x it, interval {:.2}-{:.2})",
                a.cache.name(),
                a.versus.name(),
                a.best.name(),
                a.ratio,
                a.ci[0],
                a.ci[1]
            )
        });
        if let Some(d) = a
            .device_bytes_per_byte
            .filter(|_| a.cache == CacheMode::Cold)
        {
            out.push_str(&format!(
                "; the device read {d:.1} bytes per byte used (readahead)"
            ));
        }
        out.push('\n');
    }
    for u in &r.uncached {
        let figures = format!(
            "{:.2}x {}, interval {:.2}-{:.2}",
            u.ratio,
            r.advice
                .first()
                .map_or("the plain call", |a| a.versus.name()),
            u.ci[0],
            u.ci[1]
        );
        let verdict = match (u.matches, u.decided) {
            (true, _) => {
                "as fast as buffered reads here, and it drops the pages it read (RWF_DONTCACHE): for data read once, it leaves the page cache to everything else"
            }
            (false, crate::measure::decide::Decided::Winner) => {
                "slower than buffered reads here: keeping the file out of the cache costs this much"
            }
            _ => "not told apart from buffered reads by these rounds",
        };
        out.push_str(&format!(
            "Uncached, {} cache: {verdict} ({figures})\n",
            u.cache.name()
        ));
    }
    if let Some(c) = r.measured.config.cold_ops {
        out.push_str(&format!(
            "Cold runs read a sparse sample of {c} blocks each (of {}), as a reader that jumps around would.\n",
            r.measured.blocks
        ));
    }
    let now = if r.resident_now >= 0.9 {
        "warm"
    } else if r.resident_now <= 0.1 {
        "cold"
    } else {
        "partly cached: between the two"
    };
    out.push_str(&format!(
        "Right now the file is {:.0}% resident: the {now} answer applies.\n",
        r.resident_now * 100.0
    ));
    out
}
