//! One file's bytes by each sender method: read and send, a mapping sent window by window,
//! sendfile, splice.

use super::*;

/// Sends one file's bytes; returns the time of the transfer alone (set-up before the clock, the
/// page walk of `--pages` taken out) and the page descriptors asked for.
pub(super) fn send_content(
    sock: &mut TcpStream,
    f: &Outgoing,
    cfg: &SendConfig,
    gear: &mut Gear,
    peer: &str,
) -> Result<(Duration, Vec<PageDesc>)> {
    let mut pages = Vec::new();
    if f.size == 0 {
        return Ok((Duration::ZERO, pages));
    }
    let fail = |e: std::io::Error| {
        Error::failed(
            "send failed",
            format!("{}: {}", f.name, protocol::timeout_text(&e)),
        )
        .on(peer)
    };
    let shrank =
        || Error::failed("send failed", format!("{} shrank while sending", f.name)).at(&f.path);
    let chunk = cfg.sizes.chunk;
    let pace = cfg.pace();
    let begun = Instant::now();
    let mut sent = 0u64;
    let mut paused = Duration::ZERO;
    let mut walk = |addr: usize, len: usize, off: u64, pages: &mut Vec<PageDesc>| {
        if cfg.pages {
            let t = Instant::now();
            if let Ok(p) = describe_range(addr, len, off) {
                pages.extend(p);
            }
            paused += t.elapsed();
        }
    };
    let t;
    match cfg.method {
        SendMethod::Read => {
            t = Instant::now();
            let buf = gear.buf.as_mut_slice();
            let mut off = 0u64;
            while off < f.size {
                let want = (f.size - off).min(chunk as u64) as usize;
                let n = crate::engine::pread_full(&f.file, &mut buf[..want], off).map_err(fail)?;
                if n < want {
                    return Err(shrank());
                }
                put(sock, &buf[..n], &pace, begun, &mut sent).map_err(fail)?;
                off += n as u64;
            }
        }
        SendMethod::Mmap => match cfg.sizes.map_size {
            None => {
                // The whole file in one mapping, made before the clock; the chunk is the size of
                // each send from it.
                let map = Mapping::new(&f.file, f.size as usize, false)
                    .map_err(|e| Error::failed("cannot map", describe_io(&e)).at(&f.path))?;
                t = Instant::now();
                for part in map.as_slice().chunks(chunk) {
                    put(sock, part, &pace, begun, &mut sent).map_err(fail)?;
                }
                walk(map.addr(), map.len(), 0, &mut pages);
                if map.sigbus_hits() > 0 {
                    return Err(Error::failed(
                        "send failed",
                        "the file was truncated while mapped",
                    )
                    .at(&f.path));
                }
            }
            Some(window) => {
                // The course's way: map a window, send it whole in one call (its device sent
                // its buffer in one kernel send), unmap, next: the mapping is the method's cost,
                // inside the clock.
                t = Instant::now();
                let mut off = 0u64;
                while off < f.size {
                    let len = (f.size - off).min(window as u64) as usize;
                    let map = Mapping::window(&f.file, off, len)
                        .map_err(|e| Error::failed("cannot map", describe_io(&e)).at(&f.path))?;
                    put(sock, map.as_slice(), &pace, begun, &mut sent).map_err(fail)?;
                    walk(map.addr(), len, off, &mut pages);
                    if map.sigbus_hits() > 0 {
                        return Err(Error::failed(
                            "send failed",
                            "the file was truncated while mapped",
                        )
                        .at(&f.path));
                    }
                    off += len as u64;
                }
            }
        },
        SendMethod::Sendfile => {
            // The kernel moves it: up to 1 GiB per call, whatever --chunk says.
            t = Instant::now();
            let mut off = 0u64;
            while off < f.size {
                let len = (f.size - off).min(1 << 30) as usize;
                let n = crate::sys::net::sendfile(sock, &f.file, &mut off, len).map_err(fail)?;
                if n == 0 {
                    return Err(shrank());
                }
                pace.check(off, begun).map_err(fail)?;
            }
        }
        SendMethod::Splice => {
            let Some((r, w)) = gear.pipe.as_ref() else {
                return Err(Error::failed("send failed", "no pipe for splice"));
            };
            t = Instant::now();
            let mut off = 0u64;
            while off < f.size {
                let len = (f.size - off).min(chunk as u64) as usize;
                let n =
                    crate::sys::net::splice(&f.file, Some(&mut off), w, None, len).map_err(fail)?;
                if n == 0 {
                    return Err(shrank());
                }
                let mut left = n;
                while left > 0 {
                    let m = crate::sys::net::splice(r, None, sock, None, left).map_err(fail)?;
                    if m == 0 {
                        return Err(Error::failed(
                            "send failed",
                            "the receiver closed the connection",
                        )
                        .on(peer));
                    }
                    left -= m;
                }
                pace.check(off, begun).map_err(fail)?;
            }
        }
    }
    Ok((t.elapsed().saturating_sub(paused), pages))
}
