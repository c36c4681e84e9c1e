//! A slow peer's allowance (`Pace`) and the stream that enforces it (`Bounded`): an idle timeout
//! per read or write, a handshake deadline, and a floor rate for content.

use super::*;

/// What a slow peer is allowed: `idle` per read or write (`--timeout`), `handshake` for the
/// whole hello exchange and for each file header (`--handshake-timeout`), and for content at
/// least `min_rate` bytes per second once `idle` has passed (`--min-rate`; 0: no floor). A peer
/// that sends one byte a second trips the floor, never the idle timeout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pace {
    /// Longest wait for one read or write.
    pub idle: Duration,
    /// Longest time for the handshake, and for each header.
    pub handshake: Duration,
    /// Content floor, bytes per second, after `idle` of grace; 0 for none.
    pub min_rate: u64,
}

impl Pace {
    /// iolab's defaults: 30 s idle, 10 s for a handshake or a header, 64 KiB/s floor.
    pub const DEFAULT: Pace = Pace {
        idle: Duration::from_secs(30),
        handshake: Duration::from_secs(10),
        min_rate: 64 << 10,
    };

    /// Whether `moved` bytes by `elapsed` since a file began is too slow: the grace of `idle`,
    /// then `min_rate`. The message names the figures.
    pub fn too_slow(&self, moved: u64, elapsed: Duration) -> Option<String> {
        if self.min_rate == 0 {
            return None;
        }
        let allowed = self.idle.as_secs_f64() + moved as f64 / self.min_rate as f64;
        (elapsed.as_secs_f64() > allowed).then(|| {
            format!(
                "{moved} bytes in {:.1} s, slower than --min-rate {} bytes/s (a stalled or hostile peer)",
                elapsed.as_secs_f64(),
                self.min_rate
            )
        })
    }
}

impl Pace {
    /// A `TimedOut` error in [`Pace::too_slow`]'s words when `moved` bytes since `begun` is
    /// below the floor.
    pub fn check(&self, moved: u64, begun: Instant) -> io::Result<()> {
        match self.too_slow(moved, begun.elapsed()) {
            Some(why) => Err(io::Error::new(io::ErrorKind::TimedOut, why)),
            None => Ok(()),
        }
    }
}

/// A socket with a deadline: every read or write waits at most the idle timeout, and none waits
/// past `until`; past it, a `TimedOut` error in `what`'s words. For the few small reads of a
/// handshake or a header (each read re-arms the socket's timeout, a system call).
pub struct Bounded<'a> {
    sock: &'a std::net::TcpStream,
    until: Instant,
    idle: Duration,
    what: String,
}

impl<'a> Bounded<'a> {
    /// `sock` for at most `within` from now, `what` (e.g. "the handshake") in the error.
    pub fn new(sock: &'a std::net::TcpStream, pace: &Pace, within: Duration, what: &str) -> Self {
        Bounded {
            sock,
            until: Instant::now() + within,
            idle: pace.idle,
            what: format!("{what} took longer than {}", seconds(within)),
        }
    }

    fn arm(&self, read: bool) -> io::Result<()> {
        let now = Instant::now();
        if now >= self.until {
            return Err(io::Error::new(io::ErrorKind::TimedOut, self.what.clone()));
        }
        let wait = (self.until - now)
            .min(self.idle)
            .max(Duration::from_millis(1));
        if read {
            self.sock.set_read_timeout(Some(wait))
        } else {
            self.sock.set_write_timeout(Some(wait))
        }
    }

    fn deadline_hit(&self, e: io::Error) -> io::Error {
        let timed_out = matches!(
            e.kind(),
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
        );
        if timed_out && Instant::now() >= self.until {
            io::Error::new(io::ErrorKind::TimedOut, self.what.clone())
        } else {
            e
        }
    }

    /// Puts the socket's timeouts back to the idle timeout.
    pub fn finish(self) {
        let _ = self.sock.set_read_timeout(Some(self.idle));
        let _ = self.sock.set_write_timeout(Some(self.idle));
    }
}

/// "10 s", "0.5 s": whole seconds without decimals (a 0.5 s deadline once read "0 s").
pub(super) fn seconds(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 {
        format!("{s:.0} s")
    } else {
        format!("{s:.1} s")
    }
}

impl Read for Bounded<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.arm(true)?;
        let mut s = self.sock;
        s.read(buf).map_err(|e| self.deadline_hit(e))
    }
}

impl Write for Bounded<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.arm(false)?;
        let mut s = self.sock;
        s.write(buf).map_err(|e| self.deadline_hit(e))
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
