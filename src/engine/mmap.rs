//! The mmap family: map the file and XOR the bytes in place (no copy), with one `madvise` hint
//! (`mmap` uses none, i.e. MADV_NORMAL), or MAP_POPULATE. A file truncated while mapped becomes an
//! error through the SIGBUS guard.

use super::{EngineInfo, Job, PieceDone, ReadEngine, SyncWorker, Work, Workers};
use crate::error::{Error, Result, describe_io};
use crate::sys::buf::AlignedBuf;
use crate::sys::map::Mapping;
use crate::workload::{Block, Part};
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

/// The mmap family: one `madvise` hint (or none), or MAP_POPULATE.
pub struct Mmap {
    advice: Option<(libc::c_int, &'static str)>,
    populate: bool,
}

impl Mmap {
    /// `mmap`: no hint (MADV_NORMAL).
    pub const NORMAL: Mmap = Mmap::hint(None);
    /// `mmap-seq`: MADV_SEQUENTIAL.
    pub const SEQUENTIAL: Mmap = Mmap::hint(Some((libc::MADV_SEQUENTIAL, "MADV_SEQUENTIAL")));
    /// `mmap-random`: MADV_RANDOM.
    pub const RANDOM: Mmap = Mmap::hint(Some((libc::MADV_RANDOM, "MADV_RANDOM")));
    /// `mmap-willneed`: MADV_WILLNEED.
    pub const WILLNEED: Mmap = Mmap::hint(Some((libc::MADV_WILLNEED, "MADV_WILLNEED")));
    /// `mmap-huge`: MADV_HUGEPAGE.
    pub const HUGE: Mmap = Mmap::hint(Some((libc::MADV_HUGEPAGE, "MADV_HUGEPAGE")));
    /// `mmap-populate`: MAP_POPULATE, no hint.
    pub const POPULATE: Mmap = Mmap {
        advice: None,
        populate: true,
    };

    const fn hint(advice: Option<(libc::c_int, &'static str)>) -> Mmap {
        Mmap {
            advice,
            populate: false,
        }
    }
}

/// The mapping, made once for all workers. MAP_POPULATE faults the whole file in at mmap time,
/// which is the method's cost: for `mmap-populate` the first worker makes it inside the timed run
/// (the others wait for it); every other variant maps during preparation.
struct LazyMap {
    file: std::fs::File,
    len: usize,
    populate: bool,
    advice: Option<(libc::c_int, &'static str)>,
    path: PathBuf,
    map: OnceLock<Result<Mapping>>,
}

impl LazyMap {
    /// The mapping (made on first use): a load and a test per block once it exists.
    #[inline(always)]
    fn get(&self) -> Result<&Mapping> {
        match self.map.get() {
            Some(Ok(m)) => Ok(m),
            _ => self.get_slow(),
        }
    }

    #[cold]
    #[inline(never)]
    fn get_slow(&self) -> Result<&Mapping> {
        self.map
            .get_or_init(|| self.map_range(0, self.len))
            .as_ref()
            .map_err(Clone::clone)
    }

    /// Maps `len` bytes from `offset` (page aligned) with this variant's flag and hint.
    fn map_range(&self, offset: u64, len: usize) -> Result<Mapping> {
        // Unsupported, not failed: this file cannot be read by mapping it (a file system
        // without mmap, the address space or map count exhausted), though other methods can;
        // `fast` falls back to pread on that kind, and sweeps record the row and go on.
        let map = Mapping::range(&self.file, offset, len, self.populate).map_err(|e| {
            Error::unsupported("cannot map", describe_io(&e))
                .at(&self.path)
                .hint("use --method read for files that cannot be mapped")
                .with_source(e)
        })?;
        if let Some((advice, name)) = self.advice {
            map.advise(advice).map_err(|e| {
                Error::unsupported(
                    format!("madvise({name}) unsupported"),
                    format!("the kernel refused the hint: {}", describe_io(&e)),
                )
                .at(&self.path)
                .with_source(e)
            })?;
        }
        Ok(map)
    }
}

struct MmapWorker {
    map: Arc<LazyMap>,
    work: Work,
    prefetch: bool,
    /// Map each run's span in the run ([`super::EngineOptions::map_each_run`]).
    each_run: bool,
    /// With `each_run`: this run's mapping and the file offset it starts at.
    own: Option<(Mapping, u64)>,
    /// Where [`Work::Copy`] copies each block: page aligned and kept between runs, as a
    /// program's read buffer is.
    scratch: Option<AlignedBuf>,
}

impl MmapWorker {
    /// The mapping to read and the file offset of its first byte.
    #[inline]
    fn mapping(&self) -> Result<(&Mapping, u64)> {
        match &self.own {
            Some((m, base)) => Ok((m, *base)),
            None => Ok((self.map.get()?, 0)),
        }
    }

    /// [`Work::Copy`]: the block is copied out of the mapping into the kept scratch buffer and
    /// the copy digested (out of line: the XOR path stays small).
    #[inline(never)]
    fn copy_piece(&mut self, piece: Block) -> Result<PieceDone> {
        // Taken out for the copy, so the mapping can be borrowed beside it.
        let mut to = match self.scratch.take() {
            Some(b) if b.len() >= piece.len as usize => b,
            _ => AlignedBuf::new(piece.len as usize),
        };
        let (map, base) = self.mapping()?;
        let at = (piece.offset - base) as usize;
        let s = &map.as_slice()[at..at + piece.len as usize];
        let copy = &mut to.as_mut_slice()[..s.len()];
        copy.copy_from_slice(s);
        // The copy is the work: it must not be reduced to the one byte digested.
        let xor = self.work.digest(piece.offset, std::hint::black_box(&*copy));
        self.scratch = Some(to);
        Ok(PieceDone {
            xor,
            ops: 0,
            waited: 0,
        })
    }
}

impl ReadEngine for Mmap {
    fn info(&self) -> EngineInfo {
        EngineInfo::MAPPED
    }

    fn prepare(&self, job: &Job<'_>) -> Result<Workers> {
        let src = job.src;
        let lazy = Arc::new(LazyMap {
            file: src
                .file
                .try_clone()
                .map_err(|e| Error::io("cannot open", &src.path, &e))?,
            len: job.w.len as usize,
            populate: self.populate,
            advice: self.advice,
            path: src.path.clone(),
            map: OnceLock::new(),
        });
        let each_run = job.opts.map_each_run;
        if !self.populate && !each_run {
            lazy.get()?;
        }
        job.each_thread(|| {
            Ok(MmapWorker {
                map: lazy.clone(),
                work: job.opts.work,
                prefetch: job.opts.prefetch,
                each_run,
                own: None,
                scratch: None,
            })
        })
    }
}

impl SyncWorker for MmapWorker {
    /// A mapped block is XORed in place whole: no piece size to respect.
    fn max_piece(&self) -> u64 {
        u64::MAX
    }

    fn begin(&mut self, part: &Part) -> Result<()> {
        if !self.each_run {
            return Ok(());
        }
        self.own = None;
        let (s, e) = part.span();
        let page = crate::sys::page_size() as u64;
        let base = s / page * page;
        if e > base {
            self.own = Some((self.map.map_range(base, (e - base) as usize)?, base));
        }
        Ok(())
    }

    #[inline]
    fn piece(&mut self, piece: Block) -> Result<PieceDone> {
        if self.work.copies() {
            return self.copy_piece(piece);
        }
        let (map, base) = self.mapping()?;
        let at = (piece.offset - base) as usize;
        let s = &map.as_slice()[at..at + piece.len as usize];
        Ok(PieceDone {
            xor: self.work.digest(piece.offset, s),
            ops: 0,
            waited: 0,
        })
    }

    /// A touch or an XOR in place is a few instructions: runs of untimed blocks go through
    /// one tight loop (a copy is not, and goes block by block).
    fn batches(&self) -> bool {
        !self.work.copies()
    }

    fn untimed_blocks(
        &mut self,
        part: &Part,
        range: std::ops::Range<u64>,
    ) -> Result<(PieceDone, u64)> {
        let (map, base) = self.mapping()?;
        let s = map.as_slice();
        let (mut xor, mut bytes) = (0, 0);
        // The work is looked at once, outside the loop: a touch is then one load per block.
        match self.work {
            Work::Touch => match touch(part, range.clone(), s, base) {
                Some(done) => (xor, bytes) = done,
                None => part.each_block(range, |b| {
                    if b.len > 0 {
                        xor ^= s[(b.offset - base) as usize] as u32;
                    }
                    bytes += b.len;
                }),
            },
            work => part.each_block(range, |b| {
                let at = (b.offset - base) as usize;
                xor ^= work.digest(b.offset, &s[at..at + b.len as usize]);
                bytes += b.len;
            }),
        }
        let done = PieceDone {
            xor,
            ops: 0,
            waited: 0,
        };
        Ok((done, bytes))
    }

    #[inline]
    fn next_is(&mut self, current: Block, next: Block) {
        // Out of order only (in order, the hardware prefetcher is ahead already): a prefetch of
        // the next block's first line, so the page walk and the fetch overlap this block's XOR,
        // as a plain loop over a precomputed order lets the CPU do by itself. A prefetch never
        // faults: a page not in memory is faulted in, and timed, by its own block.
        if !self.prefetch || next.offset == current.offset + current.len {
            return;
        }
        match &self.own {
            Some((map, base)) => map.prefetch(next.offset.saturating_sub(*base) as usize),
            None => {
                if let Some(Ok(map)) = self.map.map.get() {
                    map.prefetch(next.offset as usize);
                }
            }
        }
    }

    fn finish(&mut self) -> Result<()> {
        // A run's own mapping is released here, in this worker's thread.
        let hits = match self.own.take() {
            Some((map, _)) => map.sigbus_hits(),
            None => match self.map.map.get() {
                Some(Ok(map)) => map.sigbus_hits(),
                _ => 0,
            },
        };
        if hits > 0 {
            return Err(Error::failed(
                "read failed",
                "the file was truncated while mapped (SIGBUS caught; bytes past its new end were not read)",
            )
            .at(&self.map.path));
        }
        Ok(())
    }
}

/// One byte of each of blocks `range` of `part`, from `s` (the mapping from file offset
/// `base`): their XOR and the bytes the blocks hold. A function of its own, so that the loop
/// keeps the mapping's address and length in registers (in the caller's body they were loaded
/// from the stack at every block).
#[inline(never)]
fn touch(part: &Part, range: std::ops::Range<u64>, s: &[u8], base: u64) -> Option<(u32, u64)> {
    part.fold_offsets(range, 0u32, |x, off| x ^ s[(off - base) as usize] as u32)
}

#[cfg(test)]
mod tests {
    use crate::engine::{EngineOptions, ReadMethod, open_source, prepare};
    use crate::workload::{Pattern, Workload};

    #[test]
    fn truncation_while_mapped_is_an_error_not_a_crash() {
        for map_each_run in [false, true] {
            let (_dir, path) = crate::testutil::file_with("f", &vec![7u8; 1 << 20]);
            let src = open_source(&path).unwrap();
            let w = Workload {
                bs: 4096,
                len: src.size,
                pattern: Pattern::Seq,
                seed: 0,
                threads: 1,
            };
            let opts = EngineOptions {
                map_each_run,
                ..EngineOptions::default()
            };
            let prepared = prepare(ReadMethod::Mmap, &src, &w, &opts).unwrap();
            std::fs::OpenOptions::new()
                .write(true)
                .open(&path)
                .unwrap()
                .set_len(4096)
                .unwrap();
            let err = prepared.run().unwrap_err();
            assert!(
                err.to_string().contains("truncated while mapped"),
                "{map_each_run}: {err}"
            );
        }
    }
}
