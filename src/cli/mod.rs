//! The command line, part of the binary: clap definitions (one file per subcommand, shared
//! argument groups in [`args`]) and each subcommand's mapping to a library config, its call and
//! its output. The library knows nothing of clap's argument structs.

mod access;
mod advise;
pub mod args;
mod cache;
mod classic_net;
mod clean;
mod document;
mod eta;
mod explain;
mod stdout;
use document::Envelope;
pub use document::Enveloped;
pub use stdout::{out, output_written};
mod fast;
mod ior;
mod pollute;
mod read;
mod recv;
mod replay;
mod report;
mod rounds;
mod run;
mod run2;
mod send;
mod shell;
mod squeeze;
mod suite;
mod sweep;
mod syscalls;
mod trace;
mod transfer;
mod vm;
mod write;

use clap::{Parser, Subcommand};
use iolab::Error;
use iolab::experiments::Observer;
use iolab::experiments::host::{Host, host_facts};
use iolab::measure::interference::Probe;
use iolab::report::Format;
use std::io::IsTerminal;
use std::time::Instant;

const ABOUT: &str = "Measure, explain and exploit the ways Linux moves file data: read/pread, mmap \
with madvise, O_DIRECT and io_uring, with repeats, statistics and a verified page cache.";

/// iolab's command line.
#[derive(Debug, Parser)]
#[command(
    name = "iolab",
    version,
    about = ABOUT,
    propagate_version = true,
    arg_required_else_help = true,
    after_help = "Examples:\n  iolab suite --quick\n  iolab advise big.bin --pattern random --bs 4K\n  iolab read big.bin --method mmap --cache cold --repeat 5\n  iolab fast big.bin --explain\n  iolab man --dir ~/.local/share/man/man1\n\n'iolab COMMAND --help' has each command's options and examples."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// Progress on stderr: auto (bars on a terminal; the suite's step lines otherwise), always
    /// (also each command's steps as lines when stderr is not a terminal), never
    #[arg(long, global = true, value_enum, default_value_t = ProgressMode::Auto)]
    pub progress: ProgressMode,
    /// No progress, warnings or notes on stderr (errors still); stdout as asked
    #[arg(long, short = 'q', global = true)]
    pub quiet: bool,
}

/// When progress is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ProgressMode {
    /// Bars on a terminal; otherwise only the suite's step lines.
    Auto,
    /// As auto on a terminal; otherwise each command's steps as lines too.
    Always,
    /// None.
    Never,
}

static QUIET: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
static PROGRESS: std::sync::Mutex<ProgressMode> = std::sync::Mutex::new(ProgressMode::Auto);

/// The command line's definition, as parsed and shown: the derived one, with each command's
/// own round defaults in its help.
pub fn command() -> clap::Command {
    rounds::with_round_defaults(<Cli as clap::CommandFactory>::command())
}

/// Sets `--quiet` and `--progress` for the whole process (before the command runs).
pub fn set_output(progress: ProgressMode, quiet: bool) {
    QUIET.store(quiet, std::sync::atomic::Ordering::Relaxed);
    if let Ok(mut p) = PROGRESS.lock() {
        *p = if quiet { ProgressMode::Never } else { progress };
    }
}

/// A line of talk on stderr (a warning, a note), unless `--quiet`.
pub fn talk(line: impl std::fmt::Display) {
    if !QUIET.load(std::sync::atomic::Ordering::Relaxed) {
        eprintln!("{}", iolab::shown::line(&line.to_string()));
    }
}

/// The subcommands. Each one's description and examples sit on its argument type, in its file.
#[derive(Debug, Subcommand)]
pub enum Command {
    Suite(suite::SuiteArgs),
    Report(report::ReportArgs),
    Advise(advise::AdviseArgs),
    Run(run::RunArgs),
    Read(read::ReadArgs),
    Write(write::WriteArgs),
    Fast(fast::FastArgs),
    Access(access::AccessArgs),
    Sweep(sweep::SweepArgs),
    Run2(run2::Run2Args),
    Syscalls(syscalls::SyscallsArgs),
    Vm(vm::VmArgs),
    Send(send::SendArgs),
    Recv(recv::RecvArgs),
    Transfer(transfer::TransferArgs),
    Squeeze(squeeze::SqueezeArgs),
    Pollute(pollute::PolluteArgs),
    Ior(ior::IorArgs),
    Trace(trace::TraceArgs),
    Replay(replay::ReplayArgs),
    Explain(explain::ExplainArgs),
    Clean(clean::CleanArgs),
    Completions(shell::CompletionsArgs),
    Man(shell::ManArgs),
    /// Internal: one method of `squeeze`, run inside its memory cgroup.
    #[command(hide = true, name = "squeeze-worker")]
    SqueezeWorker(squeeze::SqueezeWorkerArgs),
    /// Internal: the traced child of `trace`, which execs the program under the seccomp filter.
    #[command(hide = true, name = "trace-exec")]
    TraceExec(trace::TraceExecArgs),
    #[command(hide = true, name = "trace-tracer")]
    TraceTracer(trace::TraceTracerArgs),
    /// Internal: one stream of `pollute`, run inside its memory cgroup.
    #[command(hide = true, name = "pollute-worker")]
    PolluteWorker(pollute::PolluteWorkerArgs),
    #[command(
        subcommand,
        after_help = "Examples:\n  iolab cache status big.bin\n  iolab cache status ~/data --map\n  iolab cache evict big.bin\n  iolab cache load big.bin\n  iolab cache meminfo --format json"
    )]
    Cache(cache::CacheCommand),
    /// The classic sender: master N f1 .. fN fcntl|mmap (port 2325).
    #[command(
        after_help = "Examples:\n  iolab master 2 a.txt b.txt mmap\n  iolab master 2 a.txt b.txt fcntl --classic-sizes\n  iolab master input.txt mmap      (the 2019 one-file form)\n\nThe course's line, Transmission time: <ms> ms, File size: <bytes> bytes: one for the run in the\nN-file (2020) form (all files' bytes, from the first connection to the last file done, as the\ncourse timed from opening its device to closing it), one per file with --per-file and in the\none-file (2019) form. iolab's are true milliseconds and bytes. Course programs that computed\n(usec difference) x 0.0001 printed milliseconds 10x too small (for runs under a second), and\nthose that printed file_size / 8 sizes 8x too small: multiply such figures by 10 and by 8\nbefore comparing.\n\nThe slave connects to port 2325; --raw serves the bytes alone, for nc or the course's own slave.\n--classic-sizes sends each 8192-byte mapped window in one call, as the course's device did."
    )]
    Master(classic_net::ClassicArgs),
    /// The classic receiver: slave N f1 .. fN fcntl|mmap IP (writes f1 .. fN).
    #[command(
        after_help = "Examples:\n  iolab slave 2 a.txt b.txt mmap 127.0.0.1\n  iolab slave 2 a.txt b.txt fcntl 127.0.0.1 --classic-sizes\n  iolab slave got.txt fcntl 127.0.0.1 -v      (the 2019 one-file form)\n  iolab slave fromnc.txt mmap 127.0.0.1 --raw      (from nc -l 127.0.0.1 2325 < file)\n\nThe course's line, Transmission time: <ms> ms, File size: <bytes> bytes: one for the run in the\nN-file (2020) form (all files' bytes, from the first connection to the last file done, as the\ncourse timed from opening its device to closing it), one per file with --per-file and in the\none-file (2019) form. iolab's are true milliseconds and bytes. Course programs that computed\n(usec difference) x 0.0001 printed milliseconds 10x too small (for runs under a second), and\nthose that printed file_size / 8 sizes 8x too small: multiply such figures by 10 and by 8\nbefore comparing."
    )]
    Slave(classic_net::ClassicArgs),
}

/// What every subcommand gets besides its arguments.
pub struct Ctx {
    /// Progress on stderr.
    pub progress: Progress,
    /// The exact command line, for the result's host facts.
    pub command_line: String,
    /// What else the machine does, sampled from the start of the command.
    pub probe: Probe,
    /// The host facts for a JSON result that carries none, when gathered ahead (see
    /// [`Ctx::with_host_ahead`]).
    host_ahead: std::sync::Mutex<Option<std::thread::JoinHandle<Host>>>,
}

impl Ctx {
    /// The context of this process.
    pub fn new() -> Ctx {
        Ctx {
            progress: Progress::new(
                std::io::stderr().is_terminal(),
                PROGRESS.lock().map_or(ProgressMode::Auto, |p| *p),
            ),
            command_line: command_line(),
            probe: Probe::start(),
            host_ahead: std::sync::Mutex::new(None),
        }
    }

    /// The context of a command timed whole process (`fast`): the host facts its JSON carries
    /// (about 0.5 ms of /proc and sysfs reads, DAMON's settings among them) are gathered on a
    /// thread of their own from the start, on the core the command leaves idle while it opens
    /// and sizes up the file, rather than after the run.
    pub fn with_host_ahead() -> Ctx {
        let ctx = Ctx::new();
        let line = ctx.command_line.clone();
        let handle = std::thread::Builder::new()
            .name("host-facts".into())
            .spawn(move || host_facts(None, &line))
            .ok();
        *ctx.host_ahead.lock().unwrap_or_else(|e| e.into_inner()) = handle;
        ctx
    }

    /// The host facts for a result that carries none: those gathered ahead if any (and their
    /// thread did not fail), else gathered now.
    fn host(&self) -> Host {
        let ahead = self
            .host_ahead
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        ahead
            .and_then(|h| h.join().ok())
            .unwrap_or_else(|| host_facts(None, &self.command_line))
    }

    /// Prints a result's warnings on stderr, then the result (see [`Ctx::emit`]).
    pub fn show<T: Enveloped>(
        &self,
        o: &args::OutputArgs,
        warnings: &[String],
        result: &T,
        doc: impl Fn() -> iolab::report::Document,
    ) -> Result<(), Error> {
        self.progress.clear();
        warn_all(warnings);
        self.emit(o, result, doc)
    }

    /// Prints a result in `--format` on stdout, and writes it in each `--export-*` format to its
    /// file (new files only): JSON is the result itself inside an [`Envelope`] (a top-level
    /// `interference` object: what else the machine was doing since the command started,
    /// `schema` and `host`), the other formats are the report `doc` makes of it, rendered
    /// ([`iolab::report::render`]). When the machine was busy a warning goes to stderr.
    pub fn emit<T: Enveloped>(
        &self,
        o: &args::OutputArgs,
        result: &T,
        doc: impl Fn() -> iolab::report::Document,
    ) -> Result<(), Error> {
        self.progress.clear();
        let interference = self.probe.finish();
        // The host facts once, for however many JSON outputs ask for them.
        let host = std::cell::OnceCell::new();
        let schema = schema_name(&self.command_line);
        let text = |format: Format| {
            let envelope = || Envelope {
                result,
                interference: &interference,
                schema: &schema,
                host: (!T::OWN_HOST).then(|| host.get_or_init(|| self.host())),
            };
            iolab::report::output(format, envelope, &doc)
        };
        out(&text(o.format));
        for (format, path) in o.exports() {
            iolab::output::save(path, text(format).as_bytes(), false)?;
        }
        // One spelling of warnings on stderr; the suite's own hint (--wait-quiet) only where
        // the command has it.
        if let Some(w) = interference.busy_line().filter(|_| T::TIMED) {
            talk(format!("iolab: warning: {w}"));
        }
        Ok(())
    }
}

/// Runs the subcommand.
pub fn dispatch(command: Command, ctx: &Ctx) -> Result<(), Error> {
    match command {
        Command::Suite(a) => a.run(ctx),
        Command::Report(a) => a.run(),
        Command::Advise(a) => a.run(ctx),
        Command::Run(a) => a.run(ctx),
        Command::Read(a) => a.run(ctx),
        Command::Write(a) => a.run(ctx),
        Command::Fast(a) => a.run(ctx),
        Command::Cache(c) => c.run(ctx),
        Command::Access(a) => a.run(ctx),
        Command::Sweep(a) => a.run(ctx),
        Command::Run2(a) => a.run(ctx),
        Command::Syscalls(a) => a.run(ctx),
        Command::Vm(a) => a.run(ctx),
        Command::Send(a) => a.run(ctx),
        Command::Recv(a) => a.run(ctx),
        Command::Master(a) => a.run_master(ctx),
        Command::Slave(a) => a.run_slave(ctx),
        Command::Transfer(a) => a.run(ctx),
        Command::Squeeze(a) => a.run(ctx),
        Command::Pollute(a) => a.run(ctx),
        Command::Ior(a) => a.run(ctx),
        Command::Trace(a) => a.run(ctx),
        Command::Replay(a) => a.run(ctx),
        Command::Explain(a) => a.run(ctx),
        Command::TraceExec(a) => a.run(),
        Command::TraceTracer(a) => a.run(),
        Command::Clean(a) => a.run(),
        Command::SqueezeWorker(a) => a.run(),
        Command::PolluteWorker(a) => a.run(),
        Command::Completions(a) => a.run(),
        Command::Man(a) => a.run(),
    }
}

/// Progress on stderr. On a terminal, indicatif bars: one for the suite (step k of n, elapsed,
/// time left) and one for the experiment under way (its count, elapsed, time left); no ticker
/// thread is started (a second thread would cost every read() the kernel's single-threaded
/// descriptor fast path), so bars move when the work reports. Otherwise (a log, CI) only the
/// suite speaks: one plain line when each step starts and one when it ends, with its duration;
/// other commands stay silent, so their stderr holds only warnings and errors.
pub struct Progress {
    tty: bool,
    mode: ProgressMode,
    state: std::sync::Mutex<ProgressBars>,
}

/// What is on screen (a terminal) or under way (a log).
#[derive(Default)]
struct ProgressBars {
    multi: Option<indicatif::MultiProgress>,
    suite: Option<indicatif::ProgressBar>,
    work: Option<indicatif::ProgressBar>,
    /// The suite's step under way and when it started.
    stage: Option<(String, Instant)>,
    /// `--progress always` off a terminal: the subject last printed and when.
    line: Option<(String, Instant)>,
    /// The measurement under way: its subject, when it started and its cap, from
    /// [`Observer::plan`].
    plan: Option<(String, Instant, Option<std::time::Duration>)>,
}

impl Progress {
    /// Progress for this stderr, as `mode` asks.
    pub fn new(tty: bool, mode: ProgressMode) -> Progress {
        Progress {
            tty,
            mode,
            state: std::sync::Mutex::new(ProgressBars::default()),
        }
    }

    /// Clears the bars, so what is printed next starts on a clean line; without a terminal,
    /// ends the suite's last step with its duration.
    pub fn clear(&self) {
        let Ok(mut bars) = self.state.lock() else {
            return;
        };
        for bar in [bars.work.take(), bars.suite.take()].into_iter().flatten() {
            bar.finish_and_clear();
        }
        if let Some(m) = bars.multi.take() {
            let _ = m.clear();
        }
        if let Some(line) = bars.stage.take().map(|s| ended_line(&s)) {
            eprintln!("{line}");
        }
    }
}

/// `4.2 s`, `3 min 5 s`.
fn human_secs(s: f64) -> String {
    if s < 60.0 {
        format!("{s:.1} s")
    } else {
        format!("{} min {} s", (s / 60.0) as u64, (s % 60.0) as u64)
    }
}

/// The plain line that ends a suite step.
fn ended_line((name, t): &(String, Instant)) -> String {
    format!(
        "iolab: {name}: done in {}",
        human_secs(t.elapsed().as_secs_f64())
    )
}

/// The plain name of suite step `k` of `n`.
fn stage_name(k: usize, n: usize, name: &str) -> String {
    format!("suite [{k}/{n}] {name}")
}

fn bar(len: usize, template: &str) -> indicatif::ProgressBar {
    let style = indicatif::ProgressStyle::with_template(template)
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar());
    indicatif::ProgressBar::with_draw_target(
        Some(len as u64),
        indicatif::ProgressDrawTarget::hidden(),
    )
    .with_style(style)
}

// No time left is shown: a rate-based guess said "about 5h left" for a suite that took 105 s
// (its steps differ by 100x in length); steps done and time elapsed are known.
const SUITE_BAR: &str = "suite: {pos} of {len} steps done, now {msg} [{bar:20}] {elapsed}";
const WORK_BAR: &str = "{msg} {pos}/{len} [{bar:20}] {elapsed}{prefix}";

impl ProgressBars {
    /// The terminal's bar set, made on first use.
    fn multi(&mut self) -> &indicatif::MultiProgress {
        self.multi.get_or_insert_with(|| {
            indicatif::MultiProgress::with_draw_target(indicatif::ProgressDrawTarget::stderr())
        })
    }
}

impl Observer for Progress {
    fn stage(&self, k: usize, n: usize, name: &str) {
        if self.mode == ProgressMode::Never {
            return;
        }
        let Ok(mut bars) = self.state.lock() else {
            return;
        };
        if self.tty {
            if bars.suite.is_none() {
                let b = bars.multi().insert(0, bar(n, SUITE_BAR));
                bars.suite = Some(b);
            }
            if let Some(b) = &bars.suite {
                b.set_message(name.to_string());
                b.set_length(n as u64);
                b.set_position(k.saturating_sub(1) as u64);
            }
            if let Some(w) = bars.work.take() {
                w.finish_and_clear();
            }
        } else {
            if let Some(line) = bars.stage.take().map(|s| ended_line(&s)) {
                eprintln!("{line}");
            }
            let stage = stage_name(k, n, name);
            eprintln!("iolab: {stage}: started");
            bars.stage = Some((stage, Instant::now()));
        }
    }

    fn note(&self, line: &str) {
        let line = format!("iolab: {line}");
        match self.state.lock().ok().and_then(|b| b.multi.clone()) {
            // Above the bars, which are drawn again below it.
            Some(m) if self.tty => m.suspend(|| talk(&line)),
            _ => talk(&line),
        }
    }

    fn plan(&self, what: &str, line: &str, cap: Option<std::time::Duration>) {
        let Ok(mut bars) = self.state.lock() else {
            return;
        };
        bars.plan = Some((what.to_string(), Instant::now(), cap));
        // A suite says its plan once, for all its steps.
        let in_suite = bars.suite.is_some() || bars.stage.is_some();
        drop(bars);
        // Off a terminal only when asked (--progress always): a log gets warnings and errors.
        let shown =
            self.tty && self.mode != ProgressMode::Never || self.mode == ProgressMode::Always;
        if shown && !in_suite {
            self.note(line);
        }
    }

    fn progress(&self, what: &str, done: usize, total: usize) {
        if self.mode == ProgressMode::Never || (!self.tty && self.mode == ProgressMode::Auto) {
            return;
        }
        let Ok(mut bars) = self.state.lock() else {
            return;
        };
        let left = bars
            .plan
            .as_ref()
            .filter(|(w, _, _)| w == what)
            .and_then(|(_, t0, cap)| eta::time_left(*t0, *cap, done, total.max(done)))
            .map(|d| format!(", about {} left", iolab::measure::secs::human(d)))
            .unwrap_or_default();
        if !self.tty {
            // A line when a subject starts or a second after the last, not one per step.
            let due = bars
                .line
                .as_ref()
                .is_none_or(|(w, t)| w != what || t.elapsed().as_secs_f64() >= 1.0);
            if due {
                eprintln!("iolab: {what}: {done} of {total}{left}");
                bars.line = Some((what.to_string(), Instant::now()));
            }
            return;
        }
        if bars.work.is_none() {
            let b = bars.multi().add(bar(total, WORK_BAR));
            bars.work = Some(b);
        }
        if let Some(b) = &bars.work {
            // A new subject starts its own clock; the length goes before the count, so a count
            // is never shown beyond its total.
            if b.message() != what {
                b.reset();
                b.set_message(what.to_string());
            }
            b.set_length(total.max(done) as u64);
            b.set_position(done as u64);
            b.set_prefix(left);
        }
        if let Some(s) = &bars.suite {
            s.tick();
        }
    }
}

/// `iolab-read/1`, `iolab-cache-status/1`: the command's words before its first argument.
fn schema_name(command_line: &str) -> String {
    let words: Vec<&str> = command_line
        .split_whitespace()
        .skip(1)
        .take_while(|w| {
            w.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
                && !w.starts_with('-')
        })
        .take(2)
        .collect();
    let name = match words.as_slice() {
        ["cache", sub, ..] => format!("cache-{sub}"),
        [cmd, ..] => cmd.to_string(),
        [] => "unknown".into(),
    };
    format!("iolab-{name}/1")
}

fn command_line() -> String {
    std::env::args_os()
        .map(|a| iolab::shown::word(&a))
        .collect::<Vec<_>>()
        .join(" ")
}

/// A hidden worker subcommand (`squeeze-worker`, `pollute-worker`): its configuration from the
/// JSON argument, then `run` with "go" from stdin and JSON lines to stdout. The parent ends it on
/// Ctrl-C and removes its group, so it ignores interrupts and has nothing to clean.
pub fn run_worker<C: serde::de::DeserializeOwned>(
    name: &str,
    config: &str,
    run: impl FnOnce(&C, &mut dyn std::io::BufRead, &mut dyn std::io::Write) -> Result<(), Error>,
) -> Result<(), Error> {
    let _ = iolab::sys::cleanup::ignore_interrupts();
    let cfg: C = serde_json::from_str(config)
        .map_err(|e| usage(format!("{name}: invalid configuration: {e}")))?;
    let stdin = std::io::stdin();
    let stdout = std::io::stdout();
    run(&cfg, &mut stdin.lock(), &mut stdout.lock())
}

/// Each warning as one line on stderr.
pub fn warn_all(warnings: &[String]) {
    for w in warnings {
        talk(format!("iolab: warning: {w}"));
    }
}

/// Refuses an existing `--plot` file (without `--force`) before minutes of measuring, not after.
pub fn refuse_plot(plot: &Option<std::path::PathBuf>, force: bool) -> Result<(), Error> {
    match plot {
        Some(p) => iolab::output::refuse_existing(p, force),
        None => Ok(()),
    }
}

/// Writes the plot `--plot` asks for, if any.
pub fn save_plot(
    plot: &Option<std::path::PathBuf>,
    force: bool,
    svg: impl FnOnce() -> String,
) -> Result<(), Error> {
    match plot {
        Some(p) => iolab::output::save(p, svg().as_bytes(), force),
        None => Ok(()),
    }
}

/// iolab's own program, for experiments that run parts of themselves in a child process.
pub fn own_program() -> Result<std::path::PathBuf, Error> {
    std::env::current_exe()
        .map_err(|e| Error::failed("cannot find iolab's own program", e.to_string()))
}

/// A usage error (exit 2) from a config mapping's message.
pub fn usage(msg: String) -> Error {
    Error::usage("usage", msg)
}

#[cfg(test)]
mod layers;
#[cfg(test)]
mod lengths;
#[cfg(test)]
mod tests;
