//! `read`: read(2) into a page-aligned buffer; `lseek` before a piece that does not follow the
//! last one (random order).

use super::{
    EngineInfo, EngineOptions, PieceDone, ReadEngine, Source, SyncWorker, Worker, buffer_len,
    shrank, sync_workers,
};
use crate::error::{Error, Result};
use crate::sys::buf::AlignedBuf;
use crate::workload::{Block, Workload};
use crate::xor::xor_at;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::PathBuf;

/// The `read` engine.
pub struct ReadSyscall;

struct ReadWorker {
    file: File,
    buf: AlignedBuf,
    path: PathBuf,
    /// The file position: where the last piece ended.
    pos: u64,
}

impl ReadEngine for ReadSyscall {
    fn info(&self) -> EngineInfo {
        EngineInfo::default()
    }

    fn prepare(
        &self,
        src: &Source,
        w: &Workload,
        _: &EngineOptions,
    ) -> Result<Vec<Box<dyn Worker>>> {
        sync_workers((0..w.threads).map(|_| {
            // Each thread its own descriptor: read(2) advances a file position.
            Ok(ReadWorker {
                file: super::open_advised(src, w)?,
                buf: AlignedBuf::new(buffer_len(w)),
                path: src.path.clone(),
                pos: u64::MAX,
            })
        }))
    }
}

impl SyncWorker for ReadWorker {
    fn piece(&mut self, piece: Block) -> Result<PieceDone> {
        let mut ops = 0;
        if piece.offset != self.pos {
            self.file
                .seek(SeekFrom::Start(piece.offset))
                .map_err(|e| Error::io("seek failed", &self.path, &e))?;
            ops += 1;
        }
        let buf = &mut self.buf.as_mut_slice()[..piece.len as usize];
        let mut done = 0;
        while done < buf.len() {
            match self.file.read(&mut buf[done..]) {
                Ok(0) => return Err(shrank(&self.path, piece.offset + done as u64)),
                Ok(n) => done += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(Error::io("read failed", &self.path, &e)),
            }
            ops += 1;
        }
        self.pos = piece.offset + piece.len;
        Ok(PieceDone {
            xor: xor_at(piece.offset, buf),
            ops,
        })
    }
}
