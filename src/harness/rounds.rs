//! How many rounds: the one home of the protocol's knobs. Every config with rounds embeds
//! [`Rounds`] (flattened, so its JSON keys stay `repeat`, `warmup`, `budget` and `level`),
//! checks it with [`Rounds::check`] and hands the harness its [`Plan`]; the suite asks for a
//! [`BudgetClass`], not for numbers, as criterion's groups override one struct of knobs.

use crate::error::{Error, Result};
use crate::measure::decide::{LEVEL, LOOKS, default_level};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Rounds as a user or the suite asks for them.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Rounds {
    /// Counted rounds: exactly these without a budget; with one, what the cells in no
    /// comparison get (at most the first look).
    pub repeat: usize,
    /// Uncounted rounds first.
    #[serde(default)]
    pub warmup: usize,
    /// Adaptive rounds: they go on, look by look, until every comparison asked is decided at
    /// `level`, as long as the next look fits in this wall time, a cap: no run starts that
    /// would end past it, the first look's too. `None`: exactly `repeat`.
    #[serde(default, with = "crate::measure::secs::option")]
    #[schemars(with = "Option<f64>")]
    pub budget: Option<Duration>,
    /// The coverage every comparison's interval guarantees over all its looks together
    /// (0.95): a winner is named, or "within 5%" said, only from an interval at this level.
    #[serde(default = "default_level")]
    pub level: f64,
}

impl Default for Rounds {
    /// Five counted rounds after one warm-up, no budget.
    fn default() -> Rounds {
        Rounds {
            repeat: 5,
            warmup: 1,
            budget: None,
            level: LEVEL,
        }
    }
}

impl Rounds {
    /// Exactly `repeat` counted rounds after `warmup`.
    pub fn fixed(repeat: usize, warmup: usize) -> Rounds {
        Rounds {
            repeat,
            warmup,
            budget: None,
            level: LEVEL,
        }
    }

    /// Adaptive rounds within `budget`, one warm-up first; cells in no comparison get the first
    /// look's rounds.
    pub fn adaptive(budget: Duration) -> Rounds {
        Rounds {
            repeat: LOOKS[0],
            warmup: 1,
            budget: Some(budget),
            level: LEVEL,
        }
    }

    /// Refuses zero counted rounds (without a budget, which always runs the first look), and
    /// a level outside [`LEVELS`].
    pub fn check(&self) -> Result<()> {
        if self.repeat == 0 && self.budget.is_none() {
            return Err(Error::usage(
                "invalid repeat count",
                "--repeat must be at least 1",
            ));
        }
        if !LEVELS.contains(&self.level) {
            return Err(Error::usage(
                "invalid level",
                format!(
                    "--level must be from {} to {}",
                    crate::measure::decide::percent(*LEVELS.start()),
                    crate::measure::decide::percent(*LEVELS.end())
                ),
            ));
        }
        Ok(())
    }

    /// The harness's plan for these rounds.
    pub fn plan(&self) -> Plan {
        match self.budget {
            Some(budget) => Plan {
                warmup: self.warmup,
                looks: LOOKS.to_vec(),
                floor: self.repeat.clamp(1, LOOKS[0]),
                budget,
                capped: true,
                level: self.level,
            },
            None => Plan {
                warmup: self.warmup,
                looks: vec![self.repeat],
                floor: self.repeat,
                budget: Duration::ZERO,
                capped: false,
                level: self.level,
            },
        }
    }
}

/// The levels a user may ask for, a choice: below 80% one interval in five may miss the truth; at
/// 99.9% over the six looks a look needs 14 paired rounds before any interval reaches its
/// share (1 - 2/2^n >= 1 - 0.001/6), so the first look (8) decides nothing and the third (16)
/// can; higher levels ask for rounds the budgets rarely give.
pub const LEVELS: std::ops::RangeInclusive<f64> = 0.8..=0.999;

/// How many rounds an experiment of the suite takes: the suite entries ask for a class and
/// the suite's scale (`--quick` or full) turns it into rounds, so the numbers live here alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BudgetClass {
    /// A table of figures, no comparison: each median's range covers 97% (6 rounds, quick) or
    /// 99% (8, full) of its distribution.
    Table,
    /// A ratio of two medians: each side's median interval at 97.5% (8 rounds, quick; 12, full),
    /// so that their ratio holds at 95%.
    Ratio,
    /// Adaptive comparisons within 5 s (quick) or 15 s (full), a cap: a replay's few methods.
    Brief,
    /// Adaptive within 6 s or 20 s: transfers, whose rounds are long.
    Short,
    /// Adaptive within 6 s or 30 s: the write sweep.
    Medium,
    /// Adaptive within 9 s or 60 s: the main comparisons of read methods. With the others,
    /// the quick suite ends in 90 s here and the full one in 6 min.
    Long,
}

impl BudgetClass {
    /// The rounds of this class in a quick or a full suite: one warm-up, and for adaptive
    /// classes three counted rounds for the cells in no comparison.
    pub fn rounds(self, quick: bool) -> Rounds {
        let pick = |q: u64, full: u64| if quick { q } else { full };
        let (repeat, budget) = match self {
            BudgetClass::Table => (pick(6, 8) as usize, None),
            BudgetClass::Ratio => (pick(8, 12) as usize, None),
            BudgetClass::Brief => (3, Some(pick(5, 15))),
            BudgetClass::Short => (3, Some(pick(6, 20))),
            BudgetClass::Medium => (3, Some(pick(6, 30))),
            BudgetClass::Long => (3, Some(pick(9, 60))),
        };
        Rounds {
            repeat,
            warmup: 1,
            budget: budget.map(Duration::from_secs),
            level: LEVEL,
        }
    }
}

/// How many rounds, and for how long, as the harness runs them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Plan {
    /// Uncounted rounds before the first counted one.
    pub warmup: usize,
    /// The rounds after which comparisons are looked at; the first is the minimum of every
    /// compared cell.
    pub looks: Vec<usize>,
    /// Counted rounds of the cells in no comparison (at most the first look).
    pub floor: usize,
    /// Wall time the whole measurement may take; the first look is always completed, unless
    /// `capped`.
    #[serde(with = "crate::measure::secs")]
    #[schemars(with = "f64")]
    pub budget: Duration,
    /// The budget is a cap: no run starts that its cell's last run (or the longest run so far,
    /// for a cell not yet run) says would end past it, in the first look too; the rounds
    /// completed are kept.
    #[serde(default)]
    pub capped: bool,
    /// The level comparisons are decided at.
    #[serde(default = "default_level")]
    pub level: f64,
}

impl Plan {
    /// What each verdict may spend: the plan's level over its looks.
    pub fn spend(&self) -> crate::measure::decide::Spend {
        crate::measure::decide::Spend {
            looks: self.looks.len(),
            level: self.level,
        }
    }

    /// The fewest counted rounds every cell gets.
    pub fn min_rounds(&self) -> usize {
        self.looks.first().copied().unwrap_or(1).max(1)
    }

    /// What a plan will run, in one line: `sweep: 64 cells x 8 rounds after 1 warm-up, more
    /// while a comparison is undecided; at most 1 min` (a cap) or `read: 1 cell x 5 rounds`.
    pub fn line(&self, what: &str, cells: usize) -> String {
        let plan = self;
        let mut line = format!(
            "{what}: {cells} cell{} x {} round{}",
            if cells == 1 { "" } else { "s" },
            plan.min_rounds(),
            if plan.min_rounds() == 1 { "" } else { "s" }
        );
        if plan.warmup > 0 {
            line.push_str(&format!(" after {} warm-up", plan.warmup));
        }
        if plan.looks.len() > 1 {
            line.push_str(", more while a comparison is undecided");
        }
        if plan.capped {
            line.push_str(&format!(
                "; at most {} (--budget, a cap)",
                crate::measure::secs::human(plan.budget)
            ));
        }
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_rounds_plan_one_look_and_adaptive_ones_every_look() {
        let p = Rounds::fixed(3, 1).plan();
        assert_eq!((p.warmup, p.looks.clone(), p.floor), (1, vec![3], 3));
        assert_eq!(p.min_rounds(), 3);
        let a = Rounds::adaptive(Duration::from_secs(9)).plan();
        assert_eq!(a.looks, LOOKS.to_vec());
        assert_eq!((a.warmup, a.floor), (1, LOOKS[0]));
        assert_eq!(a.budget, Duration::from_secs(9));
        let few = Rounds {
            repeat: 3,
            ..Rounds::adaptive(Duration::from_secs(1))
        };
        assert_eq!(few.plan().floor, 3, "uncompared cells get `repeat`");
        let many = Rounds {
            repeat: 100,
            ..Rounds::adaptive(Duration::from_secs(1))
        };
        assert_eq!(many.plan().floor, LOOKS[0], "never past the first look");
    }

    #[test]
    fn the_plan_says_what_runs_and_its_cap() {
        let capped = Rounds::adaptive(Duration::from_secs(60)).plan();
        assert_eq!(
            capped.line("access", 28),
            "access: 28 cells x 8 rounds after 1 warm-up, more while a comparison is undecided; at most 1 min (--budget, a cap)"
        );
        assert_eq!(
            Rounds::fixed(1, 0).plan().line("read", 1),
            "read: 1 cell x 1 round"
        );
    }

    #[test]
    fn zero_rounds_are_refused_unless_a_budget_runs_the_first_look() {
        assert!(Rounds::fixed(0, 1).check().is_err());
        for (level, ok) in [(0.8, true), (0.999, true), (0.5, false), (1.0, false)] {
            let r = Rounds {
                level,
                ..Rounds::default()
            };
            assert_eq!(r.check().is_ok(), ok, "{level}");
        }
        assert!(Rounds::fixed(1, 0).check().is_ok());
        let budget = Rounds {
            repeat: 0,
            ..Rounds::adaptive(Duration::from_secs(1))
        };
        assert!(budget.check().is_ok());
        assert_eq!(budget.plan().floor, 1);
    }

    #[test]
    fn rounds_keep_their_json_keys_and_read_results_without_a_budget() {
        let v = serde_json::to_value(Rounds::fixed(3, 1)).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"repeat": 3, "warmup": 1, "budget": null, "level": 0.95})
        );
        // Results written before `level` was a key were decided at 95%.
        let back: Rounds = serde_json::from_value(serde_json::json!({"repeat": 2})).unwrap();
        assert_eq!(back, Rounds::fixed(2, 0));
        assert_eq!(back.level, LEVEL);
        let b = Rounds::adaptive(Duration::from_millis(1500));
        let v = serde_json::to_value(b).unwrap();
        assert_eq!(v["budget"], 1.5);
    }
}
