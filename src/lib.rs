//! iolab: measure, explain and exploit the ways a Linux program moves file data.
//!
//! A library that never prints, and a thin binary whose `cli` module turns arguments into the
//! configs here. Data flows one way: configs → `experiments` → (`workload`, `engine`, `cache`,
//! `measure`) → result structs → `report`; `suite` composes experiments and report sections.

pub mod cache;
pub mod clean;
pub mod engine;
pub mod error;
pub mod experiments;
pub mod harness;
pub mod measure;
pub mod names;
pub mod output;
pub mod report;
pub mod shown;
pub mod size;
pub mod source;
pub mod suite;
pub mod sys;
#[cfg(test)]
mod testutil;
pub mod trace;
pub mod transfer;
pub mod vm;
pub mod workload;
pub mod xor;

pub use error::{Error, ErrorKind, Result};
