//! What a thread's time went to, by cause: the one table that says which system call (and which
//! kind of descriptor) stands for which cause. Both tracers' records are classified here, and
//! the time model ([`super::time`]) only adds them up.

use super::{Call, FileKind, Op, Trace};
use serde::{Deserialize, Serialize};

/// What a thread's time went to.
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
pub enum Cause {
    /// On a CPU outside calls: the program's own work.
    Cpu,
    /// Runnable, waiting for a CPU outside any call: the machine was busy.
    RunQueue,
    /// In reads and writes of regular files (and io_uring, Linux AIO): waiting for storage, or
    /// the page cache's copies.
    FileData,
    /// Blocked in making data durable: fsync, fdatasync, sync_file_range, msync, sync, syncfs,
    /// writes to files opened with O_SYNC or O_DSYNC.
    Durability,
    /// Blocked in the file system's names and inodes: open, stat, getdents, close, unlink,
    /// rename, mkdir, utimensat, chmod, truncate, mmap and advice, exec.
    Metadata,
    /// Blocked outside any call: page faults waiting for storage (a mapped file, swap).
    Faults,
    /// Blocked in reads and writes of pipes (another process at the other end).
    Pipes,
    /// Blocked in socket calls (send, recv, connect, accept, and reads and writes of sockets).
    Sockets,
    /// Blocked in poll, select or epoll (sockets, pipes, events).
    Polls,
    /// Blocked in terminals and devices (a terminal's read waits for its user).
    Devices,
    /// Blocked on locks and other threads: futex (mutexes, condition variables, joins), flock,
    /// semaphores, message queues.
    Locks,
    /// Sleeping: nanosleep, clock_nanosleep, pause, waiting for a signal.
    Sleep,
    /// Waiting for a child process (wait4, waitid).
    Children,
    /// Being traced: held at the ptrace tracer's stops, and the stops' own cost.
    Tracer,
    /// Blocked in other system calls.
    Other,
}

impl Cause {
    /// Every cause, in the order tables list them.
    pub const ALL: [Cause; 15] = [
        Cause::Cpu,
        Cause::RunQueue,
        Cause::FileData,
        Cause::Durability,
        Cause::Metadata,
        Cause::Faults,
        Cause::Pipes,
        Cause::Sockets,
        Cause::Polls,
        Cause::Devices,
        Cause::Locks,
        Cause::Sleep,
        Cause::Children,
        Cause::Tracer,
        Cause::Other,
    ];

    /// Its index in [`Cause::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }

    /// Its words: a short name for column heads, a label for tables, and how a verdict says
    /// it.
    fn words(self) -> &'static (&'static str, &'static str, &'static str) {
        &WORDS[self.index()]
    }

    /// A short name, for column heads.
    pub fn short(self) -> &'static str {
        self.words().0
    }

    /// What it is, in words, for tables.
    pub fn label(self) -> &'static str {
        self.words().1
    }

    /// What it is, as a verdict says it ("bound by ...").
    pub fn phrase(self) -> &'static str {
        self.words().2
    }

    /// Whether it is a wait on something else the program runs or talks to (another thread,
    /// a child, the other end of a pipe or socket, a poll): while a thread waits so, the wall
    /// clock is made by what it waits on, where that was traced and working.
    pub fn waits_on_others(self) -> bool {
        matches!(
            self,
            Cause::Locks | Cause::Children | Cause::Pipes | Cause::Sockets | Cause::Polls
        )
    }

    /// Whether a thread in it waits for work: on another thread, a child, a pipe, a socket, a
    /// poll. A thread (other than the first) whose life was almost all such waits is idle. A
    /// sleep is not a wait for work (`sleep 1` does what it was asked), so a sleeping thread is
    /// not idle.
    pub fn is_waiting(self) -> bool {
        self.waits_on_others()
    }
}

/// Each cause's words, in [`Cause::ALL`]'s order: short, label, phrase.
const WORDS: [(&str, &str, &str); Cause::ALL.len()] = [
    (
        "CPU",
        "computing on a CPU (outside calls)",
        "the CPU (computing in the program)",
    ),
    (
        "run queue",
        "waiting for a CPU (the machine was busy)",
        "waiting for a CPU (the machine was busy)",
    ),
    (
        "file data",
        "file data (reads and writes: storage, or the page cache's copies)",
        "file data (reads and writes of files)",
    ),
    (
        "durability",
        "durability (fsync, fdatasync, sync_file_range, O_SYNC writes)",
        "durability (waiting for syncs to reach storage)",
    ),
    (
        "metadata",
        "file-system metadata (open, stat, getdents, unlink, rename, ...)",
        "file-system metadata (open, stat, getdents, unlink, rename, ...)",
    ),
    (
        "faults",
        "page faults waiting for storage (mapped files, swap)",
        "page faults waiting for storage",
    ),
    (
        "pipes",
        "pipes (the process at the other end)",
        "pipes (the process at the other end)",
    ),
    (
        "sockets",
        "sockets (the peer at the other end)",
        "sockets (the peer at the other end)",
    ),
    (
        "polls",
        "poll, select and epoll (sockets, pipes, events)",
        "poll, select or epoll (waiting for sockets, pipes or events)",
    ),
    (
        "devices",
        "terminals and devices (a terminal waits for its user)",
        "terminals and devices",
    ),
    (
        "locks",
        "locks and other threads (futex, flock, semaphores)",
        "locks and other threads",
    ),
    (
        "sleep",
        "sleeping (nanosleep, pause, waiting for a signal)",
        "sleeping",
    ),
    (
        "children",
        "waiting for child processes (wait4, waitid)",
        "child processes",
    ),
    (
        "tracer",
        "being traced (the ptrace tracer's stops)",
        "being traced",
    ),
    ("other", "other system calls", "other system calls"),
];

/// The cause of a system call the trace sums by name ([`super::CallTime`], [`super::Span`]).
pub fn of_call_name(name: &str) -> Cause {
    match name {
        "futex" | "futex_waitv" | "flock" | "semop" | "semtimedop" | "msgrcv" | "msgsnd"
        | "mq_timedreceive" | "mq_timedsend" => Cause::Locks,
        "nanosleep" | "clock_nanosleep" | "pause" | "rt_sigsuspend" | "rt_sigtimedwait"
        | "sigsuspend" => Cause::Sleep,
        "poll" | "ppoll" | "select" | "pselect6" | "epoll_wait" | "epoll_pwait"
        | "epoll_pwait2" => Cause::Polls,
        "accept" | "accept4" | "connect" | "recvfrom" | "recvmsg" | "recvmmsg" | "sendto"
        | "sendmsg" | "sendmmsg" | "shutdown" => Cause::Sockets,
        // vfork (and clone with CLONE_VFORK) waits until the child has exec'd.
        "wait4" | "waitid" | "vfork" | "clone" | "clone3" | "fork" => Cause::Children,
        "sync" | "syncfs" => Cause::Durability,
        "io_getevents" | "io_pgetevents" | "io_submit" => Cause::FileData,
        "ioctl" => Cause::Devices,
        "unlink" | "unlinkat" | "rename" | "renameat" | "renameat2" | "mkdir" | "mkdirat"
        | "rmdir" | "link" | "linkat" | "symlink" | "symlinkat" | "readlink" | "readlinkat"
        | "utime" | "utimes" | "utimensat" | "futimesat" | "chmod" | "fchmod" | "fchmodat"
        | "fchmodat2" | "chown" | "fchown" | "lchown" | "fchownat" | "truncate" | "access"
        | "faccessat" | "faccessat2" | "statfs" | "fstatfs" | "chdir" | "fchdir" | "mknod"
        | "mknodat" | "setxattr" | "lsetxattr" | "fsetxattr" | "getxattr" | "lgetxattr"
        | "fgetxattr" | "listxattr" | "llistxattr" | "flistxattr" | "removexattr"
        | "lremovexattr" | "fremovexattr" | "execve" | "execveat" | "inotify_add_watch"
        | "name_to_handle_at" | "open_by_handle_at" | "mount" | "umount2" => Cause::Metadata,
        _ => Cause::Other,
    }
}

/// The name of system call `nr` on this machine, as strace names it (`syscall_N` for a number
/// this build does not know).
pub fn call_name(nr: i64) -> String {
    usize::try_from(nr)
        .ok()
        .and_then(syscalls::Sysno::new)
        .map_or_else(|| format!("syscall_{nr}"), |s| s.name().to_string())
}

/// Files a trace's writes make durable as they go: opened with O_SYNC or O_DSYNC (by any of
/// their opens: the open's flags are in the trace, a descriptor's later changes are not).
pub fn synced_files(t: &Trace) -> rustc_hash::FxHashSet<u32> {
    let sync = (libc::O_SYNC | libc::O_DSYNC) as u64;
    t.ops
        .iter()
        .filter(|o| o.call == Call::Open && o.ret >= 0 && o.arg.unwrap_or(0) & sync != 0)
        .filter_map(|o| o.file)
        .collect()
}

/// The cause of a kept call: by the call, and for reads and writes by what their descriptor
/// was open on. `synced` are the files whose writes are synchronous ([`synced_files`]).
pub fn of_op(t: &Trace, op: &Op, synced: &rustc_hash::FxHashSet<u32>) -> Cause {
    use Call::*;
    let kind = |f: Option<u32>| f.and_then(|i| t.files.get(i as usize)).map(|x| x.kind);
    let by_kind = |k: Option<FileKind>| match k {
        Some(FileKind::Pipe) => Cause::Pipes,
        Some(FileKind::Socket) => Cause::Sockets,
        Some(FileKind::Device | FileKind::Other) => Cause::Devices,
        Some(FileKind::Dir) => Cause::Metadata,
        _ => Cause::FileData,
    };
    // RWF_DSYNC | RWF_SYNC on pwritev2.
    let rwf_sync = 0x2 | 0x4;
    match op.call {
        Fsync | Fdatasync | SyncFileRange | Msync => Cause::Durability,
        Open | Close | CloseRange | Dup | Fcntl | Lseek | Mmap | Munmap | Mremap | Madvise
        | Stat | Getdents | Rename | Unlink | Exec | Fadvise | Ftruncate | Fallocate => {
            Cause::Metadata
        }
        UringSetup | UringEnter | UringRegister | UringRead | UringWrite | Readahead => {
            Cause::FileData
        }
        Sendfile | Splice | CopyFileRange => {
            let (a, b) = (by_kind(kind(op.file)), by_kind(kind(op.to_file)));
            // A copy into or out of a pipe or socket waits on its other end.
            [a, b]
                .into_iter()
                .find(|c| matches!(c, Cause::Pipes | Cause::Sockets))
                .unwrap_or(a)
        }
        Write | Writev | Pwrite | Pwritev | Pwritev2 => {
            let c = by_kind(kind(op.file));
            let sync = op.file.is_some_and(|f| synced.contains(&f))
                || (op.call == Pwritev2 && op.arg.unwrap_or(0) & rwf_sync != 0);
            if c == Cause::FileData && sync {
                Cause::Durability
            } else {
                c
            }
        }
        Read | Readv | Pread | Preadv | Preadv2 => by_kind(kind(op.file)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_causes_of_the_calls_a_program_waits_in() {
        assert_eq!(call_name(libc::SYS_futex), "futex");
        assert_eq!(call_name(libc::SYS_clock_nanosleep), "clock_nanosleep");
        assert_eq!(call_name(99_999), "syscall_99999");
        assert_eq!(of_call_name("futex"), Cause::Locks);
        assert_eq!(of_call_name("clock_nanosleep"), Cause::Sleep);
        assert_eq!(of_call_name("epoll_wait"), Cause::Polls);
        assert_eq!(of_call_name("recvfrom"), Cause::Sockets);
        assert_eq!(of_call_name("wait4"), Cause::Children);
        assert_eq!(of_call_name("unlinkat"), Cause::Metadata);
        assert_eq!(of_call_name("getrandom"), Cause::Other);
        for c in Cause::ALL {
            assert_eq!(Cause::ALL[c.index()], c);
        }
    }
}
