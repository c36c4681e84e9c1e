//! Results to stdout, and whether they all arrived.

use iolab::Error;
use std::io::Write;

/// Writes results to stdout; a closed stdout (e.g. `| head`) is not an error worth a message.
pub fn out(text: &str) {
    let text = iolab::shown::line(text);
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        output_failed(e);
    }
}

/// The first failure to write the results to stdout (a full file system), said at the end.
static OUT_FAILED: std::sync::Mutex<Option<String>> = std::sync::Mutex::new(None);

/// Keeps the first failure to write stdout. A reader that went away (`| head`) is no failure:
/// what it did not read it did not want.
fn output_failed(e: std::io::Error) {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        return;
    }
    if let Ok(mut f) = OUT_FAILED.lock() {
        f.get_or_insert_with(|| iolab::error::describe_io(&e));
    }
}

/// Whether what was written to stdout all arrived: else why not (the command then fails,
/// exit 1, instead of a success with an empty or cut file behind `>`).
pub fn output_written() -> Result<(), Error> {
    if let Err(e) = std::io::stdout().lock().flush() {
        output_failed(e);
    }
    match OUT_FAILED.lock().ok().and_then(|mut f| f.take()) {
        Some(why) => Err(Error::failed("cannot write the output", why)),
        None => Ok(()),
    }
}
