//! How bytes are written: `write` and `pwrite` (syscall.rs), `mmap` (ftruncate + fallocate +
//! MAP_SHARED, so a full disk is an error before any byte is stored, never a SIGBUS), and
//! `direct` (O_DIRECT). Durability is one of [`SyncMode`]. Data is seeded pseudo-random bytes and
//! every engine XORs what it writes, so a read-back can verify it.

mod direct;
mod mmap;
mod syscall;

use super::{Moved, Worker, check_regular};
use crate::error::{Error, Result, describe_io};
use crate::measure::latency::OpLog;
use crate::sys::map::Mapping;
use crate::workload::{Part, Workload};
use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The write methods of DESIGN §3.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WriteMethod {
    Write,
    Pwrite,
    Mmap,
    Direct,
}

impl WriteMethod {
    pub const ALL: [WriteMethod; 4] = [
        WriteMethod::Write,
        WriteMethod::Pwrite,
        WriteMethod::Mmap,
        WriteMethod::Direct,
    ];

    pub fn name(self) -> &'static str {
        match self {
            WriteMethod::Write => "write",
            WriteMethod::Pwrite => "pwrite",
            WriteMethod::Mmap => "mmap",
            WriteMethod::Direct => "direct",
        }
    }

    pub fn parse(text: &str) -> Option<WriteMethod> {
        let t = text.trim().to_ascii_lowercase();
        let t = if t == "fcntl" { "write".to_string() } else { t };
        Self::ALL.into_iter().find(|m| m.name() == t)
    }
}

/// When written data is forced to the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SyncMode {
    /// Never: the data may still be in the page cache when the time stops.
    None,
    /// One fsync (mmap: msync + fsync) after the last block, inside the timed region.
    End,
    /// fdatasync (mmap: msync) after every block.
    Each,
    /// O_DSYNC (mmap: msync after every block).
    Dsync,
    /// O_SYNC (mmap: msync after every block).
    Osync,
}

impl SyncMode {
    pub const ALL: [SyncMode; 5] = [
        SyncMode::None,
        SyncMode::End,
        SyncMode::Each,
        SyncMode::Dsync,
        SyncMode::Osync,
    ];

    pub fn name(self) -> &'static str {
        match self {
            SyncMode::None => "none",
            SyncMode::End => "end",
            SyncMode::Each => "each",
            SyncMode::Dsync => "dsync",
            SyncMode::Osync => "osync",
        }
    }

    pub fn parse(text: &str) -> Option<SyncMode> {
        let t = text.trim().to_ascii_lowercase();
        Self::ALL.into_iter().find(|m| m.name() == t)
    }

    fn open_flags(self) -> i32 {
        match self {
            SyncMode::Dsync => libc::O_DSYNC,
            SyncMode::Osync => libc::O_SYNC,
            _ => 0,
        }
    }

    /// Whether each block is followed by an explicit sync call (mmap has no O_DSYNC).
    fn per_block(self, method: WriteMethod) -> bool {
        match self {
            SyncMode::Each => true,
            SyncMode::Dsync | SyncMode::Osync => method == WriteMethod::Mmap,
            _ => false,
        }
    }
}

/// Where a write goes: a temporary file beside the user's path, renamed over it by
/// [`WriteTarget::commit`] once complete and verified. Until then the user's file (if any) is
/// untouched, and a target dropped without a commit removes its temporary file.
pub struct WriteTarget {
    /// The user's path; errors name it.
    pub path: PathBuf,
    /// The temporary file actually written.
    pub tmp: PathBuf,
    pub file: File,
    committed: bool,
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
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&tmp)
        .map_err(|e| Error::io("cannot create", path, &e))?;
    Ok(WriteTarget {
        path: path.to_path_buf(),
        tmp,
        file,
        committed: false,
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

    /// Renames the finished file over the user's path.
    pub fn commit(mut self) -> Result<()> {
        std::fs::rename(&self.tmp, &self.path)
            .map_err(|e| Error::io("cannot rename the finished file", &self.path, &e))?;
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
        if !self.committed {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

/// What must happen after every worker is done, inside the timed region.
enum Finish {
    Nothing,
    Fsync(Arc<File>),
    Msync(Arc<Mapping>, Arc<File>),
}

/// Workers ready to write, and what finishes the run.
pub struct PreparedWrite {
    workers: Vec<Box<dyn Worker>>,
    parts: Vec<Part>,
    finish: Finish,
    path: PathBuf,
}

/// Sets up a write run (untimed): empties the file, opens descriptors with the sync flags, fills
/// buffers; for mmap, sizes and reserves the file and maps it.
pub fn prepare_write(
    method: WriteMethod,
    target: &WriteTarget,
    w: &Workload,
    sync: SyncMode,
) -> Result<PreparedWrite> {
    let path = &target.path;
    target
        .file
        .set_len(0)
        .map_err(|e| Error::io("cannot truncate", path, &e))?;
    let parts: Vec<Part> = w
        .parts()
        .into_iter()
        .filter(|p| p.block_count() > 0)
        .collect();
    let sub = Workload {
        threads: parts.len(),
        ..*w
    };
    let per_block = sync.per_block(method);
    let (workers, finish) = match method {
        WriteMethod::Write | WriteMethod::Pwrite => {
            let f = Arc::new(target.reopen(sync.open_flags(), false)?);
            let workers = syscall::workers(method, target, &f, &sub, sync.open_flags(), per_block)?;
            (
                workers,
                if sync == SyncMode::End {
                    Finish::Fsync(f)
                } else {
                    Finish::Nothing
                },
            )
        }
        WriteMethod::Direct => {
            let f = Arc::new(target.reopen(sync.open_flags(), false)?);
            let workers = direct::workers(target, &sub, sync.open_flags(), per_block)?;
            (
                workers,
                if sync == SyncMode::End {
                    Finish::Fsync(f)
                } else {
                    Finish::Nothing
                },
            )
        }
        WriteMethod::Mmap => {
            let f = Arc::new(target.reopen(0, true)?);
            if w.len == 0 {
                (Vec::new(), Finish::Nothing)
            } else {
                let (workers, map) = mmap::workers(target, &f, &sub, per_block)?;
                (
                    workers,
                    if sync == SyncMode::End {
                        Finish::Msync(map, f)
                    } else {
                        Finish::Nothing
                    },
                )
            }
        }
    };
    Ok(PreparedWrite {
        workers,
        parts,
        finish,
        path: path.clone(),
    })
}

impl PreparedWrite {
    /// Writes every part (one thread each) and finishes with the sync mode's last step.
    pub fn run(self) -> Result<Moved> {
        let PreparedWrite {
            workers,
            parts,
            finish,
            path,
        } = self;
        let mut total = Moved::default();
        let results: Vec<Result<Moved>> = std::thread::scope(|s| {
            let handles: Vec<_> = workers
                .into_iter()
                .zip(parts.iter())
                .map(|(mut wk, part)| s.spawn(move || wk.run(part, &mut OpLog::off())))
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        Err(Error::failed("write failed", "a worker thread panicked"))
                    })
                })
                .collect()
        });
        for r in results {
            total.add(r?);
        }
        match finish {
            Finish::Nothing => {}
            Finish::Fsync(f) => f
                .sync_all()
                .map_err(|e| Error::io("fsync failed", &path, &e))?,
            Finish::Msync(map, f) => {
                map.sync(0, map.len())
                    .map_err(|e| Error::io("msync failed", &path, &e))?;
                f.sync_all()
                    .map_err(|e| Error::io("fsync failed", &path, &e))?;
            }
        }
        Ok(total)
    }
}

/// The bytes a writer thread writes: seeded pseudo-random, one block's worth (capped).
fn data_buffer(w: &Workload, thread: usize) -> crate::sys::buf::AlignedBuf {
    let mut buf = crate::sys::buf::AlignedBuf::new(super::buffer_len(w));
    crate::workload::fill_random(
        buf.as_mut_slice(),
        w.seed ^ 0x0057_5249_5445 ^ thread as u64,
    );
    buf
}

fn write_error(path: &Path, e: &std::io::Error) -> Error {
    let err = Error::failed("write failed", describe_io(e)).at(path);
    if e.raw_os_error() == Some(libc::ENOSPC) {
        err.hint("free some space or write a smaller --size")
    } else {
        err
    }
}
