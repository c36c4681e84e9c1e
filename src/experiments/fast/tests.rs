use super::parts::*;
use super::probing::*;
use super::*;

#[test]
fn minus_leaves_exactly_what_the_holes_do_not_cover() {
    let r = [(0, 100), (200, 300)];
    assert_eq!(minus(&r, &[]), r.to_vec());
    assert_eq!(
        minus(&r, &[(10, 20), (40, 50)]),
        vec![(0, 10), (20, 40), (50, 100), (200, 300)]
    );
    assert_eq!(minus(&r, &[(0, 100)]), vec![(200, 300)]);
    assert_eq!(minus(&r, &[(90, 210)]), vec![(0, 90), (210, 300)]);
}

#[test]
fn a_probes_cost_is_its_time_beyond_its_bytes_at_the_winners_pace() {
    let mib = 1u64 << 20;
    // 32 MiB in 20 ms; the winner then ran at 3200 MiB/s, so they were worth 10 ms.
    assert!((probe_cost(0.020, 32 * mib, 3200.0) - 0.010).abs() < 1e-12);
    // A probe as fast as the rest costs nothing, and never less.
    assert_eq!(probe_cost(0.010, 32 * mib, 3200.0), 0.0);
    assert_eq!(probe_cost(0.005, 32 * mib, 3200.0), 0.0);
    // Nothing left to set a pace: all of it.
    assert_eq!(probe_cost(0.020, 32 * mib, 0.0), 0.020);
}

#[test]
fn a_later_candidate_steps_one_block_and_meets_the_slices_half() {
    let mib = 1u64 << 20;
    assert_eq!(probe_step(mib), mib, "one 1 MiB read first, not four");
    assert_eq!(probe_step(4 * mib), 4 * mib);
    assert_eq!(probe_step(3 * mib), 4 * mib);
    assert_eq!(probe_step(6 * mib), 6 * mib);
    for warm in [true, false] {
        for plan in candidates(warm, 1 << 31, 2) {
            // Every candidate's step is one block and lands on the half.
            assert_eq!(probe_step(plan.bs), plan.bs, "{plan:?}");
            assert!(ALIGN.is_multiple_of(plan.bs), "{plan:?}");
        }
    }
}

#[test]
fn a_later_candidate_stops_before_its_pace_would_overrun_the_budget() {
    let mib = 1u64 << 20;
    let beat = 2000.0 * mib as f64; // 2000 MiB/s
    // 2 GiB at 2000 MiB/s: 1.024 s, 2% of it 20.5 ms.
    let budget = 0.02 * 2048.0 / 2000.0;
    // Half the rate: 8 MiB in 8 ms; 16 MiB would cost 8 ms more than at the beat: read on.
    assert!(!over_budget(0.008, 8 * mib, 16 * mib, beat, budget));
    // ... and 32 MiB 16 ms: still within 20.5 ms.
    assert!(!over_budget(0.008, 8 * mib, 32 * mib, beat, budget));
    // A quarter of the rate: 16 MiB cost 24 ms beyond the beat: stop before that step.
    assert!(over_budget(0.016, 8 * mib, 16 * mib, beat, budget));
    // Faster than the beat never overruns.
    assert!(!over_budget(0.001, 8 * mib, 1 << 40, beat, budget));
}

#[test]
fn probe_slices_split_into_whole_blocks() {
    for warm in [true, false] {
        for bytes in [0u64, 1 << 20, 1 << 30, 3 << 30, 100 << 30] {
            let p = probe_len(warm, bytes);
            assert!(
                p >= 8 << 20 && p.is_multiple_of(ALIGN),
                "{warm} {bytes}: {p}"
            );
            let half = (p / 2) / ALIGN * ALIGN;
            assert!(half > 0 && half < p);
            for plan in candidates(warm, bytes, 2) {
                assert_eq!(ALIGN % plan.bs, 0, "a probe's half starts on a block");
            }
        }
    }
    // Cold: O_DIRECT (the usual winner) first, then buffered; warm: mapped and copied.
    let cold: Vec<ReadMethod> = candidates(false, 1 << 31, 2)
        .iter()
        .map(|c| c.method)
        .collect();
    assert_eq!(cold, vec![ReadMethod::UringDirect, ReadMethod::Pread]);
    let warm: Vec<ReadMethod> = candidates(true, 1 << 31, 2)
        .iter()
        .map(|c| c.method)
        .collect();
    assert_eq!(warm, vec![ReadMethod::Mmap, ReadMethod::Pread]);
}

#[test]
fn rule_picks_by_size_residency_and_cores() {
    assert_eq!(choose(100, 0.0, 2).method, ReadMethod::Pread);
    let warm = choose(2 << 30, 1.0, 2);
    assert_eq!((warm.method, warm.threads), (ReadMethod::Mmap, 2));
    assert!(warm.reason.starts_with("warm"));
    assert_eq!(choose(40 << 20, 1.0, 8).threads, 1);
    let cold = choose(2 << 30, 0.1, 2);
    assert_eq!((cold.method, cold.threads), (ReadMethod::Mmap, 2));
    assert!(cold.reason.starts_with("cold"));
}
