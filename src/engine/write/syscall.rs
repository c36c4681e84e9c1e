//! `write` (write(2) at the file position, `lseek` when the order is random) and `pwrite`.

use super::{WriteMethod, WriteTarget, data_buffer, write_error};
use crate::engine::{MAX_IO, Moved, Worker, pieces};
use crate::error::{Error, Result};
use crate::measure::latency::OpLog;
use crate::sys::buf::AlignedBuf;
use crate::workload::{Part, Workload};
use crate::xor::xor_at;
use std::fs::File;
use std::io::{Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::Arc;

struct SyscallWriter {
    positional: bool,
    file: Arc<File>,
    buf: AlignedBuf,
    sync_each: bool,
    path: PathBuf,
}

pub(super) fn workers(
    method: WriteMethod,
    target: &WriteTarget,
    shared: &Arc<File>,
    w: &Workload,
    flags: i32,
    sync_each: bool,
) -> Result<Vec<Box<dyn Worker>>> {
    (0..w.threads)
        .map(|t| {
            let positional = method == WriteMethod::Pwrite;
            // write(2) moves a file position, so each thread gets its own descriptor.
            let file = if positional {
                shared.clone()
            } else {
                Arc::new(target.reopen(flags, false)?)
            };
            Ok(Box::new(SyscallWriter {
                positional,
                file,
                buf: data_buffer(w, t),
                sync_each,
                path: target.path.clone(),
            }) as Box<dyn Worker>)
        })
        .collect()
}

impl Worker for SyscallWriter {
    fn run(&mut self, part: &Part, _log: &mut OpLog) -> Result<Moved> {
        let mut moved = Moved::default();
        let mut pos = u64::MAX;
        for block in part.iter() {
            if !self.positional && block.offset != pos {
                (&*self.file)
                    .seek(SeekFrom::Start(block.offset))
                    .map_err(|e| Error::io("seek failed", &self.path, &e))?;
            }
            for piece in pieces(block, MAX_IO) {
                let data = &self.buf.as_slice()[..piece.len as usize];
                let r = if self.positional {
                    self.file.write_all_at(data, piece.offset)
                } else {
                    (&*self.file).write_all(data)
                };
                r.map_err(|e| write_error(&self.path, &e))?;
                moved.xor ^= xor_at(piece.offset, data);
                moved.bytes += piece.len;
                moved.ops += 1;
            }
            if self.sync_each {
                self.file
                    .sync_data()
                    .map_err(|e| Error::io("fdatasync failed", &self.path, &e))?;
                moved.ops += 1;
            }
            moved.blocks += 1;
            pos = block.offset + block.len;
        }
        Ok(moved)
    }
}
