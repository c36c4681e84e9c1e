//! The time left of a measurement, for the progress bar: the pace so far, never past its cap.

use std::time::{Duration, Instant};

/// Time left of a measurement that started at `t0` and has done `done` of `total` steps:
/// the pace so far, never past its cap (when it has one); `None` before the first step.
pub(super) fn time_left(
    t0: Instant,
    cap: Option<Duration>,
    done: usize,
    total: usize,
) -> Option<Duration> {
    let spent = t0.elapsed();
    // The pace from the first tenth is a guess; the cap alone is known then.
    if done == 0 || done * 10 < total {
        return cap.map(|c| c.saturating_sub(spent));
    }
    let pace = spent.mul_f64(total.saturating_sub(done) as f64 / done as f64);
    Some(match cap {
        Some(cap) => pace.min(cap.saturating_sub(spent)),
        None => pace,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_time_left_is_the_cap_at_first_then_the_pace_never_past_it() {
        let t0 = Instant::now() - Duration::from_secs(10);
        let cap = Some(Duration::from_secs(60));
        // A tenth not yet done: the cap's remainder alone.
        let left = time_left(t0, cap, 1, 100).unwrap();
        assert!(left <= Duration::from_secs(50) && left > Duration::from_secs(49));
        // Half done in 10 s: 10 s more.
        let left = time_left(t0, cap, 50, 100).unwrap();
        assert!(
            left > Duration::from_secs(9) && left < Duration::from_secs(11),
            "{left:?}"
        );
        // A pace past the cap: the cap's remainder.
        let left = time_left(t0, cap, 11, 100).unwrap();
        assert!(left <= Duration::from_secs(50), "{left:?}");
        assert_eq!(time_left(t0, None, 0, 10), None);
    }
}
