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
            // Debian's python3 itself: a `python3` earlier in PATH may be a shim (pyenv's is a
            // bash script of ~40 processes whose count varies from run to run).
            if std::path::Path::new("/usr/bin/python3").exists() {
                "/usr/bin/python3"
            } else {
                "python3"
            },
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
    let run = |tracer: &[&str]| {
        iolab_as_nobody()
            .arg("trace")
            .args(tracer)
            .args(["--format", "json", "--", "cat"])
            .arg(&f)
            .output()
    };
    // The default is auto: ptrace here, and why, in one line.
    let o = match run(&[]) {
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
    let o = run(&["--tracer", "ebpf"]).unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    assert!(err.contains("root or CAP_BPF"), "{err}");
    assert!(o.stdout.is_empty(), "the program did not run: {err}");
    // Attaching to a running process needs the kernel tracer: no fallback, one line.
    let o = iolab_as_nobody()
        .args(["trace", "--pid", "1", "--seconds", "1"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    assert!(err.contains("root or CAP_BPF"), "{err}");
}

/// Regular files whose path starts with `under`: their page cache work (`cache`), by path.
fn cache_of(t: &Value, under: &Path) -> BTreeMap<String, Value> {
    t["files"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["kind"] == "file" && f["path"].as_str().unwrap().starts_with(s(under)))
        .map(|f| (f["path"].as_str().unwrap().to_string(), f["cache"].clone()))
        .collect()
}

fn from_storage(c: &Value) -> u64 {
    ["by_reads", "by_faults", "by_uring", "by_other"]
        .iter()
        .map(|k| c[k].as_u64().unwrap())
        .sum()
}

#[test]
fn the_page_cache_work_per_file_adds_up_to_the_kernels_read_bytes_cold_and_warm() {
    if !can_load() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    for i in 0..300usize {
        let sub = tree.join(format!("d{}", i % 12));
        std::fs::create_dir_all(&sub).unwrap();
        write_file(&sub, &format!("f{i}"), &bytes(1_000 + 397 * i, i as u64));
    }
    // Cold: the tree's own pages evicted (not the machine's cache), by iolab cache evict.
    iolab()
        .args(["-q", "cache", "evict"])
        .arg(&tree)
        .assert()
        .success();
    // grep, a program nobody here wrote, reading each file once (a match: exit 0).
    let cmd = ["grep", "-rc", "a", "tree"];
    let cold = trace(dir.path(), "ebpf", &cmd);
    let per = cache_of(&cold, &tree);
    assert_eq!(
        per.len(),
        300,
        "every file of the tree has its page cache work"
    );
    let page = 4096u64;
    for (path, c) in &per {
        let size = std::fs::metadata(path).unwrap().len();
        // Each file was read from storage whole, in whole pages (readahead stops at its end).
        assert_eq!(from_storage(c), size.div_ceil(page) * page, "{path}: {c}");
        assert!(c["reads_missed"].as_u64().unwrap() >= 1, "{path}: {c}");
    }
    // The program's bytes from storage, per file (every file, the tree's and its libraries',
    // and file-system metadata and its own program, which it did not open) against the
    // kernel's read_bytes: within 2%.
    let all: u64 = cold["files"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| !f["cache"].is_null())
        .map(|f| from_storage(&f["cache"]))
        .sum();
    let c = &cold["cache"];
    let counted = all + c["metadata"].as_u64().unwrap() + c["unnamed"].as_u64().unwrap();
    let read_bytes = cold["kernel"]["read_bytes"].as_u64().unwrap();
    assert!(read_bytes > 0, "{}", cold["kernel"]);
    let off = (counted as f64 / read_bytes as f64 - 1.0).abs();
    assert!(
        off <= 0.02,
        "per file {counted} B against read_bytes {read_bytes} B: {:.2}%",
        off * 100.0
    );
    // Warm: the cache served every read of the tree.
    let warm = trace(dir.path(), "ebpf", &cmd);
    let per = cache_of(&warm, &tree);
    assert_eq!(per.len(), 300);
    let brought: u64 = per.values().map(from_storage).sum();
    let read: u64 = bytes_per_file(&warm, &tree).values().map(|b| b.0).sum();
    assert!(read > 100 * 300, "{read}");
    let hit = 1.0 - brought.min(read) as f64 / read as f64;
    assert!(hit >= 0.99, "warm hit ratio {hit}");
}

#[test]
fn o_direct_reads_are_from_storage_past_the_cache_never_served_by_it() {
    if !can_load() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    if fs_type(dir.path()) == "tmpfs" {
        return skip(Lack::Machine, "O_DIRECT: the temporary folder is on tmpfs");
    }
    let f = write_file(dir.path(), "direct.bin", &bytes(8 << 20, 21));
    // Warm (written, so cached): O_DIRECT goes to storage all the same.
    let cmd = [
        "dd",
        "if=direct.bin",
        "of=/dev/null",
        "bs=1M",
        "iflag=direct",
        "status=none",
    ];
    let t = trace(dir.path(), "ebpf", &cmd);
    let c = &cache_of(&t, dir.path())[s(&f)];
    assert_eq!(c["direct"], 8 << 20, "{c}");
    assert_eq!(c["by_reads"], 0, "{c}");
    assert_eq!(t["cache"]["direct"], 8 << 20, "{}", t["cache"]);
    // The profile: from storage, nothing served by the cache, in the table and the summary.
    let o = iolab()
        .current_dir(dir.path())
        .args(["-q", "explain", "ebpf.trace.json"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{text}");
    assert!(
        text.contains("8 MiB past the cache with O_DIRECT"),
        "{text}"
    );
    let row: Vec<&str> = text
        .lines()
        .find(|l| l.starts_with(s(&f)))
        .unwrap_or_else(|| panic!("{text}"))
        .split_whitespace()
        .collect();
    // The row's last columns: cache served, faults, writes (two words), xor.
    assert_eq!(row[row.len() - 5], "0%", "{row:?}");
    // Beside a file read cold through the cache, each file's bytes from storage are split by
    // what brought them: a column per kind, O_DIRECT's never under "by reads".
    let cold = write_file(dir.path(), "cold.bin", &bytes(4 << 20, 22));
    iolab()
        .args(["-q", "cache", "evict"])
        .arg(&cold)
        .assert()
        .success();
    let both =
        "dd if=direct.bin of=/dev/null bs=1M iflag=direct status=none; cat cold.bin >/dev/null";
    trace(dir.path(), "ebpf", &["sh", "-c", both]);
    let o = iolab()
        .current_dir(dir.path())
        .args(["-q", "explain", "ebpf.trace.json", "--format", "markdown"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    let cells = |l: &str| -> Vec<String> { l.split('|').map(|c| c.trim().to_string()).collect() };
    let head = cells(text.lines().find(|l| l.starts_with("| file |")).unwrap());
    let col = |name: &str| {
        head.iter()
            .position(|c| c == name)
            .unwrap_or_else(|| panic!("{name}: {head:?}"))
    };
    let row_of = |f: &Path| {
        cells(
            text.lines()
                .find(|l| l.starts_with(&format!("| {} |", s(f))))
                .unwrap(),
        )
    };
    let (d, c) = (row_of(&f), row_of(&cold));
    assert!(col("from storage") < col("by reads") && col("O_DIRECT") < col("cache served"));
    assert_eq!(
        head.iter().filter(|h| h.starts_with("by ")).count(),
        1,
        "{head:?}"
    );
    assert_eq!(
        [
            &d[col("from storage")],
            &d[col("by reads")],
            &d[col("O_DIRECT")]
        ],
        ["8 MiB", "0 B", "8 MiB"],
        "{d:?}"
    );
    assert_eq!(
        [
            &c[col("from storage")],
            &c[col("by reads")],
            &c[col("O_DIRECT")]
        ],
        ["4 MiB", "4 MiB", "0 B"],
        "{c:?}"
    );
}

#[test]
fn fio_io_uring_reads_are_its_requests_byte_for_byte() {
    if !can_load() {
        return;
    }
    if !have("fio") {
        return skip(Lack::Setup, "fio is not installed");
    }
    let dir = tempfile::tempdir().unwrap();
    let f = write_file(dir.path(), "data", &bytes(16 << 20, 3));
    let out = dir.path().join("fio.json");
    let cmd = [
        "fio",
        "--name=r",
        "--filename=data",
        "--ioengine=io_uring",
        "--rw=randread",
        "--bs=4k",
        "--iodepth=8",
        "--size=16M",
        "--io_size=6M",
        "--output-format=json",
    ];
    let mut cmd: Vec<&str> = cmd.to_vec();
    let o = format!("--output={}", s(&out));
    cmd.push(&o);
    let t = trace(dir.path(), "ebpf", &cmd);
    let fio: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    let fio_bytes = fio["jobs"][0]["read"]["io_bytes"].as_u64().unwrap();
    assert_eq!(fio_bytes, 6 << 20);
    let files = t["files"].as_array().unwrap();
    let (mut bytes, mut requests) = (0u64, 0u64);
    for op in t["ops"].as_array().unwrap() {
        let on_data = op["file"]
            .as_u64()
            .is_some_and(|i| files[i as usize]["path"] == s(&f));
        if op["call"] == "uring_read" && on_data {
            bytes += op["ret"].as_u64().unwrap();
            requests += 1;
            let off = op["off"].as_u64().unwrap();
            assert!(off % 4096 == 0 && off < 16 << 20, "{op}");
        }
    }
    assert_eq!(bytes, fio_bytes, "io_uring reads of fio's file");
    assert_eq!(requests, (6 << 20) / 4096);
    assert_eq!(t["uring"]["unseen"], 0, "{}", t["uring"]);
    assert_eq!(t["uring"]["reads"].as_u64().unwrap(), requests);
}

/// The bytes the trace's `read` calls of /dev/zero returned.
fn read_bytes_of(t: &Value) -> u64 {
    let files = t["files"].as_array().unwrap();
    t["ops"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| o["call"] == "read")
        .filter(|o| {
            o["file"]
                .as_u64()
                .is_some_and(|i| files[i as usize]["path"] == "/dev/zero")
        })
        .map(|o| o["ret"].as_i64().unwrap().max(0) as u64)
        .sum()
}

/// `iolab trace --pid PID ARGS --out T`: the trace and iolab's stderr.
fn attach(dir: &Path, pid: u32, args: &[&str]) -> (Value, String) {
    let out = dir.join(format!("{pid}.trace.json"));
    let o = iolab()
        .args(["trace", "--pid", &pid.to_string(), "--out"])
        .arg(&out)
        .args(args)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{err}");
    (
        serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap(),
        err,
    )
}

#[test]
fn trace_pid_follows_a_running_dd_from_the_attach_on() {
    if !can_load() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // dd, running before iolab starts, and still running after it stops.
    let mut dd = std::process::Command::new("dd")
        .args(["if=/dev/zero", "of=/dev/null", "bs=4k"])
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    let (t, err) = attach(dir.path(), dd.id(), &["--seconds", "1"]);
    let still = dd.try_wait().unwrap().is_none();
    let _ = dd.kill();
    let _ = dd.wait();
    assert!(still, "dd was left running");
    assert!(err.contains("tracing process"), "{err}");
    assert_eq!(t["command"][0], "dd");
    assert!(t["ended"]["code"].is_null(), "{}", t["ended"]);
    assert!(
        t["notes"].to_string().contains("attached to process"),
        "{}",
        t["notes"]
    );
    // Its reads from the attach on: the kernel's rchar over the same time, within 1% (the
    // calls in flight at either end).
    let read = read_bytes_of(&t);
    let rchar = t["kernel"]["rchar"].as_u64().unwrap();
    assert!(read > 1 << 20, "{read}");
    let off = (read as f64 / rchar as f64 - 1.0).abs();
    assert!(off < 0.01, "reads {read} against rchar {rchar}");
}

#[test]
fn trace_pid_of_a_server_traces_the_workers_it_had_started() {
    if !can_load() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // A server's shape: a parent waiting on workers started before the attach, one of them
    // a grandchild, each writing its own file (one syncing it, as a WAL writer does).
    let script = "sh -c 'while :; do echo x >> a.log; sync a.log; sleep 0.05; done' & \
                  sh -c '(while :; do echo x >> b.log; sleep 0.05; done) & wait' & \
                  (while :; do echo y >> c.log; sleep 0.05; done) & wait";
    use std::os::unix::process::CommandExt;
    let mut server = std::process::Command::new("sh")
        .args(["-c", script])
        .current_dir(dir.path())
        .process_group(0)
        .spawn()
        .unwrap();
    // The workers are running (each has written) before the attach.
    wait_until(
        std::time::Duration::from_secs(10),
        "the workers to start",
        || {
            ["a.log", "b.log", "c.log"]
                .iter()
                .all(|f| dir.path().join(f).exists())
        },
    );
    let (t, err) = attach(dir.path(), server.id(), &["--seconds", "1"]);
    // Stop the whole tree, its process group (the workers are the server's subshells).
    let _ = std::process::Command::new("kill")
        .args(["-9", "--", &format!("-{}", server.id())])
        .status();
    let _ = server.kill();
    let _ = server.wait();
    assert!(err.contains("it had started"), "{err}");
    let written = bytes_per_file(&t, dir.path());
    for f in ["a.log", "b.log", "c.log"] {
        let w = written.get(s(&dir.path().join(f))).map_or(0, |b| b.1);
        assert!(w > 0, "{f}: {written:?}");
    }
    assert!(
        t["notes"]
            .to_string()
            .contains("process(es) it had started"),
        "{}",
        t["notes"]
    );
}

#[test]
fn trace_pid_sees_everything_started_after_the_attach_and_the_end() {
    if !can_load() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let sh = std::process::Command::new("sh")
        .args([
            "-c",
            "sleep 1; dd if=/dev/zero of=/dev/null bs=4k count=5000 2>/dev/null; exit 4",
        ])
        .spawn()
        .unwrap();
    let pid = sh.id();
    let reaper = std::thread::spawn(move || {
        let mut sh = sh;
        sh.wait().unwrap()
    });
    let (t, _) = attach(dir.path(), pid, &["--seconds", "60"]);
    let status = reaper.join().unwrap();
    assert_eq!(status.code(), Some(4));
    // It ended on its own, long before the limit, with its exit code; dd, started after
    // the attach, was seen whole.
    assert_eq!(t["ended"]["code"], 4, "{}", t["ended"]);
    assert!(t["wall_ns"].as_u64().unwrap() < 30_000_000_000);
    assert!(t["processes"].as_u64().unwrap() >= 2, "{}", t["processes"]);
    assert_eq!(read_bytes_of(&t), 5000 * 4096);
}

#[test]
fn trace_pid_refuses_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    // No such process (pid_max is at most 4194304).
    let o = iolab()
        .args(["trace", "--pid", "4194305", "--seconds", "1"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("no such process"), "{err}");
    let o = iolab()
        .args(["trace", "--pid", "1", "--seconds", "0"])
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("positive number"));
}

#[test]
fn rg_threads_over_a_thousand_files_each_named_right() {
    if !can_load() {
        return;
    }
    if !have("rg") {
        return skip(Lack::Setup, "ripgrep is not installed");
    }
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    // Files in one folder with names alike: a file named as the one opened after it on the same
    // descriptor number would show here.
    for i in 0..1200usize {
        let sub = tree.join(format!("d{}", i % 20));
        std::fs::create_dir_all(&sub).unwrap();
        write_file(&sub, &format!("f{i}.txt"), &bytes(200 + 61 * i, i as u64));
    }
    let cmd = ["rg", "-c", "--no-ignore", "-a", "x", "tree"];
    for round in 0..3 {
        let e = trace(dir.path(), "ebpf", &cmd);
        let p = trace(dir.path(), "ptrace", &cmd);
        let (be, bp) = (bytes_per_file(&e, &tree), bytes_per_file(&p, &tree));
        assert_eq!(be.len(), 1200, "round {round}: files read under eBPF");
        assert_eq!(be, bp, "round {round}: bytes per file, eBPF against ptrace");
        for (path, (read, _)) in &be {
            assert_eq!(*read, std::fs::metadata(path).unwrap().len(), "{path}");
        }
    }
}

/// A cgroup made for a test, its processes killed and itself removed when dropped.
struct Cgroup(std::path::PathBuf);

impl Drop for Cgroup {
    fn drop(&mut self) {
        let procs = std::fs::read_to_string(self.0.join("cgroup.procs")).unwrap_or_default();
        for p in procs.lines() {
            let _ = std::process::Command::new("kill")
                .args(["-KILL", p])
                .status();
        }
        for _ in 0..100 {
            if std::fs::remove_dir(&self.0).is_ok() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

#[test]
fn trace_cgroup_follows_each_process_in_it() {
    if !can_load() {
        return;
    }
    let base = [
        "/sys/fs/cgroup/memory",
        "/sys/fs/cgroup/pids",
        "/sys/fs/cgroup",
    ]
    .into_iter()
    .map(Path::new)
    .find(|p| p.join("cgroup.procs").exists());
    let Some(base) = base else {
        return skip(Lack::Setup, "no cgroup hierarchy to make a cgroup in");
    };
    let cg = Cgroup(base.join(format!("iolab-test-{}", std::process::id())));
    if std::fs::create_dir(&cg.0).is_err() {
        return skip(Lack::Setup, "cannot make a cgroup here");
    }
    let procs = cg.0.join("cgroup.procs");
    let mut kids = Vec::new();
    for bs in ["4k", "64k"] {
        let script = format!(
            "echo $$ > {}; exec dd if=/dev/zero of=/dev/null bs={bs}",
            s(&procs)
        );
        kids.push(
            std::process::Command::new("sh")
                .args(["-c", &script])
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap(),
        );
    }
    wait_until(
        std::time::Duration::from_secs(10),
        "both in the cgroup",
        || std::fs::read_to_string(&procs).is_ok_and(|t| t.lines().count() == 2),
    );
    std::thread::sleep(std::time::Duration::from_millis(100));
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("cg.json");
    let o = iolab()
        .args(["trace", "--cgroup", s(&cg.0), "--seconds", "1", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let alive = kids.iter_mut().all(|k| k.try_wait().unwrap().is_none());
    for k in &mut kids {
        let _ = k.kill();
        let _ = k.wait();
    }
    drop(cg);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(alive, "the processes were left running");
    let t: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    assert_eq!(t["processes"], 2, "{}", t["notes"]);
    let read = read_bytes_of(&t);
    let rchar = t["kernel"]["rchar"].as_u64().unwrap();
    assert!(read > 1 << 20);
    let off = (read as f64 / rchar as f64 - 1.0).abs();
    assert!(off < 0.01, "reads {read} against rchar {rchar}");
    // Still running at the end, both are in the time model, by name, up to the end.
    let times = t["thread_times"].as_array().unwrap();
    let running: Vec<&Value> = times.iter().filter(|x| x["running"] == true).collect();
    assert_eq!(running.len(), 2, "{times:?}");
    for x in &running {
        assert_eq!(x["name"], "dd", "{x}");
        assert!(x["cpu_ns"].as_u64().unwrap() > 0, "{x}");
    }
    assert!(
        times.iter().all(|x| x["name"] != ""),
        "a nameless thread: {times:?}"
    );
}

/// 22 calls iolab times only (neither recorded one by one nor left untimed), call k made k+1
/// times: more distinct calls than a thread's own sums hold (16, bpf/iolab.h's TSLOTS), the
/// rest in the probes' shared table. With `MS R`: R rounds, MS milliseconds apart.
const TIMED_ONLY: &str = r#"
#define _GNU_SOURCE
#include <linux/futex.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
static const long nrs[] = {SYS_nanosleep, SYS_clock_nanosleep, SYS_futex, SYS_poll, SYS_ppoll,
  SYS_select, SYS_epoll_wait, SYS_access, SYS_faccessat, SYS_chdir, SYS_fchdir, SYS_readlink,
  SYS_mkdir, SYS_rmdir, SYS_chmod, SYS_symlink, SYS_connect, SYS_sendto, SYS_recvfrom,
  SYS_wait4, SYS_accept, SYS_shutdown};
int main(int c, char **v) {
  struct timespec z = {0, 1}, zero = {0, 0};
  int f = 0, ep = syscall(SYS_epoll_create1, 0), rounds = c > 2 ? atoi(v[2]) : 1;
  char buf[64], e[16];
  for (int r = 0; r < rounds; r++) {
    if (r > 0) usleep(atoi(v[1]) * 1000);
    for (int k = 0; k < 22; k++)
      for (int i = 0; i <= k; i++) {
        long s = nrs[k];
        struct timeval tv = {0, 0};
        if (s == SYS_nanosleep) syscall(s, &z, 0);
        else if (s == SYS_clock_nanosleep) syscall(s, CLOCK_MONOTONIC, 0, &z, 0);
        else if (s == SYS_futex) syscall(s, &f, FUTEX_WAKE, 1, 0, 0, 0);
        else if (s == SYS_poll) syscall(s, 0, 0, 0);
        else if (s == SYS_ppoll) syscall(s, 0, 0, &zero, 0, 0);
        else if (s == SYS_select) syscall(s, 0, 0, 0, 0, &tv);
        else if (s == SYS_epoll_wait) syscall(s, ep, e, 1, 0);
        else if (s == SYS_access) syscall(s, "/", 0);
        else if (s == SYS_faccessat) syscall(s, -100, "/", 0);
        else if (s == SYS_chdir) syscall(s, ".");
        else if (s == SYS_readlink) syscall(s, "/nonexistent", buf, sizeof buf);
        else if (s == SYS_mkdir) syscall(s, "/", 0755);
        else if (s == SYS_symlink) syscall(s, "/", "/");
        else if (s == SYS_rmdir || s == SYS_chmod) syscall(s, "/nonexistent", 0644);
        else if (s == SYS_wait4) syscall(s, -1, 0, 1, 0);
        else syscall(s, -1, 0, 0, 0, 0, 0);
      }
  }
  return 0;
}
"#;

/// The 22 calls of [`TIMED_ONLY`] by their names in a trace, in its order.
const TIMED_NAMES: [&str; 22] = [
    "nanosleep",
    "clock_nanosleep",
    "futex",
    "poll",
    "ppoll",
    "select",
    "epoll_wait",
    "access",
    "faccessat",
    "chdir",
    "fchdir",
    "readlink",
    "mkdir",
    "rmdir",
    "chmod",
    "symlink",
    "connect",
    "sendto",
    "recvfrom",
    "wait4",
    "accept",
    "shutdown",
];

/// The calls timed only of the trace's thread running `exe`: call name to (calls, errors).
fn timed_of(t: &Value, exe: &str) -> BTreeMap<String, (u64, u64)> {
    let th = t["thread_times"]
        .as_array()
        .unwrap()
        .iter()
        .find(|th| th["name"] == exe)
        .unwrap_or_else(|| panic!("no thread {exe}: {}", t["thread_times"]));
    th["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let n = |k: &str| c[k].as_u64().unwrap();
            (
                c["call"].as_str().unwrap().to_string(),
                (n("calls"), n("errors")),
            )
        })
        .collect()
}

#[test]
fn calls_timed_only_are_counted_exactly_past_a_threads_own_sums_and_while_it_runs() {
    if !can_load() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("timed.c");
    std::fs::write(&src, TIMED_ONLY).unwrap();
    let exe = dir.path().join("timedonly");
    let built = std::process::Command::new("cc")
        .args(["-O1", "-o"])
        .arg(&exe)
        .arg(&src)
        .status()
        .is_ok_and(|s| s.success());
    if !built {
        skip(
            Lack::Setup,
            "no C compiler (cc) to build the test's program",
        );
        return;
    }
    // Traced from its start, under both tracers: each call exactly as often as made (the
    // loader's own access() aside), its failures counted, when the program has ended.
    for tracer in ["ebpf", "ptrace"] {
        let t = trace(dir.path(), tracer, &[s(&exe)]);
        let calls = timed_of(&t, "timedonly");
        for (k, name) in TIMED_NAMES.iter().enumerate() {
            let (n, errors) = calls.get(*name).copied().unwrap_or_default();
            if *name == "access" {
                assert!(n > k as u64, "{tracer}: {name} {n}");
                continue;
            }
            assert_eq!(n, k as u64 + 1, "{tracer}: {name}: {calls:?}");
            // Those given a bad descriptor or a missing path fail every time.
            if k >= 10 && *name != "faccessat" {
                assert_eq!(errors, n, "{tracer}: {name}: {calls:?}");
            }
        }
    }
    // Attached to while it runs, and still running at the end: a round every 300 ms for 1.5 s
    // of tracing, read from the thread's own sums (through a pidfd) and the shared table.
    let mut child = std::process::Command::new(&exe)
        .args(["300", "1000"])
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(200));
    let (t, err) = attach(dir.path(), child.id(), &["--seconds", "1.5"]);
    let running = child.try_wait().unwrap().is_none();
    let _ = child.kill();
    let _ = child.wait();
    assert!(running, "the program was left running");
    assert!(!err.contains("could not be read"), "{err}");
    let calls = timed_of(&t, "timedonly");
    // At least one whole round (1.5 s at 300 ms), each call k+1 times a round.
    for (k, name) in TIMED_NAMES.iter().enumerate() {
        let n = calls.get(*name).map_or(0, |c| c.0);
        assert!(n > k as u64, "{name}: {n}, all: {calls:?}");
    }
}
