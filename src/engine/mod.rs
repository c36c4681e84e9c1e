//! How bytes move. One file per read method behind [`ReadEngine`]; the write methods live in
//! [`mod@write`]. Every engine XORs every byte it moves, so its answer can be checked against any other.
//!
//! Running a method has two phases: [`prepare`] (open, map, allocate, set up rings: never timed by
//! the measuring experiments) and [`Prepared::run`] (the work itself, the timed part).

mod direct;
mod mmap;
mod pread;
mod read;
mod uring;
pub use uring::{new_ring, nop_batch};
pub mod write;

use crate::error::{Error, Result};
use crate::measure::latency::{Histogram, OpLog};
use crate::workload::{Block, Part, Workload};
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io;
use std::os::unix::fs::{FileExt, FileTypeExt};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Largest single I/O an engine issues; bigger blocks are moved in pieces of this size.
pub const MAX_IO: u64 = 64 << 20;
/// Alignment used for O_DIRECT offsets, lengths and buffers.
pub const DIRECT_ALIGN: u64 = 4096;

/// The read methods of DESIGN §3.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReadMethod {
    Read,
    Pread,
    Mmap,
    MmapSeq,
    MmapRandom,
    MmapWillneed,
    MmapPopulate,
    MmapHuge,
    Direct,
    Uring,
    UringDirect,
}

impl ReadMethod {
    pub const ALL: [ReadMethod; 11] = [
        ReadMethod::Read,
        ReadMethod::Pread,
        ReadMethod::Mmap,
        ReadMethod::MmapSeq,
        ReadMethod::MmapRandom,
        ReadMethod::MmapWillneed,
        ReadMethod::MmapPopulate,
        ReadMethod::MmapHuge,
        ReadMethod::Direct,
        ReadMethod::Uring,
        ReadMethod::UringDirect,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ReadMethod::Read => "read",
            ReadMethod::Pread => "pread",
            ReadMethod::Mmap => "mmap",
            ReadMethod::MmapSeq => "mmap-seq",
            ReadMethod::MmapRandom => "mmap-random",
            ReadMethod::MmapWillneed => "mmap-willneed",
            ReadMethod::MmapPopulate => "mmap-populate",
            ReadMethod::MmapHuge => "mmap-huge",
            ReadMethod::Direct => "direct",
            ReadMethod::Uring => "uring",
            ReadMethod::UringDirect => "uring-direct",
        }
    }

    pub fn parse(text: &str) -> Option<ReadMethod> {
        let t = text.trim().to_ascii_lowercase();
        let t = if t == "fcntl" { "read".to_string() } else { t };
        Self::ALL.into_iter().find(|m| m.name() == t)
    }

    pub fn is_mmap(self) -> bool {
        matches!(
            self,
            ReadMethod::Mmap
                | ReadMethod::MmapSeq
                | ReadMethod::MmapRandom
                | ReadMethod::MmapWillneed
                | ReadMethod::MmapPopulate
                | ReadMethod::MmapHuge
        )
    }

    /// Bypasses the page cache.
    pub fn is_direct(self) -> bool {
        matches!(self, ReadMethod::Direct | ReadMethod::UringDirect)
    }
}

/// Engine settings beyond the workload.
#[derive(Debug, Clone, Copy)]
pub struct EngineOptions {
    /// io_uring queue depth per thread.
    pub depth: u32,
}

impl Default for EngineOptions {
    fn default() -> Self {
        EngineOptions { depth: 32 }
    }
}

/// A regular file opened for reading, with its size taken at open.
pub struct Source {
    pub file: File,
    pub path: PathBuf,
    pub size: u64,
}

const PROC_SUPER_MAGIC: i64 = 0x9fa0;
const SYSFS_MAGIC: i64 = 0x6265_6572;

/// Opens `path` for reading after checking it is something iolab can measure: a regular file
/// (not a directory, FIFO, socket or device, and not a /proc or /sys file whose size is unknown).
pub fn open_source(path: &Path) -> Result<Source> {
    let meta = std::fs::metadata(path).map_err(|e| Error::io("cannot open", path, &e))?;
    check_regular(path, &meta)?;
    let file = File::open(path).map_err(|e| Error::io("cannot open", path, &e))?;
    if let Ok(magic) = crate::sys::fs_magic(&file)
        && (magic == PROC_SUPER_MAGIC || magic == SYSFS_MAGIC)
    {
        return Err(Error::usage(
            "not a measurable file",
            "a /proc or /sys file: its size is not known in advance and it cannot be mapped",
        )
        .at(path)
        .hint("copy it to a regular file first"));
    }
    let size = file
        .metadata()
        .map_err(|e| Error::io("cannot stat", path, &e))?
        .len();
    Ok(Source {
        file,
        path: path.to_path_buf(),
        size,
    })
}

/// Refuses what is not a regular file, naming what it is.
pub fn check_regular(path: &Path, meta: &std::fs::Metadata) -> Result<()> {
    let ft = meta.file_type();
    let kind = if ft.is_file() {
        return Ok(());
    } else if ft.is_dir() {
        "is a directory"
    } else if ft.is_fifo() {
        "is a FIFO (a pipe has no size and cannot be mapped or re-read)"
    } else if ft.is_socket() {
        "is a socket"
    } else if ft.is_char_device() {
        "is a character device (it has no size and cannot be mapped as a file)"
    } else if ft.is_block_device() {
        "is a block device (iolab measures regular files)"
    } else {
        "is not a regular file"
    };
    Err(Error::usage("not a regular file", kind).at(path))
}

/// Bytes moved and their XOR.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Moved {
    pub bytes: u64,
    pub xor: u32,
    /// I/O requests issued to the kernel: system calls, or io_uring entries (0 for mmap reads).
    pub ops: u64,
    /// Blocks of the workload completed (a block larger than 64 MiB takes several requests).
    pub blocks: u64,
}

impl Moved {
    pub fn add(&mut self, other: Moved) {
        self.bytes += other.bytes;
        self.xor ^= other.xor;
        self.ops += other.ops;
        self.blocks += other.blocks;
    }
}

/// One thread's state for reading its part: buffers, descriptors, rings.
pub trait Worker: Send {
    /// Moves the part, calling `log.begin()`/`log.end()` around each operation and stopping
    /// early when `end()` says the deadline passed.
    fn run(&mut self, part: &Part, log: &mut OpLog) -> Result<Moved>;
}

/// A read method.
pub trait ReadEngine {
    /// Checks support and sets up one worker per part (untimed).
    fn prepare(
        &self,
        src: &Source,
        w: &Workload,
        opts: &EngineOptions,
    ) -> Result<Vec<Box<dyn Worker>>>;
}

fn engine(method: ReadMethod) -> Box<dyn ReadEngine> {
    match method {
        ReadMethod::Read => Box::new(read::ReadSyscall),
        ReadMethod::Pread => Box::new(pread::Pread),
        ReadMethod::Direct => Box::new(direct::Direct),
        ReadMethod::Uring => Box::new(uring::Uring { direct: false }),
        ReadMethod::UringDirect => Box::new(uring::Uring { direct: true }),
        m => Box::new(mmap::Mmap::for_method(m)),
    }
}

/// Workers and their parts, ready to run.
pub struct Prepared {
    workers: Vec<Box<dyn Worker>>,
    parts: Vec<Part>,
}

/// Sets `method` up for workload `w` on `src` (untimed).
pub fn prepare(
    method: ReadMethod,
    src: &Source,
    w: &Workload,
    opts: &EngineOptions,
) -> Result<Prepared> {
    if w.len > src.size {
        return Err(Error::usage(
            "read past the end",
            format!("asked for {} bytes of a {}-byte file", w.len, src.size),
        )
        .at(&src.path));
    }
    let parts: Vec<Part> = w
        .parts()
        .into_iter()
        .filter(|p| p.block_count() > 0)
        .collect();
    if parts.is_empty() {
        return Ok(Prepared {
            workers: Vec::new(),
            parts,
        });
    }
    let sub = Workload {
        threads: parts.len(),
        ..*w
    };
    let workers = engine(method).prepare(src, &sub, opts)?;
    Ok(Prepared { workers, parts })
}

/// How a run is bounded and observed.
#[derive(Debug, Clone, Copy, Default)]
pub struct RunLimits {
    /// Operations in all (shared out between the parts); `None`: every block.
    pub max_ops: Option<u64>,
    /// Stop once this instant has passed.
    pub deadline: Option<Instant>,
    /// Record each operation's latency.
    pub latencies: bool,
}

impl Prepared {
    /// Does the work: each part on its own thread (the first on the calling thread).
    pub fn run(self) -> Result<Moved> {
        self.run_limited(RunLimits::default()).map(|(m, _)| m)
    }

    /// Does the work within `limits`, returning the latencies when asked for.
    pub fn run_limited(self, limits: RunLimits) -> Result<(Moved, Option<Histogram>)> {
        let Prepared {
            mut workers,
            mut parts,
        } = self;
        let mut total = Moved::default();
        if workers.is_empty() {
            return Ok((total, limits.latencies.then(Histogram::default)));
        }
        if let Some(max) = limits.max_ops {
            let n = parts.len() as u64;
            for (i, p) in parts.iter_mut().enumerate() {
                let i = i as u64;
                p.limit(max * (i + 1) / n - max * i / n);
            }
        }
        let log = || OpLog::new(limits.latencies, limits.deadline);
        let mut first = workers.remove(0);
        let results: Vec<Result<(Moved, OpLog)>> = std::thread::scope(|s| {
            let handles: Vec<_> = workers
                .into_iter()
                .zip(parts.iter().skip(1))
                .map(|(mut wk, part)| {
                    s.spawn(move || {
                        let mut l = log();
                        wk.run(part, &mut l).map(|m| (m, l))
                    })
                })
                .collect();
            let mut l = log();
            let mut out = vec![first.run(&parts[0], &mut l).map(|m| (m, l))];
            for h in handles {
                out.push(h.join().unwrap_or_else(|_| {
                    Err(Error::failed("read failed", "a worker thread panicked"))
                }));
            }
            out
        });
        let mut hist = limits.latencies.then(Histogram::default);
        for r in results {
            let (m, l) = r?;
            total.add(m);
            if let (Some(h), Some(part)) = (&mut hist, l.into_histogram()) {
                h.merge(&part);
            }
        }
        Ok((total, hist))
    }
}

/// Prepares and runs in one go.
pub fn read_all(
    method: ReadMethod,
    src: &Source,
    w: &Workload,
    opts: &EngineOptions,
) -> Result<Moved> {
    prepare(method, src, w, opts)?.run()
}

/// Splits a block into pieces of at most `max` bytes.
pub(crate) fn pieces(block: Block, max: u64) -> impl Iterator<Item = Block> {
    let n = block.len.div_ceil(max).max(1);
    (0..n).map(move |i| {
        let offset = block.offset + i * max;
        Block {
            offset,
            len: max.min(block.offset + block.len - offset),
        }
    })
}

/// `pread` until `buf` is full or end of file; returns bytes read.
pub fn pread_full(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    let mut done = 0;
    while done < buf.len() {
        match file.read_at(&mut buf[done..], offset + done as u64) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}

/// The error for a file that ended before the bytes it had when opened.
pub(crate) fn shrank(path: &Path, offset: u64) -> Error {
    Error::failed(
        "read failed",
        format!("the file ended at byte {offset}, before its size when opened (truncated while reading?)"),
    )
    .at(path)
}

/// A descriptor of its own for a syscall engine, with the access-pattern hint fio also gives by
/// default: `POSIX_FADV_SEQUENTIAL` (a larger readahead window) or `POSIX_FADV_RANDOM` (none).
/// Its own descriptor, so the hint never leaks into other methods' runs on the same file.
pub(crate) fn open_advised(src: &Source, w: &Workload) -> Result<File> {
    let file = File::open(&src.path).map_err(|e| Error::io("cannot open", &src.path, &e))?;
    let advice = match w.pattern {
        crate::workload::Pattern::Seq => libc::POSIX_FADV_SEQUENTIAL,
        crate::workload::Pattern::Random => libc::POSIX_FADV_RANDOM,
    };
    // Advice is a hint: a filesystem that ignores it changes nothing measured.
    let _ = crate::sys::fadvise(&file, advice);
    Ok(file)
}

/// Buffer size for a workload: one block, capped at [`MAX_IO`].
pub(crate) fn buffer_len(w: &Workload) -> usize {
    w.bs.min(MAX_IO).min(w.len.max(1)) as usize
}
