//! `iolab trace`: a C program with known reads (read, lseek, pread, readv, preadv, a dup'd
//! descriptor, a forked child and a thread sharing the position, a mapping touched at known
//! pages, stdin from a pipe) traced and checked call by call, byte for byte against the
//! kernel's own count, and as fio's iolog; the exit code, stdout, Ctrl-C, and a run as nobody.

mod common;
use common::*;
use serde_json::Value;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

const PROGRAM: &str = r#"
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

static int fd;
static void *reader(void *arg) {
    char b[512];
    (void)arg;
    if (pread(fd, b, 500, 200000) != 500) exit(10);
    return 0;
}

int main(int argc, char **argv) {
    static char buf[65536];
    char in[100];
    (void)argc;
    fd = open(argv[1], O_RDONLY);
    if (fd < 0) return 9;
    if (read(fd, buf, 1000) != 1000) return 11;
    lseek(fd, 8192, SEEK_SET);
    if (read(fd, buf, 4096) != 4096) return 12;
    if (pread(fd, buf, 3000, 100000) != 3000) return 13;
    struct iovec iov[2] = {{buf, 100}, {buf + 100, 200}};
    if (readv(fd, iov, 2) != 300) return 14;
    if (preadv(fd, iov, 2, 50000) != 300) return 15;
    int fd2 = dup(fd);
    if (read(fd2, buf, 10) != 10) return 16;
    pid_t p = fork();
    if (p == 0) _exit(read(fd, buf, 20) == 20 ? 0 : 1);
    waitpid(p, 0, 0);
    if (read(fd2, buf, 30) != 30) return 17;
    pthread_t t;
    pthread_create(&t, 0, reader, 0);
    pthread_join(t, 0);
    char *m = mmap(0, 4 << 20, PROT_READ, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) return 18;
    volatile char s = 0;
    s ^= m[0];
    s ^= m[1 << 20];
    s ^= m[(2 << 20) + 5];
    s ^= m[(3 << 20) + 3 * 4096];
    munmap(m, 4 << 20);
    if (read(0, in, sizeof in) != 5) return 19;
    close(fd2);
    close(fd);
    printf("done\n");
    return 3;
}
"#;

/// The reads the program makes of its file: (offset, length), in program order (the child's and
/// the thread's in their place).
const READS: &[(u64, u64)] = &[
    (0, 1000),
    (8192, 4096),
    (100000, 3000),
    (12288, 300),
    (50000, 300),
    (12588, 10),
    (12598, 20),
    (12618, 30),
    (200000, 500),
];

/// The two storage-agreement tests read system-wide counters (the block device's cache grows
/// with every file any test makes): they run alone, every other test here shares this lock.
static KERNEL_COUNTERS: std::sync::RwLock<()> = std::sync::RwLock::new(());

fn alone() -> std::sync::RwLockWriteGuard<'static, ()> {
    KERNEL_COUNTERS.write().unwrap_or_else(|e| e.into_inner())
}

fn shared() -> std::sync::RwLockReadGuard<'static, ()> {
    KERNEL_COUNTERS.read().unwrap_or_else(|e| e.into_inner())
}

fn build(dir: &Path) -> Option<PathBuf> {
    let src = dir.join("prog.c");
    std::fs::write(&src, PROGRAM).unwrap();
    let exe = dir.join("prog");
    let ok = std::process::Command::new("cc")
        .args(["-O1", "-pthread", "-o"])
        .arg(&exe)
        .arg(&src)
        .status()
        .is_ok_and(|s| s.success());
    ok.then_some(exe)
}

/// The JSON profile `iolab trace --no-xor --format json -- CMD` prints on stderr; CMD must
/// succeed.
fn profile_json(cmd: &[&std::ffi::OsStr]) -> Value {
    let o = iolab()
        .args(["trace", "--no-xor", "--format", "json", "--"])
        .args(cmd)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let err = String::from_utf8_lossy(&o.stderr);
    serde_json::from_str(&err[err.find('{').unwrap()..]).unwrap()
}

/// `iolab replay TRACE ARGS --format json`, which must succeed: its result.
fn replay_json(trace: &Path, args: &[&str]) -> Value {
    let o = iolab()
        .args(["replay", s(trace)])
        .args(args)
        .args(["--format", "json"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// XOR of the bytes of `ranges`, each byte by its file offset (the trace's definition).
fn ranges_xor(data: &[u8], ranges: &[(u64, u64)]) -> u32 {
    let mut x = 0u32;
    for &(off, len) in ranges {
        for i in off..off + len {
            x ^= (data[i as usize] as u32) << (8 * (i % 4));
        }
    }
    x
}

#[test]
fn a_known_program_is_traced_call_by_call_and_agrees_with_the_kernel() {
    let _counters = shared();
    let dir = tempfile::tempdir().unwrap();
    let Some(exe) = build(dir.path()) else {
        return skip(Lack::Setup, "no C compiler");
    };
    let data = bytes(4 << 20, 77);
    let f = write_file(dir.path(), "data.bin", &data);
    let out = dir.path().join("t.json");
    let log = dir.path().join("t.iolog");
    let o = iolab()
        .args([
            "trace",
            "--out",
            s(&out),
            "--fio-iolog",
            s(&log),
            "--format",
            "json",
        ])
        .arg("--")
        .arg(&exe)
        .arg(&f)
        .write_stdin("12345")
        .output()
        .unwrap();
    // The program's exit code and stdout pass through; the profile is on stderr.
    assert_eq!(
        o.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&o.stdout), "done\n");
    let err = String::from_utf8_lossy(&o.stderr);
    let profile: Value = serde_json::from_str(&err[err.find('{').unwrap()..]).unwrap();
    let t: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    assert_eq!(t["schema"], "iolab-trace/1");
    assert_eq!(t["ended"]["code"], 3);
    assert_eq!(t["processes"], 2, "the program and its child");
    assert_eq!(t["threads"], 3, "and one thread");
    let files = t["files"].as_array().unwrap();
    let canon = std::fs::canonicalize(&f).unwrap();
    let fi = files
        .iter()
        .position(|x| x["path"] == s(&canon))
        .expect("the file is in the trace");
    // Every read of the file, at its offset, with its length, as the program made them.
    let mut got: Vec<(u64, u64)> = t["ops"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|op| {
            op["file"] == fi
                && ["read", "pread", "readv", "preadv"].contains(&op["call"].as_str().unwrap())
        })
        .map(|op| (op["off"].as_u64().unwrap(), op["ret"].as_u64().unwrap()))
        .collect();
    assert_eq!(got, READS, "reads in program order");
    got.sort();
    // The file's XOR over what was read equals the independent one.
    let want = format!("{:08x}", ranges_xor(&data, READS));
    assert_eq!(files[fi]["xor"], want.as_str());
    // Every byte the kernel counts (rchar) is a traced read or the kernel's own at exec.
    let k = &t["kernel"];
    let traced = profile["reads"]["bytes"].as_u64().unwrap();
    assert_eq!(
        k["rchar"].as_u64().unwrap(),
        traced + k["exec_rchar"].as_u64().unwrap(),
        "{k}"
    );
    assert!(k["exec_rchar"].as_u64().unwrap() > 0);
    assert_eq!(k["threads"], 3);
    // stdin (a pipe) is read too and counted, apart from the file.
    let pipe_read = t["ops"].as_array().unwrap().iter().any(|op| {
        op["fd"] == 0
            && op["call"] == "read"
            && op["ret"] == 5
            && files[op["file"].as_u64().unwrap() as usize]["kind"] == "pipe"
    });
    assert!(pipe_read, "stdin's read of the pipe");
    // Mapped access: a fault at each page touched, at its file offset.
    if t["faults_unavailable"].is_null() {
        let pages: Vec<u64> = t["faults"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|x| x["file"] == fi)
            .map(|x| x["off"].as_u64().unwrap())
            .collect();
        // A fault's address is a touched one; a large folio (ext4 caches in them) may map all
        // of its 2 MiB at the first touch, so each touched 2 MiB block has at least one fault.
        let touched = [0, 1 << 20, 2 << 20, (3 << 20) + 3 * 4096];
        for p in &pages {
            assert!(
                touched.contains(p),
                "fault at {p}, not a touched page: {pages:?}"
            );
        }
        for p in touched {
            assert!(
                pages.iter().any(|f| f >> 21 == p >> 21),
                "no fault near {p}: {pages:?}"
            );
        }
    } else {
        eprintln!("faults not sampled here: {}", t["faults_unavailable"]);
    }
    // fio's iolog: a line per read of the file, and fio replays it where fio is installed.
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.starts_with("fio version 3 iolog\n"), "{text}");
    let reads: Vec<&str> = text.lines().filter(|l| l.contains(" read ")).collect();
    let mine: Vec<&&str> = reads.iter().filter(|l| l.contains(s(&canon))).collect();
    assert_eq!(mine.len(), READS.len(), "{text}");
    for (line, (off, len)) in mine.iter().zip(READS) {
        assert!(line.ends_with(&format!(" read {off} {len}")), "{line}");
    }
    fio_replays(&log, &text);
    // The replay reads the same bytes: the recorded reads and the ranges the faults stand for,
    // each file's XOR checked against the trace's at every run.
    let v = replay_json(&out, &["--cache", "warm", "--budget", "3s"]);
    let read: u64 = READS.iter().map(|r| r.1).sum();
    let total = v["bytes"].as_u64().unwrap();
    if t["faults_unavailable"].is_null() {
        assert!(total > read, "mapped ranges replayed too: {total}");
        let notes = v["notes"].to_string();
        assert!(notes.contains("mapped access replayed"), "{notes}");
    } else {
        assert_eq!(total, read);
    }
}

/// fio reads exactly the bytes of the iolog's read lines.
fn fio_replays(log: &Path, text: &str) {
    if std::process::Command::new("fio")
        .arg("--version")
        .output()
        .is_err()
    {
        return skip(Lack::Setup, "fio replay: fio is not installed");
    }
    let want: u64 = text
        .lines()
        .filter(|l| l.contains(" read "))
        .map(|l| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap())
        .sum();
    let o = std::process::Command::new("fio")
        .args([
            "--name=replay",
            "--ioengine=psync",
            "--readonly",
            "--output-format=json",
        ])
        .arg(format!("--read_iolog={}", log.display()))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let got = v["jobs"][0]["read"]["io_bytes"].as_u64().unwrap();
    assert_eq!(got, want, "fio replayed the iolog's bytes");
}

#[test]
fn ctrl_c_stops_the_program_and_keeps_the_trace() {
    let _counters = shared();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.json");
    let bin = assert_cmd::cargo::cargo_bin("iolab");
    let mut child = std::process::Command::new(bin)
        .args([
            "-q",
            "trace",
            "--out",
            s(&out),
            "--",
            "sh",
            "-c",
            "head -c 1000 /dev/zero > /dev/null; sleep 600",
        ])
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(700));
    // SAFETY-free: kill(1) by pid, as a user's Ctrl-C to iolab alone would.
    let _ = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status();
    let status = wait_or_fail(
        &mut child,
        std::time::Duration::from_secs(3),
        "stopped on SIGINT (the traced program sleeps for 10 minutes)",
    );
    assert!(!status.success());
    let t: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    assert_eq!(t["interrupted"], true);
    assert!(t["ended"]["signal"].as_i64().is_some() || t["ended"]["code"].as_i64().is_some());
    let zero_read = t["ops"]
        .as_array()
        .unwrap()
        .iter()
        .any(|op| op["call"] == "read" && op["ret"] == 1000);
    assert!(zero_read, "what ran before the interrupt is kept");
}

#[test]
fn a_program_killed_mid_write_is_said() {
    let _counters = shared();
    let dir = tempfile::tempdir().unwrap();
    let w = dir.path().join("w.bin");
    let script = format!("head -c 100000 /dev/zero > {}; kill -9 $$", s(&w));
    let o = iolab()
        .args(["trace", "--format", "json", "--", "sh", "-c", &script])
        .output()
        .unwrap();
    // The program's end passes through as a shell gives it: 128 + 9.
    assert_eq!(o.status.code(), Some(137));
    let err = String::from_utf8_lossy(&o.stderr);
    let p: Value = serde_json::from_str(&err[err.find('{').unwrap()..]).unwrap();
    assert_eq!(p["ended"]["signal"], 9);
    let notes = p["notes"].to_string();
    assert!(
        notes.contains("may be incomplete") && notes.contains("w.bin"),
        "{notes}"
    );
}

#[test]
fn bad_commands_say_so() {
    let _counters = shared();
    iolab()
        .args(["trace", "--", "no-such-program-here"])
        .assert()
        .code(127)
        .stderr(predicates::str::contains("not found in PATH"));
    iolab()
        .args(["trace", "--format", "csv", "--", "true"])
        .assert()
        .code(2);
    let dir = tempfile::tempdir().unwrap();
    // Issue 53 (P21): a shell's codes, 127 for nothing to run, 126 for what cannot be run.
    let plain = write_file(dir.path(), "not-a-program", b"echo hi");
    iolab()
        .args(["trace", "--", s(&plain)])
        .assert()
        .code(126)
        .stderr(predicates::str::contains("not executable"));
    iolab()
        .args(["trace", "--", s(dir.path())])
        .assert()
        .code(126);
    let f = write_file(dir.path(), "exists", b"x");
    iolab()
        .args(["trace", "--out", s(&f), "--", "true"])
        .assert()
        .failure()
        .stderr(predicates::str::contains("--force"));
    assert_eq!(std::fs::read(&f).unwrap(), b"x");
}

/// The XOR re-read is the trace's, for a replay: taken when the trace is kept (--out, --format
/// json) or --xor, not for a profile on the terminal (re-reading rg's 1 GiB took a quarter of
/// the time a user waited for `iolab trace`).
#[test]
fn the_xor_is_taken_when_the_trace_is_kept_or_asked() {
    let _counters = shared();
    let dir = tempfile::tempdir().unwrap();
    let data = bytes(300_000, 7);
    let f = write_file(dir.path(), "f", &data);
    let want = format!("{:08x}", plain_xor(&data));
    let xor_column = |args: &[&str]| {
        let o = iolab()
            .args(["trace", "--files", "5"])
            .args(args)
            .args(["--", "cat"])
            .arg(&f)
            .output()
            .unwrap();
        assert!(o.status.success(), "{o:?}");
        let err = String::from_utf8_lossy(&o.stderr).to_string();
        let row = err
            .lines()
            .find(|l| l.starts_with(s(&f)) && l.contains("KiB"))
            .unwrap_or_else(|| panic!("no row for the file: {err}"))
            .to_string();
        row.split_whitespace().last().unwrap().to_string()
    };
    assert_eq!(xor_column(&[]), "-", "a profile alone re-reads nothing");
    assert_eq!(xor_column(&["--xor"]), want);
    let kept = dir.path().join("t.json");
    let o = iolab()
        .args(["-q", "trace", "--out"])
        .arg(&kept)
        .args(["--", "cat"])
        .arg(&f)
        .output()
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    let t: Value = serde_json::from_slice(&std::fs::read(&kept).unwrap()).unwrap();
    let row = t["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["path"] == s(&f))
        .unwrap();
    assert_eq!(row["xor"], want.as_str(), "a kept trace has its XOR");
}

#[test]
fn a_user_without_root_traces_too() {
    let _counters = shared();
    if !is_root() {
        // Already not root: the other tests are that path.
        return skip(Lack::Setup, "dropping to nobody needs root");
    }
    let dir = tempfile::tempdir().unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let f = write_file(dir.path(), "f", &bytes(1 << 20, 5));
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
    let o = iolab_as_nobody()
        .args(["trace", "--format", "json", "--", "cat"])
        .arg(&f)
        .output();
    let o = match o {
        Ok(o) if o.status.code() != Some(127) => o,
        other => {
            return skip(
                Lack::Setup,
                &format!("cannot run as nobody here: {other:?}"),
            );
        }
    };
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(o.stdout.len(), 1 << 20, "cat's output passes through");
    let err = String::from_utf8_lossy(&o.stderr);
    let p: Value = serde_json::from_str(&err[err.find('{').unwrap()..]).unwrap();
    assert_eq!(p["rchar_agreement"], 1.0, "{}", p["kernel"]);
    assert_eq!(p["files"][0]["reads"]["bytes"], 1 << 20);
}

#[test]
fn a_trace_replays_with_every_method_and_a_changed_file_is_caught() {
    let _counters = shared();
    let dir = tempfile::tempdir().unwrap();
    let f = write_file(dir.path(), "data.bin", &bytes(1 << 20, 9));
    let out = dir.path().join("dd.json");
    iolab()
        // No locale: dd then maps no locale files, whose faults would be replayed too.
        .env("LC_ALL", "C")
        .env_remove("LANG")
        .args([
            "-q",
            "trace",
            "--out",
            s(&out),
            "--",
            "dd",
            "bs=4096",
            "count=256",
        ])
        .arg(format!("if={}", s(&f)))
        .arg("of=/dev/null")
        .assert()
        .success();
    // The budget is a cap: room for every method's first look on a busy machine.
    let v = replay_json(&out, &["--cache", "warm", "--budget", "20s"]);
    // dd's 256 reads of the file, and whatever else of its other data files it read or mapped:
    // the loader's cache, say, where each page fault stands for up to the whole small file (two
    // faults on a 45 KiB cache replayed 90 KiB).
    let (total, reads) = (v["bytes"].as_u64().unwrap(), v["reads"].as_u64().unwrap());
    let t: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let faults_on = |i: usize| {
        t["faults"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|x| x["file"] == i)
            .count() as u64
    };
    let others: u64 = t["files"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
        .filter(|(_, x)| x["kind"] == "file" && x["code"] == false && x["path"] != s(&f))
        .filter(|(_, x)| !x["path"].as_str().unwrap().starts_with("/proc/"))
        .map(|(i, x)| x["size"].as_u64().unwrap() * (1 + faults_on(i)))
        .sum();
    assert!(
        (1 << 20..=(1 << 20) + others).contains(&total),
        "{total} (other data files: {others} bytes)"
    );
    assert!((256..300).contains(&reads), "{reads}");
    let rows = v["rows"].as_array().unwrap();
    let row = |name: &str| rows.iter().find(|r| r["method"] == name).unwrap();
    assert_eq!(row("as recorded (pread)")["ops"], reads);
    // Reads that follow one another, merged into 128 KiB: 8 requests for the file's 256.
    let merged = row("pread 128 KiB merged")["ops"].as_u64().unwrap();
    assert_eq!(reads - merged, 256 - 8, "{merged}");
    for r in rows.iter().filter(|r| r["unsupported"].is_null()) {
        assert!(r["bytes"].as_u64().unwrap() >= 1 << 20, "{r}");
        assert!(r["mib_s"]["median"].as_f64().unwrap() > 0.0, "{r}");
    }
    // One finding for the one cache state, with its interval.
    let fnd = &v["findings"][0];
    assert_eq!(fnd["key"], "replay-warm");
    assert!(fnd["ci"][0].as_f64().unwrap() <= fnd["ratio"].as_f64().unwrap());
    // The file changes: the replay refuses it.
    std::fs::write(&f, bytes(1 << 20, 10)).unwrap();
    iolab()
        .args(["replay", s(&out), "--cache", "warm", "--budget", "1s"])
        .assert()
        .failure()
        .stderr(predicates::str::contains("changed since the trace"));
}

#[test]
fn a_cold_read_agrees_with_the_kernels_storage_count() {
    let _counters = alone();
    let dir = tempfile::tempdir().unwrap();
    if fs_type(dir.path()) == "tmpfs" {
        return skip(
            Lack::Machine,
            "/tmp is tmpfs, where nothing comes from storage",
        );
    }
    let f = big_file(dir.path(), 16);
    iolab().args(["cache", "evict", s(&f)]).assert().success();
    let p = profile_json(&["cat".as_ref(), f.as_os_str()]);
    // Every storage byte the kernel counted came into the page cache as the file's pages (the
    // metadata growth is system-wide: the other tests running meanwhile add to it).
    let read = p["kernel"]["read_bytes"].as_f64().unwrap();
    let pages = p["cache_growth"].as_f64().unwrap() / read;
    assert!((0.95..=1.05).contains(&pages), "{pages}: {}", p["kernel"]);
    assert!(p["device_agreement"].as_f64().unwrap() >= 0.95);
    assert!(p["kernel"]["read_bytes"].as_u64().unwrap() >= 16 << 20);
}

#[test]
fn many_small_files_cold_agree_with_the_kernels_storage_count() {
    let _counters = alone();
    // Small files cost whole pages from storage, and their inodes and directories come from
    // storage too (the block device's cache): the profile counts both.
    if !is_root() {
        return skip(
            Lack::Setup,
            "making file-system metadata cold needs drop_caches (root)",
        );
    }
    if !may_drop_caches() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    if fs_type(dir.path()) == "tmpfs" {
        return skip(
            Lack::Machine,
            "/tmp is tmpfs, where nothing comes from storage",
        );
    }
    let tree = dir.path().join("tree");
    for d in 0..20 {
        let sub = tree.join(format!("d{d}"));
        fs::create_dir_all(&sub).unwrap();
        for i in 0..30 {
            fs::write(
                sub.join(format!("f{i}")),
                bytes(100 + 37 * i, d * 100 + i as u64),
            )
            .unwrap();
        }
    }
    Command::new("sync").status().unwrap();
    fs::write("/proc/sys/vm/drop_caches", "3").unwrap();
    // The ptrace tracer's estimate (the cache's growth beside read_bytes); the kernel tracer
    // counts each file's pages itself (tests/ebpf.rs), and its read_bytes here include the
    // program's own binaries paged in cold after drop_caches (0.79 of them counted, measured).
    let o = iolab()
        .args([
            "trace", "--tracer", "ptrace", "--no-xor", "--format", "json", "--",
        ])
        .args(["tar", "cf", "-"])
        .arg(&tree)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let err = String::from_utf8_lossy(&o.stderr);
    let p: Value = serde_json::from_str(&err[err.find('{').unwrap()..]).unwrap();
    // 600 files of 100-1200 bytes: counted in bytes they would be a tenth of their pages.
    // The metadata growth is system-wide, and the other tests running meanwhile (their files
    // made after the caches were dropped) only add to it: a bound below, and a loose one above.
    let a = p["device_agreement"].as_f64().unwrap();
    assert!(
        (0.95..=1.5).contains(&a),
        "{a}: pages {} metadata {} kernel {}",
        p["cache_growth"],
        p["metadata_growth"],
        p["kernel"]
    );
    assert!(p["metadata_growth"].as_u64().unwrap() > 0);
}

#[test]
fn keep_gaps_waits_the_programs_time_between_reads() {
    let _counters = shared();
    let dir = tempfile::tempdir().unwrap();
    let f = write_file(dir.path(), "data.bin", &bytes(1 << 20, 11));
    let out = dir.path().join("slow.json");
    // 16 reads of 64 KiB, 20 ms of the program's own time after each.
    let script = "import os, sys, time\nfd = os.open(sys.argv[1], os.O_RDONLY)\nwhile os.read(fd, 65536):\n    time.sleep(0.02)\n";
    iolab()
        .args([
            "-q",
            "trace",
            "--no-faults",
            "--out",
            s(&out),
            "--",
            // Without site and user paths: fewer start-up reads, whose gaps every run waits too.
            "python3",
            "-S",
            "-I",
            "-c",
            script,
        ])
        .arg(&f)
        .assert()
        .success();
    let v = replay_json(
        &out,
        &[
            "--keep-gaps",
            "--cache",
            "warm",
            "--methods",
            // One method beside the recorded reads: each run waits all the program's gaps
            // (its start-up's too: 0.84 s a run here, several seconds traced in a debug build
            // on a busy machine), and the budget is a cap: room for a warm-up and a round.
            "uring",
            "--budget",
            "40s",
        ],
    );
    // The sleeps are kept (16 of 20 ms), and nothing is kept that the program did not spend:
    // at most its traced wall time (no fixed bound: a busy machine stretches python's own time).
    let gaps = v["kept_gaps_s"].as_f64().unwrap();
    let t: serde_json::Value = serde_json::from_slice(&fs::read(&out).unwrap()).unwrap();
    let wall = t["wall_ns"].as_f64().unwrap() / 1e9;
    assert!(
        gaps >= 0.3 && gaps <= wall,
        "{gaps} s of gaps in {wall} s traced"
    );
    // No method finishes before the waits are over, io_uring included (it queues ahead
    // during a wait, but the waits are the program's and stay).
    // (A row the budget, a cap, left unmeasured on a busy machine has no time to check.)
    let rows = v["rows"].as_array().unwrap();
    let measured: Vec<&Value> = rows.iter().filter(|r| r["unsupported"].is_null()).collect();
    assert!(!measured.is_empty(), "{rows:?}");
    for r in measured {
        let secs = r["seconds"]["median"].as_f64().unwrap();
        assert!(secs >= 0.3, "{}: {secs}", r["method"]);
    }
    assert!(v["notes"].to_string().contains("gaps kept"));
}

/// `iolab trace` run from the binary, with pipes, not waited for.
fn spawn_trace(args: &[&str]) -> std::process::Child {
    std::process::Command::new(assert_cmd::cargo::cargo_bin("iolab"))
        .arg("trace")
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

/// Whether `pgrep ARGS` finds a process.
fn pgrep(args: &[&str]) -> bool {
    Command::new("pgrep")
        .args(args)
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Sends `sig` to `child` alone (as `kill -SIG PID`), waits for it to end (failing the test,
/// naming `what`, if it does not), and gives its exit status and stderr.
fn signal_and_wait(
    child: &mut std::process::Child,
    sig: &str,
    what: &str,
) -> (std::process::ExitStatus, String) {
    let _ = Command::new("kill")
        .args([sig, &child.id().to_string()])
        .status();
    let st = wait_or_fail(child, std::time::Duration::from_secs(10), what);
    (st, stderr_of(child))
}

fn stderr_of(child: &mut std::process::Child) -> String {
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    err
}

/// Issue 53 (P11): every output is proved writable before the program runs (a bad path costs
/// no run), and an output lost to a full disk loses neither the profile (then on stderr) nor the
/// program's exit code.
#[test]
fn outputs_are_proved_before_the_program_runs_and_a_full_disk_keeps_the_rest() {
    let _counters = shared();
    let dir = tempfile::tempdir().unwrap();
    let mark = dir.path().join("ran");
    let script = format!("echo yes > {}", s(&mark));
    for bad in ["/nonexistent-iolab-dir/t.json", "/proc/version/t.json"] {
        for flag in ["--out", "--profile", "--fio-iolog"] {
            let o = iolab()
                .args(["trace", flag, bad, "--", "sh", "-c", &script])
                .output()
                .unwrap();
            assert_eq!(o.status.code(), Some(2), "{flag} {bad}: {o:?}");
            assert_eq!(
                String::from_utf8_lossy(&o.stderr).lines().count(),
                1,
                "{o:?}"
            );
            assert!(!mark.exists(), "the program ran for {flag} {bad}");
        }
    }
    if !is_root() {
        return skip(
            Lack::Machine,
            "mounting a small tmpfs for a full disk needs root",
        );
    }
    let small = dir.path().join("small");
    fs::create_dir(&small).unwrap();
    let mounted = Command::new("mount")
        .args([
            "-t",
            "tmpfs",
            "-o",
            "size=8k,nr_inodes=64",
            "iolab-test",
            s(&small),
        ])
        .status()
        .is_ok_and(|st| st.success());
    if !mounted {
        return skip(Lack::Machine, "cannot mount a tmpfs here");
    }
    struct Unmount<'a>(&'a Path);
    impl Drop for Unmount<'_> {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(self.0).status();
        }
    }
    let _unmount = Unmount(&small);
    let out = small.join("t.json");
    let profile = small.join("p.txt");
    let o = iolab()
        .args(["trace", "--out", s(&out), "--profile", s(&profile), "--"])
        .args(["sh", "-c", "head -c 100000 /dev/zero > /dev/null; cat /etc/os-release /etc/passwd > /dev/null; exit 3"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "the program's code: {err}");
    assert!(err.contains("No space left"), "{err}");
    let profile_kept = fs::read_to_string(&profile).is_ok_and(|p| p.contains("traced"))
        || err.contains("s, exit code 3):");
    assert!(profile_kept, "{err}");
    // Nothing partial is left on the full disk.
    let names: Vec<_> = fs::read_dir(&small)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n != "p.txt")
        .collect();
    assert!(names.is_empty(), "{names:?}");
}

/// Issue 53 (P12): trace ends with the program, as a shell would, and what the program left
/// running runs on, its file calls working (its tracer stays, out of the way); --follow waits
/// for it and records it.
#[test]
fn trace_ends_with_the_program_and_follow_waits_for_what_it_left() {
    let _counters = shared();
    let tracers: &[&str] = if is_root() {
        &["ptrace", "ebpf"]
    } else {
        skip(Lack::Setup, "the eBPF tracer needs root: ptrace alone");
        &["ptrace"]
    };
    for tracer in tracers {
        ends_with_the_program(tracer);
    }
}

fn ends_with_the_program(tracer: &str) {
    let dir = tempfile::tempdir().unwrap();
    let go = dir.path().join("go");
    let late = dir.path().join("late");
    let script = format!(
        "cat /etc/hostname > /dev/null; (while [ ! -e {go} ]; do sleep 0.05; done; echo late > {late}) & exit 5",
        go = s(&go),
        late = s(&late)
    );
    let out = dir.path().join("t.json");
    let mut child = spawn_trace(&[
        "--tracer",
        tracer,
        "--out",
        s(&out),
        "--",
        "sh",
        "-c",
        &script,
    ]);
    // It cannot end by waiting for the background loop: that waits for `go`, made only after.
    let st = wait_or_fail(
        &mut child,
        std::time::Duration::from_secs(10),
        "ended with the program, leaving its background loop running",
    );
    assert_eq!(st.code(), Some(5), "{}", stderr_of(&mut child));
    let t: Value = serde_json::from_slice(&fs::read(&out).unwrap()).unwrap();
    assert!(
        t["notes"]
            .to_string()
            .contains("still running when it ended"),
        "{}",
        t["notes"]
    );
    fs::write(&go, b"").unwrap();
    wait_until(
        std::time::Duration::from_secs(10),
        "the loop left running to write",
        || fs::read_to_string(&late).is_ok_and(|l| l == "late\n"),
    );
    fs::remove_file(&go).unwrap();
    fs::remove_file(&late).unwrap();
    // --follow: still running while the loop waits, then the loop's write is in the trace.
    let out2 = dir.path().join("t2.json");
    let mut child = spawn_trace(&[
        "--tracer",
        tracer,
        "--follow",
        "--out",
        s(&out2),
        "--",
        "sh",
        "-c",
        &script,
    ]);
    wait_until(
        std::time::Duration::from_secs(10),
        "the traced program to start",
        || pgrep(&["-f", "while \\[ ! -e"]),
    );
    assert!(
        child.try_wait().unwrap().is_none(),
        "--follow ended before the loop"
    );
    fs::write(&go, b"").unwrap();
    let st = wait_or_fail(
        &mut child,
        std::time::Duration::from_secs(10),
        "ended once the loop it followed ended",
    );
    assert_eq!(st.code(), Some(5), "{}", stderr_of(&mut child));
    let t: Value = serde_json::from_slice(&fs::read(&out2).unwrap()).unwrap();
    let late_file = t["files"]
        .as_array()
        .unwrap()
        .iter()
        .position(|f| f["path"].as_str() == late.to_str());
    assert!(
        late_file.is_some(),
        "{tracer}: the followed loop's write is recorded"
    );
}

/// Issue 53 (P13, P22): --overhead stops on Ctrl-C, and SIGHUP (the terminal closed) keeps the
/// trace and leaves the program as a shell would (it gets SIGHUP: 128 + 1).
#[test]
fn overhead_stops_on_ctrl_c_and_a_hangup_keeps_the_trace() {
    let _counters = shared();
    let dir = tempfile::tempdir().unwrap();
    let mut child = spawn_trace(&[
        "--tracer",
        "ptrace",
        "--overhead",
        "100000",
        "--",
        "sleep",
        "0.2",
    ]);
    // The traced run's sleep is the ptrace tracer helper's child; an overhead round's is
    // iolab's own.
    wait_until(
        std::time::Duration::from_secs(20),
        "the overhead rounds to start",
        || pgrep(&["-x", "sleep", "-P", &child.id().to_string()]),
    );
    let (st, err) = signal_and_wait(&mut child, "-INT", "stopped its overhead rounds on SIGINT");
    assert_eq!(st.code(), Some(0), "{err}");
    assert!(err.contains("--overhead interrupted after"), "{err}");
    let out = dir.path().join("t.json");
    let mut child = spawn_trace(&[
        "--out",
        s(&out),
        "--",
        "sh",
        "-c",
        "head -c 1000 /dev/zero > /dev/null; sleep 600",
    ]);
    wait_until(
        std::time::Duration::from_secs(20),
        "the program to sleep",
        || pgrep(&["-f", "^sleep 600$"]),
    );
    let (st, err) = signal_and_wait(&mut child, "-HUP", "ended on SIGHUP, keeping the trace");
    let t: Value = serde_json::from_slice(&fs::read(&out).unwrap()).unwrap();
    assert_eq!(t["interrupted"], true, "{err}");
    assert_eq!(t["ended"]["signal"], 1, "{err}");
    assert_eq!(st.code(), Some(129), "{err}");
}
