//! The tracer's loop: spawn the program traced, then wait for its threads' stops and answer each
//! (a traced call's entry and exit, a new thread or process, an exec, an exit, a signal to pass
//! on) until none is left.

mod identify;
mod mapcalls;
mod ops;
mod rings;
mod timing;
mod uring;

use crate::sys::ptrace::{self, Wait};
use crate::trace::calls::Calls;
use crate::trace::launch::{Escalation, find_program};
use crate::trace::model::Fds;
use crate::trace::{Ended, KernelIo, Trace, TraceConfig};
use crate::{Error, Result};
use ops::{Other, Pending, State, Task, rchar_of};
use std::cell::RefCell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use crate::sys::monotonic_ns;

/// The processes a program started that were still running when it ended, traced by this
/// process (their seccomp filter needs a tracer: without one their file calls would fail with
/// ENOSYS), to be served untraced-in-effect until they end ([`Lingering::serve`]).
#[derive(Debug, Default)]
pub struct Lingering {
    /// Each thread left, and whether its first stop (ptrace's SIGSTOP) has been seen.
    started: std::collections::HashMap<i32, bool>,
}

impl Lingering {
    /// How many threads are left.
    pub fn len(&self) -> usize {
        self.started.len()
    }

    /// Whether none is left.
    pub fn is_empty(&self) -> bool {
        self.started.is_empty()
    }

    /// Lets the processes left run on as if untraced until the last one ends: every stop is
    /// resumed at once, a signal meant for them passed on, nothing recorded.
    pub fn serve(mut self) {
        loop {
            match ptrace::wait_any() {
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) | Ok(None) => return,
                Ok(Some(Wait::Exited(tid, _) | Wait::Killed(tid, _))) => {
                    self.started.remove(&tid);
                }
                Ok(Some(Wait::Stopped(tid, status))) => {
                    let sig = status & 0xff;
                    let fresh = !self.started.insert(tid, true).unwrap_or(false);
                    // ptrace's own stops (a call, an event, a new thread's first SIGSTOP)
                    // pass nothing on; a signal meant for the program does.
                    let own = sig == libc::SIGTRAP
                        || sig == (libc::SIGTRAP | 0x80)
                        || (sig == libc::SIGSTOP && fresh);
                    let pass = if !own && ptrace::is_signal_delivery(tid) {
                        sig
                    } else {
                        0
                    };
                    let _ = ptrace::cont(tid, pass);
                }
            }
        }
    }
}

/// Runs `cfg.command` traced until it ends, and with `follow` until everything it started has
/// ended too (or `interrupted` says to stop it). Without `follow`, what it started and left
/// running is returned, still traced, to be served ([`Lingering::serve`]).
pub fn run_for(
    cfg: &TraceConfig,
    interrupted: &dyn Fn() -> bool,
    follow: bool,
) -> Result<(Trace, Lingering)> {
    let Some(program) = cfg.command.first() else {
        return Err(Error::usage("nothing to trace", "give a command after --"));
    };
    crate::trace::calls::filter(cfg.metadata)
        .map_err(|e| Error::unsupported("cannot build the seccomp filter", e))?;
    find_program(program)?;
    let mut cmd = std::process::Command::new(&cfg.launcher);
    cmd.arg("trace-exec");
    if !cfg.metadata {
        cmd.arg("--no-metadata");
    }
    cmd.arg("--").args(&cfg.command);
    if cfg.quiet {
        use std::process::Stdio;
        cmd.stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
    }
    let child = ptrace::spawn_traced(&mut cmd).map_err(|e| {
        let what = format!("cannot run {}", program.to_string_lossy());
        Error::failed(what, crate::error::describe_io(&e))
    })?;
    let pid = child.id() as i32;
    // The child stops with SIGTRAP after its exec (or has already failed). Another child of
    // this process may end meanwhile (the tracer helper of an earlier trace, which outlives
    // its hand-over while it serves what its program left running): not this one's.
    loop {
        match ptrace::wait_any() {
            Ok(Some(Wait::Stopped(p, _))) if p == pid => break,
            Ok(Some(Wait::Exited(p, code))) if p == pid => {
                return Err(Error::failed(
                    format!("cannot trace {}", program.to_string_lossy()),
                    format!("it exited with {code} before it started (seccomp or ptrace refused?)"),
                ));
            }
            Ok(Some(Wait::Exited(..) | Wait::Killed(..))) => {}
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            other => {
                return Err(Error::failed(
                    "cannot trace",
                    format!("unexpected first stop: {other:?}"),
                ));
            }
        }
    }
    ptrace::set_options(pid).map_err(|e| Error::failed("ptrace", crate::error::describe_io(&e)))?;
    let sampling = if cfg.faults {
        Some(crate::trace::faults::start(pid))
    } else {
        None
    };
    let mut st = State::new(monotonic_ns());
    st.rec.root = Some(pid as u32);
    st.add_process(
        pid as u32,
        pid as u32,
        Rc::new(RefCell::new(Fds::default())),
        None,
    );
    if let Some(t) = st.tasks.get_mut(&pid) {
        t.started = true;
    }
    let buffers_before = crate::cache::meminfo::read().buffers;
    let started = Instant::now();
    ptrace::cont(pid, 0).map_err(|e| Error::failed("ptrace", crate::error::describe_io(&e)))?;
    let (ended, was_interrupted) = wait_loop(&mut st, pid, interrupted, follow);
    let wall = started.elapsed();
    st.close_running();
    let lingering = Lingering {
        started: st.tasks.iter().map(|(&tid, t)| (tid, t.started)).collect(),
    };
    if !st.tasks.is_empty() {
        let procs: std::collections::BTreeSet<u32> = st.tasks.values().map(|t| t.pid).collect();
        st.rec.note(&format!(
            "{} process(es) the program started were still running when it ended: left running, unrecorded from then on (--follow waits for them)",
            procs.len()
        ));
    }
    st.rec.kernel.buffers_growth = crate::cache::meminfo::read()
        .buffers
        .saturating_sub(buffers_before);
    let (samples, unavailable) = match sampling {
        Some(Ok(s)) => (Some(s.finish()), None),
        Some(Err(why)) => (None, Some(why)),
        None => (None, Some("not asked for (--no-faults)".to_string())),
    };
    let seen = crate::trace::finish::sampled(&st.rec, samples, unavailable);
    let t = crate::trace::finish::finish(cfg, st.rec, seen, ended, was_interrupted, wall);
    Ok((t, lingering))
}

/// Answers stops until the program ends (`follow`: until every traced thread has), or until an
/// interruption has stopped it.
fn wait_loop(
    st: &mut State,
    pid: i32,
    interrupted: &dyn Fn() -> bool,
    follow: bool,
) -> (Ended, bool) {
    let calls = Calls::new();
    let mut ended = Ended {
        code: None,
        signal: None,
    };
    let mut stop = Escalation::default();
    loop {
        // Every traced process, as the terminal signals its whole foreground group.
        if let Some(sig) = stop.step(interrupted()) {
            let pids: std::collections::BTreeSet<u32> = st.tasks.values().map(|t| t.pid).collect();
            for p in pids {
                let _ = ptrace::kill(p as i32, sig);
            }
        }
        let w = if stop.asked() {
            match ptrace::wait_nohang() {
                Ok(Some(w)) => Ok(Some(w)),
                Ok(None) => {
                    std::thread::sleep(Duration::from_millis(10));
                    continue;
                }
                Err(e) => Err(e),
            }
        } else {
            ptrace::wait_any()
        };
        match w {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) | Ok(None) => break,
            Ok(Some(Wait::Exited(tid, code))) => {
                st.gone(tid);
                if tid == pid {
                    ended.code = Some(code);
                    if !follow {
                        break;
                    }
                }
            }
            Ok(Some(Wait::Killed(tid, sig))) => {
                st.gone(tid);
                if tid == pid {
                    ended.signal = Some(sig);
                    if !follow {
                        break;
                    }
                }
            }
            Ok(Some(Wait::Stopped(tid, status))) => {
                st.rec.stops += 1;
                on_stop(st, &calls, tid, status);
            }
        }
    }
    (ended, stop.asked())
}

fn on_stop(st: &mut State, calls: &Calls, tid: i32, status: i32) {
    let sig = status & 0xff;
    let event = status >> 8;
    st.ensure_task(tid);
    // A new thread's or process's first stop is the SIGSTOP ptrace gives it: not passed on.
    let fresh = st.tasks.get_mut(&tid).is_some_and(|t| {
        t.stops += 1;
        !std::mem::replace(&mut t.started, true)
    });
    let now = monotonic_ns().saturating_sub(st.rec.t0);
    let resume_sig = if sig == libc::SIGTRAP && event == libc::PTRACE_EVENT_SECCOMP {
        if let Ok(regs) = ptrace::regs(tid) {
            let sched = st.sched(tid);
            match calls.get(regs.nr) {
                Some(call) => {
                    let mut p: Pending = st.enter(tid, call, &regs, now);
                    p.sched = sched;
                    if !call.needs_result(&regs.args) {
                        // Taken as done at its entry: one stop instead of two.
                        st.exit(tid, p, 0, now, sched);
                    } else {
                        if let Some(t) = st.tasks.get_mut(&tid) {
                            t.pending = Some(p);
                        }
                        if ptrace::to_syscall_exit(tid).is_ok() {
                            st.held(tid, now);
                            return;
                        }
                    }
                }
                None => {
                    // A call the trace only times: its exit stop too.
                    if let Some(t) = st.tasks.get_mut(&tid) {
                        t.other = Some(Other {
                            nr: regs.nr,
                            t: now,
                            held: t.held,
                            sched,
                        });
                    }
                    if ptrace::to_syscall_exit(tid).is_ok() {
                        st.held(tid, now);
                        return;
                    }
                }
            }
        }
        0
    } else if sig == (libc::SIGTRAP | 0x80) {
        let sched = st.sched(tid);
        let (pending, other) = st
            .tasks
            .get_mut(&tid)
            .map_or((None, None), |t| (t.pending.take(), t.other.take()));
        if let Ok(regs) = ptrace::regs(tid) {
            if let Some(p) = pending {
                st.exit(tid, p, regs.ret, now, sched);
            } else if let Some(o) = other {
                st.other_exit(tid, o, regs.ret, now, sched);
            }
        }
        0
    } else if sig == libc::SIGTRAP && event != 0 {
        on_event(st, tid, event, now);
        // A timed call that made the event (fork, vfork, clone) goes on to its exit stop.
        if st.tasks.get(&tid).is_some_and(|t| t.other.is_some())
            && ptrace::to_syscall_exit(tid).is_ok()
        {
            st.held(tid, now);
            return;
        }
        0
    } else if sig == libc::SIGSTOP && fresh {
        0
    } else if ptrace::is_signal_delivery(tid) {
        sig
    } else {
        // A group stop (Ctrl-Z, SIGSTOP to the program): resumed, as a tracer without
        // PTRACE_SEIZE cannot hold it.
        st.rec.note("the program was stopped by a signal (Ctrl-Z?) and resumed: a traced program cannot be suspended");
        0
    };
    st.held(tid, now);
    let _ = ptrace::cont(tid, resume_sig);
}

fn on_event(st: &mut State, tid: i32, event: i32, now: u64) {
    match event {
        libc::PTRACE_EVENT_FORK | libc::PTRACE_EVENT_VFORK | libc::PTRACE_EVENT_CLONE => {
            if let Ok(new) = ptrace::event_msg(tid) {
                st.ensure_task(new as i32);
            }
        }
        libc::PTRACE_EVENT_EXEC => {
            let former = ptrace::event_msg(tid).map(|m| m as i32).unwrap_or(tid);
            // What the kernel read of the program's headers: rchar now against at the execve.
            let before = st
                .tasks
                .get(&former)
                .and_then(|t| t.pending.as_ref())
                .and_then(|p| p.exec_rchar());
            if st.rec.launching {
                st.calibrated();
                // The launcher's own counts (iolab starting up) are not the program's.
                st.rec.launching = false;
                st.rec.baseline = KernelIo::of_thread(tid as u32, tid).map(|io| KernelIo {
                    rchar: before.unwrap_or(io.rchar),
                    ..io
                });
            }
            st.exec(tid, former, now);
            if let (Some(b), Some(a)) = (before, rchar_of(tid as u32, tid)) {
                st.rec.kernel.exec_rchar += a.saturating_sub(b);
            }
        }
        libc::PTRACE_EVENT_EXIT => st.exiting(tid),
        _ => {}
    }
}

impl State {
    /// Thread `tid`, whose stop the tracer noticed at `noticed`, is about to be resumed: the
    /// time between joins its held time.
    fn held(&mut self, tid: i32, noticed: u64) {
        let now = monotonic_ns().saturating_sub(self.rec.t0);
        if let Some(t) = self.tasks.get_mut(&tid) {
            t.held += now.saturating_sub(noticed);
        }
    }

    /// Registers thread `tid` if it is new (true then): a thread shares its process's
    /// descriptors and mappings; a process gets copies of its parent's.
    pub fn ensure_task(&mut self, tid: i32) -> bool {
        if self.tasks.contains_key(&tid) {
            return false;
        }
        let (tgid, ppid) = ids_of(tid);
        let sibling = self.tasks.values().find(|t| t.pid == tgid).cloned();
        if let Some(s) = sibling {
            self.rec.threads += 1;
            self.tasks.insert(
                tid,
                Task {
                    pending: None,
                    other: None,
                    started: false,
                    held: 0,
                    stops: 0,
                    born: monotonic_ns().saturating_sub(self.rec.t0),
                    done: false,
                    ..s
                },
            );
        } else {
            let parent = self.tasks.values().find(|t| t.pid == ppid).cloned();
            let (fds, mm) = match parent {
                Some(p) => (Rc::new(RefCell::new(p.fds.borrow().clone())), Some(p.mm)),
                None => (Rc::new(RefCell::new(Fds::default())), None),
            };
            self.add_process(tid as u32, tgid, fds, mm);
        }
        true
    }

    /// Adds process `tgid` whose first thread is `tid`, with its descriptors, its mappings
    /// copied from address space `parent_mm` (None: empty).
    pub fn add_process(
        &mut self,
        tid: u32,
        tgid: u32,
        fds: Rc<RefCell<Fds>>,
        parent_mm: Option<u32>,
    ) {
        let now = monotonic_ns().saturating_sub(self.rec.t0);
        let mm = match parent_mm {
            Some(p) => self.rec.spaces.fork(p, tgid, now),
            None => self.rec.spaces.fresh(tgid, now),
        };
        self.rec.processes += 1;
        self.rec.threads += 1;
        self.tasks.insert(
            tid as i32,
            Task {
                pid: tgid,
                fds,
                mm,
                pending: None,
                other: None,
                started: false,
                held: 0,
                stops: 0,
                born: now,
                done: false,
            },
        );
    }

    /// Thread `tid` (formerly `former`) exec'd: its process's other threads are gone, close-on-
    /// exec descriptors closed, the address space new.
    fn exec(&mut self, tid: i32, former: i32, now: u64) {
        if let Some(pid) = self.tasks.get(&tid).map(|t| t.pid) {
            // The old address space is gone: its rings' completions with it.
            self.uring_leave(pid, tid, now, true);
        }
        if former != tid
            && let Some(t) = self.tasks.remove(&former)
        {
            // The exec'ing thread took the leader's id; the leader is gone.
            self.forget_sched(former);
            self.forget_sched(tid);
            if let Some(calls) = self.rec.timed.remove(&former) {
                self.rec.timed.insert(tid, calls);
            }
            self.tasks.insert(tid, t);
        }
        let Some(t) = self.tasks.get(&tid).cloned() else {
            return;
        };
        self.tasks.retain(|k, v| *k == tid || v.pid != t.pid);
        let mut fds = t.fds.borrow().clone();
        fds.exec();
        let mm = self.rec.spaces.fresh(t.pid, now);
        self.tasks.insert(
            tid,
            Task {
                pid: t.pid,
                fds: Rc::new(RefCell::new(fds)),
                mm,
                pending: None,
                other: None,
                started: true,
                held: t.held,
                stops: t.stops,
                born: t.born,
                done: false,
            },
        );
    }
}

/// A thread's process id and its parent's, from /proc.
fn ids_of(tid: i32) -> (u32, u32) {
    let text = std::fs::read_to_string(format!("/proc/{tid}/status")).unwrap_or_default();
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().parse::<u32>().ok())
    };
    (
        field("Tgid:").unwrap_or(tid as u32),
        field("PPid:").unwrap_or(0),
    )
}
