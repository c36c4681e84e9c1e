//! The named experiments. Each composes the core (workload, engine, cache, measure) into a typed,
//! serializable result and never prints: progress goes to an [`Observer`].

pub mod access;
pub mod advise;
pub mod cache_cmd;
pub mod child;
pub mod classic;
pub mod classics;
pub mod fast;
pub mod host;
pub mod ior;
pub mod partb;
pub mod pollute;
pub mod read;
pub mod replay;
pub mod run2;
pub mod squeeze;
pub mod sweep;
pub mod syscalls;
pub mod transfer;
pub mod vm;
pub mod write;

/// Receives progress from long experiments; the CLI turns it into a progress line on stderr.
pub trait Observer {
    /// Step `done` of `total` of `what` has finished.
    fn progress(&self, _what: &str, _done: usize, _total: usize) {}
    /// Step `k` (from 1) of `n` of a run of several experiments (the suite), named `name`,
    /// begins; the `progress` calls that follow belong to it.
    fn stage(&self, _k: usize, _n: usize, _name: &str) {}
    /// Something the user should hear now (a wait that ended, a wait given up), as one line.
    fn note(&self, _line: &str) {}
}

/// An observer that ignores everything.
pub struct Silent;
impl Observer for Silent {}
