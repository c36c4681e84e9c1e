//! What runs killed with -9 leave behind, found and removed: by the next run of the same kind
//! and by `iolab clean`.
//!
//! `kill -9` runs no clean-up, so everything iolab writes under a temporary name carries the pid
//! of its run: `/tmp/iolab-transfer-PID-N`, the suite's `.iolab-data-PID`, the hidden
//! `.NAME.iolab-PID[-TAG].tmp` of a file being written or received on a file system without
//! unnamed files (O_TMPFILE), and squeeze's cgroups `iolab-squeeze-PID-N`. A leftover is one
//! whose pid is no running iolab and that belongs to this user; nothing else is ever touched, and
//! never through a link.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// What kind of thing a leftover is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
    /// The pid of the run that made it (no running iolab now).
    pub pid: u32,
    /// Bytes it holds (files under a folder, not following links).
    pub bytes: u64,
}

/// Whether process `pid` is a running iolab (a pid reused by another program is not, nor a
/// killed one its parent has not reaped yet: a zombie).
pub fn iolab_alive(pid: u32) -> bool {
    if pid == std::process::id() {
        return true;
    }
    // `/proc/PID/stat`: "pid (comm) state ..."; comm may hold spaces and parentheses.
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
        return false;
    };
    let state = stat[close + 1..].split_whitespace().next().unwrap_or("");
    &stat[open + 1..close] == "iolab" && state != "Z" && state != "X"
}

/// The pid at the start of `rest` (digits up to a `-` or the end).
fn leading_pid(rest: &str) -> Option<u32> {
    rest.split('-').next()?.parse().ok()
}

/// The pid in a temporary file name `.NAME.iolab-PID[-TAG].tmp`, if it is one.
fn temp_file_pid(name: &str) -> Option<u32> {
    let stem = name.strip_prefix('.')?.strip_suffix(".tmp")?;
    let at = stem.rfind(".iolab-")?;
    leading_pid(&stem[at + ".iolab-".len()..])
}

/// Folders in `dir` named `PREFIX<pid>` or `PREFIX<pid>-...` whose run is dead.
pub fn stale_folders(dir: &Path, prefix: &str) -> Vec<Leftover> {
    scan(dir, Kind::Folder, |name| {
        name.strip_prefix(prefix).and_then(leading_pid)
    })
}

/// Temporary files `.NAME.iolab-PID[-TAG].tmp` in `dir` whose run is dead.
pub fn stale_files(dir: &Path) -> Vec<Leftover> {
    scan(dir, Kind::File, temp_file_pid)
}

/// squeeze's cgroups under `parent` whose run is dead.
pub fn stale_groups(parent: &Path) -> Vec<Leftover> {
    scan(parent, Kind::Cgroup, |name| {
        name.strip_prefix("iolab-squeeze-").and_then(leading_pid)
    })
}

fn scan(dir: &Path, kind: Kind, pid_of: impl Fn(&str) -> Option<u32>) -> Vec<Leftover> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let me = crate::sys::euid();
    let mut found = Vec::new();
    for e in entries.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(&pid_of) else {
            continue;
        };
        if iolab_alive(pid) {
            continue;
        }
        // Never through a link, never another user's.
        let Ok(m) = std::fs::symlink_metadata(e.path()) else {
            continue;
        };
        let right_type = match kind {
            Kind::File => m.file_type().is_file(),
            Kind::Folder | Kind::Cgroup => m.is_dir(),
        };
        if !right_type || (kind != Kind::Cgroup && m.uid() != me) {
            continue;
        }
        let bytes = match kind {
            Kind::File => m.blocks() * 512,
            Kind::Folder => usage(&e.path()),
            Kind::Cgroup => 0,
        };
        found.push(Leftover {
            path: e.path(),
            kind,
            pid,
            bytes,
        });
    }
    found.sort_by(|a, b| a.path.cmp(&b.path));
    found
}

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

/// Everything dead runs left where iolab puts things: the system's temporary directory, each of
/// `dirs` (where `suite` put its data beside `--out`, or where files were written or received)
/// and, when `cgroup_parent` is given, squeeze's groups under it.
pub fn find(dirs: &[PathBuf], cgroup_parent: Option<&Path>) -> Vec<Leftover> {
    let mut found = stale_folders(&std::env::temp_dir(), "iolab-transfer-");
    for d in dirs {
        found.extend(stale_folders(d, ".iolab-data-"));
        found.extend(stale_files(d));
    }
    if let Some(p) = cgroup_parent {
        found.extend(stale_groups(p));
    }
    found.dedup_by(|a, b| a.path == b.path);
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_killed_iolab_awaiting_its_reaping_is_dead() {
        assert!(iolab_alive(std::process::id()));
        // A zombie named iolab: `sleep` run under that name, killed and not yet reaped.
        let dir = tempfile::tempdir().unwrap();
        let exe = dir.path().join("iolab");
        std::os::unix::fs::symlink("/bin/sleep", &exe).unwrap();
        let mut child = std::process::Command::new(&exe).arg("30").spawn().unwrap();
        let pid = child.id();
        std::thread::sleep(std::time::Duration::from_millis(100));
        assert!(iolab_alive(pid), "a running iolab");
        child.kill().unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while iolab_alive(pid) && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(!iolab_alive(pid), "killed, not reaped: dead");
        assert!(
            std::fs::metadata(format!("/proc/{pid}")).is_ok(),
            "still a zombie"
        );
        child.wait().unwrap();
    }

    #[test]
    fn temporary_names_are_read_back_to_their_pid() {
        assert_eq!(temp_file_pid(".a.txt.iolab-123.tmp"), Some(123));
        assert_eq!(temp_file_pid(".a.iolab-7.iolab-123-4.tmp"), Some(123));
        assert_eq!(temp_file_pid("a.iolab-123.tmp"), None, "not hidden");
        assert_eq!(temp_file_pid(".a.iolab-x.tmp"), None);
        assert_eq!(temp_file_pid(".a.iolab-12.txt"), None);
        // The name the writers use reads back to this process.
        let t = crate::output::temp_path(Path::new("/x/report.json"), "3").unwrap();
        let name = t.file_name().unwrap().to_str().unwrap();
        assert_eq!(temp_file_pid(name), Some(std::process::id()));
    }

    #[test]
    fn only_a_dead_runs_own_leftovers_are_found_and_removed() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        // pid_max is at most 4194304: these pids never run.
        let dead_file = d.join(".big.bin.iolab-99999997-0.tmp");
        let live_file = d.join(format!(".big.bin.iolab-{}.tmp", std::process::id()));
        let user_file = d.join(".notes.iolab-99999997.txt");
        for f in [&dead_file, &live_file, &user_file] {
            std::fs::write(f, vec![1u8; 8192]).unwrap();
        }
        let dead_dir = d.join(".iolab-data-99999999");
        std::fs::create_dir(&dead_dir).unwrap();
        std::fs::write(dead_dir.join("f"), vec![1u8; 8192]).unwrap();
        // A link with a leftover's name is never followed nor removed.
        let target = d.join("target");
        std::fs::write(&target, b"keep").unwrap();
        let link = d.join(".x.iolab-99999996.tmp");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let found = find(&[d.to_path_buf()], None);
        let mine: Vec<_> = found.iter().filter(|l| l.path.starts_with(d)).collect();
        assert_eq!(mine.len(), 2, "{found:?}");
        assert!(mine.iter().all(|l| l.bytes >= 8192), "{mine:?}");
        assert!(
            mine.iter()
                .any(|l| l.path == dead_file && l.kind == Kind::File)
        );
        assert!(
            mine.iter()
                .any(|l| l.path == dead_dir && l.kind == Kind::Folder && l.pid == 99999999)
        );
        let mine: Vec<Leftover> = mine.into_iter().cloned().collect();
        assert_eq!(remove_all(&mine), 2);
        assert!(!dead_file.exists() && !dead_dir.exists());
        assert!(live_file.exists() && user_file.exists() && target.exists());
        assert!(link.symlink_metadata().is_ok());
    }
}
