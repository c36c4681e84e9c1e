//! `ptrace(2)` for `iolab trace`: a child that asks to be traced, the tracer's waits, stops and
//! restarts, a stopped thread's system-call registers and reads of its memory. Through `nix`
//! (ptrace requests, registers, `process_vm_readv`) and `rustix` (`waitpid`, whose status keeps
//! every signal's number, realtime ones too); hand-written only the restarts, which must pass on
//! any signal by its number (nix's `Signal` names the standard ones alone).

use std::io;

/// Ptrace options `iolab trace` sets: seccomp stops, children and threads followed, exec and
/// exit reported, and the tracee killed if the tracer dies.
pub const OPTIONS: libc::c_int = libc::PTRACE_O_TRACESECCOMP
    | libc::PTRACE_O_TRACESYSGOOD
    | libc::PTRACE_O_TRACEFORK
    | libc::PTRACE_O_TRACEVFORK
    | libc::PTRACE_O_TRACECLONE
    | libc::PTRACE_O_TRACEEXEC
    | libc::PTRACE_O_TRACEEXIT
    | libc::PTRACE_O_EXITKILL;

fn request(req: libc::c_uint, pid: i32, data: usize) -> io::Result<()> {
    // SAFETY: the requests used here (SETOPTIONS, CONT, SYSCALL) take an integer as data and no
    // address; a stale pid gives ESRCH.
    if unsafe { libc::ptrace(req, pid, 0, data) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Sets [`OPTIONS`] on stopped tracee `pid`.
pub fn set_options(pid: i32) -> io::Result<()> {
    request(libc::PTRACE_SETOPTIONS, pid, OPTIONS as usize)
}

/// Restarts stopped tracee `pid` delivering `sig` (0 for none) until its next traced event.
pub fn cont(pid: i32, sig: i32) -> io::Result<()> {
    request(libc::PTRACE_CONT, pid, sig as usize)
}

/// Restarts stopped tracee `pid` until it leaves the system call it is in.
pub fn to_syscall_exit(pid: i32) -> io::Result<()> {
    request(libc::PTRACE_SYSCALL, pid, 0)
}

fn nix_pid(pid: i32) -> nix::unistd::Pid {
    nix::unistd::Pid::from_raw(pid)
}

/// The message of the last ptrace event of `pid` (a new thread's id, an exec's former id).
pub fn event_msg(pid: i32) -> io::Result<u64> {
    Ok(nix::sys::ptrace::getevent(nix_pid(pid))? as u64)
}

/// Whether a stop of `pid` by a signal is a signal-delivery stop (true) rather than a group stop
/// (false; PTRACE_GETSIGINFO fails with EINVAL then).
pub fn is_signal_delivery(pid: i32) -> bool {
    nix::sys::ptrace::getsiginfo(nix_pid(pid)).is_ok()
}

/// How a waited-for tracee changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// Thread `.0` exited with code `.1`.
    Exited(i32, i32),
    /// Signal `.1` killed thread `.0`.
    Killed(i32, i32),
    /// Thread `.0` stopped; `.1` is `status >> 8`: the stop signal, and a ptrace event `<< 8`.
    Stopped(i32, i32),
}

/// Waits for any tracee (threads included). `Err` with kind `Interrupted` when a signal came;
/// `Ok(None)` when no child is left.
pub fn wait_any() -> io::Result<Option<Wait>> {
    match waitpid(rustix::process::WaitOptions::empty()) {
        Err(e) if e.raw_os_error() == Some(libc::ECHILD) => Ok(None),
        other => other,
    }
}

/// As [`wait_any`], without blocking: `Ok(None)` when no tracee has changed, an error (ECHILD)
/// when none is left.
pub fn wait_nohang() -> io::Result<Option<Wait>> {
    waitpid(rustix::process::WaitOptions::NOHANG)
}

/// `waitpid(-1, __WALL | more)`: any child, whatever its process group. (Not rustix's
/// `waitpid(None, ..)`, which is `waitpid(0, ..)`, the caller's process group only: a traced
/// program that calls setsid or setpgid, as fio's job processes do, would stop unseen.)
fn waitpid(more: rustix::process::WaitOptions) -> io::Result<Option<Wait>> {
    let all = rustix::process::WaitOptions::from_bits_retain(libc::__WALL as u32);
    Ok(rustix::process::wait(all | more)?
        .map(|(pid, status)| decode(pid.as_raw_nonzero().get(), status.as_raw())))
}

fn decode(pid: i32, status: libc::c_int) -> Wait {
    if libc::WIFEXITED(status) {
        Wait::Exited(pid, libc::WEXITSTATUS(status))
    } else if libc::WIFSIGNALED(status) {
        Wait::Killed(pid, libc::WTERMSIG(status))
    } else {
        Wait::Stopped(pid, status >> 8)
    }
}

/// A system call as a stopped thread's registers show it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Regs {
    /// The system call's number.
    pub nr: i64,
    /// Its six arguments.
    pub args: [u64; 6],
    /// Its result (meaningful at its exit): the value, or minus an errno.
    pub ret: i64,
}

/// The system-call registers of stopped tracee `pid`.
#[cfg(target_arch = "x86_64")]
pub fn regs(pid: i32) -> io::Result<Regs> {
    let r = nix::sys::ptrace::getregs(nix_pid(pid))?;
    Ok(Regs {
        nr: r.orig_rax as i64,
        args: [r.rdi, r.rsi, r.rdx, r.r10, r.r8, r.r9],
        ret: r.rax as i64,
    })
}

/// The system-call registers of stopped tracee `pid`.
#[cfg(not(target_arch = "x86_64"))]
pub fn regs(_pid: i32) -> io::Result<Regs> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "iolab trace reads registers on x86_64 only",
    ))
}

/// Reads `buf.len()` bytes of tracee `pid`'s memory at `addr`; returns how many were read.
pub fn read_mem(pid: i32, addr: u64, buf: &mut [u8]) -> io::Result<usize> {
    let remote = [nix::sys::uio::RemoteIoVec {
        base: addr as usize,
        len: buf.len(),
    }];
    Ok(nix::sys::uio::process_vm_readv(
        nix_pid(pid),
        &mut [io::IoSliceMut::new(buf)],
        &remote,
    )?)
}

/// Sends `sig` to process (or thread group) `pid`.
pub fn kill(pid: i32, sig: i32) -> io::Result<()> {
    let sig = nix::sys::signal::Signal::try_from(sig)?;
    Ok(nix::sys::signal::kill(nix_pid(pid), sig)?)
}

/// Spawns `cmd` traced by this thread (PTRACE_TRACEME in the child before its exec). The child
/// stops with SIGTRAP right after its exec; the caller waits for that stop, sets [`OPTIONS`] and
/// continues it.
pub fn spawn_traced(cmd: &mut std::process::Command) -> io::Result<std::process::Child> {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure runs in the forked child before exec and makes one async-signal-safe
    // system call, ptrace(PTRACE_TRACEME), with no pointers.
    unsafe { cmd.pre_exec(|| Ok(nix::sys::ptrace::traceme()?)) };
    cmd.spawn()
}

/// Waits until child `pid` stops itself (SIGSTOP: the kernel tracer's launcher, before its
/// exec); why not, when it exits or cannot be waited for instead.
pub fn wait_stopped(pid: i32) -> Result<(), String> {
    use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
    loop {
        match waitpid(nix_pid(pid), Some(WaitPidFlag::WUNTRACED)) {
            Ok(WaitStatus::Stopped(..)) => return Ok(()),
            Ok(WaitStatus::Exited(_, code)) => return Err(format!("it exited with {code}")),
            Ok(WaitStatus::Signaled(_, sig, _)) => return Err(format!("{sig} killed it")),
            Ok(_) | Err(nix::errno::Errno::EINTR) => {}
            Err(e) => return Err(e.to_string()),
        }
    }
}

/// Child `pid`'s end, if it has ended (without blocking): its exit code or the signal that
/// killed it. A stop is not an end.
pub fn reap(pid: i32) -> Option<(Option<i32>, Option<i32>)> {
    use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
    match waitpid(nix_pid(pid), Some(WaitPidFlag::WNOHANG)) {
        Ok(WaitStatus::Exited(_, code)) => Some((Some(code), None)),
        Ok(WaitStatus::Signaled(_, sig, _)) => Some((None, Some(sig as i32))),
        Err(nix::errno::Errno::ECHILD) => Some((None, None)),
        _ => None,
    }
}

/// Stops this process (SIGSTOP) until its parent continues it.
pub fn stop_self() -> io::Result<()> {
    Ok(nix::sys::signal::raise(nix::sys::signal::Signal::SIGSTOP)?)
}
