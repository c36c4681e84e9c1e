//! The binary end to end: classic outputs, formats, and every bad input giving one line on
//! stderr, the right exit code, and an untouched file.

mod common;
use common::{Lack, may_drop_caches, skip};

use common::{iolab, iolab_as_nobody};

use common::{bytes, check_csv, fs_type, is_root, plain_xor, write_file};
use predicates::prelude::*;
use std::path::Path;

/// Runs and checks: exit code, stderr is exactly one `iolab: ` line containing `needle`.
fn fails_with(args: &[&str], code: i32, needle: &str) {
    let out = iolab().args(args).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "{args:?}: {err}");
    assert_eq!(err.lines().count(), 1, "{args:?}: not one line: {err}");
    assert!(err.starts_with("iolab: "), "{args:?}: {err}");
    assert!(err.contains(needle), "{args:?}: wanted '{needle}' in {err}");
}

fn xor_line(x: u32) -> String {
    format!("Xor value is {x:08x}")
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn run_read_prints_the_classic_lines() {
    let dir = tempfile::tempdir().unwrap();
    let data = bytes(100_003, 1);
    let f = write_file(dir.path(), "in", &data);
    for (bs, count) in [("4096", "10"), ("3", "1000"), ("1K", "7")] {
        let n: usize =
            bs.replace("1K", "1024").parse::<usize>().unwrap() * count.parse::<usize>().unwrap();
        iolab()
            .args(["run", s(&f), "-r", bs, count])
            .assert()
            .success()
            .stdout(predicate::str::starts_with(format!(
                "Reading {} in chunks of {} .....\nNumber of blocks read: {count} blocks\nSize of the file read: ",
                s(&f),
                n / count.parse::<usize>().unwrap()
            )))
            .stdout(predicate::str::contains("Time taken: "))
            .stdout(predicate::str::contains("Rate at which file was read: "))
            .stdout(predicate::str::contains(xor_line(plain_xor(&data[..n]))));
    }
    // The course's units (MB of 2^20 bytes, as cout printed them): a small read is never
    // "0.00".
    let out = iolab()
        .args(["run", s(&f), "-r", "4096", "1"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("Size of the file read: 0.00390625 MB\n"),
        "{text}"
    );
    let rate: f64 = text
        .lines()
        .find_map(|l| l.strip_prefix("Rate at which file was read: "))
        .and_then(|r| r.strip_suffix(" MiB/sec"))
        .and_then(|r| r.parse().ok())
        .unwrap_or_else(|| panic!("{text}"));
    assert!(rate > 0.0, "{text}");
    for method in ["mmap", "pread", "uring", "fcntl"] {
        iolab()
            .args([
                "run",
                s(&f),
                "-r",
                "4K",
                "5",
                "--method",
                method,
                "--threads",
                "2",
            ])
            .assert()
            .success()
            .stdout(predicate::str::contains(xor_line(plain_xor(
                &data[..20480],
            ))));
    }
}

#[test]
fn run_read_past_the_end_reads_to_the_end_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let data = bytes(5000, 2);
    let f = write_file(dir.path(), "in", &data);
    iolab()
        .args(["run", s(&f), "-r", "1M", "3"])
        .assert()
        .success()
        .stdout(predicate::str::contains(xor_line(plain_xor(&data))))
        .stderr(predicate::str::contains("shorter than asked"));
}

#[test]
fn run_write_creates_and_never_overwrites_without_force() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let wrote = iolab()
        .args(["run", s(&out), "-w", "4K", "3"])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "Size of the file that was written: 0.0117188 MB\n",
        ))
        .stdout(predicate::str::contains("Rate at which file was written: "))
        .get_output()
        .stdout
        .clone();
    let written = std::fs::read(&out).unwrap();
    assert_eq!(written.len(), 12288);
    // The XOR of what was written, as a read of it prints.
    let wrote = String::from_utf8_lossy(&wrote);
    assert!(wrote.contains(&xor_line(plain_xor(&written))), "{wrote}");
    let keep = write_file(dir.path(), "keep", b"precious data");
    fails_with(&["run", s(&keep), "-w", "4K", "3"], 2, "--force");
    assert_eq!(std::fs::read(&keep).unwrap(), b"precious data");
    iolab()
        .args([
            "run",
            s(&keep),
            "-w",
            "5",
            "3",
            "--force",
            "--method",
            "mmap",
        ])
        .assert()
        .success();
    assert_eq!(std::fs::metadata(&keep).unwrap().len(), 15);
    // Only the outputs remain: no temporary files beside them.
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["keep", "out"]);
}

#[test]
fn a_failed_write_leaves_the_old_file_whole() {
    let dir = tempfile::tempdir().unwrap();
    let keep = write_file(dir.path(), "keep", b"precious data");
    // O_DIRECT needs 4 KiB-multiple blocks: this fails after the target is prepared.
    fails_with(
        &[
            "write",
            s(&keep),
            "--size",
            "10K",
            "--bs",
            "3K",
            "--method",
            "direct",
            "--force",
        ],
        2,
        "multiple of 4096",
    );
    assert_eq!(std::fs::read(&keep).unwrap(), b"precious data");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn read_formats_parse_and_agree() {
    let dir = tempfile::tempdir().unwrap();
    let data = bytes(300_001, 3);
    let f = write_file(dir.path(), "in", &data);
    let out = iolab()
        .args([
            "read",
            s(&f),
            "--bs",
            "64K",
            "--repeat",
            "2",
            "--warmup",
            "1",
            "--format",
            "json",
            "--method",
            "mmap",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["xor"], format!("{:08x}", plain_xor(&data)));
    assert_eq!(v["runs"].as_array().unwrap().len(), 3);
    assert_eq!(v["mib_s"]["n"], 2);
    assert_eq!(v["config"]["method"], "mmap");
    assert!(v["host"]["kernel"].as_str().unwrap().starts_with("Linux"));
    assert!(v["runs"][1]["cache"]["verified"].as_bool().unwrap());
    let csv = iolab()
        .args(["read", s(&f), "--repeat", "2", "--format", "csv"])
        .output()
        .unwrap();
    let text = String::from_utf8(csv.stdout).unwrap();
    assert_eq!(text.lines().count(), 1 + 3);
    assert!(text.starts_with("method,bs_bytes,"), "{text}");
    iolab()
        .args(["read", s(&f), "--repeat", "1", "--format", "markdown"])
        .assert()
        .success()
        .stdout(predicate::str::contains("|---|"));
    iolab()
        .args([
            "read",
            s(&f),
            "--repeat",
            "1",
            "--size",
            "1000",
            "--pattern",
            "random",
            "--bs",
            "3",
        ])
        .assert()
        .success()
        .stdout(predicate::str::contains(xor_line(plain_xor(&data[..1000]))));
}

#[test]
fn write_command_verifies_and_reports() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("w");
    let o = iolab()
        .args([
            "write",
            s(&out),
            "--size",
            "1M",
            "--bs",
            "64K",
            "--sync",
            "end",
            "--format",
            "json",
            "--repeat",
            "2",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["verified"], true);
    let back = std::fs::read(&out).unwrap();
    assert_eq!(back.len(), 1 << 20);
    assert_eq!(v["xor"], format!("{:08x}", plain_xor(&back)).as_str());
    fails_with(
        &["write", s(&out), "--size", "1M"],
        2,
        "refusing to overwrite",
    );
    assert_eq!(std::fs::read(&out).unwrap(), back);
}

/// Every block written differs: an even number of blocks no longer XORs to 00000000 (what a
/// sparse file gives), every method and thread count writes the same bytes for the same seed,
/// and a different seed writes other bytes.
#[test]
fn written_blocks_differ_and_every_method_writes_the_same_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let mut seen = Vec::new();
    for (m, threads, seed) in [
        ("write", "1", "1"),
        ("pwrite", "2", "1"),
        ("mmap", "2", "1"),
        ("direct", "1", "1"),
        ("write", "1", "2"),
    ] {
        let out = dir.path().join(format!("{m}-{threads}-{seed}"));
        let o = iolab()
            .args([
                "write",
                s(&out),
                "--size",
                "64K",
                "--bs",
                "4K",
                "--method",
                m,
            ])
            .args([
                "--threads",
                threads,
                "--seed",
                seed,
                "--repeat",
                "1",
                "--format",
                "json",
            ])
            .output()
            .unwrap();
        if !o.status.success() && String::from_utf8_lossy(&o.stderr).contains("unsupported") {
            continue; // O_DIRECT on a filesystem without it (tmpfs)
        }
        assert!(
            o.status.success(),
            "{m}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let back = std::fs::read(&out).unwrap();
        assert_eq!(v["verified"], true);
        assert_ne!(plain_xor(&back), 0, "{m}: 16 blocks XOR to zero");
        assert_ne!(back[..4096], back[4096..8192], "{m}: two blocks alike");
        seen.push((seed, back));
    }
    let seed1: Vec<_> = seen.iter().filter(|(s, _)| *s == "1").collect();
    assert!(
        seed1.windows(2).all(|w| w[0].1 == w[1].1),
        "methods disagree"
    );
    let other = seen.iter().find(|(s, _)| *s == "2").unwrap();
    assert_ne!(other.1, seed1[0].1, "another seed, other bytes");
}

#[test]
fn fast_prints_the_xor_on_stdout_and_talk_on_stderr() {
    let dir = tempfile::tempdir().unwrap();
    for size in [0usize, 5, 4097, 3 << 20] {
        let data = bytes(size, 4);
        let f = write_file(dir.path(), &format!("in{size}"), &data);
        iolab()
            .args(["fast", s(&f)])
            .assert()
            .success()
            .stdout(predicate::eq(format!("{}\n", xor_line(plain_xor(&data)))))
            .stderr(
                predicate::str::contains("iolab fast:").and(predicate::str::contains("resident")),
            );
    }
}

#[test]
fn fast_json_carries_the_same_host_facts_whether_gathered_ahead_or_after() {
    // From 32 MiB, `fast --format json` gathers its host facts on a thread of their own from
    // the start; below, after the run. Both must say the same of this host and this command.
    let dir = tempfile::tempdir().unwrap();
    let facts = |size: usize| {
        let data = bytes(size, 8);
        let f = write_file(dir.path(), &format!("h{size}"), &data);
        let o = iolab()
            .args(["fast", s(&f), "--format", "json"])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(v["xor"], format!("{:08x}", plain_xor(&data)));
        let mut host = v["host"].clone();
        let line = host["command_line"].as_str().unwrap().to_string();
        assert!(
            line.contains("fast") && line.contains(&format!("h{size}")),
            "{line}"
        );
        let map = host.as_object_mut().unwrap();
        for varying in ["command_line", "date"] {
            map.remove(varying);
        }
        host
    };
    let after = facts(4096);
    let ahead = facts(iolab::experiments::fast::PER_THREAD as usize);
    assert_eq!(ahead, after);
    let uname = std::process::Command::new("uname")
        .arg("-r")
        .output()
        .unwrap();
    let release = String::from_utf8_lossy(&uname.stdout).trim().to_string();
    assert!(
        after["kernel"].as_str().unwrap().contains(&release),
        "{after}"
    );
    assert!(after["cores"].as_u64().unwrap() >= 1);
}

/// `fast FILE --explain` with the probe lowered to every part of 1 MiB or more, JSON on stdout,
/// after `cache CACHE FILE` (load or evict): the JSON (whose XOR is checked against `data`) and
/// the explanation.
fn fast_explained(f: &Path, cache: &str, data: &[u8]) -> (serde_json::Value, String) {
    iolab().args(["cache", cache, s(f)]).assert().success();
    let o = iolab()
        .args([
            "fast",
            s(f),
            "--explain",
            "--probe-from",
            "1MiB",
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    assert!(o.status.success());
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["xor"], format!("{:08x}", plain_xor(data)));
    (v, String::from_utf8_lossy(&o.stderr).into_owned())
}

#[test]
fn fast_explain_states_the_probe_budget_it_used_and_a_row_per_probe() {
    // A warm 40 MiB file probed (probe_from lowered): the explanation names each probe and the
    // budget as the code has it (0.5% once printed as "0%").
    let dir = tempfile::tempdir().unwrap();
    let data = bytes(40 << 20, 6);
    let f = write_file(dir.path(), "e", &data);
    let (v, err) = fast_explained(&f, "load", &data);
    // The cost it states is the JSON's, with the part's probe time, bytes and the winner's pace
    // that give it.
    let c = &v["choice"];
    let u = &c["uses"][0];
    let cost = format!(
        "probe cost: {:.1} ms",
        c["probe_cost_secs"].as_f64().unwrap() * 1e3
    );
    assert!(err.contains(&cost), "{cost} in {err}");
    let took = format!(
        "resident part: the probe took {:.1} ms for ",
        u["probe_secs"].as_f64().unwrap() * 1e3
    );
    assert!(err.contains(&took), "{took} in {err}");
    assert!(u["probe_bytes"].as_u64().unwrap() > 0, "{u}");
    let budget = format!(
        "budget of {}% of the part's time",
        100.0 * iolab::experiments::fast::PROBE_BUDGET
    );
    assert!(err.contains(&budget), "{err}");
    assert!(!err.contains("budget of 0%"), "{err}");
    assert!(err.contains("probe cost: "), "{err}");
    // A warm part races mapped against copied: one row each, marked resident.
    let rows = err
        .lines()
        .filter(|l| {
            l.contains(" resident ") && (l.starts_with("mmap x") || l.starts_with("pread x"))
        })
        .count();
    assert_eq!(rows, 2, "{err}");
}

#[test]
fn fast_explain_says_what_of_a_cold_probe_was_the_winners_own_start() {
    // A cold 96 MiB file probed (room for two 32 MiB slices and their gaps): the first
    // candidate's setup and first half are what a run without a probe pays too, so the
    // explanation names them and the cost leaves them out, as the JSON has it.
    let dir = tempfile::tempdir().unwrap();
    let data = bytes(96 << 20, 8);
    let f = write_file(dir.path(), "c", &data);
    let (v, err) = fast_explained(&f, "evict", &data);
    let c = &v["choice"];
    let Some(u) = c["uses"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["warm"] == false && u["probe_secs"].as_f64().unwrap() > 0.0)
    else {
        // Some of it stayed resident (readahead around the eviction): no cold probe to check.
        assert!(v["resident"].as_f64().unwrap() > 0.0, "{v}");
        return;
    };
    let cost = format!(
        "probe cost: {:.1} ms",
        c["probe_cost_secs"].as_f64().unwrap() * 1e3
    );
    assert!(err.contains(&cost), "{cost} in {err}");
    let start = u["start_bytes"].as_u64().unwrap();
    let others = u["probe_bytes"].as_u64().unwrap() - start;
    if start > 0 {
        let own = format!(
            "own start (its setup and first {}, which a run without a probe pays too) was {:.1} ms of that",
            iolab::size::format_size(start),
            u["start_secs"].as_f64().unwrap() * 1e3
        );
        assert!(err.contains(&own), "{own} in {err}");
        let rest = format!("reads the other {} in", iolab::size::format_size(others));
        assert!(err.contains(&rest), "{rest} in {err}");
    } else {
        assert!(!err.contains("own start"), "{err}");
        assert_eq!(u["start_secs"].as_f64().unwrap(), 0.0, "{u}");
    }
}

#[test]
fn cache_evict_then_status_shows_it_cold() {
    let dir = tempfile::tempdir().unwrap();
    let f = write_file(dir.path(), "c", &bytes(4 << 20, 5));
    iolab()
        .args(["cache", "load", s(&f)])
        .assert()
        .success()
        .stdout(predicate::str::contains("100.0%"));
    if fs_type(dir.path()) == "tmpfs" {
        return skip(Lack::Machine, "tmpfs ignores fadvise(DONTNEED)");
    }
    iolab().args(["cache", "evict", s(&f)]).assert().success();
    let o = iolab()
        .args(["cache", "status", s(&f), "--format", "json"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let r = &v["files"][0]["residency"];
    let frac = r["resident_pages"].as_f64().unwrap() / r["total_pages"].as_f64().unwrap();
    assert!(frac <= 0.05, "still {frac} resident after evict");
    assert!(v["page_cache"]["cached"].as_u64().unwrap() > 0);
    iolab()
        .args(["cache", "status", s(&f)])
        .assert()
        .success()
        .stdout(predicate::str::contains("page cache: Cached"));
}

#[test]
fn cold_runs_are_verified_and_drop_all_needs_root() {
    let dir = tempfile::tempdir().unwrap();
    let f = write_file(dir.path(), "c", &bytes(2 << 20, 6));
    if fs_type(dir.path()) == "tmpfs" {
        return skip(Lack::Machine, "tmpfs ignores fadvise(DONTNEED)");
    }
    let cold_read = |not_root: bool| {
        let mut c = iolab();
        if not_root {
            c.env("IOLAB_NO_ROOT", "1");
        }
        let args = [
            "--cache",
            "cold",
            "--drop-all",
            "--repeat",
            "1",
            "--warmup",
            "0",
            "--format",
            "json",
        ];
        let o = c.args(["read", s(&f)]).args(args).output().unwrap();
        assert!(o.status.success());
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        (String::from_utf8_lossy(&o.stderr).into_owned(), v)
    };
    // Forced "not root": the tool says why it did not drop every cache, and still goes cold.
    let (err, v) = cold_read(true);
    assert!(err.contains("needs root"), "{err}");
    assert_eq!(v["runs"][0]["cache"]["dropped_all"], false);
    assert_eq!(v["runs"][0]["cache"]["verified"], true);
    if is_root() {
        if may_drop_caches() {
            let (_, v) = cold_read(false);
            assert_eq!(v["runs"][0]["cache"]["dropped_all"], true);
        }
    } else {
        eprintln!("root branch skipped: not root");
    }
}

#[test]
fn bad_files_give_one_line_and_the_right_code() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing");
    fails_with(&["run", s(&missing), "-r", "4K", "1"], 1, "No such file");
    fails_with(&["fast", s(dir.path())], 2, "is a directory");
    fails_with(&["read", "/dev/zero"], 2, "character device");
    fails_with(&["fast", "/proc/self/status"], 2, "/proc or /sys");
    let fifo = dir.path().join("fifo");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    fails_with(&["run", s(&fifo), "-r", "4K", "1"], 2, "FIFO");
    fails_with(&["read", s(&fifo), "--method", "mmap"], 2, "FIFO");
}

#[test]
fn empty_file_has_xor_zero_and_a_note() {
    let dir = tempfile::tempdir().unwrap();
    let f = write_file(dir.path(), "empty", b"");
    for m in ["read", "mmap", "direct", "uring"] {
        iolab()
            .args(["read", s(&f), "--method", m, "--repeat", "1"])
            .assert()
            .success()
            .stdout(predicate::str::contains("Xor value is 00000000"))
            .stderr(predicate::str::contains("empty"));
    }
    iolab()
        .args(["run", s(&f), "-r", "4K", "1"])
        .assert()
        .success()
        .stdout(predicate::str::contains("Xor value is 00000000"));
}

#[test]
fn bad_numbers_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let data = bytes(10_000, 7);
    let f = write_file(dir.path(), "in", &data);
    let p = s(&f);
    fails_with(&["run", p, "-r", "0", "1"], 2, "block size");
    fails_with(&["run", p, "-r", "-1", "1"], 2, "'-1'");
    fails_with(&["run", p, "-r", "4Q", "1"], 2, "'4Q'");
    fails_with(&["run", p, "-r", "4K", "0"], 2, "block count");
    fails_with(&["run", p, "-r", "4K", "-1"], 2, "'-1'");
    fails_with(&["run", p, "-r", "1E", "100"], 2, "does not fit");
    fails_with(
        &["run", p, "-r", "4K", "99999999999999999999999"],
        2,
        "whole number",
    );
    fails_with(&["read", p, "--threads", "0"], 2, "at least 1");
    fails_with(&["read", p, "--size", "0"], 2, "at least 1 byte");
    fails_with(&["read", p, "--method", "nope"], 2, "expected one of");
    fails_with(
        &["read", p, "--bs", "1E", "--count", "100"],
        2,
        "does not fit",
    );
    fails_with(&["run", p, "-r", "-w", "4K", "1"], 2, "cannot be used with");
    fails_with(&["frobnicate"], 2, "unrecognized subcommand");
    // A size beyond the file reads the whole file and says so.
    iolab()
        .args(["read", p, "--size", "1E", "--repeat", "1"])
        .assert()
        .success()
        .stdout(predicate::str::contains(xor_line(plain_xor(&data))))
        .stderr(predicate::str::contains("shorter than asked"));
    // A block larger than the file is one short block.
    iolab()
        .args(["run", p, "-r", "1G", "1", "--method", "mmap"])
        .assert()
        .success()
        .stdout(predicate::str::contains(xor_line(plain_xor(&data))));
    assert_eq!(std::fs::read(&f).unwrap(), data, "input file changed");
}

#[test]
fn permission_denied_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let f = write_file(dir.path(), "secret", &bytes(100, 8));
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o000)).unwrap();
    if !is_root() {
        fails_with(&["fast", s(&f)], 1, "Permission denied");
        return;
    }
    // Root reads anything: drop to nobody with setpriv (util-linux) to prove the message.
    let o = iolab_as_nobody().args(["fast", s(&f)]).output();
    match o {
        Ok(o) if o.status.code() == Some(1) => {
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(err.contains("Permission denied"), "{err}");
            assert_eq!(err.lines().count(), 1);
        }
        other => skip(
            Lack::Setup,
            &format!("cannot drop privileges here: {other:?}"),
        ),
    }
}

#[test]
fn direct_on_tmpfs_works_or_says_why() {
    let shm = Path::new("/dev/shm");
    if !shm.is_dir() {
        return skip(Lack::Machine, "no /dev/shm");
    }
    let dir = tempfile::tempdir_in(shm).unwrap();
    let data = bytes(10_000, 9);
    let f = write_file(dir.path(), "d", &data);
    for m in ["direct", "uring-direct"] {
        let o = iolab()
            .args(["read", s(&f), "--method", m, "--repeat", "1"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        match o.status.code() {
            Some(0) => {
                assert!(String::from_utf8_lossy(&o.stdout).contains(&xor_line(plain_xor(&data))))
            }
            Some(1) => assert!(
                err.contains("unsupported") && err.lines().count() == 1,
                "{err}"
            ),
            c => panic!("{m}: exit {c:?}: {err}"),
        }
    }
    // fast never fails for lack of O_DIRECT: it chooses a buffered method there.
    iolab()
        .args(["fast", s(&f)])
        .assert()
        .success()
        .stdout(predicate::str::contains(xor_line(plain_xor(&data))));
}

#[test]
fn disk_full_is_an_error_and_leaves_nothing_behind() {
    if !is_root() {
        return skip(Lack::Setup, "mounting a small tmpfs needs root");
    }
    let dir = tempfile::tempdir().unwrap();
    let mnt = dir.path().join("small");
    std::fs::create_dir(&mnt).unwrap();
    let ok = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=1m", "tmpfs"])
        .arg(&mnt)
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    if !ok {
        return skip(Lack::Setup, "cannot mount tmpfs here");
    }
    let result = std::panic::catch_unwind(|| {
        for m in ["write", "pwrite", "mmap"] {
            let out = mnt.join(format!("full-{m}"));
            fails_with(
                &[
                    "write",
                    s(&out),
                    "--size",
                    "4M",
                    "--method",
                    m,
                    "--repeat",
                    "1",
                ],
                1,
                "No space left",
            );
            assert!(!out.exists(), "{m}: partial output left behind");
            // The classic front too, where the free-space check does not run first.
            fails_with(
                &["run", s(&out), "-w", "64K", "64", "--method", m],
                1,
                "No space left",
            );
            assert!(!out.exists(), "{m}: partial output left behind by run -w");
        }
        // Past the up-front space check: the engines themselves meet ENOSPC mid-write.
        use iolab::engine::write::{SyncMode, WriteMethod, open_target, prepare_write};
        use iolab::workload::{Pattern, Workload};
        for m in WriteMethod::ALL {
            let target = open_target(&mnt.join("engine"), false).unwrap();
            let w = Workload {
                bs: 64 << 10,
                len: 4 << 20,
                pattern: Pattern::Seq,
                seed: 1,
                threads: 1,
            };
            let err = prepare_write(m, &target, &w, SyncMode::None)
                .and_then(|p| p.run())
                .unwrap_err();
            assert!(
                err.to_string().contains("No space left")
                    || err.to_string().contains("unsupported"),
                "{}: {err}",
                m.name()
            );
        }
        // ior through a mapping, past its up-front check: an error, not zero pages called
        // verified, and its test file removed.
        let cfg = iolab::experiments::ior::IorConfig {
            api: iolab::experiments::ior::IorApi::Mmap,
            block: 4 << 20,
            transfer: 1 << 20,
            path: mnt.join("ior"),
            segments: 1,
            file_per_proc: false,
            reorder: false,
            reorder_offset: 1,
            tasks_per_node: None,
            fsync: false,
            write: true,
            read: true,
            iterations: 1,
            stonewall: None,
            keep: false,
            seed: 1,
            verify: true,
        };
        let err = iolab::experiments::ior::run_ior(&cfg, &iolab::experiments::ior::Solo)
            .unwrap_err()
            .to_string();
        assert!(err.contains("No space left"), "{err}");
        // And the command refuses up front.
        let o = iolab()
            .args(["ior", "-a", "mmap", "-w", "-b", "4m", "-t", "1m", "-o"])
            .arg(mnt.join("ior"))
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(1));
        let left: Vec<_> = std::fs::read_dir(&mnt).unwrap().collect();
        assert!(left.is_empty(), "temporary files left behind: {left:?}");
    });
    let _ = std::process::Command::new("umount").arg(&mnt).status();
    result.unwrap();
}

#[test]
fn help_has_examples_and_version_works() {
    iolab()
        .args(["run", "--help"])
        .assert()
        .success()
        .stdout(predicate::str::contains("Examples:"));
    iolab()
        .arg("--version")
        .assert()
        .success()
        .stdout(predicate::str::contains("iolab"));
}

/// Nothing lost: --force replaces only an earlier report, an output that cannot be written is
/// refused before minutes of measuring, and a sender will not send two files of one name.
#[test]
fn outputs_are_refused_before_any_work_and_names_are_unique() {
    let dir = tempfile::tempdir().unwrap();
    let mine = dir.path().join("mine");
    std::fs::create_dir(&mine).unwrap();
    std::fs::write(mine.join("thesis.txt"), b"years of work").unwrap();
    // Refused before any work: the data the suite would make first (kept, in a folder named
    // here) was never made.
    let data = dir.path().join("data");
    fails_with(
        &[
            "suite",
            "--quick",
            "--size",
            "16M",
            "--force",
            "--keep-data",
            "--dir",
            s(&data),
            "--out",
            s(&mine),
        ],
        2,
        "not a report iolab wrote",
    );
    fails_with(
        &[
            "suite",
            "--quick",
            "--keep-data",
            "--dir",
            s(&data),
            "--out",
            s(&dir.path().join("no/such/dir/rep")),
        ],
        1,
        "cannot write the report",
    );
    assert!(!data.exists(), "refused before making any data");
    assert_eq!(
        std::fs::read(mine.join("thesis.txt")).unwrap(),
        b"years of work"
    );
    let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(names.len(), 1, "no data directory left: {names:?}");
    let a = dir.path().join("a.bin");
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    let b = dir.path().join("sub/a.bin");
    std::fs::write(&a, b"1").unwrap();
    std::fs::write(&b, b"2").unwrap();
    fails_with(
        &["send", s(&a), s(&b), "--listen", "127.0.0.1:0"],
        2,
        "two files of this name",
    );
}

/// Smaller traps: a results file that never ends or never starts, a bare number as --listen.
#[test]
fn report_refuses_endless_inputs_and_listen_wants_a_host() {
    fails_with(&["report", "/dev/zero"], 2, "character device");
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    if made.map(|s| s.success()).unwrap_or(false) {
        fails_with(&["report", s(&fifo)], 2, "FIFO");
    }
    let f = dir.path().join("f");
    std::fs::write(&f, b"x").unwrap();
    for bare in ["2325", "0"] {
        fails_with(&["send", s(&f), "--listen", bare], 2, "is not a host");
    }
}

/// CLI conventions: bare `iolab` shows the help (exit 2); a usage error names what is missing, the
/// usage line and the command's help, in one line; completions and manual pages are generated.
#[test]
fn usage_help_completions_and_manual_pages() {
    let o = iolab().output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("Usage: iolab [OPTIONS] <COMMAND>") && err.contains("squeeze"),
        "{err}"
    );
    fails_with(
        &["squeeze", "f"],
        2,
        "not provided: --memory <SIZE>; usage: iolab squeeze [OPTIONS] --memory <SIZE> <FILE> (see 'iolab squeeze --help')",
    );
    fails_with(
        &["cache", "status", "f", "--drop-all"],
        2,
        "see 'iolab cache status --help'",
    );
    fails_with(
        &["read", "f", "--method", "nope"],
        2,
        "(see 'iolab read --help')",
    );
    for (shell, marker) in [
        ("bash", "_iolab()"),
        ("zsh", "#compdef iolab"),
        ("fish", "complete -c iolab"),
    ] {
        let o = iolab().args(["completions", shell]).output().unwrap();
        assert!(o.status.success());
        let script = String::from_utf8_lossy(&o.stdout);
        assert!(
            script.contains(marker) && script.contains("squeeze"),
            "{shell}"
        );
        assert!(
            !script.contains("squeeze-worker"),
            "{shell}: the internal command is hidden"
        );
    }
    let page = iolab().arg("man").output().unwrap();
    assert!(String::from_utf8_lossy(&page.stdout).contains(".TH iolab 1"));
    let page = iolab().args(["man", "squeeze"]).output().unwrap();
    let text = String::from_utf8_lossy(&page.stdout);
    assert!(
        text.contains(".TH iolab-squeeze 1") && text.contains("\\-\\-memory"),
        "{text}"
    );
    fails_with(&["man", "nope"], 2, "no such command");
}

/// `iolab man --dir` writes a page per command, each with EXAMPLES kept line for line, EXIT
/// STATUS, ENVIRONMENT, SEE ALSO, a date and a version; `man -l` shows them; nothing is replaced
/// without --force.
#[test]
fn man_dir_writes_every_page_with_examples() {
    let dir = tempfile::tempdir().unwrap();
    let pages = dir.path().join("man1");
    let o = iolab().args(["man", "--dir"]).arg(&pages).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let names: Vec<String> = std::fs::read_dir(&pages)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    // Every command the top-level help lists has its page.
    let help = iolab().arg("--help").output().unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    let commands: Vec<&str> = help
        .split("Commands:")
        .nth(1)
        .unwrap()
        .split("Options:")
        .next()
        .unwrap()
        .lines()
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .collect();
    assert!(commands.len() >= 20, "{commands:?}");
    for c in &commands {
        assert!(
            names.contains(&format!("iolab-{c}.1")),
            "no page for {c}: {names:?}"
        );
    }
    assert!(names.contains(&"iolab.1".to_string()));
    // Every page a page lists (iolab-cache(1) lists iolab-cache-status(1)) is written.
    let mut listed = 0;
    for name in &names {
        let roff = std::fs::read_to_string(pages.join(name))
            .unwrap()
            .replace("\\-", "-");
        for (at, _) in roff.match_indices("(1)") {
            let word = roff[..at]
                .rsplit(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
                .next()
                .unwrap();
            // A page's name, not a placeholder (iolab-COMMAND.1 in man's own help).
            if word.starts_with("iolab-") && word == word.to_lowercase() {
                listed += 1;
                assert!(
                    names.contains(&format!("{word}.1")),
                    "{name} lists {word}(1), not written: {names:?}"
                );
            }
        }
    }
    assert!(
        names.contains(&"iolab-cache-status.1".to_string()) && listed > 20,
        "{listed} pages listed: {names:?}"
    );
    let man = std::process::Command::new("man")
        .arg("--version")
        .output()
        .is_ok();
    for name in &names {
        let roff = std::fs::read_to_string(pages.join(name)).unwrap();
        let th = roff.lines().find(|l| l.starts_with(".TH ")).unwrap();
        assert!(
            th.contains(" 1 20") && th.contains(env!("CARGO_PKG_VERSION")),
            "{name}: a date and version in {th}"
        );
        for section in [
            ".SH NAME",
            ".SH SYNOPSIS",
            ".SH DESCRIPTION",
            ".SH OPTIONS",
            ".SH EXAMPLES\n.nf",
            ".SH \"EXIT STATUS\"",
            ".SH ENVIRONMENT",
            ".SH \"SEE ALSO\"",
        ] {
            assert!(roff.contains(section), "{name} lacks {section}");
        }
        assert!(
            !roff.contains(".SH EXTRA"),
            "{name}: help text reflowed into EXTRA"
        );
        if man {
            let shown = std::process::Command::new("man")
                .arg("-l")
                .arg(pages.join(name))
                .env("MANWIDTH", "200")
                .env("MAN_KEEP_FORMATTING", "")
                .output()
                .unwrap();
            let shown = String::from_utf8_lossy(&shown.stdout);
            let examples = shown
                .split("EXAMPLES")
                .nth(1)
                .unwrap_or_else(|| panic!("{name}: man -l shows no EXAMPLES: {shown}"));
            // The first example is one line, as written.
            let first = examples
                .lines()
                .map(str::trim)
                .find(|l| !l.is_empty())
                .unwrap();
            assert!(first.starts_with("iolab"), "{name}: {first}");
        }
    }
    if !man {
        skip(Lack::Setup, "man -l: no man here (.ci/run installs man-db)");
    }
    // Again: refused, nothing replaced; with --force it goes.
    let before = std::fs::read_to_string(pages.join("iolab-read.1")).unwrap();
    std::fs::write(pages.join("iolab-read.1"), "mine").unwrap();
    let o = iolab().args(["man", "--dir"]).arg(&pages).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        std::fs::read_to_string(pages.join("iolab-read.1")).unwrap(),
        "mine"
    );
    let o = iolab()
        .args(["man", "--force", "--dir"])
        .arg(&pages)
        .output()
        .unwrap();
    assert!(o.status.success());
    assert_eq!(
        std::fs::read_to_string(pages.join("iolab-read.1")).unwrap(),
        before
    );
}

/// `cache status DIR` walks it like vmtouch and adds a total; O_DIRECT refuses unaligned blocks.
#[test]
fn cache_status_walks_directories_and_direct_refuses_unaligned_blocks() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    write_file(dir.path(), "a.bin", &bytes(8192, 1));
    write_file(&dir.path().join("sub"), "b.bin", &bytes(4096, 2));
    let o = iolab()
        .args(["cache", "status", s(dir.path())])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("a.bin") && text.contains("sub/b.bin"),
        "{text}"
    );
    assert!(
        text.contains("total (2 files)") && text.contains("/3 "),
        "{text}"
    );
    let f = write_file(dir.path(), "d.bin", &bytes(1 << 20, 3));
    fails_with(
        &["read", s(&f), "--method", "direct", "--bs", "3000"],
        2,
        "not a multiple of 4096",
    );
}

/// Output conventions: every command's JSON says its schema and host, durations are seconds,
/// the XOR is 8 hex digits; CSV headers have one style; table formats are honoured by the
/// classic commands too.
#[test]
fn json_and_csv_follow_one_convention_across_commands() {
    let dir = tempfile::tempdir().unwrap();
    let data = bytes(1 << 20, 5);
    let f = write_file(dir.path(), "in", &data);
    let want_xor = format!("{:08x}", plain_xor(&data));
    let cmds: Vec<Vec<&str>> = vec![
        vec!["read", s(&f), "--repeat", "1"],
        vec!["run", s(&f), "-r", "4K", "256"],
        vec!["fast", s(&f)],
        vec!["run2", s(&f), "64K"],
        vec!["sweep", s(&f), "--repeat", "1", "--bs", "64K,1M"],
        vec!["cache", "status", s(&f)],
    ];
    fn walk(v: &serde_json::Value, path: &str, xors: &mut Vec<String>) {
        match v {
            serde_json::Value::Object(m) => {
                assert!(
                    !m.contains_key("nanos"),
                    "{path}: a {{secs, nanos}} duration"
                );
                for (k, x) in m {
                    if k == "xor" && !x.is_null() {
                        let h = x.as_str().unwrap_or_else(|| panic!("{path}.xor: {x}"));
                        assert!(
                            h.len() == 8 && h.chars().all(|c| c.is_ascii_hexdigit()),
                            "{h}"
                        );
                        xors.push(h.to_string());
                    }
                    walk(x, &format!("{path}.{k}"), xors);
                }
            }
            serde_json::Value::Array(a) => a.iter().for_each(|x| walk(x, path, xors)),
            _ => {}
        }
    }
    for args in &cmds {
        let o = iolab()
            .args(args)
            .args(["--format", "json"])
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let schema = v["schema"].as_str().unwrap_or_default();
        assert!(
            schema.starts_with("iolab-") && schema.ends_with("/1"),
            "{args:?}: {schema}"
        );
        assert!(v["host"]["kernel"].is_string(), "{args:?}");
        let mut xors = Vec::new();
        walk(&v, args[0], &mut xors);
        if ["read", "fast"].contains(&args[0]) {
            assert_eq!(v["xor"], want_xor.as_str(), "{args:?}");
        }
        let o = iolab()
            .args(args)
            .args(["--format", "csv"])
            .output()
            .unwrap();
        assert!(o.status.success(), "{args:?}");
        let text = String::from_utf8_lossy(&o.stdout);
        let header = text.lines().next().unwrap_or_default();
        assert!(
            header
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == ','),
            "{args:?}: {header}"
        );
        assert!(text.lines().count() >= 2, "{args:?}: {text}");
        let o = iolab()
            .args(args)
            .args(["--format", "markdown"])
            .output()
            .unwrap();
        assert!(
            String::from_utf8_lossy(&o.stdout).contains("|---|"),
            "{args:?}"
        );
    }
}

/// The kernel hides a file's residency from a user who cannot write it (every page reads as
/// resident): the run says "not visible" and judges cold and warm from its device reads.
#[test]
fn hidden_residency_is_judged_from_the_device() {
    if !is_root() {
        return skip(
            Lack::Setup,
            "needs root to make a file another user can only read",
        );
    }
    // Under /tmp, which every user may enter (a clone's folder may not be).
    let dir = tempfile::tempdir().unwrap();
    if fs_type(dir.path()) == "tmpfs" {
        return skip(Lack::Machine, "/tmp is tmpfs, where nothing is ever cold");
    }
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let f = write_file(dir.path(), "theirs", &bytes(16 << 20, 31));
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
    for cache in ["cold", "warm"] {
        let o = iolab_as_nobody()
            .args([
                "read",
                s(&f),
                "--cache",
                cache,
                "--repeat",
                "2",
                "--format",
                "json",
            ])
            .output();
        let o = match o {
            Ok(o) if o.status.success() => o,
            other => {
                return skip(
                    Lack::Setup,
                    &format!("cannot run as nobody here: {other:?}"),
                );
            }
        };
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        for run in v["runs"].as_array().unwrap() {
            let c = &run["cache"];
            assert_eq!(c["visible"], false, "{c}");
            assert_eq!(c["verified"], true, "{cache}: {c} {}", run["counters"]);
            assert!(c["note"].as_str().unwrap().contains("not visible"), "{c}");
        }
    }
}

/// `iolab clean` goes by the ledgers of dead runs, never by names: folders and files named as
/// iolab names its temporary ones, made by the user, stay (tests/safety.rs kills real runs); a
/// DIR that is not a folder is a usage error.
#[test]
fn clean_takes_nothing_for_its_name() {
    let dir = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let d = dir.path();
    let data = d.join(".iolab-data-99999999");
    std::fs::create_dir(&data).unwrap();
    std::fs::write(data.join("data.bin"), vec![7u8; 1 << 20]).unwrap();
    let tmp = d.join(".big.bin.iolab-99999998-3.tmp");
    std::fs::write(&tmp, b"partial").unwrap();
    for args in [&["clean", "--dry-run"][..], &["clean"][..]] {
        let o = iolab()
            .env("IOLAB_STATE_DIR", state.path())
            .args(args)
            .arg(d)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert!(
            String::from_utf8_lossy(&o.stdout).contains("nothing to clean"),
            "{o:?}"
        );
    }
    assert!(data.join("data.bin").exists() && tmp.exists());
    let bad = iolab().arg("clean").arg(&tmp).output().unwrap();
    assert_eq!(bad.status.code(), Some(2));
}

/// Every command's `--format csv` is one table that Python's csv module reads: rows of one
/// width, a header and at least one row, no prose after it (advise's answer goes to stderr).
#[test]
fn every_csv_output_is_one_table() {
    let dir = tempfile::tempdir().unwrap();
    let f = write_file(dir.path(), "f", &bytes(4 << 20, 3));
    let f = s(&f);
    let w = dir.path().join("w.bin");
    let ior_out = dir.path().join("ior").to_string_lossy().into_owned();
    let commands: Vec<Vec<&str>> = vec![
        vec!["read", f, "--repeat", "2"],
        vec!["write", s(&w), "--size", "1M", "--repeat", "2"],
        vec!["access", f, "--duration", "20ms", "--methods", "pread,mmap"],
        vec![
            "sweep", f, "--bs", "4K,64K", "--size", "1M", "--repeat", "2",
        ],
        vec!["advise", f],
        vec!["syscalls", f],
        vec!["vm", f],
        vec!["cache", "status", f],
        vec!["cache", "meminfo"],
        vec!["fast", f],
        vec!["run", f, "-r", "4K", "8"],
        vec!["run2", f, "64K"],
        vec![
            "ior", "-a", "posix", "-b", "1m", "-t", "256k", "-w", "-r", "-o", &ior_out,
        ],
        vec![
            "transfer",
            f,
            "--methods",
            "read:write,mmap:splice",
            "--repeat",
            "2",
        ],
    ];
    for args in commands {
        let o = iolab()
            .args(&args)
            .args(["--format", "csv"])
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        check_csv(&format!("{args:?}"), &o.stdout);
    }
}

/// A typo gets clap's suggestion, a negative size the sizes message, and every usage line is the
/// command's own (an option given is not shown as if it were required).
#[test]
fn typos_negative_sizes_and_usage_lines_are_answered_in_one_line() {
    fails_with(&["raed", "f"], 2, "a similar subcommand exists: 'read'");
    fails_with(
        &["read", "f", "--metod", "pread"],
        2,
        "a similar argument exists: '--method'",
    );
    fails_with(&["read", "--bs", "-4K", "f"], 2, "sizes cannot be negative");
    fails_with(
        &["write", "o.bin", "--size", "-1M"],
        2,
        "sizes cannot be negative",
    );
    fails_with(&["read", "f", "--threads", "-2"], 2, "from 1 to 1024");
    // An option followed by another option lacks its value (it took `--size` as a size).
    fails_with(
        &["read", "f", "--bs", "--size", "4M"],
        2,
        "a value is required for '--bs <BS>'",
    );
    fails_with(
        &["recv", "--format", "bogus"],
        2,
        "usage: iolab recv [OPTIONS] [NAMES]... (see 'iolab recv --help')",
    );
    fails_with(
        &["cache", "status"],
        2,
        "usage: iolab cache status [OPTIONS] <FILES>...",
    );
}

/// `cache status DIR` goes on past what it cannot read under DIR, as vmtouch does: each left
/// out with why, counted in the total line; a file named on the command line still stops it.
#[test]
fn cache_status_of_a_directory_goes_on_past_unreadable_entries() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let mode = |p: &Path, m: u32| std::fs::set_permissions(p, std::fs::Permissions::from_mode(m));
    mode(dir.path(), 0o755).unwrap();
    for (name, m) in [("a", 0o644), ("b", 0o000), ("c", 0o644)] {
        let f = write_file(dir.path(), name, &bytes(8192, 4));
        mode(&f, m).unwrap();
    }
    let sub = dir.path().join("sub");
    std::fs::create_dir(&sub).unwrap();
    write_file(&sub, "d", &bytes(4096, 5));
    mode(&sub, 0o000).unwrap();
    let bin = assert_cmd::cargo::cargo_bin("iolab");
    let run = |args: &[&str]| {
        let mut c = if is_root() {
            // Root reads anything: as nobody (setpriv, util-linux).
            iolab_as_nobody()
        } else {
            std::process::Command::new(&bin)
        };
        c.args(args).output()
    };
    let o = match run(&["cache", "status", s(dir.path()), "--format", "json"]) {
        Ok(o) if o.status.success() || o.status.code() == Some(1) => o,
        other => {
            return skip(
                Lack::Setup,
                &format!("cannot drop privileges here: {other:?}"),
            );
        }
    };
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let files: Vec<&str> = v["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap().rsplit('/').next().unwrap())
        .collect();
    assert_eq!(files, ["a", "c"]);
    let unreadable = v["unreadable"].as_array().unwrap();
    assert_eq!(unreadable.len(), 2, "{unreadable:?}");
    assert!(
        err.contains("2 entries under the directories given could not be read"),
        "{err}"
    );
    let text = run(&["cache", "status", s(dir.path())]).unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("total (2 files, 2 unreadable left out"),
        "{text}"
    );
    if is_root() {
        // As nobody, who cannot write them, the kernel hides the files' residency (mincore and
        // cachestat say "all resident"): said as hidden, never printed as a figure.
        for f in v["files"].as_array().unwrap() {
            assert_eq!(f["visible"], false, "{f}");
            // null in JSON, empty in CSV: never the kernel's "every page".
            assert!(f["residency"].is_null(), "{f}");
            assert!(f["pages"].as_u64().unwrap() > 0, "{f}");
        }
        assert!(text.contains("hidden (no write access)"), "{text}");
        assert!(!text.contains("100.0%"), "{text}");
        let csv = run(&["cache", "status", s(dir.path()), "--format", "csv"]).unwrap();
        let csv = String::from_utf8_lossy(&csv.stdout);
        let rows: Vec<&str> = csv.lines().skip(1).collect();
        assert_eq!(rows.len(), 2, "{csv}");
        for r in rows {
            let cells: Vec<&str> = r.split(',').collect();
            assert_eq!(
                (cells[2], cells[4]),
                ("", ""),
                "hidden residency in CSV: {r}"
            );
        }
        // Evicting files it cannot see the residency of: says it cannot tell.
        let ev = run(&["cache", "evict", s(dir.path())]).unwrap();
        let err = String::from_utf8_lossy(&ev.stderr);
        assert!(err.contains("left the cache cannot be told"), "{err}");
    }
    // Named on the command line, the unreadable file is an error.
    let named = run(&["cache", "status", s(&dir.path().join("b"))]).unwrap();
    assert_eq!(
        named.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&named.stderr)
    );
    mode(&sub, 0o755).unwrap();
}

#[test]
fn write_asks_for_size_or_count_and_classic_access_names_the_wrong_word() {
    fails_with(&["write", "o.bin"], 2, "<--size <SIZE>|--count <COUNT>>");
    let dir = tempfile::tempdir().unwrap();
    let f = write_file(dir.path(), "f", &bytes(8192, 1));
    fails_with(
        &["access", s(&f), "random", "mmap", "adv_bogus"],
        2,
        "unknown madvise hint 'adv_bogus'",
    );
    fails_with(
        &["access", s(&f), "random", "mapp"],
        2,
        "unknown classic method 'mapp'",
    );
}

/// `--quiet` leaves stderr to errors; `--progress always` speaks even when stderr is not a
/// terminal, `never` never (global options: before or after the command).
#[test]
fn quiet_and_progress_say_what_they_promise() {
    let dir = tempfile::tempdir().unwrap();
    let f = write_file(dir.path(), "f", &bytes(1 << 20, 2));
    let err = |args: &[&str]| {
        let o = iolab().args(args).output().unwrap();
        assert!(o.status.success(), "{args:?}");
        String::from_utf8_lossy(&o.stderr).into_owned()
    };
    // Asking for more than the file holds gives a warning.
    let read = ["read", s(&f), "--size", "2M", "--repeat", "2"];
    assert!(err(&read).contains("warning: the file is shorter"));
    assert_eq!(err(&[&["--quiet"][..], &read].concat()), "");
    assert_eq!(err(&[&read[..], &["-q"]].concat()), "");
    let always = err(&[&read[..], &["--progress", "always"]].concat());
    assert!(always.contains("iolab: read: "), "{always}");
    let never = err(&[&read[..], &["--progress", "never"]].concat());
    assert!(!never.contains("iolab: read: "), "{never}");
    // Errors still speak.
    fails_with(&["--quiet", "read", "/nonexistent/f"], 1, "No such file");
}

/// `--export-json/csv/markdown FILE` write the same result beside the human output on stdout,
/// as hyperfine does; a file that exists is refused before any work, and nothing is replaced.
#[test]
fn exports_write_every_format_beside_the_human_output() {
    let dir = tempfile::tempdir().unwrap();
    let f = write_file(dir.path(), "f", &bytes(1 << 20, 5));
    let (json, csv, md) = (
        dir.path().join("r.json"),
        dir.path().join("r.csv"),
        dir.path().join("r.md"),
    );
    let o = iolab()
        .args(["read", s(&f), "--repeat", "2", "--export-json", s(&json)])
        .args(["--export-csv", s(&csv), "--export-markdown", s(&md)])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    let xor = format!("{:08x}", plain_xor(&bytes(1 << 20, 5)));
    assert!(text.contains(&format!("Xor value is {xor}")), "{text}");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(v["schema"], "iolab-read/1");
    assert!(
        v["host"]["kernel"].is_string() && v["interference"].is_object(),
        "{v}"
    );
    assert_eq!(v["xor"].as_str().unwrap(), xor);
    let csv_bytes = std::fs::read(&csv).unwrap();
    check_csv("read --export-csv", &csv_bytes);
    assert_eq!(String::from_utf8_lossy(&csv_bytes).lines().count(), 1 + 3);
    assert!(std::fs::read_to_string(&md).unwrap().contains("|---|"));
    // A file that exists: a usage error before the work, the file untouched.
    std::fs::write(&csv, "mine").unwrap();
    let o = iolab()
        .args(["fast", s(&f), "--export-csv", s(&csv)])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("exists") && o.stdout.is_empty(), "{err}");
    assert_eq!(std::fs::read_to_string(&csv).unwrap(), "mine");
}

#[test]
fn fast_keeps_its_warm_profile_in_the_users_cache_and_trusts_no_one_elses() {
    // A warm file probed: the race is kept in $XDG_CACHE_HOME/iolab/fast-profile.json (made
    // 0600), the JSON says so; --no-profile keeps nothing; a profile another user owns is not
    // used and left as it is.
    let dir = tempfile::tempdir().unwrap();
    let data = bytes(40 << 20, 4);
    let f = write_file(dir.path(), "p", &data);
    let home = dir.path().join("xdg");
    let profile = home.join("iolab").join("fast-profile.json");
    let run = |extra: &[&str]| -> serde_json::Value {
        iolab().args(["cache", "load", s(&f)]).assert().success();
        let o = iolab()
            .env("XDG_CACHE_HOME", &home)
            .args(["fast", s(&f), "--probe-from", "1MiB", "--format", "json"])
            .args(extra)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(v["xor"], format!("{:08x}", plain_xor(&data)));
        v
    };
    let v = run(&["--no-profile"]);
    assert!(v["choice"]["uses"][0].get("profile").is_none(), "{v}");
    assert!(!profile.exists());
    let v = run(&[]);
    if v["resident"].as_f64().unwrap() < 0.999 {
        return skip(
            Lack::Machine,
            "the file did not stay resident after cache load",
        );
    }
    let p = &v["choice"]["uses"][0]["profile"];
    assert_eq!(p["path"], s(&profile), "{v}");
    assert_eq!(p["races"], 0);
    use std::os::unix::fs::MetadataExt;
    if p["kept"] == true {
        let meta = std::fs::metadata(&profile).unwrap();
        assert_eq!(meta.mode() & 0o777, 0o600);
        let text = std::fs::read_to_string(&profile).unwrap();
        assert!(text.contains("\"races\":[["), "{text}");
    }
    if !is_root() {
        return;
    }
    // (A race one side of which read too little is not kept: then there is no profile yet.)
    let before = std::fs::read(&profile).unwrap_or_default();
    std::fs::create_dir_all(profile.parent().unwrap()).unwrap();
    std::fs::write(&profile, &before).unwrap();
    std::os::unix::fs::chown(&profile, Some(65534), None).unwrap();
    let v = run(&[]);
    let p = &v["choice"]["uses"][0]["profile"];
    assert!(
        p["note"].as_str().unwrap().contains("owned by uid 65534"),
        "{v}"
    );
    assert_eq!(p["races"], 0, "{v}");
    assert_eq!(std::fs::read(&profile).unwrap(), before, "left as it is");
}
