//! What runs killed with -9 leave behind, found and removed: by the next run that makes
//! anything and by `iolab clean`.
//!
//! `kill -9` runs no clean-up. So what a run makes under a temporary name (partial outputs, the
//! transfer staging `/tmp/iolab-transfer-PID-N`, the suite's `.iolab-data-PID`, pollute's hot
//! set, ior's file, squeeze's and pollute's cgroups) is first written into that run's
//! [`ledger`], which the run holds locked while it lives. A leftover is a path a dead run's
//! ledger left open that is still there and provably that run's ([`scan`]); a name that only
//! looks like iolab's is never one, whoever made it, and a live run is never taken for dead,
//! whatever its binary is called. Nothing is followed through a link.

pub mod ledger;

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// What kind of thing a leftover is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// A folder (`iolab-transfer-PID-N`, `.iolab-data-PID`), removed with what it holds.
    Folder,
    /// A file being written or received when its run died (`.NAME.iolab-PID[-TAG].tmp`).
    File,
    /// A memory cgroup of `iolab squeeze` (`iolab-squeeze-PID-N`): its processes are killed,
    /// then it is removed.
    Cgroup,
}

/// One thing a dead run left.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leftover {
    /// Where it is.
    pub path: PathBuf,
    /// What it is.
    pub kind: Kind,
    /// The pid of the run that made it; that run is over (its ledger is no longer locked), and
    /// the pid may since name another process.
    pub pid: u32,
    /// Bytes it holds (files under a folder, not following links).
    pub bytes: u64,
}

/// What the dead runs' ledgers name that is still there and provably theirs.
#[derive(Debug)]
pub struct Scan {
    runs: Vec<ledger::DeadRun>,
    /// Per leftover, the run (index into `runs`) it is of.
    of: Vec<usize>,
    /// The leftovers, in the order their runs made them.
    pub found: Vec<Leftover>,
}

impl Scan {
    /// Keeps only the leftovers under one of `dirs` (all of them when `dirs` is empty).
    pub fn under(&self, dirs: &[PathBuf]) -> Vec<Leftover> {
        self.found
            .iter()
            .filter(|l| dirs.is_empty() || dirs.iter().any(|d| l.path.starts_with(d)))
            .cloned()
            .collect()
    }

    /// Forgets the ledgers of the runs nothing of which is left.
    pub fn finish(self) {
        for (i, run) in self.runs.into_iter().enumerate() {
            let left = self
                .found
                .iter()
                .zip(&self.of)
                .any(|(l, &r)| r == i && std::fs::symlink_metadata(&l.path).is_ok());
            if !left {
                run.forget();
            }
        }
    }
}

/// Reads every dead run's ledger and proves each path it left open: still there, a regular file
/// or a folder (a cgroup's folder for a group), not through a link, this user's (a cgroup
/// aside), and made while that run was recording (born after the run opened its ledger and, where
/// the file system records a birth time, not long after its last entry). What fails the proof is
/// not the run's (a user's file made later under that name) and is never touched.
pub fn scan() -> Scan {
    scan_runs(ledger::dead_runs())
}

fn scan_runs(runs: Vec<ledger::DeadRun>) -> Scan {
    let me = crate::sys::euid();
    let (mut found, mut of) = (Vec::new(), Vec::new());
    for (i, run) in runs.iter().enumerate() {
        for path in &run.open {
            if let Some(l) = proven(path, run, me)
                && !found.iter().any(|f: &Leftover| f.path == l.path)
            {
                found.push(l);
                of.push(i);
            }
        }
    }
    Scan { runs, of, found }
}

/// `path` as a leftover of `run`, if it provably is one.
fn proven(path: &Path, run: &ledger::DeadRun, me: u32) -> Option<Leftover> {
    use rustix::fs::{AtFlags, FileType, StatxFlags};
    let want = StatxFlags::TYPE
        | StatxFlags::UID
        | StatxFlags::BLOCKS
        | StatxFlags::BTIME
        | StatxFlags::CTIME;
    let st = rustix::fs::statx(rustix::fs::CWD, path, AtFlags::SYMLINK_NOFOLLOW, want).ok()?;
    let kind = match FileType::from_raw_mode(st.stx_mode.into()) {
        FileType::RegularFile => Kind::File,
        FileType::Directory => {
            let magic = rustix::fs::statfs(path).ok()?.f_type as i64;
            if magic == CGROUP_SUPER_MAGIC || magic == CGROUP2_SUPER_MAGIC {
                Kind::Cgroup
            } else {
                Kind::Folder
            }
        }
        _ => return None,
    };
    if kind != Kind::Cgroup && st.stx_uid != me {
        return None;
    }
    let ns = |t: rustix::fs::StatxTimestamp| {
        u128::try_from(t.tv_sec).unwrap_or(0) * 1_000_000_000 + u128::from(t.tv_nsec)
    };
    const SLACK: u128 = 1_000_000_000;
    if st.stx_mask & StatxFlags::BTIME.bits() != 0 {
        let born = ns(st.stx_btime);
        if born + SLACK < run.start_ns || born > run.last_ns + 10 * SLACK {
            return None;
        }
    } else if ns(st.stx_ctime) + SLACK < run.start_ns {
        return None;
    }
    let bytes = match kind {
        Kind::File => st.stx_blocks * 512,
        Kind::Folder => usage(path),
        Kind::Cgroup => 0,
    };
    Some(Leftover {
        path: path.to_path_buf(),
        kind,
        pid: run.pid,
        bytes,
    })
}

const CGROUP_SUPER_MAGIC: i64 = 0x0027_e0eb;
const CGROUP2_SUPER_MAGIC: i64 = 0x6367_7270;

/// Bytes of disk held by the files under `dir` (not following links).
fn usage(dir: &Path) -> u64 {
    let mut total = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            if let Ok(m) = std::fs::symlink_metadata(e.path()) {
                total += m.blocks() * 512;
                if m.is_dir() {
                    stack.push(e.path());
                }
            }
        }
    }
    total
}

/// Removes one leftover (a cgroup's processes are killed first).
pub fn remove(l: &Leftover) -> std::io::Result<()> {
    match l.kind {
        Kind::Folder => std::fs::remove_dir_all(&l.path),
        Kind::File => std::fs::remove_file(&l.path),
        Kind::Cgroup => {
            for p in std::fs::read_to_string(l.path.join("cgroup.procs"))
                .unwrap_or_default()
                .split_whitespace()
                .filter_map(|p| p.parse::<u32>().ok())
            {
                crate::sys::kill_now(p);
            }
            // A killed process leaves its group a moment later.
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(1);
            loop {
                match std::fs::remove_dir(&l.path) {
                    Ok(()) => return Ok(()),
                    Err(e) if std::time::Instant::now() >= deadline => return Err(e),
                    Err(_) => std::thread::sleep(std::time::Duration::from_millis(10)),
                }
            }
        }
    }
}

/// Removes every leftover in `found`; returns how many went.
pub fn remove_all(found: &[Leftover]) -> usize {
    found.iter().filter(|l| remove(l).is_ok()).count()
}

/// Removes every dead run's leftovers and forgets their ledgers: what a run does before it
/// makes anything of its own. Returns how many went.
pub fn sweep() -> usize {
    let s = scan();
    let n = remove_all(&s.found);
    s.finish();
    n
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn now_ns() -> u128 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    }

    /// A ledger as a run would leave it in `dir`: started at `start_ns`, with `lines`.
    fn ledger(dir: &Path, pid: u32, start_ns: u128, lines: &[(&str, &Path)]) -> PathBuf {
        let p = dir.join(format!("run-{pid}-{start_ns}.ledger"));
        let mut f = std::fs::File::create(&p).unwrap();
        writeln!(f, "iolab-ledger 1 {pid} {start_ns}").unwrap();
        for (op, path) in lines {
            let hex: String = path
                .as_os_str()
                .as_encoded_bytes()
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect();
            writeln!(f, "{op} {hex}").unwrap();
        }
        p
    }

    #[test]
    fn only_what_a_dead_run_provably_made_is_found_and_removed() {
        let state = tempfile::tempdir().unwrap();
        let work = tempfile::tempdir().unwrap();
        let d = work.path();
        // The user's files, made before any run: one under a name a run recorded.
        let before = d.join(".big.bin.iolab-7.tmp");
        std::fs::write(&before, b"the user's").unwrap();
        let look_alike = d.join(".iolab-data-8");
        std::fs::create_dir(&look_alike).unwrap();
        // A dead run that started after them, and what it made.
        let start = now_ns();
        let file = d.join("out.tmp");
        std::fs::write(&file, vec![1u8; 8192]).unwrap();
        let folder = d.join("staging");
        std::fs::create_dir(&folder).unwrap();
        std::fs::write(folder.join("f"), vec![1u8; 8192]).unwrap();
        let placed = d.join("placed.tmp");
        std::fs::write(&placed, b"kept").unwrap();
        let target = d.join("target");
        std::fs::write(&target, b"keep").unwrap();
        let link = d.join("link.tmp");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let dead = ledger(
            state.path(),
            99,
            start,
            &[
                ("+", &file),
                ("+", &folder),
                ("+", &placed),
                ("-", &placed),
                ("+", &link),
                ("+", &d.join("never-made")),
            ],
        );
        // A run whose ledger starts after the user's file under a name it recorded.
        let later = ledger(
            state.path(),
            98,
            now_ns() + 5_000_000_000,
            &[("+", &before)],
        );
        // A live run: its ledger is locked.
        let live_file = d.join("live.tmp");
        std::fs::write(&live_file, b"in progress").unwrap();
        let live = ledger(state.path(), 97, start, &[("+", &live_file)]);
        let held = std::fs::File::open(&live).unwrap();
        rustix::fs::flock(&held, rustix::fs::FlockOperation::LockExclusive).unwrap();

        let scan = scan_runs(ledger::dead_runs_in(state.path()));
        let mut got: Vec<(PathBuf, Kind)> = scan
            .found
            .iter()
            .map(|l| (l.path.clone(), l.kind))
            .collect();
        got.sort();
        assert_eq!(
            got,
            [(file.clone(), Kind::File), (folder.clone(), Kind::Folder)]
        );
        assert!(scan.found.iter().all(|l| l.pid == 99 && l.bytes >= 8192));
        assert_eq!(remove_all(&scan.found), 2);
        scan.finish();
        assert!(!file.exists() && !folder.exists());
        for kept in [&before, &look_alike, &placed, &target, &live_file] {
            assert!(kept.exists(), "{kept:?} was removed");
        }
        assert!(link.symlink_metadata().is_ok());
        // The dead run's ledger is forgotten once nothing it names is left; the ledger of the
        // run that proved nothing is too, and the live one stays.
        assert!(!dead.exists() && !later.exists());
        assert!(live.exists());
        drop(held);
    }
}
