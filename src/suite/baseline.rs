//! `iolab report --baseline A.json B.json`: a run against a baseline, finding by finding, as
//! hyperfine and criterion compare with a saved run: B's ratio over A's with an interval, and a
//! regression when two runs name opposite winners, or when B / A's interval excludes 1 and a run
//! decided.

use crate::experiments::entry::SuiteResult;
use crate::measure::decide::Decided;
use crate::measure::finding::Finding;

/// How one finding moved from the baseline (A) to the run (B).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// No opposite winners, and B / A's interval holds 1 (or neither run decided).
    Held,
    /// The two runs named opposite winners.
    Reversed,
    /// B's ratio over A's has an interval that excludes 1, and at least one run decided.
    Moved,
    /// The two runs measured different things under this key (a quick and a full suite):
    /// not compared.
    Incomparable,
    /// In one run only.
    Missing,
}

impl Change {
    /// Whether it fails a baseline check.
    pub fn regresses(self) -> bool {
        matches!(self, Change::Reversed | Change::Moved)
    }

    fn word(self) -> &'static str {
        match self {
            Change::Held => "held",
            Change::Reversed => "REVERSED",
            Change::Moved => "MOVED (B / A excludes 1)",
            Change::Incomparable => "not compared: configs differ",
            Change::Missing => "in one run only",
        }
    }
}

/// One finding of both runs.
#[derive(Debug, Clone, PartialEq)]
pub struct BaselineRow {
    /// Its key.
    pub key: String,
    /// The baseline's finding.
    pub a: Option<Finding>,
    /// The run's.
    pub b: Option<Finding>,
    /// B's ratio over A's and its interval (the widest the two intervals allow).
    pub b_over_a: Option<(f64, [f64; 2])>,
    /// What happened.
    pub change: Change,
}

/// A label for a run: its host, date and time, and kind (`vm1 2026-11-29 04:12 UTC, quick`).
pub fn label(r: &SuiteResult) -> String {
    let h = &r.host;
    let name = if h.hostname.is_empty() {
        h.cpu_model.as_str()
    } else {
        h.hostname.as_str()
    };
    let when = if h.date.len() >= 16 {
        format!(" {} UTC", h.date[..16].replace('T', " "))
    } else {
        String::new()
    };
    format!(
        "{name}{when}, {}",
        if r.config.quick { "quick" } else { "full" }
    )
}

/// Every finding of `a` (the baseline) and `b`, in a's order then b's new ones.
pub fn compare(a: &SuiteResult, b: &SuiteResult) -> Vec<BaselineRow> {
    let mut keys: Vec<&str> = a.findings.iter().map(|f| f.key.as_str()).collect();
    for f in &b.findings {
        if !keys.contains(&f.key.as_str()) {
            keys.push(&f.key);
        }
    }
    // The suites' scales differ in their data, rounds and some comparisons' settings.
    let same_config = a.config.quick == b.config.quick;
    keys.into_iter()
        .map(|key| {
            let find = |r: &SuiteResult| r.findings.iter().find(|f| f.key == key).cloned();
            let (fa, fb) = (find(a), find(b));
            let (change, b_over_a) = match (&fa, &fb) {
                (Some(x), Some(y)) => {
                    let ratio = ratio_of_ratios(x, y);
                    if same_config {
                        (change(x, y), ratio)
                    } else {
                        (Change::Incomparable, ratio)
                    }
                }
                _ => (Change::Missing, None),
            };
            BaselineRow {
                key: key.to_string(),
                a: fa,
                b: fb,
                b_over_a,
                change,
            }
        })
        .collect()
}

/// B's ratio over A's, with the interval from their intervals' ends (widest).
fn ratio_of_ratios(a: &Finding, b: &Finding) -> Option<(f64, [f64; 2])> {
    if a.ratio <= 0.0 || b.ratio <= 0.0 {
        return None;
    }
    let ci = if a.ci[0] > 0.0 && b.ci[0] > 0.0 && a.ci[1] > 0.0 && b.ci[1] > 0.0 {
        [b.ci[0] / a.ci[1], b.ci[1] / a.ci[0]]
    } else {
        [0.0, 0.0]
    };
    Some((b.ratio / a.ratio, ci))
}

/// What happened to one finding between two runs of the same config: REVERSED when the two
/// runs named opposite winners; MOVED when B's ratio over A's has an interval that excludes 1
/// and at least one run decided (a winner, or within 5%); else held. Two undecided runs, or a
/// run without an interval (too few rounds for one), never fail the check: a CI job gating on
/// the exit code fails on a change the data show, not on noise.
pub fn change(a: &Finding, b: &Finding) -> Change {
    fn winner(f: &Finding) -> Option<&str> {
        (f.decided == Some(Decided::Winner))
            .then_some(f.winner.as_deref())
            .flatten()
    }
    if let (Some(x), Some(y)) = (winner(a), winner(b))
        && x != y
    {
        return Change::Reversed;
    }
    let decided = |f: &Finding| matches!(f.decided, Some(Decided::Winner | Decided::Equivalent));
    let moved =
        ratio_of_ratios(a, b).is_some_and(|(_, ci)| ci[1] > 0.0 && (ci[0] > 1.0 || ci[1] < 1.0));
    if moved && (decided(a) || decided(b)) {
        return Change::Moved;
    }
    Change::Held
}

/// B / A per finding compared, for the forest plot: a regression as a "winner", held as
/// "within", with the interval where both runs had one.
fn forest_rows(rows: &[BaselineRow]) -> Vec<crate::report::forest::Estimate> {
    use crate::report::forest::{Estimate, Mark};
    rows.iter()
        .filter_map(|r| {
            let (x, ci) = r.b_over_a?;
            let ci = (ci[0] > 0.0 && ci[1] > 0.0).then_some(ci);
            Some(Estimate {
                label: format!("{}: {}", r.key, says(r)),
                ratio: x,
                ci,
                mark: match (r.change.regresses(), ci) {
                    (true, _) => Mark::Winner,
                    (false, Some(_)) => Mark::Within,
                    (false, None) => Mark::Budget,
                },
            })
        })
        .collect()
}

/// What a row's change column says: "held (undecided)" where neither run decided.
fn says(r: &BaselineRow) -> &'static str {
    let undecided = |f: &Option<Finding>| {
        f.as_ref()
            .is_none_or(|f| !matches!(f.decided, Some(Decided::Winner | Decided::Equivalent)))
    };
    if r.change == Change::Held && undecided(&r.a) && undecided(&r.b) {
        "held (undecided)"
    } else {
        r.change.word()
    }
}

/// The comparison as text: a line per finding, then the count; `a` is the baseline.
pub fn text(a: &SuiteResult, b: &SuiteResult, rows: &[BaselineRow]) -> String {
    let mut out = format!("baseline A: {}\nrun B:      {}\n", label(a), label(b));
    if a.config.quick != b.config.quick {
        out.push_str(
            "A and B are different suites (quick and full): their data, rounds and some settings differ, so no finding is compared\n",
        );
    }
    let mut t = crate::report::Table::titled(&[
        "finding", "A ratio", "A", "B ratio", "B", "B / A", "interval", "change",
    ]);
    let ratio = |f: &Option<Finding>| {
        f.as_ref().map_or("-".into(), |f| {
            if f.ci[0] > 0.0 && f.ci[1] > 0.0 {
                format!("{:.2}x [{:.2}-{:.2}]", f.ratio, f.ci[0], f.ci[1])
            } else {
                format!("{:.2}x [no interval]", f.ratio)
            }
        })
    };
    let said = |f: &Option<Finding>| {
        f.as_ref()
            .map_or("-".to_string(), |f| match (&f.winner, f.decided) {
                (Some(w), _) => w.clone(),
                (None, Some(Decided::Equivalent)) => "within 5%".into(),
                _ => "undecided".into(),
            })
    };
    use crate::report::Value;
    for r in rows {
        let (x, ci) = match r.b_over_a {
            Some((x, ci)) if ci[1] > 0.0 => {
                (format!("{x:.2}x"), format!("{:.2}-{:.2}", ci[0], ci[1]))
            }
            Some((x, _)) => (format!("{x:.2}x"), "-".into()),
            None => ("-".into(), "-".into()),
        };
        t.row(vec![
            Value::text(r.key.clone()),
            Value::text(ratio(&r.a)),
            Value::text(said(&r.a)),
            Value::text(ratio(&r.b)),
            Value::text(said(&r.b)),
            Value::text(x),
            Value::text(ci),
            Value::text(says(r)),
        ]);
    }
    out.push_str(&crate::report::render(
        &crate::report::Document::new().table(t),
        crate::report::Format::Text,
    ));
    out.push_str(&format!(
        "\nB / A per finding ({}):\n{}",
        "W: reversed or moved, =: held",
        crate::report::forest::text(&forest_rows(rows), 48)
    ));
    let bad = rows.iter().filter(|r| r.change.regresses()).count();
    out.push_str(&format!(
        "\n{} findings: {bad} reversed or moved (exit 1), {} held, {} not compared, {} in one run only\nratio: the finding's first side over its second, [its interval]; B / A: B's ratio over A's, its interval from both intervals' ends\n",
        rows.len(),
        rows.iter().filter(|r| r.change == Change::Held).count(),
        rows.iter()
            .filter(|r| r.change == Change::Incomparable)
            .count(),
        rows.iter().filter(|r| r.change == Change::Missing).count(),
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finding(winner: Option<&str>, decided: Decided, ratio: f64, ci: [f64; 2]) -> Finding {
        Finding {
            key: "k".into(),
            text: String::new(),
            winner: winner.map(String::from),
            decided: Some(decided),
            ratio,
            ratio_kind: None,
            ci,
            level: 0.95,
            rounds: 8,
            cites: vec![],
            sides: vec![],
        }
    }

    #[test]
    fn opposite_winners_reverse_a_move_needs_b_over_a_beyond_1_and_a_decision() {
        let mmap = finding(Some("mmap"), Decided::Winner, 1.5, [1.3, 1.7]);
        assert_eq!(change(&mmap, &mmap), Change::Held);
        let read = finding(Some("read"), Decided::Winner, 0.7, [0.6, 0.8]);
        assert_eq!(change(&mmap, &read), Change::Reversed);
        // A winner then within 5%: no opposite winner, but B / A (0.57-0.79) excludes 1.
        let even = finding(None, Decided::Equivalent, 1.0, [0.97, 1.03]);
        assert_eq!(change(&mmap, &even), Change::Moved);
        let open = finding(None, Decided::Undecided, 1.2, [0.9, 1.6]);
        assert_eq!(
            change(&mmap, &open),
            Change::Held,
            "undecided reverses nothing, and B / A (0.53-1.23) holds 1"
        );
        let far = finding(Some("mmap"), Decided::Winner, 3.0, [2.6, 3.4]);
        assert_eq!(change(&mmap, &far), Change::Moved);
        let near = finding(Some("mmap"), Decided::Winner, 1.65, [1.45, 1.9]);
        assert_eq!(change(&mmap, &near), Change::Held, "B / A 0.85-1.46");
        assert!(Change::Reversed.regresses() && Change::Moved.regresses());
        assert!(!Change::Held.regresses() && !Change::Incomparable.regresses());
        let (x, ci) = ratio_of_ratios(&mmap, &far).unwrap();
        assert!((x - 2.0).abs() < 1e-9);
        assert!(ci[0] <= x && x <= ci[1], "{ci:?}");
    }

    #[test]
    fn noise_never_fails_the_check() {
        // Two undecided runs whose intervals do not even overlap: held (undecided).
        let a = finding(None, Decided::Undecided, 1.02, [0.99, 1.06]);
        let b = finding(None, Decided::Undecided, 1.2, [1.07, 1.5]);
        assert_eq!(change(&a, &b), Change::Held);
        // B / A's interval holds 1 (replay-cold's 0.97-1.16): held, whatever the verdicts.
        let c = finding(Some("x"), Decided::Winner, 1.3, [1.2, 1.4]);
        let d = finding(Some("x"), Decided::Winner, 1.4, [1.16, 1.65]);
        assert_eq!(change(&c, &d), Change::Held);
        // A run too short for an interval (no interval: [0, 0]) never moves.
        let short = finding(None, Decided::Undecided, 9.0, [0.0, 0.0]);
        assert_eq!(change(&c, &short), Change::Held);
        assert_eq!(change(&short, &c), Change::Held);
        let row = BaselineRow {
            key: "k".into(),
            a: Some(a.clone()),
            b: Some(b.clone()),
            b_over_a: ratio_of_ratios(&a, &b),
            change: change(&a, &b),
        };
        assert_eq!(says(&row), "held (undecided)");
    }
}
