//! `iolab send FILES`: serve files to a receiver over TCP.

use super::Ctx;
use super::args::{FileList, NetArgs};
use super::usage;
use clap::Args;
use iolab::Error;
use iolab::experiments::transfer::report;
use iolab::transfer::SendMethod;
use iolab::transfer::sender::{self, SendConfig};
use std::net::SocketAddr;

/// Serve files to a receiver over TCP (listens; default 127.0.0.1:2325).
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  iolab send big.bin --method sendfile\n  iolab send a b c --listen 0.0.0.0:2325 --token-file ~/.iolab-token --connections 2\n  iolab send a.txt --raw --classic-sizes      (then: nc 127.0.0.1 2325 > a.txt)\n\nThe token may also come from IOLAB_TOKEN. Only 127.0.0.1 is used unless --listen says otherwise."
)]
pub struct SendArgs {
    #[command(flatten)]
    pub files: FileList,
    /// Sender method (fcntl = read)
    #[arg(long, value_enum, default_value_t = SendMethod::Read)]
    pub method: SendMethod,
    /// Address to listen on: HOST or HOST:PORT
    #[arg(long, default_value = "127.0.0.1")]
    pub listen: String,
    /// Port, when --listen has none
    #[arg(long, default_value_t = iolab::transfer::DEFAULT_PORT)]
    pub port: u16,
    #[command(flatten)]
    pub net: NetArgs,
}

/// `HOST:PORT`, or `HOST` with `port`.
pub fn listen_addr(listen: &str, port: u16) -> Result<SocketAddr, String> {
    use std::net::ToSocketAddrs;
    if let Ok(a) = listen.parse() {
        return Ok(a);
    }
    // A bare number is not a host: "2325" would mean 0.0.9.21 and "0" every address.
    if !listen.is_empty() && listen.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "'{listen}' is not a host: expected HOST or HOST:PORT, e.g. 127.0.0.1:{listen} (or --port {listen})"
        ));
    }
    (listen, port)
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .ok_or_else(|| {
            format!("cannot use '{listen}' as an address to listen on: expected HOST or HOST:PORT")
        })
}

/// Serving without a token: whoever connects first gets the files. Refused, unless `no_token`
/// says the user means it, beyond loopback (anyone who reaches the port) and for a file other
/// local users cannot read (any of them may connect to a loopback port); [`serve`] says so in
/// one line whenever it happens.
fn may_serve_without_token(
    addr: SocketAddr,
    cfg: &SendConfig,
    no_token: bool,
) -> Result<(), Error> {
    use std::os::unix::fs::PermissionsExt;
    let hint =
        "give --token-file FILE (or IOLAB_TOKEN) on both sides, or --no-token to serve anyway";
    if !no_token {
        if !addr.ip().is_loopback() {
            return Err(Error::usage(
                "refusing to serve without a token",
                format!("{addr} is reachable beyond this machine: whoever connects first would get the files"),
            )
            .hint(hint));
        }
        if let Some(private) = cfg
            .files
            .iter()
            .find(|f| std::fs::metadata(f).is_ok_and(|m| m.permissions().mode() & 0o004 == 0))
        {
            return Err(Error::usage(
                "refusing to serve without a token",
                "other local users cannot read this file, and any of them may connect to the port first",
            )
            .at(private)
            .hint(hint));
        }
    }
    Ok(())
}

/// Listens on `addr`, serves `cfg`'s files and prints this side's report.
pub fn serve(
    ctx: &Ctx,
    addr: SocketAddr,
    cfg: &SendConfig,
    output: &super::args::OutputArgs,
    lines: report::Lines,
    no_token: bool,
) -> Result<(), Error> {
    cfg.link.check()?;
    sender::check_files(cfg)?;
    if cfg.link.token.is_none() {
        may_serve_without_token(addr, cfg, no_token)?;
    }
    let listener = sender::bind(addr)?;
    // The port the kernel chose for --port 0, not 0.
    let addr = listener.local_addr().unwrap_or(addr);
    eprintln!(
        "iolab: listening on {addr}, {} file(s) to send{}",
        cfg.files.len(),
        if cfg.link.raw {
            " as raw streams, one connection each"
        } else {
            ""
        }
    );
    if cfg.link.token.is_none() {
        super::talk(format!(
            "iolab: warning: no token: whoever connects first to {addr} gets the files"
        ));
    }
    let r = sender::serve(listener, cfg)?;
    for why in &r.rejected {
        super::talk(format!("iolab: warning: dropped a connection: {why}"));
    }
    if let Some(n) = &r.pages_note {
        super::talk(format!("iolab: note: {n}"));
    }
    ctx.emit(output, &r, || report::side_document(&r, lines))
}

impl SendArgs {
    /// Serves the files.
    pub fn run(self, ctx: &Ctx) -> Result<(), Error> {
        let addr = listen_addr(&self.listen, self.port).map_err(usage)?;
        let cfg = self.net.send_config(self.files.files, self.method)?;
        serve(
            ctx,
            addr,
            &cfg,
            &self.net.output,
            report::Lines::Full,
            self.net.no_token,
        )
    }
}
