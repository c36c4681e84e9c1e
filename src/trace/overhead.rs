//! The cost of tracing: the program run untraced and traced in interleaved rounds, its output
//! discarded, and the ratio of wall times per round.

use super::TraceConfig;
use crate::Result;
use serde::{Deserialize, Serialize};
use std::time::Instant;

/// Wall times untraced and traced, per round, and their ratio.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
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
    /// Stopped by an interruption before every round was run (the rounds here are those
    /// complete).
    #[serde(default)]
    pub interrupted: bool,
}

/// Runs `cfg.command` `rounds` times untraced and traced (alternating which goes first), with
/// stdin, stdout and stderr on /dev/null. Once `interrupted` says so, the run under way is
/// stopped (asked with SIGINT, then killed) and only the complete rounds count.
pub fn overhead(
    cfg: &TraceConfig,
    rounds: usize,
    interrupted: &dyn Fn() -> bool,
) -> Result<Overhead> {
    let quiet = TraceConfig {
        quiet: true,
        xor: false,
        ..cfg.clone()
    };
    let mut untraced_s = Vec::new();
    let mut traced_s = Vec::new();
    let mut stopped = false;
    'rounds: for r in 0..rounds.max(1) {
        let (mut u, mut t) = (None, None);
        for traced in [r % 2 == 1, r % 2 == 0] {
            if interrupted() {
                stopped = true;
                break 'rounds;
            }
            if traced {
                let run = super::run(&quiet, interrupted)?;
                if run.interrupted {
                    stopped = true;
                    break 'rounds;
                }
                t = Some(run.wall_ns as f64 / 1e9);
            } else {
                let Some(program) = cfg.command.first() else {
                    return Err(crate::Error::usage(
                        "nothing to trace",
                        "give a command after --",
                    ));
                };
                let start = Instant::now();
                // Its exit status is the traced run's business; only the time counts here.
                let mut child = std::process::Command::new(program)
                    .args(&cfg.command[1..])
                    .stdin(std::process::Stdio::null())
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::null())
                    .spawn()
                    .map_err(|e| crate::Error::failed("cannot run the program", e.to_string()))?;
                if !wait_unless(&mut child, interrupted) {
                    stopped = true;
                    break 'rounds;
                }
                u = Some(start.elapsed().as_secs_f64());
            }
        }
        if let (Some(u), Some(t)) = (u, t) {
            untraced_s.push(u);
            traced_s.push(t);
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
        interrupted: stopped,
    })
}

/// Waits for `child` (blocking: a poll would add its period to the time measured); a signal
/// interrupts the wait (iolab's handlers do not restart it), and once `interrupted` says so the
/// child is asked to stop (SIGINT), killed a second later, reaped, and false returned.
fn wait_unless(child: &mut std::process::Child, interrupted: &dyn Fn() -> bool) -> bool {
    use rustix::process::{Pid, WaitOptions, waitpid};
    let Some(pid) = Pid::from_raw(child.id() as i32) else {
        return true;
    };
    loop {
        match waitpid(Some(pid), WaitOptions::empty()) {
            Err(rustix::io::Errno::INTR) if interrupted() => break,
            Err(rustix::io::Errno::INTR) => {}
            _ => return true,
        }
    }
    let _ = crate::sys::ptrace::kill(child.id() as i32, libc::SIGINT);
    let t = Instant::now();
    while t.elapsed() < std::time::Duration::from_secs(1) {
        if let Ok(Some(_)) = child.try_wait() {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let _ = child.kill();
    let _ = child.wait();
    false
}
