//! Thin wrappers over the system calls the rest of iolab needs, through `rustix` (files,
//! directories by handle, pipes, splice, sendfile, poll, scheduling, clocks) and `nix` (ptrace,
//! getrusage, signal dispositions, process_vm_readv). What stays hand-written is what those
//! crates lack or cannot make safe, each block with its `// SAFETY:` line:
//! - mappings whose bytes are read in place (`map.rs`, `calls.rs`): a mapping is raw memory
//!   (rustix's `mmap`, `munmap` and `madvise` are `unsafe` too), and no crate wraps `mincore` or
//!   `cachestat` (Linux 6.5);
//! - aligned I/O buffers on huge pages with a reuse pool (`buf.rs`): `std::alloc` by nature;
//! - signal handlers (`cleanup.rs`, `sigbus.rs`): `sigaction` is `unsafe` in nix as well, the
//!   SIGBUS handler maps a page over a truncated one, and there is no async-signal-safe exit
//!   but `_exit`;
//! - a BPF map's entry read by a thread's pidfd (`bpf.rs`): no crate wraps `BPF_MAP_LOOKUP_ELEM`
//!   for task storage;
//! - ptrace restarts that pass on any signal by number (`ptrace.rs`: nix's `Signal` names the
//!   standard ones only) and `pre_exec` (`std`'s own `unsafe`).
//!
//! `RWF_DONTCACHE` goes through rustix's `ReadWriteFlags::from_bits_retain` (rustix has no name
//! for it yet). Outside this folder, `unsafe` is the SIMD XOR kernels of `xor.rs` and the
//! io_uring submissions of `engine/uring`.

pub mod bpf;
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
use std::path::Path;

/// The `rustix` advice for a `POSIX_FADV_*` value.
fn advice(a: libc::c_int) -> io::Result<rustix::fs::Advice> {
    use rustix::fs::Advice;
    Ok(match a {
        libc::POSIX_FADV_NORMAL => Advice::Normal,
        libc::POSIX_FADV_SEQUENTIAL => Advice::Sequential,
        libc::POSIX_FADV_RANDOM => Advice::Random,
        libc::POSIX_FADV_NOREUSE => Advice::NoReuse,
        libc::POSIX_FADV_WILLNEED => Advice::WillNeed,
        libc::POSIX_FADV_DONTNEED => Advice::DontNeed,
        _ => return Err(io::Error::from_raw_os_error(libc::EINVAL)),
    })
}

/// `posix_fadvise` on the whole file.
pub fn fadvise(file: &File, a: libc::c_int) -> io::Result<()> {
    rustix::fs::fadvise(file, 0, None, advice(a)?)?;
    Ok(())
}

/// `posix_fadvise` on `len` bytes from `offset` (nothing for `len` 0, which would mean "to the
/// end").
pub fn fadvise_range(file: &File, offset: u64, len: u64, a: libc::c_int) -> io::Result<()> {
    let Some(len) = std::num::NonZeroU64::new(len) else {
        return Ok(());
    };
    rustix::fs::fadvise(file, offset, Some(len), advice(a)?)?;
    Ok(())
}

/// `posix_fallocate`: reserve blocks so later writes through a mapping cannot hit ENOSPC.
pub fn fallocate(file: &File, len: u64) -> io::Result<()> {
    if len == 0 {
        return Ok(());
    }
    rustix::fs::fallocate(file, rustix::fs::FallocateFlags::empty(), 0, len)?;
    Ok(())
}

/// Renames `from` to `to` only if `to` does not exist, atomically (`renameat2` with
/// RENAME_NOREPLACE): a file that appeared at `to` in the meantime is never replaced (EEXIST).
/// Filesystems without the flag get `link` + `unlink`, which cannot replace either.
pub fn rename_noreplace(from: &Path, to: &Path) -> io::Result<()> {
    use rustix::fs::{CWD, RenameFlags};
    match rustix::fs::renameat_with(CWD, from, CWD, to, RenameFlags::NOREPLACE) {
        Ok(()) => Ok(()),
        Err(e) if e == rustix::io::Errno::INVAL || e == rustix::io::Errno::NOSYS => {
            std::fs::hard_link(from, to)?;
            std::fs::remove_file(from)
        }
        Err(e) => Err(e.into()),
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
    let parent = rustix::process::getpid();
    // SAFETY: the closure runs in the child between fork and exec and makes only system calls
    // (prctl and getppid through rustix's raw syscalls), which allocate nothing and take no lock.
    unsafe {
        cmd.pre_exec(move || {
            rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL))
                .map_err(io::Error::from)?;
            // Killed between the fork and the prctl: no signal will come, so go now.
            if rustix::process::getppid() != Some(parent) {
                return Err(io::Error::from_raw_os_error(libc::ESRCH));
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
    if let Some(pid) = rustix::process::Pid::from_raw(pid as i32) {
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
    }
}

/// The effective user id.
pub fn euid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// Whether the caller may write the file at `path` (`faccessat(AT_EACCESS, W_OK)`: the
/// effective ids, as the kernel's own permission check uses).
pub fn may_write(path: &Path) -> bool {
    may(path, rustix::fs::Access::WRITE_OK)
}

/// Whether the caller may execute the file at `path` (as [`may_write`], X_OK).
pub fn may_execute(path: &Path) -> bool {
    may(path, rustix::fs::Access::EXEC_OK)
}

fn may(path: &Path, mode: rustix::fs::Access) -> bool {
    rustix::fs::accessat(rustix::fs::CWD, path, mode, rustix::fs::AtFlags::EACCESS).is_ok()
}

/// The filesystem magic number of the file's filesystem (`fstatfs`).
pub fn fs_magic(file: &File) -> io::Result<i64> {
    Ok(rustix::fs::fstatfs(file)?.f_type as i64)
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
    let ts = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    ts.tv_sec as f64 + ts.tv_nsec as f64 / 1e9
}

/// getrusage(RUSAGE_SELF) (by `nix`: `rustix` has no getrusage).
pub fn rusage_self() -> Usage {
    nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_SELF)
        .map(|ru| Usage::from(ru.as_ref()))
        .unwrap_or_default()
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
    match rustix::param::clock_ticks_per_second() {
        0 => 100,
        t => t,
    }
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
fn affinity() -> Option<(rustix::thread::CpuSet, Vec<usize>)> {
    let allowed = rustix::thread::sched_getaffinity(None).ok()?;
    let cpus = (0..rustix::thread::CpuSet::MAX_CPU)
        .filter(|&i| allowed.is_set(i))
        .collect();
    Some((allowed, cpus))
}

/// The CPUs the calling thread may run on.
pub fn allowed_cpus() -> Vec<usize> {
    affinity().map(|a| a.1).unwrap_or_default()
}

/// The CPU the calling thread runs on now, if the kernel says.
pub fn current_cpu() -> Option<usize> {
    Some(rustix::thread::sched_getcpu())
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
    let from = cpus.iter().position(|&c| c == away_from).unwrap_or(0);
    let mut one = rustix::thread::CpuSet::new();
    one.set(cpus[(from + k) % cpus.len()]);
    // A one-CPU mask moves the thread there before the call returns; the second call gives
    // back the mask it had.
    if rustix::thread::sched_setaffinity(None, &one).is_ok() {
        let _ = rustix::thread::sched_setaffinity(None, &allowed);
    }
}

/// Page size of the machine.
pub fn page_size() -> usize {
    rustix::param::page_size()
}

/// `uname`: kernel release and machine.
pub fn kernel_release() -> String {
    let u = rustix::system::uname();
    format!(
        "{} {} {}",
        u.sysname().to_string_lossy(),
        u.release().to_string_lossy(),
        u.machine().to_string_lossy()
    )
}

/// `sync(2)`: flush every filesystem.
pub fn sync_all_filesystems() {
    rustix::fs::sync();
}

/// `syncfs(2)`: writes back the dirty data of the file system holding `file`, and waits for it.
pub fn syncfs(file: &std::fs::File) -> std::io::Result<()> {
    rustix::fs::syncfs(file)?;
    Ok(())
}

/// Spawns `cmd` with `fd` left open in it (every other descriptor of iolab's is close-on-exec);
/// returns the number it has there. Only for a process that starts no other child meanwhile.
pub fn spawn_with_fd(
    cmd: &mut std::process::Command,
    fd: std::os::fd::BorrowedFd<'_>,
) -> std::io::Result<(std::process::Child, i32)> {
    use std::os::fd::AsRawFd;
    rustix::io::fcntl_setfd(fd, rustix::io::FdFlags::empty())?;
    let child = cmd.spawn();
    rustix::io::fcntl_setfd(fd, rustix::io::FdFlags::CLOEXEC)?;
    Ok((child?, fd.as_raw_fd()))
}

/// Descriptor `n` as a parent handed it over ([`spawn_with_fd`]), made close-on-exec so that
/// no program this process starts inherits it; `None` when it is not open.
pub fn take_fd(n: i32) -> Option<std::fs::File> {
    use std::os::fd::FromRawFd;
    if n < 3 {
        return None;
    }
    // SAFETY: fcntl on a descriptor number touches no memory (a closed one gives EBADF); once
    // it is known open, nothing else in this process owns it: iolab opens no descriptor of its
    // own beyond 2 before its arguments are read, and the one caller takes it at once.
    let file = unsafe {
        if libc::fcntl(n, libc::F_GETFD) < 0 {
            return None;
        }
        std::fs::File::from_raw_fd(n)
    };
    rustix::io::fcntl_setfd(&file, rustix::io::FdFlags::CLOEXEC).ok()?;
    Some(file)
}

/// Points stdin, stdout and stderr at /dev/null: for a helper that outlives the command the
/// user ran, so that it holds none of that command's pipes or terminal open.
pub fn stdio_to_null() -> std::io::Result<()> {
    let null = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")?;
    rustix::stdio::dup2_stdin(&null)?;
    rustix::stdio::dup2_stdout(&null)?;
    rustix::stdio::dup2_stderr(&null)?;
    Ok(())
}

/// CLOCK_MONOTONIC now in ns (the clock perf samples can be stamped with).
pub fn monotonic_ns() -> u64 {
    let ts = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Whether SIGINT, SIGTERM or SIGHUP arrived (with [`cleanup::install`] in place).
pub fn interrupted() -> bool {
    interrupting_signal().is_some()
}

/// The signal that interrupted this run (SIGINT, SIGTERM or SIGHUP), if one did.
pub fn interrupting_signal() -> Option<i32> {
    Some(cleanup::INTERRUPTED.load(std::sync::atomic::Ordering::SeqCst)).filter(|&s| s != 0)
}

/// Gives the calling thread, and only it, the rights of user `uid` in group `gid` (no other
/// group), for good: Linux keeps credentials per thread, so the rest of the process keeps its
/// own. For a thread spawned to open files as another user would, then end.
pub fn drop_thread_rights(uid: u32, gid: u32) -> std::io::Result<()> {
    use rustix::process::{Gid, Uid};
    let gid = Gid::from_raw(gid);
    let uid = Uid::from_raw(uid);
    rustix::thread::set_thread_groups(&[gid])?;
    rustix::thread::set_thread_res_gid(gid, gid, gid)?;
    rustix::thread::set_thread_res_uid(uid, uid, uid)?;
    Ok(())
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
