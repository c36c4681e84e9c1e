//! The iolab binary: parse, dispatch, print errors, exit code. Results go to stdout, talk to
//! stderr. The command line itself lives in [`cli`].

mod cli;

use clap::Parser;
use clap::error::ErrorKind as ClapKind;

/// Clap's message for a usage error as one line (DESIGN: errors are one line): its first line, the
/// indented lines under it (what is missing), the possible values when clap lists them, the usage
/// line, and where to read more (`iolab <command> --help`).
fn one_line(e: &clap::Error) -> String {
    let text = e.render().to_string();
    let mut lines = text.lines();
    let first = lines.next().unwrap_or("invalid arguments");
    let first = first.strip_prefix("error: ").unwrap_or(first).trim_end();
    let details: Vec<&str> = text
        .lines()
        .skip(1)
        .take_while(|l| l.starts_with(' ') || l.starts_with('\t'))
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("tip:") && !l.starts_with("[possible values"))
        .collect();
    let mut out = first.to_string();
    if !details.is_empty() {
        if !out.ends_with(':') {
            out.push(':');
        }
        out.push(' ');
        out.push_str(&details.join(", "));
    }
    let values = text.lines().find_map(|l| {
        l.trim()
            .strip_prefix("[possible values: ")
            .and_then(|v| v.strip_suffix(']'))
    });
    if let Some(v) = values {
        out.push_str(&format!("; expected one of: {v}"));
    }
    let usage = text
        .lines()
        .find_map(|l| l.strip_prefix("Usage: "))
        .map(str::trim);
    if let Some(u) = usage {
        out.push_str(&format!("; usage: {u}"));
    }
    // `iolab <command>` from the usage line, for the pointer to its help.
    let command = usage
        .and_then(|u| {
            // The words before the first placeholder: `iolab cache status`.
            let words: Vec<&str> = u
                .split_whitespace()
                .take_while(|w| !w.starts_with(['[', '<', '-']))
                .collect();
            (!words.is_empty()).then(|| words.join(" "))
        })
        .or_else(|| {
            // No usage line (a bad value): the subcommand the user typed, if it is one.
            let sub = std::env::args().nth(1)?;
            use clap::CommandFactory;
            cli::Cli::command()
                .find_subcommand(&sub)
                .map(|_| format!("iolab {sub}"))
        })
        .unwrap_or_else(|| "iolab".into());
    format!("{out} (see '{command} --help')")
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
            // Bare `iolab` (or a command group without its subcommand): the whole help, a usage error.
            ClapKind::DisplayHelpOnMissingArgumentOrSubcommand => {
                eprint!("{}", e.render());
                std::process::exit(2);
            }
            _ => {
                eprintln!("iolab: usage: {}", one_line(&e));
                std::process::exit(2);
            }
        },
    };
    let ctx = match args.command {
        cli::Command::Fast(ref f) if f.host_ahead_pays() => cli::Ctx::with_host_ahead(),
        _ => cli::Ctx::new(),
    };
    if let Err(e) = cli::dispatch(args.command, &ctx) {
        eprintln!("iolab: {e}");
        std::process::exit(e.exit_code());
    }
}
