//! The rounds group every command with rounds flattens (`--repeat`, `--warmup`, `--budget`,
//! `--level`), its one mapping onto [`Rounds`], and the one table of each command's defaults.

use super::args::{duration, positive};
use clap::Args;
use iolab::harness::Rounds;
use std::time::Duration;

/// `--repeat`, `--warmup`, `--budget`, `--level`: the rounds of every command that has rounds,
/// with one meaning everywhere (documented here once); what each command does without them is
/// [`round_defaults`], shown in its `--help` ([`with_round_defaults`]).
#[derive(Debug, Clone, Default, Args)]
pub struct RoundArgs {
    /// Exactly this many counted rounds (each runs every cell once, interleaved), no early stop
    #[arg(long, value_parser = positive, conflicts_with = "budget", value_name = "N")]
    pub repeat: Option<usize>,
    /// Uncounted rounds first, each cell's runs thrown away (a first touch of page-cache memory
    /// or a cold ring is slow)
    #[arg(long, value_name = "N")]
    pub warmup: Option<usize>,
    /// Instead of --repeat: rounds go on, look by look, until every comparison is decided at
    /// --level (a winner, or within 5%), and no run starts that would end past this wall time, a
    /// cap
    #[arg(long, value_parser = duration, value_name = "TIME")]
    pub budget: Option<Duration>,
    /// The confidence every comparison is decided at, over all its looks together: a winner or
    /// "within 5%" only from an interval at this level (80 to 99.9; `99`, `99%` or `0.99`); a
    /// higher level needs more rounds to decide
    #[arg(long, value_parser = level, value_name = "PERCENT")]
    pub level: Option<f64>,
}

/// Commands with rounds that draw no comparison (one cell, or cells only tabled): `--level`
/// is said to decide nothing there.
const COMPARE_NOTHING: [&str; 2] = ["read", "write"];

/// A confidence level: `95`, `95%` or `0.95`, within [`iolab::harness::LEVELS`].
fn level(s: &str) -> Result<f64, String> {
    let t = s.trim().trim_end_matches('%');
    let v: f64 = t
        .parse()
        .map_err(|_| format!("{s:?} is not a level (say 95, 95% or 0.95)"))?;
    // As a fraction, to the digits a person writes (99.9 / 100 is not 0.999 in floating point).
    let v = ((if v > 1.0 { v / 100.0 } else { v }) * 1e9).round() / 1e9;
    let range = iolab::harness::LEVELS;
    if v.is_finite() && range.contains(&v) {
        Ok(v)
    } else {
        Err(format!(
            "{s} is outside {} to {}",
            iolab::measure::decide::percent(*range.start()),
            iolab::measure::decide::percent(*range.end())
        ))
    }
}

impl RoundArgs {
    /// The rounds asked of `command` (a name [`round_defaults`] knows): exactly `--repeat`,
    /// or adaptive within `--budget` (a command that is adaptive by default keeps its own
    /// first look), else its default; `--warmup` over any of them.
    pub fn rounds(&self, command: &str) -> Rounds {
        let default = round_defaults(command).unwrap_or_default();
        let mut r = match (self.repeat, self.budget) {
            (Some(repeat), _) => Rounds::fixed(repeat, default.warmup),
            (None, Some(budget)) if default.budget.is_some() => Rounds {
                budget: Some(budget),
                ..default
            },
            (None, Some(budget)) => Rounds {
                warmup: default.warmup,
                ..Rounds::adaptive(budget)
            },
            (None, None) => default,
        };
        if let Some(w) = self.warmup {
            r.warmup = w;
        }
        if let Some(l) = self.level {
            r.level = l;
            if COMPARE_NOTHING.contains(&command) {
                super::talk(format!(
                    "note: {command} compares nothing: --level decides no verdict here (each median's interval is at 95%)"
                ));
            }
        }
        r
    }

    /// Whether any of the four was given.
    pub fn given(&self) -> bool {
        self.repeat.is_some()
            || self.warmup.is_some()
            || self.budget.is_some()
            || self.level.is_some()
    }
}

/// What each command with rounds does without `--repeat`/`--warmup`/`--budget` (all decide at
/// 95% without `--level`): the one table of their defaults, which the commands and their
/// `--help` both read (`None`: not a command with rounds).
pub fn round_defaults(command: &str) -> Option<Rounds> {
    use iolab::experiments::access::AccessConfig;
    // Three rounds where each is long or a matrix (a transfer pair, part B's every way), no
    // warm-up where every run starts afresh anyway (a new file written, a new connection).
    let three = |warmup| Rounds::fixed(3, warmup);
    Some(match command {
        "read" | "syscalls" => Rounds::default(),
        "write" | "transfer" => three(0),
        "vm" => three(1),
        "access" => Rounds {
            warmup: AccessConfig::ROUNDS.warmup,
            ..Rounds::adaptive(AccessConfig::BUDGET)
        },
        "sweep" => Rounds::adaptive(Duration::from_secs(60)),
        "advise" => Rounds {
            repeat: 3,
            ..Rounds::adaptive(Duration::from_secs(30))
        },
        "replay" => Rounds::adaptive(Duration::from_secs(60)),
        _ => return None,
    })
}

/// `cmd` with each round flag's help ending in the subcommand's own default (clap renders one
/// default per argument type, and the group is one type for every command).
pub fn with_round_defaults(cmd: clap::Command) -> clap::Command {
    use iolab::measure::decide;
    let names: Vec<String> = cmd
        .get_subcommands()
        .filter(|s| s.get_arguments().any(|a| a.get_id() == "repeat"))
        .map(|s| s.get_name().to_string())
        .collect();
    names
        .into_iter()
        .fold(cmd, |cmd, name| {
            let d = round_defaults(&name).unwrap_or_default();
            let (repeat, budget) = match d.budget {
                Some(b) => (
                    "none: --budget".to_string(),
                    format!("{}s", b.as_secs_f64()),
                ),
                None => (d.repeat.to_string(), "none: --repeat".to_string()),
            };
            let with = |a: clap::Arg, default: String| {
                let help = a.get_help().map(|h| h.to_string()).unwrap_or_default();
                a.help(format!("{help} [default: {default}]"))
            };
            cmd.mut_subcommand(&name, |s| {
                s.mut_arg("repeat", |a| with(a, repeat))
                    .mut_arg("warmup", |a| with(a, d.warmup.to_string()))
                    .mut_arg("budget", |a| with(a, budget))
                    .mut_arg("level", |a| with(a, decide::percent(d.level)))
            })
        })
        // `syscalls --samples N`, as it was first spelt.
        .mut_subcommand("syscalls", |s| s.mut_arg("repeat", |a| a.alias("samples")))
}
