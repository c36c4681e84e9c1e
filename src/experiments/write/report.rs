//! `iolab write`'s report: its runs as the read report shows them, with the data read back.

use super::WriteResult;
use crate::experiments::read::report::{RunSet, Setting, document, settings};
use crate::report::Document;
use crate::size::format_size;

/// `iolab write`: its runs, their summary and the XOR written and read back.
pub fn write_document(r: &WriteResult) -> Document {
    let c = &r.config;
    let set = RunSet {
        headline: format!(
            "write {} ({}), read back and verified: {}",
            crate::shown::path(&c.path),
            format_size(r.bytes),
            if r.verified { "yes" } else { "no" }
        ),
        config: settings(
            c.method.name(),
            c.bs,
            &c.shape,
            [Setting::new("sync", c.sync.name())],
        ),
        runs: &r.runs,
        xor: r.xor,
        with_cache: false,
        misses: false,
    };
    document(&set)
}
