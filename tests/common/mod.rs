//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// The binary, with none of iolab's environment switches set and a generous timeout.
pub fn iolab() -> assert_cmd::Command {
    let mut c = assert_cmd::Command::cargo_bin("iolab").unwrap();
    c.env_remove("IOLAB_NO_ROOT")
        .env_remove("IOLAB_TOKEN")
        .timeout(std::time::Duration::from_secs(300));
    c
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
