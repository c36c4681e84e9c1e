//! The sender: listens, proves the token (if any), and sends its files in order, each through
//! one method: `read` (pread + write), `mmap` (write straight from the mapping), `sendfile`, or
//! `splice` (file -> pipe -> socket). Each file is hashed while it is sent (on a thread beside
//! the sending, or with no spare core by read and mmap piece by piece as it passes) and its
//! BLAKE3 follows its content.

use super::protocol::{self, Bounded, Header, Hello, Pace, Session};
use super::{ConnOut, FileRecord, Link, SendMethod, SideReport, cpu_since, run_connections};
use crate::error::{Error, Result, describe_io};
use crate::sys::buf::AlignedBuf;
use crate::sys::map::Mapping;
use crate::vm::pagemap::{PageDesc, describe_limit, describe_range};
use std::fs::File;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

mod content;
use content::send_content;

mod accept;
use accept::Acceptor;

/// What the sender serves.
#[derive(Debug, Clone)]
pub struct SendConfig {
    /// Files to send, in order.
    pub files: Vec<PathBuf>,
    /// How bytes go into the socket.
    pub method: SendMethod,
    /// Connections, token, pace, framing and sizes.
    pub link: Link,
}

impl SendConfig {
    /// A sender of `files` by `method` with iolab's defaults: one connection, no token, 30 s,
    /// the framed protocol, 1 MiB chunks, whole-file mappings.
    pub fn new(files: Vec<PathBuf>, method: SendMethod) -> SendConfig {
        SendConfig {
            files,
            method,
            link: Link::default(),
        }
    }
}

/// What a connection sets up once, before any file's timed window: the buffer and the pipe.
struct SendGear {
    buf: AlignedBuf,
    pipe: Option<(OwnedFd, OwnedFd)>,
}

impl SendGear {
    fn new(cfg: &SendConfig) -> Result<SendGear> {
        Ok(SendGear {
            buf: AlignedBuf::new(if cfg.method == SendMethod::Read {
                cfg.link.sizes.chunk
            } else {
                1
            }),
            pipe: if cfg.method == SendMethod::Splice {
                Some(
                    crate::sys::net::pipe()
                        .map_err(|e| Error::failed("pipe failed", describe_io(&e)))?,
                )
            } else {
                None
            },
        })
    }
}

/// A file ready to send: opened and sized (its hash is taken while it is sent), and its
/// version then: a file written while it is sent is refused, never sent as verified.
struct Outgoing {
    path: PathBuf,
    name: String,
    file: File,
    size: u64,
    version: crate::source::Version,
}

/// Binds the listening socket (a port of 0 picks a free one).
pub fn bind(addr: SocketAddr) -> Result<TcpListener> {
    TcpListener::bind(addr).map_err(|e| {
        Error::failed("cannot listen", describe_io(&e))
            .on(addr.to_string())
            .hint("is another iolab send on this port? use --port")
    })
}

/// Checks, before anything listens, that every file can be sent: a regular file, a name the
/// protocol takes, and no two of one name (the receiver would store both under one name).
pub fn check_files(cfg: &SendConfig) -> Result<()> {
    let mut names = std::collections::HashSet::new();
    for path in &cfg.files {
        crate::engine::open_source(path)?;
        let name = path
            .file_name()
            .ok_or_else(|| Error::usage("invalid file", "it names no file").at(path))?;
        protocol::check_name(name.as_encoded_bytes())
            .map_err(|w| Error::usage("cannot send", w).at(path))?;
        if !names.insert(name) {
            return Err(Error::usage(
                "cannot send",
                "two files of this name: the receiver would store both under one name",
            )
            .at(path)
            .hint("send files of distinct names (or one of them per transfer)"));
        }
    }
    Ok(())
}

fn prepare(cfg: &SendConfig) -> Result<Vec<Outgoing>> {
    check_files(cfg)?;
    cfg.files
        .iter()
        .map(|path| {
            let src = crate::engine::open_source(path)?;
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .ok_or_else(|| Error::usage("invalid file", "it names no file").at(path))?;
            protocol::check_name(name.as_bytes())
                .map_err(|w| Error::usage("cannot send", w).at(path))?;
            let version = crate::source::Version::of(&src.file)
                .map_err(|e| Error::io("cannot stat", path, &e))?;
            Ok(Outgoing {
                path: path.clone(),
                name,
                file: src.file,
                size: src.size,
                version,
            })
        })
        .collect()
}

/// BLAKE3 of a file's first `size` bytes. From [`HASH_PARALLEL_FROM`] the file is mapped and
/// hashed on every core (BLAKE3's tree splits across rayon's threads; a 1 GiB cached file took
/// 0.29-0.31 s on one core here); a file that shrinks under the mapping reads as zeros there,
/// which the mapping's guard counts and this refuses. Smaller files, or a mapping refused, are
/// read in 1 MiB preads on this thread.
pub fn hash_file(file: &File, size: u64) -> std::io::Result<[u8; 32]> {
    if size >= HASH_PARALLEL_FROM
        && let Ok(map) = Mapping::new(file, size as usize, false)
    {
        let mut h = blake3::Hasher::new();
        h.update_rayon(map.as_slice());
        if map.sigbus_hits() > 0 {
            return Err(std::io::Error::other("the file shrank while hashing"));
        }
        return Ok(*h.finalize().as_bytes());
    }
    let mut h = blake3::Hasher::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut off = 0;
    while off < size {
        let n =
            crate::engine::pread_full(file, &mut buf[..(size - off).min(1 << 20) as usize], off)?;
        if n == 0 {
            return Err(std::io::Error::other("the file shrank while hashing"));
        }
        h.update(&buf[..n]);
        off += n as u64;
    }
    Ok(*h.finalize().as_bytes())
}

/// Sends file `f`'s content and hashes it meanwhile: from [`HASH_BESIDE_FROM`] bytes on a
/// thread of its own over a mapping of the file where a core is likely idle for it (the
/// checksum then costs no wall time), else, by read and mmap, each piece as it passes, still
/// in the CPU's caches (no second pass over the file in memory, no thread taking turns with
/// the two busy ones); smaller files on this thread after sending. Returns what sending gave,
/// and the hash with the hashing's own time and its thread's CPU time (zero on this thread,
/// which counts its own). A failed send stops the hashing within 4 MiB.
fn send_hashing(
    sock: &mut TcpStream,
    f: &Outgoing,
    cfg: &SendConfig,
    gear: &mut SendGear,
    peer: &str,
) -> (Result<(Duration, Vec<PageDesc>)>, std::io::Result<Hashed>) {
    let timed = |stop: &AtomicBool| {
        let t = Instant::now();
        hash_beside(&f.file, f.size, stop)
            .map(|h| (h, t.elapsed(), (Duration::ZERO, Duration::ZERO)))
    };
    let stop = AtomicBool::new(false);
    let passes = matches!(cfg.method, SendMethod::Read | SendMethod::Mmap);
    if passes && !crate::transfer::spare_core_beside(sock) {
        let mut h = Inline::default();
        let sent = send_content(sock, f, cfg, gear, peer, Some(&mut h));
        let hashed = (*h.hasher.finalize().as_bytes(), h.busy, Default::default());
        return (sent, Ok(hashed));
    }
    if f.size < HASH_BESIDE_FROM {
        let sent = send_content(sock, f, cfg, gear, peer, None);
        return (sent, timed(&stop));
    }
    std::thread::scope(|s| {
        let hashing = s.spawn(|| {
            let cpu = crate::sys::net::rusage_thread();
            timed(&stop).map(|(h, t, _)| (h, t, cpu_since(&cpu)))
        });
        let sent = send_content(sock, f, cfg, gear, peer, None);
        if sent.is_err() {
            stop.store(true, Ordering::Relaxed);
        }
        let hashed = hashing
            .join()
            .unwrap_or_else(|_| Err(std::io::Error::other("the hashing thread failed")));
        (sent, hashed)
    })
}

/// A file hashed piece by piece as it passes through the sender, and the time that took.
#[derive(Default)]
struct Inline {
    hasher: blake3::Hasher,
    busy: Duration,
}

impl Inline {
    fn update(&mut self, data: &[u8]) {
        let t = Instant::now();
        self.hasher.update(data);
        self.busy += t.elapsed();
    }
}

/// A file's BLAKE3, the hashing's wall time, and its thread's CPU time (user, system).
type Hashed = ([u8; 32], Duration, (Duration, Duration));

/// Files from this size are hashed on a thread beside the sending (below it, starting a thread
/// costs more than the hashing).
pub const HASH_BESIDE_FROM: u64 = 1 << 20;

/// BLAKE3 of a file's first `size` bytes on this thread (its SIMD over 16 chunks at once),
/// mapped from [`HASH_BESIDE_FROM`] bytes, in 4 MiB steps until `stop` is set; a file that
/// shrinks is refused, as in [`hash_file`].
pub fn hash_beside(file: &File, size: u64, stop: &AtomicBool) -> std::io::Result<[u8; 32]> {
    const STEP: usize = 4 << 20;
    let map = match size >= HASH_BESIDE_FROM {
        true => Mapping::new(file, size as usize, false).ok(),
        false => None,
    };
    let Some(map) = map else {
        return hash_file(file, size);
    };
    let mut h = blake3::Hasher::new();
    for piece in map.as_slice().chunks(STEP) {
        if stop.load(Ordering::Relaxed) {
            return Err(std::io::Error::other("stopped: the send failed"));
        }
        h.update(piece);
    }
    if map.sigbus_hits() > 0 {
        return Err(std::io::Error::other("the file shrank while hashing"));
    }
    Ok(*h.finalize().as_bytes())
}

/// Files from this size are hashed on every core: below it, handing the work to other threads
/// costs more than it saves (BLAKE3's own advice is 128 KiB; a mapping costs its set-up too).
pub const HASH_PARALLEL_FROM: u64 = 1 << 20;

/// Accepts `cfg.link.connections` receivers on `listener` and sends every file, file i over
/// connection i % N. Waits at most `cfg.link.pace.idle` for each connection.
pub fn serve(listener: TcpListener, cfg: &SendConfig) -> Result<SideReport> {
    cfg.link.check()?;
    let files = prepare(cfg)?;
    serve_prepared(listener, cfg, files)
}

/// The files opened and checked, ready to be served.
pub struct FilesToSend(Vec<Outgoing>);

/// Opens and checks `cfg`'s files before anything listens, so that a receiver started
/// afterwards does not wait for it inside its own timing (as `iolab transfer` does).
pub fn prepare_files(cfg: &SendConfig) -> Result<FilesToSend> {
    cfg.link.check()?;
    prepare(cfg).map(FilesToSend)
}

/// [`serve`] with the files already prepared.
pub fn serve_files(
    listener: TcpListener,
    cfg: &SendConfig,
    files: FilesToSend,
) -> Result<SideReport> {
    serve_prepared(listener, cfg, files.0)
}

fn serve_prepared(
    listener: TcpListener,
    cfg: &SendConfig,
    files: Vec<Outgoing>,
) -> Result<SideReport> {
    let local = listener
        .local_addr()
        .map(|a| a.to_string())
        .unwrap_or_default();
    listener
        .set_nonblocking(true)
        .map_err(|e| Error::failed("cannot listen", describe_io(&e)).on(&local))?;
    let mut rejected = Vec::new();
    if cfg.link.raw {
        return serve_raw(&listener, cfg, &files, local, rejected);
    }
    let mut streams = Vec::new();
    let mut started = None;
    let mut acceptor = Acceptor::new(&listener, cfg, &local);
    for _ in 0..cfg.link.connections {
        let stream = acceptor.next(&mut rejected)?;
        started.get_or_insert_with(Instant::now);
        streams.push(stream);
    }
    let started = started.unwrap_or_else(Instant::now);
    let n = streams.len();
    let work = |c: usize, stream: (TcpStream, Session)| {
        let mine: Vec<(usize, &Outgoing)> = files
            .iter()
            .enumerate()
            .filter(|(i, _)| i % n == c)
            .collect();
        connection(stream, &mine, cfg)
    };
    let (records, user, sys) = run_connections(streams, "send failed", work)?;
    acceptor.finish(&mut rejected);
    Ok(SideReport {
        role: "send".into(),
        method: cfg.method.name().into(),
        peer: local,
        connections: n,
        files: records,
        wall: started.elapsed(),
        cpu_user: user,
        cpu_sys: sys,
        rejected,
        raw: false,
        sizes: cfg.link.sizes,
        pages_note: pages_note(cfg),
    })
}

fn pages_note(cfg: &SendConfig) -> Option<String> {
    if !cfg.link.pages {
        None
    } else if cfg.method != SendMethod::Mmap {
        Some(format!(
            "--pages describes mapped windows; the {} method maps none",
            cfg.method.name()
        ))
    } else {
        describe_limit()
    }
}

/// The raw stream: for each file in order, accept one connection, send the bytes, close.
fn serve_raw(
    listener: &TcpListener,
    cfg: &SendConfig,
    files: &[Outgoing],
    local: String,
    mut rejected: Vec<String>,
) -> Result<SideReport> {
    let mut acceptor = Acceptor::new(listener, cfg, &local);
    let cpu = crate::sys::net::rusage_thread();
    let mut gear = SendGear::new(cfg)?;
    let mut records = Vec::new();
    let mut started = None;
    for f in files {
        let (mut sock, _) = acceptor.next(&mut rejected)?;
        started.get_or_insert_with(Instant::now);
        let peer = sock
            .peer_addr()
            .map(|a| a.to_string())
            .unwrap_or_else(|_| "receiver".into());
        let (time, pages) = send_content(&mut sock, f, cfg, &mut gear, &peer, None)?;
        // No checksum to withhold on a raw stream: the sender's own exit says it.
        let changed = f.version.check(&f.file, &f.path, "sent");
        // End of file = end of stream. Read what the peer may have sent (nothing, normally) so
        // the close is a FIN, not a reset that could cut the bytes still in flight.
        let _ = sock.shutdown(std::net::Shutdown::Write);
        let _ = sock.set_read_timeout(Some(Duration::from_millis(200)));
        let mut sink = [0u8; 4096];
        while let Ok(n) = std::io::Read::read(&mut sock, &mut sink) {
            if n == 0 {
                break;
            }
        }
        let header = Header {
            name: f.name.clone(),
            size: f.size,
        };
        changed?;
        let mut rec = FileRecord::new(&header, &[0; 32], cfg.method.name(), time, Duration::ZERO);
        // None computed: said as nothing, never as the hash of zeros.
        rec.blake3.clear();
        rec.pages = pages;
        records.push(rec);
    }
    let (user, sys) = cpu_since(&cpu);
    acceptor.finish(&mut rejected);
    Ok(SideReport {
        role: "send".into(),
        method: cfg.method.name().into(),
        peer: local,
        connections: 1,
        files: records,
        wall: started.map(|s| s.elapsed()).unwrap_or_default(),
        cpu_user: user,
        cpu_sys: sys,
        rejected,
        raw: true,
        sizes: cfg.link.sizes,
        pages_note: pages_note(cfg),
    })
}

/// Sets up an accepted connection and runs the handshake, within `--handshake-timeout` in all
/// (a peer dripping bytes cannot hold it longer).
fn greet(sock: TcpStream, cfg: &SendConfig) -> Result<(TcpStream, Session)> {
    let peer = sock
        .peer_addr()
        .map(|a| a.to_string())
        .unwrap_or_else(|_| "receiver".into());
    let _ = sock.set_nonblocking(false);
    let _ = sock.set_nodelay(true);
    let pace = cfg.link.pace;
    let mut b = Bounded::new(&sock, &pace, pace.handshake, "the handshake");
    let session = if cfg.link.raw {
        Session::new(None, &[0; 16], &[0; 16])
    } else {
        handshake(&mut b, &cfg.link, &peer)?
    };
    b.finish();
    Ok((sock, session))
}

fn connection(
    (mut sock, mut session): (TcpStream, Session),
    files: &[(usize, &Outgoing)],
    cfg: &SendConfig,
) -> Result<ConnOut> {
    let cpu = crate::sys::net::rusage_thread();
    let peer = sock
        .peer_addr()
        .map(|a| a.to_string())
        .unwrap_or_else(|_| "receiver".into());
    let mut records = Vec::new();
    let mut hashing = (Duration::ZERO, Duration::ZERO);
    let sent = send_files(
        &mut sock,
        &mut session,
        files,
        cfg,
        &peer,
        &mut records,
        &mut hashing,
    );
    // The receiver answers a status, and with a failure its reason: after the end marker, or
    // as soon as it gave up (then a write here failed first: the reason is what to report).
    let wait = if sent.is_ok() {
        cfg.link.pace.idle
    } else {
        cfg.link.pace.idle.min(Duration::from_secs(2))
    };
    let _ = sock.set_read_timeout(Some(wait));
    let status = protocol::read_status(&mut sock).and_then(|s| {
        // Only the receiver that proved the token can say "all stored".
        match session.open(&mut sock, b"recv", &s.bytes, &peer) {
            Ok(()) => Ok(s.reason),
            Err(e) => Err(std::io::Error::other(e.cause)),
        }
    });
    match (sent, status) {
        (_, Ok(Some(why))) => {
            let why = if why.is_empty() {
                "see its message".to_string()
            } else {
                why
            };
            Err(Error::failed(
                "transfer failed",
                format!("the receiver reported a failure: {why}"),
            )
            .on(&peer))
        }
        (Err(e), _) => Err(e),
        (Ok(()), Ok(None)) => {
            // This thread's CPU and its hashing threads'.
            let (user, sys) = cpu_since(&cpu);
            Ok((records, (user + hashing.0, sys + hashing.1)))
        }
        (Ok(()), Err(e)) => {
            Err(Error::failed("transfer failed", protocol::timeout_text(&e)).on(&peer))
        }
    }
}

/// Sends this connection's files and the end marker; adds the CPU time (user, system) of the
/// threads that hashed them to `hashing`.
fn send_files(
    sock: &mut TcpStream,
    session: &mut Session,
    files: &[(usize, &Outgoing)],
    cfg: &SendConfig,
    peer: &str,
    records: &mut Vec<(usize, FileRecord)>,
    hashing: &mut (Duration, Duration),
) -> Result<()> {
    let peer = peer.to_string();
    // Set up once, before any file's window: each window holds that file's transfer only.
    let mut gear = SendGear::new(cfg)?;
    for (i, f) in files {
        let header = Header {
            name: f.name.clone(),
            size: f.size,
        };
        let pace = cfg.link.pace;
        let mut b = Bounded::new(sock, &pace, pace.handshake, "sending a header");
        protocol::send_all(&mut b, &session.seal(b"send", &header.encode()), &peer)?;
        b.finish();
        let (sent, hashed) = send_hashing(sock, f, cfg, &mut gear, &peer);
        let (time, pages) = sent?;
        let (hash, hash_time, (user, sys)) =
            hashed.map_err(|e| Error::io("read failed", &f.path, &e))?;
        hashing.0 += user;
        hashing.1 += sys;
        // The hash proves the wire, not the file: a file written while it was sent (a mix of
        // old and new bytes) gets no checksum, and the receiver, missing it, keeps nothing.
        f.version.check(&f.file, &f.path, "sent")?;
        // The content's BLAKE3 follows it (tagged with a token, as every frame is).
        let mut b = Bounded::new(sock, &pace, pace.handshake, "sending a checksum");
        protocol::send_all(&mut b, &session.seal(b"send", &hash), &peer)?;
        b.finish();
        let mut rec = FileRecord::new(&header, &hash, cfg.method.name(), time, hash_time);
        rec.pages = pages;
        records.push((*i, rec));
    }
    protocol::send_all(sock, &session.seal(b"send", &[protocol::FRAME_END]), &peer)?;
    Ok(())
}

/// Sender side of the hello exchange: hello out, the receiver's hello (and proof) in, our proof out.
fn handshake(sock: &mut (impl Read + Write), link: &Link, peer: &str) -> Result<Session> {
    let (token, connections) = (link.token.as_deref(), link.connections);
    let mine = Hello::ours(token, connections);
    protocol::send_all(sock, &mine.encode(), peer)?;
    let theirs = protocol::read_hello(sock, "receiver", peer)?;
    theirs.check_token_use(token, peer)?;
    theirs.check_connections(connections, "receiver", peer)?;
    let nonces = (&mine.nonce, &theirs.nonce);
    if let Some(t) = token {
        // The receiver, which connected, proves first; this side, which accepted, proves last,
        // so a stranger that connects learns nothing before it has proved the token.
        protocol::expect_proof(sock, t, b"recv", nonces, peer)?;
        protocol::send_all(
            sock,
            protocol::proof(t, b"send", nonces.0, nonces.1).as_bytes(),
            peer,
        )?;
    }
    Ok(Session::new(token, nonces.0, nonces.1))
}

/// Writes all of `data`, counting into `sent`, and fails once the transfer falls below the
/// floor rate (a receiver that reads a byte a second would otherwise hold the sender forever).
fn put(
    sock: &mut TcpStream,
    mut data: &[u8],
    pace: &Pace,
    begun: Instant,
    sent: &mut u64,
) -> std::io::Result<()> {
    while !data.is_empty() {
        match sock.write(data) {
            Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
            Ok(n) => {
                data = &data[n..];
                *sent += n as u64;
                pace.check(*sent, begun)?;
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
