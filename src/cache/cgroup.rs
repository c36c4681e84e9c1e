//! Memory cgroups: a fresh group with a memory limit, so that a file larger than the limit cannot
//! stay in the page cache the group may use (page cache is charged to the group that reads it,
//! in cgroup v2 and v1 alike). v2 is used where its hierarchy has the memory controller, else v1.
//! Groups are made under the hierarchy's root, or under a delegated parent the caller names, and
//! removed when dropped (and by the signal handler on Ctrl-C; see [`crate::sys::cleanup`]).

use crate::error::{Error, Result, describe_io};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

crate::named_enum! {
    /// Which cgroup interface holds the memory controller.
    pub enum Version {
        /// The unified hierarchy (`memory.max`, `memory.peak`, `memory.pressure`).
        V2 = "v2",
        /// The legacy memory hierarchy (`memory.limit_in_bytes`, `memory.max_usage_in_bytes`).
        V1 = "v1",
    }
}

/// One line of /proc/self/mountinfo, the parts that matter here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    /// Where it is mounted.
    pub point: PathBuf,
    /// File system type (`cgroup2`, `cgroup`, ...).
    pub fstype: String,
    /// Super-block options (a v1 hierarchy lists its controllers here).
    pub options: Vec<String>,
}

/// The mounts of a mountinfo text (lines that do not parse are skipped).
pub fn parse_mountinfo(text: &str) -> Vec<Mount> {
    text.lines()
        .filter_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            let point = left.split(' ').nth(4)?;
            let mut r = right.split(' ');
            let fstype = r.next()?.to_string();
            let _source = r.next()?;
            let options = r
                .next()
                .unwrap_or("")
                .split(',')
                .map(String::from)
                .collect();
            Some(Mount {
                point: PathBuf::from(unescape(point)),
                fstype,
                options,
            })
        })
        .collect()
}

/// mountinfo escapes space, tab, newline and backslash as three octal digits.
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 3 < b.len()
            && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
        {
            let v = (b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0');
            out.push(v);
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Where memory groups can be made: the hierarchy and the parent directory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Controller {
    /// v2 or v1.
    pub version: Version,
    /// The directory new groups go under.
    pub parent: PathBuf,
}

/// Chooses a memory hierarchy from the mounts: v2 when its `cgroup.controllers` lists memory,
/// else a v1 hierarchy mounted with the memory controller. `controllers` reads a v2 mount's
/// controller list (a parameter, so the choice can be tested on fixtures).
pub fn choose(
    mounts: &[Mount],
    controllers: impl Fn(&Path) -> Option<String>,
) -> std::result::Result<Controller, String> {
    let v2 = mounts.iter().find(|m| {
        m.fstype == "cgroup2"
            && controllers(&m.point).is_some_and(|c| c.split_whitespace().any(|x| x == "memory"))
    });
    if let Some(m) = v2 {
        return Ok(Controller {
            version: Version::V2,
            parent: m.point.clone(),
        });
    }
    let v1 = mounts
        .iter()
        .find(|m| m.fstype == "cgroup" && m.options.iter().any(|o| o == "memory"));
    if let Some(m) = v1 {
        return Ok(Controller {
            version: Version::V1,
            parent: m.point.clone(),
        });
    }
    let v2_without = mounts.iter().any(|m| m.fstype == "cgroup2");
    Err(if v2_without {
        "no memory controller: the cgroup v2 hierarchy does not offer `memory` and no v1 memory hierarchy is mounted".into()
    } else {
        "no memory controller: no cgroup hierarchy with `memory` is mounted".into()
    })
}

/// What this process's memory cgroup and its ancestors still let it use: the least of their
/// limits less their usage; `None` where no group limits it (or none can be read).
pub fn own_headroom() -> Option<u64> {
    let mounts = parse_mountinfo(&std::fs::read_to_string("/proc/self/mountinfo").ok()?);
    let ctrl = choose(&mounts, |p| {
        std::fs::read_to_string(p.join("cgroup.controllers")).ok()
    })
    .ok()?;
    let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    headroom_in(&ctrl, &own, |p| std::fs::read_to_string(p).ok())
}

/// [`own_headroom`] from `/proc/self/cgroup`'s text `own`, reading files with `read`.
fn headroom_in(
    ctrl: &Controller,
    own: &str,
    read: impl Fn(&Path) -> Option<String>,
) -> Option<u64> {
    let path = own.lines().find_map(|l| {
        let mut parts = l.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        let ours = match ctrl.version {
            Version::V2 => controllers.is_empty(),
            Version::V1 => controllers.split(',').any(|c| c == "memory"),
        };
        ours.then(|| path.trim_start_matches('/').to_string())
    })?;
    let (limit, usage) = match ctrl.version {
        Version::V2 => ("memory.max", "memory.current"),
        Version::V1 => ("memory.limit_in_bytes", "memory.usage_in_bytes"),
    };
    let number = |p: PathBuf| read(&p).and_then(|t| t.trim().parse::<u64>().ok());
    let mut dir = ctrl.parent.join(&path);
    let mut least: Option<u64> = None;
    // "max" (v2) does not parse, and v1's unlimited is near 2^63: neither limits.
    while dir.starts_with(&ctrl.parent) {
        if let (Some(l), Some(u)) = (number(dir.join(limit)), number(dir.join(usage)))
            && l < 1 << 62
        {
            let left = l.saturating_sub(u);
            least = Some(least.map_or(left, |x| x.min(left)));
        }
        if !dir.pop() {
            break;
        }
    }
    least
}

/// The memory controller of this machine, with groups to be made under `parent` (a delegated
/// subtree) or the hierarchy's root. Without root and without a parent of its own, says why.
pub fn controller(parent: Option<&Path>) -> Result<Controller> {
    controller_as(parent, super::have_root())
}

/// [`controller`] as a process with or without root.
fn controller_as(parent: Option<&Path>, root: bool) -> Result<Controller> {
    let unsupported = |why: String| Error::unsupported("cannot make a memory cgroup", why);
    if let Some(p) = parent {
        // A cgroup file system, not a folder that merely holds files of those names: a fake
        // parent got files written into it and the method ran with no memory limit.
        const CGROUP2_MAGIC: i64 = 0x6367_7270;
        const CGROUP1_MAGIC: i64 = 0x0027_e0eb;
        let magic = std::fs::File::open(p)
            .and_then(|d| crate::sys::fs_magic(&d))
            .map_err(|e| Error::io("cannot open the cgroup parent", p, &e))?;
        if magic != CGROUP2_MAGIC && magic != CGROUP1_MAGIC {
            return Err(Error::usage(
                "not a memory cgroup",
                "it is not on a cgroup file system (cgroup2 or cgroup)",
            )
            .at(p));
        }
        // A delegated subtree: its version is the hierarchy it lives in.
        let version = if p.join("cgroup.controllers").exists() {
            Version::V2
        } else if p.join("memory.limit_in_bytes").exists() {
            Version::V1
        } else {
            return Err(Error::usage(
                "not a memory cgroup",
                "it has neither cgroup.controllers (v2) nor memory.limit_in_bytes (v1)",
            )
            .at(p));
        };
        let c = Controller {
            version,
            parent: p.to_path_buf(),
        };
        if version == Version::V2 {
            hand_down_memory(&c.parent).map_err(unsupported)?;
        }
        return Ok(c);
    }
    if !root {
        return Err(unsupported(
            "needs root to make a cgroup under the hierarchy's root (or give --cgroup-parent, a subtree delegated to you)".into(),
        ));
    }
    let text = std::fs::read_to_string("/proc/self/mountinfo").map_err(|e| {
        unsupported(format!(
            "cannot read /proc/self/mountinfo: {}",
            describe_io(&e)
        ))
    })?;
    let mounts = parse_mountinfo(&text);
    let c = choose(&mounts, |p| {
        std::fs::read_to_string(p.join("cgroup.controllers")).ok()
    })
    .map_err(unsupported)?;
    if c.version == Version::V2 {
        hand_down_memory(&c.parent).map_err(unsupported)?;
    }
    Ok(c)
}

/// On v2, children get the memory controller only when their parent hands it down: enables it in
/// the parent's `cgroup.subtree_control` unless it is there already.
fn hand_down_memory(parent: &Path) -> std::result::Result<(), String> {
    let sub = parent.join("cgroup.subtree_control");
    let on =
        std::fs::read_to_string(&sub).is_ok_and(|t| t.split_whitespace().any(|x| x == "memory"));
    if on {
        return Ok(());
    }
    std::fs::write(&sub, "+memory").map_err(|e| {
        format!(
            "{} does not hand the memory controller down and it cannot be enabled there: {}",
            crate::shown::path(&sub),
            describe_io(&e)
        )
    })
}

/// The files of one memory group, as its members read them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct GroupFiles {
    /// The group's directory.
    pub path: PathBuf,
    /// Its interface.
    pub version: Version,
}

impl GroupFiles {
    fn read_u64(&self, name: &str) -> Option<u64> {
        let t = std::fs::read_to_string(self.path.join(name)).ok()?;
        let t = t.trim();
        if t == "max" {
            return Some(u64::MAX);
        }
        t.parse().ok()
    }

    /// Memory charged to the group now (page cache included).
    pub fn usage(&self) -> Option<u64> {
        self.read_u64(match self.version {
            Version::V2 => "memory.current",
            Version::V1 => "memory.usage_in_bytes",
        })
    }

    /// The most ever charged to the group (v2 `memory.peak` from Linux 5.19 on).
    pub fn peak(&self) -> Option<u64> {
        self.read_u64(match self.version {
            Version::V2 => "memory.peak",
            Version::V1 => "memory.max_usage_in_bytes",
        })
    }

    /// The limit the kernel holds (rounded down to pages).
    pub fn limit(&self) -> Option<u64> {
        self.read_u64(match self.version {
            Version::V2 => "memory.max",
            Version::V1 => "memory.limit_in_bytes",
        })
    }

    /// Microseconds some task of the group stalled on memory, in all (v2 only: v1 groups have no
    /// pressure file; the caller falls back to the system's).
    pub fn pressure_us(&self) -> Option<u64> {
        match self.version {
            Version::V2 => std::fs::read_to_string(self.path.join("memory.pressure"))
                .ok()
                .and_then(|t| crate::measure::interference::parse_psi_total(&t)),
            Version::V1 => None,
        }
    }

    /// A counter of the group's `memory.stat` (`pgsteal`, `workingset_refault_file`, ...), for
    /// the group alone (v1 lists its hierarchy's totals as `total_*`, not read here).
    pub fn stat(&self, key: &str) -> Option<u64> {
        let text = std::fs::read_to_string(self.path.join("memory.stat")).ok()?;
        stat_value(&text, key)
    }

    /// The process ids in the group.
    pub fn pids(&self) -> Vec<u32> {
        std::fs::read_to_string(self.path.join("cgroup.procs"))
            .map(|t| t.lines().filter_map(|l| l.trim().parse().ok()).collect())
            .unwrap_or_default()
    }

    /// Moves process `pid` (all its threads) into the group.
    pub fn add(&self, pid: u32) -> Result<()> {
        let procs = self.path.join("cgroup.procs");
        std::fs::write(&procs, pid.to_string())
            .map_err(|e| Error::io("cannot join the memory cgroup", &procs, &e))
    }
}

/// The value of `key` in a `memory.stat` text.
pub fn stat_value(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(' ')?;
        (k == key).then(|| v.trim().parse().ok())?
    })
}

/// A memory group this process made; removed when dropped.
#[derive(Debug)]
pub struct MemoryGroup {
    files: GroupFiles,
    /// On the list of partial outputs and in this run's ledger until removed.
    partial: Option<crate::output::Partial>,
    /// Its reclaim stalls are iolab's own, not other work's (interference).
    _own: crate::measure::interference::OwnMemoryLimit,
}

static SERIAL: AtomicU32 = AtomicU32::new(0);

impl MemoryGroup {
    /// Makes a fresh group under `c` limited to `limit` bytes (no swap for it where the kernel
    /// lets that be set), registered for removal on a signal.
    pub fn create(c: &Controller, limit: u64) -> Result<MemoryGroup> {
        let name = format!(
            "iolab-squeeze-{}-{}",
            std::process::id(),
            SERIAL.fetch_add(1, Ordering::Relaxed)
        );
        let path = c.parent.join(name);
        let partial = crate::output::track(&path);
        std::fs::create_dir(&path).map_err(|e| {
            let err = Error::io("cannot make a memory cgroup", &path, &e);
            if e.kind() == std::io::ErrorKind::PermissionDenied {
                Error::unsupported("cannot make a memory cgroup", err.cause.clone()).at(&path)
            } else {
                err
            }
        })?;
        let group = MemoryGroup {
            _own: crate::measure::interference::OwnMemoryLimit::hold(),
            partial: Some(partial),
            files: GroupFiles {
                path,
                version: c.version,
            },
        };
        let (limit_file, swap_file) = match c.version {
            Version::V2 => ("memory.max", "memory.swap.max"),
            Version::V1 => ("memory.limit_in_bytes", "memory.memsw.limit_in_bytes"),
        };
        let lf = group.files.path.join(limit_file);
        std::fs::write(&lf, limit.to_string())
            .map_err(|e| Error::io("cannot set the memory limit", &lf, &e))?;
        // Page cache cannot be swapped, but a method's own memory could: none for the group.
        // (v1's memsw limit is memory + swap; it exists only with swap accounting.)
        let swap = match c.version {
            Version::V2 => "0".to_string(),
            Version::V1 => limit.to_string(),
        };
        let _ = std::fs::write(group.files.path.join(swap_file), swap);
        match group.files.limit() {
            Some(l) if l <= limit && l + (1 << 20) >= limit => Ok(group),
            other => Err(Error::failed(
                "cannot set the memory limit",
                format!("asked for {limit} bytes, the group holds {other:?}"),
            )
            .at(&group.files.path)),
        }
    }

    /// Its files.
    pub fn files(&self) -> &GroupFiles {
        &self.files
    }

    /// Removes the group (its processes must have ended): waits up to a second for the kernel to
    /// let go of exiting members.
    pub fn remove(mut self) -> Result<()> {
        self.remove_dir()
    }

    fn remove_dir(&mut self) -> Result<()> {
        let deadline = Instant::now() + Duration::from_secs(1);
        loop {
            match std::fs::remove_dir(&self.files.path) {
                Ok(()) => break,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => break,
                Err(e) if Instant::now() < deadline && e.raw_os_error() == Some(libc::EBUSY) => {
                    std::thread::sleep(Duration::from_millis(10));
                }
                Err(e) => {
                    return Err(Error::io(
                        "cannot remove the memory cgroup",
                        &self.files.path,
                        &e,
                    ));
                }
            }
        }
        self.partial = None;
        Ok(())
    }
}

impl Drop for MemoryGroup {
    fn drop(&mut self) {
        if self.partial.is_some() || self.files.path.exists() {
            let _ = self.remove_dir();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headroom_is_the_least_any_ancestor_leaves() {
        let files = |p: &Path| -> Option<String> {
            Some(
                match p.to_str()? {
                    "/cg/memory.max" => "max",
                    "/cg/memory.current" => "999",
                    "/cg/a/memory.max" => "1000",
                    "/cg/a/memory.current" => "400",
                    "/cg/a/b/memory.max" => "max",
                    "/cg/a/b/memory.current" => "300",
                    "/v1/a/memory.limit_in_bytes" => "9223372036854771712",
                    "/v1/a/memory.usage_in_bytes" => "5",
                    _ => return None,
                }
                .to_string(),
            )
        };
        let v2 = Controller {
            version: Version::V2,
            parent: "/cg".into(),
        };
        assert_eq!(headroom_in(&v2, "4:memory:/x\n0::/a/b\n", files), Some(600));
        assert_eq!(headroom_in(&v2, "0::/\n", files), None);
        let v1 = Controller {
            version: Version::V1,
            parent: "/v1".into(),
        };
        assert_eq!(headroom_in(&v1, "4:memory:/a\n0::/\n", files), None);
    }

    const V1_AND_V2: &str = "\
25 30 0:23 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw
30 25 0:26 / /sys/fs/cgroup ro,nosuid,nodev,noexec shared:9 - tmpfs tmpfs ro,mode=755
31 30 0:27 / /sys/fs/cgroup/unified rw,nosuid,nodev,noexec,relatime shared:10 - cgroup2 cgroup2 rw,nsdelegate
35 30 0:31 / /sys/fs/cgroup/memory rw,nosuid,nodev,noexec,relatime shared:14 - cgroup cgroup rw,memory
36 30 0:32 / /sys/fs/cgroup/cpu\\040set rw,relatime shared:15 - cgroup cgroup rw,cpu
";

    #[test]
    fn parses_mountinfo_with_escapes() {
        let m = parse_mountinfo(V1_AND_V2);
        assert_eq!(m.len(), 5);
        assert_eq!(m[2].fstype, "cgroup2");
        assert_eq!(m[3].options, vec!["rw", "memory"]);
        assert_eq!(m[4].point, PathBuf::from("/sys/fs/cgroup/cpu set"));
    }

    #[test]
    fn prefers_v2_with_memory_else_v1_else_says_why() {
        let m = parse_mountinfo(V1_AND_V2);
        // v2 offers only hugetlb (as on this machine kind): v1.
        let c = choose(&m, |_| Some("hugetlb\n".into())).unwrap();
        assert_eq!(c.version, Version::V1);
        assert_eq!(c.parent, PathBuf::from("/sys/fs/cgroup/memory"));
        // v2 offers memory: v2.
        let c = choose(&m, |_| Some("cpuset cpu io memory pids\n".into())).unwrap();
        assert_eq!(c.version, Version::V2);
        assert_eq!(c.parent, PathBuf::from("/sys/fs/cgroup/unified"));
        // Neither.
        let only_v2: Vec<Mount> = m.iter().filter(|x| x.fstype != "cgroup").cloned().collect();
        let why = choose(&only_v2, |_| Some("cpu\n".into())).unwrap_err();
        assert!(why.contains("does not offer `memory`"), "{why}");
        assert!(
            choose(&[], |_| None)
                .unwrap_err()
                .contains("no cgroup hierarchy")
        );
    }

    #[test]
    fn without_root_it_says_why() {
        // The not-root branch, forced (as a user without root sees it).
        let e = controller_as(None, false).unwrap_err();
        assert_eq!(e.kind, crate::error::ErrorKind::Unsupported);
        assert!(e.to_string().contains("needs root"), "{e}");
    }

    #[test]
    fn a_group_is_made_limited_joined_and_removed() {
        let c = match controller(None) {
            Ok(c) => c,
            Err(e) => {
                return crate::testutil::skip(crate::testutil::Lack::Setup, &e.to_string());
            }
        };
        let g = MemoryGroup::create(&c, 64 << 20).unwrap();
        let files = g.files().clone();
        assert!(files.path.is_dir());
        let l = files.limit().unwrap();
        assert!(l <= 64 << 20 && l > 63 << 20, "limit {l}");
        assert_eq!(files.usage(), Some(0), "a fresh group holds nothing");
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        files.add(child.id()).unwrap();
        assert_eq!(files.pids(), vec![child.id()]);
        child.kill().unwrap();
        child.wait().unwrap();
        g.remove().unwrap();
        assert!(!files.path.exists(), "removed");
        // Dropping removes it too.
        let g = MemoryGroup::create(&c, 32 << 20).unwrap();
        let p = g.files().path.clone();
        drop(g);
        assert!(!p.exists());
    }
}
