//! Reading /proc: the CPU line, each process's stat, io and schedstat, the processes that are not
//! ours, kernel threads, and pressure (PSI) totals.

/// /proc/stat's "cpu" line, in clock ticks: `(busy, steal, total)`.
pub fn parse_cpu_line(stat: &str) -> Option<(u64, u64, u64)> {
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal (guest is inside user)
    let get = |i: usize| v.get(i).copied().unwrap_or(0);
    let busy = get(0) + get(1) + get(2) + get(5) + get(6);
    let total: u64 = v.iter().take(8).sum();
    Some((busy, get(7), total))
}

/// One process as /proc/PID/stat shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcStat {
    /// A kernel thread.
    pub kthread: bool,
    /// utime + stime + cutime + cstime, in clock ticks.
    pub ticks: u64,
    /// The parent's pid.
    pub ppid: u32,
    /// Bytes it read from and wrote to storage (/proc/PID/io; 0 where not readable).
    pub io_bytes: u64,
    /// Nanoseconds its main thread waited in a run queue (/proc/PID/schedstat; 0 where absent).
    pub wait_ns: u64,
}

/// Parses /proc/PID/stat.
pub fn parse_pid_stat(text: &str) -> Option<ProcStat> {
    // The command name may hold spaces and parentheses: fields start after the last ')'.
    let rest = &text[text.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // rest[0] is field 3 (state); flags is field 9, utime..cstime are fields 14..17.
    let num = |field: usize| f.get(field - 3).and_then(|x| x.parse::<u64>().ok());
    const PF_KTHREAD: u64 = 0x0020_0000;
    let kthread = num(9)? & PF_KTHREAD != 0;
    let ticks = num(14)? + num(15)? + num(16)? + num(17)?;
    Some(ProcStat {
        kthread,
        ticks,
        ppid: num(4)? as u32,
        io_bytes: 0,
        wait_ns: 0,
    })
}

/// Bytes a process read from and wrote to storage, from /proc/PID/io: `read_bytes +
/// write_bytes - cancelled_write_bytes`.
pub fn parse_pid_io(text: &str) -> Option<u64> {
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
            .and_then(|v| v.trim().parse::<u64>().ok())
    };
    let (r, w) = (field("read_bytes")?, field("write_bytes")?);
    Some((r + w).saturating_sub(field("cancelled_write_bytes").unwrap_or(0)))
}

/// The run-queue wait of /proc/PID/schedstat (`run_ns wait_ns slices`), ns.
pub fn parse_schedstat_wait(text: &str) -> Option<u64> {
    text.split_whitespace().nth(1)?.parse().ok()
}

/// Every other process now, by pid, leaving out the pids that `skip` names.
pub(super) fn processes(skip: impl Fn(u32) -> bool) -> std::collections::HashMap<u32, ProcStat> {
    let me = std::process::id();
    let mut out = std::collections::HashMap::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return out;
    };
    for e in dir.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        if pid == me || skip(pid) {
            continue;
        }
        if let Some(mut v) =
            read_small(&format!("/proc/{pid}/stat")).and_then(|t| parse_pid_stat(&t))
        {
            v.io_bytes = read_small(&format!("/proc/{pid}/io"))
                .and_then(|t| parse_pid_io(&t))
                .unwrap_or(0);
            v.wait_ns = read_small(&format!("/proc/{pid}/schedstat"))
                .and_then(|t| parse_schedstat_wait(&t))
                .unwrap_or(0);
            out.insert(pid, v);
        }
    }
    out
}

/// The kernel threads, from kthreadd's list of its children under `proc`: one read where reading
/// each thread's stat took 10-15 µs (58 of the 66 processes on this machine kind, about 0.8 ms
/// of every command). `None` when pid 2 is not kthreadd (a PID namespace, where the kernel's
/// threads are not shown) or the kernel keeps no children lists.
pub(super) fn kernel_threads(proc: &std::path::Path) -> Option<std::collections::HashSet<u32>> {
    let stat = std::fs::read_to_string(proc.join("2/stat")).ok()?;
    if !parse_pid_stat(&stat)?.kthread {
        return None;
    }
    let children = std::fs::read_to_string(proc.join("2/task/2/children")).ok()?;
    let mut pids: std::collections::HashSet<u32> = children
        .split_whitespace()
        .map(|p| p.parse().ok())
        .collect::<Option<_>>()?;
    pids.insert(2);
    Some(pids)
}

/// A small /proc file in one read (open, read, close: /proc/PID/stat fits in 2 KiB, and
/// `read_to_string` spends a stat and several short reads on each of a hundred processes).
pub(super) fn read_small(path: &str) -> Option<String> {
    use std::io::Read;
    let mut buf = [0u8; 2048];
    let n = std::fs::File::open(path).ok()?.read(&mut buf).ok()?;
    if n == buf.len() {
        return std::fs::read_to_string(path).ok();
    }
    String::from_utf8(buf[..n].to_vec()).ok()
}

/// Processes that do this command's own work (the other ranks of an MPI job on this host and
/// their launcher): their CPU is this work's, not interference. This process's descendants (an
/// MPI singleton's daemon, a peer it started) are always its own.
static OURS: std::sync::Mutex<Vec<u32>> = std::sync::Mutex::new(Vec::new());

/// Counts `pids` as this command's own work from now on.
pub fn also_ours(pids: &[u32]) {
    if let Ok(mut v) = OURS.lock() {
        v.extend(pids.iter().filter(|p| **p != std::process::id()));
    }
}

/// Ticks each kind of process used between two snapshots: `(other processes, kernel threads,
/// processes doing this work)`. A process that appeared counts from zero; one that ended counts
/// through its parent's waited-for children time.
pub(super) fn used(
    a: &std::collections::HashMap<u32, ProcStat>,
    b: &std::collections::HashMap<u32, ProcStat>,
    me: u32,
) -> Used {
    let mut ours = OURS.lock().map(|v| v.clone()).unwrap_or_default();
    ours.extend(descendants(b, me));
    let mut u = Used::default();
    for (pid, p) in b {
        let before = a.get(pid);
        let d = p.ticks.saturating_sub(before.map_or(0, |x| x.ticks));
        if ours.contains(pid) {
            u.own += d;
        } else if p.kthread {
            u.kernel += d;
        } else {
            u.user += d;
            // A process that appeared counts from zero only for what it did in the window:
            // its I/O and waits before it are unknown, so a new process counts from its
            // first sample (none here).
            if let Some(x) = before {
                u.io_bytes += p.io_bytes.saturating_sub(x.io_bytes);
                u.wait_ns += p.wait_ns.saturating_sub(x.wait_ns);
            }
        }
    }
    u
}

/// What other processes, kernel threads and this work's processes used between two samples.
#[derive(Debug, Default)]
pub(super) struct Used {
    /// Other processes' CPU, ticks.
    pub(super) user: u64,
    /// Kernel threads' CPU, ticks.
    pub(super) kernel: u64,
    /// This work's other processes' CPU, ticks.
    pub(super) own: u64,
    /// Other processes' storage bytes.
    pub(super) io_bytes: u64,
    /// Other processes' run-queue waits, ns.
    pub(super) wait_ns: u64,
}

/// The pids in `procs` that descend from `root`.
pub(super) fn descendants(procs: &std::collections::HashMap<u32, ProcStat>, root: u32) -> Vec<u32> {
    let mut found = vec![root];
    let mut i = 0;
    while i < found.len() {
        let parent = found[i];
        found.extend(
            procs
                .iter()
                .filter(|(pid, p)| p.ppid == parent && !found.contains(pid))
                .map(|(pid, _)| *pid)
                .collect::<Vec<_>>(),
        );
        i += 1;
    }
    found.remove(0);
    found
}

/// The "some ... total=" figure of a /proc/pressure file, in µs.
pub fn parse_psi_total(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("some "))?;
    line.split_whitespace()
        .find_map(|f| f.strip_prefix("total="))
        .and_then(|t| t.parse().ok())
}

pub(super) const PSI: [&str; 3] = ["cpu", "io", "memory"];

pub(super) fn psi_totals() -> [Option<u64>; 3] {
    PSI.map(|r| {
        std::fs::read_to_string(format!("/proc/pressure/{r}"))
            .ok()
            .and_then(|t| parse_psi_total(&t))
    })
}
