//! Which streams `pollute` runs, in order, and what a stream's run says once its worker ended.

use super::{PolluteConfig, PolluteMessage, PolluteTick, StreamJob, StreamRun, effect};
use crate::error::{Error, Result};
use std::path::Path;

/// The streams to run, in order: (method, writes, what the worker does).
pub(super) fn jobs(cfg: &PolluteConfig, dir: &Path) -> Vec<(String, bool, StreamJob)> {
    let mut jobs: Vec<(String, bool, StreamJob)> = Vec::new();
    for &m in &cfg.reads {
        let job = match m.engine() {
            Some(method) => StreamJob::Read {
                path: cfg.stream.clone(),
                method,
                bs: cfg.stream_bs,
            },
            None => StreamJob::Dontneed {
                path: cfg.stream.clone(),
                bs: cfg.stream_bs,
            },
        };
        jobs.push((m.name().into(), false, job));
    }
    for &m in &cfg.writes {
        let job = StreamJob::Write {
            dir: dir.to_path_buf(),
            method: m,
            bs: cfg.stream_bs,
            size: cfg.write_size,
        };
        jobs.push((m.name().into(), true, job));
    }
    jobs
}

/// A stream's run from its ticks and how its worker ended; an unsupported method is a warning
/// (once), a failure an error.
pub(super) fn stream_run(
    name: &str,
    writing: bool,
    pass: usize,
    ticks: Vec<PolluteTick>,
    end: PolluteMessage,
    warnings: &mut Vec<String>,
) -> Result<StreamRun> {
    let mut run = StreamRun {
        method: name.to_string(),
        writes: writing,
        pass,
        unsupported: None,
        effect: effect(&ticks),
        ticks,
        done: None,
    };
    match end {
        PolluteMessage::Done(d) => run.done = Some(d),
        PolluteMessage::Failed {
            error,
            unsupported: true,
        } => {
            if pass == 0 {
                warnings.push(format!("{name}: {error}"));
            }
            run.unsupported = Some(error);
        }
        PolluteMessage::Failed { error, .. } => {
            return Err(Error::failed("the stream failed", error).on(name));
        }
        PolluteMessage::Tick(_) => unreachable!("run_in_group ends on done or failed"),
    }
    if run.unsupported.is_none() && run.effect.is_none() {
        warnings.push(format!(
            "{name}: too few ticks to compare (a longer --seconds or a shorter --tick)"
        ));
    }
    Ok(run)
}
