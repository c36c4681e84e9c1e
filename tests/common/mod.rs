//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::time::Duration;

mod skip;
#[allow(unused_imports)]
pub use skip::{Lack, may_drop_caches, skip};

/// The binary, with none of iolab's environment switches set, killed only if it outlives
/// [`patience`] for a run of five minutes on this machine now.
pub fn iolab() -> assert_cmd::Command {
    let mut c = assert_cmd::Command::cargo_bin("iolab").unwrap();
    c.env_remove("IOLAB_NO_ROOT")
        .env_remove("IOLAB_TOKEN")
        .env("XDG_CACHE_HOME", fresh_cache_home())
        .timeout(patience(Duration::from_secs(300)));
    c
}

/// A cache directory of its own for each command (not made until iolab writes in it), so that no
/// test reads what another run kept there (`fast`'s warm profile).
pub fn fresh_cache_home() -> PathBuf {
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("xdg-{}-{n}", std::process::id()))
}

/// Whether `tool` is on the PATH.
pub fn have(tool: &str) -> bool {
    std::process::Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

/// How long to wait for what takes `idle` on an idle machine before calling it hung: `idle`
/// stretched by the machine's load (the run queue over the cores, from /proc/loadavg), so that
/// no test fails for the machine being busy. A liveness bound, never a measure of speed.
pub fn patience(idle: Duration) -> Duration {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    let load = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|t| t.split_whitespace().next()?.parse::<f64>().ok())
        .unwrap_or(0.0);
    // A run queue twice the cores runs each task at about half speed, and so on; the load
    // may rise after this is read, so keep three times the margin.
    idle.mul_f64(3.0 * (load / cores).max(1.0))
}

/// Waits for `child` to end, at most [`patience`] for `idle`; a child still running then is
/// killed and the test fails, naming `what` it should have done.
pub fn wait_or_fail(
    child: &mut std::process::Child,
    idle: Duration,
    what: &str,
) -> std::process::ExitStatus {
    let limit = patience(idle);
    let t = std::time::Instant::now();
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            return st;
        }
        if t.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("still running after {limit:?}: it should have {what}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Polls `ready` until it holds, for at most [`patience`] for `idle`, failing the test with
/// `what` after that.
pub fn wait_until(idle: Duration, what: &str, mut ready: impl FnMut() -> bool) {
    let limit = patience(idle);
    let t = std::time::Instant::now();
    while !ready() {
        assert!(t.elapsed() < limit, "{what} did not happen in {limit:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Deterministic bytes, generated independently of iolab's own generator.
pub fn bytes(n: usize, seed: u64) -> Vec<u8> {
    let mut s = seed | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 24) as u8
        })
        .collect()
}

/// The XOR of DESIGN §2, computed the plain way.
pub fn plain_xor(data: &[u8]) -> u32 {
    let mut x = 0u32;
    for chunk in data.chunks(4) {
        let mut w = [0u8; 4];
        w[..chunk.len()].copy_from_slice(chunk);
        x ^= u32::from_le_bytes(w);
    }
    x
}

pub fn write_file(dir: &Path, name: &str, data: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, data).unwrap();
    p
}

pub fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .map(|l| l.split_whitespace().nth(2) == Some("0"))
        })
        .unwrap_or(false)
}

/// The tracers to run a trace test under: ptrace always, the kernel tracer where it can run
/// (root); without root the missing one is counted as a skip.
pub fn tracers() -> Vec<&'static str> {
    if is_root() {
        vec!["ptrace", "ebpf"]
    } else {
        skip(Lack::Setup, "the eBPF tracer needs root: ptrace alone");
        vec!["ptrace"]
    }
}

/// `program`, to be run as user nobody (setpriv, util-linux): the path of a user without root
/// that tests of the unprivileged path take. Running it fails (or exits 127) where setpriv is
/// missing; callers skip then.
pub fn as_nobody(program: impl AsRef<std::ffi::OsStr>) -> std::process::Command {
    let mut c = std::process::Command::new("setpriv");
    c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(program);
    c
}

/// iolab's binary, to be run as user nobody (see [`as_nobody`]).
pub fn iolab_as_nobody() -> std::process::Command {
    as_nobody(assert_cmd::cargo::cargo_bin("iolab"))
}

/// The filesystem type of a path, from /proc/self/mountinfo.
pub fn fs_type(path: &Path) -> String {
    let abs = std::fs::canonicalize(path).unwrap();
    let text = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    iolab::experiments::host::mount_for(&text, &abs.to_string_lossy())
        .map(|m| m.0)
        .unwrap_or_default()
}

/// A file `big.bin` of `mib` MiB of deterministic bytes, written in 1 MiB pieces and synced.
pub fn big_file(dir: &Path, mib: usize) -> PathBuf {
    use std::io::Write;
    let p = dir.join("big.bin");
    let mut f = std::fs::File::create(&p).unwrap();
    for i in 0..mib {
        f.write_all(&bytes(1 << 20, i as u64 + 1)).unwrap();
    }
    f.sync_all().unwrap();
    p
}

/// What every `--format csv` output must be, checked by Python's csv module: rows of one width;
/// a snake_case header with no bare `min`/`max`/`size` (a unit says what they count); booleans
/// `true`/`false`, never `yes`/`no`; no number written as a human size (`8 MiB`), a percentage
/// (`12%`) or a missing figure as `-` or `n/a`.
const CSV_RULES: &str = r#"
import csv, re, sys
rows = [r for r in csv.reader(sys.stdin) if r]
w = {len(r) for r in rows}
assert len(rows) >= 2 and len(w) == 1, (len(rows), sorted(w))
head = rows[0]
for h in head:
    assert re.fullmatch(r"[a-z0-9_]+", h), ("header", h)
    assert h not in ("min", "max", "size", "mean", "median"), ("a header without its unit", h)
size = re.compile(r"-?[0-9.]+ ?(B|KiB|MiB|GiB|TiB|KB|MB|GB)")
for r in rows[1:]:
    for h, c in zip(head, r):
        assert c.lower() not in ("yes", "no"), ("a boolean as yes/no", h, c)
        assert not size.fullmatch(c), ("a human size", h, c)
        assert not re.fullmatch(r"-?[0-9.]+%", c), ("a percentage sign", h, c)
        assert c not in ("-", "n/a"), ("a missing figure not left empty", h, c)
"#;

/// Checks `out` against [`CSV_RULES`] with Python's csv module (skipped, with a line, without
/// python3); `label` names the command in a failure.
pub fn check_csv(label: &str, out: &[u8]) {
    use std::io::Write;
    let child = std::process::Command::new("python3")
        .args(["-c", CSV_RULES])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn();
    let Ok(mut child) = child else {
        return skip(
            Lack::Setup,
            &format!("the CSV check of {label}: no python3"),
        );
    };
    child.stdin.take().unwrap().write_all(out).unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(
        o.status.success(),
        "{label}: {}\n{}",
        String::from_utf8_lossy(&o.stderr),
        String::from_utf8_lossy(out)
    );
}

/// The verdict's claim holds on its own figures: a cause it names made at least 1.5x the wall
/// time of each other (the tracer's share apart), its seconds never exceed the wall time, and
/// every thread named for a cause spent at least that long in it.
pub fn verdict_holds(time: &serde_json::Value) {
    let v = &time["verdict"];
    let wall = &time["wall"];
    let causes = wall["causes"].as_array().unwrap();
    let ns = |c: &serde_json::Value| c["ns"].as_u64().unwrap();
    assert!(
        v["ns"].as_u64().unwrap() <= v["wall_ns"].as_u64().unwrap(),
        "{time}"
    );
    let sum: u64 = causes.iter().map(ns).sum();
    assert!(
        sum <= wall["wall_ns"].as_u64().unwrap() + 1000,
        "the causes add up to more than the wall time: {time}"
    );
    if v["decided"] == "bound" {
        let named = v["cause"].as_str().unwrap();
        let lead = causes.iter().find(|c| c["cause"] == named).unwrap();
        for c in causes
            .iter()
            .filter(|c| c["cause"] != named && c["cause"] != "tracer")
        {
            assert!(ns(lead) as f64 >= 1.5 * ns(c) as f64, "{named}: {time}");
        }
    }
    let threads = time["threads"].as_array().unwrap();
    for c in causes {
        for s in c["threads"].as_array().unwrap() {
            let m = threads.iter().find(|m| m["tid"] == s["tid"]).unwrap();
            let own = m["causes"]
                .as_array()
                .unwrap()
                .iter()
                .find(|x| x["cause"] == c["cause"])
                .map_or(0, ns);
            assert!(s["ns"].as_u64().unwrap() <= own + 1000, "{s} {m}");
            assert!(
                s["ns"].as_u64().unwrap() <= m["alive_ns"].as_u64().unwrap(),
                "{s}"
            );
        }
    }
}
