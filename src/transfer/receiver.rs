//! The receiver: connects, proves the token (if any), and stores each file under a temporary
//! name, renamed only when complete and its BLAKE3 matches the header. Names, sizes and existing
//! files are checked before a byte is written; a failure removes the partial output. With `raw`,
//! there is no handshake, header or status: one connection per file named by the receiver, and
//! the file ends when the sender closes.

use super::protocol::{self, Bounded, Frame, Header, Hello, Pace, Session};
use super::{ConnOut, FileRecord, Link, RecvMethod, SideReport, cpu_since, run_connections};
use crate::error::{Error, Result, describe_io};
use crate::sys::buf::AlignedBuf;
use crate::sys::dir::Dir;
use crate::sys::map::WritableMapping;
use crate::vm::pagemap::{PageDesc, describe_limit, describe_range};
use std::ffi::OsString;
use std::fs::File;
use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

mod storing;
use storing::store;

mod follow;
mod splice;

/// What the receiver does.
#[derive(Debug, Clone)]
pub struct RecvConfig {
    /// The sender, HOST:PORT.
    pub connect: String,
    /// Where files go.
    pub out_dir: PathBuf,
    /// Output paths for the files in the order sent (the classic slave names them); the rest
    /// take the names in their headers, inside `out_dir`.
    pub names: Vec<PathBuf>,
    /// How received bytes are stored.
    pub method: RecvMethod,
    /// Connections, token, pace, framing and sizes.
    pub link: Link,
    /// Largest file accepted; `None`: the free space of the output filesystem.
    pub max_size: Option<u64>,
    /// Replace existing files.
    pub force: bool,
    /// fsync each file inside its timed window.
    pub sync: bool,
    /// Receive and verify, store nothing.
    pub discard: bool,
    /// Keep retrying a refused connection this long (the sender may still be starting).
    pub retry: Duration,
    /// The files are exactly `names`: a sender with more or fewer is an error (the classic slave).
    pub exact: bool,
    /// A raw stream's bytes are stored and nothing else: no BLAKE3 of them is computed (there
    /// is none to check against; the record's `blake3` is then empty), as `nc` or `socat` store.
    pub no_hash: bool,
}

impl RecvConfig {
    /// A receiver from `connect` into `out_dir` by `method`, with iolab's defaults: one
    /// connection, no token, 30 s, names from the headers, the framed protocol.
    pub fn new(connect: String, out_dir: PathBuf, method: RecvMethod) -> RecvConfig {
        RecvConfig {
            connect,
            out_dir,
            names: Vec::new(),
            method,
            link: Link::default(),
            max_size: None,
            force: false,
            sync: false,
            discard: false,
            retry: Duration::ZERO,
            exact: false,
            no_hash: false,
        }
    }

    /// Refuses settings that cannot work together.
    pub fn check(&self) -> Result<()> {
        self.link.check()?;
        if self.link.raw && self.names.is_empty() {
            return Err(Error::usage(
                "--raw needs the output names",
                "a raw stream carries no names: give one name per file, in order",
            ));
        }
        let mut seen = std::collections::HashSet::new();
        if let Some(dup) = self.names.iter().find(|n| !seen.insert(*n)) {
            return Err(Error::usage(
                "two outputs of one name",
                "each file needs its own output name",
            )
            .at(dup));
        }
        if self.exact && self.names.is_empty() {
            return Err(Error::usage("no files named", "give at least one name"));
        }
        Ok(())
    }

    fn pages_note(&self) -> Option<String> {
        if !self.link.pages {
            None
        } else if self.method != RecvMethod::Mmap || self.discard {
            Some("--pages describes mapped windows; this receiver maps none".into())
        } else {
            describe_limit()
        }
    }

    fn method_name(&self) -> String {
        match (self.discard, self.sync) {
            (true, _) => "discard".into(),
            (false, true) => format!("{}+fsync", self.method.name()),
            (false, false) => self.method.name().into(),
        }
    }
}

/// A file about to be received: its name, and from a header its size (its BLAKE3 follows the
/// content); a raw stream has neither, and ends when the sender closes.
struct Incoming {
    name: String,
    size: Option<u64>,
    /// Whether a BLAKE3 follows the content (framed streams).
    framed: bool,
    /// When its bytes began to come, and how slow they may come.
    began: Instant,
    pace: Pace,
}

impl Incoming {
    fn framed(h: &Header, pace: Pace) -> Incoming {
        Incoming {
            name: h.name.clone(),
            size: Some(h.size),
            framed: true,
            began: Instant::now(),
            pace,
        }
    }
}

/// What a connection sets up once, before any file's timed window: the buffer and the pipe.
struct RecvGear {
    buf: AlignedBuf,
    pipe: Option<(OwnedFd, OwnedFd)>,
    /// The outputs this transfer has taken, over all its connections: a second file of one
    /// name is the sender's fault, not the user's.
    claimed: Claimed,
    /// `--out`, opened once: files are made and renamed through this handle, so swapping the
    /// directory's path for a symlink meanwhile redirects nothing.
    out: Option<Arc<Dir>>,
    /// CPU time (user, system) of the threads that hashed files beside their storing.
    helpers: (Duration, Duration),
}

type Claimed = std::sync::Arc<std::sync::Mutex<std::collections::HashSet<PathBuf>>>;

impl RecvGear {
    fn new(cfg: &RecvConfig, claimed: &Claimed, out: &Option<Arc<Dir>>) -> Result<RecvGear> {
        let copies = cfg.discard || cfg.method == RecvMethod::Write;
        Ok(RecvGear {
            buf: AlignedBuf::new(if copies { cfg.link.sizes.chunk } else { 1 }),
            pipe: if cfg.method == RecvMethod::Splice && !cfg.discard {
                Some(
                    crate::sys::net::pipe()
                        .map_err(|e| Error::failed("pipe failed", describe_io(&e)))?,
                )
            } else {
                None
            },
            claimed: claimed.clone(),
            out: out.clone(),
            helpers: (Duration::ZERO, Duration::ZERO),
        })
    }

    /// A connection thread's CPU time with its hashing threads' added.
    fn with_helpers(&self, (user, sys): (Duration, Duration)) -> (Duration, Duration) {
        (user + self.helpers.0, sys + self.helpers.1)
    }
}

impl Stored {
    /// Bytes stored from `start`, with no page walk to take out.
    fn plain(got: u64, start: Instant) -> Stored {
        Stored {
            got,
            start,
            paused: Duration::ZERO,
            pages: Vec::new(),
            hash: None,
            hash_time: Duration::ZERO,
        }
    }
}

/// What storing one file's bytes gave: bytes, when the clock started, time to take out of it
/// (the page walk of `--pages`), and the page descriptors.
struct Stored {
    got: u64,
    start: Instant,
    paused: Duration,
    pages: Vec<PageDesc>,
    /// BLAKE3 of the bytes as they were written, where they passed through this process's
    /// memory (write) or were hashed behind the writer (splice): the verification needs no
    /// second pass over the file.
    hash: Option<[u8; 32]>,
    /// Time a thread beside the storing spent hashing (its waits for the writer left out).
    hash_time: Duration,
}

/// Removes a temporary file unless it was renamed into place.
struct PartialFile {
    dir: Arc<Dir>,
    name: OsString,
    keep: bool,
}

impl Drop for PartialFile {
    fn drop(&mut self) {
        if !self.keep {
            let _ = self.dir.remove(&self.name);
        }
    }
}

/// Connects, retrying a refused connection until `--retry` runs out; returns the stream and when
/// the attempt that succeeded began (a wait for a sender not yet listening is no transfer time).
fn connect(cfg: &RecvConfig) -> Result<(TcpStream, Instant)> {
    let addrs: Vec<_> = cfg
        .connect
        .to_socket_addrs()
        .map_err(|e| {
            Error::usage("invalid address", describe_io(&e))
                .on(&cfg.connect)
                .hint("expected HOST:PORT")
        })?
        .collect();
    let deadline = Instant::now() + cfg.retry;
    // A sender started beside this receiver listens within a few milliseconds: look again
    // after 1 ms, then twice as long each time up to 20 ms (a fixed 20 ms could add up to 20 ms
    // to a transfer of 1 GiB that takes 300 ms).
    let mut wait = Duration::from_millis(1);
    loop {
        let mut last = None;
        for a in &addrs {
            let attempt = Instant::now();
            match TcpStream::connect_timeout(a, cfg.link.pace.idle) {
                Ok(s) => return Ok((s, attempt)),
                Err(e) => last = Some(e),
            }
        }
        let e = last.unwrap_or_else(|| std::io::Error::other("no address"));
        if e.kind() == std::io::ErrorKind::ConnectionRefused && Instant::now() < deadline {
            std::thread::sleep(wait);
            wait = (wait * 2).min(Duration::from_millis(20));
            continue;
        }
        return Err(Error::failed("cannot connect", describe_io(&e))
            .on(&cfg.connect)
            .hint("is `iolab send` listening there? start it first, or add --retry"));
    }
}

/// Connects `cfg.link.connections` times and receives every file the sender has (with `raw`, one
/// connection per name, one after the other).
pub fn receive(cfg: &RecvConfig) -> Result<SideReport> {
    cfg.check()?;
    if !cfg.discard && !cfg.out_dir.is_dir() {
        return Err(Error::usage("invalid output directory", "not a directory").at(&cfg.out_dir));
    }
    let out = if cfg.discard {
        None
    } else {
        Some(Arc::new(Dir::open(&cfg.out_dir).map_err(|e| {
            Error::io("cannot open the output directory", &cfg.out_dir, &e)
        })?))
    };
    if cfg.link.raw {
        return receive_raw(cfg, &out);
    }
    let mut started = None;
    let socks: Vec<TcpStream> = (0..cfg.link.connections)
        .map(|_| {
            let (sock, attempt) = connect(cfg)?;
            started.get_or_insert(attempt);
            Ok(sock)
        })
        .collect::<Result<_>>()?;
    let started = started.unwrap_or_else(Instant::now);
    let n = socks.len();
    let claimed = Claimed::default();
    let (files, user, sys) = run_connections(socks, "receive failed", |c, sock| {
        connection(sock, c, n, cfg, &claimed, &out)
    })?;
    Ok(SideReport {
        role: "recv".into(),
        method: cfg.method_name(),
        peer: cfg.connect.clone(),
        connections: n,
        files,
        wall: started.elapsed(),
        cpu_user: user,
        cpu_sys: sys,
        rejected: Vec::new(),
        raw: false,
        sizes: cfg.link.sizes,
        pages_note: cfg.pages_note(),
    })
}

/// The raw stream: for each name in order, connect, take bytes until the sender closes, store.
fn receive_raw(cfg: &RecvConfig, out: &Option<Arc<Dir>>) -> Result<SideReport> {
    let cpu = crate::sys::net::rusage_thread();
    let mut started = None;
    let mut gear = RecvGear::new(cfg, &Claimed::default(), out)?;
    let mut files = Vec::new();
    for (i, dest) in cfg.names.iter().enumerate() {
        let name = dest
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .ok_or_else(|| Error::usage("invalid output path", "it names no file").at(dest))?;
        if !cfg.discard {
            // Before connecting: an existing file stops the transfer before a byte moves.
            crate::output::refuse_existing(dest, cfg.force)?;
        }
        let (mut sock, attempt) = connect(cfg)?;
        started.get_or_insert(attempt);
        let _ = sock.set_read_timeout(Some(cfg.link.pace.idle));
        let _ = sock.set_write_timeout(Some(cfg.link.pace.idle));
        // No shutdown of our side: a peer like nc stops sending when it sees one.
        let inc = Incoming {
            name,
            size: None,
            framed: false,
            began: Instant::now(),
            pace: cfg.link.pace,
        };
        let mut none = Session::new(None, &[0; 16], &[0; 16]);
        files.push(store(
            &mut sock,
            &mut none,
            &inc,
            i,
            cfg,
            &cfg.connect,
            &mut gear,
        )?);
    }
    let (user, sys) = gear.with_helpers(cpu_since(&cpu));
    Ok(SideReport {
        role: "recv".into(),
        method: cfg.method_name(),
        peer: cfg.connect.clone(),
        connections: 1,
        files,
        wall: started.map(|s| s.elapsed()).unwrap_or_default(),
        cpu_user: user,
        cpu_sys: sys,
        rejected: Vec::new(),
        raw: true,
        sizes: cfg.link.sizes,
        pages_note: cfg.pages_note(),
    })
}

fn handshake(sock: &mut (impl Read + Write), link: &Link, peer: &str) -> Result<Session> {
    let (token, connections) = (link.token.as_deref(), link.connections);
    let theirs = protocol::read_hello(sock, "sender", peer)?;
    let mine = Hello::ours(token, connections);
    protocol::send_all(sock, &mine.encode(), peer)?;
    theirs.check_token_use(token, peer)?;
    theirs.check_connections(connections, "sender", peer)?;
    let nonces = (&theirs.nonce, &mine.nonce);
    if let Some(t) = token {
        // This side connected: it proves first, over both nonces (its own fresh one among
        // them, so a hostile sender cannot collect proofs for nonces it chose).
        protocol::send_all(
            sock,
            protocol::proof(t, b"recv", nonces.0, nonces.1).as_bytes(),
            peer,
        )?;
        protocol::expect_proof(sock, t, b"send", nonces, peer)?;
    }
    Ok(Session::new(token, nonces.0, nonces.1))
}

fn connection(
    mut sock: TcpStream,
    c: usize,
    n: usize,
    cfg: &RecvConfig,
    claimed: &Claimed,
    out: &Option<Arc<Dir>>,
) -> Result<ConnOut> {
    let cpu = crate::sys::net::rusage_thread();
    let peer = cfg.connect.clone();
    let _ = sock.set_read_timeout(Some(cfg.link.pace.idle));
    let _ = sock.set_write_timeout(Some(cfg.link.pace.idle));
    let pace = cfg.link.pace;
    // The whole exchange within --handshake-timeout: dripping bytes cannot hold it open.
    let mut b = Bounded::new(&sock, &pace, pace.handshake, "the handshake");
    let mut session = handshake(&mut b, &cfg.link, &peer)?;
    b.finish();
    let mut gear = RecvGear::new(cfg, claimed, out)?;
    let mut records = Vec::new();
    let mut j = 0usize;
    // With `exact`, this connection carries files c, c + n, ... of the N named.
    let named = cfg.names.len();
    let mine = if named > c {
        (named - c).div_ceil(n)
    } else {
        0
    };
    let out = loop {
        let mut b = Bounded::new(&sock, &pace, pace.handshake, "a header");
        // With a token, each frame's tag must match this connection's handshake.
        let frame = protocol::read_frame(&mut b, &peer).and_then(|f| {
            let bytes = match &f {
                Frame::File(h) => h.encode(),
                Frame::End => vec![protocol::FRAME_END],
            };
            session.open(&mut b, b"send", &bytes, &peer).map(|()| f)
        });
        b.finish();
        let header = match frame {
            Ok(Frame::End) if cfg.exact && j < mine => {
                break Err(Error::failed(
                    "too few files",
                    format!(
                        "the sender sent {} file(s) where {named} were named",
                        c + j * n
                    ),
                )
                .on(&peer)
                .hint("give the slave the same N as the master"));
            }
            Ok(Frame::End) => break Ok(()),
            Ok(Frame::File(h)) => h,
            Err(e) => break Err(e),
        };
        let index = c + j * n;
        j += 1;
        if cfg.exact && index >= named {
            break Err(Error::failed(
                "too many files",
                format!(
                    "the sender offers file {} ({}) where only {named} were named; not stored",
                    index + 1,
                    header.name
                ),
            )
            .on(&peer)
            .hint("give the slave the same N as the master"));
        }
        match store(
            &mut sock,
            &mut session,
            &Incoming::framed(&header, pace),
            index,
            cfg,
            &peer,
            &mut gear,
        ) {
            Ok(r) => records.push((index, r)),
            Err(e) => break Err(e),
        }
    };
    // Tell the sender how it went, and why not (it may already be gone after a failure). Then
    // take what it still sends for a moment, so that closing does not reset the connection
    // and discard the reason before the sender reads it.
    let why = out.as_ref().err().map(|e| e.to_string());
    let _ = sock.write_all(&session.seal(b"recv", &protocol::status_bytes(why.as_deref())));
    if out.is_err() {
        let _ = sock.shutdown(std::net::Shutdown::Write);
        let _ = sock.set_read_timeout(Some(Duration::from_millis(100)));
        let until = Instant::now() + Duration::from_millis(500);
        let mut sink = [0u8; 64 << 10];
        while Instant::now() < until && matches!(sock.read(&mut sink), Ok(n) if n > 0) {}
    }
    out?;
    Ok((records, gear.with_helpers(cpu_since(&cpu))))
}

fn too_big(name: &str, max: u64, peer: &str, announced: Option<u64>) -> Error {
    let what = match announced {
        Some(size) => format!("{name} announces {size} bytes"),
        None => format!("{name} goes on past {max} bytes"),
    };
    Error::failed(
        "refused",
        format!("{what}, more than the {max} allowed (--max-size, default the free space)"),
    )
    .on(peer)
}

/// Whether the stored bytes are hashed: always for a framed stream (the bytes are always
/// verified); a raw stream unless `--no-hash`.
fn hashes(cfg: &RecvConfig, inc: &Incoming) -> bool {
    !cfg.no_hash || inc.framed
}

/// Bytes to ask for next: at most `step`, and never past the announced size.
fn want(inc: &Incoming, got: u64, step: usize) -> usize {
    match inc.size {
        Some(size) => (size - got).min(step as u64) as usize,
        None => step,
    }
}

fn cut_short(inc: &Incoming, got: u64, size: u64, peer: &str) -> Error {
    Error::failed(
        "receive failed",
        format!(
            "the sender closed the connection in {} after {got} of {size} bytes",
            inc.name
        ),
    )
    .on(peer)
}

fn lost(inc: &Incoming, got: u64, peer: &str, e: &std::io::Error) -> Error {
    let of = inc.size.map(|s| format!(" of {s}")).unwrap_or_default();
    Error::failed(
        "receive failed",
        format!(
            "{} after {got}{of} bytes: {}",
            inc.name,
            protocol::timeout_text(e)
        ),
    )
    .on(peer)
}

#[cfg(test)]
mod tests;
