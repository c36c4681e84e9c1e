//! Single system calls for `iolab syscalls` and the engines' loops, each as thin as it can be.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;

/// getppid(2): the cheapest real system call (no vDSO shortcut).
pub fn getppid() -> i32 {
    rustix::process::getppid().map_or(0, |p| p.as_raw_nonzero().get())
}

/// read(2) into `buf` at the file position: one call, no retry. Inline, and through rustix's
/// raw system call (no libc function between the loop and the kernel): after a system call the
/// CPU's return predictions no longer hold the program's (the kernel's own deep calls
/// overwrite its return stack; this kernel also runs the SRSO "Safe RET" mitigation), and each
/// extra function return on the way back (std's `File::read`, the engine's `piece`) looked
/// mispredicted in perf, about 40 ns a block on warm 4 KiB reads.
#[inline(always)]
pub fn read(file: &File, buf: &mut [u8]) -> io::Result<usize> {
    Ok(rustix::io::read(file, buf)?)
}

/// preadv2(2) of one buffer at `offset` with `flags` (`RWF_DONTCACHE`, `RWF_NOWAIT`, ...): one
/// call, no retry.
#[inline(always)]
pub fn preadv2(file: &File, buf: &mut [u8], offset: u64, flags: i32) -> io::Result<usize> {
    let flags = rustix::io::ReadWriteFlags::from_bits_retain(flags as u32);
    Ok(rustix::io::preadv2(
        file,
        &mut [io::IoSliceMut::new(buf)],
        offset,
        flags,
    )?)
}

/// pwritev2(2) of one buffer at `offset` with `flags`: one call, no retry.
#[inline(always)]
pub fn pwritev2(file: &File, buf: &[u8], offset: u64, flags: i32) -> io::Result<usize> {
    let flags = rustix::io::ReadWriteFlags::from_bits_retain(flags as u32);
    Ok(rustix::io::pwritev2(
        file,
        &[io::IoSlice::new(buf)],
        offset,
        flags,
    )?)
}

/// pread(2) into `buf` at `offset`: one call, no retry; inline for the reason [`read`] is.
#[inline(always)]
pub fn pread(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    Ok(rustix::io::pread(file, buf, offset)?)
}

/// lseek(2) to `offset` from the start.
#[inline(always)]
pub fn lseek(file: &File, offset: i64) -> io::Result<i64> {
    let to = u64::try_from(offset).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    Ok(rustix::fs::seek(file, rustix::fs::SeekFrom::Start(to))? as i64)
}

/// fstat(2) (std's metadata() uses statx, a different call).
pub fn fstat(file: &File) -> io::Result<()> {
    rustix::fs::fstat(file)?;
    Ok(())
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
        // SAFETY: a fresh private anonymous mapping, checked for MAP_FAILED, then advised off
        // huge pages: the advice names exactly that mapping and changes only its page size.
        let ptr = unsafe {
            let ptr = libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            );
            if ptr != libc::MAP_FAILED {
                libc::madvise(ptr, len, libc::MADV_NOHUGEPAGE);
            }
            ptr
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
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
