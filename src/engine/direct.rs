//! `direct`: O_DIRECT + pread into page-aligned (huge-page backed when large) buffers. Offsets and
//! lengths are widened to the 4 KiB alignment O_DIRECT needs and only the asked bytes are XORed,
//! so any block size and an unaligned file tail work.

use super::{
    DIRECT_ALIGN, EngineInfo, Job, MAX_IO, PieceDone, ReadEngine, Source, SyncWorker, Work, Workers,
};
use crate::error::{Error, Result, describe_io};
use crate::sys::buf::AlignedBuf;
use crate::workload::{Block, Workload};
use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The `direct` engine.
pub struct Direct;

/// Opens `path` with O_DIRECT and proves an aligned read works; a filesystem that refuses is
/// reported as unsupported with the reason.
pub(crate) fn open_direct(src: &Source, method: &str) -> Result<File> {
    let unsupported = |why: String| {
        Error::unsupported(format!("method {method} unsupported"), why)
            .at(&src.path)
            .hint("use a buffered method (read, pread, mmap, uring)")
    };
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(&src.path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::EINVAL) => unsupported("the filesystem refuses O_DIRECT".into()),
            _ => Error::io("cannot open", &src.path, &e),
        })?;
    if src.size > 0 {
        let mut probe = AlignedBuf::new(DIRECT_ALIGN as usize);
        if let Err(e) = file.read_at(probe.as_mut_slice(), 0) {
            let why = format!("an aligned O_DIRECT read failed: {}", describe_io(&e));
            return Err(unsupported(why).with_source(e));
        }
    }
    Ok(file)
}

/// The aligned range covering a block: `(start, len)`.
pub(crate) fn aligned_cover(b: Block) -> (u64, u64) {
    let a = DIRECT_ALIGN;
    let start = b.offset / a * a;
    let end = (b.offset + b.len).div_ceil(a) * a;
    (start, end - start)
}

/// Buffer size that holds the aligned cover of any piece of a workload's blocks.
pub(crate) fn direct_buffer_len(w: &Workload) -> usize {
    let piece = w.bs.clamp(1, MAX_IO);
    (piece.div_ceil(DIRECT_ALIGN) * DIRECT_ALIGN + DIRECT_ALIGN) as usize
}

/// The longest piece whose aligned cover fits a buffer of `buf_len` bytes (one alignment unit
/// is kept for a piece that starts mid-unit).
pub(crate) fn direct_piece_max(buf_len: usize) -> u64 {
    (buf_len as u64)
        .saturating_sub(DIRECT_ALIGN)
        .clamp(1, MAX_IO)
}

/// Reads `piece` through an O_DIRECT descriptor and returns its XOR.
pub(crate) fn xor_direct_piece(
    file: &File,
    buf: &mut [u8],
    piece: Block,
    path: &Path,
    work: Work,
) -> Result<u32> {
    let (start, len) = aligned_cover(piece);
    let want = (piece.offset - start + piece.len) as usize;
    let dst = &mut buf[..len as usize];
    let mut done = 0usize;
    // O_DIRECT reads are whole aligned units; a short read is the end of the file.
    while done < want {
        match file.read_at(&mut dst[done..], start + done as u64) {
            Ok(0) => return Err(super::shrank(path, start + done as u64)),
            Ok(n) => done += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(Error::io("read failed", path, &e)),
        }
        if !done.is_multiple_of(DIRECT_ALIGN as usize) {
            break;
        }
    }
    if done < want {
        return Err(super::shrank(path, start + done as u64));
    }
    let skip = (piece.offset - start) as usize;
    Ok(work.digest(piece.offset, &dst[skip..skip + piece.len as usize]))
}

struct DirectWorker {
    file: Arc<File>,
    buf: AlignedBuf,
    path: PathBuf,
    work: Work,
}

impl ReadEngine for Direct {
    fn info(&self) -> EngineInfo {
        EngineInfo::DIRECT
    }

    fn prepare(&self, job: &Job<'_>) -> Result<Workers> {
        let file = Arc::new(open_direct(job.src, "direct")?);
        let len = direct_buffer_len(job.w);
        job.each_thread(|| {
            let (file, path) = (file.clone(), job.src.path.clone());
            Ok(DirectWorker {
                file,
                buf: AlignedBuf::new(len),
                path,
                work: job.opts.work,
            })
        })
    }
}

impl SyncWorker for DirectWorker {
    /// Pieces whose aligned cover fits the buffer, even for parts of another workload.
    fn max_piece(&self) -> u64 {
        direct_piece_max(self.buf.len())
    }

    fn piece(&mut self, piece: Block) -> Result<PieceDone> {
        let xor = xor_direct_piece(
            &self.file,
            self.buf.as_mut_slice(),
            piece,
            &self.path,
            self.work,
        )?;
        Ok(PieceDone {
            xor,
            ops: 1,
            waited: 0,
        })
    }
}
