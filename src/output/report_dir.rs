//! A report folder (`suite --out`, `report --out`): written whole into a temporary folder
//! beside it and renamed into place, or, with `--force` over an earlier report, its files moved
//! in one by one. Everything is done by handle (`sys::dir::Dir`): no symlink inside the folder
//! (or in place of it) is followed, so a folder another user may write into cannot send a
//! write or a removal outside it. A [`MANIFEST`] records each file iolab wrote with its BLAKE3
//! and size: a later `--force` removes or replaces only a regular file whose content is still
//! what the manifest says iolab wrote. The manifest is a list of names to check, never a list
//! to trust.

use super::{temp_path, timestamp, track};
use crate::error::{Error, Result};
use crate::sys::dir::Dir;
use std::ffi::{OsStr, OsString};
use std::io::{Read, Write};
use std::path::{Component, Path, PathBuf};

/// The list of files iolab wrote into a report directory: a line per file, `b3:HASH SIZE
/// PATH` (BLAKE3 of its content in hex, its bytes, its path inside the report).
pub const MANIFEST: &str = ".iolab-manifest";

/// What a report written before manifests holds: names `--force` may replace (never remove,
/// having no hash to check them by).
const LEGACY_REPORT_FILES: [&str; 3] = ["results.json", "report.md", "report.html"];

/// A manifest larger than this is not iolab's.
const MANIFEST_MAX: u64 = 1 << 20;

/// One file of a manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Listed {
    rel: String,
    /// Its BLAKE3 and size as written (none for a manifest line of an older iolab).
    written: Option<(String, u64)>,
}

/// The manifest of `files`.
fn manifest(files: &[(String, Vec<u8>)]) -> String {
    files
        .iter()
        .map(|(rel, b)| format!("b3:{} {} {rel}\n", blake3::hash(b).to_hex(), b.len()))
        .collect()
}

/// The entries of a manifest's text (a bare path is an older iolab's line).
fn parse(text: &str) -> Vec<Listed> {
    text.lines()
        .filter(|l| !l.is_empty())
        .map(|l| {
            let hashed = l.strip_prefix("b3:").and_then(|rest| {
                let (hash, rest) = rest.split_once(' ')?;
                let (size, rel) = rest.split_once(' ')?;
                Some(Listed {
                    rel: rel.to_string(),
                    written: Some((hash.to_string(), size.parse().ok()?)),
                })
            });
            hashed.unwrap_or_else(|| Listed {
                rel: l.to_string(),
                written: None,
            })
        })
        .collect()
}

/// The names of a relative path, each a plain name (no `..`, no root, nothing empty).
fn names(rel: &str) -> Option<Vec<OsString>> {
    let p = Path::new(rel);
    let mut v = Vec::new();
    for c in p.components() {
        match c {
            Component::Normal(n) => v.push(n.to_os_string()),
            _ => return None,
        }
    }
    (!v.is_empty()).then_some(v)
}

/// The folder that holds `rel` under `root` and the file's name, each folder opened without
/// following a link (and made when `make`): a link on the way is an error, never a way out.
fn holder(root: &Dir, rel: &str, make: bool) -> std::io::Result<(Dir, OsString)> {
    let bad = || std::io::Error::from_raw_os_error(libc::EINVAL);
    let mut parts = names(rel).ok_or_else(bad)?;
    let name = parts.pop().ok_or_else(bad)?;
    let mut d = root.duplicate()?;
    for part in parts {
        if make && !d.exists(&part) {
            d.mkdir(&part, 0o755)?;
        }
        d = d.sub(&part)?;
    }
    Ok((d, name))
}

/// Whether `name` in `d` is a regular file whose content is what `written` says iolab wrote.
fn still_ours(d: &Dir, name: &OsStr, written: &(String, u64)) -> bool {
    let Ok(f) = d.open_file(name) else {
        return false;
    };
    if f.metadata().map(|m| m.len()).ok() != Some(written.1) {
        return false;
    }
    let mut h = blake3::Hasher::new();
    let mut buf = vec![0u8; 1 << 16];
    let mut r = f.take(written.1);
    loop {
        match r.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                h.update(&buf[..n]);
            }
            Err(_) => return false,
        }
    }
    h.finalize().to_hex().as_str() == written.0
}

/// Reads the regular file `name` in `d`, at most `max` bytes (not following a link).
fn read_small(d: &Dir, name: &str, max: u64) -> Option<Vec<u8>> {
    let f = d.open_file(OsStr::new(name)).ok()?;
    let mut out = Vec::new();
    f.take(max).read_to_end(&mut out).ok()?;
    Some(out)
}

/// Whether the folder `d` is a report iolab wrote: its results.json carries the suite's
/// schema tag.
fn is_report(d: &Dir) -> bool {
    read_small(d, "results.json", 64 << 10)
        .is_some_and(|head| String::from_utf8_lossy(&head).contains("\"schema\": \"iolab-suite/"))
}

/// Whether `dir` is a report iolab wrote: a directory (not a link to one) whose results.json
/// carries the suite's schema tag. Only such a directory may be replaced by `--force`.
pub fn is_iolab_report(dir: &Path) -> bool {
    Dir::open_nofollow(dir).is_ok_and(|d| is_report(&d))
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
    let parent = parent_of(out);
    let probe = temp_path(out, "probe")?;
    std::fs::create_dir(&probe)
        .and_then(|_| std::fs::remove_dir(&probe))
        .map_err(|e| {
            Error::io("cannot write the report", parent, &e)
                .hint("choose another --out before the suite runs for minutes")
        })
}

fn parent_of(out: &Path) -> &Path {
    out.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// Writes `files` (and their manifest) into the new folder `tmp_name` of `parent`.
fn write_tmp(parent: &Dir, tmp_name: &OsStr, all: &[(String, Vec<u8>)]) -> std::io::Result<Dir> {
    parent.mkdir(tmp_name, 0o755)?;
    let tmp = parent.sub(tmp_name)?;
    for (rel, bytes) in all {
        let (d, name) = holder(&tmp, rel, true)?;
        d.create_new(&name)?.write_all(bytes)?;
    }
    Ok(tmp)
}

/// Writes a directory of `(relative path, bytes)`: into a temporary directory beside `out`,
/// renamed into place when complete, with a [`MANIFEST`] of what it wrote. An existing `out` is
/// used only with `force`, and only when it is a report iolab wrote: then only files iolab wrote
/// there (by the manifest's hashes) are replaced or removed, and anything else (notes, a
/// thesis, a link) stays. Without `force` a dated sibling is used, never one that another run
/// has just taken. Returns where it went; on failure nothing new is left.
pub fn save_dir(out: &Path, files: &[(String, Vec<u8>)], force: bool) -> Result<PathBuf> {
    let parent_path = parent_of(out);
    let parent = Dir::open(parent_path)
        .map_err(|e| Error::io("cannot write the report", parent_path, &e))?;
    let out_name = out
        .file_name()
        .map(OsStr::to_os_string)
        .ok_or_else(|| Error::usage("invalid output path", "it names no folder").at(out))?;
    if files.iter().any(|(rel, _)| names(rel).is_none()) {
        return Err(
            Error::failed("cannot write the report", "a file's path leaves the folder").at(out),
        );
    }
    let exists = parent.exists(&out_name);
    let tmp_path = temp_path(out, "dir")?;
    let tmp_name = tmp_path
        .file_name()
        .map(OsStr::to_os_string)
        .unwrap_or_default();
    let _partial = track(&parent.path().join(&tmp_name));
    let mut all: Vec<(String, Vec<u8>)> = files.to_vec();
    all.push((MANIFEST.to_string(), manifest(files).into_bytes()));
    let clear = || {
        let _ = std::fs::remove_dir_all(parent.handle_path(&tmp_name));
    };
    let fail = |target: &Path, e: std::io::Error| {
        clear();
        Error::io("cannot write the report", target, &e)
    };
    if exists && force {
        let outd = parent
            .sub(&out_name)
            .ok()
            .filter(is_report)
            .ok_or_else(|| {
                refuse_unless_report(out)
                    .err()
                    .unwrap_or_else(|| Error::failed("refusing to replace", "it changed").at(out))
            })?;
        let tmp = write_tmp(&parent, &tmp_name, &all).map_err(|e| fail(out, e))?;
        let r = replace_listed(&outd, &tmp, &all);
        clear();
        r.map_err(|e| Error::io("cannot write the report", out, &e))?;
        return Ok(out.to_path_buf());
    }
    write_tmp(&parent, &tmp_name, &all).map_err(|e| fail(out, e))?;
    let name = out_name.to_string_lossy().into_owned();
    let stamp = timestamp();
    for k in 0..1000 {
        let target = match (exists, k) {
            (false, 0) => out_name.clone(),
            (_, k) if k <= 1 => OsString::from(format!("{name}-{stamp}")),
            (_, k) => OsString::from(format!("{name}-{stamp}-{k}")),
        };
        match parent.rename(&tmp_name, &target, false) {
            Ok(()) => return Ok(out.with_file_name(target)),
            // Taken meanwhile (another run in the same second): the next name.
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(fail(&out.with_file_name(target), e)),
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

/// Into the report `outd`: first checks that every file about to be replaced is one iolab
/// wrote (its content matching the old manifest's hash; an older iolab's report files by
/// name) and that no link stands on the way; then moves each of `all` from `tmp` into place
/// and removes the files the old manifest lists that `all` no longer holds, when their content
/// is still iolab's. Nothing else is touched.
fn replace_listed(outd: &Dir, tmp: &Dir, all: &[(String, Vec<u8>)]) -> std::io::Result<()> {
    let old = read_small(outd, MANIFEST, MANIFEST_MAX)
        .map(|t| parse(&String::from_utf8_lossy(&t)))
        .unwrap_or_else(|| {
            LEGACY_REPORT_FILES
                .iter()
                .map(|r| Listed {
                    rel: r.to_string(),
                    written: None,
                })
                .collect()
        });
    let ours = |d: &Dir, name: &OsStr, rel: &str| {
        if rel == MANIFEST {
            return d.is_file(name);
        }
        old.iter()
            .filter(|l| l.rel == rel)
            .any(|l| match &l.written {
                Some(w) => still_ours(d, name, w),
                None => LEGACY_REPORT_FILES.contains(&rel) && d.is_file(name),
            })
    };
    let refused = |rel: &str| {
        std::io::Error::new(
            std::io::ErrorKind::AlreadyExists,
            format!("{rel} is there and is not a file iolab wrote (or it changed since)"),
        )
    };
    // Every destination checked before anything moves.
    for (rel, _) in all {
        match holder(outd, rel, false) {
            Ok((d, name)) if d.exists(&name) && !ours(&d, &name, rel) => return Err(refused(rel)),
            Ok(_) => {}
            // A folder on the way that is missing is made below; a link or a file there is not
            // iolab's.
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {}
            Err(_) => return Err(refused(rel)),
        }
    }
    for (rel, _) in all {
        let (from, name) = holder(tmp, rel, false)?;
        let (to, name_to) = holder(outd, rel, true)?;
        from.rename_into(&name, &to, &name_to, true)?;
    }
    for l in &old {
        let Some(w) = &l.written else { continue };
        if all.iter().any(|(rel, _)| *rel == l.rel) {
            continue;
        }
        if let Ok((d, name)) = holder(outd, &l.rel, false)
            && still_ours(&d, &name, w)
        {
            d.remove(&name)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
