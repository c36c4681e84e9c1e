//! The kernel tracer: eBPF programs on the kernel's tracepoints (system calls, the process
//! tree, page faults) record the traced program's calls as the kernel runs them and stream
//! them through a ring buffer; nothing stops the program. The probes are `bpf/iolab.bpf.c`,
//! compiled to `bpf/iolab.bpf.o` (checked in, rebuilt and compared by CI: building iolab needs
//! no clang) and loaded with aya (a pure-Rust loader, no libbpf or libelf to install).
//! It needs root, or CAP_BPF with CAP_PERFMON; [`prepare`] says why it cannot run.

pub mod abi;
pub(super) mod alive;
mod attach;
mod convert;
pub mod events;
mod names;

use super::calls::Call;
use super::{Ended, Trace, TraceConfig};
use crate::{Error, Result};
use aya::programs::BtfTracePoint;
use std::time::{Duration, Instant};

/// The compiled probes.
static OBJECT: &[u8] = aya::include_bytes_aligned!("../../../bpf/iolab.bpf.o");

/// A call that never waits: neither timed nor recorded (bpf/iolab.h's `K_UNTIMED`).
const K_UNTIMED: u8 = 11;

/// How a traced run ended.
struct RunEnd {
    ended: Ended,
    /// iolab was interrupted.
    interrupted: bool,
    /// The run's wall time.
    wall: Duration,
    /// Processes the program started that were still running and were left so.
    left: Option<usize>,
}

/// The probes, loaded and attached, ready to trace a program.
pub struct Loaded {
    bpf: aya::Ebpf,
    /// Why a probe beyond the calls could not be attached (its view is then missing).
    missing: Vec<String>,
}

/// Whether this process may load eBPF programs: root, or CAP_BPF and CAP_PERFMON.
fn rights() -> std::result::Result<(), String> {
    if rustix::process::geteuid().is_root() {
        return Ok(());
    }
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let eff = status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        .unwrap_or(0);
    // CAP_PERFMON is 38, CAP_BPF 39.
    if eff & (1 << 38) != 0 && eff & (1 << 39) != 0 {
        return Ok(());
    }
    Err("the eBPF tracer needs root or CAP_BPF with CAP_PERFMON".into())
}

/// An aya error with what caused it (the verifier's log, the errno).
fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(x) = src {
        let more = x.to_string();
        if !s.contains(&more) {
            s.push_str(": ");
            s.push_str(&more);
        }
        src = x.source();
    }
    if std::env::var_os("IOLAB_BPF_LOG").is_some() {
        return s;
    }
    s.lines().next().unwrap_or_default().to_string()
}

/// The inode of the initial PID namespace (the kernel's PROC_PID_INIT_INO).
const INITIAL_PID_NS: u64 = 0xEFFF_FFFC;

/// Whether iolab sees pids as the probes do: the probes see the initial PID namespace's, and
/// iolab in a container (`unshare --pid`, a pod) sees its own, so no pid of either would name
/// the other's process.
fn same_pids() -> std::result::Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    let initial = match std::fs::metadata("/proc/self/ns/pid") {
        Ok(m) => m.ino() == INITIAL_PID_NS,
        // No namespace file: the pids of /proc/self/status, one per nested namespace.
        Err(_) => std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|s| {
                let l = s.lines().find_map(|l| l.strip_prefix("NSpid:"))?;
                Some(l.split_whitespace().count() <= 1)
            })
            .unwrap_or(true),
    };
    if initial {
        Ok(())
    } else {
        Err("iolab runs in a PID namespace of its own (a container, unshare --pid): the kernel tracer's pids are the host's".into())
    }
}

/// Loads and attaches the probes for `cfg`, or says in one line why the kernel tracer cannot
/// run here (then the ptrace tracer can).
pub fn prepare(cfg: &TraceConfig) -> std::result::Result<Loaded, String> {
    rights()?;
    same_pids()?;
    let btf = aya::Btf::from_sys_fs()
        .map_err(|e| format!("the kernel has no BTF to relocate the probes against ({e})"))?;
    let floor: u32 = match cfg.tracer {
        super::TracerChoice::Floor(super::ProbeFloor::Attached) => 1,
        super::TracerChoice::Floor(super::ProbeFloor::Sums) => 2,
        _ => 0,
    };
    // Task storage (each thread's call between its entry and exit, its own sums) is a map
    // aya creates but has no type for: allowed, the sums read by a pidfd (`running_sums`).
    let mut bpf = aya::EbpfLoader::new()
        .btf(Some(&btf))
        .allow_unsupported_maps()
        .override_global("floor_mode", &floor, true)
        .load(OBJECT)
        .map_err(|e| format!("cannot load the probes: {}", chain(&e)))?;
    let mut probes = vec![
        ("sys_enter", "sys_enter"),
        ("sys_exit", "sys_exit"),
        ("sched_fork", "sched_process_fork"),
        ("sched_exec", "sched_process_exec"),
        ("sched_exit", "sched_process_exit"),
    ];
    if cfg.faults {
        probes.push(("page_fault", "page_fault_user"));
    }
    for (name, tp) in probes {
        attach(&mut bpf, &btf, name, tp)?;
    }
    // What only the kernel sees: a kernel without io_uring, or whose page cache's tracepoints
    // differ, is traced without it, and the trace says so.
    let mut missing = Vec::new();
    if floor != 0 {
        missing.push(format!(
            "file calls are not traced: the probes {} (--tracer {}, for measuring their cost)",
            if floor == 1 {
                "were attached and recorded nothing"
            } else {
                "timed every call and recorded none"
            },
            if floor == 1 {
                "ebpf-attached"
            } else {
                "ebpf-sums"
            }
        ));
    }
    for (name, tp, what) in [
        (
            "sched_switch",
            "sched_switch",
            "the calls' time on and off the CPU (all of it is taken as off)",
        ),
        ("uring_submit", "io_uring_submit_req", "io_uring requests"),
        ("uring_complete", "io_uring_complete", "io_uring requests"),
        (
            "cache_add",
            "mm_filemap_add_to_page_cache",
            "the page cache's reads",
        ),
        ("cache_dirty", "writeback_dirty_folio", "pages dirtied"),
    ] {
        if let Err(e) = attach(&mut bpf, &btf, name, tp) {
            missing.push(format!("{what} are not traced: {e}"));
        }
    }
    let mut wanted: aya::maps::Array<_, u8> = bpf
        .map_mut("wanted")
        .ok_or("the probes have no map `wanted`")?
        .try_into()
        .map_err(|e: aya::maps::MapError| chain(&e))?;
    for (nr, call) in super::calls::table() {
        if (call == Call::Stat || call == Call::Getdents) && !cfg.metadata {
            continue;
        }
        let k = super::decode::probe_kind(call, nr);
        if k != 0 {
            wanted
                .set(nr as u32, k, 0)
                .map_err(|e| format!("cannot fill the probes' table of calls: {}", chain(&e)))?;
        }
    }
    for &nr in super::calls::UNTIMED {
        wanted
            .set(nr as u32, K_UNTIMED, 0)
            .map_err(|e| format!("cannot fill the probes' table of calls: {}", chain(&e)))?;
    }
    Ok(Loaded { bpf, missing })
}

/// Loads program `name` of the probes and attaches it to the BTF tracepoint `tp`.
fn attach(bpf: &mut aya::Ebpf, btf: &aya::Btf, name: &str, tp: &str) -> Result<(), String> {
    let p: &mut BtfTracePoint = bpf
        .program_mut(name)
        .ok_or_else(|| format!("the probes have no program {name}"))?
        .try_into()
        .map_err(|e: aya::programs::ProgramError| chain(&e))?;
    p.load(tp, btf)
        .map_err(|e| format!("cannot load the probe on {tp}: {}", chain(&e)))?;
    p.attach()
        .map_err(|e| format!("cannot attach to the tracepoint {tp}: {}", chain(&e)))?;
    Ok(())
}

/// The probes' `cache` map: the page cache's work per (file, call).
fn cache_entries(bpf: &aya::Ebpf) -> Vec<convert::CacheEntry> {
    let Some(m) = bpf.map("cache") else {
        return Vec::new();
    };
    let Ok(h) = aya::maps::HashMap::<_, [u64; 3], [u64; 4]>::try_from(m) else {
        return Vec::new();
    };
    h.iter()
        .filter_map(|r| r.ok())
        .map(|(k, v)| (bytemuck::cast(k), bytemuck::cast(v)))
        .collect()
}

/// The probes' `calltime` map: the calls timed only, per thread and call.
fn timed_entries(bpf: &aya::Ebpf) -> Vec<(abi::CallKey, abi::CallVal)> {
    let Some(m) = bpf.map("calltime") else {
        return Vec::new();
    };
    let Ok(h) = aya::maps::HashMap::<_, [u32; 2], [u64; 5]>::try_from(m) else {
        return Vec::new();
    };
    h.iter()
        .filter_map(|r| r.ok())
        .map(|(k, v)| (bytemuck::cast(k), bytemuck::cast(v)))
        .collect()
}

/// Each thread in `tids` (still running at the end): its calls timed only, from its own
/// storage (the `sums` map, read through a pidfd of the thread), added to `entries`, read
/// from `calltime` before. A thread that ended in between added them to `calltime` as it
/// ended: it is looked up there again. How many could be read neither way, and why the first.
fn running_sums(
    bpf: &aya::Ebpf,
    tids: &[u32],
    entries: &mut Vec<(abi::CallKey, abi::CallVal)>,
) -> (usize, String) {
    use std::os::fd::AsFd;
    if tids.is_empty() {
        return (0, String::new());
    }
    let Some(aya::maps::Map::Unsupported(map)) = bpf.map("sums") else {
        return (tids.len(), "the probes have no map `sums`".into());
    };
    let size = match map.info() {
        Ok(i) => i.value_size(),
        Err(e) => return (tids.len(), chain(&e)),
    };
    let mut again = Vec::new();
    let (mut unread, mut why) = (0, String::new());
    for &tid in tids {
        let mut v: abi::TSums = bytemuck::Zeroable::zeroed();
        match crate::sys::bpf::task_storage_lookup(
            map.fd().as_fd(),
            size,
            tid,
            bytemuck::bytes_of_mut(&mut v),
        ) {
            Ok(()) => entries.extend(v.s.iter().take_while(|s| s.nr != 0).map(|s| {
                let key = abi::CallKey {
                    tid,
                    nr: (s.nr - 1) as u32,
                };
                (key, s.v)
            })),
            // Gone, or its entry gone: it ended, its sums are in `calltime` now (or it timed
            // no call, and `calltime` has at most those past its slots).
            Err(e) if matches!(e.raw_os_error(), Some(libc::ESRCH | libc::ENOENT)) => {
                again.push(tid)
            }
            Err(e) => {
                unread += 1;
                if why.is_empty() {
                    // EINVAL: no PIDFD_THREAD (before Linux 6.9) for a thread not the first.
                    why = format!("a pidfd of thread {tid}: {e}");
                }
            }
        }
    }
    if !again.is_empty() {
        let fresh = timed_entries(bpf);
        entries.retain(|(k, _)| !again.contains(&k.tid));
        entries.extend(fresh.into_iter().filter(|(k, _)| again.contains(&k.tid)));
    }
    (unread, why)
}

/// How often the followed processes are looked for in /proc (to find those whose exit event
/// the full ring buffer lost).
const SWEEP: Duration = Duration::from_millis(400);

/// Waits up to 5 ms for events (or for `pidfd`, a process's end), then takes every event
/// waiting in the ring.
fn take_events(
    ring: &mut aya::maps::RingBuf<aya::maps::MapData>,
    pidfd: Option<&rustix::fd::OwnedFd>,
    conv: &mut convert::Convert,
) {
    use rustix::event::{PollFd, PollFlags};
    let mut fds = vec![PollFd::new(&*ring, PollFlags::IN)];
    if let Some(p) = pidfd {
        fds.push(PollFd::new(p, PollFlags::IN));
    }
    let timeout = rustix::time::Timespec {
        tv_sec: 0,
        tv_nsec: 5_000_000,
    };
    let _ = rustix::event::poll(&mut fds, Some(&timeout));
    while let Some(item) = ring.next() {
        conv.take(&item);
    }
}

/// Counters the probes keep (bpf/iolab.bpf.c's `counts`).
fn counter(bpf: &aya::Ebpf, i: u32) -> u64 {
    bpf.map("counts")
        .and_then(|m| aya::maps::Array::<_, u64>::try_from(m).ok())
        .and_then(|a| a.get(&i, 0).ok())
        .unwrap_or(0)
}

impl Loaded {
    /// Adds process `pid` to the traced set; the ring buffer to read its events from.
    fn follow(&mut self, pid: u32) -> Result<aya::maps::RingBuf<aya::maps::MapData>> {
        self.also(pid)?;
        let map = self
            .bpf
            .take_map("events")
            .ok_or_else(|| Error::failed("eBPF", "the probes have no ring buffer"))?;
        aya::maps::RingBuf::try_from(map).map_err(|e| Error::failed("eBPF", chain(&e)))
    }

    /// Adds process `pid` to the traced set.
    fn also(&mut self, pid: u32) -> Result<()> {
        let mut traced: aya::maps::HashMap<_, u32, u8> = self
            .bpf
            .map_mut("traced")
            .and_then(|m| m.try_into().ok())
            .ok_or_else(|| Error::failed("eBPF", "the probes have no map `traced`"))?;
        traced
            .insert(pid, 1, 0)
            .map_err(|e| Error::failed("eBPF: cannot trace the program", chain(&e)))
    }

    /// Runs `cfg.command` under the probes until it ends (with `follow`, until every process
    /// it started has ended too), or `interrupted` says to stop it.
    pub fn run(
        mut self,
        cfg: &TraceConfig,
        interrupted: &dyn Fn() -> bool,
        follow: bool,
    ) -> Result<Trace> {
        let Some(program) = cfg.command.first() else {
            return Err(Error::usage("nothing to trace", "give a command after --"));
        };
        super::launch::find_program(program)?;
        let mut cmd = std::process::Command::new(&cfg.launcher);
        cmd.arg("trace-exec").arg("--stop-first");
        cmd.arg("--").args(&cfg.command);
        if cfg.quiet {
            use std::process::Stdio;
            cmd.stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null());
        }
        // kill -9 of iolab takes the program with it (no probe follows it then), as ptrace's
        // EXITKILL does for its tracer.
        crate::sys::die_with_parent(&mut cmd);
        let child = cmd.spawn().map_err(|e| {
            let what = format!("cannot run {}", program.to_string_lossy());
            Error::failed(what, crate::error::describe_io(&e))
        })?;
        let pid = child.id();
        // The launcher stops itself; it is traced from before it execs the program.
        crate::sys::ptrace::wait_stopped(pid as i32)
            .map_err(|e| Error::failed("cannot start the program", e))?;
        // The launcher is stopped: whatever fails from here ends it, never leaves it so.
        let mut ring = self.follow(pid).inspect_err(|_| {
            let _ = crate::sys::ptrace::kill(pid as i32, libc::SIGKILL);
            let _ = crate::sys::ptrace::kill(pid as i32, libc::SIGCONT);
            while crate::sys::ptrace::reap(pid as i32).is_none() {
                std::thread::sleep(Duration::from_millis(1));
            }
        })?;
        let buffers_before = crate::cache::meminfo::read().buffers;
        let t0 = crate::sys::monotonic_ns();
        let mut conv = convert::Convert::new(pid, t0);
        // The block devices' cache before the run (its growth is taken at the end).
        conv.rec.kernel.buffers_growth = buffers_before;
        let started = Instant::now();
        let _ = crate::sys::ptrace::kill(pid as i32, libc::SIGCONT);
        let mut ended = Ended {
            code: None,
            signal: None,
        };
        // Readable when the program's first process ends: the loop wakes for that as for
        // events.
        let pidfd = rustix::process::Pid::from_raw(pid as i32).and_then(|p| {
            rustix::process::pidfd_open(p, rustix::process::PidfdFlags::empty()).ok()
        });
        let mut root_done = false;
        let mut stop = super::launch::Escalation::default();
        let mut wall = None;
        let mut swept = Instant::now();
        loop {
            take_events(&mut ring, pidfd.as_ref().filter(|_| !root_done), &mut conv);
            if swept.elapsed() >= SWEEP {
                conv.sweep();
                swept = Instant::now();
            }
            if !root_done && let Some(w) = crate::sys::ptrace::reap(pid as i32) {
                root_done = true;
                wall = Some(started.elapsed());
                (ended.code, ended.signal) = w;
            }
            if root_done && (!follow || conv.live.is_empty()) {
                // The exit events are in the ring before the parent hears of the exit.
                while let Some(item) = ring.next() {
                    conv.take(&item);
                }
                break;
            }
            if let Some(sig) = stop.step(interrupted()) {
                conv.signal_live(sig);
                // A stopped program (Ctrl-Z, a debugger) acts on it only once continued.
                conv.signal_live(libc::SIGCONT);
            }
            if stop.given_up() {
                // Killed and given two seconds more: what has not ended is left, and said.
                break;
            }
        }
        // The program's own end as the kernel timed it (the loop hears of it a little later).
        let wall = match conv.root_ended {
            Some(ns) => Duration::from_nanos(ns),
            None => wall.unwrap_or_else(|| started.elapsed()),
        };
        let end = RunEnd {
            ended,
            interrupted: stop.asked(),
            wall,
            left: (!follow && !conv.live.is_empty()).then_some(conv.live.len()),
        };
        self.conclude(cfg, conv, ring, end)
    }

    /// The calls timed only (the shared table's, and each running thread's own sums) given to
    /// their threads; what could not be counted, as notes.
    fn timed_calls(&self, conv: &mut convert::Convert, wall: Duration) -> Vec<String> {
        let mut timed = timed_entries(&self.bpf);
        let (unread, why) = running_sums(&self.bpf, &conv.running(), &mut timed);
        conv.timed_calls(&timed, wall.as_nanos() as u64);
        let mut notes = Vec::new();
        if unread > 0 {
            notes.push(format!(
                "{unread} thread(s) still running at the end could not be read for the calls they made that are timed only ({why}): their time shows as page faults"
            ));
        }
        let lost = counter(&self.bpf, 5);
        if lost > 0 {
            notes.push(format!(
                "{lost} calls were not timed (the probes' table of timed calls was full): their time shows as page faults"
            ));
        }
        notes
    }

    /// The trace from what the probes saw: requests, the page cache's work and counters
    /// taken from the probes' maps, then finished as the ptrace tracer's is.
    fn conclude(
        mut self,
        cfg: &TraceConfig,
        mut conv: convert::Convert,
        ring: aya::maps::RingBuf<aya::maps::MapData>,
        end: RunEnd,
    ) -> Result<Trace> {
        let RunEnd {
            ended,
            interrupted,
            wall,
            left,
        } = end;
        let lost = counter(&self.bpf, 0);
        let missing = std::mem::take(&mut self.missing);
        conv.flush_completed();
        if !missing.iter().any(|m| m.starts_with("the page cache")) {
            conv.cache_work(&cache_entries(&self.bpf), counter(&self.bpf, 4));
        }
        let timed_notes = self.timed_calls(&mut conv, wall);
        conv.after_from_closes();
        let uring = &mut conv.rec.uring;
        uring.requests = counter(&self.bpf, 1);
        uring.other = counter(&self.bpf, 2);
        uring.unseen = counter(&self.bpf, 3).saturating_sub(uring.reads + uring.writes);
        if uring.unseen > 0 {
            uring.why = Some("their completion was not seen (a request without one, or the ring buffer was full)".into());
        }
        drop(ring);
        drop(self);
        let mut st = std::mem::replace(&mut conv.rec, crate::trace::record::Recording::new(0));
        st.kernel.buffers_growth = crate::cache::meminfo::read()
            .buffers
            .saturating_sub(st.kernel.buffers_growth);
        if lost > 0 {
            st.note(&format!(
                "{lost} events were lost (the kernel's ring buffer was full): calls and faults are undercounted"
            ));
        }
        if conv.exits_lost > 0 {
            st.note(&format!(
                "{} process(es) ended without their exit event (the ring buffer was full): found ended in /proc, their last figures are missing",
                conv.exits_lost
            ));
        }
        for n in &timed_notes {
            st.note(n);
        }
        if conv.unreadable > 0 {
            st.note(&format!(
                "{} events could not be read ({})",
                conv.unreadable,
                conv.unreadable_why.as_deref().unwrap_or("")
            ));
        }
        for m in missing {
            if conv.uring_enters > 0 || !m.starts_with("io_uring") {
                st.note(&m);
            }
        }
        if let Some(n) = left {
            st.note(&format!(
                "{n} process(es) the program started were still running when it ended: left running, unrecorded from then on (--follow waits for them)"
            ));
        } else if interrupted && !conv.live.is_empty() {
            st.note(&format!(
                "{} process(es) had not ended a second after SIGKILL: left, unrecorded from then on",
                conv.live.len()
            ));
        }
        // Calls from several CPUs reach the ring in nearly, not exactly, the order they ended.
        // A request's op is when its thread saw it complete.
        super::order::sort_by_small_key(&mut st.ops, |o| {
            if o.call.is_request() {
                o.t
            } else {
                o.t + o.dur
            }
        });
        // Fault addresses become files and offsets through the mappings the program made,
        // as the ptrace tracer's samples do.
        let samples = super::faults::Samples {
            samples: std::mem::take(&mut conv.faults),
            lost: 0,
        };
        let unavailable = (!cfg.faults).then(|| "not asked for (--no-faults)".to_string());
        let seen = super::finish::sampled(&st, cfg.faults.then_some(samples), unavailable);
        let mut t = super::finish::finish(cfg, st, seen, ended, interrupted, wall);
        t.tracer = Some(super::Tracer::Ebpf);
        Ok(t)
    }
}
