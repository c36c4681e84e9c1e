//! Thin wrappers over the system calls the rest of iolab needs. All of iolab's `unsafe` lives in
//! this folder (and one CPU-feature dispatch in `xor.rs`), each block with its `// SAFETY:` line.

pub mod buf;
pub mod calls;
pub mod cleanup;
pub mod dir;
pub mod map;
pub mod net;
pub mod ptrace;
pub mod sigbus;

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::path::Path;

/// `posix_fadvise` on the whole file.
pub fn fadvise(file: &File, advice: libc::c_int) -> io::Result<()> {
    // SAFETY: plain system call on a valid open descriptor; no memory is passed.
    let rc = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, advice) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::from_raw_os_error(rc))
    }
}

/// `posix_fadvise` on `len` bytes from `offset`.
pub fn fadvise_range(file: &File, offset: u64, len: u64, advice: libc::c_int) -> io::Result<()> {
    // SAFETY: plain system call on a valid open descriptor; no memory is passed.
    let rc = unsafe {
        libc::posix_fadvise(
            file.as_raw_fd(),
            offset as libc::off_t,
            len as libc::off_t,
            advice,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::from_raw_os_error(rc))
    }
}

/// `posix_fallocate`: reserve blocks so later writes through a mapping cannot hit ENOSPC.
pub fn fallocate(file: &File, len: u64) -> io::Result<()> {
    if len == 0 {
        return Ok(());
    }
    // SAFETY: plain system call on a valid open descriptor; no memory is passed.
    let rc = unsafe { libc::posix_fallocate(file.as_raw_fd(), 0, len as libc::off_t) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::from_raw_os_error(rc))
    }
}

/// Renames `from` to `to` only if `to` does not exist, atomically (`renameat2` with
/// RENAME_NOREPLACE): a file that appeared at `to` in the meantime is never replaced (EEXIST).
/// Filesystems without the flag get `link` + `unlink`, which cannot replace either.
pub fn rename_noreplace(from: &std::path::Path, to: &std::path::Path) -> io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let c = |p: &std::path::Path| {
        std::ffi::CString::new(p.as_os_str().as_bytes())
            .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
    };
    let (f, t) = (c(from)?, c(to)?);
    // SAFETY: both are valid NUL-terminated paths that live across the call; AT_FDCWD makes them
    // relative to the working directory like rename(2).
    let rc = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            f.as_ptr(),
            libc::AT_FDCWD,
            t.as_ptr(),
            libc::RENAME_NOREPLACE,
        )
    };
    if rc == 0 {
        return Ok(());
    }
    let err = io::Error::last_os_error();
    match err.raw_os_error() {
        Some(libc::EINVAL) | Some(libc::ENOSYS) => {
            std::fs::hard_link(from, to)?;
            std::fs::remove_file(from)
        }
        _ => Err(err),
    }
}

/// Effective user id is 0.
pub fn is_root() -> bool {
    euid() == 0
}

/// Makes the process `cmd` starts die (SIGKILL) when this one does, even by `kill -9`, which
/// runs no clean-up here: a method's worker would otherwise read on in its group for its whole
/// run.
pub fn die_with_parent(cmd: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure runs in the child between fork and exec and calls only prctl, which
    // is async-signal-safe, allocates nothing and takes no lock.
    unsafe {
        cmd.pre_exec(|| {
            if libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            ) != 0
            {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// Sends SIGKILL to process `pid` (errors ignored: it may have ended).
pub fn kill_now(pid: u32) {
    if pid == 0 || pid > i32::MAX as u32 {
        return;
    }
    // SAFETY: plain system call with integer arguments; no memory is passed.
    unsafe {
        libc::kill(pid as libc::pid_t, libc::SIGKILL);
    }
}

/// The effective user id.
pub fn euid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// Whether the caller may write the file at `path` (`faccessat(AT_EACCESS, W_OK)`: the
/// effective ids, as the kernel's own permission check uses).
pub fn may_write(path: &Path) -> bool {
    may(path, libc::W_OK)
}

/// Whether the caller may execute the file at `path` (as [`may_write`], X_OK).
pub fn may_execute(path: &Path) -> bool {
    may(path, libc::X_OK)
}

fn may(path: &Path, mode: libc::c_int) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: `c` is a valid NUL-terminated path; faccessat only reads it.
    unsafe { libc::faccessat(libc::AT_FDCWD, c.as_ptr(), mode, libc::AT_EACCESS) == 0 }
}

/// The filesystem magic number of the file's filesystem (`fstatfs`).
pub fn fs_magic(file: &File) -> io::Result<i64> {
    // SAFETY: statfs is plain data; zeroed is a valid value for it.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: the descriptor is valid and `st` is a valid, writable statfs.
    let rc = unsafe { libc::fstatfs(file.as_raw_fd(), &mut st) };
    if rc == 0 {
        Ok(st.f_type as i64)
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Free bytes on the file's filesystem for an unprivileged user (`fstatvfs`).
pub fn fs_free_bytes(file: &File) -> io::Result<u64> {
    let st = rustix::fs::fstatvfs(file)?;
    Ok(st.f_bavail.saturating_mul(st.f_frsize))
}

/// Resource usage of the whole process (all threads).
#[derive(Debug, Clone, Copy, Default)]
pub struct Usage {
    /// User CPU, µs.
    pub user_us: u64,
    /// System CPU, µs.
    pub sys_us: u64,
    /// Minor faults.
    pub minflt: u64,
    /// Major faults.
    pub majflt: u64,
    /// Context switches.
    pub ctxsw: u64,
    /// Involuntary context switches: the scheduler took the CPU away.
    pub ivcsw: u64,
}

/// CPU time of the calling thread, in seconds, to the nanosecond (`CLOCK_THREAD_CPUTIME_ID`;
/// getrusage's per-thread figures move in whole scheduler ticks).
pub fn thread_cpu_secs() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid clock id and a writable timespec; it cannot fail for the calling thread.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 / 1e9
}

/// getrusage(RUSAGE_SELF).
pub fn rusage_self() -> Usage {
    // SAFETY: rusage is plain data; zeroed is a valid value for it.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: RUSAGE_SELF with a valid, writable rusage cannot fail.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    Usage::from(&ru)
}

impl From<&libc::rusage> for Usage {
    fn from(ru: &libc::rusage) -> Usage {
        let us = |tv: libc::timeval| tv.tv_sec as u64 * 1_000_000 + tv.tv_usec as u64;
        Usage {
            user_us: us(ru.ru_utime),
            sys_us: us(ru.ru_stime),
            minflt: ru.ru_minflt as u64,
            majflt: ru.ru_majflt as u64,
            ctxsw: (ru.ru_nvcsw + ru.ru_nivcsw) as u64,
            ivcsw: ru.ru_nivcsw as u64,
        }
    }
}

/// Clock ticks per second of /proc/stat's counters.
pub fn clock_ticks() -> u64 {
    // SAFETY: sysconf only reads a configuration value.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 { t as u64 } else { 100 }
}

/// Number of online CPUs.
pub fn cpus() -> usize {
    // Asked once per process: the standard library reads the cgroup's CPU quota files each
    // time (a fifth of a millisecond here, several times per command).
    static CPUS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CPUS.get_or_init(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    })
}

/// The calling thread's affinity mask, and the CPUs in it.
fn affinity() -> Option<(libc::cpu_set_t, Vec<usize>)> {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; sched_getaffinity fills at most
    // size_of::<cpu_set_t>() bytes of it for the calling thread (pid 0).
    let mut allowed: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let size = std::mem::size_of::<libc::cpu_set_t>();
    // SAFETY: as above.
    if unsafe { libc::sched_getaffinity(0, size, &mut allowed) } != 0 {
        return None;
    }
    // SAFETY: CPU_ISSET reads a bit of a valid set, i < its size in bits.
    let cpus = (0..8 * size)
        .filter(|&i| unsafe { libc::CPU_ISSET(i, &allowed) })
        .collect();
    Some((allowed, cpus))
}

/// The CPUs the calling thread may run on.
pub fn allowed_cpus() -> Vec<usize> {
    affinity().map(|a| a.1).unwrap_or_default()
}

/// The CPU the calling thread runs on now, if the kernel says.
pub fn current_cpu() -> Option<usize> {
    // SAFETY: sched_getcpu takes no arguments.
    let c = unsafe { libc::sched_getcpu() };
    usize::try_from(c).ok()
}

/// Moves the calling thread onto the `k`-th CPU after `away_from` among those it may use, then
/// lets it go anywhere again. A new thread starts where the kernel put it, and on this project's two-CPU
/// machine that was the parent's CPU one time in two: two workers then shared a core until the
/// balancer moved one (a millisecond or more, a short race's whole length). This only chooses
/// where the thread starts; it is not pinned. Does nothing when it cannot.
pub fn start_apart(away_from: usize, k: usize) {
    let Some((allowed, cpus)) = affinity() else {
        return;
    };
    if cpus.len() < 2 {
        return;
    }
    let size = std::mem::size_of::<libc::cpu_set_t>();
    let from = cpus.iter().position(|&c| c == away_from).unwrap_or(0);
    let target = cpus[(from + k) % cpus.len()];
    // SAFETY: a zeroed cpu_set_t is a valid empty set; CPU_SET writes one bit below its size.
    let mut one: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    unsafe { libc::CPU_SET(target, &mut one) };
    // SAFETY: both sets are valid for `size` bytes; pid 0 is the calling thread. Setting a
    // one-CPU mask moves the thread there before the call returns; the second call gives back
    // the mask it had.
    unsafe {
        if libc::sched_setaffinity(0, size, &one) == 0 {
            libc::sched_setaffinity(0, size, &allowed);
        }
    }
}

/// Page size of the machine.
pub fn page_size() -> usize {
    // SAFETY: sysconf has no memory arguments.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 { p as usize } else { 4096 }
}

/// `uname`: kernel release and machine.
pub fn kernel_release() -> String {
    // SAFETY: utsname is plain data; zeroed is a valid value for it.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: `u` is a valid, writable utsname.
    if unsafe { libc::uname(&mut u) } != 0 {
        return "unknown".into();
    }
    let field = |f: &[libc::c_char]| {
        let bytes: Vec<u8> = f
            .iter()
            .take_while(|c| **c != 0)
            .map(|c| *c as u8)
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    };
    format!(
        "{} {} {}",
        field(&u.sysname),
        field(&u.release),
        field(&u.machine)
    )
}

/// `sync(2)`: flush every filesystem.
pub fn sync_all_filesystems() {
    // SAFETY: sync has no arguments and cannot fail.
    unsafe { libc::sync() };
}

/// `syncfs(2)`: writes back the dirty data of the file system holding `file`, and waits for it.
pub fn syncfs(file: &std::fs::File) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    // SAFETY: syncfs only reads the descriptor, which `file` keeps open for the call.
    let r = unsafe { libc::syncfs(file.as_raw_fd()) };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// CLOCK_MONOTONIC now in ns (the clock perf samples can be stamped with).
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec to `ts`.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Whether SIGINT or SIGTERM arrived (with [`cleanup::install`] in place).
pub fn interrupted() -> bool {
    cleanup::INTERRUPTED.load(std::sync::atomic::Ordering::SeqCst)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_thread_started_apart_runs_on_the_cpu_asked_and_is_not_left_pinned() {
        let cpus = super::allowed_cpus();
        let Some(here) = super::current_cpu() else {
            return crate::testutil::skip(
                crate::testutil::Lack::Machine,
                "the kernel does not say which CPU runs a thread",
            );
        };
        if cpus.len() < 2 {
            return crate::testutil::skip(
                crate::testutil::Lack::Machine,
                "this process may use one CPU only",
            );
        }
        let from = cpus.iter().position(|&c| c == here).unwrap_or(0);
        for k in 1..cpus.len().min(4) {
            let (on, mask) = std::thread::spawn(move || {
                super::start_apart(here, k);
                (super::current_cpu(), super::allowed_cpus())
            })
            .join()
            .unwrap();
            assert_eq!(on, Some(cpus[(from + k) % cpus.len()]), "k = {k}");
            assert_eq!(mask, cpus, "the thread keeps every CPU it may use");
        }
    }
}
