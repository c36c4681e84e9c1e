//! Round four's inputs (issue 53): names that are not UTF-8 or hide escapes, numbers at the
//! edge of `u64`, traces that lie, FIFOs and devices where a file was expected. Each must get a
//! one-line refusal or work, never a panic, a hang or a terminal escape.

mod common;

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Neither a panic nor a raw escape, C1 control or line separator in `bytes`.
fn clean(what: &str, bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    assert!(!text.contains("panicked"), "{what}: {text}");
    assert!(
        !bytes.contains(&0x1b),
        "{what}: a raw escape reached the output: {text:?}"
    );
    assert!(
        !text
            .chars()
            .any(|c| matches!(c, '\u{80}'..='\u{9f}' | '\u{2028}' | '\u{2029}')),
        "{what}: {text:?}"
    );
}

/// A file of `data` whose name is the bytes `name`, in `dir`.
fn named(dir: &Path, name: &[u8], data: &[u8]) -> PathBuf {
    let p = dir.join(OsStr::from_bytes(name));
    std::fs::write(&p, data).unwrap();
    p
}

/// P7, P18: a name that is not UTF-8 and carries a terminal escape works in every command that
/// takes a file and is printed escaped, as Bash's `$'...'` would spell it.
#[test]
fn p7_p18_a_name_that_is_not_utf8_or_hides_an_escape_works_and_is_printed_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let data = common::bytes(200_000, 3);
    let f = named(dir.path(), b"d\xff\x1b[2J.bin", &data);
    for args in [
        vec![OsStr::new("cache"), OsStr::new("status"), f.as_os_str()],
        vec![OsStr::new("fast"), f.as_os_str()],
        vec![
            OsStr::new("trace"),
            OsStr::new("--"),
            OsStr::new("cat"),
            f.as_os_str(),
        ],
    ] {
        let o = common::iolab().args(&args).output().unwrap();
        let what = format!("{args:?}");
        assert!(o.status.success(), "{what}: {o:?}");
        clean(&what, &o.stderr);
        // trace passes the program's own output through: cat's bytes are the file's.
        if args[0] != "trace" {
            clean(&what, &o.stdout);
        }
        // fast names no file; the others show it in a row or a title (a trace's JSON holds
        // names as UTF-8 text, so there the byte 0xFF is U+FFFD, and only the escape shows).
        let want = if args[0] == "trace" {
            r"\e[2J.bin"
        } else {
            r"\xFF\e[2J.bin"
        };
        if args[0] != "fast" {
            let err = String::from_utf8_lossy(&o.stderr);
            let out = String::from_utf8_lossy(&o.stdout);
            let shown = if args[0] == "trace" { err } else { out };
            assert!(
                shown.contains(r"$'") && shown.contains(want),
                "{what}: {shown}"
            );
        }
    }
    // Traced, the name is kept byte for byte: the replay reads the file (not "gone") and its
    // bytes XOR to what the trace recorded.
    let t = dir.path().join("t.json");
    let o = common::iolab()
        .args([OsStr::new("trace"), OsStr::new("--out"), t.as_os_str()])
        .args([OsStr::new("--"), OsStr::new("cat"), f.as_os_str()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    let o = common::iolab()
        .args([
            "replay",
            "--methods",
            "pread",
            "--cache",
            "warm",
            "--budget",
            "1s",
        ])
        .args(["--format", "json"])
        .arg(&t)
        .output()
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    // (cat's loader and locale files are replayed too.)
    assert!(r["bytes"].as_u64().unwrap() >= data.len() as u64, "{r}");
    assert!(!r["notes"].to_string().contains("no longer exist"), "{r}");
    // A file that does not exist, named likewise: one line, escaped.
    let gone = dir
        .path()
        .join(OsStr::from_bytes(b"gone\xfe\x1b]0;title\x07"));
    let o = common::iolab().arg("fast").arg(&gone).output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    clean("fast gone", &o.stderr);
    assert_eq!(
        String::from_utf8_lossy(&o.stderr).lines().count(),
        1,
        "{o:?}"
    );
}

/// P18: names with a new line or U+2028 keep their row in a table.
#[test]
fn p18_a_name_with_a_line_break_keeps_its_row() {
    let dir = tempfile::tempdir().unwrap();
    let a = named(dir.path(), "one\ntwo".as_bytes(), b"x");
    let b = named(dir.path(), "three\u{2028}four\u{202E}exe".as_bytes(), b"yy");
    let o = common::iolab()
        .args(["cache", "status"])
        .arg(&a)
        .arg(&b)
        .output()
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    clean("cache status", &o.stdout);
    let out = String::from_utf8_lossy(&o.stdout);
    let rows: Vec<&str> = out.lines().take_while(|l| !l.is_empty()).collect();
    assert_eq!(
        rows.len(),
        4,
        "a header, one row per file and the total: {out}"
    );
    assert!(rows[1].contains(r"one\ntwo"), "{out}");
    assert!(rows[2].contains(r"three\u2028four\u202Eexe"), "{out}");
}

/// The trace of `cat` reading `f`, as `iolab trace --out` writes it.
fn trace_of_cat(dir: &Path, f: &Path) -> serde_json::Value {
    let out = dir.join("t.json");
    let o = common::iolab()
        .args(["trace", "--out"])
        .arg(&out)
        .args(["--", "cat"])
        .arg(f)
        .output()
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap()
}

/// P8: a trace whose reads pass the file's end, or that names a file it does not list, is
/// refused in one line before anything is replayed.
#[test]
fn p8_a_trace_that_reads_past_the_end_is_refused_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let f = common::write_file(dir.path(), "data.bin", &common::bytes(100_000, 5));
    let t = trace_of_cat(dir.path(), &f);
    let file = t["files"]
        .as_array()
        .unwrap()
        .iter()
        .position(|x| x["path"].as_str() == f.to_str())
        .unwrap();
    let lie = |change: &dyn Fn(&mut serde_json::Value)| {
        let mut t = t.clone();
        // The file as it was before the run claimed larger than it is (its size after the run
        // kept): reads within the claim pass the trace's own checks, not the file's.
        t["files"][file]["size"] = 2_000_000_000u64.into();
        for op in t["ops"].as_array_mut().unwrap() {
            if op["file"] == file && op["ret"].as_i64().unwrap() > 0 {
                change(op);
            }
        }
        let p = dir.path().join("lie.json");
        std::fs::write(&p, serde_json::to_vec(&t).unwrap()).unwrap();
        common::iolab()
            .args(["replay", "--budget", "2s"])
            .arg(&p)
            .output()
            .unwrap()
    };
    for (change, needle) in [
        (
            &(|op: &mut serde_json::Value| op["off"] = 3_000_000_000u64.into())
                as &dyn Fn(&mut serde_json::Value),
            "past its end",
        ),
        (&|op| op["off"] = u64::MAX.into(), "past its end"),
        (
            &|op| op["off"] = 1_000_000_000u64.into(),
            "of a file of 100000 bytes",
        ),
        (&|op| op["file"] = 999.into(), "names file 999"),
    ] {
        let o = lie(change);
        assert_eq!(o.status.code(), Some(2), "{o:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(needle), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
    }
}

/// P9, P20: a FIFO or a device where a trace or a hot set was expected is refused at once
/// (an open that waited for a writer, or a read of /dev/zero, would never end).
#[test]
fn p9_p20_a_fifo_or_a_device_is_refused_not_waited_on() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let stream = common::write_file(dir.path(), "stream.bin", &common::bytes(1 << 20, 1));
    let runs: Vec<Vec<&OsStr>> = vec![
        vec![OsStr::new("replay"), fifo.as_os_str()],
        vec![OsStr::new("replay"), OsStr::new("/dev/zero")],
        vec![
            OsStr::new("pollute"),
            stream.as_os_str(),
            OsStr::new("--memory"),
            OsStr::new("512M"),
            OsStr::new("--hot"),
            fifo.as_os_str(),
        ],
        vec![OsStr::new("fast"), fifo.as_os_str()],
    ];
    for args in runs {
        let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("iolab"))
            .args(&args)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let st = common::wait_or_fail(
            &mut child,
            Duration::from_secs(10),
            &format!("refused {args:?} at once"),
        );
        let mut err = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
        assert_eq!(st.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("not a regular file"), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
    }
}

/// P10: replay streams its trace. Half a million reads (a 90 MB trace, 56 MB as calls, and
/// 133 MB held by the replay before it streamed) are planned and replayed with at most 64 MB of
/// heap (`prlimit --data`: an allocation past it aborts the replay).
#[test]
fn p10_a_long_trace_is_replayed_in_bounded_memory() {
    use std::io::Write;
    if !common::have("prlimit") {
        return common::skip(
            common::Lack::Setup,
            "prlimit is not installed (Debian: util-linux)",
        );
    }
    let dir = tempfile::tempdir().unwrap();
    // A sparse 16 MiB file of zeros (every read XORs to 0), traced as `cat` reads it.
    let data = dir.path().join("zeros.bin");
    std::fs::File::create(&data)
        .unwrap()
        .set_len(16 << 20)
        .unwrap();
    let mut t = trace_of_cat(dir.path(), &data);
    let file = t["files"]
        .as_array()
        .unwrap()
        .iter()
        .position(|f| Path::new(f["path"].as_str().unwrap()) == data)
        .unwrap();
    // Its calls replaced by half a million 4 KiB reads all over it, written as they are made.
    t["ops"] = serde_json::json!("@OPS@");
    t["faults"] = serde_json::json!([]);
    let text = t.to_string();
    let (head, tail) = text.split_once("\"@OPS@\"").unwrap();
    let path = dir.path().join("long.json");
    let mut w = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    write!(w, "{head}[").unwrap();
    let n: u64 = 500_000;
    for i in 0..n {
        let off = (i * 7919) % 4096 * 4096;
        write!(
            w,
            "{}{{\"t\":{},\"dur\":1500,\"pid\":9,\"tid\":9,\"call\":\"pread\",\"fd\":3,\"file\":{file},\"off\":{off},\"len\":4096,\"ret\":4096,\"held\":{},\"held_exit\":{},\"stops\":{}}}",
            if i == 0 { "" } else { "," },
            i * 3000,
            i * 100,
            i * 100 + 50,
            2 * i + 1
        )
        .unwrap();
    }
    write!(w, "]{tail}").unwrap();
    w.into_inner().unwrap().sync_all().unwrap();
    let o = std::process::Command::new("prlimit")
        .arg("--data=64000000")
        .arg(assert_cmd::cargo::cargo_bin("iolab"))
        .env_remove("IOLAB_NO_ROOT")
        .args(["replay", "--methods", "pread", "--cache", "warm"])
        // A cap, counting the reading of the trace; one cell, so the first look ends it.
        .args(["--budget", "60s", "--format", "json", "--progress", "never"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(r["reads"], n);
    assert_eq!(r["bytes"], n * 4096);
    assert!(r["rows"][0]["seconds"]["n"].as_u64().unwrap() > 0, "{r}");
}

/// P14, P16: numbers at the edge of `u64` are refused in one line before anything is written.
#[test]
fn p14_p16_numbers_at_the_edge_are_refused_before_anything_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let stream = common::write_file(dir.path(), "stream.bin", &common::bytes(1 << 20, 1));
    let before: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    let o = common::iolab()
        .arg("pollute")
        .arg(&stream)
        .args(["--memory", "512M", "--hot-size", "18446744073709551615"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("does not fit the memory limit"), "{err}");
    let after: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(before.len(), after.len(), "pollute wrote beside the stream");
    let o = common::iolab()
        .current_dir(dir.path())
        .args(["ior", "-w", "-D", "18446744073709551615"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    clean("ior -D", &o.stderr);
    assert!(!dir.path().join("testFile").exists());
}

/// A trace of another schema, or not JSON at all, is refused in one line naming why.
#[test]
fn a_trace_of_another_schema_or_not_json_is_refused_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    for (text, needle) in [
        (
            &br#"{"schema": "iolab-trace/0", "ops": 7}"#[..],
            "schema is \"iolab-trace/0\"",
        ),
        (&b"{\"schema\": \"iolab-tr"[..], "invalid JSON"),
    ] {
        let p = common::write_file(dir.path(), "t.json", text);
        let o = common::iolab().arg("replay").arg(&p).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{o:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(needle) && err.lines().count() == 1, "{err}");
    }
}
