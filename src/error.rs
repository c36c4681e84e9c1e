//! One error type for the whole library. It renders as the one line DESIGN §2 fixes,
//! `<what failed>: <path or peer>: <cause>`, and knows its exit code.

use std::fmt;
use std::io;
use std::path::Path;

/// Why something failed, which decides the exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The work failed: I/O error, peer error, checksum mismatch (exit 1).
    Failed,
    /// The request was wrong: bad arguments, bad sizes, a file that cannot be used (exit 2).
    Usage,
    /// The method is not available on this kernel or filesystem (exit 1).
    Unsupported,
}

/// A failure with the context a user needs to act on it.
#[derive(Debug, Clone)]
pub struct Error {
    pub kind: ErrorKind,
    /// What failed, e.g. "cannot open" or "read failed".
    pub what: String,
    /// The path or peer involved, when there is one.
    pub subject: Option<String>,
    /// The cause, e.g. the OS error text.
    pub cause: String,
    /// A hint, appended after the cause.
    pub hint: Option<String>,
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub fn new(kind: ErrorKind, what: impl Into<String>, cause: impl Into<String>) -> Self {
        Error {
            kind,
            what: what.into(),
            subject: None,
            cause: cause.into(),
            hint: None,
        }
    }

    pub fn failed(what: impl Into<String>, cause: impl Into<String>) -> Self {
        Self::new(ErrorKind::Failed, what, cause)
    }

    pub fn usage(what: impl Into<String>, cause: impl Into<String>) -> Self {
        Self::new(ErrorKind::Usage, what, cause)
    }

    pub fn unsupported(what: impl Into<String>, cause: impl Into<String>) -> Self {
        Self::new(ErrorKind::Unsupported, what, cause)
    }

    /// An I/O error on a path: `what: path: os error text`.
    pub fn io(what: impl Into<String>, path: &Path, err: &io::Error) -> Self {
        Self::failed(what, describe_io(err)).at(path)
    }

    pub fn at(mut self, path: &Path) -> Self {
        self.subject = Some(path.display().to_string());
        self
    }

    pub fn on(mut self, subject: impl Into<String>) -> Self {
        self.subject = Some(subject.into());
        self
    }

    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    pub fn exit_code(&self) -> i32 {
        match self.kind {
            ErrorKind::Usage => 2,
            ErrorKind::Failed | ErrorKind::Unsupported => 1,
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

impl std::error::Error for Error {}

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
    fn io_errors_drop_the_os_error_suffix() {
        let e = io::Error::from_raw_os_error(libc::ENOENT);
        assert_eq!(describe_io(&e), "No such file or directory");
    }
}
