//! Seeing memory: the process's mappings from `/proc/self/smaps` and `/proc/self/status`, and
//! page descriptors from `/proc/self/pagemap` and `/proc/kpageflags`.

pub mod pagemap;
pub mod smaps;
