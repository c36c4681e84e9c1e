//! `read`: read(2) into a page-aligned buffer; `lseek` before each block when the order is random.

use super::{EngineOptions, MAX_IO, Moved, ReadEngine, Source, Worker, buffer_len, pieces, shrank};
use crate::error::{Error, Result};
use crate::measure::latency::OpLog;
use crate::sys::buf::AlignedBuf;
use crate::workload::{Part, Workload};
use crate::xor::xor_at;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::PathBuf;

pub struct ReadSyscall;

struct ReadWorker {
    file: File,
    buf: AlignedBuf,
    path: PathBuf,
}

impl ReadEngine for ReadSyscall {
    fn prepare(
        &self,
        src: &Source,
        w: &Workload,
        _: &EngineOptions,
    ) -> Result<Vec<Box<dyn Worker>>> {
        (0..w.threads)
            .map(|_| {
                // Each thread its own descriptor: read(2) advances a file position.
                let file = super::open_advised(src, w)?;
                Ok(Box::new(ReadWorker {
                    file,
                    buf: AlignedBuf::new(buffer_len(w)),
                    path: src.path.clone(),
                }) as Box<dyn Worker>)
            })
            .collect()
    }
}

impl Worker for ReadWorker {
    fn run(&mut self, part: &Part, log: &mut OpLog) -> Result<Moved> {
        let mut moved = Moved::default();
        let mut pos = u64::MAX;
        for block in part.iter() {
            log.begin();
            if block.offset != pos {
                self.file
                    .seek(SeekFrom::Start(block.offset))
                    .map_err(|e| Error::io("seek failed", &self.path, &e))?;
                moved.ops += 1;
            }
            for piece in pieces(block, MAX_IO) {
                let buf = &mut self.buf.as_mut_slice()[..piece.len as usize];
                let mut done = 0;
                while done < buf.len() {
                    match self.file.read(&mut buf[done..]) {
                        Ok(0) => return Err(shrank(&self.path, piece.offset + done as u64)),
                        Ok(n) => done += n,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                        Err(e) => return Err(Error::io("read failed", &self.path, &e)),
                    }
                    moved.ops += 1;
                }
                moved.xor ^= xor_at(piece.offset, buf);
                moved.bytes += piece.len;
            }
            pos = block.offset + block.len;
            moved.blocks += 1;
            if !log.end() {
                break;
            }
        }
        Ok(moved)
    }
}
