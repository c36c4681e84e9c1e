//! Names for the files the kernel tracer sees by device and inode.

use crate::trace::FileKind;
use std::os::unix::fs::MetadataExt;

/// A file's name: an absolute path given (the kernel's own walk of an open) that names it
/// still, else the link of its descriptor while it is open, else the path an open was given
/// (made absolute), else the mapping of it the process has, else its device and inode. Each
/// name is checked to be this file's when it is read: the program runs on meanwhile and may
/// have closed the descriptor and opened another file on its number (rg did).
pub(super) fn name_of(
    pid: u32,
    fd: Option<i32>,
    dev: u64,
    ino: u64,
    path: Option<(&[u8], i32)>,
    kind: FileKind,
) -> std::path::PathBuf {
    use std::os::unix::ffi::OsStrExt;
    use std::path::{Path, PathBuf};
    let same = |p: &Path| std::fs::metadata(p).is_ok_and(|m| (m.dev(), m.ino()) == (dev, ino));
    if let Some((p, _)) = path {
        let p = Path::new(std::ffi::OsStr::from_bytes(p));
        if p.is_absolute() && same(p) {
            return p.to_path_buf();
        }
    }
    if let Some(fd) = fd {
        let link = format!("/proc/{pid}/fd/{fd}");
        if let Ok(p) = std::fs::read_link(&link) {
            // The link's target names the file; or (a file since deleted: "... (deleted)")
            // the descriptor is the file's, and its link did not change while checked.
            let steady =
                || same(Path::new(&link)) && std::fs::read_link(&link).ok() == Some(p.clone());
            if same(&p) || steady() {
                return p;
            }
        }
    }
    match kind {
        FileKind::Pipe => return format!("pipe:[{ino}]").into(),
        FileKind::Socket => return format!("socket:[{ino}]").into(),
        _ => {}
    }
    if let Some((p, dirfd)) = path {
        let p = Path::new(std::ffi::OsStr::from_bytes(p));
        let base = if p.is_absolute() {
            None
        } else if dirfd == libc::AT_FDCWD {
            std::fs::read_link(format!("/proc/{pid}/cwd")).ok()
        } else {
            std::fs::read_link(format!("/proc/{pid}/fd/{dirfd}")).ok()
        };
        let full = match base {
            Some(b) => b.join(p),
            None => p.to_path_buf(),
        };
        if full.is_absolute() {
            return full;
        }
    }
    if let Ok(maps) = std::fs::read_to_string(format!("/proc/{pid}/maps")) {
        for line in maps.lines() {
            let f: Vec<&str> = line.splitn(6, ' ').collect();
            if f.len() == 6 && f[4].parse::<u64>() == Ok(ino) {
                let p = PathBuf::from(f[5].trim_start());
                if same(&p) {
                    return p;
                }
            }
        }
    }
    format!(
        "[inode {ino} on device {}:{}]",
        libc::major(dev),
        libc::minor(dev)
    )
    .into()
}
