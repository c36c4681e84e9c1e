//! `direct` writes: O_DIRECT from page-aligned buffers. Block sizes must be multiples of 4 KiB;
//! a final partial block (a file size that is not) goes through a buffered descriptor.

use super::{WriteTarget, data_buffer, write_error};
use crate::engine::{DIRECT_ALIGN, MAX_IO, Moved, Worker, pieces};
use crate::error::{Error, Result};
use crate::measure::latency::OpLog;
use crate::sys::buf::AlignedBuf;
use crate::workload::{Part, Workload};
use crate::xor::xor_at;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;

struct DirectWriter {
    direct: File,
    buffered: File,
    buf: AlignedBuf,
    sync_each: bool,
    path: PathBuf,
}

pub(super) fn workers(
    target: &WriteTarget,
    w: &Workload,
    flags: i32,
    sync_each: bool,
) -> Result<Vec<Box<dyn Worker>>> {
    if !w.bs.is_multiple_of(DIRECT_ALIGN) {
        return Err(Error::usage(
            "invalid block size for direct",
            format!(
                "O_DIRECT writes need a block size that is a multiple of {DIRECT_ALIGN}, not {}",
                w.bs
            ),
        )
        .hint("use --bs 4K, 1M, ... or another method"));
    }
    let direct = target.reopen(flags | libc::O_DIRECT, false).map_err(|e| {
        if e.cause.contains("Invalid argument") {
            Error::unsupported(
                "method direct unsupported",
                "the filesystem refuses O_DIRECT",
            )
            .at(&target.path)
            .hint("use a buffered method (write, pwrite, mmap)")
        } else {
            e
        }
    })?;
    (0..w.threads)
        .map(|t| {
            Ok(Box::new(DirectWriter {
                direct: direct
                    .try_clone()
                    .map_err(|e| Error::io("cannot open", &target.path, &e))?,
                buffered: target.reopen(flags, false)?,
                buf: data_buffer(w, t),
                sync_each,
                path: target.path.clone(),
            }) as Box<dyn Worker>)
        })
        .collect()
}

impl Worker for DirectWriter {
    fn run(&mut self, part: &Part, _log: &mut OpLog) -> Result<Moved> {
        let mut moved = Moved::default();
        for block in part.iter() {
            for piece in pieces(block, MAX_IO) {
                let data = &self.buf.as_slice()[..piece.len as usize];
                let file = if piece.len % DIRECT_ALIGN == 0 {
                    &self.direct
                } else {
                    &self.buffered
                };
                let r = file.write_all_at(data, piece.offset);
                match r {
                    Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                        return Err(Error::unsupported(
                            "method direct unsupported",
                            "the filesystem refused an aligned O_DIRECT write",
                        )
                        .at(&self.path));
                    }
                    r => r.map_err(|e| write_error(&self.path, &e))?,
                }
                moved.xor ^= xor_at(piece.offset, data);
                moved.bytes += piece.len;
                moved.ops += 1;
            }
            if self.sync_each {
                self.direct
                    .sync_data()
                    .map_err(|e| Error::io("fdatasync failed", &self.path, &e))?;
                moved.ops += 1;
            }
            moved.blocks += 1;
        }
        Ok(moved)
    }
}
