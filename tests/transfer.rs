//! Transfers over loopback: every method pair on the classic shapes, and bad peers.

mod common;

use common::{bytes, write_file};
use iolab::transfer::receiver::{RecvConfig, receive};
use iolab::transfer::sender::{SendConfig, bind, serve};
use iolab::transfer::{RecvMethod, SendMethod};
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::time::Duration;

fn recv_cfg(addr: &str, out: &Path, method: RecvMethod) -> RecvConfig {
    RecvConfig {
        connect: addr.into(),
        out_dir: out.into(),
        names: Vec::new(),
        method,
        connections: 1,
        token: None,
        timeout: Duration::from_secs(10),
        max_size: None,
        force: false,
        sync: false,
        discard: false,
        retry: Duration::ZERO,
    }
}

fn send_cfg(files: &[PathBuf], method: SendMethod) -> SendConfig {
    SendConfig {
        files: files.to_vec(),
        method,
        connections: 1,
        token: None,
        timeout: Duration::from_secs(10),
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
                let scfg = SendConfig {
                    connections,
                    ..send_cfg(&files, s)
                };
                let rcfg = RecvConfig {
                    connections,
                    ..recv_cfg(&addr, out.path(), r)
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
    b.extend_from_slice(&[0; 32]);
    b
}

fn expect_failure(addr: &str, out: &Path, needle: &str) {
    let err = receive(&RecvConfig {
        timeout: Duration::from_millis(800),
        ..recv_cfg(addr, out, RecvMethod::Write)
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
        (
            [header(b"cut", 1000), vec![7u8; 300]].concat(),
            "after 300 of 1000 bytes",
        ),
        (header(b"cut", 1000)[..10].to_vec(), "truncated header"),
        (
            [header(b"bad", 3), b"abc".to_vec(), vec![0]].concat(),
            "checksum mismatch",
        ),
    ];
    for (bytes_out, needle) in cases {
        let (a, h) = bad_sender(move |s| {
            let _ = s.write_all(&hello(1));
            swallow_hello(s);
            let _ = s.write_all(&bytes_out);
            std::thread::sleep(Duration::from_millis(50));
        });
        expect_failure(&a, out.path(), needle);
        h.join().unwrap();
    }
    // A sender that stalls mid-file past the timeout.
    let (a, h) = bad_sender(|s| {
        let _ = s.write_all(&hello(1));
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
        let scfg = SendConfig {
            token: st.map(String::from),
            timeout: Duration::from_secs(2),
            ..send_cfg(std::slice::from_ref(&f), SendMethod::Read)
        };
        let rcfg = RecvConfig {
            token: rt.map(String::from),
            timeout: Duration::from_secs(2),
            ..recv_cfg(&addr, out.path(), RecvMethod::Write)
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
