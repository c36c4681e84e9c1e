//! Saving outputs the DESIGN §2 way: never over an existing file without `force`, written under a
//! temporary name in the same directory and renamed when complete, nothing left on failure.

use crate::error::{Error, Result};
use std::io::Write;
use std::path::Path;

/// Refuses an existing `path` unless `force`.
pub fn refuse_existing(path: &Path, force: bool) -> Result<()> {
    if !force && std::fs::symlink_metadata(path).is_ok() {
        return Err(Error::usage("refusing to overwrite", "the file exists")
            .at(path)
            .hint("add --force to overwrite it"));
    }
    Ok(())
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
    Ok(path.with_file_name(format!(
        ".{}.iolab-{}{tag}.tmp",
        name.to_string_lossy(),
        std::process::id()
    )))
}

/// Writes `bytes` to `path` under a temporary name, renamed when complete; an existing file only with `force`.
pub fn save(path: &Path, bytes: &[u8], force: bool) -> Result<()> {
    refuse_existing(path, force)?;
    let tmp = temp_path(path, "")?;
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .and_then(|mut f| f.write_all(bytes).and_then(|_| f.sync_all()))
        .and_then(|_| std::fs::rename(&tmp, path));
    written.map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        Error::io("cannot write", path, &e)
    })
}

/// A new, empty directory under the system's temporary directory; the caller removes it.
pub fn temp_dir(prefix: &str) -> Result<std::path::PathBuf> {
    let base = std::env::temp_dir();
    for i in 0..1000 {
        let p = base.join(format!("{prefix}-{}-{i}", std::process::id()));
        if std::fs::create_dir(&p).is_ok() {
            return Ok(p);
        }
    }
    Err(Error::failed("cannot create a temporary directory", "1000 names taken").at(&base))
}

/// `YYYYmmdd-HHMMSS` in UTC, for dated folder names.
pub fn timestamp() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0) as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil from days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}{m:02}{d:02}-{:02}{:02}{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Writes a directory of `(relative path, bytes)` atomically: into a temporary directory beside
/// `out`, renamed into place when complete. An existing `out` is replaced only with `force`;
/// otherwise a dated sibling is used. Returns where it went; on failure nothing is left.
pub fn save_dir(
    out: &Path,
    files: &[(String, Vec<u8>)],
    force: bool,
) -> Result<std::path::PathBuf> {
    let target = if out.exists() && !force {
        let name = out
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "iolab-report".into());
        out.with_file_name(format!("{name}-{}", timestamp()))
    } else {
        out.to_path_buf()
    };
    let tmp = temp_path(&target, "dir")?;
    let old = temp_path(&target, "old")?;
    let write = || -> std::io::Result<()> {
        for (rel, bytes) in files {
            let p = tmp.join(rel);
            if let Some(parent) = p.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::write(&p, bytes)?;
        }
        if target.exists() {
            std::fs::rename(&target, &old)?;
            std::fs::rename(&tmp, &target)?;
            let _ = std::fs::remove_dir_all(&old);
        } else {
            std::fs::rename(&tmp, &target)?;
        }
        Ok(())
    };
    std::fs::create_dir_all(&tmp)
        .and_then(|_| write())
        .map_err(|e| {
            let _ = std::fs::remove_dir_all(&tmp);
            Error::io("cannot write the report", &target, &e)
        })?;
    Ok(target)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dirs_are_dated_when_taken_and_replaced_with_force() {
        let (dir, out) = crate::testutil::path_in("rep");
        let files = vec![
            ("a.txt".to_string(), b"1".to_vec()),
            ("plots/p.svg".to_string(), b"<svg/>".to_vec()),
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
}
