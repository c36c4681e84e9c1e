//! `iolab squeeze`: a file larger than the memory cgroup each method runs in. As root: every
//! default method's series, the group's peak within its limit, device bytes covering what had to
//! come from the device, the groups removed (also on Ctrl-C). Without root: the reason, exit 1.

mod common;
use common::{Lack, skip};

use common::{big_file, check_csv, iolab, is_root};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The memory cgroup hierarchy's directory on this machine (v1 mount, or v2 with memory).
fn memory_hierarchy() -> Option<PathBuf> {
    let v1 = PathBuf::from("/sys/fs/cgroup/memory");
    if v1.join("memory.limit_in_bytes").exists() {
        return Some(v1);
    }
    for v2 in ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"] {
        let c = std::fs::read_to_string(Path::new(v2).join("cgroup.controllers")).ok()?;
        if c.split_whitespace().any(|x| x == "memory") {
            return Some(PathBuf::from(v2));
        }
    }
    None
}

/// Groups this test's iolab processes made and left behind.
fn leftover_groups(root: &Path, pid: u32) -> Vec<String> {
    std::fs::read_dir(root)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with(&format!("iolab-squeeze-{pid}-")))
                .collect()
        })
        .unwrap_or_default()
}

fn root_with_memory_cgroup() -> Option<PathBuf> {
    if !is_root() {
        skip(Lack::Setup, "needs root");
        return None;
    }
    let h = memory_hierarchy();
    if h.is_none() {
        skip(Lack::Setup, "no memory cgroup controller here");
    }
    h
}

#[test]
fn every_default_method_runs_under_its_limit_and_the_groups_go() {
    let Some(hierarchy) = root_with_memory_cgroup() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let file = big_file(dir.path(), 192);
    // Spawned, for its pid: only its own groups are counted (another run on the machine makes
    // groups of its own).
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("iolab"))
        .env_remove("IOLAB_NO_ROOT")
        .args([
            "squeeze",
            file.to_str().unwrap(),
            "--memory",
            "24M",
            "--seconds",
            "5",
            "--passes",
            "2",
            "--format",
            "json",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(
        (v["oversize"].as_f64().unwrap() - 8.0).abs() < 0.1,
        "{}",
        v["oversize"]
    );
    let limit = v["limit"].as_u64().unwrap();
    assert!(limit <= 24 << 20 && limit > 23 << 20, "{limit}");
    let methods = v["methods"].as_array().unwrap();
    let names: Vec<&str> = methods
        .iter()
        .map(|m| m["method"].as_str().unwrap())
        .collect();
    // Every method once, then again.
    let four = ["mmap", "mmap-random", "pread", "uring-direct"];
    assert_eq!(names, [four, four].concat());
    for (i, m) in methods.iter().enumerate() {
        assert_eq!(m["pass"].as_u64(), Some(i as u64 / 4), "{}", m["method"]);
    }
    for m in methods {
        let name = m["method"].as_str().unwrap();
        if m["unsupported"].is_string() {
            eprintln!("{name}: {}", m["unsupported"]);
            continue;
        }
        let ticks = m["ticks"].as_array().unwrap();
        assert!(
            ticks.len() >= 3,
            "{name}: a row per second: {}",
            ticks.len()
        );
        assert!(
            m["resident_before_pct"].as_f64().unwrap() < 5.0,
            "{name}: evicted first"
        );
        // The group never holds much more than its limit.
        let peak = m["peak"].as_u64().unwrap();
        assert!(
            peak as f64 <= 1.05 * limit as f64,
            "{name}: peak {peak} over {limit}"
        );
        for t in ticks {
            if let Some(cur) = t["mem_current"].as_u64() {
                assert!(cur as f64 <= 1.05 * limit as f64, "{name}: {t}");
            }
        }
        // Every read counted in some second; device bytes cover what had to come from it.
        let done = &m["done"];
        let reads: u64 = ticks.iter().map(|t| t["ops"].as_u64().unwrap()).sum();
        assert_eq!(reads, done["moved"]["blocks"].as_u64().unwrap(), "{name}");
        assert!(reads > 0, "{name}");
        let needed = m["needed_bytes"].as_u64().unwrap();
        assert!(needed > 0, "{name}");
        if let Some(dev) = m["dev_read_bytes"].as_u64() {
            assert!(dev >= needed, "{name}: device read {dev} < needed {needed}");
        }
        let own: u64 = ticks
            .iter()
            .filter_map(|t| t["own_read_bytes"].as_u64())
            .sum();
        assert!(
            own >= needed / 2,
            "{name}: own reads {own}, needed {needed}"
        );
    }
    // The page cache a mapping fills is charged to its group: it fills to the limit.
    let mmap_random = &methods[1];
    if mmap_random["unsupported"].is_null() {
        let most = mmap_random["ticks"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|t| t["mem_current"].as_u64())
            .max()
            .unwrap();
        assert!(
            most as f64 >= 0.8 * limit as f64,
            "filled to {most} of {limit}"
        );
    }
    // The paper's pair and the mapping's own cost: two runs of each are too few runs to
    // decide (the runs are the unit), said, with no interval.
    let findings = v["findings"].as_array().unwrap();
    let keys: Vec<&str> = findings
        .iter()
        .map(|f| f["key"].as_str().unwrap())
        .collect();
    assert_eq!(keys, ["squeeze-random-4096", "squeeze-random-4096-mapping"]);
    for f in findings {
        let text = f["text"].as_str().unwrap();
        assert!(text.contains("KIOPS"), "{f}");
        assert!(text.contains("undecided (budget: 2 runs,"), "{f}");
        assert_eq!(f["ci"], serde_json::json!([0.0, 0.0]), "{f}");
    }
    let left = leftover_groups(&hierarchy, pid);
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// A parent group of the test's own, removed when dropped (a delegated subtree stands for it).
struct Parent(PathBuf);

impl Drop for Parent {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.0);
    }
}

#[test]
fn text_csv_and_plot_outputs_under_a_parent_group() {
    let Some(hierarchy) = root_with_memory_cgroup() else {
        return;
    };
    let parent = Parent(hierarchy.join(format!("iolab-test-parent-{}", std::process::id())));
    std::fs::create_dir(&parent.0).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = big_file(dir.path(), 40);
    let plot = dir.path().join("sq.svg");
    let o = iolab()
        .env_remove("IOLAB_NO_ROOT")
        .args([
            "squeeze",
            "--cgroup-parent",
            parent.0.to_str().unwrap(),
            "--format",
            "json",
            file.to_str().unwrap(),
            "--memory",
            "16M",
            "--methods",
            "pread",
            "--seconds",
            "1s",
            "--passes",
            "1",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["cgroup"]["parent"], parent.0.to_str().unwrap());
    assert_eq!(
        std::fs::read_dir(&parent.0)
            .unwrap()
            .filter(|e| e.as_ref().unwrap().file_type().unwrap().is_dir())
            .count(),
        0,
        "its group was made under the parent and removed"
    );
    let o = iolab()
        .env_remove("IOLAB_NO_ROOT")
        .args([
            "squeeze",
            file.to_str().unwrap(),
            "--memory",
            "16M",
            "--methods",
            "mmap-random,pread",
            "--pattern",
            "uniform",
            "--threads",
            "1",
            "--seconds",
            "1.5s",
            "--passes",
            "1",
            "--format",
            "csv",
            "--plot",
            plot.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    check_csv("squeeze", &o.stdout);
    let csv = String::from_utf8(o.stdout).unwrap();
    let mut lines = csv.lines();
    assert!(lines.next().unwrap().starts_with("method,t_s,kiops,mib_s"));
    let rows: Vec<&str> = lines.collect();
    assert!(rows.iter().any(|r| r.starts_with("mmap-random,")));
    assert!(rows.iter().any(|r| r.starts_with("pread,")));
    let svg = std::fs::read_to_string(&plot).unwrap();
    assert!(svg.starts_with("<svg") && svg.contains("TLB shootdowns"));
    // The plot is not overwritten without --force.
    let o = iolab()
        .args([
            "squeeze",
            file.to_str().unwrap(),
            "--memory",
            "16M",
            "--plot",
            plot.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--force"));
}

#[test]
fn without_root_it_says_why_and_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let file = big_file(dir.path(), 20);
    let o = iolab()
        .env("IOLAB_NO_ROOT", "1")
        .args(["squeeze", file.to_str().unwrap(), "--memory", "16M"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("needs root") && err.lines().count() == 1,
        "{err}"
    );
}

#[test]
fn bad_inputs_are_refused_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let file = big_file(dir.path(), 20);
    let f = file.to_str().unwrap();
    for (args, code, says) in [
        (vec!["--memory", "64M"], 2, "fits in the memory limit"),
        (vec!["--memory", "4M"], 2, "at least 16MiB"),
        (vec!["--memory", "lots"], 2, "--memory"),
        (
            vec!["--memory", "16M", "--methods", "teleport"],
            2,
            "expected one of",
        ),
        (
            vec!["--memory", "16M", "--seconds", "0.1s"],
            2,
            "at least 0.5s",
        ),
    ] {
        let o = iolab()
            .env("IOLAB_NO_ROOT", "1")
            .arg("squeeze")
            .arg(f)
            .args(&args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(code), "{args:?}: {err}");
        assert!(
            err.contains(says) && err.lines().count() == 1,
            "{args:?}: {err}"
        );
    }
    let o = iolab()
        .args(["squeeze", "/nonexistent/file", "--memory", "16M"])
        .output()
        .unwrap();
    assert_ne!(o.status.code(), Some(0));
}

#[test]
fn ctrl_c_kills_the_method_and_removes_its_group() {
    let Some(hierarchy) = root_with_memory_cgroup() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let file = big_file(dir.path(), 64);
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("iolab"))
        .env_remove("IOLAB_NO_ROOT")
        .args([
            "squeeze",
            file.to_str().unwrap(),
            "--memory",
            "16M",
            "--methods",
            "pread",
            "--seconds",
            "30",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let t = Instant::now();
    let limit = common::patience(Duration::from_secs(20));
    // Wait for the group to exist with the method inside it.
    let group = loop {
        assert!(t.elapsed() < limit, "no group appeared in {limit:?}");
        if let Some(g) = leftover_groups(&hierarchy, pid).first() {
            let g = hierarchy.join(g);
            let procs = std::fs::read_to_string(g.join("cgroup.procs")).unwrap_or_default();
            if !procs.trim().is_empty() {
                break (g, procs.trim().to_string());
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    std::thread::sleep(Duration::from_millis(300));
    Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status()
        .unwrap();
    let st = child.wait().unwrap();
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert_eq!(st.code(), Some(130), "{err}");
    assert!(!group.0.exists(), "group {} left behind", group.0.display());
    for worker in group.1.lines() {
        assert!(
            !Path::new(&format!("/proc/{worker}")).exists(),
            "the method's process {worker} still runs"
        );
    }
}

/// A folder that only looks like a cgroup (a file named cgroup.controllers in it) is refused
/// before anything is written into it or run without a limit.
#[test]
fn a_fake_cgroup_parent_is_refused_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let fake = dir.path().join("fake");
    std::fs::create_dir(&fake).unwrap();
    std::fs::write(fake.join("cgroup.controllers"), "memory\n").unwrap();
    let file = big_file(dir.path(), 40);
    let o = iolab()
        .env_remove("IOLAB_NO_ROOT")
        .args(["squeeze", "--cgroup-parent", fake.to_str().unwrap()])
        .args([
            file.to_str().unwrap(),
            "--memory",
            "16M",
            "--methods",
            "pread",
        ])
        .args(["--seconds", "1s", "--passes", "1"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("not on a cgroup file system"), "{err}");
    let names: Vec<String> = std::fs::read_dir(&fake)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["cgroup.controllers"], "nothing written into it");
}

/// `kill -9` runs no clean-up: the method's worker dies with iolab all the same, and the next
/// squeeze removes the group left behind.
#[test]
fn after_kill_9_the_worker_dies_and_the_next_run_removes_the_group() {
    let Some(hierarchy) = root_with_memory_cgroup() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // Its own ledger folder: no other test's run sweeps the group before it is checked.
    let state = tempfile::tempdir().unwrap();
    let file = big_file(dir.path(), 64);
    let bin = assert_cmd::cargo::cargo_bin("iolab");
    let mut victim = std::process::Command::new(&bin)
        .env("IOLAB_STATE_DIR", state.path())
        .env_remove("IOLAB_NO_ROOT")
        .args(["squeeze", file.to_str().unwrap(), "--memory", "16M"])
        .args(["--methods", "pread", "--seconds", "20s"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let prefix = format!("iolab-squeeze-{}-", victim.id());
    let group = |h: &Path| -> Option<PathBuf> {
        std::fs::read_dir(h)
            .ok()?
            .flatten()
            .find(|e| e.file_name().to_string_lossy().starts_with(&prefix))
            .map(|e| e.path())
    };
    let procs = |g: &Path| std::fs::read_to_string(g.join("cgroup.procs")).unwrap_or_default();
    let t = std::time::Instant::now();
    let limit = common::patience(Duration::from_secs(20));
    let mut found = None;
    while t.elapsed() < limit {
        if let Some(g) = group(&hierarchy)
            && !procs(&g).trim().is_empty()
        {
            found = Some(g);
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let Some(g) = found else {
        let _ = victim.kill();
        panic!("the method's group never held its worker");
    };
    victim.kill().unwrap(); // SIGKILL
    victim.wait().unwrap();
    common::wait_until(
        Duration::from_secs(5),
        "the worker's end with iolab",
        || procs(&g).trim().is_empty(),
    );
    assert!(
        g.exists(),
        "kill -9 ran no clean-up (the group is there to be found)"
    );
    let o = iolab()
        .env("IOLAB_STATE_DIR", state.path())
        .env_remove("IOLAB_NO_ROOT")
        .args(["squeeze", file.to_str().unwrap(), "--memory", "16M"])
        .args(["--methods", "pread", "--seconds", "1s", "--passes", "1"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(!g.exists(), "the next run removed the group left behind");
}
