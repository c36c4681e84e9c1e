//! `iolab master N f1..fN fcntl|mmap` and `iolab slave N f1..fN fcntl|mmap IP`: the course's
//! sender and receiver.

use super::Ctx;
use super::args::NetArgs;
use super::send::{listen_addr, serve};
use super::usage;
use clap::Args;
use iolab::Error;
use iolab::report;
use iolab::transfer::receiver::{self, RecvConfig};
use iolab::transfer::sender::SendConfig;
use iolab::transfer::{RecvMethod, SendMethod};
use std::path::PathBuf;
use std::time::Duration;

/// `N f1 .. fN fcntl|mmap [IP]` of the course programs.
#[derive(Debug, Args)]
pub struct ClassicArgs {
    /// N, the N files, the method (fcntl or mmap), and for slave the master's IP
    #[arg(required = true, num_args = 3..)]
    pub words: Vec<String>,
    /// Port on both sides
    #[arg(long, default_value_t = iolab::transfer::DEFAULT_PORT)]
    pub port: u16,
    /// master: the address to listen on
    #[arg(long, default_value = "127.0.0.1")]
    pub listen: String,
    #[command(flatten)]
    pub net: NetArgs,
}

/// The words of the classic form.
struct Classic {
    files: Vec<PathBuf>,
    mmap: bool,
    ip: Option<String>,
}

impl ClassicArgs {
    /// `N f1 .. fN fcntl|mmap [IP]`, checking N against the files given.
    fn parse(&self, with_ip: bool) -> Result<Classic, String> {
        let usage = if with_ip {
            "slave N f1 .. fN fcntl|mmap IP"
        } else {
            "master N f1 .. fN fcntl|mmap"
        };
        let n: usize = self.words[0]
            .parse()
            .map_err(|_| format!("N must be a number of files: {usage}"))?;
        let want = 1 + n + 1 + with_ip as usize;
        if n == 0 || self.words.len() != want {
            return Err(format!(
                "expected {usage} ({want} words, got {})",
                self.words.len()
            ));
        }
        let method = &self.words[n + 1];
        if method != "fcntl" && method != "mmap" {
            return Err(format!("the method is fcntl or mmap, not '{method}'"));
        }
        Ok(Classic {
            files: self.words[1..=n].iter().map(PathBuf::from).collect(),
            mmap: method == "mmap",
            ip: with_ip.then(|| self.words[n + 2].clone()),
        })
    }

    /// The course's master: serves the files.
    pub fn run_master(self, ctx: &Ctx) -> Result<(), Error> {
        let c = self.parse(false).map_err(usage)?;
        let addr = listen_addr(&self.listen, self.port).map_err(usage)?;
        let cfg = SendConfig {
            files: c.files,
            method: if c.mmap {
                SendMethod::Mmap
            } else {
                SendMethod::Read
            },
            connections: self.net.connections,
            token: self.net.token(),
            timeout: self.net.timeout,
        };
        serve(ctx, addr, &cfg, self.net.output.format)
    }

    /// The course's slave: writes the files it names, as the course program did.
    pub fn run_slave(self, ctx: &Ctx) -> Result<(), Error> {
        let c = self.parse(true).map_err(usage)?;
        let ip = c.ip.unwrap_or_default();
        let host = if ip.contains(':') && !ip.starts_with('[') {
            format!("[{ip}]")
        } else {
            ip
        };
        let cfg = RecvConfig {
            connect: format!("{host}:{}", self.port),
            out_dir: ".".into(),
            names: c.files,
            method: if c.mmap {
                RecvMethod::Mmap
            } else {
                RecvMethod::Write
            },
            connections: self.net.connections,
            token: self.net.token(),
            timeout: self.net.timeout,
            max_size: None,
            force: false,
            sync: false,
            discard: false,
            retry: Duration::from_secs(5),
        };
        let r = receiver::receive(&cfg)?;
        ctx.emit(
            self.net.output.format,
            &report::transfer::side_report(&r, self.net.output.format),
        );
        Ok(())
    }
}
