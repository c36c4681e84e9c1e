//! Which system calls `iolab trace` keeps one by one ([`Call`]), which it only times (every
//! other call that can block: futex, poll, nanosleep, recv, unlink, wait4, ...), and which it
//! leaves alone ([`UNTIMED`]: calls that never wait, whose time is the thread's CPU); and the
//! seccomp filter that stops a program at the first two kinds only.

use seccompiler::{BpfProgram, SeccompAction, SeccompFilter};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A traced system call, as the trace file names it.
/// Each variant is the system call of that name (`Open` also `openat`, `openat2` and `creat`;
/// `Dup` also `dup2` and `dup3`; `Fadvise` is `fadvise64`).
#[allow(missing_docs)]
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Call {
    Open,
    Close,
    CloseRange,
    Dup,
    Fcntl,
    Read,
    Readv,
    Pread,
    Preadv,
    Preadv2,
    Write,
    Writev,
    Pwrite,
    Pwritev,
    Pwritev2,
    Lseek,
    Fsync,
    Fdatasync,
    SyncFileRange,
    Ftruncate,
    Fallocate,
    Fadvise,
    Readahead,
    Mmap,
    Munmap,
    Mremap,
    Madvise,
    Msync,
    Sendfile,
    Splice,
    CopyFileRange,
    UringSetup,
    UringEnter,
    /// io_uring_register: registered files and rings, followed.
    UringRegister,
    /// An io_uring read request (read, readv, read_fixed) and its completion: not a system
    /// call; `t` is when iolab saw its completion (at a stop of `tid`, the thread that reaped
    /// it), `dur` the time since `io_uring_enter` submitted it, `arg` the opcode.
    UringRead,
    /// An io_uring write request (write, writev, write_fixed) and its completion, as `UringRead`.
    UringWrite,
    Exec,
    /// newfstatat, statx (and stat, lstat, fstat): `fd` is the directory descriptor a
    /// relative path starts from, or the file itself; -1 for the working directory.
    Stat,
    /// getdents64 (and getdents): a directory's entries, `ret` bytes of them.
    Getdents,
    /// rename, renameat, renameat2: `file` is the file renamed, when the trace knew it by its
    /// old name (it then has the new one too: [`crate::trace::FileInfo::renamed`]).
    Rename,
    /// unlink, unlinkat: `file` is the file whose name was removed, when the trace knew it by
    /// that name.
    Unlink,
}

/// Every traced call with its system-call numbers on this architecture.
/// Every traced call by its system-call number.
pub(crate) fn table() -> Vec<(i64, Call)> {
    use Call::*;
    let mut t = vec![
        (libc::SYS_openat, Open),
        (libc::SYS_openat2, Open),
        (libc::SYS_close, Close),
        (libc::SYS_close_range, CloseRange),
        (libc::SYS_dup, Dup),
        (libc::SYS_dup3, Dup),
        (libc::SYS_fcntl, Fcntl),
        (libc::SYS_read, Read),
        (libc::SYS_readv, Readv),
        (libc::SYS_pread64, Pread),
        (libc::SYS_preadv, Preadv),
        (libc::SYS_preadv2, Preadv2),
        (libc::SYS_write, Write),
        (libc::SYS_writev, Writev),
        (libc::SYS_pwrite64, Pwrite),
        (libc::SYS_pwritev, Pwritev),
        (libc::SYS_pwritev2, Pwritev2),
        (libc::SYS_lseek, Lseek),
        (libc::SYS_fsync, Fsync),
        (libc::SYS_fdatasync, Fdatasync),
        (libc::SYS_sync_file_range, SyncFileRange),
        (libc::SYS_ftruncate, Ftruncate),
        (libc::SYS_fallocate, Fallocate),
        (libc::SYS_fadvise64, Fadvise),
        (libc::SYS_readahead, Readahead),
        (libc::SYS_mmap, Mmap),
        (libc::SYS_munmap, Munmap),
        (libc::SYS_mremap, Mremap),
        (libc::SYS_madvise, Madvise),
        (libc::SYS_msync, Msync),
        (libc::SYS_sendfile, Sendfile),
        (libc::SYS_splice, Splice),
        (libc::SYS_copy_file_range, CopyFileRange),
        (libc::SYS_io_uring_setup, UringSetup),
        (libc::SYS_io_uring_enter, UringEnter),
        (libc::SYS_io_uring_register, UringRegister),
        (libc::SYS_execve, Exec),
        (libc::SYS_execveat, Exec),
        (libc::SYS_newfstatat, Stat),
        (libc::SYS_statx, Stat),
        (libc::SYS_getdents64, Getdents),
        (libc::SYS_renameat, Rename),
        (libc::SYS_renameat2, Rename),
        (libc::SYS_unlinkat, Unlink),
    ];
    #[cfg(target_arch = "x86_64")]
    t.extend([
        (libc::SYS_open, Open),
        (libc::SYS_creat, Open),
        (libc::SYS_dup2, Dup),
        (libc::SYS_stat, Stat),
        (libc::SYS_lstat, Stat),
        (libc::SYS_fstat, Stat),
        (libc::SYS_getdents, Getdents),
        (libc::SYS_rename, Rename),
        (libc::SYS_unlink, Unlink),
    ]);
    t
}

/// A lookup from system-call number to [`Call`], built once per trace.
pub struct Calls(rustc_hash::FxHashMap<i64, Call>);

impl Calls {
    /// The table for this architecture.
    pub fn new() -> Self {
        Calls(table().into_iter().collect())
    }

    /// The traced call with number `nr`, if it is one.
    pub fn get(&self, nr: i64) -> Option<Call> {
        self.0.get(&nr).copied()
    }
}

impl Default for Calls {
    fn default() -> Self {
        Self::new()
    }
}

/// Calls that never wait (or only as a CPU would): not stopped at by the ptrace tracer, not
/// timed by the kernel tracer; their time is in the thread's CPU time. Every call not listed
/// here is timed, and its cause comes from its name ([`super::cause::of_call_name`]).
pub const UNTIMED: &[i64] = &[
    libc::SYS_brk,
    libc::SYS_mprotect,
    libc::SYS_pkey_mprotect,
    libc::SYS_mincore,
    libc::SYS_mlock,
    libc::SYS_munlock,
    libc::SYS_mlockall,
    libc::SYS_munlockall,
    libc::SYS_membarrier,
    libc::SYS_getpid,
    libc::SYS_gettid,
    libc::SYS_getppid,
    libc::SYS_getuid,
    libc::SYS_geteuid,
    libc::SYS_getgid,
    libc::SYS_getegid,
    libc::SYS_getgroups,
    libc::SYS_getresuid,
    libc::SYS_getresgid,
    libc::SYS_getpgid,
    libc::SYS_getsid,
    libc::SYS_getcwd,
    libc::SYS_uname,
    libc::SYS_umask,
    libc::SYS_set_tid_address,
    libc::SYS_set_robust_list,
    libc::SYS_get_robust_list,
    libc::SYS_rseq,
    libc::SYS_prlimit64,
    libc::SYS_getrlimit,
    libc::SYS_setrlimit,
    libc::SYS_rt_sigaction,
    libc::SYS_rt_sigprocmask,
    libc::SYS_rt_sigreturn,
    libc::SYS_sigaltstack,
    libc::SYS_sched_getaffinity,
    libc::SYS_sched_setaffinity,
    libc::SYS_sched_yield,
    libc::SYS_sched_getparam,
    libc::SYS_sched_getscheduler,
    libc::SYS_sched_get_priority_max,
    libc::SYS_sched_get_priority_min,
    libc::SYS_getpriority,
    libc::SYS_setpriority,
    libc::SYS_capget,
    libc::SYS_prctl,
    libc::SYS_clock_gettime,
    libc::SYS_clock_getres,
    libc::SYS_gettimeofday,
    libc::SYS_times,
    libc::SYS_getrusage,
    libc::SYS_sysinfo,
    libc::SYS_getrandom,
    libc::SYS_personality,
    libc::SYS_kill,
    libc::SYS_tgkill,
    libc::SYS_tkill,
    libc::SYS_exit,
    libc::SYS_exit_group,
    libc::SYS_eventfd2,
    libc::SYS_epoll_create1,
    libc::SYS_epoll_ctl,
    libc::SYS_pipe2,
    libc::SYS_socket,
    libc::SYS_socketpair,
    libc::SYS_bind,
    libc::SYS_listen,
    libc::SYS_setsockopt,
    libc::SYS_getsockopt,
    libc::SYS_getsockname,
    libc::SYS_getpeername,
    libc::SYS_timerfd_create,
    libc::SYS_timerfd_settime,
    libc::SYS_timerfd_gettime,
    libc::SYS_signalfd4,
    libc::SYS_inotify_init1,
    libc::SYS_memfd_create,
    libc::SYS_setitimer,
    libc::SYS_getitimer,
    libc::SYS_timer_create,
    libc::SYS_timer_settime,
    libc::SYS_timer_gettime,
    libc::SYS_timer_delete,
    libc::SYS_set_mempolicy,
    libc::SYS_get_mempolicy,
    libc::SYS_getcpu,
    libc::SYS_ioprio_get,
    libc::SYS_ioprio_set,
    libc::SYS_pidfd_open,
    libc::SYS_pidfd_send_signal,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_arch_prctl,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_getpgrp,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_time,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_alarm,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_eventfd,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_epoll_create,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_pipe,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_signalfd,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_inotify_init,
];

/// The seccomp program: stop (SECCOMP_RET_TRACE) at every call but the [`UNTIMED`] ones;
/// without `metadata`, stat and getdents run without a stop too.
pub fn filter(metadata: bool) -> Result<BpfProgram, String> {
    let arch = std::env::consts::ARCH
        .try_into()
        .map_err(|_| format!("no seccomp filter for {}", std::env::consts::ARCH))?;
    let quiet = table()
        .into_iter()
        .filter(|(_, c)| !metadata && matches!(c, Call::Stat | Call::Getdents))
        .map(|(nr, _)| nr);
    let rules: BTreeMap<i64, Vec<seccompiler::SeccompRule>> = UNTIMED
        .iter()
        .copied()
        .chain(quiet)
        .map(|nr| (nr, Vec::new()))
        .collect();
    let f = SeccompFilter::new(rules, SeccompAction::Trace(1), SeccompAction::Allow, arch)
        .map_err(|e| e.to_string())?;
    BpfProgram::try_from(f).map_err(|e| e.to_string())
}

impl Call {
    /// Whether the call reads file data into the program (the kernel counts its bytes in
    /// `/proc/PID/io` rchar).
    pub fn reads(self) -> bool {
        use Call::*;
        matches!(
            self,
            Read | Readv | Pread | Preadv | Preadv2 | Sendfile | CopyFileRange
        )
    }

    /// Whether the op moves a file's bytes out of it from `off` (`ret` of them): the reads, a
    /// splice (counted in no kernel counter) and an io_uring read request.
    pub fn reads_file(self) -> bool {
        self.reads() || matches!(self, Call::Splice | Call::UringRead)
    }

    /// Whether the op writes the program's bytes to `file` at `off`: the write calls and an
    /// io_uring write request.
    pub fn writes_file(self) -> bool {
        self.writes() || self == Call::UringWrite
    }

    /// Whether the op is an io_uring request, not a call: the thread did not wait in it (its
    /// waits are in io_uring_enter).
    pub fn is_request(self) -> bool {
        matches!(self, Call::UringRead | Call::UringWrite)
    }

    /// Whether the tracer needs the call's result (a second stop, at its exit). Not for calls
    /// whose effect is known from their arguments and whose time does not matter here: close,
    /// close_range, munmap, madvise, fadvise, and fcntl other than a dup (their failure, rare,
    /// is not seen: close's is taken as done).
    pub fn needs_result(self, args: &[u64; 6]) -> bool {
        use Call::*;
        match self {
            Close | CloseRange | Munmap | Madvise | Fadvise => false,
            Fcntl => {
                let cmd = args[1] as i32;
                cmd == libc::F_DUPFD || cmd == libc::F_DUPFD_CLOEXEC
            }
            _ => true,
        }
    }

    /// Whether the call writes file data from the program's memory.
    pub fn writes(self) -> bool {
        use Call::*;
        matches!(self, Write | Writev | Pwrite | Pwritev | Pwritev2)
    }

    /// Whether the call moves bytes from one descriptor to another in the kernel (its
    /// destination is the op's `to_file`).
    pub fn copies(self) -> bool {
        use Call::*;
        matches!(self, Sendfile | Splice | CopyFileRange)
    }

    /// Whether the kernel counts the call's bytes in `/proc/PID/io` wchar: the writes, and
    /// sendfile and copy_file_range (both counted as read and written; splice in neither,
    /// measured on 6.18).
    pub fn counts_wchar(self) -> bool {
        use Call::*;
        self.writes() || matches!(self, Sendfile | CopyFileRange)
    }

    /// The name as the trace file and the profile print it.
    pub fn name(self) -> &'static str {
        use Call::*;
        match self {
            Open => "open",
            Close => "close",
            CloseRange => "close_range",
            Dup => "dup",
            Fcntl => "fcntl",
            Read => "read",
            Readv => "readv",
            Pread => "pread",
            Preadv => "preadv",
            Preadv2 => "preadv2",
            Write => "write",
            Writev => "writev",
            Pwrite => "pwrite",
            Pwritev => "pwritev",
            Pwritev2 => "pwritev2",
            Lseek => "lseek",
            Fsync => "fsync",
            Fdatasync => "fdatasync",
            SyncFileRange => "sync_file_range",
            Ftruncate => "ftruncate",
            Fallocate => "fallocate",
            Fadvise => "fadvise",
            Readahead => "readahead",
            Mmap => "mmap",
            Munmap => "munmap",
            Mremap => "mremap",
            Madvise => "madvise",
            Msync => "msync",
            Sendfile => "sendfile",
            Splice => "splice",
            CopyFileRange => "copy_file_range",
            UringSetup => "io_uring_setup",
            UringEnter => "io_uring_enter",
            UringRegister => "io_uring_register",
            UringRead => "uring_read",
            UringWrite => "uring_write",
            Exec => "execve",
            Stat => "stat",
            Getdents => "getdents",
            Rename => "rename",
            Unlink => "unlink",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_call_is_in_the_filter_and_the_filter_builds() {
        let prog = filter(true).unwrap();
        assert!(prog.len() > UNTIMED.len());
        // No call is both kept and untimed.
        for (nr, c) in table() {
            assert!(!UNTIMED.contains(&nr), "{c:?}");
        }
        let calls = Calls::new();
        assert_eq!(calls.get(libc::SYS_pread64), Some(Call::Pread));
        assert_eq!(calls.get(libc::SYS_getpid), None);
        assert!(Call::Sendfile.reads() && !Call::Splice.reads() && Call::Pwrite.writes());
    }
}
