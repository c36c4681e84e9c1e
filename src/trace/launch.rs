//! What both tracers do around the program: find it as exec would before starting it, and stop
//! it step by step after iolab was interrupted.

use crate::{Error, Result};
use std::time::{Duration, Instant};

/// Checks that `program` names an executable file, directly or in PATH, as exec would find it;
/// refuses it as a shell would: 127 when there is no such file, 126 when it cannot be run.
pub(super) fn find_program(program: &std::ffi::OsStr) -> Result<()> {
    use crate::ErrorKind::{NotExecutable, NotFound};
    use std::os::unix::ffi::OsStrExt;
    use std::path::Path;
    let runnable = |p: &Path| crate::sys::may_execute(p) && p.is_file();
    let what = format!("cannot run {}", crate::shown::name(program));
    let refuse = |kind, why: &str| Err(Error::new(kind, what.clone(), why));
    if program.as_bytes().contains(&b'/') {
        let p = Path::new(program);
        return match () {
            _ if runnable(p) => Ok(()),
            _ if p.is_dir() => refuse(NotExecutable, "it is a directory"),
            _ if p.exists() => refuse(NotExecutable, "permission denied (not executable)"),
            _ => refuse(NotFound, "no such file"),
        };
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut there = false;
    for d in std::env::split_paths(&path) {
        let p = d.join(program);
        if runnable(&p) {
            return Ok(());
        }
        there |= p.is_file();
    }
    if there {
        refuse(NotExecutable, "found in PATH, but not executable")
    } else {
        refuse(NotFound, "not found in PATH")
    }
}

/// How long a program may take to end after an interruption before it is killed.
const GRACE: Duration = Duration::from_secs(2);

/// How a traced program is stopped after iolab was interrupted: the terminal's Ctrl-C reaches
/// the program too; if it still runs a second later (or only iolab was signalled), it is sent
/// the signal iolab got, as a shell passes it to its job (SIGHUP when the terminal closed,
/// SIGTERM, else SIGINT); after [`GRACE`] more, SIGKILL. Both tracers' loops step it.
#[derive(Debug, Default)]
pub(super) struct Escalation {
    at: Option<Instant>,
    signalled: u8,
}

impl Escalation {
    /// One turn of a tracer's loop, `interrupted` whether iolab was: the signal to send every
    /// traced process now, if any.
    pub(super) fn step(&mut self, interrupted: bool) -> Option<i32> {
        if interrupted && self.at.is_none() {
            self.at = Some(Instant::now());
        }
        let waited = self.at?.elapsed();
        let sig = match self.signalled {
            0 if waited > Duration::from_secs(1) => {
                crate::sys::interrupting_signal().unwrap_or(libc::SIGINT)
            }
            1 if waited > GRACE + Duration::from_secs(1) => libc::SIGKILL,
            _ => return None,
        };
        self.signalled += 1;
        Some(sig)
    }

    /// Whether the program was killed (SIGKILL) more than a second ago: a loop waiting for
    /// its processes to end waits no longer.
    pub(super) fn given_up(&self) -> bool {
        self.signalled >= 2
            && self
                .at
                .is_some_and(|t| t.elapsed() > GRACE + Duration::from_secs(2))
    }

    /// Whether iolab was interrupted (the program is being stopped).
    pub(super) fn asked(&self) -> bool {
        self.at.is_some()
    }
}
