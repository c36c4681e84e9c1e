//! `iolab ior`: IOR's measurement (github hpc/ior) with iolab's checks. Every rank writes and
//! reads its part of one shared file or of a file of its own, phases start together at a
//! barrier, and the bandwidth is all bytes over the time from the first rank's start to the last
//! rank's end, as IOR computes it. What iolab adds: the XOR of everything read, checked against
//! what was written (each transfer's data depends on its offset, so a part written twice, not at
//! all or in the wrong place shows); each rank's page-cache residency before reading back, its
//! faults and device bytes; the slowest rank.
//!
//! Ranks talk through [`Comm`]: one process is [`Solo`]; the `mpi` feature adds an MPI one.

use crate::engine::{EngineOptions, ReadMethod, open_source, prepare};
use crate::error::{Error, Result};
use crate::measure::{Snapshot, diff};
use crate::workload::{Pattern, Workload, WrittenData};
use crate::xor::xor_at;
use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

mod phases;
use phases::{read_phase, write_phase};

mod claim;
pub mod report;
pub use claim::Claim;
use claim::claim_file;

crate::named_enum! {
    /// How ranks move data (IOR's `-a`).
    pub enum IorApi {
        /// pwrite/pread (IOR's POSIX).
        Posix = "posix" | "POSIX",
        /// A shared mapping: memcpy in, msync with -e; reads through a mapping (IOR's MMAP).
        Mmap = "mmap" | "MMAP",
        /// Reads with io_uring (buffered); writes with pwrite, as iolab has no io_uring writer.
        Uring = "uring",
        /// O_DIRECT pwrite/pread with aligned buffers.
        Direct = "direct",
    }
}

impl IorApi {
    /// The read method of iolab's engines for this API.
    fn read_method(self) -> ReadMethod {
        match self {
            IorApi::Posix => ReadMethod::Pread,
            IorApi::Mmap => ReadMethod::Mmap,
            IorApi::Uring => ReadMethod::Uring,
            IorApi::Direct => ReadMethod::Direct,
        }
    }
}

/// The ranks of one job: who this is, how many, and the collective steps the measurement needs.
pub trait Comm {
    /// This rank, from 0.
    fn rank(&self) -> usize;
    /// How many ranks.
    fn size(&self) -> usize;
    /// Waits until every rank is here.
    fn barrier(&self);
    /// Every rank's `v` (all the same length), in rank order, on every rank.
    fn all_gather(&self, v: &[f64]) -> Vec<Vec<f64>>;
    /// Ranks on rank 0's node (IOR's tasks per node).
    fn tasks_per_node(&self) -> usize {
        1
    }
}

/// One process: rank 0 of 1.
pub struct Solo;

impl Comm for Solo {
    fn rank(&self) -> usize {
        0
    }
    fn size(&self) -> usize {
        1
    }
    fn barrier(&self) {}
    fn all_gather(&self, v: &[f64]) -> Vec<Vec<f64>> {
        vec![v.to_vec()]
    }
}

/// What to run, in IOR's terms.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct IorConfig {
    /// `-a`.
    pub api: IorApi,
    /// `-b`: bytes per rank per segment.
    pub block: u64,
    /// `-t`: bytes per I/O call.
    pub transfer: u64,
    /// `-s`: segments.
    pub segments: u64,
    /// `-F`: a file per rank (`PATH.00000001`) instead of one shared file.
    pub file_per_proc: bool,
    /// `-C`: read back the part of the rank `tasks per node x offset` further on (IOR's
    /// reordering: with ranks placed node by node, the next node's data, not in this node's
    /// cache).
    pub reorder: bool,
    /// `-Q`: IOR's taskPerNodeOffset, the multiple of tasks per node to shift by (1).
    #[serde(default = "one")]
    pub reorder_offset: usize,
    /// Tasks per node to assume instead of counting them (to shift by single ranks on one host).
    #[serde(default)]
    pub tasks_per_node: Option<usize>,
    /// `-e`: fsync (msync for mmap) before closing after writing.
    pub fsync: bool,
    /// `-w`.
    pub write: bool,
    /// `-r`.
    pub read: bool,
    /// `-i`.
    pub iterations: usize,
    /// `-D`: a phase stops after this long (stonewalling); reads cover what was written.
    #[serde(default, with = "crate::measure::secs::option")]
    #[schemars(with = "Option<f64>")]
    pub stonewall: Option<Duration>,
    /// `-o`.
    pub path: PathBuf,
    /// `-k`: keep the files.
    pub keep: bool,
    /// Seed of the written data.
    pub seed: u64,
    /// XOR every byte moved and check it against the data written; off (`--no-verify`), the
    /// bandwidth of IOR without -R: reads copy each transfer into a buffer (out of the mapping
    /// for mmap, as IOR's MMAP back end does) and nothing is checked.
    #[serde(default = "yes")]
    pub verify: bool,
}

impl IorConfig {
    /// Checks the sizes fit together as IOR requires.
    pub fn check(&self) -> Result<()> {
        let bad = |msg: String| Err(Error::usage("invalid ior sizes", msg));
        if self.transfer == 0 || self.block == 0 || self.segments == 0 {
            return bad("block, transfer and segments must be at least 1".into());
        }
        if !self.block.is_multiple_of(self.transfer) {
            return bad(format!(
                "the block ({}) must be a multiple of the transfer size ({})",
                self.block, self.transfer
            ));
        }
        if !self.transfer.is_multiple_of(8) {
            return bad(format!(
                "the transfer size ({}) must be a multiple of 8 (each transfer starts with an 8-byte tag)",
                self.transfer
            ));
        }
        let page = crate::sys::page_size() as u64;
        if matches!(self.api, IorApi::Direct | IorApi::Mmap) && !self.transfer.is_multiple_of(page)
        {
            return bad(format!(
                "-a {} needs a transfer size that is a multiple of {page}",
                self.api.name()
            ));
        }
        if !self.write && !self.read {
            return bad("nothing to do: give -w, -r or both".into());
        }
        if self.iterations == 0 {
            return bad("-i must be at least 1".into());
        }
        Ok(())
    }

    /// The file rank `r` uses.
    pub fn file_of(&self, r: usize) -> PathBuf {
        if self.file_per_proc {
            let mut p = self.path.clone().into_os_string();
            p.push(format!(".{r:08}"));
            PathBuf::from(p)
        } else {
            self.path.clone()
        }
    }

    /// Before any rank writes (n ranks): every file it would write is absent, or with `force`
    /// a regular file (never a device, a FIFO, a socket or a link, which `--force` would
    /// otherwise fill and, at the end, unlink), and the file system has room for all of it
    /// (`-b 1E` wrote until the disk was full).
    pub fn check_targets(&self, n: usize, force: bool) -> Result<()> {
        if !self.write {
            return Ok(());
        }
        let files: Vec<PathBuf> = if self.file_per_proc {
            (0..n).map(|r| self.file_of(r)).collect()
        } else {
            vec![self.path.clone()]
        };
        let mut reused = 0u64;
        for f in &files {
            let Ok(m) = f.symlink_metadata() else {
                continue;
            };
            if !force {
                return Err(Error::usage(
                    "refusing to overwrite",
                    format!(
                        "{} exists (add --force to write over it)",
                        crate::shown::path(f)
                    ),
                ));
            }
            if !m.file_type().is_file() {
                return Err(Error::usage(
                    "refusing to write over it",
                    "it is not a regular file (a link, device, FIFO or socket): --force replaces only files",
                )
                .at(f));
            }
            reused += m.len();
        }
        let need = self
            .file_len(n)
            .saturating_mul(files.len() as u64)
            .saturating_sub(reused);
        let dir = self
            .path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        if let Ok(free) = File::open(dir).and_then(|d| crate::sys::fs_free_bytes(&d))
            && need > free
        {
            return Err(Error::failed(
                "write failed",
                format!("No space left on device: {need} bytes to write, {free} bytes free"),
            )
            .at(&self.path)
            .hint("a smaller -b, -s or fewer ranks"));
        }
        Ok(())
    }

    /// Takes the files this job writes for it alone, on every rank together (after
    /// [`IorConfig::check_targets`]): each file is created here (without `force`, exclusively, so
    /// two jobs on one `-o` cannot both start: the existence check alone was not atomic) or
    /// opened without following a link (with `force`), and locked; a file another iolab holds
    /// refuses the run. The claim holds the locks until it is dropped; a refused claim removes
    /// the files it created.
    pub fn claim_targets(&self, comm: &dyn Comm, force: bool) -> Result<Claim> {
        if !self.write {
            return Ok(Claim { _held: None });
        }
        // Every rank has looked at every file (check_targets) before any creates one: else a
        // rank still looking found rank 0's new file and refused alone, and rank 0 waited.
        comm.barrier();
        let r = comm.rank();
        let mine = (self.file_per_proc || r == 0).then(|| self.file_of(r));
        let attempt = match &mine {
            None => Ok(None),
            Some(f) => claim_file(f, force).map(Some),
        };
        // Every rank learns whether all claims held before any goes on.
        let ok = comm.all_gather(&[if attempt.is_ok() { 1.0 } else { 0.0 }]);
        let all = ok.iter().all(|v| v.first() == Some(&1.0));
        match attempt {
            Ok(held) if all => Ok(Claim {
                _held: held.map(|(f, _)| f),
            }),
            Ok(held) => {
                if let (Some((_, true)), Some(f)) = (held, &mine) {
                    let _ = std::fs::remove_file(f);
                }
                Err(Error::failed(
                    "refusing to write",
                    "another rank could not take its test file",
                ))
            }
            Err(e) => Err(e),
        }
    }

    /// Bytes in rank `r`'s file when every rank has written (n ranks).
    fn file_len(&self, n: usize) -> u64 {
        if self.file_per_proc {
            self.block * self.segments
        } else {
            self.block * self.segments * n as u64
        }
    }

    /// Offsets of rank `r`'s transfers, in the order it makes them (segment by segment).
    fn offsets(&self, r: usize, n: usize) -> impl Iterator<Item = u64> + '_ {
        let per = self.block / self.transfer;
        (0..self.segments).flat_map(move |s| {
            let base = if self.file_per_proc {
                s * self.block
            } else {
                (s * n as u64 + r as u64) * self.block
            };
            (0..per).map(move |i| base + i * self.transfer)
        })
    }

    /// The data in rank `r`'s file: with a file per rank each file's data differs (with equal
    /// data the XOR of an even number of files would be zero whatever they held).
    fn data(&self, r: usize) -> WrittenData {
        let seed = if self.file_per_proc {
            self.seed ^ (r as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15)
        } else {
            self.seed
        };
        WrittenData::new(seed, self.transfer, self.transfer)
    }
}

/// One rank's figures for one phase.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RankPhase {
    /// Seconds from the phase's start on this rank (after the barrier): open started.
    pub open_start: f64,
    /// Open ended (files opened, mapped, engines set up).
    pub open_end: f64,
    /// The data moved.
    pub xfer_end: f64,
    /// Sync (with -e) and close ended.
    pub close_end: f64,
    /// Bytes moved.
    pub bytes: u64,
    /// Transfers made.
    pub transfers: u64,
    /// XOR of what it read (reads) or wrote (writes), hex in JSON; null when not checked.
    #[serde(with = "crate::xor::hex::option")]
    #[schemars(with = "Option<String>")]
    pub xor: Option<u32>,
    /// The XOR its part should have, from the definition of the written data.
    #[serde(with = "crate::xor::hex")]
    #[schemars(with = "String")]
    pub expected_xor: u32,
    /// Fraction of its part resident in the page cache before a read (-1 for writes).
    pub resident_before: f64,
    /// Minor faults during the phase.
    pub minor_faults: u64,
    /// Major faults during the phase.
    pub major_faults: u64,
    /// Bytes this rank had read from the device during the phase.
    pub device_read_bytes: u64,
    /// The rank whose data it moved (itself unless -C).
    pub data_of: usize,
}

const FIELDS: usize = 15;

impl RankPhase {
    fn to_vec(self) -> Vec<f64> {
        vec![
            self.open_start,
            self.open_end,
            self.xfer_end,
            self.close_end,
            self.bytes as f64,
            self.transfers as f64,
            self.xor.map_or(-1.0, f64::from),
            self.expected_xor as f64,
            self.resident_before,
            self.minor_faults as f64,
            self.major_faults as f64,
            self.device_read_bytes as f64,
            self.data_of as f64,
            0.0,
            0.0,
        ]
    }

    fn from_slice(v: &[f64]) -> RankPhase {
        RankPhase {
            open_start: v[0],
            open_end: v[1],
            xfer_end: v[2],
            close_end: v[3],
            bytes: v[4] as u64,
            transfers: v[5] as u64,
            xor: (v[6] >= 0.0).then_some(v[6] as u32),
            expected_xor: v[7] as u32,
            resident_before: v[8],
            minor_faults: v[9] as u64,
            major_faults: v[10] as u64,
            device_read_bytes: v[11] as u64,
            data_of: v[12] as usize,
        }
    }
}

/// One phase of one iteration over all ranks, aggregated as IOR does.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PhaseResult {
    /// `write` or `read`.
    pub access: String,
    /// Iteration, from 0.
    pub iteration: usize,
    /// Every rank's figures, in rank order.
    pub ranks: Vec<RankPhase>,
    /// All bytes over (the last rank's end - the first rank's start), MiB/s.
    pub mib_s: f64,
    /// Transfers per second over the same time.
    pub iops: f64,
    /// Mean seconds per transfer (the slowest rank's data time over its transfers).
    pub latency_s: f64,
    /// IOR's open time: the longest over the ranks.
    pub open_s: f64,
    /// IOR's wr/rd time: the longest over the ranks.
    pub xfer_s: f64,
    /// IOR's close time (with the sync of -e): the longest over the ranks.
    pub close_s: f64,
    /// First start to last end.
    pub total_s: f64,
    /// The XOR of all ranks' XORs (an all-reduce); null when not checked.
    #[serde(with = "crate::xor::hex::option")]
    #[schemars(with = "Option<String>")]
    pub xor: Option<u32>,
    /// What it should be, from the definition of the written data.
    #[serde(with = "crate::xor::hex")]
    #[schemars(with = "String")]
    pub expected_xor: u32,
    /// The rank that took longest from open to close.
    pub slowest_rank: usize,
    /// Its time over the fastest rank's.
    pub slowest_ratio: f64,
}

impl PhaseResult {
    /// Aggregates every rank's figures.
    pub fn of(access: &str, iteration: usize, ranks: Vec<RankPhase>) -> PhaseResult {
        let start = ranks.iter().map(|r| r.open_start).fold(f64::MAX, f64::min);
        let end = ranks.iter().map(|r| r.close_end).fold(0.0, f64::max);
        let total = (end - start).max(f64::MIN_POSITIVE);
        let bytes: u64 = ranks.iter().map(|r| r.bytes).sum();
        let transfers: u64 = ranks.iter().map(|r| r.transfers).sum();
        let max = |f: &dyn Fn(&RankPhase) -> f64| ranks.iter().map(f).fold(0.0, f64::max);
        let took = |r: &RankPhase| r.close_end - r.open_start;
        let (slowest, slow) = ranks
            .iter()
            .enumerate()
            .map(|(i, r)| (i, took(r)))
            .fold((0, 0.0), |a, b| if b.1 > a.1 { b } else { a });
        let fast = ranks.iter().map(took).fold(f64::MAX, f64::min);
        let latency = ranks
            .iter()
            .map(|r| (r.xfer_end - r.open_end) / r.transfers.max(1) as f64)
            .fold(0.0, f64::max);
        PhaseResult {
            access: access.into(),
            iteration,
            mib_s: bytes as f64 / 1_048_576.0 / total,
            iops: transfers as f64 / total,
            latency_s: latency,
            open_s: max(&|r| r.open_end - r.open_start),
            xfer_s: max(&|r| r.xfer_end - r.open_end),
            close_s: max(&|r| r.close_end - r.xfer_end),
            total_s: total,
            xor: ranks.iter().try_fold(0, |x, r| r.xor.map(|y| x ^ y)),
            expected_xor: ranks.iter().fold(0, |x, r| x ^ r.expected_xor),
            slowest_rank: slowest,
            slowest_ratio: if fast > 0.0 { slow / fast } else { 1.0 },
            ranks,
        }
    }

    /// Every rank moved what it should have: its XOR is the expected one.
    pub fn verified(&self) -> bool {
        self.ranks.iter().all(|r| r.xor == Some(r.expected_xor))
    }

    /// The data was checked (not `--no-verify`).
    pub fn checked(&self) -> bool {
        self.ranks.iter().all(|r| r.xor.is_some())
    }
}

fn one() -> usize {
    1
}

fn yes() -> bool {
    true
}

/// Everything `iolab ior` measured (the same on every rank).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct IorResult {
    /// What was run.
    pub config: IorConfig,
    /// Ranks.
    pub ranks: usize,
    /// Every phase of every iteration.
    pub phases: Vec<PhaseResult>,
    /// What the user should know.
    pub notes: Vec<String>,
}

/// Runs the job on this rank; every rank returns the same result.
pub fn run_ior(cfg: &IorConfig, comm: &dyn Comm) -> Result<IorResult> {
    cfg.check()?;
    let (r, n) = (comm.rank(), comm.size());
    let mut phases = Vec::new();
    let mut written: Option<Vec<u64>> = None;
    // The test file is iolab's (removed at the end unless -k): Ctrl-C, SIGTERM or a later run
    // after kill -9 removes it while it is being made, kept (-k) only once the run completes.
    let _tracked =
        (cfg.write && (cfg.file_per_proc || r == 0)).then(|| crate::output::track(&cfg.file_of(r)));
    for it in 0..cfg.iterations {
        if cfg.write {
            comm.barrier();
            // A failed write (a full file system) leaves no test file behind to keep it full.
            let mine = write_phase(cfg, r, n).inspect_err(|_| {
                if !cfg.keep {
                    remove_files(cfg, r);
                }
            })?;
            let ranks = gather(comm, mine);
            written = Some(ranks.iter().map(|p| p.transfers).collect());
            phases.push(PhaseResult::of("write", it, ranks));
        }
        if cfg.read {
            let counts = match &written {
                Some(c) => c.clone(),
                None => vec![cfg.block / cfg.transfer * cfg.segments; n],
            };
            comm.barrier();
            let shift =
                cfg.tasks_per_node.unwrap_or_else(|| comm.tasks_per_node()) * cfg.reorder_offset;
            let from = if cfg.reorder { (r + shift) % n } else { r };
            let mine = read_phase(cfg, n, from, counts[from])?;
            phases.push(PhaseResult::of("read", it, gather(comm, mine)));
        }
        if !cfg.keep && it + 1 == cfg.iterations && cfg.write {
            comm.barrier();
            remove_files(cfg, r);
        }
    }
    let mut notes = Vec::new();
    if cfg.api == IorApi::Uring && cfg.write {
        notes.push(
            "-a uring writes with pwrite (iolab has no io_uring writer); reads use io_uring".into(),
        );
    }
    let shift = cfg.tasks_per_node.unwrap_or_else(|| comm.tasks_per_node()) * cfg.reorder_offset;
    if cfg.reorder && shift.is_multiple_of(n) {
        notes.push(format!(
            "-C shifts by {shift} rank(s) (tasks per node x -Q) and there are {n}: every rank read back its own data, as IOR does on one node (--tasks-per-node 1 shifts by one rank)"
        ));
    }
    Ok(IorResult {
        config: cfg.clone(),
        ranks: n,
        phases,
        notes,
    })
}

fn gather(comm: &dyn Comm, mine: RankPhase) -> Vec<RankPhase> {
    let mut v = mine.to_vec();
    v.resize(FIELDS, 0.0);
    comm.all_gather(&v)
        .iter()
        .map(|x| RankPhase::from_slice(x))
        .collect()
}

fn remove_files(cfg: &IorConfig, r: usize) {
    if cfg.file_per_proc || r == 0 {
        // Only a regular file: a path swapped for a link or a device meanwhile stays.
        let f = cfg.file_of(r);
        if f.symlink_metadata().is_ok_and(|m| m.file_type().is_file()) {
            let _ = std::fs::remove_file(f);
        }
    }
}

#[cfg(test)]
mod tests;
