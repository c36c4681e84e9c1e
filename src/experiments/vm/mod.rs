//! `iolab vm FILE`: the pmap lab, automated. The process maps a file and walks through stages
//! (start, after mmap, after touching chosen offsets, after touching every page; with `--write`
//! the same through a writable shared mapping, then msync), reading its own `/proc/self/smaps`
//! at each, with the deltas, the faults, an explanation computed from them, and the pagemap /
//! kpageflags of each touched page.

use crate::cache::CacheMode;
use crate::cache::meminfo::{self, PageCache};
use crate::engine::Source;
use crate::error::{Error, Result, describe_io};
use crate::harness::{self, CacheSpec};
use crate::sys::map::{Mapping, WritableMapping};
use crate::vm::pagemap::{self, PageEntry};
use crate::vm::smaps::{self, MapRow};
use serde::{Deserialize, Serialize};
use std::fs::OpenOptions;
use std::path::PathBuf;

pub mod report;
pub mod suite;

/// What `iolab vm` does.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct VmConfig {
    /// The file to map.
    pub path: PathBuf,
    /// Offsets to touch one at a time before touching every page.
    pub touches: Vec<u64>,
    /// Repeat the stages writing through a MAP_SHARED mapping (each byte written back unchanged).
    pub write: bool,
    /// Evict the file first, so touches fault from the device.
    pub evict: bool,
    /// Also show /proc/meminfo before and after reading the whole file.
    pub page_cache: bool,
}

/// One touched page's descriptor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PageInfo {
    /// Offset of the page in the file.
    pub offset: u64,
    /// What pagemap (and kpageflags) say of it.
    pub entry: PageEntry,
    /// kpageflags by name; `None` when they cannot be read (not root).
    pub flags: Option<Vec<String>>,
}

/// What changed between two stages.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Delta {
    /// VmSize change, KiB.
    pub vm_size_kb: i64,
    /// VmRSS change, KiB.
    pub vm_rss_kb: i64,
    /// RSS change of the file's mapping, KiB.
    pub map_rss_kb: i64,
    /// Dirty change of the file's mapping, KiB.
    pub map_dirty_kb: i64,
    /// Minor faults taken.
    pub minor_faults: u64,
    /// Major faults taken.
    pub major_faults: u64,
}

/// The process at one stage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Stage {
    /// What was just done.
    pub name: String,
    /// VmSize, KiB.
    pub vm_size_kb: u64,
    /// VmRSS, KiB.
    pub vm_rss_kb: u64,
    /// The pmap -x rows (from /proc/self/smaps).
    pub rows: Vec<MapRow>,
    /// Index in `rows` of the file's mapping, once it exists.
    pub file_row: Option<usize>,
    /// The change since the stage before.
    pub delta: Delta,
    /// What the change means, computed from it.
    pub explanation: String,
    /// Descriptors of the pages touched at this stage.
    pub pages: Vec<PageInfo>,
}

impl Stage {
    /// The row of the file's mapping.
    pub fn map_row(&self) -> Option<&MapRow> {
        self.file_row.map(|i| &self.rows[i])
    }

    /// Totals of Kbytes, RSS and Dirty over every row.
    pub fn totals(&self) -> (u64, u64, u64) {
        self.rows.iter().fold((0, 0, 0), |(a, b, c), r| {
            (a + r.size_kb, b + r.rss_kb, c + r.dirty_kb)
        })
    }
}

/// The page cache before and after reading the whole file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PageCacheChange {
    /// Before.
    pub before: PageCache,
    /// After.
    pub after: PageCache,
    /// Bytes read.
    pub file_size: u64,
}

/// What `iolab vm` found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct VmResult {
    /// The mapped file.
    pub path: PathBuf,
    /// Size of the file in bytes.
    pub file_size: u64,
    /// Where the mapping starts.
    pub map_start: u64,
    /// Every stage, in order.
    pub stages: Vec<Stage>,
    /// Why PFNs and flags are missing, when they are.
    pub page_note: Option<String>,
    /// With `page_cache`: the page cache before and after.
    pub page_cache: Option<PageCacheChange>,
}

struct MemorySnapshot {
    rows: Vec<MapRow>,
    vm: (u64, u64),
    usage: crate::sys::Usage,
}

fn snapshot() -> Result<MemorySnapshot> {
    let usage = crate::sys::rusage_self();
    let rows = smaps::read_self()
        .map_err(|e| Error::failed("cannot read /proc/self/smaps", describe_io(&e)))?;
    Ok(MemorySnapshot {
        rows,
        vm: smaps::read_status(),
        usage,
    })
}

/// Makes a file of `size` seeded random bytes at `path` (for `--create`).
pub fn create_file(path: &std::path::Path, size: u64, force: bool) -> Result<()> {
    if size == 0 {
        return Err(Error::usage(
            "invalid size",
            "--create needs at least 1 byte",
        ));
    }
    if size > 1 << 34 {
        return Err(Error::usage(
            "invalid size",
            "--create makes at most 16 GiB",
        ));
    }
    let mut data = vec![0u8; size as usize];
    crate::workload::fill_random(&mut data, 0x766d);
    crate::output::save(path, &data, force)
}

/// The file, opened for writing when the tour writes, with its size; refuses an empty file and
/// touch offsets past its end (they would raise SIGBUS).
fn open_for(cfg: &VmConfig) -> Result<Source> {
    let src = crate::engine::open_source(&cfg.path)?;
    let size = src.size;
    if size == 0 {
        return Err(Error::usage("nothing to map", "the file is empty").at(&cfg.path));
    }
    for &t in &cfg.touches {
        if t >= size {
            return Err(Error::usage(
                "touch offset past the end",
                format!(
                    "offset {t} is not inside the {size}-byte file (touching it would raise SIGBUS)"
                ),
            )
            .at(&cfg.path));
        }
    }
    if cfg.write {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&cfg.path)
            .map_err(|e| Error::io("cannot open for writing", &cfg.path, &e))?;
        return Ok(Source { file, ..src });
    }
    Ok(src)
}

/// The page cache before and after the file is read in from the device (evicted first; the
/// harness puts it in each state and verifies it).
fn page_cache_change(src: &Source) -> Result<PageCacheChange> {
    harness::put(&CacheSpec::file(src, src.size, CacheMode::Cold, false))?;
    let before = meminfo::read();
    harness::put(&CacheSpec::file(src, src.size, CacheMode::Warm, false))?;
    let after = meminfo::read();
    Ok(PageCacheChange {
        before,
        after,
        file_size: src.size,
    })
}

/// Maps the file and records the process at every stage.
pub fn run_vm(cfg: &VmConfig) -> Result<VmResult> {
    let src = open_for(cfg)?;
    let (file, size) = (&src.file, src.size);
    if cfg.evict {
        harness::put(&CacheSpec::file(&src, size, CacheMode::Cold, false))?;
    }
    let have_root = crate::cache::have_root();
    let start = snapshot()?;
    let mut stages: Vec<Stage> = Vec::new();
    push(
        &mut stages,
        "process start",
        &start,
        &start,
        None,
        Vec::new(),
        |_, _| "before mapping: the program, its libraries, heap and stack".into(),
    );
    let mut map = FileMap::new(file, size as usize, cfg.write)
        .map_err(|e| Error::failed("cannot map", describe_io(&e)).at(&cfg.path))?;
    let base = map.bytes().as_ptr() as u64;
    let mut tour = Tour {
        stages,
        prev: start,
        base,
        have_root,
        page_note: (!have_root).then(|| {
            "PFNs and kpageflags need root (CAP_SYS_ADMIN): showing what pagemap gives everyone (present, file-backed, exclusive, soft-dirty)".to_string()
        }),
    };
    tour.stage("after mmap", &[], |d, row| {
        format!(
            "mmap added {} KiB of address space (VM size {:+} KiB) and nothing else: the mapping's RSS is {} KiB until a page is touched",
            row.map(|r| r.size_kb).unwrap_or(0),
            d.vm_size_kb,
            row.map(|r| r.rss_kb).unwrap_or(0)
        )
    })?;
    let mut modes = vec![false];
    if cfg.write {
        modes.push(true);
    }
    for write in modes {
        touch_stages(&mut tour, &mut map, &cfg.touches, size, write)?;
    }
    if cfg.write {
        map.sync(0, map.len())
            .map_err(|e| Error::io("msync failed", &cfg.path, &e))?;
        tour.stage("after msync", &[], |d, row| {
            format!(
                "msync(MS_SYNC) wrote the dirty pages back: Dirty {:+} KiB, now {} KiB",
                d.map_dirty_kb,
                row.map(|r| r.dirty_kb).unwrap_or(0)
            )
        })?;
    }
    if map.sigbus_hits() > 0 {
        return Err(Error::failed(
            "touch failed",
            "the file was truncated while mapped (SIGBUS caught)",
        )
        .at(&cfg.path));
    }
    drop(map);
    let page_cache = if cfg.page_cache {
        Some(page_cache_change(&src)?)
    } else {
        None
    };
    Ok(VmResult {
        path: cfg.path.clone(),
        file_size: size,
        map_start: base,
        stages: tour.stages,
        page_note: tour.page_note,
        page_cache,
    })
}

/// The stages so far, and what the next is measured against.
struct Tour {
    stages: Vec<Stage>,
    prev: MemorySnapshot,
    /// Where the file is mapped.
    base: u64,
    have_root: bool,
    /// Why page descriptors are incomplete, when they are.
    page_note: Option<String>,
}

impl Tour {
    /// A stage: a snapshot now against the last one, the descriptors of the pages at `offsets`
    /// of the mapping, and what the stage shows.
    fn stage(
        &mut self,
        name: &str,
        offsets: &[u64],
        explain: impl FnOnce(&Delta, Option<&MapRow>) -> String,
    ) -> Result<()> {
        let now = snapshot()?;
        let pages = if offsets.is_empty() {
            Vec::new()
        } else {
            page_info(self.base, offsets, self.have_root, &mut self.page_note)
        };
        push(
            &mut self.stages,
            name,
            &self.prev,
            &now,
            Some(self.base),
            pages,
            explain,
        );
        self.prev = now;
        Ok(())
    }
}

/// Touching (or writing) each of `touches`, then every page, a stage each.
fn touch_stages(
    tour: &mut Tour,
    map: &mut FileMap,
    touches: &[u64],
    size: u64,
    write: bool,
) -> Result<()> {
    let verb = if write { "writing" } else { "touching" };
    for &t in touches {
        map.touch(t, write);
        tour.stage(&format!("after {verb} offset {t}"), &[t], |d, _| {
            explain_touch(d, write)
        })?;
    }
    let page = crate::sys::page_size() as u64;
    for off in (0..size).step_by(page as usize) {
        map.touch(off, write);
    }
    let sample: Vec<u64> = (0..size).step_by(page as usize).take(4).collect();
    let n = size.div_ceil(page);
    tour.stage(&format!("after {verb} every page"), &sample, |d, _| {
        let faults = d.minor_faults + d.major_faults;
        let mut s = format!("{verb} all {n} pages took {faults} fault(s)");
        s.push_str(&per_fault(n, faults));
        if write {
            s.push_str(&format!(
                "; Dirty {:+} KiB: written pages stay dirty in the page cache until written back",
                d.map_dirty_kb
            ));
        }
        s
    })
}

/// The file's mapping: writable only when the write stages will run.
enum FileMap {
    Read(Mapping),
    Write(WritableMapping),
}

impl FileMap {
    fn new(file: &std::fs::File, len: usize, write: bool) -> std::io::Result<FileMap> {
        Ok(if write {
            FileMap::Write(WritableMapping::new(file, len)?)
        } else {
            FileMap::Read(Mapping::new(file, len, false)?)
        })
    }

    fn bytes(&self) -> &[u8] {
        match self {
            FileMap::Read(m) => m.as_slice(),
            FileMap::Write(m) => m.as_slice(),
        }
    }

    /// Reads (or, on a writable mapping, writes back unchanged) one byte.
    fn touch(&mut self, offset: u64, write: bool) {
        let b = std::hint::black_box(self.bytes()[offset as usize]);
        if let (true, FileMap::Write(m)) = (write, self) {
            m.as_mut_slice()[offset as usize] = b;
        }
    }

    fn len(&self) -> usize {
        self.bytes().len()
    }

    fn sync(&self, offset: usize, len: usize) -> std::io::Result<()> {
        match self {
            FileMap::Read(_) => Ok(()),
            FileMap::Write(m) => m.sync(offset, len),
        }
    }

    fn sigbus_hits(&self) -> usize {
        match self {
            FileMap::Read(m) => m.sigbus_hits(),
            FileMap::Write(m) => m.sigbus_hits(),
        }
    }
}

/// ` (N pages per fault: ...)` for `pages` touched with `faults` faults, saying fault-around
/// only when faults did map several pages each.
fn per_fault(pages: u64, faults: u64) -> String {
    if faults == 0 {
        return String::new();
    }
    let each = pages as f64 / faults as f64;
    if each >= 1.5 {
        format!(
            " ({each:.1} pages per fault: fault-around and large folios map many at once; without them it would be one fault and +4 KB per page)"
        )
    } else {
        format!(
            " ({each:.1} pages per fault: about one page each, so no fault-around here; +4 KB per page, as the lab reports saw)"
        )
    }
}

fn explain_touch(d: &Delta, write: bool) -> String {
    let pages = d.map_rss_kb / 4;
    let faults = d.minor_faults + d.major_faults;
    let mut s = match (faults, pages) {
        (0, _) => "no fault: the page was already mapped by an earlier fault".to_string(),
        (f, 0) if write => format!(
            "{f} write fault(s) on a page already mapped read-only: the kernel makes it writable and marks it dirty"
        ),
        (f, p) if p > 1 => format!(
            "{f} fault(s) mapped {p} pages: fault-around and large folios map cached neighbours too (a kernel without fault-around, or a file system without large folios, shows +4 KB per touched page, as the lab reports saw)"
        ),
        (f, 1) => format!(
            "{f} fault(s) mapped 1 page: no fault-around here, +4 KB per touched page as the lab reports saw"
        ),
        (f, _) => format!(
            "the mapping's RSS did not grow: the touched page was already mapped, so the {f} fault(s) counted were the process's own (reading /proc for this table), not the mapping's"
        ),
    };
    if d.major_faults > 0 {
        s.push_str(&format!(
            "; {} major: the data came from the device, readahead fetched more",
            d.major_faults
        ));
    }
    if write && d.map_dirty_kb > 0 {
        s.push_str(&format!(
            "; Dirty +{} KiB: a written page of a shared mapping",
            d.map_dirty_kb
        ));
    }
    s
}

fn page_info(
    base: u64,
    offsets: &[u64],
    have_root: bool,
    note: &mut Option<String>,
) -> Vec<PageInfo> {
    let addrs: Vec<usize> = offsets.iter().map(|o| (base + o) as usize).collect();
    let entries = match pagemap::entries(&addrs) {
        Ok(e) => e,
        Err(e) => {
            *note = Some(format!(
                "cannot read /proc/self/pagemap: {}",
                describe_io(&e)
            ));
            return Vec::new();
        }
    };
    offsets
        .iter()
        .zip(entries)
        .map(|(&offset, mut entry)| {
            if !have_root {
                // What an unprivileged reader sees (also under IOLAB_NO_ROOT when root).
                entry.pfn = 0;
            }
            let flags = if have_root && entry.pfn != 0 {
                match pagemap::flags(entry.pfn) {
                    Ok(raw) => Some(
                        pagemap::decode_flags(raw)
                            .into_iter()
                            .map(String::from)
                            .collect(),
                    ),
                    Err(e) => {
                        *note = Some(format!("cannot read /proc/kpageflags: {}", describe_io(&e)));
                        None
                    }
                }
            } else {
                None
            };
            PageInfo {
                offset,
                entry,
                flags,
            }
        })
        .collect()
}

fn push(
    stages: &mut Vec<Stage>,
    name: &str,
    prev: &MemorySnapshot,
    now: &MemorySnapshot,
    base: Option<u64>,
    pages: Vec<PageInfo>,
    explain: impl FnOnce(&Delta, Option<&MapRow>) -> String,
) {
    let find = |rows: &[MapRow]| base.and_then(|b| rows.iter().position(|r| r.start == b));
    let file_row = find(&now.rows);
    let before = find(&prev.rows).map(|i| &prev.rows[i]);
    let after = file_row.map(|i| &now.rows[i]);
    let kb = |r: Option<&MapRow>, f: fn(&MapRow) -> u64| r.map(f).unwrap_or(0) as i64;
    let delta = Delta {
        vm_size_kb: now.vm.0 as i64 - prev.vm.0 as i64,
        vm_rss_kb: now.vm.1 as i64 - prev.vm.1 as i64,
        map_rss_kb: kb(after, |r| r.rss_kb) - kb(before, |r| r.rss_kb),
        map_dirty_kb: kb(after, |r| r.dirty_kb) - kb(before, |r| r.dirty_kb),
        minor_faults: now.usage.minflt.saturating_sub(prev.usage.minflt),
        major_faults: now.usage.majflt.saturating_sub(prev.usage.majflt),
    };
    let explanation = explain(&delta, after);
    stages.push(Stage {
        name: name.into(),
        vm_size_kb: now.vm.0,
        vm_rss_kb: now.vm.1,
        rows: now.rows.clone(),
        file_row,
        delta,
        explanation,
        pages,
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn delta(rss_kb: i64, minor: u64, major: u64) -> Delta {
        Delta {
            vm_size_kb: 0,
            vm_rss_kb: rss_kb,
            map_rss_kb: rss_kb,
            map_dirty_kb: 0,
            minor_faults: minor,
            major_faults: major,
        }
    }

    #[test]
    fn explanations_do_not_contradict_the_counts() {
        let own = explain_touch(&delta(0, 1, 0), false);
        assert!(
            own.contains("did not grow") && !own.contains("mapped 0"),
            "{own}"
        );
        let one = explain_touch(&delta(4, 1, 0), false);
        assert!(one.contains("no fault-around"), "{one}");
        let many = explain_touch(&delta(64, 1, 1), false);
        assert!(many.contains("mapped 16 pages: fault-around"), "{many}");
        assert!(per_fault(1024, 1024).contains("no fault-around"));
        assert!(per_fault(1024, 65).contains("15.8 pages per fault: fault-around"));
        assert!(!per_fault(10, 10).contains("map many"));
        assert_eq!(per_fault(10, 0), "");
    }
}
