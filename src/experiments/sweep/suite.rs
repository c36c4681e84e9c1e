//! Throughput against block size: reads cold and warm, writes by sync mode.

use super::findings::{fsync_cost, mmap_crossover, sequential};
use super::{SweepConfig, SweepOp, SweepResult, parse_sizes, run_sweep};
use crate::cache::CacheMode;
use crate::engine::ReadMethod;
use crate::engine::write::{SyncMode, WriteMethod};
use crate::error::Result;
use crate::experiments::entry::{About, Entry, SuiteContext, SuiteResult};
use crate::harness::{BudgetClass, Observer};
use crate::measure::finding::Finding;

use crate::report::svg::{Plot, Point, Series, line_plot, stack};
use std::path::PathBuf;

const MB: u64 = 1 << 20;

fn sweep(
    ctx: &SuiteContext<'_>,
    obs: &dyn Observer,
    op: SweepOp,
    path: PathBuf,
    sizes: &str,
    len: u64,
    budget: BudgetClass,
) -> Result<SweepResult> {
    let read = op == SweepOp::Read;
    fn pick<T>(on: bool, v: Vec<T>) -> Vec<T> {
        if on { v } else { Vec::new() }
    }
    let cfg = SweepConfig {
        path,
        op,
        sizes: parse_sizes(sizes)?,
        read_methods: pick(read, vec![ReadMethod::Read, ReadMethod::Mmap]),
        write_methods: pick(!read, vec![WriteMethod::Write, WriteMethod::Mmap]),
        caches: pick(read, vec![CacheMode::Cold, CacheMode::Warm]),
        syncs: pick(!read, vec![SyncMode::None, SyncMode::End, SyncMode::Each]),
        len: Some(len),
        threads: 1,
        depth: 32,
        // Adaptive: rounds go on until read and mmap (and each sync mode) are told apart.
        rounds: ctx.rounds(budget),
        seed: 1,
        drop_all: false,
    };
    run_sweep(&cfg, ctx.command_line, obs)
}

/// Reads in blocks of 4 KiB to 16 MiB, read and mmap, cold and warm.
pub struct SweepRead;

impl Entry for SweepRead {
    type Output = SweepResult;
    fn about(&self) -> &'static About {
        &About {
            name: "sweep_read",
            title: "sweep: read throughput vs block size",
            explains: "Small blocks pay one system call each (read) or one fault per folio (mmap); large blocks amortise them. Cold, the device and readahead set the pace; the findings say, with their intervals, whether read and mmap differ here.",
        }
    }

    fn run(&self, ctx: &SuiteContext<'_>, obs: &dyn Observer) -> Result<SweepResult> {
        let size = ctx.data.random_size;
        // 128 MiB a run quick (a warm 1 MiB mmap run lasts about 10 ms), 256 MiB full; every
        // fourth power of two full, so that the first look (8 rounds of every cell) fits.
        let len = ctx.scale(size.min(128 * MB), size.min(256 * MB));
        let sizes = ctx.scale("4K,64K,1M", "4K,16K,64K,256K,1M,4M,16M");
        let budget = BudgetClass::Long;
        // A whole file of that size, not the start of the data file: cold, read's readahead
        // window (twice mmap's) past the end was counted against read.
        let file = ctx.file_of("sweep-read.bin", len, 11)?;
        sweep(ctx, obs, SweepOp::Read, file, sizes, len, budget)
    }

    fn document(&self, out: &SweepResult) -> crate::report::Document {
        super::report::sweep_document(out)
    }

    fn plot(&self, out: &SweepResult) -> Option<String> {
        Some(super::report::sweep_plot(out))
    }

    fn finding_keys(&self) -> &'static [&'static str] {
        &["sequential-cold", "sequential-warm", "mmap-crossover-warm"]
    }

    fn findings(&self, out: &SweepResult, _: &SuiteResult) -> Vec<Finding> {
        let spend = out.rounds.spend();
        [
            sequential(&out.cells, spend, CacheMode::Cold),
            sequential(&out.cells, spend, CacheMode::Warm),
            mmap_crossover(&out.cells, spend),
        ]
        .into_iter()
        .flatten()
        .collect()
    }
}

/// Writes with write() and a mapping, without sync, with one at the end, and after every block.
pub struct SweepWrite;

impl Entry for SweepWrite {
    type Output = SweepResult;
    fn about(&self) -> &'static About {
        &About {
            name: "sweep_write",
            title: "sweep: writes and durability",
            explains: "Without sync a write only dirties the page cache; fsync per block waits for the device every time. Mappings write back through msync.",
        }
    }

    fn run(&self, ctx: &SuiteContext<'_>, obs: &dyn Observer) -> Result<SweepResult> {
        let (sizes, len) = ctx.scale(("64K,1M", 8 * MB), ("4K,64K,1M,16M", 64 * MB));
        let dir = ctx.dir.path().to_path_buf();
        let budget = BudgetClass::Medium;
        sweep(ctx, obs, SweepOp::Write, dir, sizes, len, budget)
    }

    fn document(&self, out: &SweepResult) -> crate::report::Document {
        super::report::sweep_document(out)
    }

    fn plot(&self, s: &SweepResult) -> Option<String> {
        // MiB/s against block size, a panel per write method and a line per sync mode: the
        // lesson (small blocks with an fsync each) is at the left, not cut away.
        let panels: Vec<String> = s
            .config
            .write_methods
            .iter()
            .map(|m| {
                let series = s
                    .config
                    .syncs
                    .iter()
                    .map(|sync| Series {
                        name: format!("sync {}", sync.name()),
                        points: s
                            .cells
                            .iter()
                            .filter(|c| c.write() == Some((*m, *sync)) && c.mib_s.n > 0)
                            .map(|c| Point {
                                x: c.bs as f64,
                                y: c.mib_s.median,
                                lo: c.mib_s.min,
                                hi: c.mib_s.max,
                            })
                            .collect(),
                    })
                    .collect();
                line_plot(&Plot {
                    title: format!("{}: write throughput by block size and sync mode", m.name()),
                    x_label: "block size (log2 scale)".into(),
                    y_label: "MiB/s (median, bars min-max; log)".into(),
                    log2_x: true,
                    log_y: true,
                    series,
                })
            })
            .collect();
        (!panels.is_empty()).then(|| stack(&panels, "write throughput by block size and sync mode"))
    }

    fn finding_keys(&self) -> &'static [&'static str] {
        &["fsync-each"]
    }

    fn findings(&self, out: &SweepResult, _: &SuiteResult) -> Vec<Finding> {
        fsync_cost(&out.cells, out.rounds.spend())
            .into_iter()
            .collect()
    }
}
