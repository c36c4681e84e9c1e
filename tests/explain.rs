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
