//! `iolab trace --pid PID`: a running process traced from now on, for a while or until
//! Ctrl-C or its end, without stopping it or starting anything (only a kernel tracer can do it
//! cheaply). What it did before the attach is not in the trace; the files it had open are
//! known from the kernel at their next call, the mappings it had made from /proc/PID/maps.

use super::{Loaded, RunEnd, convert};
use crate::trace::{Ended, Trace, TraceConfig};
use crate::{Error, Result};
use std::time::{Duration, Instant};

/// The command line of process `pid` (/proc/PID/cmdline), or its name for a kernel thread.
fn command_of(pid: u32) -> Result<Vec<std::ffi::OsString>> {
    use std::os::unix::ffi::OsStringExt;
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).map_err(|e| {
        Error::usage(
            format!("no process {pid} to trace"),
            crate::error::describe_io(&e),
        )
    })?;
    let args: Vec<_> = raw
        .split(|&b| b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| std::ffi::OsString::from_vec(a.to_vec()))
        .collect();
    if args.is_empty() {
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        return Ok(vec![format!("[{}]", comm.trim()).into()]);
    }
    Ok(args)
}

impl Loaded {
    /// Traces processes `pids` (and what they start from now on) for `limit`, or until they
    /// end or `interrupted` says to stop; they are never signalled. `what` names them in the
    /// trace's note ("process 42", "the 3 processes of cgroup /x").
    pub fn attach(
        mut self,
        cfg: &TraceConfig,
        pids: &[u32],
        what: &str,
        limit: Option<Duration>,
        interrupted: &dyn Fn() -> bool,
    ) -> Result<Trace> {
        let me = std::process::id();
        let (pid, pidfd, command) = first_running(pids, what)?;
        let pids: Vec<u32> = std::iter::once(pid)
            .chain(pids.iter().copied().filter(|&p| p != me && p != pid))
            .filter(|&p| super::alive::stat(p).is_some_and(|(_, ended)| !ended))
            .collect();
        let t0 = crate::sys::monotonic_ns();
        for &p in &pids[1..] {
            self.also(p)?;
        }
        let mut ring = self.follow(pid)?;
        // Each thread's counters at the attach, read once the probes follow it: what it does
        // between the two is counted on both sides, microseconds of /proc reads (read first,
        // the reading of its maps and the other processes' would have been lost, milliseconds
        // on a busy machine: dd's reads fell 1% short of its rchar).
        let mut conv = convert::Convert::attached(&pids, t0);
        conv.rec.kernel.buffers_growth = crate::cache::meminfo::read().buffers;
        let started = Instant::now();
        let mut gone = false;
        let mut stopped = false;
        let mut swept = Instant::now();
        loop {
            super::take_events(&mut ring, Some(&pidfd).filter(|_| !gone), &mut conv);
            if swept.elapsed() >= super::SWEEP {
                conv.sweep();
                swept = Instant::now();
            }
            gone = gone || conv.root_ended.is_some() || conv.live.is_empty();
            if gone && conv.live.is_empty() {
                break;
            }
            if interrupted() {
                stopped = true;
                break;
            }
            if limit.is_some_and(|l| started.elapsed() >= l) {
                break;
            }
        }
        // The counters of the threads still running, then what reached the ring: each
        // thread's calls up to its reading.
        conv.still_running();
        while let Some(item) = ring.next() {
            conv.take(&item);
        }
        conv.cut_to_readings();
        let wall = match conv.root_ended {
            Some(ns) => Duration::from_nanos(ns),
            None => started.elapsed(),
        };
        let ended = match conv.root_exit {
            Some(status) => Ended {
                code: (status & 0x7f == 0).then_some((status >> 8) & 0xff),
                signal: (status & 0x7f != 0).then_some(status & 0x7f),
            },
            None => Ended {
                code: None,
                signal: None,
            },
        };
        conv.rec.note(&format!(
            "attached to {what} for {:.1} s{}: what it did before is not in the trace",
            wall.as_secs_f64(),
            if conv.live.is_empty() {
                " (until it ended)"
            } else {
                ", and left it running"
            }
        ));
        let mut cfg = cfg.clone();
        cfg.command = command;
        let end = RunEnd {
            ended,
            interrupted: stopped,
            wall,
            left: None,
        };
        self.conclude(&cfg, conv, ring, end)
    }
}

/// Processes listed may have ended since (a cgroup's short-lived ones): the first still running
/// (not iolab, not a zombie) names the trace and ends it by its end: its pid, a pidfd, its
/// command line.
fn first_running(
    pids: &[u32],
    what: &str,
) -> Result<(u32, rustix::fd::OwnedFd, Vec<std::ffi::OsString>)> {
    let me = std::process::id();
    for &p in pids.iter().filter(|&&p| p != me) {
        let fd = rustix::process::Pid::from_raw(p as i32).and_then(|q| {
            rustix::process::pidfd_open(q, rustix::process::PidfdFlags::empty()).ok()
        });
        // A zombie has ended: nothing of it to trace.
        let running = super::alive::stat(p).is_some_and(|(_, ended)| !ended);
        if let (Some(fd), Ok(command), true) = (fd, command_of(p), running) {
            return Ok((p, fd, command));
        }
    }
    Err(Error::usage(
        format!("{what}: no process to trace"),
        if pids.contains(&me) {
            "iolab does not trace itself"
        } else {
            "every one has ended"
        },
    ))
}
