//! `iolab write`'s report: its runs as the read report shows them, with the data read back.

use super::WriteResult;
use crate::experiments::read::report::{RunSet, Setting, render, settings};
use crate::report::{Format, json};
use crate::size::format_size;

/// `iolab write` in `format`.
pub fn write_report(r: &WriteResult, format: Format) -> String {
    if format == Format::Json {
        return json(r);
    }
    let c = &r.config;
    let set = RunSet {
        headline: format!(
            "write {} ({}), read back and verified: {}",
            c.path.display(),
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
    render(&set, format)
}
