//! The receiver: connects, proves the token (if any), and stores each file under a temporary
//! name, renamed only when complete and its BLAKE3 matches the header. Names, sizes and existing
//! files are checked before a byte is written; a failure removes the partial output. With `raw`,
//! there is no handshake, header or status: one connection per file named by the receiver, and
//! the file ends when the sender closes.

use super::protocol::{self, Bounded, Frame, Header, Hello, Pace, Session};
use super::{ChunkSizes, ConnOut, FileRecord, RecvMethod, SideReport, cpu_since, run_connections};
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
    /// Parallel connections (files go round-robin).
    pub connections: usize,
    /// A shared secret both sides must prove, if any.
    pub token: Option<String>,
    /// Give up on a peer idle this long.
    pub timeout: Duration,
    /// Longest time for the handshake and for each header.
    pub handshake_timeout: Duration,
    /// Content floor once `timeout` has passed, bytes per second (0: none).
    pub min_rate: u64,
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
    /// A raw stream: one connection per name in `names`, the file ends when the sender closes.
    pub raw: bool,
    /// The files are exactly `names`: a sender with more or fewer is an error (the classic slave).
    pub exact: bool,
    /// Buffer and mapped-window sizes.
    pub sizes: ChunkSizes,
    /// Record each mapped page's descriptor (mmap).
    pub pages: bool,
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
            connections: 1,
            token: None,
            timeout: Pace::DEFAULT.idle,
            handshake_timeout: Pace::DEFAULT.handshake,
            min_rate: Pace::DEFAULT.min_rate,
            max_size: None,
            force: false,
            sync: false,
            discard: false,
            retry: Duration::ZERO,
            raw: false,
            exact: false,
            sizes: ChunkSizes::default(),
            pages: false,
            no_hash: false,
        }
    }

    /// What a slow sender is allowed.
    pub fn pace(&self) -> Pace {
        Pace {
            idle: self.timeout,
            handshake: self.handshake_timeout,
            min_rate: self.min_rate,
        }
    }

    /// Refuses settings that cannot work together.
    pub fn check(&self) -> Result<()> {
        super::check_link(
            self.connections,
            &self.sizes,
            self.raw,
            self.token.is_some(),
        )?;
        if self.raw && self.names.is_empty() {
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
        if !self.pages {
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

/// A file about to be received: its name, and from a header its size and BLAKE3; a raw stream
/// has neither, and ends when the sender closes.
struct Incoming {
    name: String,
    size: Option<u64>,
    hash: Option<[u8; 32]>,
    /// When its bytes began to come, and how slow they may come.
    began: Instant,
    pace: Pace,
}

impl Incoming {
    fn framed(h: &Header, pace: Pace) -> Incoming {
        Incoming {
            name: h.name.clone(),
            size: Some(h.size),
            hash: Some(h.hash),
            began: Instant::now(),
            pace,
        }
    }
}

/// What a connection sets up once, before any file's timed window: the buffer and the pipe.
struct Gear {
    buf: AlignedBuf,
    pipe: Option<(OwnedFd, OwnedFd)>,
    /// The outputs this transfer has taken, over all its connections: a second file of one
    /// name is the sender's fault, not the user's.
    claimed: Claimed,
    /// `--out`, opened once: files are made and renamed through this handle, so swapping the
    /// directory's path for a symlink meanwhile redirects nothing.
    out: Option<Arc<Dir>>,
}

type Claimed = std::sync::Arc<std::sync::Mutex<std::collections::HashSet<PathBuf>>>;

impl Gear {
    fn new(cfg: &RecvConfig, claimed: &Claimed, out: &Option<Arc<Dir>>) -> Result<Gear> {
        let copies = cfg.discard || cfg.method == RecvMethod::Write;
        Ok(Gear {
            buf: AlignedBuf::new(if copies { cfg.sizes.chunk } else { 1 }),
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
        })
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
    /// memory (write): the verification needs no second pass over the file.
    hash: Option<[u8; 32]>,
}

/// Removes a temporary file unless it was renamed into place.
struct Partial {
    dir: Arc<Dir>,
    name: OsString,
    keep: bool,
}

impl Drop for Partial {
    fn drop(&mut self) {
        if !self.keep {
            let _ = self.dir.remove(&self.name);
        }
    }
}

fn connect(cfg: &RecvConfig) -> Result<TcpStream> {
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
    loop {
        let mut last = None;
        for a in &addrs {
            match TcpStream::connect_timeout(a, cfg.timeout) {
                Ok(s) => return Ok(s),
                Err(e) => last = Some(e),
            }
        }
        let e = last.unwrap_or_else(|| std::io::Error::other("no address"));
        if e.kind() == std::io::ErrorKind::ConnectionRefused && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
            continue;
        }
        return Err(Error::failed("cannot connect", describe_io(&e))
            .on(&cfg.connect)
            .hint("is `iolab send` listening there? start it first, or add --retry"));
    }
}

/// Connects `cfg.connections` times and receives every file the sender has (with `raw`, one
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
    if cfg.raw {
        return receive_raw(cfg, &out);
    }
    let started = Instant::now();
    let socks: Vec<TcpStream> = (0..cfg.connections)
        .map(|_| connect(cfg))
        .collect::<Result<_>>()?;
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
        sizes: cfg.sizes,
        pages_note: cfg.pages_note(),
    })
}

/// The raw stream: for each name in order, connect, take bytes until the sender closes, store.
fn receive_raw(cfg: &RecvConfig, out: &Option<Arc<Dir>>) -> Result<SideReport> {
    let cpu = crate::sys::net::rusage_thread();
    let started = Instant::now();
    let mut gear = Gear::new(cfg, &Claimed::default(), out)?;
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
        let mut sock = connect(cfg)?;
        let _ = sock.set_read_timeout(Some(cfg.timeout));
        let _ = sock.set_write_timeout(Some(cfg.timeout));
        // No shutdown of our side: a peer like nc stops sending when it sees one.
        let inc = Incoming {
            name,
            size: None,
            hash: None,
            began: Instant::now(),
            pace: cfg.pace(),
        };
        files.push(store(&mut sock, &inc, i, cfg, &cfg.connect, &mut gear)?);
    }
    let (user, sys) = cpu_since(&cpu);
    Ok(SideReport {
        role: "recv".into(),
        method: cfg.method_name(),
        peer: cfg.connect.clone(),
        connections: 1,
        files,
        wall: started.elapsed(),
        cpu_user: user,
        cpu_sys: sys,
        rejected: Vec::new(),
        raw: true,
        sizes: cfg.sizes,
        pages_note: cfg.pages_note(),
    })
}

fn handshake(
    sock: &mut (impl Read + Write),
    token: Option<&str>,
    connections: usize,
    peer: &str,
) -> Result<Session> {
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
    let _ = sock.set_read_timeout(Some(cfg.timeout));
    let _ = sock.set_write_timeout(Some(cfg.timeout));
    let pace = cfg.pace();
    // The whole exchange within --handshake-timeout: dripping bytes cannot hold it open.
    let mut b = Bounded::new(&sock, &pace, pace.handshake, "the handshake");
    let mut session = handshake(&mut b, cfg.token.as_deref(), cfg.connections, &peer)?;
    b.finish();
    let mut gear = Gear::new(cfg, claimed, out)?;
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
    Ok((records, cpu_since(&cpu)))
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

fn store(
    sock: &mut TcpStream,
    inc: &Incoming,
    index: usize,
    cfg: &RecvConfig,
    peer: &str,
    gear: &mut Gear,
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
            hash,
        };
        FileRecord::new(&h, method, time, verify)
    };
    if cfg.discard {
        let mut hasher = blake3::Hasher::new();
        let t = Instant::now();
        let got = pump(sock, gear.buf.as_mut_slice(), inc, max, peer, |b| {
            hasher.update(b);
            Ok(())
        })?;
        let time = t.elapsed();
        let hash = hasher.finalize();
        check_hash(inc, hash.as_bytes(), peer)?;
        return Ok(record(
            got,
            *hash.as_bytes(),
            "discard",
            time,
            Duration::ZERO,
        ));
    }
    let fresh = gear
        .claimed
        .lock()
        .map(|mut c| c.insert(dest.clone()))
        .unwrap_or(true);
    if !fresh {
        return Err(Error::failed(
            "refused",
            format!(
                "the sender sent a second file named {}; only the first is kept",
                inc.name
            ),
        )
        .on(peer));
    }
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
    // Unnamed (O_TMPFILE) where the file system can: until it is linked in place it has no name,
    // so nothing is left even if the process is killed outright. Else a named temporary, removed
    // on failure and on interrupts.
    let (file, mut partial, _tracked) = match dir.create_unnamed() {
        Some(f) => (f, None, None),
        None => {
            // What a receiver killed with -9 left here under a hidden name goes first.
            crate::clean::remove_all(&crate::clean::stale_files(dir.path()));
            let tracked = crate::output::track(&dir.handle_path(&tmp));
            let f = dir
                .create_new(&tmp)
                .map_err(|e| Error::io("cannot create", &dest, &e))?;
            let partial = Partial {
                dir: dir.clone(),
                name: tmp.clone(),
                keep: false,
            };
            (f, Some(partial), Some(tracked))
        }
    };
    // Only a raw stream has no hash to check: with one, the bytes are always verified.
    let hash_it = !(cfg.no_hash && inc.hash.is_none());
    let stored = match cfg.method {
        RecvMethod::Write => recv_write(sock, &file, inc, max, gear, peer, hash_it)?,
        RecvMethod::Mmap => recv_mmap(sock, &file, inc, max, cfg, peer, &dest)?,
        RecvMethod::Splice => recv_splice(sock, &file, inc, max, cfg.sizes.chunk, gear, peer)?,
    };
    if cfg.sync {
        file.sync_all()
            .map_err(|e| Error::io("fsync failed", &dest, &e))?;
    }
    let time = stored.start.elapsed().saturating_sub(stored.paused);
    let v = Instant::now();
    let hash = match stored.hash {
        Some(h) => Some(h),
        None if hash_it => Some(
            super::sender::hash_file(&file, stored.got)
                .map_err(|e| Error::io("verify failed", &dest, &e))?,
        ),
        None => None,
    };
    let verify = v.elapsed();
    if let Some(hash) = &hash {
        check_hash(inc, hash, peer).map_err(|e| e.at(&dest))?;
    }
    let placed = match (&mut partial, cfg.force) {
        (Some(p), _) => dir
            .rename(&tmp, &name, cfg.force)
            .inspect(|_| p.keep = true),
        (None, false) => dir.link(&file, &name),
        (None, true) => dir.link(&file, &tmp).and_then(|_| {
            dir.rename(&tmp, &name, true).inspect_err(|_| {
                let _ = dir.remove(&tmp);
            })
        }),
    };
    placed.map_err(|e| crate::output::not_placed(&dest, e))?;
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

/// Refuses bytes whose BLAKE3 differs from the header's (a raw stream has none to check).
fn check_hash(inc: &Incoming, got: &[u8; 32], peer: &str) -> Result<()> {
    match inc.hash {
        Some(h) if h != *got => Err(Error::failed(
            "checksum mismatch",
            format!(
                "{}: BLAKE3 of the received bytes differs from the header; not kept",
                inc.name
            ),
        )
        .on(peer)),
        _ => Ok(()),
    }
}

/// Bytes to ask for next: at most `step`, and never past the announced size.
fn want(inc: &Incoming, got: u64, step: usize) -> usize {
    match inc.size {
        Some(size) => (size - got).min(step as u64) as usize,
        None => step,
    }
}

/// The directory handle and file name a file goes to: `--out` (opened once) for a sender's
/// name; for a name the user gave, its own directory, opened now.
fn output_dir(
    cfg: &RecvConfig,
    index: usize,
    dest: &Path,
    gear: &Gear,
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

/// One read of at most `buf.len()` bytes. End of stream is the end of a raw file (0), and an
/// error naming the file when a header announced more.
fn read_some(
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

fn recv_write(
    sock: &mut TcpStream,
    file: &File,
    inc: &Incoming,
    max: u64,
    gear: &mut Gear,
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
fn pump(
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
fn grow(file: &File, len: u64, dest: &Path) -> Result<()> {
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
fn fill(
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

fn recv_mmap(
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
        if cfg.pages {
            let t = Instant::now();
            if let Ok(p) = describe_range(map.addr(), map.len(), off) {
                pages.extend(p);
            }
            paused += t.elapsed();
        }
    };
    let step = cfg.sizes.chunk;
    let (got, start) = match (inc.size, cfg.sizes.map_size) {
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
            let window = cfg.sizes.stream_window();
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
    })
}

fn recv_splice(
    sock: &mut TcpStream,
    file: &File,
    inc: &Incoming,
    max: u64,
    step: usize,
    gear: &mut Gear,
    peer: &str,
) -> Result<Stored> {
    let Some((r, w)) = gear.pipe.as_ref() else {
        return Err(Error::failed("receive failed", "no pipe for splice"));
    };
    let mut got = 0u64;
    let start = Instant::now();
    loop {
        let want = want(inc, got, step);
        if want == 0 {
            break;
        }
        let k = match crate::sys::net::splice(sock, None, w, None, want) {
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
        inc.pace
            .check(got, inc.began)
            .map_err(|e| lost(inc, got, peer, &e))?;
        if got > max {
            return Err(too_big(&inc.name, max, peer, None));
        }
    }
    Ok(Stored::plain(got, start))
}

/// Moves `k` bytes out of the pipe with `splice_out(bytes left)`, which returns how many it moved.
/// A splice that moves nothing would loop for ever: it is an error (the file cannot grow).
fn empty_pipe(
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

#[cfg(test)]
mod tests;
