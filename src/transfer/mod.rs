//! Moving files over TCP: the wire protocol, the sender (read, mmap, sendfile, splice) and the
//! receiver (write, mmap, splice), with verification by BLAKE3 and nothing kept that failed.

pub mod protocol;
pub mod receiver;
pub mod sender;

use serde::{Deserialize, Serialize};
use std::time::Duration;

/// The course programs' port, iolab's default.
pub const DEFAULT_PORT: u16 = 2325;

crate::named_enum! {
    /// How the sender moves a file's bytes into the socket.
    pub enum SendMethod {
        /// read(2) into a buffer, then send (`fcntl` is the classic name).
        Read = "read" | "fcntl",
        /// send straight from a mapping of the file.
        Mmap = "mmap",
        /// sendfile(2): file to socket inside the kernel.
        Sendfile = "sendfile",
        /// splice(2) through a pipe.
        Splice = "splice",
    }
}

crate::named_enum! {
    /// How the receiver stores the bytes it takes from the socket.
    pub enum RecvMethod {
        /// recv into a buffer, then write(2) (`fcntl` is the classic name).
        Write = "write" | "fcntl",
        /// recv straight into a mapping of the sized file.
        Mmap = "mmap",
        /// splice(2) socket to pipe to file.
        Splice = "splice",
    }
}

/// How many bytes each step of a transfer moves: the read/write buffer (`--chunk`) and the
/// mapped window (`--map-size`; `None` maps a whole file at once).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ChunkSizes {
    /// Bytes per read/write/splice call (fcntl methods), and per send from a whole-file mapping.
    pub chunk: usize,
    /// Bytes per mapped window (mmap methods), each sent in one call; `None`: the whole file in
    /// one mapping, made before the file's timed window.
    pub map_size: Option<usize>,
}

impl Default for ChunkSizes {
    fn default() -> Self {
        ChunkSizes {
            chunk: Self::DEFAULT_CHUNK,
            map_size: None,
        }
    }
}

impl ChunkSizes {
    /// iolab's buffer by default: 1 MiB.
    pub const DEFAULT_CHUNK: usize = 1 << 20;
    /// The course programs' sizes: `BUF_SIZE 512`, `MAP_SIZE 8192`.
    pub const CLASSIC: ChunkSizes = ChunkSizes {
        chunk: 512,
        map_size: Some(8192),
    };

    /// Refuses a zero chunk and a window that is not a whole number of pages.
    pub fn check(&self) -> crate::error::Result<()> {
        if self.chunk == 0 {
            return Err(crate::error::Error::usage(
                "invalid --chunk",
                "it must be at least 1 byte",
            ));
        }
        if let Some(m) = self.map_size {
            let page = crate::sys::page_size();
            if m == 0 || !m.is_multiple_of(page) {
                return Err(crate::error::Error::usage(
                    "invalid --map-size",
                    format!("{m} bytes: a mapped window is a whole number of {page}-byte pages"),
                ));
            }
        }
        Ok(())
    }

    /// The window for a stream of unknown length: `--map-size`, else the chunk rounded up to
    /// whole pages.
    pub fn stream_window(&self) -> usize {
        let page = crate::sys::page_size();
        self.map_size
            .unwrap_or_else(|| self.chunk.div_ceil(page).max(1) * page)
    }
}

/// What both sides of a transfer settle on their own: connections, token, a slow peer's
/// allowance, framing, buffer sizes, page records.
#[derive(Debug, Clone)]
pub struct Link {
    /// Parallel connections (files go round-robin).
    pub connections: usize,
    /// A shared secret both sides must prove, if any.
    pub token: Option<String>,
    /// What a slow peer is allowed (idle time, handshake time, content floor).
    pub pace: protocol::Pace,
    /// A raw stream: no hello, header or status; one connection per file, in order, closed at
    /// its end (what `nc -l` or the course's programs send); the receiver names the files.
    pub raw: bool,
    /// Buffer and mapped-window sizes.
    pub sizes: ChunkSizes,
    /// Record each mapped page's descriptor (mmap).
    pub pages: bool,
}

impl Default for Link {
    /// One connection, no token, 30 s, the framed protocol, 1 MiB chunks, whole-file mappings.
    fn default() -> Link {
        Link {
            connections: 1,
            token: None,
            pace: protocol::Pace::DEFAULT,
            raw: false,
            sizes: ChunkSizes::default(),
            pages: false,
        }
    }
}

impl Link {
    /// The checks both sides make: at least one connection, sane sizes, and a raw stream on one
    /// connection without a token (it has no handshake to prove one).
    pub fn check(&self) -> crate::error::Result<()> {
        use crate::error::Error;
        if self.connections == 0 {
            return Err(Error::usage(
                "invalid --connections",
                "it must be at least 1",
            ));
        }
        self.sizes.check()?;
        if self.raw && self.connections != 1 {
            return Err(Error::usage(
                "invalid --connections",
                "a raw stream uses one connection per file, one after the other",
            ));
        }
        if self.raw && self.token.is_some() {
            return Err(Error::usage(
                "cannot use a token with --raw",
                "a raw stream has no handshake to prove it",
            ));
        }
        Ok(())
    }
}

/// One file moved, as one side saw it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FileRecord {
    /// The file's name as sent.
    pub name: String,
    /// Its size.
    pub bytes: u64,
    /// The method that moved it on this side.
    pub method: String,
    /// Header sent/received to last byte sent/stored (with `--sync`, fsync included).
    #[serde(with = "crate::measure::secs")]
    #[schemars(with = "f64")]
    pub time: Duration,
    /// Hashing: the sender's hashing thread, beside its timed window (with no spare core, a read
    /// or mmap sender's hashing of each piece, inside it); a splice receiver's
    /// hashing thread behind its storing where a core is likely idle, else the hashing after
    /// the window, as on an mmap receiver; a write receiver hashes while it writes (inside
    /// `time`), leaving only the final step here.
    #[serde(with = "crate::measure::secs")]
    #[schemars(with = "f64")]
    pub hash_time: Duration,
    /// BLAKE3 of the content, hex; empty when a raw stream was received with `--no-hash`.
    pub blake3: String,
    /// `bytes` over `time`, for readers of the JSON.
    pub mib_s: f64,
    /// With `--pages`: each mapped page's descriptor, as the course's module printed to dmesg.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pages: Vec<crate::vm::pagemap::PageDesc>,
}

impl FileRecord {
    /// The record of file `h`, of BLAKE3 `hash`, moved by `method` in `time`.
    pub fn new(
        h: &protocol::Header,
        hash: &[u8; 32],
        method: &str,
        time: Duration,
        hash_time: Duration,
    ) -> FileRecord {
        FileRecord {
            name: h.name.clone(),
            bytes: h.size,
            method: method.into(),
            time,
            hash_time,
            blake3: blake3::Hash::from_bytes(*hash).to_hex().to_string(),
            mib_s: crate::size::mib_per_s(h.size, time.as_secs_f64()),
            pages: Vec::new(),
        }
    }
}

/// What one side of a transfer did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SideReport {
    /// `sender` or `receiver`.
    pub role: String,
    /// This side's method.
    pub method: String,
    /// The other side's address.
    pub peer: String,
    /// Connections used.
    pub connections: usize,
    /// Every file, in order.
    pub files: Vec<FileRecord>,
    /// Wall time from the first connection (the receiver: from the start of its first successful
    /// connection attempt, set-up included) to the last file done.
    #[serde(with = "crate::measure::secs")]
    #[schemars(with = "f64")]
    pub wall: Duration,
    /// CPU time of this side's threads.
    #[serde(with = "crate::measure::secs")]
    #[schemars(with = "f64")]
    pub cpu_user: Duration,
    /// System CPU time of this side's threads.
    #[serde(with = "crate::measure::secs")]
    #[schemars(with = "f64")]
    pub cpu_sys: Duration,
    /// Connections dropped because they failed the handshake (the sender kept accepting).
    #[serde(default)]
    pub rejected: Vec<String>,
    /// A raw stream (no hello, header or status; one connection per file).
    #[serde(default)]
    pub raw: bool,
    /// The buffer and window sizes used.
    #[serde(default)]
    pub sizes: ChunkSizes,
    /// Why `--pages` descriptors are incomplete or missing, if they are.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pages_note: Option<String>,
}

impl SideReport {
    /// Bytes of all files.
    pub fn bytes(&self) -> u64 {
        self.files.iter().map(|f| f.bytes).sum()
    }
}

/// What one connection's thread returns: its files with their global index, and its CPU time.
pub(crate) type ConnOut = (Vec<(usize, FileRecord)>, (Duration, Duration));

/// Runs `work(index, connection)` on a thread per connection; merges the records into file
/// order and sums the CPU time. The first failure wins.
pub(crate) fn run_connections<S: Send>(
    conns: Vec<S>,
    what: &str,
    work: impl Fn(usize, S) -> crate::error::Result<ConnOut> + Sync,
) -> crate::error::Result<(Vec<FileRecord>, Duration, Duration)> {
    let results: Vec<crate::error::Result<ConnOut>> = std::thread::scope(|s| {
        let work = &work;
        let handles: Vec<_> = conns
            .into_iter()
            .enumerate()
            .map(|(c, conn)| s.spawn(move || work(c, conn)))
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(crate::error::Error::failed(
                        what.to_string(),
                        "a connection thread panicked",
                    ))
                })
            })
            .collect()
    });
    let mut records = Vec::new();
    let (mut user, mut sys) = (Duration::ZERO, Duration::ZERO);
    for r in results {
        let (recs, (u, s)) = r?;
        records.extend(recs);
        user += u;
        sys += s;
    }
    records.sort_by_key(|(i, _)| *i);
    Ok((records.into_iter().map(|(_, r)| r).collect(), user, sys))
}

/// CPU used by the calling thread since `start`.
pub(crate) fn cpu_since(start: &crate::sys::Usage) -> (Duration, Duration) {
    let now = crate::sys::net::rusage_thread();
    (
        Duration::from_micros(now.user_us.saturating_sub(start.user_us)),
        Duration::from_micros(now.sys_us.saturating_sub(start.sys_us)),
    )
}

/// Whether a side of a transfer on a machine of `cores` cores likely has one idle to hash on
/// while it moves bytes: more than two, or two with the peer elsewhere (not on `loopback`).
/// With the peer on this machine's two cores, both are busy moving, and a thread hashing
/// beside them only takes turns with them: there read and mmap senders hash each piece as it
/// passes, and splice receivers after storing (1 GiB cached, mmap:splice whole processes 1549
/// MiB/s hashing beside against 1752 after, medians of 8 interleaved rounds).
pub(crate) fn spare_core(cores: usize, loopback: bool) -> bool {
    cores > 2 || (cores == 2 && !loopback)
}

/// [`spare_core`] for this machine and the peer at the other end of `sock`.
pub(crate) fn spare_core_beside(sock: &std::net::TcpStream) -> bool {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let loopback = sock.peer_addr().is_ok_and(|a| a.ip().is_loopback());
    spare_core(cores, loopback)
}
