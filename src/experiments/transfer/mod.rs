//! `iolab transfer`: every sender x receiver method pair over loopback inside one process,
//! repeated, as a matrix of time, MiB/s and the CPU time of each side.

use super::host::{Host, host_facts};
use crate::engine::Moved;
use crate::error::{Error, Result};
use crate::harness::{
    self, Cell, CellRun, Cells, Comparison, Observer, Rounds, RoundsTaken, Timed,
};
use crate::measure::Counters;
use crate::measure::stats::{Summary, summarize};
use crate::transfer::receiver::{RecvConfig, receive};
use crate::transfer::sender::{SendConfig, bind};
use crate::transfer::{ChunkSizes, RecvMethod, SendMethod, SideReport};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::Duration;

pub mod findings;
pub mod report;
pub mod suite;

/// What `iolab transfer` measures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TransferConfig {
    /// The files moved in every run.
    pub files: Vec<PathBuf>,
    /// Sender x receiver method pairs.
    pub pairs: Vec<(SendMethod, RecvMethod)>,
    /// Rounds (interleaved): exactly `repeat`, or with a budget adaptive ones that go on, look
    /// by look, until every pair is told apart from every other at 95%.
    #[serde(flatten)]
    pub rounds: Rounds,
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

/// One method pair's runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TransferResult {
    /// The machine it ran on.
    pub host: Host,
    /// What was asked.
    pub config: TransferConfig,
    /// Bytes moved per run.
    pub bytes: u64,
    /// One result per pair.
    pub pairs: Vec<PairResult>,
    /// How the rounds went.
    #[serde(default)]
    pub rounds: RoundsTaken,
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
    let out = crate::output::temp_dir("iolab-transfer")?;
    let timeout = Duration::from_secs(30);
    // A fresh secret for each transfer, held only by this process's two sides: any local user
    // can connect to a loopback port, and without it the first to finish a handshake would be
    // served the files.
    let token: String = crate::transfer::protocol::nonce()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let link = crate::transfer::Link {
        connections,
        pace: crate::transfer::protocol::Pace {
            idle: timeout,
            ..crate::transfer::protocol::Pace::DEFAULT
        },
        sizes,
        token: Some(token),
        ..crate::transfer::Link::default()
    };
    let scfg = SendConfig {
        link: link.clone(),
        ..SendConfig::new(files.to_vec(), s)
    };
    // The sender opens and checks its files before it listens: nobody can connect before
    // they are ready. It hashes each while sending it, beside the transfer.
    let files = crate::transfer::sender::prepare_files(&scfg)?;
    let listener = bind(
        "127.0.0.1:0"
            .parse()
            .map_err(|_| Error::usage("bad address", "127.0.0.1:0"))?,
    )?;
    let addr = listener
        .local_addr()
        .map_err(|e| Error::failed("cannot listen", crate::error::describe_io(&e)))?;
    let rcfg = RecvConfig {
        link,
        sync,
        discard,
        ..RecvConfig::new(addr.to_string(), out.path().to_path_buf(), r)
    };
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
    if cfg.files.is_empty() || cfg.pairs.is_empty() || cfg.rounds.check().is_err() {
        return Err(Error::usage(
            "nothing to transfer",
            "give files, method pairs and --repeat of at least 1",
        ));
    }
    let n = cfg.pairs.len();
    let comparisons: Vec<Comparison> = (0..n)
        .flat_map(|a| (a + 1..n).map(move |b| Comparison { a, b }))
        .collect();
    let mut out = harness::run(
        "transfer",
        &mut PairCells(cfg),
        &cfg.rounds,
        &comparisons,
        obs,
    )?;
    // A pair that cannot run here fails the matrix, as it did before the harness.
    out.require_all()?;
    let rounds = RoundsTaken::of(&out);
    let runs: Vec<Vec<(SideReport, SideReport)>> = out
        .cells
        .iter_mut()
        .map(|c| sides(std::mem::take(&mut c.runs)))
        .collect();
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
        rounds,
    })
}

/// The method pairs as the harness sees them: one run moves every file once.
struct PairCells<'a>(&'a TransferConfig);

impl Cells for PairCells<'_> {
    type Extra = Option<(SideReport, SideReport)>;
    fn count(&self) -> usize {
        self.0.pairs.len()
    }
    fn name(&self, i: usize) -> String {
        let (s, r) = self.0.pairs[i];
        format!("{}:{}", s.name(), r.name())
    }
    fn cell(&self, _: usize) -> Cell<'_> {
        Cell::own()
    }
    fn own(&mut self, i: usize) -> Result<Timed<Self::Extra>> {
        let (s, r) = self.0.pairs[i];
        let c = self.0;
        run_once(&c.files, s, r, c.connections, c.sync, c.discard, c.sizes).map(timed_pair)
    }
}

/// A transfer's two sides as a run the harness times: the receiver's bytes over its wall time
/// (connect to last file stored), its CPU beside.
pub(crate) fn timed_pair(
    (sender, receiver): (SideReport, SideReport),
) -> Timed<Option<(SideReport, SideReport)>> {
    Timed {
        moved: Moved {
            bytes: receiver.bytes(),
            ..Moved::default()
        },
        counters: Counters {
            wall: receiver.wall,
            user: receiver.cpu_user,
            sys: receiver.cpu_sys,
            ..Counters::default()
        },
        extra: Some((sender, receiver)),
    }
}

/// The two sides of each run.
pub(crate) fn sides(
    runs: Vec<CellRun<Option<(SideReport, SideReport)>>>,
) -> Vec<(SideReport, SideReport)> {
    runs.into_iter().filter_map(|r| r.extra).collect()
}
