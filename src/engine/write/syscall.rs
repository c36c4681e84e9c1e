//! `write` (write(2) at the file position, `lseek` when the order is random) and `pwrite`.

use super::{Finish, SyncMode, WriteEngine, WriteTarget, Writers, data_buffer, write_error};
use crate::engine::{PieceDone, SyncWorker, sync_workers};
use crate::error::{Error, Result};
use crate::sys::buf::AlignedBuf;
use crate::workload::{Block, Part, Workload};
use crate::xor::xor_at;
use std::fs::File;
use std::io::{Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::Arc;

/// The `write` and `pwrite` engines.
pub struct Syscall {
    positional: bool,
}

impl Syscall {
    /// `write`: at the file position.
    pub const WRITE: Syscall = Syscall { positional: false };
    /// `pwrite`: at each block's offset.
    pub const PWRITE: Syscall = Syscall { positional: true };
}

struct SyscallWriter {
    positional: bool,
    file: Arc<File>,
    buf: AlignedBuf,
    sync_each: bool,
    path: PathBuf,
    /// The file position: where the last piece ended.
    pos: u64,
}

impl WriteEngine for Syscall {
    fn writers(
        &self,
        target: &WriteTarget,
        w: &Workload,
        parts: &[Part],
        sync: SyncMode,
    ) -> Result<Writers> {
        let flags = sync.open_flags();
        let shared = Arc::new(target.reopen(flags, false)?);
        let workers = sync_workers((0..parts.len()).map(|t| {
            // write(2) moves a file position, so each thread gets its own descriptor.
            let file = if self.positional {
                shared.clone()
            } else {
                Arc::new(target.reopen(flags, false)?)
            };
            Ok(SyscallWriter {
                positional: self.positional,
                file,
                buf: data_buffer(w, t),
                sync_each: sync.per_block(true),
                path: target.path.clone(),
                pos: u64::MAX,
            })
        }))?;
        Ok(Writers {
            workers,
            finish: Finish::fsync_if(sync, shared),
        })
    }
}

impl SyncWorker for SyscallWriter {
    fn piece(&mut self, piece: Block) -> Result<PieceDone> {
        let data = &self.buf.as_slice()[..piece.len as usize];
        let r = if self.positional {
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
        Ok(PieceDone {
            xor: xor_at(piece.offset, data),
            ops: 1,
        })
    }

    fn end_block(&mut self, _block: Block) -> Result<u64> {
        if !self.sync_each {
            return Ok(0);
        }
        self.file
            .sync_data()
            .map_err(|e| Error::io("fdatasync failed", &self.path, &e))?;
        Ok(1)
    }
}
