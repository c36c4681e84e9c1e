//! Measuring one run: wall time on a monotonic clock around the work only, and the kernel's
//! counters beside it (CPU time, faults, context switches, bytes read from the device).

pub mod decide;
pub mod finding;
pub mod interference;
pub mod latency;
pub mod series;
pub mod stats;

use crate::sys::{Usage, rusage_self};
use serde::{Deserialize, Serialize};
use std::time::{Duration, Instant};

/// Counters read before and after a run.
#[derive(Debug, Clone, Copy, Default)]
pub struct Snapshot {
    usage: Usage,
    device_read: Option<u64>,
}

impl Snapshot {
    /// The counters now.
    pub fn now() -> Snapshot {
        Snapshot {
            usage: rusage_self(),
            device_read: proc_self_read_bytes(),
        }
    }
}

/// Serde for a duration as JSON carries it: a number of seconds. Reading also takes the
/// `{secs, nanos}` object that files written before this held.
pub mod secs {
    use serde::{Deserialize, Deserializer, Serializer, de::Error};
    use std::time::Duration;

    /// Either form a results file may hold.
    #[derive(Deserialize)]
    #[serde(untagged)]
    pub(crate) enum SecsForm {
        Secs(f64),
        Parts { secs: u64, nanos: u32 },
    }

    impl SecsForm {
        pub(crate) fn value<E: Error>(self) -> Result<Duration, E> {
            match self {
                SecsForm::Parts { secs, nanos } => {
                    Ok(Duration::new(secs, 0) + Duration::from_nanos(nanos as u64))
                }
                SecsForm::Secs(s) => Duration::try_from_secs_f64(s)
                    .map_err(|_| E::custom(format!("{s} is not a number of seconds"))),
            }
        }
    }

    /// A wall time as people say it: `0.5 s`, `45 s`, `2 min`, `1 min 30 s`.
    pub fn human(d: Duration) -> String {
        let s = d.as_secs_f64();
        if s < 10.0 {
            let v = format!("{s:.1}");
            return format!("{} s", v.trim_end_matches('0').trim_end_matches('.'));
        }
        let whole = s.round() as u64;
        match (whole / 60, whole % 60) {
            (0, sec) => format!("{sec} s"),
            (min, 0) => format!("{min} min"),
            (min, sec) => format!("{min} min {sec} s"),
        }
    }

    /// As seconds.
    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64())
    }

    /// From seconds (or `{secs, nanos}`).
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        SecsForm::deserialize(d)?.value()
    }

    /// The same for a duration that may be absent.
    pub mod option {
        use super::SecsForm;
        use serde::{Deserialize, Deserializer, Serializer};
        use std::time::Duration;

        /// As seconds or null.
        pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
            match d {
                Some(d) => super::serialize(d, s),
                None => s.serialize_none(),
            }
        }

        /// From seconds, `{secs, nanos}` or null.
        pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
            Option::<SecsForm>::deserialize(d)?
                .map(SecsForm::value)
                .transpose()
        }
    }
}

/// What one run cost, in raw units.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Counters {
    /// Wall time.
    #[serde(with = "crate::measure::secs")]
    #[schemars(with = "f64")]
    pub wall: Duration,
    /// User CPU time.
    #[serde(with = "crate::measure::secs")]
    #[schemars(with = "f64")]
    pub user: Duration,
    /// System CPU time.
    #[serde(with = "crate::measure::secs")]
    #[schemars(with = "f64")]
    pub sys: Duration,
    /// Minor page faults.
    pub minor_faults: u64,
    /// Major page faults.
    pub major_faults: u64,
    /// Context switches, voluntary and involuntary.
    pub context_switches: u64,
    /// Bytes this process caused to be read from the device (`/proc/self/io` read_bytes);
    /// absent where the kernel has no task I/O accounting.
    pub device_read_bytes: Option<u64>,
}

/// Runs `work`, timing only it.
pub fn measure<T>(work: impl FnOnce() -> T) -> (T, Counters) {
    let before = Snapshot::now();
    let start = Instant::now();
    let out = work();
    let wall = start.elapsed();
    let after = Snapshot::now();
    (out, diff(&before, &after, wall))
}

/// The counters between two snapshots.
pub fn diff(before: &Snapshot, after: &Snapshot, wall: Duration) -> Counters {
    let (b, a) = (before.usage, after.usage);
    Counters {
        wall,
        user: Duration::from_micros(a.user_us.saturating_sub(b.user_us)),
        sys: Duration::from_micros(a.sys_us.saturating_sub(b.sys_us)),
        minor_faults: a.minflt.saturating_sub(b.minflt),
        major_faults: a.majflt.saturating_sub(b.majflt),
        context_switches: a.ctxsw.saturating_sub(b.ctxsw),
        device_read_bytes: match (before.device_read, after.device_read) {
            (Some(x), Some(y)) => Some(y.saturating_sub(x)),
            _ => None,
        },
    }
}

/// `read_bytes` of `/proc/self/io`.
pub fn proc_self_read_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/io").ok()?;
    parse_io_field(&text, "read_bytes")
}

/// One `field:` of a `/proc/.../io` text, as a number.
pub fn parse_io_field(text: &str, field: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wall_times_read_as_people_say_them() {
        let h = |ms: u64| secs::human(Duration::from_millis(ms));
        assert_eq!(h(500), "0.5 s");
        assert_eq!(h(3000), "3 s");
        assert_eq!(h(45_000), "45 s");
        assert_eq!(h(120_000), "2 min");
        assert_eq!(h(90_400), "1 min 30 s");
    }

    #[test]
    fn durations_are_written_as_seconds_and_both_forms_read() {
        let c = Counters {
            wall: Duration::from_millis(1500),
            ..Counters::default()
        };
        let v = serde_json::to_value(c).unwrap();
        assert_eq!(v["wall"], 1.5);
        let back: Counters = serde_json::from_value(v).unwrap();
        assert_eq!(back.wall, Duration::from_millis(1500));
        let mut old = serde_json::to_value(c).unwrap();
        old["wall"] = serde_json::json!({"secs": 2, "nanos": 5});
        let back: Counters = serde_json::from_value(old.clone()).unwrap();
        assert_eq!(back.wall, Duration::new(2, 5));
        old["wall"] = serde_json::json!(-1.0);
        assert!(
            serde_json::from_value::<Counters>(old).is_err(),
            "negative seconds"
        );
    }

    #[test]
    fn parses_proc_io() {
        let sample = "rchar: 10\nwchar: 2\nsyscr: 1\nsyscw: 1\nread_bytes: 8192\nwrite_bytes: 0\ncancelled_write_bytes: 0\n";
        assert_eq!(parse_io_field(sample, "read_bytes"), Some(8192));
        assert_eq!(parse_io_field(sample, "rchar"), Some(10));
        assert_eq!(parse_io_field(sample, "nope"), None);
    }

    #[test]
    fn measures_cpu_time_of_busy_work() {
        let (x, c) = measure(|| (0..20_000_000u64).fold(0u64, |a, b| a ^ b.wrapping_mul(31)));
        assert!(x > 0);
        assert!(c.wall > Duration::ZERO);
        assert!(c.user + c.sys <= c.wall + Duration::from_millis(20));
    }
}
