//! The cost of tracing: the program run untraced and traced in interleaved rounds, its output
//! discarded, and the ratio of wall times per round.

use super::TraceConfig;
use crate::Result;
use serde::{Deserialize, Serialize};
use std::time::Instant;

/// Wall times untraced and traced, per round, and their ratio.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Overhead {
    /// Untraced wall times, seconds.
    pub untraced_s: Vec<f64>,
    /// Traced wall times, seconds.
    pub traced_s: Vec<f64>,
    /// Median of the per-round ratios traced / untraced.
    pub ratio: f64,
    /// Their smallest.
    pub ratio_min: f64,
    /// Their largest.
    pub ratio_max: f64,
}

/// Runs `cfg.command` `rounds` times untraced and traced (alternating which goes first), with
/// stdin, stdout and stderr on /dev/null.
pub fn overhead(cfg: &TraceConfig, rounds: usize) -> Result<Overhead> {
    let quiet = TraceConfig {
        quiet: true,
        xor: false,
        ..cfg.clone()
    };
    let mut untraced_s = Vec::new();
    let mut traced_s = Vec::new();
    let never = || false;
    for r in 0..rounds.max(1) {
        for traced in [r % 2 == 1, r % 2 == 0] {
            if traced {
                let t = super::run(&quiet, &never)?;
                traced_s.push(t.wall_ns as f64 / 1e9);
            } else {
                let Some(program) = cfg.command.first() else {
                    return Err(crate::Error::usage(
                        "nothing to trace",
                        "give a command after --",
                    ));
                };
                let start = Instant::now();
                // Its exit status is the traced run's business; only the time counts here.
                std::process::Command::new(program)
                    .args(&cfg.command[1..])
                    .stdin(std::process::Stdio::null())
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::null())
                    .status()
                    .map_err(|e| crate::Error::failed("cannot run the program", e.to_string()))?;
                untraced_s.push(start.elapsed().as_secs_f64());
            }
        }
    }
    let mut ratios: Vec<f64> = traced_s
        .iter()
        .zip(&untraced_s)
        .map(|(t, u)| t / u.max(1e-9))
        .collect();
    ratios.sort_by(f64::total_cmp);
    let ratio = crate::measure::stats::median_of(&ratios);
    Ok(Overhead {
        ratio,
        ratio_min: ratios.first().copied().unwrap_or(f64::NAN),
        ratio_max: ratios.last().copied().unwrap_or(f64::NAN),
        untraced_s,
        traced_s,
    })
}
