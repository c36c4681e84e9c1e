//! The iolab binary: parse, dispatch, print errors, exit code. Results go to stdout, talk to
//! stderr. The command line itself lives in [`cli`].

mod cli;

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
    // clap's "a similar subcommand/argument exists" tips, kept.
    let tips: Vec<&str> = text
        .lines()
        .filter_map(|l| l.trim().strip_prefix("tip: "))
        .filter(|t| t.contains("similar"))
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
    for t in tips {
        out.push_str(&format!("; {t}"));
    }
    // The command's own usage line, not the one clap builds from the arguments typed so far
    // (which shows an option given, such as `--format`, as if it were required).
    let typed = subcommand_path();
    let own_usage = typed.as_ref().map(|(_, usage)| usage.clone());
    let usage = own_usage.as_deref().or_else(|| {
        text.lines()
            .find_map(|l| l.strip_prefix("Usage: "))
            .map(str::trim)
    });
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
        .or_else(|| typed.map(|(path, _)| path))
        .unwrap_or_else(|| "iolab".into());
    format!("{out} (see '{command} --help')")
}

/// The subcommands the user typed (`iolab cache status`), and that command's usage line.
fn subcommand_path() -> Option<(String, String)> {
    use clap::CommandFactory;
    let mut cmd = cli::Cli::command();
    cmd.build();
    let mut path = vec!["iolab".to_string()];
    let mut current = &cmd;
    for word in std::env::args().skip(1) {
        match current.find_subcommand(&word) {
            Some(sub) => {
                path.push(sub.get_name().to_string());
                current = sub;
            }
            None => break,
        }
    }
    if path.len() == 1 {
        return None;
    }
    let mut sub = current.clone().bin_name(path.join(" "));
    let usage = sub.render_usage().to_string();
    let usage = usage
        .strip_prefix("Usage: ")
        .unwrap_or(&usage)
        .trim()
        .to_string();
    Some((path.join(" "), usage))
}

/// The command line with a value that starts with `-` taken as the value of the option before
/// it, so that `--bs -4K` reaches the size parser and gets its message, not "unexpected argument
/// '-4'". Only options that always take one value: a flag or a positional is never affected.
fn command() -> clap::Command {
    fn numbers_as_values(cmd: clap::Command) -> clap::Command {
        cmd.mut_args(|a| {
            let one_value = a.get_num_args().is_none_or(|n| n.min_values() == 1);
            if a.get_long().is_some() && a.get_action().takes_values() && one_value {
                a.allow_hyphen_values(true)
            } else {
                a
            }
        })
        .mut_subcommands(numbers_as_values)
    }
    use clap::CommandFactory;
    numbers_as_values(cli::Cli::command())
}

fn main() {
    // SIGINT/SIGTERM remove the partial outputs and exit 130/143 (see sys::cleanup).
    if let Err(e) = iolab::sys::cleanup::install() {
        eprintln!(
            "iolab: warning: cannot handle interrupts ({e}); Ctrl-C may leave partial outputs"
        );
    }
    let parsed = command()
        .try_get_matches()
        .and_then(|m| <cli::Cli as clap::FromArgMatches>::from_arg_matches(&m));
    let args = match parsed {
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
    cli::set_output(args.progress, args.quiet);
    let ctx = match args.command {
        cli::Command::Fast(ref f) if f.host_ahead_pays() => cli::Ctx::with_host_ahead(),
        _ => cli::Ctx::new(),
    };
    if let Err(e) = cli::dispatch(args.command, &ctx) {
        eprintln!("iolab: {e}");
        std::process::exit(e.exit_code());
    }
}
