//! What several subcommands share: argument groups declared once and flattened (output format,
//! threads and queue depth, workload, cache state, transfer settings), and the value parsers for
//! sizes, counts and durations; every parser error names the text and the expected form.

use clap::Args;
use iolab::cache::CacheMode;
use iolab::engine::EngineOptions;
use iolab::report::Format;
use iolab::transfer::{RecvMethod, SendMethod};
use iolab::workload::{Pattern, Shape};
use std::time::Duration;

/// `--format`: what goes to stdout; `--export-*`: the same result in other formats, in files.
#[derive(Debug, Args)]
pub struct OutputArgs {
    /// Output on stdout: a text table, or data for other tools
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Also write the result as JSON to FILE, beside the --format output (a new file)
    #[arg(long, value_name = "FILE", value_parser = new_file)]
    pub export_json: Option<std::path::PathBuf>,
    /// Also write the result as CSV to FILE (a new file)
    #[arg(long, value_name = "FILE", value_parser = new_file)]
    pub export_csv: Option<std::path::PathBuf>,
    /// Also write the result as Markdown to FILE (a new file)
    #[arg(long, value_name = "FILE", value_parser = new_file)]
    pub export_markdown: Option<std::path::PathBuf>,
}

impl OutputArgs {
    /// The files asked for with `--export-*`, each with its format.
    pub fn exports(&self) -> Vec<(Format, &std::path::Path)> {
        [
            (Format::Json, &self.export_json),
            (Format::Csv, &self.export_csv),
            (Format::Markdown, &self.export_markdown),
        ]
        .into_iter()
        .filter_map(|(f, p)| p.as_deref().map(|p| (f, p)))
        .collect()
    }
}

/// An export file: one that does not exist yet (checked before any work; never replaced).
fn new_file(text: &str) -> Result<std::path::PathBuf, String> {
    let path = std::path::PathBuf::from(text);
    if text.is_empty() {
        return Err("expected a file name".into());
    }
    if path.symlink_metadata().is_ok() {
        return Err(format!(
            "'{text}' exists; iolab does not replace it: remove it or name another file"
        ));
    }
    match path.parent().filter(|d| !d.as_os_str().is_empty()) {
        Some(dir) if !dir.is_dir() => {
            Err(format!("'{}' is not a directory", iolab::shown::path(dir)))
        }
        _ => Ok(path),
    }
}

/// How many threads, and how many io_uring requests each keeps in flight.
#[derive(Debug, Args)]
pub struct EngineArgs {
    /// Threads, each with its own contiguous part of the file
    #[arg(long, default_value = "1", value_parser = threads)]
    pub threads: usize,
    /// io_uring requests in flight per thread
    #[arg(long, default_value_t = EngineOptions::default().depth, value_parser = depth)]
    pub depth: u32,
}

/// How blocks are visited and spread over threads.
#[derive(Debug, Args)]
pub struct WorkloadArgs {
    /// seq or random (a seeded permutation: every block once)
    #[arg(long, value_enum, default_value_t = Pattern::Seq)]
    pub pattern: Pattern,
    /// Seed of the random order and the written data
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    #[command(flatten)]
    pub engine: EngineArgs,
}

impl WorkloadArgs {
    /// The library's shape of a workload.
    pub fn shape(&self) -> Shape {
        Shape {
            pattern: self.pattern,
            seed: self.seed,
            threads: self.engine.threads,
            depth: self.engine.depth,
            sqpoll: false,
        }
    }
}

/// The files a command moves, in the order given.
#[derive(Debug, Args)]
pub struct FileList {
    /// Files, in the order they go
    #[arg(required = true, value_name = "FILES")]
    pub files: Vec<std::path::PathBuf>,
}

/// Page-cache state before each run.
#[derive(Debug, Args)]
pub struct CacheArgs {
    /// warm (load and verify), cold (evict and verify), asis [default: warm for read, asis for run]
    #[arg(long, value_enum)]
    pub cache: Option<CacheMode>,
    /// With --cache cold, as root: also sync and drop every clean cache (drop_caches)
    #[arg(long)]
    pub drop_all: bool,
}

/// What both transfer sides share.
#[derive(Debug, Args)]
pub struct NetArgs {
    /// Parallel connections (files go round-robin)
    #[arg(long, default_value = "1", value_parser = positive)]
    pub connections: usize,
    /// A file holding the shared secret both sides must prove (or set IOLAB_TOKEN)
    #[arg(long, conflicts_with = "token")]
    pub token_file: Option<std::path::PathBuf>,
    /// The secret itself: visible to every local user in the process list; prefer --token-file
    #[arg(long)]
    pub token: Option<String>,
    /// Serve without a token: whoever connects first gets the files (needed to listen beyond
    /// loopback, or to serve a file other users cannot read, without one)
    #[arg(long, conflicts_with_all = ["token", "token_file"])]
    pub no_token: bool,
    /// Give up on a peer idle this long
    #[arg(long, default_value = "30s", value_parser = duration)]
    pub timeout: Duration,
    /// Longest time for the handshake and for each file header, however the bytes trickle in
    #[arg(long, default_value = "10s", value_parser = duration)]
    pub handshake_timeout: Duration,
    /// After --timeout, give up on a file moving slower than this per second (0: never)
    #[arg(long, default_value = "64K", value_parser = size)]
    pub min_rate: u64,
    /// A raw byte stream, as nc and the course's programs speak: no hello, header or checksum;
    /// one connection per file, in order; a file ends when the sender closes
    #[arg(long)]
    pub raw: bool,
    /// Print each mapped page's descriptor (address, pagemap entry, PFN, flags) as the course's
    /// module printed to dmesg (mmap only; PFNs and flags need root)
    #[arg(long)]
    pub pages: bool,
    #[command(flatten)]
    pub sizes: SizeArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// How many bytes each step of a transfer moves.
#[derive(Debug, Args)]
pub struct SizeArgs {
    /// Bytes per read/write/splice call [default: 1MiB; the course used 512]
    #[arg(long, value_parser = size_usize)]
    pub chunk: Option<usize>,
    /// Bytes per mapped window, whole pages, each window sent in one call [default: the whole
    /// file; the course used 8192]
    #[arg(long, value_parser = size_usize)]
    pub map_size: Option<usize>,
    /// The course's sizes: --chunk 512 --map-size 8192
    #[arg(long, conflicts_with_all = ["chunk", "map_size"])]
    pub classic_sizes: bool,
}

impl SizeArgs {
    /// The sizes asked for, iolab's defaults where none was given.
    pub fn sizes(&self) -> iolab::transfer::ChunkSizes {
        use iolab::transfer::ChunkSizes;
        if self.classic_sizes {
            return ChunkSizes::CLASSIC;
        }
        ChunkSizes {
            chunk: self.chunk.unwrap_or(ChunkSizes::DEFAULT_CHUNK),
            map_size: self.map_size,
        }
    }
}

/// A size that fits in memory: at least 1 byte, at most 1 GiB.
pub fn size_usize(text: &str) -> Result<usize, String> {
    match size(text)? {
        0 => Err("must be at least 1 byte".into()),
        n if n > 1 << 30 => Err("must be at most 1GiB".into()),
        n => Ok(n as usize),
    }
}

/// A file read by methods each in a memory cgroup of its own (`squeeze`, `pollute`).
#[derive(Debug, Args)]
pub struct GroupArgs {
    /// The file the methods read (larger than --memory)
    pub file: std::path::PathBuf,
    /// The memory limit of each method's cgroup (everything the method's process uses, its page
    /// cache included)
    #[arg(long, value_parser = size, value_name = "SIZE")]
    pub memory: u64,
    /// Make the groups under this cgroup directory (a subtree delegated to you) instead of the
    /// hierarchy's root
    #[arg(long, value_name = "DIR")]
    pub cgroup_parent: Option<std::path::PathBuf>,
}

impl NetArgs {
    /// The settings both sides take from these arguments.
    pub fn link(&self) -> Result<iolab::transfer::Link, iolab::Error> {
        Ok(iolab::transfer::Link {
            connections: self.connections,
            token: self.token()?,
            pace: iolab::transfer::protocol::Pace {
                idle: self.timeout,
                handshake: self.handshake_timeout,
                min_rate: self.min_rate,
            },
            raw: self.raw,
            sizes: self.sizes.sizes(),
            pages: self.pages,
        })
    }

    /// The sender's settings for `files` by `method`.
    pub fn send_config(
        &self,
        files: Vec<std::path::PathBuf>,
        method: iolab::transfer::SendMethod,
    ) -> Result<iolab::transfer::sender::SendConfig, iolab::Error> {
        Ok(iolab::transfer::sender::SendConfig {
            files,
            method,
            link: self.link()?,
        })
    }

    /// The receiver's settings, from `connect` into `out` by `method`.
    pub fn recv_config(
        &self,
        connect: String,
        out: std::path::PathBuf,
        method: iolab::transfer::RecvMethod,
    ) -> Result<iolab::transfer::receiver::RecvConfig, iolab::Error> {
        Ok(iolab::transfer::receiver::RecvConfig {
            link: self.link()?,
            ..iolab::transfer::receiver::RecvConfig::new(connect, out, method)
        })
    }

    /// The token: from `--token-file` (its first line), `--token` (with a warning: every local
    /// user sees it in /proc/PID/cmdline), else a non-empty IOLAB_TOKEN.
    pub fn token(&self) -> Result<Option<String>, iolab::Error> {
        if let Some(path) = &self.token_file {
            return read_token_file(path).map(Some);
        }
        if let Some(t) = &self.token {
            check_token(t).map_err(|why| iolab::Error::usage("invalid --token", why))?;
            eprintln!(
                "iolab: warning: --token is visible to every local user (ps, /proc/PID/cmdline); use --token-file FILE or IOLAB_TOKEN"
            );
            return Ok(Some(t.clone()));
        }
        Ok(std::env::var("IOLAB_TOKEN").ok().filter(|t| !t.is_empty()))
    }
}

/// The most a token file is read: a secret is a line, not a stream (`/dev/zero` would never end).
pub const TOKEN_FILE_MAX: u64 = 4096;

/// A token is a non-empty line without control characters.
fn check_token(t: &str) -> Result<(), String> {
    if t.is_empty() {
        return Err("the token is empty: an empty secret proves nothing".into());
    }
    if t.chars().any(char::is_control) {
        return Err("the token holds control characters (NUL, escape, ...)".into());
    }
    Ok(())
}

/// The first line of a token file, read to at most [`TOKEN_FILE_MAX`] bytes (a pipe such as
/// `<(pass show x)` works; a device that never ends does not). Warns when the file is owned by
/// another user or writable by others: whoever can change it chooses the secret.
pub fn read_token_file(path: &std::path::Path) -> Result<String, iolab::Error> {
    use std::io::Read;
    use std::os::unix::fs::MetadataExt;
    let file = std::fs::File::open(path)
        .map_err(|e| iolab::Error::io("cannot read the token", path, &e))?;
    if let Ok(m) = file.metadata()
        && m.is_file()
    {
        let mine = m.uid() == iolab::sys::euid();
        // Writable by every user, or by a group of another's: anyone of them chooses it.
        if m.mode() & 0o002 != 0 || (!mine && m.mode() & 0o020 != 0) {
            return Err(iolab::Error::usage(
                "refusing the token file",
                format!(
                    "it is writable by {}: whoever can change it chooses the secret",
                    if m.mode() & 0o002 != 0 {
                        "every user"
                    } else {
                        "another user's group"
                    }
                ),
            )
            .at(path)
            .hint("make it yours and private: chmod 600"));
        }
        // Root's own file is as trusted as root.
        if (!mine && m.uid() != 0) || m.mode() & 0o022 != 0 {
            eprintln!(
                "iolab: warning: {}: the token file is {}: whoever can change it chooses the secret",
                iolab::shown::path(path),
                if mine {
                    "writable by other users"
                } else {
                    "owned by another user"
                }
            );
        }
    }
    let mut buf = Vec::new();
    file.take(TOKEN_FILE_MAX + 1)
        .read_to_end(&mut buf)
        .map_err(|e| iolab::Error::io("cannot read the token", path, &e))?;
    let line_end = buf.iter().position(|&b| b == b'\n');
    if line_end.is_none() && buf.len() as u64 > TOKEN_FILE_MAX {
        return Err(iolab::Error::usage(
            "invalid token file",
            format!("no line end in its first {TOKEN_FILE_MAX} bytes: a token is one short line"),
        )
        .at(path));
    }
    let line = &buf[..line_end.unwrap_or(buf.len())];
    let t = String::from_utf8(line.to_vec()).map_err(|_| {
        iolab::Error::usage("invalid token file", "its first line is not UTF-8").at(path)
    })?;
    let t = t.trim_end_matches('\r');
    if t.is_empty() {
        return Err(iolab::Error::usage("empty token", "the file's first line is empty").at(path));
    }
    check_token(t).map_err(|why| iolab::Error::usage("invalid token file", why).at(path))?;
    Ok(t.to_string())
}

/// Bytes asked for by `--count` blocks of `--bs`, or by `--size`; `None` when neither is given.
pub fn byte_len(bs: u64, count: Option<u64>, size: Option<u64>) -> Result<Option<u64>, String> {
    match count {
        Some(c) => bs
            .checked_mul(c)
            .map(Some)
            .ok_or_else(|| format!("--bs {bs} x --count {c} does not fit in 64 bits")),
        None => Ok(size),
    }
}

/// A size: `4096`, `4K`, `1MiB`, `4KB` (1000-based).
pub fn size(text: &str) -> Result<u64, String> {
    iolab::size::parse_size(text).map_err(|e| e.cause)
}

/// A block count of at least 1.
pub fn count(text: &str) -> Result<u64, String> {
    text.trim()
        .parse::<u64>()
        .map_err(|_| format!("expected a whole number of blocks from 1 to {}", u64::MAX))
}

/// A thread count from 1 to 1024.
pub fn threads(text: &str) -> Result<usize, String> {
    match text.trim().parse::<usize>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(n) if n <= 1024 => Ok(n),
        _ => Err("expected a whole number from 1 to 1024".into()),
    }
}

/// A whole number of at least 1.
pub fn positive(text: &str) -> Result<usize, String> {
    match text.trim().parse::<usize>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(n) => Ok(n),
        Err(_) => Err("expected a whole number of at least 1".into()),
    }
}

/// An io_uring queue depth from 1 to 4096.
pub fn depth(text: &str) -> Result<u32, String> {
    match text.trim().parse::<u32>() {
        Ok(n) if (1..=4096).contains(&n) => Ok(n),
        _ => Err("expected a queue depth from 1 to 4096".into()),
    }
}

/// `SENDER:RECEIVER`, e.g. `sendfile:splice`.
pub fn method_pair(text: &str) -> Result<(SendMethod, RecvMethod), String> {
    let (s, r) = text
        .split_once(':')
        .ok_or_else(|| format!("'{text}': expected SENDER:RECEIVER, e.g. read:write"))?;
    Ok((s.parse()?, r.parse()?))
}

/// A duration that may be zero (`0`, `0s`).
pub fn duration_or_zero(text: &str) -> Result<Duration, String> {
    if text.trim().trim_end_matches('s').trim() == "0" {
        return Ok(Duration::ZERO);
    }
    duration(text)
}

/// A duration: `5s`, `500ms`, `200us`, `1m`, or plain seconds (`2.5`).
pub fn duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let value: f64 = num
        .parse()
        .map_err(|_| format!("invalid duration '{text}': expected e.g. 5s, 500ms, 200us, 1m"))?;
    let scale = match unit.trim() {
        "" | "s" => 1.0,
        "ms" => 1e-3,
        "us" | "µs" => 1e-6,
        "ns" => 1e-9,
        "m" | "min" => 60.0,
        _ => {
            return Err(format!(
                "invalid duration '{text}': unknown unit '{unit}'; expected ns, us, ms, s or m"
            ));
        }
    };
    let secs = value * scale;
    if !secs.is_finite() || secs <= 0.0 {
        return Err(format!("invalid duration '{text}': must be above zero"));
    }
    if secs > 1e9 {
        return Err(format!(
            "invalid duration '{text}': at most 1000000000 s (about 31 years)"
        ));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// A time window `MIN..MAX`, e.g. `5s..15s`.
pub fn window(text: &str) -> Result<(Duration, Duration), String> {
    let (a, b) = text
        .split_once("..")
        .ok_or_else(|| format!("invalid window '{text}': expected MIN..MAX, e.g. 5s..15s"))?;
    let (lo, hi) = (duration(a)?, duration(b)?);
    if lo >= hi {
        return Err(format!("invalid window '{text}': MIN must be below MAX"));
    }
    Ok((lo, hi))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_and_windows() {
        assert_eq!(duration("5s").unwrap(), Duration::from_secs(5));
        assert_eq!(duration("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(duration("1.5").unwrap(), Duration::from_millis(1500));
        assert_eq!(duration("1m").unwrap(), Duration::from_secs(60));
        for bad in ["", "0", "-1s", "5x", "s"] {
            assert!(duration(bad).is_err(), "{bad}");
        }
        assert_eq!(
            window("1ms..50ms").unwrap(),
            (Duration::from_millis(1), Duration::from_millis(50))
        );
        assert!(window("5s").is_err());
        assert!(window("15s..5s").is_err());
    }
}
