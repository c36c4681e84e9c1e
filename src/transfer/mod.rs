//! Moving files over TCP: the wire protocol, the sender (read, mmap, sendfile, splice) and the
//! receiver (write, mmap, splice), with verification by BLAKE3 and nothing kept that failed.

pub mod protocol;
pub mod receiver;
pub mod sender;

use serde::{Deserialize, Serialize};
use std::time::Duration;

/// How the sender moves a file's bytes into the socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SendMethod {
    Read,
    Mmap,
    Sendfile,
    Splice,
}

/// How the receiver stores the bytes it takes from the socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RecvMethod {
    Write,
    Mmap,
    Splice,
}

impl SendMethod {
    pub const ALL: [SendMethod; 4] = [
        SendMethod::Read,
        SendMethod::Mmap,
        SendMethod::Sendfile,
        SendMethod::Splice,
    ];

    pub fn name(self) -> &'static str {
        match self {
            SendMethod::Read => "read",
            SendMethod::Mmap => "mmap",
            SendMethod::Sendfile => "sendfile",
            SendMethod::Splice => "splice",
        }
    }

    /// Also takes `fcntl`, the classic name of read/write.
    pub fn parse(t: &str) -> Option<SendMethod> {
        let t = t.trim().to_ascii_lowercase();
        let t = if t == "fcntl" { "read" } else { t.as_str() };
        Self::ALL.into_iter().find(|m| m.name() == t)
    }
}

impl RecvMethod {
    pub const ALL: [RecvMethod; 3] = [RecvMethod::Write, RecvMethod::Mmap, RecvMethod::Splice];

    pub fn name(self) -> &'static str {
        match self {
            RecvMethod::Write => "write",
            RecvMethod::Mmap => "mmap",
            RecvMethod::Splice => "splice",
        }
    }

    /// Also takes `fcntl`, the classic name of read/write.
    pub fn parse(t: &str) -> Option<RecvMethod> {
        let t = t.trim().to_ascii_lowercase();
        let t = if t == "fcntl" { "write" } else { t.as_str() };
        Self::ALL.into_iter().find(|m| m.name() == t)
    }
}

/// One file moved, as one side saw it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileRecord {
    pub name: String,
    pub bytes: u64,
    pub method: String,
    /// Header sent/received to last byte sent/stored (with `--sync`, fsync included).
    pub time: Duration,
    /// Hashing: before the timed window on the sender, after it on the receiver.
    pub hash_time: Duration,
    pub blake3: String,
}

impl FileRecord {
    pub fn mib_per_s(&self) -> f64 {
        crate::size::mib_per_s(self.bytes, self.time.as_secs_f64())
    }
}

/// What one side of a transfer did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SideReport {
    pub role: String,
    pub method: String,
    pub peer: String,
    pub connections: usize,
    pub files: Vec<FileRecord>,
    /// Wall time from the first connection to the last file done.
    pub wall: Duration,
    /// CPU time of this side's threads.
    pub cpu_user: Duration,
    pub cpu_sys: Duration,
}

impl SideReport {
    pub fn bytes(&self) -> u64 {
        self.files.iter().map(|f| f.bytes).sum()
    }
}

/// CPU used by the calling thread since `start`.
pub(crate) fn cpu_since(start: &crate::sys::Usage) -> (Duration, Duration) {
    let now = crate::sys::net::rusage_thread();
    (
        Duration::from_micros(now.user_us.saturating_sub(start.user_us)),
        Duration::from_micros(now.sys_us.saturating_sub(start.sys_us)),
    )
}
