//! File mappings (`mmap`, `madvise`, `msync`) and page-cache residency (`mincore`).
//! Every mapping is guarded against SIGBUS (see [`super::sigbus`]): if the file shrinks under it,
//! the access reads zeros instead of killing the process and [`Mapping::sigbus_hits`] says so.

use super::sigbus;
use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;

/// A shared mapping of the first `len` bytes of a file.
pub struct Mapping {
    ptr: *mut u8,
    len: usize,
    guard: sigbus::Guard,
}

// SAFETY: the mapping is plain memory; concurrent readers are fine and mutation needs &mut.
unsafe impl Send for Mapping {}
// SAFETY: as above.
unsafe impl Sync for Mapping {}

/// How to map.
#[derive(Debug, Clone, Copy, Default)]
pub struct MapOptions {
    pub writable: bool,
    pub populate: bool,
}

impl Mapping {
    /// Maps `len` (> 0) bytes of `file` from offset 0.
    pub fn new(file: &File, len: usize, opts: MapOptions) -> io::Result<Self> {
        if len == 0 {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        let prot = if opts.writable {
            libc::PROT_READ | libc::PROT_WRITE
        } else {
            libc::PROT_READ
        };
        let mut flags = libc::MAP_SHARED;
        if opts.populate {
            flags |= libc::MAP_POPULATE;
        }
        // SAFETY: a fresh mapping chosen by the kernel (addr NULL) of a valid descriptor; the
        // result is checked for MAP_FAILED before use.
        let ptr =
            unsafe { libc::mmap(std::ptr::null_mut(), len, prot, flags, file.as_raw_fd(), 0) };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let guard = sigbus::Guard::register(ptr as usize, len);
        Ok(Mapping {
            ptr: ptr.cast(),
            len,
            guard,
        })
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// `madvise` over the whole mapping.
    pub fn advise(&self, advice: libc::c_int) -> io::Result<()> {
        // SAFETY: the range is exactly our own live mapping; advice does not change its contents
        // for the hints iolab uses (no MADV_DONTNEED/FREE here).
        let rc = unsafe { libc::madvise(self.ptr.cast(), self.len, advice) };
        if rc == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }

    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: ptr..ptr+len is mapped readable for the life of self; SIGBUS from a shrinking
        // file is turned into zero pages by the guard.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    /// The bytes, writable. Only for mappings made with `writable`.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as above, mapped PROT_WRITE by the caller's options, and &mut self is exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }

    /// `msync(MS_SYNC)` of the pages covering `offset..offset+len`.
    pub fn sync(&self, offset: usize, len: usize) -> io::Result<()> {
        let page = super::page_size();
        let start = offset / page * page;
        let end = (offset + len).min(self.len);
        if end <= start {
            return Ok(());
        }
        // SAFETY: start is page aligned and start..end lies inside our mapping.
        let rc = unsafe { libc::msync(self.ptr.add(start).cast(), end - start, libc::MS_SYNC) };
        if rc == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }

    /// How many SIGBUS faults the guard absorbed: non-zero means the file shrank while mapped
    /// (or, for writes, the filesystem had no space) and the bytes seen there were not the file's.
    pub fn sigbus_hits(&self) -> usize {
        self.guard.hits()
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        self.guard.unregister();
        // SAFETY: unmapping exactly the range mmap returned; no slices outlive self.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
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
        // SAFETY: a fresh read-only mapping of a valid descriptor at a page-aligned offset,
        // checked for MAP_FAILED; it is never dereferenced, only passed to mincore.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                wlen,
                libc::PROT_READ,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                off as libc::off_t,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let pages = (wlen as u64).div_ceil(page) as usize;
        // SAFETY: ptr..ptr+wlen is our mapping and vec has room for one byte per page.
        let rc = unsafe { libc::mincore(ptr, wlen, vec.as_mut_ptr()) };
        let err = io::Error::last_os_error();
        // SAFETY: unmapping exactly the mapping made above.
        unsafe { libc::munmap(ptr, wlen) };
        if rc != 0 {
            return Err(err);
        }
        let first = off / page;
        for (i, b) in vec[..pages].iter().enumerate() {
            each(first + i as u64, b & 1 != 0);
        }
        off += wlen as u64;
    }
    Ok(())
}

impl Mapping {
    /// Copies `data` into the mapping at `offset` (bounds checked). Threads may write disjoint
    /// ranges of one writable mapping at the same time; iolab's workloads never overlap them.
    pub fn write_at(&self, offset: usize, data: &[u8]) {
        assert!(
            offset <= self.len && data.len() <= self.len - offset,
            "write past the mapping"
        );
        // SAFETY: the range lies inside our live mapping (checked above), which callers map
        // writable; file bytes are plain data, and concurrent callers write disjoint ranges.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), self.ptr.add(offset), data.len()) };
    }
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
