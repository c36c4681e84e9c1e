//! Probing: candidates raced on slices of a part, within a budget of the part's time, and what the
//! probe cost.

use super::*;

/// A probe's cost: its wall time beyond reading its bytes at the winner's pace over the rest of
/// the part (all of its time when nothing was left to set a pace). The caller leaves out the
/// winner's own start, time and bytes alike.
pub(super) fn probe_cost(probe_secs: f64, probe_bytes: u64, rest_mib_s: f64) -> f64 {
    (probe_secs - secs_at_pace(probe_bytes, rest_mib_s)).max(0.0)
}

/// Seconds `bytes` take at `mib_s` (0 without a pace).
pub fn secs_at_pace(bytes: u64, mib_s: f64) -> f64 {
    if mib_s <= 0.0 {
        return 0.0;
    }
    bytes as f64 / (mib_s * (1 << 20) as f64)
}

/// Resident data: the two candidates (full plans, their first workers) race over `p` bytes at
/// `start`, taking blocks from one cursor, so both meet the same folios (the small folios at a
/// file's start, where readahead was still ramping up, made a mapped probe slice there 4x slower
/// than the mapping of the rest). Rated by bytes per CPU second of each thread. Nothing is read
/// twice.
/// With `keep_rule` (a profile still learning) the rule's candidate, the first, reads the rest
/// whoever wins, so the method does not flip with one race.
pub(super) fn race_warm(
    src: &Source,
    cands: &[ReadPlan],
    (start, p): (u64, u64),
    keep_rule: bool,
    probes: &mut Vec<Trial>,
) -> Result<Raced> {
    let [a, b] = cands else {
        return Err(Error::failed("read failed", "a race needs two candidates"));
    };
    let mut pa = prepare_plan(src, a)?;
    // The challenger races on one thread: its other threads' buffers are made only if it wins.
    let b_one = ReadPlan { threads: 1, ..*b };
    let mut pb = prepare_plan(src, &b_one)?;
    // Blocks both engines take whole (a copying engine's buffer holds its own block size).
    let w = Workload {
        threads: 2,
        bs: a.bs.min(b.bs),
        ..workload(a, src.size)
    };
    let parts = w.shared_parts(start, start + p);
    let mut moved = engine::Moved::default();
    let rates = match parts.as_slice() {
        [x, y] => {
            let [ra, rb] = engine::race(&mut pa, x, &mut pb, y)?;
            moved.add(ra.0);
            moved.add(rb.0);
            [ra, rb]
        }
        _ => return Err(Error::failed("read failed", "no room to race")),
    };
    let rated: Vec<Trial> = [a, b]
        .iter()
        .zip(rates.iter())
        .map(|(plan, (m, cpu))| Trial {
            plan: ReadPlan {
                threads: 1,
                ..**plan
            },
            warm: true,
            offset: start,
            bytes: m.bytes,
            secs: *cpu,
            mib_s: crate::size::mib_per_s(m.bytes, cpu.max(1e-9)),
            raced: true,
        })
        .collect();
    // A side that got only a few blocks (its thread started late) cannot be rated: the first
    // candidate (the rule's choice) keeps the part.
    let few = 4 * w.bs;
    let conclusive = rated.iter().all(|r| r.bytes >= few);
    let faster = usize::from(conclusive && rated[1].mib_s > rated[0].mib_s);
    let best = if keep_rule { 0 } else { faster };
    let winner = &rated[faster];
    let verdict = if conclusive {
        format!("{} faster", winner.plan.method.name())
    } else {
        format!(
            "inconclusive (a side read under {}), {} by the rule",
            crate::size::format_size(few),
            winner.plan.method.name()
        )
    };
    let why = format!(
        "raced {} {:.0} MiB/s against {} {:.0} MiB/s (per CPU second, block by block over {} at {}): {verdict}",
        rated[0].plan.label(),
        rated[0].mib_s,
        rated[1].plan.label(),
        rated[1].mib_s,
        crate::size::format_size(p),
        crate::size::format_size(start),
    );
    let rates = conclusive.then(|| [rated[0].mib_s, rated[1].mib_s]);
    probes.extend(rated);
    let (plan, prepared) = match best {
        0 => (*a, pa),
        _ if b.threads > 1 => (*b, prepare_plan(src, b)?),
        _ => (*b, pb),
    };
    Ok(Raced {
        plan,
        why,
        prepared,
        moved,
        rates,
    })
}

/// What a warm race did: the plan that reads the rest (prepared), why, what the race read, and
/// the two sides' rates (`[first, second]` candidate, MiB per CPU second) when it was conclusive.
pub(super) struct Raced {
    pub(super) plan: ReadPlan,
    pub(super) why: String,
    pub(super) prepared: Prepared,
    pub(super) moved: engine::Moved,
    pub(super) rates: Option<[f64; 2]>,
}

/// What a later candidate may cost: the best rate so far, and the probe's budget left.
#[derive(Debug, Clone, Copy)]
pub(super) struct Budget {
    /// The best rate so far, MiB/s.
    pub(super) beat: f64,
    /// Seconds this candidate may take beyond reading its bytes at `beat`.
    pub(super) secs: f64,
}

/// The whole probe may cost at most this share of the part's expected time (at the first
/// candidate's rate): 0.5%, a quarter of the 2% asked for (the first block of a later candidate
/// is read whatever it costs, so the budget must leave room for it), still lets a candidate at
/// half the first one's rate read 10 MiB of a 2 GiB part.
pub const PROBE_BUDGET: f64 = 0.005;

/// Whether reading on to `next` bytes, at the pace of `read` bytes in `secs`, would cost more
/// than `budget` seconds beyond reading them at `beat` bytes per second.
pub(super) fn over_budget(secs: f64, read: u64, next: u64, beat: f64, budget: f64) -> bool {
    let pace = secs / read.max(1) as f64;
    next as f64 * (pace - 1.0 / beat) > budget
}

/// A later candidate's steps: one block, so its first step, the least it costs, is a single
/// read (blocks that do not divide 4 MiB: one block, at least 4 MiB, as before). Blocks that
/// divide 4 MiB step onto the slice's half, which starts on a 4 MiB boundary.
pub(super) fn probe_step(bs: u64) -> u64 {
    if bs > 0 && ALIGN.is_multiple_of(bs) {
        bs
    } else {
        bs.max(ALIGN)
    }
}

/// What one candidate's probe did.
pub(super) struct Tried {
    /// Its workers, ready to read the rest if it wins.
    pub(super) prepared: Prepared,
    /// What it read.
    pub(super) moved: engine::Moved,
    /// Where its reading stopped.
    pub(super) end: u64,
    /// Its whole time, preparation included.
    pub(super) secs: f64,
    /// Its rate, MiB/s.
    pub(super) mib_s: f64,
    /// Its start, seconds and bytes: for the first candidate, its setup and the first half of its
    /// slice, what it pays at the start of its stream, probed or not; nothing for a later
    /// candidate, whose slice lies inside the part.
    pub(super) start: (f64, u64),
}

/// Tries `plan` on `p` bytes at `at`: the first half starts the pipeline (readahead windows grow,
/// the queue fills); the rate is the second half's, as the rest of the part would run. A later
/// candidate (with a `budget`) reads its slice in steps and stops before a step that, at its pace
/// so far, would take it past the budget: it is then too slow to win at an affordable price, and
/// reading on would only add to the probe's cost.
pub(super) fn probe(
    src: &Source,
    plan: &ReadPlan,
    at: u64,
    p: u64,
    budget: Option<Budget>,
) -> Result<Tried> {
    let t = Instant::now();
    let mut prepared = prepare_plan(src, plan)?;
    let half = at + (p / 2) / ALIGN * ALIGN;
    let Some(budget) = budget else {
        // The first half is rated from after the preparation (buffers, ring): that is paid once
        // whoever wins, and counted in `secs`, not in how fast this candidate reads.
        let mut moved = read_ranges(&mut prepared, plan, src.size, &[(at, half)])?;
        let t2 = Instant::now();
        moved.add(read_ranges(
            &mut prepared,
            plan,
            src.size,
            &[(half, at + p)],
        )?);
        let rate = crate::size::mib_per_s(at + p - half, t2.elapsed().as_secs_f64());
        return Ok(Tried {
            prepared,
            moved,
            end: at + p,
            secs: t.elapsed().as_secs_f64(),
            mib_s: rate,
            start: ((t2 - t).as_secs_f64(), half - at),
        });
    };
    let step = probe_step(plan.bs);
    let beat = budget.beat * (1 << 20) as f64;
    let mut moved = engine::Moved::default();
    let mut end = at;
    let mut t2 = None;
    while end < at + p {
        let next = (end + step).min(at + p);
        let secs = t.elapsed().as_secs_f64();
        if end > at && over_budget(secs, end - at, next - at, beat, budget.secs) {
            return Ok(Tried {
                prepared,
                moved,
                end,
                secs,
                mib_s: crate::size::mib_per_s(end - at, secs),
                start: (0.0, 0),
            });
        }
        if end == half {
            t2 = Some(Instant::now());
        }
        moved.add(read_ranges(&mut prepared, plan, src.size, &[(end, next)])?);
        end = next;
    }
    let steady = t2.map_or(t.elapsed(), |t2| t2.elapsed()).as_secs_f64();
    Ok(Tried {
        prepared,
        moved,
        end,
        secs: t.elapsed().as_secs_f64(),
        mib_s: crate::size::mib_per_s(at + p - half, steady),
        start: (0.0, 0),
    })
}

/// What probing a part chose: the plan, why, the slices the probes read (holes in the rest), the
/// plan's prepared reader, its own start (seconds, bytes) and what the probes moved.
pub(super) type Probed = (
    ReadPlan,
    String,
    Vec<(u64, u64)>,
    Prepared,
    (f64, u64),
    engine::Moved,
);

/// What probing a cold part chose, and the two candidates' rates when both were tried
/// (`[first, second]`, MiB/s).
type ColdRace = (Probed, Option<[f64; 2]>);

/// Probes each candidate in turn on slices of a cold part from `start`, each within a budget
/// (a share of the part's `bytes` at the first candidate's rate, less what the later ones cost
/// beyond the best rate); a candidate this file or kernel cannot use is left out and said. With
/// `keep_rule` (a profile still learning) the first candidate, if it could read, reads the rest.
pub(super) fn race_cold(
    src: &Source,
    cands: &[ReadPlan],
    (start, p): (u64, u64),
    bytes: u64,
    keep_rule: bool,
    probes: &mut Vec<Trial>,
) -> Result<ColdRace> {
    let mut moved = engine::Moved::default();
    let mut tried = Vec::new();
    let mut skipped = Vec::new();
    let first_probe = probes.len();
    for (k, plan) in cands.iter().enumerate() {
        let at = start + k as u64 * (p + PROBE_GAP);
        // The budget: a share of the part's time at the first candidate's rate, less
        // what the candidates after it have cost so far.
        let budget = probes[first_probe..]
            .iter()
            .map(|pr| pr.mib_s)
            .reduce(f64::max)
            .map(|beat| {
                let rate = beat * (1 << 20) as f64;
                let spent: f64 = probes[first_probe + 1..]
                    .iter()
                    .map(|pr| (pr.secs - pr.bytes as f64 / rate).max(0.0))
                    .sum();
                let first = probes[first_probe].mib_s * (1 << 20) as f64;
                Budget {
                    beat,
                    secs: PROBE_BUDGET * bytes as f64 / first - spent,
                }
            });
        match probe(src, plan, at, p, budget) {
            Ok(t) => {
                moved.add(t.moved);
                probes.push(Trial {
                    plan: *plan,
                    warm: false,
                    offset: at,
                    bytes: t.end - at,
                    secs: t.secs,
                    mib_s: t.mib_s,
                    raced: false,
                });
                tried.push((t.prepared, (at, t.end), k, t.start));
            }
            // A candidate this file or kernel cannot use (O_DIRECT on tmpfs, no
            // io_uring) is left out; its slice is read by the winner.
            Err(e) => skipped.push(format!("{} skipped ({})", plan.method.name(), e.cause)),
        }
    }
    if tried.is_empty() {
        return Err(Error::failed(
            "read failed",
            format!("no method could read it: {}", skipped.join("; ")),
        )
        .at(&src.path));
    }
    let mine = &probes[probes.len() - tried.len()..];
    let faster = (0..mine.len())
        .max_by(|&a, &b| mine[a].mib_s.total_cmp(&mine[b].mib_s))
        .unwrap_or(0);
    let rates = (tried.len() == 2).then(|| [mine[0].mib_s, mine[1].mib_s]);
    let best = match tried.iter().position(|t| t.2 == 0) {
        Some(first) if keep_rule => first,
        _ => faster,
    };
    let mut why = format!(
        "probed {}: {} fastest",
        mine.iter()
            .map(|pr| format!("{} {:.0} MiB/s", pr.plan.label(), pr.mib_s))
            .collect::<Vec<_>>()
            .join(", "),
        mine[faster].plan.method.name()
    );
    for s in &skipped {
        why.push_str("; ");
        why.push_str(s);
    }
    let mut holes: Vec<(u64, u64)> = tried.iter().map(|t| t.1).collect();
    holes.sort_unstable();
    let (prepared, _, k, start) = tried.swap_remove(best);
    Ok(((cands[k], why, holes, prepared, start, moved), rates))
}
