//! `iolab trace --pid` and `--cgroup`: running processes traced by the kernel tracer.

use super::{Trace, TraceConfig, ebpf};

/// Traces running processes (and what they start from then on) for `limit`, or until they
/// end or `interrupted` says to stop: the kernel tracer only (ptrace would stop them; the
/// kernel tracer only adds them to the set it follows). `cfg.command` is not used; `started`
/// is called once the probes are in place.
pub fn attach(
    cfg: &TraceConfig,
    target: &Target,
    limit: Option<std::time::Duration>,
    interrupted: &dyn Fn() -> bool,
    started: &dyn Fn(),
) -> crate::Result<Trace> {
    let (pids, what) = match target {
        Target::Pid(p) if *p == std::process::id() => {
            return Err(crate::Error::usage(
                format!("cannot trace process {p}"),
                "it is this iolab: iolab does not trace itself",
            ));
        }
        Target::Pid(p) => {
            let pids = with_descendants(*p);
            let what = match pids.len() - 1 {
                0 => format!("process {p}"),
                n => format!("process {p} and the {n} process(es) it had started, still running"),
            };
            (pids, what)
        }
        Target::Cgroup(dir) => {
            let text = cgroup_procs(dir)?;
            let pids: Vec<u32> = text.lines().filter_map(|l| l.trim().parse().ok()).collect();
            let what = format!(
                "the {} process(es) of cgroup {} (processes that join it later are not followed)",
                pids.len(),
                dir.display()
            );
            (pids, what)
        }
    };
    super::own_proc()?;
    let loaded = ebpf::prepare(cfg)
        .map_err(|why| crate::Error::unsupported("cannot trace a running process", why))?;
    // Nothing announced for what has ended (a zombie, a cgroup's short-lived processes).
    let me = std::process::id();
    if !pids
        .iter()
        .any(|&p| p != me && ebpf::alive::stat(p).is_some_and(|(_, ended)| !ended))
    {
        return Err(crate::Error::usage(
            format!("{what}: no process to trace"),
            "every one has ended",
        ));
    }
    started();
    loaded.attach(cfg, &pids, &what, limit, interrupted)
}

/// CGROUP_SUPER_MAGIC (v1) and CGROUP2_SUPER_MAGIC.
const CGROUP_MAGICS: [i64; 2] = [0x0027_e0eb, 0x6367_7270];

/// The text of cgroup `dir`'s `cgroup.procs`, once `dir` is known to be a cgroup: the file a
/// regular one (a FIFO is looked at, never opened) on a cgroup file system (a plain folder
/// with such a file is not a cgroup), read up to a bound.
fn cgroup_procs(dir: &std::path::Path) -> crate::Result<String> {
    use std::io::Read;
    let procs = dir.join("cgroup.procs");
    let shown = crate::shown::path(&procs);
    let hint = "give a cgroup's folder, such as /sys/fs/cgroup/memory/NAME";
    let (file, _) = crate::source::open_regular(&procs, false, None).map_err(|r| {
        let why = match r {
            crate::source::Refusal::Io(e) => crate::error::describe_io(&e),
            crate::source::Refusal::Kind(k) => format!("it {k}"),
            crate::source::Refusal::Another => "it changed while opened".into(),
        };
        crate::Error::usage(format!("cannot read {shown}"), why).hint(hint)
    })?;
    if !crate::sys::fs_magic(&file).is_ok_and(|m| CGROUP_MAGICS.contains(&m)) {
        return Err(crate::Error::usage(
            format!("not a cgroup: {}", crate::shown::path(dir)),
            "its cgroup.procs is not on a cgroup file system",
        )
        .hint(hint));
    }
    // Each pid takes at most 11 bytes with its newline.
    let most = (MOST_PROCESSES * 11) as u64;
    let mut text = String::new();
    file.take(most + 1)
        .read_to_string(&mut text)
        .map_err(|e| crate::Error::io("cannot read", &procs, &e))?;
    if text.len() as u64 > most {
        return Err(crate::Error::usage(
            format!("cannot read {shown}"),
            format!("it lists more than {MOST_PROCESSES} processes"),
        ));
    }
    Ok(text)
}

/// The most processes a tree read from /proc may hold (a bound on what is read).
const MOST_PROCESSES: usize = 100_000;

/// `pid` and its running descendants, parents before children: a server's workers (a
/// postmaster's checkpointer and backends) are traced with it. Read from each thread's
/// `children` file, else (a kernel without it) from every process's parent in /proc.
pub fn with_descendants(pid: u32) -> Vec<u32> {
    let mut out = vec![pid];
    let mut seen = std::collections::HashSet::from([pid]);
    let parents = std::cell::OnceCell::new();
    let mut i = 0;
    while i < out.len() && out.len() < MOST_PROCESSES {
        let p = out[i];
        i += 1;
        let children = children_of(p).unwrap_or_else(|| {
            let all: &Vec<(u32, u32)> = parents.get_or_init(parent_pairs);
            all.iter()
                .filter(|&&(_, pp)| pp == p)
                .map(|&(c, _)| c)
                .collect()
        });
        for c in children {
            if out.len() < MOST_PROCESSES && seen.insert(c) {
                out.push(c);
            }
        }
    }
    out
}

/// The children of process `pid`, from /proc/PID/task/*/children; None where the kernel has
/// no such file.
fn children_of(pid: u32) -> Option<Vec<u32>> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    let mut out = Vec::new();
    let mut any = false;
    for t in tasks.flatten() {
        let Ok(text) = std::fs::read_to_string(t.path().join("children")) else {
            continue;
        };
        any = true;
        out.extend(
            text.split_whitespace()
                .filter_map(|c| c.parse::<u32>().ok()),
        );
    }
    any.then_some(out)
}

/// Every process and its parent, from /proc/PID/stat.
fn parent_pairs() -> Vec<(u32, u32)> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .take(MOST_PROCESSES)
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            // The command may hold spaces and parentheses: the fields after its last ')'.
            let rest = &stat[stat.rfind(')')? + 1..];
            let ppid = rest.split_whitespace().nth(1)?.parse().ok()?;
            Some((pid, ppid))
        })
        .collect()
}

/// What `iolab trace` attaches to.
#[derive(Debug, Clone)]
pub enum Target {
    /// A process (and what it starts from then on).
    Pid(u32),
    /// The processes of a cgroup (its folder) at the attach, and what they start.
    Cgroup(std::path::PathBuf),
}
