//! `iolab cache status|evict|load FILE...`: residency per file, like vmtouch, and the page-cache
//! size from /proc/meminfo.

use crate::cache::meminfo::{self, PageCache};
use crate::cache::{self, Residency};
use crate::engine;
use crate::error::Result;
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileResidency {
    /// The file.
    pub path: PathBuf,
    /// Its size.
    pub size: u64,
    /// Its pages in the page cache.
    pub residency: Residency,
    /// Resident fraction of each slice of the file, with `--map`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub map: Option<Vec<f64>>,
}

/// What `iolab cache` did and found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CacheReport {
    /// What was done.
    pub action: CacheAction,
    /// Each file after the action.
    pub files: Vec<FileResidency>,
    /// The page-cache figures of /proc/meminfo afterwards.
    pub page_cache: PageCache,
    /// What the user should know about this result.
    pub notes: Vec<String>,
}

/// Applies `action` to every file, then reports residency. Stops at the first failing file.
/// With `map_width`, each file also gets a residency map of that many slices.
pub fn run_cache(
    action: CacheAction,
    paths: &[PathBuf],
    drop_all: bool,
    map_width: Option<usize>,
) -> Result<CacheReport> {
    let mut files = Vec::new();
    let mut notes = Vec::new();
    for path in paths {
        let src = engine::open_source(path)?;
        match action {
            CacheAction::Status => {}
            CacheAction::Load => cache::load(&src.file, src.size, path)?,
            CacheAction::Evict => {
                cache::evict(&src.file, path, false)?;
            }
        }
        files.push(status(path, &src, map_width)?);
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
            if f.residency.fraction() > cache::COLD_MAX && f.residency.total_pages > 0 {
                notes.push(format!(
                    "{}: still {:.1}% resident (the filesystem may ignore fadvise, e.g. tmpfs, or another process maps it)",
                    f.path.display(),
                    f.residency.percent()
                ));
            }
        }
    }
    Ok(CacheReport {
        action,
        files,
        page_cache: meminfo::read(),
        notes,
    })
}

fn status(path: &Path, src: &engine::Source, map_width: Option<usize>) -> Result<FileResidency> {
    Ok(FileResidency {
        path: path.to_path_buf(),
        size: src.size,
        residency: cache::residency_of(&src.file, src.size, path)?,
        map: map_width
            .map(|w| cache::residency_map(&src.file, src.size, w, path))
            .transpose()?,
    })
}
