//! `read`: read(2) into a page-aligned buffer; `lseek` before a piece that does not follow the
//! last one (random order), or before every piece where asked (the classic benchmark).

use super::{Job, PieceDone, ReadEngine, SyncWorker, Work, Workers, shrank};
use crate::error::{Error, Result};
use crate::sys::buf::AlignedBuf;
use crate::workload::Block;
use std::fs::File;
use std::io;
use std::path::PathBuf;

/// The `read` engine.
pub struct ReadSyscall;

struct ReadWorker {
    file: File,
    buf: AlignedBuf,
    path: PathBuf,
    /// The file position: where the last piece ended.
    pos: u64,
    work: Work,
    /// Seek before every piece (the classic benchmark's loop), not only where the order jumps.
    seek_each: bool,
}

impl ReadEngine for ReadSyscall {
    fn prepare(&self, job: &Job<'_>) -> Result<Workers> {
        // Each thread its own descriptor: read(2) advances a file position.
        job.each_thread(|| {
            let file = super::open_advised(job)?;
            let path = job.src.path.clone();
            let pos = u64::MAX;
            Ok(ReadWorker {
                file,
                buf: job.buffer(),
                path,
                pos,
                work: job.opts.work,
                seek_each: job.opts.seek_each,
            })
        })
    }
}

impl SyncWorker for ReadWorker {
    /// Pieces fit the buffer, even when the parts come from another workload (fast's race).
    fn max_piece(&self) -> u64 {
        (self.buf.len() as u64).min(super::MAX_IO)
    }

    #[inline]
    fn piece(&mut self, piece: Block) -> Result<PieceDone> {
        let mut ops = 0;
        if self.seek_each || piece.offset != self.pos {
            crate::sys::calls::lseek(&self.file, piece.offset as i64)
                .map_err(|e| Error::io("seek failed", &self.path, &e))?;
            ops += 1;
        }
        let buf = &mut self.buf.as_mut_slice()[..piece.len as usize];
        let mut done = 0;
        while done < buf.len() {
            match crate::sys::calls::read(&self.file, &mut buf[done..]) {
                Ok(0) => return Err(shrank(&self.path, piece.offset + done as u64)),
                Ok(n) => done += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(Error::io("read failed", &self.path, &e)),
            }
            ops += 1;
        }
        self.pos = piece.offset + piece.len;
        let xor = self.work.digest(piece.offset, buf);
        Ok(PieceDone {
            xor,
            ops,
            waited: 0,
        })
    }
}
