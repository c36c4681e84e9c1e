//! `iolab suite`: the main job. Makes data, runs every registered experiment, writes the report.

use super::args;
use super::{Ctx, out};
use clap::Args;
use iolab::Error;
use iolab::suite::{DataDir, SuiteConfig, run_suite, save_report};
use std::path::PathBuf;

/// The main job: make data, run every experiment, write one report (HTML, Markdown, JSON, SVG).
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  iolab suite --quick\n  iolab suite --size 4G --out ~/iolab-report\n  iolab suite --quick --size 64M --keep-data --dir /var/tmp/iolab-data\n  iolab suite --list\n  iolab suite --quick --size 64M --only access,fast_warm --out try\n\nThe report goes to --out (a dated folder beside it if it exists, unless --force)."
)]
pub struct SuiteArgs {
    /// Where the report goes
    #[arg(long, default_value = "iolab-report")]
    pub out: PathBuf,
    /// Where the generated data goes (default: a new directory beside --out, removed at the end)
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Size of the random data file (capped to fit the disk and a quarter of RAM)
    #[arg(long, default_value = "1G", value_parser = args::size)]
    pub size: u64,
    /// Fewer sizes, methods and repeats: about 90 s on 2 cores (78-95 s here)
    #[arg(long)]
    pub quick: bool,
    /// Keep the generated data
    #[arg(long)]
    pub keep_data: bool,
    /// Replace an existing report folder instead of making a dated one
    #[arg(long)]
    pub force: bool,
    /// Before each experiment, wait up to this long for a quiet machine (other processes' CPU
    /// below a quarter core)
    #[arg(long, value_name = "SECONDS", default_value = "0s", value_parser = args::duration_or_zero)]
    pub wait_quiet: std::time::Duration,
    /// Run only these experiments (their keys, comma-separated; see --list) into the report
    #[arg(long, value_delimiter = ',', value_name = "NAME[,NAME]")]
    pub only: Vec<String>,
    /// List the suite's experiments (key and what each measures) and exit
    #[arg(long)]
    pub list: bool,
}

impl SuiteArgs {
    /// Runs the suite, writes the report, prints the findings and where the report is.
    pub fn run(self, ctx: &Ctx) -> Result<(), Error> {
        if self.list {
            let mut text = String::new();
            for e in iolab::suite::REGISTRY {
                text.push_str(&format!("{:<16} {}\n", e.name(), e.title()));
            }
            out(&text);
            return Ok(());
        }
        // A name the registry lacks is refused before anything is made.
        iolab::suite::chosen(&self.only)?;
        let parent = self
            .out
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(std::path::Path::new("."));
        // A report that cannot be written is refused now, not after minutes of measuring; so is
        // --force over something that is not an earlier report.
        iolab::output::check_can_write(&self.out)?;
        if self.force && std::fs::symlink_metadata(&self.out).is_ok() {
            iolab::output::refuse_unless_report(&self.out)?;
        }
        // The guard removes the data it made when dropped, on every path out of here.
        let data = DataDir::new(self.dir.clone(), parent, self.keep_data)?;
        let cfg = SuiteConfig {
            dir: data.path().to_path_buf(),
            size: self.size,
            quick: self.quick,
            keep_data: self.keep_data,
            wait_quiet: self.wait_quiet.as_secs_f64(),
            only: self.only.clone(),
            worker: std::env::current_exe().ok(),
        };
        let r = run_suite(&cfg, &data, &ctx.command_line, &ctx.progress)?;
        ctx.progress.clear();
        let saved = save_report(&self.out, std::slice::from_ref(&r), self.force)?;
        drop(data);
        for (name, o) in &r.experiments {
            if let Some(e) = &o.error {
                super::talk(format!(
                    "iolab: warning: an experiment was not measured: {name}: {e}"
                ));
            }
        }
        let mut text = String::new();
        if let Some(w) = r.interference.warning() {
            text.push_str(&w);
            text.push('\n');
        }
        text.push_str("Findings:\n");
        for f in &r.findings {
            text.push_str(&format!("  - {}\n", f.text));
        }
        for (key, why) in iolab::suite::not_judged(&r) {
            text.push_str(&format!("  - {key}: not judged: {why}\n"));
        }
        text.push_str(&format!(
            "Report: {}\n",
            iolab::shown::path(&saved.join("report.html"))
        ));
        out(&text);
        Ok(())
    }
}
