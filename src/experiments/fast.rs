//! `iolab fast FILE`: the whole file's XOR as fast as this machine allows. The method is chosen
//! (`auto`) from the file's residency, its size and the cores; the rule and the measurements
//! behind it are in docs/methodology.md. Timed from open to close, choice included.

use crate::cache;
use crate::engine::{self, EngineOptions, Prepared, ReadMethod, Source};
use crate::error::{Error, Result};
use crate::measure::{Counters, measure};
use crate::workload::{Pattern, Workload};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::Instant;

/// What `iolab fast` may be told.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FastConfig {
    /// The file to read whole.
    pub path: PathBuf,
    /// Forced method; `None` is auto.
    pub method: Option<ReadMethod>,
    /// Forced thread count; `None` is auto.
    pub threads: Option<usize>,
    /// Forced block size; `None` is auto.
    pub bs: Option<u64>,
    /// Forced io_uring depth; `None` is auto.
    pub depth: Option<u32>,
    /// Parts (warm or cold) at least this large are probed ([`PROBE_FROM`] unless a test wants
    /// the probe on a small file).
    #[serde(default = "probe_from_default")]
    pub probe_from: u64,
}

fn probe_from_default() -> u64 {
    PROBE_FROM
}

impl FastConfig {
    /// Auto for everything.
    pub fn new(path: PathBuf) -> FastConfig {
        FastConfig {
            path,
            method: None,
            threads: None,
            bs: None,
            depth: None,
            probe_from: PROBE_FROM,
        }
    }
}

/// A way to read: method, threads, block size, depth.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// The method.
    pub method: ReadMethod,
    /// Threads.
    pub threads: usize,
    /// Block size.
    pub bs: u64,
    /// io_uring depth.
    pub depth: u32,
}

impl Plan {
    fn label(&self) -> String {
        let mut s = format!(
            "{} x{} bs {}",
            self.method.name(),
            self.threads,
            crate::size::format_size(self.bs)
        );
        if self.method.engine().info().uses_depth {
            s.push_str(&format!(" depth {}", self.depth));
        }
        s
    }
}

/// One candidate tried on a slice of the file of its own (its bytes count towards the XOR).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Probe {
    /// What was tried.
    pub plan: Plan,
    /// Whether the slice was resident (the warm choice) or not (the cold one).
    pub warm: bool,
    /// Where the slice starts.
    pub offset: u64,
    /// Its length.
    pub bytes: u64,
    /// How long reading it took, preparation included.
    pub secs: f64,
    /// Its rate over the slice's second half (the first half starts the pipeline); for a race,
    /// its bytes per CPU second.
    pub mib_s: f64,
    /// Raced: the candidates read one slice side by side, block by block, each taking the next
    /// free block (`bytes` is what this one read, `secs` its thread's CPU time).
    #[serde(default)]
    pub raced: bool,
}

/// How the resident (warm) or the non-resident (cold) part of the file was read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Use {
    /// Resident part or not.
    pub warm: bool,
    /// The plan that read it (after the probe).
    pub plan: Plan,
    /// Bytes of the file in this part (probe slices included).
    pub bytes: u64,
    /// Why this plan.
    pub why: String,
    /// Wall time of this part's probe: the candidates' slices with their setup, and the
    /// winner's setup for the rest (0 without a probe).
    #[serde(default)]
    pub probe_secs: f64,
    /// Bytes the probe read (they count towards the XOR, and are not read again).
    #[serde(default)]
    pub probe_bytes: u64,
    /// The chosen plan's pace over the rest of the part, MiB/s (0 when the probe left nothing).
    #[serde(default)]
    pub rest_mib_s: f64,
    /// Of `probe_secs`, the winner's own start when it was the first candidate probed on a
    /// non-resident part: its setup and the first half of its slice, where the part's stream
    /// begins (queue filling, buffers faulted in). A run without a probe pays it too (0 when the
    /// winner had no such start in the probe).
    #[serde(default)]
    pub start_secs: f64,
    /// Bytes read in `start_secs`.
    #[serde(default)]
    pub start_bytes: u64,
    /// What the probe cost: `probe_secs` less `start_secs`, beyond reading the other
    /// `probe_bytes - start_bytes` at `rest_mib_s`.
    #[serde(default)]
    pub probe_cost_secs: f64,
}

/// What auto chose and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Choice {
    /// The method (of the part with the most bytes).
    pub method: ReadMethod,
    /// Threads.
    pub threads: usize,
    /// Block size.
    pub bs: u64,
    /// io_uring depth.
    pub depth: u32,
    /// Why, in words.
    pub reason: String,
    /// Each part (warm, cold) and its plan; one entry when the file is all one state.
    #[serde(default)]
    pub uses: Vec<Use>,
    /// The candidates tried, each on its own slice.
    #[serde(default)]
    pub probes: Vec<Probe>,
    /// Time the probes cost: each part's probe wall time beyond reading the bytes it read at the
    /// pace the chosen plan kept over the rest of the part (0 without a probe).
    #[serde(default)]
    pub probe_cost_secs: f64,
}

/// What `iolab fast` did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FastResult {
    /// What was chosen and why.
    pub choice: Choice,
    /// Resident fraction of the file when it was opened.
    pub resident: f64,
    /// Bytes read (the whole file).
    pub bytes: u64,
    /// XOR of the bytes as little-endian u32 words (see [`crate::xor`]).
    #[serde(with = "crate::xor::hex")]
    pub xor: u32,
    /// Counters from open to close.
    pub counters: Counters,
    /// Throughput, whole process from open to close.
    #[serde(default)]
    pub mib_s: f64,
}

impl FastResult {
    /// Its throughput, whole process from open to close.
    pub fn mib_per_s(&self) -> f64 {
        crate::size::mib_per_s(self.bytes, self.counters.wall.as_secs_f64())
    }
}

/// `fast` repeated: every run, and their throughput.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FastSeries {
    /// Every run, in order.
    pub runs: Vec<FastResult>,
    /// MiB/s over the runs.
    pub mib_s: crate::measure::stats::Summary,
}

impl FastSeries {
    /// The series of `runs`.
    pub fn of(runs: Vec<FastResult>) -> FastSeries {
        let rates: Vec<f64> = runs.iter().map(FastResult::mib_per_s).collect();
        FastSeries {
            mib_s: crate::measure::stats::summarize(&rates),
            runs,
        }
    }
}

/// Files below this are read with one pread: mapping or threads cost more than they save.
pub const SMALL: u64 = 1 << 20;
/// Each extra thread needs at least this much of the file to pay for itself.
pub const PER_THREAD: u64 = 32 << 20;
/// Resident fraction from which a range counts as warm.
pub const WARM: f64 = 0.9;
/// Residency is mapped in chunks of this size (a multiple of every probed block size).
pub const CHUNK: u64 = 8 << 20;
/// A part (warm or cold) at least this large is probed rather than read by the rule.
pub const PROBE_FROM: u64 = 1 << 30;
/// Probe slices are apart by this much, so one candidate's readahead does not serve the next.
pub const PROBE_GAP: u64 = 16 << 20;
const ALIGN: u64 = 4 << 20;

/// The auto rule without a probe (see docs/methodology.md): one pread for a small file, else
/// mmap with one thread per [`PER_THREAD`] up to the cores.
pub fn choose(size: u64, resident: f64, cores: usize) -> Choice {
    if size < SMALL {
        let plan = Plan {
            method: ReadMethod::Pread,
            threads: 1,
            bs: SMALL,
            depth: 1,
        };
        let why = format!(
            "small file (< {}): one pread",
            crate::size::format_size(SMALL)
        );
        return choice_of(plan, why, Vec::new(), Vec::new(), 0.0);
    }
    let plan = mmap_plan(size, cores);
    let state = if resident >= WARM { "warm" } else { "cold" };
    let why = format!(
        "{state} ({:.0}% resident): mmap, XOR in place, {} thread(s) each faulting its own part",
        resident * 100.0,
        plan.threads
    );
    choice_of(plan, why, Vec::new(), Vec::new(), 0.0)
}

fn choice_of(plan: Plan, reason: String, uses: Vec<Use>, probes: Vec<Probe>, cost: f64) -> Choice {
    Choice {
        method: plan.method,
        threads: plan.threads,
        bs: plan.bs,
        depth: plan.depth,
        reason,
        uses,
        probes,
        probe_cost_secs: cost,
    }
}

fn threads_for(bytes: u64, cores: usize) -> usize {
    (bytes / PER_THREAD).clamp(1, cores.max(1) as u64) as usize
}

fn mmap_plan(bytes: u64, cores: usize) -> Plan {
    Plan {
        method: ReadMethod::Mmap,
        threads: threads_for(bytes, cores),
        bs: 4 << 20,
        depth: 1,
    }
}

/// The candidates for a part of `bytes` bytes, in the order they are tried (each probed with the
/// plan that reads the rest if it wins): resident data mapped or copied by pread (small
/// page-cache folios can make the copy win; the two race on one thread each); data on the
/// device read with O_DIRECT through io_uring in 1 MiB requests 8 deep (tried first, the usual
/// winner on this project's virtual disk once its buffers sit on huge pages), then buffered
/// preads behind the kernel's readahead (stopped early when its pace would overrun the probe's
/// budget).
pub fn candidates(warm: bool, bytes: u64, cores: usize) -> Vec<Plan> {
    let threads = threads_for(bytes, cores);
    if warm {
        let mmap = mmap_plan(bytes, cores);
        let pread = Plan {
            method: ReadMethod::Pread,
            threads,
            bs: 1 << 20,
            depth: 1,
        };
        vec![mmap, pread]
    } else {
        // 1 MiB requests, 8 in flight: on this VM the device gives its best with 8 MiB in
        // flight (fio too: 1M at depth 8 4562 MiB/s against 3866 at depth 32, medians of 8
        // rounds), and every buffer slot's first touch costs about 1.4 ms per MiB here, so a
        // larger queue (4 MiB x 8, 32 MiB) paid 45-60 ms of faults before its steady state.
        let direct = Plan {
            method: ReadMethod::UringDirect,
            threads: 1,
            bs: 1 << 20,
            depth: 8,
        };
        // The buffered challenger: one thread of 1 MiB preads behind the kernel's readahead. It
        // is stepped one block at a time, so its least cost is one read (1.7-2.7 ms for the
        // first MiB here); the mapping it replaced paid its setup and a 4 MiB block first (7-10
        // ms, 2-2.5% of a cold 2 GiB run).
        let buffered = Plan {
            method: ReadMethod::Pread,
            threads: 1,
            bs: 1 << 20,
            depth: 1,
        };
        vec![direct, buffered]
    }
}

/// The probe slice of each candidate for a part of `bytes` (when cold), or the one slice both
/// race over (when warm): 1/64 of it, at least 32 MiB, in whole 4 MiB units, so each half starts
/// on a block. (The warm race took 1/16 while its threads could start on one CPU; started apart,
/// 1/64 rates them as well and costs a quarter as much.)
pub fn probe_len(_warm: bool, bytes: u64) -> u64 {
    ((bytes / 64).max(32 << 20) / ALIGN) * ALIGN
}

/// Contiguous runs of the file that are resident (`true`) or not, in [`CHUNK`]s.
fn segments(src: &Source, resident: f64) -> Vec<(u64, u64, bool)> {
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
fn minus(ranges: &[(u64, u64)], holes: &[(u64, u64)]) -> Vec<(u64, u64)> {
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

fn workload(plan: &Plan, size: u64) -> Workload {
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
fn read_ranges(
    prepared: &mut Prepared,
    plan: &Plan,
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
fn read_part(
    src: &Source,
    probe_from: u64,
    warm: bool,
    ranges: &[(u64, u64)],
    cores: usize,
    probes: &mut Vec<Probe>,
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
        Some((s, e)) if bytes >= probe_from && warm => {
            // In the middle of the run: a file's first megabytes sit in the small folios of
            // readahead's first windows and would speak for the copy, not for the file.
            let start = (s + (e - s - p) / 2) / ALIGN * ALIGN;
            let (plan, why, prepared, m) = race_warm(src, &cands, start, p, probes)?;
            moved.add(m);
            (plan, why, vec![(start, start + p)], prepared, (0.0, 0))
        }
        Some((start, _)) if bytes >= probe_from => {
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
                        probes.push(Probe {
                            plan: *plan,
                            warm,
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
            let best = (0..mine.len())
                .max_by(|&a, &b| mine[a].mib_s.total_cmp(&mine[b].mib_s))
                .unwrap_or(0);
            let mut why = format!(
                "probed {}: {} fastest",
                mine.iter()
                    .map(|pr| format!("{} {:.0} MiB/s", pr.plan.label(), pr.mib_s))
                    .collect::<Vec<_>>()
                    .join(", "),
                mine[best].plan.method.name()
            );
            for s in &skipped {
                why.push_str("; ");
                why.push_str(s);
            }
            let mut holes: Vec<(u64, u64)> = tried.iter().map(|t| t.1).collect();
            holes.sort_unstable();
            let (prepared, _, k, start) = tried.swap_remove(best);
            (cands[k], why, holes, prepared, start)
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
        probe_cost_secs: probe_cost(
            probe_secs - start_secs,
            probe_bytes.saturating_sub(start_bytes),
            rest_mib_s,
        ),
    };
    Ok((moved, used))
}

/// A probe's cost: its wall time beyond reading its bytes at the winner's pace over the rest of
/// the part (all of its time when nothing was left to set a pace). The caller leaves out the
/// winner's own start, time and bytes alike.
fn probe_cost(probe_secs: f64, probe_bytes: u64, rest_mib_s: f64) -> f64 {
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
fn race_warm(
    src: &Source,
    cands: &[Plan],
    start: u64,
    p: u64,
    probes: &mut Vec<Probe>,
) -> Result<(Plan, String, Prepared, engine::Moved)> {
    let [a, b] = cands else {
        return Err(Error::failed("read failed", "a race needs two candidates"));
    };
    let mut pa = prepare_plan(src, a)?;
    // The challenger races on one thread: its other threads' buffers are made only if it wins.
    let b_one = Plan { threads: 1, ..*b };
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
    let rated: Vec<Probe> = [a, b]
        .iter()
        .zip(rates.iter())
        .map(|(plan, (m, cpu))| Probe {
            plan: Plan {
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
    let best = usize::from(conclusive && rated[1].mib_s > rated[0].mib_s);
    let winner = &rated[best];
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
    probes.extend(rated);
    let (plan, prepared) = match best {
        0 => (*a, pa),
        _ if b.threads > 1 => (*b, prepare_plan(src, b)?),
        _ => (*b, pb),
    };
    Ok((plan, why, prepared, moved))
}

/// What a later candidate may cost: the best rate so far, and the probe's budget left.
#[derive(Debug, Clone, Copy)]
struct Budget {
    /// The best rate so far, MiB/s.
    beat: f64,
    /// Seconds this candidate may take beyond reading its bytes at `beat`.
    secs: f64,
}

/// The whole probe may cost at most this share of the part's expected time (at the first
/// candidate's rate): 0.5%, a quarter of the 2% asked for (the first block of a later candidate
/// is read whatever it costs, so the budget must leave room for it), still lets a candidate at
/// half the first one's rate read 10 MiB of a 2 GiB part.
pub const PROBE_BUDGET: f64 = 0.005;

/// Whether reading on to `next` bytes, at the pace of `read` bytes in `secs`, would cost more
/// than `budget` seconds beyond reading them at `beat` bytes per second.
fn over_budget(secs: f64, read: u64, next: u64, beat: f64, budget: f64) -> bool {
    let pace = secs / read.max(1) as f64;
    next as f64 * (pace - 1.0 / beat) > budget
}

/// A later candidate's steps: one block, so its first step, the least it costs, is a single
/// read (blocks that do not divide 4 MiB: one block, at least 4 MiB, as before). Blocks that
/// divide 4 MiB step onto the slice's half, which starts on a 4 MiB boundary.
fn probe_step(bs: u64) -> u64 {
    if bs > 0 && ALIGN.is_multiple_of(bs) {
        bs
    } else {
        bs.max(ALIGN)
    }
}

/// What one candidate's probe did.
struct Tried {
    /// Its workers, ready to read the rest if it wins.
    prepared: Prepared,
    /// What it read.
    moved: engine::Moved,
    /// Where its reading stopped.
    end: u64,
    /// Its whole time, preparation included.
    secs: f64,
    /// Its rate, MiB/s.
    mib_s: f64,
    /// Its start, seconds and bytes: for the first candidate, its setup and the first half of its
    /// slice, what it pays at the start of its stream, probed or not; nothing for a later
    /// candidate, whose slice lies inside the part.
    start: (f64, u64),
}

/// Tries `plan` on `p` bytes at `at`: the first half starts the pipeline (readahead windows grow,
/// the queue fills); the rate is the second half's, as the rest of the part would run. A later
/// candidate (with a `budget`) reads its slice in steps and stops before a step that, at its pace
/// so far, would take it past the budget: it is then too slow to win at an affordable price, and
/// reading on would only add to the probe's cost.
fn probe(src: &Source, plan: &Plan, at: u64, p: u64, budget: Option<Budget>) -> Result<Tried> {
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

/// Prepares a plan. A mapping is made per run and part, in the worker's thread, and released
/// there: its setup and teardown are paid inside `fast`'s time anyway (it is timed to close), so
/// they are spread over the threads and, for a probe, counted in the candidate's own slice.
fn prepare_plan(src: &Source, plan: &Plan) -> Result<Prepared> {
    let opts = EngineOptions {
        map_each_run: true,
        ..EngineOptions::with_depth(plan.depth)
    };
    engine::prepare(plan.method, src, &workload(plan, src.size), &opts)
}

/// Auto: each part of the file (resident or not) read by the plan that measured fastest on it.
fn auto(src: &Source, resident: f64, probe_from: u64) -> Result<(Choice, engine::Moved)> {
    let cores = crate::sys::cpus();
    if src.size < SMALL {
        let c = choose(src.size, resident, cores);
        let plan = Plan {
            method: c.method,
            threads: c.threads,
            bs: c.bs,
            depth: c.depth,
        };
        let moved = prepare_plan(src, &plan)?.run()?;
        return Ok((c, moved));
    }
    let segs = segments(src, resident);
    let mut moved = engine::Moved::default();
    let mut uses = Vec::new();
    let mut probes = Vec::new();
    for warm in [true, false] {
        let ranges: Vec<(u64, u64)> = segs
            .iter()
            .filter(|s| s.2 == warm)
            .map(|s| (s.0, s.1))
            .collect();
        if ranges.is_empty() {
            continue;
        }
        let (m, used) = read_part(src, probe_from, warm, &ranges, cores, &mut probes)?;
        moved.add(m);
        uses.push(used);
    }
    let main = uses
        .iter()
        .max_by_key(|u| u.bytes)
        .map(|u| u.plan)
        .unwrap_or_else(|| mmap_plan(src.size, cores));
    let reason = uses
        .iter()
        .map(|u| {
            format!(
                "{} {} ({}): {}",
                if u.warm { "warm" } else { "cold" },
                crate::size::format_size(u.bytes),
                u.plan.label(),
                u.why
            )
        })
        .collect::<Vec<_>>()
        .join("; ");
    let cost = uses.iter().map(|u| u.probe_cost_secs).sum();
    Ok((choice_of(main, reason, uses, probes, cost), moved))
}

/// Reads the whole file with the chosen (or forced) method; timed from open to close, choice
/// and probe included.
pub fn run_fast(cfg: &FastConfig) -> Result<FastResult> {
    if cfg.threads == Some(0) {
        return Err(Error::usage(
            "invalid thread count",
            "--threads must be at least 1",
        ));
    }
    if cfg.bs == Some(0) {
        return Err(Error::usage(
            "invalid block size",
            "it must be at least 1 byte",
        ));
    }
    let forced =
        cfg.method.is_some() || cfg.threads.is_some() || cfg.bs.is_some() || cfg.depth.is_some();
    let (out, counters) = measure(|| -> Result<(Choice, f64, engine::Moved)> {
        let src = engine::open_source(&cfg.path)?;
        let resident = cache::residency_of(&src.file, src.size, &src.path)?.fraction();
        if !forced {
            let auto = auto(&src, resident, cfg.probe_from);
            return match auto {
                Err(e) if e.kind == crate::error::ErrorKind::Unsupported => {
                    // Auto never fails for lack of a method (a mapping, io_uring): fall back to
                    // buffered pread.
                    let mut choice = choose(src.size, resident, crate::sys::cpus());
                    choice.reason = format!("{} ({}); fell back to pread", choice.reason, e.cause);
                    choice.method = ReadMethod::Pread;
                    let plan = Plan {
                        method: ReadMethod::Pread,
                        threads: choice.threads,
                        bs: 1 << 20,
                        depth: 1,
                    };
                    choice.bs = plan.bs;
                    let moved = prepare_plan(&src, &plan)?.run()?;
                    Ok((choice, resident, moved))
                }
                r => r.map(|(c, m)| (c, resident, m)),
            };
        }
        let mut choice = choose(src.size, resident, crate::sys::cpus());
        if let Some(m) = cfg.method {
            choice.method = m;
            choice.reason = "method forced with --method".into();
        } else {
            choice.reason = format!("{} (forced settings: no probe)", choice.reason);
        }
        let plan = Plan {
            method: choice.method,
            threads: cfg.threads.unwrap_or(choice.threads),
            bs: cfg.bs.unwrap_or(choice.bs),
            depth: cfg
                .depth
                .unwrap_or(if choice.method.engine().info().uses_depth {
                    32
                } else {
                    choice.depth
                }),
        };
        (choice.threads, choice.bs, choice.depth) = (plan.threads, plan.bs, plan.depth);
        let moved = read_ranges(
            &mut prepare_plan(&src, &plan)?,
            &plan,
            src.size,
            &[(0, src.size)],
        )?;
        Ok((choice, resident, moved))
    });
    let (choice, resident, moved) = out?;
    Ok(FastResult {
        choice,
        resident,
        bytes: moved.bytes,
        xor: moved.xor,
        mib_s: crate::size::mib_per_s(moved.bytes, counters.wall.as_secs_f64()),
        counters,
    })
}

#[cfg(test)]
mod tests;
