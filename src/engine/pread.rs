//! `pread`: pread(2) at each piece's offset into a page-aligned buffer; no seeks needed.

use super::{
    EngineInfo, EngineOptions, PieceDone, ReadEngine, Source, SyncWorker, Worker, buffer_len,
    pread_full, shrank, sync_workers,
};
use crate::error::{Error, Result};
use crate::sys::buf::AlignedBuf;
use crate::workload::{Block, Workload};
use crate::xor::xor_at;
use std::fs::File;
use std::path::PathBuf;
use std::sync::Arc;

/// The `pread` engine.
pub struct Pread;

struct PreadWorker {
    file: Arc<File>,
    buf: AlignedBuf,
    path: PathBuf,
}

impl ReadEngine for Pread {
    fn info(&self) -> EngineInfo {
        EngineInfo::default()
    }

    fn prepare(
        &self,
        src: &Source,
        w: &Workload,
        _: &EngineOptions,
    ) -> Result<Vec<Box<dyn Worker>>> {
        let file = Arc::new(super::open_advised(src, w)?);
        sync_workers((0..w.threads).map(|_| {
            Ok(PreadWorker {
                file: file.clone(),
                buf: AlignedBuf::new(buffer_len(w)),
                path: src.path.clone(),
            })
        }))
    }
}

impl SyncWorker for PreadWorker {
    fn piece(&mut self, piece: Block) -> Result<PieceDone> {
        let buf = &mut self.buf.as_mut_slice()[..piece.len as usize];
        let n = pread_full(&self.file, buf, piece.offset)
            .map_err(|e| Error::io("read failed", &self.path, &e))?;
        if n < buf.len() {
            return Err(shrank(&self.path, piece.offset + n as u64));
        }
        Ok(PieceDone {
            xor: xor_at(piece.offset, buf),
            ops: 1,
        })
    }
}
