//! What each traced call's arguments mean, once for both tracers: which argument is the
//! descriptor, where the offset and the length come from, what else an op keeps, and a copy's
//! destination. The ptrace tracer reads them at the call's entry (peeking the program's memory
//! for what an argument points to); the kernel tracer's probe reads the same things at the
//! exit (`bpf/iolab.h`'s `K_*` kinds are derived from this table, [`probe_kind`]).

use super::calls::Call;

/// Where a call's offset in its file comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Off {
    /// None: the call works on no range of a file.
    None,
    /// Argument `i`.
    Arg(usize),
    /// The descriptor's position (read, write, readv, writev).
    Position,
    /// Argument `i`, or the descriptor's position when it is -1 (preadv2, pwritev2).
    ArgOrPosition(usize),
    /// The u64 argument `i` points to, or the descriptor's position when it is NULL
    /// (sendfile, splice, copy_file_range).
    Pointer(usize),
    /// The call's result (lseek: the new position).
    Result,
}

/// Where a call's length comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Len {
    /// None.
    None,
    /// Argument `i`.
    Arg(usize),
    /// The sum of an iovec array: its address and its count.
    Iov(usize, usize),
}

/// What else an op keeps of its arguments (`Op::arg`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Extra {
    /// Nothing.
    None,
    /// Argument `i`.
    Arg(usize),
    /// An open's flags: open's second argument, creat's implied ones, openat's third,
    /// openat2's `how.flags` (behind its third).
    OpenFlags,
    /// mmap's protection (upper 32 bits) and flags (lower).
    MmapProt,
}

/// One call's arguments, as both tracers read them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decode {
    /// The argument that is the call's descriptor (the source of a copy).
    pub fd: Option<usize>,
    /// Its offset.
    pub off: Off,
    /// Its length.
    pub len: Len,
    /// What else is kept.
    pub extra: Extra,
    /// A copy's destination: its descriptor's argument, and the argument that points to its
    /// offset (NULL: its position).
    pub to: Option<(usize, Option<usize>)>,
}

const NOTHING: Decode = Decode {
    fd: None,
    off: Off::None,
    len: Len::None,
    extra: Extra::None,
    to: None,
};

/// The meaning of the arguments of `call`, system call number `nr`.
pub fn decode(call: Call, nr: i64) -> Decode {
    use Call::*;
    let on = |off, len, extra| Decode {
        fd: Some(0),
        off,
        len,
        extra,
        to: None,
    };
    match call {
        Open => Decode {
            fd: None,
            extra: Extra::OpenFlags,
            ..NOTHING
        },
        Close | Fsync | Fdatasync => on(Off::None, Len::None, Extra::None),
        Read | Write => on(Off::Position, Len::Arg(2), Extra::None),
        Readv | Writev => on(Off::Position, Len::Iov(1, 2), Extra::None),
        Pread | Pwrite => on(Off::Arg(3), Len::Arg(2), Extra::None),
        Preadv | Pwritev => on(Off::ArgOrPosition(3), Len::Iov(1, 2), Extra::None),
        Preadv2 | Pwritev2 => on(Off::ArgOrPosition(3), Len::Iov(1, 2), Extra::Arg(5)),
        Lseek => on(Off::Result, Len::None, Extra::Arg(2)),
        Ftruncate => on(Off::None, Len::Arg(1), Extra::None),
        SyncFileRange | Readahead => on(Off::Arg(1), Len::Arg(2), Extra::None),
        Fallocate => on(Off::Arg(2), Len::Arg(3), Extra::Arg(1)),
        Fadvise => on(Off::Arg(1), Len::Arg(2), Extra::Arg(3)),
        Getdents => on(Off::None, Len::Arg(2), Extra::None),
        Mmap => Decode {
            fd: Some(4),
            off: Off::Arg(5),
            len: Len::Arg(1),
            extra: Extra::MmapProt,
            to: None,
        },
        Madvise | Msync => Decode {
            len: Len::Arg(1),
            extra: Extra::Arg(2),
            ..NOTHING
        },
        Sendfile => Decode {
            fd: Some(1),
            off: Off::Pointer(2),
            len: Len::Arg(3),
            extra: Extra::Arg(0),
            to: Some((0, None)),
        },
        Splice | CopyFileRange => Decode {
            fd: Some(0),
            off: Off::Pointer(1),
            len: Len::Arg(4),
            extra: Extra::Arg(2),
            to: Some((2, Some(3))),
        },
        Stat => Decode {
            fd: (!is_path_stat(nr)).then_some(0),
            ..NOTHING
        },
        Munmap | Mremap | UringSetup | UringEnter | UringRegister | Exec | CloseRange | Dup
        | Fcntl | UringRead | UringWrite | Rename | Unlink => NOTHING,
    }
}

/// stat and lstat name their file by path only (newfstatat, statx and fstat take a
/// descriptor: a directory, or the file).
fn is_path_stat(nr: i64) -> bool {
    #[cfg(target_arch = "x86_64")]
    if nr == libc::SYS_stat || nr == libc::SYS_lstat {
        return true;
    }
    let _ = nr;
    false
}

/// An open's flags from its arguments `a` (`how_flags`: openat2's, read from behind its third).
pub fn open_flags(nr: i64, a: &[u64; 6], how_flags: impl FnOnce() -> u64) -> u64 {
    (match nr {
        #[cfg(target_arch = "x86_64")]
        libc::SYS_open => a[1],
        #[cfg(target_arch = "x86_64")]
        libc::SYS_creat => (libc::O_CREAT | libc::O_WRONLY | libc::O_TRUNC) as u64,
        libc::SYS_openat2 => how_flags(),
        _ => a[2],
    }) & 0xffff_ffff
}

/// A rename's old and new names, or an unlink's name (and nothing): (directory descriptor,
/// address of the path) each.
pub fn rename_paths(nr: i64, a: &[u64; 6]) -> ((i32, u64), (i32, u64)) {
    #[cfg(target_arch = "x86_64")]
    if nr == libc::SYS_rename {
        return ((libc::AT_FDCWD, a[0]), (libc::AT_FDCWD, a[1]));
    }
    #[cfg(target_arch = "x86_64")]
    if nr == libc::SYS_unlink {
        return ((libc::AT_FDCWD, a[0]), (libc::AT_FDCWD, 0));
    }
    if nr == libc::SYS_unlinkat {
        return ((a[0] as i32, a[1]), (libc::AT_FDCWD, 0));
    }
    let _ = nr;
    ((a[0] as i32, a[1]), (a[2] as i32, a[3]))
}

/// The directory descriptor an open's relative path starts from.
pub fn open_dirfd(nr: i64, a: &[u64; 6]) -> i32 {
    match nr {
        #[cfg(target_arch = "x86_64")]
        libc::SYS_open | libc::SYS_creat => libc::AT_FDCWD,
        _ => a[0] as i32,
    }
}

/// `Op::arg` from the arguments `a`, for the extras that need no memory of the program.
pub fn extra(d: &Decode, a: &[u64; 6]) -> Option<u64> {
    match d.extra {
        Extra::None | Extra::OpenFlags => None,
        Extra::Arg(i) => Some(a[i]),
        Extra::MmapProt => Some((a[2] << 32) | (a[3] & 0xffff_ffff)),
    }
}

/// How the kernel tracer's probe reads a call (bpf/iolab.h's `K_*`; 0: timed only, 11:
/// neither timed nor recorded), from the call's [`Decode`]: the probe's kinds read the
/// descriptor and pointers at the argument positions this table gives.
pub fn probe_kind(call: Call, nr: i64) -> u8 {
    use Call::*;
    let d = decode(call, nr);
    match call {
        Open if nr == libc::SYS_openat2 => 8,
        Open => 7,
        Close => 10,
        Exec => 9,
        Rename | Unlink => 12,
        CloseRange | Dup | Fcntl | UringRead | UringWrite => 0,
        _ => match (d.fd, d.len, d.to) {
            (Some(1), _, Some((0, None))) => 5,
            (Some(0), _, Some((2, Some(3)))) => 6,
            (Some(4), _, None) => 4,
            (Some(0), Len::Iov(1, 2), None) => 3,
            (Some(0), _, None) => 2,
            (None, _, None) => 1,
            other => unreachable!("no probe kind reads {other:?}"),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_call_has_a_probe_kind_that_reads_its_descriptor() {
        for (nr, call) in crate::trace::calls::table() {
            let d = decode(call, nr);
            let k = probe_kind(call, nr);
            // The probe's kinds and where each reads the descriptor (bpf/iolab.bpf.c).
            let reads_fd = match k {
                2 | 3 | 6 => Some(0),
                4 => Some(4),
                5 => Some(1),
                _ => None,
            };
            if !matches!(call, Call::Close) {
                assert_eq!(reads_fd, d.fd, "{call:?} ({nr}): kind {k}");
            }
            // An iovec's sum is only read by the probe's iovec kind.
            assert_eq!(matches!(d.len, Len::Iov(..)), k == 3, "{call:?}");
        }
    }

    #[test]
    fn the_table_says_what_the_manual_pages_say() {
        let pread = decode(Call::Pread, libc::SYS_pread64);
        assert_eq!(
            (pread.fd, pread.off, pread.len),
            (Some(0), Off::Arg(3), Len::Arg(2))
        );
        let sf = decode(Call::Sendfile, libc::SYS_sendfile);
        assert_eq!(
            (sf.fd, sf.off, sf.to),
            (Some(1), Off::Pointer(2), Some((0, None)))
        );
        let a = [0, 7, 2, 3, 4, 5];
        assert_eq!(
            extra(&decode(Call::Mmap, libc::SYS_mmap), &a),
            Some((2 << 32) | 3)
        );
        assert_eq!(open_flags(libc::SYS_openat, &a, || 9), 2);
        assert_eq!(open_flags(libc::SYS_openat2, &a, || 9), 9);
        #[cfg(target_arch = "x86_64")]
        assert_eq!(decode(Call::Stat, libc::SYS_stat).fd, None);
        assert_eq!(decode(Call::Stat, libc::SYS_newfstatat).fd, Some(0));
    }
}
