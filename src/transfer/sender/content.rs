//! One file's bytes by each sender method: read and send, a mapping sent window by window,
//! sendfile, splice.

use super::*;

/// Sends one file's bytes; returns the time of the transfer alone (set-up before the clock, the
/// page walk of `--pages` taken out) and the page descriptors asked for. With `inline`, the
/// read and mmap methods feed it each piece just before sending it (still in the CPU's
/// caches); the others, whose bytes never pass through this process, leave it untouched.
pub(super) fn send_content(
    sock: &mut TcpStream,
    f: &Outgoing,
    cfg: &SendConfig,
    gear: &mut SendGear,
    peer: &str,
    inline: Option<&mut Inline>,
) -> Result<(Duration, Vec<PageDesc>)> {
    if f.size == 0 {
        return Ok((Duration::ZERO, Vec::new()));
    }
    let mut s = Sending {
        sock,
        f,
        cfg,
        peer,
        pace: cfg.link.pace,
        begun: Instant::now(),
        sent: 0,
        paused: Duration::ZERO,
        pages: Vec::new(),
        inline,
    };
    let t = match (cfg.method, cfg.link.sizes.map_size) {
        (SendMethod::Read, _) => s.by_read(gear)?,
        (SendMethod::Mmap, None) => s.by_mapping()?,
        (SendMethod::Mmap, Some(window)) => s.by_windows(window)?,
        (SendMethod::Sendfile, _) => s.by_sendfile()?,
        (SendMethod::Splice, _) => s.by_splice(gear)?,
    };
    Ok((t.elapsed().saturating_sub(s.paused), s.pages))
}

/// One file being sent: where to, what is allowed, what has gone, and the time taken out.
struct Sending<'a> {
    sock: &'a mut TcpStream,
    f: &'a Outgoing,
    cfg: &'a SendConfig,
    peer: &'a str,
    pace: Pace,
    begun: Instant,
    sent: u64,
    /// The page walk of `--pages`, taken out of the time.
    paused: Duration,
    pages: Vec<PageDesc>,
    /// Where the bytes are hashed as they pass, if here.
    inline: Option<&'a mut Inline>,
}

impl Sending<'_> {
    fn fail(&self, e: std::io::Error) -> Error {
        Error::failed(
            "send failed",
            format!("{}: {}", self.f.name, protocol::timeout_text(&e)),
        )
        .on(self.peer)
    }

    fn shrank(&self) -> Error {
        Error::failed(
            "send failed",
            format!("{} shrank while sending", self.f.name),
        )
        .at(&self.f.path)
    }

    fn cannot_map(&self, e: std::io::Error) -> Error {
        Error::failed("cannot map", describe_io(&e)).at(&self.f.path)
    }

    /// Hashes `data` if the bytes are hashed as they pass.
    fn hash(&mut self, data: &[u8]) {
        if let Some(h) = self.inline.as_deref_mut() {
            h.update(data);
        }
    }

    /// Writes all of `data`, paced.
    fn put(&mut self, data: &[u8]) -> Result<()> {
        put(self.sock, data, &self.pace, self.begun, &mut self.sent).map_err(|e| self.fail(e))
    }

    /// With `--pages`, the descriptors of a mapped range, outside the time.
    fn walk(&mut self, map: &Mapping, off: u64) -> Result<()> {
        if self.cfg.link.pages {
            let t = Instant::now();
            if let Ok(p) = describe_range(map.addr(), map.len(), off) {
                self.pages.extend(p);
            }
            self.paused += t.elapsed();
        }
        if map.sigbus_hits() > 0 {
            return Err(
                Error::failed("send failed", "the file was truncated while mapped")
                    .at(&self.f.path),
            );
        }
        Ok(())
    }

    /// read(2) a chunk into the connection's buffer, send it, next.
    fn by_read(&mut self, gear: &mut SendGear) -> Result<Instant> {
        let t = Instant::now();
        let chunk = self.cfg.link.sizes.chunk as u64;
        let mut off = 0u64;
        while off < self.f.size {
            let want = (self.f.size - off).min(chunk) as usize;
            let buf = &mut gear.buf.as_mut_slice()[..want];
            let n = crate::engine::pread_full(&self.f.file, buf, off).map_err(|e| self.fail(e))?;
            if n < want {
                return Err(self.shrank());
            }
            self.hash(&buf[..n]);
            put(self.sock, &buf[..n], &self.pace, self.begun, &mut self.sent)
                .map_err(|e| self.fail(e))?;
            off += n as u64;
        }
        Ok(t)
    }

    /// The whole file in one mapping, made before the clock; the chunk is the size of each send
    /// from it.
    fn by_mapping(&mut self) -> Result<Instant> {
        let map = Mapping::new(&self.f.file, self.f.size as usize, false)
            .map_err(|e| self.cannot_map(e))?;
        let t = Instant::now();
        for part in map.as_slice().chunks(self.cfg.link.sizes.chunk) {
            self.hash(part);
            self.put(part)?;
        }
        self.walk(&map, 0)?;
        Ok(t)
    }

    /// The course's way: map a window, send it whole in one call (its device sent its buffer in
    /// one kernel send), unmap, next: the mapping is the method's cost, inside the clock.
    fn by_windows(&mut self, window: usize) -> Result<Instant> {
        let t = Instant::now();
        let mut off = 0u64;
        while off < self.f.size {
            let len = (self.f.size - off).min(window as u64) as usize;
            let map = Mapping::window(&self.f.file, off, len).map_err(|e| self.cannot_map(e))?;
            self.hash(map.as_slice());
            self.put(map.as_slice())?;
            self.walk(&map, off)?;
            off += len as u64;
        }
        Ok(t)
    }

    /// The kernel moves it: up to 1 GiB per call, whatever `--chunk` says.
    fn by_sendfile(&mut self) -> Result<Instant> {
        let t = Instant::now();
        let mut off = 0u64;
        while off < self.f.size {
            let len = (self.f.size - off).min(1 << 30) as usize;
            let n = crate::sys::net::sendfile(&*self.sock, &self.f.file, &mut off, len)
                .map_err(|e| self.fail(e))?;
            if n == 0 {
                return Err(self.shrank());
            }
            self.pace.check(off, self.begun).map_err(|e| self.fail(e))?;
        }
        Ok(t)
    }

    /// The file into the connection's pipe, the pipe into the socket, a chunk at a time.
    fn by_splice(&mut self, gear: &mut SendGear) -> Result<Instant> {
        let Some((r, w)) = gear.pipe.as_ref() else {
            return Err(Error::failed("send failed", "no pipe for splice"));
        };
        let t = Instant::now();
        let chunk = self.cfg.link.sizes.chunk as u64;
        let mut off = 0u64;
        while off < self.f.size {
            let len = (self.f.size - off).min(chunk) as usize;
            let n = crate::sys::net::splice(&self.f.file, Some(&mut off), w, None, len)
                .map_err(|e| self.fail(e))?;
            if n == 0 {
                return Err(self.shrank());
            }
            let mut left = n;
            while left > 0 {
                let m = crate::sys::net::splice(r, None, &*self.sock, None, left)
                    .map_err(|e| self.fail(e))?;
                if m == 0 {
                    return Err(
                        Error::failed("send failed", "the receiver closed the connection")
                            .on(self.peer),
                    );
                }
                left -= m;
            }
            self.pace.check(off, self.begun).map_err(|e| self.fail(e))?;
        }
        Ok(t)
    }
}
