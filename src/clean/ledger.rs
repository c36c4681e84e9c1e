//! Each run's ledger of what it is making: the proof `clean` needs before it removes anything.
//!
//! A run that creates something it would remove on failure (a partial output, a staging or data
//! folder, a memory cgroup, pollute's hot set, ior's file) first writes its path to its own
//! ledger, a file in this user's state folder that the run holds an exclusive `flock` on for as
//! long as it lives, and writes it off once the thing is placed or removed. The kernel drops the
//! lock when the process ends, however it ends (`kill -9` too) and whatever its binary is called,
//! so a ledger whose lock can be taken is a dead run's, and the paths it did not write off are
//! that run's leftovers. A name that only looks like one of iolab's is in no ledger and is never
//! touched.
//!
//! The state folder is `$IOLAB_STATE_DIR/runs`, else `$XDG_STATE_HOME/iolab/runs`, else
//! `~/.local/state/iolab/runs` (when the home folder is the user's), else
//! `/tmp/iolab-state-UID/runs`; it must be this user's and writable by no one else, or there is
//! no ledger (and nothing a killed run leaves can be proven iolab's: it stays).

use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

const HEADER: &str = "iolab-ledger 1";

/// This user's folder of ledgers, created if missing, or why there is none.
pub fn state_dir() -> Result<PathBuf, String> {
    let me = crate::sys::euid();
    let var = |k: &str| std::env::var_os(k).filter(|v| Path::new(v).is_absolute());
    let dir = if let Some(d) = var("IOLAB_STATE_DIR") {
        PathBuf::from(d).join("runs")
    } else if let Some(d) = var("XDG_STATE_HOME") {
        PathBuf::from(d).join("iolab/runs")
    } else if let Some(h) =
        var("HOME").filter(|h| std::fs::metadata(h).is_ok_and(|m| m.uid() == me))
    {
        PathBuf::from(h).join(".local/state/iolab/runs")
    } else {
        let top = std::env::temp_dir().join(format!("iolab-state-{me}"));
        let _ = std::fs::DirBuilder::new().mode(0o700).create(&top);
        private(&top, me)?;
        top.join("runs")
    };
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir)
        .map_err(|e| format!("cannot make {}: {e}", crate::shown::path(&dir)))?;
    private(&dir, me)?;
    Ok(dir)
}

/// Refuses a folder that is a link, not `me`'s, or writable by others.
fn private(dir: &Path, me: u32) -> Result<(), String> {
    let m = std::fs::symlink_metadata(dir)
        .map_err(|e| format!("cannot use {}: {e}", crate::shown::path(dir)))?;
    if !m.is_dir() || m.uid() != me || m.mode() & 0o022 != 0 {
        return Err(format!(
            "{} is not a folder of yours that only you may write into",
            crate::shown::path(dir)
        ));
    }
    Ok(())
}

/// This run's ledger, open and locked while it has entries.
struct Ledger {
    file: File,
    path: PathBuf,
    open: usize,
}

/// This run's ledger: `None` before the first entry and after the last is written off;
/// `Err` once the state folder proved unusable (not tried again).
static LEDGER: Mutex<Option<Result<Ledger, ()>>> = Mutex::new(None);

/// Whether this process has swept the dead runs' leftovers yet.
static SWEPT: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

fn hex(path: &Path) -> String {
    path.as_os_str()
        .as_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn unhex(s: &str) -> Option<PathBuf> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    let bytes: Option<Vec<u8>> = (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect();
    Some(PathBuf::from(std::ffi::OsString::from_vec(bytes?)))
}

/// `path` as the ledger keeps it: absolute, and through a folder's handle
/// (`/proc/self/fd/N/name`) the folder's own path.
fn real(path: &Path) -> PathBuf {
    if let Ok(rest) = path.strip_prefix("/proc/self/fd") {
        let mut parts = rest.components();
        if let Some(fd) = parts.next()
            && let Ok(dir) = std::fs::read_link(Path::new("/proc/self/fd").join(fd))
        {
            return dir.join(parts.as_path());
        }
    }
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

fn now_ns() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

/// Opens this run's ledger: the dead runs' leftovers go first (once per process), then a new
/// file named for this process and the moment, locked before its first line.
fn open() -> Result<Ledger, String> {
    if !SWEPT.swap(true, std::sync::atomic::Ordering::SeqCst) {
        super::sweep();
    }
    let dir = state_dir()?;
    let start = now_ns();
    let name = format!("run-{}-{start}.ledger", std::process::id());
    // Made under another name and renamed once locked and headed: a cleaner never sees a
    // ledger it could lock before its run does.
    let new = dir.join(format!(".new-{name}"));
    let path = dir.join(name);
    let say = |what: &str, e: &dyn std::fmt::Display| {
        format!("cannot {what} {}: {e}", crate::shown::path(&path))
    };
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_CLOEXEC | libc::O_NOFOLLOW)
        .open(&new)
        .map_err(|e| say("make", &e))?;
    let made = rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive)
        .map_err(|e| say("lock", &e))
        .and_then(|()| {
            file.write_all(format!("{HEADER} {} {start}\n", std::process::id()).as_bytes())
                .map_err(|e| say("write", &e))
        })
        .and_then(|()| std::fs::rename(&new, &path).map_err(|e| say("name", &e)));
    if let Err(e) = made {
        let _ = std::fs::remove_file(&new);
        return Err(e);
    }
    Ok(Ledger {
        file,
        path,
        open: 0,
    })
}

/// Writes `path` into this run's ledger before it is made; false when there is no ledger (the
/// state folder is unusable), so a `kill -9` would leave it for the user.
pub fn record(path: &Path) -> bool {
    let Ok(mut slot) = LEDGER.lock() else {
        return false;
    };
    if slot.is_none() {
        *slot = Some(open().map_err(|_| ()));
    }
    let Some(Ok(ledger)) = slot.as_mut() else {
        return false;
    };
    let line = format!("+ {}\n", hex(&real(path)));
    if ledger.file.write_all(line.as_bytes()).is_err() {
        return false;
    }
    ledger.open += 1;
    true
}

/// Writes `path` off (it was placed, kept or removed); the last one written off removes the
/// ledger itself.
pub fn write_off(path: &Path) {
    let Ok(mut slot) = LEDGER.lock() else {
        return;
    };
    let Some(Ok(ledger)) = slot.as_mut() else {
        return;
    };
    let _ = ledger
        .file
        .write_all(format!("- {}\n", hex(&real(path))).as_bytes());
    ledger.open = ledger.open.saturating_sub(1);
    if ledger.open == 0 {
        let _ = std::fs::remove_file(&ledger.path);
        *slot = None;
    }
}

/// A dead run's ledger, locked by this process while it is read and its leftovers removed.
#[derive(Debug)]
pub struct DeadRun {
    path: PathBuf,
    _lock: File,
    ino: u64,
    /// The run's pid.
    pub pid: u32,
    /// When the run opened its ledger, ns since the epoch.
    pub start_ns: u128,
    /// When it last wrote to it, ns since the epoch.
    pub last_ns: u128,
    /// What it recorded and did not write off, in order.
    pub open: Vec<PathBuf>,
}

impl DeadRun {
    /// Removes the ledger (once nothing it names is left).
    pub fn forget(self) {
        if std::fs::symlink_metadata(&self.path).is_ok_and(|m| m.ino() == self.ino) {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Every dead run's ledger in this user's state folder (none without one).
pub fn dead_runs() -> Vec<DeadRun> {
    state_dir().map_or_else(|_| Vec::new(), |d| dead_runs_in(&d))
}

/// Every dead run's ledger in `dir`.
pub fn dead_runs_in(dir: &Path) -> Vec<DeadRun> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let me = crate::sys::euid();
    let mut runs: Vec<DeadRun> = entries
        .flatten()
        .filter(|e| {
            let n = e.file_name();
            let n = n.as_bytes();
            n.starts_with(b"run-") && n.ends_with(b".ledger")
        })
        .filter_map(|e| read_dead(&e.path(), me))
        .collect();
    runs.sort_by_key(|r| r.start_ns);
    runs
}

/// The ledger at `path` if its run is dead (its lock can be taken) and it is `me`'s own file.
fn read_dead(path: &Path, me: u32) -> Option<DeadRun> {
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_CLOEXEC | libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .ok()?;
    let meta = file.metadata().ok()?;
    if !meta.is_file() || meta.uid() != me {
        return None;
    }
    // Held by a live run (or by another cleaner right now): not ours to read.
    rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive).ok()?;
    let mut text = String::new();
    Read::by_ref(&mut file)
        .take(64 << 20)
        .read_to_string(&mut text)
        .ok()?;
    let mut lines = text.lines();
    let mut head = lines.next()?.strip_prefix(HEADER)?.split_whitespace();
    let pid = head.next()?.parse().ok()?;
    let start_ns = head.next()?.parse().ok()?;
    let mut open: Vec<PathBuf> = Vec::new();
    for l in lines {
        match l.split_once(' ') {
            Some(("+", h)) => open.extend(unhex(h)),
            Some(("-", h)) => {
                if let Some(p) = unhex(h)
                    && let Some(i) = open.iter().rposition(|q| *q == p)
                {
                    open.remove(i);
                }
            }
            _ => {}
        }
    }
    let last_ns = meta.mtime() as u128 * 1_000_000_000 + meta.mtime_nsec() as u128;
    Some(DeadRun {
        path: path.to_path_buf(),
        _lock: file,
        ino: meta.ino(),
        pid,
        start_ns,
        last_ns,
        open,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_path_survives_the_ledgers_encoding() {
        let p = PathBuf::from(std::ffi::OsString::from_vec(b"/t/a b\n\xff\x1b".to_vec()));
        assert_eq!(unhex(&hex(&p)), Some(p));
        assert_eq!(unhex("zz"), None);
        assert_eq!(unhex("abc"), None);
    }
}
