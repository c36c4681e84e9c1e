//! `iolab report RESULTS.json...`: re-render the suite's report; several give hosts side by side.

use super::out;
use clap::Args;
use iolab::Error;
use std::path::PathBuf;

/// Re-render report(s) from results.json files; several give hosts side by side.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  iolab report iolab-report/results.json --out again --force\n  iolab report laptop/results.json server/results.json --out both\n  iolab report --baseline before/results.json after/results.json\n\nSeveral results files give one report with the hosts side by side: each finding per host,\nand each figure with the ratio to the first host. With --baseline, two results are compared\nfinding by finding (B's ratio over A's, with an interval) and no report is written; the exit\ncode is 1 when a decided finding reversed or a ratio moved beyond both intervals, else 0."
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
    /// Compare two results, the first the baseline: exit 1 when a decided finding reversed or
    /// a ratio moved beyond its interval (no report is written)
    #[arg(long)]
    pub baseline: bool,
}

impl ReportArgs {
    /// Loads every results file and writes one report.
    pub fn run(self) -> Result<(), Error> {
        let mut results = Vec::new();
        for p in &self.results {
            results.extend(iolab::suite::load(p)?);
        }
        if self.baseline {
            let [a, b] = &results[..] else {
                return Err(Error::usage(
                    "--baseline compares two results",
                    format!(
                        "give the baseline's results.json and the run's ({} results given)",
                        results.len()
                    ),
                ));
            };
            let rows = iolab::suite::baseline::compare(a, b);
            out(&iolab::suite::baseline::text(a, b, &rows));
            if rows.iter().any(|r| r.change.regresses()) {
                std::process::exit(1);
            }
            return Ok(());
        }
        let dir = iolab::suite::save_report(&self.out, &results, self.force)?;
        out(&format!(
            "report: {}\n",
            iolab::shown::path(&dir.join("report.html"))
        ));
        Ok(())
    }
}
