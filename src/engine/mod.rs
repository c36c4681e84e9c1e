//! How bytes move. One file per read method behind [`ReadEngine`]; the write methods live in
//! [`mod@write`]. Every engine XORs every byte it moves, so its answer can be checked against any other.
//!
//! Running a method has two phases: [`prepare`] (open, map, allocate, set up rings: never timed by
//! the measuring experiments) and [`Prepared::run`] (the work itself, the timed part). The loop
//! over blocks lives in [`mod@driver`]: a synchronous engine supplies only "move this piece"
//! ([`SyncWorker`]); io_uring, which keeps many requests in flight, only queues, waits and digests
//! ([`AsyncWorker`]) under the same loop.
//!
//! Adding a read method is one new file with its engine and one line in the list below.

mod direct;
pub mod driver;
mod mmap;
pub(crate) mod pread;
mod read;
mod uring;
pub mod write;

pub use driver::{
    AsyncWorker, PieceDone, Prepared, RunLimits, SyncWorker, Worker, async_workers, prepare,
    prepare_parts, race, read_all, run_parts, sync_workers,
};
pub use uring::{new_ring, nop_batch};

use crate::error::{Error, Result};
use crate::sys::buf::AlignedBuf;
use crate::workload::Workload;
use serde::{Deserialize, Serialize};
use std::fs::File;

use std::path::Path;

/// Largest single I/O an engine issues; bigger blocks are moved in pieces of this size.
pub const MAX_IO: u64 = 64 << 20;
/// Alignment used for O_DIRECT offsets, lengths and buffers.
pub const DIRECT_ALIGN: u64 = 4096;

crate::names::method_list! {
    /// The read methods (docs/commands.md).
    pub enum ReadMethod: ReadEngine {
        /// read(2) at the file position; lseek for random order.
        Read = "read" | "fcntl" => read::ReadSyscall,
        /// pread(2) at each block's offset.
        Pread = "pread" => pread::Pread::PLAIN,
        /// preadv2(2) with RWF_DONTCACHE: through the page cache, its pages dropped once read.
        Uncached = "uncached" => pread::Pread::UNCACHED,
        /// preadv2(2) with RWF_NOWAIT: served from the page cache or refused (EAGAIN); a refused
        /// piece is counted and read with a plain pread.
        PreadNowait = "pread-nowait" => pread::Pread::NOWAIT,
        /// A mapping with no hint (MADV_NORMAL); the bytes are XORed in place.
        Mmap = "mmap" => mmap::Mmap::NORMAL,
        /// A mapping with MADV_SEQUENTIAL.
        MmapSeq = "mmap-seq" => mmap::Mmap::SEQUENTIAL,
        /// A mapping with MADV_RANDOM.
        MmapRandom = "mmap-random" => mmap::Mmap::RANDOM,
        /// A mapping with MADV_WILLNEED.
        MmapWillneed = "mmap-willneed" => mmap::Mmap::WILLNEED,
        /// A mapping made with MAP_POPULATE (the populating is inside the timed run).
        MmapPopulate = "mmap-populate" => mmap::Mmap::POPULATE,
        /// A mapping with MADV_HUGEPAGE.
        MmapHuge = "mmap-huge" => mmap::Mmap::HUGE,
        /// O_DIRECT + pread into aligned buffers.
        Direct = "direct" => direct::Direct,
        /// io_uring reads, `--depth` in flight per thread.
        Uring = "uring" => uring::Uring::BUFFERED,
        /// io_uring reads with O_DIRECT.
        UringDirect = "uring-direct" => uring::Uring::DIRECT,
        /// io_uring reads with RWF_DONTCACHE: through the page cache, its pages dropped once read.
        UringUncached = "uring-uncached" => uring::Uring::UNCACHED,
    }
}

impl ReadMethod {
    /// Reads through a memory mapping.
    pub fn is_mmap(self) -> bool {
        self.engine().info().mapped
    }

    /// Bypasses the page cache.
    pub fn is_direct(self) -> bool {
        self.engine().info().direct
    }

    /// Takes `--depth` (requests in flight).
    pub fn uses_depth(self) -> bool {
        self.engine().info().uses_depth
    }
}

/// What a read engine says about itself.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EngineInfo {
    /// It reads through a memory mapping (no system call per block).
    pub mapped: bool,
    /// It bypasses the page cache (O_DIRECT).
    pub direct: bool,
    /// It keeps up to `--depth` requests in flight.
    pub uses_depth: bool,
}

impl EngineInfo {
    /// Reads through a mapping.
    pub const MAPPED: EngineInfo = EngineInfo {
        mapped: true,
        direct: false,
        uses_depth: false,
    };
    /// Reads with O_DIRECT, one request at a time.
    pub const DIRECT: EngineInfo = EngineInfo {
        mapped: false,
        direct: true,
        uses_depth: false,
    };
}

/// A read method: checks support and sets up one worker per part (untimed).
pub trait ReadEngine: Sync {
    /// What kind of engine this is (by default: buffered system calls).
    fn info(&self) -> EngineInfo {
        EngineInfo::default()
    }

    /// Sets up one worker per thread of the job (untimed); a method the kernel or filesystem
    /// lacks is an [`crate::ErrorKind::Unsupported`] error with the reason.
    fn prepare(&self, job: &Job<'_>) -> Result<Workers>;
}

/// One worker per thread, as engines hand them to the core.
pub type Workers = Vec<Box<dyn Worker>>;

/// What an engine is asked to set up: the file, the workload and the engine options.
pub struct Job<'a> {
    /// The open file.
    pub src: &'a Source,
    /// The workload, narrowed to the threads that have blocks.
    pub w: &'a Workload,
    /// Depth and the like.
    pub opts: &'a EngineOptions,
}

impl Job<'_> {
    /// One synchronous worker per thread, each made by `make`.
    pub fn each_thread<R: SyncWorker + 'static>(
        &self,
        mut make: impl FnMut() -> Result<R>,
    ) -> Result<Workers> {
        sync_workers((0..self.w.threads).map(|_| make()))
    }

    /// A page-aligned buffer for one piece of this workload.
    pub fn buffer(&self) -> AlignedBuf {
        AlignedBuf::new(buffer_len(self.w))
    }
}

crate::named_enum! {
    /// What a reader does with each block it moved.
    pub enum Work {
        /// XOR every 32-bit word (see [`crate::xor`]): the data is really used.
        Xor = "xor",
        /// Touch one byte per block, as the classic access benchmark did (`bogus += data[b*B]`):
        /// a mapping faults the page in, a read copies the block, nothing else.
        Touch = "touch",
        /// Copy each block into a buffer and touch nothing else: the data moves as far as a
        /// `read()` moves it and is not used. A read already copied, so it does nothing more; a
        /// mapping is copied out block by block, as IOR's MMAP back end `memcpy`s each transfer.
        Copy = "copy",
    }
}

// named_enum! declares the enum, so the default cannot be derived there.
#[allow(clippy::derivable_impls)]
impl Default for Work {
    fn default() -> Self {
        Work::Xor
    }
}

impl Work {
    /// What the piece of `bytes` at file `offset` contributes: its XOR, or its first byte
    /// (for `Copy` the bytes are the copy: the engines that do not copy by themselves copy
    /// first, see [`Work::copies`]).
    #[inline]
    pub fn digest(self, offset: u64, bytes: &[u8]) -> u32 {
        match self {
            Work::Xor => crate::xor::xor_at(offset, bytes),
            Work::Touch | Work::Copy => bytes.first().map_or(0, |b| *b as u32),
        }
    }

    /// Whether a block read in place (a mapping) must first be copied out.
    #[inline]
    pub fn copies(self) -> bool {
        self == Work::Copy
    }
}

/// Engine settings beyond the workload.
#[derive(Debug, Clone, Copy)]
pub struct EngineOptions {
    /// io_uring queue depth per thread.
    pub depth: u32,
    /// What each block's bytes are used for.
    pub work: Work,
    /// Syscall engines give the kernel the pattern's `posix_fadvise` hint, as fio does; the
    /// classic access benchmark gave none.
    pub file_hint: bool,
    /// Mapped engines prefetch the next block when the order jumps (a CPU hint, no fault); the
    /// classic forms do not, as their originals did not.
    pub prefetch: bool,
    /// Mapped engines map each part's span when a worker's run starts and unmap it when the run
    /// ends, in that worker's thread: setup and teardown are inside the run and spread over the
    /// threads (`fast` uses this; unmapping 2 GiB of small folios took 35-70 ms on one thread).
    /// Otherwise one mapping of the file is made in preparation and released when the workers
    /// are dropped, outside the run, as the classic benchmark read its clock before munmap.
    pub map_each_run: bool,
    /// io_uring engines: a kernel thread polls the submission queue (IORING_SETUP_SQPOLL), so
    /// queuing a request needs no system call; it spends a core while the ring is busy.
    pub sqpoll: bool,
    /// `read`: an `lseek` before every block, even one that follows the last, as the classic
    /// access benchmark's sequential loop did.
    pub seek_each: bool,
}

impl Default for EngineOptions {
    fn default() -> Self {
        EngineOptions {
            depth: 32,
            work: Work::Xor,
            file_hint: true,
            prefetch: true,
            map_each_run: false,
            sqpoll: false,
            seek_each: false,
        }
    }
}

impl EngineOptions {
    /// The defaults with `depth` requests in flight per thread.
    pub fn with_depth(depth: u32) -> EngineOptions {
        EngineOptions {
            depth,
            ..Default::default()
        }
    }

    /// The options a workload's shape asks for (depth, SQPOLL), the rest at their defaults.
    pub fn of_shape(shape: &crate::workload::Shape) -> EngineOptions {
        EngineOptions {
            sqpoll: shape.sqpoll,
            ..EngineOptions::with_depth(shape.depth)
        }
    }
}

pub use crate::source::{Source, check_regular, open_source, pread_full};

/// Bytes moved and their XOR.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct Moved {
    /// Bytes moved.
    pub bytes: u64,
    /// Their XOR (see [`crate::xor`]).
    #[serde(with = "crate::xor::hex")]
    #[schemars(with = "String")]
    pub xor: u32,
    /// I/O requests issued to the kernel: system calls, or io_uring entries (0 for mmap reads).
    pub ops: u64,
    /// Blocks of the workload completed (a block larger than 64 MiB takes several requests).
    pub blocks: u64,
    /// Pieces the page cache could not serve without waiting for the device (`pread-nowait`:
    /// preadv2 with RWF_NOWAIT said EAGAIN, and a plain pread read them); 0 for other methods.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub waited: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Moved {
    /// Adds what another part moved.
    pub fn add(&mut self, other: Moved) {
        self.bytes += other.bytes;
        self.xor ^= other.xor;
        self.ops += other.ops;
        self.blocks += other.blocks;
        self.waited += other.waited;
    }
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
pub(crate) fn open_advised(job: &Job<'_>) -> Result<File> {
    let (src, w) = (job.src, job.w);
    let file = File::open(&src.path).map_err(|e| Error::io("cannot open", &src.path, &e))?;
    if !job.opts.file_hint {
        return Ok(file);
    }
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
