//! `write` (write(2) at the file position, `lseek` when the order is random) and `pwrite`.

use super::{Finish, PieceData, WriteEngine, WriteJob, Writers, sync_block, write_error};
use crate::engine::{PieceDone, SyncWorker};
use crate::error::{Error, Result};
use crate::workload::Block;
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
        let shared = Arc::new(target.reopen(flags, false)?);
        let workers = job.each_part(|_| {
            // write(2) moves a file position, so each thread gets its own descriptor.
            let file = if self.positional {
                shared.clone()
            } else {
                Arc::new(target.reopen(flags, false)?)
            };
            Ok(SyscallWriter {
                positional: self.positional,
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
        Ok(PieceDone::one_call(piece.offset, data))
    }

    fn end_block(&mut self, _block: Block) -> Result<u64> {
        sync_block(self.sync_each, &self.file, &self.path)
    }
}
