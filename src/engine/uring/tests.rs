use super::drain;
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
