//! What the page cache did for a traced program, as only the kernel tracer sees it: per file,
//! the bytes its calls and faults brought into the cache (read from storage) and the bytes
//! it dirtied; for the whole run, the same summed with what went to file-system metadata.

use serde::{Deserialize, Serialize};

/// The page cache's work for the program on one file (`--tracer ebpf`).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct CacheWork {
    /// Bytes its read-like calls brought into the cache: read from storage (readahead
    /// included: pages brought in ahead of the reads).
    pub by_reads: u64,
    /// Bytes its page faults on mappings of the file brought in (fault-around included).
    pub by_faults: u64,
    /// Bytes brought in for its io_uring requests (in io_uring_enter, or by io_uring's workers).
    pub by_uring: u64,
    /// Bytes other calls brought in (exec, `readahead`, `fadvise WILLNEED`, a populated mmap).
    pub by_other: u64,
    /// Bytes of pages its writes added to the cache (made, mostly not read).
    pub by_writes: u64,
    /// Bytes it dirtied (the kernel counts them in write_bytes).
    pub dirtied: u64,
    /// Read-like calls that brought pages into the cache (the others the cache served whole).
    pub reads_missed: u64,
    /// Bytes read with O_DIRECT: from storage, bypassing the cache (never served by it).
    #[serde(default)]
    pub direct: u64,
}

impl CacheWork {
    /// Bytes read from storage for the program: into the cache (all but what writes made),
    /// and past it with O_DIRECT.
    pub fn from_storage(&self) -> u64 {
        self.by_reads + self.by_faults + self.by_uring + self.by_other + self.direct
    }

    /// Of `read` bytes its read calls and io_uring reads returned, the bytes the page cache
    /// already held: those not brought in for them (what readahead brought ahead for later
    /// reads counts once, at the read that brought it). None when nothing was read.
    pub fn served(&self, read: u64) -> Option<u64> {
        (read > 0).then(|| read.saturating_sub(self.by_reads + self.by_uring + self.direct))
    }
}

/// Over `files` (bytes read, the page cache's work), the share of the bytes read that the
/// cache served: None when none of them was read with the kernel tracer.
pub fn hit_ratio<'a>(files: impl IntoIterator<Item = (u64, Option<&'a CacheWork>)>) -> Option<f64> {
    let (mut read, mut served) = (0u64, 0u64);
    for (r, w) in files {
        if let Some(s) = w.and_then(|w| w.served(r)) {
            read += r;
            served += s;
        }
    }
    (read > 0).then(|| served as f64 / read as f64)
}

/// The page cache's work for the whole run (`--tracer ebpf`), checked against the kernel's
/// own read_bytes and write_bytes.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct CacheSeen {
    /// Bytes brought into the page cache by the program's threads, every file.
    pub added: u64,
    /// Of them, pages its writes made.
    pub by_writes: u64,
    /// Of them, file-system metadata (inodes, directories, extents: a block device's cache).
    pub metadata: u64,
    /// Of them, files the trace has no other record of (not opened, not mapped by it).
    pub unnamed: u64,
    /// Bytes the program dirtied, every file.
    pub dirtied: u64,
    /// Files whose work was not counted: the probes' table was full.
    pub files_lost: u64,
    /// Bytes read with O_DIRECT, every file: from storage, past the cache.
    #[serde(default)]
    pub direct: u64,
}

impl CacheSeen {
    /// Bytes read from storage for the program: into the cache, every file and metadata, and
    /// past it with O_DIRECT.
    pub fn from_storage(&self) -> u64 {
        self.added.saturating_sub(self.by_writes) + self.direct
    }
}
