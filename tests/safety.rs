//! Round four's cases, as a local user would play them against root's run: another user (nobody,
//! through `setpriv`) plants links, FIFOs and manifest lines in folders it may write into, and
//! root's `iolab` must neither remove nor write anything outside what it was asked to.

mod common;
use common::{Lack, is_root, skip};

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Runs `sh -c script` as nobody; false when privileges cannot be dropped here.
fn as_nobody(script: &str) -> bool {
    common::as_nobody("sh")
        .args(["-c", script])
        .status()
        .is_ok_and(|st| st.success())
}

/// A folder under the system's temporary folder that nobody may write into, with `mode`.
fn shared(mode: u32) -> tempfile::TempDir {
    let d = tempfile::Builder::new()
        .prefix("iolab-r4-")
        .tempdir_in("/tmp")
        .unwrap();
    std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(mode)).unwrap();
    d
}

/// P1: a report folder another user may write into. They swap a folder of the report for a
/// link to root's files and list one of them in the manifest (as an older iolab wrote it, and
/// with its hash); root's `report --force` removes and writes nothing there.
#[test]
fn p1_a_report_folder_another_user_writes_into_leads_nothing_outside_it() {
    if !is_root() {
        return skip(
            Lack::Setup,
            "playing another user against root's run needs root",
        );
    }
    let top = shared(0o755);
    let secret = top.path().join("root-only");
    std::fs::create_dir(&secret).unwrap();
    std::fs::write(secret.join("thesis.tex"), b"years of work").unwrap();
    std::fs::set_permissions(
        secret.join("thesis.tex"),
        std::fs::Permissions::from_mode(0o600),
    )
    .unwrap();
    // A report of root's (one quick experiment), and its results kept apart to render again.
    let rep = top.path().join("rep");
    common::iolab()
        .args([
            "suite",
            "--quick",
            "--size",
            "16M",
            "--only",
            "syscalls",
            "--out",
            s(&rep),
        ])
        .assert()
        .success();
    let fixture = top.path().join("results.json");
    std::fs::copy(rep.join("results.json"), &fixture).unwrap();
    // The report folder is nobody's to write into (a shared project folder, say).
    Command::new("chmod")
        .args(["-R", "a+rwX", s(&rep)])
        .status()
        .unwrap();
    let hash = blake3::hash(b"years of work").to_hex().to_string();
    let planted = as_nobody(&format!(
        "cd {} && rm -rf plots && ln -s {} plots && ln -s {} docs && echo 'b3:{hash} 13 docs/thesis.tex' >> .iolab-manifest && echo docs/thesis.tex >> .iolab-manifest",
        s(&rep),
        s(&secret),
        s(&secret)
    ));
    if !planted {
        return skip(Lack::Setup, "cannot act as nobody here (setpriv)");
    }
    let o = common::iolab()
        .args(["report", s(&fixture), "--out", s(&rep), "--force"])
        .output()
        .unwrap();
    // Refused (plots is a link), and root's files are as they were.
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("not a file iolab wrote"),
        "{o:?}"
    );
    assert_eq!(
        std::fs::read(secret.join("thesis.tex")).unwrap(),
        b"years of work"
    );
    assert_eq!(
        std::fs::read_dir(&secret).unwrap().count(),
        1,
        "no plot written there"
    );
    // Without the planted plots link, the listed file behind `docs` is still not removed.
    std::fs::remove_file(rep.join("plots")).unwrap();
    common::iolab()
        .args(["report", s(&fixture), "--out", s(&rep), "--force"])
        .assert()
        .success();
    assert_eq!(
        std::fs::read(secret.join("thesis.tex")).unwrap(),
        b"years of work"
    );
    assert!(rep.join("plots").is_dir() && rep.join("report.html").is_file());
}

/// P4: another user's FIFO where root's trace is to go, in a shared sticky folder: refused
/// before the program runs, and the FIFO gets nothing.
#[test]
fn p4_a_fifo_another_user_made_in_a_sticky_folder_gets_nothing() {
    if !is_root() {
        return skip(
            Lack::Setup,
            "playing another user against root's run needs root",
        );
    }
    let top = shared(0o1777);
    let fifo = top.path().join("t.json");
    if !as_nobody(&format!("mkfifo {}", s(&fifo))) {
        return skip(Lack::Setup, "cannot act as nobody here (setpriv)");
    }
    let o = common::iolab()
        .args(["-q", "trace", "--out", s(&fifo), "--", "true"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("refusing to write into it"),
        "{o:?}"
    );
    // A FIFO of root's own in the same folder is written into, as a shell's `>` would.
    let mine = top.path().join("mine.fifo");
    assert!(
        Command::new("mkfifo")
            .arg(&mine)
            .status()
            .unwrap()
            .success()
    );
    let reader = {
        let mine = mine.clone();
        std::thread::spawn(move || std::fs::read(mine).unwrap())
    };
    common::iolab()
        .args(["-q", "trace", "--out", s(&mine), "--", "true"])
        .assert()
        .success();
    let got = reader.join().unwrap();
    assert!(
        String::from_utf8_lossy(&got).contains("\"schema\""),
        "the trace went in"
    );
}

/// P17: `man --dir D --force` writes no page through a link, and a FIFO page is refused
/// rather than waited on.
#[test]
fn p17_man_pages_are_not_written_through_links_or_into_fifos() {
    let top = tempfile::tempdir().unwrap();
    let (d, elsewhere) = (top.path().join("man1"), top.path().join("elsewhere"));
    std::fs::create_dir_all(&d).unwrap();
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::fs::write(elsewhere.join("precious"), b"keep").unwrap();
    std::os::unix::fs::symlink(elsewhere.join("precious"), d.join("iolab.1")).unwrap();
    let o = common::iolab()
        .args(["man", "--dir", s(&d), "--force"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    assert_eq!(std::fs::read(elsewhere.join("precious")).unwrap(), b"keep");
    std::fs::remove_file(d.join("iolab.1")).unwrap();
    assert!(
        Command::new("mkfifo")
            .arg(d.join("iolab-read.1"))
            .status()
            .unwrap()
            .success()
    );
    let o = common::iolab()
        .args(["man", "--dir", s(&d), "--force"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{o:?}");
}

/// P2: without a token, whoever connects first gets the files: refused beyond loopback and for
/// a file other users cannot read, unless --no-token; said in one line whenever it happens.
#[test]
fn p2_serving_without_a_token_is_refused_where_others_could_take_the_files() {
    let dir = tempfile::tempdir().unwrap();
    let private = dir.path().join("private.txt");
    std::fs::write(&private, b"mine alone").unwrap();
    std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o600)).unwrap();
    let public = dir.path().join("public.txt");
    std::fs::write(&public, b"anyone's").unwrap();
    std::fs::set_permissions(&public, std::fs::Permissions::from_mode(0o644)).unwrap();
    let send = |args: &[&str]| {
        common::iolab()
            .env_remove("IOLAB_TOKEN")
            .arg("send")
            .args(args)
            .args(["--port", "0", "--timeout", "1s"])
            .output()
            .unwrap()
    };
    let o = send(&[s(&private)]);
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("refusing to serve without a token") && err.contains("--no-token"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    let o = send(&[s(&public), "--listen", "0.0.0.0"]);
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    assert!(String::from_utf8_lossy(&o.stderr).contains("reachable beyond this machine"));
    // With --no-token it serves, and says who may take the files, in one line.
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("iolab"))
        .env_remove("IOLAB_TOKEN")
        .args(["send", s(&private), "--no-token", "--port", "0"])
        .stderr(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(child.stderr.take().unwrap()));
    let listening = lines.next().unwrap().unwrap();
    let warning = lines.next().unwrap().unwrap();
    let _ = child.kill();
    let _ = child.wait();
    assert!(listening.starts_with("iolab: listening on"), "{listening}");
    assert!(
        warning.contains("no token: whoever connects first"),
        "{warning}"
    );
    // P19: the receiving side is told too, in one line, before it connects.
    let out = tempfile::tempdir().unwrap();
    let o = common::iolab()
        .args(["recv", "--connect", "127.0.0.1:9", "--out"])
        .arg(out.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.lines()
            .next()
            .is_some_and(|l| l.contains("no token: whatever listens at 127.0.0.1:9")),
        "{err}"
    );
}

/// An `iolab` command with its own ledger folder (so that no other test's run sweeps what this
/// one checks).
fn iolab_in(state: &Path) -> Command {
    let mut c = Command::new(assert_cmd::cargo::cargo_bin("iolab"));
    c.env("IOLAB_STATE_DIR", state).env_remove("IOLAB_TOKEN");
    c
}

/// Starts `iolab ior` (from `exe`) writing `file` over and over, and waits until the file is
/// there.
fn long_ior(exe: &Path, state: &Path, file: &Path) -> std::process::Child {
    let child = Command::new(exe)
        .env("IOLAB_STATE_DIR", state)
        .args(["ior", "-w", "-b", "64M", "-t", "1M", "-i", "100000", "-o"])
        .arg(file)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    common::wait_until(
        std::time::Duration::from_secs(10),
        "ior's file to appear",
        || file.exists(),
    );
    child
}

/// P5, P6, P15: leftovers are known by the ledger their run held locked, not by their name: a
/// user's look-alikes (in /tmp and beside the data) survive `clean` and the next run, a live run
/// under another binary name keeps its file, and once that run is killed with -9 what it left
/// (ior's file, which the documented list lacked) goes at `clean` and at the next run.
#[test]
fn p5_p6_p15_leftovers_are_known_by_their_runs_ledger_not_by_their_name() {
    let state = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let d = work.path();
    let look_alikes = [
        std::env::temp_dir().join(format!("iolab-transfer-2024-11-28-{}", std::process::id())),
        d.join(".iolab-data-1"),
        d.join("iolab-squeeze-1-0"),
    ];
    for l in &look_alikes {
        std::fs::create_dir(l).unwrap();
        std::fs::write(l.join("thesis.tex"), b"mine").unwrap();
    }
    let tmp_like = d.join(".notes.txt.iolab-1.tmp");
    std::fs::write(&tmp_like, b"mine too").unwrap();
    // A second install under another name, running.
    let other = d.join("iolab-second-install");
    std::fs::copy(assert_cmd::cargo::cargo_bin("iolab"), &other).unwrap();
    let a = d.join("a.ior");
    let mut live = long_ior(&other, state.path(), &a);
    let o = iolab_in(state.path()).arg("clean").output().unwrap();
    assert!(o.status.success(), "{o:?}");
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("nothing to clean"),
        "{o:?}"
    );
    assert!(a.exists(), "a live run's file was taken");
    assert!(live.try_wait().unwrap().is_none(), "the live run ended");
    // Killed with -9: its file is left, provably its own.
    live.kill().unwrap();
    live.wait().unwrap();
    assert!(a.exists());
    let o = iolab_in(state.path())
        .args(["clean", "--dry-run"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("would remove file") && text.contains("a.ior") && text.contains("1 leftover"),
        "{text}"
    );
    assert!(a.exists(), "--dry-run removed it");
    let o = iolab_in(state.path()).arg("clean").output().unwrap();
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("removed file"),
        "{o:?}"
    );
    assert!(!a.exists());
    // Once more, and this time the next run that makes anything removes it.
    let b = d.join("b.ior");
    let mut killed = long_ior(&other, state.path(), &b);
    killed.kill().unwrap();
    killed.wait().unwrap();
    assert!(b.exists());
    let o = iolab_in(state.path())
        .args(["ior", "-w", "-b", "1M", "-t", "1M", "-o"])
        .arg(d.join("c.ior"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    assert!(!b.exists(), "the next run left the killed run's file");
    // Nothing the user made was touched, and no ledger is left.
    for l in &look_alikes {
        assert!(l.join("thesis.tex").exists(), "{l:?} was removed");
        std::fs::remove_dir_all(l).unwrap();
    }
    assert!(tmp_like.exists());
    let ledgers: Vec<_> = std::fs::read_dir(state.path().join("runs"))
        .unwrap()
        .collect();
    assert!(ledgers.is_empty(), "{ledgers:?}");
}

/// Without a home folder of its own (nobody's is root's or missing), a user's ledgers live in a
/// folder of its own under /tmp, 0700, and `clean` and runs work there.
#[test]
fn a_user_without_a_home_keeps_its_ledgers_in_a_private_folder() {
    if !is_root() {
        return skip(Lack::Setup, "dropping to nobody needs root");
    }
    let work = shared(0o777);
    let bin = assert_cmd::cargo::cargo_bin("iolab");
    let script = format!(
        "cd {w} && env -u IOLAB_STATE_DIR -u XDG_STATE_HOME HOME=/nonexistent {b} ior -w -b 1M -t 1M -o {w}/f >/dev/null && env -u IOLAB_STATE_DIR -u XDG_STATE_HOME HOME=/nonexistent {b} clean",
        w = s(work.path()),
        b = s(&bin)
    );
    if !as_nobody(&script) {
        return skip(Lack::Setup, "cannot run as nobody here (or the run failed)");
    }
    use std::os::unix::fs::MetadataExt;
    let top = std::env::temp_dir().join("iolab-state-65534");
    let m = std::fs::symlink_metadata(&top).unwrap();
    assert!(m.is_dir() && m.uid() == 65534, "{m:?}");
    assert_eq!(m.mode() & 0o777, 0o700);
    assert!(top.join("runs").is_dir());
}
