//! What to change: one table of rules ([`RULES`]) over a trace's profile and time model. Each
//! rule fires only when its evidence is there, and then says the evidence (its figures), the
//! change, and how the gain is known: measured by `iolab replay` on this machine (a
//! [`Remedy`] replay can run, with the cache state it matters in), or why replay cannot
//! measure it. After Drishti, which fires heuristics over Darshan's counters; iolab then
//! measures the remedy.

mod rules;

use super::Trace;
use super::cause::Cause;
use super::profile::{FileProfile, Profile};
pub use super::recommend::{Gain, Level, Recommendation, Remedy};
use super::time::{Role, TimeProfile};

/// What the rules look at.
pub struct Evidence<'a> {
    /// The trace.
    pub t: &'a Trace,
    /// Its profile (files, calls).
    pub p: &'a Profile,
    /// Its time model.
    pub time: &'a TimeProfile,
    /// Memory the machine has available now, bytes.
    pub available: u64,
}

impl Evidence<'_> {
    /// The program's own wall time: the main thread's life less the ptrace tracer's share of
    /// it (what an untraced run takes, near enough: the shares of one tracer and the other
    /// then agree), ns.
    fn wall(&self) -> u64 {
        self.time
            .wall
            .as_ref()
            .map_or(self.t.wall_ns, |w| {
                w.wall_ns.saturating_sub(w.ns(Cause::Tracer))
            })
            .max(1)
    }

    /// The wall time that went to `c`, ns.
    fn wall_in(&self, c: Cause) -> u64 {
        self.time.wall.as_ref().map_or(0, |w| w.ns(c))
    }

    /// The share of the wall time that went to `c`.
    fn share(&self, c: Cause) -> f64 {
        self.wall_in(c) as f64 / self.wall() as f64
    }

    /// Calls of `names` across every working thread: (calls, ns).
    fn calls(&self, names: &[&str]) -> (u64, u64) {
        let mut out = (0, 0);
        for m in self.time.threads.iter().filter(|m| m.role != Role::Idle) {
            for c in &m.causes {
                for s in c.calls.iter().filter(|s| names.contains(&s.call.as_str())) {
                    out.0 += s.calls;
                    out.1 += s.ns;
                }
            }
        }
        out
    }

    /// The own time of the read calls of the file at `path` (the tracer's share off), ns.
    fn read_time(&self, path: &str) -> u64 {
        let Some(i) = self.t.files.iter().position(|f| f.path == path) else {
            return 0;
        };
        let cost = self.t.stop_cost.unwrap_or(super::time::model::NO_COST);
        let synced = rustc_hash::FxHashSet::default();
        self.t
            .ops
            .iter()
            .filter(|o| o.file == Some(i as u32) && o.call.reads_file())
            .filter_map(|o| super::time::model::op_split(self.t, o, &synced, &cost))
            .map(|s| s.own)
            .sum()
    }

    /// The data files (not code), most bytes read first.
    fn data_files(&self) -> impl Iterator<Item = &FileProfile> {
        self.p
            .files
            .iter()
            .filter(|f| !f.code && !f.path.starts_with("/proc/"))
    }
}

/// A rule: its name and its check.
pub struct Rule {
    /// Its name, as [`Recommendation::rule`] gives it.
    pub name: &'static str,
    /// What it looks for.
    pub looks_for: &'static str,
    /// The check: advice when its evidence is there.
    pub check: fn(&Evidence<'_>) -> Option<Recommendation>,
}

/// Every rule, most telling first.
pub const RULES: &[Rule] = &[
    Rule {
        name: "sync-per-record",
        looks_for: "a sync (fsync, fdatasync, O_SYNC write) per record or transaction, taking a large share of the wall time",
        check: rules::sync_per_record,
    },
    Rule {
        name: "small-sequential-reads",
        looks_for: "many small reads, one after the other, of one file",
        check: rules::small_sequential_reads,
    },
    Rule {
        name: "direct-small-reads-of-a-file-that-fits",
        looks_for: "small O_DIRECT reads of a file that fits in memory",
        check: rules::direct_fits_in_memory,
    },
    Rule {
        name: "readahead-wasted",
        looks_for: "random reads for which the kernel read ahead pages that were never used",
        check: rules::readahead_wasted,
    },
    Rule {
        name: "reread-after-eviction",
        looks_for: "bytes read again from storage after they were evicted",
        check: rules::reread_after_eviction,
    },
    Rule {
        name: "cold-reads",
        looks_for: "reads waiting for storage, in order, as the main cost",
        check: rules::cold_reads,
    },
    Rule {
        name: "faults",
        looks_for: "page faults on mapped files waiting for storage",
        check: rules::faults,
    },
    Rule {
        name: "metadata",
        looks_for: "many opens, stats, directory reads, unlinks or renames as the main cost",
        check: rules::metadata,
    },
    Rule {
        name: "other-process",
        looks_for: "the program waiting on a pipe or a child that was itself the bottleneck",
        check: rules::other_process,
    },
    Rule {
        name: "peer",
        looks_for: "the program waiting on a socket or poll whose other end was not traced",
        check: rules::peer,
    },
    Rule {
        name: "sleep",
        looks_for: "the program sleeping",
        check: rules::sleep,
    },
    Rule {
        name: "computing",
        looks_for: "the program computing: its I/O is not where the time went",
        check: rules::computing,
    },
];

/// The profile of `t` with every rule's advice on it (none without a time model), as a trace's
/// answer gives it.
pub fn profiled(t: &Trace) -> Profile {
    let mut p = super::profile::profile(t);
    if let Some(time) = &p.time {
        p.advice = advise(&Evidence {
            t,
            p: &p,
            time,
            available: crate::cache::meminfo::read().mem_available,
        });
    }
    p
}

/// Every rule's advice on a profile, most pressing first.
pub fn advise(e: &Evidence<'_>) -> Vec<Recommendation> {
    let mut out: Vec<Recommendation> = RULES.iter().filter_map(|r| (r.check)(e)).collect();
    out.sort_by_key(|a| a.level);
    out
}
