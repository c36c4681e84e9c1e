//! Skips, counted. A test that cannot run here (or a part of one) says why through [`skip`],
//! which prints the reason and, when `IOLAB_SKIPS` names a file (as `.ci/run` sets it), adds a
//! line to it, so that the run counts its skips and says why, and CI refuses those its own
//! set-up should have prevented. Shared by the integration tests (`tests/common`) and the unit
//! tests (`src/testutil.rs`, by path).

use std::io::Write;

/// What a test lacked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lack {
    /// What `.ci/run` provides: root, a tool it installs, a memory cgroup, a shell. CI, as
    /// root, fails when a test skips for one of these.
    Setup,
    /// What no set-up changes: the machine's file system or kernel (tmpfs, io_uring), or how
    /// the tests were built (without the `mpi` feature).
    Machine,
}

impl Lack {
    fn word(self) -> &'static str {
        match self {
            Lack::Setup => "setup",
            Lack::Machine => "machine",
        }
    }
}

/// Says that the running test (or a part of it, named in `why`) is skipped, and why.
pub fn skip(lack: Lack, why: &str) {
    let test = std::thread::current()
        .name()
        .unwrap_or("a test")
        .to_string();
    // Written to the stderr file itself, not through eprintln!, which the test harness
    // captures and shows only for a failing test: plain `cargo test` shows every skip.
    let _ = std::io::stderr()
        .write_all(format!("skipped ({}): {test}: {why}\n", lack.word()).as_bytes());
    let Some(log) = std::env::var_os("IOLAB_SKIPS") else {
        return;
    };
    // One write of a line, appended: whole even with tests of several binaries at once.
    let line = format!(
        "{}\t{test}\t{}\n",
        lack.word(),
        why.replace(['\t', '\n'], " ")
    );
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log)
        .and_then(|mut f| f.write_all(line.as_bytes()));
    if let Err(e) = written {
        panic!("cannot count a skip in {}: {e}", log.to_string_lossy());
    }
}

/// Whether a test may empty the whole machine's page cache (drop_caches): only when asked,
/// with `IOLAB_TEST_DROP_CACHES=1` (as `.ci/run` sets it); otherwise the test says so through
/// [`skip`] and leaves every other file's residency alone.
// The unit tests (src/testutil.rs) share this file and do not drop caches.
#[allow(dead_code)]
pub fn may_drop_caches() -> bool {
    if std::env::var_os("IOLAB_TEST_DROP_CACHES").is_some_and(|v| v == "1") {
        return true;
    }
    skip(
        Lack::Setup,
        "it drops the whole machine's page cache: opt in with IOLAB_TEST_DROP_CACHES=1 (.ci/run does)",
    );
    false
}
