//! The iolab binary: parse, dispatch, print errors, exit code. Results go to stdout, talk to
//! stderr. The command line itself lives in [`cli`].

mod cli;

use clap::error::ErrorKind as ClapKind;

/// Clap's message for a usage error as one line (errors are one line: docs/commands.md): its first line, the
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
    let mut cmd = cli::command();
    cmd.build();
    let mut path = vec!["iolab".to_string()];
    let mut current = &cmd;
    for word in std::env::args_os().skip(1) {
        let Some(word) = word.to_str() else { break };
        match current.find_subcommand(word) {
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

/// The command line with a negative number after a long option joined to it (`--bs -4K` ->
/// `--bs=-4K`), so that it reaches the option's parser and gets its message ("sizes cannot be
/// negative"), not "unexpected argument '-4'". Only a value that starts with `-` and a digit or
/// a dot is joined, so `--bs --size 4M` still says that `--bs` lacks its value; nothing after
/// `--` is touched.
fn join_negative_values(args: Vec<std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    let negative = |t: &str| {
        t.strip_prefix('-')
            .and_then(|r| r.chars().next())
            .is_some_and(|c| c.is_ascii_digit() || c == '.')
    };
    let mut out: Vec<std::ffi::OsString> = Vec::with_capacity(args.len());
    let mut rest = args.into_iter();
    while let Some(a) = rest.next() {
        if a == "--" {
            out.push(a);
            out.extend(rest);
            break;
        }
        let long = a
            .to_str()
            .filter(|t| t.starts_with("--") && t.len() > 2 && !t.contains('='))
            .map(str::to_string);
        if let Some(long) = long {
            let mut peek = rest.clone();
            if let Some(next) = peek.next().filter(|n| n.to_str().is_some_and(negative)) {
                out.push(format!("{long}={}", next.to_string_lossy()).into());
                rest = peek;
                continue;
            }
        }
        out.push(a);
    }
    out
}

fn main() {
    // SIGINT/SIGTERM remove the partial outputs and exit 130/143 (see sys::cleanup).
    if let Err(e) = iolab::sys::cleanup::install() {
        eprintln!(
            "iolab: warning: cannot handle interrupts ({e}); Ctrl-C may leave partial outputs"
        );
    }
    let parsed = cli::command()
        .try_get_matches_from(join_negative_values(std::env::args_os().collect()))
        .and_then(|m| <cli::Cli as clap::FromArgMatches>::from_arg_matches(&m));
    let args = match parsed {
        Ok(args) => args,
        Err(e) => match e.kind() {
            ClapKind::DisplayHelp | ClapKind::DisplayVersion => {
                use std::io::Write;
                let shown = e.print().and_then(|()| std::io::stdout().flush());
                match shown {
                    Err(w) if w.kind() != std::io::ErrorKind::BrokenPipe => {
                        eprintln!(
                            "iolab: cannot write the output: {}",
                            iolab::error::describe_io(&w)
                        );
                        std::process::exit(1);
                    }
                    _ => std::process::exit(0),
                }
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
    if let Err(e) = cli::dispatch(args.command, &ctx).and_then(|()| cli::output_written()) {
        eprintln!("iolab: {}", iolab::shown::line(&e.to_string()));
        std::process::exit(e.exit_code());
    }
}

#[cfg(test)]
mod tests {
    use super::join_negative_values;

    fn joined(args: &[&str]) -> Vec<String> {
        join_negative_values(args.iter().map(|a| a.into()).collect())
            .into_iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn negative_values_join_their_option_and_nothing_else_moves() {
        assert_eq!(
            joined(&["iolab", "read", "f", "--bs", "-4K"]),
            ["iolab", "read", "f", "--bs=-4K"]
        );
        assert_eq!(
            joined(&["iolab", "x", "--n", "-.5"]),
            ["iolab", "x", "--n=-.5"]
        );
        for same in [
            &["iolab", "read", "f", "--bs", "--size", "4M"][..],
            &["iolab", "read", "f", "--bs=-4K"],
            &["iolab", "run", "f", "-r", "-4K", "1"],
            &["iolab", "trace", "--", "cmd", "--n", "-4"],
            &["iolab", "read", "f", "--bs", "-x"],
        ] {
            assert_eq!(joined(same), same, "{same:?}");
        }
    }
}
