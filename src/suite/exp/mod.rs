//! The suite's experiments, one [`super::Entry`] each (a file may hold a pair that share code).

pub mod fast;
pub mod run;
pub mod run2;
