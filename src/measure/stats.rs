//! Statistics of repeated runs: the median with a distribution-free interval (order statistics of
//! the sample, the binomial argument: no assumption about the shape of the noise), the ratio of two
//! cells with its interval (paired by round when the runs were interleaved), and outliers by the
//! median absolute deviation (modified z-score above 3.5, Iglewicz and Hoaglin), flagged only where
//! there are enough runs and a spread that matters.

use serde::{Deserialize, Serialize};

/// Statistics of repeated measurements.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Summary {
    /// Measurements.
    pub n: usize,
    /// Median.
    pub median: f64,
    /// Mean.
    pub mean: f64,
    /// Smallest.
    pub min: f64,
    /// Largest.
    pub max: f64,
    /// Sample standard deviation.
    pub stddev: f64,
    /// Interval for the median: the order statistics that cover it with at least [`Summary::LEVEL`]
    /// probability, or, with too few runs for that (n < 6), the range, whose coverage
    /// `ci_level` says (75% for 3 runs).
    #[serde(default)]
    pub ci: [f64; 2],
    /// The coverage of `ci`.
    #[serde(default)]
    pub ci_level: f64,
    /// The measurements, in the order they were taken (round by round when interleaved).
    #[serde(default)]
    pub samples: Vec<f64>,
    /// Indices of samples that are outliers: modified z-score above 3.5 and more than
    /// [`Summary::OUTLIER_MIN_DEVIATION`] from the median, with at least [`Summary::OUTLIER_MIN_RUNS`] runs.
    pub outliers: Vec<usize>,
}

impl Summary {
    /// The confidence asked of every interval.
    pub const LEVEL: f64 = 0.95;
    /// Runs needed before any run is called an outlier.
    pub const OUTLIER_MIN_RUNS: usize = 5;
    /// A run is an outlier only if it is also this far from the median (relative): a 1.3% spread
    /// is not worth a warning, whatever the MAD says.
    pub const OUTLIER_MIN_DEVIATION: f64 = 0.10;
}

/// The median of sorted samples (0 for none).
pub fn median_of(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    if n == 0 {
        return 0.0;
    }
    if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    }
}

/// The order-statistic interval of the median of `sorted`: `([lo, hi], coverage)`. It takes the
/// narrowest symmetric pair `x(k)..x(n+1-k)` whose coverage `1 - 2 P(Bin(n, 1/2) < k)` is at least
/// [`Summary::LEVEL`]; with fewer than 6 samples no pair reaches it and the range is given with its own
/// coverage.
pub fn median_interval(sorted: &[f64]) -> ([f64; 2], f64) {
    match sorted.len() {
        0 => ([0.0, 0.0], 0.0),
        1 => ([sorted[0], sorted[0]], 0.0),
        n => order_interval(sorted, Summary::LEVEL)
            .unwrap_or(([sorted[0], sorted[n - 1]], 1.0 - 2.0 * binomial_below(n, 1))),
    }
}

/// Summarises samples (any unit), kept in the order given. Empty input gives zeros.
pub fn summarize(samples: &[f64]) -> Summary {
    let n = samples.len();
    let mut sorted = samples.to_vec();
    sorted.sort_by(|a, b| a.total_cmp(b));
    let median = median_of(&sorted);
    let mean = if n == 0 {
        0.0
    } else {
        samples.iter().sum::<f64>() / n as f64
    };
    let var = if n < 2 {
        0.0
    } else {
        samples.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64
    };
    let mut dev: Vec<f64> = samples.iter().map(|x| (x - median).abs()).collect();
    dev.sort_by(|a, b| a.total_cmp(b));
    let mad = median_of(&dev);
    let outliers = if mad > 0.0 && n >= Summary::OUTLIER_MIN_RUNS {
        samples
            .iter()
            .enumerate()
            .filter(|(_, x)| {
                let d = (*x - median).abs();
                0.6745 * d / mad > 3.5 && d > Summary::OUTLIER_MIN_DEVIATION * median.abs()
            })
            .map(|(i, _)| i)
            .collect()
    } else {
        Vec::new()
    };
    let (ci, ci_level) = median_interval(&sorted);
    Summary {
        n,
        median,
        mean,
        min: sorted.first().copied().unwrap_or(0.0),
        max: sorted.last().copied().unwrap_or(0.0),
        stddev: var.sqrt(),
        ci,
        ci_level,
        samples: samples.to_vec(),
        outliers,
    }
}

/// `a` against `b` (a ratio of rates or of costs): its median and interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Ratio {
    /// The median ratio a / b.
    pub ratio: f64,
    /// Its interval.
    pub ci: [f64; 2],
    /// The interval's coverage.
    pub ci_level: f64,
    /// Whether the runs were paired by round (interleaved), or the cells' intervals combined.
    pub paired: bool,
    /// Runs on the side with fewer.
    pub runs: usize,
}

impl Ratio {
    /// A comparison names a winner only with at least this many runs on each side.
    pub const MIN_RUNS: usize = 3;
    /// A comparison names a winner only when its interval clears 1 by this margin.
    pub const CLEAR_MARGIN: f64 = 1.05;

    /// The ratio of two cells. Runs taken in the same rounds (equal counts, both positive) are
    /// paired: the ratio of each round, summarised, so that a slow minute that hit both cells
    /// cancels. Otherwise the medians' ratio with the widest ratio their intervals allow.
    pub fn of(a: &Summary, b: &Summary) -> Option<Ratio> {
        if a.n == 0 || b.n == 0 || b.median <= 0.0 || a.median <= 0.0 {
            return None;
        }
        let pairable = a.samples.len() == a.n
            && b.samples.len() == b.n
            && a.n == b.n
            && a.n >= 2
            && a.samples.iter().chain(&b.samples).all(|x| *x > 0.0);
        if pairable {
            let ratios: Vec<f64> = a
                .samples
                .iter()
                .zip(&b.samples)
                .map(|(x, y)| x / y)
                .collect();
            let s = summarize(&ratios);
            return Some(Ratio {
                ratio: s.median,
                ci: s.ci,
                ci_level: s.ci_level,
                paired: true,
                runs: a.n,
            });
        }
        Ratio::unpaired(a, b)
    }

    /// The medians' ratio, with the widest ratio the two intervals allow (for cells whose runs
    /// were not taken in the same rounds).
    pub fn unpaired(a: &Summary, b: &Summary) -> Option<Ratio> {
        if a.n == 0 || b.n == 0 || b.median <= 0.0 || a.median <= 0.0 {
            return None;
        }
        let lo = if b.ci[1] > 0.0 {
            a.ci[0] / b.ci[1]
        } else {
            0.0
        };
        let hi = if b.ci[0] > 0.0 {
            a.ci[1] / b.ci[0]
        } else {
            f64::INFINITY
        };
        Some(Ratio {
            ratio: a.median / b.median,
            ci: [lo, hi],
            ci_level: a.ci_level * b.ci_level,
            paired: false,
            runs: a.n.min(b.n),
        })
    }

    /// Which side is clearly larger: `Some(true)` for a, `Some(false)` for b, `None` when the
    /// interval does not clear 1 by [`Ratio::CLEAR_MARGIN`] either way, or a side has fewer than
    /// [`Ratio::MIN_RUNS`] runs.
    pub fn clear(&self) -> Option<bool> {
        if self.runs < Ratio::MIN_RUNS {
            None
        } else if self.ci[0] >= Ratio::CLEAR_MARGIN {
            Some(true)
        } else if self.ci[1] <= 1.0 / Ratio::CLEAR_MARGIN {
            Some(false)
        } else {
            None
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values() {
        let s = summarize(&[1.0, 2.0, 3.0, 4.0]);
        assert_eq!(s.median, 2.5);
        assert_eq!(s.mean, 2.5);
        assert_eq!((s.min, s.max), (1.0, 4.0));
        assert!((s.stddev - 1.2909944).abs() < 1e-6);
        assert!(s.outliers.is_empty());
        assert_eq!(s.samples, [1.0, 2.0, 3.0, 4.0]);
    }

    #[test]
    fn flags_the_far_sample() {
        let s = summarize(&[10.0, 10.5, 9.5, 10.2, 9.8, 50.0]);
        assert_eq!(s.outliers, vec![5]);
        assert_eq!(summarize(&[]).n, 0);
        assert_eq!(summarize(&[3.0]).median, 3.0);
    }

    #[test]
    fn no_outlier_alarm_on_few_runs_or_a_small_spread() {
        // Three runs 1.3% apart: the MAD test alone flagged one of these.
        assert!(summarize(&[3843.0, 3800.0, 3850.0]).outliers.is_empty());
        assert!(
            summarize(&[10.0, 10.1, 10.0, 10.1, 10.0, 10.6])
                .outliers
                .is_empty()
        );
        assert!(summarize(&[10.0, 50.0, 10.1]).outliers.is_empty(), "3 runs");
    }

    #[test]
    fn median_intervals_cover_as_the_binomial_says() {
        let three = median_interval(&[1.0, 2.0, 3.0]);
        assert_eq!(three.0, [1.0, 3.0]);
        assert!((three.1 - 0.75).abs() < 1e-12);
        let five = median_interval(&[1.0, 2.0, 3.0, 4.0, 5.0]);
        assert!((five.1 - 0.9375).abs() < 1e-12);
        // n = 6: x(1)..x(6) covers 96.9%, the first pair to reach 95%.
        let six = median_interval(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        assert_eq!(six.0, [1.0, 6.0]);
        assert!(six.1 >= Summary::LEVEL);
        // n = 20: x(6)..x(15) (coverage 95.9%).
        let v: Vec<f64> = (1..=20).map(f64::from).collect();
        let (ci, level) = median_interval(&v);
        assert_eq!(ci, [6.0, 15.0]);
        assert!((Summary::LEVEL..0.97).contains(&level), "{level}");
    }

    #[test]
    fn paired_ratios_cancel_a_slow_round_and_overlap_means_no_winner() {
        // Round 2 was slow for both: paired, b is clearly 1.2x a in every round.
        let a = summarize(&[100.0, 50.0, 102.0]);
        let b = summarize(&[120.0, 60.0, 122.0]);
        let r = Ratio::of(&b, &a).unwrap();
        assert!(r.paired);
        assert!(r.ci[0] > 1.19 && r.ci[1] < 1.21, "{r:?}");
        assert_eq!(r.clear(), Some(true));
        assert_eq!(Ratio::of(&a, &b).unwrap().clear(), Some(false));
        // Noisy: round ratios straddle 1 -> no clear difference.
        let x = summarize(&[100.0, 80.0, 130.0]);
        let y = summarize(&[90.0, 100.0, 100.0]);
        assert_eq!(Ratio::of(&x, &y).unwrap().clear(), None);
        // A small but consistent lead below the margin names nobody.
        let p = summarize(&[100.0, 100.0, 100.0]);
        let q = summarize(&[103.0, 103.5, 102.0]);
        assert_eq!(Ratio::of(&q, &p).unwrap().clear(), None);
        // Unequal counts: the intervals are combined, conservatively.
        let u = Ratio::of(&summarize(&[200.0, 210.0, 190.0, 205.0]), &p).unwrap();
        assert!(!u.paired && u.ci[0] <= 1.9 && u.ci[1] >= 2.1, "{u:?}");
        assert!(Ratio::of(&summarize(&[]), &p).is_none());
    }
}
