//! Decisions at 95% that hold from run to run: a comparison of two cells names a winner only when
//! the interval of their ratio lies wholly outside `[1/1.05, 1.05]`, says "within 5%" only when it
//! lies wholly inside, and is "undecided" otherwise.
//!
//! The harness looks at its data more than once (after [`LOOKS`] rounds) and stops as soon as
//! every comparison is decided. Looking repeatedly and stopping on the first decisive look
//! inflates the error of an ordinary interval; here every look spends `1 - LEVEL` divided by
//! the number of planned looks (a Bonferroni split, the simplest conservative group-sequential
//! boundary: Jennison and Turnbull, *Group Sequential Methods*, 2000, ch. 1 and 3), so the chance
//! that *any* look's interval misses the truth is at most `1 - LEVEL`, whatever the stopping rule.
//!
//! The intervals are distribution-free: paired cells (measured in the same interleaved rounds)
//! use the sign-test interval of the median of the per-round ratios (order statistics, the
//! binomial argument: Conover, *Practical Nonparametric Statistics*, 3rd ed., 3.2); unpaired cells
//! divide the median intervals of each side, each at half the error. Neither assumes normal noise,
//! and a slow round moves an order statistic by one place, not the interval by its size.

use serde::{Deserialize, Serialize};

/// The coverage every verdict guarantees (over all of its looks together).
pub const LEVEL: f64 = 0.95;
/// Two figures within this factor of each other are "within 5%": no practical difference.
pub const MARGIN: f64 = 1.05;
/// The rounds after which the harness looks at its comparisons. The first is the fewest rounds
/// any cell gets; 8 is the fewest at which the sign-test interval reaches `1 - 0.05/6`.
pub const LOOKS: [usize; 6] = [8, 12, 16, 24, 32, 48];

/// The error a verdict may spend: its interval's coverage over every look together (`level`),
/// split evenly over the `looks` planned (the harness's are [`LOOKS`]; fixed rounds look once).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spend {
    /// Looks planned.
    pub looks: usize,
    /// Coverage over all of them, below 1: [`LEVEL`] unless a user asks otherwise (`--level`).
    pub level: f64,
}

impl Spend {
    /// One look at [`LEVEL`].
    pub const ONCE: Spend = Spend {
        looks: 1,
        level: LEVEL,
    };

    /// `looks` looks at [`LEVEL`].
    pub const fn looks(looks: usize) -> Spend {
        Spend {
            looks,
            level: LEVEL,
        }
    }

    /// The error each look may spend.
    fn per_look(self) -> f64 {
        (1.0 - self.level) / self.looks.max(1) as f64
    }
}

/// The level old results were decided at (they did not say).
pub fn default_level() -> f64 {
    LEVEL
}

/// What a comparison concluded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Decided {
    /// The interval lies wholly outside `[1/1.05, 1.05]`: one side is faster.
    Winner,
    /// The interval lies wholly inside it: within 5%, no practical difference.
    Equivalent,
    /// Neither, when the rounds ran out.
    Undecided,
}

impl Decided {
    /// The JSON name.
    pub fn name(self) -> &'static str {
        match self {
            Decided::Winner => "winner",
            Decided::Equivalent => "equivalent",
            Decided::Undecided => "undecided",
        }
    }
}

/// Which ratio a verdict gives (and whose interval it prints).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum RatioKind {
    /// The median of the per-round ratios (cells measured in the same rounds).
    Paired,
    /// The ratio of the two medians (cells measured apart).
    OfMedians,
    /// The geometric mean of the ratios of several independent runs, each its own (a
    /// squeezed or polluted cache settles differently from run to run), with the runs as the
    /// unit: Student's t interval of their logarithms ([`replicated`]).
    Replicated,
}

impl RatioKind {
    /// How the report names it.
    pub fn says(self) -> &'static str {
        match self {
            RatioKind::Paired => "paired: median of per-round ratios (Hodges-Lehmann)",
            RatioKind::OfMedians => "ratio of medians",
            RatioKind::Replicated => {
                "geometric mean of independent runs' ratios, Student's t interval over the runs"
            }
        }
    }
}

/// `a` against `b`: the ratio, its interval and what it decides.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Verdict {
    /// a / b, of the kind `kind` says.
    pub ratio: f64,
    /// Its interval.
    pub ci: [f64; 2],
    /// The interval's coverage, over every look taken: the level asked when there were enough
    /// rounds, less (the range's own coverage) when there were not.
    pub level: f64,
    /// The level asked ([`LEVEL`] unless `--level` said otherwise).
    #[serde(default = "default_level")]
    pub asked: f64,
    /// Rounds (pairs) behind it; for unpaired cells, the smaller side's count.
    pub rounds: usize,
    /// Which ratio it is.
    pub kind: RatioKind,
    /// What it concluded.
    pub decided: Decided,
    /// With a winner: whether `a` is the larger figure.
    pub a_larger: Option<bool>,
}

impl Verdict {
    /// Whether its interval is at the level asked (else there were too few rounds for one, and
    /// it decided nothing).
    pub fn has_interval(&self) -> bool {
        reached(self.level, self.asked)
    }

    /// The level asked, as a report prints it: `95%`, `99.5%`.
    pub fn asked_words(&self) -> String {
        percent(self.asked)
    }

    /// Its interval as a report prints it beside the verdict ([`interval_words`]).
    pub fn interval_words(&self) -> String {
        interval_words(self.ci, (self.level, self.asked), self.rounds)
    }
}

/// An interval `ci` of coverage `level` over `rounds` rounds as a report prints it beside its
/// verdict: the interval the decision used, at the level `asked`, or none when there were too
/// few rounds for one (then it decided nothing).
pub fn interval_words(ci: [f64; 2], (level, asked): (f64, f64), rounds: usize) -> String {
    if reached(level, asked) {
        format!(
            "interval {:.2}-{:.2}x at {} over {rounds} rounds",
            ci[0],
            ci[1],
            percent(asked)
        )
    } else {
        format!(
            "no interval (budget: {rounds} rounds, too few for one at {})",
            percent(asked)
        )
    }
}

/// Whether an interval's coverage `level` is the level `asked` (else there were too few rounds
/// for one at it).
fn reached(level: f64, asked: f64) -> bool {
    level >= asked - 1e-12
}

/// A level as a percentage, to the digits it has: `95%`, `99.9%`.
pub fn percent(level: f64) -> String {
    let p = format!("{:.2}", 100.0 * level);
    format!("{}%", p.trim_end_matches('0').trim_end_matches('.'))
}

pub use crate::measure::stats::{binomial_below, order_interval};

/// The coverage of a sample's range as an interval of its median.
fn range_coverage(n: usize) -> f64 {
    if n < 2 {
        0.0
    } else {
        1.0 - 2.0 * binomial_below(n, 1)
    }
}

use crate::measure::stats::median_of as median;

fn sorted(v: impl IntoIterator<Item = f64>) -> Vec<f64> {
    let mut v: Vec<f64> = v.into_iter().collect();
    v.sort_by(|a, b| a.total_cmp(b));
    v
}

/// What an interval decides.
pub fn decide(ci: [f64; 2]) -> (Decided, Option<bool>) {
    if ci[0] >= MARGIN {
        (Decided::Winner, Some(true))
    } else if ci[1] <= 1.0 / MARGIN {
        (Decided::Winner, Some(false))
    } else if ci[0] > 1.0 / MARGIN && ci[1] < MARGIN {
        (Decided::Equivalent, None)
    } else {
        (Decided::Undecided, None)
    }
}

/// The fewest independent runs a verdict over runs decides from.
pub const MIN_RUNS: usize = 3;

/// Student's t quantile at 0.975 for `df` degrees of freedom: the table to 30, then the
/// Cornish-Fisher expansion around the normal's 1.96 (within 0.001 of the exact value there).
pub fn t975(df: usize) -> f64 {
    const T: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    if df == 0 {
        return f64::INFINITY;
    }
    if df <= T.len() {
        return T[df - 1];
    }
    let (z, n) = (1.959_964f64, df as f64);
    z + (z.powi(3) + z) / (4.0 * n)
        + (5.0 * z.powi(5) + 16.0 * z.powi(3) + 3.0 * z) / (96.0 * n * n)
}

/// One verdict from the verdicts of the same comparison in several independent runs, with the
/// runs as the unit: each run gives one ratio (its own verdict's), and the interval is Student's
/// t interval at [`LEVEL`] of the mean of their logarithms (the ratio is their geometric mean).
/// Samples within one run share that run's state (a squeezed or polluted page cache settles
/// differently from run to run, so its ticks are not independent measurements of the
/// comparison): only the spread between runs says how far another run may land. Fewer than
/// [`MIN_RUNS`] runs decide nothing (level 0: no interval is printed); rounds are the runs.
/// `None` without verdicts.
pub fn replicated(runs: &[Verdict]) -> Option<Verdict> {
    let logs: Vec<f64> = runs
        .iter()
        .map(|v| v.ratio)
        .filter(|r| *r > 0.0 && r.is_finite())
        .map(f64::ln)
        .collect();
    let n = logs.len();
    if n == 0 {
        return None;
    }
    let mean = logs.iter().sum::<f64>() / n as f64;
    let ratio = mean.exp();
    if n < MIN_RUNS {
        return Some(Verdict {
            ratio,
            ci: [0.0, 0.0],
            level: 0.0,
            asked: LEVEL,
            rounds: n,
            kind: RatioKind::Replicated,
            decided: Decided::Undecided,
            a_larger: None,
        });
    }
    let var = logs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    let half = t975(n - 1) * (var / n as f64).sqrt();
    let ci = [(mean - half).exp(), (mean + half).exp()];
    let (decided, a_larger) = decide(ci);
    Some(Verdict {
        ratio,
        ci,
        level: LEVEL,
        asked: LEVEL,
        rounds: n,
        kind: RatioKind::Replicated,
        decided,
        a_larger,
    })
}

/// The coverage over `looks` looks of an interval whose coverage at one look is `one`: each
/// look may miss with `1 - one` (Bonferroni, as [`Spend`] spends it). Below the level asked
/// exactly when `one` falls short of a look's share, so a verdict's level says whether it may
/// decide.
fn over_looks(one: f64, looks: usize) -> f64 {
    (1.0 - looks.max(1) as f64 * (1.0 - one)).max(0.0)
}

fn verdict(
    ratio: f64,
    found: Option<([f64; 2], f64)>,
    range: [f64; 2],
    (rounds, asked): (usize, f64),
    kind: RatioKind,
) -> Verdict {
    match found {
        Some((ci, _)) => {
            let (decided, a_larger) = decide(ci);
            Verdict {
                ratio,
                ci,
                level: asked,
                asked,
                rounds,
                kind,
                decided,
                a_larger,
            }
        }
        // Too few rounds for the level: the range, with the coverage it has, decides nothing.
        None => Verdict {
            ratio,
            ci: range,
            level: 0.0,
            asked,
            rounds,
            kind,
            decided: Decided::Undecided,
            a_larger: None,
        },
    }
}

/// `P(T < k)` for every `k` in `0..=n(n+1)/2 + 1`, T the Wilcoxon signed-rank statistic of `n`
/// pairs under the null (each sign equally likely): the exact distribution by counting, exact in
/// `f64` up to n = 50.
pub fn signed_rank_below(n: usize) -> Vec<f64> {
    let top = n * (n + 1) / 2;
    let mut c = vec![0.0f64; top + 1];
    c[0] = 1.0;
    for i in 1..=n {
        for t in (i..=top).rev() {
            c[t] += c[t - i];
        }
    }
    let all = 2f64.powi(n as i32);
    let mut below = Vec::with_capacity(top + 2);
    let mut sum = 0.0;
    below.push(0.0);
    for x in c {
        sum += x;
        below.push(sum / all);
    }
    below
}

/// The Hodges-Lehmann estimate of the centre of `d` and its Wilcoxon signed-rank interval
/// `W(k)..W(N+1-k)` over the `N = n(n+1)/2` Walsh averages, the narrowest whose coverage
/// `1 - 2 P(T < k)` reaches `level`: `(estimate, Some((interval, coverage)))`, the interval
/// `None` when even the widest falls short.
pub fn signed_rank_interval(d: &[f64], level: f64) -> (f64, Option<([f64; 2], f64)>) {
    let n = d.len();
    let walsh = sorted((0..n).flat_map(|i| (i..n).map(move |j| (d[i] + d[j]) / 2.0)));
    let est = median(&walsh);
    if n > 50 {
        // Beyond exact counting: the sign-test interval (valid, a little wider).
        return (est, order_interval(&sorted(d.iter().copied()), level));
    }
    let big = walsh.len();
    let below = signed_rank_below(n);
    let coverage = |k: usize| 1.0 - 2.0 * below[k];
    if n < 2 || coverage(1) < level {
        return (est, None);
    }
    let mut k = 1;
    while k < big.div_ceil(2) && coverage(k + 1) >= level {
        k += 1;
    }
    (est, Some(([walsh[k - 1], walsh[big - k]], coverage(k))))
}

/// `a` against `b` measured in the same rounds (`a[i]` beside `b[i]`), as data looked at up to
/// `spend.looks` times: the per-round ratios' centre (the Hodges-Lehmann estimate on their
/// logarithms, a median of per-round ratios that uses every pair) with its Wilcoxon
/// signed-rank interval at `spend.level`.
/// `None` without a positive pair.
pub fn paired(a: &[f64], b: &[f64], spend: Spend) -> Option<Verdict> {
    let d: Vec<f64> = a
        .iter()
        .zip(b)
        .filter(|(x, y)| **x > 0.0 && **y > 0.0 && x.is_finite() && y.is_finite())
        .map(|(x, y)| (x / y).ln())
        .collect();
    if d.is_empty() {
        return None;
    }
    let (est, found) = signed_rank_interval(&d, 1.0 - spend.per_look());
    let exp = |(ci, c): ([f64; 2], f64)| ([ci[0].exp(), ci[1].exp()], c);
    let r = sorted(d.iter().map(|x| x.exp()));
    let mut v = verdict(
        est.exp(),
        found.map(exp),
        [r[0], r[r.len() - 1]],
        (r.len(), spend.level),
        RatioKind::Paired,
    );
    if v.level == 0.0 {
        v.level = over_looks(range_coverage(r.len()), spend.looks);
    }
    Some(v)
}

/// Every symmetric order-statistic interval of the median of `sorted`, narrowest first:
/// `(interval, coverage)` for `k` from `n/2` down to 1.
fn order_intervals(sorted: &[f64]) -> Vec<([f64; 2], f64)> {
    let n = sorted.len();
    if n < 2 {
        return Vec::new();
    }
    (1..=n / 2)
        .rev()
        .map(|k| {
            (
                [sorted[k - 1], sorted[n - k]],
                1.0 - 2.0 * binomial_below(n, k),
            )
        })
        .collect()
}

/// `a` against `b` measured apart: the ratio of their medians, with the narrowest interval two
/// median intervals allow whose joint coverage (the sides are independent: the product of
/// theirs) reaches the level of each of `spend.looks` looks. `None` when a side has no positive
/// figure.
pub fn unpaired(a: &[f64], b: &[f64], spend: Spend) -> Option<Verdict> {
    let keep = |v: &[f64]| sorted(v.iter().copied().filter(|x| *x > 0.0 && x.is_finite()));
    let (a, b) = (keep(a), keep(b));
    if a.is_empty() || b.is_empty() {
        return None;
    }
    let level = 1.0 - spend.per_look();
    let ratio = median(&a) / median(&b);
    let mut found: Option<([f64; 2], f64)> = None;
    for (ia, ca) in order_intervals(&a) {
        for (ib, cb) in order_intervals(&b) {
            if ca * cb < level {
                continue;
            }
            let ci = [ia[0] / ib[1], ia[1] / ib[0]];
            let narrower = found.is_none_or(|(f, _)| ci[1] / ci[0] < f[1] / f[0]);
            if narrower {
                found = Some((ci, ca * cb));
            }
        }
    }
    let range = [a[0] / b[b.len() - 1], a[a.len() - 1] / b[0]];
    let mut v = verdict(
        ratio,
        found,
        range,
        (a.len().min(b.len()), spend.level),
        RatioKind::OfMedians,
    );
    if v.level == 0.0 {
        // Two ranges together: the product of their coverages.
        let one = range_coverage(a.len()) * range_coverage(b.len());
        v.level = over_looks(one, spend.looks);
    }
    Some(v)
}

#[cfg(test)]
mod tests;
