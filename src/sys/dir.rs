//! A directory opened once and worked in by handle (`openat`, `renameat2`, `unlinkat`,
//! `fstatat`): swapping its path for a symlink afterwards redirects nothing.

use std::ffi::{CString, OsStr};
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// An open directory.
#[derive(Debug)]
pub struct Dir {
    file: File,
    path: PathBuf,
}

fn name_c(name: &OsStr) -> io::Result<CString> {
    if name.is_empty() || name.as_bytes().contains(&b'/') {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    CString::new(name.as_bytes()).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
}

fn check(rc: libc::c_int) -> io::Result<()> {
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

impl Dir {
    /// Opens the directory at `path` (it must be one).
    pub fn open(path: &Path) -> io::Result<Dir> {
        use std::os::unix::fs::OpenOptionsExt;
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECTORY | libc::O_CLOEXEC)
            .open(path)?;
        Ok(Dir {
            file,
            path: path.to_path_buf(),
        })
    }

    /// The path it was opened by (for messages).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A path that reaches `name` in this directory through the open handle
    /// (`/proc/self/fd/N/name`), whatever happened to the directory's own path since.
    pub fn handle_path(&self, name: &OsStr) -> PathBuf {
        PathBuf::from(format!("/proc/self/fd/{}", self.file.as_raw_fd())).join(name)
    }

    /// Whether `name` exists here (a symlink counts, dangling or not).
    pub fn exists(&self, name: &OsStr) -> bool {
        let Ok(c) = name_c(name) else {
            return false;
        };
        // SAFETY: stat is plain data; zeroed is a valid value for it.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: a valid directory descriptor, a NUL-terminated name and a writable stat.
        let rc = unsafe {
            libc::fstatat(
                self.file.as_raw_fd(),
                c.as_ptr(),
                &mut st,
                libc::AT_SYMLINK_NOFOLLOW,
            )
        };
        rc == 0
    }

    /// Creates `name` here, read-write; fails if anything (a symlink included) is there.
    pub fn create_new(&self, name: &OsStr) -> io::Result<File> {
        let c = name_c(name)?;
        let flags =
            libc::O_RDWR | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        // SAFETY: a valid directory descriptor and NUL-terminated name; the mode is passed as
        // openat expects for O_CREAT.
        let fd = unsafe { libc::openat(self.file.as_raw_fd(), c.as_ptr(), flags, 0o666) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fd is a fresh descriptor that nothing else owns.
        Ok(unsafe { File::from_raw_fd(fd) })
    }

    /// An unnamed file in this directory (`O_TMPFILE`): it has no name until [`Dir::link`] gives
    /// it one, so a process killed even by SIGKILL leaves nothing. `None` where the file system
    /// does not support it (then use a named temporary).
    pub fn create_unnamed(&self) -> Option<File> {
        let flags = libc::O_RDWR | libc::O_TMPFILE | libc::O_CLOEXEC;
        // SAFETY: a valid directory descriptor and a static NUL-terminated name ("."); the mode
        // is passed as openat expects for O_TMPFILE.
        let fd = unsafe { libc::openat(self.file.as_raw_fd(), c".".as_ptr(), flags, 0o666) };
        if fd < 0 {
            return None;
        }
        // SAFETY: fd is a fresh descriptor that nothing else owns.
        Some(unsafe { File::from_raw_fd(fd) })
    }

    /// Gives the unnamed `file` (from [`Dir::create_unnamed`]) the name `to` here; fails with
    /// EEXIST if `to` exists (it never replaces).
    pub fn link(&self, file: &File, to: &OsStr) -> io::Result<()> {
        let t = name_c(to)?;
        let src = CString::new(format!("/proc/self/fd/{}", file.as_raw_fd()))
            .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
        // SAFETY: valid descriptors and NUL-terminated paths; AT_SYMLINK_FOLLOW makes the
        // /proc link resolve to the open file (linking it by handle needs no privilege).
        check(unsafe {
            libc::linkat(
                libc::AT_FDCWD,
                src.as_ptr(),
                self.file.as_raw_fd(),
                t.as_ptr(),
                libc::AT_SYMLINK_FOLLOW,
            )
        })
    }

    /// Renames `from` to `to`, both in this directory: replacing `to` only with `replace`
    /// (otherwise `renameat2(RENAME_NOREPLACE)`, or `linkat` + `unlinkat` where the file system
    /// lacks the flag; either fails with EEXIST rather than replace).
    pub fn rename(&self, from: &OsStr, to: &OsStr, replace: bool) -> io::Result<()> {
        let (f, t) = (name_c(from)?, name_c(to)?);
        let fd = self.file.as_raw_fd();
        let flags = if replace { 0 } else { libc::RENAME_NOREPLACE };
        // SAFETY: valid descriptor and NUL-terminated names that live across the call.
        let rc = unsafe { libc::renameat2(fd, f.as_ptr(), fd, t.as_ptr(), flags) };
        if rc == 0 {
            return Ok(());
        }
        let err = io::Error::last_os_error();
        match err.raw_os_error() {
            Some(libc::EINVAL) | Some(libc::ENOSYS) if !replace => {
                // SAFETY: as above; linkat does not follow symlinks without AT_SYMLINK_FOLLOW.
                check(unsafe { libc::linkat(fd, f.as_ptr(), fd, t.as_ptr(), 0) })?;
                self.remove(from)
            }
            _ => Err(err),
        }
    }

    /// Removes the file `name` here.
    pub fn remove(&self, name: &OsStr) -> io::Result<()> {
        let c = name_c(name)?;
        // SAFETY: a valid directory descriptor and NUL-terminated name.
        check(unsafe { libc::unlinkat(self.file.as_raw_fd(), c.as_ptr(), 0) })
    }

    /// Free bytes of the directory's file system.
    pub fn free_bytes(&self) -> io::Result<u64> {
        super::fs_free_bytes(&self.file)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn works_by_handle_after_the_path_is_swapped_for_a_symlink() {
        let top = tempfile::tempdir().unwrap();
        let real = top.path().join("out");
        let elsewhere = top.path().join("elsewhere");
        std::fs::create_dir(&real).unwrap();
        std::fs::create_dir(&elsewhere).unwrap();
        let d = Dir::open(&real).unwrap();
        // The path now leads elsewhere; the handle still means the first directory.
        std::fs::rename(&real, top.path().join("moved")).unwrap();
        std::os::unix::fs::symlink(&elsewhere, &real).unwrap();
        let mut f = d.create_new(OsStr::new(".tmp")).unwrap();
        std::io::Write::write_all(&mut f, b"data").unwrap();
        assert!(d.exists(OsStr::new(".tmp")));
        d.rename(OsStr::new(".tmp"), OsStr::new("file"), false)
            .unwrap();
        assert_eq!(
            std::fs::read(top.path().join("moved/file")).unwrap(),
            b"data"
        );
        assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
        // No replace without asking; names with a slash are refused.
        d.create_new(OsStr::new("b")).unwrap();
        let e = d
            .rename(OsStr::new("b"), OsStr::new("file"), false)
            .unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EEXIST));
        assert!(d.create_new(OsStr::new("../x")).is_err());
        assert!(d.create_new(OsStr::new("file")).is_err(), "exists");
        d.remove(OsStr::new("b")).unwrap();
        assert!(!d.exists(OsStr::new("b")));
        assert!(d.handle_path(OsStr::new("file")).exists());
        // An unnamed file appears only when linked, and never over an existing name.
        if let Some(mut f) = d.create_unnamed() {
            std::io::Write::write_all(&mut f, b"unnamed").unwrap();
            let before = std::fs::read_dir(top.path().join("moved")).unwrap().count();
            let e = d.link(&f, OsStr::new("file")).unwrap_err();
            assert_eq!(e.raw_os_error(), Some(libc::EEXIST));
            d.link(&f, OsStr::new("named")).unwrap();
            assert_eq!(
                std::fs::read_dir(top.path().join("moved")).unwrap().count(),
                before + 1
            );
            assert_eq!(
                std::fs::read(top.path().join("moved/named")).unwrap(),
                b"unnamed"
            );
        }
    }
}
