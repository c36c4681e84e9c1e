//! The harness: every repeated measurement goes through here. An experiment declares its cells
//! (method, cache state, workload and what to check, behind [`Cells`]: [`Cell`]) and the
//! comparisons it will draw, and says how many rounds ([`Rounds`]); the harness owns the rest:
//! - each run's protocol ([`mod@cell`]): the cache state put in place and verified, the engine
//!   prepared untimed, the work timed with the kernel's counters beside it, the state judged
//!   again from the device where residency is hidden, written data read back;
//! - warm-up rounds, kept apart from the counted ones;
//! - rounds in rotating interleaved order (round r starts at the r-th live cell), so drift and a
//!   slow minute spread over every cell, and paired cells share their rounds;
//! - the skip rules: a cell whose method is unsupported or unsuited here is dropped, with the reason;
//! - XOR agreement: cells that read the same bytes must agree on their XOR, or the run fails;
//! - interference, sampled around every round;
//! - adaptive stopping: after the first look ([`LOOKS`]) rounds go on only for the cells of the
//!   comparisons still undecided, look by look, until each is decided at 95%
//!   ([`crate::measure::decide`]) or the time budget would be exceeded by the next look;
//! - progress.
//!
//! Each cell's runs are contiguous rounds from the first, so the i-th runs of two cells were
//! taken in the same round, and a comparison re-derived later from the stored samples sees the
//! same pairs the harness decided on (at one of the planned looks).

pub mod cell;
pub mod child;
pub mod grouped;
pub mod round;
pub mod rounds;

pub use cell::{CacheSpec, Cell, CellRun, CellWork, Limits, ReadBack, Timed, XorCheck};
pub use rounds::{BudgetClass, LEVELS, Plan, Rounds};

use crate::error::{Error, ErrorKind, Result};
use crate::measure::decide::{self, Decided, Verdict};
use crate::measure::interference::{Interference, Probe};
use round::{Agreed, one_round};
use serde::{Deserialize, Serialize};
use std::time::{Duration, Instant};

/// Receives progress from long measurements; the CLI turns it into a progress line on stderr.
pub trait Observer {
    /// Step `done` of `total` of `what` has finished.
    fn progress(&self, _what: &str, _done: usize, _total: usize) {}
    /// Step `k` (from 1) of `n` of a run of several experiments (the suite), named `name`,
    /// begins; the `progress` calls that follow belong to it.
    fn stage(&self, _k: usize, _n: usize, _name: &str) {}
    /// Something the user should hear now (a wait that ended, a wait given up), as one line.
    fn note(&self, _line: &str) {}
    /// A measurement of `what` is about to start: `line` says what will run and for how long
    /// at most; `cap`, when the rounds have one, is the wall time they may take from now (a
    /// progress display counts the time left from it).
    fn plan(&self, _what: &str, _line: &str, _cap: Option<Duration>) {}
}

/// An observer that ignores everything.
pub struct Silent;
impl Observer for Silent {}

/// What the harness runs: numbered cells, each declared ([`Cell`]): the harness prepares,
/// measures and checks it ([`cell`]).
pub trait Cells {
    /// What a run keeps beyond the harness's record ([`Timed::extra`] of work of the cell's
    /// own); `()` for cells that move bytes through the engines.
    type Extra: Default;
    /// How many cells.
    fn count(&self) -> usize;
    /// A cell's name, for messages.
    fn name(&self, i: usize) -> String;
    /// Cell `i` as declared: its cache state, its work, its XOR check.
    fn cell(&self, i: usize) -> Cell<'_>;
    /// The timed work of a cell declared with [`CellWork::Own`].
    fn own(&mut self, i: usize) -> Result<Timed<Self::Extra>> {
        Err(Error::failed(
            "harness",
            format!("{} declared no work of its own", self.name(i)),
        ))
    }
    /// The figure comparisons are drawn on (a rate or a cost; only ratios are taken): MiB/s
    /// unless the cell says otherwise.
    fn figure(&self, run: &CellRun<Self::Extra>) -> f64 {
        run.mib_per_s()
    }
}

/// The shortest timed run the harness accepts without a warning: below it the clock's reads,
/// the set-up's cache effects and one scheduler tick are a large share of what is timed.
pub const MIN_RUN: Duration = Duration::from_millis(5);

/// Two cells compared: `a` against `b`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Comparison {
    /// The first cell.
    pub a: usize,
    /// The second cell.
    pub b: usize,
}

/// Why the rounds ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Stop {
    /// Every comparison was decided (or none was asked).
    Decided,
    /// The next look would have exceeded the time budget.
    Budget,
    /// The last planned look was reached.
    LastLook,
    /// The budget, a cap ([`Plan::capped`]), ran out before the first look was complete: the
    /// rounds every cell completed are kept (maybe none: then no cell has a counted run).
    Capped,
}

/// One cell's runs: the counted ones in round order from round 0, the warm-ups apart.
#[derive(Debug)]
pub struct CellRuns<E> {
    /// The counted runs.
    pub runs: Vec<CellRun<E>>,
    /// The uncounted warm-up runs, in order.
    pub warmups: Vec<CellRun<E>>,
    /// Why the cell could not run here (an unsupported or unsuited error), when it could not.
    pub skipped: Option<Error>,
}

/// What the harness measured.
#[derive(Debug)]
pub struct Measurement<E> {
    /// Per cell, in the order given.
    pub cells: Vec<CellRuns<E>>,
    /// Counted rounds run (the cells of decided comparisons stop earlier).
    pub rounds: usize,
    /// Per comparison, in the order given, its verdict at the last look (`None` when a side
    /// has no run).
    pub verdicts: Vec<Option<Verdict>>,
    /// Interference over all rounds.
    pub interference: Interference,
    /// Why the rounds ended.
    pub stop: Stop,
    /// Looks taken.
    pub looks: usize,
    /// The planned looks (the verdicts' error is split over these).
    pub planned_looks: usize,
    /// The level the verdicts were asked at.
    pub level: f64,
    /// What the user should know: cells whose median run was shorter than [`MIN_RUN`].
    pub warnings: Vec<String>,
    /// The verdicts with the cells' names.
    pub compared: Vec<Compared>,
}

impl<E> Measurement<E> {
    /// Fails with the first cell's reason for not running, for experiments whose every cell
    /// must run (a pair that cannot run here fails the matrix).
    pub fn require_all(&mut self) -> Result<()> {
        match self.cells.iter_mut().find_map(|c| c.skipped.take()) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// The runs of a measurement of one cell, or why it could not run.
    pub fn into_single(mut self) -> Result<CellRuns<E>> {
        self.require_all()?;
        self.cells
            .drain(..)
            .next()
            .ok_or_else(|| Error::failed("harness", "a measurement of no cell"))
    }
}

/// How a measurement's rounds went, as results keep it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RoundsTaken {
    /// Counted rounds run (cells of comparisons decided early have fewer).
    pub rounds: usize,
    /// Why they ended (absent in results written before the harness).
    pub stop: Option<Stop>,
    /// Looks taken.
    pub looks: usize,
    /// Looks planned: every verdict's error is split over these (0 in old results: one).
    pub planned_looks: usize,
    /// The level every verdict was asked at (`--level`; 0.95 in old results).
    #[serde(default = "crate::measure::decide::default_level")]
    pub level: f64,
    /// Comparisons asked.
    pub comparisons: usize,
    /// Of these, still undecided when the rounds ended.
    pub undecided: usize,
    /// Each comparison with its verdict (figures are the cells' own: a rate or a cost).
    #[serde(default)]
    pub compared: Vec<Compared>,
}

/// One comparison the harness drew, by the cells' names.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Compared {
    /// The first cell.
    pub a: String,
    /// The second cell.
    pub b: String,
    /// a against b.
    pub verdict: Verdict,
}

impl RoundsTaken {
    /// From a measurement.
    pub fn of<E>(o: &Measurement<E>) -> RoundsTaken {
        RoundsTaken {
            rounds: o.rounds,
            stop: Some(o.stop),
            looks: o.looks,
            planned_looks: o.planned_looks,
            level: o.level,
            comparisons: o.verdicts.len(),
            // A comparison never looked at (the cap ended the first look) is undecided too.
            undecided: o
                .verdicts
                .iter()
                .filter(|v| v.is_none_or(|v| v.decided == Decided::Undecided))
                .count(),
            compared: o.compared.clone(),
        }
    }

    /// What a verdict drawn from these rounds may spend: the level asked, split over the looks
    /// planned (at least one).
    pub fn spend(&self) -> decide::Spend {
        decide::Spend {
            looks: self.planned_looks.max(1),
            level: self.level,
        }
    }
}

struct Live<E> {
    runs: Vec<CellRun<E>>,
    warmups: Vec<CellRun<E>>,
    skipped: Option<Error>,
    active: bool,
    /// Wall time of its last run, set-up included (for the budget).
    cost: Duration,
}

impl<E> Default for Live<E> {
    fn default() -> Self {
        Live {
            runs: Vec::new(),
            warmups: Vec::new(),
            skipped: None,
            active: true,
            cost: Duration::ZERO,
        }
    }
}

/// Puts files into a cache state and verifies it, for work that is not in rounds (the `vm`
/// tour, which starts from a cold file and reads it back in to show the page cache grow).
pub fn put(spec: &CacheSpec<'_>) -> Result<crate::cache::CacheState> {
    cell::prepare(spec)
}

/// Runs `cells` for `rounds`, drawing `comparisons`; progress as `what`.
pub fn run<C: Cells>(
    what: &str,
    cells: &mut C,
    rounds: &Rounds,
    comparisons: &[Comparison],
    obs: &dyn Observer,
) -> Result<Measurement<C::Extra>> {
    rounds.check()?;
    run_plan(what, cells, &rounds.plan(), comparisons, obs)
}

/// [`run`] under a plan made by hand (the harness's own tests).
fn run_plan<C: Cells>(
    what: &str,
    cells: &mut C,
    plan: &Plan,
    comparisons: &[Comparison],
    obs: &dyn Observer,
) -> Result<Measurement<C::Extra>> {
    let n = cells.count();
    let started = Instant::now();
    let mut live: Vec<Live<C::Extra>> = (0..n).map(|_| Live::default()).collect();
    let mut xors: Vec<Agreed> = Vec::new();
    let mut windows: Vec<Interference> = Vec::new();
    let first = plan.min_rounds();
    let compared = in_comparisons(n, comparisons);
    let mut target = plan.warmup + first;
    let mut total = target * n;
    let mut done = 0;
    let mut round = 0;
    let mut looks = 0;
    let mut verdicts: Vec<Option<Verdict>> = vec![None; comparisons.len()];
    let mut capped = false;
    obs.plan(
        what,
        &plan.line(what, n),
        plan.capped.then_some(plan.budget),
    );
    let stop = loop {
        while round < target {
            let counted = round >= plan.warmup;
            if round == plan.warmup + plan.floor.min(first) {
                // Cells in no comparison stop at the floor.
                for (l, _) in live.iter_mut().zip(&compared).filter(|(_, c)| !**c) {
                    l.active = false;
                }
            }
            let probe = Probe::start();
            let mut tick = || {
                done += 1;
                obs.progress(what, done, total.max(done));
            };
            let deadline = plan.capped.then_some((started, plan.budget));
            if !one_round(
                cells, &mut live, round, counted, &mut xors, deadline, &mut tick,
            )? {
                capped = true;
                break;
            }
            windows.push(probe.finish());
            round += 1;
        }
        // A look at every round ended (whole rounds only: one cut short by the cap is not kept).
        if round > plan.warmup {
            look(cells, &live, comparisons, &mut verdicts, plan.spend());
            looks += 1;
        }
        if capped {
            break Stop::Capped;
        }
        let counted_rounds = round - plan.warmup;
        let Some(&next) = plan.looks.get(looks) else {
            break if all_decided(&verdicts) {
                Stop::Decided
            } else {
                Stop::LastLook
            };
        };
        keep_undecided(&mut live, comparisons, &verdicts);
        let going: Vec<&Live<C::Extra>> = live.iter().filter(|l| l.active).collect();
        if going.is_empty() {
            break Stop::Decided;
        }
        let per_round: Duration = going.iter().map(|l| l.cost).sum();
        let more = next.saturating_sub(counted_rounds) as u32;
        if started.elapsed() + per_round * more > plan.budget {
            break Stop::Budget;
        }
        target = plan.warmup + next;
        total = done + more as usize * going.len();
    };
    check_cells(cells, &mut live, capped)?;
    Ok(Measurement {
        compared: compared_of(cells, comparisons, &verdicts),
        warnings: short_runs(cells, &live).into_iter().collect(),
        cells: live
            .into_iter()
            .map(|l| CellRuns {
                runs: l.runs,
                warmups: l.warmups,
                skipped: l.skipped,
            })
            .collect(),
        rounds: round.saturating_sub(plan.warmup),
        verdicts,
        interference: Interference::merge_windows(&windows),
        stop,
        looks,
        planned_looks: plan.looks.len(),
        level: plan.level,
    })
}

/// Which cells are in a comparison.
fn in_comparisons(n: usize, comparisons: &[Comparison]) -> Vec<bool> {
    let mut compared = vec![false; n];
    for c in comparisons {
        compared[c.a] = true;
        compared[c.b] = true;
    }
    compared
}

/// Each cell's last run checked (its cache state kept); a cell the budget left without a
/// counted run is said not measured.
fn check_cells<C: Cells>(cells: &C, live: &mut [Live<C::Extra>], capped: bool) -> Result<()> {
    for (i, l) in live.iter_mut().enumerate() {
        cell::check_last(&cells.cell(i), l.runs.last().or(l.warmups.last()))?;
        if capped && l.runs.is_empty() && l.skipped.is_none() {
            l.skipped = Some(Error::new(
                ErrorKind::Unsuited,
                "not measured",
                "not measured: the budget ran out before its first counted run (a larger --budget measures it)",
            ));
        }
    }
    Ok(())
}

/// The comparisons that have a verdict, named.
fn compared_of<C: Cells>(
    cells: &C,
    comparisons: &[Comparison],
    verdicts: &[Option<Verdict>],
) -> Vec<Compared> {
    comparisons
        .iter()
        .zip(verdicts)
        .filter_map(|(c, v)| {
            Some(Compared {
                a: cells.name(c.a),
                b: cells.name(c.b),
                verdict: (*v)?,
            })
        })
        .collect()
}

/// Only the cells of comparisons still undecided go on (those not skipped).
fn keep_undecided<E>(
    live: &mut [Live<E>],
    comparisons: &[Comparison],
    verdicts: &[Option<Verdict>],
) {
    for l in live.iter_mut() {
        l.active = false;
    }
    for (c, v) in comparisons.iter().zip(verdicts) {
        if v.is_some_and(|v| v.decided == Decided::Undecided) {
            for i in [c.a, c.b] {
                live[i].active = live[i].skipped.is_none();
            }
        }
    }
}

/// A look at the data: each comparison not decided at an earlier look (whose verdict stands)
/// gets its verdict from the paired runs so far, at the level and over the looks `spend` says.
fn look<C: Cells>(
    cells: &C,
    live: &[Live<C::Extra>],
    comparisons: &[Comparison],
    verdicts: &mut [Option<Verdict>],
    spend: decide::Spend,
) {
    for (c, v) in comparisons.iter().zip(verdicts.iter_mut()) {
        if v.is_some_and(|v| v.decided != Decided::Undecided) {
            continue;
        }
        let fig = |i: usize| -> Vec<f64> { live[i].runs.iter().map(|r| cells.figure(r)).collect() };
        let (a, b) = (fig(c.a), fig(c.b));
        let m = a.len().min(b.len());
        *v = decide::paired(&a[..m], &b[..m], spend);
    }
}

/// The warning for cells whose median run was under [`MIN_RUN`], if any.
fn short_runs<C: Cells>(cells: &C, live: &[Live<C::Extra>]) -> Option<String> {
    let short: Vec<String> = live
        .iter()
        .enumerate()
        .filter_map(|(i, l)| {
            let mut w: Vec<Duration> = l.runs.iter().map(|r| r.counters.wall).collect();
            w.sort();
            let m = *w.get(w.len() / 2)?;
            (m < MIN_RUN).then(|| format!("{} ({:.1} ms)", cells.name(i), m.as_secs_f64() * 1e3))
        })
        .collect();
    (!short.is_empty()).then(|| {
        format!(
            "{} cell(s) ran under {} ms a run, where set-up and the clock weigh on the figure (give more bytes a run): {}",
            short.len(),
            MIN_RUN.as_millis(),
            short.join(", ")
        )
    })
}

fn all_decided(v: &[Option<Verdict>]) -> bool {
    v.iter()
        .all(|v| v.is_none_or(|v| v.decided != Decided::Undecided))
}

#[cfg(test)]
mod tests;
