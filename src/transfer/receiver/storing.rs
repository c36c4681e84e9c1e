//! Storing one incoming file by each receiver method (write, mmap; splice in splice.rs): into a
//! nameless file that is linked in place only when complete and verified, within --max-size.

use super::splice::recv_splice;
use super::*;

pub(super) fn store(
    sock: &mut TcpStream,
    session: &mut Session,
    inc: &Incoming,
    index: usize,
    cfg: &RecvConfig,
    peer: &str,
    gear: &mut RecvGear,
) -> Result<FileRecord> {
    let dest = cfg
        .names
        .get(index)
        .cloned()
        .unwrap_or_else(|| cfg.out_dir.join(&inc.name));
    // Where it goes, by handle: --out opened once, or the directory of a name the user gave.
    let place = if cfg.discard {
        None
    } else {
        Some(output_dir(cfg, index, &dest, gear)?)
    };
    let max = match (cfg.max_size, &place) {
        (Some(m), _) => m,
        (None, None) => u64::MAX,
        (None, Some((dir, _))) => dir.free_bytes().unwrap_or(u64::MAX),
    };
    if let Some(size) = inc.size.filter(|s| *s > max) {
        return Err(too_big(&inc.name, max, peer, Some(size)));
    }
    let record = |got: u64, hash: [u8; 32], method: &str, time: Duration, verify: Duration| {
        let h = Header {
            name: inc.name.clone(),
            size: got,
        };
        FileRecord::new(&h, &hash, method, time, verify)
    };
    if cfg.discard {
        let (got, hash, time) = discard(sock, inc, max, gear, peer)?;
        let sent = expected(sock, session, inc, peer)?;
        check_hash(inc, sent, &hash, peer)?;
        return Ok(record(got, hash, "discard", time, Duration::ZERO));
    }
    claim(gear, &dest, inc, peer)?;
    let Some((dir, name)) = place else {
        return Err(Error::failed("receive failed", "no output directory"));
    };
    if !cfg.force && dir.exists(&name) {
        return Err(crate::output::exists(&dest));
    }
    let tmp = crate::output::temp_path(&dest, &index.to_string())?
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_default();
    let (file, mut partial, _tracked) = create_output(&dir, &tmp, &dest)?;
    let hash_it = hashes(cfg, inc);
    let stored = match cfg.method {
        RecvMethod::Write => recv_write(sock, &file, inc, max, gear, peer, hash_it)?,
        RecvMethod::Mmap => recv_mmap(sock, &file, inc, max, cfg, peer, &dest)?,
        RecvMethod::Splice => recv_splice(sock, &file, inc, max, cfg, gear, peer)?,
    };
    if cfg.sync {
        file.sync_all()
            .map_err(|e| Error::io("fsync failed", &dest, &e))?;
    }
    let time = stored.start.elapsed().saturating_sub(stored.paused);
    let sent = expected(sock, session, inc, peer).map_err(|e| e.at(&dest))?;
    let v = Instant::now();
    let hash = match stored.hash {
        Some(h) => Some(h),
        None if hash_it => Some(
            crate::transfer::sender::hash_file(&file, stored.got)
                .map_err(|e| Error::io("verify failed", &dest, &e))?,
        ),
        None => None,
    };
    let verify = v.elapsed() + stored.hash_time;
    if let Some(hash) = &hash {
        check_hash(inc, sent, hash, peer).map_err(|e| e.at(&dest))?;
    }
    put_in_place(&dir, &file, &mut partial, &tmp, &name, cfg.force)
        .map_err(|e| crate::output::not_placed(&dest, e))?;
    let mut rec = record(
        stored.got,
        hash.unwrap_or_default(),
        cfg.method.name(),
        time,
        verify,
    );
    if hash.is_none() {
        // Not computed (--no-hash): said as nothing, never as the hash of zeros.
        rec.blake3.clear();
    }
    rec.pages = stored.pages;
    Ok(rec)
}

/// Claims `dest` for this transfer: a sender that sends a second file of one name is refused
/// (only the first is kept).
fn claim(gear: &RecvGear, dest: &Path, inc: &Incoming, peer: &str) -> Result<()> {
    let fresh = gear
        .claimed
        .lock()
        .map(|mut c| c.insert(dest.to_path_buf()))
        .unwrap_or(true);
    if fresh {
        return Ok(());
    }
    Err(Error::failed(
        "refused",
        format!(
            "the sender sent a second file named {}; only the first is kept",
            inc.name
        ),
    )
    .on(peer))
}

/// `--discard`: the bytes hashed as they come and dropped; what came, its hash, the time.
fn discard(
    sock: &mut TcpStream,
    inc: &Incoming,
    max: u64,
    gear: &mut RecvGear,
    peer: &str,
) -> Result<(u64, [u8; 32], Duration)> {
    let mut hasher = blake3::Hasher::new();
    let t = Instant::now();
    let got = pump(sock, gear.buf.as_mut_slice(), inc, max, peer, |b| {
        hasher.update(b);
        Ok(())
    })?;
    let time = t.elapsed();
    Ok((got, *hasher.finalize().as_bytes(), time))
}

/// The file a transfer stores into: unnamed (O_TMPFILE) where the file system can, so that until
/// it is linked in place it has no name and nothing is left even if the process is killed
/// outright; else a new file named `tmp`, removed on failure (the returned [`PartialFile`]) and on
/// interrupts (the tracked name).
fn create_output(
    dir: &Arc<Dir>,
    tmp: &std::ffi::OsStr,
    dest: &Path,
) -> Result<(File, Option<PartialFile>, Option<crate::output::Partial>)> {
    if let Some(f) = dir.create_unnamed() {
        return Ok((f, None, None));
    }
    let tracked = crate::output::track(&dir.handle_path(tmp));
    let f = dir
        .create_new(tmp)
        .map_err(|e| Error::io("cannot create", dest, &e))?;
    let partial = PartialFile {
        dir: dir.clone(),
        name: tmp.to_os_string(),
        keep: false,
    };
    Ok((f, Some(partial), Some(tracked)))
}

/// Puts the stored file at `name`: the named temporary renamed (then kept), or the unnamed file
/// linked (with `force`, linked beside and renamed over what is there).
fn put_in_place(
    dir: &Dir,
    file: &File,
    partial: &mut Option<PartialFile>,
    tmp: &std::ffi::OsStr,
    name: &std::ffi::OsStr,
    force: bool,
) -> std::io::Result<()> {
    match (partial, force) {
        (Some(p), _) => dir.rename(tmp, name, force).inspect(|_| p.keep = true),
        (None, false) => dir.link(file, name),
        (None, true) => dir.link(file, tmp).and_then(|_| {
            dir.rename(tmp, name, true).inspect_err(|_| {
                let _ = dir.remove(tmp);
            })
        }),
    }
}

/// The BLAKE3 the sender sent after a framed file's content (checked against this
/// connection's tag with a token), within --handshake-timeout; a raw stream has none.
fn expected(
    sock: &mut TcpStream,
    session: &mut Session,
    inc: &Incoming,
    peer: &str,
) -> Result<Option<[u8; 32]>> {
    if !inc.framed {
        return Ok(None);
    }
    let pace = inc.pace;
    let mut b = Bounded::new(&*sock, &pace, pace.handshake, "a checksum");
    let d = protocol::read_digest(&mut b, &inc.name, peer)?;
    session.open(&mut b, b"send", &d, peer)?;
    b.finish();
    Ok(Some(d))
}

/// Refuses bytes whose BLAKE3 differs from the one the sender sent (a raw stream has none to
/// check).
pub(super) fn check_hash(
    inc: &Incoming,
    sent: Option<[u8; 32]>,
    got: &[u8; 32],
    peer: &str,
) -> Result<()> {
    match sent {
        Some(h) if h != *got => Err(Error::failed(
            "checksum mismatch",
            format!(
                "{}: BLAKE3 of the received bytes differs from the sender's; not kept",
                inc.name
            ),
        )
        .on(peer)),
        _ => Ok(()),
    }
}

/// The directory handle and file name a file goes to: `--out` (opened once) for a sender's
/// name; for a name the user gave, its own directory, opened now.
pub(super) fn output_dir(
    cfg: &RecvConfig,
    index: usize,
    dest: &Path,
    gear: &RecvGear,
) -> Result<(Arc<Dir>, OsString)> {
    let name = dest
        .file_name()
        .map(|n| n.to_os_string())
        .ok_or_else(|| Error::usage("invalid output path", "it names no file").at(dest))?;
    if cfg.names.get(index).is_none()
        && let Some(out) = &gear.out
    {
        return Ok((out.clone(), name));
    }
    let parent = dest
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let dir = Dir::open(parent).map_err(|e| Error::io("cannot open", parent, &e))?;
    Ok((Arc::new(dir), name))
}

/// One read of at most `buf.len()` bytes. End of stream is the end of a raw file (0), and an
/// error naming the file when a header announced more.
pub(super) fn read_some(
    sock: &mut TcpStream,
    buf: &mut [u8],
    inc: &Incoming,
    got: u64,
    peer: &str,
) -> Result<usize> {
    loop {
        match sock.read(buf) {
            Ok(0) => {
                return match inc.size {
                    Some(size) => Err(cut_short(inc, got, size, peer)),
                    None => Ok(0),
                };
            }
            Ok(k) => {
                // A sender that drips bytes never trips the idle timeout: the floor rate does.
                inc.pace
                    .check(got + k as u64, inc.began)
                    .map_err(|e| lost(inc, got, peer, &e))?;
                return Ok(k);
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => {
                return Err(lost(inc, got, peer, &e));
            }
        }
    }
}

pub(super) fn recv_write(
    sock: &mut TcpStream,
    file: &File,
    inc: &Incoming,
    max: u64,
    gear: &mut RecvGear,
    peer: &str,
    hash_it: bool,
) -> Result<Stored> {
    let mut w = file;
    let mut h = hash_it.then(blake3::Hasher::new);
    let start = Instant::now();
    let got = pump(sock, gear.buf.as_mut_slice(), inc, max, peer, |b| {
        w.write_all(b)
            .map_err(|e| Error::failed("write failed", describe_io(&e)).on(&inc.name))?;
        if let Some(h) = &mut h {
            h.update(b);
        }
        Ok(())
    })?;
    Ok(Stored {
        hash: h.map(|h| *h.finalize().as_bytes()),
        ..Stored::plain(got, start)
    })
}

/// Moves the stream through `buf` into `sink` until the announced size, or for a raw stream
/// until the sender closes; refuses more than `max` bytes. Returns the bytes moved.
pub(super) fn pump(
    sock: &mut TcpStream,
    buf: &mut [u8],
    inc: &Incoming,
    max: u64,
    peer: &str,
    mut sink: impl FnMut(&[u8]) -> Result<()>,
) -> Result<u64> {
    let mut got = 0u64;
    loop {
        let want = want(inc, got, buf.len());
        if want == 0 {
            return Ok(got);
        }
        let k = read_some(sock, &mut buf[..want], inc, got, peer)?;
        if k == 0 {
            return Ok(got);
        }
        sink(&buf[..k])?;
        got += k as u64;
        if got > max {
            return Err(too_big(&inc.name, max, peer, None));
        }
    }
}

/// Sizes the file to `len` bytes with its blocks allocated (so a full disk is an error here, not
/// a SIGBUS in the mapping); filesystems without fallocate are only truncated.
pub(super) fn grow(file: &File, len: u64, dest: &Path) -> Result<()> {
    match crate::sys::fallocate(file, len) {
        Ok(()) => Ok(()),
        Err(e) if e.raw_os_error() == Some(libc::EOPNOTSUPP) => file
            .set_len(len)
            .map_err(|e| Error::io("write failed", dest, &e)),
        Err(e) => Err(Error::io("write failed", dest, &e)),
    }
}

/// Fills `map` by reads of at most `step` bytes; returns the bytes stored, fewer than the
/// window only at the end of a raw stream.
pub(super) fn fill(
    sock: &mut TcpStream,
    map: &mut WritableMapping,
    step: usize,
    inc: &Incoming,
    base: u64,
    peer: &str,
) -> Result<usize> {
    let len = map.len();
    let mut filled = 0usize;
    while filled < len {
        let end = (filled + step).min(len);
        let k = read_some(
            sock,
            &mut map.as_mut_slice()[filled..end],
            inc,
            base + filled as u64,
            peer,
        )?;
        if k == 0 {
            break;
        }
        filled += k;
    }
    if map.sigbus_hits() > 0 {
        return Err(
            Error::failed("write failed", "the mapping lost its backing (no space?)").on(&inc.name),
        );
    }
    Ok(filled)
}

pub(super) fn recv_mmap(
    sock: &mut TcpStream,
    file: &File,
    inc: &Incoming,
    max: u64,
    cfg: &RecvConfig,
    peer: &str,
    dest: &Path,
) -> Result<Stored> {
    let cannot_map = |e: std::io::Error| Error::failed("cannot map", describe_io(&e)).at(dest);
    let mut pages = Vec::new();
    let mut paused = Duration::ZERO;
    let mut walk = |map: &WritableMapping, off: u64, pages: &mut Vec<PageDesc>| {
        if cfg.link.pages {
            let t = Instant::now();
            if let Ok(p) = describe_range(map.addr(), map.len(), off) {
                pages.extend(p);
            }
            paused += t.elapsed();
        }
    };
    let step = cfg.link.sizes.chunk;
    let (got, start) = match (inc.size, cfg.link.sizes.map_size) {
        (Some(0), _) => (0, Instant::now()),
        (Some(size), None) => {
            // The whole file in one mapping, sized and made before the clock.
            grow(file, size, dest)?;
            let mut map = WritableMapping::new(file, size as usize).map_err(cannot_map)?;
            let start = Instant::now();
            fill(sock, &mut map, step, inc, 0, peer)?;
            walk(&map, 0, &mut pages);
            (size, start)
        }
        (Some(size), Some(window)) => {
            // Sized before the clock; each window mapped, filled and unmapped inside it.
            grow(file, size, dest)?;
            let start = Instant::now();
            let mut off = 0u64;
            while off < size {
                let len = (size - off).min(window as u64) as usize;
                let mut map = WritableMapping::window(file, off, len).map_err(cannot_map)?;
                fill(sock, &mut map, len, inc, off, peer)?;
                walk(&map, off, &mut pages);
                off += len as u64;
            }
            (size, start)
        }
        (None, _) => {
            // A raw stream of unknown length: grow the file window by window, as the course's
            // slave had to, and cut it to what came at the end.
            let window = cfg.link.sizes.stream_window();
            let start = Instant::now();
            let mut off = 0u64;
            loop {
                if off > max {
                    return Err(too_big(&inc.name, max, peer, None));
                }
                grow(file, off + window as u64, dest)?;
                let mut map = WritableMapping::window(file, off, window).map_err(cannot_map)?;
                let k = fill(sock, &mut map, window, inc, off, peer)?;
                walk(&map, off, &mut pages);
                drop(map);
                off += k as u64;
                if k < window {
                    break;
                }
            }
            if off > max {
                return Err(too_big(&inc.name, max, peer, None));
            }
            file.set_len(off)
                .map_err(|e| Error::io("write failed", dest, &e))?;
            (off, start)
        }
    };
    Ok(Stored {
        got,
        start,
        paused,
        pages,
        hash: None,
        hash_time: Duration::ZERO,
    })
}
