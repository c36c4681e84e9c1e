//! A job's test files: claimed under a lock, so that two jobs never write one file.

use super::*;

/// The locks a job holds on its test files while it runs ([`IorConfig::claim_targets`]).
#[derive(Debug)]
pub struct Claim {
    pub(super) _held: Option<File>,
}

/// Creates (or with `force` opens) `path` as a regular file and locks it; true when created here.
pub(super) fn claim_file(path: &Path, force: bool) -> Result<(File, bool)> {
    let mut o = OpenOptions::new();
    o.read(true).write(true).custom_flags(libc::O_NOFOLLOW);
    if force {
        o.create(true);
    } else {
        o.create_new(true);
    }
    let existed = path.symlink_metadata().is_ok();
    let f = o.open(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::AlreadyExists => Error::usage(
            "refusing to overwrite",
            format!(
                "{} exists (it appeared just now: another run?; add --force to write over it)",
                crate::shown::path(path)
            ),
        ),
        _ => Error::io("cannot open for writing", path, &e),
    })?;
    let created = !force || !existed;
    let refuse = |why: &str| {
        if created {
            let _ = std::fs::remove_file(path);
        }
        Error::usage("refusing to write over it", why.to_string()).at(path)
    };
    if !f.metadata().is_ok_and(|m| m.file_type().is_file()) {
        return Err(refuse(
            "it is not a regular file (a link, device, FIFO or socket): --force replaces only files",
        ));
    }
    match f.try_lock() {
        Ok(()) => Ok((f, created)),
        Err(std::fs::TryLockError::WouldBlock) => Err(Error::failed(
            "refusing to write over it",
            "another iolab ior is using this file now",
        )
        .at(path)),
        // A file system without locks: the exclusive create above still keeps two runs apart.
        Err(std::fs::TryLockError::Error(_)) => Ok((f, created)),
    }
}
