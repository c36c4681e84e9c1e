//! A replay in parts, so that a budget decides what matters first: the accesses as recorded
//! against the changes most likely to help (the advice's, or what the trace's shape suggests:
//! larger requests for small reads in order, the page cache for O_DIRECT, mapping otherwise), in
//! the cache state the program ran in; then every other method, one cache state after another
//! (the one the program ran in first: a cold cell costs an eviction and a read from storage a
//! run, and would starve the cheap ones of rounds). Each part has an even share of what is left
//! of the budget and hands what it does not use to the next; each is measured by the harness on
//! its own, each change against the recorded accesses of its own part (paired rounds).

use super::cells::{self, ReplayCell, ReplayCells};
use super::plan::{self, ReplayPlan};
use super::{
    MethodGain, ReplayConfig, ReplayMethod, ReplayResult, ReplayRow, check_unchanged, depth_of,
    gaps_note, methods_for, open_sources, report, row, shape, within_files,
};
use crate::cache::CacheMode;
use crate::engine::ReadMethod;
use crate::error::Result;
use crate::harness::{self, Comparison, Observer, RoundsTaken};

/// One part of a replay: its cells (each cache state's recorded accesses first) and its
/// comparisons (each other cell against its cache state's recorded accesses).
#[derive(Debug, Clone, Default)]
pub(super) struct Phase {
    pub(super) cells: Vec<ReplayCell>,
    pub(super) comparisons: Vec<Comparison>,
}

impl Phase {
    /// A part of `methods` (the recorded accesses first) in each of `caches` where `keep` holds
    /// for at least one of the other methods; empty when none does.
    fn of(
        methods: &[ReplayMethod],
        caches: &[CacheMode],
        keep: impl Fn(ReplayMethod, CacheMode) -> bool,
    ) -> Phase {
        let mut p = Phase::default();
        for &cache in caches {
            let others: Vec<ReplayMethod> = methods[1..]
                .iter()
                .copied()
                .filter(|&m| keep(m, cache))
                .collect();
            // Nothing to compare: only when the accesses as recorded are all there is.
            if others.is_empty() && methods.len() > 1 {
                continue;
            }
            let base = p.cells.len();
            p.cells.push(ReplayCell {
                method: methods[0],
                cache,
            });
            for m in others {
                p.comparisons.push(Comparison {
                    a: p.cells.len(),
                    b: base,
                });
                p.cells.push(ReplayCell { method: m, cache });
            }
        }
        p
    }
}

/// The parts: `first` (method, cache) pairs measured first, then the rest of `methods` in each
/// of `caches`, `traced` (the state the program ran in) first; parts with nothing to compare
/// are left out.
pub(super) fn phases(
    methods: &[ReplayMethod],
    caches: &[CacheMode],
    first: &[(ReplayMethod, CacheMode)],
    traced: CacheMode,
) -> Vec<Phase> {
    let firsts: Vec<(ReplayMethod, CacheMode)> = first
        .iter()
        .copied()
        .filter(|(m, c)| methods[1..].contains(m) && caches.contains(c))
        .collect();
    let mut order: Vec<CacheMode> = caches.to_vec();
    order.sort_by_key(|c| *c != traced);
    let mut out = vec![if firsts.is_empty() {
        Phase::default()
    } else {
        Phase::of(methods, caches, |m, c| firsts.contains(&(m, c)))
    }];
    for cache in order {
        out.push(Phase::of(methods, &[cache], |m, c| {
            !firsts.contains(&(m, c))
        }));
    }
    out.retain(|p| !p.cells.is_empty());
    out
}

/// The cache state the program's data was in when traced: warm when the files it read most
/// were (nine tenths) cached before it ran.
pub(super) fn traced_cache(plan: &ReplayPlan, files: &[crate::trace::FileInfo]) -> CacheMode {
    let bytes = plan.bytes_per_file();
    let (mut cached, mut all) = (0u128, 0u128);
    for (f, &b) in plan.files.iter().zip(&bytes) {
        let Some(info) = files.iter().find(|x| x.last_path() == f.path) else {
            continue;
        };
        let size = info.size.max(1);
        let resident = info.resident_before.unwrap_or(0).min(size);
        cached += b as u128 * resident as u128 / size as u128;
        all += b as u128;
    }
    if all > 0 && cached * 10 >= all * 9 {
        CacheMode::Warm
    } else {
        CacheMode::Cold
    }
}

/// What to measure first when no advice says: the change the trace's shape suggests, in the
/// cache state the program ran in.
pub(super) fn suggested(
    recorded: ReplayMethod,
    sequential: f64,
    typical: u64,
    cache: CacheMode,
) -> Vec<(ReplayMethod, CacheMode)> {
    let m = match recorded.engine() {
        ReadMethod::Direct => ReplayMethod::Method(ReadMethod::Pread),
        ReadMethod::Mmap => ReplayMethod::Method(ReadMethod::MmapWillneed),
        _ if sequential >= 0.8 && typical <= 32 << 10 => ReplayMethod::Merged(128 << 10),
        _ => ReplayMethod::Method(ReadMethod::Mmap),
    };
    vec![(m, cache)]
}

/// Rows of the recorded accesses measured in both parts: the first part's is kept.
pub(super) fn merge_rows(mut rows: Vec<ReplayRow>, more: Vec<ReplayRow>) -> Vec<ReplayRow> {
    for r in more {
        if !rows
            .iter()
            .any(|x| x.method == r.method && x.cache == r.cache)
        {
            rows.push(r);
        }
    }
    rows
}

/// What a replay takes from its trace besides the plan.
pub(super) struct Traced<'a> {
    pub(super) command: &'a [String],
    pub(super) files: &'a [crate::trace::FileInfo],
    pub(super) wall_ns: u64,
}

/// One part's measurement: its cells, their runs, its pairs (rows by index into the part's
/// cells) and how its rounds went.
struct Measured {
    cells: Vec<ReplayCell>,
    runs: Vec<harness::CellRuns<()>>,
    pairs: Vec<(usize, usize, Option<crate::measure::decide::Verdict>)>,
    rounds: RoundsTaken,
    warnings: Vec<String>,
}

/// Replays `plan` within what is left at `started` of the budget, a cap: reading and planning
/// the trace count, and no run starts that would end past it. The changes most likely to help
/// come first ([`phases`]); the rest get what is left.
/// The most traced threads replayed at once: each is replayed on a thread of its own.
pub(super) const MOST_THREADS: usize = 1024;

/// Refuses a plan with more reading threads than [`MOST_THREADS`] (a trace of 100,000 threads
/// used to abort the replay when the system would make no more).
fn threads_within(plan: &plan::ReplayPlan) -> Result<()> {
    let n = plan.threads.iter().filter(|t| !t.is_empty()).count();
    if n > MOST_THREADS {
        return Err(crate::Error::usage(
            "too many threads to replay",
            format!(
                "{n} of the trace's threads read files; replay runs each on a thread of its own, at most {MOST_THREADS}"
            ),
        ));
    }
    Ok(())
}

pub(super) fn replay_plan(
    mut plan: plan::ReplayPlan,
    traced: Traced<'_>,
    cfg: &ReplayConfig,
    obs: &dyn Observer,
    started: std::time::Instant,
) -> Result<ReplayResult> {
    super::report::prune(&mut plan).map_err(|e| e.at(&cfg.trace))?;
    threads_within(&plan).map_err(|e| e.at(&cfg.trace))?;
    check_unchanged(traced.files, &mut plan)?;
    let methods = methods_for(&cfg.methods, &plan);
    let asked: u64 = plan.blocks().map(|b| b.len).sum();
    let (sequential, typical_read) = shape(&plan);
    let traced_cache = traced_cache(&plan, traced.files);
    let first = if cfg.first.is_empty() {
        suggested(methods[0], sequential, typical_read, traced_cache)
    } else {
        cfg.first.clone()
    };
    let all = phases(&methods, &cfg.caches, &first, traced_cache);
    let mut sources = open_sources(&plan, &cfg.trace)?;
    within_files(&plan, &sources)?;
    let mut parts: Vec<Measured> = Vec::new();
    let n_parts = all.len();
    for (k, part) in all.into_iter().enumerate() {
        // An even share of what is left; what a part does not use goes to the next.
        let left = cfg
            .rounds
            .budget
            .map(|b| b.saturating_sub(started.elapsed()));
        let budget = left.map(|l| l / (n_parts - k) as u32);
        if budget.is_some_and(|b| b.is_zero()) {
            break;
        }
        let (m, s) = measure_part(&plan, sources, part, cfg, budget, obs)?;
        sources = s;
        parts.push(m);
    }
    let mut notes = plan.notes.clone();
    if cfg.keep_gaps {
        notes.push(gaps_note(&plan));
    }
    notes.push(share_note(&plan, traced.wall_ns));
    let (mut rows, mut pairs, mut gains) = (Vec::new(), Vec::new(), Vec::new());
    let (mut all_cells, mut all_runs) = (Vec::new(), Vec::new());
    let mut rounds: Option<RoundsTaken> = None;
    for m in parts {
        notes.extend(m.warnings.iter().cloned());
        let part_rows: Vec<ReplayRow> = m
            .cells
            .iter()
            .zip(&m.runs)
            .map(|(cell, runs)| row(cell, &runs.runs, runs.skipped.as_ref(), asked))
            .collect();
        // Each pair by the rows it ends up at (a recorded row met again is the first's).
        let at = |i: usize, rows: &[ReplayRow]| {
            rows.iter()
                .position(|r| r.method == part_rows[i].method && r.cache == part_rows[i].cache)
        };
        let merged = merge_rows(rows, part_rows.clone());
        for &(x, y, v) in &m.pairs {
            gains.push(MethodGain {
                method: part_rows[x].method.clone(),
                cache: part_rows[x].cache,
                verdict: v,
            });
            // A pair whose baseline row is the first part's keeps its own verdict: the
            // finding names the method's row and the baseline's cache state.
            if let (Some(ra), Some(rb)) = (at(x, &merged), at(y, &merged)) {
                pairs.push((ra, rb, v));
            }
        }
        rows = merged;
        rounds = Some(match rounds {
            None => m.rounds,
            Some(r) => join_rounds(r, m.rounds),
        });
        all_cells.extend(m.cells);
        all_runs.extend(m.runs);
    }
    notes.push(report::verified(&plan, &all_cells, &all_runs));
    let findings = report::findings(&rows, &cfg.caches, &pairs);
    Ok(ReplayResult {
        command: traced.command.to_vec(),
        files: plan.files.len(),
        reads: plan.blocks().count() as u64,
        bytes: asked,
        sequential,
        typical_read,
        rows,
        findings,
        rounds: rounds.unwrap_or_default(),
        notes,
        kept_gaps_s: cfg.keep_gaps.then(|| plan.gaps_ns as f64 / 1e9),
        traced_read_s: plan.read_ns as f64 / 1e9,
        traced_wall_s: traced.wall_ns as f64 / 1e9,
        gains,
    })
}

/// Measures one part of a replay within `budget`; hands the opened files back.
fn measure_part(
    plan: &plan::ReplayPlan,
    sources: Vec<(crate::source::Source, crate::source::Version)>,
    part: Phase,
    cfg: &ReplayConfig,
    budget: Option<std::time::Duration>,
    obs: &dyn Observer,
) -> Result<(
    Measured,
    Vec<(crate::source::Source, crate::source::Version)>,
)> {
    let n_cells = part.cells.len();
    let start = std::time::Instant::now();
    let mut rc = ReplayCells {
        plan,
        incidental: cells::incidental(plan),
        sources,
        cells: part.cells,
        asked: plan.blocks().map(|b| b.len).sum(),
        drop_all: cfg.drop_all,
        depth: depth_of(plan),
        keep_gaps: cfg.keep_gaps,
        deadline: budget.map(|b| (start + b, cells::Share::of(b, n_cells))),
        ran: vec![false; n_cells],
    };
    let rounds = harness::Rounds {
        budget,
        ..cfg.rounds
    };
    let out = harness::run("replay", &mut rc, &rounds, &part.comparisons, obs)?;
    let pairs = part
        .comparisons
        .iter()
        .zip(&out.verdicts)
        .map(|(c, v)| (c.a, c.b, *v))
        .collect();
    let m = Measured {
        rounds: RoundsTaken::of(&out),
        warnings: out.warnings,
        pairs,
        cells: rc.cells,
        runs: out.cells,
    };
    Ok((m, rc.sources))
}

/// Two parts' rounds as one account: the comparisons and verdicts of both, the second part's
/// end.
fn join_rounds(a: RoundsTaken, b: RoundsTaken) -> RoundsTaken {
    let mut compared = a.compared;
    compared.extend(b.compared);
    RoundsTaken {
        rounds: a.rounds.max(b.rounds),
        stop: b.stop.or(a.stop),
        looks: a.looks.max(b.looks),
        planned_looks: a.planned_looks.max(b.planned_looks),
        level: a.level,
        comparisons: a.comparisons + b.comparisons,
        undecided: a.undecided + b.undecided,
        compared,
    }
}

/// What share of the traced program's wall time its replayed reads were: the most any method
/// could save.
fn share_note(plan: &plan::ReplayPlan, wall_ns: u64) -> String {
    let share = plan.read_ns as f64 / wall_ns.max(1) as f64;
    format!(
        "the replayed read calls took {:.3} s of the traced program's {:.3} s wall time ({:.1}%{}): whatever the method, that is the most it can save of the program's time{}",
        plan.read_ns as f64 / 1e9,
        wall_ns as f64 / 1e9,
        100.0 * share,
        if plan.mapped_bytes > 0 {
            "; its page faults' waits not included"
        } else {
            ""
        },
        if share < 0.05 {
            "; they are not where its time went (`iolab trace` says where)"
        } else {
            ""
        }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_comes_first_is_measured_first_and_only_once() {
        let rec = ReplayMethod::Recorded(ReadMethod::Pread);
        let merged = ReplayMethod::Merged(128 << 10);
        let mmap = ReplayMethod::Method(ReadMethod::Mmap);
        let methods = [rec, mmap, merged];
        let caches = [CacheMode::Cold, CacheMode::Warm];
        let p = phases(
            &methods,
            &caches,
            &[(merged, CacheMode::Warm)],
            CacheMode::Warm,
        );
        assert_eq!(p.len(), 3);
        assert_eq!(p[0].cells.len(), 2);
        assert_eq!(p[0].cells[0].method, rec);
        assert_eq!(p[0].cells[1].method, merged);
        assert_eq!(p[0].comparisons.len(), 1);
        // Then the rest warm (the state traced), then cold, each with its baseline.
        assert_eq!(p[1].cells.len(), 2);
        assert!(p[1].cells.iter().all(|c| c.cache == CacheMode::Warm));
        assert_eq!(p[2].cells.len(), 3);
        for part in &p {
            for c in &part.comparisons {
                assert_eq!(part.cells[c.b].method, rec);
                assert_eq!(part.cells[c.b].cache, part.cells[c.a].cache);
            }
        }
        // Nothing first: a part per cache state, the state traced first.
        let p = phases(&methods, &caches, &[], CacheMode::Cold);
        assert_eq!(p.len(), 2);
        assert_eq!(p[0].cells[0].cache, CacheMode::Cold);
    }
}
