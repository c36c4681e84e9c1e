//! Zero-copy moves for transfers: `sendfile(2)`, `splice(2)` through a pipe, and a pipe; and
//! `poll(2)` for descriptors to wait on together. All through `rustix` (and `nix` for the
//! thread's `getrusage`, which `rustix` lacks): nothing here is hand-written.

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

/// `sendfile` of up to `len` bytes of `file` at `*offset` to `out`; advances `*offset`.
pub fn sendfile(
    out: impl AsFd,
    file: impl AsFd,
    offset: &mut u64,
    len: usize,
) -> io::Result<usize> {
    Ok(rustix::fs::sendfile(out, file, Some(offset), len)?)
}

/// A pipe for splicing: `(read end, write end)`, 1 MiB large where the kernel allows.
pub fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let (r, w) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?;
    // A bigger pipe means fewer splice calls; refusal (over the user limit) is harmless.
    let _ = rustix::pipe::fcntl_setpipe_size(&w, 1 << 20);
    Ok((r, w))
}

/// `splice` up to `len` bytes from `from` (at `*off` when given, advancing it) to `to`.
pub fn splice(
    from: impl AsFd,
    off: Option<&mut u64>,
    to: impl AsFd,
    to_off: Option<&mut u64>,
    len: usize,
) -> io::Result<usize> {
    Ok(rustix::pipe::splice(
        from,
        off,
        to,
        to_off,
        len,
        rustix::pipe::SpliceFlags::MOVE,
    )?)
}

/// Resource usage of the calling thread only (for one side of a transfer).
pub fn rusage_thread() -> super::Usage {
    nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_THREAD)
        .map(|ru| super::Usage::from(ru.as_ref()))
        .unwrap_or_default()
}

/// Waits until one of `fds` is readable (for a listening socket: a connection waits), at most
/// `timeout` (rounded up to a millisecond); which of them are. A signal ends the wait early
/// with none ready.
pub fn wait_readable(
    fds: &[BorrowedFd<'_>],
    timeout: std::time::Duration,
) -> io::Result<Vec<bool>> {
    use rustix::event::{PollFd, PollFlags, Timespec};
    let mut p: Vec<PollFd<'_>> = fds
        .iter()
        .map(|fd| PollFd::new(fd, PollFlags::IN))
        .collect();
    let ms = timeout.as_micros().div_ceil(1000).min(i32::MAX as u128) as i64;
    let t = Timespec {
        tv_sec: ms / 1000,
        tv_nsec: (ms % 1000) * 1_000_000,
    };
    match rustix::event::poll(&mut p, Some(&t)) {
        Ok(_) => Ok(p.iter().map(|x| !x.revents().is_empty()).collect()),
        Err(rustix::io::Errno::INTR) => Ok(vec![false; p.len()]),
        Err(e) => Err(e.into()),
    }
}
