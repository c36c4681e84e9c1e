//! `pread`: pread(2) at each piece's offset into a page-aligned buffer; no seeks needed.
//! `uncached`: the same with preadv2(2) and `RWF_DONTCACHE` (Linux 6.14+; ext4, xfs and btrfs
//! among others): a buffered read through the page cache whose pages are dropped once read, so
//! streaming a large file does not evict the rest of the cache (pages already cached stay). The
//! kernel's and file system's support is probed at set-up: without it the method is
//! unsupported, with the reason.
//! `pread-nowait`: preadv2(2) with `RWF_NOWAIT`, which returns what the page cache holds and
//! refuses (EAGAIN) what it would have to wait for; each refused piece is counted and read with
//! a plain pread, so the run says how much of the file the cache could not serve. (The refusal
//! itself starts readahead, as a cache miss does.)

use super::{Job, PieceDone, ReadEngine, SyncWorker, Work, Workers, pread_full, shrank};
use crate::error::{Error, Result};
use crate::sys::buf::AlignedBuf;
use crate::workload::Block;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The `pread` and `uncached` engines.
pub struct Pread {
    /// preadv2 flags (`RWF_DONTCACHE`); 0: plain pread(2).
    flags: i32,
}

impl Pread {
    /// `pread`.
    pub const PLAIN: Pread = Pread { flags: 0 };
    /// `uncached`: preadv2 with RWF_DONTCACHE.
    pub const UNCACHED: Pread = Pread {
        flags: libc::RWF_DONTCACHE,
    };
    /// `pread-nowait`: preadv2 with RWF_NOWAIT, a plain pread where it would block.
    pub const NOWAIT: Pread = Pread {
        flags: libc::RWF_NOWAIT,
    };

    fn name(&self) -> &'static str {
        match self.flags {
            0 => "pread",
            libc::RWF_NOWAIT => "pread-nowait",
            _ => "uncached",
        }
    }
}

struct PreadWorker {
    flags: i32,
    file: Arc<File>,
    buf: AlignedBuf,
    path: PathBuf,
    work: Work,
}

impl ReadEngine for Pread {
    fn prepare(&self, job: &Job<'_>) -> Result<Workers> {
        // One descriptor for all threads: pread(2) has no file position to share.
        let file = Arc::new(super::open_advised(job)?);
        let path = &job.src.path;
        if self.flags != 0 {
            probe(&file, path, job.src.size, self.flags, self.name())?;
        }
        job.each_thread(|| {
            Ok(PreadWorker {
                flags: self.flags,
                file: file.clone(),
                buf: job.buffer(),
                path: path.clone(),
                work: job.opts.work,
            })
        })
    }
}

/// Reads one byte with `flags` to learn whether the kernel and the file system take them: a
/// refusal is "unsupported" with the reason (EOPNOTSUPP: the file system; EINVAL: the kernel).
pub(crate) fn probe(file: &File, path: &Path, size: u64, flags: i32, method: &str) -> Result<()> {
    if size == 0 {
        return Ok(());
    }
    let mut b = [0u8; 1];
    match crate::sys::calls::preadv2(file, &mut b, 0, flags) {
        Ok(_) => Ok(()),
        // RWF_NOWAIT on an uncached page: supported, it just would have waited.
        Err(e) if e.raw_os_error() == Some(libc::EAGAIN) => Ok(()),
        Err(e) => match refusal(&e, "reads") {
            Some(why) => {
                Err(Error::unsupported(format!("method {method} unsupported"), why).at(path))
            }
            None => Err(Error::io("read failed", path, &e)),
        },
    }
}

/// Why the kernel or the file system refused an I/O flag (EOPNOTSUPP: the file system; EINVAL:
/// the kernel), for uncached `what` ("reads", "writes"); `None` for any other error.
pub(crate) fn refusal(e: &io::Error, what: &str) -> Option<String> {
    let d = crate::error::describe_io(e);
    match e.raw_os_error() {
        Some(libc::EOPNOTSUPP) => Some(format!(
            "this file system does not support it ({d}; uncached {what} need Linux 6.14+ on ext4, xfs or btrfs)"
        )),
        Some(libc::EINVAL) => Some(format!(
            "this kernel does not take the flag ({d}; uncached {what} need Linux 6.14+)"
        )),
        _ => None,
    }
}

/// preadv2 with `flags` until `buf` is full or the file ends; returns the bytes read.
pub(crate) fn preadv2_full(
    file: &File,
    buf: &mut [u8],
    offset: u64,
    flags: i32,
) -> io::Result<usize> {
    let mut done = 0;
    while done < buf.len() {
        match crate::sys::calls::preadv2(file, &mut buf[done..], offset + done as u64, flags) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}

/// Fills `buf` from `offset` with RWF_NOWAIT reads, switching to plain preads at the first
/// refusal (EAGAIN: part of it is not cached): the bytes read, the system calls made, and
/// whether the cache refused any of it.
fn nowait_full(file: &File, buf: &mut [u8], offset: u64) -> (io::Result<usize>, u64, bool) {
    let (mut done, mut calls) = (0, 0);
    while done < buf.len() {
        calls += 1;
        match crate::sys::calls::preadv2(
            file,
            &mut buf[done..],
            offset + done as u64,
            libc::RWF_NOWAIT,
        ) {
            Ok(0) => return (Ok(done), calls, false),
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if e.raw_os_error() == Some(libc::EAGAIN) => {
                let rest = pread_full(file, &mut buf[done..], offset + done as u64);
                return (rest.map(|n| done + n), calls + 1, true);
            }
            Err(e) => return (Err(e), calls, false),
        }
    }
    (Ok(done), calls, false)
}

impl SyncWorker for PreadWorker {
    /// Pieces fit the buffer, even when the parts come from another workload (fast's race).
    fn max_piece(&self) -> u64 {
        (self.buf.len() as u64).min(super::MAX_IO)
    }

    #[inline]
    fn piece(&mut self, piece: Block) -> Result<PieceDone> {
        let buf = &mut self.buf.as_mut_slice()[..piece.len as usize];
        let (mut ops, mut waited) = (1, 0);
        let n = match self.flags {
            0 => pread_full(&self.file, buf, piece.offset),
            libc::RWF_NOWAIT => {
                let (n, calls, refused) = nowait_full(&self.file, buf, piece.offset);
                ops = calls;
                waited = refused as u64;
                n
            }
            flags => preadv2_full(&self.file, buf, piece.offset, flags),
        }
        .map_err(|e| Error::io("read failed", &self.path, &e))?;
        if n < buf.len() {
            return Err(shrank(&self.path, piece.offset + n as u64));
        }
        Ok(PieceDone {
            xor: self.work.digest(piece.offset, buf),
            ops,
            waited,
        })
    }
}
