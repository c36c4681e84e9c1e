//! Ctrl-C and kill: every command that makes outputs removes its partial ones and exits 130
//! (SIGINT) or 143 (SIGTERM), promptly: a command still running long after its signal (by the
//! machine's patience, not a fixed clock) fails the test.

mod common;

use common::{bytes, patience, wait_or_fail, write_file};
use std::io::{Read, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn iolab(dir: &Path) -> Command {
    let mut c = Command::new(assert_cmd::cargo::cargo_bin("iolab"));
    c.current_dir(dir)
        .env_remove("IOLAB_NO_ROOT")
        .env_remove("IOLAB_TOKEN")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    c
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// Waits until `ready()` (for the machine's patience), sends `sig`, waits for the process to
/// go (a second's work on an idle machine) and returns its exit code and its stderr.
fn signal_when(mut child: Child, sig: &str, ready: impl Fn() -> bool) -> (Option<i32>, String) {
    let limit = patience(Duration::from_secs(20));
    let t = Instant::now();
    while !ready() {
        assert!(t.elapsed() < limit, "never got ready in {limit:?}");
        if let Ok(Some(st)) = child.try_wait() {
            let mut e = String::new();
            let _ = child.stderr.take().unwrap().read_to_string(&mut e);
            panic!("ended before the signal: {st:?} {e}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Command::new("kill")
        .args([sig, &child.id().to_string()])
        .status()
        .unwrap();
    let st = wait_or_fail(
        &mut child,
        Duration::from_secs(1),
        &format!("stopped promptly on {sig}"),
    );
    let mut e = String::new();
    let _ = child.stderr.take().unwrap().read_to_string(&mut e);
    (st.code(), e)
}

#[test]
fn write_interrupted_or_killed_leaves_nothing() {
    // The file being written has no name until it is complete (O_TMPFILE): TERM, INT and even
    // KILL leave nothing behind.
    for (sig, code) in [("-TERM", Some(143)), ("-INT", Some(130)), ("-KILL", None)] {
        let dir = tempfile::tempdir().unwrap();
        let child = iolab(dir.path())
            .args([
                "write", "big.bin", "--size", "1G", "--bs", "4K", "--sync", "each",
            ])
            .spawn()
            .unwrap();
        let started = Instant::now();
        let (got, err) = signal_when(child, sig, || {
            started.elapsed() > Duration::from_millis(700)
        });
        assert_eq!(got, code, "{sig}: {err}");
        assert!(
            names(dir.path()).is_empty(),
            "{sig}: {:?}",
            names(dir.path())
        );
    }
}

#[test]
fn a_receiver_interrupted_mid_file_leaves_nothing_for_every_method() {
    // SIGKILL too: the received file has no name until it is complete (O_TMPFILE).
    for (method, sig, code) in [
        ("write", "-INT", Some(130)),
        ("mmap", "-TERM", Some(143)),
        ("splice", "-INT", Some(130)),
        ("mmap", "-KILL", None),
    ] {
        let out = tempfile::tempdir().unwrap();
        // A sender announcing 1 GiB that sends a little and then waits.
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap().to_string();
        let sent = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = sent.clone();
        let h = std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            let mut hello = b"IOLABXFR".to_vec();
            hello.extend_from_slice(&iolab::transfer::protocol::VERSION.to_le_bytes());
            hello.extend_from_slice(&0u16.to_le_bytes());
            hello.extend_from_slice(&[3; 16]);
            let _ = s.write_all(&hello);
            let mut theirs = [0u8; 28];
            let _ = s.read_exact(&mut theirs);
            let mut hd = vec![1u8];
            hd.extend_from_slice(&8u16.to_le_bytes());
            hd.extend_from_slice(b"huge.bin");
            hd.extend_from_slice(&(1u64 << 30).to_le_bytes());
            let _ = s.write_all(&hd);
            let _ = s.write_all(&bytes(100_000, 5));
            std::thread::sleep(Duration::from_millis(300));
            flag.store(true, std::sync::atomic::Ordering::SeqCst);
            std::thread::sleep(Duration::from_secs(5));
        });
        let child = iolab(out.path())
            .args(["recv", "--connect", &addr, "--method", method, "--out", "."])
            .spawn()
            .unwrap();
        let (got, err) = signal_when(child, sig, || {
            sent.load(std::sync::atomic::Ordering::SeqCst)
        });
        assert_eq!(got, code, "{method} {sig}: {err}");
        assert!(
            names(out.path()).is_empty(),
            "{method} {sig}: {:?}",
            names(out.path())
        );
        let _ = h.join();
    }
}

#[test]
fn the_suite_stops_promptly_and_removes_its_data() {
    let dir = tempfile::tempdir().unwrap();
    let child = iolab(dir.path())
        .args(["suite", "--quick", "--size", "64M", "--out", "rep"])
        .spawn()
        .unwrap();
    // Once its data exists, the suite is measuring.
    let (code, err) = signal_when(child, "-INT", || {
        names(dir.path())
            .iter()
            .any(|n| n.starts_with(".iolab-data-"))
    });
    assert_eq!(code, Some(130), "{err}");
    assert!(names(dir.path()).is_empty(), "{:?}", names(dir.path()));
    // A user's file in --dir survives.
    let data = dir.path().join("mine");
    std::fs::create_dir(&data).unwrap();
    write_file(&data, "notes.txt", b"keep me");
    let child = iolab(dir.path())
        .args([
            "suite", "--quick", "--size", "64M", "--out", "rep2", "--dir", "mine",
        ])
        .spawn()
        .unwrap();
    let (code, err) = signal_when(child, "-TERM", || names(&data).len() > 1);
    assert_eq!(code, Some(143), "{err}");
    assert_eq!(names(&data), ["notes.txt"]);
}

#[test]
fn a_transfer_interrupted_removes_its_scratch_directory() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    write_file(dir.path(), "f.bin", &bytes(32 << 20, 9));
    let child = iolab(dir.path())
        .env("TMPDIR", tmp.path())
        .args(["transfer", "f.bin", "--repeat", "50", "--sync"])
        .spawn()
        .unwrap();
    let (code, err) = signal_when(child, "-INT", || {
        names(tmp.path())
            .iter()
            .any(|n| n.starts_with("iolab-transfer-"))
    });
    assert_eq!(code, Some(130), "{err}");
    assert!(names(tmp.path()).is_empty(), "{:?}", names(tmp.path()));
    assert_eq!(names(dir.path()), ["f.bin"]);
}

/// `ior -w`'s test file is iolab's: SIGTERM and SIGINT remove it (it stayed, 1 GiB).
#[test]
fn ior_interrupted_removes_its_test_file() {
    for (sig, code) in [("-TERM", Some(143)), ("-INT", Some(130))] {
        let dir = tempfile::tempdir().unwrap();
        let child = iolab(dir.path())
            .args([
                "ior", "-w", "-b", "256m", "-t", "4k", "-e", "-i", "20", "-o", "t.ior",
            ])
            .spawn()
            .unwrap();
        let f = dir.path().join("t.ior");
        let (got, err) = signal_when(child, sig, || f.exists());
        assert_eq!(got, code, "{sig}: {err}");
        assert!(
            names(dir.path()).is_empty(),
            "{sig}: {:?}",
            names(dir.path())
        );
    }
}
