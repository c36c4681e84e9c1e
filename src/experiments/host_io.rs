//! The host facts that decide I/O figures, beside the machine's: the measured file's device
//! (its model, read-ahead window and I/O scheduler), the mount's options, transparent huge
//! pages and the CPU frequency governor. Each is what sysfs says now, `None` where it has no
//! such file (a virtual machine has no cpufreq, a virtio disk no model).

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// What decides I/O beside the machine, recorded with every result.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct IoFacts {
    /// The read-ahead window of the file's block device, KiB (`queue/read_ahead_kb`).
    #[serde(default)]
    pub read_ahead_kb: Option<u64>,
    /// The device's I/O scheduler, the one in use (`queue/scheduler`: `none`, `mq-deadline`).
    #[serde(default)]
    pub scheduler: Option<String>,
    /// The device's model (`device/model`), or its driver where it has none (`virtio_blk`);
    /// `rotational` when the kernel says it spins.
    #[serde(default)]
    pub device_model: Option<String>,
    /// The mount's options, per mount and per superblock (`rw,relatime / rw,errors=...`).
    #[serde(default)]
    pub mount_options: Option<String>,
    /// Transparent huge pages, the mode in use (`always`, `madvise`, `never`).
    #[serde(default)]
    pub thp: Option<String>,
    /// CPU 0's frequency governor; `None` where the kernel has no cpufreq (most VMs).
    #[serde(default)]
    pub governor: Option<String>,
}

/// The facts for the file system holding `path` (device-less ones without a path), read from
/// `sys` (sysfs) and `mountinfo`.
pub fn io_facts(path: Option<&Path>, sys: &Path, mountinfo: &str) -> IoFacts {
    let read = |p: PathBuf| {
        std::fs::read_to_string(p)
            .ok()
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
    };
    let mut f = IoFacts {
        thp: read(sys.join("kernel/mm/transparent_hugepage/enabled")).map(|v| in_use(&v)),
        governor: read(sys.join("devices/system/cpu/cpu0/cpufreq/scaling_governor")),
        ..IoFacts::default()
    };
    let Some(path) = path else {
        return f;
    };
    let abs = resolved(path);
    if let Some(abs) = &abs {
        f.mount_options = options_for(mountinfo, &abs.to_string_lossy());
    }
    let Some(disk) = abs.as_deref().and_then(|p| disk_of(p, sys)) else {
        return f;
    };
    f.read_ahead_kb = read(disk.join("queue/read_ahead_kb")).and_then(|v| v.parse().ok());
    f.scheduler = read(disk.join("queue/scheduler")).map(|v| in_use(&v));
    let model = read(disk.join("device/model")).or_else(|| {
        std::fs::read_link(disk.join("device/driver"))
            .ok()
            .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
            .or_else(|| {
                // A virtio disk's driver hangs off its virtio device, one level up.
                std::fs::read_link(disk.join("device/../driver"))
                    .ok()
                    .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
            })
    });
    let spins = read(disk.join("queue/rotational")).is_some_and(|v| v == "1");
    f.device_model = match (model, spins) {
        (Some(m), true) => Some(format!("{m}, rotational")),
        (m, true) => m.or(Some("rotational".into())),
        (m, false) => m,
    };
    f
}

/// The bracketed choice of a sysfs list: `always [madvise] never` -> `madvise`.
fn in_use(list: &str) -> String {
    list.split_whitespace()
        .find_map(|w| w.strip_prefix('[')?.strip_suffix(']'))
        .unwrap_or(list)
        .to_string()
}

/// The whole disk (its sysfs directory under `sys`) that the file system of `abs` is on: the
/// file's device number, a partition's parent.
fn disk_of(abs: &Path, sys: &Path) -> Option<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let dev = std::fs::metadata(abs).ok()?.dev();
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    let node = std::fs::canonicalize(sys.join(format!("dev/block/{major}:{minor}"))).ok()?;
    if node.join("partition").exists() {
        node.parent().map(Path::to_path_buf)
    } else {
        Some(node)
    }
    .filter(|d| d.join("queue").is_dir())
}

/// The options of the mount holding `abs` in mountinfo text: the mount's, then the
/// superblock's when they add anything (`rw,relatime / rw,errors=remount-ro`).
pub fn options_for(mountinfo: &str, abs: &str) -> Option<String> {
    let m = mount_line(mountinfo, abs)?;
    Some(
        if m.super_options.is_empty() || m.super_options == m.options {
            m.options
        } else {
            format!("{} / {}", m.options, m.super_options)
        },
    )
}

/// `path` made absolute, or its folder when it does not exist yet (an output to be made).
pub(crate) fn resolved(path: &Path) -> Option<std::path::PathBuf> {
    std::fs::canonicalize(path)
        .or_else(|_| {
            std::fs::canonicalize(
                path.parent()
                    .filter(|p| !p.as_os_str().is_empty())
                    .unwrap_or(Path::new(".")),
            )
        })
        .ok()
}

/// One mount of mountinfo.
pub(crate) struct MountEntry {
    pub(crate) fstype: String,
    pub(crate) source: String,
    /// The mount's options (`rw,relatime`).
    pub(crate) options: String,
    /// The superblock's options (`rw,errors=remount-ro`).
    pub(crate) super_options: String,
}

/// The mount holding `abs` in mountinfo text: the longest mount point that contains it.
pub(crate) fn mount_line(mountinfo: &str, abs: &str) -> Option<MountEntry> {
    let mut best: Option<(usize, MountEntry)> = None;
    for line in mountinfo.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let Some(dash) = fields.iter().position(|f| *f == "-") else {
            continue;
        };
        let (Some(mp), Some(options), Some(fstype), Some(source)) = (
            fields.get(4),
            fields.get(5),
            fields.get(dash + 1),
            fields.get(dash + 2),
        ) else {
            continue;
        };
        let inside = *mp == "/" || abs == *mp || abs.starts_with(&format!("{mp}/"));
        if inside && best.as_ref().is_none_or(|b| mp.len() >= b.0) {
            let mount = MountEntry {
                fstype: fstype.to_string(),
                source: source.to_string(),
                options: options.to_string(),
                super_options: fields.get(dash + 3).unwrap_or(&"").to_string(),
            };
            best = Some((mp.len(), mount));
        }
    }
    best.map(|(_, m)| m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_choice_in_use_is_the_bracketed_one() {
        assert_eq!(in_use("always [madvise] never"), "madvise");
        assert_eq!(in_use("[none] mq-deadline kyber"), "none");
        assert_eq!(in_use("schedutil"), "schedutil");
    }

    #[test]
    fn mount_options_come_from_the_longest_mount_holding_the_path() {
        let mi = "22 1 254:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw,errors=remount-ro\n\
                  30 22 0:40 / /tmp rw,nosuid,nodev shared:5 - tmpfs tmpfs rw,size=100k\n";
        assert_eq!(
            options_for(mi, "/var/tmp/x").as_deref(),
            Some("rw,relatime / rw,errors=remount-ro")
        );
        assert_eq!(
            options_for(mi, "/tmp/x").as_deref(),
            Some("rw,nosuid,nodev / rw,size=100k")
        );
    }

    #[test]
    fn facts_of_a_fake_sysfs_and_of_this_machine() {
        let dir = tempfile::tempdir().unwrap();
        let sys = dir.path();
        let put = |rel: &str, v: &str| {
            let p = sys.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, format!("{v}\n")).unwrap();
        };
        put(
            "kernel/mm/transparent_hugepage/enabled",
            "always [madvise] never",
        );
        let f = io_facts(None, sys, "");
        assert_eq!(f.thp.as_deref(), Some("madvise"));
        assert_eq!(f.governor, None, "no cpufreq: none said");
        // This machine: a file on a block device has its read-ahead and scheduler found.
        let here = io_facts(
            Some(Path::new(env!("CARGO_MANIFEST_DIR"))),
            Path::new("/sys"),
            &std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default(),
        );
        if std::fs::metadata(env!("CARGO_MANIFEST_DIR"))
            .map(|m| libc::major(std::os::unix::fs::MetadataExt::dev(&m)) != 0)
            .unwrap_or(false)
        {
            assert!(here.read_ahead_kb.is_some(), "{here:?}");
            assert!(here.scheduler.is_some(), "{here:?}");
        }
        assert!(here.mount_options.is_some(), "{here:?}");
    }
}
