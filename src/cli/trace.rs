//! `iolab trace -- CMD`: run a program and record its file I/O.

use super::Ctx;
use clap::Args;
use iolab::Error;
use iolab::report::{self, Format};
use iolab::trace::{self, TraceConfig};
use std::ffi::OsString;
use std::path::PathBuf;

/// Run a program and record its file I/O: per file the bytes asked and read, re-reads, sequential
/// share, request sizes, residency before and after, page faults on its mappings; the kernel's
/// own counts beside; what its time went to and what to change. No root needed (without it,
/// ptrace instead of the kernel tracer).
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  iolab trace -- sha256sum big.bin\n  iolab trace --advise -- python3 load.py\n  iolab trace --out rg.trace.json -- rg -c fn ~/src\n  iolab trace --overhead 3 -- sqlite3 db.sqlite 'select count(*) from t'\n  iolab trace --fio-iolog cat.iolog -- cat big.bin > /dev/null\n  iolab trace --svg tar.svg -- tar czf src.tgz src\n  iolab trace --tracer ptrace -- rg -c fn ~/src\n  iolab trace --pid 4321 --seconds 10 --out dd.trace.json\n  iolab trace --cgroup /sys/fs/cgroup/memory/db --seconds 30\n  fio --name=replay --readonly --read_iolog=cat.iolog --ioengine=psync\n\nThe program's stdin, stdout, stderr and exit code pass through unchanged; the profile goes to\nstderr (or --profile FILE). As root (or with CAP_BPF+CAP_PERFMON) it traces with eBPF probes on\nthe kernel's tracepoints and the program runs on unstopped; otherwise it says why in one line and\nstops the program at the calls it times (ptrace with a seccomp filter), sampling its page faults\nwith a perf event (perf_event_paranoid <= 2). Not seen:\nO_DIRECT device access by other programs. Ctrl-C (SIGTERM, SIGHUP) stops the program and\nkeeps what was recorded. trace ends with the program, as a shell does; what it left running\n(a daemon) runs on unrecorded, unless --follow. A command that cannot run: 127 / 126."
)]
pub struct TraceArgs {
    /// Write the trace (versioned JSON, docs/trace.md) for `iolab replay` (a new file unless --force)
    #[arg(long, short = 'o', value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Write the profile in --format to FILE instead of stderr
    #[arg(long, value_name = "FILE")]
    pub profile: Option<PathBuf>,
    /// Write the timeline (MiB/s of file reads, writes, mapped pages, pipes against time) as
    /// an SVG plot to FILE
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    /// The profile's format
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Write fio's iolog version 3 of the file reads, for fio --read_iolog (the program's
    /// writes are left out: see --fio-iolog-writes)
    #[arg(long, value_name = "FILE")]
    pub fio_iolog: Option<PathBuf>,
    /// Keep the program's writes and syncs in --fio-iolog. fio performs them with its own
    /// buffer contents: replaying it OVERWRITES those ranges of the program's files (its
    /// outputs, a database updated in place). Only for copies of the files
    #[arg(long, requires = "fio_iolog")]
    pub fio_iolog_writes: bool,
    /// Do not sample page faults (mapped access then shows only as mmap calls)
    #[arg(long)]
    pub no_faults: bool,
    /// Do not re-read the bytes the program read to record their XOR afterwards
    #[arg(long, conflicts_with = "xor")]
    pub no_xor: bool,
    /// Re-read the bytes the program read to record their XOR afterwards even when the trace is
    /// not kept (by default only with --out, --format json or --advise: a replay checks its
    /// reads against them; a profile on the terminal does not need them, and re-reading
    /// what a program read can take a good part of its own time)
    #[arg(long)]
    pub xor: bool,
    /// Do not stop at stat and getdents calls (lower overhead for a program that walks
    /// directories; its metadata time is then not seen)
    #[arg(long)]
    pub no_metadata: bool,
    /// Files in the profile's table
    #[arg(long, default_value_t = 20, value_name = "N")]
    pub files: usize,
    /// Then run the program N more times untraced and traced, interleaved, its output discarded,
    /// and print the tracing overhead (it must be safe to run again)
    #[arg(long, value_name = "N")]
    pub overhead: Option<usize>,
    /// Then measure the advice's changes on this machine: replay the program's reads with each
    /// change against the reads as recorded, within BUDGET (default 30s), and put the gain with
    /// its interval on the advice
    #[arg(long, value_name = "BUDGET", num_args = 0..=1, default_missing_value = "30s", value_parser = super::args::duration)]
    pub advise: Option<std::time::Duration>,
    /// Replace existing output files
    #[arg(long)]
    pub force: bool,
    /// Wait for every process the program started, daemons too (by default trace ends with the
    /// program, as a shell does, and what it left running runs on unrecorded)
    #[arg(long)]
    pub follow: bool,
    /// Which tracer: ptrace (stops the program at each traced call; no rights needed), ebpf
    /// (probes on the kernel's tracepoints: the program runs on; root or CAP_BPF+CAP_PERFMON),
    /// auto (ebpf where it can run, else ptrace, saying why)
    #[arg(long, value_enum, default_value_t = TracerArg::Auto)]
    pub tracer: TracerArg,
    /// Trace a running process instead of a command, with the processes it had started that
    /// still run (a server's workers) and what they start from then on, until --seconds pass,
    /// Ctrl-C, or it ends; none is stopped or signalled. Always the eBPF
    /// tracer (root or CAP_BPF+CAP_PERFMON); what it did before is not in the trace
    #[arg(long, value_name = "PID", conflicts_with_all = ["command", "overhead", "follow", "cgroup"])]
    pub pid: Option<u32>,
    /// As --pid, for every process of a cgroup (its folder, such as
    /// /sys/fs/cgroup/memory/NAME) and what they start; processes that join it later are not
    /// followed
    #[arg(long, value_name = "DIR", conflicts_with_all = ["command", "overhead", "follow"])]
    pub cgroup: Option<PathBuf>,
    /// With --pid or --cgroup: how long to trace, in seconds (default: until Ctrl-C or the
    /// processes end)
    #[arg(long, value_name = "N")]
    pub seconds: Option<f64>,
    /// The program and its arguments (after --)
    #[arg(
        required_unless_present_any = ["pid", "cgroup"],
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "CMD"
    )]
    pub command: Vec<OsString>,
}

impl TraceArgs {
    /// Runs it; exits with the program's exit code.
    pub fn run(self, ctx: &Ctx) -> Result<(), Error> {
        // Every output is proved writable before the program runs: a run is not to be repeated
        // for a typo in a path.
        for p in [&self.out, &self.profile, &self.fio_iolog, &self.svg]
            .into_iter()
            .flatten()
        {
            iolab::output::check_can_create(p, self.force)?;
        }
        if self.format == Format::Csv {
            return Err(super::usage(
                "trace: --format csv has no single table; use text, markdown or json".into(),
            ));
        }
        let _ = iolab::sys::cleanup::note_interrupts();
        let mut cfg = self.config()?;
        let target = self.target()?;
        let t = self.record(&mut cfg, target.as_ref())?;
        let name = self
            .out
            .clone()
            .unwrap_or_else(|| PathBuf::from("(the trace)"));
        let p = super::explain::explained(&t, &name, self.advise, ctx)?;
        let overhead = match self
            .overhead
            .filter(|_| !t.interrupted && !iolab::sys::interrupted())
        {
            Some(n) => Some(trace::overhead::overhead(
                &cfg,
                n,
                &iolab::sys::interrupted,
            )?),
            None => None,
        };
        let text = self.profile_text(&p, overhead.as_ref());
        let failed = self.write_outputs(&t, &p, &text);
        // On a terminal's stderr, after a profile in words (not into a JSON profile's stream).
        if self.out.is_none() && self.format == Format::Text {
            super::talk(
                "iolab: note: the trace itself was not kept: --out FILE.json keeps it for `iolab replay FILE.json`",
            );
        }
        if let Some(o) = overhead.as_ref().filter(|o| o.interrupted) {
            super::talk(format!(
                "iolab: note: --overhead interrupted after {} complete round(s)",
                o.traced_s.len()
            ));
        }
        for e in &failed {
            eprintln!("iolab: {}", iolab::shown::line(&e.to_string()));
        }
        // The program's exit code, as a shell gives it; 1 for a lost output of a program that
        // succeeded. A process attached to is not iolab's: its end is in the profile.
        let code = match if target.is_some() {
            0
        } else {
            t.ended.shell_code()
        } {
            0 if !failed.is_empty() => 1,
            c => c,
        };
        // The trace and its profile are not freed piece by piece before the exit, which
        // returns their memory whole: rg's 400,000 calls over 73,000 files took 40 ms to free.
        std::mem::forget(t);
        std::mem::forget(p);
        if code != 0 {
            std::process::exit(code);
        }
        Ok(())
    }

    /// The tracer's configuration from the arguments.
    fn config(&self) -> Result<TraceConfig, Error> {
        Ok(TraceConfig {
            command: self.command.clone(),
            launcher: super::own_program()?,
            faults: !self.no_faults,
            xor: !self.no_xor
                && (self.xor
                    || self.out.is_some()
                    || self.advise.is_some()
                    || self.format == Format::Json),
            metadata: !self.no_metadata,
            quiet: false,
            tracer: self.tracer.into(),
        })
    }

    /// The running process or cgroup to attach to (None: a command to run).
    fn target(&self) -> Result<Option<trace::Target>, Error> {
        Ok(match (self.pid, &self.cgroup) {
            (Some(pid), _) => {
                if !std::path::Path::new(&format!("/proc/{pid}")).exists() || pid == 0 {
                    return Err(super::usage(format!("trace: --pid {pid}: no such process")));
                }
                Some(trace::Target::Pid(pid))
            }
            (None, Some(dir)) => Some(trace::Target::Cgroup(dir.clone())),
            (None, None) => {
                if self.seconds.is_some() {
                    return Err(super::usage(
                        "trace: --seconds is for --pid or --cgroup (a command is traced until it ends)".into(),
                    ));
                }
                None
            }
        })
    }

    /// The trace: of `target` for --seconds, or of the command until it ends (by the tracer
    /// chosen, `cfg.tracer` set to it).
    fn record(
        &self,
        cfg: &mut TraceConfig,
        target: Option<&trace::Target>,
    ) -> Result<trace::Trace, Error> {
        if let Some(target) = target {
            let limit = match self.seconds {
                Some(s) if s.is_finite() && s > 0.0 && s < 1e9 => {
                    Some(std::time::Duration::from_secs_f64(s))
                }
                Some(s) => {
                    return Err(super::usage(format!(
                        "trace: --seconds {s}: give a positive number of seconds"
                    )));
                }
                None => None,
            };
            let who = match target {
                trace::Target::Pid(pid) => format!("process {pid}"),
                trace::Target::Cgroup(dir) => format!("cgroup {}", dir.display()),
            };
            let announce = || {
                super::talk(format!(
                    "iolab: tracing {who} {} (Ctrl-C stops the trace, not the process)",
                    limit.map_or("until it ends".to_string(), |l| format!(
                        "for {} s or until it ends",
                        l.as_secs_f64()
                    ))
                ));
            };
            return trace::attach(cfg, target, limit, &iolab::sys::interrupted, &announce);
        }
        Ok(match trace::choose(cfg)? {
            // The kernel tracer holds nothing the program's processes need: it runs here,
            // and what the program leaves running runs on untraced (unless --follow).
            trace::Chosen::Kernel(loaded) => {
                cfg.tracer = trace::TracerChoice::Ebpf;
                loaded.run(cfg, &iolab::sys::interrupted, self.follow)?
            }
            trace::Chosen::Ptrace(why) => {
                cfg.tracer = trace::TracerChoice::Ptrace;
                let mut t = if self.follow {
                    trace::run(cfg, &iolab::sys::interrupted)?
                } else {
                    traced_by_helper(cfg)?
                };
                if let Some(why) = why {
                    let note = trace::fallback_note(&why);
                    super::talk(format!("iolab: note: {note}"));
                    t.notes.insert(0, note);
                }
                t
            }
        })
    }

    /// The profile in --format. JSON: the profile with the overhead rounds beside it; text and
    /// Markdown: the overhead in a line under the profile.
    fn profile_text(
        &self,
        p: &trace::profile::Profile,
        overhead: Option<&trace::overhead::Overhead>,
    ) -> String {
        report::output(
            self.format,
            || ProfileWithOverhead {
                profile: p,
                overhead,
            },
            || {
                report::trace::profile_document(p, self.files).para(overhead.filter(|o| !o.traced_s.is_empty()).map_or_else(String::new, |o| {
                    format!(
                        "tracing overhead: traced/untraced wall time {:.2}x (min {:.2}, max {:.2}, {} interleaved rounds; untraced median {:.3} s)",
                        o.ratio,
                        o.ratio_min,
                        o.ratio_max,
                        o.traced_s.len(),
                        iolab::measure::stats::summarize(&o.untraced_s).median
                    )
                }))
            },
        )
    }

    /// Writes each output on its own: one that cannot be written (a full disk) loses neither
    /// the others, nor the profile (then on stderr), nor the program's exit code. The errors.
    fn write_outputs(
        &self,
        t: &trace::Trace,
        p: &trace::profile::Profile,
        text: &str,
    ) -> Vec<Error> {
        let mut failed: Vec<Error> = Vec::new();
        if let Some(path) = &self.out
            && let Err(e) = iolab::output::save(path, report::json(t).as_bytes(), self.force)
        {
            failed.push(e);
        }
        if let Some(path) = &self.svg {
            let plot = report::trace::timeline_svg(&p.timeline, &t.command.join(" "));
            if let Err(e) = iolab::output::save(path, plot.as_bytes(), self.force) {
                failed.push(e);
            }
        }
        if let Some(path) = &self.fio_iolog {
            let writes = if self.fio_iolog_writes {
                trace::iolog::Writes::Keep
            } else {
                trace::iolog::Writes::LeaveOut
            };
            let log = trace::iolog::iolog(t, writes);
            match iolab::output::save(path, log.text.as_bytes(), self.force) {
                Ok(()) => {
                    for l in &log.left_out {
                        super::talk(format!("iolab: note: fio iolog: left out {l}"));
                    }
                }
                Err(e) => failed.push(e),
            }
        }
        match &self.profile {
            Some(path) => {
                if let Err(e) = iolab::output::save(path, text.as_bytes(), self.force) {
                    failed.push(e);
                    super::talk(text.trim_end());
                }
            }
            None => super::talk(text.trim_end()),
        }
        failed
    }
}

/// The trace of `cfg.command` from a helper process (`iolab trace-tracer`) that traces it and
/// hands the trace over as soon as the program ends, then stays, out of the way, as the tracer
/// of whatever the program left running (a daemon's file calls need their tracer) until that
/// ends: so this command ends with the program, as a shell would. A helper that fails says why
/// itself; its exit code is then this command's.
fn traced_by_helper(cfg: &TraceConfig) -> Result<trace::Trace, Error> {
    use std::io::Read;
    let (r, w) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)
        .map_err(|e| Error::failed("cannot make a pipe", e.to_string()))?;
    let mut cmd = std::process::Command::new(&cfg.launcher);
    cmd.arg("trace-tracer");
    if !cfg.faults {
        cmd.arg("--no-faults");
    }
    if !cfg.xor {
        cmd.arg("--no-xor");
    }
    if !cfg.metadata {
        cmd.arg("--no-metadata");
    }
    // Its descriptor for the trace is the write end's number here, inherited.
    cmd.arg("--result-fd")
        .arg(std::os::fd::AsRawFd::as_raw_fd(&w).to_string());
    cmd.arg("--").args(&cfg.command);
    let (mut helper, _) = iolab::sys::spawn_with_fd(&mut cmd, std::os::fd::AsFd::as_fd(&w))
        .map_err(|e| Error::failed("cannot start the tracer", e.to_string()))?;
    drop(w);
    // Read until the helper closes its end; a signal to this process alone (kill -INT PID) is
    // passed on to the helper, which stops the program as it would itself.
    let mut bytes = Vec::new();
    let mut r = std::fs::File::from(r);
    let mut chunk = vec![0u8; 1 << 16];
    let mut passed_on = false;
    loop {
        if let (false, Some(sig)) = (passed_on, iolab::sys::interrupting_signal()) {
            let _ = iolab::sys::ptrace::kill(helper.id() as i32, sig);
            passed_on = true;
        }
        match r.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => bytes.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => {
                return Err(Error::failed(
                    "cannot read the trace from the tracer",
                    e.to_string(),
                ));
            }
        }
    }
    if bytes.is_empty() {
        let st = helper.wait();
        std::process::exit(st.ok().and_then(|s| s.code()).unwrap_or(1));
    }
    // Reaped now if it had nothing left to serve; else it outlives this command.
    let _ = helper.try_wait();
    serde_json::from_slice(&bytes)
        .map_err(|e| Error::failed("the tracer's trace is unreadable", e.to_string()))
}

/// The tracer helper of `iolab trace` (without --follow): traces the command, writes the trace as
/// JSON to the descriptor its parent handed over when the program ends, then serves what it
/// left running.
#[derive(Debug, Args)]
pub struct TraceTracerArgs {
    /// The descriptor to write the trace to
    #[arg(long, value_name = "FD")]
    pub result_fd: i32,
    /// Do not sample page faults
    #[arg(long)]
    pub no_faults: bool,
    /// Do not re-read the bytes the program read for their XOR
    #[arg(long)]
    pub no_xor: bool,
    /// Do not stop at stat and getdents calls
    #[arg(long)]
    pub no_metadata: bool,
    /// The program and its arguments
    #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
    pub command: Vec<OsString>,
}

impl TraceTracerArgs {
    /// Traces, hands the trace over, serves the rest.
    pub fn run(self) -> Result<(), Error> {
        use std::io::Write;
        let Some(mut out) = iolab::sys::take_fd(self.result_fd) else {
            return Err(Error::usage(
                "trace-tracer",
                "an internal command of iolab trace: its --result-fd is not open",
            ));
        };
        let _ = iolab::sys::cleanup::note_interrupts();
        let cfg = TraceConfig {
            command: self.command,
            launcher: super::own_program()?,
            faults: !self.no_faults,
            xor: !self.no_xor,
            metadata: !self.no_metadata,
            quiet: false,
            tracer: trace::TracerChoice::Ptrace,
        };
        let (t, lingering) = trace::run_for(&cfg, &iolab::sys::interrupted, false)?;
        out.write_all(report::json(&t).as_bytes())
            .map_err(|e| Error::failed("cannot hand the trace over", e.to_string()))?;
        drop(out);
        if !lingering.is_empty() {
            // Out of the way: the user's command has ended; what it left running keeps its
            // tracer, which holds none of that command's terminal or pipes.
            let _ = iolab::sys::cleanup::ignore_interrupts();
            let _ = iolab::sys::stdio_to_null();
            lingering.serve();
        }
        Ok(())
    }
}

/// Which tracer `iolab trace` uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TracerArg {
    /// eBPF where it can run, else ptrace
    Auto,
    /// eBPF probes on the kernel's tracepoints
    Ebpf,
    /// ptrace with a seccomp filter
    Ptrace,
    /// for measuring the probes' cost: attached, recording nothing
    #[value(hide = true)]
    EbpfAttached,
    /// for measuring the probes' cost: every call timed only, none recorded
    #[value(hide = true)]
    EbpfSums,
}

impl From<TracerArg> for trace::TracerChoice {
    fn from(a: TracerArg) -> Self {
        match a {
            TracerArg::Auto => trace::TracerChoice::Auto,
            TracerArg::Ebpf => trace::TracerChoice::Ebpf,
            TracerArg::Ptrace => trace::TracerChoice::Ptrace,
            TracerArg::EbpfAttached => trace::TracerChoice::Floor(trace::ProbeFloor::Attached),
            TracerArg::EbpfSums => trace::TracerChoice::Floor(trace::ProbeFloor::Sums),
        }
    }
}

/// The traced child's first program: installs the seccomp filter (the tracer is attached by now)
/// and execs the command; for the kernel tracer, stops itself until the probes follow it.
#[derive(Debug, Args)]
pub struct TraceExecArgs {
    /// Do not stop at stat and getdents calls
    #[arg(long)]
    pub no_metadata: bool,
    /// No filter: stop (SIGSTOP) until the kernel tracer has added this process, then exec
    #[arg(long)]
    pub stop_first: bool,
    /// The program and its arguments
    #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
    pub command: Vec<OsString>,
}

impl TraceExecArgs {
    /// Execs the command under the filter; returns only on failure.
    pub fn run(self) -> Result<(), Error> {
        use std::os::unix::process::CommandExt;
        if self.stop_first {
            iolab::sys::ptrace::stop_self()
                .map_err(|e| Error::failed("cannot wait for the tracer", e.to_string()))?;
        } else {
            let filter = iolab::trace::calls::filter(!self.no_metadata)
                .map_err(|e| Error::unsupported("cannot build the seccomp filter", e))?;
            seccompiler::apply_filter(&filter).map_err(|e| {
                Error::unsupported("cannot install the seccomp filter", e.to_string())
            })?;
            // What a traced call costs, measured by the tracer on these before the program runs.
            iolab::trace::calibrate();
        }
        let program = &self.command[0];
        let e = std::process::Command::new(program)
            .args(&self.command[1..])
            .exec();
        // A shell's codes: 127 for nothing to run there, 126 for what cannot be run.
        let kind = match e.raw_os_error() {
            Some(libc::ENOENT) => iolab::ErrorKind::NotFound,
            _ => iolab::ErrorKind::NotExecutable,
        };
        Err(Error::new(
            kind,
            format!("cannot run {}", iolab::shown::name(program)),
            iolab::error::describe_io(&e),
        ))
    }
}

/// The profile as JSON, with the overhead rounds when they were asked for.
#[derive(serde::Serialize, schemars::JsonSchema)]
struct ProfileWithOverhead<'a> {
    #[serde(flatten)]
    profile: &'a trace::profile::Profile,
    #[serde(skip_serializing_if = "Option::is_none")]
    overhead: Option<&'a trace::overhead::Overhead>,
}
