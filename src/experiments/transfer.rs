//! `iolab transfer`: every sender x receiver method pair over loopback inside one process,
//! repeated, as a matrix of time, MiB/s and the CPU time of each side.

use super::Observer;
use super::host::{Host, host_facts};
use crate::error::{Error, Result};
use crate::measure::stats::{Summary, summarize};
use crate::transfer::receiver::{RecvConfig, receive};
use crate::transfer::sender::{SendConfig, bind};
use crate::transfer::{ChunkSizes, RecvMethod, SendMethod, SideReport};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::Duration;

/// What `iolab transfer` measures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TransferConfig {
    /// The files moved in every run.
    pub files: Vec<PathBuf>,
    /// Sender x receiver method pairs.
    pub pairs: Vec<(SendMethod, RecvMethod)>,
    /// Runs per pair (interleaved).
    pub repeat: usize,
    /// Parallel connections (files go round-robin).
    pub connections: usize,
    /// fsync each received file inside its timed window.
    pub sync: bool,
    /// The receiver verifies but stores nothing.
    pub discard: bool,
    /// Buffer and mapped-window sizes on both sides.
    #[serde(default)]
    pub sizes: ChunkSizes,
}

impl TransferConfig {
    /// Runs per pair by default.
    pub const DEFAULT_REPEAT: usize = 3;
}

/// One method pair's runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairResult {
    /// The sender's method.
    pub sender: SendMethod,
    /// The receiver's method.
    pub receiver: RecvMethod,
    /// Receiver's wall time per run (connect to last file stored).
    pub seconds: Summary,
    /// Throughput as the receiver saw it.
    pub mib_s: Summary,
    /// CPU seconds of the sender per run.
    pub sender_cpu_s: Summary,
    /// CPU seconds of the receiver per run.
    pub receiver_cpu_s: Summary,
    /// Each run as both sides reported it.
    pub runs: Vec<(SideReport, SideReport)>,
}

/// What `iolab transfer` found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TransferResult {
    /// The machine it ran on.
    pub host: Host,
    /// What was asked.
    pub config: TransferConfig,
    /// Bytes moved per run.
    pub bytes: u64,
    /// One result per pair.
    pub pairs: Vec<PairResult>,
}

/// Every sender method with every receiver method.
pub fn all_pairs() -> Vec<(SendMethod, RecvMethod)> {
    SendMethod::ALL
        .iter()
        .flat_map(|s| RecvMethod::ALL.iter().map(move |r| (*s, *r)))
        .collect()
}

/// One transfer over loopback: a sender thread on an ephemeral port and the receiver here,
/// into a fresh temporary directory that is removed afterwards.
pub fn run_once(
    files: &[PathBuf],
    s: SendMethod,
    r: RecvMethod,
    connections: usize,
    sync: bool,
    discard: bool,
    sizes: ChunkSizes,
) -> Result<(SideReport, SideReport)> {
    let listener = bind(
        "127.0.0.1:0"
            .parse()
            .map_err(|_| Error::usage("bad address", "127.0.0.1:0"))?,
    )?;
    let addr = listener
        .local_addr()
        .map_err(|e| Error::failed("cannot listen", crate::error::describe_io(&e)))?;
    let out = crate::output::temp_dir("iolab-transfer")?;
    let timeout = Duration::from_secs(30);
    let scfg = SendConfig {
        connections,
        timeout,
        sizes,
        ..SendConfig::new(files.to_vec(), s)
    };
    let rcfg = RecvConfig {
        connections,
        timeout,
        sync,
        discard,
        sizes,
        ..RecvConfig::new(addr.to_string(), out.path().to_path_buf(), r)
    };
    // The sender hashes its files before the receiver starts: the hashing is outside the
    // transfer's timing on both sides, as it is outside a real sender's listening.
    let files = crate::transfer::sender::prepare_files(&scfg)?;
    let result = std::thread::scope(|sc| {
        let sender = sc.spawn(|| crate::transfer::sender::serve_files(listener, &scfg, files));
        let recv = receive(&rcfg);
        let sent = sender
            .join()
            .unwrap_or_else(|_| Err(Error::failed("send failed", "the sender thread panicked")));
        match (sent, recv) {
            (Ok(a), Ok(b)) => Ok((a, b)),
            (_, Err(e)) | (Err(e), _) => Err(e),
        }
    });
    drop(out);
    result
}

/// Moves the files over loopback for every pair, `repeat` interleaved rounds.
pub fn run_transfer(
    cfg: &TransferConfig,
    command_line: &str,
    obs: &dyn Observer,
) -> Result<TransferResult> {
    if cfg.files.is_empty() || cfg.pairs.is_empty() || cfg.repeat == 0 {
        return Err(Error::usage(
            "nothing to transfer",
            "give files, method pairs and --repeat of at least 1",
        ));
    }
    let total = cfg.pairs.len() * cfg.repeat;
    let mut runs: Vec<Vec<(SideReport, SideReport)>> = vec![Vec::new(); cfg.pairs.len()];
    let mut done = 0;
    // Interleaved: each round runs every pair once.
    for _ in 0..cfg.repeat {
        for (i, (s, r)) in cfg.pairs.iter().enumerate() {
            runs[i].push(run_once(
                &cfg.files,
                *s,
                *r,
                cfg.connections,
                cfg.sync,
                cfg.discard,
                cfg.sizes,
            )?);
            done += 1;
            obs.progress("transfer", done, total);
        }
    }
    let bytes = runs
        .first()
        .and_then(|r| r.first())
        .map(|(a, _)| a.bytes())
        .unwrap_or(0);
    let pairs = cfg
        .pairs
        .iter()
        .zip(runs)
        .map(|((s, r), runs)| {
            let secs: Vec<f64> = runs.iter().map(|(_, b)| b.wall.as_secs_f64()).collect();
            PairResult {
                sender: *s,
                receiver: *r,
                seconds: summarize(&secs),
                mib_s: summarize(
                    &secs
                        .iter()
                        .map(|t| crate::size::mib_per_s(bytes, *t))
                        .collect::<Vec<_>>(),
                ),
                sender_cpu_s: summarize(
                    &runs
                        .iter()
                        .map(|(a, _)| (a.cpu_user + a.cpu_sys).as_secs_f64())
                        .collect::<Vec<_>>(),
                ),
                receiver_cpu_s: summarize(
                    &runs
                        .iter()
                        .map(|(_, b)| (b.cpu_user + b.cpu_sys).as_secs_f64())
                        .collect::<Vec<_>>(),
                ),
                runs,
            }
        })
        .collect();
    Ok(TransferResult {
        host: host_facts(cfg.files.first().map(|p| p.as_path()), command_line),
        config: cfg.clone(),
        bytes,
        pairs,
    })
}
