//! Host facts recorded with every result: kernel, CPU, memory, the file's filesystem and device,
//! iolab's version and the command line.

use super::host_io::{mount_line, resolved};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Facts about the machine, recorded with every result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
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
    /// The machine's name (/proc/sys/kernel/hostname).
    #[serde(default)]
    pub hostname: String,
    /// When the facts were taken, UTC (`2026-11-22T14:08:30Z`).
    #[serde(default)]
    pub date: String,
    /// The git commit iolab was built from, when built from a checkout (`-dirty` with local
    /// changes).
    #[serde(default)]
    pub git_commit: Option<String>,
    /// Set when this virtual machine hands the memory it frees back to its host (virtio-balloon
    /// free page reporting), with the kernel's settings: a freed page touched again costs a
    /// host fault, so writes into fresh memory can be several times slower in some runs.
    #[serde(default)]
    pub free_page_reporting: Option<String>,
    /// Set when a DAMON reclaimer pages out memory left idle (a kdamond with a `pageout` scheme,
    /// or the DAMON_RECLAIM module), with how long idle: a warm file left alone that long
    /// becomes partly cold, whatever the cache state a run started from.
    #[serde(default)]
    pub idle_reclaim: Option<String>,
    /// What decides I/O beside the machine: the device's read-ahead, scheduler and model, the
    /// mount's options, THP, the CPU governor.
    #[serde(default, flatten)]
    pub io: super::host_io::IoFacts,
}

/// The host facts, with the filesystem and device of `path` when given.
pub fn host_facts(path: Option<&Path>, command_line: &str) -> Host {
    // Read once: /proc/cpuinfo is formatted afresh, CPU by CPU, at every read.
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu_model = cpuinfo
        .lines()
        .find_map(|l| {
            l.strip_prefix("model name")?
                .split_once(':')
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into());
    // A virtual machine may name only the family ("AMD EPYC"): the numbers tell models apart.
    let cpu_model = match cpu_numbers(&cpuinfo) {
        Some(n) if !cpu_model.contains(&n) => format!("{cpu_model} ({n})"),
        _ => cpu_model,
    };
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
        hostname: std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|h| h.trim().to_string())
            .unwrap_or_default(),
        date: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| utc_date(d.as_secs()))
            .unwrap_or_default(),
        git_commit: Some(env!("IOLAB_GIT_COMMIT"))
            .filter(|c| !c.is_empty())
            .map(String::from),
        free_page_reporting: free_page_reporting(),
        idle_reclaim: idle_reclaim(Path::new("/sys")),
        io: super::host_io::io_facts(
            path,
            Path::new("/sys"),
            &std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default(),
        ),
    }
}

/// DAMON reclaiming idle memory under `sys` (sysfs): running kdamonds' `pageout` schemes, and
/// the DAMON_RECLAIM module, each with the idle time after which it acts.
fn idle_reclaim(sys: &Path) -> Option<String> {
    let read = |p: &Path| {
        std::fs::read_to_string(p)
            .ok()
            .map(|v| v.trim().to_string())
    };
    let entries = |p: std::path::PathBuf| std::fs::read_dir(p).into_iter().flatten().flatten();
    let mut found = Vec::new();
    for k in entries(sys.join("kernel/mm/damon/admin/kdamonds")) {
        if read(&k.path().join("state")).as_deref() != Some("on") {
            continue;
        }
        for c in entries(k.path().join("contexts")) {
            let aggr_us: Option<u64> = read(&c.path().join("monitoring_attrs/intervals/aggr_us"))
                .and_then(|v| v.parse().ok());
            let ops = read(&c.path().join("operations")).unwrap_or_default();
            for sc in entries(c.path().join("schemes")) {
                if read(&sc.path().join("action")).as_deref() != Some("pageout") {
                    continue;
                }
                let min_age: Option<u64> =
                    read(&sc.path().join("access_pattern/age/min")).and_then(|v| v.parse().ok());
                let idle = match (min_age, aggr_us) {
                    (Some(a), Some(us)) => format!("idle {}", secs(a.saturating_mul(us))),
                    _ => "idle".to_string(),
                };
                found.push(format!("DAMON ({ops}) pages out memory {idle} or more"));
            }
        }
    }
    let module = sys.join("module/damon_reclaim/parameters");
    if read(&module.join("enabled")).is_some_and(|v| v == "Y" || v == "1") {
        let idle = read(&module.join("min_age"))
            .and_then(|v| v.parse::<u64>().ok())
            .map(|us| format!(" idle {} or more", secs(us)))
            .unwrap_or_default();
        found.push(format!("DAMON_RECLAIM pages out memory{idle}"));
    }
    if found.is_empty() {
        return None;
    }
    found.dedup();
    Some(format!(
        "on: {}; a warm file left alone that long is partly cold again",
        found.join("; ")
    ))
}

/// Microseconds as seconds for the host table (`30 s`, `1.5 s`).
fn secs(us: u64) -> String {
    let s = us as f64 / 1e6;
    if s.fract() == 0.0 {
        format!("{s:.0} s")
    } else {
        format!("{s} s")
    }
}

/// Free page reporting of a virtio balloon, with the settings that bound it, when it is on.
fn free_page_reporting() -> Option<String> {
    let devices = std::fs::read_dir("/sys/bus/virtio/drivers/virtio_balloon").ok()?;
    let on = devices.flatten().any(|d| {
        std::fs::read_to_string(d.path().join("features")).is_ok_and(|f| reports_free_pages(&f))
    });
    if !on {
        return None;
    }
    let param = |name: &str| {
        std::fs::read_to_string(format!("/sys/module/page_reporting/parameters/{name}"))
            .ok()
            .map(|v| v.trim().to_string())
    };
    Some(reporting_settings(
        param("page_reporting_order"),
        param("min_free_ms"),
    ))
}

/// Whether a virtio device's `features` (one '0' or '1' per feature bit, bit 0 first) has
/// VIRTIO_BALLOON_F_REPORTING (bit 5).
fn reports_free_pages(features: &str) -> bool {
    features.as_bytes().get(5) == Some(&b'1')
}

/// What the report says of free page reporting with these module parameters.
fn reporting_settings(order: Option<String>, min_free_ms: Option<String>) -> String {
    let mut s = String::from("on: freed memory goes back to the host (virtio-balloon)");
    if let Some(o) = order.and_then(|o| o.parse::<u32>().ok()) {
        s += &format!(
            ", in free blocks of {} and up",
            crate::size::format_size((crate::sys::page_size() as u64) << o)
        );
    }
    if let Some(ms) = min_free_ms.and_then(|m| m.parse::<u64>().ok()) {
        s += &format!(", {ms} ms after it is freed");
    }
    s + "; touching it again costs a host fault per page"
}

/// `2026-11-22T14:08:30Z` for seconds since the epoch.
pub fn utc_date(secs: u64) -> String {
    let [y, m, d, hh, mm, ss] = crate::output::utc(secs);
    format!("{y:04}-{m:02}-{d:02}T{hh:02}:{mm:02}:{ss:02}Z")
}

/// `family 25 model 1 stepping 1` from /proc/cpuinfo.
fn cpu_numbers(t: &str) -> Option<String> {
    let field = |name: &str| {
        t.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == name).then(|| v.trim().to_string())
        })
    };
    Some(format!(
        "family {} model {} stepping {}",
        field("cpu family")?,
        field("model")?,
        field("stepping")?
    ))
}

/// `(fstype, source)` of the mount holding `path`.
fn mount_of(path: &Path) -> Option<(String, String)> {
    let abs = resolved(path)?;
    let text = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    mount_for(&text, &abs.to_string_lossy())
}

/// Picks the longest mount point that contains `abs` from mountinfo text.
pub fn mount_for(mountinfo: &str, abs: &str) -> Option<(String, String)> {
    mount_line(mountinfo, abs).map(|m| (m.fstype, m.source))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_page_reporting_is_feature_bit_5_and_its_settings_are_said() {
        // This machine kind's balloon: STATS_VQ, DEFLATE_ON_OOM, REPORTING and bit 7.
        assert!(reports_free_pages("0110010100000000"));
        assert!(!reports_free_pages("0110000100000000"));
        assert!(!reports_free_pages("01100"));
        let said = reporting_settings(Some("9\n".trim().into()), Some("0".into()));
        assert!(said.contains("blocks of 2 MiB"), "{said}");
        assert!(said.contains("0 ms after"), "{said}");
        let bare = reporting_settings(None, Some("x".into()));
        assert!(!bare.contains("blocks") && !bare.contains("ms"), "{bare}");
    }

    #[test]
    fn an_idle_reclaimer_is_found_in_sysfs_and_its_idle_time_said() {
        let dir = tempfile::tempdir().unwrap();
        let sys = dir.path();
        assert_eq!(idle_reclaim(sys), None, "no DAMON at all");
        let put = |rel: &str, v: &str| {
            let p = sys.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, format!("{v}\n")).unwrap();
        };
        // This machine kind's kdamond: paddr, a pageout scheme of min age 6 x 5 s.
        let k = "kernel/mm/damon/admin/kdamonds/0";
        put(&format!("{k}/state"), "off");
        put(&format!("{k}/contexts/0/operations"), "paddr");
        put(
            &format!("{k}/contexts/0/monitoring_attrs/intervals/aggr_us"),
            "5000000",
        );
        put(&format!("{k}/contexts/0/schemes/0/action"), "pageout");
        put(
            &format!("{k}/contexts/0/schemes/0/access_pattern/age/min"),
            "6",
        );
        assert_eq!(
            idle_reclaim(sys),
            None,
            "a kdamond that is off reclaims nothing"
        );
        put(&format!("{k}/state"), "on");
        let said = idle_reclaim(sys).unwrap();
        assert!(
            said.contains("DAMON (paddr) pages out memory idle 30 s"),
            "{said}"
        );
        put(&format!("{k}/contexts/0/schemes/0/action"), "stat");
        assert_eq!(
            idle_reclaim(sys),
            None,
            "a scheme that only counts reclaims nothing"
        );
        put("module/damon_reclaim/parameters/enabled", "Y");
        put("module/damon_reclaim/parameters/min_age", "120000000");
        let said = idle_reclaim(sys).unwrap();
        assert!(
            said.contains("DAMON_RECLAIM pages out memory idle 120 s"),
            "{said}"
        );
    }

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
        assert!(!h.hostname.is_empty());
        assert!(
            h.date.starts_with("20") && h.date.ends_with('Z'),
            "{}",
            h.date
        );
    }

    #[test]
    fn dates_are_utc_civil_dates() {
        assert_eq!(utc_date(0), "1970-01-01T00:00:00Z");
        assert_eq!(utc_date(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(utc_date(1_795_356_510), "2026-11-22T14:08:30Z");
        assert_eq!(utc_date(4_107_542_399), "2100-02-28T23:59:59Z");
    }

    #[test]
    fn old_results_without_the_new_facts_still_read() {
        let h = host_facts(None, "iolab test");
        let mut v = serde_json::to_value(&h).unwrap();
        for k in ["hostname", "date", "git_commit"] {
            v.as_object_mut().unwrap().remove(k);
        }
        let back: Host = serde_json::from_value(v).unwrap();
        assert_eq!((back.hostname.as_str(), back.git_commit), ("", None));
    }
}
