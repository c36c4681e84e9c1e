//! Accepting receivers: every handshake on a thread of its own, one wait for connections and
//! for handshakes.

use super::*;

/// Accepts receivers and runs their handshakes concurrently, each in a thread of its own within
/// `--handshake-timeout`: a stranger who connects and stays idle (or drips bytes) holds only
/// its own thread, never the port, so the real receiver's handshake goes on beside it. At most
/// `64 + connections` handshakes are pending at once; a connection beyond that is dropped at
/// once.
pub(super) struct Acceptor<'a> {
    listener: &'a TcpListener,
    cfg: std::sync::Arc<SendConfig>,
    tx: std::sync::mpsc::Sender<(String, Result<(TcpStream, Session)>)>,
    rx: std::sync::mpsc::Receiver<(String, Result<(TcpStream, Session)>)>,
    pending: usize,
    local: String,
    /// A byte arrives here when a handshake ends, so that the wait for connections and for
    /// handshakes is one `poll` (a receiver is served the moment it is ready, not at the next
    /// look of a sleeping loop, which added 2-4 ms to every transfer).
    wake: Option<(
        std::os::unix::net::UnixStream,
        std::os::unix::net::UnixStream,
    )>,
}

impl<'a> Acceptor<'a> {
    pub(super) fn new(listener: &'a TcpListener, cfg: &SendConfig, local: &str) -> Acceptor<'a> {
        let (tx, rx) = std::sync::mpsc::channel();
        let wake = std::os::unix::net::UnixStream::pair()
            .and_then(|(r, w)| r.set_nonblocking(true).map(|()| (r, w)))
            .ok();
        Acceptor {
            listener,
            cfg: std::sync::Arc::new(cfg.clone()),
            tx,
            rx,
            pending: 0,
            local: local.to_string(),
            wake,
        }
    }

    /// Waits at most `left` for a connection or the end of a handshake (without the wake
    /// pair, a short sleep).
    fn wait(&self, left: Duration) {
        use std::io::Read;
        use std::os::fd::AsFd;
        let Some((r, _)) = &self.wake else {
            std::thread::sleep(left.min(Duration::from_millis(2)));
            return;
        };
        let fds = [self.listener.as_fd(), r.as_fd()];
        if crate::sys::net::wait_readable(&fds, left).is_err() {
            std::thread::sleep(left.min(Duration::from_millis(2)));
        }
        let mut sink = [0u8; 64];
        while matches!((&*r).read(&mut sink), Ok(n) if n > 0) {}
    }

    /// Waits for the next receiver (at most `cfg.link.pace.idle`), dropping connections that fail the
    /// handshake (garbage, a wrong token, silence) and keeping on until the deadline. A raw
    /// stream has no handshake: the first connection is the receiver.
    pub(super) fn next(&mut self, rejected: &mut Vec<String>) -> Result<(TcpStream, Session)> {
        let cfg = self.cfg.clone();
        let deadline = Instant::now() + cfg.link.pace.idle;
        let cap = 64 + cfg.link.connections;
        loop {
            while let Ok((from, r)) = self.rx.try_recv() {
                self.pending -= 1;
                match r {
                    Ok(s) => return Ok(s),
                    Err(e) => rejected.push(format!("{from}: {e}")),
                }
            }
            match self.listener.accept() {
                Ok((s, _)) if cfg.link.raw => return greet(s, &cfg),
                Ok((s, from)) if self.pending >= cap => {
                    drop(s);
                    rejected.push(format!("{from}: dropped: {cap} handshakes already pending"));
                }
                Ok((s, from)) => {
                    self.pending += 1;
                    let (tx, cfg) = (self.tx.clone(), cfg.clone());
                    let wake = self.wake.as_ref().and_then(|(_, w)| w.try_clone().ok());
                    std::thread::spawn(move || {
                        let _ = tx.send((from.to_string(), greet(s, &cfg)));
                        if let Some(mut w) = wake {
                            let _ = std::io::Write::write(&mut w, &[1]);
                        }
                    });
                }
                Err(e)
                    if e.kind() == std::io::ErrorKind::WouldBlock && Instant::now() < deadline =>
                {
                    self.wait(deadline.saturating_duration_since(Instant::now()));
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    let secs = cfg.link.pace.idle.as_secs_f64();
                    let why = match rejected.first() {
                        None if self.pending > 0 => format!(
                            "no receiver passed the handshake within {secs:.0} s ({} still pending)",
                            self.pending
                        ),
                        None => format!("nobody connected within {secs:.0} s"),
                        Some(first) => format!(
                            "no receiver passed the handshake within {secs:.0} s ({} connection(s) dropped; the first: {first})",
                            rejected.len()
                        ),
                    };
                    return Err(Error::failed("no receiver", why)
                        .on(&self.local)
                        .hint("start iolab recv --connect this address, or raise --timeout"));
                }
                Err(e) => {
                    return Err(Error::failed("accept failed", describe_io(&e)).on(&self.local));
                }
            }
        }
    }

    /// Once every connection is served: the handshakes that ended meanwhile are said (a stray
    /// peer whose garbage was read after the receiver passed is still a dropped connection),
    /// and those still running are dropped with the sender's exit, and said so.
    pub(super) fn finish(&mut self, rejected: &mut Vec<String>) {
        while let Ok((from, r)) = self.rx.try_recv() {
            self.pending -= 1;
            rejected.push(match r {
                Ok(_) => format!("{from}: passed the handshake after every connection was served"),
                Err(e) => format!("{from}: {e}"),
            });
        }
        if self.pending > 0 {
            rejected.push(format!(
                "{} connection(s) still in the handshake when the transfer ended",
                self.pending
            ));
        }
    }
}
