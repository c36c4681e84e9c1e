//! Per-operation latency: a log-bucket histogram (16 sub-buckets per power of two, so any value is
//! within 1/16 of its bucket's bounds) and [`OpLog`], which engines call around each operation.

use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

const SUB_BITS: u32 = 4;
const SUB: u64 = 1 << SUB_BITS;
const BUCKETS: usize = (64 - SUB_BITS as usize + 1) * SUB as usize;

/// Latencies in nanoseconds. Each recorded latency may stand for several operations (a sampled
/// one stands for itself and those skipped before it), so percentiles and the mean describe every
/// operation, not just the timed ones.
#[derive(Debug, Clone, PartialEq)]
pub struct Histogram {
    counts: Vec<u64>,
    /// Latencies recorded.
    n: u64,
    /// Operations they stand for (the weights' sum; `n` when nothing was sampled).
    weight: u64,
    min: u64,
    max: u64,
    sum: u128,
    /// Operations that happened but were not timed (sampling).
    untimed: u64,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram {
            counts: vec![0; BUCKETS],
            n: 0,
            weight: 0,
            min: u64::MAX,
            max: 0,
            sum: 0,
            untimed: 0,
        }
    }
}

fn index(v: u64) -> usize {
    if v < SUB {
        return v as usize;
    }
    let e = 63 - v.leading_zeros();
    let mantissa = (v >> (e - SUB_BITS)) & (SUB - 1);
    ((e - SUB_BITS + 1) as u64 * SUB + mantissa) as usize
}

/// The largest value that falls into bucket `i`.
fn upper(i: usize) -> u64 {
    let i = i as u64;
    if i < SUB {
        return i;
    }
    let e = i / SUB + SUB_BITS as u64 - 1;
    let mantissa = i % SUB;
    let low = (1u64 << e) | (mantissa << (e - SUB_BITS as u64));
    low.saturating_add((1u64 << (e - SUB_BITS as u64)) - 1)
}

impl Histogram {
    /// Adds one latency, in ns.
    pub fn record(&mut self, ns: u64) {
        self.record_weighted(ns, 1);
    }

    /// Adds one latency that stands for `weight` operations (at least 1).
    pub fn record_weighted(&mut self, ns: u64, weight: u64) {
        let w = weight.max(1);
        self.counts[index(ns)] += w;
        self.n += 1;
        self.weight += w;
        self.min = self.min.min(ns);
        self.max = self.max.max(ns);
        self.sum += ns as u128 * w as u128;
    }

    /// Adds another histogram's counts.
    pub fn merge(&mut self, other: &Histogram) {
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            *a += b;
        }
        self.n += other.n;
        self.weight += other.weight;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
        self.sum += other.sum;
        self.untimed += other.untimed;
    }

    /// Latencies recorded.
    pub fn count(&self) -> u64 {
        self.n
    }

    /// Operations that happened but were not timed (sampling).
    pub fn untimed(&self) -> u64 {
        self.untimed
    }

    /// The value at quantile `q` (0..=1): the upper bound of the bucket holding it, capped at the
    /// largest value seen.
    pub fn quantile(&self, q: f64) -> u64 {
        if self.n == 0 {
            return 0;
        }
        let rank = ((q.clamp(0.0, 1.0) * self.weight as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (i, c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return upper(i).min(self.max).max(self.min);
            }
        }
        self.max
    }

    /// Mean, min, percentiles and max.
    pub fn summary(&self) -> LatencySummary {
        LatencySummary {
            ops: self.n,
            mean_ns: if self.weight == 0 {
                0
            } else {
                (self.sum / self.weight as u128) as u64
            },
            min_ns: if self.n == 0 { 0 } else { self.min },
            p50_ns: self.quantile(0.5),
            p90_ns: self.quantile(0.9),
            p99_ns: self.quantile(0.99),
            p999_ns: self.quantile(0.999),
            max_ns: self.max,
            untimed_ops: self.untimed,
        }
    }
}

/// Percentiles of a histogram, in nanoseconds.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct LatencySummary {
    /// Operations timed.
    pub ops: u64,
    /// Mean, ns.
    pub mean_ns: u64,
    /// Fastest, ns.
    pub min_ns: u64,
    /// Median, ns.
    pub p50_ns: u64,
    /// 90th percentile, ns.
    pub p90_ns: u64,
    /// 99th percentile, ns.
    pub p99_ns: u64,
    /// 99.9th percentile, ns.
    pub p999_ns: u64,
    /// Slowest, ns.
    pub max_ns: u64,
    /// Operations done but not timed: short operations are timed one in about 16 or more (after
    /// the first 64; the gap keeps the clock under 1% of their time), so the percentiles come
    /// from that sample.
    #[serde(default)]
    pub untimed_ops: u64,
}

/// What an engine does around each operation: time it into a histogram, and stop at a deadline.
/// Off (the default), it reads no clock at all.
#[derive(Debug, Default)]
pub struct OpLog {
    hist: Option<Histogram>,
    deadline: Option<Instant>,
    started: Option<Instant>,
    /// Mean operations between two timed ones: 1 times all of them.
    every: u32,
    /// Operations still to skip before the next timed one.
    skip: u32,
    /// Operations not timed.
    untimed: u64,
    /// Operations timed, and their time in all (ns): what the sampling gap is decided from.
    timed: u64,
    timed_ns: u128,
    /// Operations the next timed one stands for: itself and those skipped before it.
    weight: u64,
    /// State of the generator of gaps between timed operations.
    rng: u32,
    /// Where finished operations are counted while the run goes on (a time series reads it).
    progress: Option<Arc<AtomicU64>>,
    /// Operations finished but not yet added to `progress`.
    pending: u64,
    /// Operations per shared add to `progress`.
    batch: u64,
}

impl OpLog {
    /// Operations timed one by one before deciding whether to sample.
    pub const PROBE_OPS: u64 = 64;
    /// Operations shorter than this on average are sampled, one timed in a gap of at least
    /// [`OpLog::SAMPLE_EVERY`] ([`OpLog::sample_gap`]): two clock reads (with the ordered read of
    /// the time-stamp counter) cost up to a fifth of a 1 us operation, more than the 5% iolab
    /// allows itself.
    pub const SAMPLE_BELOW_NS: u64 = 20_000;
    /// Mean gap between timed operations when sampling: at least this, more when the operations
    /// are so short that two clock reads per 16 would cost over [`OpLog::CLOCK_SHARE`] of them.
    pub const SAMPLE_EVERY: u32 = 16;
    /// The widest mean gap: even the shortest operations keep one timed in this many.
    pub const SAMPLE_EVERY_MAX: u32 = 1024;
    /// The share of the operations' time the clock reads may take when sampling (1%).
    pub const CLOCK_SHARE: f64 = 0.01;

    /// The mean gap for operations of `mean_ns` when a timed one costs `clock_ns` more: the
    /// clock's cost spread over the gap stays under [`OpLog::CLOCK_SHARE`] of their time.
    pub fn sample_gap(mean_ns: u64, clock_ns: u64) -> u32 {
        let want = clock_ns as f64 / (Self::CLOCK_SHARE * mean_ns.max(1) as f64);
        (want.ceil() as u32).clamp(Self::SAMPLE_EVERY, Self::SAMPLE_EVERY_MAX)
    }

    /// How much more a pair of clock reads costs inside a loop of loads than back to back: the
    /// read is ordered (`lfence; rdtsc`), so it waits for the block's loads in flight. Measured in
    /// a plain C loop of random mapped 4 KiB reads: timing every block added 217 ns per block,
    /// four times the 50 ns of a back-to-back pair.
    pub const CLOCK_STALL: u64 = 4;

    /// What timing one operation adds here: two clock reads ([`OpLog::CLOCK_STALL`] times the
    /// fastest of 16 tries of 32 back-to-back pairs; measured once per process).
    pub fn clock_cost_ns() -> u64 {
        static COST: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
        *COST.get_or_init(|| {
            (0..16)
                .map(|_| {
                    let t = Instant::now();
                    for _ in 0..32 {
                        std::hint::black_box(Instant::now());
                        std::hint::black_box(Instant::now());
                    }
                    t.elapsed().as_nanos() as u64 / 32
                })
                .min()
                .unwrap_or(0)
                * Self::CLOCK_STALL
        })
    }

    /// The mean gap between timed operations now (1: every one is timed).
    pub fn sampling_every(&self) -> u32 {
        self.every
    }

    /// A log that records nothing and reads no clock.
    pub fn off() -> OpLog {
        OpLog::default()
    }

    /// A log that records latencies (when `record`) and stops at `deadline`.
    pub fn new(record: bool, deadline: Option<Instant>) -> OpLog {
        OpLog {
            hist: record.then(Histogram::default),
            deadline,
            started: None,
            every: 1,
            skip: 0,
            untimed: 0,
            timed: 0,
            timed_ns: 0,
            weight: 1,
            rng: 0x9e37_79b9,
            progress: None,
            pending: 0,
            batch: Self::TALLY_BATCH,
        }
    }

    /// Operations added to `counter` as they finish (in batches of [`OpLog::TALLY_BATCH`], and
    /// the rest when the log is dropped), so another thread can sample the rate during the run.
    pub fn with_progress(mut self, counter: Option<Arc<AtomicU64>>) -> OpLog {
        self.progress = counter;
        self
    }

    /// With `each`, every operation is added to the progress counter as it finishes (large
    /// operations, where one atomic add is nothing and a batch would blur a short tick).
    pub fn tally_each(mut self, each: bool) -> OpLog {
        if each {
            self.batch = 1;
        }
        self
    }

    /// Operations counted locally before one shared add: one atomic add per operation on a
    /// line that several threads share would cost more than a cached 4 KiB read.
    pub const TALLY_BATCH: u64 = 16;

    /// One operation finished (a block moved), for the progress counter.
    #[inline]
    pub fn tally(&mut self) {
        if let Some(p) = &self.progress {
            self.pending += 1;
            if self.pending >= self.batch {
                p.fetch_add(self.pending, Ordering::Relaxed);
                self.pending = 0;
            }
        }
    }

    fn active(&self) -> bool {
        self.hist.is_some() || self.deadline.is_some()
    }

    /// Whether latencies are recorded (else the clock only watches a deadline, if any).
    pub fn records(&self) -> bool {
        self.hist.is_some()
    }

    /// How many of the next operations will not be timed (`u64::MAX` when none is: no
    /// latency asked and no deadline).
    #[inline]
    pub fn untimed_ahead(&self) -> u64 {
        if self.active() {
            u64::from(self.skip)
        } else {
            u64::MAX
        }
    }

    /// `n` operations done untimed, at most [`OpLog::untimed_ahead`]: as `n` calls of
    /// [`OpLog::begin`] and [`OpLog::end`] that time nothing.
    #[inline]
    pub fn skip_untimed(&mut self, n: u64) {
        if self.active() {
            let n = n.min(u64::from(self.skip));
            self.skip -= n as u32;
            self.untimed += n;
        }
        if let Some(p) = &self.progress {
            self.pending += n;
            if self.pending >= self.batch {
                p.fetch_add(self.pending, Ordering::Relaxed);
                self.pending = 0;
            }
        }
    }

    /// Before an operation.
    #[inline]
    pub fn begin(&mut self) {
        if self.skip > 0 {
            self.skip -= 1;
            self.untimed += 1;
        } else if self.active() {
            self.started = Some(Instant::now());
        }
    }

    /// After an operation: records its latency; false once the deadline has passed (checked
    /// on timed operations, so at most a few microseconds late when sampling).
    #[inline]
    pub fn end(&mut self) -> bool {
        self.tally();
        match self.started.take() {
            // An untimed operation (sampling, or nothing asked): no call, no clock.
            None => true,
            Some(start) => self.end_timed(start),
        }
    }

    /// [`OpLog::end`] of a timed operation: kept out of line, so the untimed path stays a few
    /// instructions inside the engine's loop.
    #[inline(never)]
    fn end_timed(&mut self, start: Instant) -> bool {
        let on_time = self.timed_done(start, self.weight);
        self.draw_gap();
        on_time
    }

    /// Records a timed operation that began at `start` and stands for `weight` operations, and
    /// decides the sampling gap anew when due; false once the deadline has passed.
    fn timed_done(&mut self, start: Instant, weight: u64) -> bool {
        let now = Instant::now();
        let ns = now.duration_since(start).as_nanos() as u64;
        if let Some(h) = &mut self.hist {
            // A sampled operation stands for the ones skipped before it: weighted so, the
            // percentiles and mean are those of every operation, however the gap changed (the
            // first, all-timed operations of a run are often its slowest).
            h.record_weighted(ns, weight);
        }
        // Decided after the first 64 timed operations and again each time the count of timed
        // ones doubles, from their mean so far: the first operations of a run (its first
        // faults, a cold start) are slower than the rest, so the first decision alone would
        // keep the gap too short. A log that only watches a deadline samples the same way.
        self.timed += 1;
        self.timed_ns += u128::from(ns);
        if self.timed >= Self::PROBE_OPS && self.timed.is_power_of_two() {
            let mean = (self.timed_ns / u128::from(self.timed)) as u64;
            self.every = if mean < Self::SAMPLE_BELOW_NS {
                Self::sample_gap(mean, Self::clock_cost_ns())
            } else {
                1
            };
        }
        self.deadline.is_none_or(|d| now < d)
    }

    /// Draws how many operations go untimed before the next timed one.
    fn draw_gap(&mut self) {
        if self.every > 1 {
            // Gaps drawn uniformly from 0..2*every-1 (mean every-1 skipped), so that no
            // periodic pattern in the workload lines up with the timed operations.
            self.rng ^= self.rng << 13;
            self.rng ^= self.rng >> 17;
            self.rng ^= self.rng << 5;
            self.skip = self.rng % (2 * self.every - 1);
        }
        self.weight = u64::from(self.skip) + 1;
    }

    /// Before an operation that overlaps others (io_uring keeps many in flight): when it is to
    /// be timed, as [`OpLog::begin`] samples, its start and how many operations it stands for.
    /// The next gap is drawn here, at the start, since more start before this one ends.
    #[inline]
    pub fn start_overlapped(&mut self) -> Option<(Instant, u64)> {
        if self.skip > 0 {
            self.skip -= 1;
            self.untimed += 1;
            None
        } else if self.active() {
            let weight = self.weight;
            self.draw_gap();
            Some((Instant::now(), weight))
        } else {
            None
        }
    }

    /// After an overlapped operation: counts it and records its latency, as [`OpLog::end`];
    /// false once the deadline has passed (checked on timed operations).
    #[inline]
    pub fn end_overlapped(&mut self, started: Option<(Instant, u64)>) -> bool {
        self.tally();
        match started {
            None => true,
            Some((start, weight)) => self.timed_done(start, weight),
        }
    }

    /// Operations that were not timed (sampling short operations).
    pub fn untimed(&self) -> u64 {
        self.untimed
    }

    /// The latencies, when recorded (with the count of operations not timed).
    pub fn into_histogram(mut self) -> Option<Histogram> {
        let untimed = self.untimed;
        self.hist.take().map(|mut h| {
            h.untimed += untimed;
            h
        })
    }
}

impl Drop for OpLog {
    fn drop(&mut self) {
        if let Some(p) = &self.progress
            && self.pending > 0
        {
            p.fetch_add(self.pending, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests;
