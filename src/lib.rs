//! iolab: measure, explain and exploit the ways a Linux program moves file data.
//!
//! A library that never prints, and a thin binary. Data flows one way: `cli` → `experiments` →
//! (`workload`, `engine`, `cache`, `measure`) → result structs → `report`.

pub mod cache;
pub mod cli;
pub mod engine;
pub mod error;
pub mod experiments;
pub mod measure;
pub mod output;
pub mod report;
pub mod size;
pub mod sys;
pub mod transfer;
pub mod vm;
pub mod workload;
pub mod xor;

pub use error::{Error, ErrorKind, Result};
