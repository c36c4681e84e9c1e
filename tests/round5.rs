//! Round five's cases (issue 65), as a hostile local user and a clumsy one would play them
//! against root's `iolab trace` and `replay`: the traced user swaps the files its program read
//! for FIFOs and links to root's files; pids that end unseen; PID namespaces; bounds on what is
//! read and spawned.

mod common;
use common::*;
use serde_json::Value;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The tracers to run: ptrace always, the kernel tracer where it can run (root).
fn tracers() -> Vec<&'static str> {
    if is_root() {
        vec!["ptrace", "ebpf"]
    } else {
        skip(Lack::Setup, "the eBPF tracer needs root: ptrace alone");
        vec!["ptrace"]
    }
}

/// A folder under /tmp that user nobody may write into.
fn shared() -> tempfile::TempDir {
    let d = tempfile::Builder::new()
        .prefix("iolab-r5-")
        .tempdir_in("/tmp")
        .unwrap();
    std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    d
}

/// P1: the traced user (nobody) reads three files of its own, then puts in their places a FIFO,
/// a link to a root-only file of the same size, and a link to a root-only FIFO. Root's iolab,
/// after the program, opens none of them: the trace ends (a FIFO opened would block it for
/// ever), and no figure of the root-only file is given as the traced file's (its XOR, its
/// residency).
#[test]
fn p1_a_traced_user_cannot_steer_roots_iolab_to_a_fifo_or_a_root_only_file() {
    if !is_root() {
        return skip(Lack::Setup, "needs root (root's iolab against user nobody)");
    }
    if !as_nobody("true").status().is_ok_and(|s| s.success()) {
        return skip(Lack::Setup, "cannot act as nobody here (setpriv)");
    }
    for tracer in tracers() {
        let d = shared();
        let mine = bytes(10_000, 5);
        for n in ["a", "b", "c"] {
            write_file(d.path(), n, &mine);
            std::os::unix::fs::chown(d.path().join(n), Some(65534), Some(65534)).unwrap();
        }
        // Root's: a secret of the same size as the user's files, and a FIFO.
        let secret = write_file(d.path(), "secret", &bytes(10_000, 9));
        std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
        let fifo = d.path().join("rootfifo");
        assert!(
            std::process::Command::new("mkfifo")
                .args(["-m", "600"])
                .arg(&fifo)
                .status()
                .unwrap()
                .success()
        );
        let script = "cat a b c >/dev/null; rm a b c; mkfifo a; ln -s secret b; ln -s rootfifo c";
        let out = d.path().join("t.json");
        let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("iolab"))
            .current_dir(d.path())
            .args(["-q", "trace", "--tracer", tracer, "--format", "json", "-o"])
            .arg(&out)
            .args([
                "--",
                "setpriv",
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
            ])
            .args(["sh", "-c", script])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let st = wait_or_fail(
            &mut child,
            Duration::from_secs(20),
            &format!(
                "ended under {tracer}: a FIFO the traced user put in a file's place was opened"
            ),
        );
        assert!(st.success(), "{tracer}: {st}");
        let t: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
        let secret_xor = format!("{:08x}", plain_xor(&std::fs::read(&secret).unwrap()));
        let mut seen = 0;
        for f in t["files"].as_array().unwrap() {
            let p = f["path"].as_str().unwrap();
            if !["a", "b", "c"].iter().any(|n| p == s(&d.path().join(n))) {
                continue;
            }
            seen += 1;
            assert_ne!(
                f["xor"].as_str(),
                Some(secret_xor.as_str()),
                "{tracer}: {p}: the root-only file's XOR given as the traced file's"
            );
            assert!(
                f["xor"].is_null(),
                "{tracer}: {p}: an XOR for a file whose name now holds another: {f}"
            );
            assert!(
                f["resident_after"].is_null(),
                "{tracer}: {p}: a residency after the run, of what now holds its name: {f}"
            );
        }
        assert_eq!(seen, 3, "{tracer}: the three files read are in the trace");
    }
}
