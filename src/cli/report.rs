//! `iolab report RESULTS.json...`: re-render the suite's report; several give hosts side by side.

use super::out;
use clap::Args;
use iolab::Error;
use std::path::PathBuf;

/// Re-render report(s) from results.json files; several give hosts side by side.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  iolab report iolab-report/results.json --out again --force\n  iolab report laptop/results.json server/results.json --out both\n\nSeveral results files give one report with the hosts side by side: each finding per host,\nand each figure with the ratio to the first host."
)]
pub struct ReportArgs {
    /// results.json files from `iolab suite`
    #[arg(required = true)]
    pub results: Vec<PathBuf>,
    /// Where the report goes
    #[arg(long, default_value = "iolab-report")]
    pub out: PathBuf,
    /// Replace an existing report folder instead of making a dated one
    #[arg(long)]
    pub force: bool,
}

impl ReportArgs {
    /// Loads every results file and writes one report.
    pub fn run(self) -> Result<(), Error> {
        let mut results = Vec::new();
        for p in &self.results {
            results.extend(iolab::suite::load(p)?);
        }
        let dir = iolab::suite::save_report(&self.out, &results, self.force)?;
        out(&format!(
            "report: {}\n",
            iolab::shown::path(&dir.join("report.html"))
        ));
        Ok(())
    }
}
