//! The wire protocol (docs/protocol.md): a hello each way (magic, version, flags, nonce, and with a
//! token a proof of it), then per file a header (name, size), the content and the BLAKE3 of the
//! content, then an end marker. All integers little-endian.

use crate::error::{Error, Result};
use std::io::{self, Read, Write};
use std::time::{Duration, Instant};

mod pace;
pub use pace::{Bounded, Pace};

/// The first bytes of every hello.
pub const MAGIC: [u8; 8] = *b"IOLABXFR";
/// The protocol version spoken. 2: proofs over both nonces, and with a token every header, the
/// end marker and the status carry a tag keyed from the token and both nonces. 3: a file's
/// BLAKE3 follows its content (the sender hashes while it sends) instead of sitting in its
/// header, and with a token carries a tag of its own.
pub const VERSION: u16 = 3;
/// Hello flag: this side holds a token.
pub const FLAG_TOKEN: u16 = 1;
/// Hello flags, bits 8-15: the number of connections this side uses (0: not said).
pub const CONNECTIONS_SHIFT: u32 = 8;
/// Longest file name accepted, bytes.
pub const MAX_NAME: usize = 255;

/// A hello: who speaks which version, whether a token is required, and a fresh nonce.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hello {
    /// Protocol version.
    pub version: u16,
    /// Flags ([`FLAG_TOKEN`]).
    pub flags: u16,
    /// A fresh random nonce for the token proofs.
    pub nonce: [u8; 16],
}

/// Bytes of an encoded hello.
pub const HELLO_LEN: usize = 8 + 2 + 2 + 16;

impl Hello {
    /// This side's hello: the version, whether it holds a token, how many connections it
    /// uses (up to 255 said), a fresh nonce.
    pub fn ours(token: Option<&str>, connections: usize) -> Hello {
        let conns = if connections <= 255 { connections } else { 0 } as u16;
        Hello {
            version: VERSION,
            flags: (if token.is_some() { FLAG_TOKEN } else { 0 }) | conns << CONNECTIONS_SHIFT,
            nonce: nonce(),
        }
    }

    /// The connections the peer said it uses, if it said.
    pub fn connections(&self) -> Option<usize> {
        Some((self.flags >> CONNECTIONS_SHIFT) as usize).filter(|n| *n > 0)
    }

    /// Refuses a peer that uses another number of connections: the files would go round-robin
    /// over connections one side never opens or never serves.
    pub fn check_connections(&self, ours: usize, peer_role: &str, peer: &str) -> Result<()> {
        match self.connections() {
            Some(theirs) if theirs != ours => Err(Error::failed(
                "handshake failed",
                format!(
                    "the {peer_role} uses {theirs} connection(s), this side {ours}: give both the same --connections"
                ),
            )
            .on(peer)),
            _ => Ok(()),
        }
    }

    /// Refuses a peer whose hello says it holds a token when this side has none, or the reverse.
    pub fn check_token_use(&self, token: Option<&str>, peer: &str) -> Result<()> {
        if (self.flags & FLAG_TOKEN != 0) != token.is_some() {
            return Err(Error::failed(
                "handshake failed",
                "only one side has a token (--token or IOLAB_TOKEN)",
            )
            .on(peer));
        }
        Ok(())
    }

    /// The hello on the wire.
    pub fn encode(&self) -> [u8; HELLO_LEN] {
        let mut b = [0u8; HELLO_LEN];
        b[..8].copy_from_slice(&MAGIC);
        b[8..10].copy_from_slice(&self.version.to_le_bytes());
        b[10..12].copy_from_slice(&self.flags.to_le_bytes());
        b[12..].copy_from_slice(&self.nonce);
        b
    }

    /// Decodes and checks magic and version.
    pub fn decode(b: &[u8; HELLO_LEN]) -> Result<Hello, String> {
        if b[..8] != MAGIC {
            return Err(format!(
                "wrong magic {:?}: not an iolab transfer peer",
                String::from_utf8_lossy(&b[..8])
            ));
        }
        let version = u16::from_le_bytes([b[8], b[9]]);
        if version != VERSION {
            return Err(format!(
                "protocol version {version}, this iolab speaks {VERSION}"
            ));
        }
        let mut nonce = [0u8; 16];
        nonce.copy_from_slice(&b[12..]);
        Ok(Hello {
            version,
            flags: u16::from_le_bytes([b[10], b[11]]),
            nonce,
        })
    }
}

/// A file header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    /// File name (no directories).
    pub name: String,
    /// Content bytes that follow.
    pub size: u64,
}

impl Header {
    /// The header on the wire.
    pub fn encode(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(1 + 2 + self.name.len() + 8);
        b.push(FRAME_FILE);
        b.extend_from_slice(&(self.name.len() as u16).to_le_bytes());
        b.extend_from_slice(self.name.as_bytes());
        b.extend_from_slice(&self.size.to_le_bytes());
        b
    }
}

/// Checks a name a peer sent: one plain file name, nothing that could leave the output directory.
pub fn check_name(name: &[u8]) -> Result<String, String> {
    if name.is_empty() {
        return Err("an empty file name".into());
    }
    if name.len() > MAX_NAME {
        return Err(format!(
            "a file name of {} bytes (at most {MAX_NAME})",
            name.len()
        ));
    }
    let s = std::str::from_utf8(name).map_err(|_| "a file name that is not UTF-8".to_string())?;
    if s == "." {
        return Err("the file name \".\" (it names the directory itself)".into());
    }
    if s.starts_with("..") {
        return Err(format!(
            "the file name {s:?} (names starting with \"..\" are refused)"
        ));
    }
    if s.contains('/') {
        return Err(format!("the file name {s:?} (\"/\" is refused)"));
    }
    if s.chars().any(|c| c.is_control()) {
        return Err(format!(
            "the file name {s:?} (NUL and control characters are refused)"
        ));
    }
    // Bidirectional controls make a name display as another ("exe.txt" shown for "txt.exe");
    // line separators (U+2028, U+2029) and zero-width characters break or hide it.
    if s.chars().any(crate::shown::is_hidden) {
        return Err(format!(
            "the file name {} (bidirectional controls, line separators and invisible characters \
             are refused)",
            crate::shown::text(s)
        ));
    }
    Ok(s.to_string())
}

/// Frame tag: a file follows.
pub const FRAME_FILE: u8 = 1;
/// Frame tag: no more files.
pub const FRAME_END: u8 = 0;

/// What the reader found instead of the next frame.
#[derive(Debug)]
pub enum Frame {
    /// A file header; its content follows.
    File(Header),
    /// The end of the files.
    End,
}

/// Reads exactly `buf.len()` bytes, or says how many came before the stream ended.
pub fn read_full(r: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// Reads the next frame; a name is checked before anything else is read.
pub fn read_frame(r: &mut impl Read, peer: &str) -> Result<Frame> {
    let bad = |what: String| Error::failed("bad header", what).on(peer);
    let io = |e: io::Error| Error::failed("receive failed", timeout_text(&e)).on(peer);
    let mut kind = [0u8; 1];
    if read_full(r, &mut kind).map_err(io)? == 0 {
        return Err(Error::failed(
            "receive failed",
            "the sender closed the connection before the end marker",
        )
        .on(peer));
    }
    match kind[0] {
        FRAME_END => return Ok(Frame::End),
        FRAME_FILE => {}
        k => return Err(bad(format!("unknown frame type {k}"))),
    }
    let mut len = [0u8; 2];
    let got = read_full(r, &mut len).map_err(io)?;
    if got < 2 {
        return Err(bad(format!("truncated header: {} of 2 length bytes", got)));
    }
    let n = u16::from_le_bytes(len) as usize;
    if n > MAX_NAME {
        return Err(bad(format!(
            "a file name of {n} bytes (at most {MAX_NAME})"
        )));
    }
    let mut name = vec![0u8; n];
    let got = read_full(r, &mut name).map_err(io)?;
    if got < n {
        return Err(bad(format!("truncated header: {got} of {n} name bytes")));
    }
    let name = check_name(&name).map_err(|w| Error::failed("refused", w).on(peer))?;
    let mut size = [0u8; 8];
    let got = read_full(r, &mut size).map_err(io)?;
    if got < 8 {
        return Err(bad(format!(
            "truncated header of {name}: {got} of 8 size bytes"
        )));
    }
    let size = u64::from_le_bytes(size);
    Ok(Frame::File(Header { name, size }))
}

/// Bytes of a file's digest, which follows its content: the BLAKE3 of the content.
pub const DIGEST_LEN: usize = 32;

/// Reads the digest that follows file `name`'s content.
pub fn read_digest(r: &mut impl Read, name: &str, peer: &str) -> Result<[u8; DIGEST_LEN]> {
    let mut d = [0u8; DIGEST_LEN];
    let got = read_full(r, &mut d)
        .map_err(|e| Error::failed("receive failed", timeout_text(&e)).on(peer))?;
    if got < DIGEST_LEN {
        return Err(Error::failed(
            "bad header",
            format!("truncated checksum of {name}: {got} of {DIGEST_LEN} bytes after its content"),
        )
        .on(peer));
    }
    Ok(d)
}

/// The proof of a token for a role over both hellos' nonces (the sender's first): neither side
/// can choose all of what the other proves, and a proof is good for one connection only.
pub fn proof(token: &str, role: &[u8], sender: &[u8; 16], receiver: &[u8; 16]) -> blake3::Hash {
    let key = blake3::derive_key("iolab transfer token v2", token.as_bytes());
    let mut h = blake3::Hasher::new_keyed(&key);
    h.update(role);
    h.update(sender);
    h.update(receiver);
    h.finalize()
}

/// What ties the frames of one connection to the handshake that opened it: with a token, a key
/// derived from the token and both nonces, which tags every header, the end marker and the
/// status with a running count (so nothing can be changed, dropped, replayed or reordered by
/// someone who does not hold the token); without one, nothing.
#[derive(Debug, Clone)]
pub struct Session {
    key: Option<[u8; 32]>,
    sent: u64,
    received: u64,
}

/// Bytes of a frame's tag.
pub const TAG_LEN: usize = 32;

impl Session {
    /// The session of a connection whose hellos carried `sender` and `receiver` nonces.
    pub fn new(token: Option<&str>, sender: &[u8; 16], receiver: &[u8; 16]) -> Session {
        let key = token.map(|t| {
            let base = blake3::derive_key("iolab transfer session v2", t.as_bytes());
            let mut h = blake3::Hasher::new_keyed(&base);
            h.update(sender);
            h.update(receiver);
            *h.finalize().as_bytes()
        });
        Session {
            key,
            sent: 0,
            received: 0,
        }
    }

    fn tag(&self, role: &[u8], n: u64, bytes: &[u8]) -> Option<blake3::Hash> {
        self.key.map(|k| {
            let mut h = blake3::Hasher::new_keyed(&k);
            h.update(role);
            h.update(&n.to_le_bytes());
            h.update(bytes);
            h.finalize()
        })
    }

    /// `bytes` followed by their tag (when there is a key), for sending by `role`.
    pub fn seal(&mut self, role: &[u8], bytes: &[u8]) -> Vec<u8> {
        let mut out = bytes.to_vec();
        if let Some(t) = self.tag(role, self.sent, bytes) {
            out.extend_from_slice(t.as_bytes());
        }
        self.sent += 1;
        out
    }

    /// Reads and checks the tag of `bytes` just received from `role` (nothing without a key).
    pub fn open(&mut self, r: &mut impl Read, role: &[u8], bytes: &[u8], peer: &str) -> Result<()> {
        let n = self.received;
        self.received += 1;
        let Some(want) = self.tag(role, n, bytes) else {
            return Ok(());
        };
        let mut got = [0u8; TAG_LEN];
        let k = read_full(r, &mut got)
            .map_err(|e| Error::failed("receive failed", timeout_text(&e)).on(peer))?;
        if k < TAG_LEN || blake3::Hash::from_bytes(got) != want {
            return Err(Error::failed(
                "refused",
                "a frame's tag does not match the token and this connection's handshake (altered, replayed or injected)",
            )
            .on(peer));
        }
        Ok(())
    }
}

/// Sixteen fresh random bytes.
pub fn nonce() -> [u8; 16] {
    let mut n = [0u8; 16];
    if std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut n))
        .is_err()
    {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        let mut s = t.as_nanos() as u64 ^ (std::process::id() as u64) << 32;
        n[..8].copy_from_slice(&crate::workload::splitmix64(&mut s).to_le_bytes());
        n[8..].copy_from_slice(&crate::workload::splitmix64(&mut s).to_le_bytes());
    }
    n
}

/// An I/O error's text, with a timeout named as such (a deadline's own words when it has them).
pub fn timeout_text(e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut if e.get_ref().is_some() => {
            e.to_string()
        }
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => {
            "the peer was idle past the timeout".into()
        }
        _ => crate::error::describe_io(e),
    }
}

/// Reads and checks the peer's hello; `who` names the peer in the message ("sender").
pub fn read_hello(r: &mut impl Read, who: &str, peer: &str) -> Result<Hello> {
    let mut b = [0u8; HELLO_LEN];
    let got = read_full(r, &mut b)
        .map_err(|e| Error::failed("handshake failed", timeout_text(&e)).on(peer))?;
    if got < HELLO_LEN {
        return Err(Error::failed(
            "handshake failed",
            format!("the {who} sent {got} of {HELLO_LEN} hello bytes"),
        )
        .on(peer));
    }
    Hello::decode(&b).map_err(|w| Error::failed("handshake failed", w).on(peer))
}

/// Reads the peer's proof of `token` for `role` over both nonces, and checks it in constant time
/// (`blake3::Hash` equality).
pub fn expect_proof(
    r: &mut impl Read,
    token: &str,
    role: &[u8],
    nonces: (&[u8; 16], &[u8; 16]),
    peer: &str,
) -> Result<()> {
    let mut p = [0u8; 32];
    match read_full(r, &mut p) {
        Ok(32) => {}
        Err(e) if e.get_ref().is_some() => {
            return Err(Error::failed("handshake failed", timeout_text(&e)).on(peer));
        }
        _ => {
            return Err(Error::failed(
                "handshake failed",
                "wrong token (the peer closed the connection)",
            )
            .on(peer));
        }
    }
    if blake3::Hash::from_bytes(p) != proof(token, role, nonces.0, nonces.1) {
        return Err(Error::failed("handshake failed", "wrong token").on(peer));
    }
    Ok(())
}

/// Longest failure reason a receiver sends after its status byte.
pub const MAX_REASON: usize = 1000;

/// The receiver's answer after the end marker (or when it gives up): 0 for all stored and
/// verified; 1, a little-endian u16 length and that many bytes of UTF-8 saying why.
pub fn status_bytes(failure: Option<&str>) -> Vec<u8> {
    match failure {
        None => vec![0],
        Some(why) => {
            let mut cut = why.len().min(MAX_REASON);
            while !why.is_char_boundary(cut) {
                cut -= 1;
            }
            let mut b = vec![1];
            b.extend_from_slice(&(cut as u16).to_le_bytes());
            b.extend_from_slice(&why.as_bytes()[..cut]);
            b
        }
    }
}

/// A receiver's status as read: `reason` is `None` when all was stored, else why not (possibly
/// empty); `bytes` is what came on the wire, for checking its tag.
pub struct Status {
    /// Why the receiver failed, or `None`.
    pub reason: Option<String>,
    /// The status as it came.
    pub bytes: Vec<u8>,
}

/// Reads a receiver's status; `Err` when none came.
pub fn read_status(r: &mut impl Read) -> io::Result<Status> {
    let mut s = [0u8; 1];
    if read_full(r, &mut s)? == 0 {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "the receiver closed the connection before confirming",
        ));
    }
    if s[0] == 0 {
        return Ok(Status {
            reason: None,
            bytes: vec![0],
        });
    }
    let mut len = [0u8; 2];
    let got = read_full(r, &mut len)?;
    let mut bytes = vec![s[0]];
    bytes.extend_from_slice(&len[..got]);
    if got < 2 {
        return Ok(Status {
            reason: Some(String::new()),
            bytes,
        });
    }
    let n = (u16::from_le_bytes(len) as usize).min(MAX_REASON);
    let mut why = vec![0u8; n];
    let got = read_full(r, &mut why)?;
    why.truncate(got);
    bytes.extend_from_slice(&why);
    // The peer's words go to a terminal: no control characters (escape sequences) and no
    // bidirectional controls (which reorder what follows them on the line) pass.
    let reason = String::from_utf8_lossy(&why)
        .chars()
        .map(|c| if crate::shown::is_hidden(c) { '?' } else { c })
        .collect();
    Ok(Status {
        reason: Some(reason),
        bytes,
    })
}

/// Writes all of `b`, naming the peer on failure.
pub fn send_all(w: &mut impl Write, b: &[u8], peer: &str) -> Result<()> {
    w.write_all(b)
        .map_err(|e| Error::failed("send failed", timeout_text(&e)).on(peer))
}

#[cfg(test)]
mod tests;
