//! Saving outputs as docs/commands.md promises: never over an existing file without `force`, written under a
//! temporary name in the same directory and renamed when complete, nothing left on failure.

use crate::error::{Error, Result};
use std::io::Write;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};

/// Keeps a path on the list of partial outputs while it lives (track it before creating it).
#[must_use = "the path is tracked only while the guard lives"]
#[derive(Debug)]
pub struct Partial(Option<usize>);

/// Puts `path` on the list of partial outputs until the returned guard is dropped: a SIGINT or
/// SIGTERM in between removes it (with what it holds, if a directory) before the process exits
/// ([`crate::sys::cleanup`]). Call it before creating the path, so nothing exists untracked.
pub fn track(path: &Path) -> Partial {
    Partial(crate::sys::cleanup::register(path))
}

impl Drop for Partial {
    fn drop(&mut self) {
        if let Some(i) = self.0 {
            crate::sys::cleanup::unregister(i);
        }
    }
}

/// Refuses an existing `path` unless `force`, or unless it is a device or a pipe, which
/// [`save`] writes into (/dev/null, /dev/stdout, a named pipe).
pub fn refuse_existing(path: &Path, force: bool) -> Result<()> {
    if !force && std::fs::symlink_metadata(path).is_ok() && !stream_like(path) {
        return Err(exists(path));
    }
    Ok(())
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

/// Writes `bytes` to `path` under a temporary name, then [`place`]s it.
pub fn save(path: &Path, bytes: &[u8], force: bool) -> Result<()> {
    if stream_like(path) {
        // /dev/null, /dev/stdout, a named pipe: written into, as a shell's `>` would.
        return std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .and_then(|mut f| f.write_all(bytes))
            .map_err(|e| Error::io("cannot write", path, &e));
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

/// A new, empty directory under the system's temporary directory: `PREFIX-PID-N`.
pub fn temp_dir(prefix: &str) -> Result<TempDir> {
    let base = std::env::temp_dir();
    // What an earlier run killed with -9 left under this prefix goes first.
    remove_stale(&base, &format!("{prefix}-"));
    for i in 0..1000 {
        let p = base.join(format!("{prefix}-{}-{i}", std::process::id()));
        let partial = track(&p);
        if std::fs::create_dir(&p).is_ok() {
            return Ok(TempDir {
                path: p,
                _partial: partial,
            });
        }
    }
    Err(Error::failed("cannot create a temporary directory", "1000 names taken").at(&base))
}

/// Whether process `pid` is a running iolab (a pid reused by another program is not).
pub fn iolab_alive(pid: u32) -> bool {
    crate::clean::iolab_alive(pid)
}

/// Removes what a killed run left in `dir`: directories named `PREFIX<pid>` or
/// `PREFIX<pid>-...` (iolab's temporary folders carry the pid of their run) whose pid is no
/// running iolab, and that belong to this user. Returns how many it removed. `kill -9` runs no
/// clean-up; the next run (or `iolab clean`) does it.
pub fn remove_stale(dir: &Path, prefix: &str) -> usize {
    crate::clean::remove_all(&crate::clean::stale_folders(dir, prefix))
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

/// Whether `dir` is a report iolab wrote: a directory whose results.json carries the suite's
/// schema tag. Only such a directory may be replaced by `--force`.
pub fn is_iolab_report(dir: &Path) -> bool {
    use std::io::Read;
    let Ok(meta) = std::fs::symlink_metadata(dir) else {
        return false;
    };
    if !meta.is_dir() {
        return false;
    }
    let mut head = Vec::new();
    std::fs::File::open(dir.join("results.json"))
        .and_then(|f| f.take(64 << 10).read_to_end(&mut head))
        .is_ok()
        && String::from_utf8_lossy(&head).contains("\"schema\": \"iolab-suite/")
}

/// Refuses to replace `out` unless it is a report iolab wrote.
pub fn refuse_unless_report(out: &Path) -> Result<()> {
    if is_iolab_report(out) {
        return Ok(());
    }
    Err(Error::usage(
        "refusing to replace",
        "it is not a report iolab wrote (no results.json with the iolab-suite schema)",
    )
    .at(out)
    .hint("--force replaces only an earlier iolab report; choose another --out"))
}

/// Refuses, before any work, an output directory that could not be written: its parent must
/// exist and take a new entry.
pub fn check_can_write(out: &Path) -> Result<()> {
    let parent = out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let probe = temp_path(out, "probe")?;
    std::fs::create_dir(&probe)
        .and_then(|_| std::fs::remove_dir(&probe))
        .map_err(|e| {
            Error::io("cannot write the report", parent, &e)
                .hint("choose another --out before the suite runs for minutes")
        })
}

/// The list of files iolab wrote into a report directory, one relative path a line: what a
/// later `--force` may replace or remove, and nothing else.
pub const MANIFEST: &str = ".iolab-manifest";

/// What a report written before manifests holds (all that `--force` may touch in one).
const LEGACY_REPORT_FILES: [&str; 3] = ["results.json", "report.md", "report.html"];

/// Writes a directory of `(relative path, bytes)`: into a temporary directory beside `out`,
/// renamed into place when complete, with a [`MANIFEST`] of what it wrote. An existing `out` is
/// used only with `force`, and only when it is a report iolab wrote: then only the files its
/// manifest lists are replaced or removed, and anything else there (notes, a thesis) stays.
/// Without `force` a dated sibling is used, never one that another run has just taken.
/// Returns where it went; on failure nothing new is left.
pub fn save_dir(
    out: &Path,
    files: &[(String, Vec<u8>)],
    force: bool,
) -> Result<std::path::PathBuf> {
    let exists = std::fs::symlink_metadata(out).is_ok();
    let tmp = temp_path(out, "dir")?;
    let _partial = track(&tmp);
    let mut all: Vec<(String, Vec<u8>)> = files.to_vec();
    let listing: String = files.iter().map(|(rel, _)| format!("{rel}\n")).collect();
    all.push((MANIFEST.to_string(), listing.into_bytes()));
    let write = || -> std::io::Result<()> {
        std::fs::create_dir_all(&tmp)?;
        for (rel, bytes) in &all {
            let p = tmp.join(rel);
            if let Some(parent) = p.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::write(&p, bytes)?;
        }
        Ok(())
    };
    let fail = |target: &Path, e: std::io::Error| {
        let _ = std::fs::remove_dir_all(&tmp);
        Error::io("cannot write the report", target, &e)
    };
    if exists && force {
        refuse_unless_report(out)?;
        write().map_err(|e| fail(out, e))?;
        replace_listed(out, &tmp, &all).map_err(|e| fail(out, e))?;
        let _ = std::fs::remove_dir_all(&tmp);
        return Ok(out.to_path_buf());
    }
    write().map_err(|e| fail(out, e))?;
    let name = out
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "iolab-report".into());
    let stamp = timestamp();
    for k in 0..1000 {
        let target = match (exists, k) {
            (false, 0) => out.to_path_buf(),
            (_, k) if k <= 1 => out.with_file_name(format!("{name}-{stamp}")),
            (_, k) => out.with_file_name(format!("{name}-{stamp}-{k}")),
        };
        match crate::sys::rename_noreplace(&tmp, &target) {
            Ok(()) => return Ok(target),
            // Taken meanwhile (another run in the same second): the next name.
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(fail(&target, e)),
        }
    }
    Err(fail(
        out,
        std::io::Error::new(
            std::io::ErrorKind::AlreadyExists,
            "every dated name is taken",
        ),
    ))
}

/// Into the report `out`: removes the files its manifest lists that `files` does not hold,
/// then moves each of `files` from `tmp` into place. Never follows a link, never touches a
/// file the manifest does not list.
fn replace_listed(out: &Path, tmp: &Path, files: &[(String, Vec<u8>)]) -> std::io::Result<()> {
    let old: Vec<String> = match std::fs::read_to_string(out.join(MANIFEST)) {
        Ok(text) => text.lines().map(str::to_string).collect(),
        Err(_) => LEGACY_REPORT_FILES.iter().map(|s| s.to_string()).collect(),
    };
    let safe = |rel: &str| {
        !rel.is_empty()
            && !rel.starts_with('/')
            && Path::new(rel)
                .components()
                .all(|c| matches!(c, std::path::Component::Normal(_)))
    };
    for rel in old.iter().filter(|r| safe(r)) {
        if files.iter().any(|(f, _)| f == rel) {
            continue;
        }
        let p = out.join(rel);
        if std::fs::symlink_metadata(&p).is_ok_and(|m| m.is_file()) {
            std::fs::remove_file(&p)?;
        }
    }
    for (rel, _) in files {
        let dest = out.join(rel);
        if let Some(parent) = dest.parent() {
            std::fs::create_dir_all(parent)?;
        }
        // A directory or a link where a file goes is not iolab's to remove.
        if std::fs::symlink_metadata(&dest).is_ok_and(|m| !m.is_file()) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::AlreadyExists,
                format!("{rel} is there and is not a file iolab wrote"),
            ));
        }
        std::fs::rename(tmp.join(rel), &dest)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dirs_are_dated_when_taken_and_replaced_with_force() {
        let (dir, out) = crate::testutil::path_in("rep");
        // A report (what --force may replace carries the suite's schema tag).
        let files = vec![
            ("a.txt".to_string(), b"1".to_vec()),
            ("plots/p.svg".to_string(), b"<svg/>".to_vec()),
            (
                "results.json".to_string(),
                b"{\"schema\": \"iolab-suite/1\"}".to_vec(),
            ),
        ];
        assert_eq!(save_dir(&out, &files, false).unwrap(), out);
        assert_eq!(std::fs::read(out.join("plots/p.svg")).unwrap(), b"<svg/>");
        let second = save_dir(&out, &files, false).unwrap();
        assert_ne!(second, out);
        assert!(
            second
                .file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("rep-20")
        );
        // Another in the same second never takes (and so never replaces) the same folder.
        let third = save_dir(&out, &files, false).unwrap();
        assert!(third != second && third != out, "{third:?}");
        assert!(out.join(MANIFEST).is_file() && third.join("a.txt").is_file());
        std::fs::remove_dir_all(&third).unwrap();
        let f2 = vec![("b.txt".to_string(), b"2".to_vec())];
        assert_eq!(save_dir(&out, &f2, true).unwrap(), out);
        assert!(!out.join("a.txt").exists() && out.join("b.txt").exists());
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            2,
            "no temporary directories left"
        );
        assert_eq!(timestamp().len(), 15);
    }

    #[test]
    fn force_replaces_only_an_iolab_report() {
        let (dir, out) = crate::testutil::path_in("rep");
        let files = vec![(
            "results.json".to_string(),
            b"{\"schema\": \"iolab-suite/1\"}".to_vec(),
        )];
        // Someone's folder: --force must not delete it.
        std::fs::create_dir(&out).unwrap();
        std::fs::write(out.join("thesis.txt"), b"years of work").unwrap();
        let err = save_dir(&out, &files, true).unwrap_err();
        assert_eq!(err.exit_code(), 2, "{err}");
        assert_eq!(
            std::fs::read(out.join("thesis.txt")).unwrap(),
            b"years of work"
        );
        // A file as --out with --force: refused, and nothing left beside it.
        let f = dir.path().join("afile");
        std::fs::write(&f, b"x").unwrap();
        assert!(save_dir(&f, &files, true).is_err());
        assert_eq!(std::fs::read(&f).unwrap(), b"x");
        // An earlier report is replaced.
        let rep = dir.path().join("old-report");
        save_dir(&rep, &files, false).unwrap();
        assert!(is_iolab_report(&rep));
        // A file iolab wrote and no longer writes goes; a user's note beside the report stays.
        save_dir(
            &rep,
            &[
                files.clone(),
                vec![("plots/old.svg".to_string(), b"<svg/>".to_vec())],
            ]
            .concat(),
            true,
        )
        .unwrap();
        assert!(rep.join("plots/old.svg").exists());
        std::fs::write(rep.join("notes.txt"), b"my notes").unwrap();
        std::fs::write(rep.join("thesis.tex"), b"years of work").unwrap();
        assert_eq!(save_dir(&rep, &files, true).unwrap(), rep);
        assert!(!rep.join("plots/old.svg").exists());
        assert_eq!(std::fs::read(rep.join("notes.txt")).unwrap(), b"my notes");
        assert_eq!(
            std::fs::read(rep.join("thesis.tex")).unwrap(),
            b"years of work"
        );
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert!(
            names.iter().all(|n| !n.starts_with('.')),
            "temporaries left: {names:?}"
        );
        // An output whose parent does not exist is refused before any work.
        assert!(check_can_write(&dir.path().join("no/such/rep")).is_err());
        check_can_write(&dir.path().join("new-rep")).unwrap();
    }

    #[test]
    fn what_a_killed_run_left_is_removed_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        // pid_max is at most 4194304: these pids never run.
        let dead = dir.path().join(".iolab-data-99999999");
        let dead_tmp = dir.path().join("iolab-transfer-99999998-0");
        let mine = dir
            .path()
            .join(format!(".iolab-data-{}", std::process::id()));
        let other = dir.path().join(".iolab-data-notapid");
        for d in [&dead, &dead_tmp, &mine, &other] {
            std::fs::create_dir(d).unwrap();
            std::fs::write(d.join("f"), b"x").unwrap();
        }
        assert_eq!(remove_stale(dir.path(), ".iolab-data-"), 1);
        assert_eq!(remove_stale(dir.path(), "iolab-transfer-"), 1);
        assert!(!dead.exists() && !dead_tmp.exists());
        assert!(
            mine.exists() && other.exists(),
            "a live run's and a stranger's stay"
        );
    }

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
