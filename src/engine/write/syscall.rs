//! `write` (write(2) at the file position, `lseek` when the order is random), `pwrite`, and
//! `uncached` (pwritev2(2) with `RWF_DONTCACHE`, Linux 6.14+: buffered, its pages dropped once
//! written back, probed when set up).

use super::{Finish, PieceData, WriteEngine, WriteJob, Writers, sync_block, write_error};
use crate::engine::{PieceDone, SyncWorker};
use crate::error::{Error, Result};
use crate::workload::Block;
use std::fs::File;
use std::io::{Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::Arc;

/// The `write`, `pwrite` and `uncached` engines.
pub struct Syscall {
    positional: bool,
    /// pwritev2 flags (`RWF_DONTCACHE`); 0: plain write(2)/pwrite(2).
    flags: i32,
}

impl Syscall {
    /// `write`: at the file position.
    pub const WRITE: Syscall = Syscall {
        positional: false,
        flags: 0,
    };
    /// `pwrite`: at each block's offset.
    pub const PWRITE: Syscall = Syscall {
        positional: true,
        flags: 0,
    };
    /// `uncached`: pwritev2 with RWF_DONTCACHE at each block's offset.
    pub const UNCACHED: Syscall = Syscall {
        positional: true,
        flags: libc::RWF_DONTCACHE,
    };
}

/// Whether the kernel and file system take `flags` for writes to `file`: byte 0 is written back
/// as it is (or, in an empty file, written and cut off again), since a write of nothing is
/// accepted before the flags are looked at. A refusal is "unsupported" with the reason.
fn probe(file: &File, path: &std::path::Path, flags: i32) -> Result<()> {
    let len = file
        .metadata()
        .map_err(|e| Error::io("cannot open", path, &e))?
        .len();
    let mut byte = [0u8; 1];
    if len > 0 {
        file.read_exact_at(&mut byte, 0)
            .map_err(|e| Error::io("read failed", path, &e))?;
    }
    match crate::sys::calls::pwritev2(file, &byte, 0, flags) {
        Ok(_) => {
            if len == 0 {
                file.set_len(0).map_err(|e| write_error(path, &e))?;
            }
            Ok(())
        }
        Err(e) => match crate::engine::pread::refusal(&e, "writes") {
            Some(why) => Err(Error::unsupported("method uncached unsupported", why).at(path)),
            None => Err(write_error(path, &e)),
        },
    }
}

/// pwritev2 with `flags` until all of `data` is written.
fn pwritev2_all(file: &File, mut data: &[u8], mut offset: u64, flags: i32) -> std::io::Result<()> {
    while !data.is_empty() {
        match crate::sys::calls::pwritev2(file, data, offset, flags) {
            Ok(0) => return Err(std::io::Error::from_raw_os_error(libc::ENOSPC)),
            Ok(n) => {
                data = &data[n..];
                offset += n as u64;
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

struct SyscallWriter {
    positional: bool,
    flags: i32,
    file: Arc<File>,
    data: PieceData,
    sync_each: bool,
    path: PathBuf,
    /// The file position: where the last piece ended.
    pos: u64,
}

impl WriteEngine for Syscall {
    fn writers(&self, job: &WriteJob<'_>) -> Result<Writers> {
        let (target, sync) = (job.target, job.sync);
        let flags = sync.open_flags();
        let shared = Arc::new(target.reopen(flags, self.flags != 0)?);
        if self.flags != 0 {
            probe(&shared, &target.path, self.flags)?;
        }
        let workers = job.each_part(|_| {
            // write(2) moves a file position, so each thread gets its own descriptor.
            let file = if self.positional {
                shared.clone()
            } else {
                Arc::new(target.reopen(flags, false)?)
            };
            Ok(SyscallWriter {
                positional: self.positional,
                flags: self.flags,
                file,
                data: job.data(),
                sync_each: sync.per_block(true),
                path: target.path.clone(),
                pos: u64::MAX,
            })
        })?;
        Ok(Writers {
            workers,
            finish: Finish::fsync_if(sync, shared),
        })
    }
}

impl SyncWorker for SyscallWriter {
    fn piece(&mut self, piece: Block) -> Result<PieceDone> {
        let data = self.data.bytes(piece.offset, piece.len as usize);
        let r = if self.flags != 0 {
            pwritev2_all(&self.file, data, piece.offset, self.flags)
        } else if self.positional {
            self.file.write_all_at(data, piece.offset)
        } else {
            if piece.offset != self.pos {
                (&*self.file)
                    .seek(SeekFrom::Start(piece.offset))
                    .map_err(|e| Error::io("seek failed", &self.path, &e))?;
            }
            (&*self.file).write_all(data)
        };
        r.map_err(|e| write_error(&self.path, &e))?;
        self.pos = piece.offset + piece.len;
        Ok(PieceDone::one_call(piece.offset, data))
    }

    fn end_block(&mut self, _block: Block) -> Result<u64> {
        sync_block(self.sync_each, &self.file, &self.path)
    }
}
