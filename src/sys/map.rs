//! File mappings (`mmap`, `madvise`, `msync`) and page-cache residency (`mincore`).
//! Every mapping is guarded against SIGBUS (see [`super::sigbus`]): if the file shrinks under it,
//! the access reads zeros instead of killing the process and [`Mapping::sigbus_hits`] says so.

use super::sigbus;
use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::sync::Arc;

/// The mapped range itself: one `mmap` of a file, guarded against SIGBUS, unmapped on drop.
/// Which accesses are allowed is the business of the public types around it.
struct RawMap {
    ptr: *mut u8,
    len: usize,
    guard: sigbus::Guard,
    writable: bool,
}

// SAFETY: the mapping is plain memory owned by this value; the public types around it decide who
// may read or write which bytes (shared reads, or exclusive disjoint writers).
unsafe impl Send for RawMap {}
// SAFETY: as above.
unsafe impl Sync for RawMap {}

impl RawMap {
    fn new(
        file: &File,
        offset: u64,
        len: usize,
        writable: bool,
        populate: bool,
    ) -> io::Result<RawMap> {
        if len == 0 || !offset.is_multiple_of(super::page_size() as u64) || offset > i64::MAX as u64
        {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        let prot = if writable {
            libc::PROT_READ | libc::PROT_WRITE
        } else {
            libc::PROT_READ
        };
        let mut flags = libc::MAP_SHARED;
        if populate {
            flags |= libc::MAP_POPULATE;
        }
        // SAFETY: a fresh mapping chosen by the kernel (addr NULL) of a valid descriptor at a
        // page-aligned offset; the result is checked for MAP_FAILED before use.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                prot,
                flags,
                file.as_raw_fd(),
                offset as libc::off_t,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let guard = sigbus::Guard::register(ptr as usize, len);
        Ok(RawMap {
            ptr: ptr.cast(),
            len,
            guard,
            writable,
        })
    }

    fn advise(&self, advice: libc::c_int) -> io::Result<()> {
        // SAFETY: the range is exactly our own live mapping; advice does not change its contents
        // for the hints iolab uses (no MADV_DONTNEED/FREE here).
        let rc = unsafe { libc::madvise(self.ptr.cast(), self.len, advice) };
        if rc == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }

    /// `msync(MS_SYNC)` of the pages covering `offset..offset+len`.
    fn sync(&self, offset: usize, len: usize) -> io::Result<()> {
        let page = super::page_size();
        let start = offset / page * page;
        let end = offset.saturating_add(len).min(self.len);
        if end <= start {
            return Ok(());
        }
        // SAFETY: start is page aligned and start..end lies inside our mapping; msync reads no
        // memory through Rust references.
        let rc = unsafe { libc::msync(self.ptr.add(start).cast(), end - start, libc::MS_SYNC) };
        if rc == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }
}

/// From this size on, a read-only mapping's page tables are emptied with MADV_DONTNEED before the
/// munmap: see [`RawMap`]'s drop.
const ZAP_FIRST: usize = 16 << 20;

impl Drop for RawMap {
    fn drop(&mut self) {
        self.guard.unregister();
        // munmap takes the address space's lock for writing and holds it (downgraded to reading)
        // while it clears the page tables, so several threads unmapping large mappings at once
        // clear them one after the other: two workers' 2 GiB mappings of a warm file took 5 and
        // then 7 ms more. MADV_DONTNEED clears them under the lock for reading, side by side,
        // and the munmap after it has nothing left to clear. A read-only shared mapping holds
        // nothing that this could lose; a writable one is left to munmap alone.
        if !self.writable && self.len >= ZAP_FIRST {
            // SAFETY: exactly our own live mapping, about to be unmapped; it is shared and
            // read-only, so dropping its page-table entries loses nothing (the page cache keeps
            // the pages), and no slice of it outlives this owner.
            unsafe { libc::madvise(self.ptr.cast(), self.len, libc::MADV_DONTNEED) };
        }
        // SAFETY: unmapping exactly the range mmap returned; no slices outlive the owners.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}

/// A read-only shared mapping of the first `len` bytes of a file.
pub struct Mapping {
    raw: RawMap,
}

impl Mapping {
    /// Maps `len` (> 0) bytes of `file` from offset 0 for reading; `populate` adds MAP_POPULATE.
    pub fn new(file: &File, len: usize, populate: bool) -> io::Result<Self> {
        RawMap::new(file, 0, len, false, populate).map(|raw| Mapping { raw })
    }

    /// Maps `len` (> 0) bytes of `file` from `offset` (a multiple of the page size) for reading:
    /// one window of a file mapped piece by piece.
    pub fn window(file: &File, offset: u64, len: usize) -> io::Result<Self> {
        Self::range(file, offset, len, false)
    }

    /// As [`Mapping::window`], with MAP_POPULATE when `populate`.
    pub fn range(file: &File, offset: u64, len: usize, populate: bool) -> io::Result<Self> {
        RawMap::new(file, offset, len, false, populate).map(|raw| Mapping { raw })
    }

    /// The address of the first mapped byte (for page descriptors).
    pub fn addr(&self) -> usize {
        self.raw.ptr as usize
    }

    /// Asks the CPU to start fetching the line at `offset` (and walking the page table to it). A
    /// hint: it never faults, so a page not in memory stays unread and its fault is taken, and
    /// timed, by the access that needs it.
    #[inline]
    pub fn prefetch(&self, offset: usize) {
        if offset >= self.raw.len {
            return;
        }
        #[cfg(target_arch = "x86_64")]
        // SAFETY: SSE is part of x86_64; a prefetch reads no memory architecturally and cannot
        // fault, and the address is inside our live mapping anyway.
        unsafe {
            use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
            _mm_prefetch::<_MM_HINT_T0>(self.raw.ptr.add(offset).cast());
        }
    }

    /// Bytes mapped.
    pub fn len(&self) -> usize {
        self.raw.len
    }

    /// Never true: an empty mapping cannot be made.
    pub fn is_empty(&self) -> bool {
        self.raw.len == 0
    }

    /// `madvise` over the whole mapping.
    pub fn advise(&self, advice: libc::c_int) -> io::Result<()> {
        self.raw.advise(advice)
    }

    /// The mapped bytes.
    #[inline]
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: ptr..ptr+len is mapped readable for the life of self and nobody writes it
        // through this process (a read-only mapping); SIGBUS from a shrinking file is turned
        // into zero pages by the guard.
        unsafe { std::slice::from_raw_parts(self.raw.ptr, self.raw.len) }
    }

    /// How many SIGBUS faults the guard absorbed: non-zero means the file shrank while mapped
    /// and the bytes seen there were not the file's.
    pub fn sigbus_hits(&self) -> usize {
        self.raw.guard.hits()
    }
}

/// A writable shared mapping (`PROT_READ|PROT_WRITE`, `MAP_SHARED`): written bytes reach the file.
/// Only this type hands out mutable bytes, and only through `&mut self` or disjoint
/// [`MapWindow`]s, so safe code can neither write a read-only mapping nor race on one byte.
pub struct WritableMapping {
    raw: RawMap,
}

impl WritableMapping {
    /// Maps `len` (> 0) bytes of `file` (opened read-write) from offset 0 for writing.
    pub fn new(file: &File, len: usize) -> io::Result<Self> {
        RawMap::new(file, 0, len, true, false).map(|raw| WritableMapping { raw })
    }

    /// Maps `len` (> 0) bytes of `file` (opened read-write) from `offset` (a multiple of the
    /// page size) for writing: one window of a file written piece by piece.
    pub fn window(file: &File, offset: u64, len: usize) -> io::Result<Self> {
        RawMap::new(file, offset, len, true, false).map(|raw| WritableMapping { raw })
    }

    /// The address of the first mapped byte (for page descriptors).
    pub fn addr(&self) -> usize {
        self.raw.ptr as usize
    }

    /// Bytes mapped.
    pub fn len(&self) -> usize {
        self.raw.len
    }

    /// Never true: an empty mapping cannot be made.
    pub fn is_empty(&self) -> bool {
        self.raw.len == 0
    }

    /// The mapped bytes, to read.
    #[inline]
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: mapped readable for the life of self; writes need &mut self, so none is under
        // way while this borrow lives.
        unsafe { std::slice::from_raw_parts(self.raw.ptr, self.raw.len) }
    }

    /// The mapped bytes, to write.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: mapped PROT_WRITE, and &mut self makes this the only access.
        unsafe { std::slice::from_raw_parts_mut(self.raw.ptr, self.raw.len) }
    }

    /// `msync(MS_SYNC)` of the pages covering `offset..offset+len`.
    pub fn sync(&self, offset: usize, len: usize) -> io::Result<()> {
        self.raw.sync(offset, len)
    }

    /// How many SIGBUS faults the guard absorbed (no space left, or the file was truncated).
    pub fn sigbus_hits(&self) -> usize {
        self.raw.guard.hits()
    }

    /// Splits the mapping into windows over `ranges` (`(offset, len)`, which must lie inside the
    /// mapping and not overlap), each writable by its own thread, plus a handle that can only
    /// sync and count faults. `None` when the ranges overlap or leave the mapping.
    pub fn into_windows(self, ranges: &[(usize, usize)]) -> Option<(Vec<MapWindow>, MapHandle)> {
        let mut sorted: Vec<(usize, usize)> = ranges.to_vec();
        sorted.sort();
        let mut end = 0usize;
        for &(off, len) in &sorted {
            if off < end || off.checked_add(len)? > self.raw.len {
                return None;
            }
            end = off + len;
        }
        let raw = Arc::new(self.raw);
        let windows = ranges
            .iter()
            .map(|&(offset, len)| MapWindow {
                raw: raw.clone(),
                offset,
                len,
            })
            .collect();
        Some((windows, MapHandle { raw }))
    }
}

/// One thread's part of a [`WritableMapping`]: `len` bytes at `offset` that no other window covers.
pub struct MapWindow {
    raw: Arc<RawMap>,
    offset: usize,
    len: usize,
}

impl MapWindow {
    /// Where the window starts in the mapping (= in the file).
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// The window's bytes, to write (index 0 is the mapping's byte `offset()`).
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: offset..offset+len lies inside the live mapping (checked by into_windows), no
        // other window overlaps it, nothing else can read the mapping once it is split, and
        // &mut self makes this the only borrow of the window.
        unsafe { std::slice::from_raw_parts_mut(self.raw.ptr.add(self.offset), self.len) }
    }

    /// `msync(MS_SYNC)` of the pages covering mapping bytes `offset..offset+len`.
    pub fn sync(&self, offset: usize, len: usize) -> io::Result<()> {
        self.raw.sync(offset, len)
    }

    /// SIGBUS faults absorbed anywhere in the mapping.
    pub fn sigbus_hits(&self) -> usize {
        self.raw.guard.hits()
    }
}

/// What is left of a split [`WritableMapping`] besides its windows: sync and fault count.
pub struct MapHandle {
    raw: Arc<RawMap>,
}

impl MapHandle {
    /// Bytes mapped.
    pub fn len(&self) -> usize {
        self.raw.len
    }

    /// Never true: an empty mapping cannot be made.
    pub fn is_empty(&self) -> bool {
        self.raw.len == 0
    }

    /// `msync(MS_SYNC)` of the pages covering `offset..offset+len`.
    pub fn sync(&self, offset: usize, len: usize) -> io::Result<()> {
        self.raw.sync(offset, len)
    }

    /// SIGBUS faults absorbed anywhere in the mapping.
    pub fn sigbus_hits(&self) -> usize {
        self.raw.guard.hits()
    }
}

/// Resident pages of the first `len` bytes of `file` and the total number of pages, by `mincore`.
pub fn residency(file: &File, len: u64) -> io::Result<(u64, u64)> {
    let mut resident = 0u64;
    mincore_walk(file, len, |_, r| resident += r as u64)?;
    Ok((resident, len.div_ceil(super::page_size() as u64)))
}

/// Calls `each(page_index, resident)` for every page of the first `len` bytes, by `mincore`.
pub fn mincore_walk(file: &File, len: u64, mut each: impl FnMut(u64, bool)) -> io::Result<()> {
    if len == 0 {
        return Ok(());
    }
    let page = super::page_size() as u64;
    // Walk in windows so a huge file needs neither a huge vector nor a huge mapping.
    const WINDOW: u64 = 1 << 30;
    let mut vec = vec![0u8; (WINDOW / page) as usize];
    let mut off = 0u64;
    while off < len {
        let wlen = (len - off).min(WINDOW) as usize;
        // A read-only window of the file, never dereferenced: only passed to mincore.
        let window = RawMap::new(file, off, wlen, false, false)?;
        let pages = (wlen as u64).div_ceil(page) as usize;
        // SAFETY: window.ptr..+wlen is our live mapping and vec has room for one byte per page.
        let rc = unsafe { libc::mincore(window.ptr.cast(), wlen, vec.as_mut_ptr()) };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        drop(window);
        let first = off / page;
        for (i, b) in vec[..pages].iter().enumerate() {
            each(first + i as u64, b & 1 != 0);
        }
        off += wlen as u64;
    }
    Ok(())
}

/// Page-cache counts of a file range from `cachestat(2)` (Linux 6.5+): `(cached, dirty)` pages,
/// or `None` where the kernel lacks it.
pub fn cachestat(file: &File, offset: u64, len: u64) -> Option<(u64, u64)> {
    #[repr(C)]
    struct Range {
        off: u64,
        len: u64,
    }
    #[repr(C)]
    #[derive(Default)]
    struct Stat {
        cache: u64,
        dirty: u64,
        writeback: u64,
        evicted: u64,
        recently_evicted: u64,
    }
    const SYS_CACHESTAT: libc::c_long = 451;
    let range = Range { off: offset, len };
    let mut st = Stat::default();
    // SAFETY: cachestat reads `range` and writes `st`, both valid for the call; flags must be 0.
    let rc = unsafe {
        libc::syscall(
            SYS_CACHESTAT,
            file.as_raw_fd(),
            &range as *const Range,
            &mut st as *mut Stat,
            0u32,
        )
    };
    (rc == 0).then_some((st.cache, st.dirty))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn windows_are_disjoint_and_their_writes_reach_the_file() {
        let (_dir, path) = crate::testutil::file_with("f", &[0; 8192]);
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .unwrap();
        let fresh = || WritableMapping::new(&file, 8192).unwrap();
        assert!(fresh().into_windows(&[(0, 4096), (4095, 10)]).is_none());
        assert!(fresh().into_windows(&[(8000, 193)]).is_none());
        assert!(fresh().into_windows(&[(usize::MAX, 2)]).is_none());
        let (mut windows, handle) = fresh().into_windows(&[(4096, 4096), (0, 4096)]).unwrap();
        std::thread::scope(|s| {
            for w in windows.iter_mut() {
                s.spawn(move || {
                    let b = (w.offset() / 4096) as u8 + 1;
                    w.as_mut_slice().fill(b);
                });
            }
        });
        handle.sync(0, handle.len()).unwrap();
        assert_eq!(handle.sigbus_hits(), 0);
        let mut back = Vec::new();
        std::fs::File::open(&path)
            .unwrap()
            .read_to_end(&mut back)
            .unwrap();
        assert!(back[..4096].iter().all(|&b| b == 1) && back[4096..].iter().all(|&b| b == 2));
    }

    #[test]
    fn a_read_only_mapping_gives_no_way_to_write() {
        // The type has no mutable access at all; its bytes are the file's.
        let (_dir, path) = crate::testutil::file_with("f", b"abc");
        let file = File::open(&path).unwrap();
        let map = Mapping::new(&file, 3, false).unwrap();
        assert_eq!(map.as_slice(), b"abc");
        assert!(
            WritableMapping::new(&file, 3).is_err(),
            "a read-only fd cannot map writable"
        );
    }
}
