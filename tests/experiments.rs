//! The experiments end to end through the binary: access, sweep, run2, syscalls.

mod common;

use common::iolab;

use common::{bytes, plain_xor, write_file};
use predicates::prelude::*;

fn json(args: &[&str]) -> serde_json::Value {
    let o = iolab().args(args).output().unwrap();
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).unwrap()
}

#[test]
fn access_reads_every_block_once_with_the_files_xor() {
    let dir = tempfile::tempdir().unwrap();
    let data = bytes(300_007, 21);
    let f = write_file(dir.path(), "a", &data);
    let p = f.to_str().unwrap();
    let v = json(&[
        "access",
        p,
        "--cache",
        "warm",
        "--repeat",
        "1",
        "--warmup",
        "0",
        "--threads",
        "2",
        "--format",
        "json",
    ]);
    let want = format!("{:08x}", plain_xor(&data));
    assert_eq!(v["xor"], want.as_str());
    let blocks = v["blocks"].as_u64().unwrap();
    assert_eq!(blocks, 300_007u64.div_ceil(4096));
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 7 * 2);
    for r in rows {
        if !r["unsupported"].is_null() {
            continue;
        }
        let run = &r["runs"][0];
        assert_eq!(run["moved"]["blocks"].as_u64().unwrap(), blocks, "{r}");
        assert_eq!(run["moved"]["xor"], want.as_str(), "{}", r["method"]);
        assert!(r["kiops"]["median"].as_f64().unwrap() > 0.0);
        let l = &r["latency"];
        assert_eq!(l["ops"].as_u64().unwrap(), blocks);
        assert!(l["p50_ns"].as_u64().unwrap() <= l["p99_ns"].as_u64().unwrap());
        assert!(l["p99_ns"].as_u64().unwrap() <= l["max_ns"].as_u64().unwrap());
    }
}

#[test]
fn access_without_latency_reads_every_block_and_claims_no_percentile() {
    let dir = tempfile::tempdir().unwrap();
    let data = bytes(2 << 20, 22);
    let f = write_file(dir.path(), "n", &data);
    let p = f.to_str().unwrap();
    let args = |format: &'static str| {
        [
            "access",
            p,
            "--methods",
            "read,mmap",
            "--patterns",
            "seq,random",
            "--cache",
            "warm",
            "--repeat",
            "1",
            "--warmup",
            "0",
            "--no-latency",
            "--format",
            format,
        ]
    };
    let v = json(&args("json"));
    let want = format!("{:08x}", plain_xor(&data));
    assert_eq!(v["xor"], want.as_str());
    assert_eq!(v["config"]["untimed"], true);
    for r in v["rows"].as_array().unwrap() {
        let run = &r["runs"][0];
        assert_eq!(run["moved"]["blocks"].as_u64().unwrap(), 512, "{r}");
        assert_eq!(run["moved"]["xor"], want.as_str(), "{}", r["method"]);
        assert!(r["kiops"]["median"].as_f64().unwrap() > 0.0);
        assert_eq!(r["latency"]["ops"].as_u64().unwrap(), 0, "{r}");
    }
    // The table shows no percentile rather than a 0.0 that would read as a measurement.
    let o = iolab().args(args("text")).output().unwrap();
    assert!(o.status.success());
    let text = String::from_utf8_lossy(&o.stdout);
    let rows: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("read ") || l.starts_with("mmap "))
        .collect();
    assert_eq!(rows.len(), 4, "{text}");
    for l in rows {
        let cols: Vec<&str> = l.split_whitespace().collect();
        // samples 0, then p50 .. p99.9 and max.
        assert_eq!(cols[5], "0", "{l}");
        assert_eq!(&cols[6..11], ["-"; 5], "{l}");
    }
}

#[test]
fn access_with_an_op_limit_reads_a_prefix_sequentially() {
    let dir = tempfile::tempdir().unwrap();
    let data = bytes(100_000, 22);
    let f = write_file(dir.path(), "a", &data);
    let v = json(&[
        "access",
        f.to_str().unwrap(),
        "--patterns",
        "seq",
        "--methods",
        "pread,mmap",
        "--cache",
        "warm",
        "--ops",
        "5",
        "--bs",
        "1000",
        "--repeat",
        "1",
        "--format",
        "json",
    ]);
    for r in v["rows"].as_array().unwrap() {
        // The harness keeps counted runs only (the warm-up round is not stored).
        assert_eq!(r["runs"].as_array().unwrap().len(), 1);
        let run = &r["runs"][0];
        assert_eq!(run["moved"]["blocks"], 5);
        assert_eq!(
            run["moved"]["xor"],
            format!("{:08x}", plain_xor(&data[..5000])).as_str()
        );
    }
    assert!(v["xor"].is_null(), "no run read every block");
}

#[test]
fn access_classic_form_prints_took_and_iops() {
    let dir = tempfile::tempdir().unwrap();
    let data = bytes(65_536, 23);
    let f = write_file(dir.path(), "a", &data);
    let p = f.to_str().unwrap();
    for words in [
        ["seq", "read", ""],
        ["random", "mmap", "adv_random"],
        ["random", "mmap", "adv_seq"],
    ] {
        let args: Vec<&str> = ["access", p]
            .into_iter()
            .chain(words.into_iter().filter(|w| !w.is_empty()))
            .collect();
        // The original's lines: whole milliseconds, and iops with two decimals (%.2f).
        iolab()
            .args(&args)
            .assert()
            .success()
            .stdout(predicate::str::is_match(r"(?m)^took \d+ms$").unwrap())
            .stdout(predicate::str::is_match(r"(?m)^iops : [0-9]+\.[0-9]{2}$").unwrap())
            .stdout(predicate::str::contains("Xor value").not());
        // It touched one byte per block, so it has no XOR to print; --work xor has.
        iolab()
            .args(&args)
            .args(["--work", "xor"])
            .assert()
            .success()
            .stdout(predicate::str::contains(format!(
                "Xor value is {:08x}",
                plain_xor(&data)
            )));
    }
    let o = iolab()
        .args(["access", p, "random", "read", "adv_seq"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("apply to mmap"));
}

#[test]
fn classic_access_touches_one_byte_per_whole_block_and_reads_every_block() {
    let dir = tempfile::tempdir().unwrap();
    // 8 MiB and a partial block, which the original never read (it read size / bs blocks).
    let f = write_file(dir.path(), "t", &bytes((8 << 20) + 100, 31));
    let p = f.to_str().unwrap();
    // Cold, with MADV_RANDOM (no read-around): touching one byte of each 1 MiB block brings one
    // page per block from the device, one major fault each; XORing the block brings all of it.
    let cold = |work: &str| {
        iolab().args(["cache", "evict", p]).assert().success();
        let v = json(&[
            "access",
            p,
            "seq",
            "mmap",
            "adv_random",
            "--bs",
            "1M",
            "--work",
            work,
            "--format",
            "json",
        ]);
        assert_eq!(v["blocks"], 8, "whole blocks only");
        assert_eq!(v["rows"][0]["runs"][0]["moved"]["blocks"], 8);
        assert!(v["config"]["duration"].is_null(), "no time limit");
        assert_eq!(v["config"]["classic"], true);
        assert_eq!(v["xor"].is_null(), work != "xor", "{v}");
        let c = &v["rows"][0]["runs"][0]["counters"];
        (
            c["major_faults"].as_u64().unwrap(),
            c["device_read_bytes"].as_u64(),
        )
    };
    let (touch, touch_dev) = cold("touch");
    let (xor, xor_dev) = cold("xor");
    // Copying a mapped block out (IOR's MMAP read) brings every page, as XOR does.
    let (copy, copy_dev) = cold("copy");
    assert!(
        (8..=16).contains(&touch) && xor >= 1024 && copy >= 1024,
        "major faults: touch {touch} (one per block), xor {xor} and copy {copy} (one per page)"
    );
    if let Some(c) = copy_dev {
        assert!(c >= 8 << 20, "device bytes: copy {c}");
    }
    if let (Some(t), Some(x)) = (touch_dev, xor_dev) {
        assert!(
            t < 1 << 20 && x >= 8 << 20,
            "device bytes: touch {t}, xor {x}"
        );
    }
    // Cold, every block is read once, whatever it takes: the device delivers the whole file.
    iolab().args(["cache", "evict", p]).assert().success();
    let v = json(&["access", p, "random", "read", "--format", "json"]);
    let run = &v["rows"][0]["runs"][0];
    assert_eq!(run["moved"]["blocks"], 2048);
    assert_eq!(run["cache"]["residency"]["resident_pages"], 0, "{run}");
    if let Some(dev) = run["counters"]["device_read_bytes"].as_u64() {
        assert!(
            dev >= 8 << 20,
            "read every block from the device: {dev} bytes"
        );
    }
}

#[test]
fn sweep_has_one_row_per_cell_and_a_valid_svg() {
    let dir = tempfile::tempdir().unwrap();
    let f = write_file(dir.path(), "s", &bytes(1 << 20, 24));
    let svg = dir.path().join("sweep.svg");
    let v = json(&[
        "sweep",
        f.to_str().unwrap(),
        "--bs",
        "4K..64K",
        "--methods",
        "read,mmap",
        "--cache",
        "warm,cold",
        "--repeat",
        "2",
        "--plot",
        svg.to_str().unwrap(),
        "--format",
        "json",
    ]);
    let cells = v["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 5 * 2 * 2);
    for c in cells {
        assert_eq!(c["runs"].as_array().unwrap().len(), 2);
        assert!(c["mib_s"]["median"].as_f64().unwrap() > 0.0);
    }
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.starts_with("<svg") && text.trim_end().ends_with("</svg>"));
    assert_eq!(
        text.matches("<polyline").count(),
        4,
        "one line per method x cache"
    );
    // Every tag opened is closed: a cheap well-formedness check.
    assert_eq!(text.matches("<g ").count(), text.matches("</g>").count());
    // Whole-file cold runs need no warning about readahead past their end; a prefix does.
    let ahead = |v: &serde_json::Value| {
        v["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w.as_str().unwrap().contains("reads ahead past that end"))
    };
    assert!(!ahead(&v), "{}", v["warnings"]);
    let prefix = json(&[
        "sweep",
        f.to_str().unwrap(),
        "--bs",
        "64K",
        "--size",
        "256K",
        "--cache",
        "cold",
        "--repeat",
        "1",
        "--format",
        "json",
    ]);
    assert!(ahead(&prefix), "{}", prefix["warnings"]);
    // An existing plot is not overwritten without --force, and nothing is measured first.
    let o = iolab()
        .args([
            "sweep",
            f.to_str().unwrap(),
            "--plot",
            svg.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--force"));
}

#[test]
fn write_sweep_covers_sync_modes_and_leaves_no_scratch() {
    let dir = tempfile::tempdir().unwrap();
    let v = json(&[
        "sweep",
        dir.path().to_str().unwrap(),
        "--op",
        "write",
        "--bs",
        "64K,1M",
        "--size",
        "2M",
        "--sync",
        "none,end,each",
        "--repeat",
        "1",
        "--format",
        "json",
    ]);
    assert_eq!(v["cells"].as_array().unwrap().len(), 2 * 2 * 3);
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "scratch file left behind"
    );
    let o = iolab()
        .args([
            "sweep",
            dir.path().to_str().unwrap(),
            "--op",
            "write",
            "--methods",
            "nope",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn run2_on_a_small_file_says_it_ends_and_predicts() {
    let dir = tempfile::tempdir().unwrap();
    let data = bytes(1 << 20, 25);
    let f = write_file(dir.path(), "r", &data);
    iolab()
        .args(["run2", f.to_str().unwrap(), "4096"])
        .assert()
        .success()
        .stdout(predicate::str::contains("The file ends before the window"))
        .stdout(predicate::str::contains("would take 5 s-15 s"))
        .stdout(predicate::str::contains(format!(
            "Xor value is {:08x}",
            plain_xor(&data)
        )));
    // The prediction rests on at least three whole-file reads of their own, with an interval
    // that holds the median and is made of the reads' rates.
    let v = json(&["run2", f.to_str().unwrap(), "4096", "--format", "json"]);
    let ended = &v["outcome"]["FileEnded"];
    let rate = &ended["rate"];
    let n = rate["n"].as_u64().unwrap();
    assert!(n >= 3, "{v}");
    let whole: Vec<&serde_json::Value> = v["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["run"]["bytes"].as_u64() == Some(data.len() as u64))
        .collect();
    assert!(
        whole.len() as u64 > n,
        "the search's own whole read and {n} more: {v}"
    );
    let (lo, med, hi) = (
        rate["ci"][0].as_f64().unwrap(),
        rate["median"].as_f64().unwrap(),
        rate["ci"][1].as_f64().unwrap(),
    );
    assert!(lo <= med && med <= hi, "{rate}");
    let samples: Vec<f64> = rate["samples"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect();
    assert!(samples.contains(&lo) && samples.contains(&hi), "{rate}");
    // The sizes follow the rate: the low end's interval holds its point value.
    let ci = &ended["predicted_ci"][0];
    let point = ended["predicted_min_bytes"].as_u64().unwrap();
    assert!(
        ci[0].as_u64().unwrap() <= point && point <= ci[1].as_u64().unwrap(),
        "{ended}"
    );
}

#[test]
fn run2_finds_a_count_inside_a_tiny_window() {
    let dir = tempfile::tempdir().unwrap();
    let f = write_file(dir.path(), "r", &bytes(64 << 20, 26));
    let v = json(&[
        "calibrate",
        f.to_str().unwrap(),
        "64K",
        "--target",
        "1ms..50ms",
        "--format",
        "json",
    ]);
    // The machine is shared: a jump across the window is possible, but never a silent miss.
    let outcome = v["outcome"].as_str().unwrap_or("object");
    let last = v["steps"].as_array().unwrap().last().unwrap().clone();
    let secs = last["run"]["counters"]["wall"].as_f64().unwrap();
    match outcome {
        "Found" => assert!((0.001..=0.05).contains(&secs), "{secs}"),
        "Straddled" => eprintln!("window straddled on a noisy machine: {v}"),
        other => panic!("unexpected outcome {other}: {v}"),
    }
    let counts: Vec<u64> = v["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["count"].as_u64().unwrap())
        .collect();
    // A slow first run may already land in the window (one step): whatever steps there are
    // double from one block.
    let n = counts.len().min(3);
    assert!(n >= 1, "{v}");
    assert_eq!(&counts[..n], &[1, 2, 4][..n], "doubles from one block");
}

#[test]
fn syscall_costs_are_positive_and_sanely_ordered() {
    let v = json(&["syscalls", "--samples", "2", "--format", "json"]);
    let rows = v["rows"].as_array().unwrap();
    let ns = |name: &str| {
        rows.iter()
            .find(|r| r["name"] == name)
            .unwrap_or_else(|| panic!("no row {name}"))["ns"]["median"]
            .as_f64()
            .unwrap()
    };
    for r in rows {
        if r["unsupported"].is_null() {
            assert!(r["ns"]["median"].as_f64().unwrap() > 0.0, "{r}");
            assert!(r["calls_per_s"].as_f64().unwrap() > 0.0, "{r}");
        }
    }
    assert!(
        ns("getppid") < ns("read-1b"),
        "a null call must cost less than a 1-byte read"
    );
    assert!(
        ns("clock_gettime") < ns("getppid"),
        "the vDSO clock must not enter the kernel"
    );
    assert!(ns("read-1b") < ns("mmap-munmap"));
    assert!(v["read_1b_bytes_per_s"].as_f64().unwrap() > 0.0);
    assert_eq!(rows.len(), 10);
}

#[test]
fn syscalls_on_a_given_file_and_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let f = write_file(dir.path(), "s", &bytes(10_000, 27));
    iolab()
        .args(["syscalls", f.to_str().unwrap(), "--samples", "1"])
        .assert()
        .success()
        .stdout(predicate::str::contains("1-byte reads move"));
    let empty = write_file(dir.path(), "e", b"");
    let o = iolab()
        .args(["syscalls", empty.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(std::fs::read(&f).unwrap(), bytes(10_000, 27));
}

#[test]
fn latencies_account_for_the_run_time_of_cold_mapped_reads() {
    // A look-ahead that faulted the next block in outside its timing once left cold mapped
    // reads at 0.1 us per block while the run took 70 us per block. Timed blocks (or the
    // sample, scaled) must account for the run's time.
    let dir = tempfile::tempdir().unwrap();
    let f = write_file(dir.path(), "c", &bytes(4 << 20, 41));
    let p = f.to_str().unwrap();
    for method in ["mmap", "mmap-random", "read"] {
        let v = json(&[
            "access",
            p,
            "--methods",
            method,
            "--patterns",
            "random",
            "--cache",
            "cold",
            "--repeat",
            "1",
            "--warmup",
            "0",
            "--format",
            "json",
        ]);
        let row = &v["rows"][0];
        let l = &row["latency"];
        let ops = l["ops"].as_u64().unwrap() + l["untimed_ops"].as_u64().unwrap();
        assert_eq!(ops, 1024, "{method}: every block timed or counted");
        let timed_s = l["mean_ns"].as_f64().unwrap() * ops as f64 / 1e9;
        let c = &row["runs"][0]["counters"]["wall"];
        let wall = c.as_f64().unwrap();
        assert!(
            timed_s >= 0.5 * wall && timed_s <= 1.1 * wall,
            "{method}: latencies add up to {timed_s:.4} s of a {wall:.4} s run"
        );
    }
}

/// Without --repeat a sweep's rounds are adaptive: at least the first look's 8 for every
/// compared cell, each comparison stated with its verdict, the rounds said under the table.
#[test]
fn sweep_rounds_go_on_to_a_decision_and_say_how_they_went() {
    let dir = tempfile::tempdir().unwrap();
    let f = write_file(dir.path(), "s", &bytes(4 << 20, 25));
    let args = [
        "sweep",
        f.to_str().unwrap(),
        "--bs",
        "64K,1M",
        "--cache",
        "warm",
        "--budget",
        "3s",
    ];
    let v = json(&[&args[..], &["--format", "json"]].concat());
    let r = &v["rounds"];
    assert!(r["rounds"].as_u64().unwrap() >= 8, "{r}");
    assert_eq!(r["planned_looks"], 6);
    let compared = r["compared"].as_array().unwrap();
    assert_eq!(compared.len(), 2, "read against mmap at each size: {r}");
    for c in compared {
        let v = &c["verdict"];
        let (lo, hi, ratio) = (
            v["ci"][0].as_f64().unwrap(),
            v["ci"][1].as_f64().unwrap(),
            v["ratio"].as_f64().unwrap(),
        );
        assert!(lo <= ratio && ratio <= hi, "{c}");
        assert!(["winner", "equivalent", "undecided"].contains(&v["decided"].as_str().unwrap()));
        assert_eq!(v["level"], 0.95, "{c}");
    }
    for cell in v["cells"].as_array().unwrap() {
        assert!(cell["runs"].as_array().unwrap().len() >= 8, "{cell}");
    }
    let o = iolab().args(args).output().unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("interleaved rounds after"), "{text}");
    assert!(
        text.contains("read warm 64 KiB / mmap warm 64 KiB"),
        "{text}"
    );
    // 4 MiB runs take well under 5 ms warm: said.
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("ran under 5 ms a run"), "{err}");
}

/// `--level` reaches every verdict: eight rounds decide at 80% (each interval at 80%), and
/// can reach no interval at 99.9% (undecided, and the text says at which level).
#[test]
fn the_level_asked_is_the_level_every_verdict_is_drawn_at() {
    let dir = tempfile::tempdir().unwrap();
    let f = write_file(dir.path(), "l", &bytes(2 << 20, 26));
    let args = |level: &str| {
        [
            "sweep",
            f.to_str().unwrap(),
            "--bs",
            "64K,1M",
            "--cache",
            "warm",
            "--repeat",
            "8",
            "--level",
            level,
        ]
        .map(String::from)
    };
    for (level, asked) in [("80", 0.8), ("99.9%", 0.999)] {
        let mut a = args(level).to_vec();
        a.extend(["--format", "json"].map(String::from));
        let v = json(&a.iter().map(String::as_str).collect::<Vec<_>>());
        let r = &v["rounds"];
        assert_eq!(r["level"], asked, "{r}");
        let compared = r["compared"].as_array().unwrap();
        assert_eq!(compared.len(), 2, "{r}");
        for c in compared {
            let v = &c["verdict"];
            assert_eq!(v["asked"], asked, "{c}");
            if asked < 0.9 {
                assert_eq!(v["level"], asked, "{c}");
            } else {
                assert!(v["level"].as_f64().unwrap() < asked, "{c}");
                assert_eq!(v["decided"], "undecided", "{c}");
            }
        }
    }
    let o = iolab().args(args("99.9")).output().unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("too few for one at 99.9%"), "{text}");
    // A command that compares nothing says --level decides nothing there.
    let o = iolab()
        .args([
            "read",
            f.to_str().unwrap(),
            "--repeat",
            "1",
            "--level",
            "99",
        ])
        .output()
        .unwrap();
    assert!(o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("read compares nothing: --level decides no verdict"),
        "{err}"
    );
    let o = iolab().args(args("50")).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("outside 80% to 99.9%"), "{err}");
}

/// `advise`'s answers are what its own rows say: the best by median, its paired ratio inside its
/// interval, "clear" only when the interval clears 1 by 5%; uncached "matches" only when its
/// interval says within 5% or faster.
#[test]
fn advise_says_what_its_measurements_say() {
    let dir = tempfile::tempdir().unwrap();
    let f = write_file(dir.path(), "adv", &bytes(8 << 20, 5));
    let v = json(&["advise", f.to_str().unwrap(), "--format", "json"]);
    let rows = v["measured"]["rows"].as_array().unwrap();
    let advice = v["advice"].as_array().unwrap();
    assert_eq!(advice.len(), 2, "warm and cold");
    for a in advice {
        let cache = a["cache"].as_str().unwrap();
        let best = rows
            .iter()
            .filter(|r| r["cache"] == cache && r["unsupported"].is_null())
            .max_by(|x, y| {
                let m = |r: &serde_json::Value| r["kiops"]["median"].as_f64().unwrap();
                m(x).total_cmp(&m(y))
            })
            .unwrap();
        assert_eq!(a["best"], best["method"], "{cache}");
        let (r, lo, hi) = (
            a["ratio"].as_f64().unwrap(),
            a["ci"][0].as_f64().unwrap(),
            a["ci"][1].as_f64().unwrap(),
        );
        assert!(lo <= r && r <= hi, "{a}");
        assert_eq!(
            a["clear"].as_bool().unwrap(),
            lo > 1.05 && a["best"] != a["versus"],
            "{a}"
        );
    }
    let uncached_rows = rows
        .iter()
        .filter(|r| r["method"] == "uncached" && r["unsupported"].is_null())
        .count();
    assert_eq!(
        v["uncached"].as_array().unwrap().len(),
        uncached_rows.min(2)
    );
    for u in v["uncached"].as_array().unwrap() {
        let (r, lo, hi) = (
            u["ratio"].as_f64().unwrap(),
            u["ci"][0].as_f64().unwrap(),
            u["ci"][1].as_f64().unwrap(),
        );
        assert!(lo <= r && r <= hi, "{u}");
        let within = lo >= 1.0 / 1.05 && hi <= 1.05;
        assert_eq!(u["matches"].as_bool().unwrap(), within || lo > 1.05, "{u}");
    }
    let text = iolab()
        .args(["advise", f.to_str().unwrap()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("Advice, warm cache") && text.contains("Advice, cold cache"),
        "{text}"
    );
}
