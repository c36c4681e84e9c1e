//! `pread`: pread(2) at each block's offset into a page-aligned buffer; no seeks needed.

use super::{
    EngineOptions, MAX_IO, Moved, ReadEngine, Source, Worker, buffer_len, pieces, pread_full,
    shrank,
};
use crate::error::{Error, Result};
use crate::measure::latency::OpLog;
use crate::sys::buf::AlignedBuf;
use crate::workload::{Part, Workload};
use crate::xor::xor_at;
use std::fs::File;
use std::path::PathBuf;
use std::sync::Arc;

pub struct Pread;

struct PreadWorker {
    file: Arc<File>,
    buf: AlignedBuf,
    path: PathBuf,
}

impl ReadEngine for Pread {
    fn prepare(
        &self,
        src: &Source,
        w: &Workload,
        _: &EngineOptions,
    ) -> Result<Vec<Box<dyn Worker>>> {
        let file = Arc::new(super::open_advised(src, w)?);
        Ok((0..w.threads)
            .map(|_| {
                Box::new(PreadWorker {
                    file: file.clone(),
                    buf: AlignedBuf::new(buffer_len(w)),
                    path: src.path.clone(),
                }) as Box<dyn Worker>
            })
            .collect())
    }
}

impl Worker for PreadWorker {
    fn run(&mut self, part: &Part, log: &mut OpLog) -> Result<Moved> {
        let mut moved = Moved::default();
        for block in part.iter() {
            log.begin();
            for piece in pieces(block, MAX_IO) {
                let buf = &mut self.buf.as_mut_slice()[..piece.len as usize];
                let n = pread_full(&self.file, buf, piece.offset)
                    .map_err(|e| Error::io("read failed", &self.path, &e))?;
                if n < buf.len() {
                    return Err(shrank(&self.path, piece.offset + n as u64));
                }
                moved.ops += 1;
                moved.xor ^= xor_at(piece.offset, buf);
                moved.bytes += piece.len;
            }
            moved.blocks += 1;
            if !log.end() {
                break;
            }
        }
        Ok(moved)
    }
}
