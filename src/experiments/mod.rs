//! The named experiments. Each composes the core (workload, engine, cache, measure) into a typed,
//! serializable result and never prints: progress goes to an [`Observer`].

pub mod access;
pub mod advise;
pub mod course;
pub mod dataset;
pub mod entry;
pub mod fast;
pub mod host;
pub mod host_io;
pub mod ior;
pub mod page_cache;
pub mod partb;
pub mod pollute;
pub mod read;
pub mod replay;
pub mod run;
pub mod run2;
pub mod squeeze;
pub mod sweep;
pub mod syscalls;
pub mod transfer;
pub mod vm;
pub mod write;

pub use crate::harness::{Observer, Silent};
