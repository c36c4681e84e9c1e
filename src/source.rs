//! The file a measurement reads: opened after checking it is a regular file iolab can measure,
//! with its size taken at open, and `pread` until a buffer is full. Below both the engines and
//! the page-cache tools, which use it alike.

use crate::error::{Error, Result};
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

/// A regular file opened for reading, with its size taken at open.
pub struct Source {
    /// The open descriptor.
    pub file: File,
    /// Its path, for messages.
    pub path: PathBuf,
    /// Its size when opened.
    pub size: u64,
}

const PROC_SUPER_MAGIC: i64 = 0x9fa0;
const SYSFS_MAGIC: i64 = 0x6265_6572;

/// Opens `path` for reading after checking it is something iolab can measure: a regular file
/// (not a directory, FIFO, socket or device, and not a /proc or /sys file whose size is unknown).
pub fn open_source(path: &Path) -> Result<Source> {
    open_source_of(path, None)
}

/// As [`open_source`], and when `id` is given only the file of that device and inode (a file
/// replaced since it was traced is refused, not read).
pub fn open_source_of(path: &Path, id: Option<(u64, u64)>) -> Result<Source> {
    let (file, meta) = match open_regular(path, true, id) {
        Ok(x) => x,
        Err(Refusal::Io(e)) => return Err(Error::io("cannot open", path, &e)),
        Err(Refusal::Kind(kind)) => return Err(Error::usage("not a regular file", kind).at(path)),
        Err(Refusal::Another) if id.is_some() => {
            return Err(Error::failed(
                "not the file traced",
                "another file is under its name now (another device or inode): it changed since the trace",
            )
            .at(path));
        }
        // Only by a swap between the look and the open (the name then held another file).
        Err(Refusal::Another) => {
            return Err(
                Error::failed("cannot open", "the file changed while it was opened").at(path),
            );
        }
    };
    if let Ok(magic) = crate::sys::fs_magic(&file)
        && (magic == PROC_SUPER_MAGIC || magic == SYSFS_MAGIC)
    {
        return Err(Error::usage(
            "not a measurable file",
            "a /proc or /sys file: its size is not known in advance and it cannot be mapped",
        )
        .at(path)
        .hint("copy it to a regular file first"));
    }
    let size = meta.len();
    Ok(Source {
        file,
        path: path.to_path_buf(),
        size,
    })
}

/// Why [`open_regular`] opened nothing.
#[derive(Debug)]
pub enum Refusal {
    /// The name could not be looked up or opened.
    Io(io::Error),
    /// It names something other than a regular file (what, in words).
    Kind(&'static str),
    /// A regular file, but not the one asked for (another device and inode).
    Another,
}

/// Opens `path` for reading only once it is known to be a regular file, and when `id` is given
/// the file of that device and inode: first without opening it (`O_PATH`: a FIFO, a device or
/// a socket put under the name is looked at, never opened, so nothing blocks and no device acts
/// on an open), then through that handle, so the file read is the file checked. With `follow`
/// false a symbolic link as the last component is refused, not followed. This is how iolab opens
/// every name another user could have chosen (a traced program's files, a trace's paths).
pub fn open_regular(
    path: &Path,
    follow: bool,
    id: Option<(u64, u64)>,
) -> std::result::Result<(File, std::fs::Metadata), Refusal> {
    use rustix::fs::{Mode, OFlags};
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::MetadataExt;
    let nofollow = if follow {
        OFlags::empty()
    } else {
        OFlags::NOFOLLOW
    };
    let handle = rustix::fs::open(
        path,
        OFlags::PATH | OFlags::CLOEXEC | nofollow,
        Mode::empty(),
    )
    .map_err(|e| Refusal::Io(e.into()))?;
    let st = rustix::fs::fstat(&handle).map_err(|e| Refusal::Io(e.into()))?;
    if let Some(kind) = kind_of(rustix::fs::FileType::from_raw_mode(st.st_mode)) {
        return Err(Refusal::Kind(kind));
    }
    let (dev, ino) = (st.st_dev, st.st_ino);
    if id.is_some_and(|want| want != (dev, ino)) {
        return Err(Refusal::Another);
    }
    let read = OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOCTTY | OFlags::NONBLOCK;
    // Through the handle (its /proc link names exactly that inode; the thread's own, which a
    // thread that gave up root's rights may still open); without /proc, by name again, never
    // following a last link, and checked below alike.
    let fd = rustix::fs::open(
        format!("/proc/thread-self/fd/{}", handle.as_raw_fd()),
        read,
        Mode::empty(),
    )
    .or_else(|_| rustix::fs::open(path, read | nofollow, Mode::empty()))
    .map_err(|e| Refusal::Io(e.into()))?;
    let file = File::from(fd);
    let meta = file.metadata().map_err(Refusal::Io)?;
    if !meta.file_type().is_file() || (meta.dev(), meta.ino()) != (dev, ino) {
        return Err(Refusal::Another);
    }
    rustix::fs::fcntl_setfl(&file, OFlags::empty()).map_err(|e| Refusal::Io(e.into()))?;
    Ok((file, meta))
}

/// What a file type other than a regular file is, in words (None for a regular file).
fn kind_of(ft: rustix::fs::FileType) -> Option<&'static str> {
    use rustix::fs::FileType as T;
    Some(match ft {
        T::RegularFile => return None,
        T::Directory => "is a directory",
        T::Fifo => "is a FIFO (a pipe has no size and cannot be mapped or re-read)",
        T::Socket => "is a socket",
        T::CharacterDevice => {
            "is a character device (it has no size and cannot be mapped as a file)"
        }
        T::BlockDevice => "is a block device (iolab measures regular files)",
        T::Symlink => "is a symbolic link (not followed here)",
        _ => "is not a regular file",
    })
}

/// Refuses what is not a regular file, naming what it is.
pub fn check_regular(path: &Path, meta: &std::fs::Metadata) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    match kind_of(rustix::fs::FileType::from_raw_mode(meta.mode())) {
        None => Ok(()),
        Some(kind) => Err(Error::usage("not a regular file", kind).at(path)),
    }
}

/// `pread` until `buf` is full or end of file; returns bytes read.
#[inline]
pub fn pread_full(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    let mut done = 0;
    while done < buf.len() {
        match crate::sys::calls::pread(file, &mut buf[done..], offset + done as u64) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}

/// What a file was when it was looked at: its identity, size and change times. A file whose
/// version changed while it was read or sent was written meanwhile: what was read is a mix of
/// old and new bytes, never "the file".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Version {
    dev: u64,
    ino: u64,
    size: u64,
    mtime: (i64, u64),
    ctime: (i64, u64),
}

impl Version {
    /// The version of the open `file` now.
    pub fn of(file: &File) -> io::Result<Version> {
        let s = rustix::fs::fstat(file)?;
        Ok(Version {
            dev: s.st_dev,
            ino: s.st_ino,
            size: s.st_size as u64,
            mtime: (s.st_mtime, s.st_mtime_nsec as u64),
            ctime: (s.st_ctime, s.st_ctime_nsec as u64),
        })
    }

    /// The error when `file` (at `path`) is no longer this version: written, truncated or
    /// replaced meanwhile. `doing` says what was under way ("sent", "read").
    pub fn check(&self, file: &File, path: &Path, doing: &str) -> Result<()> {
        let now = Version::of(file).map_err(|e| Error::io("cannot stat", path, &e))?;
        if now == *self {
            return Ok(());
        }
        let what = if now.size != self.size {
            format!("its size went from {} to {} bytes", self.size, now.size)
        } else {
            "it was written to".into()
        };
        Err(Error::failed(
            format!("the file changed while it was {doing}"),
            format!("{what}: what was {doing} mixes old and new bytes, and is not the file"),
        )
        .at(path)
        .hint("do it again once nothing writes the file"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_or_a_truncation_changes_the_version() {
        let (_d, p) = crate::testutil::file_with("v", &[1u8; 8192]);
        let f = File::open(&p).unwrap();
        let v = Version::of(&f).unwrap();
        v.check(&f, &p, "read").unwrap();
        // A write in place, same size: the change times move (nanoseconds on ext4; a second
        // apart everywhere).
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::os::unix::fs::FileExt::write_at(
            &std::fs::OpenOptions::new().write(true).open(&p).unwrap(),
            b"x",
            10,
        )
        .unwrap();
        let e = v.check(&f, &p, "sent").unwrap_err();
        assert!(e.to_string().contains("changed while it was sent"), "{e}");
        let v = Version::of(&f).unwrap();
        std::fs::OpenOptions::new()
            .write(true)
            .open(&p)
            .unwrap()
            .set_len(100)
            .unwrap();
        let e = v.check(&f, &p, "read").unwrap_err();
        assert!(e.to_string().contains("from 8192 to 100 bytes"), "{e}");
    }
}
