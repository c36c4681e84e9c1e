//! Single system calls for `iolab syscalls` and the engines' loops, each as thin as it can be.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;

/// getppid(2): the cheapest real system call (no vDSO shortcut).
pub fn getppid() -> i32 {
    // SAFETY: no arguments, cannot fail.
    unsafe { libc::getppid() }
}

/// read(2) into `buf` at the file position: one call, no retry. Inline, so the engine's loop
/// returns from the system call through libc's `ret` alone, as a C loop does: after a system
/// call the CPU's return predictions no longer hold the program's (the kernel's own deep calls
/// overwrite its return stack; this kernel also runs the SRSO "Safe RET" mitigation), and each
/// extra function return on the way back (std's `File::read`, the engine's `piece`) looked
/// mispredicted in perf, about 40 ns a block on warm 4 KiB reads.
#[inline(always)]
pub fn read(file: &File, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: a valid descriptor and a buffer writable for its whole length.
    let r = unsafe { libc::read(file.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r as usize)
    }
}

/// preadv2(2) of one buffer at `offset` with `flags` (`RWF_DONTCACHE`, `RWF_NOWAIT`, ...): one
/// call, no retry.
#[inline(always)]
pub fn preadv2(file: &File, buf: &mut [u8], offset: u64, flags: i32) -> io::Result<usize> {
    let iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // SAFETY: one iovec over a buffer writable for its whole length, a valid descriptor.
    let r = unsafe { libc::preadv2(file.as_raw_fd(), &iov, 1, offset as libc::off_t, flags) };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r as usize)
    }
}

/// pwritev2(2) of one buffer at `offset` with `flags`: one call, no retry.
#[inline(always)]
pub fn pwritev2(file: &File, buf: &[u8], offset: u64, flags: i32) -> io::Result<usize> {
    let iov = libc::iovec {
        iov_base: buf.as_ptr() as *mut libc::c_void,
        iov_len: buf.len(),
    };
    // SAFETY: one iovec over a buffer readable for its whole length (the kernel only reads it
    // for a write), a valid descriptor.
    let r = unsafe { libc::pwritev2(file.as_raw_fd(), &iov, 1, offset as libc::off_t, flags) };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r as usize)
    }
}

/// pread(2) into `buf` at `offset`: one call, no retry; inline for the reason [`read`] is.
#[inline(always)]
pub fn pread(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    // SAFETY: a valid descriptor and a buffer writable for its whole length.
    let r = unsafe {
        libc::pread(
            file.as_raw_fd(),
            buf.as_mut_ptr().cast(),
            buf.len(),
            offset as libc::off_t,
        )
    };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r as usize)
    }
}

/// lseek(2) to `offset` from the start.
#[inline(always)]
pub fn lseek(file: &File, offset: i64) -> io::Result<i64> {
    // SAFETY: plain system call on a valid descriptor.
    let r = unsafe { libc::lseek(file.as_raw_fd(), offset, libc::SEEK_SET) };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// fstat(2) (std's metadata() uses statx, a different call).
pub fn fstat(file: &File) -> io::Result<()> {
    // SAFETY: stat is plain data; zeroed is valid.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: valid descriptor and a writable stat buffer.
    let r = unsafe { libc::fstat(file.as_raw_fd(), &mut st) };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// mmap(2) of one page of `file` followed by munmap(2).
pub fn map_unmap_page(file: &File) -> io::Result<()> {
    // SAFETY: a fresh kernel-chosen read-only mapping of a valid descriptor, checked, never
    // dereferenced, and unmapped right away with its exact length.
    unsafe {
        let p = libc::mmap(
            std::ptr::null_mut(),
            4096,
            libc::PROT_READ,
            libc::MAP_SHARED,
            file.as_raw_fd(),
            0,
        );
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        libc::munmap(p, 4096);
    }
    Ok(())
}

/// Anonymous memory on 4 KiB pages (no huge pages), for counting one minor fault per page.
pub struct FreshPages {
    ptr: *mut u8,
    len: usize,
}

impl FreshPages {
    /// `pages` pages of fresh anonymous memory.
    pub fn new(pages: usize) -> io::Result<FreshPages> {
        let len = pages.max(1) * 4096;
        // SAFETY: a fresh private anonymous mapping, checked for MAP_FAILED.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: our own mapping; the advice only keeps the kernel from using huge pages.
        unsafe { libc::madvise(ptr, len, libc::MADV_NOHUGEPAGE) };
        Ok(FreshPages {
            ptr: ptr.cast(),
            len,
        })
    }

    /// Writes one byte into every page: one minor fault each, as none is present yet.
    pub fn touch_all(&mut self) {
        for off in (0..self.len).step_by(4096) {
            // SAFETY: off < len, inside our writable mapping.
            unsafe { self.ptr.add(off).write_volatile(1) };
        }
    }

    /// How many pages.
    pub fn pages(&self) -> usize {
        self.len / 4096
    }
}

impl Drop for FreshPages {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly our mapping.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}
