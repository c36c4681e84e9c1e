//! The iolab binary: parse, dispatch, print, exit code. Results go to stdout, talk to stderr.

use clap::Parser;
use clap::error::ErrorKind as ClapKind;
use iolab::cli::{Cli, Command};
use iolab::experiments::{
    Observer, access, cache_cmd, classic, fast, read, run2, sweep, syscalls, transfer, vm, write,
};
use iolab::report::{self, Format};
use iolab::transfer::{receiver, sender};
use iolab::{Error, xor};
use std::io::{IsTerminal, Write};

/// Progress on stderr, only when a person is watching.
struct Progress {
    tty: bool,
}

impl Observer for Progress {
    fn progress(&self, what: &str, done: usize, total: usize) {
        if self.tty {
            eprint!(
                "\r{what}: run {done} of {total}{}",
                if done == total { "\r\x1b[K" } else { "" }
            );
        }
    }
}

fn command_line() -> String {
    std::env::args()
        .map(|a| {
            if a.contains(' ') || a.is_empty() {
                format!("'{a}'")
            } else {
                a
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn out(text: &str) {
    // A closed stdout (e.g. `| head`) is not an error worth a message.
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
}

fn warn_all(warnings: &[String]) {
    for w in warnings {
        eprintln!("iolab: warning: {w}");
    }
}

fn usage(msg: String) -> Error {
    Error::usage("usage", msg)
}

fn dispatch(cli: Cli) -> Result<(), Error> {
    let progress = Progress {
        tty: std::io::stderr().is_terminal(),
    };
    match cli.command {
        Command::Run(a) => {
            let cfg = a.config().map_err(usage)?;
            let r = classic::run_classic(&cfg)?;
            warn_all(&r.notes);
            match Format::from(a.format) {
                Format::Json => out(&report::json(&r)),
                _ => out(&report::classic::run_lines(&r)),
            }
        }
        Command::Read(a) => {
            let cfg = a.config().map_err(usage)?;
            let r = read::run_read(&cfg, &command_line(), &progress)?;
            warn_all(&r.warnings);
            out(&report::runs::read_report(&r, a.format.into()));
        }
        Command::Write(a) => {
            let cfg = a.config().map_err(usage)?;
            let r = write::run_write(&cfg, &command_line(), &progress)?;
            warn_all(&r.warnings);
            out(&report::runs::write_report(&r, a.format.into()));
        }
        Command::Fast(a) => {
            let r = fast::run_fast(&a.config())?;
            eprintln!("{}", report::classic::fast_talk(&r));
            match Format::from(a.format) {
                Format::Json => out(&report::json(&r)),
                _ => out(&format!("Xor value is {}\n", xor::format_xor(r.xor))),
            }
        }
        Command::Access(a) => {
            let cfg = a.config().map_err(usage)?;
            let r = access::run_access(&cfg, &command_line(), &progress)?;
            warn_all(&r.warnings);
            if a.is_classic() && Format::from(a.format) == Format::Text {
                out(&report::access::classic_lines(&r));
            }
            out(&report::access::access_report(&r, a.format.into()));
        }
        Command::Sweep(a) => {
            let cfg = a.config().map_err(usage)?;
            if let Some(plot) = &a.plot
                && !a.force
                && plot.exists()
            {
                return Err(iolab::output::save(plot, b"", false).unwrap_err());
            }
            let r = sweep::run_sweep(&cfg, &command_line(), &progress)?;
            warn_all(&r.warnings);
            if let Some(plot) = &a.plot {
                iolab::output::save(plot, report::sweep::sweep_plot(&r).as_bytes(), a.force)?;
            }
            out(&report::sweep::sweep_report(&r, a.format.into()));
        }
        Command::Run2(a) => {
            if a.block_size == 0 {
                return Err(usage(
                    "invalid block size: it must be at least 1 byte".into(),
                ));
            }
            let r = run2::run_run2(&a.config(), &progress)?;
            match Format::from(a.format) {
                Format::Json => out(&report::json(&r)),
                _ => out(&report::classic::run2_lines(&r)),
            }
        }
        Command::Syscalls(a) => {
            let r =
                syscalls::run_syscalls(a.file.as_deref(), a.samples, &command_line(), &progress)?;
            out(&report::syscalls::syscalls_report(&r, a.format.into()));
        }
        Command::Vm(a) => {
            if let Some(size) = a.create {
                vm::create_file(&a.file, size, a.force)?;
            }
            let r = vm::run_vm(&a.config())?;
            out(&report::vm::vm_report(&r, a.format.into()));
        }
        Command::Suite(a) => suite_main(&a, &progress)?,
        Command::Advise(a) => {
            let r = iolab::experiments::advise::run_advise(
                &a.file,
                a.pattern,
                a.bs,
                a.threads,
                &command_line(),
                &progress,
            )?;
            warn_all(&r.measured.warnings);
            out(&report::access::advise_report(&r, a.format.into()));
        }
        Command::Report(a) => {
            let results = a
                .results
                .iter()
                .map(|p| iolab::report::suite::load(p))
                .collect::<Result<Vec<_>, _>>()?
                .into_iter()
                .flatten()
                .collect::<Vec<_>>();
            let dir = save_report(&a.out, &results, a.force)?;
            out(&format!("report: {}\n", dir.join("report.html").display()));
        }
        Command::Send(a) => {
            let (addr, cfg) = a.config().map_err(usage)?;
            serve(addr, &cfg, a.net.format.into())?;
        }
        Command::Master(a) => {
            let (addr, cfg) = a.master().map_err(usage)?;
            serve(addr, &cfg, a.net.format.into())?;
        }
        Command::Recv(a) => {
            let r = receiver::receive(&a.config())?;
            out(&report::transfer::side_report(&r, a.net.format.into()));
        }
        Command::Slave(a) => {
            let r = receiver::receive(&a.slave().map_err(usage)?)?;
            out(&report::transfer::side_report(&r, a.net.format.into()));
        }
        Command::Transfer(a) => {
            let r = transfer::run_transfer(&a.config(), &command_line(), &progress)?;
            out(&report::transfer::matrix(&r, a.format.into()));
        }
        Command::Cache(c) => match (c.parts(), &c) {
            (Some((action, files)), _) => {
                let width = files.map.then_some(files.width);
                let r = cache_cmd::run_cache(action, &files.files, files.drop_all, width)?;
                warn_all(&r.notes);
                out(&report::classic::cache_report(&r, files.format.into()));
            }
            (None, iolab::cli::CacheCommand::Meminfo(m)) => {
                out(&report::classic::meminfo_report(
                    &iolab::cache::meminfo::read(),
                    m.format.into(),
                ));
            }
            (None, _) => unreachable!("only meminfo takes no files"),
        },
    }
    Ok(())
}

fn save_report(
    out_dir: &std::path::Path,
    results: &[iolab::experiments::suite::SuiteResult],
    force: bool,
) -> Result<std::path::PathBuf, Error> {
    let r = report::suite::render(results);
    let mut files = vec![
        ("results.json".to_string(), r.results_json.into_bytes()),
        ("report.md".to_string(), r.markdown.into_bytes()),
        ("report.html".to_string(), r.html.into_bytes()),
    ];
    files.extend(
        r.plots
            .into_iter()
            .map(|(n, s)| (format!("plots/{n}"), s.into_bytes())),
    );
    iolab::output::save_dir(out_dir, &files, force)
}

fn suite_main(a: &iolab::cli::SuiteArgs, progress: &dyn Observer) -> Result<(), Error> {
    use iolab::experiments::suite;
    let parent = a
        .out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."));
    let made_dir = a.dir.is_none();
    let dir = a
        .dir
        .clone()
        .unwrap_or_else(|| parent.join(format!(".iolab-data-{}", std::process::id())));
    if made_dir && dir.exists() {
        return Err(Error::usage("data directory exists", "refusing to reuse it").at(&dir));
    }
    iolab::sys::catch_interrupts();
    let cfg = suite::SuiteConfig {
        dir: dir.clone(),
        size: a.size,
        quick: a.quick,
        keep_data: a.keep_data,
    };
    let result = suite::run_suite(&cfg, &command_line(), progress);
    let cleanup = || {
        if !a.keep_data {
            if made_dir {
                let _ = std::fs::remove_dir_all(&dir);
            } else {
                let _ = std::fs::remove_file(dir.join("random.bin"));
                let _ = std::fs::remove_dir_all(dir.join("classic"));
                let _ = std::fs::remove_file(dir.join("run-write.bin"));
                let _ = std::fs::remove_file(dir.join("vm.bin"));
            }
        }
    };
    let r = match result {
        Ok(r) => r,
        Err(e) => {
            cleanup();
            return Err(e);
        }
    };
    if iolab::sys::interrupted() {
        cleanup();
        return Err(Error::failed(
            "interrupted",
            "stopped by a signal; no report was written",
        ));
    }
    let saved = save_report(&a.out, std::slice::from_ref(&r), a.force);
    cleanup();
    let saved = saved?;
    for o in [
        &r.run_read.error,
        &r.run2.error,
        &r.fast_warm.error,
        &r.sweep_read.error,
        &r.sweep_write.error,
        &r.access.error,
        &r.syscalls.error,
        &r.vm.error,
        &r.transfer.error,
    ]
    .into_iter()
    .flatten()
    {
        eprintln!("iolab: warning: an experiment was not measured: {o}");
    }
    let mut text = String::from("Findings:\n");
    for f in &r.findings {
        text.push_str(&format!("  - {}\n", f.text));
    }
    text.push_str(&format!(
        "Report: {}\n",
        saved.join("report.html").display()
    ));
    out(&text);
    Ok(())
}

fn serve(
    addr: std::net::SocketAddr,
    cfg: &sender::SendConfig,
    format: Format,
) -> Result<(), Error> {
    let listener = sender::bind(addr)?;
    eprintln!(
        "iolab: listening on {addr}, {} file(s) to send",
        cfg.files.len()
    );
    let r = sender::serve(listener, cfg)?;
    out(&report::transfer::side_report(&r, format));
    Ok(())
}

fn main() {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => match e.kind() {
            ClapKind::DisplayHelp | ClapKind::DisplayVersion => {
                let _ = e.print();
                std::process::exit(0);
            }
            _ => {
                let text = e.render().to_string();
                let first = text.lines().next().unwrap_or("invalid arguments");
                let first = first.strip_prefix("error: ").unwrap_or(first);
                eprintln!("iolab: usage: {first} (see 'iolab --help')");
                std::process::exit(2);
            }
        },
    };
    if let Err(e) = dispatch(cli) {
        eprintln!("iolab: {e}");
        std::process::exit(e.exit_code());
    }
}
