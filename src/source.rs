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
    let meta = std::fs::metadata(path).map_err(|e| Error::io("cannot open", path, &e))?;
    check_regular(path, &meta)?;
    let file = File::open(path).map_err(|e| Error::io("cannot open", path, &e))?;
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
    let size = file
        .metadata()
        .map_err(|e| Error::io("cannot stat", path, &e))?
        .len();
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
