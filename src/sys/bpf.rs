//! One entry of a BPF map read by its key, for the map `aya` has no type for: the kernel
//! tracer's task storage, whose key from user space is a pidfd of the thread (`bpf(2)`'s
//! `BPF_MAP_LOOKUP_ELEM`, which no crate wraps for that map type).

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};

/// `BPF_MAP_LOOKUP_ELEM` of `enum bpf_cmd`.
const BPF_MAP_LOOKUP_ELEM: libc::c_long = 1;

/// `union bpf_attr` as `BPF_MAP_LOOKUP_ELEM` reads it.
#[repr(C)]
struct LookupAttr {
    map_fd: u32,
    pad: u32,
    key: u64,
    value: u64,
    flags: u64,
}

/// The value of `key` in map `map`, whose values the kernel says are `value_size` bytes, into
/// `value`. Refused (an error, nothing read) when `value` is shorter than that.
pub fn map_lookup(
    map: BorrowedFd<'_>,
    value_size: u32,
    key: &[u8],
    value: &mut [u8],
) -> io::Result<()> {
    if value.len() < value_size as usize {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "the buffer is shorter than the map's values",
        ));
    }
    let attr = LookupAttr {
        map_fd: map.as_raw_fd() as u32,
        pad: 0,
        key: key.as_ptr() as u64,
        value: value.as_mut_ptr() as u64,
        flags: 0,
    };
    // SAFETY: `attr` points at `key` and `value`, both borrowed for the call; the kernel reads
    // the map's key size from `key` (the caller's map takes a 4-byte pidfd, and `key` is
    // that) and writes `value_size` bytes, the size it reported, into `value`, checked above
    // to hold them.
    let r = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            BPF_MAP_LOOKUP_ELEM,
            &attr as *const LookupAttr,
            std::mem::size_of::<LookupAttr>(),
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// A pidfd of thread `tid` (`PIDFD_THREAD`, Linux 6.9: any thread, not only a process's
/// first), or why not.
pub fn thread_pidfd(tid: u32) -> io::Result<OwnedFd> {
    let pid = rustix::process::Pid::from_raw(tid as i32)
        .ok_or_else(|| io::Error::from(io::ErrorKind::InvalidInput))?;
    let thread = rustix::process::PidfdFlags::from_bits_retain(libc::O_EXCL as u32);
    Ok(rustix::process::pidfd_open(pid, thread)?)
}

/// The value of thread `tid`'s entry in task storage map `map` (values `value_size` bytes)
/// into `value`; an error when the thread is gone or has no entry.
pub fn task_storage_lookup(
    map: BorrowedFd<'_>,
    value_size: u32,
    tid: u32,
    value: &mut [u8],
) -> io::Result<()> {
    let fd = thread_pidfd(tid)?;
    let key = (fd.as_fd().as_raw_fd() as u32).to_ne_bytes();
    map_lookup(map, value_size, &key, value)
}
