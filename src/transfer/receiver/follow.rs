//! Hashing a file while it is stored, behind the writer, on a thread of its own: the writer says
//! how far the file is stored, the follower maps each newly stored window of the file (the
//! pages the writer just filled, still in the CPU's caches) and hashes it. Where a core is
//! idle, the receiver's check then adds no wall time; the writer never waits for it until the
//! last byte.

use crate::sys::map::Mapping;
use std::fs::File;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Bytes the follower maps and hashes at once (a multiple of any page size).
const WINDOW: u64 = 8 << 20;

/// What the writer tells the follower.
#[derive(Default)]
pub(super) struct StoredSoFar {
    stored: AtomicU64,
    done: AtomicBool,
    stop: AtomicBool,
}

impl StoredSoFar {
    /// The file is stored up to `bytes`.
    pub(super) fn stored(&self, bytes: u64) {
        self.stored.store(bytes, Ordering::Release);
    }

    /// The file is complete at what [`StoredSoFar::stored`] last said.
    pub(super) fn done(&self) {
        self.done.store(true, Ordering::Release);
    }

    /// Storing failed: the follower gives up.
    pub(super) fn stop(&self) {
        self.stop.store(true, Ordering::Release);
    }
}

/// Hashes `file` behind the writer until it is done (or stopped): the BLAKE3 of its first
/// stored bytes and the time spent hashing (waits for the writer left out).
pub(super) fn follow(file: &File, p: &StoredSoFar) -> std::io::Result<([u8; 32], Duration)> {
    let mut h = blake3::Hasher::new();
    let mut at = 0u64;
    let mut busy = Duration::ZERO;
    loop {
        if p.stop.load(Ordering::Acquire) {
            return Err(std::io::Error::other("stopped: storing failed"));
        }
        // `done` before `stored`: once done is seen, stored is the final size.
        let done = p.done.load(Ordering::Acquire);
        let stored = p.stored.load(Ordering::Acquire);
        let end = if done {
            stored
        } else {
            stored / WINDOW * WINDOW
        };
        if end > at {
            let t = Instant::now();
            while at < end {
                let len = (end - at).min(WINDOW);
                let map = Mapping::range(file, at, len as usize, false)?;
                h.update(map.as_slice());
                if map.sigbus_hits() > 0 {
                    return Err(std::io::Error::other("the file shrank while hashing"));
                }
                at += len;
            }
            busy += t.elapsed();
            continue;
        }
        if done {
            return Ok((*h.finalize().as_bytes(), busy));
        }
        // The next window is a few milliseconds away at disk or loopback speed.
        std::thread::sleep(Duration::from_micros(200));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn the_follower_hashes_what_was_stored_as_it_grows_and_stops_when_told() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let bytes: Vec<u8> = (0..(WINDOW as usize * 2 + 12_345))
            .map(|i| (i % 251) as u8)
            .collect();
        let mut out = File::create(&path).unwrap();
        let reader = File::open(&path).unwrap();
        let p = StoredSoFar::default();
        let (hash, _) = std::thread::scope(|s| {
            let f = s.spawn(|| follow(&reader, &p));
            // Stored in uneven steps, told after each.
            let mut at = 0;
            for step in [1000, WINDOW as usize, 3, WINDOW as usize + 11_342] {
                out.write_all(&bytes[at..at + step]).unwrap();
                at += step;
                p.stored(at as u64);
                std::thread::sleep(Duration::from_millis(2));
            }
            p.done();
            f.join().unwrap().unwrap()
        });
        assert_eq!(&hash, blake3::hash(&bytes).as_bytes());
        // Told to stop: an error, not a hash of part of the file.
        let p = StoredSoFar::default();
        p.stored(5);
        p.stop();
        assert!(
            follow(&reader, &p)
                .unwrap_err()
                .to_string()
                .contains("stopped")
        );
    }
}
