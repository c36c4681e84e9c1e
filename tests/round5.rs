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

/// Asserts a refusal: exit 2 (a usage error), one line on stderr that says `needle`.
fn refused(code: Option<i32>, err: &str, needle: &str) {
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains(needle), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

/// Asserts a failure said in one line (exit 1 or 2) that says `needle`.
fn failed(code: Option<i32>, text: &str, needle: &str) {
    assert!(matches!(code, Some(1 | 2)), "{text}");
    let line = text.lines().find(|l| l.contains(needle));
    assert!(line.is_some_and(|l| l.starts_with("iolab: ")), "{text}");
}

/// iolab with `args`, stdout thrown away, stderr kept: started.
fn spawn_iolab(args: &[&str]) -> std::process::Child {
    std::process::Command::new(assert_cmd::cargo::cargo_bin("iolab"))
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// What a finished child wrote to stderr.
fn stderr_of(child: &mut std::process::Child) -> String {
    let mut err = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
    err
}

/// Whether process `pid` has ended (gone, or a zombie).
fn ended(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |s| {
        s.rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z')
    })
}

/// `iolab trace --tracer ptrace --out T -- cat [extra] F` of a 100,000-byte file F in `dir`:
/// F, T, and the trace.
fn trace_of_cat(dir: &Path, extra: &[&str]) -> (std::path::PathBuf, std::path::PathBuf, Value) {
    let f = write_file(dir, "data.bin", &bytes(100_000, 5));
    let out = dir.join("t.json");
    let o = iolab()
        .args(["trace", "--tracer", "ptrace", "--out"])
        .arg(&out)
        .args(["--", "cat"])
        .args(extra)
        .arg(&f)
        .output()
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    let t = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    (f, out, t)
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

/// P1 for `replay`: a trace is the words of whoever wrote it. Root replaying a trace another
/// user owns opens its files with that user's rights only (a trace naming a root-only file is
/// refused, its XOR never printed), and any trace's file only if it is the file traced (a link
/// to a root-only file put in a traced file's place is refused).
#[test]
fn p1_root_replays_a_users_trace_with_that_users_rights_only() {
    if !is_root() {
        return skip(Lack::Setup, "needs root (root's iolab against user nobody)");
    }
    let d = shared();
    let secret = write_file(d.path(), "secret", &bytes(10_000, 9));
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
    let secret_xor = format!("{:08x}", plain_xor(&std::fs::read(&secret).unwrap()));
    let mine = write_file(d.path(), "mine", &bytes(10_000, 5));
    std::os::unix::fs::chown(&mine, Some(65534), Some(65534)).unwrap();
    let trace = |name: &str, file: &Path| {
        let out = d.path().join(name);
        let o = iolab()
            .args(["-q", "trace", "--tracer", "ptrace", "--out"])
            .arg(&out)
            .args(["--", "cat"])
            .arg(file)
            .output()
            .unwrap();
        assert!(o.status.success(), "{o:?}");
        out
    };
    let replay = |t: &Path| {
        let o = iolab()
            .args(["replay", "--budget", "2s", "--cache", "warm"])
            .arg(t)
            .output()
            .unwrap();
        let text =
            String::from_utf8_lossy(&o.stdout).to_string() + &String::from_utf8_lossy(&o.stderr);
        (o.status.code(), text)
    };
    // A trace of the root-only file, handed to nobody (as a crafted one would name it).
    let theirs = trace("theirs.json", &secret);
    let (code, text) = replay(&theirs);
    assert!(code == Some(0), "root's own trace replays: {text}");
    std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).unwrap();
    let (code, text) = replay(&theirs);
    failed(code, &text, "Permission denied");
    assert!(
        !text.contains(&secret_xor),
        "the root-only file's XOR: {text}"
    );
    // nobody's own file, traced, then a link to the root-only file in its place.
    let t = trace("mine.json", &mine);
    std::fs::remove_file(&mine).unwrap();
    std::os::unix::fs::symlink(&secret, &mine).unwrap();
    let (code, text) = replay(&t);
    failed(code, &text, "not the file traced");
    assert!(
        !text.contains(&secret_xor),
        "the root-only file's XOR: {text}"
    );
}

/// P2: exit events lost to a full ring buffer. The program starts a child that waits, floods
/// the ring (800,000 calls, far more than its 32 MiB) while iolab is stopped, then lets the
/// child end and ends itself: both exit events are lost. `--follow` used to wait for them for
/// ever (and on Ctrl-C signal their pids, free for any process by then); now they are found
/// ended in /proc, the trace ends and says so.
#[test]
fn p2_processes_whose_exit_event_was_lost_are_found_ended() {
    if !is_root() {
        return skip(Lack::Setup, "the eBPF tracer needs root");
    }
    // With --follow (P2), and without (P3: a command trace that polled for ever after such a
    // stop, ignoring Ctrl-C).
    for follow in [true, false] {
        lost_exits(follow);
    }
}

fn lost_exits(follow: bool) {
    let d = tempfile::tempdir().unwrap();
    let script = "mkfifo p; (read x < p) & touch ready; \
                  while [ ! -e go ]; do sleep 0.05; done; \
                  dd if=/dev/zero of=/dev/null bs=1 count=400000 2>/dev/null; \
                  echo > p; wait; touch done";
    let out = d.path().join("t.json");
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("iolab"))
        .current_dir(d.path())
        .args(["-q", "trace", "--tracer", "ebpf", "--no-xor"])
        .args(follow.then_some("--follow"))
        .args(["--format", "json", "-o"])
        .arg(&out)
        .args(["--", "sh", "-c", script])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id() as i32;
    wait_until(Duration::from_secs(20), "the program's start", || {
        d.path().join("ready").exists()
    });
    // iolab stopped: nothing is read from the ring while the program floods it.
    send_signal(pid, "STOP");
    std::fs::write(d.path().join("go"), b"").unwrap();
    let done = d.path().join("done");
    let t = std::time::Instant::now();
    while !done.exists() && t.elapsed() < patience(Duration::from_secs(60)) {
        std::thread::sleep(Duration::from_millis(50));
    }
    send_signal(pid, "CONT");
    assert!(done.exists(), "the program did not finish");
    let st = wait_or_fail(
        &mut child,
        Duration::from_secs(20),
        "ended: every process it followed has ended, their exit events lost",
    );
    let mut err = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert!(st.success(), "{err}");
    let t: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    let notes = t["notes"].to_string();
    assert!(
        notes.contains("events were lost"),
        "the flood did not fill the ring: {notes}"
    );
    assert!(
        !follow || notes.contains("without their exit event"),
        "the processes found ended are said: {notes}"
    );
}

/// `kill -SIG pid` through the kill command (no unsafe in tests).
fn send_signal(pid: i32, sig: &str) {
    let ok = std::process::Command::new("kill")
        .arg(format!("-{sig}"))
        .arg(pid.to_string())
        .status()
        .unwrap()
        .success();
    assert!(ok, "kill -{sig} {pid}");
}

/// P4: iolab in a PID namespace of its own (as containers run programs). The kernel tracer's
/// pids are the host's: asked for, it is refused in one line; by default the trace falls back
/// to ptrace and says why; with a /proc of another namespace (no `--mount-proc`) every tracer
/// is refused, as /proc's pids would name other processes. Each ends at once.
#[test]
fn p4_a_pid_namespace_is_refused_or_traced_by_ptrace_in_one_line() {
    if !is_root() || !have("unshare") {
        return skip(Lack::Setup, "needs root and unshare for a PID namespace");
    }
    let iolab = assert_cmd::cargo::cargo_bin("iolab");
    let run = |mount_proc: bool, tracer: &str| {
        let mut c = std::process::Command::new("unshare");
        c.args(["--pid", "--fork"]);
        if mount_proc {
            c.arg("--mount-proc");
        }
        let mut child = c
            .arg(&iolab)
            .args(["trace", "--tracer", tracer, "--", "cat", "/etc/hostname"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let st = wait_or_fail(
            &mut child,
            Duration::from_secs(20),
            &format!("ended (--tracer {tracer}, --mount-proc {mount_proc})"),
        );
        let mut err = String::new();
        std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
        (st, err)
    };
    let (st, err) = run(true, "ebpf");
    assert!(!st.success(), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("PID namespace"), "{err}");
    let (st, err) = run(true, "auto");
    assert!(st.success(), "{err}");
    assert!(
        err.contains("traced with ptrace, not eBPF") && err.contains("PID namespace"),
        "{err}"
    );
    for tracer in ["auto", "ptrace"] {
        let (st, err) = run(false, tracer);
        assert!(!st.success(), "{err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains("another PID namespace"), "{err}");
    }
}

/// P5: a trace of more threads than replay runs at once (each traced thread is replayed on a
/// thread of its own) is refused in one line, not aborted when the system makes no more.
#[test]
fn p5_a_trace_of_thousands_of_threads_is_refused_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let (f, _, mut t) = trace_of_cat(dir.path(), &[]);
    let file = t["files"]
        .as_array()
        .unwrap()
        .iter()
        .position(|x| x["path"].as_str() == f.to_str())
        .unwrap();
    let ops = t["ops"].as_array_mut().unwrap();
    let read = ops
        .iter()
        .find(|op| {
            op["file"] == file && op["call"] == "read" && op["ret"].as_i64().unwrap_or(0) > 0
        })
        .unwrap()
        .clone();
    for i in 0..3000u64 {
        let mut op = read.clone();
        op["tid"] = (1_000_000 + i).into();
        ops.push(op);
    }
    let many = dir.path().join("many.json");
    std::fs::write(&many, serde_json::to_vec(&t).unwrap()).unwrap();
    let o = iolab()
        .args(["replay", "--budget", "2s"])
        .arg(&many)
        .output()
        .unwrap();
    refused(
        o.status.code(),
        &String::from_utf8_lossy(&o.stderr),
        "too many threads",
    );
}

/// P6: `--cgroup DIR` trusts no folder: a FIFO for `cgroup.procs` is refused at once (it used
/// to block for ever), a plain folder with a `cgroup.procs` is not a cgroup. P9: `--pid` of
/// iolab itself is refused before anything is announced.
#[test]
fn p6_p9_a_folder_that_is_no_cgroup_and_iolab_itself_are_refused_in_one_line() {
    let d = tempfile::tempdir().unwrap();
    let fifo_dir = d.path().join("fifo");
    std::fs::create_dir(&fifo_dir).unwrap();
    assert!(
        std::process::Command::new("mkfifo")
            .arg(fifo_dir.join("cgroup.procs"))
            .status()
            .unwrap()
            .success()
    );
    let plain = d.path().join("plain");
    std::fs::create_dir(&plain).unwrap();
    std::fs::write(
        plain.join("cgroup.procs"),
        format!("{}\n", std::process::id()),
    )
    .unwrap();
    for (dir, needle) in [(&fifo_dir, "is a FIFO"), (&plain, "not a cgroup")] {
        let mut child = spawn_iolab(&["trace", "--seconds", "1", "--cgroup", s(dir)]);
        let st = wait_or_fail(&mut child, Duration::from_secs(10), "refused the folder");
        refused(st.code(), &stderr_of(&mut child), needle);
    }
    // The shell becomes iolab: $$ is iolab's own pid.
    let exe = assert_cmd::cargo::cargo_bin("iolab");
    let o = std::process::Command::new("sh")
        .args(["-c", "exec \"$0\" trace --seconds 1 --pid $$"])
        .arg(&exe)
        .output()
        .unwrap();
    refused(
        o.status.code(),
        &String::from_utf8_lossy(&o.stderr),
        "does not trace itself",
    );
}

/// P7: kill -9 of a kernel-tracer trace takes the traced program with it (the ptrace tracer's
/// EXITKILL does; no probe follows a program whose tracer is gone).
#[test]
fn p7_the_traced_program_does_not_outlive_a_killed_ebpf_trace() {
    if !is_root() {
        return skip(Lack::Setup, "the eBPF tracer needs root");
    }
    let d = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("iolab"))
        .current_dir(d.path())
        .args(["-q", "trace", "--tracer", "ebpf", "--no-xor", "--"])
        .args(["sh", "-c", "echo $$ > pid; exec sleep 120"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pidfile = d.path().join("pid");
    wait_until(Duration::from_secs(20), "the program's start", || {
        std::fs::read_to_string(&pidfile).is_ok_and(|s| s.ends_with('\n'))
    });
    let pid: u32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let gone = || ended(pid);
    assert!(!gone(), "the program runs before the kill");
    child.kill().unwrap();
    child.wait().unwrap();
    wait_until(
        Duration::from_secs(10),
        "the traced program's end after kill -9 of iolab",
        gone,
    );
}

/// P8: replay leaves out what it cannot replay (a /proc file, here 95% of the bytes read) and
/// its "verified" says so, with the share, instead of "verified ... N of N file(s)" alone.
#[test]
fn p8_verified_says_which_files_were_left_out_and_their_share() {
    let dir = tempfile::tempdir().unwrap();
    let (_, out, _) = trace_of_cat(dir.path(), &["/proc/kallsyms"]);
    let o = iolab()
        .args(["replay", "--budget", "2s"])
        .arg(&out)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout).to_string() + &String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{text}");
    let verified = text
        .lines()
        .find(|l| l.contains("verified:"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        verified.contains("not replayed, so not verified") && verified.contains("/proc/kallsyms"),
        "{verified}"
    );
}

/// A tmpfs of 64 KiB mounted on a folder of its own, unmounted when dropped.
struct SmallFs(tempfile::TempDir);

impl SmallFs {
    fn mount() -> Option<SmallFs> {
        let d = tempfile::tempdir().unwrap();
        std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=64k", "tmpfs"])
            .arg(d.path())
            .status()
            .ok()?
            .success()
            .then_some(SmallFs(d))
    }
    fn path(&self) -> &Path {
        self.0.path()
    }
    /// Fills what is left.
    fn fill(&self) {
        let _ = std::fs::write(self.path().join("fill"), vec![0u8; 1 << 20]);
    }
}

impl Drop for SmallFs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg(self.0.path())
            .status();
    }
}

/// Round four's "a full file system": results to a full stdout fail (exit 1, one line) instead
/// of a success with an empty file behind `>`; `man --dir` that runs out of room takes its
/// pages and folder back; trace's `--out` leaves no partial file.
#[test]
fn a_full_file_system_fails_the_command_and_leaves_nothing() {
    if !is_root() {
        return skip(Lack::Setup, "mounting a small tmpfs needs root");
    }
    let Some(fs) = SmallFs::mount() else {
        return skip(Lack::Setup, "cannot mount a tmpfs here");
    };
    // Room for a few pages, not for all of them.
    let man = fs.path().join("man");
    let o = iolab().args(["man", "--dir"]).arg(&man).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("No space left"), "{err}");
    assert!(!man.exists(), "man --dir left a partial set of pages");
    let out = fs.path().join("t.json");
    let o = iolab()
        .args(["trace", "--tracer", "ptrace", "--out"])
        .arg(&out)
        .args(["--", "find", "/usr/lib", "-maxdepth", "2"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    fs.fill();
    for args in [
        &["man"][..],
        &["completions", "bash"],
        &["--version"],
        &["sweep", "--help"],
    ] {
        let target = std::fs::File::create(fs.path().join("x")).unwrap();
        let o = std::process::Command::new(assert_cmd::cargo::cargo_bin("iolab"))
            .args(args)
            .stdout(target)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains("cannot write the output"), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    }
    let left: Vec<_> = std::fs::read_dir(fs.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n != "fill" && n != "x")
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// Round four's token file: one every user may write (or another user's group) is refused in
/// one line, as whoever can change it chooses the secret; another user's private one is warned
/// of; root's own is trusted.
#[test]
fn a_token_file_others_may_change_is_refused() {
    if !is_root() {
        return skip(Lack::Setup, "a file of another user needs root to make");
    }
    let d = tempfile::tempdir().unwrap();
    let t = write_file(d.path(), "token", b"s3cret\n");
    std::os::unix::fs::chown(&t, Some(65534), Some(65534)).unwrap();
    let send = |mode: u32| {
        std::fs::set_permissions(&t, std::fs::Permissions::from_mode(mode)).unwrap();
        let f = write_file(d.path(), "data", b"x");
        iolab()
            .args(["send", "--port", "0", "--timeout", "1s", "--token-file"])
            .arg(&t)
            .arg(&f)
            .timeout(patience(Duration::from_secs(20)))
            .output()
            .unwrap()
    };
    for mode in [0o666, 0o620] {
        let o = send(mode);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{mode:o}: {err}");
        assert!(err.contains("refusing the token file"), "{mode:o}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    }
    let o = send(0o600);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("owned by another user"), "{err}");
    std::os::unix::fs::chown(&t, Some(0), Some(0)).unwrap();
    let o = send(0o600);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains("token file is"), "{err}");
}

/// Round four's crafted trace: a file whose modification time no file system holds (2^127 - 1
/// ns) is refused in one line before anything is replayed.
#[test]
fn a_trace_with_an_impossible_mtime_is_refused_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let (f, out, t) = trace_of_cat(dir.path(), &[]);
    // The number as JSON text: serde_json's Value would not hold it.
    let text = std::fs::read_to_string(&out).unwrap();
    let mtime = t["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["path"].as_str() == f.to_str())
        .unwrap()["mtime_ns"]
        .to_string();
    let crafted = text.replace(
        &format!("\"mtime_ns\": {mtime}"),
        &format!("\"mtime_ns\": {}", i128::MAX),
    );
    assert!(
        crafted != text,
        "the mtime was not found in the trace's text"
    );
    let p = dir.path().join("crafted.json");
    std::fs::write(&p, crafted).unwrap();
    let o = iolab()
        .args(["replay", "--budget", "2s"])
        .arg(&p)
        .output()
        .unwrap();
    refused(
        o.status.code(),
        &String::from_utf8_lossy(&o.stderr),
        "modification time",
    );
}

/// P9: `--pid` of a zombie (ended, not yet reaped by its parent) is refused at once as ended,
/// not traced for the whole `--seconds` as "end unknown".
#[test]
fn p9_a_zombie_is_not_traced_for_the_whole_time() {
    if !is_root() {
        return skip(Lack::Setup, "the eBPF tracer needs root");
    }
    // A parent that never reaps its child: the child is a zombie from its exit on.
    let d = tempfile::tempdir().unwrap();
    let mut parent = std::process::Command::new("sh")
        .current_dir(d.path())
        .args(["-c", "sh -c 'echo $$ > child' & exec sleep 60"])
        .spawn()
        .unwrap();
    let child = d.path().join("child");
    wait_until(Duration::from_secs(20), "the child's pid", || {
        std::fs::read_to_string(&child).is_ok_and(|s| s.ends_with('\n'))
    });
    let pid: u32 = std::fs::read_to_string(&child)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    wait_until(Duration::from_secs(20), "the child's end", || ended(pid));
    let mut trace = spawn_iolab(&["trace", "--seconds", "60", "--pid", &pid.to_string()]);
    let st = wait_or_fail(
        &mut trace,
        Duration::from_secs(10),
        "refused a zombie at once, not traced it for the whole 60 s",
    );
    let err = stderr_of(&mut trace);
    let _ = parent.kill();
    let _ = parent.wait();
    refused(st.code(), &err, "every one has ended");
}
