//! `iolab cache status|evict|load FILE...` and `iolab cache meminfo`.

use super::Ctx;
use super::args::{self, OutputArgs};
use clap::{Args, Subcommand};
use iolab::Error;
use iolab::experiments::page_cache::{CacheAction, run_cache};
use std::path::PathBuf;

/// Page-cache residency of files (like vmtouch), evict them, or load them.
#[derive(Debug, Subcommand)]
pub enum CacheCommand {
    /// Resident pages per file (directories are walked, as vmtouch does), a total, and the
    /// page-cache size
    #[command(
        after_help = "Examples:\n  iolab cache status big.bin\n  iolab cache status /usr/lib/x86_64-linux-gnu --map\n  iolab cache status big.bin --format csv\n\nThe kernel shows residency only to who may write a file (or root): for anyone else\nit is said to be hidden, never printed (mincore and cachestat would say all resident)."
    )]
    Status(CacheFiles),
    /// Evict files from the page cache (fdatasync + fadvise DONTNEED)
    #[command(
        after_help = "Examples:\n  iolab cache evict big.bin\n  iolab cache evict ./data --map\n  sudo iolab cache evict big.bin --drop-all    # also every clean page of the machine"
    )]
    Evict(EvictArgs),
    /// Load files into the page cache
    #[command(
        after_help = "Examples:\n  iolab cache load big.bin\n  iolab cache load ./data --map"
    )]
    Load(CacheFiles),
    /// The page-cache figures of /proc/meminfo: Cached, Buffers, Dirty, Writeback, (in)active file
    #[command(
        after_help = "Examples:\n  iolab cache meminfo\n  iolab cache meminfo --format json\n  watch -n1 iolab cache meminfo"
    )]
    Meminfo(OutputArgs),
}

/// `evict`: the files, and whether to drop every clean cache too.
#[derive(Debug, Args)]
pub struct EvictArgs {
    #[command(flatten)]
    pub files: CacheFiles,
    /// As root: also drop every clean cache (drop_caches)
    #[arg(long)]
    pub drop_all: bool,
}

/// The files of `status`, `evict` and `load`.
#[derive(Debug, Args)]
pub struct CacheFiles {
    /// Regular files, or directories (every regular file under them)
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Draw which parts of each file are resident, one bar per file (like vmtouch -v)
    #[arg(long)]
    pub map: bool,
    /// Characters in a --map bar
    #[arg(long, default_value = "64", value_parser = args::positive)]
    pub width: usize,
    #[command(flatten)]
    pub output: OutputArgs,
}

impl CacheCommand {
    /// Runs it and prints residency (or the meminfo figures).
    pub fn run(self, ctx: &Ctx) -> Result<(), Error> {
        let (action, files, drop_all) = match self {
            CacheCommand::Status(f) => (CacheAction::Status, f, false),
            CacheCommand::Evict(e) => (CacheAction::Evict, e.files, e.drop_all),
            CacheCommand::Load(f) => (CacheAction::Load, f, false),
            CacheCommand::Meminfo(o) => {
                let info = iolab::cache::meminfo::read();
                return ctx.emit(&o, &info, || {
                    iolab::experiments::page_cache::report::meminfo_document(&info)
                });
            }
        };
        let width = files.map.then_some(files.width);
        let r = run_cache(action, &files.files, drop_all, width)?;
        ctx.show(&files.output, &r.notes, &r, || {
            iolab::experiments::page_cache::report::cache_document(&r)
        })
    }
}
