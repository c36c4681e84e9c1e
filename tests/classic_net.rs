//! The course's master/slave, faithfully: raw streams that talk to plain socket programs and nc,
//! the course's chunk and window sizes, the classic lines, exactly N files, and page descriptors.

mod common;
use common::{Lack, skip};

use common::{bytes, have, iolab, is_root, write_file};
use iolab::transfer::receiver::{RecvConfig, receive};
use iolab::transfer::sender::{SendConfig, bind, serve};
use iolab::transfer::{ChunkSizes, RecvMethod, SendMethod};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::thread::JoinHandle;
use std::time::Duration;

/// Shapes that break chunking: empty, one byte, a page, a page and a byte, several windows.
fn shapes(dir: &Path) -> Vec<PathBuf> {
    vec![
        write_file(dir, "empty", b""),
        write_file(dir, "one", b"x"),
        write_file(dir, "p4096", &bytes(4096, 1)),
        write_file(dir, "p4097", &bytes(4097, 2)),
        write_file(dir, "several", &bytes((3 << 20) + 12345, 3)),
    ]
}

const SIZES: [ChunkSizes; 3] = [
    ChunkSizes {
        chunk: ChunkSizes::DEFAULT_CHUNK,
        map_size: None,
    },
    ChunkSizes::CLASSIC,
    ChunkSizes {
        chunk: 1000,
        map_size: Some(3 * 4096),
    },
];

fn listener() -> (TcpListener, String) {
    let l = bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let a = l.local_addr().unwrap().to_string();
    (l, a)
}

#[test]
fn a_raw_sender_feeds_a_plain_socket_reader_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let files = shapes(dir.path());
    for method in SendMethod::ALL {
        for sizes in SIZES {
            let (l, addr) = listener();
            let cfg = {
                let mut it = SendConfig::new(files.clone(), method);
                it.link.raw = true;
                it.link.sizes = sizes;
                it.link.pace.idle = Duration::from_secs(10);
                it
            };
            let got: Vec<Vec<u8>> = std::thread::scope(|sc| {
                let h = sc.spawn(|| serve(l, &cfg));
                // A plain program: one connection per file, read to the end of the stream.
                let got = files
                    .iter()
                    .map(|_| {
                        let mut s = TcpStream::connect(&addr).unwrap();
                        let mut v = Vec::new();
                        s.read_to_end(&mut v).unwrap();
                        v
                    })
                    .collect();
                let r = h.join().unwrap().unwrap();
                assert!(r.raw);
                assert_eq!(r.sizes, sizes);
                // No hash before the bytes (the receiver would wait a whole pass) and none
                // claimed: a raw stream carries none.
                for f in &r.files {
                    assert!(f.blake3.is_empty(), "{}: {}", f.name, f.blake3);
                    assert_eq!(f.hash_time, Duration::ZERO);
                }
                got
            });
            for (f, g) in files.iter().zip(&got) {
                assert!(
                    std::fs::read(f).unwrap() == *g,
                    "{} {sizes:?} {f:?}: {} bytes came",
                    method.name(),
                    g.len()
                );
            }
        }
    }
}

/// A plain program that sends each file's bytes on its own connection and closes it.
fn plain_sender(data: Vec<Vec<u8>>) -> (String, JoinHandle<()>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    let h = std::thread::spawn(move || {
        for d in data {
            let (mut s, _) = l.accept().unwrap();
            s.write_all(&d).unwrap();
        }
    });
    (addr, h)
}

#[test]
fn a_raw_receiver_stores_what_a_plain_socket_writer_sends() {
    let src = tempfile::tempdir().unwrap();
    let files = shapes(src.path());
    let data: Vec<Vec<u8>> = files.iter().map(|f| std::fs::read(f).unwrap()).collect();
    // Every size with the received bytes hashed, and the default sizes with --no-hash.
    let cases = SIZES
        .iter()
        .map(|s| (*s, false))
        .chain([(ChunkSizes::default(), true)]);
    for method in RecvMethod::ALL {
        for (sizes, no_hash) in cases.clone() {
            let out = tempfile::tempdir().unwrap();
            let names: Vec<PathBuf> = (0..files.len())
                .map(|i| out.path().join(format!("got{i}")))
                .collect();
            let (addr, h) = plain_sender(data.clone());
            let r = receive(&{
                let mut it = RecvConfig::new(addr, out.path().into(), method);
                it.link.raw = true;
                it.no_hash = no_hash;
                it.names = names.clone();
                it.link.sizes = sizes;
                it.link.pace.idle = Duration::from_secs(10);
                it
            })
            .unwrap();
            h.join().unwrap();
            assert!(r.raw);
            for (i, d) in data.iter().enumerate() {
                let stored = std::fs::read(&names[i]).unwrap();
                assert!(
                    stored == *d,
                    "{} {sizes:?} file {i}: {} of {} bytes",
                    method.name(),
                    stored.len(),
                    d.len()
                );
                assert_eq!(r.files[i].bytes, d.len() as u64);
                // With --no-hash no hash is computed, and none is claimed.
                let want = if no_hash {
                    String::new()
                } else {
                    blake3::hash(d).to_hex().to_string()
                };
                assert_eq!(
                    r.files[i].blake3,
                    want,
                    "{} no_hash {no_hash}",
                    method.name()
                );
            }
            assert_eq!(
                std::fs::read_dir(out.path()).unwrap().count(),
                files.len(),
                "no temporary files left"
            );
        }
    }
    // Only a raw stream may go unhashed: with a header the bytes are always verified.
    iolab()
        .args(["recv", "x", "--no-hash", "--connect", "127.0.0.1:9"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("--raw"));
}

#[test]
fn a_raw_stream_longer_than_allowed_is_refused_and_leaves_nothing() {
    for method in RecvMethod::ALL {
        let out = tempfile::tempdir().unwrap();
        let (addr, h) = plain_sender(vec![bytes(50_000, 7)]);
        let err = receive(&{
            let mut it = RecvConfig::new(addr, out.path().into(), method);
            it.link.raw = true;
            it.names = vec![out.path().join("x")];
            it.max_size = Some(10_000);
            it.link.sizes = ChunkSizes::CLASSIC;
            it.link.pace.idle = Duration::from_secs(10);
            it
        })
        .unwrap_err();
        let _ = h.join();
        assert!(
            err.to_string().contains("more than the 10000 allowed"),
            "{err}"
        );
        assert_eq!(
            std::fs::read_dir(out.path()).unwrap().count(),
            0,
            "{}: nothing kept",
            method.name()
        );
    }
}

fn spawn(c: &mut Command) -> JoinHandle<Output> {
    let child = c
        .env_remove("IOLAB_NO_ROOT")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::spawn(move || child.wait_with_output().unwrap())
}

fn bin() -> Command {
    Command::new(assert_cmd::cargo::cargo_bin("iolab"))
}

fn free_port() -> String {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
        .to_string()
}

#[test]
fn master_and_slave_speak_raw_with_nc_both_ways() {
    if !have("nc") {
        return skip(Lack::Setup, "nc is not installed (Debian: netcat-openbsd)");
    }
    let dir = tempfile::tempdir().unwrap();
    let data = bytes(1_000_003, 11);
    let f = write_file(dir.path(), "src.bin", &data);
    // nc sends (listening, as the course's master did); the iolab slave receives with mmap,
    // growing the file window by window.
    let port = free_port();
    let nc = spawn(
        Command::new("nc")
            .args(["-N", "-l", "127.0.0.1", &port])
            .stdin(std::fs::File::open(&f).unwrap()),
    );
    let o = iolab()
        .current_dir(dir.path())
        .args([
            "slave",
            "fromnc",
            "mmap",
            "127.0.0.1",
            "--raw",
            "--port",
            &port,
        ])
        .args(["--classic-sizes", "--timeout", "10s"])
        .output()
        .unwrap();
    let _ = nc.join();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(std::fs::read(dir.path().join("fromnc")).unwrap() == data);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.trim_end().ends_with(", File size: 1000003 bytes") && text.lines().count() == 1,
        "{text}"
    );
    // The iolab master sends; nc receives to the end of the stream.
    let port = free_port();
    let master = spawn(
        bin()
            .current_dir(dir.path())
            .args(["master", "src.bin", "fcntl", "--raw", "--port", &port]),
    );
    let mut got = Vec::new();
    for _ in 0..100 {
        let o = Command::new("nc")
            .args(["-d", "127.0.0.1", &port])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        if o.status.success() {
            got = o.stdout;
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let m = master.join().unwrap();
    assert!(m.status.success(), "{}", String::from_utf8_lossy(&m.stderr));
    assert!(got == data, "nc received {} bytes", got.len());
}

/// Starts `iolab master WORDS --port P` and runs `iolab slave WORDS 127.0.0.1 --port P FLAGS` in
/// `dir`/out.
fn master_slave(dir: &Path, master: &[&str], slave: &[&str]) -> (Output, Output) {
    master_slave_with(dir, master, slave, &[])
}

fn master_slave_with(
    dir: &Path,
    master: &[&str],
    slave: &[&str],
    flags: &[&str],
) -> (Output, Output) {
    let port = free_port();
    let m = spawn(bin().current_dir(dir).arg("master").args(master).args([
        "--port",
        &port,
        "--timeout",
        "10s",
    ]));
    let out = dir.join("out");
    std::fs::create_dir_all(&out).unwrap();
    let s = iolab()
        .current_dir(&out)
        .arg("slave")
        .args(slave)
        .args(["127.0.0.1", "--port", &port, "--timeout", "10s"])
        .args(flags)
        .output()
        .unwrap();
    (m.join().unwrap(), s)
}

fn names_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn the_slave_writes_exactly_the_n_files_it_names() {
    let dir = tempfile::tempdir().unwrap();
    write_file(dir.path(), "a", b"first");
    write_file(dir.path(), ".bash_profile", b"echo hostile");
    // More files than named: the extra one is refused, not written under its own name.
    let (_, s) = master_slave(
        dir.path(),
        &["2", "a", ".bash_profile", "fcntl"],
        &["1", "x1", "fcntl"],
    );
    assert_eq!(
        s.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&s.stderr)
    );
    assert!(String::from_utf8_lossy(&s.stderr).contains("only 1 were named"));
    assert_eq!(names_in(&dir.path().join("out")), ["x1"]);
    std::fs::remove_dir_all(dir.path().join("out")).unwrap();
    // Fewer: an error, and no x2.
    let (_, s) = master_slave(dir.path(), &["1", "a", "mmap"], &["2", "x1", "x2", "mmap"]);
    assert_eq!(
        s.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&s.stderr)
    );
    assert!(
        String::from_utf8_lossy(&s.stderr).contains("where 2 were named"),
        "{}",
        String::from_utf8_lossy(&s.stderr)
    );
    assert_eq!(names_in(&dir.path().join("out")), ["x1"]);
}

#[test]
fn the_2019_one_file_form_prints_one_course_line_per_side() {
    let dir = tempfile::tempdir().unwrap();
    let data = bytes(12_345, 5);
    write_file(dir.path(), "in.txt", &data);
    let (m, s) = master_slave(dir.path(), &["in.txt", "mmap"], &["got.txt", "fcntl"]);
    for (who, o) in [("master", &m), ("slave", &s)] {
        assert!(
            o.status.success(),
            "{who}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let text = String::from_utf8_lossy(&o.stdout).into_owned();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 1, "{who}: {text}");
        let (ms, rest) = lines[0]
            .strip_prefix("Transmission time: ")
            .and_then(|l| l.split_once(" ms, File size: "))
            .unwrap_or_else(|| panic!("{who}: {text}"));
        assert_eq!(rest, "12345 bytes");
        assert_eq!(ms.split('.').nth(1).map(str::len), Some(6), "%lf: {ms}");
    }
    assert!(std::fs::read(dir.path().join("out/got.txt")).unwrap() == data);
    // --verbose adds the totals, on their own line.
    let (_, s) = master_slave_with(
        dir.path(),
        &["in.txt", "fcntl"],
        &["again.txt", "fcntl"],
        &["-v"],
    );
    let text = String::from_utf8_lossy(&s.stdout);
    assert!(
        text.lines()
            .nth(1)
            .is_some_and(|l| l.starts_with("Total: 1 file(s), 12345 bytes")),
        "{text}"
    );
}

/// Median per-file time in ms of `n` files of 4096 bytes with `method` on both sides.
fn small_file_ms(method: &str, sizes: &[&str]) -> (f64, f64) {
    let dir = tempfile::tempdir().unwrap();
    let n = 8;
    let mut master = vec![n.to_string()];
    let mut slave = vec![n.to_string()];
    for i in 0..n {
        write_file(dir.path(), &format!("f{i}"), &bytes(4096, i as u64));
        master.push(format!("f{i}"));
        slave.push(format!("g{i}"));
    }
    master.push(method.into());
    slave.push(method.into());
    master.extend(sizes.iter().map(|s| s.to_string()));
    master.extend(["--format".into(), "json".into()]);
    let mut flags: Vec<&str> = vec!["--format", "json"];
    flags.extend(sizes);
    let m: Vec<&str> = master.iter().map(|s| s.as_str()).collect();
    let s: Vec<&str> = slave.iter().map(|s| s.as_str()).collect();
    let (mo, so) = master_slave_with(dir.path(), &m, &s, &flags);
    let median = |o: &Output| {
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let mut t: Vec<f64> = v["files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["time"].as_f64().unwrap() * 1e3)
            .collect();
        t.sort_by(f64::total_cmp);
        t[t.len() / 2]
    };
    (median(&mo), median(&so))
}

#[test]
fn a_small_fcntl_file_costs_the_same_order_as_mmap() {
    // The window holds the transfer only: no buffer set-up inside it. Before, a 4096-byte fcntl
    // file took 50x mmap's time (a 1 MiB buffer made and touched per file). A generous bound:
    // this is a shared machine.
    for sizes in [&[][..], &["--classic-sizes"][..]] {
        let (fm, fs) = small_file_ms("fcntl", sizes);
        let (mm, ms) = small_file_ms("mmap", sizes);
        for (who, f, m) in [("master", fm, mm), ("slave", fs, ms)] {
            assert!(
                f < 10.0 * m + 0.2,
                "{who} {sizes:?}: fcntl {f:.4} ms vs mmap {m:.4} ms per 4096-byte file"
            );
        }
    }
}

#[test]
fn sizes_and_page_descriptors_are_shown() {
    let dir = tempfile::tempdir().unwrap();
    let data = bytes(3 * 4096 + 100, 9);
    let f = write_file(dir.path(), "f", &data);
    for no_root in [false, true] {
        if !no_root && !is_root() {
            skip(Lack::Setup, "the run as root needs root");
            continue;
        }
        let port = free_port();
        let mut c = bin();
        c.args(["send", f.to_str().unwrap(), "--raw", "--method", "mmap"])
            .args([
                "--classic-sizes",
                "--pages",
                "--format",
                "json",
                "--port",
                &port,
            ]);
        if no_root {
            c.env("IOLAB_NO_ROOT", "1");
        }
        let sender = std::thread::spawn(move || c.output().unwrap());
        let mut got = Vec::new();
        for _ in 0..200 {
            if let Ok(mut s) = TcpStream::connect(format!("127.0.0.1:{port}")) {
                s.read_to_end(&mut got).unwrap();
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let o = sender.join().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert!(got == data);
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(v["sizes"]["chunk"], 512);
        assert_eq!(v["sizes"]["map_size"], 8192);
        assert_eq!(v["raw"], true);
        let pages = v["files"][0]["pages"].as_array().unwrap();
        assert_eq!(pages.len(), 4, "one descriptor per page of the file");
        let offsets: Vec<u64> = pages
            .iter()
            .map(|p| p["offset"].as_u64().unwrap())
            .collect();
        assert_eq!(offsets, [0, 4096, 8192, 12288]);
        if no_root {
            assert!(
                pages
                    .iter()
                    .all(|p| p["pfn"] == 0 && p["flags"].as_array().unwrap().is_empty())
            );
            assert!(
                v["pages_note"].as_str().unwrap().contains("not root"),
                "{v}"
            );
        } else {
            assert!(pages.iter().all(|p| p["pfn"].as_u64().unwrap() > 0), "{v}");
            assert!(
                pages
                    .iter()
                    .all(|p| p["flags"].as_array().unwrap().iter().any(|f| f == "MMAP"))
            );
            assert!(v.get("pages_note").is_none());
        }
    }
}

#[test]
fn bad_sizes_and_raw_combinations_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let f = write_file(dir.path(), "f", b"abc");
    let f = f.to_str().unwrap();
    let tok = write_file(dir.path(), "tok", b"t\n");
    let tok = tok.to_str().unwrap();
    for (args, needle) in [
        (
            vec!["send", f, "--map-size", "1000"],
            "whole number of 4096-byte pages",
        ),
        (vec!["send", f, "--chunk", "0"], "at least 1 byte"),
        (
            vec!["send", f, "--raw", "--connections", "2"],
            "one connection per file",
        ),
        (
            vec!["send", f, "--raw", "--token-file", tok],
            "no handshake",
        ),
        (vec!["recv", "--raw"], "needs the output names"),
        (
            vec!["send", f, "--classic-sizes", "--chunk", "4K"],
            "cannot be used with",
        ),
        (vec!["master", "2", f, "mmap"], "N = 2 needs 4 words"),
        (vec!["master", f, "copy"], "fcntl or mmap"),
    ] {
        let o = iolab().args(&args).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(needle), "{args:?}: {err}");
        assert_eq!(
            err.trim_end().lines().count(),
            1,
            "{args:?}: one line: {err}"
        );
    }
}

/// With the course's sizes, the mmap master sends each 8192-byte window in one call, as the
/// course's device sent its buffer in one kernel send (it sent 512-byte pieces: 942 sends for 59
/// windows of a 482,456-byte file), and fcntl still moves 512 bytes per call.
#[test]
fn classic_sizes_send_each_mapped_window_in_one_call() {
    if !have("strace") {
        return skip(Lack::Setup, "strace is not installed");
    }
    let dir = tempfile::tempdir().unwrap();
    let size = 482_456usize;
    let data = bytes(size, 31);
    write_file(dir.path(), "in.bin", &data);
    let windows = size.div_ceil(8192);
    let log = dir.path().join("strace.log");
    for (method, want_len, want_calls) in [("mmap", 8192, size / 8192), ("fcntl", 512, size / 512)]
    {
        let port = free_port();
        let m = spawn(
            Command::new("strace")
                .current_dir(dir.path())
                .args([
                    "-f",
                    "-qq",
                    "-s",
                    "0",
                    "-e",
                    "trace=sendto,sendmsg,write",
                    "-o",
                ])
                .arg(&log)
                .arg(assert_cmd::cargo::cargo_bin("iolab"))
                .args(["master", "1", "in.bin", method, "--classic-sizes"])
                .args(["--port", &port, "--timeout", "10s"]),
        );
        let out = dir.path().join(format!("out-{method}"));
        std::fs::create_dir_all(&out).unwrap();
        let s = iolab()
            .current_dir(&out)
            .args([
                "slave",
                "1",
                "got.bin",
                method,
                "127.0.0.1",
                "--classic-sizes",
            ])
            .args(["--port", &port, "--timeout", "10s"])
            .output()
            .unwrap();
        let m = m.join().unwrap();
        if !m.status.success() && String::from_utf8_lossy(&m.stderr).contains("ptrace") {
            return skip(Lack::Setup, &String::from_utf8_lossy(&m.stderr));
        }
        assert!(m.status.success(), "{}", String::from_utf8_lossy(&m.stderr));
        assert!(s.status.success(), "{}", String::from_utf8_lossy(&s.stderr));
        assert!(std::fs::read(out.join("got.bin")).unwrap() == data);
        // Each call's asked length: `sendto(5, ""..., 8192, MSG_NOSIGNAL, NULL, 0) = 8192`.
        let text = std::fs::read_to_string(&log).unwrap();
        let lens: Vec<usize> = text
            .lines()
            .filter(|l| l.contains("sendto(") || l.contains("write("))
            .filter_map(|l| {
                l.split("..., ")
                    .nth(1)?
                    .split(',')
                    .next()?
                    .trim()
                    .parse()
                    .ok()
            })
            .collect();
        let full = lens.iter().filter(|&&n| n == want_len).count();
        assert_eq!(full, want_calls, "{method}: asked lengths {lens:?}");
        if method == "mmap" {
            assert_eq!(windows, 59);
            assert!(!lens.contains(&512), "{lens:?}");
            // The short last window in one call too.
            assert!(lens.contains(&(size % 8192)), "{lens:?}");
        }
    }
}
