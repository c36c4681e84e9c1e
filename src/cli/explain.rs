//! `iolab explain TRACE`: a kept trace explained again, as `iolab trace` explains the run it
//! records: what the program was bound by, what to change, then the details.

use super::Ctx;
use clap::Args;
use iolab::Error;
use iolab::report::{self, Format};
use iolab::trace::{self, Trace};
use std::path::{Path, PathBuf};

/// Explain a kept trace (`iolab trace --out`): what the program was bound by, what to change
/// (with --advise, measured on this machine), then its files, calls and timeline
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  iolab trace --out db.json -- sqlite3 db.sqlite < inserts.sql\n  iolab explain db.json\n  iolab explain db.json --advise 1m\n  iolab explain db.json --format json | jq .time.verdict\n\nA trace from an older iolab is read; what it did not record (per-thread times: the\nverdict) is said to be missing. A profile (`iolab trace --format json`) is not a trace: keep\nthe trace with --out."
)]
pub struct ExplainArgs {
    /// The trace file (from iolab trace --out)
    pub trace: PathBuf,
    /// Measure the advice's changes on this machine: replay the program's reads with each
    /// change against the reads as recorded, within BUDGET (default 30s)
    #[arg(long, value_name = "BUDGET", num_args = 0..=1, default_missing_value = "30s", value_parser = super::args::duration)]
    pub advise: Option<std::time::Duration>,
    /// Files in the profile's table
    #[arg(long, default_value_t = 20, value_name = "N")]
    pub files: usize,
    /// The output's format
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

impl ExplainArgs {
    /// Runs it.
    pub fn run(self, ctx: &Ctx) -> Result<(), Error> {
        if self.format == Format::Csv {
            return Err(super::usage(
                "explain: --format csv has no single table; use text, markdown or json".into(),
            ));
        }
        let t = Trace::load(&self.trace)?;
        let p = explained(&t, &self.trace, self.advise, ctx)?;
        let text = report::output(
            self.format,
            || &p,
            || report::trace::profile_document(&p, self.files),
        );
        super::out(text.trim_end());
        Ok(())
    }
}

/// The profile of trace `t` (`name` in messages), its advice measured within `advise` when
/// asked.
pub fn explained(
    t: &Trace,
    name: &Path,
    advise: Option<std::time::Duration>,
    ctx: &Ctx,
) -> Result<trace::profile::Profile, Error> {
    let mut p = trace::advice::profiled(t);
    if let Some(budget) = advise.filter(|_| !iolab::sys::interrupted()) {
        iolab::experiments::replay::advised::measure(
            t,
            name,
            &mut p.advice,
            budget,
            &ctx.progress,
        )?;
    }
    Ok(p)
}
