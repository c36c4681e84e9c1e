//! The classic `run`, reading the whole data file and writing a file, as the course did.

use crate::cache::CacheMode;
use crate::engine::ReadMethod;
use crate::engine::write::{SyncMode, WriteMethod};
use crate::error::Result;
use crate::experiments::Observer;
use crate::experiments::entry::{About, Entry, SuiteContext};
use crate::experiments::run::{ClassicResult, RunConfig, RunOp, run_classic};
use crate::workload::Shape;
use std::path::Path;

const MB: u64 = 1 << 20;

fn classic_cfg(path: &Path, op: RunOp, count: u64) -> RunConfig {
    RunConfig {
        path: path.to_path_buf(),
        op,
        bs: MB,
        count: count.max(1),
        read_method: ReadMethod::Read,
        write_method: WriteMethod::Write,
        shape: Shape::SEQUENTIAL,
        cache: CacheMode::Asis,
        drop_all: false,
        sync: SyncMode::None,
        // The path is a fresh scratch name of the data directory's: nothing of the user's.
        force: op == RunOp::Write,
    }
}

/// `run FILE -r 1M N` over the whole data file.
pub struct RunRead;

impl Entry for RunRead {
    type Output = ClassicResult;
    fn about(&self) -> &'static About {
        &About {
            name: "run_read",
            title: "run: the classic program",
            explains: "Reads the whole file in 1 MiB blocks with read(2), then writes a file, timed from open to close as the course program did. The cache is as it is, so the read measures whatever the page cache held.",
        }
    }

    fn run(&self, ctx: &SuiteContext<'_>, _: &dyn Observer) -> Result<ClassicResult> {
        run_classic(&classic_cfg(
            ctx.file(),
            RunOp::Read,
            ctx.data.random_size / MB,
        ))
    }

    fn document(&self, out: &ClassicResult) -> crate::report::Document {
        super::report::run_document(out)
    }
}

/// `run FILE -w 1M N` into a scratch file.
pub struct RunWrite;

impl Entry for RunWrite {
    type Output = ClassicResult;
    fn about(&self) -> &'static About {
        &About {
            name: "run_write",
            title: "run -w",
            explains: "Writes 1 MiB blocks with write(2) and no sync: the time is copying into the page cache, not reaching the device.",
        }
    }

    fn run(&self, ctx: &SuiteContext<'_>, _: &dyn Observer) -> Result<ClassicResult> {
        let len = ctx.scale(16 * MB, ctx.data.random_size.min(256 * MB));
        let path = ctx.dir.scratch("run-write.bin")?;
        run_classic(&classic_cfg(&path, RunOp::Write, len / MB))
    }

    fn document(&self, out: &ClassicResult) -> crate::report::Document {
        super::report::run_document(out)
    }
}
