//! `/proc/meminfo`: the page-cache figures.

use serde::{Deserialize, Serialize};

/// The page-cache lines of `/proc/meminfo`, in bytes.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
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
    /// MemFree, bytes.
    #[serde(default)]
    pub mem_free: u64,
    /// Shmem (tmpfs and shared memory), bytes.
    #[serde(default)]
    pub shmem: u64,
    /// SReclaimable (reclaimable slab, counted in buff/cache by `free`), bytes.
    #[serde(default)]
    pub sreclaimable: u64,
}

/// The `Mem:` line of `free -m`, in MiB, computed as procps computes it.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct FreeLine {
    /// total.
    pub total: u64,
    /// used = total - available (procps-ng 4; older versions printed total - free - buff/cache).
    pub used: u64,
    /// free.
    pub free: u64,
    /// shared (Shmem).
    pub shared: u64,
    /// buff/cache = Buffers + Cached + SReclaimable.
    pub buff_cache: u64,
    /// available.
    pub available: u64,
}

impl PageCache {
    /// What `free -m` would print on its `Mem:` line.
    pub fn free_m(&self) -> FreeLine {
        let mib = |b: u64| b >> 20;
        let cache = self.buffers + self.cached + self.sreclaimable;
        FreeLine {
            total: mib(self.mem_total),
            used: mib(self.mem_total.saturating_sub(self.mem_available)),
            free: mib(self.mem_free),
            shared: mib(self.shmem),
            buff_cache: mib(cache),
            available: mib(self.mem_available),
        }
    }
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
            "MemFree" => p.mem_free = v,
            "Shmem" => p.shmem = v,
            "SReclaimable" => p.sreclaimable = v,
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

    #[test]
    fn free_m_computes_as_procps() {
        // Taken on this machine kind together with `free -m` (procps-ng 4.0), which printed
        // Mem: 24105 275 23911 8 101 23830
        let s = "MemTotal:       24684084 kB\nMemFree:        24485416 kB\nMemAvailable:   24402156 kB\nBuffers:            1628 kB\nCached:            91668 kB\nShmem:              8872 kB\nSReclaimable:      10720 kB\n";
        let f = parse(s).free_m();
        assert_eq!(
            (f.total, f.used, f.free, f.shared, f.buff_cache, f.available),
            (24105, 275, 23911, 8, 101, 23830)
        );
    }
}
