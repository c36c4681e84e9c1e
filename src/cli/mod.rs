//! The command line: clap definitions and the mapping from arguments to library configs.
//! Nothing here prints; `main.rs` dispatches and prints.

pub mod parse;

use crate::cache::CacheMode;
use crate::engine::ReadMethod;
use crate::engine::write::{SyncMode, WriteMethod};
use crate::experiments::access::AccessConfig;
use crate::experiments::cache_cmd::CacheAction;
use crate::experiments::classic::{Op, RunConfig};
use crate::experiments::fast::FastConfig;
use crate::experiments::read::ReadConfig;
use crate::experiments::run2::Run2Config;
use crate::experiments::sweep::{SweepConfig, SweepOp, parse_sizes};
use crate::experiments::transfer::{TransferConfig, all_pairs};
use crate::experiments::vm::VmConfig;
use crate::experiments::write::WriteConfig;
use crate::report::Format;
use crate::transfer::receiver::RecvConfig;
use crate::transfer::sender::SendConfig;
use crate::transfer::{RecvMethod, SendMethod};
use crate::workload::Pattern;
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

const ABOUT: &str = "Measure, explain and exploit the ways Linux moves file data: read/pread, mmap \
with madvise, O_DIRECT and io_uring, with repeats, statistics and a verified page cache.";

#[derive(Debug, Parser)]
#[command(name = "iolab", version, about = ABOUT, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// The main job: make data, run every experiment, write one report (HTML, Markdown, JSON, SVG).
    #[command(
        after_help = "Examples:\n  iolab suite --quick\n  iolab suite --size 4G --out ~/iolab-report\n  iolab suite --quick --size 64M --keep-data --dir /var/tmp/iolab-data\n\nThe report goes to --out (a dated folder beside it if it exists, unless --force)."
    )]
    Suite(SuiteArgs),
    /// Re-render report(s) from results.json files; several give hosts side by side.
    Report(ReportArgs),
    /// Which method for this file and access pattern, here: measured, warm and cold.
    #[command(
        after_help = "Examples:\n  iolab advise big.bin --pattern random --bs 4K\n  iolab advise big.bin --pattern seq --bs 1M --threads 2"
    )]
    Advise(AdviseArgs),
    /// The classic program: read or write BLOCK_COUNT blocks of BLOCK_SIZE, print time, rate, XOR.
    #[command(
        after_help = "Examples:\n  iolab run big.bin -r 4K 262144\n  iolab run out.bin -w 1M 1024 --sync end\n  iolab run big.bin -r 1M 2048 --method mmap --cache cold"
    )]
    Run(RunArgs),
    /// Read a file with one method, repeated, with statistics and kernel counters.
    #[command(
        after_help = "Examples:\n  iolab read big.bin --method mmap --cache warm --repeat 5\n  iolab read big.bin --method pread --bs 4K --pattern random --size 256M\n  iolab read big.bin --method uring-direct --depth 32 --cache cold --format json"
    )]
    Read(ReadArgs),
    /// Write a file with one method and sync mode, repeated, then read it back to verify.
    #[command(
        after_help = "Examples:\n  iolab write out.bin --size 1G --bs 1M --method write --sync end\n  iolab write out.bin --size 256M --method mmap --sync each --force"
    )]
    Write(WriteArgs),
    /// Read the whole file as fast as this machine allows and print its XOR.
    #[command(
        after_help = "Examples:\n  iolab fast big.bin\n  iolab fast big.bin --method mmap --threads 2\n\nThe XOR goes to stdout; the chosen method, cache state, time and MiB/s to stderr."
    )]
    Fast(FastArgs),
    /// Page-cache residency of files (like vmtouch), evict them, or load them.
    #[command(subcommand)]
    Cache(CacheCommand),
    /// Sequential vs random block access per method and cache state: KIOPS and latency.
    #[command(
        after_help = "Examples:\n  iolab access big.bin\n  iolab access big.bin --methods pread,mmap --patterns random --cache cold --duration 5s\n  iolab access big.bin random mmap adv_random      (the classic form)\n\nThe madvise hint of mmap-seq/mmap-random/mmap-willneed is applied alone; the classic\nbenchmark OR-ed it with MADV_WILLNEED, so every one of its advice rows measured WILLNEED."
    )]
    Access(AccessArgs),
    /// Throughput against block size per method and cache state (or, with --op write, sync mode).
    #[command(
        after_help = "Examples:\n  iolab sweep big.bin --bs 4K..16M --methods read,mmap --cache cold,warm --plot sweep.svg\n  iolab sweep big.bin --bs 4K,64K,1M --size 256M --repeat 5\n  iolab sweep /var/tmp --op write --methods write,mmap --sync none,end,each --size 64M\n\nWith --op write, a scratch file is written next to FILE (or inside it, if a directory) and\nremoved; FILE itself is never written. Per-block sync modes write at most 2048 blocks a run."
    )]
    Sweep(SweepArgs),
    /// Find a block count whose read takes 5-15 s (the classic run2), or predict the file size.
    #[command(
        visible_alias = "calibrate",
        after_help = "Examples:\n  iolab run2 big.bin 4096\n  iolab calibrate big.bin 1M --target 1s..3s --cache cold"
    )]
    Run2(Run2Args),
    /// What one system call costs here: null call, 1-byte read/pread, lseek, fstat, mmap, a minor
    /// fault, an io_uring NOP.
    #[command(
        after_help = "Examples:\n  iolab syscalls\n  iolab syscalls big.bin --samples 9 --format json\n\nWithout FILE a 1 MiB scratch file is made in the temporary directory and removed."
    )]
    Syscalls(SyscallsArgs),
    /// The pmap lab: VM size and RSS of a mapped file stage by stage, with page descriptors.
    #[command(
        after_help = "Examples:\n  iolab vm data.bin --create 10M\n  iolab vm data.bin --touch 0,10000,4M --write\n  iolab vm data.bin --page-cache --format json\n\nWith --write every touched byte is written back unchanged through a MAP_SHARED mapping:\nthe pages turn dirty, the content stays the same. PFNs and kpageflags need root."
    )]
    Vm(VmArgs),
    /// Serve files to a receiver over TCP (listens; default 127.0.0.1:2325).
    #[command(
        after_help = "Examples:\n  iolab send big.bin --method sendfile\n  iolab send a b c --listen 0.0.0.0:2325 --token s3cret --connections 2\n\nThe token may also come from IOLAB_TOKEN. Only 127.0.0.1 is used unless --listen says otherwise."
    )]
    Send(SendArgs),
    /// Receive files from `iolab send` (connects) into a directory, verified by BLAKE3.
    #[command(
        after_help = "Examples:\n  iolab recv --connect 127.0.0.1:2325 --out incoming/\n  iolab recv --method splice --sync --retry 10s\n  iolab recv --discard --format json\n\nFiles are written under a temporary name and renamed when complete and verified."
    )]
    Recv(RecvArgs),
    /// The classic sender: master N f1 .. fN fcntl|mmap (port 2325).
    Master(ClassicArgs),
    /// The classic receiver: slave N f1 .. fN fcntl|mmap IP (writes f1 .. fN).
    Slave(ClassicArgs),
    /// Every sender x receiver method pair over loopback, repeated: the matrix.
    #[command(
        after_help = "Examples:\n  iolab transfer big.bin small*.txt\n  iolab transfer big.bin --methods read:write,mmap:mmap,sendfile:splice --repeat 5"
    )]
    Transfer(TransferArgs),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FormatArg {
    Text,
    Json,
    Csv,
    Markdown,
}

impl From<FormatArg> for Format {
    fn from(f: FormatArg) -> Format {
        match f {
            FormatArg::Text => Format::Text,
            FormatArg::Json => Format::Json,
            FormatArg::Csv => Format::Csv,
            FormatArg::Markdown => Format::Markdown,
        }
    }
}

/// How blocks are visited and spread over threads.
#[derive(Debug, Args)]
pub struct WorkloadArgs {
    /// seq or random (a seeded permutation: every block once)
    #[arg(long, default_value = "seq", value_parser = parse::pattern)]
    pub pattern: Pattern,
    /// Seed of the random order and the written data
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Threads, each with its own contiguous part of the file
    #[arg(long, default_value = "1", value_parser = parse::threads)]
    pub threads: usize,
    /// io_uring requests in flight per thread
    #[arg(long, default_value = "32", value_parser = parse::depth)]
    pub depth: u32,
}

/// Page-cache state before each run.
#[derive(Debug, Args)]
pub struct CacheArgs {
    /// warm (load and verify), cold (evict and verify), asis [default: warm for read, asis for run]
    #[arg(long, value_parser = parse::cache_mode)]
    pub cache: Option<CacheMode>,
    /// With --cache cold, as root: also sync and drop every clean cache (drop_caches)
    #[arg(long)]
    pub drop_all: bool,
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("op").required(true).args(["read", "write"])))]
pub struct RunArgs {
    /// The file to read, or to write (created; an existing one needs --force)
    pub file: PathBuf,
    /// Read the file
    #[arg(short = 'r')]
    pub read: bool,
    /// Write the file (needs --force if it exists)
    #[arg(short = 'w')]
    pub write: bool,
    /// Block size: 4096, 4K, 1MiB, 4KB (1000-based)...
    #[arg(value_parser = parse::size, allow_hyphen_values = true)]
    pub block_size: u64,
    /// Number of blocks
    #[arg(value_parser = parse::count, allow_hyphen_values = true)]
    pub block_count: u64,
    /// Read method (default read) or write method (default write)
    #[arg(long)]
    pub method: Option<String>,
    #[command(flatten)]
    pub workload: WorkloadArgs,
    #[command(flatten)]
    pub cache: CacheArgs,
    /// Durability of writes: none, end, each, dsync, osync
    #[arg(long, default_value = "none", value_parser = parse::sync_mode)]
    pub sync: SyncMode,
    /// Overwrite an existing file with -w
    #[arg(long)]
    pub force: bool,
    /// Output on stdout: a text table, or data for other tools
    #[arg(long, value_enum, default_value = "text")]
    pub format: FormatArg,
}

#[derive(Debug, Args)]
pub struct ReadArgs {
    /// A regular file to read
    pub file: PathBuf,
    /// read, pread, mmap, mmap-seq, mmap-random, mmap-willneed, mmap-populate, mmap-huge, direct, uring, uring-direct
    #[arg(long, default_value = "read", value_parser = parse::read_method)]
    pub method: ReadMethod,
    /// Block size
    #[arg(long, default_value = "1M", value_parser = parse::size)]
    pub bs: u64,
    /// Blocks to read (default: the whole file)
    #[arg(long, value_parser = parse::count, conflicts_with = "size")]
    pub count: Option<u64>,
    /// Bytes to read from the start (default: the whole file)
    #[arg(long, value_parser = parse::size)]
    pub size: Option<u64>,
    #[command(flatten)]
    pub workload: WorkloadArgs,
    #[command(flatten)]
    pub cache: CacheArgs,
    /// Counted runs
    #[arg(long, default_value = "5", value_parser = parse::positive)]
    pub repeat: usize,
    /// Uncounted runs first
    #[arg(long, default_value_t = 1)]
    pub warmup: usize,
    /// Output on stdout: a text table, or data for other tools
    #[arg(long, value_enum, default_value = "text")]
    pub format: FormatArg,
}

#[derive(Debug, Args)]
pub struct WriteArgs {
    /// The file to write (created; an existing one needs --force)
    pub file: PathBuf,
    /// write, pwrite, mmap, direct
    #[arg(long, default_value = "write", value_parser = parse::write_method)]
    pub method: WriteMethod,
    /// Block size
    #[arg(long, default_value = "1M", value_parser = parse::size)]
    pub bs: u64,
    /// Blocks to write
    #[arg(long, value_parser = parse::count, conflicts_with = "size", required_unless_present = "size")]
    pub count: Option<u64>,
    /// Bytes to write
    #[arg(long, value_parser = parse::size)]
    pub size: Option<u64>,
    /// Durability: none, end, each, dsync, osync
    #[arg(long, default_value = "none", value_parser = parse::sync_mode)]
    pub sync: SyncMode,
    #[command(flatten)]
    pub workload: WorkloadArgs,
    /// Overwrite an existing file
    #[arg(long)]
    pub force: bool,
    /// Counted runs
    #[arg(long, default_value = "3", value_parser = parse::positive)]
    pub repeat: usize,
    /// Uncounted runs first
    #[arg(long, default_value_t = 0)]
    pub warmup: usize,
    /// Output on stdout: a text table, or data for other tools
    #[arg(long, value_enum, default_value = "text")]
    pub format: FormatArg,
}

#[derive(Debug, Args)]
pub struct FastArgs {
    /// A regular file to read whole
    pub file: PathBuf,
    /// Force a method instead of auto
    #[arg(long, value_parser = parse::read_method)]
    pub method: Option<ReadMethod>,
    /// Force a thread count
    #[arg(long, value_parser = parse::threads)]
    pub threads: Option<usize>,
    /// Force a block size
    #[arg(long, value_parser = parse::size)]
    pub bs: Option<u64>,
    /// Force an io_uring depth
    #[arg(long, value_parser = parse::depth)]
    pub depth: Option<u32>,
    /// Output on stdout: a text table, or data for other tools
    #[arg(long, value_enum, default_value = "text")]
    pub format: FormatArg,
}

#[derive(Debug, Subcommand)]
pub enum CacheCommand {
    /// Resident pages per file, and the page-cache size
    Status(CacheFiles),
    /// Evict files from the page cache (fdatasync + fadvise DONTNEED)
    Evict(CacheFiles),
    /// Load files into the page cache
    Load(CacheFiles),
    /// The page-cache figures of /proc/meminfo: Cached, Buffers, Dirty, Writeback, (in)active file
    Meminfo(MeminfoArgs),
}

#[derive(Debug, Args)]
pub struct MeminfoArgs {
    /// Output on stdout: a text table, or data for other tools
    #[arg(long, value_enum, default_value = "text")]
    pub format: FormatArg,
}

#[derive(Debug, Args)]
pub struct CacheFiles {
    /// Regular files
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// With evict, as root: also drop every clean cache (drop_caches)
    #[arg(long)]
    pub drop_all: bool,
    /// Draw which parts of each file are resident, one bar per file (like vmtouch -v)
    #[arg(long)]
    pub map: bool,
    /// Characters in a --map bar
    #[arg(long, default_value = "64", value_parser = parse::positive)]
    pub width: usize,
    /// Output on stdout: a text table, or data for other tools
    #[arg(long, value_enum, default_value = "text")]
    pub format: FormatArg,
}

impl CacheCommand {
    /// The action and its files; `None` for `meminfo`, which takes no files.
    pub fn parts(&self) -> Option<(CacheAction, &CacheFiles)> {
        match self {
            CacheCommand::Status(f) => Some((CacheAction::Status, f)),
            CacheCommand::Evict(f) => Some((CacheAction::Evict, f)),
            CacheCommand::Load(f) => Some((CacheAction::Load, f)),
            CacheCommand::Meminfo(_) => None,
        }
    }
}

#[derive(Debug, Args)]
pub struct AccessArgs {
    /// A regular file to read
    pub file: PathBuf,
    /// The classic form: seq|random read|mmap [adv_seq|adv_random] (one run, cache as is)
    #[arg(value_name = "CLASSIC", num_args = 0..=3)]
    pub classic: Vec<String>,
    /// Block size
    #[arg(long, default_value = "4K", value_parser = parse::size)]
    pub bs: u64,
    /// Patterns to measure
    #[arg(long, value_delimiter = ',', default_value = "seq,random", value_parser = parse::pattern)]
    pub patterns: Vec<Pattern>,
    /// Methods to measure
    #[arg(long, value_delimiter = ',', default_value = "read,pread,mmap,mmap-seq,mmap-random,mmap-willneed,uring", value_parser = parse::read_method)]
    pub methods: Vec<ReadMethod>,
    /// Cache states to measure
    #[arg(long, value_delimiter = ',', default_value = "warm,cold", value_parser = parse::cache_mode)]
    pub cache: Vec<CacheMode>,
    /// With cold, as root: also drop every clean cache (drop_caches)
    #[arg(long)]
    pub drop_all: bool,
    /// Threads, each with its own part of the file
    #[arg(long, default_value = "1", value_parser = parse::threads)]
    pub threads: usize,
    /// io_uring requests in flight per thread
    #[arg(long, default_value = "32", value_parser = parse::depth)]
    pub depth: u32,
    /// Operations per run (default: every block once)
    #[arg(long, value_parser = parse::count)]
    pub ops: Option<u64>,
    /// Each run stops after this long (cold random reads are slow)
    #[arg(long, default_value = "10s", value_parser = parse::duration)]
    pub duration: std::time::Duration,
    /// Seed of the random order
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Counted runs per cell
    #[arg(long, default_value = "3", value_parser = parse::positive)]
    pub repeat: usize,
    /// Uncounted rounds first (the first touches of fresh page-cache memory are slow here)
    #[arg(long, default_value_t = 1)]
    pub warmup: usize,
    /// Output on stdout: a text table, or data for other tools
    #[arg(long, value_enum, default_value = "text")]
    pub format: FormatArg,
}

#[derive(Debug, Args)]
pub struct SweepArgs {
    /// The file to read; with --op write, where the scratch file goes
    pub file: PathBuf,
    /// read or write
    #[arg(long, default_value = "read", value_parser = ["read", "write"])]
    pub op: String,
    /// Block sizes: a power-of-two range LOW..HIGH, or a list 4K,64K,1M
    #[arg(long, default_value = "512..16M")]
    pub bs: String,
    /// Methods (default read,mmap; for --op write: write,mmap)
    #[arg(long, value_delimiter = ',')]
    pub methods: Vec<String>,
    /// Cache states for reads
    #[arg(long, value_delimiter = ',', default_value = "cold,warm", value_parser = parse::cache_mode)]
    pub cache: Vec<CacheMode>,
    /// Sync modes for writes
    #[arg(long, value_delimiter = ',', default_value = "none,end,each,dsync", value_parser = parse::sync_mode)]
    pub sync: Vec<SyncMode>,
    /// Bytes per run (reads: default the whole file; writes: 64M)
    #[arg(long, value_parser = parse::size)]
    pub size: Option<u64>,
    /// Threads, each with its own part
    #[arg(long, default_value = "1", value_parser = parse::threads)]
    pub threads: usize,
    /// io_uring requests in flight per thread
    #[arg(long, default_value = "32", value_parser = parse::depth)]
    pub depth: u32,
    /// Runs per cell (interleaved)
    #[arg(long, default_value = "3", value_parser = parse::positive)]
    pub repeat: usize,
    /// Seed of the written data
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// With cold, as root: also drop every clean cache (drop_caches)
    #[arg(long)]
    pub drop_all: bool,
    /// Also write the plot as SVG here
    #[arg(long)]
    pub plot: Option<PathBuf>,
    /// Overwrite an existing --plot file
    #[arg(long)]
    pub force: bool,
    /// Output on stdout: a text table, or data for other tools
    #[arg(long, value_enum, default_value = "text")]
    pub format: FormatArg,
}

#[derive(Debug, Args)]
pub struct Run2Args {
    /// A regular file to read
    pub file: PathBuf,
    /// Block size: 4096, 4K, 1MiB...
    #[arg(value_parser = parse::size, allow_hyphen_values = true)]
    pub block_size: u64,
    /// The time window one read should take
    #[arg(long, default_value = "5s..15s", value_parser = parse::window)]
    pub target: (std::time::Duration, std::time::Duration),
    /// Read method
    #[arg(long, default_value = "read", value_parser = parse::read_method)]
    pub method: ReadMethod,
    /// Threads, each with its own part
    #[arg(long, default_value = "1", value_parser = parse::threads)]
    pub threads: usize,
    #[command(flatten)]
    pub cache: CacheArgs,
    /// Output on stdout: the classic lines (text) or JSON with every step
    #[arg(long, value_enum, default_value = "text")]
    pub format: FormatArg,
}

#[derive(Debug, Args)]
pub struct SyscallsArgs {
    /// A file to read 1-byte pieces of (default: a 1 MiB scratch file)
    pub file: Option<PathBuf>,
    /// Timed samples per call (each at least 20 ms)
    #[arg(long, default_value = "5", value_parser = parse::positive)]
    pub samples: usize,
    /// Output on stdout: a text table, or data for other tools
    #[arg(long, value_enum, default_value = "text")]
    pub format: FormatArg,
}

#[derive(Debug, Args)]
pub struct SuiteArgs {
    /// Where the report goes
    #[arg(long, default_value = "iolab-report")]
    pub out: PathBuf,
    /// Where the generated data goes (default: a new directory beside --out, removed at the end)
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Size of the random data file (capped to fit the disk and a quarter of RAM)
    #[arg(long, default_value = "1G", value_parser = parse::size)]
    pub size: u64,
    /// Fewer sizes, methods and repeats: about a minute on 2 cores
    #[arg(long)]
    pub quick: bool,
    /// Keep the generated data
    #[arg(long)]
    pub keep_data: bool,
    /// Replace an existing report folder instead of making a dated one
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Args)]
pub struct AdviseArgs {
    /// A regular file
    pub file: PathBuf,
    /// seq or random
    #[arg(long, default_value = "random", value_parser = parse::pattern)]
    pub pattern: Pattern,
    /// Block size
    #[arg(long, default_value = "4K", value_parser = parse::size)]
    pub bs: u64,
    /// Threads
    #[arg(long, default_value = "1", value_parser = parse::threads)]
    pub threads: usize,
    /// Output on stdout: a text table, or data for other tools
    #[arg(long, value_enum, default_value = "text")]
    pub format: FormatArg,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// results.json files from `iolab suite`
    #[arg(required = true)]
    pub results: Vec<PathBuf>,
    /// Where the report goes
    #[arg(long, default_value = "iolab-report")]
    pub out: PathBuf,
    /// Replace an existing report folder instead of making a dated one
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Args)]
pub struct VmArgs {
    /// The file to map
    pub file: PathBuf,
    /// First make FILE with this many random bytes (an existing file needs --force)
    #[arg(long, value_parser = parse::size)]
    pub create: Option<u64>,
    /// Overwrite FILE with --create
    #[arg(long)]
    pub force: bool,
    /// Offsets to touch one by one before touching every page
    #[arg(long, value_delimiter = ',', default_value = "0,10000", value_parser = parse::size)]
    pub touch: Vec<u64>,
    /// Touch by reading (the default stages)
    #[arg(long)]
    pub read: bool,
    /// Then repeat the stages writing through a shared writable mapping, and msync
    #[arg(long)]
    pub write: bool,
    /// Keep the file's cached pages instead of evicting them first
    #[arg(long)]
    pub no_evict: bool,
    /// Also show /proc/meminfo before and after reading the whole file
    #[arg(long)]
    pub page_cache: bool,
    /// Output on stdout: text tables, or data for other tools
    #[arg(long, value_enum, default_value = "text")]
    pub format: FormatArg,
}

impl VmArgs {
    pub fn config(&self) -> VmConfig {
        VmConfig {
            path: self.file.clone(),
            touches: self.touch.clone(),
            write: self.write,
            evict: !self.no_evict,
            page_cache: self.page_cache,
        }
    }
}

/// What both transfer sides share.
#[derive(Debug, Args)]
pub struct NetArgs {
    /// Parallel connections (files go round-robin)
    #[arg(long, default_value = "1", value_parser = parse::positive)]
    pub connections: usize,
    /// A shared secret both sides must prove (or IOLAB_TOKEN)
    #[arg(long)]
    pub token: Option<String>,
    /// Give up on a peer idle this long
    #[arg(long, default_value = "30s", value_parser = parse::duration)]
    pub timeout: std::time::Duration,
    /// Output on stdout: the classic lines, or JSON
    #[arg(long, value_enum, default_value = "text")]
    pub format: FormatArg,
}

impl NetArgs {
    pub fn token(&self) -> Option<String> {
        self.token
            .clone()
            .or_else(|| std::env::var("IOLAB_TOKEN").ok().filter(|t| !t.is_empty()))
    }
}

#[derive(Debug, Args)]
pub struct SendArgs {
    /// Files to send, in order
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// read (also fcntl), mmap, sendfile, splice
    #[arg(long, default_value = "read", value_parser = parse::send_method)]
    pub method: SendMethod,
    /// Address to listen on: HOST or HOST:PORT
    #[arg(long, default_value = "127.0.0.1")]
    pub listen: String,
    /// Port, when --listen has none
    #[arg(long, default_value_t = 2325)]
    pub port: u16,
    #[command(flatten)]
    pub net: NetArgs,
}

#[derive(Debug, Args)]
pub struct RecvArgs {
    /// Output paths for the files in the order sent (default: the senders' names in --out)
    pub names: Vec<PathBuf>,
    /// The sender: HOST:PORT
    #[arg(long, default_value = "127.0.0.1:2325")]
    pub connect: String,
    /// Directory for received files
    #[arg(long, default_value = ".")]
    pub out: PathBuf,
    /// write (also fcntl), mmap, splice
    #[arg(long, default_value = "write", value_parser = parse::recv_method)]
    pub method: RecvMethod,
    /// Refuse files larger than this (default: the free space of the output filesystem)
    #[arg(long, value_parser = parse::size)]
    pub max_size: Option<u64>,
    /// Replace existing files
    #[arg(long)]
    pub force: bool,
    /// fsync each file inside its timed window
    #[arg(long)]
    pub sync: bool,
    /// Receive and verify, store nothing
    #[arg(long)]
    pub discard: bool,
    /// Keep retrying a refused connection this long
    #[arg(long, default_value = "0s", value_parser = parse::duration_or_zero)]
    pub retry: std::time::Duration,
    #[command(flatten)]
    pub net: NetArgs,
}

/// `N f1 .. fN fcntl|mmap [IP]` of the course programs.
#[derive(Debug, Args)]
pub struct ClassicArgs {
    /// N, the N files, the method (fcntl or mmap), and for slave the master's IP
    #[arg(required = true, num_args = 3..)]
    pub words: Vec<String>,
    /// Port on both sides
    #[arg(long, default_value_t = 2325)]
    pub port: u16,
    /// master: the address to listen on
    #[arg(long, default_value = "127.0.0.1")]
    pub listen: String,
    #[command(flatten)]
    pub net: NetArgs,
}

/// `HOST:PORT`, or `HOST` with `port`.
pub fn listen_addr(listen: &str, port: u16) -> Result<std::net::SocketAddr, String> {
    use std::net::ToSocketAddrs;
    if let Ok(a) = listen.parse() {
        return Ok(a);
    }
    (listen, port)
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .ok_or_else(|| {
            format!("cannot use '{listen}' as an address to listen on: expected HOST or HOST:PORT")
        })
}

impl SendArgs {
    pub fn config(&self) -> Result<(std::net::SocketAddr, SendConfig), String> {
        Ok((
            listen_addr(&self.listen, self.port)?,
            SendConfig {
                files: self.files.clone(),
                method: self.method,
                connections: self.net.connections,
                token: self.net.token(),
                timeout: self.net.timeout,
            },
        ))
    }
}

impl RecvArgs {
    pub fn config(&self) -> RecvConfig {
        RecvConfig {
            connect: self.connect.clone(),
            out_dir: self.out.clone(),
            names: self.names.clone(),
            method: self.method,
            connections: self.net.connections,
            token: self.net.token(),
            timeout: self.net.timeout,
            max_size: self.max_size,
            force: self.force,
            sync: self.sync,
            discard: self.discard,
            retry: self.retry,
        }
    }
}

impl ClassicArgs {
    /// The master's address and sender config.
    pub fn master(&self) -> Result<(std::net::SocketAddr, SendConfig), String> {
        let (files, method, _) = self.parse(false)?;
        Ok((
            listen_addr(&self.listen, self.port)?,
            SendConfig {
                files,
                method: if method == "mmap" {
                    SendMethod::Mmap
                } else {
                    SendMethod::Read
                },
                connections: self.net.connections,
                token: self.net.token(),
                timeout: self.net.timeout,
            },
        ))
    }

    /// The slave's receiver config: it writes the files it names, as the course program did.
    pub fn slave(&self) -> Result<RecvConfig, String> {
        let (names, method, ip) = self.parse(true)?;
        let ip = ip.unwrap_or_default();
        let host = if ip.contains(':') && !ip.starts_with('[') {
            format!("[{ip}]")
        } else {
            ip
        };
        Ok(RecvConfig {
            connect: format!("{host}:{}", self.port),
            out_dir: ".".into(),
            names,
            method: if method == "mmap" {
                RecvMethod::Mmap
            } else {
                RecvMethod::Write
            },
            connections: self.net.connections,
            token: self.net.token(),
            timeout: self.net.timeout,
            max_size: None,
            force: false,
            sync: false,
            discard: false,
            retry: std::time::Duration::from_secs(5),
        })
    }

    /// `(files, method word, ip)`: checks N against the files given.
    pub fn parse(&self, with_ip: bool) -> Result<(Vec<PathBuf>, String, Option<String>), String> {
        let usage = if with_ip {
            "slave N f1 .. fN fcntl|mmap IP"
        } else {
            "master N f1 .. fN fcntl|mmap"
        };
        let n: usize = self.words[0]
            .parse()
            .map_err(|_| format!("N must be a number of files: {usage}"))?;
        let want = 1 + n + 1 + with_ip as usize;
        if n == 0 || self.words.len() != want {
            return Err(format!(
                "expected {usage} ({want} words, got {})",
                self.words.len()
            ));
        }
        let files = self.words[1..=n].iter().map(PathBuf::from).collect();
        let method = self.words[n + 1].clone();
        if method != "fcntl" && method != "mmap" {
            return Err(format!("the method is fcntl or mmap, not '{method}'"));
        }
        Ok((files, method, with_ip.then(|| self.words[n + 2].clone())))
    }
}

#[derive(Debug, Args)]
pub struct TransferArgs {
    /// Files to move in every run
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Sender:receiver pairs (default: all 12)
    #[arg(long, value_delimiter = ',', value_parser = parse::method_pair)]
    pub methods: Vec<(SendMethod, RecvMethod)>,
    /// Runs per pair (interleaved)
    #[arg(long, default_value = "3", value_parser = parse::positive)]
    pub repeat: usize,
    /// Parallel connections
    #[arg(long, default_value = "1", value_parser = parse::positive)]
    pub connections: usize,
    /// fsync each received file inside its timed window
    #[arg(long)]
    pub sync: bool,
    /// The receiver verifies but stores nothing
    #[arg(long)]
    pub discard: bool,
    /// Output on stdout: a text table, or data for other tools
    #[arg(long, value_enum, default_value = "text")]
    pub format: FormatArg,
}

impl TransferArgs {
    pub fn config(&self) -> TransferConfig {
        TransferConfig {
            files: self.files.clone(),
            pairs: if self.methods.is_empty() {
                all_pairs()
            } else {
                self.methods.clone()
            },
            repeat: self.repeat,
            connections: self.connections,
            sync: self.sync,
            discard: self.discard,
        }
    }
}

impl Run2Args {
    pub fn config(&self) -> Run2Config {
        Run2Config {
            path: self.file.clone(),
            bs: self.block_size,
            min: self.target.0,
            max: self.target.1,
            method: self.method,
            threads: self.threads,
            cache: self.cache.cache.unwrap_or(CacheMode::Asis),
            drop_all: self.cache.drop_all,
        }
    }
}

impl SweepArgs {
    pub fn config(&self) -> Result<SweepConfig, String> {
        let op = if self.op == "write" {
            SweepOp::Write
        } else {
            SweepOp::Read
        };
        let sizes = parse_sizes(&self.bs).map_err(|e| format!("{}: {}", e.what, e.cause))?;
        let names: Vec<String> = if self.methods.is_empty() {
            vec![
                if op == SweepOp::Read { "read" } else { "write" }.into(),
                "mmap".into(),
            ]
        } else {
            self.methods.clone()
        };
        let (mut read_methods, mut write_methods) = (Vec::new(), Vec::new());
        for n in &names {
            match op {
                SweepOp::Read => read_methods
                    .push(parse::read_method(n).map_err(|e| format!("invalid method '{n}': {e}"))?),
                SweepOp::Write => write_methods.push(
                    parse::write_method(n).map_err(|e| format!("invalid method '{n}': {e}"))?,
                ),
            }
        }
        Ok(SweepConfig {
            path: self.file.clone(),
            op,
            sizes,
            read_methods,
            write_methods,
            caches: self.cache.clone(),
            syncs: self.sync.clone(),
            len: self.size,
            threads: self.threads,
            depth: self.depth,
            repeat: self.repeat,
            seed: self.seed,
            drop_all: self.drop_all,
        })
    }
}

impl AccessArgs {
    /// Whether the classic positional form was used.
    pub fn is_classic(&self) -> bool {
        !self.classic.is_empty()
    }

    pub fn config(&self) -> Result<AccessConfig, String> {
        let mut cfg = AccessConfig {
            path: self.file.clone(),
            bs: self.bs,
            patterns: self.patterns.clone(),
            methods: self.methods.clone(),
            caches: self.cache.clone(),
            threads: self.threads,
            depth: self.depth,
            ops: self.ops,
            duration: Some(self.duration),
            repeat: self.repeat,
            warmup: self.warmup,
            seed: self.seed,
            drop_all: self.drop_all,
        };
        if self.is_classic() {
            let words: Vec<&str> = self.classic.iter().map(|s| s.as_str()).collect();
            let (pattern, method, advice) = match words.as_slice() {
                [p, m] => (*p, *m, None),
                [p, m, a] => (*p, *m, Some(*a)),
                _ => {
                    return Err(
                        "the classic form is FILE seq|random read|mmap [adv_seq|adv_random]".into(),
                    );
                }
            };
            let method = match (method, advice) {
                ("read", None) => ReadMethod::Read,
                ("mmap", None) => ReadMethod::Mmap,
                ("mmap", Some("adv_seq")) => ReadMethod::MmapSeq,
                ("mmap", Some("adv_random")) => ReadMethod::MmapRandom,
                ("read", Some(_)) => {
                    return Err("adv_seq/adv_random are madvise hints: they apply to mmap".into());
                }
                (m, a) => {
                    return Err(format!(
                        "unknown classic method '{m}'{}: expected read or mmap [adv_seq|adv_random]",
                        a.map(|a| format!(" {a}")).unwrap_or_default()
                    ));
                }
            };
            cfg.patterns = vec![parse::pattern(pattern)?];
            cfg.methods = vec![method];
            cfg.caches = vec![CacheMode::Asis];
            cfg.repeat = 1;
            cfg.warmup = 0;
        }
        Ok(cfg)
    }
}

impl RunArgs {
    pub fn config(&self) -> Result<RunConfig, String> {
        let op = if self.read { Op::Read } else { Op::Write };
        let (mut read_method, mut write_method) = (ReadMethod::Read, WriteMethod::Write);
        if let Some(m) = &self.method {
            match op {
                Op::Read => read_method = parse::read_method(m)?,
                Op::Write => write_method = parse::write_method(m)?,
            }
        }
        Ok(RunConfig {
            path: self.file.clone(),
            op,
            bs: self.block_size,
            count: self.block_count,
            read_method,
            write_method,
            pattern: self.workload.pattern,
            seed: self.workload.seed,
            threads: self.workload.threads,
            depth: self.workload.depth,
            cache: self.cache.cache.unwrap_or(CacheMode::Asis),
            drop_all: self.cache.drop_all,
            sync: self.sync,
            force: self.force,
        })
    }
}

impl ReadArgs {
    pub fn config(&self) -> Result<ReadConfig, String> {
        let len = match (self.count, self.size) {
            (Some(c), _) => Some(self.bs.checked_mul(c).ok_or_else(|| {
                format!("--bs {} x --count {c} does not fit in 64 bits", self.bs)
            })?),
            (None, s) => s,
        };
        Ok(ReadConfig {
            path: self.file.clone(),
            method: self.method,
            bs: self.bs,
            len,
            pattern: self.workload.pattern,
            seed: self.workload.seed,
            threads: self.workload.threads,
            depth: self.workload.depth,
            cache: self.cache.cache.unwrap_or(CacheMode::Warm),
            drop_all: self.cache.drop_all,
            repeat: self.repeat,
            warmup: self.warmup,
        })
    }
}

impl WriteArgs {
    pub fn config(&self) -> Result<WriteConfig, String> {
        let len = match (self.count, self.size) {
            (Some(c), _) => self
                .bs
                .checked_mul(c)
                .ok_or_else(|| format!("--bs {} x --count {c} does not fit in 64 bits", self.bs))?,
            (None, Some(s)) => s,
            (None, None) => return Err("give --size or --count".into()),
        };
        Ok(WriteConfig {
            path: self.file.clone(),
            method: self.method,
            bs: self.bs,
            len,
            pattern: self.workload.pattern,
            seed: self.workload.seed,
            threads: self.workload.threads,
            sync: self.sync,
            force: self.force,
            repeat: self.repeat,
            warmup: self.warmup,
        })
    }
}

impl FastArgs {
    pub fn config(&self) -> FastConfig {
        FastConfig {
            path: self.file.clone(),
            method: self.method,
            threads: self.threads,
            bs: self.bs,
            depth: self.depth,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn command_definition_is_consistent() {
        Cli::command().debug_assert();
    }
}
