//! `iolab vm FILE`: the pmap lab, stage by stage.

use super::Ctx;
use super::args::{self, OutputArgs};
use clap::Args;
use iolab::Error;
use iolab::experiments::partb::{PartBConfig, run_partb};
use iolab::experiments::vm::report;
use iolab::experiments::vm::{VmConfig, create_file, run_vm};
use std::path::PathBuf;

/// The pmap lab: VM size and RSS of a mapped file stage by stage, with page descriptors.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  iolab vm data.bin --create 10M\n  iolab vm data.bin --touch 0,10000,4M --write\n  iolab vm data.bin --page-cache --format json\n  iolab vm data.bin --part-b --bs 4K --size 16M   (the lab's Part B: read vs mmap, write+fsync vs mmap+msync)\n\nWith --write every touched byte is written back unchanged through a MAP_SHARED mapping:\nthe pages turn dirty, the content stays the same. PFNs and kpageflags need root."
)]
pub struct VmArgs {
    /// The file to map
    pub file: PathBuf,
    /// First make FILE with this many random bytes (an existing file needs --force)
    #[arg(long, value_parser = args::size)]
    pub create: Option<u64>,
    /// Overwrite FILE with --create
    #[arg(long)]
    pub force: bool,
    /// Offsets to touch one by one before touching every page
    #[arg(long, value_delimiter = ',', default_value = "0,10000", value_parser = args::size)]
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
    /// The lab's Part B instead: read() vs mmap reading, write() with an fsync per block vs a
    /// mapping with one msync (and write() with one fsync), with free -m before and after
    #[arg(long)]
    pub part_b: bool,
    /// Part B: block size of every read and write
    #[arg(long, default_value = "4K", value_parser = args::size, requires = "part_b")]
    pub bs: u64,
    /// Part B: bytes written per run [default: 16MiB, at most the file's size]
    #[arg(long, value_parser = args::size, requires = "part_b")]
    pub size: Option<u64>,
    // Part B's rounds (each runs every way once, interleaved).
    #[command(flatten)]
    pub rounds: super::rounds::RoundArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

impl VmArgs {
    /// Runs it and prints a pmap -x table per stage.
    pub fn run(self, ctx: &Ctx) -> Result<(), Error> {
        if self.rounds.given() && !self.part_b {
            return Err(Error::usage(
                "--repeat, --warmup and --budget are part B's rounds",
                "add --part-b",
            ));
        }
        if let Some(size) = self.create {
            create_file(&self.file, size, self.force)?;
        }
        if self.part_b {
            let file_size = std::fs::metadata(&self.file).map(|m| m.len()).unwrap_or(0);
            let r = run_partb(
                &PartBConfig {
                    path: self.file,
                    bs: self.bs,
                    write_len: self
                        .size
                        .unwrap_or(PartBConfig::DEFAULT_WRITE_LEN.min(file_size.max(1))),
                    rounds: self.rounds.rounds("vm"),
                },
                &ctx.command_line,
                &ctx.progress,
            )?;
            return ctx.emit(&self.output, &r, || report::partb_document(&r));
        }
        let r = run_vm(&VmConfig {
            path: self.file,
            touches: self.touch,
            write: self.write,
            evict: !self.no_evict,
            page_cache: self.page_cache,
        })?;
        ctx.emit(&self.output, &r, || report::vm_document(&r))
    }
}
