//! `iolab pollute`: a stream beside a hot set in one memory cgroup. As root: every stream method
//! runs, the methods that keep the cache out of it leave the hot set resident, a buffered stream
//! fills the group, the finding's interval holds its ratio, and nothing is left behind (groups,
//! the temporary hot set, the written stream). Without root: the reason, exit 1. Bad settings:
//! exit 2 before anything is made.

mod common;
use common::{Lack, skip};

use common::{big_file, check_csv, iolab, is_root};
use serde_json::Value;

use std::path::Path;

fn has_memory_cgroup() -> bool {
    Path::new("/sys/fs/cgroup/memory/memory.limit_in_bytes").exists()
        || ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"]
            .iter()
            .any(|d| {
                std::fs::read_to_string(Path::new(d).join("cgroup.controllers"))
                    .is_ok_and(|c| c.split_whitespace().any(|x| x == "memory"))
            })
}

fn leftover_groups() -> Vec<String> {
    let mut out = Vec::new();
    for root in [
        "/sys/fs/cgroup/memory",
        "/sys/fs/cgroup",
        "/sys/fs/cgroup/unified",
    ] {
        if let Ok(d) = std::fs::read_dir(root) {
            out.extend(
                d.filter_map(|e| e.ok())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| n.starts_with("iolab-squeeze-")),
            );
        }
    }
    out
}

/// `iolab pollute FILE` in a 64 MiB group with a 16 MiB hot set, writing `write_size`.
fn pollute_64m(file: &Path, write_size: &str) -> std::process::Command {
    let mut c = std::process::Command::new(assert_cmd::cargo::cargo_bin("iolab"));
    c.args(["pollute", file.to_str().unwrap()]).args([
        "--memory",
        "64M",
        "--hot-size",
        "16M",
        "--write-size",
        write_size,
    ]);
    c
}

/// Runs `c` to its end: its output and its pid.
fn pid_output(c: &mut std::process::Command) -> (std::process::Output, u32) {
    let child = c
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    (child.wait_with_output().unwrap(), pid)
}

fn run<'a>(v: &'a Value, dir: &str, method: &str) -> &'a Value {
    v[dir]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["method"] == method)
        .unwrap_or_else(|| panic!("no {dir} {method}"))
}

#[test]
fn every_stream_runs_and_the_cache_keeping_ones_leave_the_hot_set_alone() {
    if !is_root() || !has_memory_cgroup() {
        return skip(Lack::Setup, "needs root and a memory cgroup controller");
    }
    let mut pids = Vec::new();
    let dir = tempfile::tempdir().unwrap();
    // A 16 MiB hot set in a 64 MiB group; smaller groups leave the process itself too little
    // room (at 32 MiB a stream's read-ahead alone pushed the hot set out, whatever the method).
    let file = big_file(dir.path(), 256);
    let (o, pid) = pid_output(
        pollute_64m(&file, "128M")
            .args([
                "--before",
                "600ms",
                "--seconds",
                "1600ms",
                "--tick",
                "200ms",
            ])
            .args(["--reads", "read,uncached,direct,mmap-seq,fadvise-dontneed"])
            .args([
                "--writes",
                "write,uncached,direct",
                "--passes",
                "1",
                "--format",
                "json",
            ]),
    );
    pids.push(pid);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let limit = v["limit"].as_f64().unwrap();
    assert!((limit - 64.0 * 1048576.0).abs() < 1048576.0, "{limit}");
    for d in ["reads", "writes"] {
        for r in v[d].as_array().unwrap() {
            let name = format!("{d} {}", r["method"]);
            if !r["unsupported"].is_null() {
                skip(Lack::Machine, &format!("{name}: {}", r["unsupported"]));
                continue;
            }
            let ticks = r["ticks"].as_array().unwrap();
            assert!(ticks.len() >= 10, "{name}: {} ticks", ticks.len());
            assert!(ticks.iter().any(|t| t["streaming"] == false), "{name}");
            let e = &r["effect"];
            assert!(e["hot_alone"]["median"].as_f64().unwrap() > 0.0, "{name}");
            assert!(
                e["stream_mib_s"]["median"].as_f64().unwrap() > 0.0,
                "{name}"
            );
            assert!(r["done"]["stream_bytes"].as_u64().unwrap() > 0, "{name}");
        }
    }
    // O_DIRECT, fadvise(DONTNEED) behind the reader and uncached reads keep the stream's pages
    // out of the group: the hot set stays resident through the stream.
    for m in ["direct", "fadvise-dontneed", "uncached"] {
        let r = run(&v, "reads", m);
        if !r["unsupported"].is_null() {
            continue;
        }
        let least = r["effect"]["hot_resident_min_pct"].as_f64().unwrap();
        assert!(least >= 95.0, "read {m}: the hot set fell to {least}%");
    }
    // A buffered read stream fills the group to its limit.
    let mem = run(&v, "reads", "read")["effect"]["mem_bytes"]
        .as_f64()
        .unwrap();
    assert!(mem >= 0.8 * limit, "read: the group held {mem} of {limit}");
    // The findings: one run of each is too few runs to decide (runs are the unit): undecided,
    // said, and no interval kept.
    let findings = v["findings"].as_array().unwrap();
    assert!(!findings.is_empty());
    for f in findings {
        assert_eq!(f["decided"], "undecided", "{f}");
        assert_eq!(f["ci"], serde_json::json!([0.0, 0.0]), "{f}");
        let text = f["text"].as_str().unwrap();
        assert!(text.contains("undecided (budget: 1 run,"), "{f}");
        let key = f["key"].as_str().unwrap();
        assert!(key == "pollute-read" || key == "pollute-write", "{key}");
        if let Some(w) = f["winner"].as_str() {
            assert!(
                f["text"].as_str().unwrap().contains(&format!(": {w} ")),
                "{f}"
            );
        }
    }
    // CSV: a row per tick, one table (one short read stream and one write stream).
    let (o, pid) = pid_output(
        pollute_64m(&file, "32M")
            .args(["--before", "600ms", "--seconds", "1s", "--tick", "200ms"])
            .args(["--reads", "uncached", "--writes", "write", "--passes", "1"])
            .args(["--format", "csv"]),
    );
    pids.push(pid);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    check_csv("pollute", &o.stdout);
    // Nothing left: groups, the temporary hot set, the written stream's file.
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["big.bin"]);
    // Only this test's runs' groups: another run on the machine makes groups of its own.
    let after: Vec<_> = leftover_groups()
        .into_iter()
        .filter(|g| {
            pids.iter()
                .any(|p| g.starts_with(&format!("iolab-squeeze-{p}-")))
        })
        .collect();
    assert!(after.is_empty(), "groups left: {after:?}");
}

#[test]
fn without_root_it_says_why_and_exits_1_having_made_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let file = big_file(dir.path(), 40);
    let o = iolab()
        .env("IOLAB_NO_ROOT", "1")
        .args(["pollute", file.to_str().unwrap(), "--memory", "32M"])
        .args(["--hot-size", "8M"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("needs root") && err.lines().count() == 1,
        "{err}"
    );
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn settings_that_cannot_work_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let file = big_file(dir.path(), 16);
    let f = file.to_str().unwrap();
    for (args, says) in [
        (
            vec!["--memory", "32M"],
            "the stream fits in the memory limit",
        ),
        (
            vec!["--memory", "12M", "--hot-size", "8M", "--reads", "none"],
            "the hot set does not fit",
        ),
        (
            vec!["--memory", "8M", "--reads", "bogus"],
            "unknown method 'bogus'",
        ),
        (
            vec!["--memory", "8M", "--reads", "none", "--writes", "none"],
            "no stream methods",
        ),
    ] {
        let o = iolab()
            .env("IOLAB_NO_ROOT", "1")
            .args(["pollute", f])
            .args(&args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}
