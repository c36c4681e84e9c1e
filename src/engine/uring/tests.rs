use super::served::{SERVED_STREAK, Served};
use super::{drain, give_back, spare_slots, take_free};
use std::io;

#[test]
fn drain_waits_for_every_request_through_failures() {
    // Two requests in flight; the first waits fail, then one completion at a time arrives.
    let mut script = vec![
        Err(io::Error::from_raw_os_error(libc::EINTR)),
        Err(io::Error::from_raw_os_error(libc::EBUSY)),
        Ok(1),
        Ok(1),
    ]
    .into_iter();
    let mut calls = 0;
    assert!(drain(2, || {
        calls += 1;
        script.next().expect("drain waited after all had completed")
    }));
    assert_eq!(calls, 4, "it returned only when both had completed");
    assert!(drain(0, || panic!("nothing in flight: no wait")));
}

#[test]
fn drain_gives_up_on_a_dead_ring_and_says_so() {
    let mut calls = 0;
    let drained = drain(3, || {
        calls += 1;
        Err(io::Error::from_raw_os_error(libc::EBADF))
    });
    assert!(!drained, "requests may still be in flight");
    assert!(calls > 100, "retried before giving up");
}

#[test]
fn a_ring_the_page_cache_serves_keeps_one_mib_of_slots_and_digests_first() {
    let mut s = Served::default();
    let (depth, mib) = (32, 1 << 20);
    assert_eq!(
        s.depth(depth, mib, 0),
        32,
        "not served yet: the whole depth"
    );
    for _ in 0..SERVED_STREAK - 1 {
        s.saw(2, 2);
    }
    assert_eq!(s.depth(depth, mib, 0), 32, "one wait short of the streak");
    s.saw(2, 2);
    assert_eq!(s.depth(depth, mib, 0), 1, "served: one 1 MiB slot in use");
    assert_eq!(
        s.depth(depth, mib, 1),
        0,
        "served: a completion is digested first"
    );
    assert_eq!(s.depth(depth, 4096, 0), 32, "small blocks keep their depth");
    assert_eq!(s.depth(depth, 64 << 10, 0), 16);
    s.saw(1, 2);
    assert_eq!(
        s.depth(depth, mib, 0),
        32,
        "one request waited for the device: not served"
    );
    s.saw(0, 1);
    assert_eq!(s.depth(depth, mib, 0), 32);
}

#[test]
fn direct_reads_go_into_the_slot_digested_longest_ago_buffered_into_the_last() {
    use std::collections::VecDeque;
    // Slots 4, 7, 2 digested in that order (each pushed at the back).
    let digested = || VecDeque::from([4, 7, 2]);
    let mut free = digested();
    assert_eq!(
        take_free(&mut free, true),
        Some(4),
        "O_DIRECT: oldest first"
    );
    give_back(&mut free, true, 4);
    assert_eq!(free, digested(), "a slot not used goes back where it was");
    let order: Vec<_> = std::iter::from_fn(|| take_free(&mut free, true)).collect();
    assert_eq!(order, [4, 7, 2]);
    let mut free = digested();
    assert_eq!(
        take_free(&mut free, false),
        Some(2),
        "buffered: the last digested"
    );
    give_back(&mut free, false, 2);
    assert_eq!(free, digested());
}

#[test]
fn direct_rings_keep_spares_filling_4_mib_buffered_rings_one() {
    let mib = 1usize << 20;
    assert_eq!(spare_slots(true, mib + 4096), 3, "1 MiB blocks: three");
    assert_eq!(spare_slots(true, 8192), 3, "never more than three");
    assert_eq!(
        spare_slots(true, 4 * mib + 4096),
        1,
        "4 MiB: the one measured"
    );
    assert_eq!(spare_slots(false, mib), 1);
    assert_eq!(spare_slots(true, 0), 3, "never divides by zero");
}
