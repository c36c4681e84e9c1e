//! `mmap` writes: the file is sized (ftruncate) and its blocks reserved (fallocate) before the
//! mapping is made, so running out of space is a clean error up front instead of a SIGBUS later;
//! blocks are copied into a MAP_SHARED mapping, each thread into its own window of it, and
//! msync'ed per block or at the end per sync mode.

use super::{Finish, PieceData, SyncMode, WriteEngine, WriteJob, Writers, write_error};
use crate::engine::{PieceDone, SyncWorker};
use crate::error::{Error, Result, describe_io};
use crate::sys::map::{MapWindow, WritableMapping};
use crate::workload::Block;
use crate::xor::xor_at;
use std::path::PathBuf;
use std::sync::Arc;

/// The `mmap` write engine.
pub struct MmapWrite;

struct MmapWriter {
    window: MapWindow,
    data: PieceData,
    sync_each: bool,
    path: PathBuf,
}

impl WriteEngine for MmapWrite {
    fn writers(&self, job: &WriteJob<'_>) -> Result<Writers> {
        let (target, w, sync) = (job.target, job.w, job.sync);
        let path = &target.path;
        let file = Arc::new(target.reopen(0, true)?);
        file.set_len(w.len).map_err(|e| write_error(path, &e))?;
        match crate::sys::fallocate(&file, w.len) {
            Ok(()) => {}
            // Filesystems without fallocate: the SIGBUS guard still turns a full disk into an error.
            Err(e) if e.raw_os_error() == Some(libc::EOPNOTSUPP) => {}
            Err(e) => return Err(write_error(path, &e)),
        }
        let map = WritableMapping::new(&file, w.len as usize).map_err(|e| {
            Error::failed("cannot map", describe_io(&e))
                .at(path)
                .with_source(e)
        })?;
        let ranges: Vec<(usize, usize)> = job
            .parts
            .iter()
            .map(|p| {
                let (start, end) = p.span();
                (start as usize, (end - start) as usize)
            })
            .collect();
        let (windows, handle) = map.into_windows(&ranges).ok_or_else(|| {
            Error::failed("cannot map", "the threads' parts overlap (a bug)").at(path)
        })?;
        let mut windows = windows.into_iter();
        let workers = job.each_part(|_| {
            Ok(MmapWriter {
                window: windows
                    .next()
                    .ok_or_else(|| Error::failed("cannot map", "fewer windows than parts"))?,
                data: job.data(),
                sync_each: sync.per_block(false),
                path: path.clone(),
            })
        })?;
        Ok(Writers {
            workers,
            finish: if sync == SyncMode::End {
                Finish::Msync(handle, file)
            } else {
                Finish::Nothing
            },
        })
    }
}

impl SyncWorker for MmapWriter {
    /// A block is copied in buffer-sized runs; the core need not cut it.
    fn max_piece(&self) -> u64 {
        u64::MAX
    }

    fn piece(&mut self, piece: Block) -> Result<PieceDone> {
        let base = self.window.offset() as u64;
        let dst = self.window.as_mut_slice();
        let mut xor = 0;
        let mut at = piece.offset;
        while at < piece.offset + piece.len {
            let n = (piece.offset + piece.len - at).min(self.data.period() as u64) as usize;
            let data = self.data.bytes(at, n);
            let start = (at - base) as usize;
            dst[start..start + n].copy_from_slice(data);
            xor ^= xor_at(at, data);
            at += n as u64;
        }
        Ok(PieceDone {
            xor,
            ops: 0,
            waited: 0,
        })
    }

    fn end_block(&mut self, block: Block) -> Result<u64> {
        if !self.sync_each {
            return Ok(0);
        }
        self.window
            .sync(block.offset as usize, block.len as usize)
            .map_err(|e| Error::io("msync failed", &self.path, &e))?;
        Ok(1)
    }

    fn finish(&mut self) -> Result<()> {
        if self.window.sigbus_hits() > 0 {
            return Err(Error::failed(
                "write failed",
                "the mapping lost its backing (SIGBUS: no space left, or the file was truncated)",
            )
            .at(&self.path));
        }
        Ok(())
    }
}
