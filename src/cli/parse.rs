//! Value parsers for clap: sizes, counts, methods; every error names the text and the expected form.

use crate::cache::CacheMode;
use crate::engine::ReadMethod;
use crate::engine::write::{SyncMode, WriteMethod};
use crate::workload::Pattern;

pub fn size(text: &str) -> Result<u64, String> {
    crate::size::parse_size(text).map_err(|e| e.cause)
}

pub fn count(text: &str) -> Result<u64, String> {
    text.trim()
        .parse::<u64>()
        .map_err(|_| format!("expected a whole number of blocks from 1 to {}", u64::MAX))
}

fn names<T: Copy>(all: &[T], name: impl Fn(T) -> &'static str) -> String {
    all.iter().map(|m| name(*m)).collect::<Vec<_>>().join(", ")
}

pub fn read_method(text: &str) -> Result<ReadMethod, String> {
    ReadMethod::parse(text).ok_or_else(|| {
        format!(
            "unknown read method; expected one of: {}",
            names(&ReadMethod::ALL, ReadMethod::name)
        )
    })
}

pub fn write_method(text: &str) -> Result<WriteMethod, String> {
    WriteMethod::parse(text).ok_or_else(|| {
        format!(
            "unknown write method; expected one of: {}",
            names(&WriteMethod::ALL, WriteMethod::name)
        )
    })
}

pub fn sync_mode(text: &str) -> Result<SyncMode, String> {
    SyncMode::parse(text).ok_or_else(|| {
        format!(
            "unknown sync mode; expected one of: {}",
            names(&SyncMode::ALL, SyncMode::name)
        )
    })
}

pub fn cache_mode(text: &str) -> Result<CacheMode, String> {
    match text.trim().to_ascii_lowercase().as_str() {
        "warm" => Ok(CacheMode::Warm),
        "cold" => Ok(CacheMode::Cold),
        "asis" | "as-is" => Ok(CacheMode::Asis),
        _ => Err("expected warm, cold or asis".into()),
    }
}

pub fn pattern(text: &str) -> Result<Pattern, String> {
    match text.trim().to_ascii_lowercase().as_str() {
        "seq" | "sequential" => Ok(Pattern::Seq),
        "random" | "rand" => Ok(Pattern::Random),
        _ => Err("expected seq or random".into()),
    }
}

pub fn threads(text: &str) -> Result<usize, String> {
    match text.trim().parse::<usize>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(n) if n <= 1024 => Ok(n),
        _ => Err("expected a whole number from 1 to 1024".into()),
    }
}

pub fn positive(text: &str) -> Result<usize, String> {
    match text.trim().parse::<usize>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(n) => Ok(n),
        Err(_) => Err("expected a whole number of at least 1".into()),
    }
}

pub fn depth(text: &str) -> Result<u32, String> {
    match text.trim().parse::<u32>() {
        Ok(n) if (1..=4096).contains(&n) => Ok(n),
        _ => Err("expected a queue depth from 1 to 4096".into()),
    }
}

pub fn send_method(text: &str) -> Result<crate::transfer::SendMethod, String> {
    crate::transfer::SendMethod::parse(text)
        .ok_or_else(|| "expected read (or fcntl), mmap, sendfile or splice".into())
}

pub fn recv_method(text: &str) -> Result<crate::transfer::RecvMethod, String> {
    crate::transfer::RecvMethod::parse(text)
        .ok_or_else(|| "expected write (or fcntl), mmap or splice".into())
}

/// `SENDER:RECEIVER`, e.g. `sendfile:splice`.
pub fn method_pair(
    text: &str,
) -> Result<(crate::transfer::SendMethod, crate::transfer::RecvMethod), String> {
    let (s, r) = text
        .split_once(':')
        .ok_or_else(|| format!("'{text}': expected SENDER:RECEIVER, e.g. read:write"))?;
    Ok((send_method(s)?, recv_method(r)?))
}

/// A duration that may be zero (`0`, `0s`).
pub fn duration_or_zero(text: &str) -> Result<std::time::Duration, String> {
    if text.trim().trim_end_matches('s').trim() == "0" {
        return Ok(std::time::Duration::ZERO);
    }
    duration(text)
}

/// A duration: `5s`, `500ms`, `200us`, `1m`, or plain seconds (`2.5`).
pub fn duration(text: &str) -> Result<std::time::Duration, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let value: f64 = num
        .parse()
        .map_err(|_| format!("invalid duration '{text}': expected e.g. 5s, 500ms, 200us, 1m"))?;
    let scale = match unit.trim() {
        "" | "s" => 1.0,
        "ms" => 1e-3,
        "us" | "µs" => 1e-6,
        "ns" => 1e-9,
        "m" | "min" => 60.0,
        _ => {
            return Err(format!(
                "invalid duration '{text}': unknown unit '{unit}'; expected ns, us, ms, s or m"
            ));
        }
    };
    let secs = value * scale;
    if !secs.is_finite() || secs <= 0.0 || secs > 1e9 {
        return Err(format!("invalid duration '{text}': must be above zero"));
    }
    Ok(std::time::Duration::from_secs_f64(secs))
}

/// A time window `MIN..MAX`, e.g. `5s..15s`.
pub fn window(text: &str) -> Result<(std::time::Duration, std::time::Duration), String> {
    let (a, b) = text
        .split_once("..")
        .ok_or_else(|| format!("invalid window '{text}': expected MIN..MAX, e.g. 5s..15s"))?;
    let (lo, hi) = (duration(a)?, duration(b)?);
    if lo >= hi {
        return Err(format!("invalid window '{text}': MIN must be below MAX"));
    }
    Ok((lo, hi))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn durations_and_windows() {
        assert_eq!(duration("5s").unwrap(), Duration::from_secs(5));
        assert_eq!(duration("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(duration("1.5").unwrap(), Duration::from_millis(1500));
        assert_eq!(duration("1m").unwrap(), Duration::from_secs(60));
        for bad in ["", "0", "-1s", "5x", "s"] {
            assert!(duration(bad).is_err(), "{bad}");
        }
        assert_eq!(
            window("1ms..50ms").unwrap(),
            (Duration::from_millis(1), Duration::from_millis(50))
        );
        assert!(window("5s").is_err());
        assert!(window("15s..5s").is_err());
    }
}
