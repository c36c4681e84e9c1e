//! Renames and unlinks the program made, followed for both tracers: the file the trace knew
//! by the old name has the new one too (its row says its names), and what is read of it after
//! the run (its size, residency, XOR) is read by its last name; a file whose name was removed
//! is looked at again after the run, never taken from its last close.

use super::record::Recording;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

impl Recording {
    /// A rename by process `pid` that succeeded: `from` (a path relative to a directory
    /// descriptor, as the program gave it) is now `to`. The file known by the old name gets the
    /// new one; its index, or None when the trace knew no file by that name.
    pub(super) fn renamed(
        &mut self,
        pid: u32,
        from: (i32, &[u8]),
        to: (i32, &[u8]),
    ) -> Option<u32> {
        let (i, new) = match (absolute(pid, from), absolute(pid, to)) {
            (Some(old), Some(new)) => (self.known_as(&old.to_string_lossy())?, new),
            // The process is gone (the kernel tracer reads its events a little later): two
            // names relative to one directory are found by the old one's ending, the latest
            // file known by it.
            _ if from.0 == to.0 && relative_plain(from.1) && relative_plain(to.1) => {
                let tail = format!("/{}", String::from_utf8_lossy(from.1));
                let i = self.known_by_ending(&tail)?;
                let base = name(&self.files[i]);
                let base = &base[..base.len() - tail.len()];
                (i, Path::new(base).join(OsStr::from_bytes(to.1)))
            }
            _ => return None,
        };
        let new = new.to_string_lossy().into_owned();
        // A file the new name named before is gone by it.
        if let Some(j) = self.known_as(&new) {
            self.unnamed.insert(j as u32);
        }
        self.files[i].renamed.push(new);
        Some(i as u32)
    }

    /// An unlink by process `pid` that succeeded: the file known by `path` (relative to its
    /// directory descriptor) has lost that name; its index.
    pub(super) fn unlinked(&mut self, pid: u32, (dirfd, path): (i32, &[u8])) -> Option<u32> {
        let i = match absolute(pid, (dirfd, path)) {
            Some(p) => self.known_as(&p.to_string_lossy())?,
            None if relative_plain(path) => {
                self.known_by_ending(&format!("/{}", String::from_utf8_lossy(path)))?
            }
            None => return None,
        };
        self.unnamed.insert(i as u32);
        Some(i as u32)
    }

    /// The latest file known by the name `path`.
    fn known_as(&self, path: &str) -> Option<usize> {
        self.files.iter().rposition(|f| name(f) == path)
    }

    /// The latest file whose name ends with `tail`.
    fn known_by_ending(&self, tail: &str) -> Option<usize> {
        self.files.iter().rposition(|f| name(f).ends_with(tail))
    }
}

/// A file's name now: its last rename's, else its path.
fn name(f: &super::FileInfo) -> &str {
    f.renamed.last().unwrap_or(&f.path)
}

/// A relative path with no `.` or `..` in it.
fn relative_plain(path: &[u8]) -> bool {
    let p = Path::new(OsStr::from_bytes(path));
    !path.is_empty() && p.components().all(|c| matches!(c, Component::Normal(_)))
}

/// `path` made absolute from the directory descriptor `dirfd` of process `pid` (its working
/// directory for AT_FDCWD), `.` and `..` taken out by name.
fn absolute(pid: u32, (dirfd, path): (i32, &[u8])) -> Option<PathBuf> {
    let p = Path::new(OsStr::from_bytes(path));
    let full = if p.is_absolute() {
        p.to_path_buf()
    } else {
        let base = if dirfd == libc::AT_FDCWD {
            std::fs::read_link(format!("/proc/{pid}/cwd"))
        } else {
            std::fs::read_link(format!("/proc/{pid}/fd/{dirfd}"))
        };
        base.ok()?.join(p)
    };
    let mut out = PathBuf::new();
    for c in full.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            c => out.push(c),
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_relative_name_is_made_absolute_from_the_directory_it_starts_from() {
        let me = std::process::id();
        let cwd = std::env::current_dir().unwrap();
        assert_eq!(
            absolute(me, (libc::AT_FDCWD, b"./a/../b/c")),
            Some(cwd.join("b/c"))
        );
        assert_eq!(absolute(me, (5, b"/x/./y")), Some(PathBuf::from("/x/y")));
        // A directory descriptor that is not open: no name.
        assert_eq!(absolute(me, (1 << 20, b"z")), None);
        assert!(relative_plain(b"pg_wal/x") && !relative_plain(b"../x") && !relative_plain(b"/x"));
    }
}
