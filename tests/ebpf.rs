//! The kernel tracer (`iolab trace --tracer ebpf`) beside the ptrace tracer and the kernel's own
//! counters, on programs nobody here wrote (coreutils, tar, gzip, python3, sqlite3): the same
//! bytes per file, the same process tree, faults on the mapped file; and without root, a
//! fallback to ptrace that says why.

mod common;
use common::*;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// `iolab trace --tracer TRACER --out T -- CMD` in `dir`, which must succeed: the trace.
fn trace(dir: &Path, tracer: &str, cmd: &[&str]) -> Value {
    let out = dir.join(format!("{tracer}.trace.json"));
    let _ = std::fs::remove_file(&out);
    let o = iolab()
        .current_dir(dir)
        .args([
            "-q", "trace", "--tracer", tracer, "--format", "json", "--out",
        ])
        .arg(&out)
        .arg("--")
        .args(cmd)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "{cmd:?} under {tracer}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap()
}

/// Per regular file under `dir`: (bytes read, bytes written) by the trace's calls.
fn bytes_per_file(t: &Value, dir: &Path) -> BTreeMap<String, (u64, u64)> {
    let files = t["files"].as_array().unwrap();
    let mut out = BTreeMap::new();
    for op in t["ops"].as_array().unwrap() {
        let (Some(i), Some(ret)) = (op["file"].as_u64(), op["ret"].as_i64()) else {
            continue;
        };
        let f = &files[i as usize];
        if f["kind"] != "file" || !f["path"].as_str().unwrap().starts_with(s(dir)) || ret <= 0 {
            continue;
        }
        let e = out
            .entry(f["path"].as_str().unwrap().to_string())
            .or_insert((0, 0));
        match op["call"].as_str().unwrap() {
            "read" | "readv" | "pread" | "preadv" | "preadv2" | "sendfile" | "splice"
            | "copy_file_range" => e.0 += ret as u64,
            "write" | "writev" | "pwrite" | "pwritev" | "pwritev2" => e.1 += ret as u64,
            _ => {}
        }
    }
    out
}

fn can_load() -> bool {
    if !is_root() {
        skip(Lack::Setup, "the eBPF tracer needs root");
        return false;
    }
    true
}

#[test]
fn both_tracers_see_the_same_bytes_per_file_and_the_kernel_agrees() {
    if !can_load() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir_all(d.join("src")).unwrap();
    for i in 0..6u64 {
        write_file(
            &d.join("src"),
            &format!("f{i}"),
            &bytes(30_000 + 50_000 * i as usize, i),
        );
    }
    let big = write_file(d, "big.bin", &bytes(3 << 20, 9));
    let mut programs: Vec<Vec<&str>> = vec![
        vec!["sha256sum", "big.bin", "src/f1", "src/f5"],
        vec!["tar", "cf", "out.tar", "src"],
        vec![
            "sh",
            "-c",
            "cat big.bin | gzip -1 -c > big.gz && cp src/f2 copy",
        ],
        vec![
            "python3",
            "-S",
            "-I",
            "-c",
            "import os\nf=open('big.bin','rb')\nf.seek(1<<20)\nf.read(65536)\nos.pread(f.fileno(),4096,7)\nopen('py.out','w').write('x'*10000)",
        ],
    ];
    let db = d.join("t.db");
    if have("sqlite3") {
        programs.push(vec![
            "sqlite3",
            s(&db),
            "create table t(a,b); insert into t select value, randomblob(300) from generate_series(1,3000); select count(*), sum(length(b)) from t;",
        ]);
    } else {
        skip(Lack::Setup, "sqlite3 is not installed");
    }
    for cmd in &programs {
        // Outputs each run makes anew, so both tracers see the same program.
        for out in ["out.tar", "big.gz", "copy", "py.out", "t.db"] {
            let _ = std::fs::remove_file(d.join(out));
        }
        let e = trace(d, "ebpf", cmd);
        for out in ["out.tar", "big.gz", "copy", "py.out", "t.db"] {
            let _ = std::fs::remove_file(d.join(out));
        }
        let p = trace(d, "ptrace", cmd);
        assert_eq!(e["tracer"], "ebpf");
        assert_eq!(p["tracer"], "ptrace");
        let (be, bp) = (bytes_per_file(&e, d), bytes_per_file(&p, d));
        assert!(!be.is_empty(), "{cmd:?}: no file seen by eBPF");
        assert_eq!(be, bp, "{cmd:?}: bytes per file, eBPF against ptrace");
        assert_eq!(e["processes"], p["processes"], "{cmd:?}: processes");
        // The kernel's own count of the program's reads: every read-like call's bytes, and
        // the kernel's reads at exec.
        let k = &e["kernel"];
        let reads: i64 = e["ops"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|o| {
                matches!(
                    o["call"].as_str().unwrap(),
                    "read"
                        | "readv"
                        | "pread"
                        | "preadv"
                        | "preadv2"
                        | "sendfile"
                        | "splice"
                        | "copy_file_range"
                ) && o["ret"].as_i64().unwrap() > 0
            })
            .map(|o| o["ret"].as_i64().unwrap())
            .sum();
        let rchar = k["rchar"].as_i64().unwrap();
        let exec = k["exec_rchar"].as_i64().unwrap();
        assert!(
            ((reads + exec) - rchar).abs() as f64 <= 0.01 * rchar as f64,
            "{cmd:?}: traced reads {reads} + exec {exec} against rchar {rchar}"
        );
        assert_eq!(e["stops"], 0, "the kernel tracer stops nothing");
    }
    // The bytes sha256sum read of big.bin: the file's XOR, as the ptrace tracer records it.
    let e = trace(d, "ebpf", &["cat", s(&big)]);
    let f = e["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == s(&big))
        .unwrap();
    assert_eq!(
        f["xor"].as_str().unwrap(),
        format!("{:08x}", plain_xor(&std::fs::read(&big).unwrap()))
    );
}

#[test]
fn the_kernel_tracer_follows_the_process_tree_and_the_faults_on_a_mapping() {
    if !can_load() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mapped = write_file(d, "mapped.bin", &bytes(4 << 20, 3));
    write_file(d, "a", &bytes(100_000, 1));
    // A shell, a child, a grandchild with two threads, and a mapping read page by page.
    let script = "cat a > /dev/null; python3 -S -I -c \"
import mmap, threading
f = open('mapped.bin', 'rb')
m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
def scan(lo, hi):
    s = 0
    for i in range(lo, hi, 4096):
        s += m[i]
t = threading.Thread(target=scan, args=(0, 2 << 20))
t.start(); scan(2 << 20, 4 << 20); t.join()
\"; exit 3";
    let out = d.join("t.json");
    let o = iolab()
        .current_dir(d)
        .args(["-q", "trace", "--tracer", "ebpf", "--out"])
        .arg(&out)
        .args(["--", "sh", "-c", script])
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(3),
        "the program's exit code passes through: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let t: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    assert_eq!(t["ended"]["code"], 3);
    assert!(t["processes"].as_u64().unwrap() >= 3, "{}", t["processes"]);
    assert!(t["threads"].as_u64().unwrap() >= 4, "{}", t["threads"]);
    let files = t["files"].as_array().unwrap();
    let idx = files
        .iter()
        .position(|f| f["path"] == s(&mapped))
        .expect("the mapped file is named");
    let faults: Vec<&Value> = t["faults"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["file"] == idx)
        .collect();
    // 1,024 pages touched, 512 by each thread: each fault maps a 64 KiB window or (large
    // folios) up to 2 MiB, so each thread faults at least once, every fault inside the file.
    assert!(faults.len() >= 2, "{} faults", faults.len());
    assert!(faults.iter().all(|f| f["off"].as_u64().unwrap() < 4 << 20));
    let tids: std::collections::BTreeSet<u64> =
        faults.iter().map(|f| f["tid"].as_u64().unwrap()).collect();
    assert!(tids.len() >= 2, "faults from {tids:?}");
    assert!(
        t["ops"]
            .as_array()
            .unwrap()
            .iter()
            .any(|o| o["call"] == "mmap" && o["file"] == idx),
        "the mmap call is kept on its file"
    );
    let a = files.iter().position(|f| f["path"] == s(&d.join("a")));
    assert!(a.is_some(), "the shell's child's file");
}

#[test]
fn without_root_auto_falls_back_to_ptrace_and_ebpf_says_why() {
    if !is_root() {
        // Already not root: this is the path the others test.
        return skip(Lack::Setup, "dropping to nobody needs root");
    }
    let dir = tempfile::tempdir().unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let f = write_file(dir.path(), "f", &bytes(1 << 16, 5));
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
    let run = |tracer: &str| {
        iolab_as_nobody()
            .args(["trace", "--tracer", tracer, "--format", "json", "--", "cat"])
            .arg(&f)
            .output()
    };
    let o = match run("auto") {
        Ok(o) if o.status.code() != Some(127) => o,
        other => {
            return skip(
                Lack::Setup,
                &format!("cannot run as nobody here: {other:?}"),
            );
        }
    };
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert_eq!(o.stdout.len(), 1 << 16);
    let note = err
        .lines()
        .find(|l| l.contains("traced with ptrace, not eBPF"))
        .unwrap_or_else(|| panic!("no reason given: {err}"));
    assert!(note.contains("root or CAP_BPF"), "{note}");
    let p: Value = serde_json::from_str(&err[err.find('{').unwrap()..]).unwrap();
    assert_eq!(p["files"][0]["reads"]["bytes"], 1 << 16);
    let o = run("ebpf").unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    assert!(err.contains("root or CAP_BPF"), "{err}");
    assert!(o.stdout.is_empty(), "the program did not run: {err}");
}
