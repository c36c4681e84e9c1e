//! The page cache: how much of a file is resident (`mincore`), evicting it (`fdatasync` +
//! `posix_fadvise(DONTNEED)`, and as root `drop_caches`), loading it, and `/proc/meminfo`.
//! Root-only steps are detected; without root they are skipped with the reason.

pub mod cgroup;
pub mod meminfo;

use crate::error::{Error, Result, describe_io};
use crate::source::pread_full;
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::path::Path;

/// Set `IOLAB_NO_ROOT=1` to make iolab behave as if it were not root (to test that path).
pub const NO_ROOT_ENV: &str = "IOLAB_NO_ROOT";

/// Whether root-only steps may be used.
pub fn have_root() -> bool {
    crate::sys::is_root() && std::env::var_os(NO_ROOT_ENV).is_none_or(|v| v.is_empty() || v == "0")
}

/// Resident pages of a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Residency {
    /// Pages of the range in the page cache.
    pub resident_pages: u64,
    /// Pages in the range.
    pub total_pages: u64,
    /// The page size the counts are in.
    pub page_size: u64,
}

impl Residency {
    /// Resident fraction, 0..=1 (an empty range counts as resident).
    pub fn fraction(&self) -> f64 {
        if self.total_pages == 0 {
            1.0
        } else {
            self.resident_pages as f64 / self.total_pages as f64
        }
    }

    /// Resident share in percent.
    pub fn percent(&self) -> f64 {
        100.0 * self.fraction()
    }
}

/// Residency of the first `len` bytes of an open file, by `cachestat(2)` where the kernel has it
/// (it counts cached folios and is many times faster than `mincore` on large files), else `mincore`.
pub fn residency_of(file: &File, len: u64, path: &Path) -> Result<Residency> {
    let page = crate::sys::page_size() as u64;
    if let Some((cached, _dirty)) = crate::sys::map::cachestat(file, 0, len) {
        return Ok(Residency {
            resident_pages: cached,
            total_pages: len.div_ceil(page),
            page_size: page,
        });
    }
    residency_by_mincore(file, len, path)
}

/// Residency by `mincore` alone.
pub fn residency_by_mincore(file: &File, len: u64, path: &Path) -> Result<Residency> {
    let (resident_pages, total_pages) = crate::sys::map::residency(file, len)
        .map_err(|e| Error::failed("cannot check residency", describe_io(&e)).at(path))?;
    Ok(Residency {
        resident_pages,
        total_pages,
        page_size: crate::sys::page_size() as u64,
    })
}

/// Resident fraction of each of `buckets` equal slices of the first `len` bytes: by `cachestat`
/// per slice where the kernel has it, else one `mincore` walk. Empty for an empty file.
pub fn residency_map(file: &File, len: u64, buckets: usize, path: &Path) -> Result<Vec<f64>> {
    let cachestat = crate::sys::map::cachestat(file, 0, 4096).is_some();
    residency_map_by(file, len, buckets, path, cachestat)
}

fn residency_map_by(
    file: &File,
    len: u64,
    buckets: usize,
    path: &Path,
    cachestat: bool,
) -> Result<Vec<f64>> {
    let page = crate::sys::page_size() as u64;
    let pages = len.div_ceil(page);
    if pages == 0 || buckets == 0 {
        return Ok(Vec::new());
    }
    let n = (buckets as u64).min(pages);
    // Slice i holds the pages p with p * n / pages == i.
    let bounds = |i: u64| ((pages * i).div_ceil(n), (pages * (i + 1)).div_ceil(n));
    if cachestat {
        return (0..n)
            .map(|i| {
                let (a, b) = bounds(i);
                let (cached, _) = crate::sys::map::cachestat(file, a * page, (b - a) * page)
                    .ok_or_else(|| {
                        Error::failed("cannot check residency", "cachestat failed").at(path)
                    })?;
                Ok(cached as f64 / (b - a) as f64)
            })
            .collect();
    }
    let mut counts = vec![0u64; n as usize];
    crate::sys::map::mincore_walk(file, len, |p, r| {
        if r {
            counts[(p * n / pages) as usize] += 1;
        }
    })
    .map_err(|e| Error::failed("cannot check residency", describe_io(&e)).at(path))?;
    Ok((0..n)
        .map(|i| {
            let (a, b) = bounds(i);
            counts[i as usize] as f64 / (b - a) as f64
        })
        .collect())
}

/// Residency of a whole file by path.
pub fn residency(path: &Path) -> Result<Residency> {
    let src = crate::source::open_source(path)?;
    residency_of(&src.file, src.size, path)
}

/// What an eviction did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct EvictReport {
    /// drop_caches was written too (root).
    pub dropped_all: bool,
    /// Why `drop_caches` was not used when it was asked for.
    pub drop_all_skipped: Option<String>,
}

/// Evicts a file: `fdatasync` (dirty pages cannot be dropped), then `POSIX_FADV_DONTNEED`;
/// with `drop_all`, and only as root, also `sync` and `echo 3 > /proc/sys/vm/drop_caches`.
pub fn evict(file: &File, path: &Path, drop_all: bool) -> Result<EvictReport> {
    // A read-only descriptor may refuse fdatasync on some filesystems; eviction still proceeds.
    let _ = file.sync_data();
    crate::sys::fadvise(file, libc::POSIX_FADV_DONTNEED)
        .map_err(|e| Error::failed("cannot evict", describe_io(&e)).at(path))?;
    let mut report = EvictReport {
        dropped_all: false,
        drop_all_skipped: None,
    };
    if drop_all {
        match drop_all_caches() {
            Ok(()) => report.dropped_all = true,
            Err(why) => report.drop_all_skipped = Some(why),
        }
    }
    Ok(report)
}

/// `sync; echo 3 > /proc/sys/vm/drop_caches`; the reason it could not, otherwise.
pub fn drop_all_caches() -> Result<(), String> {
    if !have_root() {
        return Err("needs root: dropping all caches writes /proc/sys/vm/drop_caches; evicted this file only (fadvise)".into());
    }
    crate::sys::sync_all_filesystems();
    std::fs::write("/proc/sys/vm/drop_caches", "3\n")
        .map_err(|e| format!("cannot write /proc/sys/vm/drop_caches: {}", describe_io(&e)))
}

/// Loads a file into the page cache by reading it through once (WILLNEED first, so readahead
/// is generous).
pub fn load(file: &File, len: u64, path: &Path) -> Result<()> {
    let _ = crate::sys::fadvise(file, libc::POSIX_FADV_WILLNEED);
    let mut buf = crate::sys::buf::AlignedBuf::new(1 << 20);
    let mut off = 0u64;
    while off < len {
        let n = pread_full(file, buf.as_mut_slice(), off)
            .map_err(|e| Error::io("cannot load", path, &e))?;
        if n == 0 {
            break;
        }
        off += n as u64;
    }
    Ok(())
}

/// How long a whole read keeps a file warm for [`load_again`]: well under the minute after
/// which idle pages are reclaimed or handed back here (DESIGN section 7).
const TOUCHED_FOR: std::time::Duration = std::time::Duration::from_secs(10);

/// [`load`] for a warm run: skipped when this process read the same bytes of the file whole
/// less than [`TOUCHED_FOR`] ago and every page is still resident (and the caller sees it), so
/// that a run of warm cells in a row reads a 1 GiB file once, not once per cell (100 ms each).
fn load_again(file: &File, len: u64, path: &Path) -> Result<()> {
    use std::collections::HashMap;
    use std::os::unix::fs::MetadataExt;
    use std::sync::Mutex;
    use std::time::Instant;
    /// When each (device, inode, length) was last read whole.
    type Loads = HashMap<(u64, u64, u64), Instant>;
    static LOADED: Mutex<Option<Loads>> = Mutex::new(None);
    let key = file.metadata().ok().map(|m| (m.dev(), m.ino(), len));
    let recent = key.is_some_and(|k| {
        LOADED
            .lock()
            .ok()
            .and_then(|g| g.as_ref().and_then(|m| m.get(&k).copied()))
            .is_some_and(|t| t.elapsed() < TOUCHED_FOR)
    });
    if recent
        && residency_visible(file, path)
        && residency_of(file, len, path).is_ok_and(|r| r.resident_pages >= r.total_pages)
    {
        return Ok(());
    }
    load(file, len, path)?;
    if let (Some(k), Ok(mut g)) = (key, LOADED.lock()) {
        g.get_or_insert_with(HashMap::new).insert(k, Instant::now());
    }
    Ok(())
}

crate::named_enum! {
    /// How the cache should be before a run.
    pub enum CacheMode {
        /// Loaded and verified resident.
        Warm = "warm",
        /// Evicted and verified not resident.
        Cold = "cold",
        /// As it is: nothing done, the residency recorded.
        Asis = "asis" | "as-is",
    }
}

/// The cache state a run started from, as verified.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CacheState {
    /// The state asked for.
    pub asked: CacheMode,
    /// The residency measured just before the run.
    pub residency: Residency,
    /// The verified state matches what was asked (always true for `asis`).
    pub verified: bool,
    /// drop_caches was written (root).
    pub dropped_all: bool,
    /// Why the state differs from the one asked, or what could not be done.
    pub note: Option<String>,
    /// Whether the kernel shows this caller the file's residency. It hides it (mincore and
    /// cachestat then say every page is resident) from a caller that neither owns the file nor
    /// may write it, unless privileged; `residency` means nothing then, and the state is judged
    /// from the run's device reads ([`CacheState::judge_by_device`]).
    #[serde(default = "visible_by_default")]
    pub visible: bool,
}

/// Results written before residency could be hidden read as visible.
pub fn visible_by_default() -> bool {
    true
}

/// Whether the kernel shows this caller the residency of `file` (at `path`): as root (the
/// privilege the kernel asks for), for the file's owner, or for a caller who may write it.
pub fn residency_visible(file: &File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    if crate::sys::is_root() {
        return true;
    }
    let owner = file
        .metadata()
        .map(|m| m.uid() == crate::sys::euid())
        .unwrap_or(false);
    owner || crate::sys::may_write(path)
}

impl CacheState {
    /// The state of no file at all (a cell of no bytes): verified, nothing resident.
    pub fn nothing(asked: CacheMode) -> CacheState {
        CacheState {
            asked,
            residency: Residency {
                resident_pages: 0,
                total_pages: 0,
                page_size: crate::sys::page_size() as u64,
            },
            verified: true,
            dropped_all: false,
            note: None,
            visible: true,
        }
    }

    /// Two files' states as one: pages summed, verified and visible only if both are, the
    /// first note kept.
    pub fn and(self, other: CacheState) -> CacheState {
        CacheState {
            asked: self.asked,
            residency: Residency {
                resident_pages: self.residency.resident_pages + other.residency.resident_pages,
                total_pages: self.residency.total_pages + other.residency.total_pages,
                page_size: self.residency.page_size,
            },
            verified: self.verified && other.verified,
            dropped_all: self.dropped_all || other.dropped_all,
            note: self.note.or(other.note),
            visible: self.visible && other.visible,
        }
    }

    /// Where residency is hidden: judges the state from what the run read from the device
    /// (`device_bytes`, /proc/self/io) against the bytes it used (`moved`). Cold: the device
    /// supplied at least [`DEVICE_COLD_MIN`] of them; warm: at most [`DEVICE_WARM_MAX`]. Without
    /// a device counter the state stays unverified. Does nothing where residency is visible.
    pub fn judge_by_device(&mut self, moved: u64, device_bytes: Option<u64>) {
        if self.visible || self.asked == CacheMode::Asis {
            return;
        }
        let Some(dev) = device_bytes else {
            self.verified = false;
            self.note = Some("residency not visible to this user and no device counter: the cache state is not verified".into());
            return;
        };
        let share = if moved == 0 {
            0.0
        } else {
            dev as f64 / moved as f64
        };
        self.verified = match self.asked {
            CacheMode::Cold => share >= DEVICE_COLD_MIN,
            _ => share <= DEVICE_WARM_MAX,
        };
        self.note = Some(format!(
            "residency not visible to this user (the kernel hides it from a caller who cannot write the file): judged from the device, which supplied {:.0}% of the bytes read",
            100.0 * share
        ));
    }
}

/// Hidden residency: a run counts as cold when the device supplied at least this share of the
/// bytes it read.
pub const DEVICE_COLD_MIN: f64 = 0.9;
/// Hidden residency: a run counts as warm when the device supplied at most this share.
pub const DEVICE_WARM_MAX: f64 = 0.02;

/// Resident fraction at or below which a file counts as cold.
pub const COLD_MAX: f64 = 0.02;
/// Resident fraction at or above which a file counts as warm.
pub const WARM_MIN: f64 = 0.99;

/// Puts a file into the asked state and verifies it with `mincore` (untimed preparation).
pub fn prepare(
    file: &File,
    len: u64,
    path: &Path,
    mode: CacheMode,
    drop_all: bool,
) -> Result<CacheState> {
    let mut note = None;
    let mut dropped_all = false;
    match mode {
        CacheMode::Warm => load_again(file, len, path)?,
        CacheMode::Cold => {
            let r = evict(file, path, drop_all)?;
            dropped_all = r.dropped_all;
            note = r.drop_all_skipped;
        }
        CacheMode::Asis => {}
    }
    let residency = residency_of(file, len, path)?;
    let visible = residency_visible(file, path);
    let f = residency.fraction();
    // Hidden residency reads as all resident: verified only after the run, from the device.
    let verified = match mode {
        CacheMode::Warm => visible && f >= WARM_MIN,
        CacheMode::Cold => visible && f <= COLD_MAX,
        CacheMode::Asis => true,
    };
    if !visible && mode != CacheMode::Asis {
        note =
            Some("residency not visible to this user: judged from the run's device reads".into());
    } else if !verified {
        note = Some(match mode {
            CacheMode::Cold => format!(
                "not cold: {:.1}% still resident after eviction (the filesystem may ignore fadvise, e.g. tmpfs, or pages are mapped)",
                residency.percent()
            ),
            _ => format!(
                "not warm: only {:.1}% resident after loading (memory pressure?)",
                residency.percent()
            ),
        });
    }
    Ok(CacheState {
        asked: mode,
        residency,
        verified,
        dropped_all,
        note,
        visible,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn residency_map_agrees_between_cachestat_and_mincore() {
        let (_dir, path) = crate::testutil::file_with("m", &vec![1u8; 1000 * 4096 + 7]);
        let f = File::open(&path).unwrap();
        let len = f.metadata().unwrap().len();
        evict(&f, &path, false).unwrap();
        // Load only the first tenth.
        let mut buf = vec![0u8; 100 * 4096];
        crate::source::pread_full(&f, &mut buf, 0).unwrap();
        let by_mincore = residency_map_by(&f, len, 7, &path, false).unwrap();
        assert_eq!(by_mincore.len(), 7);
        assert!(by_mincore[0] > 0.5, "{by_mincore:?}");
        if crate::sys::map::cachestat(&f, 0, 4096).is_some() {
            let by_cachestat = residency_map_by(&f, len, 7, &path, true).unwrap();
            for (a, b) in by_mincore.iter().zip(&by_cachestat) {
                assert!((a - b).abs() < 0.05, "{by_mincore:?} vs {by_cachestat:?}");
            }
        }
        assert_eq!(residency_map(&f, 0, 7, &path).unwrap(), Vec::<f64>::new());
        assert_eq!(residency_map(&f, 4096, 7, &path).unwrap().len(), 1);
    }
}
