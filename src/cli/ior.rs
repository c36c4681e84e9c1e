//! `iolab ior`: IOR's flags and tables, one rank per process; with the `mpi` feature every
//! process of an MPI job is a rank.

use super::args::{self, OutputArgs};
use super::{Ctx, usage, warn_all};
use clap::Args;
use iolab::Error;
use iolab::experiments::ior::report;
use iolab::experiments::ior::{Comm, IorApi, IorConfig, IorResult, run_ior};
use std::path::PathBuf;
use std::time::Duration;

/// IOR's write/read benchmark with IOR's flags, plus an XOR check of every rank's part.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  iolab ior -a posix -b 256m -t 1m -F -w -r -i 2 -o /mnt/fs/test\n  mpirun -n 4 iolab ior -a mmap -b 64m -t 1m -C -e -o /mnt/fs/shared   (built with --features mpi)\n  iolab ior -a uring -b 1g -t 4m -r -o big --format json\n\nFlags mean what IOR's mean: -b bytes per rank per segment, -t bytes per call, -s segments,\n-F a file per rank (PATH.00000000, ...) else one shared file, -C read back the next node's\ndata, -e fsync before close, -i repetitions, -D stop a phase after N seconds, -k keep the\nfiles. Without -w and -r both run. Bandwidth is all bytes over the time from the first\nrank's start to the last rank's end. Every rank's read-back XOR is checked against the\ndata written (exit 1 on a mismatch); --no-verify leaves that out, as IOR does without -R."
)]
pub struct IorArgs {
    /// I/O API: posix (pwrite/pread), mmap, uring (io_uring reads), direct (O_DIRECT)
    #[arg(short = 'a', long = "api", value_enum, default_value_t = IorApi::Posix)]
    pub api: IorApi,
    /// Bytes each rank writes per segment
    #[arg(short = 'b', long = "blockSize", default_value = "1M", value_parser = args::size)]
    pub block: u64,
    /// Bytes per I/O call
    #[arg(short = 't', long = "transferSize", default_value = "256K", value_parser = args::size)]
    pub transfer: u64,
    /// Segments
    #[arg(short = 's', long = "segmentCount", default_value_t = 1)]
    pub segments: u64,
    /// A file per rank instead of one shared file
    #[arg(short = 'F', long = "filePerProc")]
    pub file_per_proc: bool,
    /// Read back the data of the rank one node further on (tasks per node x -Q ranks), so no
    /// node reads its own cache
    #[arg(short = 'C', long = "reorderTasks")]
    pub reorder: bool,
    /// With -C, shift by this many nodes' worth of tasks (IOR's taskPerNodeOffset)
    #[arg(short = 'Q', long = "taskPerNodeOffset", default_value_t = 1)]
    pub reorder_offset: usize,
    /// Tasks per node to assume for -C instead of counting the ranks on rank 0's host
    #[arg(long)]
    pub tasks_per_node: Option<usize>,
    /// fsync (msync for mmap) after writing, before close
    #[arg(short = 'e', long = "fsync")]
    pub fsync: bool,
    /// Write the file(s)
    #[arg(short = 'w', long = "writeFile")]
    pub write: bool,
    /// Read the file(s)
    #[arg(short = 'r', long = "readFile")]
    pub read: bool,
    /// Repetitions
    #[arg(short = 'i', long = "repetitions", default_value_t = 1)]
    pub iterations: usize,
    /// Stop each phase after this many seconds (stonewalling; 0: never, as in IOR)
    #[arg(short = 'D', long = "deadlineForStonewalling", value_name = "SECONDS",
          value_parser = clap::value_parser!(u64).range(0..=1_000_000_000))]
    pub stonewall: Option<u64>,
    /// The file (a rank suffix is added with -F)
    #[arg(short = 'o', long = "testFile", default_value = "testFile")]
    pub path: PathBuf,
    /// Keep the files afterwards
    #[arg(short = 'k', long = "keepFile")]
    pub keep: bool,
    /// Seed of the written data
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Do not XOR the data or check it: the bandwidth of IOR without -R (reads copy each
    /// transfer into a buffer and use none of it; -a mmap copies out of the mapping as IOR does)
    #[arg(long)]
    pub no_verify: bool,
    /// Write over files that exist (without it, -w refuses them: they may be someone's data)
    #[arg(long)]
    pub force: bool,
    #[command(flatten)]
    pub output: OutputArgs,
}

impl IorArgs {
    fn config(&self) -> IorConfig {
        let (write, read) = if self.write || self.read {
            (self.write, self.read)
        } else {
            (true, true)
        };
        IorConfig {
            api: self.api,
            block: self.block,
            transfer: self.transfer,
            segments: self.segments,
            file_per_proc: self.file_per_proc,
            reorder: self.reorder,
            reorder_offset: self.reorder_offset,
            tasks_per_node: self.tasks_per_node,
            fsync: self.fsync,
            write,
            read,
            iterations: self.iterations,
            stonewall: self.stonewall.filter(|&s| s > 0).map(Duration::from_secs),
            path: self.path.clone(),
            keep: self.keep,
            seed: self.seed,
            verify: !self.no_verify,
        }
    }

    /// Runs as every rank of this job; rank 0 prints.
    pub fn run(self, ctx: &Ctx) -> Result<(), Error> {
        let cfg = self.config();
        cfg.check().map_err(|e| usage(e.to_string()))?;
        with_comm(|comm| {
            // Every rank looks at every file, so all take the same decision before any barrier.
            cfg.check_targets(comm.size(), self.force)?;
            // Taken for this job alone (exclusive create, a lock) until it ends.
            let _claim = cfg.claim_targets(comm, self.force)?;
            let r = run_ior(&cfg, comm)?;
            if comm.rank() == 0 {
                warn_all(&r.notes);
                ctx.emit(&self.output, &r, || report::ior_document(&r))?;
            }
            check(&r)
        })
    }
}

/// A read-back that differs from what was written is a failed run (exit 1).
fn check(r: &IorResult) -> Result<(), Error> {
    let bad: Vec<String> = r
        .phases
        .iter()
        .filter(|p| p.checked() && !p.verified())
        .map(|p| format!("{} iter {}", p.access, p.iteration))
        .collect();
    if bad.is_empty() {
        Ok(())
    } else {
        Err(Error::failed(
            "the data does not match what was written",
            format!("XOR mismatch in {}", bad.join(", ")),
        ))
    }
}

/// Runs `f` with this job's ranks: MPI's when built with the `mpi` feature, else one process.
#[cfg(not(feature = "mpi"))]
fn with_comm<T>(f: impl FnOnce(&dyn Comm) -> Result<T, Error>) -> Result<T, Error> {
    f(&iolab::experiments::ior::Solo)
}

#[cfg(feature = "mpi")]
fn with_comm<T>(f: impl FnOnce(&dyn Comm) -> Result<T, Error>) -> Result<T, Error> {
    let Some(universe) = mpi::initialize() else {
        return Err(Error::failed(
            "cannot start MPI",
            "MPI_Init failed or was already called",
        ));
    };
    let comm = mpi_comm::World(universe.world());
    // The other ranks on this host and their launcher (mpirun or orted) do this job's work:
    // their CPU is not interference.
    let me = [
        f64::from(std::process::id()),
        host_key(),
        f64::from(std::os::unix::process::parent_id()),
    ];
    let ranks = comm.all_gather(&me);
    let here: Vec<u32> = ranks
        .iter()
        .filter(|v| v[1] == me[1])
        .flat_map(|v| [v[0] as u32, v[2] as u32])
        .filter(|p| *p > 1)
        .collect();
    iolab::measure::interference::also_ours(&here);
    let out = f(&comm);
    // A failure on one rank would leave the others waiting at the next barrier: the job ends.
    // (A usage error is found by every rank alike before any collective step.)
    if let Err(e) = &out
        && e.kind != iolab::ErrorKind::Usage
        && comm.size() > 1
    {
        eprintln!("iolab: rank {}: {e}", comm.rank());
        mpi::traits::Communicator::abort(&comm.0, 1);
    }
    out
}

/// This host's name as a number two ranks on one host share (a hash in 52 bits, exact in f64).
#[cfg(feature = "mpi")]
fn host_key() -> f64 {
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let h = blake3::hash(name.trim().as_bytes());
    let b = h.as_bytes();
    (u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], 0]) & ((1 << 52) - 1)) as f64
}

#[cfg(feature = "mpi")]
mod mpi_comm {
    use iolab::experiments::ior::Comm;
    use mpi::topology::{Communicator, SimpleCommunicator};
    use mpi::traits::*;

    /// The job's ranks over MPI_COMM_WORLD.
    pub struct World(pub SimpleCommunicator);

    impl Comm for World {
        fn rank(&self) -> usize {
            self.0.rank() as usize
        }
        fn size(&self) -> usize {
            self.0.size() as usize
        }
        fn barrier(&self) {
            self.0.barrier();
        }
        fn tasks_per_node(&self) -> usize {
            let all = self.all_gather(&[super::host_key()]);
            all.iter().filter(|k| k[0] == all[0][0]).count()
        }
        fn all_gather(&self, v: &[f64]) -> Vec<Vec<f64>> {
            let n = self.size();
            let mut all = vec![0.0f64; v.len() * n];
            self.0.all_gather_into(v, &mut all[..]);
            all.chunks(v.len().max(1)).map(|c| c.to_vec()).collect()
        }
    }
}
