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
/// own counts beside. No root needed.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  iolab trace -- sha256sum big.bin\n  iolab trace --out rg.trace.json -- rg -c fn ~/src\n  iolab trace --overhead 3 -- sqlite3 db.sqlite 'select count(*) from t'\n  iolab trace --fio-iolog cat.iolog -- cat big.bin > /dev/null\n  fio --name=replay --read_iolog=cat.iolog --ioengine=psync\n\nThe program's stdin, stdout, stderr and exit code pass through unchanged; the profile goes to\nstderr (or --profile FILE). It stops the program at its file system calls only (ptrace with a\nseccomp filter) and samples its page faults with a perf event (perf_event_paranoid <= 2).\nNot seen: reads and writes submitted through io_uring (said when the program uses it), and\nO_DIRECT device access by other programs. Ctrl-C stops the program and keeps what was\nrecorded."
)]
pub struct TraceArgs {
    /// Write the trace (versioned JSON, docs/trace.md) for `iolab replay` (a new file unless --force)
    #[arg(long, short = 'o', value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Write the profile in --format to FILE instead of stderr
    #[arg(long, value_name = "FILE")]
    pub profile: Option<PathBuf>,
    /// The profile's format
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Write fio's iolog version 3 of the file reads and writes, for fio --read_iolog
    #[arg(long, value_name = "FILE")]
    pub fio_iolog: Option<PathBuf>,
    /// Do not sample page faults (mapped access then shows only as mmap calls)
    #[arg(long)]
    pub no_faults: bool,
    /// Do not re-read the bytes the program read to record their XOR afterwards
    #[arg(long)]
    pub no_xor: bool,
    /// Files in the profile's table
    #[arg(long, default_value_t = 20, value_name = "N")]
    pub files: usize,
    /// Then run the program N more times untraced and traced, interleaved, its output discarded,
    /// and print the tracing overhead (it must be safe to run again)
    #[arg(long, value_name = "N")]
    pub overhead: Option<usize>,
    /// Replace existing output files
    #[arg(long)]
    pub force: bool,
    /// The program and its arguments (after --)
    #[arg(
        required = true,
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "CMD"
    )]
    pub command: Vec<OsString>,
}

impl TraceArgs {
    /// Runs it; exits with the program's exit code.
    pub fn run(self, _ctx: &Ctx) -> Result<(), Error> {
        for p in [&self.out, &self.profile, &self.fio_iolog]
            .into_iter()
            .flatten()
        {
            iolab::output::refuse_existing(p, self.force)?;
        }
        if self.format == Format::Csv {
            return Err(super::usage(
                "trace: --format csv has no single table; use text, markdown or json".into(),
            ));
        }
        let _ = iolab::sys::cleanup::note_interrupts();
        let launcher = super::own_program()?;
        let cfg = TraceConfig {
            command: self.command.clone(),
            launcher,
            faults: !self.no_faults,
            xor: !self.no_xor,
            quiet: false,
        };
        let t = trace::run(&cfg, &iolab::sys::interrupted)?;
        let p = trace::profile::profile(&t);
        let overhead = match self.overhead.filter(|_| !t.interrupted) {
            Some(n) => Some(trace::overhead::overhead(&cfg, n)?),
            None => None,
        };
        // JSON: the profile with the overhead rounds beside it; text and Markdown: the overhead
        // in a line under the profile.
        let text = report::output(
            self.format,
            || ProfileWithOverhead {
                profile: &p,
                overhead: overhead.as_ref(),
            },
            || {
                report::trace::profile_document(&p, self.files).para(overhead.as_ref().map_or_else(String::new, |o| {
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
        );
        if let Some(path) = &self.out {
            iolab::output::save(path, report::json(&t).as_bytes(), self.force)?;
        }
        if let Some(path) = &self.fio_iolog {
            let log = trace::iolog::iolog(&t);
            iolab::output::save(path, log.text.as_bytes(), self.force)?;
            for l in &log.left_out {
                super::talk(format!("iolab: note: fio iolog: left out {l}"));
            }
        }
        match &self.profile {
            Some(path) => iolab::output::save(path, text.as_bytes(), self.force)?,
            None => super::talk(text.trim_end()),
        }
        let code = t.ended.shell_code();
        if code != 0 {
            std::process::exit(code);
        }
        Ok(())
    }
}

/// The traced child's first program: installs the seccomp filter (the tracer is attached by now)
/// and execs the command.
#[derive(Debug, Args)]
pub struct TraceExecArgs {
    /// The program and its arguments
    #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
    pub command: Vec<OsString>,
}

impl TraceExecArgs {
    /// Execs the command under the filter; returns only on failure.
    pub fn run(self) -> Result<(), Error> {
        use std::os::unix::process::CommandExt;
        let filter = iolab::trace::calls::filter()
            .map_err(|e| Error::unsupported("cannot build the seccomp filter", e))?;
        seccompiler::apply_filter(&filter)
            .map_err(|e| Error::unsupported("cannot install the seccomp filter", e.to_string()))?;
        let program = &self.command[0];
        let e = std::process::Command::new(program)
            .args(&self.command[1..])
            .exec();
        Err(Error::failed(
            format!("cannot run {}", program.to_string_lossy()),
            iolab::error::describe_io(&e),
        ))
    }
}

/// The profile as JSON, with the overhead rounds when they were asked for.
#[derive(serde::Serialize)]
struct ProfileWithOverhead<'a> {
    #[serde(flatten)]
    profile: &'a trace::profile::Profile,
    #[serde(skip_serializing_if = "Option::is_none")]
    overhead: Option<&'a trace::overhead::Overhead>,
}
