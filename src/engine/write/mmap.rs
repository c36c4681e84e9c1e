//! `mmap` writes: the file is sized (ftruncate) and its blocks reserved (fallocate) before the
//! mapping is made, so running out of space is a clean error up front instead of a SIGBUS later;
//! blocks are copied into a MAP_SHARED mapping, msync'ed per block or at the end per sync mode.

use super::{WriteTarget, data_buffer, write_error};
use crate::engine::{Moved, Worker};
use crate::error::{Error, Result, describe_io};
use crate::measure::latency::OpLog;
use crate::sys::buf::AlignedBuf;
use crate::sys::map::{MapOptions, Mapping};
use crate::workload::{Part, Workload};
use crate::xor::xor_at;
use std::fs::File;
use std::path::PathBuf;
use std::sync::Arc;

type Workers = Vec<Box<dyn Worker>>;

struct MmapWriter {
    map: Arc<Mapping>,
    buf: AlignedBuf,
    sync_each: bool,
    path: PathBuf,
}

pub(super) fn workers(
    target: &WriteTarget,
    file: &Arc<File>,
    w: &Workload,
    sync_each: bool,
) -> Result<(Workers, Arc<Mapping>)> {
    let path = &target.path;
    file.set_len(w.len).map_err(|e| write_error(path, &e))?;
    match crate::sys::fallocate(file, w.len) {
        Ok(()) => {}
        // Filesystems without fallocate: the SIGBUS guard still turns a full disk into an error.
        Err(e) if e.raw_os_error() == Some(libc::EOPNOTSUPP) => {}
        Err(e) => return Err(write_error(path, &e)),
    }
    let map = Arc::new(
        Mapping::new(
            file,
            w.len as usize,
            MapOptions {
                writable: true,
                populate: false,
            },
        )
        .map_err(|e| Error::failed("cannot map", describe_io(&e)).at(path))?,
    );
    let workers = (0..w.threads)
        .map(|t| {
            Box::new(MmapWriter {
                map: map.clone(),
                buf: data_buffer(w, t),
                sync_each,
                path: path.clone(),
            }) as Box<dyn Worker>
        })
        .collect();
    Ok((workers, map))
}

impl Worker for MmapWriter {
    fn run(&mut self, part: &Part, _log: &mut OpLog) -> Result<Moved> {
        let mut moved = Moved::default();
        for block in part.iter() {
            let mut at = block.offset;
            while at < block.offset + block.len {
                let n = (block.offset + block.len - at).min(self.buf.len() as u64) as usize;
                let data = &self.buf.as_slice()[..n];
                self.map.write_at(at as usize, data);
                moved.xor ^= xor_at(at, data);
                at += n as u64;
            }
            if self.sync_each {
                self.map
                    .sync(block.offset as usize, block.len as usize)
                    .map_err(|e| Error::io("msync failed", &self.path, &e))?;
                moved.ops += 1;
            }
            moved.bytes += block.len;
            moved.blocks += 1;
        }
        if self.map.sigbus_hits() > 0 {
            return Err(Error::failed(
                "write failed",
                "the mapping lost its backing (SIGBUS: no space left, or the file was truncated)",
            )
            .at(&self.path));
        }
        Ok(moved)
    }
}
