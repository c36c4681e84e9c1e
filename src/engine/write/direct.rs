//! `direct` writes: O_DIRECT from page-aligned buffers. Block sizes must be multiples of 4 KiB;
//! a final partial block (a file size that is not) goes through a buffered descriptor.

use super::{
    Finish, PieceData, WriteEngine, WriteJob, WriteTarget, Writers, sync_block, write_error,
};
use crate::engine::{DIRECT_ALIGN, PieceDone, SyncWorker};
use crate::error::{Error, ErrorKind, Result};
use crate::workload::Block;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::Arc;

/// The `direct` write engine.
pub struct DirectWrite;

struct DirectWriter {
    direct: File,
    buffered: File,
    data: PieceData,
    sync_each: bool,
    path: PathBuf,
}

fn unsupported(target: &WriteTarget, why: &str) -> Error {
    Error::unsupported("method direct unsupported", why)
        .at(&target.path)
        .hint("use a buffered method (write, pwrite, mmap)")
}

impl WriteEngine for DirectWrite {
    fn writers(&self, job: &WriteJob<'_>) -> Result<Writers> {
        let (target, w, sync) = (job.target, job.w, job.sync);
        if !w.bs.is_multiple_of(DIRECT_ALIGN) {
            return Err(Error::new(
                ErrorKind::Unsuited,
                "invalid block size for direct",
                format!(
                    "O_DIRECT writes need a block size that is a multiple of {DIRECT_ALIGN}, not {}",
                    w.bs
                ),
            )
            .hint("use --bs 4K, 1M, ... or another method"));
        }
        let flags = sync.open_flags();
        let direct =
            target
                .reopen(flags | libc::O_DIRECT, false)
                .map_err(|e| match e.os_error() {
                    Some(libc::EINVAL) => unsupported(target, "the filesystem refuses O_DIRECT"),
                    _ => e,
                })?;
        let workers = job.each_part(|_| {
            Ok(DirectWriter {
                direct: direct
                    .try_clone()
                    .map_err(|e| Error::io("cannot open", &target.path, &e))?,
                buffered: target.reopen(flags, false)?,
                data: job.data(),
                sync_each: sync.per_block(true),
                path: target.path.clone(),
            })
        })?;
        Ok(Writers {
            workers,
            finish: Finish::fsync_if(sync, Arc::new(direct)),
        })
    }
}

impl SyncWorker for DirectWriter {
    fn piece(&mut self, piece: Block) -> Result<PieceDone> {
        let data = self.data.bytes(piece.offset, piece.len as usize);
        let file = if piece.len.is_multiple_of(DIRECT_ALIGN) {
            &self.direct
        } else {
            &self.buffered
        };
        match file.write_all_at(data, piece.offset) {
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                return Err(Error::unsupported(
                    "method direct unsupported",
                    "the filesystem refused an aligned O_DIRECT write",
                )
                .at(&self.path)
                .with_source(e));
            }
            r => r.map_err(|e| write_error(&self.path, &e))?,
        }
        Ok(PieceDone::one_call(piece.offset, data))
    }

    fn end_block(&mut self, _block: Block) -> Result<u64> {
        sync_block(self.sync_each, &self.direct, &self.path)
    }
}
