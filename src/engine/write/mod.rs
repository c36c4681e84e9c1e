//! How bytes are written: `write` and `pwrite` (syscall.rs), `mmap` (ftruncate + fallocate +
//! MAP_SHARED, so a full disk is an error before any byte is stored, never a SIGBUS), and
//! `direct` (O_DIRECT). Durability is one of [`SyncMode`]. Data is seeded pseudo-random bytes and
//! every engine XORs what it writes, so a read-back can verify it.

mod direct;
mod mmap;
mod syscall;

use super::driver::{SyncWorker, Worker, nonempty_parts, run_parts, sync_workers};
use super::{Moved, RunLimits, check_regular};
use crate::error::{Error, Result};
use crate::sys::buf::AlignedBuf;
use crate::sys::map::MapHandle;
use crate::workload::{Part, Workload, WrittenData};
use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

crate::names::method_list! {
    /// The write methods (docs/commands.md).
    pub enum WriteMethod: WriteEngine {
        /// write(2) at the file position (lseek for random order).
        Write = "write" | "fcntl" => syscall::Syscall::WRITE,
        /// pwrite(2) at each block's offset.
        Pwrite = "pwrite" => syscall::Syscall::PWRITE,
        /// pwritev2(2) with RWF_DONTCACHE: buffered, its pages dropped once written back.
        Uncached = "uncached" => syscall::Syscall::UNCACHED,
        /// Copies into a MAP_SHARED mapping of the sized, reserved file.
        Mmap = "mmap" => mmap::MmapWrite,
        /// O_DIRECT pwrite from aligned buffers.
        Direct = "direct" => direct::DirectWrite,
    }
}

crate::named_enum! {
    /// When written data is forced to the device.
    pub enum SyncMode {
        /// Never: the data may still be in the page cache when the time stops.
        None = "none",
        /// One fsync (mmap: msync + fsync) after the last block, inside the timed region.
        End = "end",
        /// fdatasync (mmap: msync) after every block.
        Each = "each",
        /// O_DSYNC (mmap: msync after every block).
        Dsync = "dsync",
        /// O_SYNC (mmap: msync after every block).
        Osync = "osync",
    }
}

impl SyncMode {
    /// Flags to open with: O_DSYNC or O_SYNC for those modes, else none.
    pub fn open_flags(self) -> i32 {
        match self {
            SyncMode::Dsync => libc::O_DSYNC,
            SyncMode::Osync => libc::O_SYNC,
            _ => 0,
        }
    }

    /// Whether each block is followed by an explicit sync call: `each`, or a mode that a method
    /// cannot get from open flags (a mapping has no O_DSYNC).
    pub fn per_block(self, flags_work: bool) -> bool {
        match self {
            SyncMode::Each => true,
            SyncMode::Dsync | SyncMode::Osync => !flags_work,
            _ => false,
        }
    }
}

/// A write method: sets up one worker per part, and what finishes a run.
pub trait WriteEngine: Sync {
    /// Prepares to write the job's parts (untimed).
    fn writers(&self, job: &WriteJob<'_>) -> Result<Writers>;
}

/// What a write engine is asked to set up.
pub struct WriteJob<'a> {
    /// Where the bytes go.
    pub target: &'a WriteTarget,
    /// The workload, narrowed to the threads that have blocks.
    pub w: &'a Workload,
    /// One part per thread.
    pub parts: &'a [Part],
    /// Durability.
    pub sync: SyncMode,
}

impl WriteJob<'_> {
    /// A writer's data (the same for every thread: what is written depends only on the seed, the
    /// block size and the offset).
    pub(crate) fn data(&self) -> PieceData {
        PieceData::new(self.w)
    }

    /// One synchronous writer per part, each made by `make(thread)`.
    pub fn each_part<R: SyncWorker + 'static>(
        &self,
        make: impl FnMut(usize) -> Result<R>,
    ) -> Result<Vec<Box<dyn Worker>>> {
        sync_workers((0..self.parts.len()).map(make))
    }
}

/// `fdatasync` after a block when the sync mode asks for it: the requests issued (0 or 1).
fn sync_block(sync_each: bool, file: &File, path: &Path) -> Result<u64> {
    if !sync_each {
        return Ok(0);
    }
    file.sync_data()
        .map_err(|e| Error::io("fdatasync failed", path, &e))?;
    Ok(1)
}

/// Workers ready to write (one per part) and what must happen after all are done.
pub struct Writers {
    /// One worker per part.
    pub workers: Vec<Box<dyn Worker>>,
    /// The last step of a run, inside the timed region.
    pub finish: Finish,
}

/// What must happen after every worker is done, inside the timed region.
pub enum Finish {
    /// Nothing: the sync mode needs no last step.
    Nothing,
    /// One fsync of the file.
    Fsync(Arc<File>),
    /// msync of the whole mapping, then fsync.
    Msync(MapHandle, Arc<File>),
}

impl Finish {
    /// `fsync` of `file` at the end when the mode is `end`, else nothing.
    pub fn fsync_if(sync: SyncMode, file: Arc<File>) -> Finish {
        if sync == SyncMode::End {
            Finish::Fsync(file)
        } else {
            Finish::Nothing
        }
    }
}

/// Where a write goes: a temporary file beside the user's path, renamed over it by
/// [`WriteTarget::commit`] once complete and verified. Until then the user's file (if any) is
/// untouched, and a target dropped without a commit removes its temporary file.
pub struct WriteTarget {
    /// The user's path; errors name it.
    pub path: PathBuf,
    /// A path that opens the temporary file: `/proc/self/fd/N` for an unnamed one, else its
    /// hidden name beside `path`.
    pub tmp: PathBuf,
    /// The open temporary file.
    pub file: File,
    /// Replace a file that is (or appears) at `path`.
    force: bool,
    committed: bool,
    /// The directory of `path`, by handle, and the names in it.
    dir: crate::sys::dir::Dir,
    name: std::ffi::OsString,
    tmp_name: std::ffi::OsString,
    /// An unnamed file (O_TMPFILE): nothing to remove, ever; linked into place by commit.
    unnamed: bool,
    /// On the list of partial outputs that an interrupt removes (named temporaries only).
    _partial: Option<crate::output::Partial>,
}

/// Prepares to write `path`: refuses an existing file without `force` (leaving it untouched) and
/// anything that is not a regular file, then creates a temporary file in the same directory.
pub fn open_target(path: &Path, force: bool) -> Result<WriteTarget> {
    if std::fs::symlink_metadata(path).is_ok() {
        crate::output::refuse_existing(path, force)?;
        let meta = std::fs::metadata(path).map_err(|e| Error::io("cannot open", path, &e))?;
        check_regular(path, &meta)?;
        // Prove we may replace it before any work is done (opening does not truncate).
        OpenOptions::new()
            .write(true)
            .open(path)
            .map_err(|e| Error::io("cannot open", path, &e))?;
    }
    let tmp = crate::output::temp_path(path, "")?;
    let parent = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let dir =
        crate::sys::dir::Dir::open(parent).map_err(|e| Error::io("cannot open", parent, &e))?;
    let name = path
        .file_name()
        .map(|n| n.to_os_string())
        .ok_or_else(|| Error::usage("invalid output path", "it names no file").at(path))?;
    let tmp_name = tmp
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_default();
    // Unnamed where the file system can (even SIGKILL then leaves nothing), else named and
    // tracked for interrupts.
    let (file, tmp, unnamed, partial) = match dir.create_unnamed() {
        Some(f) => {
            let p = PathBuf::from(format!("/proc/self/fd/{}", f.as_raw_fd()));
            (f, p, true, None)
        }
        None => {
            let partial = crate::output::track(&tmp);
            let f = dir
                .create_new(&tmp_name)
                .map_err(|e| Error::io("cannot create", path, &e))?;
            (f, tmp, false, Some(partial))
        }
    };
    Ok(WriteTarget {
        path: path.to_path_buf(),
        tmp,
        file,
        force,
        committed: false,
        dir,
        name,
        tmp_name,
        unnamed,
        _partial: partial,
    })
}

impl WriteTarget {
    /// Refuses up front a size the filesystem has no room for, rather than failing part way.
    pub fn check_space(&self, len: u64) -> Result<()> {
        match crate::sys::fs_free_bytes(&self.file) {
            Ok(free) if len > free => Err(Error::failed(
                "write failed",
                format!("No space left on device: {len} bytes asked, {free} bytes free"),
            )
            .at(&self.path)
            .hint("free some space or write a smaller --size")),
            _ => Ok(()),
        }
    }

    /// Puts the finished file at the user's path (over an existing one only with `force`).
    pub fn commit(mut self) -> Result<()> {
        let (dir, name, tmp) = (&self.dir, &self.name, &self.tmp_name);
        let placed = match (self.unnamed, self.force) {
            (false, force) => dir.rename(tmp, name, force),
            (true, false) => dir.link(&self.file, name),
            (true, true) => dir.link(&self.file, tmp).and_then(|_| {
                dir.rename(tmp, name, true).inspect_err(|_| {
                    let _ = dir.remove(tmp);
                })
            }),
        };
        placed.map_err(|e| crate::output::not_placed(&self.path, e))?;
        self.committed = true;
        Ok(())
    }

    fn reopen(&self, extra_flags: i32, read: bool) -> Result<File> {
        OpenOptions::new()
            .read(read)
            .write(true)
            .custom_flags(extra_flags)
            .open(&self.tmp)
            .map_err(|e| Error::io("cannot open", &self.path, &e))
    }
}

impl Drop for WriteTarget {
    fn drop(&mut self) {
        if !self.committed && !self.unnamed {
            let _ = self.dir.remove(&self.tmp_name);
        }
    }
}

/// Workers ready to write, and what finishes the run.
pub struct PreparedWrite {
    workers: Vec<Box<dyn Worker>>,
    parts: Vec<Part>,
    finish: Finish,
    path: PathBuf,
}

/// Sets up a write run (untimed): empties the file, then lets the method open descriptors with
/// the sync flags, fill buffers, and for mmap size, reserve and map the file.
pub fn prepare_write(
    method: WriteMethod,
    target: &WriteTarget,
    w: &Workload,
    sync: SyncMode,
) -> Result<PreparedWrite> {
    target
        .file
        .set_len(0)
        .map_err(|e| Error::io("cannot truncate", &target.path, &e))?;
    let (parts, sub) = nonempty_parts(w);
    let Writers { workers, finish } = if parts.is_empty() {
        Writers {
            workers: Vec::new(),
            finish: Finish::Nothing,
        }
    } else {
        method.engine().writers(&WriteJob {
            target,
            w: &sub,
            parts: &parts,
            sync,
        })?
    };
    Ok(PreparedWrite {
        workers,
        parts,
        finish,
        path: target.path.clone(),
    })
}

impl PreparedWrite {
    /// Writes every part (one thread each) and finishes with the sync mode's last step.
    pub fn run(self) -> Result<Moved> {
        self.run_limited(RunLimits::default())
    }

    /// [`PreparedWrite::run`] within `limits` (a deadline, a progress counter).
    pub fn run_limited(mut self, limits: RunLimits) -> Result<Moved> {
        let (total, _) = run_parts(&mut self.workers, &self.parts, limits, "write failed")?;
        let path = &self.path;
        match self.finish {
            Finish::Nothing => {}
            Finish::Fsync(f) => f
                .sync_all()
                .map_err(|e| Error::io("fsync failed", path, &e))?,
            Finish::Msync(map, f) => {
                map.sync(0, map.len())
                    .map_err(|e| Error::io("msync failed", path, &e))?;
                f.sync_all()
                    .map_err(|e| Error::io("fsync failed", path, &e))?;
            }
        }
        Ok(total)
    }
}

/// What the writers write for workload `w` (see [`WrittenData`]): its expected XOR is known
/// without looking at any engine.
pub fn written_data(w: &Workload) -> WrittenData {
    WrittenData::new(w.seed, w.bs, super::buffer_len(w) as u64)
}

/// Reads `path` back (outside any timing) and checks it holds `len` bytes with the XOR that
/// workload `w` writes; `engine_xor` is what the writers themselves reported.
pub fn verify_written(path: &Path, w: &Workload, engine_xor: u32) -> Result<()> {
    let expected = written_data(w).expected_xor(w.len);
    let src = super::open_source(path)?;
    let whole = Workload {
        bs: 1 << 20,
        len: src.size,
        pattern: crate::workload::Pattern::Seq,
        seed: 0,
        threads: 1,
    };
    // Read back uncached where the kernel can, so checking leaves the cache as the writers
    // left it (an uncached write's pages gone once written back); else with pread.
    let opts = super::EngineOptions::default();
    let back = match super::read_all(super::ReadMethod::Uncached, &src, &whole, &opts) {
        Err(e) if e.kind == crate::ErrorKind::Unsupported => {
            super::read_all(super::ReadMethod::Pread, &src, &whole, &opts)?
        }
        r => r?,
    };
    if src.size != w.len || back.xor != expected || engine_xor != expected {
        let x = crate::xor::format_xor;
        return Err(Error::failed(
            "verify failed",
            format!(
                "read back {} bytes with XOR {}; {} bytes were written, whose XOR is {} by definition and {} by the writers",
                src.size,
                x(back.xor),
                w.len,
                x(expected),
                x(engine_xor)
            ),
        )
        .at(path));
    }
    Ok(())
}

/// One writer's bytes: [`WrittenData`]'s base in an aligned buffer (made before the timed run);
/// each piece gets its block's tag before it is written, which costs one 8-byte copy.
pub(crate) struct PieceData {
    buf: AlignedBuf,
    head: [u8; 8],
    def: WrittenData,
}

impl PieceData {
    fn new(w: &Workload) -> PieceData {
        let len = super::buffer_len(w);
        let def = WrittenData::new(w.seed, w.bs, len as u64);
        let base = def.base();
        let mut buf = AlignedBuf::new(len);
        buf.as_mut_slice().copy_from_slice(&base);
        let head = std::array::from_fn(|i| base.get(i).copied().unwrap_or(0));
        PieceData { buf, head, def }
    }

    /// The bytes of file range `offset..offset+len`: at most one period, starting one.
    fn bytes(&mut self, offset: u64, len: usize) -> &[u8] {
        self.def
            .place(self.buf.as_mut_slice(), &self.head, offset, len)
    }

    /// Bytes per period (the buffer's length).
    fn period(&self) -> usize {
        self.buf.len()
    }
}

fn write_error(path: &Path, e: &std::io::Error) -> Error {
    let err = Error::io("write failed", path, e);
    if e.raw_os_error() == Some(libc::ENOSPC) {
        err.hint("free some space or write a smaller --size")
    } else {
        err
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::Pattern;

    #[test]
    fn a_file_that_is_not_what_was_written_fails_verification() {
        let w = Workload {
            bs: 4096,
            len: 4 * 4096,
            pattern: Pattern::Seq,
            seed: 3,
            threads: 1,
        };
        let expected = written_data(&w).expected_xor(w.len);
        // All zeros (a sparse file) XORs to 0: the old data's XOR for an even block count.
        let (_dir, path) = crate::testutil::file_with("f", &[0u8; 4 * 4096]);
        let err = verify_written(&path, &w, expected).unwrap_err();
        assert!(err.to_string().contains("verify failed"), "{err}");
        // The writers' own XOR must agree too.
        let target = open_target(&path.with_file_name("g"), false).unwrap();
        let moved = prepare_write(WriteMethod::Pwrite, &target, &w, SyncMode::None)
            .and_then(|p| p.run())
            .unwrap();
        assert_eq!(moved.xor, expected);
        verify_written(&target.tmp, &w, moved.xor).unwrap();
        assert!(verify_written(&target.tmp, &w, moved.xor ^ 1).is_err());
    }

    #[test]
    fn a_file_created_during_the_write_is_not_replaced() {
        let (dir, _) = crate::testutil::path_in("x");
        let path = dir.path().join("out");
        let target = open_target(&path, false).unwrap();
        std::fs::write(&path, b"made by someone else meanwhile").unwrap();
        let err = target.commit().unwrap_err();
        assert!(err.to_string().contains("refusing to overwrite"), "{err}");
        assert_eq!(
            std::fs::read(&path).unwrap(),
            b"made by someone else meanwhile"
        );
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(left.len(), 1, "the temporary file is gone");
    }
}
