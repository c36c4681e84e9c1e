//! The receiver: connects, proves the token (if any), and stores each file under a temporary
//! name, renamed only when complete and its BLAKE3 matches the header. Names, sizes and existing
//! files are checked before a byte is written; a failure removes the partial output.

use super::protocol::{self, Frame, Header, Hello};
use super::{ConnOut, FileRecord, RecvMethod, SideReport, cpu_since, run_connections};
use crate::error::{Error, Result, describe_io};
use crate::sys::map::WritableMapping;
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
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
}

/// Removes a temporary file unless it was renamed into place.
struct Partial {
    path: PathBuf,
    keep: bool,
}

impl Drop for Partial {
    fn drop(&mut self) {
        if !self.keep {
            let _ = std::fs::remove_file(&self.path);
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

/// Connects `cfg.connections` times and receives every file the sender has.
pub fn receive(cfg: &RecvConfig) -> Result<SideReport> {
    if cfg.connections == 0 {
        return Err(Error::usage(
            "invalid --connections",
            "it must be at least 1",
        ));
    }
    if !cfg.discard && !cfg.out_dir.is_dir() {
        return Err(Error::usage("invalid output directory", "not a directory").at(&cfg.out_dir));
    }
    let started = Instant::now();
    let socks: Vec<TcpStream> = (0..cfg.connections)
        .map(|_| connect(cfg))
        .collect::<Result<_>>()?;
    let n = socks.len();
    let (files, user, sys) = run_connections(socks, "receive failed", |c, sock| {
        connection(sock, c, n, cfg)
    })?;
    Ok(SideReport {
        role: "recv".into(),
        method: match (cfg.discard, cfg.sync) {
            (true, _) => "discard".into(),
            (false, true) => format!("{}+fsync", cfg.method.name()),
            (false, false) => cfg.method.name().into(),
        },
        peer: cfg.connect.clone(),
        connections: n,
        files,
        wall: started.elapsed(),
        cpu_user: user,
        cpu_sys: sys,
        rejected: Vec::new(),
    })
}

fn handshake(sock: &mut TcpStream, token: Option<&str>, peer: &str) -> Result<()> {
    let theirs = protocol::read_hello(sock, "sender", peer)?;
    let mine = Hello::ours(token);
    protocol::send_all(sock, &mine.encode(), peer)?;
    theirs.check_token_use(token, peer)?;
    if let Some(t) = token {
        protocol::send_all(
            sock,
            protocol::proof(t, b"recv", &theirs.nonce).as_bytes(),
            peer,
        )?;
        protocol::expect_proof(sock, t, b"send", &mine.nonce, peer)?;
    }
    Ok(())
}

fn connection(mut sock: TcpStream, c: usize, n: usize, cfg: &RecvConfig) -> Result<ConnOut> {
    let cpu = crate::sys::net::rusage_thread();
    let peer = cfg.connect.clone();
    let _ = sock.set_read_timeout(Some(cfg.timeout));
    let _ = sock.set_write_timeout(Some(cfg.timeout));
    handshake(&mut sock, cfg.token.as_deref(), &peer)?;
    let mut records = Vec::new();
    let mut j = 0usize;
    let out = loop {
        let header = match protocol::read_frame(&mut sock, &peer) {
            Ok(Frame::End) => break Ok(()),
            Ok(Frame::File(h)) => h,
            Err(e) => break Err(e),
        };
        let index = c + j * n;
        j += 1;
        match store(&mut sock, &header, index, cfg, &peer) {
            Ok(r) => records.push((index, r)),
            Err(e) => break Err(e),
        }
    };
    // Tell the sender how it went (it may already be gone after a failure).
    let _ = sock.write_all(&[if out.is_ok() { 0 } else { 1 }]);
    out?;
    Ok((records, cpu_since(&cpu)))
}

fn store(
    sock: &mut TcpStream,
    h: &Header,
    index: usize,
    cfg: &RecvConfig,
    peer: &str,
) -> Result<FileRecord> {
    let dest = cfg
        .names
        .get(index)
        .cloned()
        .unwrap_or_else(|| cfg.out_dir.join(&h.name));
    let max = match cfg.max_size {
        Some(m) => m,
        None if cfg.discard => u64::MAX,
        None => free_space(
            dest.parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(Path::new(".")),
        ),
    };
    if h.size > max {
        return Err(Error::failed(
            "refused",
            format!("{} announces {} bytes, more than the {} allowed (--max-size, default the free space)", h.name, h.size, max),
        )
        .on(peer));
    }
    let t = Instant::now();
    if cfg.discard {
        let mut hasher = blake3::Hasher::new();
        let mut buf = vec![0u8; 1 << 20];
        let mut got = 0u64;
        while got < h.size {
            let want = (h.size - got).min(buf.len() as u64) as usize;
            let k = read_some(sock, &mut buf[..want], h, got, peer)?;
            hasher.update(&buf[..k]);
            got += k as u64;
        }
        let time = t.elapsed();
        let hash = hasher.finalize();
        if hash != blake3::Hash::from_bytes(h.hash) {
            return Err(Error::failed(
                "checksum mismatch",
                format!("{}: BLAKE3 differs from the header", h.name),
            )
            .on(peer));
        }
        return Ok(FileRecord::new(h, "discard", time, Duration::ZERO));
    }
    crate::output::refuse_existing(&dest, cfg.force)?;
    let tmp = crate::output::temp_path(&dest, &index.to_string())?;
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&tmp)
        .map_err(|e| Error::io("cannot create", &dest, &e))?;
    let mut partial = Partial {
        path: tmp.clone(),
        keep: false,
    };
    match cfg.method {
        RecvMethod::Write => recv_write(sock, &file, h, peer)?,
        RecvMethod::Mmap => recv_mmap(sock, &file, h, peer, &dest)?,
        RecvMethod::Splice => recv_splice(sock, &file, h, peer)?,
    }
    if cfg.sync {
        file.sync_all()
            .map_err(|e| Error::io("fsync failed", &dest, &e))?;
    }
    let time = t.elapsed();
    let v = Instant::now();
    let hash = super::sender::hash_file(&file, h.size)
        .map_err(|e| Error::io("verify failed", &dest, &e))?;
    let verify = v.elapsed();
    if blake3::Hash::from_bytes(hash) != blake3::Hash::from_bytes(h.hash) {
        return Err(Error::failed(
            "checksum mismatch",
            format!(
                "{}: BLAKE3 of the stored bytes differs from the header; not kept",
                h.name
            ),
        )
        .at(&dest));
    }
    crate::output::place(&tmp, &dest, cfg.force)?;
    partial.keep = true;
    Ok(FileRecord::new(h, cfg.method.name(), time, verify))
}

fn free_space(dir: &Path) -> u64 {
    File::open(dir)
        .ok()
        .and_then(|f| crate::sys::fs_free_bytes(&f).ok())
        .unwrap_or(u64::MAX)
}

fn cut_short(h: &Header, got: u64, peer: &str) -> Error {
    Error::failed(
        "receive failed",
        format!(
            "the sender closed the connection in {} after {got} of {} bytes",
            h.name, h.size
        ),
    )
    .on(peer)
}

fn lost(h: &Header, got: u64, peer: &str, e: &std::io::Error) -> Error {
    Error::failed(
        "receive failed",
        format!(
            "{} after {got} of {} bytes: {}",
            h.name,
            h.size,
            protocol::timeout_text(e)
        ),
    )
    .on(peer)
}

/// One read of at most `buf.len()` bytes; end of stream is an error naming the file.
fn read_some(
    sock: &mut TcpStream,
    buf: &mut [u8],
    h: &Header,
    got: u64,
    peer: &str,
) -> Result<usize> {
    loop {
        match sock.read(buf) {
            Ok(0) => return Err(cut_short(h, got, peer)),
            Ok(k) => return Ok(k),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => {
                return Err(lost(h, got, peer, &e));
            }
        }
    }
}

fn recv_write(sock: &mut TcpStream, file: &File, h: &Header, peer: &str) -> Result<()> {
    // Sized to the file: a small file should not pay for touching a 1 MiB buffer.
    let mut buf = crate::sys::buf::AlignedBuf::new(h.size.min(1 << 20) as usize);
    let mut w = file;
    let mut got = 0u64;
    while got < h.size {
        let want = (h.size - got).min(buf.len() as u64) as usize;
        let k = read_some(sock, &mut buf.as_mut_slice()[..want], h, got, peer)?;
        w.write_all(&buf.as_slice()[..k])
            .map_err(|e| Error::failed("write failed", describe_io(&e)).on(&h.name))?;
        got += k as u64;
    }
    Ok(())
}

fn recv_mmap(sock: &mut TcpStream, file: &File, h: &Header, peer: &str, dest: &Path) -> Result<()> {
    if h.size == 0 {
        return Ok(());
    }
    file.set_len(h.size)
        .map_err(|e| Error::io("write failed", dest, &e))?;
    match crate::sys::fallocate(file, h.size) {
        Ok(()) => {}
        Err(e) if e.raw_os_error() == Some(libc::EOPNOTSUPP) => {}
        Err(e) => return Err(Error::io("write failed", dest, &e)),
    }
    let mut map = WritableMapping::new(file, h.size as usize)
        .map_err(|e| Error::failed("cannot map", describe_io(&e)).at(dest))?;
    let mut got = 0usize;
    while (got as u64) < h.size {
        let end = (got + (1 << 20)).min(h.size as usize);
        let k = read_some(sock, &mut map.as_mut_slice()[got..end], h, got as u64, peer)?;
        got += k;
    }
    if map.sigbus_hits() > 0 {
        return Err(
            Error::failed("write failed", "the mapping lost its backing (no space?)").at(dest),
        );
    }
    Ok(())
}

fn recv_splice(sock: &mut TcpStream, file: &File, h: &Header, peer: &str) -> Result<()> {
    let (r, w) =
        crate::sys::net::pipe().map_err(|e| Error::failed("pipe failed", describe_io(&e)))?;
    let mut got = 0u64;
    while got < h.size {
        let want = (h.size - got).min(1 << 20) as usize;
        let k = match crate::sys::net::splice(sock, None, &w, None, want) {
            Ok(0) => return Err(cut_short(h, got, peer)),
            Ok(k) => k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                return Err(lost(h, got, peer, &e));
            }
        };
        empty_pipe(k, |left| {
            crate::sys::net::splice(&r, None, file, Some(&mut got), left)
        })
        .map_err(|e| Error::io("write failed", Path::new(&h.name), &e))?;
    }
    Ok(())
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
mod tests {
    use super::empty_pipe;
    use std::io;

    #[test]
    fn a_splice_that_moves_nothing_ends_the_loop_with_an_error() {
        let mut calls = 0;
        let err = empty_pipe(10, |_| {
            calls += 1;
            Ok(if calls == 1 { 4 } else { 0 })
        })
        .unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::WriteZero);
        assert!(err.to_string().contains("6 bytes still"), "{err}");
        let mut moved = Vec::new();
        empty_pipe(10, |left| {
            moved.push(left);
            match moved.len() {
                1 => Err(io::Error::from(io::ErrorKind::Interrupted)),
                _ => Ok(left.min(7)),
            }
        })
        .unwrap();
        assert_eq!(
            moved,
            [10, 10, 3],
            "interrupted calls are retried, short ones continued"
        );
    }
}
