//! The mmap family: map the file and XOR the bytes in place (no copy), with one `madvise` hint
//! (`mmap` uses none, i.e. MADV_NORMAL), or MAP_POPULATE. A file truncated while mapped becomes an
//! error through the SIGBUS guard.

use super::{EngineOptions, Moved, ReadEngine, ReadMethod, Source, Worker};
use crate::error::{Error, Result, describe_io};
use crate::measure::latency::OpLog;
use crate::sys::map::{MapOptions, Mapping};
use crate::workload::{Part, Workload};
use crate::xor::xor_at;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

pub struct Mmap {
    method: ReadMethod,
    advice: Option<libc::c_int>,
    populate: bool,
}

impl Mmap {
    pub fn for_method(method: ReadMethod) -> Mmap {
        let (advice, populate) = match method {
            ReadMethod::MmapSeq => (Some(libc::MADV_SEQUENTIAL), false),
            ReadMethod::MmapRandom => (Some(libc::MADV_RANDOM), false),
            ReadMethod::MmapWillneed => (Some(libc::MADV_WILLNEED), false),
            ReadMethod::MmapHuge => (Some(libc::MADV_HUGEPAGE), false),
            ReadMethod::MmapPopulate => (None, true),
            _ => (None, false),
        };
        Mmap {
            method,
            advice,
            populate,
        }
    }
}

/// The mapping, made once for all workers. MAP_POPULATE faults the whole file in at mmap time,
/// which is the method's cost: for `mmap-populate` the first worker makes it inside the timed run
/// (the others wait for it); every other variant maps during preparation.
struct LazyMap {
    file: std::fs::File,
    len: usize,
    opts: MapOptions,
    advice: Option<libc::c_int>,
    method: ReadMethod,
    path: PathBuf,
    map: OnceLock<Result<Mapping>>,
}

impl LazyMap {
    fn get(&self) -> Result<&Mapping> {
        self.map
            .get_or_init(|| {
                let map = Mapping::new(&self.file, self.len, self.opts).map_err(|e| {
                    Error::failed("cannot map", describe_io(&e))
                        .at(&self.path)
                        .hint("use --method read for files that cannot be mapped")
                })?;
                if let Some(advice) = self.advice {
                    map.advise(advice).map_err(|e| {
                        Error::unsupported(
                            format!("method {} unsupported", self.method.name()),
                            format!("the kernel refused the madvise hint: {}", describe_io(&e)),
                        )
                        .at(&self.path)
                    })?;
                }
                Ok(map)
            })
            .as_ref()
            .map_err(Clone::clone)
    }
}

struct MmapWorker {
    map: Arc<LazyMap>,
}

impl ReadEngine for Mmap {
    fn prepare(
        &self,
        src: &Source,
        w: &Workload,
        _: &EngineOptions,
    ) -> Result<Vec<Box<dyn Worker>>> {
        let lazy = Arc::new(LazyMap {
            file: src
                .file
                .try_clone()
                .map_err(|e| Error::io("cannot open", &src.path, &e))?,
            len: w.len as usize,
            opts: MapOptions {
                writable: false,
                populate: self.populate,
            },
            advice: self.advice,
            method: self.method,
            path: src.path.clone(),
            map: OnceLock::new(),
        });
        if !self.populate {
            lazy.get()?;
        }
        Ok((0..w.threads)
            .map(|_| Box::new(MmapWorker { map: lazy.clone() }) as Box<dyn Worker>)
            .collect())
    }
}

impl Worker for MmapWorker {
    fn run(&mut self, part: &Part, log: &mut OpLog) -> Result<Moved> {
        let map = self.map.get()?;
        let bytes = map.as_slice();
        let mut moved = Moved::default();
        for block in part.iter() {
            log.begin();
            let s = &bytes[block.offset as usize..(block.offset + block.len) as usize];
            moved.xor ^= xor_at(block.offset, s);
            moved.bytes += block.len;
            moved.blocks += 1;
            if !log.end() {
                break;
            }
        }
        if map.sigbus_hits() > 0 {
            return Err(Error::failed(
                "read failed",
                "the file was truncated while mapped (SIGBUS caught; bytes past its new end were not read)",
            )
            .at(&self.map.path));
        }
        Ok(moved)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{EngineOptions, open_source, prepare};
    use crate::workload::Pattern;
    use std::io::Write;

    #[test]
    fn truncation_while_mapped_is_an_error_not_a_crash() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::File::create(&path)
            .unwrap()
            .write_all(&vec![7u8; 1 << 20])
            .unwrap();
        let src = open_source(&path).unwrap();
        let w = Workload {
            bs: 4096,
            len: src.size,
            pattern: Pattern::Seq,
            seed: 0,
            threads: 1,
        };
        let prepared = prepare(ReadMethod::Mmap, &src, &w, &EngineOptions::default()).unwrap();
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(4096)
            .unwrap();
        let err = prepared.run().unwrap_err();
        assert!(err.to_string().contains("truncated while mapped"), "{err}");
    }
}
