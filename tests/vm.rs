//! `iolab vm` and the residency map end to end.

mod common;

use common::iolab;

use common::{bytes, is_root, write_file};
use predicates::prelude::*;

fn stage<'a>(v: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    v["stages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no stage {name}"))
}

fn file_row(s: &serde_json::Value) -> &serde_json::Value {
    &s["rows"][s["file_row"].as_u64().expect("file row") as usize]
}

#[test]
fn stages_show_the_mapping_appear_and_fill() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("v.bin");
    let size: u64 = 1_000_003;
    let o = iolab()
        .args([
            "vm",
            f.to_str().unwrap(),
            "--create",
            &size.to_string(),
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(std::fs::metadata(&f).unwrap().len(), size);
    assert!(stage(&v, "process start")["file_row"].is_null());
    let mapped = stage(&v, "after mmap");
    let row = file_row(mapped);
    assert_eq!(row["size_kb"].as_u64().unwrap(), size.div_ceil(4096) * 4);
    assert_eq!(row["rss_kb"], 0, "nothing resident before a touch");
    assert_eq!(
        mapped["delta"]["vm_size_kb"].as_i64().unwrap(),
        (size.div_ceil(4096) * 4) as i64
    );
    let first = file_row(stage(&v, "after touching offset 0"))["rss_kb"]
        .as_u64()
        .unwrap();
    assert!(first >= 4, "a touch maps at least its page");
    let all = file_row(stage(&v, "after touching every page"))["rss_kb"]
        .as_u64()
        .unwrap();
    assert_eq!(all, size.div_ceil(4096) * 4);
    let pages = stage(&v, "after touching offset 10000")["pages"]
        .as_array()
        .unwrap();
    assert_eq!(pages[0]["offset"], 10000);
    assert_eq!(pages[0]["entry"]["present"], true);
    assert_eq!(pages[0]["entry"]["file_or_shared"], true);
}

#[test]
fn text_totals_are_the_sum_of_rows() {
    let dir = tempfile::tempdir().unwrap();
    let f = write_file(dir.path(), "v", &bytes(100_000, 31));
    let o = iolab().args(["vm", f.to_str().unwrap()]).output().unwrap();
    let text = String::from_utf8(o.stdout).unwrap();
    let mut stages = 0;
    let (mut kb, mut rss) = (0u64, 0u64);
    for line in text.lines() {
        let cols: Vec<&str> = line.split_whitespace().collect();
        if line.starts_with("== stage") {
            (kb, rss) = (0, 0);
        } else if line.trim_start().starts_with("total kB") {
            assert_eq!(cols[2].parse::<u64>().unwrap(), kb, "{line}");
            assert_eq!(cols[3].parse::<u64>().unwrap(), rss, "{line}");
            stages += 1;
        } else if let Some(i) = cols
            .iter()
            .position(|c| c.len() == 16 && u64::from_str_radix(c, 16).is_ok())
        {
            kb += cols[i + 1].parse::<u64>().unwrap();
            rss += cols[i + 2].parse::<u64>().unwrap();
        }
    }
    assert_eq!(stages, 5);
    assert!(text.contains("=>"), "the file's row is marked");
    assert!(text.contains("-> mmap added"));
}

#[test]
fn write_stages_dirty_then_msync_cleans_and_content_is_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let data = bytes(50_000, 32);
    let f = write_file(dir.path(), "w", &data);
    let o = iolab()
        .args(["vm", f.to_str().unwrap(), "--write", "--format", "json"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let dirty = file_row(stage(&v, "after writing every page"))["dirty_kb"]
        .as_u64()
        .unwrap();
    assert_eq!(dirty, 50_000u64.div_ceil(4096) * 4);
    assert_eq!(file_row(stage(&v, "after msync"))["dirty_kb"], 0);
    assert_eq!(std::fs::read(&f).unwrap(), data);
}

#[test]
fn touching_past_the_end_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let f = write_file(dir.path(), "s", &bytes(5000, 33));
    let o = iolab()
        .args(["vm", f.to_str().unwrap(), "--touch", "0,8000"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("offset 8000") && err.lines().count() == 1,
        "{err}"
    );
    let o = iolab()
        .args(["vm", f.to_str().unwrap(), "--create", "1M"])
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(2),
        "--create must not replace a file without --force"
    );
    assert_eq!(std::fs::read(&f).unwrap(), bytes(5000, 33));
}

#[test]
fn page_flags_need_root_and_say_so() {
    let dir = tempfile::tempdir().unwrap();
    let f = write_file(dir.path(), "p", &bytes(20_000, 34));
    let run = |not_root: bool| {
        let mut c = iolab();
        if not_root {
            c.env("IOLAB_NO_ROOT", "1");
        }
        let o = c
            .args(["vm", f.to_str().unwrap(), "--format", "json"])
            .output()
            .unwrap();
        assert!(o.status.success());
        serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()
    };
    let v = run(true);
    assert!(v["page_note"].as_str().unwrap().contains("need root"));
    let p = &stage(&v, "after touching offset 0")["pages"][0];
    assert_eq!(p["entry"]["pfn"], 0);
    assert!(p["flags"].is_null());
    if is_root() {
        let v = run(false);
        let p = &stage(&v, "after touching offset 0")["pages"][0];
        assert!(p["entry"]["pfn"].as_u64().unwrap() > 0);
        let flags: Vec<&str> = p["flags"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f.as_str().unwrap())
            .collect();
        assert!(
            flags.contains(&"MMAP") && flags.contains(&"UPTODATE"),
            "{flags:?}"
        );
    } else {
        eprintln!("root branch skipped: not root");
    }
}

#[test]
fn page_cache_change_and_residency_map() {
    let dir = tempfile::tempdir().unwrap();
    let f = write_file(dir.path(), "c", &bytes(4 << 20, 35));
    let o = iolab()
        .args([
            "vm",
            f.to_str().unwrap(),
            "--page-cache",
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["page_cache"]["file_size"], 4 << 20);
    assert!(v["page_cache"]["after"]["cached"].as_u64().unwrap() > 0);
    iolab()
        .args(["cache", "load", f.to_str().unwrap()])
        .assert()
        .success();
    let o = iolab()
        .args([
            "cache",
            "status",
            f.to_str().unwrap(),
            "--map",
            "--width",
            "10",
        ])
        .output()
        .unwrap();
    assert!(o.status.success());
    // Every bucket holds pages; all of them, unless this machine kind's idle reclaimer (DAMON
    // pageout, docs/methodology.md) took a few between the load and the look: once it took 10
    // of 1024 pages, "[o##ooo#oo#] 99.0%".
    let text = String::from_utf8_lossy(&o.stdout);
    let map = text
        .lines()
        .find_map(|l| l.split_once(" [").map(|(_, m)| m))
        .unwrap_or_else(|| panic!("no map: {text}"));
    let (bar, pct) = map.split_once("] ").unwrap();
    assert_eq!(bar.len(), 10, "{text}");
    assert!(bar.chars().all(|c| c == '#' || c == 'o'), "{text}");
    let pct: f64 = pct.trim().trim_end_matches('%').parse().unwrap();
    assert!(pct >= 98.0, "{text}");
    let o = iolab()
        .args([
            "cache",
            "status",
            f.to_str().unwrap(),
            "--map",
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["files"][0]["map"].as_array().unwrap().len(), 64);
    let o = iolab()
        .args(["cache", "meminfo", "--format", "json"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["mem_total"].as_u64().unwrap() > 0);
}

#[test]
fn part_b_measures_the_five_ways_and_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let f = write_file(dir.path(), "lab.bin", &bytes(1 << 20, 77));
    let o = iolab()
        .args(["vm", f.to_str().unwrap(), "--part-b", "--size", "256K"])
        .args(["--repeat", "3", "--format", "json"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    for cell in [
        "read",
        "mmap_read",
        "write_fsync_each",
        "mmap_write_msync_end",
        "write_fsync_end",
    ] {
        let c = &v[cell]["mib_s"];
        assert_eq!(c["n"], 3, "{cell}: {v}");
        assert!(c["median"].as_f64().unwrap() > 0.0, "{cell}");
    }
    // One write and one fsync per 4 KiB block; the mapping makes no calls.
    assert_eq!(v["write_fsync_each"]["syscalls"], 128);
    assert!(v["read"]["syscalls"].as_u64().unwrap() >= 256);
    assert_eq!(v["mmap_read"]["syscalls"], 0);
    for when in ["free_before", "free_after_reads", "free_after_writes"] {
        assert!(v[when]["total"].as_u64().unwrap() > 0, "{when}");
    }
    // Every claim in the explanation rests on a ratio that was computed.
    let text: Vec<String> = v["explanation"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap().to_string())
        .collect();
    let lab = &v["lab_ratio"];
    let lab_clear = lab["runs"].as_u64().unwrap() >= 3 && lab["ci"][0].as_f64().unwrap() >= 1.05;
    assert_eq!(
        text.iter()
            .any(|l| l.starts_with("This is the lab's direction")),
        lab_clear,
        "{text:?} {lab}"
    );
    assert_eq!(
        names(dir.path()),
        ["lab.bin"],
        "the scratch file is removed"
    );
    // The text form has the free -m table.
    iolab()
        .args(["vm", f.to_str().unwrap(), "--part-b", "--size", "64K"])
        .assert()
        .success()
        .stdout(predicate::str::contains("Mem: after writes"))
        .stdout(predicate::str::contains("write() + fsync per block"));
    // Part B's options need --part-b.
    iolab()
        .args(["vm", f.to_str().unwrap(), "--bs", "8K"])
        .assert()
        .code(2);
}

fn names(dir: &std::path::Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}
