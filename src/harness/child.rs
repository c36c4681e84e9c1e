//! A measured method in a process of its own inside a memory cgroup (`squeeze`, `pollute`):
//! memory is charged to the group of the process that faults or reads a page, so the method's
//! process must be inside the group and the measuring parent outside it. The child waits for a
//! line on stdin (the parent has moved it into the group by then) and writes one JSON message per
//! line on stdout; the parent reads them until the one that ends the run.

use crate::cache::cgroup::MemoryGroup;
use crate::error::{Error, ErrorKind, Result};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};

/// What a child says, one per line: a sample, the end, or why it could not run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Message<T, D> {
    /// One sample.
    Tick(T),
    /// The run finished.
    Done(D),
    /// The method could not run here (`unsupported`) or failed.
    Failed {
        /// Why.
        error: String,
        /// The kernel or file system lacks it (not an error of the run).
        unsupported: bool,
    },
}

/// The child's side: waits for the parent's line on `go`, runs `work` (which sends its ticks
/// and its end to `out`), and sends its error as the end when it fails.
pub fn serve<T: Serialize, D: Serialize>(
    go: &mut dyn BufRead,
    out: &mut dyn Write,
    work: impl FnOnce(&mut dyn Write) -> Result<()>,
) -> Result<()> {
    wait_for_go(go);
    match work(out) {
        Ok(()) => Ok(()),
        Err(e) => send(
            out,
            &Message::<T, D>::Failed {
                error: e.to_string(),
                unsupported: e.kind == ErrorKind::Unsupported,
            },
        ),
    }
}

/// Writes `m` as one JSON line and flushes it.
pub fn send<M: Serialize>(out: &mut dyn Write, m: &M) -> Result<()> {
    let line = serde_json::to_string(m)
        .map_err(|e| Error::failed("cannot write a sample", e.to_string()))?;
    writeln!(out, "{line}")
        .and_then(|_| out.flush())
        .map_err(|e| Error::failed("cannot write a sample", e.to_string()))
}

/// Runs `exe subcommand CONFIG_JSON` inside `group`; hands each tick to `each` and returns the
/// ticks and the message that ended the run (done or failed). The child is registered so that
/// Ctrl-C kills it before the group is removed; its stderr is added to the error of a run that
/// fails.
pub fn run_in_group<T: DeserializeOwned, D: DeserializeOwned>(
    exe: &Path,
    subcommand: &str,
    config: &impl Serialize,
    group: &MemoryGroup,
    mut each: impl FnMut(&T),
) -> Result<(Vec<T>, Message<T, D>)> {
    let arg = serde_json::to_string(config)
        .map_err(|e| Error::failed("cannot start the method", e.to_string()))?;
    let mut cmd = Command::new(exe);
    cmd.arg(subcommand)
        .arg(arg)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    crate::sys::die_with_parent(&mut cmd);
    let mut child = cmd
        .spawn()
        .map_err(|e| Error::io("cannot start the method's process", exe, &e))?;
    let slot = crate::sys::cleanup::register_child(child.id());
    let outcome = (|| -> Result<(Vec<T>, Message<T, D>)> {
        group.files().add(child.id())?;
        let mut stdin = child.stdin.take().expect("piped");
        stdin
            .write_all(b"go\n")
            .map_err(|e| Error::failed("cannot start the method", e.to_string()))?;
        drop(stdin);
        let stdout = BufReader::new(child.stdout.take().expect("piped"));
        let mut ticks = Vec::new();
        for line in stdout.lines() {
            let line =
                line.map_err(|e| Error::failed("lost the method's samples", e.to_string()))?;
            let msg: Message<T, D> = serde_json::from_str(&line).map_err(|e| {
                Error::failed("unreadable sample from the method", format!("{e}: {line}"))
            })?;
            match msg {
                Message::Tick(t) => {
                    each(&t);
                    ticks.push(t);
                }
                end => return Ok((ticks, end)),
            }
        }
        Err(Error::failed(
            "the method's process ended without a result",
            "killed? (the memory limit may be too small for the process itself)",
        ))
    })();
    if outcome.is_err() {
        let _ = child.kill();
    }
    let mut stderr = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = std::io::Read::read_to_string(&mut e, &mut stderr);
    }
    let _ = child.wait();
    if let Some(i) = slot {
        crate::sys::cleanup::unregister_child(i);
    }
    match outcome {
        Err(mut e) if !stderr.trim().is_empty() => {
            e.cause = format!("{} ({})", e.cause, stderr.trim());
            Err(e)
        }
        other => other,
    }
}

/// The child's side: waits for the parent's line on `go`.
pub fn wait_for_go(go: &mut dyn BufRead) {
    let mut line = String::new();
    let _ = go.read_line(&mut line);
}
