//! `iolab master N f1..fN fcntl|mmap` and `iolab slave N f1..fN fcntl|mmap IP`: the course's
//! sender and receiver (and the 2019 one-file form `master FILE mmap`, `slave FILE fcntl IP`).

use super::Ctx;
use super::args::NetArgs;
use super::send::{listen_addr, serve};
use super::usage;
use clap::Args;
use iolab::Error;
use iolab::experiments::transfer::report;
use iolab::transfer::receiver::{self, RecvConfig};
use iolab::transfer::{RecvMethod, SendMethod};
use report::Lines;
use std::path::PathBuf;
use std::time::Duration;

/// `N f1 .. fN fcntl|mmap [IP]` of the course programs.
#[derive(Debug, Args)]
pub struct ClassicArgs {
    /// N, the N files, the method (fcntl or mmap), and for slave the master's IP; or the 2019
    /// one-file form FILE fcntl|mmap [IP]
    #[arg(required = true, num_args = 2..)]
    pub words: Vec<String>,
    /// Also print the totals (bytes, time, MiB/s, CPU) after the course's lines
    #[arg(long, short)]
    pub verbose: bool,
    /// The N-file form: a `Transmission time` line per file (timed from its header to its last
    /// byte) instead of the course's one line for the run
    #[arg(long)]
    pub per_file: bool,
    /// Port on both sides
    #[arg(long, default_value_t = iolab::transfer::DEFAULT_PORT)]
    pub port: u16,
    /// master: the address to listen on
    #[arg(long, default_value = "127.0.0.1")]
    pub listen: String,
    #[command(flatten)]
    pub net: NetArgs,
}

fn is_method(word: &str) -> bool {
    word == "fcntl" || word == "mmap"
}

/// The words of the classic form.
struct Classic {
    files: Vec<PathBuf>,
    mmap: bool,
    ip: Option<String>,
    /// The 2019 one-file form (`FILE fcntl|mmap [IP]`), not `N f1 .. fN`.
    one_file: bool,
}

impl ClassicArgs {
    /// `N f1 .. fN fcntl|mmap [IP]`, checking N against the files given, or the one-file form
    /// `FILE fcntl|mmap [IP]`.
    fn parse(&self, with_ip: bool) -> Result<Classic, String> {
        let usage = if with_ip {
            "slave N f1 .. fN fcntl|mmap IP (or slave FILE fcntl|mmap IP)"
        } else {
            "master N f1 .. fN fcntl|mmap (or master FILE fcntl|mmap)"
        };
        let words = &self.words;
        let one_file = 2 + with_ip as usize;
        let (files, method, ip, one_file) = match words[0].parse::<usize>() {
            // A first word that is a number is N, unless the words are exactly the one-file form
            // (a file named "3" with a method after it).
            Ok(n) if words.len() != one_file || !is_method(&words[1]) => {
                let want = 1 + n + 1 + with_ip as usize;
                if n == 0 || words.len() != want {
                    return Err(format!(
                        "expected {usage}: N = {n} needs {want} words, got {}",
                        words.len()
                    ));
                }
                (&words[1..=n], &words[n + 1], words.get(n + 2), false)
            }
            _ if words.len() == one_file => (&words[..1], &words[1], words.get(2), true),
            _ => {
                return Err(format!(
                    "expected {usage}: the first word is N (a number of files) or the one file"
                ));
            }
        };
        if !is_method(method) {
            return Err(format!("the method is fcntl or mmap, not '{method}'"));
        }
        Ok(Classic {
            files: files.iter().map(PathBuf::from).collect(),
            mmap: method == "mmap",
            ip: ip.cloned(),
            one_file,
        })
    }

    /// The lines of the form used: the 2020 N-file form prints one line for the run (unless
    /// `--per-file`), the 2019 one-file form a line per file; `-v` adds iolab's totals.
    fn lines(&self, c: &Classic) -> Lines {
        if self.verbose {
            Lines::Full
        } else if c.one_file || self.per_file {
            Lines::ClassicPerFile
        } else {
            Lines::ClassicRun
        }
    }

    /// The course's master: serves the files.
    pub fn run_master(self, ctx: &Ctx) -> Result<(), Error> {
        let c = self.parse(false).map_err(usage)?;
        let addr = listen_addr(&self.listen, self.port).map_err(usage)?;
        let method = if c.mmap {
            SendMethod::Mmap
        } else {
            SendMethod::Read
        };
        let lines = self.lines(&c);
        let cfg = self.net.send_config(c.files, method)?;
        serve(ctx, addr, &cfg, &self.net.output, lines, self.net.no_token)
    }

    /// The course's slave: writes the files it names, as the course program did.
    pub fn run_slave(self, ctx: &Ctx) -> Result<(), Error> {
        let c = self.parse(true).map_err(usage)?;
        let lines = self.lines(&c);
        let ip = c.ip.unwrap_or_default();
        let host = if ip.contains(':') && !ip.starts_with('[') {
            format!("[{ip}]")
        } else {
            ip
        };
        let method = if c.mmap {
            RecvMethod::Mmap
        } else {
            RecvMethod::Write
        };
        let cfg = RecvConfig {
            names: c.files,
            exact: true,
            retry: Duration::from_secs(5),
            ..self
                .net
                .recv_config(format!("{host}:{}", self.port), ".".into(), method)?
        };
        let r = receiver::receive(&cfg)?;
        if let Some(n) = &r.pages_note {
            super::talk(format!("iolab: note: {n}"));
        }
        ctx.emit(&self.net.output, &r, || report::side_document(&r, lines))
    }
}
