//! The harness: every repeated measurement goes through here. An experiment hands it cells (what
//! to run and how to prepare it, behind [`Cells`]) and the comparisons it will draw; the harness
//! owns the rest:
//! - warm-up rounds, not counted;
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

use crate::error::{Error, ErrorKind, Result};
use crate::experiments::Observer;
use crate::measure::decide::{self, Decided, LOOKS, Verdict};
use crate::measure::interference::{Interference, Probe};
use serde::{Deserialize, Serialize};
use std::time::{Duration, Instant};

/// How many rounds, and for how long.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// Uncounted rounds before the first counted one.
    pub warmup: usize,
    /// The rounds after which comparisons are looked at; the first is the minimum of every
    /// compared cell.
    pub looks: Vec<usize>,
    /// Counted rounds of the cells in no comparison (at most the first look).
    pub floor: usize,
    /// Wall time the whole measurement may take; the first look is always completed.
    #[serde(with = "crate::measure::secs")]
    pub budget: Duration,
}

impl Plan {
    /// The default looks with one warm-up round and `budget`.
    pub fn adaptive(budget: Duration) -> Plan {
        Plan {
            warmup: 1,
            looks: LOOKS.to_vec(),
            floor: LOOKS[0],
            budget,
        }
    }

    /// A fixed number of counted rounds (no comparisons asked, or the user fixed `--repeat`).
    pub fn fixed(warmup: usize, rounds: usize) -> Plan {
        Plan {
            warmup,
            looks: vec![rounds],
            floor: rounds,
            budget: Duration::ZERO,
        }
    }

    /// The fewest counted rounds every cell gets.
    pub fn min_rounds(&self) -> usize {
        self.looks.first().copied().unwrap_or(1).max(1)
    }
}

/// What the harness runs: numbered cells.
pub trait Cells {
    /// One run's record.
    type Run;
    /// How many cells.
    fn count(&self) -> usize;
    /// A cell's name, for messages.
    fn name(&self, i: usize) -> String;
    /// Prepares cell `i` (untimed: cache state, opening, mapping) and runs it once (timed).
    fn run(&mut self, i: usize) -> Result<Self::Run>;
    /// The figure comparisons are drawn on (a rate or a cost; only ratios are taken).
    fn figure(&self, run: &Self::Run) -> f64;
    /// The XOR of the bytes a run moved and the group of cells that must agree on it, when the
    /// run moved a whole, known set of bytes.
    fn xor(&self, _i: usize, _run: &Self::Run) -> Option<(u64, u32)> {
        None
    }
    /// The timed part of a run, when the cell knows it (for the check against [`MIN_RUN`]).
    fn wall(&self, _run: &Self::Run) -> Option<Duration> {
        None
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Stop {
    /// Every comparison was decided (or none was asked).
    Decided,
    /// The next look would have exceeded the time budget.
    Budget,
    /// The last planned look was reached.
    LastLook,
}

/// One cell's counted runs, in round order from round 0.
#[derive(Debug)]
pub struct CellRuns<R> {
    /// The runs.
    pub runs: Vec<R>,
    /// Why the cell could not run here (an unsupported or unsuited error), when it could not.
    pub skipped: Option<Error>,
}

/// What the harness measured.
#[derive(Debug)]
pub struct Outcome<R> {
    /// Per cell, in the order given.
    pub cells: Vec<CellRuns<R>>,
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
    /// What the user should know: cells whose median run was shorter than [`MIN_RUN`].
    pub warnings: Vec<String>,
    /// The verdicts with the cells' names.
    pub compared: Vec<Compared>,
}

/// How a measurement's rounds went, as results keep it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RoundsTaken {
    /// Counted rounds run (cells of comparisons decided early have fewer).
    pub rounds: usize,
    /// Why they ended (absent in results written before the harness).
    pub stop: Option<Stop>,
    /// Looks taken.
    pub looks: usize,
    /// Looks planned: every verdict's error is split over these (0 in old results: one).
    pub planned_looks: usize,
    /// Comparisons asked.
    pub comparisons: usize,
    /// Of these, still undecided when the rounds ended.
    pub undecided: usize,
    /// Each comparison with its verdict (figures are the cells' own: a rate or a cost).
    #[serde(default)]
    pub compared: Vec<Compared>,
}

/// One comparison the harness drew, by the cells' names.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Compared {
    /// The first cell.
    pub a: String,
    /// The second cell.
    pub b: String,
    /// a against b.
    pub verdict: Verdict,
}

impl RoundsTaken {
    /// From an outcome.
    pub fn of<R>(o: &Outcome<R>) -> RoundsTaken {
        RoundsTaken {
            rounds: o.rounds,
            stop: Some(o.stop),
            looks: o.looks,
            planned_looks: o.planned_looks,
            comparisons: o.verdicts.len(),
            undecided: o
                .verdicts
                .iter()
                .filter(|v| v.is_some_and(|v| v.decided == Decided::Undecided))
                .count(),
            compared: o.compared.clone(),
        }
    }

    /// The looks to split a verdict's error over (at least one).
    pub fn looks_for_verdicts(&self) -> usize {
        self.planned_looks.max(1)
    }
}

struct Live<R> {
    runs: Vec<R>,
    skipped: Option<Error>,
    active: bool,
    /// Wall time of its last run, set-up included (for the budget).
    cost: Duration,
}

impl<R> Default for Live<R> {
    fn default() -> Self {
        Live {
            runs: Vec::new(),
            skipped: None,
            active: true,
            cost: Duration::ZERO,
        }
    }
}

/// Runs `cells` under `plan`, drawing `comparisons`; progress as `what`.
pub fn run<C: Cells>(
    what: &str,
    cells: &mut C,
    plan: &Plan,
    comparisons: &[Comparison],
    obs: &dyn Observer,
) -> Result<Outcome<C::Run>> {
    let n = cells.count();
    let started = Instant::now();
    let mut live: Vec<Live<C::Run>> = (0..n).map(|_| Live::default()).collect();
    let mut xors: Vec<(u64, u32, usize)> = Vec::new();
    let mut windows: Vec<Interference> = Vec::new();
    let first = plan.min_rounds();
    let mut compared = vec![false; n];
    for c in comparisons {
        compared[c.a] = true;
        compared[c.b] = true;
    }
    let mut target = plan.warmup + first;
    let mut total = target * n;
    let mut done = 0;
    let mut round = 0;
    let mut looks = 0;
    let mut verdicts: Vec<Option<Verdict>> = vec![None; comparisons.len()];
    let stop = loop {
        while round < target {
            let counted = round >= plan.warmup;
            if round == plan.warmup + plan.floor.min(first) {
                for (i, l) in live.iter_mut().enumerate() {
                    if !compared[i] {
                        l.active = false;
                    }
                }
            }
            let probe = Probe::start();
            let mut tick = || {
                done += 1;
                obs.progress(what, done, total.max(done));
            };
            one_round(cells, &mut live, round, counted, &mut xors, &mut tick)?;
            windows.push(probe.finish());
            round += 1;
        }
        looks += 1;
        let counted_rounds = round - plan.warmup;
        look(cells, &live, comparisons, &mut verdicts, plan.looks.len());
        let Some(&next) = plan.looks.get(looks) else {
            break if all_decided(&verdicts) {
                Stop::Decided
            } else {
                Stop::LastLook
            };
        };
        keep_undecided(&mut live, comparisons, &verdicts);
        let going: Vec<&Live<C::Run>> = live.iter().filter(|l| l.active).collect();
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
    let warnings: Vec<String> = short_runs(cells, &live).into_iter().collect();
    Ok(Outcome {
        compared: comparisons
            .iter()
            .zip(&verdicts)
            .filter_map(|(c, v)| {
                let (a, b) = (cells.name(c.a), cells.name(c.b));
                Some(Compared {
                    a,
                    b,
                    verdict: (*v)?,
                })
            })
            .collect(),
        warnings,
        cells: live
            .into_iter()
            .map(|l| CellRuns {
                runs: l.runs,
                skipped: l.skipped,
            })
            .collect(),
        rounds: round - plan.warmup,
        verdicts,
        interference: Interference::merge_windows(&windows),
        stop,
        looks,
        planned_looks: plan.looks.len(),
    })
}

/// Only the cells of comparisons still undecided go on (those not skipped).
fn keep_undecided<R>(
    live: &mut [Live<R>],
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
/// gets its verdict from the paired runs so far, its error split over `planned` looks.
fn look<C: Cells>(
    cells: &C,
    live: &[Live<C::Run>],
    comparisons: &[Comparison],
    verdicts: &mut [Option<Verdict>],
    planned: usize,
) {
    for (c, v) in comparisons.iter().zip(verdicts.iter_mut()) {
        if v.is_some_and(|v| v.decided != Decided::Undecided) {
            continue;
        }
        let fig = |i: usize| -> Vec<f64> { live[i].runs.iter().map(|r| cells.figure(r)).collect() };
        let (a, b) = (fig(c.a), fig(c.b));
        let m = a.len().min(b.len());
        *v = decide::paired(&a[..m], &b[..m], planned);
    }
}

/// One round over the active cells, in an order rotated by `round`; their runs are kept when
/// `counted` (not a warm-up). A cell the method does not suit is skipped from then on;
/// `tick` follows each cell.
fn one_round<C: Cells>(
    cells: &mut C,
    live: &mut [Live<C::Run>],
    round: usize,
    counted: bool,
    xors: &mut Vec<(u64, u32, usize)>,
    tick: &mut dyn FnMut(),
) -> Result<()> {
    let order: Vec<usize> = (0..live.len()).filter(|&i| live[i].active).collect();
    for k in 0..order.len() {
        let i = order[(k + round) % order.len()];
        tick();
        if live[i].skipped.is_some() {
            continue;
        }
        let t = Instant::now();
        match cells.run(i) {
            Ok(r) => {
                live[i].cost = t.elapsed();
                if let Some((group, x)) = cells.xor(i, &r) {
                    check_xor(xors, cells, group, x, i)?;
                }
                if counted {
                    live[i].runs.push(r);
                }
            }
            Err(e) if matches!(e.kind, ErrorKind::Unsupported | ErrorKind::Unsuited) => {
                live[i].skipped = Some(e);
                live[i].active = false;
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// The warning for cells whose median run was under [`MIN_RUN`], if any.
fn short_runs<C: Cells>(cells: &C, live: &[Live<C::Run>]) -> Option<String> {
    let short: Vec<String> = live
        .iter()
        .enumerate()
        .filter_map(|(i, l)| {
            let mut w: Vec<Duration> = l.runs.iter().filter_map(|r| cells.wall(r)).collect();
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

/// One cell given by closures: a measurement of a single thing (a `read` or `write` command,
/// `fast` from one cache state).
pub struct OneCell<F, G> {
    /// Its name.
    pub name: String,
    /// Prepares and runs it once.
    pub run: F,
    /// The figure of a run.
    pub figure: G,
}

impl<R, F: FnMut() -> Result<R>, G: Fn(&R) -> f64> Cells for OneCell<F, G> {
    type Run = R;
    fn count(&self) -> usize {
        1
    }
    fn name(&self, _: usize) -> String {
        self.name.clone()
    }
    fn run(&mut self, _: usize) -> Result<R> {
        (self.run)()
    }
    fn figure(&self, r: &R) -> f64 {
        (self.figure)(r)
    }
}

/// Cells given as closures, each preparing and running itself once and returning its bytes
/// moved and counters; the figure is MiB/s.
pub struct Closures<'a>(pub Vec<(String, ClosureRun<'a>)>);

/// One closure cell's run.
pub type ClosureRun<'a> =
    Box<dyn FnMut() -> Result<(crate::engine::Moved, crate::measure::Counters)> + 'a>;

impl Cells for Closures<'_> {
    type Run = (crate::engine::Moved, crate::measure::Counters);
    fn count(&self) -> usize {
        self.0.len()
    }
    fn name(&self, i: usize) -> String {
        self.0[i].0.clone()
    }
    fn run(&mut self, i: usize) -> Result<Self::Run> {
        (self.0[i].1)()
    }
    fn figure(&self, (m, c): &Self::Run) -> f64 {
        crate::size::mib_per_s(m.bytes, c.wall.as_secs_f64())
    }
}

/// Runs one cell `warmup + repeat` times (no comparisons): its runs, warm-ups first, or the
/// error that made it unsupported or unsuited here.
pub fn repeat<R>(
    what: &str,
    warmup: usize,
    repeat: usize,
    obs: &dyn Observer,
    run: impl FnMut() -> Result<R>,
) -> Result<Vec<R>> {
    let mut cell = OneCell {
        name: what.to_string(),
        run,
        figure: |_: &R| 1.0,
    };
    // The warm-ups are counted rounds to the harness, so that the caller keeps them.
    let mut out = self::run(what, &mut cell, &Plan::fixed(0, warmup + repeat), &[], obs)?;
    let one = out.cells.remove(0);
    match one.skipped {
        Some(e) => Err(e),
        None => Ok(one.runs),
    }
}

fn all_decided(v: &[Option<Verdict>]) -> bool {
    v.iter()
        .all(|v| v.is_none_or(|v| v.decided != Decided::Undecided))
}

fn check_xor<C: Cells>(
    seen: &mut Vec<(u64, u32, usize)>,
    cells: &C,
    group: u64,
    x: u32,
    i: usize,
) -> Result<()> {
    match seen.iter().find(|(g, _, _)| *g == group) {
        None => {
            seen.push((group, x, i));
            Ok(())
        }
        Some(&(_, y, j)) if y != x => Err(Error::failed(
            "checksum mismatch",
            format!(
                "{} read the same bytes as {} but got XOR {x:08x}, not {y:08x}",
                cells.name(i),
                cells.name(j)
            ),
        )),
        Some(_) => Ok(()),
    }
}

#[cfg(test)]
mod tests;
