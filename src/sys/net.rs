//! Zero-copy moves for transfers: `sendfile(2)`, `splice(2)` through a pipe, and a pipe; and
//! `poll(2)` for descriptors to wait on together.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// `sendfile` of up to `len` bytes of `file` at `*offset` to `out`; advances `*offset`.
pub fn sendfile(
    out: &impl AsRawFd,
    file: &impl AsRawFd,
    offset: &mut u64,
    len: usize,
) -> io::Result<usize> {
    let mut off = *offset as libc::off_t;
    // SAFETY: valid descriptors; `off` is a valid, writable off_t for the call.
    let n = unsafe { libc::sendfile(out.as_raw_fd(), file.as_raw_fd(), &mut off, len) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    *offset = off as u64;
    Ok(n as usize)
}

/// A pipe for splicing: `(read end, write end)`, 1 MiB large where the kernel allows.
pub fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: fds has room for the two descriptors pipe2 writes.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: pipe2 just returned these two descriptors, owned by nobody else.
    let (r, w) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // A bigger pipe means fewer splice calls; refusal (over the user limit) is harmless.
    // SAFETY: plain fcntl on a valid descriptor.
    unsafe { libc::fcntl(w.as_raw_fd(), libc::F_SETPIPE_SZ, 1 << 20) };
    Ok((r, w))
}

/// `splice` up to `len` bytes from `from` (at `*off` when given, advancing it) to `to`.
pub fn splice(
    from: &impl AsRawFd,
    off: Option<&mut u64>,
    to: &impl AsRawFd,
    to_off: Option<&mut u64>,
    len: usize,
) -> io::Result<usize> {
    let mut a = off.as_ref().map(|o| **o as libc::loff_t).unwrap_or(0);
    let mut b = to_off.as_ref().map(|o| **o as libc::loff_t).unwrap_or(0);
    let pa: *mut libc::loff_t = if off.is_some() {
        &mut a
    } else {
        std::ptr::null_mut()
    };
    let pb: *mut libc::loff_t = if to_off.is_some() {
        &mut b
    } else {
        std::ptr::null_mut()
    };
    // SAFETY: valid descriptors; the offset pointers are null or point at live locals.
    let n = unsafe {
        libc::splice(
            from.as_raw_fd(),
            pa,
            to.as_raw_fd(),
            pb,
            len,
            libc::SPLICE_F_MOVE,
        )
    };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    if let Some(o) = off {
        *o = a as u64;
    }
    if let Some(o) = to_off {
        *o = b as u64;
    }
    Ok(n as usize)
}

/// Resource usage of the calling thread only (for one side of a transfer).
pub fn rusage_thread() -> super::Usage {
    // SAFETY: rusage is plain data; zeroed is valid.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: RUSAGE_THREAD with a writable rusage cannot fail.
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    super::Usage::from(&ru)
}

/// Waits until one of `fds` is readable (for a listening socket: a connection waits), at most
/// `timeout` (rounded up to a millisecond); which of them are. A signal ends the wait early
/// with none ready.
pub fn wait_readable(fds: &[RawFd], timeout: std::time::Duration) -> io::Result<Vec<bool>> {
    let mut p: Vec<libc::pollfd> = fds
        .iter()
        .map(|&fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    let ms = timeout.as_micros().div_ceil(1000).min(i32::MAX as u128) as i32;
    // SAFETY: `p` is an array of `p.len()` initialised pollfd structs, alive for the call; poll
    // only writes their `revents`.
    let r = unsafe { libc::poll(p.as_mut_ptr(), p.len() as libc::nfds_t, ms) };
    if r < 0 {
        let e = io::Error::last_os_error();
        if e.kind() == io::ErrorKind::Interrupted {
            return Ok(vec![false; p.len()]);
        }
        return Err(e);
    }
    Ok(p.iter().map(|x| x.revents != 0).collect())
}
