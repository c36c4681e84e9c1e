//! The suite's three classic tables: mmap-bench, Part B and the NTU course inputs.

use super::{ClassicNetConfig, ClassicNetResult, course_inputs, report, run_classic_net};
use crate::cache::CacheMode;
use crate::error::Result;
use crate::experiments::access::{AccessConfig, AccessResult, run_access};
use crate::experiments::entry::{About, Entry, SuiteContext};
use crate::experiments::partb::{PartBConfig, PartBResult, run_partb};
use crate::harness::{BudgetClass, Observer};
use crate::transfer::ChunkSizes;

/// mmap-bench's eight rows, cold and warm, as the original ran them.
pub struct ClassicAccess;

impl Entry for ClassicAccess {
    type Output = AccessResult;
    fn about(&self) -> &'static About {
        &About {
            name: "classic_access",
            title: "mmap-bench: the classic table",
            explains: "The course benchmark's own run: every 4 KiB block of a file once, in order or at random, with read or through a mapping with each madvise hint, one byte touched per block. Cold, random blocks wait for the device whatever the way; warm, a mapping skips the system call per block.",
        }
    }

    fn run(&self, ctx: &SuiteContext<'_>, obs: &dyn Observer) -> Result<AccessResult> {
        // A file of its own, small enough that the whole-file cold random rows fit the budget.
        let path = ctx.dir.scratch("classic-access.bin")?;
        let size = ctx.scale(8u64 << 20, 32 << 20);
        crate::workload::write_random(&path, size, 11)?;
        let cfg = AccessConfig {
            caches: vec![CacheMode::Cold, CacheMode::Warm],
            rounds: ctx.rounds(BudgetClass::Table),
            ..AccessConfig::classic(path)
        };
        run_access(&cfg, ctx.command_line, obs)
    }

    fn document(&self, out: &AccessResult) -> crate::report::Document {
        report::access_document(out)
    }
}

/// The pmap lab's Part B: read against a mapping, write() + fsync against a mapping + msync.
pub struct PartB;

impl Entry for PartB {
    type Output = PartBResult;
    fn about(&self) -> &'static About {
        &About {
            name: "part_b",
            title: "Part B: read vs mmap, write + fsync vs mmap + msync",
            explains: "The lab's comparison: reading a file with read() against through a mapping, and writing it with write() and an fsync per block against through a mapping and one msync. An fsync per block waits for the device every block; the mapping's one msync writes everything back once, so the fair comparison is with write() and one fsync at the end.",
        }
    }

    fn run(&self, ctx: &SuiteContext<'_>, obs: &dyn Observer) -> Result<PartBResult> {
        let path = ctx.dir.scratch("part-b.bin")?;
        crate::experiments::vm::create_file(&path, ctx.scale(8 << 20, 32 << 20), false)?;
        run_partb(
            &PartBConfig {
                path,
                bs: PartBConfig::DEFAULT_BS,
                // An fsync per 4 KiB block costs about a millisecond here: 256 of them per run.
                write_len: ctx.scale(1 << 20, 4 << 20),
                rounds: ctx.rounds(BudgetClass::Table),
            },
            ctx.command_line,
            obs,
        )
    }

    fn document(&self, out: &PartBResult) -> crate::report::Document {
        report::partb_document(out)
    }
}

/// The NTU course inputs through `master`/`slave`, fcntl against mmap.
pub struct ClassicNet;

impl Entry for ClassicNet {
    type Output = ClassicNetResult;
    fn about(&self) -> &'static About {
        &About {
            name: "classic_net",
            title: "master/slave: the course inputs, fcntl vs mmap",
            explains: "The NTU course's transfer of its own inputs, one Transmission time per run on each side, with the course's 512-byte chunks and 8 KiB windows and with iolab's 1 MiB chunks and whole-file mappings. Small files cost a connection each, whatever the method; large ones show the copies each method makes.",
        }
    }

    fn run(&self, ctx: &SuiteContext<'_>, obs: &dyn Observer) -> Result<ClassicNetResult> {
        run_classic_net(
            &ClassicNetConfig {
                inputs: course_inputs(&ctx.data.classic_files),
                sizes: vec![ChunkSizes::CLASSIC, ChunkSizes::default()],
                rounds: ctx.rounds(BudgetClass::Short),
                program: ctx.cfg.worker.clone(),
            },
            obs,
        )
    }

    fn document(&self, out: &ClassicNetResult) -> crate::report::Document {
        report::net_document(out)
    }
}
