//! `pread`: pread(2) at each piece's offset into a page-aligned buffer; no seeks needed.

use super::{Job, PieceDone, ReadEngine, SyncWorker, Work, Workers, pread_full, shrank};
use crate::error::{Error, Result};
use crate::sys::buf::AlignedBuf;
use crate::workload::Block;
use std::fs::File;
use std::path::PathBuf;
use std::sync::Arc;

/// The `pread` engine.
pub struct Pread;

struct PreadWorker {
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
        job.each_thread(|| {
            Ok(PreadWorker {
                file: file.clone(),
                buf: job.buffer(),
                path: path.clone(),
                work: job.opts.work,
            })
        })
    }
}

impl SyncWorker for PreadWorker {
    /// Pieces fit the buffer, even when the parts come from another workload (fast's race).
    fn max_piece(&self) -> u64 {
        (self.buf.len() as u64).min(super::MAX_IO)
    }

    #[inline]
    fn piece(&mut self, piece: Block) -> Result<PieceDone> {
        let buf = &mut self.buf.as_mut_slice()[..piece.len as usize];
        let n = pread_full(&self.file, buf, piece.offset)
            .map_err(|e| Error::io("read failed", &self.path, &e))?;
        if n < buf.len() {
            return Err(shrank(&self.path, piece.offset + n as u64));
        }
        Ok(PieceDone {
            xor: self.work.digest(piece.offset, buf),
            ops: 1,
        })
    }
}
