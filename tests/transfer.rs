//! Transfers over loopback: every method pair on the classic shapes, and bad peers.

mod common;
use common::{Lack, skip};

use common::iolab;

use common::{bytes, write_file};
use iolab::transfer::protocol::VERSION;
use iolab::transfer::receiver::{RecvConfig, receive};
use iolab::transfer::sender::{SendConfig, bind, serve};
use iolab::transfer::{RecvMethod, SendMethod};
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::time::Duration;

fn recv_cfg(addr: &str, out: &Path, method: RecvMethod) -> RecvConfig {
    {
        let mut it = RecvConfig::new(addr.into(), out.into(), method);
        it.link.pace.idle = Duration::from_secs(10);
        it
    }
}

fn send_cfg(files: &[PathBuf], method: SendMethod) -> SendConfig {
    {
        let mut it = SendConfig::new(files.to_vec(), method);
        it.link.pace.idle = Duration::from_secs(10);
        it
    }
}

/// The classic transfer inputs, smaller where size does not matter to the test.
fn classic_shapes(dir: &Path) -> Vec<PathBuf> {
    let mut files = vec![
        write_file(dir, "empty", b""),
        write_file(dir, "one", b"x"),
        write_file(dir, "p4096", &bytes(4096, 1)),
        write_file(dir, "p4097", &bytes(4097, 2)),
        write_file(dir, "big.txt", &bytes(12_022_885, 3)),
        write_file(dir, "bin", &bytes(3 << 20, 4)),
    ];
    for i in 0..10 {
        files.push(write_file(
            dir,
            &format!("small{i}.txt"),
            format!("line {i}\n").repeat(300).as_bytes(),
        ));
    }
    files
}

#[test]
fn every_method_pair_moves_the_classic_shapes_byte_for_byte() {
    let src = tempfile::tempdir().unwrap();
    let files = classic_shapes(src.path());
    for s in SendMethod::ALL {
        for r in RecvMethod::ALL {
            for connections in [1, 3] {
                let out = tempfile::tempdir().unwrap();
                let listener = bind("127.0.0.1:0".parse().unwrap()).unwrap();
                let addr = listener.local_addr().unwrap().to_string();
                let scfg = {
                    let mut it = send_cfg(&files, s);
                    it.link.connections = connections;
                    it
                };
                let rcfg = {
                    let mut it = recv_cfg(&addr, out.path(), r);
                    it.link.connections = connections;
                    it
                };
                let (sent, got) = std::thread::scope(|sc| {
                    let h = sc.spawn(|| serve(listener, &scfg));
                    let got = receive(&rcfg);
                    (h.join().unwrap(), got)
                });
                let (sent, got) = (sent.unwrap(), got.unwrap());
                assert_eq!(sent.files.len(), files.len());
                assert_eq!(got.files.len(), files.len());
                for f in &files {
                    let name = f.file_name().unwrap();
                    assert_eq!(
                        std::fs::read(out.path().join(name)).unwrap(),
                        std::fs::read(f).unwrap(),
                        "{}:{} x{connections} {name:?}",
                        s.name(),
                        r.name()
                    );
                }
                assert_eq!(
                    std::fs::read_dir(out.path()).unwrap().count(),
                    files.len(),
                    "no temporary files left"
                );
            }
        }
    }
}

/// A fake sender: accepts one receiver, writes `script(nonce of the receiver...)` bytes, closes.
fn bad_sender(
    script: impl FnOnce(&mut std::net::TcpStream) + Send + 'static,
) -> (String, std::thread::JoinHandle<()>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    let h = std::thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        script(&mut s);
    });
    (addr, h)
}

fn hello(version: u16) -> Vec<u8> {
    let mut b = b"IOLABXFR".to_vec();
    b.extend_from_slice(&version.to_le_bytes());
    b.extend_from_slice(&0u16.to_le_bytes());
    b.extend_from_slice(&[9; 16]);
    b
}

fn swallow_hello(s: &mut std::net::TcpStream) {
    let mut b = [0u8; 28];
    let _ = s.read_exact(&mut b);
}

fn header(name: &[u8], size: u64) -> Vec<u8> {
    let mut b = vec![1u8];
    b.extend_from_slice(&(name.len() as u16).to_le_bytes());
    b.extend_from_slice(name);
    b.extend_from_slice(&size.to_le_bytes());
    b
}

fn expect_failure(addr: &str, out: &Path, needle: &str) {
    let err = receive(&{
        let mut it = recv_cfg(addr, out, RecvMethod::Write);
        it.link.pace.idle = Duration::from_millis(800);
        it
    })
    .unwrap_err();
    assert!(
        err.to_string().contains(needle),
        "wanted '{needle}' in: {err}"
    );
    assert_eq!(err.exit_code(), 1, "{err}");
    let left: Vec<_> = std::fs::read_dir(out).unwrap().collect();
    assert!(left.is_empty(), "files left behind: {left:?}");
}

#[test]
fn bad_senders_are_refused_and_leave_nothing() {
    let out = tempfile::tempdir().unwrap();
    let (a, h) = bad_sender(|s| {
        let _ = s.write_all(b"HTTP/1.1 200 OK\r\n\r\nhello there you");
    });
    expect_failure(&a, out.path(), "wrong magic");
    h.join().unwrap();
    let (a, h) = bad_sender(|s| {
        let _ = s.write_all(&hello(0));
    });
    expect_failure(&a, out.path(), "protocol version 0");
    h.join().unwrap();
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (header(b"huge", 1 << 60), "more than"),
        (header(b"../../x", 5), "refused"),
        (header(b"a/b", 5), "refused"),
        (header(b"n\0ul", 5), "refused"),
        // Issue 53 (P18): names that break a line or hide themselves are refused like "\n".
        (header("one\u{2028}two".as_bytes(), 5), "refused"),
        (header("para\u{2029}".as_bytes(), 5), "refused"),
        (header(b"esc\x1b[2J", 5), "refused"),
        (
            [header(b"cut", 1000), vec![7u8; 300]].concat(),
            "after 300 of 1000 bytes",
        ),
        (header(b"cut", 1000)[..10].to_vec(), "truncated header"),
        (
            [header(b"bad", 3), b"abc".to_vec(), vec![0; 32], vec![0]].concat(),
            "checksum mismatch",
        ),
        (
            [header(b"short", 3), b"abc".to_vec(), vec![1; 5]].concat(),
            "truncated checksum of short: 5 of 32 bytes",
        ),
    ];
    for (bytes_out, needle) in cases {
        let (a, h) = bad_sender(move |s| {
            let _ = s.write_all(&hello(VERSION));
            swallow_hello(s);
            let _ = s.write_all(&bytes_out);
            std::thread::sleep(Duration::from_millis(50));
        });
        expect_failure(&a, out.path(), needle);
        h.join().unwrap();
    }
    // A sender that stalls mid-file past the timeout.
    let (a, h) = bad_sender(|s| {
        let _ = s.write_all(&hello(VERSION));
        swallow_hello(s);
        let _ = s.write_all(&[header(b"slow", 100), vec![1u8; 10]].concat());
        std::thread::sleep(Duration::from_millis(1500));
    });
    expect_failure(&a, out.path(), "idle past the timeout");
    h.join().unwrap();
}

#[test]
fn tokens_must_match_and_refused_connections_are_clear() {
    let src = tempfile::tempdir().unwrap();
    let f = write_file(src.path(), "t", b"secret payload");
    for (st, rt, ok) in [
        (Some("s3cret"), Some("s3cret"), true),
        (Some("a"), Some("b"), false),
        (Some("a"), None, false),
        (None, Some("a"), false),
    ] {
        let out = tempfile::tempdir().unwrap();
        let listener = bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let scfg = {
            let mut it = send_cfg(std::slice::from_ref(&f), SendMethod::Read);
            it.link.token = st.map(String::from);
            it.link.pace.idle = Duration::from_secs(2);
            it
        };
        let rcfg = {
            let mut it = recv_cfg(&addr, out.path(), RecvMethod::Write);
            it.link.token = rt.map(String::from);
            it.link.pace.idle = Duration::from_secs(2);
            it
        };
        let (sent, got) = std::thread::scope(|sc| {
            let h = sc.spawn(|| serve(listener, &scfg));
            let got = receive(&rcfg);
            (h.join().unwrap(), got)
        });
        assert_eq!(
            got.is_ok(),
            ok,
            "{st:?} {rt:?}: {:?}",
            got.as_ref().err().map(|e| e.to_string())
        );
        assert_eq!(sent.is_ok(), ok);
        if !ok {
            let e = got.unwrap_err().to_string();
            assert!(e.contains("token"), "{e}");
            assert_eq!(std::fs::read_dir(out.path()).unwrap().count(), 0);
        }
    }
    // Nobody listening.
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    drop(l);
    let out = tempfile::tempdir().unwrap();
    let e = receive(&recv_cfg(&addr, out.path(), RecvMethod::Write)).unwrap_err();
    assert!(e.to_string().contains("Connection refused"), "{e}");
}

use predicates::prelude::*;

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn master_and_slave_print_the_classic_lines_on_both_sides() {
    let src = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let a = write_file(src.path(), "a", &bytes(100_000, 40));
    let b = write_file(src.path(), "b", b"tiny");
    let port = free_port().to_string();
    let bin = assert_cmd::cargo::cargo_bin("iolab");
    let master = std::process::Command::new(&bin)
        .args([
            "master",
            "2",
            a.to_str().unwrap(),
            b.to_str().unwrap(),
            "mmap",
            "--port",
            &port,
            "--per-file",
        ])
        .output_async();
    let slave = iolab()
        .current_dir(out.path())
        .args([
            "slave",
            "2",
            "x1",
            "x2",
            "fcntl",
            "127.0.0.1",
            "--port",
            &port,
        ])
        .output()
        .unwrap();
    let master = master.join().unwrap();
    for (who, o) in [("slave", &slave), ("master", &master)] {
        assert!(
            o.status.success(),
            "{who}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let text = String::from_utf8_lossy(&o.stdout);
        let lines: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("Transmission time: "))
            .collect();
        if who == "master" {
            // --per-file: a line per file.
            assert_eq!(lines.len(), 2, "{who}: {text}");
            assert!(
                lines[0].ends_with(", File size: 100000 bytes"),
                "{who}: {}",
                lines[0]
            );
            assert!(
                lines[1].ends_with(", File size: 4 bytes"),
                "{who}: {}",
                lines[1]
            );
        } else {
            // The 2020 program's one line for the run: every file's bytes.
            assert_eq!(lines, [lines[0]], "{who}: {text}");
            assert!(
                lines[0].ends_with(", File size: 100004 bytes"),
                "{who}: {}",
                lines[0]
            );
        }
        let ms: f64 = lines[0]["Transmission time: ".len()..]
            .split(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert!(
            ms > 0.0 && ms < 10_000.0,
            "{who}: milliseconds, honestly: {ms}"
        );
        assert!(
            lines[0]
                .split(" ms")
                .next()
                .unwrap()
                .split('.')
                .nth(1)
                .unwrap()
                .len()
                == 6,
            "six decimals, as the course's %lf printed"
        );
        assert!(
            !text.contains("Total"),
            "{who}: the classic form prints the course's lines only: {text}"
        );
    }
    assert_eq!(
        std::fs::read(out.path().join("x1")).unwrap(),
        std::fs::read(&a).unwrap()
    );
    assert_eq!(std::fs::read(out.path().join("x2")).unwrap(), b"tiny");
    let o = iolab()
        .args(["slave", "3", "x", "fcntl", "127.0.0.1"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
}

/// Runs a command in the background, returning its output when joined.
trait OutputAsync {
    fn output_async(&mut self) -> std::thread::JoinHandle<std::process::Output>;
}

impl OutputAsync for std::process::Command {
    fn output_async(&mut self) -> std::thread::JoinHandle<std::process::Output> {
        let child = self
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::spawn(move || child.wait_with_output().unwrap())
    }
}

/// `iolab send FILE EXTRA..` with the token "shared" on a free port: its output when it ends, its
/// address and its port.
fn tokened_sender(
    f: &std::path::Path,
    extra: &[&str],
) -> (
    std::thread::JoinHandle<std::process::Output>,
    String,
    String,
) {
    let port = free_port().to_string();
    let addr = format!("127.0.0.1:{port}");
    let sender = std::process::Command::new(assert_cmd::cargo::cargo_bin("iolab"))
        .env("IOLAB_TOKEN", "shared")
        .arg("send")
        .arg(f)
        .args(["--port", &port])
        .args(extra)
        .output_async();
    (sender, addr, port)
}

/// Both sides' `--format csv` is one table by the project's CSV rules (common::CSV_RULES).
#[test]
fn send_and_recv_print_csv_by_the_rules() {
    let src = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let a = write_file(src.path(), "a.txt", &bytes(30_000, 42));
    let (sender, addr, _) = tokened_sender(&a, &["--format", "csv"]);
    let o = iolab()
        .env("IOLAB_TOKEN", "shared")
        .args(["recv", "--connect", &addr, "--out"])
        .arg(out.path())
        .args(["--retry", "10s", "--format", "csv"])
        .output()
        .unwrap();
    let s = sender.join().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(s.status.success(), "{}", String::from_utf8_lossy(&s.stderr));
    common::check_csv("recv", &o.stdout);
    common::check_csv("send", &s.stdout);
}

#[test]
fn send_and_recv_with_a_token_from_the_environment_and_json() {
    let src = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let f = write_file(src.path(), "doc.txt", &bytes(50_000, 41));
    let (sender, addr, port) = tokened_sender(&f, &["--method", "sendfile", "--format", "json"]);
    let bin = assert_cmd::cargo::cargo_bin("iolab");
    let o = iolab()
        .env("IOLAB_TOKEN", "shared")
        .args([
            "recv",
            "--connect",
            &addr,
            "--out",
            out.path().to_str().unwrap(),
            "--method",
            "splice",
            "--retry",
            "10s",
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    let s = sender.join().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(s.status.success(), "{}", String::from_utf8_lossy(&s.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["files"][0]["name"], "doc.txt");
    assert_eq!(v["files"][0]["bytes"], 50_000);
    assert!(v["files"][0]["mib_s"].as_f64().unwrap() > 0.0);
    assert!(
        v["files"][0]["hash_time"].is_number(),
        "verify time reported"
    );
    assert_eq!(v["method"], "splice");
    let w: serde_json::Value = serde_json::from_slice(&s.stdout).unwrap();
    assert_eq!(w["method"], "sendfile");
    assert_eq!(w["files"][0]["blake3"], v["files"][0]["blake3"]);
    assert_eq!(
        std::fs::read(out.path().join("doc.txt")).unwrap(),
        std::fs::read(&f).unwrap()
    );
    // Again into the same directory: the existing file is not replaced without --force.
    let sender = std::process::Command::new(&bin)
        .args([
            "send",
            f.to_str().unwrap(),
            "--port",
            &port,
            "--timeout",
            "5s",
        ])
        .output_async();
    let o = iolab()
        .args([
            "recv",
            "--connect",
            &addr,
            "--out",
            out.path().to_str().unwrap(),
            "--retry",
            "10s",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--force"));
    assert_eq!(
        sender.join().unwrap().status.code(),
        Some(1),
        "the sender hears of the failure"
    );
    assert_eq!(std::fs::read_dir(out.path()).unwrap().count(), 1);
    // With --force it is replaced, and nothing else is left.
    std::fs::write(out.path().join("doc.txt"), b"old").unwrap();
    let sender = std::process::Command::new(&bin)
        .args(["send", f.to_str().unwrap(), "--port", &port])
        .args(["--timeout", "5s"])
        .output_async();
    let o = iolab()
        .args([
            "recv",
            "--connect",
            &addr,
            "--force",
            "--retry",
            "10s",
            "--out",
        ])
        .arg(out.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(sender.join().unwrap().status.success());
    assert_eq!(
        std::fs::read(out.path().join("doc.txt")).unwrap(),
        std::fs::read(&f).unwrap()
    );
    assert_eq!(std::fs::read_dir(out.path()).unwrap().count(), 1);
    // Nobody listening: one line, exit 1.
    iolab()
        .args(["recv", "--connect", &format!("127.0.0.1:{}", free_port())])
        .assert()
        .code(1)
        .stderr(
            predicate::str::contains("Connection refused")
                .and(predicate::str::contains("iolab send")),
        );
}

#[test]
fn transfer_matrix_covers_the_pairs() {
    let src = tempfile::tempdir().unwrap();
    let f = write_file(src.path(), "m", &bytes(1 << 20, 42));
    let o = iolab()
        .args([
            "transfer",
            f.to_str().unwrap(),
            "--methods",
            "read:write,sendfile:splice,mmap:mmap",
            "--repeat",
            "2",
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let pairs = v["pairs"].as_array().unwrap();
    assert_eq!(pairs.len(), 3);
    for p in pairs {
        assert_eq!(p["runs"].as_array().unwrap().len(), 2);
        assert!(p["mib_s"]["median"].as_f64().unwrap() > 0.0);
    }
    assert_eq!(v["bytes"], 1 << 20);
    // Adaptive rounds: the text says the runs each pair made (8 at the first look at least),
    // not the configured --repeat's default of 3.
    let o = iolab()
        .args([
            "transfer",
            f.to_str().unwrap(),
            "--methods",
            "read:write,mmap:mmap",
        ])
        .args(["--budget", "2s", "--format", "text"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let runs: usize = text
        .split(" run(s) per pair")
        .next()
        .and_then(|h| h.rsplit(' ').next())
        .and_then(|n| n.split('-').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{text}"));
    assert!(runs >= 8, "{text}");
    let o = iolab()
        .args(["transfer", f.to_str().unwrap(), "--methods", "read:nope"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
}

/// Two network namespaces joined by a veth pair: the transfer crosses a real network stack.
#[test]
fn transfer_between_two_network_namespaces() {
    if !common::is_root() {
        return skip(Lack::Setup, "network namespaces need root");
    }
    let id = std::process::id() % 100_000;
    let (a, b) = (format!("iolabA{id}"), format!("iolabB{id}"));
    let (va, vb) = (format!("ioA{id}"), format!("ioB{id}"));
    let net = format!("10.{}.{}", 200 + id % 50, id % 250);
    let ip = |args: &[&str]| {
        std::process::Command::new("ip")
            .args(args)
            .status()
            .map(|s| s.success())
            .unwrap_or(false)
    };
    if !ip(&["netns", "add", &a]) {
        return skip(
            Lack::Setup,
            "`ip netns add` failed here (no iproute2 or no permission)",
        );
    }
    let _ = ip(&["netns", "add", &b]);
    let setup = [
        vec!["link", "add", &va, "type", "veth", "peer", "name", &vb],
        vec!["link", "set", &va, "netns", &a],
        vec!["link", "set", &vb, "netns", &b],
    ];
    let addr_a = format!("{net}.1/24");
    let addr_b = format!("{net}.2/24");
    let mut ok = setup.iter().all(|args| ip(args));
    ok &= ip(&["-n", &a, "addr", "add", &addr_a, "dev", &va]);
    ok &= ip(&["-n", &b, "addr", "add", &addr_b, "dev", &vb]);
    ok &= ip(&["-n", &a, "link", "set", &va, "up"]);
    ok &= ip(&["-n", &b, "link", "set", &vb, "up"]);
    let result = std::panic::catch_unwind(|| {
        if !ok {
            return skip(Lack::Setup, "could not set up the veth pair");
        }
        let src = tempfile::tempdir().unwrap();
        let out = tempfile::tempdir().unwrap();
        let f = write_file(src.path(), "across", &bytes(5 << 20, 43));
        let bin = assert_cmd::cargo::cargo_bin("iolab");
        let listen = format!("{net}.1:2325");
        // Beyond loopback a sender serves only with a token (or --no-token): both sides
        // share one.
        let sender = std::process::Command::new("ip")
            .args(["netns", "exec", &a])
            .env("IOLAB_TOKEN", "netns-secret")
            .arg(&bin)
            .args([
                "send",
                f.to_str().unwrap(),
                "--listen",
                &listen,
                "--method",
                "sendfile",
                "--timeout",
                "20s",
            ])
            .output_async();
        let recv = std::process::Command::new("ip")
            .args(["netns", "exec", &b])
            .env("IOLAB_TOKEN", "netns-secret")
            .arg(&bin)
            .args([
                "recv",
                "--connect",
                &listen,
                "--out",
                out.path().to_str().unwrap(),
                "--retry",
                "15s",
                // A splice receiver whose sender is on another host hashes the file behind its
                // storing, on a thread of its own: that path, end to end.
                "--method",
                "splice",
            ])
            .output()
            .unwrap();
        let sent = sender.join().unwrap();
        assert!(
            recv.status.success(),
            "recv: {}",
            String::from_utf8_lossy(&recv.stderr)
        );
        assert!(
            sent.status.success(),
            "send: {}",
            String::from_utf8_lossy(&sent.stderr)
        );
        assert_eq!(
            std::fs::read(out.path().join("across")).unwrap(),
            std::fs::read(&f).unwrap()
        );
    });
    let _ = ip(&["netns", "del", &a]);
    let _ = ip(&["netns", "del", &b]);
    result.unwrap();
}

/// One stray connection (garbage, or a wrong token) no longer ends the sender: it is dropped and
/// the real receiver still gets the file.
#[test]
fn a_stray_connection_does_not_end_the_sender() {
    use std::io::Write;
    let src = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let f = write_file(src.path(), "doc.txt", &bytes(10_000, 7));
    let (sender, addr, _) = tokened_sender(&f, &["--timeout", "10s"]);
    // A stray peer: connects as soon as the sender listens, sends garbage, leaves.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        if let Ok(mut s) = std::net::TcpStream::connect(&addr) {
            let _ = s.write_all(&[0x42; 28]);
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the sender never listened"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let o = iolab()
        .env("IOLAB_TOKEN", "shared")
        .args(["recv", "--connect", &addr, "--out"])
        .arg(out.path())
        .args(["--retry", "10s"])
        .output()
        .unwrap();
    let s = sender.join().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(s.status.success(), "{}", String::from_utf8_lossy(&s.stderr));
    assert!(
        String::from_utf8_lossy(&s.stderr).contains("dropped a connection"),
        "{}",
        String::from_utf8_lossy(&s.stderr)
    );
    assert_eq!(
        std::fs::read(out.path().join("doc.txt")).unwrap(),
        std::fs::read(&f).unwrap()
    );
}

#[test]
fn a_sender_that_drips_is_cut_off_by_the_handshake_deadline_and_the_floor_rate() {
    let out = tempfile::tempdir().unwrap();
    // One hello byte every 100 ms: 2.8 s for the hello, each read well inside --timeout.
    let (addr, h) = bad_sender(|s| {
        for b in hello(VERSION) {
            if s.write_all(&[b]).is_err() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    });

    let err = receive(&{
        let mut it = recv_cfg(&addr, out.path(), RecvMethod::Write);
        it.link.pace.handshake = Duration::from_secs(1);
        it
    })
    .unwrap_err();
    let _ = h.join();
    assert!(
        err.to_string()
            .contains("the handshake took longer than 1 s"),
        "{err}"
    );
    // A proper hello and header, then the content at 20 bytes a second.
    for method in [RecvMethod::Write, RecvMethod::Mmap, RecvMethod::Splice] {
        let (addr, h) = bad_sender(|s| {
            let _ = s.write_all(&hello(VERSION));
            swallow_hello(s);
            let _ = s.write_all(&header(b"slow.bin", 100_000));
            for _ in 0..200 {
                if s.write_all(&[7]).is_err() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        });

        let err = receive(&{
            let mut it = recv_cfg(&addr, out.path(), method);
            it.link.pace.idle = Duration::from_millis(300);
            it.link.pace.min_rate = 1000;
            it
        })
        .unwrap_err();
        let _ = h.join();
        assert!(
            err.to_string().contains("slower than --min-rate 1000"),
            "{method:?}: {err}"
        );
        assert_eq!(
            std::fs::read_dir(out.path()).unwrap().count(),
            0,
            "nothing kept"
        );
    }
}

#[test]
fn a_receiver_that_drips_is_dropped_and_one_that_stalls_ends_the_sender() {
    let src = tempfile::tempdir().unwrap();
    let f = write_file(src.path(), "big.bin", &bytes(32 << 20, 51));
    let (listener, addr) = {
        let l = bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let a = l.local_addr().unwrap().to_string();
        (l, a)
    };
    let cfg = {
        let mut it = send_cfg(&[f], SendMethod::Read);
        it.link.pace.idle = Duration::from_secs(3);
        it.link.pace.handshake = Duration::from_secs(1);
        it.link.pace.min_rate = 1 << 20;
        it
    };

    let err = std::thread::scope(|sc| {
        let h = sc.spawn(|| serve(listener, &cfg));
        // First a peer that answers the hello a byte at a time: dropped after 1 s, while the
        // sender keeps waiting for a real receiver.
        let mut drip = std::net::TcpStream::connect(&addr).unwrap();
        swallow_hello(&mut drip);
        for b in hello(VERSION) {
            if drip.write_all(&[b]).is_err() {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        // Then one that passes the handshake but never reads the content.
        let mut stall = std::net::TcpStream::connect(&addr).unwrap();
        swallow_hello(&mut stall);
        stall.write_all(&hello(VERSION)).unwrap();
        let r = h.join().unwrap();
        drop(stall);
        r
    })
    .unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("idle past the timeout") || text.contains("slower than --min-rate"),
        "{text}"
    );
}

#[test]
fn the_sender_says_why_the_receiver_refused() {
    let src = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let f = write_file(src.path(), "doc.txt", &bytes(4 << 20, 61));
    std::fs::write(out.path().join("doc.txt"), b"the user's own").unwrap();
    let l = bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let addr = l.local_addr().unwrap().to_string();
    let scfg = send_cfg(&[f], SendMethod::Read);
    let (sent, got) = std::thread::scope(|sc| {
        let h = sc.spawn(|| serve(l, &scfg));
        let got = receive(&recv_cfg(&addr, out.path(), RecvMethod::Write));
        (h.join().unwrap(), got)
    });
    let got = got.unwrap_err();
    assert!(got.to_string().contains("refusing to overwrite"), "{got}");
    let sent = sent.unwrap_err().to_string();
    assert!(
        sent.contains("the receiver reported a failure: ")
            && sent.contains("refusing to overwrite"),
        "not a bare Broken pipe: {sent}"
    );
    assert_eq!(
        std::fs::read(out.path().join("doc.txt")).unwrap(),
        b"the user's own"
    );
}

#[test]
fn mismatched_connections_fail_the_handshake_on_both_sides() {
    let src = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let f = write_file(src.path(), "a.bin", &bytes(1000, 62));
    let l = bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let addr = l.local_addr().unwrap().to_string();
    let scfg = {
        let mut it = send_cfg(&[f], SendMethod::Read);
        it.link.pace.idle = Duration::from_secs(2);
        it
    };

    let (sent, got) = std::thread::scope(|sc| {
        let h = sc.spawn(|| serve(l, &scfg));
        let got = receive(&{
            let mut it = recv_cfg(&addr, out.path(), RecvMethod::Write);
            it.link.connections = 2;
            it
        });
        (h.join().unwrap(), got)
    });
    let got = got.unwrap_err().to_string();
    assert!(
        got.contains("the sender uses 1 connection(s), this side 2"),
        "{got}"
    );
    let sent = sent.unwrap_err().to_string();
    assert!(
        sent.contains("the receiver uses 2 connection(s), this side 1"),
        "{sent}"
    );
    assert_eq!(std::fs::read_dir(out.path()).unwrap().count(), 0);
}

#[test]
fn bytes_that_differ_from_the_headers_hash_are_refused_by_every_receiver() {
    // The write receiver hashes the bytes as it writes them (no second pass), the others re-read
    // the file: either way a stream that does not match its header is not kept.
    for method in [RecvMethod::Write, RecvMethod::Mmap, RecvMethod::Splice] {
        let out = tempfile::tempdir().unwrap();
        let (addr, h) = bad_sender(|s| {
            let _ = s.write_all(&hello(VERSION));
            swallow_hello(s);
            let _ = s.write_all(&header(b"x", 3));
            let _ = s.write_all(b"abd");
            let _ = s.write_all(blake3::hash(b"abc").as_bytes());
            let _ = s.write_all(&[0]);
            let mut status = [0u8; 64];
            let _ = s.read(&mut status);
        });
        let err = receive(&recv_cfg(&addr, out.path(), method)).unwrap_err();
        let _ = h.join();
        assert!(
            err.to_string().contains("checksum mismatch"),
            "{method:?}: {err}"
        );
        assert_eq!(
            std::fs::read_dir(out.path()).unwrap().count(),
            0,
            "{method:?}"
        );
    }
}

#[test]
fn a_second_file_of_one_name_from_the_sender_is_a_peer_failure() {
    let out = tempfile::tempdir().unwrap();
    let (addr, h) = bad_sender(|s| {
        let _ = s.write_all(&hello(VERSION));
        swallow_hello(s);
        for _ in 0..2 {
            let _ = s.write_all(&header(b"dup", 3));
            let _ = s.write_all(b"abc");
            let _ = s.write_all(blake3::hash(b"abc").as_bytes());
        }
        let _ = s.write_all(&[0]);
        let mut status = [0u8; 64];
        let _ = s.read(&mut status);
    });
    let err = receive(&recv_cfg(&addr, out.path(), RecvMethod::Write)).unwrap_err();
    let _ = h.join();
    assert!(err.to_string().contains("a second file named dup"), "{err}");
    assert_eq!(err.exit_code(), 1, "the peer's fault, not a usage error");
    assert_eq!(std::fs::read(out.path().join("dup")).unwrap(), b"abc");
    assert_eq!(std::fs::read_dir(out.path()).unwrap().count(), 1);
}

#[test]
fn the_token_comes_from_a_file_and_a_token_on_the_command_line_is_warned_about() {
    let src = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let f = write_file(src.path(), "doc.txt", &bytes(10_000, 71));
    let tok = write_file(src.path(), "token", b"s3cret-from-a-file\n");
    let port = free_port().to_string();
    let addr = format!("127.0.0.1:{port}");
    let sender = std::process::Command::new(assert_cmd::cargo::cargo_bin("iolab"))
        .env_remove("IOLAB_TOKEN")
        .arg("send")
        .arg(&f)
        .args(["--port", &port, "--token-file", tok.to_str().unwrap()])
        .output_async();
    // The receiver gives the same secret on its command line: it works, with a warning.
    let o = iolab()
        .args([
            "recv",
            "--connect",
            &addr,
            "--out",
            out.path().to_str().unwrap(),
        ])
        .args(["--retry", "10s", "--token", "s3cret-from-a-file"])
        .output()
        .unwrap();
    let s = sender.join().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(s.status.success(), "{}", String::from_utf8_lossy(&s.stderr));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--token is visible to every local user"));
    assert!(!String::from_utf8_lossy(&s.stderr).contains("warning: --token"));
    assert_eq!(
        std::fs::read(out.path().join("doc.txt")).unwrap(),
        std::fs::read(&f).unwrap()
    );
    // An empty or missing token file is refused before anything listens.
    let empty = write_file(src.path(), "empty", b"\n");
    for (file, code) in [(empty.to_str().unwrap(), 2), ("/nonexistent/token", 1)] {
        let o = iolab()
            .args(["send", f.to_str().unwrap(), "--token-file", file])
            .output()
            .unwrap();
        assert_eq!(
            o.status.code(),
            Some(code),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
}

#[test]
fn with_a_token_a_frame_without_this_connections_tag_is_refused() {
    use iolab::transfer::protocol::{Session, proof};
    let out = tempfile::tempdir().unwrap();
    // A sender that holds the token and passes the handshake, then sends one header as it would
    // be without the tag (as someone who took over the connection after the proofs would).
    for tagged in [true, false] {
        let (addr, h) = bad_sender(move |s| {
            let ns = [5u8; 16];
            let mut hello = b"IOLABXFR".to_vec();
            hello.extend_from_slice(&VERSION.to_le_bytes());
            hello.extend_from_slice(&1u16.to_le_bytes());
            hello.extend_from_slice(&ns);
            let _ = s.write_all(&hello);
            let mut theirs = [0u8; 28];
            let _ = s.read_exact(&mut theirs);
            let nr: [u8; 16] = theirs[12..].try_into().unwrap();
            let mut p = [0u8; 32];
            let _ = s.read_exact(&mut p);
            let _ = s.write_all(proof("tok", b"send", &ns, &nr).as_bytes());
            let mut session = Session::new(Some("tok"), &ns, &nr);
            let hd = header(b"x.bin", 3);
            let frame = if tagged {
                session.seal(b"send", &hd)
            } else {
                hd
            };
            let _ = s.write_all(&frame);
            let _ = s.write_all(b"abc");
            let _ = s.write_all(&session.seal(b"send", blake3::hash(b"abc").as_bytes()));
            let _ = s.write_all(&session.seal(b"send", &[0]));
            let mut status = [0u8; 64];
            let _ = s.read(&mut status);
        });
        let r = receive(&{
            let mut it = recv_cfg(&addr, out.path(), RecvMethod::Write);
            it.link.token = Some("tok".into());
            it
        });
        let _ = h.join();
        if tagged {
            assert!(r.is_ok(), "{r:?}");
            std::fs::remove_file(out.path().join("x.bin")).unwrap();
        } else {
            let err = r.unwrap_err().to_string();
            assert!(err.contains("tag does not match"), "{err}");
            assert_eq!(std::fs::read_dir(out.path()).unwrap().count(), 0);
        }
    }
}

#[test]
fn swapping_out_for_a_symlink_mid_transfer_redirects_nothing() {
    let top = tempfile::tempdir().unwrap();
    let out = top.path().join("out");
    let elsewhere = top.path().join("elsewhere");
    std::fs::create_dir(&out).unwrap();
    std::fs::create_dir(&elsewhere).unwrap();
    let content = bytes(64 << 10, 81);
    let go = std::sync::Arc::new(std::sync::Barrier::new(2));
    let (addr, h) = {
        let go = go.clone();
        let content = content.clone();
        bad_sender(move |s| {
            let _ = s.write_all(&hello(VERSION));
            swallow_hello(s);
            let _ = s.write_all(&header(b"doc.bin", content.len() as u64));
            let _ = s.write_all(&content[..1000]);
            // The receiver has made its temporary file by now; the path is swapped meanwhile.
            go.wait();
            go.wait();
            let _ = s.write_all(&content[1000..]);
            let _ = s.write_all(blake3::hash(&content).as_bytes());
            let _ = s.write_all(&[0]);
            let mut status = [0u8; 64];
            let _ = s.read(&mut status);
        })
    };
    let rcfg = recv_cfg(&addr, &out, RecvMethod::Write);
    let r = std::thread::scope(|sc| {
        let r = sc.spawn(|| receive(&rcfg));
        go.wait();
        std::thread::sleep(Duration::from_millis(200));
        std::fs::rename(&out, top.path().join("moved")).unwrap();
        std::os::unix::fs::symlink(&elsewhere, &out).unwrap();
        go.wait();
        r.join().unwrap()
    });
    let _ = h.join();
    r.unwrap();
    assert_eq!(
        std::fs::read(top.path().join("moved/doc.bin")).unwrap(),
        content,
        "the file went where --out was when the receiver opened it"
    );
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
}

/// Every message a receiver sends (hello, proof, status), wrong, short, oversized and slow:
/// the sender fails with a clear error, or drops the connection and keeps waiting, and never
/// reports success it did not get.
#[test]
fn hostile_receivers_cannot_fool_or_hold_the_sender() {
    use iolab::transfer::protocol::{Session, proof};
    let src = tempfile::tempdir().unwrap();
    let f = write_file(src.path(), "f.bin", &bytes(5000, 91));
    type Script = Box<dyn FnOnce(&mut std::net::TcpStream) + Send>;
    let status_after = |status: Vec<u8>| -> Script {
        Box::new(move |s: &mut std::net::TcpStream| {
            swallow_hello(s);
            let _ = s.write_all(&hello(VERSION));
            // Read the header, content and end marker, then answer.
            let mut sink = vec![0u8; 1 + 2 + 5 + 40 + 5000 + 1];
            let _ = s.read_exact(&mut sink);
            let _ = s.write_all(&status);
        })
    };
    let cases: Vec<(Option<&str>, Script, &str)> = vec![
        (
            None,
            Box::new(|s: &mut std::net::TcpStream| {
                swallow_hello(s);
                let _ = s.write_all(b"GET / HTTP/1.1\r\nHost: example\r\n\r\n");
            }),
            "wrong magic",
        ),
        (
            None,
            Box::new(|s: &mut std::net::TcpStream| {
                swallow_hello(s);
                let _ = s.write_all(&hello(VERSION)[..5]);
                let _ = s.shutdown(std::net::Shutdown::Write);
            }),
            "5 of 28 hello bytes",
        ),
        (
            Some("tok"),
            Box::new(|s: &mut std::net::TcpStream| {
                swallow_hello(s);
                let mut h = hello(VERSION);
                h[10] = 1;
                let _ = s.write_all(&h);
                let _ = s.write_all(&[0u8; 32]);
            }),
            "wrong token",
        ),
        (
            Some("tok"),
            Box::new(|s: &mut std::net::TcpStream| {
                swallow_hello(s);
                let mut h = hello(VERSION);
                h[10] = 1;
                let _ = s.write_all(&h);
                let _ = s.write_all(&[1u8; 7]);
                let _ = s.shutdown(std::net::Shutdown::Write);
            }),
            "wrong token",
        ),
    ];
    // Handshake failures: each stray is dropped and the sender ends saying why, after --timeout.
    for (token, script, needle) in cases {
        let l = bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let addr = l.local_addr().unwrap().to_string();
        let cfg = {
            let mut it = send_cfg(std::slice::from_ref(&f), SendMethod::Read);
            it.link.token = token.map(String::from);
            it.link.pace.idle = Duration::from_secs(1);
            it
        };
        let err = std::thread::scope(|sc| {
            let h = sc.spawn(|| serve(l, &cfg));
            let mut s = std::net::TcpStream::connect(&addr).unwrap();
            script(&mut s);
            let r = h.join().unwrap();
            drop(s);
            r
        })
        .unwrap_err()
        .to_string();
        assert!(err.contains("no receiver passed the handshake"), "{err}");
        assert!(err.contains(needle), "{needle}: {err}");
    }
    // Status answers: garbage, a failure with an oversized length and an escape sequence, none.
    let mut long = vec![1u8];
    long.extend_from_slice(&u16::MAX.to_le_bytes());
    long.extend_from_slice(b"disk \x1b[31mfull");
    for (status, needle) in [
        (vec![7u8], "the receiver reported a failure"),
        (long, "the receiver reported a failure: disk ?[31mfull"),
        (vec![], "closed the connection before confirming"),
    ] {
        let l = bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let addr = l.local_addr().unwrap().to_string();
        let cfg = {
            let mut it = send_cfg(std::slice::from_ref(&f), SendMethod::Read);
            it.link.pace.idle = Duration::from_secs(2);
            it
        };
        let script = status_after(status);
        let err = std::thread::scope(|sc| {
            let h = sc.spawn(|| serve(l, &cfg));
            let mut s = std::net::TcpStream::connect(&addr).unwrap();
            script(&mut s);
            drop(s);
            h.join().unwrap()
        })
        .unwrap_err()
        .to_string();
        assert!(err.contains(needle), "{needle}: {err}");
    }
    // With a token, an untagged "all stored" (someone else's) is not taken as success.
    let l = bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let addr = l.local_addr().unwrap().to_string();
    let cfg = {
        let mut it = send_cfg(std::slice::from_ref(&f), SendMethod::Read);
        it.link.token = Some("tok".into());
        it.link.pace.idle = Duration::from_secs(2);
        it
    };
    let err = std::thread::scope(|sc| {
        let h = sc.spawn(|| serve(l, &cfg));
        let mut s = std::net::TcpStream::connect(&addr).unwrap();
        let mut theirs = [0u8; 28];
        s.read_exact(&mut theirs).unwrap();
        let ns: [u8; 16] = theirs[12..].try_into().unwrap();
        let mut mine = hello(VERSION);
        mine[10] = 1;
        s.write_all(&mine).unwrap();
        let nr = [9u8; 16];
        s.write_all(proof("tok", b"recv", &ns, &nr).as_bytes())
            .unwrap();
        let _ = Session::new(Some("tok"), &ns, &nr);
        let mut sink = vec![0u8; 32 + 1 + 2 + 5 + 40 + 32 + 5000 + 1 + 32];
        let _ = s.read_exact(&mut sink);
        let _ = s.write_all(&[0]);
        let _ = s.write_all(&[0u8; 32]);
        let r = h.join().unwrap();
        drop(s);
        r
    })
    .unwrap_err()
    .to_string();
    assert!(err.contains("tag does not match"), "{err}");
}

/// The sender's messages not covered above: an unknown frame, an oversized name, a header that
/// trickles past the header deadline, a missing end marker.
#[test]
fn more_hostile_senders_are_refused() {
    let out = tempfile::tempdir().unwrap();
    let mut long_name = vec![1u8];
    long_name.extend_from_slice(&300u16.to_le_bytes());
    long_name.extend_from_slice(&[b'a'; 300]);
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (vec![9u8], "unknown frame type 9"),
        (long_name, "a file name of 300 bytes"),
        (vec![], "before the end marker"),
    ];
    for (bytes_out, needle) in cases {
        let (a, h) = bad_sender(move |s| {
            let _ = s.write_all(&hello(VERSION));
            swallow_hello(s);
            let _ = s.write_all(&bytes_out);
            std::thread::sleep(Duration::from_millis(50));
        });
        expect_failure(&a, out.path(), needle);
        h.join().unwrap();
    }
    let (a, h) = bad_sender(|s| {
        let _ = s.write_all(&hello(VERSION));
        swallow_hello(s);
        for b in header(b"drip", 10) {
            if s.write_all(&[b]).is_err() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    });
    let err = receive(&{
        let mut it = recv_cfg(&a, out.path(), RecvMethod::Write);
        it.link.pace.handshake = Duration::from_secs(1);
        it
    })
    .unwrap_err();
    let _ = h.join();
    assert!(
        err.to_string().contains("a header took longer than 1 s"),
        "{err}"
    );
    assert_eq!(std::fs::read_dir(out.path()).unwrap().count(), 0);
}

/// The loopback ports that process `pid` listens on (from /proc/net/tcp and its descriptors).
fn listening_ports(pid: u32) -> Vec<u16> {
    let inodes: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| {
            d.flatten()
                .filter_map(|e| std::fs::read_link(e.path()).ok())
                .filter_map(|l| {
                    let l = l.to_string_lossy().to_string();
                    Some(l.strip_prefix("socket:[")?.strip_suffix(']')?.to_string())
                })
                .collect()
        })
        .unwrap_or_default();
    let tcp = std::fs::read_to_string("/proc/net/tcp").unwrap_or_default();
    tcp.lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let (local, state, inode) = (f.get(1)?, f.get(3)?, f.get(9)?);
            let (ip, port) = local.split_once(':')?;
            (*state == "0A" && ip == "0100007F" && inodes.iter().any(|i| i == inode))
                .then(|| u16::from_str_radix(port, 16).ok())
                .flatten()
        })
        .collect()
}

/// `iolab transfer` listens on loopback, where any local user may connect: a stranger who
/// connects to each new port it opens, speaking the protocol (an `iolab recv` of its own),
/// is refused every time and stores nothing, and the transfer still completes.
#[test]
fn a_stranger_cannot_take_the_files_of_a_transfer() {
    let dir = tempfile::tempdir().unwrap();
    let mut data = bytes(32 << 20, 41);
    data[..16].copy_from_slice(b"SECRET-CONTENTS!");
    let f = write_file(dir.path(), "secret.bin", &data);
    let thief_dir = dir.path().join("thief");
    std::fs::create_dir(&thief_dir).unwrap();
    let bin = assert_cmd::cargo::cargo_bin("iolab");
    let mut transfer = std::process::Command::new(&bin)
        .args(["transfer", f.to_str().unwrap(), "--methods", "read:write"])
        .args(["--repeat", "6", "--format", "json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = transfer.id();
    let mut tried = std::collections::HashSet::new();
    let (mut attempts, mut stolen) = (0, 0);
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while transfer.try_wait().unwrap().is_none() && std::time::Instant::now() < deadline {
        for port in listening_ports(pid) {
            if !tried.insert(port) {
                continue;
            }
            attempts += 1;
            let o = std::process::Command::new(&bin)
                .args(["recv", "--connect", &format!("127.0.0.1:{port}")])
                .arg("--out")
                .arg(&thief_dir)
                .args(["--timeout", "2s"])
                .output()
                .unwrap();
            stolen += usize::from(o.status.success());
        }
    }
    let out = transfer.wait_with_output().unwrap();
    assert!(out.status.success(), "the transfer itself completes");
    assert_eq!(
        stolen, 0,
        "a stranger received the files ({attempts} tries)"
    );
    let left: Vec<_> = std::fs::read_dir(&thief_dir).unwrap().collect();
    assert!(left.is_empty(), "the stranger stored {left:?}");
    eprintln!("{attempts} stranger connections, none served");
}

/// `send --port 0` says the port the kernel chose, not 0.
#[test]
fn send_on_port_zero_says_the_real_port() {
    use std::io::BufRead;
    let dir = tempfile::tempdir().unwrap();
    let f = write_file(dir.path(), "a", &bytes(1000, 3));
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("iolab"))
        .args([
            "send",
            f.to_str().unwrap(),
            "--port",
            "0",
            "--timeout",
            "5s",
        ])
        .stderr(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stderr.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let _ = child.kill();
    let _ = child.wait();
    let addr = line
        .strip_prefix("iolab: listening on ")
        .and_then(|r| r.split(',').next())
        .unwrap_or_else(|| panic!("{line}"));
    let port: u16 = addr.rsplit(':').next().unwrap().parse().unwrap();
    assert!(port > 0, "{line}");
}

/// Secrets are read within bounds and checked: a token file that never ends (/dev/zero) and an
/// empty --token are refused; a token file others may write is used with a warning.
#[test]
fn token_sources_are_bounded_and_checked() {
    let dir = tempfile::tempdir().unwrap();
    let f = write_file(dir.path(), "a", &bytes(100, 4));
    let send = |extra: &[&str]| {
        iolab()
            .args([
                "send",
                f.to_str().unwrap(),
                "--port",
                "0",
                "--timeout",
                "1s",
            ])
            .args(extra)
            .timeout(common::patience(Duration::from_secs(20)))
            .output()
            .unwrap()
    };
    let o = send(&["--token-file", "/dev/zero"]);
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("no line end"),
        "{o:?}"
    );
    let o = send(&["--token", ""]);
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("empty"),
        "{o:?}"
    );
    let t = dir.path().join("t");
    std::fs::write(&t, "s3cret\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    // Writable by every user: anyone chooses the secret, refused before anything listens.
    std::fs::set_permissions(&t, std::fs::Permissions::from_mode(0o666)).unwrap();
    let o = send(&["--token-file", t.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("writable by every user"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    // Writable by the owner's group: warned of. Nobody connects: the sender gives up after
    // --timeout, having warned first.
    std::fs::set_permissions(&t, std::fs::Permissions::from_mode(0o664)).unwrap();
    let o = send(&["--token-file", t.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("the token file is writable by other users"),
        "{err}"
    );
}

/// `recv a b` takes exactly two files: a sender with three or with one is an error, and no
/// file lands anywhere but under the names given.
#[test]
fn recv_with_names_takes_exactly_those_files() {
    let src = tempfile::tempdir().unwrap();
    let files: Vec<PathBuf> = (0..3)
        .map(|i| write_file(src.path(), &format!("f{i}"), &bytes(5000, 50 + i)))
        .collect();
    for count in [3usize, 1] {
        let work = tempfile::tempdir().unwrap();
        let port = free_port().to_string();
        let mut args = vec!["send".to_string(), "--port".into(), port.clone()];
        args.extend(["--timeout".into(), "10s".into()]);
        args.extend(
            files[..count]
                .iter()
                .map(|f| f.to_str().unwrap().to_string()),
        );
        let sender = std::thread::spawn(move || iolab().args(&args).output().unwrap());
        let o = iolab()
            .current_dir(work.path())
            .args(["recv", "a", "b", "--connect", &format!("127.0.0.1:{port}")])
            .args(["--retry", "10s", "--timeout", "10s"])
            .output()
            .unwrap();
        let _ = sender.join();
        assert_eq!(
            o.status.code(),
            Some(1),
            "{count} files for 2 names: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let left: Vec<String> = std::fs::read_dir(work.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n != "a" && n != "b")
            .collect();
        assert!(left.is_empty(), "{count} files: stray {left:?}");
        if count == 1 {
            assert!(!work.path().join("b").exists(), "b was never sent");
        }
    }
}

/// A folder that only looks like a killed transfer's (no run's ledger names it) stays at the
/// next run: leftovers are known by their run's ledger (tests/safety.rs kills real runs).
#[test]
fn a_folder_named_like_a_killed_transfers_stays() {
    let stale =
        std::env::temp_dir().join(format!("iolab-transfer-99999997-{}", std::process::id()));
    std::fs::create_dir_all(&stale).unwrap();
    std::fs::write(stale.join("half"), b"x").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let f = write_file(dir.path(), "a", &bytes(10_000, 6));
    iolab()
        .args([
            "transfer",
            f.to_str().unwrap(),
            "--methods",
            "read:write",
            "--repeat",
            "1",
        ])
        .assert()
        .success();
    assert!(
        stale.join("half").exists(),
        "a folder no run recorded was removed"
    );
    std::fs::remove_dir_all(&stale).unwrap();
}

/// Idle connections do not hold a sender's port: its handshakes run side by side, so the real
/// receiver's goes through at once beside five strangers who connect first and say nothing.
#[test]
fn idle_strangers_do_not_hold_the_port() {
    let src = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let f = write_file(src.path(), "doc.txt", &bytes(20_000, 43));
    let (sender, addr, _) = tokened_sender(&f, &["--handshake-timeout", "3s", "--timeout", "20s"]);
    // The strangers, once the port is open.
    let mut idle = Vec::new();
    let t0 = std::time::Instant::now();
    let limit = common::patience(Duration::from_secs(10));
    while idle.len() < 5 && t0.elapsed() < limit {
        match std::net::TcpStream::connect(&addr) {
            Ok(s) => idle.push(s),
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
    assert_eq!(idle.len(), 5, "the sender never listened");
    // Its own handshake may take 3 s: five strangers held one after another would take 15.
    let o = iolab()
        .env("IOLAB_TOKEN", "shared")
        .args([
            "recv",
            "--connect",
            &addr,
            "--out",
            out.path().to_str().unwrap(),
        ])
        .args(["--handshake-timeout", "3s"])
        .output()
        .unwrap();
    let s = sender.join().unwrap();
    drop(idle);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(s.status.success(), "{}", String::from_utf8_lossy(&s.stderr));
    assert_eq!(
        std::fs::read(out.path().join("doc.txt")).unwrap(),
        std::fs::read(&f).unwrap()
    );
}

/// Hundreds of connections: the receiver opens them all before any handshake, so the sender's
/// handshakes must run side by side (one at a time, 255 hung for minutes).
#[test]
fn two_hundred_connections_complete() {
    let src = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let files: Vec<PathBuf> = (0..3)
        .map(|i| write_file(src.path(), &format!("f{i}"), &bytes(30_000, 60 + i)))
        .collect();
    let port = free_port().to_string();
    let mut args = vec!["send".to_string(), "--port".into(), port.clone()];
    args.extend([
        "--connections".into(),
        "200".into(),
        "--timeout".into(),
        "30s".into(),
    ]);
    args.extend(files.iter().map(|f| f.to_str().unwrap().to_string()));
    let sender = std::thread::spawn(move || iolab().args(&args).output().unwrap());
    let o = iolab()
        .args(["recv", "--connect", &format!("127.0.0.1:{port}")])
        .args(["--connections", "200", "--retry", "10s", "--timeout", "30s"])
        .arg("--out")
        .arg(out.path())
        .output()
        .unwrap();
    let s = sender.join().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(s.status.success(), "{}", String::from_utf8_lossy(&s.stderr));
    for f in &files {
        assert_eq!(
            std::fs::read(out.path().join(f.file_name().unwrap())).unwrap(),
            std::fs::read(f).unwrap()
        );
    }
}

/// P3 of round four: a source written in place while it is sent gets no checksum, for every
/// send method: the receiver, missing it, keeps nothing, and the sender says why. (The hash
/// proves the wire, not the file: a torn copy of old and new bytes once hashed true.)
#[test]
fn a_file_written_while_it_is_sent_is_never_called_verified() {
    let dir = tempfile::tempdir().unwrap();
    // Larger than the socket buffers on both sides, so the sender is still sending when the
    // receiver has read its first MiB.
    let size = 64usize << 20;
    for method in [
        SendMethod::Read,
        SendMethod::Mmap,
        SendMethod::Sendfile,
        SendMethod::Splice,
    ] {
        let f = write_file(dir.path(), "moving.bin", &bytes(size, 77));
        let l = bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let addr = l.local_addr().unwrap();
        let scfg = send_cfg(std::slice::from_ref(&f), method);
        let sender = std::thread::spawn(move || serve(l, &scfg));
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        s.write_all(&hello(VERSION)).unwrap();
        swallow_hello(&mut s);
        let mut head = vec![0u8; 1 + 2 + "moving.bin".len() + 8];
        s.read_exact(&mut head).unwrap();
        assert_eq!(head[..], header(b"moving.bin", size as u64)[..]);
        let mut got = vec![0u8; 1 << 20];
        s.read_exact(&mut got).unwrap();
        // Someone writes the file in place, same size, near its end (not yet sent).
        std::os::unix::fs::FileExt::write_at(
            &std::fs::OpenOptions::new().write(true).open(&f).unwrap(),
            &[0xee; 4096],
            (size - 8192) as u64,
        )
        .unwrap();
        let mut rest = Vec::new();
        let _ = s.read_to_end(&mut rest);
        // The content came (torn), and nothing after it: no checksum, no end marker.
        assert_eq!(rest.len(), size - (1 << 20), "{method:?}");
        let err = sender.join().unwrap().unwrap_err().to_string();
        assert!(
            err.contains("the file changed while it was sent"),
            "{method:?}: {err}"
        );
    }
}
