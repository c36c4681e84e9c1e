//! One run of the course's two programs as two processes: `iolab master N f1 .. fN fcntl|mmap`
//! and `iolab slave N o1 .. oN fcntl|mmap 127.0.0.1` into a temporary directory, each reporting
//! its side as JSON.

use super::Method;
use crate::error::{Error, Result};
use crate::transfer::{ChunkSizes, SideReport};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A port nobody listens on now (the master binds it a moment later).
fn free_port() -> Result<u16> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| Error::failed("cannot listen", crate::error::describe_io(&e)))
}

/// The words both programs share after their own: the port, a timeout, sizes and JSON.
fn common(port: u16, sizes: ChunkSizes) -> Vec<String> {
    let mut v: Vec<String> = ["--port", &port.to_string(), "--timeout", "30s"]
        .map(String::from)
        .to_vec();
    if sizes == ChunkSizes::CLASSIC {
        v.push("--classic-sizes".into());
    } else {
        v.push(format!("--chunk={}", sizes.chunk));
        if let Some(m) = sizes.map_size {
            v.push(format!("--map-size={m}"));
        }
    }
    v.extend(["--format", "json", "--quiet"].map(String::from));
    v
}

fn side(who: &str, out: std::process::Output) -> Result<SideReport> {
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(Error::failed(
            "transfer failed",
            format!("{who}: {}", err.lines().last().unwrap_or("no message")),
        ));
    }
    serde_json::from_slice(&out.stdout)
        .map_err(|e| Error::failed("transfer failed", format!("{who}'s report: {e}")))
}

/// Runs master and slave once; their own reports of the run.
pub(super) fn run(
    program: &Path,
    files: &[PathBuf],
    method: Method,
    sizes: ChunkSizes,
) -> Result<(SideReport, SideReport)> {
    let out = crate::output::temp_dir("iolab-classic")?;
    let port = free_port()?;
    // A fresh secret for the two programs alone: any local user can connect to the port.
    let token: String = crate::transfer::protocol::nonce()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let n = files.len().to_string();
    let spawn = |c: &mut Command| {
        c.env("IOLAB_TOKEN", &token)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| Error::failed("cannot start", crate::error::describe_io(&e)).at(program))
    };
    let master = spawn(
        Command::new(program)
            .arg("master")
            .arg(&n)
            .args(files)
            .arg(method.name())
            .args(common(port, sizes)),
    )?;
    let names: Vec<String> = (0..files.len()).map(|i| format!("o{i}")).collect();
    let slave = spawn(
        Command::new(program)
            .current_dir(out.path())
            .arg("slave")
            .arg(&n)
            .args(&names)
            .args([method.name(), "127.0.0.1"])
            .args(common(port, sizes)),
    );
    let slave = match slave.and_then(|c| {
        c.wait_with_output()
            .map_err(|e| Error::failed("transfer failed", crate::error::describe_io(&e)))
    }) {
        Ok(o) => o,
        Err(e) => {
            let mut master = master;
            let _ = master.kill();
            let _ = master.wait();
            return Err(e);
        }
    };
    let slave_ok = slave.status.success();
    let mut master = master;
    if !slave_ok {
        // A master still waiting for its slave would wait out its timeout.
        let _ = master.kill();
    }
    let master = master
        .wait_with_output()
        .map_err(|e| Error::failed("transfer failed", crate::error::describe_io(&e)))?;
    let recv = side("the slave", slave)?;
    let sent = side("the master", master)?;
    drop(out);
    Ok((sent, recv))
}
