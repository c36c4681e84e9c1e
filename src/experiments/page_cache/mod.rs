//! `iolab cache status|evict|load FILE...`: residency per file, like vmtouch, and the page-cache
//! size from /proc/meminfo.

pub mod report;

use crate::cache::meminfo::{self, PageCache};
use crate::cache::{self, Residency};
use crate::engine;
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

crate::named_enum! {
    /// What `iolab cache` does to each file before reporting its residency.
    pub enum CacheAction {
        /// Nothing: report only.
        Status = "status",
        /// fdatasync + fadvise(DONTNEED).
        Evict = "evict",
        /// Read it whole into the page cache.
        Load = "load",
    }
}

/// One file's residency.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FileResidency {
    /// The file.
    pub path: PathBuf,
    /// Its size.
    pub size: u64,
    /// Its pages in the page cache; `None` (null) when the kernel hides them from this user.
    pub residency: Option<Residency>,
    /// Pages in the file.
    #[serde(default)]
    pub pages: u64,
    /// Resident fraction of each slice of the file, with `--map`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub map: Option<Vec<f64>>,
    /// Whether the kernel shows this user the file's residency: it hides it (mincore and
    /// cachestat say every page is resident) from who cannot write the file. When false,
    /// `residency` and `map` are null: what the kernel says then is not what is cached.
    #[serde(default = "crate::cache::visible_by_default")]
    pub visible: bool,
}

/// What `iolab cache` did and found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CacheReport {
    /// What was done.
    pub action: CacheAction,
    /// Each file after the action.
    pub files: Vec<FileResidency>,
    /// The page-cache figures of /proc/meminfo afterwards.
    pub page_cache: PageCache,
    /// What the user should know about this result.
    pub notes: Vec<String>,
    /// Files and directories found under the directories given that could not be read, each
    /// with why: left out, as vmtouch leaves them, and counted in the total.
    #[serde(default)]
    pub unreadable: Vec<String>,
}

/// At most this many unreadable entries are named one by one in the notes.
const NAMED_UNREADABLE: usize = 5;

/// Applies `action` to every file, then reports residency. A file given by name that fails
/// stops it; one found under a directory given that cannot be read is left out, noted and
/// counted (as vmtouch warns and goes on). With `map_width`, each file also gets a residency map
/// of that many slices.
pub fn run_cache(
    action: CacheAction,
    paths: &[PathBuf],
    drop_all: bool,
    map_width: Option<usize>,
) -> Result<CacheReport> {
    let mut files = Vec::new();
    let mut notes = Vec::new();
    let Expanded {
        files: paths,
        skipped,
        mut unreadable,
    } = expand(paths)?;
    if skipped > 0 {
        notes.push(format!(
            "{skipped} entr{} in the directories given are not regular files (links, devices, sockets) and were left out, as vmtouch does",
            if skipped == 1 { "y" } else { "ies" }
        ));
    }
    let mut kept = Vec::new();
    for (path, named) in paths {
        let src = match engine::open_source(&path) {
            Ok(s) => s,
            Err(e) if !named => {
                unreadable.push(e.to_string());
                continue;
            }
            Err(e) => return Err(e),
        };
        let path = &path;
        match action {
            CacheAction::Status => {}
            CacheAction::Load => cache::load(&src.file, src.size, path)?,
            CacheAction::Evict => {
                cache::evict(&src.file, path, false)?;
            }
        }
        files.push(status(path, &src, map_width)?);
        kept.push(path.clone());
    }
    let paths = &kept[..];
    if !unreadable.is_empty() {
        notes.push(unreadable_note(&unreadable));
    }
    if action == CacheAction::Evict && drop_all {
        match cache::drop_all_caches() {
            Ok(()) => notes.push("dropped all clean caches (drop_caches)".into()),
            Err(why) => notes.push(why),
        }
        files = paths
            .iter()
            .map(|p| engine::open_source(p).and_then(|s| status(p, &s, map_width)))
            .collect::<Result<_>>()?;
    }
    if action == CacheAction::Evict {
        for f in &files {
            if let Some(r) = &f.residency
                && r.fraction() > cache::COLD_MAX
                && r.total_pages > 0
            {
                notes.push(format!(
                    "{}: still {:.1}% resident (the filesystem may ignore fadvise, e.g. tmpfs, or another process maps it)",
                    crate::shown::path(&f.path),
                    r.percent()
                ));
            }
        }
    }
    let hidden = files.iter().filter(|f| !f.visible).count();
    if hidden > 0 && action == CacheAction::Evict {
        notes.push(format!(
            "whether {hidden} file{} left the cache cannot be told: the kernel hides residency from this user (fadvise DONTNEED was asked for each; it drops only pages no one maps or dirtied)",
            if hidden == 1 { "" } else { "s" }
        ));
    }
    if hidden > 0 {
        notes.push(format!(
            "residency of {hidden} file{} is hidden from this user (no write access): the kernel's mincore and cachestat show every page as resident to who cannot write a file; run as its owner or root to see it",
            if hidden == 1 { "" } else { "s" }
        ));
    }
    Ok(CacheReport {
        action,
        files,
        page_cache: meminfo::read(),
        notes,
        unreadable,
    })
}

/// The note for entries found under the directories given that could not be read: how many,
/// the first few named.
fn unreadable_note(unreadable: &[String]) -> String {
    let named: Vec<&str> = unreadable
        .iter()
        .take(NAMED_UNREADABLE)
        .map(String::as_str)
        .collect();
    let more = unreadable.len().saturating_sub(NAMED_UNREADABLE);
    format!(
        "{} entr{} under the directories given could not be read and {} left out: {}{}",
        unreadable.len(),
        if unreadable.len() == 1 { "y" } else { "ies" },
        if unreadable.len() == 1 { "was" } else { "were" },
        named.join("; "),
        if more > 0 {
            format!("; and {more} more")
        } else {
            String::new()
        }
    )
}

/// The files a list of paths names.
pub struct Expanded {
    /// Each file, and whether it was named (not found under a directory).
    pub files: Vec<(PathBuf, bool)>,
    /// Entries under the directories that are not regular files.
    pub skipped: usize,
    /// Directories under those given that could not be read, each with why.
    pub unreadable: Vec<String>,
}

/// The files to act on: each path as given, a directory replaced by the regular files under it
/// (walked depth-first in name order, symbolic links not followed, as vmtouch walks). A path
/// given that cannot be opened, or a directory given that cannot be read, is an error; a
/// directory under it that cannot be read is noted in `unreadable` and the walk goes on.
pub fn expand(paths: &[PathBuf]) -> Result<Expanded> {
    let mut out = Vec::new();
    let mut skipped = 0;
    let mut unreadable = Vec::new();
    for p in paths {
        let meta = std::fs::symlink_metadata(p).map_err(|e| Error::io("cannot open", p, &e))?;
        if !meta.is_dir() {
            out.push((p.clone(), true));
            continue;
        }
        let mut stack = vec![p.clone()];
        while let Some(dir) = stack.pop() {
            let listing = match std::fs::read_dir(&dir) {
                Ok(l) => l,
                Err(e) if &dir != p => {
                    unreadable.push(Error::io("cannot read the directory", &dir, &e).to_string());
                    continue;
                }
                Err(e) => return Err(Error::io("cannot read the directory", &dir, &e)),
            };
            let mut entries: Vec<(PathBuf, std::fs::FileType)> = listing
                .filter_map(|e| e.ok())
                .filter_map(|e| e.file_type().ok().map(|t| (e.path(), t)))
                .collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            let mut subdirs = Vec::new();
            for (path, t) in entries {
                if t.is_dir() {
                    subdirs.push(path);
                } else if t.is_file() {
                    out.push((path, false));
                } else {
                    skipped += 1;
                }
            }
            // Popped in name order.
            stack.extend(subdirs.into_iter().rev());
        }
    }
    Ok(Expanded {
        files: out,
        skipped,
        unreadable,
    })
}

/// The files' residency added up: `(files, bytes, resident pages, pages)`, the resident pages
/// of those whose residency this user sees.
pub fn total(files: &[FileResidency]) -> (usize, u64, u64, u64) {
    files.iter().fold((0, 0, 0, 0), |(n, b, r, t), f| {
        (
            n + 1,
            b + f.size,
            r + f.residency.as_ref().map_or(0, |x| x.resident_pages),
            t + f.pages,
        )
    })
}

fn status(path: &Path, src: &engine::Source, map_width: Option<usize>) -> Result<FileResidency> {
    let visible = cache::residency_visible(&src.file, path);
    let residency = cache::residency_of(&src.file, src.size, path)?;
    Ok(FileResidency {
        visible,
        path: path.to_path_buf(),
        size: src.size,
        pages: residency.total_pages,
        residency: visible.then_some(residency),
        map: match map_width {
            Some(w) if visible => Some(cache::residency_map(&src.file, src.size, w, path)?),
            _ => None,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directories_expand_to_their_regular_files_in_order() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path();
        std::fs::create_dir_all(p.join("b/c")).unwrap();
        for f in ["a.bin", "b/x.bin", "b/c/y.bin", "z.bin"] {
            std::fs::write(p.join(f), b"data").unwrap();
        }
        std::os::unix::fs::symlink(p.join("a.bin"), p.join("link")).unwrap();
        let e = expand(&[p.to_path_buf(), p.join("z.bin")]).unwrap();
        let names: Vec<String> = e
            .files
            .iter()
            .map(|(f, _)| f.strip_prefix(p).unwrap().display().to_string())
            .collect();
        assert_eq!(names, ["a.bin", "z.bin", "b/x.bin", "b/c/y.bin", "z.bin"]);
        let named: Vec<bool> = e.files.iter().map(|(_, n)| *n).collect();
        assert_eq!(named, [false, false, false, false, true]);
        assert_eq!(e.skipped, 1, "the symbolic link");
        assert!(e.unreadable.is_empty());
        assert!(expand(&[p.join("nope")]).is_err());
    }
}
