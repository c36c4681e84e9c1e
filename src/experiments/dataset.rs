//! The suite's data: a random file and the classic transfer inputs, made inside a [`DataDir`]
//! that removes what it made when dropped, and never writes over a file it did not make.

use crate::cache::meminfo;
use crate::error::{Error, Result};
use crate::workload::{fill_random, splitmix64, write_random};
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::path::{Path, PathBuf};

/// The data a suite run made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DataSet {
    /// The random file most experiments read.
    pub random_file: PathBuf,
    /// Its size.
    pub random_size: u64,
    /// The classic transfer inputs.
    pub classic_files: Vec<PathBuf>,
    /// Their total size.
    pub classic_bytes: u64,
    /// Why the size is smaller than asked, when it is.
    pub capped: Option<String>,
}

/// The directory the suite's data goes in. It hands out scratch names that do not exist yet and
/// remembers them; dropped, it removes them (or the whole directory, if it made it), unless the
/// data is to be kept.
pub struct DataDir {
    path: PathBuf,
    /// The folders above it that it made (deepest first).
    made_parents: Vec<PathBuf>,
    made_dir: bool,
    keep: bool,
    made: RefCell<Vec<PathBuf>>,
    /// What it made, on the list an interrupt removes (unless the data is to be kept).
    tracked: RefCell<Vec<crate::output::Partial>>,
}

impl DataDir {
    /// `dir`, created if missing, or else a new `.iolab-data-PID` directory in `parent`.
    pub fn new(dir: Option<PathBuf>, parent: &Path, keep: bool) -> Result<DataDir> {
        // The folders above `--dir` that this run makes (deepest first): removed with it.
        let mut made_parents = Vec::new();
        let (path, made_dir) = match dir {
            Some(d) => {
                let made = !d.exists();
                let mut up = d.parent();
                while let Some(p) = up.filter(|p| !p.as_os_str().is_empty() && !p.exists()) {
                    made_parents.push(p.to_path_buf());
                    up = p.parent();
                }
                std::fs::create_dir_all(&d).map_err(|e| Error::io("cannot create", &d, &e))?;
                (d, made)
            }
            None => {
                let d = parent.join(format!(".iolab-data-{}", std::process::id()));
                std::fs::create_dir(&d).map_err(|e| {
                    if e.kind() == std::io::ErrorKind::AlreadyExists {
                        Error::usage("data directory exists", "refusing to reuse it").at(&d)
                    } else {
                        Error::io("cannot create", &d, &e)
                    }
                })?;
                (d, true)
            }
        };
        let tracked = RefCell::new(Vec::new());
        if made_dir && !keep {
            tracked.borrow_mut().push(crate::output::track(&path));
        }
        Ok(DataDir {
            path,
            made_parents,
            made_dir,
            keep,
            made: RefCell::new(Vec::new()),
            tracked,
        })
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A name in the directory for a file the suite will make: refused if something is there
    /// already (the suite never writes over what it did not make), removed at the end.
    pub fn scratch(&self, name: &str) -> Result<PathBuf> {
        let p = self.path.join(name);
        if std::fs::symlink_metadata(&p).is_ok() {
            return Err(Error::usage(
                "refusing to use the data directory",
                "it already holds a file of a name the suite makes",
            )
            .at(&p)
            .hint("give --dir an empty or new directory"));
        }
        self.made.borrow_mut().push(p.clone());
        if !self.keep && !self.made_dir {
            self.tracked.borrow_mut().push(crate::output::track(&p));
        }
        Ok(p)
    }

    /// A new directory of the suite's own, removed at the end.
    pub fn scratch_dir(&self, name: &str) -> Result<PathBuf> {
        let p = self.scratch(name)?;
        std::fs::create_dir(&p).map_err(|e| Error::io("cannot create", &p, &e))?;
        Ok(p)
    }
}

impl Drop for DataDir {
    fn drop(&mut self) {
        if self.keep {
            return;
        }
        if self.made_dir {
            let _ = std::fs::remove_dir_all(&self.path);
            // Only while empty: what someone else put there meanwhile stays.
            for p in &self.made_parents {
                let _ = std::fs::remove_dir(p);
            }
            return;
        }
        for p in self.made.borrow().iter().rev() {
            let _ = std::fs::remove_file(p).or_else(|_| std::fs::remove_dir_all(p));
        }
    }
}

/// Creates `path`, which must not exist.
fn create_new(path: &Path) -> Result<std::fs::File> {
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| Error::io("cannot create", path, &e))
}

fn write_new(path: &Path, data: &[u8]) -> Result<()> {
    use std::io::Write;
    create_new(path)?
        .write_all(data)
        .map_err(|e| Error::io("cannot write data", path, &e))
}

/// Words for the generated text files.
const WORDS: [&str; 24] = [
    "page", "cache", "block", "read", "write", "map", "fault", "kernel", "file", "byte", "disk",
    "copy", "socket", "buffer", "the", "a", "of", "and", "to", "in", "is", "data", "fast", "slow",
];

fn text(len: usize, seed: u64) -> Vec<u8> {
    let mut s = seed;
    let mut out = Vec::with_capacity(len + 16);
    let mut col = 0;
    while out.len() < len {
        let w = WORDS[(splitmix64(&mut s) % WORDS.len() as u64) as usize];
        out.extend_from_slice(w.as_bytes());
        col += w.len() + 1;
        out.push(if col > 70 { b'\n' } else { b' ' });
        if col > 70 {
            col = 0;
        }
    }
    out.truncate(len);
    out
}

/// Makes the data in `dir`: a random file and the classic transfer inputs.
pub fn make_data(size: u64, dir: &DataDir) -> Result<DataSet> {
    let c = dir.scratch_dir("classic")?;
    let dirf =
        std::fs::File::open(dir.path()).map_err(|e| Error::io("cannot open", dir.path(), &e))?;
    let free = crate::sys::fs_free_bytes(&dirf).unwrap_or(u64::MAX);
    let ram = meminfo::read().mem_total;
    let mut size = size.max(1 << 20);
    let mut capped = None;
    if size > free / 2 {
        size = free / 2;
        capped = Some(format!(
            "capped to half the free disk space ({})",
            crate::size::format_size(free)
        ));
    }
    if ram > 0 && size > ram / 4 {
        size = ram / 4;
        capped = Some(format!(
            "capped to a quarter of RAM ({})",
            crate::size::format_size(ram)
        ));
    }
    size = size / 4096 * 4096;
    let random_file = dir.scratch("random.bin")?;
    write_random(&random_file, size, 1)?;
    let mut files = Vec::new();
    // The course's ten small texts came to 23,462 bytes in all.
    for i in 0..10 {
        let p = c.join(format!("small{i:02}.txt"));
        let len = if i < 9 { 2346 } else { 23_462 - 9 * 2346 };
        write_new(&p, &text(len, 100 + i))?;
        files.push(p);
    }
    let p = c.join("big.txt");
    write_new(&p, &text(12_022_885, 7))?;
    files.push(p);
    for (n, len) in [(4, 4096usize), (4, 4097)] {
        for i in 0..n {
            let p = c.join(format!("p{len}_{i}.bin"));
            let mut b = vec![0u8; len];
            fill_random(&mut b, len as u64 * 10 + i);
            write_new(&p, &b)?;
            files.push(p);
        }
    }
    for i in 0..3u64 {
        let p = c.join(format!("binary{i}.bin"));
        let mut b = vec![0u8; 800_000];
        fill_random(&mut b, 900 + i);
        write_new(&p, &b)?;
        files.push(p);
    }
    // On the device before anything is measured: the kernel wrote the 1 GiB back 30 s later,
    // in the middle of whichever experiment ran then, competing with its cold reads.
    crate::sys::syncfs(&dirf).map_err(|e| Error::io("cannot write data", dir.path(), &e))?;
    let classic_bytes = files
        .iter()
        .filter_map(|f| std::fs::metadata(f).ok())
        .map(|m| m.len())
        .sum();
    Ok(DataSet {
        random_file,
        random_size: size,
        classic_files: files,
        classic_bytes,
        capped,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_data_dir_removes_the_folders_it_made_above_it() {
        let top = tempfile::tempdir().unwrap();
        let d = top.path().join("p/q/d");
        let dd = DataDir::new(Some(d.clone()), top.path(), false).unwrap();
        assert!(d.is_dir());
        drop(dd);
        assert!(!top.path().join("p").exists(), "p/q left behind");
        // A folder that was there before stays.
        std::fs::create_dir(top.path().join("keep")).unwrap();
        drop(DataDir::new(Some(top.path().join("keep/new")), top.path(), false).unwrap());
        assert!(top.path().join("keep").is_dir() && !top.path().join("keep/new").exists());
    }

    #[test]
    fn a_data_dir_removes_only_what_it_made() {
        let parent = tempfile::tempdir().unwrap();
        let user = parent.path().join("mine");
        std::fs::create_dir(&user).unwrap();
        std::fs::write(user.join("random.bin"), b"precious").unwrap();
        std::fs::write(user.join("notes.txt"), b"keep me").unwrap();
        {
            let d = DataDir::new(Some(user.clone()), parent.path(), false).unwrap();
            let err = d.scratch("random.bin").unwrap_err();
            assert_eq!(err.exit_code(), 2, "{err}");
            std::fs::write(d.scratch("vm.bin").unwrap(), b"x").unwrap();
            d.scratch_dir("classic").unwrap();
        }
        assert_eq!(std::fs::read(user.join("random.bin")).unwrap(), b"precious");
        assert_eq!(std::fs::read(user.join("notes.txt")).unwrap(), b"keep me");
        assert!(!user.join("vm.bin").exists() && !user.join("classic").exists());
        {
            let d = DataDir::new(None, parent.path(), false).unwrap();
            std::fs::write(d.scratch("a").unwrap(), b"x").unwrap();
            assert!(d.path().starts_with(parent.path()));
        }
        let left: Vec<_> = std::fs::read_dir(parent.path()).unwrap().collect();
        assert_eq!(left.len(), 1, "the directory it made is gone");
    }
}
