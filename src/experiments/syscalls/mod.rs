//! `iolab syscalls [FILE]`: what one system call costs here. Each call is repeated in a loop long
//! enough to time (at least 20 ms a sample), several samples, median ns per call.

use super::host::{Host, host_facts};
use crate::error::{Error, Result, describe_io};
use crate::harness::{Cell, CellRun, Observer, Rounds, Timed};
use crate::measure::Counters;
use crate::measure::stats::{Summary, summarize};
use crate::sys::calls;
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::hint::black_box;
use std::io::Read;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub mod findings;
pub mod report;
pub mod suite;

/// One system call's cost.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SyscallRow {
    /// Short name, e.g. `read-1b`.
    pub name: String,
    /// What is called, in words.
    pub what: String,
    /// Nanoseconds per call over the samples.
    pub ns: Summary,
    /// Calls per second at the median.
    pub calls_per_s: f64,
    /// Why it could not run here, if it could not.
    pub unsupported: Option<String>,
}

/// What `iolab syscalls` found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SyscallsResult {
    /// The machine it ran on.
    pub host: Host,
    /// The file read from, when one was given.
    pub file: Option<PathBuf>,
    /// Timed samples per call.
    pub samples: usize,
    /// The level its comparison is decided at (`--level`).
    #[serde(default = "crate::measure::decide::default_level")]
    pub level: f64,
    /// One row per call.
    pub rows: Vec<SyscallRow>,
    /// 1-byte reads as a transfer rate (the classic view): bytes per second.
    pub read_1b_bytes_per_s: f64,
}

const SAMPLE: Duration = Duration::from_millis(20);

/// Iterations of a loop body that take at least [`SAMPLE`]: grows the count from 64.
fn calibrate(f: &mut dyn FnMut(u64) -> Result<()>) -> Result<u64> {
    let mut n = 64u64;
    loop {
        let t = Instant::now();
        f(n)?;
        let e = t.elapsed();
        if e >= SAMPLE || n >= 1 << 32 {
            return Ok(n);
        }
        let scale = (SAMPLE.as_secs_f64() / e.as_secs_f64().max(1e-9)).clamp(2.0, 100.0);
        n = (n as f64 * scale) as u64;
    }
}

/// Runs `n` iterations of one call (the argument is the iteration count).
type Body<'a> = Box<dyn FnMut(u64) -> Result<()> + 'a>;

/// How one row is sampled.
enum CallSampler<'a> {
    /// A loop of calls, timed as a whole: ns per call over the calibrated count.
    Loop { body: Body<'a>, n: u64 },
    /// The first writes to fresh anonymous pages.
    Faults,
    /// Cannot run here.
    Unsupported(Error),
}

/// One call measured: a cell of the harness.
struct CallCell<'a> {
    name: &'static str,
    what: &'static str,
    sampler: CallSampler<'a>,
}

/// A loop body calling `f(i)` for each iteration `i`.
fn each<'a>(mut f: impl FnMut(u64) -> Result<()> + 'a) -> CallSampler<'a> {
    CallSampler::Loop {
        body: Box::new(move |n| {
            for i in 0..n {
                f(i)?;
            }
            Ok(())
        }),
        n: 0,
    }
}

/// The calls as the harness sees them: every round samples each once, interleaved.
struct CallCells<'a>(Vec<CallCell<'a>>);

impl crate::harness::Cells for CallCells<'_> {
    type Extra = f64;
    fn count(&self) -> usize {
        self.0.len()
    }
    fn name(&self, i: usize) -> String {
        self.0[i].name.to_string()
    }
    fn cell(&self, _: usize) -> Cell<'_> {
        Cell::own()
    }
    /// One sample: ns per call.
    fn own(&mut self, i: usize) -> Result<Timed<f64>> {
        let t = Instant::now();
        let ns = match &mut self.0[i].sampler {
            CallSampler::Loop { body, n } => {
                if *n == 0 {
                    *n = calibrate(&mut **body)?;
                }
                let t = Instant::now();
                body(*n)?;
                t.elapsed().as_nanos() as f64 / *n as f64
            }
            CallSampler::Faults => minor_fault_sample()?,
            CallSampler::Unsupported(e) => return Err(e.clone()),
        };
        Ok(Timed {
            counters: Counters {
                wall: t.elapsed(),
                ..Counters::default()
            },
            extra: ns,
            ..Timed::default()
        })
    }
    fn figure(&self, run: &CellRun<f64>) -> f64 {
        run.extra
    }
}

fn io_err<'a>(what: &str, path: &'a Path) -> impl Fn(std::io::Error) -> Error + 'a {
    let what = what.to_string();
    move |e| Error::failed(what.clone(), describe_io(&e)).at(path)
}

/// Times each call in `rounds` samples of at least 20 ms (after the warm-ups, which also
/// calibrate each loop).
pub fn run_syscalls(
    file: Option<&Path>,
    rounds: &Rounds,
    command_line: &str,
    obs: &dyn Observer,
) -> Result<SyscallsResult> {
    rounds.check()?;
    // A cached file to read: the user's, or 1 MiB of our own in a temporary directory.
    // Removed when dropped, at the end of this function.
    let mut _scratch = None;
    let path: PathBuf = match file {
        Some(p) => {
            let src = crate::engine::open_source(p)?;
            if src.size == 0 {
                return Err(Error::usage(
                    "file too small",
                    "1-byte reads need a file of at least 1 byte",
                )
                .at(p));
            }
            p.to_path_buf()
        }
        None => {
            let dir = crate::output::temp_dir("iolab-syscalls")?;
            let p = dir.path().join("iolab-syscalls.bin");
            _scratch = Some(dir);
            let mut data = vec![0u8; 1 << 20];
            crate::workload::fill_random(&mut data, 7);
            std::fs::write(&p, &data).map_err(|e| Error::io("cannot create", &p, &e))?;
            p
        }
    };
    let rows = measure_all(&path, rounds, obs)?;
    let read_ns = rows
        .iter()
        .find(|r| r.name == "read-1b")
        .map(|r| r.ns.median)
        .unwrap_or(0.0);
    Ok(SyscallsResult {
        host: host_facts(Some(&path), command_line),
        file: file.map(Path::to_path_buf),
        samples: rounds.repeat,
        level: rounds.level,
        rows,
        read_1b_bytes_per_s: if read_ns > 0.0 { 1e9 / read_ns } else { 0.0 },
    })
}

/// The calls measured, each with what it does and how it is timed, on the cached `file`.
fn calls_to_time<'a>(file: &'a File, path: &'a Path, size: u64) -> Result<Vec<CallCell<'a>>> {
    let mut seq = File::open(path).map_err(|e| Error::io("cannot open", path, &e))?;
    let mut byte = [0u8; 1];
    let mut byte2 = [0u8; 1];
    let mut page = crate::sys::buf::AlignedBuf::new(4096);
    let blocks = (size / 4096).max(1);
    let row = |name, what, sampler| CallCell {
        name,
        what,
        sampler,
    };
    // Calls that touch no file: the floor every other row stands on.
    let mut rows = vec![
        row(
            "getppid",
            "getppid(2), the null system call",
            each(|_| {
                black_box(calls::getppid());
                Ok(())
            }),
        ),
        row(
            "clock_gettime",
            "clock_gettime(CLOCK_MONOTONIC) through the vDSO (no kernel entry)",
            each(|_| {
                black_box(Instant::now());
                Ok(())
            }),
        ),
    ];
    rows.extend([
        row(
            "read-1b",
            "read(2) of 1 byte, sequential through a cached file",
            each(move |_| {
                if seq.read(&mut byte).map_err(io_err("read failed", path))? == 0 {
                    calls::lseek(&seq, 0).map_err(io_err("seek failed", path))?;
                }
                Ok(())
            }),
        ),
        row(
            "pread-1b",
            "pread(2) of 1 byte at a moving offset",
            each(move |i| {
                file.read_at(&mut byte2, i % size)
                    .map_err(io_err("read failed", path))?;
                Ok(())
            }),
        ),
        row(
            "pread-4k",
            "pread(2) of 4 KiB into an aligned buffer",
            each(move |i| {
                file.read_at(page.as_mut_slice(), (i % blocks) * 4096)
                    .map_err(io_err("read failed", path))
                    .map(drop)
            }),
        ),
        // Calls on the file that move no data.
        row(
            "lseek",
            "lseek(2) to an offset",
            each(move |i| {
                calls::lseek(file, (i % size) as i64)
                    .map(drop)
                    .map_err(io_err("seek failed", path))
            }),
        ),
        row(
            "fstat",
            "fstat(2)",
            each(move |_| {
                calls::fstat(file)
                    .map(drop)
                    .map_err(io_err("fstat failed", path))
            }),
        ),
        row(
            "mmap-munmap",
            "mmap(2) + munmap(2) of one page of the file",
            each(move |_| calls::map_unmap_page(file).map_err(io_err("mmap failed", path))),
        ),
        row(
            "minor-fault",
            "first write to an anonymous 4 KiB page (one minor fault)",
            CallSampler::Faults,
        ),
    ]);
    rows.push(row(
        "uring-nop",
        "io_uring NOP, per operation, submitted 32 at a time",
        uring_nops()?,
    ));
    Ok(rows)
}

/// io_uring NOPs submitted 32 at a time (unsupported where the kernel has no io_uring).
fn uring_nops<'a>() -> Result<CallSampler<'a>> {
    const BATCH: u32 = 32;
    match crate::engine::new_ring(BATCH, "uring-nop") {
        Ok(mut ring) => Ok(CallSampler::Loop {
            body: Box::new(move |n| {
                let mut left = n;
                while left > 0 {
                    let k = left.min(BATCH as u64) as usize;
                    left -= crate::engine::nop_batch(&mut ring, k)? as u64;
                }
                Ok(())
            }),
            n: 0,
        }),
        Err(e) if e.kind == crate::error::ErrorKind::Unsupported => Ok(CallSampler::Unsupported(e)),
        Err(e) => Err(e),
    }
}

/// Every call of [`calls_to_time`], for `rounds` (the first round calibrates each loop).
fn measure_all(path: &Path, rounds: &Rounds, obs: &dyn Observer) -> Result<Vec<SyscallRow>> {
    let src = crate::source::open_source(path)?;
    let size = src.size;
    // The calls that touch the file time it warm: put in place and verified by the harness.
    crate::harness::put(&crate::harness::CacheSpec::file(
        &src,
        size,
        crate::cache::CacheMode::Warm,
        false,
    ))?;
    let rows = calls_to_time(&src.file, path, size)?;
    debug_assert_eq!(rows.len(), ROWS, "ROWS counts the calls measured");
    let mut calls = CallCells(rows);
    let out = crate::harness::run("syscalls", &mut calls, rounds, &[], obs)?;
    Ok(calls
        .0
        .iter()
        .zip(out.cells)
        .map(|(r, c)| {
            let ns = summarize(&c.runs.iter().map(|r| r.extra).collect::<Vec<_>>());
            SyscallRow {
                name: r.name.into(),
                what: r.what.into(),
                calls_per_s: if ns.median > 0.0 {
                    1e9 / ns.median
                } else {
                    0.0
                },
                ns,
                unsupported: c.skipped.map(|e| e.cause),
            }
        })
        .collect())
}

/// Calls measured, for the progress count (it once said "10 of 9").
const ROWS: usize = 10;

/// ns per first write to a fresh anonymous page, over 8192 pages.
fn minor_fault_sample() -> Result<f64> {
    const PAGES: usize = 8192;
    let mut pages =
        calls::FreshPages::new(PAGES).map_err(|e| Error::failed("mmap failed", describe_io(&e)))?;
    let t = Instant::now();
    pages.touch_all();
    Ok(t.elapsed().as_nanos() as f64 / pages.pages() as f64)
}
