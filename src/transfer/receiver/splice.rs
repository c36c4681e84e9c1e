//! The splice receiver: socket -> pipe -> file, the file hashed behind the splicing where a
//! core is likely idle for it.

use super::follow::{StoredSoFar, follow};
use super::*;
use super::{cut_short, hashes, lost, too_big, want};

pub(super) fn recv_splice(
    sock: &mut TcpStream,
    file: &File,
    inc: &Incoming,
    max: u64,
    cfg: &RecvConfig,
    gear: &mut RecvGear,
    peer: &str,
) -> Result<Stored> {
    let Some((r, w)) = gear.pipe.as_ref() else {
        return Err(Error::failed("receive failed", "no pipe for splice"));
    };
    let (step, hash_it) = (cfg.link.sizes.chunk, hashes(cfg, inc));
    // A file of known size from 1 MiB on is hashed behind the splicing, on a thread of its own,
    // where a core is likely idle for it (smaller ones, a raw stream, or a sender sharing this
    // machine's two cores: after storing, on every core).
    let beside = hash_it
        && crate::transfer::spare_core_beside(sock)
        && inc
            .size
            .is_some_and(|s| s >= crate::transfer::sender::HASH_BESIDE_FROM);
    let progress = StoredSoFar::default();
    let splice_all = || -> Result<Stored> {
        let mut got = 0u64;
        let start = Instant::now();
        loop {
            let want = want(inc, got, step);
            if want == 0 {
                break;
            }
            let k = match crate::sys::net::splice(&*sock, None, w, None, want) {
                Ok(0) => match inc.size {
                    Some(size) => return Err(cut_short(inc, got, size, peer)),
                    None => break,
                },
                Ok(k) => k,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    return Err(lost(inc, got, peer, &e));
                }
            };
            empty_pipe(k, |left| {
                crate::sys::net::splice(r, None, file, Some(&mut got), left)
            })
            .map_err(|e| Error::io("write failed", Path::new(&inc.name), &e))?;
            progress.stored(got);
            inc.pace
                .check(got, inc.began)
                .map_err(|e| lost(inc, got, peer, &e))?;
            if got > max {
                return Err(too_big(&inc.name, max, peer, None));
            }
        }
        Ok(Stored::plain(got, start))
    };
    if !beside {
        return splice_all();
    }
    std::thread::scope(|s| {
        let hashing = s.spawn(|| {
            let cpu = crate::sys::net::rusage_thread();
            follow(file, &progress).map(|(h, busy)| (h, busy, cpu_since(&cpu)))
        });
        let stored = splice_all();
        match &stored {
            Ok(_) => progress.done(),
            Err(_) => progress.stop(),
        }
        let hashed = hashing.join();
        let mut stored = stored?;
        let (hash, busy, (user, sys)) = hashed
            .unwrap_or_else(|_| Err(std::io::Error::other("the hashing thread failed")))
            .map_err(|e| Error::io("verify failed", Path::new(&inc.name), &e))?;
        stored.hash = Some(hash);
        stored.hash_time = busy;
        gear.helpers.0 += user;
        gear.helpers.1 += sys;
        Ok(stored)
    })
}

/// Moves `k` bytes out of the pipe with `splice_out(bytes left)`, which returns how many it moved.
/// A splice that moves nothing would loop for ever: it is an error (the file cannot grow).
pub(super) fn empty_pipe(
    k: usize,
    mut splice_out: impl FnMut(usize) -> std::io::Result<usize>,
) -> std::io::Result<()> {
    let mut left = k;
    while left > 0 {
        match splice_out(left) {
            Ok(0) => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::WriteZero,
                    format!(
                        "splice into the file moved nothing with {left} bytes still in the pipe"
                    ),
                ));
            }
            Ok(m) => left -= m.min(left),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
