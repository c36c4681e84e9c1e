//! The plan of a trace: what is replayed, what refused.
use super::*;
use serde_json::json;

use crate::trace::fixture::{file, op};

/// A one-thread trace of an 8 KiB file, `resident` bytes of it cached, with `ops` and
/// `faults`.
fn trace(resident: u64, ops: Vec<serde_json::Value>, faults: serde_json::Value) -> Trace {
    crate::trace::fixture::trace(vec![file("/data/x", 8192, resident, 8192)], ops, faults)
}

/// `o` with the tracer's marks: held before its entry and after its exit, and the
/// thread's stops up to its entry stop.
fn marked(mut o: serde_json::Value, held: u64, held_exit: u64, stops: u64) -> serde_json::Value {
    o["held"] = json!(held);
    o["held_exit"] = json!(held_exit);
    o["stops"] = json!(stops);
    o
}

fn plan_of(t: Trace) -> ReplayPlan {
    plan(&t, true).unwrap()
}

#[test]
fn gaps_are_the_time_between_accesses_less_the_tracers_share() {
    // read 0..4096 from 1000 to 1500 (the thread's stops 1 and 2); a write (3, 4) and a
    // dup the trace does not keep (5, 6); read 4096..8192 entered at 10000 (stop 7). The
    // tracer held the thread 100 ns at each stop.
    let ops = vec![
        marked(op(1000, 500, "read", Some(0), 0, 4096), 0, 100, 1),
        marked(op(3000, 400, "write", None, 0, 10), 200, 300, 3),
        marked(op(10000, 300, "read", Some(0), 4096, 4096), 600, 700, 7),
    ];
    let p = plan_of(trace(8192, ops, json!([])));
    // A stop's cost beyond the hold: the calls' times less their entry holds, averaged.
    assert_eq!(p.stop_ns, (400 + 300 + 200) / 3);
    let seg = &p.threads[0][0];
    assert_eq!(seg.blocks.len(), 2);
    // The first access waits nothing; the second the 8500 ns between the reads less the
    // 500 ns held (stops 2 to 6) and five stops (3 to 7).
    assert_eq!(&seg.gaps[..], &[0, 8500 - 500 - 5 * 300]);
    assert_eq!(p.gaps_ns, 6500);
    assert_eq!(p.gaps_unknown, 0);
}

#[test]
fn a_gap_short_of_a_stops_cost_is_taken_from_the_next() {
    // Each call took 100 ns: a stop's cost. 50 ns between the first two reads, 750 between
    // the last two, one stop in each.
    let ops = vec![
        marked(op(0, 100, "read", Some(0), 0, 1024), 0, 0, 1),
        marked(op(150, 100, "read", Some(0), 1024, 1024), 0, 0, 3),
        marked(op(1000, 100, "read", Some(0), 2048, 1024), 0, 0, 5),
    ];
    let p = plan_of(trace(8192, ops, json!([])));
    assert_eq!(p.stop_ns, 100);
    // 50 - 100 waits nothing and owes 50; 750 - 100 - 50: the thread's sum is kept.
    assert_eq!(&p.threads[0][0].gaps[..], &[0, 0, 600]);
}

#[test]
fn the_time_after_a_fault_that_may_have_waited_for_storage_is_unknown() {
    let ops = vec![op(50, 100, "close", None, 0, 0)];
    let faults = json!([{"t": 1000, "tid": 7, "file": 0, "off": 0},
                        {"t": 5000, "tid": 7, "file": 0, "off": 4096}]);
    // Not cached when traced: the second fault's wait is unknown, kept as none.
    let p = plan_of(trace(0, ops.clone(), faults.clone()));
    assert_eq!(p.gaps_unknown, 1);
    assert_eq!(p.gaps_ns, 0);
    // Cached: the time between the faults is the program's.
    let p = plan_of(trace(8192, ops, faults));
    assert_eq!(p.gaps_unknown, 0);
    assert_eq!(p.gaps_ns, 4000);
}
