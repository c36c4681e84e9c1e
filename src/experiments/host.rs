//! Host facts recorded with every result: kernel, CPU, memory, the file's filesystem and device,
//! iolab's version and the command line.

use serde::{Deserialize, Serialize};
use std::path::Path;

/// Facts about the machine, recorded with every result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Host {
    /// `uname -sr`.
    pub kernel: String,
    /// CPU model from /proc/cpuinfo.
    pub cpu_model: String,
    /// Cores available to this process.
    pub cores: usize,
    /// MemTotal in bytes.
    pub memory_bytes: u64,
    /// Filesystem type and device of the measured file, from /proc/self/mountinfo.
    pub filesystem: Option<String>,
    /// The device the file's filesystem is on.
    pub device: Option<String>,
    /// This iolab's version.
    pub iolab_version: String,
    /// The exact command line.
    pub command_line: String,
}

/// The host facts, with the filesystem and device of `path` when given.
pub fn host_facts(path: Option<&Path>, command_line: &str) -> Host {
    let cpu_model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines().find_map(|l| {
                l.strip_prefix("model name")?
                    .split_once(':')
                    .map(|(_, v)| v.trim().to_string())
            })
        })
        .unwrap_or_else(|| "unknown".into());
    let (filesystem, device) = path
        .and_then(mount_of)
        .map(|(fs, dev)| (Some(fs), Some(dev)))
        .unwrap_or((None, None));
    Host {
        kernel: crate::sys::kernel_release(),
        cpu_model,
        cores: crate::sys::cpus(),
        memory_bytes: crate::cache::meminfo::read().mem_total,
        filesystem,
        device,
        iolab_version: env!("CARGO_PKG_VERSION").to_string(),
        command_line: command_line.to_string(),
    }
}

/// `(fstype, source)` of the mount holding `path`.
fn mount_of(path: &Path) -> Option<(String, String)> {
    let abs = std::fs::canonicalize(path)
        .or_else(|_| {
            std::fs::canonicalize(
                path.parent()
                    .filter(|p| !p.as_os_str().is_empty())
                    .unwrap_or(Path::new(".")),
            )
        })
        .ok()?;
    let text = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    mount_for(&text, &abs.to_string_lossy())
}

/// Picks the longest mount point that contains `abs` from mountinfo text.
pub fn mount_for(mountinfo: &str, abs: &str) -> Option<(String, String)> {
    let mut best: Option<(usize, String, String)> = None;
    for line in mountinfo.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let Some(dash) = fields.iter().position(|f| *f == "-") else {
            continue;
        };
        let (Some(mp), Some(fstype), Some(source)) =
            (fields.get(4), fields.get(dash + 1), fields.get(dash + 2))
        else {
            continue;
        };
        let inside = *mp == "/" || abs == *mp || abs.starts_with(&format!("{mp}/"));
        if inside && best.as_ref().is_none_or(|b| mp.len() >= b.0) {
            best = Some((mp.len(), fstype.to_string(), source.to_string()));
        }
    }
    best.map(|(_, f, s)| (f, s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_innermost_mount() {
        let mi = "22 1 254:0 / / rw,relatime - ext4 /dev/vda rw\n\
                  30 22 0:26 / /tmp rw - tmpfs tmpfs rw\n\
                  31 22 0:27 / /tmpx rw - xfs /dev/vdb rw\n";
        assert_eq!(
            mount_for(mi, "/tmp/a/b"),
            Some(("tmpfs".into(), "tmpfs".into()))
        );
        assert_eq!(
            mount_for(mi, "/tmpfile"),
            Some(("ext4".into(), "/dev/vda".into()))
        );
        assert_eq!(
            mount_for(mi, "/tmpx"),
            Some(("xfs".into(), "/dev/vdb".into()))
        );
    }

    #[test]
    fn live_facts_are_filled() {
        let h = host_facts(Some(Path::new("/")), "iolab test");
        assert!(h.cores >= 1);
        assert!(h.memory_bytes > 0);
        assert!(h.kernel.starts_with("Linux"));
        assert!(h.filesystem.is_some());
    }
}
