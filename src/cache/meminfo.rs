//! `/proc/meminfo`: the page-cache figures.

use serde::{Deserialize, Serialize};

/// The page-cache lines of `/proc/meminfo`, in bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageCache {
    /// MemTotal, bytes.
    pub mem_total: u64,
    /// MemAvailable, bytes.
    pub mem_available: u64,
    /// Cached: the page cache, bytes.
    pub cached: u64,
    /// Buffers, bytes.
    pub buffers: u64,
    /// Dirty: waiting to be written back, bytes.
    pub dirty: u64,
    /// Writeback: being written back, bytes.
    pub writeback: u64,
    /// Active(file), bytes.
    pub active_file: u64,
    /// Inactive(file), bytes.
    pub inactive_file: u64,
}

/// Parses meminfo text (values in kB).
pub fn parse(text: &str) -> PageCache {
    let mut p = PageCache::default();
    for line in text.lines() {
        let Some((key, rest)) = line.split_once(':') else {
            continue;
        };
        let kb: u64 = rest
            .split_whitespace()
            .next()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        let v = kb * 1024;
        match key {
            "MemTotal" => p.mem_total = v,
            "MemAvailable" => p.mem_available = v,
            "Cached" => p.cached = v,
            "Buffers" => p.buffers = v,
            "Dirty" => p.dirty = v,
            "Writeback" => p.writeback = v,
            "Active(file)" => p.active_file = v,
            "Inactive(file)" => p.inactive_file = v,
            _ => {}
        }
    }
    p
}

/// Reads `/proc/meminfo`; zeros where it cannot be read.
pub fn read() -> PageCache {
    std::fs::read_to_string("/proc/meminfo")
        .map(|t| parse(&t))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_sample() {
        let s = "MemTotal:       24000000 kB\nMemFree: 1 kB\nBuffers:            1024 kB\nCached:          2048 kB\nActive(file):      10 kB\nInactive(file):    20 kB\nDirty: 3 kB\n";
        let p = parse(s);
        assert_eq!(p.mem_total, 24_000_000 * 1024);
        assert_eq!(p.cached, 2048 * 1024);
        assert_eq!(p.buffers, 1024 * 1024);
        assert_eq!(p.active_file, 10 * 1024);
        assert_eq!(p.inactive_file, 20 * 1024);
        assert_eq!(p.dirty, 3 * 1024);
        assert!(read().mem_total > 0);
    }
}
