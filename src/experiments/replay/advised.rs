//! The advice's changes measured: `iolab trace --advise` replays the traced program's reads with
//! each change a piece of advice names ([`crate::trace::advice::Remedy`]) against the accesses
//! as recorded, in the cache state it matters in, and puts the gain with its interval on the
//! advice.

use super::{ReplayConfig, ReplayMethod, ReplayResult, replay_trace};
use crate::engine::ReadMethod;
use crate::error::Result;
use crate::harness::{Observer, Rounds};
use crate::measure::decide::Decided;
use crate::trace::Trace;
use crate::trace::advice::{Gain, Recommendation, Remedy};

/// The replay method that runs a remedy.
pub fn method_of(r: Remedy) -> ReplayMethod {
    match r {
        Remedy::Merged => ReplayMethod::Merged(128 << 10),
        Remedy::Mmap => ReplayMethod::Method(ReadMethod::Mmap),
        Remedy::MmapRandom => ReplayMethod::Method(ReadMethod::MmapRandom),
        Remedy::MmapWillneed => ReplayMethod::Method(ReadMethod::MmapWillneed),
        Remedy::Uring => ReplayMethod::Method(ReadMethod::Uring),
        Remedy::Buffered => ReplayMethod::Method(ReadMethod::Pread),
    }
}

/// Replays `t`'s reads with every remedy `advice` names, within `budget`, and puts each gain on
/// its advice; None when no advice names one. `name` stands for the trace in messages.
pub fn measure(
    t: &Trace,
    name: &std::path::Path,
    advice: &mut [Recommendation],
    budget: std::time::Duration,
    obs: &dyn Observer,
) -> Result<Option<ReplayResult>> {
    let mut first = Vec::new();
    for a in advice.iter() {
        if let (Some(r), Some(c)) = (a.remedy, a.cache) {
            let pair = (method_of(r), c);
            if !first.contains(&pair) {
                first.push(pair);
            }
        }
    }
    if first.is_empty() {
        return Ok(None);
    }
    let mut caches: Vec<_> = first.iter().map(|p| p.1).collect();
    caches.dedup();
    let cfg = ReplayConfig {
        trace: name.to_path_buf(),
        methods: first.iter().map(|p| p.0).collect(),
        caches,
        rounds: Rounds::adaptive(budget),
        drop_all: false,
        keep_gaps: false,
        first: first.clone(),
    };
    let r = replay_trace(t, &cfg, obs)?;
    for a in advice.iter_mut() {
        let (Some(rem), Some(cache)) = (a.remedy, a.cache) else {
            continue;
        };
        let want = method_of(rem).name();
        let Some(v) = r
            .gains
            .iter()
            .find(|g| g.method == want && g.cache == cache)
            .and_then(|g| g.verdict)
        else {
            continue;
        };
        a.measured = Some(Gain {
            ratio: v.ratio,
            ci: v.ci,
            level: v.level,
            asked: v.asked,
            decided: match (v.decided, v.a_larger) {
                (Decided::Winner, Some(true)) => "faster",
                (Decided::Winner, _) => "slower",
                (Decided::Equivalent, _) => "within 5%",
                (Decided::Undecided, _) => "undecided",
            }
            .to_string(),
            rounds: v.rounds,
        });
    }
    Ok(Some(r))
}
