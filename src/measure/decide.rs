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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RatioKind {
    /// The median of the per-round ratios (cells measured in the same rounds).
    Paired,
    /// The ratio of the two medians (cells measured apart).
    OfMedians,
}

impl RatioKind {
    /// How the report names it.
    pub fn says(self) -> &'static str {
        match self {
            RatioKind::Paired => "paired: median of per-round ratios (Hodges-Lehmann)",
            RatioKind::OfMedians => "ratio of medians",
        }
    }
}

/// `a` against `b`: the ratio, its interval and what it decides.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
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
        kind: first.kind,
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
mod tests {
    use super::*;

    #[test]
    fn intervals_decide_by_the_margin() {
        assert_eq!(decide([1.06, 1.2]), (Decided::Winner, Some(true)));
        assert_eq!(decide([0.5, 0.9]), (Decided::Winner, Some(false)));
        assert_eq!(decide([0.97, 1.03]), (Decided::Equivalent, None));
        assert_eq!(decide([0.97, 1.07]), (Decided::Undecided, None));
        assert_eq!(decide([1.01, 1.07]), (Decided::Undecided, None));
    }

    #[test]
    fn too_few_rounds_decide_nothing_and_say_their_coverage() {
        let v = paired(&[2.0, 2.0, 2.0], &[1.0, 1.0, 1.0], 1).unwrap();
        assert_eq!(v.decided, Decided::Undecided);
        assert!((v.level - 0.75).abs() < 1e-12, "{v:?}");
        // Eight clear rounds under six looks decide.
        let v = paired(&[2.0; 8], &[1.0; 8], LOOKS.len()).unwrap();
        assert_eq!(
            (v.decided, v.a_larger, v.level),
            (Decided::Winner, Some(true), LEVEL)
        );
        assert_eq!(v.kind, RatioKind::Paired);
        // The ratio printed is the one whose interval is printed.
        assert!(v.ci[0] <= v.ratio && v.ratio <= v.ci[1]);
        assert!(paired(&[], &[], 1).is_none());
    }

    #[test]
    fn signed_rank_distribution_is_exact() {
        let b = signed_rank_below(8);
        assert!((b[1] - 1.0 / 256.0).abs() < 1e-15);
        // T <= 1 for n = 3: T = 0 or 1, two of eight sign sets.
        assert!((signed_rank_below(3)[2] - 2.0 / 8.0).abs() < 1e-15);
        assert!((b[b.len() - 1] - 1.0).abs() < 1e-12);
    }

    #[test]
    fn unpaired_ratio_is_the_ratio_of_medians() {
        let a: Vec<f64> = (0..20).map(|i| 200.0 + i as f64).collect();
        let b: Vec<f64> = (0..20).map(|i| 100.0 + i as f64).collect();
        let v = unpaired(&a, &b, 1).unwrap();
        assert_eq!(v.kind, RatioKind::OfMedians);
        assert!((v.ratio - 209.5 / 109.5).abs() < 1e-12);
        assert_eq!(v.decided, Decided::Winner);
        assert!(v.ci[0] > 1.7 && v.ci[1] < 2.2, "{v:?}");
        // Six runs against seven: the two ranges cover 96.9% x 98.4% = 95.3%, enough.
        let v = unpaired(&a[..6], &b[..7], 1).unwrap();
        assert_eq!(v.level, LEVEL);
        assert_eq!(v.decided, Decided::Winner, "{v:?}");
        // Five against five: 93.75% squared is not.
        let v = unpaired(&a[..5], &b[..5], 1).unwrap();
        assert_eq!(v.decided, Decided::Undecided, "{v:?}");
        assert!(v.level < LEVEL, "{v:?}");
    }

    /// A small deterministic generator (xorshift64*), so the simulation is the same every run.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
        }
        fn unit(&mut self) -> f64 {
            ((self.next() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
        }
        fn normal(&mut self) -> f64 {
            let (u, v) = (self.unit(), self.unit());
            (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
        }
        /// Student's t with 3 degrees of freedom, scaled to unit standard deviation.
        fn t3(&mut self) -> f64 {
            let z = self.normal();
            let chi: f64 = (0..3).map(|_| self.normal().powi(2)).sum();
            z / (chi / 3.0).sqrt() / 3f64.sqrt()
        }
    }

    #[derive(Clone, Copy, Debug)]
    enum Noise {
        Normal(f64),
        Heavy(f64),
        /// One round in five slow for both sides (halved), with extra noise on each.
        SlowBoth(f64),
        /// One round in five slow for one side, chosen at random.
        SlowOne(f64),
    }

    /// One round of a cell whose true figure is `truth` under `noise`.
    fn pair(rng: &mut Rng, truth: f64, noise: Noise) -> (f64, f64) {
        let mut a = truth;
        let mut b = 1.0;
        let jitter = |rng: &mut Rng, s: f64| (s * rng.normal()).exp();
        match noise {
            Noise::Normal(s) => {
                a *= jitter(rng, s);
                b *= jitter(rng, s);
            }
            Noise::Heavy(s) => {
                a *= (s * rng.t3()).exp();
                b *= (s * rng.t3()).exp();
            }
            Noise::SlowBoth(s) => {
                a *= jitter(rng, s);
                b *= jitter(rng, s);
                if rng.unit() < 0.2 {
                    a *= 0.5 * jitter(rng, 0.2);
                    b *= 0.5 * jitter(rng, 0.2);
                }
            }
            Noise::SlowOne(s) => {
                a *= jitter(rng, s);
                b *= jitter(rng, s);
                if rng.unit() < 0.2 {
                    if rng.unit() < 0.5 {
                        a *= 0.6;
                    } else {
                        b *= 0.6;
                    }
                }
            }
        }
        (a, b)
    }

    /// The harness's procedure: add rounds, look at each of [`LOOKS`], stop when decided.
    fn sequential(rng: &mut Rng, truth: f64, noise: Noise) -> Verdict {
        let (mut a, mut b) = (Vec::new(), Vec::new());
        let mut last = None;
        for &look in &LOOKS {
            while a.len() < look {
                let (x, y) = pair(rng, truth, noise);
                a.push(x);
                b.push(y);
            }
            let v = paired(&a, &b, LOOKS.len()).unwrap();
            if v.decided != Decided::Undecided {
                return v;
            }
            last = Some(v);
        }
        last.unwrap()
    }

    /// The guarantee, by simulation: with known truths (equal, 3% apart, 10% apart) under normal,
    /// heavy-tailed and slow-round noise, a winner where there is none (or "within 5%" where there
    /// is a 10% difference) at most 5% of the time, a reversed winner at most 1%.
    #[test]
    fn sequential_errors_stay_below_five_and_one_percent() {
        const TRIALS: usize = 2000;
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        let noises = [
            Noise::Normal(0.03),
            Noise::Normal(0.10),
            Noise::Normal(0.25),
            Noise::Heavy(0.05),
            Noise::Heavy(0.15),
            Noise::SlowBoth(0.05),
            Noise::SlowOne(0.05),
        ];
        for &truth in &[1.0, 1.03, 1.10] {
            for &noise in &noises {
                let (mut wrong, mut reversed, mut decided) = (0, 0, 0);
                for _ in 0..TRIALS {
                    let v = sequential(&mut rng, truth, noise);
                    let named_a = v.a_larger == Some(true);
                    let named_b = v.a_larger == Some(false);
                    if v.decided != Decided::Undecided {
                        decided += 1;
                    }
                    if truth < MARGIN {
                        // No winner exists: naming one is wrong; naming the slower side reversed.
                        wrong += usize::from(named_a || named_b);
                        reversed += usize::from(named_b && truth > 1.0);
                    } else {
                        wrong += usize::from(named_b || v.decided == Decided::Equivalent);
                        reversed += usize::from(named_b);
                    }
                }
                let (w, r) = (
                    wrong as f64 / TRIALS as f64,
                    reversed as f64 / TRIALS as f64,
                );
                eprintln!(
                    "truth {truth:.2} {noise:?}: wrong {:.2}%, reversed {:.2}%, decided {:.1}%",
                    100.0 * w,
                    100.0 * r,
                    100.0 * decided as f64 / TRIALS as f64
                );
                assert!(w <= 0.05, "truth {truth} {noise:?}: wrong {w}");
                assert!(r <= 0.01, "truth {truth} {noise:?}: reversed {r}");
            }
        }
    }

    /// Cells measured apart (8 runs a side, one look): the same bounds on wrong and reversed
    /// winners.
    #[test]
    fn unpaired_errors_stay_below_five_and_one_percent() {
        let mut rng = Rng(7);
        for &truth in &[1.0, 1.03, 1.10] {
            for &s in &[0.03, 0.10] {
                let (mut wrong, mut reversed) = (0, 0);
                for _ in 0..2000 {
                    let a: Vec<f64> = (0..8).map(|_| truth * (s * rng.t3()).exp()).collect();
                    let b: Vec<f64> = (0..8).map(|_| (s * rng.t3()).exp()).collect();
                    let v = unpaired(&a, &b, 1).unwrap();
                    let (named_a, named_b) = (v.a_larger == Some(true), v.a_larger == Some(false));
                    if truth < MARGIN {
                        wrong += usize::from(named_a || named_b);
                        reversed += usize::from(named_b && truth > 1.0);
                    } else {
                        wrong += usize::from(named_b || v.decided == Decided::Equivalent);
                        reversed += usize::from(named_b);
                    }
                }
                assert!(
                    wrong <= 100,
                    "truth {truth} noise {s}: wrong {wrong} of 2000"
                );
                assert!(
                    reversed <= 20,
                    "truth {truth} noise {s}: reversed {reversed} of 2000"
                );
            }
        }
    }

    /// And it decides: a clear 1.5x lead under 10% noise is named in the first look nearly always.
    #[test]
    fn a_clear_lead_is_named_early() {
        let mut rng = Rng(42);
        let mut early = 0;
        for _ in 0..500 {
            let v = sequential(&mut rng, 1.5, Noise::Normal(0.10));
            assert_eq!((v.decided, v.a_larger), (Decided::Winner, Some(true)));
            early += usize::from(v.rounds == LOOKS[0]);
        }
        assert!(early >= 450, "{early}");
    }

    #[test]
    fn a_replicated_verdict_names_a_winner_only_when_every_run_does() {
        let v = |lo: f64, hi: f64| Verdict {
            ratio: (lo * hi).sqrt(),
            ci: [lo, hi],
            level: LEVEL,
            rounds: 8,
            kind: RatioKind::OfMedians,
            decided: decide([lo, hi]).0,
            a_larger: decide([lo, hi]).1,
        };
        let both = replicated(&[v(2.0, 5.0), v(1.5, 3.0)]).unwrap();
        assert_eq!(
            (both.decided, both.a_larger, both.ci),
            (Decided::Winner, Some(true), [1.5, 5.0])
        );
        assert_eq!(both.rounds, 16);
        assert!(both.ci[0] <= both.ratio && both.ratio <= both.ci[1]);
        // One run names the other side, or none: undecided.
        let split = replicated(&[v(2.0, 5.0), v(0.2, 0.5)]).unwrap();
        assert_eq!(split.decided, Decided::Undecided);
        assert_eq!(
            replicated(&[v(2.0, 5.0), v(0.9, 3.0)]).unwrap().decided,
            Decided::Undecided
        );
        // Within 5% in every run: within 5%.
        assert_eq!(
            replicated(&[v(0.98, 1.02), v(0.99, 1.04)]).unwrap().decided,
            Decided::Equivalent
        );
        // A run short of the level decides nothing.
        let mut short = v(2.0, 5.0);
        short.level = 0.9;
        assert_eq!(
            replicated(&[v(2.0, 5.0), short]).unwrap().decided,
            Decided::Undecided
        );
        assert!(replicated(&[]).is_none());
    }
}
