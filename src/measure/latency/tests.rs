use super::*;
use std::time::Duration;

/// Operations that overlap (io_uring's requests, many started before the first ends) are
/// sampled as sequential ones are: once the gap is wide, most go untimed, and the timed
/// ones' weights add up to every operation, so percentiles stand for all of them.
#[test]
fn overlapped_operations_are_sampled_and_weighted_as_sequential_ones() {
    let mut log = OpLog::new(true, None);
    let depth = 8;
    let total = 200_000u64;
    let mut in_flight = std::collections::VecDeque::new();
    for _ in 0..total {
        if in_flight.len() == depth {
            let s = in_flight.pop_front().unwrap();
            assert!(log.end_overlapped(s));
        }
        in_flight.push_back(log.start_overlapped());
    }
    for s in in_flight {
        log.end_overlapped(s);
    }
    let (untimed, every) = (log.untimed(), u64::from(log.sampling_every()));
    let h = log.into_histogram().unwrap();
    // All but the untimed ones after the last timed one (fewer than two gaps).
    assert!(
        h.weight <= total && total - h.weight < 2 * every,
        "weights {} stand for every operation of {total} (gap {every})",
        h.weight
    );
    assert!(
        untimed > total / 2,
        "short operations are sampled: {untimed} untimed"
    );
    assert_eq!(h.count() + untimed, total);
    // A deadline that has passed stops the run at the next timed operation.
    let mut late = OpLog::new(false, Some(Instant::now()));
    let s = late.start_overlapped();
    assert!(s.is_some() && !late.end_overlapped(s));
}

#[test]
fn short_operations_are_sampled_and_long_ones_all_timed() {
    let mut log = OpLog::new(true, None);
    let total = 16_064;
    for _ in 0..total {
        log.begin();
        assert!(log.end());
    }
    let untimed = log.untimed();
    let log_every = log.sampling_every();
    let h = log.into_histogram().unwrap();
    assert_eq!(
        h.count() + untimed,
        total,
        "every operation is timed or counted"
    );
    let timed_after_probe = h.count() - OpLog::PROBE_OPS;
    let every = u64::from(log_every);
    assert!(
        (OpLog::SAMPLE_EVERY..=OpLog::SAMPLE_EVERY_MAX).contains(&log_every),
        "{log_every}"
    );
    assert!(
        (16_000 / every / 2..=16_000 * 3 / every / 2).contains(&timed_after_probe),
        "about one in {every}: {timed_after_probe} of 16000"
    );
    assert_eq!(h.summary().untimed_ops, untimed);
    // Operations above the threshold: every one is timed.
    let mut log = OpLog::new(true, None);
    for _ in 0..100 {
        log.begin();
        let t = Instant::now();
        while t.elapsed() < Duration::from_nanos(OpLog::SAMPLE_BELOW_NS + 1000) {}
        log.end();
    }
    assert_eq!(log.untimed(), 0);
    assert_eq!(log.into_histogram().unwrap().count(), 100);
}

#[test]
fn the_gap_keeps_the_clock_under_one_percent_of_the_operations() {
    // 80 ns of clock: 400 ns operations are timed one in 20, 100 ns ones one in 80; slow
    // operations keep the floor of 16, the very fastest the ceiling.
    assert_eq!(OpLog::sample_gap(400, 80), 20);
    assert_eq!(OpLog::sample_gap(100, 80), 80);
    assert_eq!(OpLog::sample_gap(10_000, 80), OpLog::SAMPLE_EVERY);
    assert_eq!(OpLog::sample_gap(0, 80), OpLog::SAMPLE_EVERY_MAX);
    for (mean, clock) in [(50, 40), (120, 80), (900, 80), (3000, 200)] {
        let gap = OpLog::sample_gap(mean, clock) as f64;
        assert!(
            clock as f64 / (gap * mean as f64) <= OpLog::CLOCK_SHARE + 1e-12,
            "{mean} {clock} {gap}"
        );
    }
    // The clock's cost is measured, and is a real, finite figure.
    let c = OpLog::clock_cost_ns();
    assert!(c < 100_000, "{c}");
    assert_eq!(c, OpLog::clock_cost_ns(), "measured once per process");
}

#[test]
fn sampled_latencies_stand_for_the_operations_skipped() {
    // 64 slow operations all timed, then 960 fast ones timed one in 40: unweighted, the
    // slow ones would be 73% of the sample and the median slow.
    let mut h = Histogram::default();
    for _ in 0..64 {
        h.record_weighted(10_000, 1);
    }
    for _ in 0..24 {
        h.record_weighted(100, 40);
    }
    let s = h.summary();
    assert_eq!(s.ops, 88, "latencies recorded");
    assert_eq!(s.mean_ns, (64 * 10_000 + 960 * 100) / 1024);
    assert!(s.p50_ns <= 100 + 100 / 16, "{}", s.p50_ns);
    assert!(s.p99_ns >= 9_000, "{}", s.p99_ns);
    let mut m = Histogram::default();
    m.merge(&h);
    m.merge(&h);
    assert_eq!(m.summary().mean_ns, s.mean_ns);
    // Through the log: what the timed operations stand for adds up to every operation.
    let mut log = OpLog::new(true, None);
    for _ in 0..20_000 {
        log.begin();
        log.end();
    }
    // The operations skipped since the last timed one (its gap not yet over) are the only
    // ones no timed operation stands for.
    let since_last = log.weight - 1 - u64::from(log.skip);
    let h = log.into_histogram().unwrap();
    assert!(h.n < 2_000, "sampled: {}", h.n);
    assert_eq!(h.weight + since_last, 20_000);
}

#[test]
fn buckets_are_tight_and_ordered() {
    let mut last = 0;
    for v in (0..100_000u64).chain([u64::MAX / 3, u64::MAX]) {
        let i = index(v);
        assert!(i >= last, "index must not decrease");
        last = i;
        assert!(upper(i) >= v, "v={v} upper={}", upper(i));
        assert!(upper(i) - v <= v / 16, "v={v} upper={}", upper(i));
    }
}

#[test]
fn percentiles_of_known_inputs() {
    let mut h = Histogram::default();
    for v in 1..=1000u64 {
        h.record(v);
    }
    let s = h.summary();
    assert_eq!((s.ops, s.min_ns, s.max_ns), (1000, 1, 1000));
    for (got, want) in [
        (s.p50_ns, 500.0),
        (s.p90_ns, 900.0),
        (s.p99_ns, 990.0),
        (s.p999_ns, 999.0),
    ] {
        assert!(
            (got as f64 - want).abs() <= want / 16.0 + 1.0,
            "got {got} want {want}"
        );
    }
    assert_eq!(s.mean_ns, 500);
    let mut exact = Histogram::default();
    for v in [3u64, 3, 3, 7, 9] {
        exact.record(v);
    }
    assert_eq!(
        (
            exact.quantile(0.5),
            exact.quantile(0.8),
            exact.quantile(1.0)
        ),
        (3, 7, 9)
    );
    let mut merged = Histogram::default();
    merged.merge(&h);
    merged.merge(&exact);
    assert_eq!(merged.count(), 1005);
    assert_eq!(Histogram::default().summary(), LatencySummary::default());
}

#[test]
fn a_log_with_only_a_deadline_samples_the_clock_too() {
    // No latencies asked, a deadline far off: short operations are not all timed.
    let mut log = OpLog::new(false, Some(Instant::now() + Duration::from_secs(3600)));
    for _ in 0..10_000 {
        log.begin();
        assert!(log.end());
    }
    assert!(log.sampling_every() >= OpLog::SAMPLE_EVERY);
    assert!(log.untimed() > 5_000, "{}", log.untimed());
    assert!(log.into_histogram().is_none());
    // And it still stops: the deadline is checked at the sampled operations.
    let mut log = OpLog::new(false, Some(Instant::now() + Duration::from_millis(20)));
    let t = Instant::now();
    let mut n = 0u64;
    loop {
        log.begin();
        n += 1;
        if !log.end() {
            break;
        }
    }
    assert!(t.elapsed() >= Duration::from_millis(20) && n > 64, "{n}");
}

#[test]
fn oplog_stops_at_the_deadline() {
    let mut log = OpLog::new(true, Some(Instant::now()));
    log.begin();
    assert!(!log.end());
    assert_eq!(log.into_histogram().unwrap().count(), 1);
    let mut off = OpLog::off();
    off.begin();
    assert!(off.end());
    assert!(off.into_histogram().is_none());
}

/// Runs of untimed operations told at once (the core loop's batches) leave the log as the same
/// operations one by one would: every operation counted, in progress too, and the timed ones
/// standing for all of them.
#[test]
fn untimed_runs_told_at_once_count_as_one_by_one() {
    let progress = Arc::new(AtomicU64::new(0));
    let mut log = OpLog::new(true, None).with_progress(Some(progress.clone()));
    let total = 20_000u64;
    let mut done = 0;
    let mut batches = 0;
    while done < total {
        let ahead = log.untimed_ahead();
        if ahead > 1 {
            let n = ahead.min(64).min(total - done);
            log.skip_untimed(n);
            done += n;
            batches += 1;
        } else {
            log.begin();
            log.end();
            done += 1;
        }
    }
    assert!(
        batches > 100,
        "the sampled gaps were told in runs: {batches}"
    );
    let since_last = log.weight - 1 - u64::from(log.skip);
    let h = log.into_histogram().unwrap();
    assert_eq!(h.weight + since_last, total);
    assert_eq!(h.n + h.untimed, total);
    assert_eq!(progress.load(Ordering::Relaxed), total);
    // A log with nothing to time takes any run at once.
    let log = OpLog::new(false, None);
    assert_eq!(log.untimed_ahead(), u64::MAX);
}
