//! Helpers for the unit tests: files in temporary directories that vanish with the guard.

use std::path::PathBuf;
use tempfile::TempDir;

/// A temporary directory holding one file `name` with `bytes`; the file goes with the directory.
pub fn file_with(name: &str, bytes: &[u8]) -> (TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join(name);
    std::fs::write(&path, bytes).expect("a temporary file");
    (dir, path)
}

/// A temporary directory and the path of `name` inside it, not yet created.
pub fn path_in(name: &str) -> (TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join(name);
    (dir, path)
}

/// Skips counted as the integration tests count them.
#[path = "../tests/common/skip.rs"]
pub mod skip;
pub use skip::{Lack, skip};
