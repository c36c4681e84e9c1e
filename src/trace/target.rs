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
        Target::Pid(p) => (vec![*p], format!("process {p}")),
        Target::Cgroup(dir) => {
            let procs = dir.join("cgroup.procs");
            let text = std::fs::read_to_string(&procs).map_err(|e| {
                crate::Error::usage(
                    format!("cannot read {}", crate::shown::path(&procs)),
                    format!(
                        "{} (give a cgroup's folder, such as /sys/fs/cgroup/memory/NAME)",
                        crate::error::describe_io(&e)
                    ),
                )
            })?;
            let pids: Vec<u32> = text.lines().filter_map(|l| l.trim().parse().ok()).collect();
            let what = format!(
                "the {} process(es) of cgroup {} (processes that join it later are not followed)",
                pids.len(),
                dir.display()
            );
            (pids, what)
        }
    };
    let loaded = ebpf::prepare(cfg)
        .map_err(|why| crate::Error::unsupported("cannot trace a running process", why))?;
    started();
    loaded.attach(cfg, &pids, &what, limit, interrupted)
}

/// What `iolab trace` attaches to.
#[derive(Debug, Clone)]
pub enum Target {
    /// A process (and what it starts from then on).
    Pid(u32),
    /// The processes of a cgroup (its folder) at the attach, and what they start.
    Cgroup(std::path::PathBuf),
}
