use super::splice::empty_pipe;
use std::io;

#[test]
fn a_splice_that_moves_nothing_ends_the_loop_with_an_error() {
    let mut calls = 0;
    let err = empty_pipe(10, |_| {
        calls += 1;
        Ok(if calls == 1 { 4 } else { 0 })
    })
    .unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::WriteZero);
    assert!(err.to_string().contains("6 bytes still"), "{err}");
    let mut moved = Vec::new();
    empty_pipe(10, |left| {
        moved.push(left);
        match moved.len() {
            1 => Err(io::Error::from(io::ErrorKind::Interrupted)),
            _ => Ok(left.min(7)),
        }
    })
    .unwrap();
    assert_eq!(
        moved,
        [10, 10, 3],
        "interrupted calls are retried, short ones continued"
    );
}

#[test]
fn a_receiver_hashes_beside_its_storing_only_where_a_core_is_likely_idle() {
    use crate::transfer::spare_core;
    assert!(!spare_core(1, false), "one core: nothing beside");
    assert!(!spare_core(2, true), "two cores shared with a local sender");
    assert!(spare_core(2, false), "two cores, the sender elsewhere");
    assert!(spare_core(4, true));
}
