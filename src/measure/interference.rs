//! What else the machine was doing while iolab measured: CPU time of other processes (their
//! /proc/PID/stat, waited-for children included; kernel threads apart, since iolab's own reads
//! and writes keep them busy), the hypervisor's steal (/proc/stat), pressure stall information
//! (/proc/pressure, where present), the load average, and this process's involuntary context
//! switches. A [`Probe`] is started
//! before the work and finished after it; the [`Interference`] it gives says whether the machine
//! was busy, why, and the figures.

use serde::{Deserialize, Serialize};
use std::time::Instant;

mod procfs;
pub use procfs::{
    ProcStat, also_ours, parse_cpu_line, parse_pid_io, parse_pid_stat, parse_psi_total,
    parse_schedstat_wait,
};
use procfs::{kernel_threads, processes, psi_totals, used};

/// What else ran while something was measured.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Interference {
    /// Other work was large enough to disturb the figures.
    pub busy: bool,
    /// Why it counts as busy, in words (empty when quiet).
    pub reasons: Vec<String>,
    /// How long it was sampled.
    pub seconds: f64,
    /// CPU used by other processes (not kernel threads), in cores on average.
    pub other_cpu_cores: f64,
    /// CPU used by kernel threads and interrupts (write-back, readahead, softirq work: often on
    /// iolab's behalf), in cores on average: the machine's busy time (/proc/stat) beyond this
    /// process and the other processes; reported, not judged.
    #[serde(default)]
    pub kernel_cpu_cores: f64,
    /// Share of CPU time the hypervisor stole, percent.
    pub steal_pct: f64,
    /// Share of the time some task waited for a CPU (PSI "some"), percent; `None` without PSI.
    pub psi_cpu_pct: Option<f64>,
    /// Share of the time some task waited for I/O (PSI "some"), percent.
    pub psi_io_pct: Option<f64>,
    /// Share of the time some task waited for memory (PSI "some"), percent.
    pub psi_memory_pct: Option<f64>,
    /// The 1-minute load average at the end.
    pub load_1m: f64,
    /// Times the scheduler took the CPU away from this process.
    pub involuntary_switches: u64,
    /// What other processes asked of the CPUs, in cores on average: the CPU they used plus the
    /// time they waited in a run queue (/proc/PID/schedstat), not capped at the machine's
    /// cores, so two spinners on two cores read about 2, not "2.00 of 2" as one does.
    #[serde(default)]
    pub other_demand_cores: f64,
    /// What other processes read from and wrote to storage (/proc/PID/io, the processes this
    /// user may read: all of them as root), MiB/s.
    #[serde(default)]
    pub other_io_mib_s: f64,
    /// The least memory available (MemAvailable) at the window's ends, bytes; `None` unread.
    #[serde(default)]
    pub mem_available: Option<u64>,
    /// All memory (MemTotal), bytes; `None` unread.
    #[serde(default)]
    pub mem_total: Option<u64>,
}

/// How many memory cgroups iolab itself is filling now (squeeze): the stalls of its own
/// reclaim show in the machine's memory pressure and are not other work's.
static OWN_MEMORY_LIMITS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
/// How many such limits iolab has begun since it started (a window that saw one begin and end
/// saw its pressure too).
static OWN_MEMORY_LIMITS_MADE: std::sync::atomic::AtomicUsize =
    std::sync::atomic::AtomicUsize::new(0);

/// Marks, while the guard lives, that iolab runs work under a memory limit of its own.
#[derive(Debug)]
pub struct OwnMemoryLimit(());

impl OwnMemoryLimit {
    /// Starts the mark.
    pub fn hold() -> OwnMemoryLimit {
        OWN_MEMORY_LIMITS_MADE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        OWN_MEMORY_LIMITS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        OwnMemoryLimit(())
    }
}

impl Drop for OwnMemoryLimit {
    fn drop(&mut self) {
        OWN_MEMORY_LIMITS.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    }
}

/// `(MemAvailable, MemTotal)` in bytes, from /proc/meminfo.
fn memory() -> (Option<u64>, Option<u64>) {
    let Ok(text) = std::fs::read_to_string("/proc/meminfo") else {
        return (None, None);
    };
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
            .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
            .map(|kib| kib * 1024)
    };
    (field("MemAvailable"), field("MemTotal"))
}

/// The machine's counters at one moment.
#[derive(Debug, Clone)]
struct Sample {
    at: Instant,
    cpu: Option<(u64, u64, u64)>,
    psi: [Option<u64>; 3],
    procs: std::collections::HashMap<u32, ProcStat>,
    ivcsw: u64,
    /// This process's CPU time (all threads), µs.
    own_us: u64,
    /// MemAvailable and MemTotal, bytes.
    memory: (Option<u64>, Option<u64>),
    /// iolab was filling a memory cgroup of its own; how many it had begun.
    own_limit: (bool, usize),
}

impl Sample {
    /// The counters now, reading every process but those `skip` names.
    fn taken(skip: impl Fn(u32) -> bool) -> Sample {
        let cpu = std::fs::read_to_string("/proc/stat")
            .ok()
            .and_then(|s| parse_cpu_line(&s));
        let procs = processes(skip);
        let u = crate::sys::rusage_self();
        Sample {
            at: Instant::now(),
            cpu,
            psi: psi_totals(),
            procs,
            ivcsw: u.ivcsw,
            own_us: u.user_us + u.sys_us,
            memory: memory(),
            own_limit: (
                OWN_MEMORY_LIMITS.load(std::sync::atomic::Ordering::Relaxed) > 0,
                OWN_MEMORY_LIMITS_MADE.load(std::sync::atomic::Ordering::Relaxed),
            ),
        }
    }
}

/// Started before the work, finished after it.
#[derive(Debug, Clone)]
pub struct Probe {
    start: Sample,
    /// Kernel threads not read one by one: their time is the machine's (/proc/stat) less the
    /// processes'.
    kthreads: std::collections::HashSet<u32>,
}

impl Probe {
    /// Starts sampling now.
    pub fn start() -> Probe {
        // Kernel threads are skipped only where /proc/stat gives their time.
        let kthreads = if std::fs::File::open("/proc/stat").is_ok() {
            kernel_threads(std::path::Path::new("/proc")).unwrap_or_default()
        } else {
            Default::default()
        };
        Probe {
            start: Sample::taken(|pid| kthreads.contains(&pid)),
            kthreads,
        }
    }

    /// What else ran since the start.
    pub fn finish(&self) -> Interference {
        // Kernel threads seen at the start are not read again: their time is derived from
        // /proc/stat (about 1 ms less per command here, most of /proc being kernel threads).
        let start = &self.start.procs;
        let end = Sample::taken(|pid| {
            self.kthreads.contains(&pid) || start.get(&pid).is_some_and(|p| p.kthread)
        });
        between(&self.start, &end, load_1m(), crate::sys::clock_ticks())
    }
}

fn load_1m() -> f64 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0.0)
}

fn between(a: &Sample, b: &Sample, load_1m: f64, ticks: u64) -> Interference {
    let secs = b.at.duration_since(a.at).as_secs_f64().max(1e-9);
    let steal = match (a.cpu, b.cpu) {
        (Some((_, asl, at)), Some((_, bsl, bt))) => {
            100.0 * bsl.saturating_sub(asl) as f64 / bt.saturating_sub(at).max(1) as f64
        }
        _ => 0.0,
    };
    let u = used(&a.procs, &b.procs, std::process::id());
    let (user, kernel_read, ours) = (u.user, u.kernel, u.own);
    // The kernel threads' time: what the whole machine was busy (/proc/stat) beyond this process
    // and the other processes (interrupts included); without /proc/stat, the kernel threads read.
    let kernel = match (a.cpu, b.cpu) {
        (Some((ab, _, _)), Some((bb, _, _))) => {
            let own = b.own_us.saturating_sub(a.own_us) * ticks / 1_000_000;
            bb.saturating_sub(ab)
                .saturating_sub(own)
                .saturating_sub(ours)
                .saturating_sub(user)
        }
        _ => kernel_read,
    };
    // Clock ticks are coarse (10 ms): over a short window one tick is a large share, so the
    // figure is capped at the machine's cores.
    let cpus = crate::sys::cpus() as f64;
    let cores = |t: u64| (t as f64 / ticks as f64 / secs).min(cpus);
    let pct = |i: usize| match (a.psi[i], b.psi[i]) {
        (Some(x), Some(y)) => Some(100.0 * y.saturating_sub(x) as f64 / (secs * 1e6)),
        _ => None,
    };
    let mem_available = match (a.memory.0, b.memory.0) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, y) => x.or(y),
    };
    // Memory stalls while iolab filled a group of its own (squeeze) are its own doing.
    let psi_memory = if a.own_limit.0 || b.own_limit.0 || a.own_limit.1 != b.own_limit.1 {
        None
    } else {
        pct(2)
    };
    judge(Interference {
        busy: false,
        reasons: Vec::new(),
        seconds: secs,
        other_cpu_cores: cores(user),
        kernel_cpu_cores: cores(kernel),
        steal_pct: steal,
        psi_cpu_pct: pct(0),
        psi_io_pct: pct(1),
        psi_memory_pct: psi_memory,
        load_1m,
        involuntary_switches: b.ivcsw.saturating_sub(a.ivcsw),
        other_demand_cores: user as f64 / ticks as f64 / secs + u.wait_ns as f64 / 1e9 / secs,
        other_io_mib_s: u.io_bytes as f64 / secs / (1u64 << 20) as f64,
        mem_available,
        mem_total: b.memory.1.or(a.memory.1),
    })
}

/// Decides `busy` and its reasons from the figures. Only what other work causes counts: other
/// processes' CPU and stolen time (PSI and the load also rise with iolab's own threads, so they
/// are reported, not judged).
pub fn judge(mut i: Interference) -> Interference {
    i.reasons.clear();
    if i.other_cpu_cores >= Interference::BUSY_OTHER_CORES
        && i.other_cpu_cores * i.seconds >= Interference::BUSY_MIN_OTHER_SECONDS
    {
        let demand = i.other_demand_cores.max(i.other_cpu_cores);
        i.reasons.push(format!(
            "other processes wanted {demand:.2} CPU cores on average (ran on {:.2} of {}, waited for the rest)",
            i.other_cpu_cores,
            crate::sys::cpus()
        ));
    }
    if i.other_io_mib_s >= Interference::BUSY_OTHER_IO_MIB_S
        && i.other_io_mib_s * i.seconds >= Interference::BUSY_MIN_OTHER_IO_MIB
    {
        let pressure = i
            .psi_io_pct
            .map(|p| format!(", I/O pressure {p:.0}%"))
            .unwrap_or_default();
        i.reasons.push(format!(
            "other processes read or wrote {:.1} MiB/s of file data (writes counted as they are dirtied){pressure}",
            i.other_io_mib_s
        ));
    }
    // Memory: tasks stalled for it (reclaim, refaults: pages taken from the cache the run
    // relies on), or so little left that the page cache cannot hold what is measured.
    let mib = |b: u64| b as f64 / (1u64 << 20) as f64;
    if let Some(p) = i.psi_memory_pct
        && p >= Interference::BUSY_MEMORY_PSI_PCT
    {
        i.reasons.push(format!(
            "tasks waited for memory {p:.0}% of the time (memory pressure: reclaim takes cached pages)"
        ));
    } else if let (Some(avail), Some(total)) = (i.mem_available, i.mem_total)
        && total > 0
        && (avail as f64) < Interference::BUSY_MEMORY_AVAILABLE_SHARE * total as f64
    {
        i.reasons.push(format!(
            "only {:.0} MiB of {:.0} MiB memory was available (memory pressure)",
            mib(avail),
            mib(total)
        ));
    }
    if i.steal_pct >= Interference::BUSY_STEAL_PCT {
        i.reasons.push(format!(
            "the hypervisor stole {:.1}% of CPU time",
            i.steal_pct
        ));
    }
    i.busy = !i.reasons.is_empty();
    i
}

impl Interference {
    /// Other processes' CPU, in cores on average, from which the machine counts as busy.
    pub const BUSY_OTHER_CORES: f64 = 0.25;
    /// And at least this much CPU time in all: the kernel counts in 10 ms ticks, so a short
    /// window cannot tell a quarter core from one stray tick.
    pub const BUSY_MIN_OTHER_SECONDS: f64 = 0.1;
    /// Stolen CPU time, in percent, from which the machine counts as busy.
    pub const BUSY_STEAL_PCT: f64 = 5.0;
    /// Memory stalls (PSI memory "some"), percent of the time, from which it counts as busy.
    pub const BUSY_MEMORY_PSI_PCT: f64 = 10.0;
    /// Available memory below this share of all memory counts as busy.
    pub const BUSY_MEMORY_AVAILABLE_SHARE: f64 = 0.05;
    /// Other processes' storage traffic, MiB/s, from which the machine counts as busy.
    pub const BUSY_OTHER_IO_MIB_S: f64 = 4.0;
    /// And at least this much in all, MiB (a window's stray log write is not contention).
    pub const BUSY_MIN_OTHER_IO_MIB: f64 = 4.0;

    /// Several windows as one: the largest figures, busy if any window was, and reasons that
    /// say how many windows were busy and the worst of each kind.
    pub fn merge<'a>(all: impl IntoIterator<Item = &'a Interference>) -> Interference {
        let mut m = Interference::default();
        let (mut windows, mut busy) = (0, 0);
        let mut io_mib = 0.0;
        let max_opt = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(x), Some(y)) => Some(x.max(y)),
            (x, y) => x.or(y),
        };
        for i in all {
            windows += 1;
            busy += usize::from(i.busy);
            m.seconds += i.seconds;
            m.other_cpu_cores = m.other_cpu_cores.max(i.other_cpu_cores);
            m.kernel_cpu_cores = m.kernel_cpu_cores.max(i.kernel_cpu_cores);
            m.steal_pct = m.steal_pct.max(i.steal_pct);
            m.psi_cpu_pct = max_opt(m.psi_cpu_pct, i.psi_cpu_pct);
            m.psi_io_pct = max_opt(m.psi_io_pct, i.psi_io_pct);
            m.psi_memory_pct = max_opt(m.psi_memory_pct, i.psi_memory_pct);
            m.mem_available = match (m.mem_available, i.mem_available) {
                (Some(x), Some(y)) => Some(x.min(y)),
                (x, y) => x.or(y),
            };
            m.mem_total = m.mem_total.or(i.mem_total);
            m.load_1m = m.load_1m.max(i.load_1m);
            m.other_demand_cores = m.other_demand_cores.max(i.other_demand_cores);
            // Storage traffic over time, not the worst window: a short window of a writer
            // dirtying the page cache reads as gigabytes per second.
            io_mib += i.other_io_mib_s * i.seconds;
            m.involuntary_switches += i.involuntary_switches;
        }
        m.other_io_mib_s = if m.seconds > 0.0 {
            io_mib / m.seconds
        } else {
            0.0
        };
        let mut m = judge(m);
        if busy > 0 {
            m.busy = true;
            if m.reasons.is_empty() {
                m.reasons.push("other work was seen".into());
            }
            m.reasons[0] = format!(
                "{busy} of {windows} experiments ran beside other work: at worst {}",
                m.reasons[0]
            );
        } else {
            m.busy = false;
            m.reasons.clear();
        }
        m
    }

    /// The windows of one measurement (its rounds) as one: the largest figures, busy if any
    /// window was, with the reasons of the worst window and how many windows were busy.
    pub fn merge_windows(all: &[Interference]) -> Interference {
        let mut m = Interference::merge(all);
        let busy = all.iter().filter(|i| i.busy).count();
        if busy > 0 {
            m.reasons = all
                .iter()
                .filter(|i| i.busy)
                .max_by(|a, b| a.other_cpu_cores.total_cmp(&b.other_cpu_cores))
                .map(|i| i.reasons.clone())
                .unwrap_or_default();
            if let Some(first) = m.reasons.first_mut() {
                *first = format!("{busy} of {} rounds: {first}", all.len());
            }
        }
        m
    }

    /// What was busy, for a command's stderr: "the machine was busy while measuring: ...", or
    /// `None` when quiet.
    pub fn busy_line(&self) -> Option<String> {
        self.busy_text("")
    }

    /// The suite's line at the top of its report: "Warning: " and [`Interference::busy_line`],
    /// with the suite's own way to wait for a quiet machine; `None` when quiet.
    pub fn warning(&self) -> Option<String> {
        self.busy_text("; iolab suite --wait-quiet waits for one")
            .map(|l| format!("Warning: {l}"))
    }

    fn busy_text(&self, hint: &str) -> Option<String> {
        self.busy.then(|| {
            format!(
                "the machine was busy while measuring: {}; figures may be slower and noisier than this machine can do (rerun on a quiet machine{hint})",
                self.reasons.join("; ")
            )
        })
    }
}

/// Waits, up to `limit`, for a quiet second; returns the last second's figures and how long
/// it waited.
pub fn wait_quiet(limit: std::time::Duration) -> (Interference, std::time::Duration) {
    let start = Instant::now();
    let deadline = start + limit;
    loop {
        let p = Probe::start();
        std::thread::sleep(std::time::Duration::from_millis(1000).min(limit));
        let i = p.finish();
        if !i.busy || Instant::now() >= deadline {
            return (i, start.elapsed());
        }
    }
}

/// What a wait for a quiet machine before `what` comes to, in one line: how long it took, or
/// that it gave up and why.
pub fn waited_line(what: &str, last: &Interference, waited: std::time::Duration) -> String {
    let secs = waited.as_secs_f64();
    if last.busy {
        format!(
            "gave up waiting for a quiet machine before {what} after {secs:.0} s: still busy ({}); measuring anyway",
            last.reasons.join("; ")
        )
    } else {
        format!("waited {secs:.0} s for a quiet machine before {what}")
    }
}

#[cfg(test)]
mod tests;
