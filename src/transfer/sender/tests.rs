use super::{HASH_PARALLEL_FROM, hash_file};
use std::io::Write;

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
