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
    /// Buffers taken in turn (see [`rotation`]).
    bufs: Vec<AlignedBuf>,
    next: usize,
    path: PathBuf,
    work: Work,
}

/// How many buffers of `len` bytes a thread reads into in turn. The device writes an O_DIRECT
/// read into memory itself, and into the buffer the CPU has just read (a block just XORed,
/// likely its lines in this core's cache) that took 1.7-2.2x as long on this VM: 1 MiB reads
/// at 780-815 us into one buffer XORed after each read, 363-365 into four in turn, 334
/// untouched. Up to four, within 8 MiB (a larger block has left most of its lines behind in
/// the XOR of itself).
pub(crate) fn rotation(len: usize) -> usize {
    ((8 << 20) / len.max(1)).clamp(1, 4)
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
                bufs: (0..rotation(len)).map(|_| AlignedBuf::new(len)).collect(),
                next: 0,
                path,
                work: job.opts.work,
            })
        })
    }
}

impl SyncWorker for DirectWorker {
    /// Pieces whose aligned cover fits the buffer, even for parts of another workload.
    fn max_piece(&self) -> u64 {
        direct_piece_max(self.bufs[0].len())
    }

    fn piece(&mut self, piece: Block) -> Result<PieceDone> {
        let i = self.next;
        self.next = (i + 1) % self.bufs.len();
        let buf = &mut self.bufs[i];
        let xor = xor_direct_piece(&self.file, buf.as_mut_slice(), piece, &self.path, self.work)?;
        Ok(PieceDone {
            xor,
            ops: 1,
            waited: 0,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::rotation;

    #[test]
    fn small_direct_buffers_are_taken_in_turn_within_8_mib() {
        let mib = 1usize << 20;
        assert_eq!(rotation(4096), 4);
        assert_eq!(
            rotation(mib + 4096),
            4,
            "1 MiB blocks (and the alignment unit)"
        );
        assert_eq!(rotation(2 * mib + 4096), 3);
        assert_eq!(rotation(4 * mib + 4096), 1, "a large block: one buffer");
        assert_eq!(rotation(0), 4, "never divides by zero");
    }
}
