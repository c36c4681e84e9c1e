//! The file a measurement reads: opened after checking it is a regular file iolab can measure,
//! with its size taken at open, and `pread` until a buffer is full. Below both the engines and
//! the page-cache tools, which use it alike.

use crate::error::{Error, Result};
use std::fs::File;
use std::io;
use std::os::unix::fs::FileTypeExt;
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
    use std::os::unix::fs::OpenOptionsExt;
    // Opened without waiting and checked by its handle: a FIFO put in the file's place between
    // a check by name and the open would block the open until a writer came (and a terminal
    // named by mistake never becomes this process's controlling one).
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|e| Error::io("cannot open", path, &e))?;
    let meta = file
        .metadata()
        .map_err(|e| Error::io("cannot stat", path, &e))?;
    check_regular(path, &meta)?;
    rustix::fs::fcntl_setfl(&file, rustix::fs::OFlags::empty())
        .map_err(|e| Error::io("cannot open", path, &e.into()))?;
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

/// Refuses what is not a regular file, naming what it is.
pub fn check_regular(path: &Path, meta: &std::fs::Metadata) -> Result<()> {
    let ft = meta.file_type();
    let kind = if ft.is_file() {
        return Ok(());
    } else if ft.is_dir() {
        "is a directory"
    } else if ft.is_fifo() {
        "is a FIFO (a pipe has no size and cannot be mapped or re-read)"
    } else if ft.is_socket() {
        "is a socket"
    } else if ft.is_char_device() {
        "is a character device (it has no size and cannot be mapped as a file)"
    } else if ft.is_block_device() {
        "is a block device (iolab measures regular files)"
    } else {
        "is not a regular file"
    };
    Err(Error::usage("not a regular file", kind).at(path))
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
