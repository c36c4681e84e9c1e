//! The file in parts, resident or not, and how each part is read: its plan chosen (by a rule or a
//! probe) and run over its ranges.

use super::profile::{MachineProfile, ProfileSays};
use super::*;

/// Contiguous runs of the file that are resident (`true`) or not, in [`CHUNK`]s.
pub(super) fn segments(src: &Source, resident: f64) -> Vec<(u64, u64, bool)> {
    let size = src.size;
    let whole = |warm| vec![(0, size, warm)];
    if resident >= 1.0 || resident <= 0.0 {
        return whole(resident >= WARM);
    }
    let page = crate::sys::page_size() as u64;
    let mut out: Vec<(u64, u64, bool)> = Vec::new();
    let mut off = 0;
    while off < size {
        let len = CHUNK.min(size - off);
        let Some((cached, _)) = crate::sys::map::cachestat(&src.file, off, len) else {
            return whole(resident >= WARM);
        };
        let warm = cached as f64 >= WARM * len.div_ceil(page) as f64;
        match out.last_mut() {
            Some(last) if last.2 == warm => last.1 = off + len,
            _ => out.push((off, off + len, warm)),
        }
        off += len;
    }
    out
}

/// `ranges` minus the (sorted, disjoint) `holes`.
pub(super) fn minus(ranges: &[(u64, u64)], holes: &[(u64, u64)]) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    for &(mut s, e) in ranges {
        for &(hs, he) in holes {
            if he <= s || hs >= e {
                continue;
            }
            if hs > s {
                out.push((s, hs));
            }
            s = s.max(he);
        }
        if s < e {
            out.push((s, e));
        }
    }
    out
}

pub(super) fn workload(plan: &ReadPlan, size: u64) -> Workload {
    Workload {
        bs: plan.bs,
        len: size,
        pattern: Pattern::Seq,
        seed: 0,
        threads: plan.threads,
    }
}

/// Reads `ranges` with `prepared` (made for `plan`), in one pass where the blocks allow (else
/// range by range), each block handed to whichever thread is free.
pub(super) fn read_ranges(
    prepared: &mut Prepared,
    plan: &ReadPlan,
    size: u64,
    ranges: &[(u64, u64)],
) -> Result<engine::Moved> {
    let w = workload(plan, size);
    // Several ranges (what the probe slices left) in one pass where the blocks allow: a pass per
    // range spawned the threads again and let an O_DIRECT queue run dry at each range's end.
    if ranges.len() > 1
        && let Some(parts) = w.shared_ranges(ranges)
    {
        return prepared.run_over(&parts);
    }
    let mut moved = engine::Moved::default();
    for &(s, e) in ranges {
        moved.add(prepared.run_over(&w.shared_parts(s, e))?);
    }
    Ok(moved)
}

/// Reads one part (all warm or all cold runs of the file): probes the candidates when it is large
/// enough and has room for their slices, else uses the rule; then reads the rest with the winner.
pub(super) fn read_part(
    src: &Source,
    probe_from: u64,
    warm: bool,
    ranges: &[(u64, u64)],
    cores: usize,
    probes: &mut Vec<Trial>,
    learn: Option<&mut MachineProfile>,
) -> Result<(engine::Moved, Use)> {
    let bytes: u64 = ranges.iter().map(|(s, e)| e - s).sum();
    let cands = candidates(warm, bytes, cores);
    let p = probe_len(warm, bytes);
    let need = if warm {
        p
    } else {
        cands.len() as u64 * (p + PROBE_GAP)
    };
    // The probe slices go into the largest run, if it has room; they start on 4 MiB boundaries.
    let room = ranges
        .iter()
        .map(|&(s, e)| (s.next_multiple_of(ALIGN), e))
        .filter(|(s, e)| e > s && e - s >= need)
        .max_by_key(|(s, e)| e - s);
    let mut moved = engine::Moved::default();
    let probe_start = Instant::now();
    let (plan, why, holes, mut prepared, start) = match room {
        Some(run) if bytes >= probe_from => {
            let mut learn = learn;
            if let Some((plan, why)) = decided(&cands, learn.as_deref_mut()) {
                // The machine's profile has decided: no probe.
                (plan, why, Vec::new(), prepare_plan(src, &plan)?, (0.0, 0))
            } else {
                let (plan, why, holes, prepared, start, m) = if warm {
                    warm_probe(src, &cands, run, p, learn, probes)?
                } else {
                    cold_probe(src, &cands, (run.0, p), bytes, learn, probes)?
                };
                moved.add(m);
                (plan, why, holes, prepared, start)
            }
        }
        _ => {
            let plan = mmap_plan(bytes, cores);
            let why = if bytes < probe_from {
                format!(
                    "rule: under {} to probe, mmap",
                    crate::size::format_size(probe_from)
                )
            } else {
                "rule: no run long enough for the probe slices, mmap".to_string()
            };
            (plan, why, Vec::new(), prepare_plan(src, &plan)?, (0.0, 0))
        }
    };
    // The probe's wall time (its slices and setup, and the winner's setup for the rest), less the
    // winner's own start, against what its other bytes would have taken at the pace the winner
    // keeps over the rest: what probing cost this part beyond reading it with the winner from
    // the start.
    let probed = !holes.is_empty();
    let probe_secs = if probed {
        probe_start.elapsed().as_secs_f64()
    } else {
        0.0
    };
    let probe_bytes = if probed { moved.bytes } else { 0 };
    let (start_secs, start_bytes) = if probed { start } else { (0.0, 0) };
    let rest_start = Instant::now();
    let rest = read_ranges(&mut prepared, &plan, src.size, &minus(ranges, &holes))?;
    let rest_secs = rest_start.elapsed().as_secs_f64();
    let rest_mib_s = if rest.bytes > 0 && rest_secs > 0.0 {
        crate::size::mib_per_s(rest.bytes, rest_secs)
    } else {
        0.0
    };
    moved.add(rest);
    let used = Use {
        warm,
        plan,
        bytes,
        why,
        probe_secs,
        probe_bytes,
        rest_mib_s,
        start_secs,
        start_bytes,
        profile: None,
        probe_cost_secs: probe_cost(
            probe_secs - start_secs,
            probe_bytes.saturating_sub(start_bytes),
            rest_mib_s,
        ),
    };
    Ok((moved, used))
}

/// A resident part with room (`run`) for the race's slice of `p` bytes, raced; the race kept in
/// the profile while it learns (the rule's mmap then reads the rest, whoever won).
fn warm_probe(
    src: &Source,
    cands: &[ReadPlan],
    (s, e): (u64, u64),
    p: u64,
    learn: Option<&mut MachineProfile>,
    probes: &mut Vec<Trial>,
) -> Result<Probed> {
    // In the middle of the run: a file's first megabytes sit in the small folios of readahead's
    // first windows and would speak for the copy, not for the file.
    let start = (s + (e - s - p) / 2) / ALIGN * ALIGN;
    let r = race_warm(src, cands, (start, p), learn.is_some(), probes)?;
    let why = learning(learn, r.why, r.rates);
    let holes = vec![(start, start + p)];
    Ok((r.plan, why, holes, r.prepared, (0.0, 0), r.moved))
}

/// The plan the machine's profile decided for a part, and why, when it has (the rule's candidate,
/// the first, when it settled); `None` while it learns (or without a profile): then the part is
/// probed.
fn decided(cands: &[ReadPlan], learn: Option<&mut MachineProfile>) -> Option<(ReadPlan, String)> {
    let l = learn?;
    let says = l.stage();
    let m = match says {
        ProfileSays::Decided(m, _) => m,
        ProfileSays::Settled(_) => cands.first()?.method,
        ProfileSays::Learning { .. } => return None,
    };
    let plan = *cands.iter().find(|c| c.method == m).or(cands.first())?;
    Some((plan, l.words(&says)))
}

/// A non-resident part with room for the probes' slices from `start`, probed; the probe kept in
/// the profile while it learns (the rule's O_DIRECT then reads the rest, whoever was faster). As
/// [`race_cold`] gives it, without the rates.
fn cold_probe(
    src: &Source,
    cands: &[ReadPlan],
    (start, p): (u64, u64),
    bytes: u64,
    learn: Option<&mut MachineProfile>,
    probes: &mut Vec<Trial>,
) -> Result<Probed> {
    let keep_rule = learn.is_some();
    let ((plan, mut why, holes, prepared, start, m), rates) =
        race_cold(src, cands, (start, p), bytes, keep_rule, probes)?;
    why = learning(learn, why, rates);
    Ok((plan, why, holes, prepared, start, m))
}

/// A probe's `why` with what the learning profile says, and the probe's two rates noted to be kept
/// in it (the why alone without a profile).
fn learning(learn: Option<&mut MachineProfile>, why: String, rates: Option<[f64; 2]>) -> String {
    let Some(l) = learn else {
        return why;
    };
    let says = l.stage();
    if let Some(rates) = rates {
        l.keep(rates);
    }
    format!("{why}; {}", l.words(&says))
}
