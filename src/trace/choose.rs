//! Which tracer a trace runs under here, and where none can run right.

use super::{TraceConfig, TracerChoice, ebpf};

/// The tracer a [`TracerChoice`] comes to on this machine.
pub enum Chosen {
    /// The kernel tracer, its probes loaded.
    Kernel(ebpf::Loaded),
    /// ptrace; with `Auto`, why the kernel tracer could not run.
    Ptrace(Option<String>),
}

/// The tracer `cfg.tracer` comes to here: `Auto` is the kernel tracer where its probes load,
/// else ptrace with the reason; `Ebpf` where they cannot load is an error saying why.
pub fn choose(cfg: &TraceConfig) -> crate::Result<Chosen> {
    own_proc()?;
    match cfg.tracer {
        TracerChoice::Ptrace => Ok(Chosen::Ptrace(None)),
        TracerChoice::Ebpf | TracerChoice::Floor(_) => ebpf::prepare(cfg)
            .map(Chosen::Kernel)
            .map_err(|why| crate::Error::unsupported("cannot trace with eBPF", why)),
        TracerChoice::Auto => Ok(match ebpf::prepare(cfg) {
            Ok(loaded) => Chosen::Kernel(loaded),
            Err(why) => Chosen::Ptrace(Some(why)),
        }),
    }
}

/// Refuses to trace where /proc shows another PID namespace's processes (`unshare --pid`
/// without `--mount-proc`): each tracer reads a traced process's files and descriptors there
/// by pid, and those pids would name other processes.
pub fn own_proc() -> crate::Result<()> {
    let me = std::process::id().to_string();
    match std::fs::read_link("/proc/self") {
        Ok(p) if p.as_os_str() != me.as_str() => Err(crate::Error::unsupported(
            "cannot trace here",
            format!(
                "/proc is another PID namespace's (it calls iolab {}, iolab is {me} here): its pids name other processes",
                p.display()
            ),
        )
        .hint("mount a /proc of this namespace (unshare --pid --fork --mount-proc)")),
        _ => Ok(()),
    }
}

/// The note a trace by ptrace carries when the kernel tracer could not run (`why`).
pub fn fallback_note(why: &str) -> String {
    format!("traced with ptrace, not eBPF: {why}")
}
