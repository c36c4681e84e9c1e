use super::{HASH_BESIDE_FROM, HASH_PARALLEL_FROM, hash_beside, hash_file};
use std::io::Write;
use std::sync::atomic::AtomicBool;

fn file_of(bytes: &[u8]) -> (tempfile::NamedTempFile, std::fs::File) {
    let mut f = tempfile::NamedTempFile::new().unwrap();
    f.write_all(bytes).unwrap();
    f.flush().unwrap();
    let opened = std::fs::File::open(f.path()).unwrap();
    (f, opened)
}

#[test]
fn a_files_hash_is_blake3_of_its_bytes_on_one_core_or_all() {
    for len in [0, 4097, HASH_PARALLEL_FROM as usize - 1, 3 << 20 | 5] {
        let bytes: Vec<u8> = (0..len).map(|i| (i * 31 % 251) as u8).collect();
        let (_keep, f) = file_of(&bytes);
        let got = hash_file(&f, len as u64).unwrap();
        assert_eq!(&got, blake3::hash(&bytes).as_bytes(), "{len} bytes");
        // A prefix: only the first `size` bytes count.
        let half = len as u64 / 2;
        let got = hash_file(&f, half).unwrap();
        assert_eq!(
            &got,
            blake3::hash(&bytes[..half as usize]).as_bytes(),
            "{half} of {len}"
        );
    }
}

#[test]
fn a_file_shorter_than_its_size_is_refused_not_hashed_as_zeros() {
    // Announced 8 MiB, holds 5 MiB: the mapped path's pages past the end fault (SIGBUS, read as
    // zeros by the guard); the small path meets the end early.
    for (len, size) in [(5 << 20, 8 << 20), (1000, 4096)] {
        let (_keep, f) = file_of(&vec![7u8; len]);
        let err = hash_file(&f, size).unwrap_err();
        assert!(err.to_string().contains("shrank"), "{len}/{size}: {err}");
    }
}

#[test]
fn the_hash_beside_the_sending_is_blake3_and_stops_when_told() {
    for len in [0, 4097, HASH_BESIDE_FROM as usize, (9 << 20) + 5] {
        let bytes: Vec<u8> = (0..len).map(|i| (i * 7 % 253) as u8).collect();
        let (_keep, f) = file_of(&bytes);
        let got = hash_beside(&f, len as u64, &AtomicBool::new(false)).unwrap();
        assert_eq!(&got, blake3::hash(&bytes).as_bytes(), "{len} bytes");
    }
    // Told to stop (the send failed): no hash, an error that says why.
    let (_keep, f) = file_of(&vec![1u8; 9 << 20]);
    let err = hash_beside(&f, 9 << 20, &AtomicBool::new(true)).unwrap_err();
    assert!(err.to_string().contains("stopped"), "{err}");
    // Announced longer than it is: refused, as hash_file refuses it.
    let err = hash_beside(&f, 12 << 20, &AtomicBool::new(false)).unwrap_err();
    assert!(err.to_string().contains("shrank"), "{err}");
}

#[test]
fn read_and_mmap_senders_hash_every_piece_they_send_when_told_to() {
    use super::{Inline, Outgoing, SendConfig, SendGear, send_content};
    use crate::transfer::SendMethod;
    use std::io::Read;
    let len = (3 << 20) + 5;
    let bytes: Vec<u8> = (0..len).map(|i| (i * 13 % 241) as u8).collect();
    let (keep, _) = file_of(&bytes);
    // Read, a whole mapping, and the course's windows of 64 KiB.
    for (method, window) in [
        (SendMethod::Read, None),
        (SendMethod::Mmap, None),
        (SendMethod::Mmap, Some(64 << 10)),
    ] {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let reader = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut got = Vec::new();
            s.read_to_end(&mut got).unwrap();
            got
        });
        let mut sock = std::net::TcpStream::connect(addr).unwrap();
        let mut cfg = SendConfig::new(vec![keep.path().to_path_buf()], method);
        cfg.link.sizes.map_size = window;
        let file = std::fs::File::open(keep.path()).unwrap();
        let f = Outgoing {
            path: keep.path().to_path_buf(),
            name: "f".into(),
            version: crate::source::Version::of(&file).unwrap(),
            file,
            size: len as u64,
        };
        let mut gear = SendGear::new(&cfg).unwrap();
        let mut inline = Inline::default();
        send_content(&mut sock, &f, &cfg, &mut gear, "peer", Some(&mut inline)).unwrap();
        drop(sock);
        assert!(
            reader.join().unwrap() == bytes,
            "{method:?} {window:?}: bytes"
        );
        assert_eq!(
            inline.hasher.finalize().as_bytes(),
            blake3::hash(&bytes).as_bytes(),
            "{method:?} {window:?}: hash"
        );
    }
}
