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
    /// squeezed or polluted cache settles differently from run to run); the interval is the
    /// hull of theirs ([`replicated`]).
    Replicated,
}

impl RatioKind {
    /// How the report names it.
    pub fn says(self) -> &'static str {
        match self {
            RatioKind::Paired => "paired: median of per-round ratios (Hodges-Lehmann)",
            RatioKind::OfMedians => "ratio of medians",
            RatioKind::Replicated => {
                "geometric mean of independent runs' ratios, the interval the hull of theirs"
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
    /// The interval's coverage, over every look taken: [`LEVEL`] when there were enough
    /// rounds, less (the range's own coverage) when there were not.
    pub level: f64,
    /// Rounds (pairs) behind it; for unpaired cells, the smaller side's count.
    pub rounds: usize,
    /// Which ratio it is.
    pub kind: RatioKind,
    /// What it concluded.
    pub decided: Decided,
    /// With a winner: whether `a` is the larger figure.
    pub a_larger: Option<bool>,
}

/// P(X < k) for X ~ Binomial(n, 1/2).
pub fn binomial_below(n: usize, k: usize) -> f64 {
    let mut p = 0.0;
    let mut c = 1.0f64; // C(n, i)
    for i in 0..k.min(n + 1) {
        if i > 0 {
            c = c * (n + 1 - i) as f64 / i as f64;
        }
        p += c;
    }
    p / 2f64.powi(n as i32)
}

/// The narrowest symmetric order-statistic interval `x(k)..x(n+1-k)` of the median of `sorted`
/// whose coverage `1 - 2 P(Bin(n, 1/2) < k)` reaches `level`: `Some((interval, coverage))`, or
/// `None` when even the range falls short.
pub fn order_interval(sorted: &[f64], level: f64) -> Option<([f64; 2], f64)> {
    let n = sorted.len();
    let coverage = |k: usize| 1.0 - 2.0 * binomial_below(n, k);
    if n < 2 || coverage(1) < level {
        return None;
    }
    let mut k = 1;
    while k < n.div_ceil(2) && coverage(k + 1) >= level {
        k += 1;
    }
    Some(([sorted[k - 1], sorted[n - k]], coverage(k)))
}

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

/// One verdict from the verdicts of the same comparison in several independent runs (each from
/// that run's own samples, e.g. its ticks): the hull of their intervals, so that a winner is
/// named only when every run names it, and "within 5%" only when every run says so. Samples
/// within one run share that run's state (a squeezed page cache settles differently from run
/// to run); the runs' spread is what the hull adds. The ratio is the geometric mean of the
/// runs' ratios; the level the least of theirs (below [`LEVEL`] nothing is decided); rounds
/// add up. `None` without verdicts.
pub fn replicated(runs: &[Verdict]) -> Option<Verdict> {
    let first = runs.first()?;
    let lo = runs.iter().map(|v| v.ci[0]).fold(f64::INFINITY, f64::min);
    let hi = runs
        .iter()
        .map(|v| v.ci[1])
        .fold(f64::NEG_INFINITY, f64::max);
    let ratio = (runs.iter().map(|v| v.ratio.ln()).sum::<f64>() / runs.len() as f64).exp();
    let level = runs.iter().map(|v| v.level).fold(f64::INFINITY, f64::min);
    let (decided, a_larger) = if level >= LEVEL {
        decide([lo, hi])
    } else {
        (Decided::Undecided, None)
    };
    Some(Verdict {
        ratio,
        ci: [lo, hi],
        level,
        rounds: runs.iter().map(|v| v.rounds).sum(),
        kind: if runs.len() > 1 {
            RatioKind::Replicated
        } else {
            first.kind
        },
        decided,
        a_larger,
    })
}

/// The error each of `looks` looks may spend.
fn per_look(looks: usize) -> f64 {
    (1.0 - LEVEL) / looks.max(1) as f64
}

fn verdict(
    ratio: f64,
    found: Option<([f64; 2], f64)>,
    range: [f64; 2],
    rounds: usize,
    kind: RatioKind,
) -> Verdict {
    match found {
        Some((ci, _)) => {
            let (decided, a_larger) = decide(ci);
            Verdict {
                ratio,
                ci,
                level: LEVEL,
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
/// `looks` times: the per-round ratios' centre (the Hodges-Lehmann estimate on their logarithms,
/// a median of per-round ratios that uses every pair) with its Wilcoxon signed-rank interval.
/// `None` without a positive pair.
pub fn paired(a: &[f64], b: &[f64], looks: usize) -> Option<Verdict> {
    let d: Vec<f64> = a
        .iter()
        .zip(b)
        .filter(|(x, y)| **x > 0.0 && **y > 0.0 && x.is_finite() && y.is_finite())
        .map(|(x, y)| (x / y).ln())
        .collect();
    if d.is_empty() {
        return None;
    }
    let (est, found) = signed_rank_interval(&d, 1.0 - per_look(looks));
    let exp = |(ci, c): ([f64; 2], f64)| ([ci[0].exp(), ci[1].exp()], c);
    let r = sorted(d.iter().map(|x| x.exp()));
    let mut v = verdict(
        est.exp(),
        found.map(exp),
        [r[0], r[r.len() - 1]],
        r.len(),
        RatioKind::Paired,
    );
    if v.level == 0.0 {
        v.level = range_coverage(r.len());
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
/// theirs) reaches the level of each of `looks` looks. `None` when a side has no positive
/// figure.
pub fn unpaired(a: &[f64], b: &[f64], looks: usize) -> Option<Verdict> {
    let keep = |v: &[f64]| sorted(v.iter().copied().filter(|x| *x > 0.0 && x.is_finite()));
    let (a, b) = (keep(a), keep(b));
    if a.is_empty() || b.is_empty() {
        return None;
    }
    let level = 1.0 - per_look(looks);
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
        a.len().min(b.len()),
        RatioKind::OfMedians,
    );
    if v.level == 0.0 {
        // Two ranges together: the product of their coverages.
        v.level = range_coverage(a.len()) * range_coverage(b.len());
    }
    Some(v)
}

#[cfg(test)]
mod tests;
