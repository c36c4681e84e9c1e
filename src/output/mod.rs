//! Saving outputs as docs/commands.md promises: never over an existing file without `force`, written under a
//! temporary name in the same directory and renamed when complete, nothing left on failure.

use crate::error::{Error, Result};
use std::io::Write;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};

/// Keeps a path on the list of partial outputs while it lives (track it before creating it).
#[must_use = "the path is tracked only while the guard lives"]
#[derive(Debug)]
pub struct Partial {
    slot: Option<usize>,
    /// The path as recorded in this run's ledger, if it is.
    recorded: Option<PathBuf>,
}

/// Puts `path` on the list of partial outputs until the returned guard is dropped: a SIGINT or
/// SIGTERM in between removes it (with what it holds, if a directory) before the process exits
/// ([`crate::sys::cleanup`]), and this run's ledger names it, so that what `kill -9` leaves is
/// provably this run's ([`crate::clean`]). Call it before creating the path, so nothing exists
/// untracked.
pub fn track(path: &Path) -> Partial {
    Partial {
        slot: crate::sys::cleanup::register(path),
        recorded: crate::clean::ledger::record(path).then(|| path.to_path_buf()),
    }
}

impl Drop for Partial {
    fn drop(&mut self) {
        if let Some(i) = self.slot {
            crate::sys::cleanup::unregister(i);
        }
        if let Some(p) = self.recorded.take() {
            crate::clean::ledger::write_off(&p);
        }
    }
}

/// Refuses an existing `path` unless `force`, or unless it is a device or a pipe, which
/// [`save`] writes into (/dev/null, /dev/stdout, a named pipe).
pub fn refuse_existing(path: &Path, force: bool) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    if stream_like(path) {
        // Refused now, before any work, when [`save`] would refuse it then.
        if std::fs::metadata(path).is_ok_and(|m| planted(path, m.uid())) {
            return Err(planted_error(path));
        }
        return Ok(());
    }
    if !force && std::fs::symlink_metadata(path).is_ok() {
        return Err(exists(path));
    }
    Ok(())
}

/// Refuses, before any work, an output file that could not be written: an existing one
/// without `force` ([`refuse_existing`]), or a folder that does not take a new file (missing,
/// read-only, not the user's to write into), proved by making and removing an empty file there.
/// A device or a pipe the user named is written into and needs no probe.
pub fn check_can_create(path: &Path, force: bool) -> Result<()> {
    refuse_existing(path, force)?;
    if stream_like(path) {
        return Ok(());
    }
    let probe = temp_path(path, "probe")?;
    let _partial = track(&probe);
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
        .and_then(|_| std::fs::remove_file(&probe))
        .map_err(|e| {
            let folder = path.parent().filter(|p| !p.as_os_str().is_empty());
            let mut err = Error::io("cannot write", path, &e);
            // A path that cannot be used is the request's fault, said before any work.
            err.kind = crate::ErrorKind::Usage;
            err.hint(format!(
                "{} does not take a new file; choose another path",
                crate::shown::path(folder.unwrap_or(Path::new(".")))
            ))
        })
}

/// Whether `path` is a character device or a pipe: written into, never replaced.
fn stream_like(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.file_type().is_char_device() || m.file_type().is_fifo())
}

/// The error for an output that exists: `--force` to overwrite.
pub fn exists(path: &Path) -> Error {
    Error::usage("refusing to overwrite", "the file exists")
        .at(path)
        .hint("add --force to overwrite it")
}

/// The hidden temporary name beside `path` that an output is written under:
/// `.NAME.iolab-PID[-TAG].tmp`.
pub fn temp_path(path: &Path, tag: &str) -> Result<std::path::PathBuf> {
    let name = path
        .file_name()
        .ok_or_else(|| Error::usage("invalid output path", "it names no file").at(path))?;
    let tag = if tag.is_empty() {
        String::new()
    } else {
        format!("-{tag}")
    };
    // A name's own 255-byte limit must hold for the temporary name too: keep only as much of the
    // final name as fits (the pid and tag keep it unique).
    let suffix = format!(".iolab-{}{tag}.tmp", std::process::id());
    let name = name.to_string_lossy();
    let mut keep = name.len().min(255 - 1 - suffix.len());
    while !name.is_char_boundary(keep) {
        keep -= 1;
    }
    Ok(path.with_file_name(format!(".{}{suffix}", &name[..keep])))
}

/// Writes `bytes` to `path` under a temporary name, renamed when complete; an existing file only with `force`.
/// Puts the finished temporary file `tmp` at `path`: replacing what is there only with `force`;
/// without it, a file that appeared at `path` while `tmp` was being written is left alone and the
/// output is refused (it is never replaced behind the user's back).
pub fn place(tmp: &Path, path: &Path, force: bool) -> Result<()> {
    if let Ok(m) = std::fs::metadata(path)
        && !m.is_file()
    {
        // A device, a pipe or a directory is never replaced by a file (with --force, as root,
        // /dev/null would have become one).
        return Err(Error::usage(
            "cannot write the output there",
            "it is not a regular file, and it is not replaced by one",
        )
        .at(path));
    }
    let r = if force {
        std::fs::rename(tmp, path)
    } else {
        crate::sys::rename_noreplace(tmp, path)
    };
    r.map_err(|e| not_placed(path, e))
}

/// The error of a rename into place that failed: EEXIST says a file appeared meanwhile.
pub fn not_placed(path: &Path, e: std::io::Error) -> Error {
    match e.raw_os_error() {
        Some(libc::EEXIST) => Error::failed(
            "refusing to overwrite",
            "a file of that name appeared while the output was being written",
        )
        .at(path)
        .hint("add --force to replace it")
        .with_source(e),
        _ => Error::io("cannot rename into place", path, &e),
    }
}

/// Whether a FIFO or device of `owner` in the folder of `path` is one a shared folder's other
/// users made: the folder is sticky and others may write into it (as /tmp), and the object is
/// neither the caller's nor the folder owner's. The kernel's protected_fifos rule at its
/// strictest, whatever it is set to here: such an object is never written into.
fn planted(path: &Path, owner: u32) -> bool {
    use std::os::unix::fs::MetadataExt;
    let folder = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let Ok(d) = std::fs::metadata(folder) else {
        return true;
    };
    let sticky = d.mode() & 0o1000 != 0;
    let shared = d.mode() & 0o022 != 0;
    sticky && shared && owner != crate::sys::euid() && owner != d.uid()
}

/// The error for a FIFO or device [`planted`] in a shared folder.
fn planted_error(path: &Path) -> Error {
    Error::usage(
        "refusing to write into it",
        "a FIFO or device another user made in a shared folder, or not what it was a moment ago (the kernel's protected_fifos rule)",
    )
    .at(path)
    .hint("name a path of your own")
}

/// Writes into the FIFO or device at `path`, as a shell's `>` would, unless it is one a shared
/// folder's other users made ([`planted`]); what was opened is checked again by its handle, so
/// swapping the path meanwhile (for a link to a file, say) writes nothing anywhere.
fn write_into_stream(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    let refuse = || planted_error(path);
    if std::fs::metadata(path).is_ok_and(|m| planted(path, m.uid())) {
        return Err(refuse());
    }
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .map_err(|e| Error::io("cannot write", path, &e))?;
    let m = f
        .metadata()
        .map_err(|e| Error::io("cannot write", path, &e))?;
    let kind = m.file_type();
    if !(kind.is_fifo() || kind.is_char_device()) || planted(path, m.uid()) {
        // Not what was checked (swapped meanwhile): closed untouched.
        return Err(refuse());
    }
    f.write_all(bytes)
        .map_err(|e| Error::io("cannot write", path, &e))
}

/// Writes `bytes` to `path` under a temporary name, then [`place`]s it.
pub fn save(path: &Path, bytes: &[u8], force: bool) -> Result<()> {
    if stream_like(path) {
        // /dev/null, /dev/stdout, a named pipe of the user's: written into.
        return write_into_stream(path, bytes);
    }
    refuse_existing(path, force)?;
    let tmp = temp_path(path, "")?;
    let _partial = track(&tmp);
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .and_then(|mut f| f.write_all(bytes).and_then(|_| f.sync_all()))
        .map_err(|e| Error::io("cannot write", path, &e))
        .and_then(|_| place(&tmp, path, force));
    written.inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

/// Writes `bytes` as the file `name` in the directory `dir` (by handle): under a temporary name,
/// renamed into place; an existing `name` only with `force`, and only a regular file (a link,
/// a FIFO or a device in a folder is never written through: only a path the user names
/// directly is, by [`save`]).
pub fn save_in(dir: &crate::sys::dir::Dir, name: &str, bytes: &[u8], force: bool) -> Result<()> {
    let path = dir.path().join(name);
    let name = std::ffi::OsStr::new(name);
    if dir.exists(name) {
        if !force {
            return Err(exists(&path));
        }
        if !dir.is_file(name) {
            return Err(Error::usage(
                "cannot write the output there",
                "it is not a regular file (a link, a FIFO or a device), and it is not written through",
            )
            .at(&path));
        }
    }
    let tmp = temp_path(&path, "")?;
    let tmp_name = tmp.file_name().unwrap_or_default();
    let _partial = track(&tmp);
    let written = dir
        .create_new(tmp_name)
        .and_then(|mut f| f.write_all(bytes).and_then(|_| f.sync_all()))
        .and_then(|_| dir.rename(tmp_name, name, force));
    written.map_err(|e| {
        let _ = dir.remove(tmp_name);
        not_placed(&path, e)
    })
}

/// A new, empty directory under the system's temporary directory, removed with what it holds
/// when dropped (or on an interrupt).
#[derive(Debug)]
pub struct TempDir {
    path: PathBuf,
    _partial: Partial,
}

impl TempDir {
    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// A new, empty directory under the system's temporary directory: `PREFIX-PID-N`, that only
/// this user may enter (0700).
pub fn temp_dir(prefix: &str) -> Result<TempDir> {
    let base = std::env::temp_dir();
    for i in 0..1000 {
        let p = base.join(format!("{prefix}-{}-{i}", std::process::id()));
        let partial = track(&p);
        // Only this user may enter it: what is staged there (a transfer's copies of files
        // others may not read) stays this user's.
        let made = {
            use std::os::unix::fs::DirBuilderExt;
            std::fs::DirBuilder::new().mode(0o700).create(&p)
        };
        if made.is_ok() {
            return Ok(TempDir {
                path: p,
                _partial: partial,
            });
        }
    }
    Err(Error::failed("cannot create a temporary directory", "1000 names taken").at(&base))
}

/// `YYYYmmdd-HHMMSS` in UTC, for dated folder names.
pub fn timestamp() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let [y, m, d, hh, mm, ss] = utc(secs);
    format!("{y:04}{m:02}{d:02}-{hh:02}{mm:02}{ss:02}")
}

/// Year, month, day, hour, minute and second in UTC of `secs` since the epoch (the civil
/// calendar from days, Howard Hinnant's `civil_from_days`).
pub fn utc(secs: u64) -> [i64; 6] {
    let days = (secs / 86_400) as i64;
    let rem = (secs % 86_400) as i64;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    [y, m, d, rem / 3600, rem % 3600 / 60, rem % 60]
}

mod report_dir;
pub use report_dir::{MANIFEST, check_can_write, is_iolab_report, refuse_unless_report, save_dir};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temporary_names_fit_even_for_the_longest_names() {
        let long = "é".repeat(127); // 254 bytes
        let (_dir, path) = crate::testutil::path_in(&long);
        let tmp = temp_path(&path, "12345").unwrap();
        let n = tmp.file_name().unwrap().len();
        assert!(n <= 255, "{n} bytes");
        save(&path, b"x", false).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"x");
    }

    #[test]
    fn place_never_replaces_a_file_that_appeared_without_force() {
        let (dir, tmp) = crate::testutil::file_with("tmp", b"new");
        let dest = dir.path().join("dest");
        std::fs::write(&dest, b"appeared meanwhile").unwrap();
        let err = place(&tmp, &dest, false).unwrap_err();
        assert!(err.to_string().contains("refusing to overwrite"), "{err}");
        assert_eq!(std::fs::read(&dest).unwrap(), b"appeared meanwhile");
        assert_eq!(
            std::fs::read(&tmp).unwrap(),
            b"new",
            "the new bytes are not lost either"
        );
        place(&tmp, &dest, true).unwrap();
        assert_eq!(std::fs::read(&dest).unwrap(), b"new");
    }

    #[test]
    fn saves_new_refuses_existing_and_forces() {
        let (dir, p) = crate::testutil::path_in("out.svg");
        save(&p, b"one", false).unwrap();
        assert!(
            save(&p, b"two", false)
                .unwrap_err()
                .to_string()
                .contains("--force")
        );
        assert_eq!(std::fs::read(&p).unwrap(), b"one");
        save(&p, b"two", true).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"two");
        assert!(save(&dir.path().join("nodir/x"), b"x", false).is_err());
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            1,
            "no temporary file left"
        );
    }

    #[test]
    fn temporary_folders_are_this_users_alone() {
        use std::os::unix::fs::PermissionsExt;
        let d = temp_dir("iolab-mode-test").unwrap();
        let mode = std::fs::metadata(d.path()).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700, "{mode:o}");
    }

    #[test]
    fn a_file_swapped_in_for_a_pipe_is_not_written_through() {
        // What write_into_stream opened is checked by its handle: a regular file (the path
        // swapped for a link to one between the check and the open) is closed untouched.
        let (_dir, f) = crate::testutil::file_with("victim", b"root's data");
        let err = write_into_stream(&f, b"trace").unwrap_err();
        assert!(
            err.to_string().contains("refusing to write into it"),
            "{err}"
        );
        assert_eq!(std::fs::read(&f).unwrap(), b"root's data");
    }

    #[test]
    fn a_device_or_pipe_is_written_into_and_never_replaced() {
        // /dev/null takes the output, with or without --force, and stays a device.
        refuse_existing(Path::new("/dev/null"), false).unwrap();
        save(Path::new("/dev/null"), b"x", false).unwrap();
        save(Path::new("/dev/null"), b"x", true).unwrap();
        let m = std::fs::metadata("/dev/null").unwrap();
        assert!(m.file_type().is_char_device());
        // A named pipe gets the bytes.
        let (_dir, fifo) = crate::testutil::path_in("pipe");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.unwrap().success());
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::read(fifo).unwrap())
        };
        save(&fifo, b"through", false).unwrap();
        assert_eq!(reader.join().unwrap(), b"through");
        // A directory is not replaced by a file, even with --force.
        let (dir, tmp) = crate::testutil::path_in("t");
        std::fs::write(&tmp, b"t").unwrap();
        let err = place(&tmp, dir.path(), true).unwrap_err();
        assert!(err.to_string().contains("not a regular file"), "{err}");
    }
}
