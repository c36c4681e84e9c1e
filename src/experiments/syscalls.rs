//! `iolab syscalls [FILE]`: what one system call costs here. Each call is repeated in a loop long
//! enough to time (at least 20 ms a sample), several samples, median ns per call.

use super::Observer;
use super::host::{Host, host_facts};
use crate::error::{Error, Result, describe_io};
use crate::measure::stats::{Summary, summarize};
use crate::sys::calls;
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::hint::black_box;
use std::io::Read;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// One system call's cost.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SyscallsResult {
    /// The machine it ran on.
    pub host: Host,
    /// The file read from, when one was given.
    pub file: Option<PathBuf>,
    /// Timed samples per call.
    pub samples: usize,
    /// One row per call.
    pub rows: Vec<SyscallRow>,
    /// 1-byte reads as a transfer rate (the classic view): bytes per second.
    pub read_1b_bytes_per_s: f64,
}

const SAMPLE: Duration = Duration::from_millis(20);

/// Times one call of `f(i)` per iteration `i` (see [`time_calls`]).
fn time_each(samples: usize, mut f: impl FnMut(u64) -> Result<()>) -> Result<Vec<f64>> {
    time_calls(samples, |n| {
        for i in 0..n {
            f(i)?;
        }
        Ok(())
    })
}

/// Times `f(iterations)`: grows the iteration count until a sample takes `SAMPLE`, then takes
/// `samples` samples. Returns ns per call for each.
fn time_calls(samples: usize, mut f: impl FnMut(u64) -> Result<()>) -> Result<Vec<f64>> {
    let mut n = 64u64;
    loop {
        let t = Instant::now();
        f(n)?;
        let e = t.elapsed();
        if e >= SAMPLE || n >= 1 << 32 {
            break;
        }
        let scale = (SAMPLE.as_secs_f64() / e.as_secs_f64().max(1e-9)).clamp(2.0, 100.0);
        n = (n as f64 * scale) as u64;
    }
    (0..samples)
        .map(|_| {
            let t = Instant::now();
            f(n)?;
            Ok(t.elapsed().as_nanos() as f64 / n as f64)
        })
        .collect()
}

fn io_err<'a>(what: &str, path: &'a Path) -> impl Fn(std::io::Error) -> Error + 'a {
    let what = what.to_string();
    move |e| Error::failed(what.clone(), describe_io(&e)).at(path)
}

/// Times each call in `samples` samples of at least 20 ms.
pub fn run_syscalls(
    file: Option<&Path>,
    samples: usize,
    command_line: &str,
    obs: &dyn Observer,
) -> Result<SyscallsResult> {
    let samples = samples.max(1);
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
    let rows = measure_all(&path, samples, obs)?;
    let read_ns = rows
        .iter()
        .find(|r| r.name == "read-1b")
        .map(|r| r.ns.median)
        .unwrap_or(0.0);
    Ok(SyscallsResult {
        host: host_facts(Some(&path), command_line),
        file: file.map(Path::to_path_buf),
        samples,
        rows,
        read_1b_bytes_per_s: if read_ns > 0.0 { 1e9 / read_ns } else { 0.0 },
    })
}

fn measure_all(path: &Path, samples: usize, obs: &dyn Observer) -> Result<Vec<SyscallRow>> {
    let file = File::open(path).map_err(|e| Error::io("cannot open", path, &e))?;
    let size = file
        .metadata()
        .map_err(|e| Error::io("cannot stat", path, &e))?
        .len();
    crate::cache::load(&file, size, path)?;
    let mut rows = Vec::new();
    let mut add = |name: &str, what: &str, r: Result<Vec<f64>>| -> Result<()> {
        let (ns, unsupported) = match r {
            Ok(v) => (summarize(&v), None),
            Err(e) if e.kind == crate::error::ErrorKind::Unsupported => {
                (summarize(&[]), Some(e.cause))
            }
            Err(e) => return Err(e),
        };
        let calls_per_s = if ns.median > 0.0 {
            1e9 / ns.median
        } else {
            0.0
        };
        rows.push(SyscallRow {
            name: name.into(),
            what: what.into(),
            ns,
            calls_per_s,
            unsupported,
        });
        obs.progress("syscalls", rows.len(), ROWS);
        Ok(())
    };
    // Calls that touch no file: the floor every other row stands on.
    let bare: [(&str, &str, fn()); 2] = [
        ("getppid", "getppid(2), the null system call", || {
            black_box(calls::getppid());
        }),
        (
            "clock_gettime",
            "clock_gettime(CLOCK_MONOTONIC) through the vDSO (no kernel entry)",
            || {
                black_box(Instant::now());
            },
        ),
    ];
    for (name, what, call) in bare {
        let timing = time_each(samples, |_| {
            call();
            Ok(())
        });
        add(name, what, timing)?;
    }
    let mut seq = File::open(path).map_err(|e| Error::io("cannot open", path, &e))?;
    let mut byte = [0u8; 1];
    add(
        "read-1b",
        "read(2) of 1 byte, sequential through a cached file",
        time_each(samples, |_| {
            if seq.read(&mut byte).map_err(io_err("read failed", path))? == 0 {
                calls::lseek(&seq, 0).map_err(io_err("seek failed", path))?;
            }
            Ok(())
        }),
    )?;
    add(
        "pread-1b",
        "pread(2) of 1 byte at a moving offset",
        time_each(samples, |i| {
            file.read_at(&mut byte, i % size)
                .map_err(io_err("read failed", path))?;
            Ok(())
        }),
    )?;
    let mut page = crate::sys::buf::AlignedBuf::new(4096);
    let blocks = (size / 4096).max(1);
    add(
        "pread-4k",
        "pread(2) of 4 KiB into an aligned buffer",
        time_each(samples, |i| {
            file.read_at(page.as_mut_slice(), (i % blocks) * 4096)
                .map_err(io_err("read failed", path))
                .map(drop)
        }),
    )?;
    // Calls on the file that move no data: name, what, the failure's wording, the call (given the
    // iteration and the file size).
    type FileCall = fn(&File, u64, u64) -> std::io::Result<()>;
    let file_calls: [(&str, &str, &str, FileCall); 3] = [
        (
            "lseek",
            "lseek(2) to an offset",
            "seek failed",
            |f, i, size| calls::lseek(f, (i % size) as i64).map(drop),
        ),
        ("fstat", "fstat(2)", "fstat failed", |f, _, _| {
            calls::fstat(f).map(drop)
        }),
        (
            "mmap-munmap",
            "mmap(2) + munmap(2) of one page of the file",
            "mmap failed",
            |f, _, _| calls::map_unmap_page(f),
        ),
    ];
    for (name, what, failed, call) in file_calls {
        let timing = time_each(samples, |i| {
            call(&file, i, size).map_err(io_err(failed, path))
        });
        add(name, what, timing)?;
    }
    add(
        "minor-fault",
        "first write to an anonymous 4 KiB page (one minor fault)",
        minor_faults(samples),
    )?;
    add(
        "uring-nop",
        "io_uring NOP, per operation, submitted 32 at a time",
        uring_nops(samples),
    )?;
    debug_assert_eq!(rows.len(), ROWS, "ROWS counts the calls measured");
    Ok(rows)
}

/// Calls measured, for the progress count (it once said "10 of 9").
const ROWS: usize = 10;

fn minor_faults(samples: usize) -> Result<Vec<f64>> {
    const PAGES: usize = 8192;
    let sample = |_| -> Result<f64> {
        let mut pages = calls::FreshPages::new(PAGES)
            .map_err(|e| Error::failed("mmap failed", describe_io(&e)))?;
        let t = Instant::now();
        pages.touch_all();
        Ok(t.elapsed().as_nanos() as f64 / pages.pages() as f64)
    };
    let _ = sample(0)?; // warm-up: the first pages of a process cost more
    (0..samples.max(1) * 3).map(sample).collect()
}

fn uring_nops(samples: usize) -> Result<Vec<f64>> {
    const BATCH: u32 = 32;
    let mut ring = crate::engine::new_ring(BATCH, "uring-nop")?;
    time_calls(samples, |n| {
        let mut left = n;
        while left > 0 {
            let k = left.min(BATCH as u64) as usize;
            left -= crate::engine::nop_batch(&mut ring, k)? as u64;
        }
        Ok(())
    })
}
