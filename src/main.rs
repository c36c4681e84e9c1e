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

fn main() {
    // SIGINT/SIGTERM remove the partial outputs and exit 130/143 (see sys::cleanup).
    if let Err(e) = iolab::sys::cleanup::install() {
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
