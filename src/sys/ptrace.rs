//! `ptrace(2)` for `iolab trace`: a child that asks to be traced, the tracer's waits, stops and
//! restarts, a stopped thread's system-call registers and reads of its memory.

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

/// The message of the last ptrace event of `pid` (a new thread's id, an exec's former id).
pub fn event_msg(pid: i32) -> io::Result<u64> {
    let mut msg: libc::c_ulong = 0;
    // SAFETY: GETEVENTMSG writes one unsigned long to the address given, which is `msg`.
    if unsafe { libc::ptrace(libc::PTRACE_GETEVENTMSG, pid, 0, &mut msg) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(msg as u64)
}

/// Whether a stop of `pid` by a signal is a signal-delivery stop (true) rather than a group stop
/// (false; PTRACE_GETSIGINFO fails with EINVAL then).
pub fn is_signal_delivery(pid: i32) -> bool {
    // SAFETY: siginfo_t is plain data; GETSIGINFO fills it in.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: GETSIGINFO writes one siginfo_t to the address given, which is `info`.
    unsafe { libc::ptrace(libc::PTRACE_GETSIGINFO, pid, 0, &mut info) == 0 }
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
    let mut status: libc::c_int = 0;
    // SAFETY: waitpid writes the status to `status`.
    let pid = unsafe { libc::waitpid(-1, &mut status, libc::__WALL) };
    if pid < 0 {
        let e = io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::ECHILD) {
            return Ok(None);
        }
        return Err(e);
    }
    Ok(Some(decode(pid, status)))
}

/// As [`wait_any`], without blocking: `Ok(None)` when no tracee has changed, an error (ECHILD)
/// when none is left.
pub fn wait_nohang() -> io::Result<Option<Wait>> {
    let mut status: libc::c_int = 0;
    // SAFETY: waitpid writes the status to `status`.
    let pid = unsafe { libc::waitpid(-1, &mut status, libc::__WALL | libc::WNOHANG) };
    if pid < 0 {
        return Err(io::Error::last_os_error());
    }
    if pid == 0 {
        return Ok(None);
    }
    Ok(Some(decode(pid, status)))
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
    // SAFETY: user_regs_struct is plain data; GETREGS fills it in.
    let mut r: libc::user_regs_struct = unsafe { std::mem::zeroed() };
    // SAFETY: GETREGS writes one user_regs_struct to the address given, which is `r`.
    if unsafe { libc::ptrace(libc::PTRACE_GETREGS, pid, 0, &mut r) } != 0 {
        return Err(io::Error::last_os_error());
    }
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
    let local = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    let remote = libc::iovec {
        iov_base: addr as *mut libc::c_void,
        iov_len: buf.len(),
    };
    // SAFETY: the local iovec covers `buf`, which is writable for its length; the remote one is
    // only read by the kernel, which checks it against the tracee's mappings.
    let n = unsafe { libc::process_vm_readv(pid, &local, 1, &remote, 1, 0) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(n as usize)
}

/// Sends `sig` to process (or thread group) `pid`.
pub fn kill(pid: i32, sig: i32) -> io::Result<()> {
    // SAFETY: kill takes no pointers.
    if unsafe { libc::kill(pid, sig) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Spawns `cmd` traced by this thread (PTRACE_TRACEME in the child before its exec). The child
/// stops with SIGTRAP right after its exec; the caller waits for that stop, sets [`OPTIONS`] and
/// continues it.
pub fn spawn_traced(cmd: &mut std::process::Command) -> io::Result<std::process::Child> {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure runs in the forked child before exec and makes one async-signal-safe
    // call, ptrace, with no pointers.
    unsafe {
        cmd.pre_exec(|| {
            if libc::ptrace(libc::PTRACE_TRACEME, 0, 0, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        })
    };
    cmd.spawn()
}
