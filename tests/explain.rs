//! "Your program, explained" on programs nobody here wrote (coreutils, tar, gzip, fio): the
//! iolog leaves their files alone, copies count their writes as the kernel does, time is put
//! where it went.

mod common;
use common::*;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Every file under `dir` with its bytes.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                todo.push(p);
            } else {
                out.insert(p.clone(), std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

/// `iolab trace ARGS -- sh -c SCRIPT` in `dir`, which must succeed: the JSON profile.
fn trace_sh(dir: &Path, args: &[&str], script: &str) -> Value {
    let o = iolab()
        .current_dir(dir)
        .args(["trace", "--format", "json", "--no-xor"])
        .args(args)
        .args(["--", "sh", "-c", script])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    serde_json::from_str(&err[err.find('{').unwrap()..]).unwrap()
}

#[test]
fn the_default_fio_iolog_leaves_every_file_as_it_was() {
    if !have("fio") || !have("tar") {
        return skip(Lack::Setup, "fio or tar is not installed");
    }
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir_all(work.join("src")).unwrap();
    for i in 0..5u8 {
        std::fs::write(work.join(format!("src/f{i}")), vec![b'a' + i; 40_000]).unwrap();
    }
    std::fs::write(work.join("in.txt"), "pear\napple\nfig\n").unwrap();
    std::fs::write(work.join("db"), vec![7u8; 16384]).unwrap();
    std::fs::write(work.join("patch"), vec![9u8; 4096]).unwrap();
    let log = dir.path().join("run.iolog");
    // An archive written, a sorted output, a file updated in place, a temporary file deleted:
    // what an iolog with writes would overwrite or create.
    let p = trace_sh(
        &work,
        &["--fio-iolog", s(&log)],
        "tar cf out.tar src && sort -o sorted.txt in.txt && \
         dd if=patch of=db bs=4096 seek=1 conv=notrunc status=none && \
         cat db > tmp.bin && cat tmp.bin > /dev/null && rm tmp.bin",
    );
    assert!(p["writes"]["bytes"].as_u64().unwrap() > 200_000, "{p}");
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(!text.contains(" write "), "{text}");
    assert!(!text.contains("tmp.bin"), "a deleted file: {text}");
    assert!(text.contains("/src/f0 read "), "{text}");
    let before = snapshot(&work);
    // As the recipe a user copies from elsewhere runs it: without --readonly.
    let o = Command::new("fio")
        .current_dir(&work)
        .args(["--name=replay", "--ioengine=psync", "--output-format=json"])
        .arg(format!("--read_iolog={}", log.display()))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["jobs"][0]["read"]["io_bytes"].as_u64().unwrap() >= 200_000);
    assert_eq!(v["jobs"][0]["write"]["io_bytes"], 0);
    let after = snapshot(&work);
    assert_eq!(
        before.keys().collect::<Vec<_>>(),
        after.keys().collect::<Vec<_>>(),
        "fio made or removed files"
    );
    for (path, bytes) in &before {
        assert!(after[path] == *bytes, "{} changed", path.display());
    }
}

#[test]
fn a_copy_tool_shows_its_writes_as_the_kernel_counts_them() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    std::fs::create_dir_all(&src).unwrap();
    let mut total = 0u64;
    for i in 0..12u64 {
        let n = 50_000 + 37_000 * i;
        std::fs::write(
            src.join(format!("f{i}")),
            vec![(i as u8) ^ 0x5a; n as usize],
        )
        .unwrap();
        total += n;
    }
    let p = trace_sh(dir.path(), &[], "cp -r src dst");
    let wchar = p["kernel"]["wchar"].as_u64().unwrap();
    let writes = p["writes"]["bytes"].as_u64().unwrap();
    assert!(wchar >= total, "{p}");
    assert!(
        (writes as f64 - wchar as f64).abs() <= 0.01 * wchar as f64,
        "traced writes {writes} against wchar {wchar}"
    );
    assert!((p["wchar_agreement"].as_f64().unwrap() - 1.0).abs() <= 0.01);
    assert_eq!(p["file_writes"]["bytes"].as_u64().unwrap(), total, "{p}");
    // Each copy's row has its bytes written, and its typical read is no SSIZE_MAX.
    let files = p["files"].as_array().unwrap();
    for i in 0..12 {
        let name = format!("/dst/f{i}");
        let row = files
            .iter()
            .find(|f| f["path"].as_str().unwrap().ends_with(&name))
            .unwrap_or_else(|| panic!("no row for {name}: {p}"));
        assert_eq!(row["writes"]["bytes"], 50_000 + 37_000 * i);
    }
    for f in files
        .iter()
        .filter(|f| f["reads"]["calls"].as_u64() > Some(0))
    {
        assert!(
            f["typical_request"].as_u64().unwrap() <= f["size"].as_u64().unwrap().max(1 << 20),
            "{f}"
        );
    }
}

/// A thread's time in `cause`, ns.
fn thread_ns(m: &Value, cause: &str) -> u64 {
    m["causes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["cause"] == cause)
        .map_or(0, |c| c["ns"].as_u64().unwrap())
}

#[test]
fn a_pipeline_into_gzip_is_said_to_wait_on_the_cpu_not_on_files() {
    let dir = tempfile::tempdir().unwrap();
    // Incompressible: gzip works hard on every byte.
    write_file(dir.path(), "r.bin", &bytes(24 << 20, 5));
    let p = trace_sh(dir.path(), &[], "tar cf - r.bin | gzip > /dev/null");
    let time = &p["time"];
    verdict_holds(time);
    let threads = time["threads"].as_array().unwrap();
    let by = |name: &str| {
        threads
            .iter()
            .find(|x| x["name"] == name)
            .unwrap_or_else(|| panic!("{name}: {time}"))
    };
    // gzip did the work; tar waited on the pipe into it.
    assert!(
        thread_ns(by("gzip"), "cpu") > thread_ns(by("tar"), "cpu"),
        "{time}"
    );
    assert!(
        thread_ns(by("tar"), "pipes") > thread_ns(by("tar"), "file_data"),
        "{time}"
    );
    // The shell waited for both: its wait is put to what they did, gzip's computing first.
    let v = &time["verdict"];
    match v["decided"].as_str().unwrap() {
        "bound" => {
            // On a busy machine, waiting for a CPU can lead the CPU time itself.
            let c = v["cause"].as_str().unwrap();
            assert!(c == "cpu" || c == "run_queue", "{time}");
            let first = &time["wall"]["causes"][0];
            assert_eq!(first["threads"][0]["name"], "gzip", "{time}");
        }
        _ => assert_ne!(v["cause"], "file_data", "{time}"),
    }
    assert!(
        !v["text"].as_str().unwrap().contains("bound by file data"),
        "{time}"
    );
}

#[test]
fn direct_reads_are_said_to_wait_on_files() {
    let dir = tempfile::tempdir().unwrap();
    if fs_type(dir.path()) == "tmpfs" {
        return skip(Lack::Machine, "O_DIRECT: the temporary folder is on tmpfs");
    }
    let f = write_file(dir.path(), "d.bin", &bytes(64 << 20, 9));
    let p = trace_sh(
        dir.path(),
        &[],
        &format!(
            "exec dd if={} of=/dev/null bs=1M iflag=direct status=none",
            s(&f)
        ),
    );
    let time = &p["time"];
    verdict_holds(time);
    let v = &time["verdict"];
    match v["decided"].as_str().unwrap() {
        "bound" => assert_eq!(v["cause"], "file_data", "{time}"),
        // The ptrace tracer's stops, here a large share of 64 reads, can leave it undecided.
        _ => assert!(
            v["text"].as_str().unwrap().starts_with("undecided")
                || v["text"].as_str().unwrap().starts_with("mixed"),
            "{time}"
        ),
    }
    // It bypassed the cache: said so, not blamed on evictions.
    let row = p["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["path"].as_str().unwrap().ends_with("/d.bin"))
        .unwrap();
    assert_eq!(row["direct"], true, "{row}");
    let dd = &time["threads"][0];
    assert!(
        thread_ns(dd, "file_data") > thread_ns(dd, "metadata"),
        "{time}"
    );
}

#[test]
fn a_walk_of_directories_shows_its_metadata_per_directory() {
    let dir = tempfile::tempdir().unwrap();
    for d in 0..40 {
        let sub = dir.path().join(format!("tree/d{d:02}"));
        std::fs::create_dir_all(&sub).unwrap();
        for f in 0..(d % 7 + 1) {
            std::fs::write(sub.join(format!("f{f}")), b"x").unwrap();
        }
    }
    let p = trace_sh(
        dir.path(),
        &["--files", "100"],
        "du -s tree > /dev/null; ls missing 2>/dev/null; true",
    );
    let rows = p["metadata_dirs"].as_array().unwrap();
    for d in 0..40 {
        let name = format!("/tree/d{d:02}");
        let row = rows
            .iter()
            .find(|r| r["path"].as_str().unwrap().ends_with(&name))
            .unwrap_or_else(|| panic!("no row for {name}: {rows:?}"));
        // du stats each entry relative to its directory, and reads its entries.
        assert!(row["stats"].as_u64().unwrap() > d % 7, "{row}");
        assert!(row["getdents"].as_u64().unwrap() >= 1, "{row}");
        assert!(row["entry_bytes"].as_u64().unwrap() > 0, "{row}");
    }
    // A row is a directory, or one of the two rows that name none (fstat of open files,
    // paths from the working directory).
    for r in rows {
        let path = r["path"].as_str().unwrap();
        assert!(path.starts_with('(') || Path::new(path).is_dir(), "{r}");
    }
    let stats: u64 = rows.iter().map(|r| r["stats"].as_u64().unwrap()).sum();
    assert!(
        stats >= 40 + (0..40).map(|d| d % 7 + 1).sum::<u64>(),
        "{stats}"
    );
    // ls of a missing name: a failed stat, counted.
    let errors: u64 = rows
        .iter()
        .map(|r| r["stat_errors"].as_u64().unwrap())
        .sum();
    assert!(errors >= 1, "{rows:?}");
    let metadata: u64 = p["time"]["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| thread_ns(m, "metadata"))
        .sum();
    assert!(metadata > 0, "{}", p["time"]);
}

/// `iolab replay TRACE --cache warm --budget 3s --format json`, which must succeed.
fn replay_warm(trace: &Path) -> Value {
    let o = iolab()
        .args([
            "replay",
            s(trace),
            "--cache",
            "warm",
            "--budget",
            "3s",
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

#[test]
fn a_sort_with_temporary_files_replays_without_them() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let mut text = String::new();
    for i in 0..200_000u64 {
        text.push_str(&format!(
            "{:08x} {i}\n",
            i.wrapping_mul(2654435761) % 4294967291
        ));
    }
    std::fs::write(dir.path().join("words.txt"), text).unwrap();
    let out = dir.path().join("sort.json");
    let o = iolab()
        .current_dir(dir.path())
        .args(["-q", "trace", "--no-xor", "--out", s(&out), "--"])
        .args([
            "sort",
            "-S",
            "1M",
            "-T",
            s(&tmp),
            "words.txt",
            "-o",
            "sorted.txt",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(
        std::fs::read_dir(&tmp).unwrap().count(),
        0,
        "sort left its temporary files"
    );
    let v = replay_warm(&out);
    let notes = v["notes"].to_string();
    assert!(
        notes.contains("no longer exist (temporary files"),
        "{notes}"
    );
    // What the runs checked is said (traced with --no-xor: no XOR of the trace's to compare).
    assert!(notes.contains("verified: "), "{notes}");
    assert!(
        v["bytes"].as_u64().unwrap() >= 200_000 * 10,
        "words.txt is replayed: {v}"
    );
}

#[test]
fn a_small_file_changed_since_is_left_out_and_a_data_file_refused() {
    let dir = tempfile::tempdir().unwrap();
    let data = write_file(dir.path(), "data.bin", &bytes(2 << 20, 3));
    let small = write_file(dir.path(), "small.conf", &bytes(4096, 4));
    let out = dir.path().join("t.json");
    let o = iolab()
        .args(["-q", "trace", "--no-xor", "--out", s(&out), "--", "cat"])
        .args([&small, &data])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let whole = replay_warm(&out)["bytes"].as_u64().unwrap();
    // As ldconfig rewrites /etc/ld.so.cache: new bytes, a new time.
    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::write(&small, bytes(4096, 5)).unwrap();
    let v = replay_warm(&out);
    let notes = v["notes"].to_string();
    assert!(notes.contains("changed since the trace"), "{notes}");
    assert!(notes.contains("small.conf"), "{notes}");
    assert_eq!(v["bytes"].as_u64().unwrap(), whole - 4096, "{notes}");
    // The data file itself: refused, in one line.
    std::fs::write(&data, bytes(2 << 20, 6)).unwrap();
    let o = iolab()
        .args(["replay", s(&out), "--cache", "warm", "--budget", "3s"])
        .output()
        .unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("changed since the trace") && err.contains("data.bin"),
        "{err}"
    );
}

#[test]
fn a_sparse_mapped_access_replays_what_it_touched_not_the_file() {
    if !have("python3") {
        return skip(Lack::Setup, "python3 is not installed");
    }
    let dir = tempfile::tempdir().unwrap();
    let f = write_file(dir.path(), "m.bin", &bytes(32 << 20, 8));
    let out = dir.path().join("t.json");
    let script = "import mmap,sys\nf=open(sys.argv[1],'rb')\nm=mmap.mmap(f.fileno(),0,prot=mmap.PROT_READ)\ns=0\nfor i in range(12288,len(m),1<<20): s^=m[i]\nprint(s)\n";
    let o = iolab()
        .args([
            "-q",
            "trace",
            "--no-xor",
            "--out",
            s(&out),
            "--",
            "python3",
            "-c",
            script,
        ])
        .arg(&f)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let t: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    if !t["faults_unavailable"].is_null() {
        return skip(Lack::Machine, "page faults are not sampled here");
    }
    let fi = t["files"]
        .as_array()
        .unwrap()
        .iter()
        .position(|x| x["path"].as_str().unwrap().ends_with("/m.bin"))
        .unwrap();
    let windows: std::collections::BTreeSet<u64> = t["faults"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|x| x["file"] == fi)
        .map(|x| x["off"].as_u64().unwrap() >> 16)
        .collect();
    // A fault per MiB touched, or per 2 MiB where the kernel maps large folios whole.
    assert!(windows.len() >= 16, "{windows:?}");
    // What every fault on a data file stands for at most, each as often as it happened (the
    // loader's cache and locale files of every process too): its 64 KiB window.
    let files = t["files"].as_array().unwrap();
    let mapped: u64 = t["faults"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| &files[x["file"].as_u64().unwrap() as usize])
        .filter(|f| f["code"] == false)
        .map(|f| 65536.min(f["size"].as_u64().unwrap()))
        .sum();
    // Everything else the replay reads: data files' read calls (Python's own modules).
    let read: u64 = t["ops"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| ["read", "pread"].contains(&o["call"].as_str().unwrap()))
        .map(|o| o["ret"].as_i64().unwrap().max(0) as u64)
        .sum();
    let v = replay_warm(&out);
    let replayed = v["bytes"].as_u64().unwrap();
    assert!(
        replayed <= read + 2 * mapped,
        "replayed {replayed}, mapped {mapped}, read {read}"
    );
}

#[test]
fn files_that_reuse_an_inode_are_rows_of_their_own() {
    let tracers: &[&str] = if is_root() {
        &["ptrace", "ebpf"]
    } else {
        skip(Lack::Setup, "the eBPF tracer needs root: ptrace alone");
        &["ptrace"]
    };
    for &tracer in tracers {
        let dir = tempfile::tempdir().unwrap();
        let p = trace_sh(
            dir.path(),
            &["--tracer", tracer],
            "for i in 1 2 3; do echo hello$i > t.tmp; cat t.tmp > /dev/null; rm t.tmp; done",
        );
        let rows: Vec<&Value> = p["files"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["path"].as_str().unwrap().ends_with("/t.tmp"))
            .collect();
        // ext4 gives the freed inode to the next file: each is its own file, read once.
        assert_eq!(rows.len(), 3, "{tracer}: {rows:?}");
        for r in rows {
            assert_eq!(r["reads"]["bytes"], 7, "{tracer}: {r}");
            assert_eq!(r["reread"], 0.0, "{tracer}: {r}");
        }
        // git's way: a lock file renamed over the file it replaces, whose freed inode the next
        // lock file may get; each file keeps the name it was written under, with its bytes.
        let p = trace_sh(
            dir.path(),
            &["--tracer", tracer],
            "echo 1 > config.lock; mv config.lock config; echo 22 > config.lock; mv config.lock config; \
             head -c 5000 /dev/zero > index.lock; cat index.lock config > /dev/null",
        );
        let written = |name: &str| -> u64 {
            p["files"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|f| f["path"].as_str().unwrap().ends_with(name))
                .map(|f| f["writes"]["bytes"].as_u64().unwrap())
                .sum()
        };
        assert_eq!(written("/index.lock"), 5000, "{tracer}: {}", p["files"]);
        assert_eq!(written("/config.lock"), 2 + 3, "{tracer}: {}", p["files"]);
        // Each lock file's row follows its rename: it says its new name.
        let locks: Vec<&Value> = p["files"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["path"].as_str().unwrap().ends_with("/config.lock"))
            .collect();
        assert_eq!(locks.len(), 2, "{tracer}: {}", p["files"]);
        for f in locks {
            let names = f["renamed"].as_array().expect("renamed");
            assert_eq!(names.len(), 1, "{tracer}: {f}");
            let config = dir.path().canonicalize().unwrap().join("config");
            assert_eq!(names[0], config.to_str().unwrap(), "{tracer}: {f}");
        }
        // A program still running when its rename is read (its working directory is asked),
        // into a subdirectory and on: the row has both names, in order.
        std::fs::create_dir_all(dir.path().join("sub")).unwrap();
        let p = trace_sh(
            dir.path(),
            &["--tracer", tracer],
            "exec /usr/bin/python3 -c \"import os,time; open('a.tmp','w').write('x'*10); \
             os.rename('a.tmp','sub/b.dat'); os.rename('sub/b.dat','c.dat'); time.sleep(0.3)\"",
        );
        let row = p["files"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["path"].as_str().unwrap().ends_with("/a.tmp"))
            .unwrap_or_else(|| panic!("{tracer}: {}", p["files"]));
        let base = dir.path().canonicalize().unwrap();
        let want = [base.join("sub/b.dat"), base.join("c.dat")];
        let want: Vec<&str> = want.iter().map(|p| p.to_str().unwrap()).collect();
        assert_eq!(row["renamed"], serde_json::json!(want), "{tracer}: {row}");
        assert_eq!(row["writes"]["bytes"], 10, "{tracer}: {row}");
    }
}

/// `iolab -q trace --no-xor --out OUT -- CMD` in `dir`, which must succeed.
fn trace_to(dir: &Path, out: &Path, cmd: &[&str]) {
    let o = iolab()
        .current_dir(dir)
        .args(["-q", "trace", "--no-xor", "--out", s(out), "--"])
        .args(cmd)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn as_recorded_replays_o_direct_reads_with_o_direct() {
    let dir = tempfile::tempdir().unwrap();
    if fs_type(dir.path()) == "tmpfs" {
        return skip(Lack::Machine, "O_DIRECT: the temporary folder is on tmpfs");
    }
    let f = write_file(dir.path(), "d.bin", &bytes(8 << 20, 2));
    let out = dir.path().join("t.json");
    let input = format!("if={}", s(&f));
    trace_to(
        dir.path(),
        &out,
        &[
            "dd",
            &input,
            "of=/dev/null",
            "bs=1M",
            "iflag=direct",
            "status=none",
        ],
    );
    let v = replay_warm(&out);
    assert_eq!(
        v["rows"][0]["method"], "as recorded (direct)",
        "{}",
        v["rows"]
    );
    assert!(
        v["notes"].to_string().contains("O_DIRECT"),
        "{}",
        v["notes"]
    );
}

/// fio's io_uring engine in its own forked job process (fio's default: the job calls setsid,
/// so its stops are in another process group), reading `size` of `file` in `dir` at random:
/// the trace's JSON profile and the bytes fio says it read.
fn trace_fio_uring(dir: &Path, out: &Path, rw: &str) -> (Value, u64) {
    let json = dir.join("fio.json");
    // With the XOR: the requests' bytes are re-read after the run.
    let o = iolab()
        .current_dir(dir)
        .args([
            "trace",
            "--format",
            "json",
            "--out",
            s(out),
            "--force",
            "--",
        ])
        .args([
            "fio",
            "--name=u",
            "--filename=u.bin",
            "--bs=16k",
            "--iodepth=8",
        ])
        .args(["--ioengine=io_uring", "--size=4m", "--output-format=json"])
        .arg(format!("--rw={rw}"))
        .arg(format!("--output={}", s(&json)))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    let p: Value = serde_json::from_str(&err[err.find('{').unwrap()..]).unwrap();
    // Each thread's ops in the order it made them (what replay checks): a request is an op of
    // the thread that reaped it, when it did.
    let t: Value = serde_json::from_str(&std::fs::read_to_string(out).unwrap()).unwrap();
    let mut last: BTreeMap<u64, u64> = BTreeMap::new();
    for (i, op) in t["ops"].as_array().unwrap().iter().enumerate() {
        let (tid, at) = (op["tid"].as_u64().unwrap(), op["t"].as_u64().unwrap());
        let before = last.insert(tid, at).unwrap_or(0);
        assert!(
            at >= before,
            "op {i} of thread {tid} at {at}, after one at {before}: {op}"
        );
    }
    let fio: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let job = &fio["jobs"][0];
    let bytes =
        job["read"]["io_bytes"].as_u64().unwrap() + job["write"]["io_bytes"].as_u64().unwrap();
    (p, bytes)
}

#[test]
fn an_io_uring_program_shows_its_data_file_with_its_bytes() {
    if !have("fio") {
        return skip(Lack::Setup, "fio is not installed");
    }
    let dir = tempfile::tempdir().unwrap();
    let data = bytes(4 << 20, 6);
    write_file(dir.path(), "u.bin", &data);
    let (p, fio_read) = trace_fio_uring(dir.path(), &dir.path().join("t.json"), "read");
    assert_eq!(fio_read, 4 << 20, "fio's own count");
    let row = p["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"].as_str().unwrap().ends_with("/u.bin"))
        .unwrap_or_else(|| panic!("no row for the data file: {p}"));
    let got = row["reads"]["bytes"].as_u64().unwrap();
    assert!(
        got.abs_diff(fio_read) * 100 <= fio_read,
        "{got} vs fio's {fio_read}: {row}"
    );
    // Every 16 KiB block once (fio's random map): the XOR of the requests' bytes is the file's.
    assert_eq!(row["xor"], format!("{:08x}", plain_xor(&data)), "{row}");
    assert_eq!(p["uring"]["unseen"], 0, "{}", p["uring"]);
    assert_eq!(p["uring_reads"]["bytes"], fio_read, "{}", p["uring_reads"]);
    // io_uring's bytes are in neither rchar nor wchar: the kernel's check still holds.
    let a = p["rchar_agreement"].as_f64().unwrap();
    assert!((a - 1.0).abs() < 0.01, "rchar agreement {a}");
}

#[test]
fn io_uring_writes_are_counted_on_their_file() {
    if !have("fio") {
        return skip(Lack::Setup, "fio is not installed");
    }
    let dir = tempfile::tempdir().unwrap();
    write_file(dir.path(), "u.bin", &bytes(4 << 20, 8));
    let (p, fio_wrote) = trace_fio_uring(dir.path(), &dir.path().join("t.json"), "randwrite");
    assert_eq!(
        p["uring_writes"]["bytes"], fio_wrote,
        "{}",
        p["uring_writes"]
    );
    let row = p["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"].as_str().unwrap().ends_with("/u.bin"))
        .unwrap();
    assert_eq!(row["writes"]["bytes"], fio_wrote, "{row}");
}

#[test]
fn a_program_in_a_session_of_its_own_is_followed_to_its_end() {
    if !have("setsid") {
        return skip(Lack::Setup, "setsid is not installed");
    }
    let dir = tempfile::tempdir().unwrap();
    write_file(dir.path(), "f.txt", &bytes(70_000, 3));
    // setsid makes the program a session (and process group) leader: a tracer waiting for its
    // own process group only would never see its next stop, and wait forever.
    let o = iolab()
        .timeout(patience(std::time::Duration::from_secs(60)))
        .current_dir(dir.path())
        .args(["trace", "--format", "json", "--no-xor", "--"])
        .args(["setsid", "sh", "-c", "cat f.txt > /dev/null"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    let p: Value = serde_json::from_str(&err[err.find('{').unwrap()..]).unwrap();
    assert!(p["file_reads"]["bytes"].as_u64().unwrap() >= 70_000, "{p}");
}

#[test]
fn a_replay_of_an_io_uring_program_replays_its_requests() {
    if !have("fio") {
        return skip(Lack::Setup, "fio is not installed");
    }
    let dir = tempfile::tempdir().unwrap();
    write_file(dir.path(), "u.bin", &bytes(4 << 20, 6));
    let out = dir.path().join("t.json");
    trace_fio_uring(dir.path(), &out, "randread");
    let v = replay_warm(&out);
    let text = v.to_string();
    assert!(
        text.contains("used io_uring: 4 MiB of the reads were its requests"),
        "{text}"
    );
}

#[test]
fn the_timeline_shows_a_program_s_phases_and_adds_up() {
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("t.svg");
    // A write phase, a pause, a read phase (dd and cat: nobody here wrote them).
    let p = trace_sh(
        dir.path(),
        &["--svg", s(&svg)],
        "dd if=/dev/zero of=a.bin bs=64k count=64 status=none && sleep 0.5 && \
         cat a.bin > /dev/null",
    );
    let tl = &p["timeline"];
    let rows = tl["rows"].as_array().unwrap();
    assert!(rows.len() > 2, "{tl}");
    let sum = |k: &str| -> u64 { rows.iter().map(|r| r[k].as_u64().unwrap()).sum() };
    assert_eq!(sum("file_read"), p["file_reads"]["bytes"].as_u64().unwrap());
    assert_eq!(
        sum("file_written"),
        p["file_writes"]["bytes"].as_u64().unwrap()
    );
    // Every write of a.bin comes before its first read: the phases are in order.
    let last_write = rows
        .iter()
        .rposition(|r| r["file_written"].as_u64().unwrap() >= 65536);
    let first_read = rows
        .iter()
        .position(|r| r["file_read"].as_u64().unwrap() >= 65536);
    let (w, r) = (last_write.unwrap(), first_read.unwrap());
    assert!(
        w < r,
        "writes end in interval {w}, reads start in {r}: {tl}"
    );
    assert!(
        rows[r]["busiest"].as_str().unwrap().ends_with("/a.bin"),
        "{tl}"
    );
    let plot = std::fs::read_to_string(&svg).unwrap();
    assert!(
        plot.starts_with("<svg") && plot.contains("file writes"),
        "{plot}"
    );
}
