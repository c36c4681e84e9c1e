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
