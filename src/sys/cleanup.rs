//! Partial outputs and the signals that must not leave them behind. Paths being made are kept in a
//! lock-free table; on SIGINT or SIGTERM a signal handler removes them (files, and directories
//! with what is in them) using only async-signal-safe system calls, says so on stderr and exits
//! 128 + the signal. No helper thread: a second thread would make every file system call of the
//! measured loops slower (the kernel's single-threaded fast path for file descriptors).

use std::ffi::{CStr, CString};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::{AtomicI32, AtomicPtr, Ordering};

const SLOTS: usize = 1024;

static TABLE: [AtomicPtr<libc::c_char>; SLOTS] =
    [const { AtomicPtr::new(std::ptr::null_mut()) }; SLOTS];

/// Child processes to end before the paths are removed (a child inside a cgroup keeps the
/// group's directory busy): pids, 0 for a free slot.
static CHILDREN: [AtomicI32; 16] = [const { AtomicI32::new(0) }; 16];

/// Puts child `pid` in the table, so that a signal kills and reaps it before the paths are
/// removed; returns its slot (`None` when the table is full).
pub fn register_child(pid: u32) -> Option<usize> {
    let pid = i32::try_from(pid).ok()?;
    CHILDREN.iter().position(|slot| {
        slot.compare_exchange(0, pid, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
    })
}

/// Takes child slot `i` out of the table (the child has been waited for).
pub fn unregister_child(i: usize) {
    if let Some(slot) = CHILDREN.get(i) {
        slot.store(0, Ordering::SeqCst);
    }
}

/// Kills and reaps every registered child. Async-signal-safe.
fn end_children() {
    for slot in CHILDREN.iter() {
        let pid = slot.swap(0, Ordering::SeqCst);
        if pid > 0 {
            // kill and waitpid (rustix's raw system calls: no lock, no allocation) are
            // async-signal-safe; `pid` is our own child, which stays unreaped (a zombie at
            // worst) until this waitpid, so the id cannot be reused.
            if let Some(pid) = rustix::process::Pid::from_raw(pid) {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
                let _ = rustix::process::waitpid(Some(pid), rustix::process::WaitOptions::empty());
            }
        }
    }
}

/// The signal that interrupted the run (SIGINT, SIGTERM or SIGHUP), 0 before any.
pub(super) static INTERRUPTED: AtomicI32 = AtomicI32::new(0);

/// Puts `path` in the table; returns its slot, or `None` when the table is full or the path
/// holds a NUL (then it is simply not removed on a signal).
pub fn register(path: &Path) -> Option<usize> {
    let raw = CString::new(path.as_os_str().as_bytes()).ok()?.into_raw();
    for (i, slot) in TABLE.iter().enumerate() {
        if slot
            .compare_exchange(
                std::ptr::null_mut(),
                raw,
                Ordering::SeqCst,
                Ordering::SeqCst,
            )
            .is_ok()
        {
            return Some(i);
        }
    }
    // SAFETY: `raw` came from CString::into_raw just above and was never shared.
    drop(unsafe { CString::from_raw(raw) });
    None
}

/// Takes slot `i` out of the table. Its string is left allocated on purpose: a signal handler
/// running on another thread may be reading it at this very moment.
pub fn unregister(i: usize) {
    if let Some(slot) = TABLE.get(i) {
        slot.store(std::ptr::null_mut(), Ordering::SeqCst);
    }
}

/// Removes `name` in `dir`: a file, or a directory with everything in it (depth-first, read
/// by `getdents64` into a stack buffer, never following a link). Async-signal-safe: rustix's raw
/// system calls only, no allocation.
fn remove_tree(dir: BorrowedFd<'_>, name: &CStr, depth: u32) -> bool {
    use rustix::fs::{AtFlags, Mode, OFlags, RawDir, SeekFrom};
    match rustix::fs::unlinkat(dir, name, AtFlags::empty()) {
        Ok(()) => return true,
        Err(e) if e != rustix::io::Errno::ISDIR || depth > 16 => return false,
        Err(_) => {}
    }
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let Ok(fd) = rustix::fs::openat(dir, name, flags, Mode::empty()) else {
        return false;
    };
    let mut buf = [MaybeUninit::<u8>::uninit(); 4096];
    loop {
        let mut removed_any = false;
        let mut entries = RawDir::new(&fd, &mut buf);
        while let Some(Ok(entry)) = entries.next() {
            let n = entry.file_name();
            if n != c"." && n != c".." {
                removed_any |= remove_tree(fd.as_fd(), n, depth + 1);
            }
        }
        if !removed_any {
            break;
        }
        // Entries moved under us: read the directory from its start again.
        if rustix::fs::seek(&fd, SeekFrom::Start(0)).is_err() {
            break;
        }
    }
    // Closed (dropped), then the now empty directory removed.
    drop(fd);
    rustix::fs::unlinkat(dir, name, AtFlags::REMOVEDIR).is_ok()
}

/// Removes every path in the table; returns how many went. Async-signal-safe.
pub fn remove_all() -> usize {
    let mut n = 0;
    for slot in TABLE.iter() {
        let p = slot.load(Ordering::SeqCst);
        if p.is_null() {
            continue;
        }
        // SAFETY: a registered pointer came from CString::into_raw and is never freed (see
        // `unregister`): a NUL-terminated string that stays allocated.
        let path = unsafe { CStr::from_ptr(p) };
        if remove_tree(rustix::fs::CWD, path, 0) {
            n += 1;
        }
    }
    n
}

/// Writes `parts` to stderr with write(2) only.
fn say(parts: &[&[u8]]) {
    // Stderr's descriptor alone (no lock taken); a short or failed write is acceptable here.
    let err = std::io::stderr();
    for p in parts {
        let _ = rustix::io::write(err.as_fd(), p);
    }
}

extern "C" fn on_signal(sig: libc::c_int) {
    INTERRUPTED.store(sig, Ordering::SeqCst);
    end_children();
    let n = remove_all();
    let what: &[u8] = match sig {
        libc::SIGTERM => b"\niolab: terminated",
        libc::SIGHUP => b"\niolab: hung up",
        _ => b"\niolab: interrupted",
    };
    // The count in decimal, without allocating.
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    let mut v = n;
    loop {
        i -= 1;
        digits[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    if n > 0 {
        say(&[what, b": removed ", &digits[i..], b" partial output(s)\n"]);
    } else {
        say(&[what, b"\n"]);
    }
    // SAFETY: _exit is async-signal-safe and ends the process at once.
    unsafe { libc::_exit(128 + sig) };
}

/// From now on SIGINT, SIGTERM and SIGHUP (the terminal closed) remove the partial outputs and
/// end the process with 130 / 143 / 129.
pub fn install() -> std::io::Result<()> {
    on_interrupts(on_signal)
}

extern "C" fn on_signal_note(sig: libc::c_int) {
    INTERRUPTED.store(sig, Ordering::SeqCst);
}

/// From now on SIGINT, SIGTERM and SIGHUP only set the flag [`super::interrupted`] reads, and interrupt a
/// blocking wait (no `SA_RESTART`): for `iolab trace`, which stops its program and keeps what it
/// recorded.
pub fn note_interrupts() -> std::io::Result<()> {
    on_interrupts(on_signal_note)
}

/// SIGINT, SIGTERM and SIGHUP go to `handler` (no flags: no `SA_RESTART`). Both handlers here make only
/// async-signal-safe calls (`on_signal`) or store to an atomic (`on_signal_note`).
fn on_interrupts(handler: extern "C" fn(libc::c_int)) -> std::io::Result<()> {
    use nix::sys::signal::{SaFlags, SigAction, SigHandler, SigSet, Signal, sigaction};
    let sa = SigAction::new(
        SigHandler::Handler(handler),
        SaFlags::empty(),
        SigSet::empty(),
    );
    for sig in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP] {
        // SAFETY: both handlers make only async-signal-safe calls (`on_signal`) or store to an
        // atomic (`on_signal_note`).
        unsafe { sigaction(sig, &sa) }?;
    }
    Ok(())
}

/// From now on SIGINT, SIGTERM and SIGHUP are ignored: for a helper process whose parent ends
/// it (and cleans up) when the user interrupts.
pub fn ignore_interrupts() -> std::io::Result<()> {
    use nix::sys::signal::{SigHandler, Signal, signal};
    for sig in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP] {
        // SAFETY: ignoring a signal installs no handler and has no memory effects.
        unsafe { signal(sig, SigHandler::SigIgn) }?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn removes_registered_files_and_trees_and_nothing_else() {
        let top = tempfile::tempdir().unwrap();
        let f = top.path().join("f");
        std::fs::write(&f, b"x").unwrap();
        let d = top.path().join("d");
        std::fs::create_dir_all(d.join("a/b")).unwrap();
        for i in 0..300 {
            std::fs::write(d.join(format!("a/b/file-with-a-longish-name-{i}")), b"y").unwrap();
        }
        std::fs::write(d.join("top"), b"z").unwrap();
        let keep = top.path().join("keep");
        std::fs::write(&keep, b"k").unwrap();
        let c = |p: &Path| CString::new(p.as_os_str().as_bytes()).unwrap();
        // remove_all works on the whole process's table, which other tests use too: the tree
        // removal itself is what is checked here, on our own paths.
        assert!(remove_tree(rustix::fs::CWD, &c(&f), 0));
        assert!(remove_tree(rustix::fs::CWD, &c(&d), 0));
        assert!(!remove_tree(
            rustix::fs::CWD,
            &c(&top.path().join("never")),
            0
        ));
        assert!(!f.exists() && !d.exists());
        // The table takes and gives back slots.
        let i = register(&keep).unwrap();
        unregister(i);
        assert!(TABLE[i].load(Ordering::SeqCst).is_null());
        assert!(keep.exists());
    }
}
