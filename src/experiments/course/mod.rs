//! The course programs' figures as the report shows them: the NTU master/slave's
//! `Transmission time` per course input (fcntl against mmap, the course's sizes and iolab's), and
//! the two other classic tables' suite entries (the mmap-bench table from `access`'s classic
//! form, Part B from `vm --part-b`). Every figure comes from the harness, with its interval.

mod programs;
pub mod report;
pub mod suite;
#[cfg(test)]
mod tests;

use crate::error::{Error, Result};
use crate::experiments::transfer::{run_once, sides, timed_pair};
use crate::harness::{self, Cells, Comparison, Observer, Rounds, RoundsTaken, Timed};
use crate::measure::decide::Verdict;
use crate::measure::stats::{Summary, summarize};
use crate::transfer::{ChunkSizes, RecvMethod, SendMethod, SideReport};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::Duration;

/// One course input: a name and its files, sent in one run as `master N f1 .. fN`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Input {
    /// What the course called it (`ten small texts`, ...).
    pub name: String,
    /// Its files, in order.
    pub files: Vec<PathBuf>,
    /// Their bytes together.
    pub bytes: u64,
}

/// The two transfer methods of the course.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Method {
    /// read/write on both sides (`fcntl`).
    Fcntl,
    /// A mapping on both sides (`mmap`).
    Mmap,
}

impl Method {
    /// Both, fcntl first.
    pub const BOTH: [Method; 2] = [Method::Fcntl, Method::Mmap];

    /// The course's word.
    pub fn name(self) -> &'static str {
        match self {
            Method::Fcntl => "fcntl",
            Method::Mmap => "mmap",
        }
    }

    fn pair(self) -> (SendMethod, RecvMethod) {
        match self {
            Method::Fcntl => (SendMethod::Read, RecvMethod::Write),
            Method::Mmap => (SendMethod::Mmap, RecvMethod::Mmap),
        }
    }
}

/// What [`run_classic_net`] measures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ClassicNetConfig {
    /// The inputs, each sent in runs of its own.
    pub inputs: Vec<Input>,
    /// The buffer and window sizes to try (the course's, iolab's).
    pub sizes: Vec<ChunkSizes>,
    /// Rounds: adaptive, within a budget to tell fcntl from mmap in every input and size.
    #[serde(flatten)]
    pub rounds: Rounds,
    /// The iolab program: master and slave run as two processes of it, as the course's did.
    /// Without it the two sides are threads of this process, where every munmap of a window
    /// also interrupts the other side's core to flush its TLB (mmap pays for sharing a
    /// process that the course's programs did not share).
    #[serde(skip)]
    pub program: Option<PathBuf>,
}

/// One input x sizes x method, over the counted rounds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct NetRow {
    /// The input's name.
    pub input: String,
    /// The sizes used.
    pub sizes: ChunkSizes,
    /// fcntl or mmap.
    pub method: Method,
    /// The master's `Transmission time` in ms (first connection to last file sent).
    pub master_ms: Summary,
    /// The slave's, ms (its first connection attempt that succeeded to the last file stored).
    pub slave_ms: Summary,
}

/// fcntl against mmap for one input and sizes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Versus {
    /// The input's name.
    pub input: String,
    /// The sizes used.
    pub sizes: ChunkSizes,
    /// The harness's verdict on the slave's rate, fcntl / mmap (below 1: mmap faster).
    pub verdict: Option<Verdict>,
}

/// What [`run_classic_net`] found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ClassicNetResult {
    /// What was asked.
    pub config: ClassicNetConfig,
    /// Input x sizes x method, in that order.
    pub rows: Vec<NetRow>,
    /// fcntl against mmap per input and sizes.
    pub versus: Vec<Versus>,
    /// How many rounds the harness took, and why it stopped.
    pub rounds: RoundsTaken,
    /// Master and slave ran as two processes (else as two threads of one).
    #[serde(default)]
    pub processes: bool,
}

/// The course's published figure for the one input it reported (a 12 MB file): its fcntl and
/// mmap `Transmission time` in ms, as printed (its (usec) x 0.0001 makes both 10x too small; the
/// ratio holds).
pub const COURSE_12MB_MS: (f64, f64) = (27.46, 11.73);

/// Groups the suite's classic files into the course's inputs by their names (`small*`, `big*`,
/// `p4096_*`, `p4097_*`, `binary*`); files of no group are left out.
pub fn course_inputs(files: &[PathBuf]) -> Vec<Input> {
    let groups: [(&str, &str); 5] = [
        ("small", "ten small texts"),
        ("big", "one 12 MB text"),
        ("binary", "binary files"),
        ("p4096_", "4 x 4096 bytes"),
        ("p4097_", "4 x 4097 bytes"),
    ];
    groups
        .iter()
        .filter_map(|(prefix, name)| {
            let files: Vec<PathBuf> = files
                .iter()
                .filter(|f| {
                    f.file_name()
                        .is_some_and(|n| n.to_string_lossy().starts_with(prefix))
                })
                .cloned()
                .collect();
            let bytes = files
                .iter()
                .filter_map(|f| std::fs::metadata(f).ok())
                .map(|m| m.len())
                .sum();
            (!files.is_empty()).then(|| Input {
                name: name.to_string(),
                files,
                bytes,
            })
        })
        .collect()
}

/// One cell: an input, its sizes and a method.
struct NetCell {
    input: usize,
    sizes: ChunkSizes,
    method: Method,
}

struct NetCells<'a> {
    cfg: &'a ClassicNetConfig,
    cells: Vec<NetCell>,
}

impl Cells for NetCells<'_> {
    type Extra = Option<(SideReport, SideReport)>;
    fn count(&self) -> usize {
        self.cells.len()
    }
    fn name(&self, i: usize) -> String {
        let c = &self.cells[i];
        format!(
            "{} {} chunk {}",
            self.cfg.inputs[c.input].name,
            c.method.name(),
            c.sizes.chunk
        )
    }
    fn cell(&self, _: usize) -> harness::Cell<'_> {
        harness::Cell::own()
    }
    /// The slave's rate over the run, as the course's line would give it.
    fn own(&mut self, i: usize) -> Result<Timed<Self::Extra>> {
        let c = &self.cells[i];
        let files = &self.cfg.inputs[c.input].files;
        if let Some(program) = &self.cfg.program {
            return programs::run(program, files, c.method, c.sizes).map(timed_pair);
        }
        let (s, r) = c.method.pair();
        run_once(files, s, r, 1, false, false, c.sizes).map(timed_pair)
    }
}

/// Sends every input with fcntl and with mmap at every sizes, rounds interleaved, until the
/// harness tells the two methods apart (or says they are within 5%) in each, or the budget ends.
pub fn run_classic_net(cfg: &ClassicNetConfig, obs: &dyn Observer) -> Result<ClassicNetResult> {
    if cfg.inputs.is_empty() || cfg.sizes.is_empty() {
        return Err(Error::usage(
            "nothing to transfer",
            "give at least one input and one set of sizes",
        ));
    }
    let mut cells = Vec::new();
    let mut comparisons = Vec::new();
    for input in 0..cfg.inputs.len() {
        for &sizes in &cfg.sizes {
            sizes.check()?;
            comparisons.push(Comparison {
                a: cells.len(),
                b: cells.len() + 1,
            });
            for method in Method::BOTH {
                cells.push(NetCell {
                    input,
                    sizes,
                    method,
                });
            }
        }
    }
    let mut set = NetCells { cfg, cells };
    let mut out = harness::run("classic transfer", &mut set, &cfg.rounds, &comparisons, obs)?;
    out.require_all()?;
    let rounds = RoundsTaken::of(&out);
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let rows = set
        .cells
        .iter()
        .zip(out.cells.iter_mut())
        .map(|(c, done)| {
            let runs = sides(std::mem::take(&mut done.runs));
            NetRow {
                input: cfg.inputs[c.input].name.clone(),
                sizes: c.sizes,
                method: c.method,
                master_ms: summarize(&runs.iter().map(|(m, _)| ms(m.wall)).collect::<Vec<_>>()),
                slave_ms: summarize(&runs.iter().map(|(_, s)| ms(s.wall)).collect::<Vec<_>>()),
            }
        })
        .collect();
    let versus = comparisons
        .iter()
        .zip(&out.verdicts)
        .map(|(c, v)| Versus {
            input: cfg.inputs[set.cells[c.a].input].name.clone(),
            sizes: set.cells[c.a].sizes,
            verdict: *v,
        })
        .collect();
    Ok(ClassicNetResult {
        config: cfg.clone(),
        rows,
        versus,
        rounds,
        processes: cfg.program.is_some(),
    })
}
