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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saves_new_refuses_existing_and_forces() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("out.svg");
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
