//! `iolab completions SHELL` and `iolab man [COMMAND]`: generated from the command line's own
//! definition, so they cannot drift from it.

use super::out;
use clap::{Args, ValueEnum};
use iolab::Error;
use std::path::{Path, PathBuf};

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
        let full = super::command();
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

/// Print iolab's manual page (roff), or one command's; `--dir` writes every page.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  iolab man | man -l -\n  iolab man squeeze > iolab-squeeze.1\n  iolab man --dir ~/.local/share/man/man1\n  man -l ~/.local/share/man/man1/iolab-read.1\n\n--dir writes iolab.1 and one iolab-COMMAND.1 per command; pages that exist are\nreplaced only with --force."
)]
pub struct ManArgs {
    /// A command: its own page (iolab-COMMAND(1))
    #[arg(conflicts_with = "dir")]
    pub command: Option<String>,
    /// Write every page (iolab.1, iolab-COMMAND.1) into this directory instead
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// With --dir: replace pages that exist
    #[arg(long, requires = "dir")]
    pub force: bool,
}

impl ManArgs {
    /// Writes the page to stdout, or every page into `--dir`.
    pub fn run(self) -> Result<(), Error> {
        if let Some(dir) = &self.dir {
            return write_pages(dir, self.force);
        }
        let top = super::command();
        let page = match &self.command {
            None => man_page(top, None),
            Some(name) => {
                let sub = visible(&top)
                    .find(|c| c.get_name() == name)
                    .cloned()
                    .ok_or_else(|| {
                        Error::usage(
                            "no such command",
                            format!("'{name}' (see 'iolab --help' for the commands)"),
                        )
                    })?;
                man_page(sub, Some(name))
            }
        };
        out(&page);
        Ok(())
    }
}

/// The commands a user sees (not the hidden workers, not `help`).
fn visible(top: &clap::Command) -> impl Iterator<Item = &clap::Command> {
    top.get_subcommands()
        .filter(|c| !c.is_hide_set() && c.get_name() != "help")
}

/// Every page into `dir` (made if missing): all or nothing, nothing replaced without `force`.
fn write_pages(dir: &Path, force: bool) -> Result<(), Error> {
    let top = super::command();
    let mut pages = vec![("iolab.1".to_string(), man_page(top.clone(), None))];
    for c in visible(&top) {
        let name = c.get_name().to_string();
        pages.push((format!("iolab-{name}.1"), man_page(c.clone(), Some(&name))));
        // The pages a command's own page lists (iolab-cache-status(1) under iolab-cache(1)).
        for s in visible(c) {
            let both = format!("{name} {}", s.get_name());
            let file = format!("iolab-{}.1", both.replace(' ', "-"));
            pages.push((file, man_page(s.clone(), Some(&both))));
        }
    }
    let made_dir = !dir.exists();
    std::fs::create_dir_all(dir).map_err(|e| {
        Error::failed(
            "cannot make the directory",
            format!("{}: {e}", iolab::shown::path(dir)),
        )
    })?;
    let d = iolab::sys::dir::Dir::open(dir).map_err(|e| Error::io("cannot open", dir, &e))?;
    let file_name = |f: &str| std::ffi::OsString::from(f);
    if !force && let Some((file, _)) = pages.iter().find(|(f, _)| d.exists(&file_name(f))) {
        return Err(iolab::output::exists(&dir.join(file)));
    }
    // All or nothing: a page that cannot be written (a full file system) takes the new pages
    // before it, and the folder if this made it, with it.
    let mut written: Vec<String> = Vec::new();
    for (file, page) in &pages {
        let new = !d.exists(&file_name(file));
        if let Err(e) = iolab::output::save_in(&d, file, page.as_bytes(), force) {
            for f in &written {
                let _ = d.remove(&file_name(f));
            }
            if made_dir {
                let _ = std::fs::remove_dir(dir);
            }
            return Err(e);
        }
        if new {
            written.push(file.clone());
        }
    }
    super::talk(format!(
        "iolab: wrote {} manual pages into {} (man -l {}/iolab.1)",
        pages.len(),
        iolab::shown::path(dir),
        iolab::shown::path(dir)
    ));
    Ok(())
}

/// The date of the code a page describes: the commit's, else the build's.
const PAGE_DATE: &str = env!("IOLAB_PAGE_DATE");

/// One manual page in roff: clap_mangen's NAME, SYNOPSIS, DESCRIPTION, OPTIONS and COMMANDS,
/// then EXAMPLES kept line for line, NOTES, EXIT STATUS, ENVIRONMENT and SEE ALSO, which
/// clap_mangen would reflow into one "EXTRA" paragraph or not write at all.
pub fn man_page(cmd: clap::Command, sub: Option<&str>) -> String {
    let (examples, notes) = split_after_help(
        &cmd.get_after_help()
            .map(|h| h.to_string())
            .unwrap_or_default(),
    );
    let cmd = match sub {
        // clap names are &'static str; a page is made a few times per process.
        // `name` is the command's words after iolab ("cache status"): the page is named by
        // them joined with dashes (iolab-cache-status), as the parent's page lists it.
        Some(name) => {
            let page: &'static str =
                Box::leak(format!("iolab-{}", name.replace(' ', "-")).into_boxed_str());
            cmd.name(page).bin_name(format!("iolab {name}"))
        }
        None => cmd,
    }
    .version(env!("CARGO_PKG_VERSION"))
    // `help` is a way to ask, not a page (clap would list iolab-cache-help(1)).
    .disable_help_subcommand(true)
    .after_help(None::<&str>)
    .after_long_help(None::<&str>);
    let has_subs = cmd.get_subcommands().any(|c| !c.is_hide_set());
    let man = clap_mangen::Man::new(cmd)
        .date(PAGE_DATE)
        .source(format!("iolab {}", env!("CARGO_PKG_VERSION")))
        .manual("iolab manual");
    let mut buf = Vec::new();
    // Writing into a Vec cannot fail.
    let _ = man.render_title(&mut buf);
    let _ = man.render_name_section(&mut buf);
    let _ = man.render_synopsis_section(&mut buf);
    let _ = man.render_description_section(&mut buf);
    let _ = man.render_options_section(&mut buf);
    if has_subs {
        let _ = man.render_subcommands_section(&mut buf);
    }
    let mut page = String::from_utf8_lossy(&buf).into_owned();
    if !examples.is_empty() {
        page.push_str(".SH EXAMPLES\n.nf\n");
        for line in &examples {
            page.push_str(&roff_line(line));
            page.push('\n');
        }
        page.push_str(".fi\n");
    }
    if !notes.is_empty() {
        page.push_str(".SH NOTES\n");
        for para in &notes {
            page.push_str(".PP\n");
            page.push_str(&roff_line(&para.replace('\n', " ")));
            page.push('\n');
        }
    }
    page.push_str(
        ".SH \"EXIT STATUS\"\n.TP\n0\nSuccess.\n.TP\n1\nThe work failed: an I/O error, a peer's error, a checksum that did not match.\n.TP\n2\nA usage error: the message names what is wrong and the usage line.\n.TP\n130, 143\nInterrupted (SIGINT, SIGTERM); partial outputs were removed.\n",
    );
    page.push_str(
        ".SH ENVIRONMENT\n.TP\nIOLAB_TOKEN\nThe shared secret of send, recv, master and slave when --token-file is not given.\n.TP\nIOLAB_NO_ROOT\nWhen set (and not 0), iolab skips its root-only steps even as root (drop_caches, page flags, memory cgroups of its own) and says so, as it does without root: to see that path.\n",
    );
    let mut see: Vec<String> = vec![];
    if sub.is_some() {
        see.push("iolab(1)".into());
    }
    see.extend(
        [
            "fio(1)",
            "vmtouch(8)",
            "pmap(1)",
            "strace(1)",
            "io_uring(7)",
            "madvise(2)",
        ]
        .map(String::from),
    );
    page.push_str(&format!(
        ".SH \"SEE ALSO\"\n{}\n.PP\nThe README and docs/ of the source tree: docs/commands.md, docs/methodology.md.\n",
        roff_line(&see.join(", "))
    ));
    page
}

/// A command's after-help as its example lines (the block under `Examples:`, unindented) and
/// its other paragraphs.
fn split_after_help(text: &str) -> (Vec<String>, Vec<String>) {
    let mut examples = Vec::new();
    let mut notes = Vec::new();
    for block in text
        .split("\n\n")
        .map(str::trim_end)
        .filter(|b| !b.trim().is_empty())
    {
        if let Some(rest) = block.strip_prefix("Examples:") {
            examples.extend(
                rest.lines()
                    .filter(|l| !l.trim().is_empty())
                    .map(|l| l.strip_prefix("  ").unwrap_or(l).to_string()),
            );
        } else {
            notes.push(block.trim().to_string());
        }
    }
    (examples, notes)
}

/// Text for roff: backslashes and hyphens escaped, and a line that starts with `.` or `'` kept
/// from being read as a request.
fn roff_line(text: &str) -> String {
    let escaped = text.replace('\\', "\\e").replace('-', "\\-");
    if escaped.starts_with('.') || escaped.starts_with('\'') {
        format!("\\&{escaped}")
    } else {
        escaped
    }
}
