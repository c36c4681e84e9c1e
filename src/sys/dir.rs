//! A directory opened once and worked in by handle (`openat`, `mkdirat`, `renameat2`,
//! `unlinkat`, `fstatat`, through `rustix`): swapping its path for a symlink afterwards
//! redirects nothing, and nothing here follows a link inside it, so a folder someone else may
//! write into cannot send a write or a removal outside it.

use rustix::fs::{AtFlags, FileType, Mode, OFlags, RenameFlags, Stat};
use std::ffi::OsStr;
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// An open directory.
#[derive(Debug)]
pub struct Dir {
    file: File,
    path: PathBuf,
}

/// A single name in a directory: neither empty, nor `.` or `..`, nor with a `/`.
fn checked(name: &OsStr) -> io::Result<&OsStr> {
    let b = name.as_bytes();
    if b.is_empty() || b == b"." || b == b".." || b.contains(&b'/') || b.contains(&0) {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    Ok(name)
}

/// The file or directory `fd` as a `File`.
fn file(fd: OwnedFd) -> File {
    File::from(fd)
}

impl Dir {
    /// Opens the directory at `path` (it must be one; a symlink on the way is the caller's
    /// choice of path and is followed).
    pub fn open(path: &Path) -> io::Result<Dir> {
        let fd = rustix::fs::open(
            path,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        Ok(Dir {
            file: file(fd),
            path: path.to_path_buf(),
        })
    }

    /// Opens the directory at `path`, refusing a symlink in its last component and anything that
    /// is not a directory (ENOTDIR or ELOOP).
    pub fn open_nofollow(path: &Path) -> io::Result<Dir> {
        let fd = rustix::fs::open(
            path,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        Ok(Dir {
            file: file(fd),
            path: path.to_path_buf(),
        })
    }

    /// Another handle on the same directory.
    pub fn duplicate(&self) -> io::Result<Dir> {
        Ok(Dir {
            file: self.file.try_clone()?,
            path: self.path.clone(),
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

    /// What `name` here is, not following a symlink (`None` when nothing is there).
    pub fn stat(&self, name: &OsStr) -> Option<Stat> {
        let name = checked(name).ok()?;
        rustix::fs::statat(&self.file, name, AtFlags::SYMLINK_NOFOLLOW).ok()
    }

    /// Whether `name` exists here (a symlink counts, dangling or not).
    pub fn exists(&self, name: &OsStr) -> bool {
        self.stat(name).is_some()
    }

    /// Whether `name` here is a regular file (a symlink to one is not).
    pub fn is_file(&self, name: &OsStr) -> bool {
        self.stat(name)
            .is_some_and(|s| FileType::from_raw_mode(s.st_mode) == FileType::RegularFile)
    }

    /// The directory's own owner and mode bits.
    pub fn owner_and_mode(&self) -> io::Result<(u32, u32)> {
        let s = rustix::fs::fstat(&self.file)?;
        Ok((s.st_uid, s.st_mode))
    }

    /// The directory `name` here, opened without following a symlink: a link or a file in its
    /// place is an error (ENOTDIR or ELOOP), never a way out of this directory.
    pub fn sub(&self, name: &OsStr) -> io::Result<Dir> {
        let fd = rustix::fs::openat(
            &self.file,
            checked(name)?,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        Ok(Dir {
            file: file(fd),
            path: self.path.join(name),
        })
    }

    /// Makes the directory `name` here with `mode` (less the umask); fails if anything is there.
    pub fn mkdir(&self, name: &OsStr, mode: u32) -> io::Result<()> {
        rustix::fs::mkdirat(&self.file, checked(name)?, Mode::from_raw_mode(mode))?;
        Ok(())
    }

    /// Creates `name` here, read-write; fails if anything (a symlink included) is there.
    pub fn create_new(&self, name: &OsStr) -> io::Result<File> {
        self.create_new_mode(name, 0o666)
    }

    /// [`Dir::create_new`] with `mode` (less the umask): 0o600 for what no one else should read.
    pub fn create_new_mode(&self, name: &OsStr, mode: u32) -> io::Result<File> {
        let fd = rustix::fs::openat(
            &self.file,
            checked(name)?,
            OFlags::RDWR | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(mode),
        )?;
        Ok(file(fd))
    }

    /// Opens the regular file `name` here for reading, not following a symlink; anything but a
    /// regular file is refused (a FIFO would block, a device never end).
    pub fn open_file(&self, name: &OsStr) -> io::Result<File> {
        let fd = rustix::fs::openat(
            &self.file,
            checked(name)?,
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        let f = file(fd);
        if !f.metadata()?.is_file() {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        Ok(f)
    }

    /// An unnamed file in this directory (`O_TMPFILE`): it has no name until [`Dir::link`] gives
    /// it one, so a process killed even by SIGKILL leaves nothing. `None` where the file system
    /// does not support it (then use a named temporary).
    pub fn create_unnamed(&self) -> Option<File> {
        rustix::fs::openat(
            &self.file,
            ".",
            OFlags::RDWR | OFlags::TMPFILE | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o666),
        )
        .ok()
        .map(file)
    }

    /// Gives the unnamed `file` (from [`Dir::create_unnamed`]) the name `to` here; fails with
    /// EEXIST if `to` exists (it never replaces).
    pub fn link(&self, f: &File, to: &OsStr) -> io::Result<()> {
        // The /proc link resolves to the open file (linking it by handle needs no privilege).
        let src = format!("/proc/self/fd/{}", f.as_raw_fd());
        rustix::fs::linkat(
            rustix::fs::CWD,
            src.as_str(),
            &self.file,
            checked(to)?,
            AtFlags::SYMLINK_FOLLOW,
        )?;
        Ok(())
    }

    /// Renames `from` to `to`, both in this directory: replacing `to` only with `replace`.
    pub fn rename(&self, from: &OsStr, to: &OsStr, replace: bool) -> io::Result<()> {
        self.rename_into(from, self, to, replace)
    }

    /// Renames `from` here to `to` in `dest`: replacing `to` only with `replace` (otherwise
    /// `renameat2(RENAME_NOREPLACE)`, or `linkat` + `unlinkat` where the file system lacks the
    /// flag; either fails with EEXIST rather than replace).
    pub fn rename_into(
        &self,
        from: &OsStr,
        dest: &Dir,
        to: &OsStr,
        replace: bool,
    ) -> io::Result<()> {
        let (from, to) = (checked(from)?, checked(to)?);
        let flags = if replace {
            RenameFlags::empty()
        } else {
            RenameFlags::NOREPLACE
        };
        match rustix::fs::renameat_with(&self.file, from, &dest.file, to, flags) {
            Ok(()) => Ok(()),
            Err(e)
                if !replace && (e == rustix::io::Errno::INVAL || e == rustix::io::Errno::NOSYS) =>
            {
                // linkat does not follow symlinks without AT_SYMLINK_FOLLOW.
                rustix::fs::linkat(&self.file, from, &dest.file, to, AtFlags::empty())?;
                self.remove(from)
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Removes the file `name` here (a link is removed itself, never what it points to).
    pub fn remove(&self, name: &OsStr) -> io::Result<()> {
        rustix::fs::unlinkat(&self.file, checked(name)?, AtFlags::empty())?;
        Ok(())
    }

    /// Removes the empty directory `name` here.
    pub fn remove_dir(&self, name: &OsStr) -> io::Result<()> {
        rustix::fs::unlinkat(&self.file, checked(name)?, AtFlags::REMOVEDIR)?;
        Ok(())
    }

    /// Free bytes of the directory's file system.
    pub fn free_bytes(&self) -> io::Result<u64> {
        super::fs_free_bytes(&self.file)
    }
}

impl AsFd for Dir {
    fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.file.as_fd()
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
        // No replace without asking; names with a slash, `.` and `..` are refused.
        d.create_new(OsStr::new("b")).unwrap();
        let e = d
            .rename(OsStr::new("b"), OsStr::new("file"), false)
            .unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EEXIST));
        assert!(d.create_new(OsStr::new("../x")).is_err());
        assert!(d.sub(OsStr::new("..")).is_err());
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

    #[test]
    fn nothing_follows_a_link_inside_it() {
        let top = tempfile::tempdir().unwrap();
        let d_path = top.path().join("d");
        let elsewhere = top.path().join("elsewhere");
        std::fs::create_dir(&d_path).unwrap();
        std::fs::create_dir(&elsewhere).unwrap();
        std::fs::write(elsewhere.join("thesis.tex"), b"years").unwrap();
        std::os::unix::fs::symlink(&elsewhere, d_path.join("docs")).unwrap();
        std::os::unix::fs::symlink(elsewhere.join("thesis.tex"), d_path.join("t")).unwrap();
        let d = Dir::open(&d_path).unwrap();
        let e = d.sub(OsStr::new("docs")).unwrap_err();
        assert!(
            matches!(e.raw_os_error(), Some(libc::ELOOP | libc::ENOTDIR)),
            "{e}"
        );
        assert!(
            !d.is_file(OsStr::new("t")),
            "a link to a file is not a file"
        );
        assert!(d.open_file(OsStr::new("t")).is_err());
        d.remove(OsStr::new("t")).unwrap();
        assert_eq!(
            std::fs::read(elsewhere.join("thesis.tex")).unwrap(),
            b"years"
        );
        assert!(Dir::open_nofollow(&d_path.join("docs")).is_err());
        d.mkdir(OsStr::new("plots"), 0o755).unwrap();
        let p = d.sub(OsStr::new("plots")).unwrap();
        p.create_new(OsStr::new("a.svg")).unwrap();
        assert!(d_path.join("plots/a.svg").is_file());
        p.remove(OsStr::new("a.svg")).unwrap();
        d.remove_dir(OsStr::new("plots")).unwrap();
    }
}
