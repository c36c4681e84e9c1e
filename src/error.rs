//! One error type for the whole library. It renders as one line (docs/commands.md),
//! `<what failed>: <path or peer>: <cause>`, knows its exit code, and keeps the operating
//! system's error as its [`std::error::Error::source`], so code branches on kinds and error
//! numbers, never on message text.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::io;
use std::path::Path;
use std::sync::Arc;

/// Why something failed, which decides the exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ErrorKind {
    /// The work failed: I/O error, peer error, checksum mismatch (exit 1).
    Failed,
    /// The request was wrong: bad arguments, bad sizes, a file that cannot be used (exit 2).
    Usage,
    /// The method is not available on this kernel or filesystem (exit 1).
    Unsupported,
    /// The request does not suit this method, though it suits others (exit 2): e.g. a block
    /// size O_DIRECT cannot write. A sweep over many methods records it and goes on.
    Unsuited,
    /// A program to run (`iolab trace -- CMD`) was not found (exit 127, as a shell's).
    NotFound,
    /// A program to run is there but cannot be executed (exit 126, as a shell's).
    NotExecutable,
}

/// A failure with the context a user needs to act on it.
#[derive(Debug, Clone)]
pub struct Error {
    /// Why it failed; decides the exit code.
    pub kind: ErrorKind,
    /// What failed, e.g. "cannot open" or "read failed".
    pub what: String,
    /// The path or peer involved, when there is one.
    pub subject: Option<String>,
    /// The cause, e.g. the OS error text.
    pub cause: String,
    /// A hint, appended after the cause.
    pub hint: Option<String>,
    /// The operating system's error behind it, when there is one.
    source: Option<Arc<io::Error>>,
}

/// A result whose error is iolab's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// An error of `kind`: `what` failed because of `cause`.
    pub fn new(kind: ErrorKind, what: impl Into<String>, cause: impl Into<String>) -> Self {
        Error {
            kind,
            what: what.into(),
            subject: None,
            cause: cause.into(),
            hint: None,
            source: None,
        }
    }

    /// The work failed (exit 1).
    pub fn failed(what: impl Into<String>, cause: impl Into<String>) -> Self {
        Self::new(ErrorKind::Failed, what, cause)
    }

    /// The request was wrong (exit 2).
    pub fn usage(what: impl Into<String>, cause: impl Into<String>) -> Self {
        Self::new(ErrorKind::Usage, what, cause)
    }

    /// The method is not available here (exit 1).
    pub fn unsupported(what: impl Into<String>, cause: impl Into<String>) -> Self {
        Self::new(ErrorKind::Unsupported, what, cause)
    }

    /// An I/O error on a path: `what: path: os error text`, keeping the error as the source.
    pub fn io(what: impl Into<String>, path: &Path, err: &io::Error) -> Self {
        let source = match err.raw_os_error() {
            Some(code) => io::Error::from_raw_os_error(code),
            None => io::Error::new(err.kind(), err.to_string()),
        };
        Self::failed(what, describe_io(err))
            .at(path)
            .with_source(source)
    }

    /// Keeps `err` as the cause behind this error (its text is not added to the message).
    pub fn with_source(mut self, err: io::Error) -> Self {
        self.source = Some(Arc::new(err));
        self
    }

    /// The OS error number behind this error, if any (e.g. `libc::EINVAL`).
    pub fn os_error(&self) -> Option<i32> {
        self.source.as_ref().and_then(|e| e.raw_os_error())
    }

    /// Names the path involved.
    pub fn at(mut self, path: &Path) -> Self {
        self.subject = Some(crate::shown::path(path).into_owned());
        self
    }

    /// Names the peer or thing involved.
    pub fn on(mut self, subject: impl Into<String>) -> Self {
        self.subject = Some(subject.into());
        self
    }

    /// Adds a hint on what to do.
    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    /// The process exit code for this error: 1 the work failed, 2 a usage error.
    pub fn exit_code(&self) -> i32 {
        match self.kind {
            ErrorKind::Usage | ErrorKind::Unsuited => 2,
            ErrorKind::Failed | ErrorKind::Unsupported => 1,
            ErrorKind::NotFound => 127,
            ErrorKind::NotExecutable => 126,
        }
    }
}

/// The OS error text without Rust's "(os error N)" noise for the common cases.
pub fn describe_io(err: &io::Error) -> String {
    match err.raw_os_error() {
        Some(code) => {
            let text = io::Error::from_raw_os_error(code).to_string();
            match text.find(" (os error") {
                Some(i) => text[..i].to_string(),
                None => text,
            }
        }
        None => err.to_string(),
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.what)?;
        if let Some(s) = &self.subject {
            write!(f, ": {s}")?;
        }
        write!(f, ": {}", self.cause)?;
        if let Some(h) = &self.hint {
            write!(f, " (hint: {h})")?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_one_line_with_subject_and_hint() {
        let e = Error::failed("cannot open", "No such file or directory")
            .on("/x")
            .hint("check the path");
        assert_eq!(
            e.to_string(),
            "cannot open: /x: No such file or directory (hint: check the path)"
        );
        assert_eq!(e.exit_code(), 1);
        assert_eq!(Error::usage("bad", "x").exit_code(), 2);
    }

    #[test]
    fn io_errors_keep_their_cause_as_the_source() {
        use std::error::Error as _;
        let os = io::Error::from_raw_os_error(libc::EACCES);
        let e = Error::io("cannot open", Path::new("/x"), &os);
        assert_eq!(e.to_string(), "cannot open: /x: Permission denied");
        assert_eq!(e.os_error(), Some(libc::EACCES));
        let src = e.source().expect("the io::Error is kept");
        assert!(src.to_string().contains("Permission denied"));
        assert_eq!(Error::failed("x", "y").os_error(), None);
        assert!(Error::failed("x", "y").source().is_none());
        let unsuited = Error::new(ErrorKind::Unsuited, "invalid block size", "x");
        assert_eq!(unsuited.exit_code(), 2);
    }

    #[test]
    fn io_errors_drop_the_os_error_suffix() {
        let e = io::Error::from_raw_os_error(libc::ENOENT);
        assert_eq!(describe_io(&e), "No such file or directory");
    }
}
