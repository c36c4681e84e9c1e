//! A finding: two measured sides compared by the interval of their ratio ([`decide`]), a
//! winner named only when that interval clears 1 by 5%, "within 5%" when it lies inside, and
//! "undecided" otherwise; with the figures, the rows it comes from and the sides' medians. The
//! machinery lives here, under the reports and the suite, so that both can use it; which cells
//! each experiment compares is the experiment's (`experiments/X/findings.rs`).

use crate::measure::decide::{self, Decided, RatioKind};
use crate::measure::stats::Summary;
use serde::{Deserialize, Serialize};

/// One answer the measurements give, with the rows it comes from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Finding {
    /// A stable key: the same comparison has the same key in every run and on every host.
    pub key: String,
    /// The finding in words, with its figures.
    pub text: String,
    /// The faster (or cheaper) side, or `None` when there is no clear difference.
    #[serde(default)]
    pub winner: Option<String>,
    /// What the interval decided: a winner, within 5% (`equivalent`), or `undecided` (absent
    /// in results written before the harness).
    #[serde(default)]
    pub decided: Option<Decided>,
    /// The first-named side over the second (rates: a / b; costs: a / b too, lower is better),
    /// of the kind `ratio_kind` says: the ratio whose interval `ci` is.
    #[serde(default)]
    pub ratio: f64,
    /// Which ratio `ratio` is: `paired` (median of per-round ratios) or `of-medians`.
    #[serde(default)]
    pub ratio_kind: Option<RatioKind>,
    /// The interval of `ratio`; `[0, 0]` when there is none: too few rounds for one at the
    /// level (then the verdict is "undecided (budget ...)"), or results written before
    /// intervals existed.
    #[serde(default)]
    pub ci: [f64; 2],
    /// The interval's coverage, over every look the harness took (the level asked, 0.95 unless
    /// `--level` said otherwise; less only when too few rounds were taken, and then nothing is
    /// decided).
    #[serde(default)]
    pub level: f64,
    /// Rounds (pairs) behind it; for unpaired sides, the smaller side's count.
    #[serde(default)]
    pub rounds: usize,
    /// The rows it comes from, as `experiment: row`.
    pub cites: Vec<String>,
    /// The two compared sides' figures (medians), for tables that put hosts side by side
    /// (absent in results written before them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sides: Vec<SideFigure>,
}

/// One side of a finding in figures: its name, its median and the unit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SideFigure {
    /// The side's name (`mmap`, `fsync after every block`).
    pub name: String,
    /// Its median.
    pub median: f64,
    /// The unit (`MiB/s`, `KIOPS`, `ns`).
    pub unit: String,
}

/// Whether a larger figure is better (rates) or worse (costs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Better {
    Higher,
    Lower,
}

/// One side of a comparison: its name, its measurements, the row it comes from.
pub(crate) struct Side {
    pub(crate) name: String,
    pub(crate) s: Summary,
    pub(crate) cite: String,
}

/// How the two sides were measured: in the same rounds of a harness that looked so many times
/// at its level, or apart (the looks either side's runs were taken under).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Pairing {
    Paired(decide::Spend),
    Apart(decide::Spend),
    /// The verdict already drawn (from several runs: [`decide::replicated`]).
    Given(decide::Verdict),
}

/// Compares `a` with `b` on `what` (figures in `unit`). `None` when either side has no runs,
/// or both are the same cell.
pub(crate) fn compare(
    key: &str,
    what: &str,
    unit: &str,
    better: Better,
    pairing: Pairing,
    a: Side,
    b: Side,
) -> Option<Finding> {
    if a.name == b.name && a.cite == b.cite {
        return None;
    }
    let (a, b, left_out) = if matches!(pairing, Pairing::Apart(_)) {
        above_zero(a, b)
    } else {
        (a, b, String::new())
    };
    let v = match pairing {
        Pairing::Paired(spend) => {
            let m = a.s.samples.len().min(b.s.samples.len());
            decide::paired(&a.s.samples[..m], &b.s.samples[..m], spend)?
        }
        Pairing::Apart(spend) => decide::unpaired(&a.s.samples, &b.s.samples, spend)?,
        Pairing::Given(v) => v,
    };
    let a_ahead = match (v.a_larger, better) {
        (None, _) => None,
        (Some(first), Better::Higher) => Some(first),
        (Some(first), Better::Lower) => Some(!first),
    };
    // Shown as "first N x second": the winner first; the factor and its interval read as "times
    // faster" for rates and "times cheaper" for costs.
    let a_first = a_ahead.unwrap_or(true);
    let (first, second) = if a_first { (&a, &b) } else { (&b, &a) };
    let invert = a_first == (better == Better::Lower);
    let (x, lo, hi) = if invert {
        (1.0 / v.ratio, 1.0 / v.ci[1], 1.0 / v.ci[0])
    } else {
        (v.ratio, v.ci[0], v.ci[1])
    };
    // Too few rounds for an interval at the level: no interval is printed or kept (one with
    // less coverage beside a verdict reads as the verdict's), and nothing is decided.
    let budget = !v.has_interval();
    let level = v.asked_words();
    let figures = if budget {
        format!(
            "{x:.2}x without an interval; for context, the medians: {} {} vs {} {} {unit}",
            first.name,
            sig(first.s.median),
            second.name,
            sig(second.s.median)
        )
    } else {
        figures_text((first, second), unit, (x, lo, hi), &level, v.rounds, v.kind)
    } + &left_out;
    let (text, winner) = sentence(what, better, &v, a_ahead, (first, second), x, &figures);
    let figure = |s: &Side| SideFigure {
        name: s.name.clone(),
        median: s.s.median,
        unit: unit.into(),
    };
    let sides = vec![figure(&a), figure(&b)];
    Some(Finding {
        key: key.into(),
        text,
        winner,
        decided: Some(v.decided),
        ratio: v.ratio,
        ratio_kind: Some(v.kind),
        ci: if budget { [0.0, 0.0] } else { v.ci },
        level: v.level,
        rounds: v.rounds,
        cites: vec![a.cite, b.cite],
        sides,
    })
}

/// The finding's sentence and its winner: `first` (the one ahead, or `a`) `x` times faster or
/// cheaper than `second`, within 5%, or undecided, with `figures`.
fn sentence(
    what: &str,
    better: Better,
    v: &decide::Verdict,
    a_ahead: Option<bool>,
    (first, second): (&Side, &Side),
    x: f64,
    figures: &str,
) -> (String, Option<String>) {
    let budget = !v.has_interval();
    let level = v.asked_words();
    let how = match better {
        Better::Higher => "faster than",
        Better::Lower => "cheaper than",
    };
    match (v.decided, a_ahead) {
        (Decided::Winner, Some(_)) => (
            format!(
                "{what}: {} {x:.2}x {how} {} ({figures})",
                first.name, second.name
            ),
            Some(first.name.clone()),
        ),
        (Decided::Equivalent, _) => (
            format!("{what}: within 5%, no practical difference ({figures})"),
            None,
        ),
        _ if budget => (
            format!(
                "{what}: undecided (budget: {} round{}, too few for an interval at {level}; {figures})",
                v.rounds,
                if v.rounds == 1 { "" } else { "s" }
            ),
            None,
        ),
        _ => (
            format!("{what}: undecided after {} rounds ({figures})", v.rounds),
            None,
        ),
    }
}

/// Apart, the ratio is of the medians of the samples above zero (a ratio's logarithm needs
/// them): both sides with those medians, and the note that says when any sample was left out.
fn above_zero(a: Side, b: Side) -> (Side, Side, String) {
    let mut dropped = Vec::new();
    let mut above = |side: Side| {
        let kept: Vec<f64> = side
            .s
            .samples
            .iter()
            .copied()
            .filter(|x| *x > 0.0 && x.is_finite())
            .collect();
        if kept.len() < side.s.samples.len() && !kept.is_empty() {
            dropped.push(format!(
                "{} {} of {}",
                side.name,
                side.s.samples.len() - kept.len(),
                side.s.samples.len()
            ));
            let median = crate::measure::stats::summarize(&kept).median;
            Side {
                s: Summary { median, ..side.s },
                ..side
            }
        } else {
            side
        }
    };
    let (a, b) = (above(a), above(b));
    let note = if dropped.is_empty() {
        String::new()
    } else {
        format!(
            "; samples at zero left out of the medians and the ratio: {}",
            dropped.join(", ")
        )
    };
    (a, b, note)
}

/// A figure as the report prints it, to at least three significant digits (`0.0412`, `4.12`,
/// `41.2`, `412`, `4120`): never `0.0` beside a ratio.
pub fn sig(v: f64) -> String {
    let a = v.abs();
    let decimals = if a == 0.0 || !a.is_finite() || a >= 100.0 {
        1
    } else {
        (2 - a.log10().floor() as i32).clamp(1, 9) as usize
    };
    format!("{v:.decimals$}")
}

/// The figures of a finding, each labelled as what it is: the ratio with its interval and what
/// kind it is; the sides' medians either as the ratio's own sides (a ratio of medians equal to
/// theirs, within rounding) or as context (a paired ratio, or one computed another way).
fn figures_text(
    (first, second): (&Side, &Side),
    unit: &str,
    (x, lo, hi): (f64, f64, f64),
    level: &str,
    rounds: usize,
    kind: RatioKind,
) -> String {
    let theirs = second.s.median != 0.0 && {
        let m = first.s.median / second.s.median;
        // The medians' ratio to the shown precision, or the ratio's, either way round.
        let shown = |r: f64| (r * 100.0).round() / 100.0;
        shown(m) == shown(x) || shown(1.0 / m) == shown(x) || (m / x - 1.0).abs() < 0.005
    };
    let medians = format!(
        "{} {} vs {} {} {unit}",
        first.name,
        sig(first.s.median),
        second.name,
        sig(second.s.median)
    );
    match kind {
        RatioKind::OfMedians if theirs => format!(
            "{medians} (medians); their ratio {x:.2}x, interval {lo:.2}-{hi:.2}x at {level} over {rounds} rounds"
        ),
        RatioKind::Paired => format!(
            "{x:.2}x, interval {lo:.2}-{hi:.2}x at {level}: the median of {rounds} per-round ratios (paired); for context, the medians: {medians}"
        ),
        RatioKind::OfMedians | RatioKind::Replicated => format!(
            "{x:.2}x, interval {lo:.2}-{hi:.2}x at {level} over {rounds} rounds ({}); for context, the pooled medians: {medians}",
            kind.says()
        ),
    }
}

/// A figure there is to compare: measured, on a method this machine runs.
pub(crate) fn usable(s: &Summary, unsupported: &Option<String>) -> bool {
    unsupported.is_none() && s.n > 0
}

/// Eight rounds of the three given, each again with a small wobble (as the harness's first look
/// sees them): for the findings' tests.
#[cfg(test)]
pub(crate) fn eight(v: &[f64]) -> Vec<f64> {
    (0..8)
        .map(|i| v[i % v.len()] * (1.0 + 0.002 * (i / v.len()) as f64))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::stats::summarize;

    #[test]
    fn figures_keep_three_significant_digits() {
        assert_eq!(sig(0.0800048), "0.0800");
        assert_eq!(sig(4.123), "4.12");
        assert_eq!(sig(41.23), "41.2");
        assert_eq!(sig(4123.4), "4123.4");
        assert_eq!(sig(0.0), "0.0");
    }

    #[test]
    fn apart_the_medians_printed_are_the_ones_the_ratio_divides() {
        // A side whose samples include zero ticks (a stalled mapping under eviction): the ratio
        // of medians is of the samples above zero, and so are the medians printed.
        let side = |name: &str, v: &[f64]| Side {
            name: name.into(),
            s: summarize(v),
            cite: format!("t: {name}"),
        };
        let fast = side("direct", &[20.0, 21.0, 19.0, 20.5, 20.2, 19.8, 20.1, 20.3]);
        let slow = side(
            "mmap",
            &[
                0.0, 0.0, 0.0, 0.1, 0.08, 0.0, 0.12, 0.09, 0.0, 0.11, 0.1, 0.095, 0.085, 0.105,
            ],
        );
        let f = compare(
            "k",
            "t",
            "KIOPS",
            Better::Higher,
            Pairing::Apart(decide::Spend::ONCE),
            fast,
            slow,
        )
        .unwrap();
        let q = f.sides[0].median / f.sides[1].median;
        assert!((q / f.ratio - 1.0).abs() < 1e-9, "{q} {}", f.ratio);
        assert!(f.text.contains("(medians); their ratio"), "{}", f.text);
        assert!(f.text.contains("mmap 5 of 14"), "{}", f.text);
    }

    /// Every finding printed with an interval says what that interval decides (a winner when
    /// it clears 1.05, within 5% inside it), at 95%; one without says "undecided (budget ...)"
    /// and keeps none: over paired and unpaired samples of 3 to 20 rounds, 1 to 6 looks.
    #[test]
    fn the_interval_printed_is_the_one_that_decided() {
        let mut seed = 0x2545_F491_4F6C_DD1Du64;
        let mut unit = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed >> 11) as f64 / (1u64 << 53) as f64
        };
        let mut budget = 0;
        for trial in 0..3000 {
            let n = 3 + trial % 18;
            let looks = 1 + trial % 6;
            let truth = [1.0, 1.03, 1.2, 3.0][trial % 4];
            let spread = [0.01, 0.2, 1.0][trial % 3];
            let a: Vec<f64> = (0..n)
                .map(|_| truth * (spread * (unit() - 0.5)).exp())
                .collect();
            let b: Vec<f64> = (0..n).map(|_| (spread * (unit() - 0.5)).exp()).collect();
            let side = |name: &str, v: &[f64]| Side {
                name: name.into(),
                s: summarize(v),
                cite: format!("t: {name}"),
            };
            let pairing = if trial % 2 == 0 {
                Pairing::Paired(decide::Spend::looks(looks))
            } else {
                Pairing::Apart(decide::Spend::looks(looks))
            };
            let f = compare(
                "k",
                "t",
                "MiB/s",
                Better::Higher,
                pairing,
                side("a", &a),
                side("b", &b),
            )
            .unwrap();
            assert!(!f.text.contains("at only"), "{}", f.text);
            if f.ci == [0.0, 0.0] {
                budget += 1;
                assert!(f.level < decide::LEVEL, "{f:?}");
                assert_eq!(f.decided, Some(Decided::Undecided), "{}", f.text);
                assert!(f.text.contains("undecided (budget: "), "{}", f.text);
                continue;
            }
            assert!(f.level >= decide::LEVEL, "{f:?}");
            assert!(f.text.contains("at 95%"), "{}", f.text);
            let (d, _) = decide::decide(f.ci);
            assert_eq!(Some(d), f.decided, "{}", f.text);
            assert_eq!(d == Decided::Winner, f.winner.is_some(), "{}", f.text);
        }
        assert!(budget > 100 && budget < 2900, "both kinds seen: {budget}");
    }
}
