//! `iolab suite`: makes its own data, runs every experiment, and returns one result with host
//! facts, every experiment's outcome (or why it failed or was unsupported) and the findings
//! derived from them. Rendering and writing the report is the report module's and the CLI's.

use super::Observer;
use super::access::{AccessConfig, AccessResult, run_access};
use super::classic::{ClassicResult, Op, RunConfig, run_classic};
use super::fast::{FastConfig, FastResult, run_fast};
use super::findings::{Finding, derive};
use super::host::{Host, host_facts};
use super::run2::{Run2Config, Run2Result, run_run2};
use super::sweep::{SweepConfig, SweepOp, SweepResult, parse_sizes, run_sweep};
use super::syscalls::{SyscallsResult, run_syscalls};
use super::transfer::{TransferConfig, TransferResult, run_transfer};
use super::vm::{VmConfig, VmResult, create_file, run_vm};
use crate::cache::CacheMode;
use crate::cache::meminfo::{self, PageCache};
use crate::engine::ReadMethod;
use crate::engine::write::{SyncMode, WriteMethod};
use crate::error::{Error, Result};
use crate::transfer::{RecvMethod, SendMethod};
use crate::workload::{Pattern, fill_random, splitmix64};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SuiteConfig {
    /// Where the data goes (created, removed at the end unless `keep_data`).
    pub dir: PathBuf,
    /// Size of the random file (capped to fit the disk and a quarter of RAM).
    pub size: u64,
    pub quick: bool,
    pub keep_data: bool,
}

/// One experiment's outcome: its result, or why there is none.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Outcome<T> {
    pub result: Option<T>,
    pub error: Option<String>,
    pub seconds: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DataSet {
    pub random_file: PathBuf,
    pub random_size: u64,
    pub classic_files: Vec<PathBuf>,
    pub classic_bytes: u64,
    /// Why the size is smaller than asked, when it is.
    pub capped: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SuiteResult {
    pub schema: String,
    pub host: Host,
    pub config: SuiteConfig,
    pub data: DataSet,
    pub page_cache_before: PageCache,
    pub page_cache_after: PageCache,
    pub run_read: Outcome<ClassicResult>,
    pub run_write: Outcome<ClassicResult>,
    pub run2: Outcome<Run2Result>,
    pub fast_warm: Outcome<FastResult>,
    pub fast_cold: Outcome<FastResult>,
    pub sweep_read: Outcome<SweepResult>,
    pub sweep_write: Outcome<SweepResult>,
    pub access: Outcome<AccessResult>,
    pub syscalls: Outcome<SyscallsResult>,
    pub vm: Outcome<VmResult>,
    pub transfer: Outcome<TransferResult>,
    pub findings: Vec<Finding>,
    pub seconds: f64,
}

pub const SCHEMA: &str = "iolab-suite/1";

/// Names of the experiments, in the order they run (for progress).
pub const EXPERIMENTS: [&str; 11] = [
    "data",
    "run",
    "run2",
    "fast",
    "sweep read",
    "sweep write",
    "access",
    "syscalls",
    "vm",
    "transfer",
    "findings",
];

fn outcome<T>(f: impl FnOnce() -> Result<T>) -> Result<Outcome<T>> {
    if crate::sys::interrupted() {
        return Err(Error::failed(
            "interrupted",
            "stopped by a signal; nothing was kept",
        ));
    }
    let t = Instant::now();
    let r = f();
    let seconds = t.elapsed().as_secs_f64();
    Ok(match r {
        Ok(v) => Outcome {
            result: Some(v),
            error: None,
            seconds,
        },
        Err(e) => Outcome {
            result: None,
            error: Some(e.to_string()),
            seconds,
        },
    })
}

/// Words for the generated text files.
const WORDS: [&str; 24] = [
    "page", "cache", "block", "read", "write", "map", "fault", "kernel", "file", "byte", "disk",
    "copy", "socket", "buffer", "the", "a", "of", "and", "to", "in", "is", "data", "fast", "slow",
];

fn text(len: usize, seed: u64) -> Vec<u8> {
    let mut s = seed;
    let mut out = Vec::with_capacity(len + 16);
    let mut col = 0;
    while out.len() < len {
        let w = WORDS[(splitmix64(&mut s) % WORDS.len() as u64) as usize];
        out.extend_from_slice(w.as_bytes());
        col += w.len() + 1;
        out.push(if col > 70 { b'\n' } else { b' ' });
        if col > 70 {
            col = 0;
        }
    }
    out.truncate(len);
    out
}

fn write_new(path: &Path, data: &[u8]) -> Result<()> {
    std::fs::write(path, data).map_err(|e| Error::io("cannot write data", path, &e))
}

/// Makes the data: a random file and the classic transfer inputs.
pub fn make_data(cfg: &SuiteConfig) -> Result<DataSet> {
    std::fs::create_dir_all(cfg.dir.join("classic"))
        .map_err(|e| Error::io("cannot create", &cfg.dir, &e))?;
    let dirf = std::fs::File::open(&cfg.dir).map_err(|e| Error::io("cannot open", &cfg.dir, &e))?;
    let free = crate::sys::fs_free_bytes(&dirf).unwrap_or(u64::MAX);
    let ram = meminfo::read().mem_total;
    let mut size = cfg.size.max(1 << 20);
    let mut capped = None;
    if size > free / 2 {
        size = free / 2;
        capped = Some(format!(
            "capped to half the free disk space ({})",
            crate::size::format_size(free)
        ));
    }
    if ram > 0 && size > ram / 4 {
        size = ram / 4;
        capped = Some(format!(
            "capped to a quarter of RAM ({})",
            crate::size::format_size(ram)
        ));
    }
    size = size / 4096 * 4096;
    let random_file = cfg.dir.join("random.bin");
    {
        use std::io::Write;
        let mut f = std::fs::File::create(&random_file)
            .map_err(|e| Error::io("cannot create", &random_file, &e))?;
        let mut buf = vec![0u8; 8 << 20];
        let mut left = size;
        let mut seed = 1;
        while left > 0 {
            let n = left.min(buf.len() as u64) as usize;
            fill_random(&mut buf[..n], seed);
            seed += 1;
            f.write_all(&buf[..n])
                .map_err(|e| Error::io("cannot write data", &random_file, &e))?;
            left -= n as u64;
        }
    }
    let c = cfg.dir.join("classic");
    let mut files = Vec::new();
    for i in 0..10 {
        let p = c.join(format!("small{i:02}.txt"));
        write_new(&p, &text(2400, 100 + i))?;
        files.push(p);
    }
    let p = c.join("big.txt");
    write_new(&p, &text(12_022_885, 7))?;
    files.push(p);
    for (n, len) in [(4, 4096usize), (4, 4097)] {
        for i in 0..n {
            let p = c.join(format!("p{len}_{i}.bin"));
            let mut b = vec![0u8; len];
            fill_random(&mut b, len as u64 * 10 + i);
            write_new(&p, &b)?;
            files.push(p);
        }
    }
    for i in 0..3u64 {
        let p = c.join(format!("binary{i}.bin"));
        let mut b = vec![0u8; 800_000];
        fill_random(&mut b, 900 + i);
        write_new(&p, &b)?;
        files.push(p);
    }
    let classic_bytes = files
        .iter()
        .filter_map(|f| std::fs::metadata(f).ok())
        .map(|m| m.len())
        .sum();
    Ok(DataSet {
        random_file,
        random_size: size,
        classic_files: files,
        classic_bytes,
        capped,
    })
}

/// Runs everything. Experiments that fail are recorded and the suite goes on; a signal stops it.
/// Progress of the experiment under way, prefixed with the suite's overall step.
struct Stepped<'a> {
    obs: &'a dyn Observer,
    step: std::cell::Cell<usize>,
}

impl Observer for Stepped<'_> {
    fn progress(&self, what: &str, done: usize, total: usize) {
        let i = self.step.get();
        self.obs.progress(
            &format!(
                "suite [{}/{}] {}: {what}",
                i + 1,
                EXPERIMENTS.len(),
                EXPERIMENTS[i]
            ),
            done,
            total,
        );
    }
}

pub fn run_suite(cfg: &SuiteConfig, command_line: &str, obs: &dyn Observer) -> Result<SuiteResult> {
    let started = Instant::now();
    let inner = Stepped {
        obs,
        step: std::cell::Cell::new(0),
    };
    let step = |i: usize| {
        inner.step.set(i);
        inner.progress("starting", 0, 1);
    };
    step(0);
    let before = meminfo::read();
    let data = make_data(cfg)?;
    let file = data.random_file.clone();
    let q = cfg.quick;
    let progress = &inner;
    step(1);
    let mb = 1u64 << 20;
    let run_read = outcome(|| {
        run_classic(&classic_cfg(
            &file,
            Op::Read,
            mb,
            data.random_size / mb,
            false,
        ))
    })?;
    let wlen = if q {
        16 * mb
    } else {
        data.random_size.min(256 * mb)
    };
    let run_write = outcome(|| {
        run_classic(&classic_cfg(
            &cfg.dir.join("run-write.bin"),
            Op::Write,
            mb,
            wlen / mb,
            true,
        ))
    })?;
    step(2);
    let run2 = outcome(|| {
        let (min, max) = if q {
            (Duration::from_millis(20), Duration::from_millis(100))
        } else {
            (Duration::from_secs(5), Duration::from_secs(15))
        };
        run_run2(
            &Run2Config {
                path: file.clone(),
                bs: mb,
                min,
                max,
                method: ReadMethod::Read,
                threads: 1,
                cache: CacheMode::Asis,
                drop_all: false,
            },
            progress,
        )
    })?;
    step(3);
    let fast = |cache: CacheMode| {
        outcome(|| {
            let src = crate::engine::open_source(&file)?;
            crate::cache::prepare(&src.file, src.size, &file, cache, false)?;
            drop(src);
            run_fast(&FastConfig {
                path: file.clone(),
                method: None,
                threads: None,
                bs: None,
                depth: None,
            })
        })
    };
    let fast_warm = fast(CacheMode::Warm)?;
    let fast_cold = fast(CacheMode::Cold)?;
    step(4);
    let sweep = |op, sizes: &str, len| -> Result<SweepResult> {
        let read = op == SweepOp::Read;
        let cfg = SweepConfig {
            path: if read { file.clone() } else { cfg.dir.clone() },
            op,
            sizes: parse_sizes(sizes)?,
            read_methods: if read {
                vec![ReadMethod::Read, ReadMethod::Mmap]
            } else {
                Vec::new()
            },
            write_methods: if read {
                Vec::new()
            } else {
                vec![WriteMethod::Write, WriteMethod::Mmap]
            },
            caches: if read {
                vec![CacheMode::Cold, CacheMode::Warm]
            } else {
                Vec::new()
            },
            syncs: if read {
                Vec::new()
            } else {
                vec![SyncMode::None, SyncMode::End, SyncMode::Each]
            },
            len: Some(len),
            threads: 1,
            depth: 32,
            repeat: if q { 1 } else { 3 },
            seed: 1,
            drop_all: false,
        };
        run_sweep(&cfg, command_line, progress)
    };
    let sweep_read = outcome(|| {
        let len = if q {
            data.random_size.min(64 * mb)
        } else {
            data.random_size
        };
        sweep(SweepOp::Read, if q { "4K,64K,1M" } else { "4K..16M" }, len)
    })?;
    step(5);
    let sweep_write = outcome(|| {
        sweep(
            SweepOp::Write,
            if q { "64K,1M" } else { "4K,64K,1M,16M" },
            if q { 8 * mb } else { 64 * mb },
        )
    })?;
    step(6);
    let access = outcome(|| {
        run_access(
            &AccessConfig {
                path: file.clone(),
                bs: 4096,
                patterns: vec![Pattern::Seq, Pattern::Random],
                methods: if q {
                    vec![
                        ReadMethod::Pread,
                        ReadMethod::Mmap,
                        ReadMethod::MmapRandom,
                        ReadMethod::Uring,
                    ]
                } else {
                    super::access::DEFAULT_METHODS.to_vec()
                },
                caches: vec![CacheMode::Warm, CacheMode::Cold],
                threads: 1,
                depth: 32,
                ops: None,
                duration: Some(if q {
                    Duration::from_millis(300)
                } else {
                    Duration::from_secs(3)
                }),
                repeat: if q { 1 } else { 3 },
                warmup: if q { 0 } else { 1 },
                seed: 1,
                drop_all: false,
            },
            command_line,
            progress,
        )
    })?;
    step(7);
    let syscalls =
        outcome(|| run_syscalls(Some(&file), if q { 1 } else { 5 }, command_line, progress))?;
    step(8);
    let vm = outcome(|| {
        let p = cfg.dir.join("vm.bin");
        create_file(&p, 10 * mb, true)?;
        run_vm(&VmConfig {
            path: p,
            touches: vec![0, 10000],
            write: true,
            evict: true,
            page_cache: true,
        })
    })?;
    step(9);
    let transfer = outcome(|| {
        let pairs = if q {
            vec![
                (SendMethod::Read, RecvMethod::Write),
                (SendMethod::Mmap, RecvMethod::Mmap),
                (SendMethod::Sendfile, RecvMethod::Splice),
                (SendMethod::Splice, RecvMethod::Write),
            ]
        } else {
            super::transfer::all_pairs()
        };
        run_transfer(
            &TransferConfig {
                files: data.classic_files.clone(),
                pairs,
                repeat: if q { 1 } else { 3 },
                connections: 1,
                sync: false,
                discard: false,
            },
            command_line,
            progress,
        )
    })?;
    step(10);
    let mut result = SuiteResult {
        schema: SCHEMA.into(),
        host: host_facts(Some(&file), command_line),
        config: cfg.clone(),
        data,
        page_cache_before: before,
        page_cache_after: meminfo::read(),
        run_read,
        run_write,
        run2,
        fast_warm,
        fast_cold,
        sweep_read,
        sweep_write,
        access,
        syscalls,
        vm,
        transfer,
        findings: Vec::new(),
        seconds: 0.0,
    };
    result.findings = derive(&result);
    result.seconds = started.elapsed().as_secs_f64();
    Ok(result)
}

fn classic_cfg(path: &Path, op: Op, bs: u64, count: u64, force: bool) -> RunConfig {
    RunConfig {
        path: path.to_path_buf(),
        op,
        bs,
        count: count.max(1),
        read_method: ReadMethod::Read,
        write_method: WriteMethod::Write,
        pattern: Pattern::Seq,
        seed: 1,
        threads: 1,
        depth: 32,
        cache: CacheMode::Asis,
        drop_all: false,
        sync: SyncMode::None,
        force,
    }
}
