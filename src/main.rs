//! The iolab binary: parse, dispatch, print errors, exit code. Results go to stdout, talk to
//! stderr. The command line itself lives in [`cli`].

mod cli;

use clap::Parser;
use clap::error::ErrorKind as ClapKind;

/// Clap's message for a usage error as one line: its first line, plus the possible values when
/// clap lists them (they come from the value's type).
fn one_line(e: &clap::Error) -> String {
    let text = e.render().to_string();
    let first = text.lines().next().unwrap_or("invalid arguments");
    let first = first.strip_prefix("error: ").unwrap_or(first);
    let values = text.lines().find_map(|l| {
        l.trim()
            .strip_prefix("[possible values: ")
            .and_then(|v| v.strip_suffix(']'))
    });
    match values {
        Some(v) => format!("{first}; expected one of: {v}"),
        None => first.to_string(),
    }
}

/// On SIGINT or SIGTERM: remove every partial output (temporary files, the suite's data and
/// half-written report, a transfer's scratch directory), say so, and exit 128 + the signal.
fn on_signal(sig: i32) {
    let n = iolab::output::remove_partial_outputs_for_exit();
    let what = if sig == libc::SIGTERM {
        "terminated"
    } else {
        "interrupted"
    };
    if n > 0 {
        eprintln!("\niolab: {what}: removed {n} partial output(s)");
    } else {
        eprintln!("\niolab: {what}");
    }
    std::process::exit(128 + sig);
}

fn main() {
    // First, before any thread starts: the signals go to one thread that cleans up.
    if let Err(e) = iolab::sys::handle_interrupts(on_signal) {
        eprintln!(
            "iolab: warning: cannot handle interrupts ({e}); Ctrl-C may leave partial outputs"
        );
    }
    let args = match cli::Cli::try_parse() {
        Ok(args) => args,
        Err(e) => match e.kind() {
            ClapKind::DisplayHelp | ClapKind::DisplayVersion => {
                let _ = e.print();
                std::process::exit(0);
            }
            _ => {
                eprintln!("iolab: usage: {} (see 'iolab --help')", one_line(&e));
                std::process::exit(2);
            }
        },
    };
    let ctx = cli::Ctx::new();
    if let Err(e) = cli::dispatch(args.command, &ctx) {
        eprintln!("iolab: {e}");
        std::process::exit(e.exit_code());
    }
}
