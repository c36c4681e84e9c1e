//! `iolab completions SHELL` and `iolab man [COMMAND]`: generated from the command line's own
//! definition, so they cannot drift from it.

use super::{Cli, out};
use clap::{Args, CommandFactory, ValueEnum};
use iolab::Error;

/// The shells completions are made for.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Shell {
    /// bash
    Bash,
    /// zsh
    Zsh,
    /// fish
    Fish,
}

/// Print a shell completion script for iolab.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  iolab completions bash > ~/.local/share/bash-completion/completions/iolab\n  iolab completions zsh > \"${fpath[1]}/_iolab\"\n  iolab completions fish > ~/.config/fish/completions/iolab.fish"
)]
pub struct CompletionsArgs {
    /// The shell
    #[arg(value_enum)]
    pub shell: Shell,
}

impl CompletionsArgs {
    /// Writes the script to stdout.
    pub fn run(self) -> Result<(), Error> {
        // Generators list hidden commands too, so the tree is rebuilt without them.
        let full = Cli::command();
        let mut cmd = clap::Command::new("iolab")
            .version(env!("CARGO_PKG_VERSION"))
            .args(full.get_arguments().cloned())
            .subcommands(full.get_subcommands().filter(|c| !c.is_hide_set()).cloned());
        if let Some(about) = full.get_about() {
            cmd = cmd.about(about.clone());
        }
        let mut buf = Vec::new();
        let shell = match self.shell {
            Shell::Bash => clap_complete::Shell::Bash,
            Shell::Zsh => clap_complete::Shell::Zsh,
            Shell::Fish => clap_complete::Shell::Fish,
        };
        clap_complete::generate(shell, &mut cmd, "iolab", &mut buf);
        out(&String::from_utf8_lossy(&buf));
        Ok(())
    }
}

/// Print iolab's manual page (roff), or one command's.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  iolab man | man -l -\n  iolab man squeeze > iolab-squeeze.1\n  iolab man > /usr/local/share/man/man1/iolab.1"
)]
pub struct ManArgs {
    /// A command: its own page (iolab-COMMAND(1))
    pub command: Option<String>,
}

impl ManArgs {
    /// Writes the page to stdout.
    pub fn run(self) -> Result<(), Error> {
        let top = Cli::command();
        let cmd = match &self.command {
            None => top,
            Some(name) => {
                let sub = top
                    .get_subcommands()
                    .find(|c| c.get_name() == name && !c.is_hide_set())
                    .cloned()
                    .ok_or_else(|| {
                        Error::usage(
                            "no such command",
                            format!("'{name}' (see 'iolab --help' for the commands)"),
                        )
                    })?;
                // clap names are &'static str; this process prints one page and ends.
                let page: &'static str = Box::leak(format!("iolab-{name}").into_boxed_str());
                sub.name(page).bin_name(page)
            }
        };
        let mut buf = Vec::new();
        clap_mangen::Man::new(cmd)
            .render(&mut buf)
            .map_err(|e| Error::failed("cannot render the manual page", e.to_string()))?;
        out(&String::from_utf8_lossy(&buf));
        Ok(())
    }
}
