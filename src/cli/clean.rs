//! `iolab clean`: removes what runs killed with -9 left behind.

use super::out;
use clap::Args;
use iolab::Error;
use iolab::clean::{Kind, Leftover};
use iolab::size::format_size;
use std::path::PathBuf;

/// Remove what iolab runs killed with -9 left behind.
///
/// Every run writes what it is about to make (a partial output, a transfer's staging folder, the
/// suite's data folder, pollute's hot set, ior's file, a memory cgroup) into its own ledger, which
/// it holds locked while it lives, in ~/.local/state/iolab/runs (or $XDG_STATE_HOME/iolab,
/// $IOLAB_STATE_DIR). A run killed with -9 leaves its ledger unlocked: what it names that is
/// still there, yours, and made during that run is removed; a name that only looks like
/// iolab's is never touched, nor a live run's, whatever its binary is called. Nothing is
/// followed through a link. The next run that makes anything does the same first.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  iolab clean\n  iolab clean --dry-run\n  iolab clean ~/reports /data/incoming"
)]
pub struct CleanArgs {
    /// Only what is under these folders [default: whatever dead runs left, wherever]
    #[arg(value_name = "DIR")]
    pub dirs: Vec<PathBuf>,
    /// List what would go, remove nothing
    #[arg(long, short = 'n')]
    pub dry_run: bool,
}

impl CleanArgs {
    /// Finds, removes (unless --dry-run) and lists the leftovers.
    pub fn run(self) -> Result<(), Error> {
        let mut dirs = Vec::new();
        for d in &self.dirs {
            if !d.is_dir() {
                return Err(Error::usage("not a folder", "iolab clean looks in folders").at(d));
            }
            dirs.push(std::path::absolute(d).map_err(|e| Error::io("cannot use", d, &e))?);
        }
        if let Err(why) = iolab::clean::ledger::state_dir() {
            return Err(Error::unsupported("no ledger of runs to read", why));
        }
        let scan = iolab::clean::scan();
        let found = scan.under(&dirs);
        let mut text = String::new();
        let (mut gone, mut bytes, mut failed) = (0, 0, 0);
        for l in &found {
            let result = if self.dry_run {
                Ok(())
            } else {
                iolab::clean::remove(l)
            };
            match result {
                Ok(()) => {
                    gone += 1;
                    bytes += l.bytes;
                    text.push_str(&line(
                        l,
                        if self.dry_run {
                            "would remove"
                        } else {
                            "removed"
                        },
                    ));
                }
                Err(e) => {
                    failed += 1;
                    eprintln!("iolab: cannot remove {}: {e}", iolab::shown::path(&l.path));
                }
            }
        }
        let verb = if self.dry_run { "would free" } else { "freed" };
        text.push_str(&match gone {
            0 if failed == 0 => "nothing to clean\n".to_string(),
            n => format!(
                "{n} leftover{} of dead runs, {verb} {}\n",
                if n == 1 { "" } else { "s" },
                format_size(bytes)
            ),
        });
        out(&text);
        if !self.dry_run {
            scan.finish();
        }
        if failed > 0 {
            return Err(Error::failed(
                "clean failed",
                format!("{failed} leftover(s) could not be removed"),
            ));
        }
        Ok(())
    }
}

fn line(l: &Leftover, verb: &str) -> String {
    let what = match l.kind {
        Kind::Folder => "folder",
        Kind::File => "file",
        Kind::Cgroup => "cgroup",
    };
    format!(
        "{verb} {what} {} ({}, left by pid {})\n",
        iolab::shown::path(&l.path),
        format_size(l.bytes),
        l.pid
    )
}
