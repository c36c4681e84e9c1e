//! `iolab clean`: removes what runs killed with -9 left behind.

use super::out;
use clap::Args;
use iolab::Error;
use iolab::clean::{Kind, Leftover};
use iolab::size::format_size;
use std::path::PathBuf;

/// Remove what iolab runs killed with -9 left behind.
///
/// Looks in the system's temporary directory (transfer folders `iolab-transfer-PID-N`), in each
/// DIR (the suite's data folders `.iolab-data-PID`, files being written or received under a
/// hidden `.NAME.iolab-PID.tmp` name on a file system without unnamed files) and, as squeeze
/// makes them, at memory cgroups `iolab-squeeze-PID-N`. Only what belongs to you, of a pid that
/// is no running iolab, is removed; nothing is followed through a link. A run of the same kind
/// also removes these before it starts.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  iolab clean\n  iolab clean --dry-run ~/reports /data/incoming\n  iolab clean --cgroup-parent /sys/fs/cgroup/user.slice"
)]
pub struct CleanArgs {
    /// Folders to look in besides the temporary directory [default: the current folder]
    #[arg(value_name = "DIR")]
    pub dirs: Vec<PathBuf>,
    /// List what would go, remove nothing
    #[arg(long, short = 'n')]
    pub dry_run: bool,
    /// Where squeeze made its cgroups, if not where it finds them by itself
    #[arg(long, value_name = "DIR")]
    pub cgroup_parent: Option<PathBuf>,
}

impl CleanArgs {
    /// Finds, removes (unless --dry-run) and lists the leftovers.
    pub fn run(self) -> Result<(), Error> {
        let dirs = if self.dirs.is_empty() {
            vec![PathBuf::from(".")]
        } else {
            self.dirs
        };
        for d in &dirs {
            if !d.is_dir() {
                return Err(Error::usage("not a folder", "iolab clean looks in folders").at(d));
            }
        }
        let parent = match &self.cgroup_parent {
            Some(p) => Some(iolab::cache::cgroup::controller(Some(p))?.parent),
            // Where squeeze would make its groups; without cgroups there are none to find.
            None => iolab::cache::cgroup::controller(None)
                .ok()
                .map(|c| c.parent),
        };
        let found = iolab::clean::find(&dirs, parent.as_deref());
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
