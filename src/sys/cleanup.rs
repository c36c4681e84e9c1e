//! Partial outputs and the signals that must not leave them behind. Paths being made are kept in a
//! lock-free table; on SIGINT or SIGTERM a signal handler removes them (files, and directories
//! with what is in them) using only async-signal-safe system calls, says so on stderr and exits
//! 128 + the signal. No helper thread: a second thread would make every file system call of the
//! measured loops slower (the kernel's single-threaded fast path for file descriptors).

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicPtr, Ordering};

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
            // SAFETY: kill and waitpid are async-signal-safe; `pid` is our own child, which
            // stays unreaped (a zombie at worst) until this waitpid, so the id cannot be reused.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, std::ptr::null_mut(), 0);
            }
        }
    }
}

/// Set when SIGINT or SIGTERM arrived.
pub(super) static INTERRUPTED: AtomicBool = AtomicBool::new(false);

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

/// Removes `path`: a file, or a directory with everything in it (depth-first, by `getdents64`
/// into a stack buffer). Async-signal-safe: system calls only, no allocation.
fn remove_tree(dirfd: libc::c_int, name: *const libc::c_char, depth: u32) -> bool {
    // SAFETY: `name` is a NUL-terminated string that stays allocated (see `unregister`) or a
    // name inside our own stack buffer; unlinkat only reads it.
    if unsafe { libc::unlinkat(dirfd, name, 0) } == 0 {
        return true;
    }
    // SAFETY: reading errno right after the failed call, on this thread.
    let err = unsafe { *libc::__errno_location() };
    if err != libc::EISDIR || depth > 16 {
        return false;
    }
    let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
    // SAFETY: as above; openat returns a new descriptor or -1.
    let fd = unsafe { libc::openat(dirfd, name, flags) };
    if fd < 0 {
        return false;
    }
    let mut buf = [0u8; 4096];
    loop {
        // SAFETY: getdents64 writes at most buf.len() bytes into our stack buffer.
        let n = unsafe {
            libc::syscall(
                libc::SYS_getdents64,
                fd,
                buf.as_mut_ptr(),
                buf.len() as libc::c_uint,
            )
        };
        if n <= 0 {
            break;
        }
        let mut off = 0usize;
        let mut removed_any = false;
        while off < n as usize {
            // struct linux_dirent64: ino u64, off i64, reclen u16, type u8, name[] (NUL-ended).
            let reclen = u16::from_ne_bytes([buf[off + 16], buf[off + 17]]) as usize;
            let name_at = off + 19;
            let is_dot = buf[name_at] == b'.'
                && (buf[name_at + 1] == 0 || (buf[name_at + 1] == b'.' && buf[name_at + 2] == 0));
            if !is_dot {
                removed_any |= remove_tree(fd, buf[name_at..].as_ptr().cast(), depth + 1);
            }
            off += reclen.max(1);
        }
        if removed_any {
            // Entries moved under us: read the directory from its start again.
            // SAFETY: plain lseek on our own descriptor.
            unsafe { libc::lseek(fd, 0, libc::SEEK_SET) };
        }
    }
    // SAFETY: closing the descriptor we opened; then removing the now empty directory.
    unsafe {
        libc::close(fd);
        libc::unlinkat(dirfd, name, libc::AT_REMOVEDIR) == 0
    }
}

/// Removes every path in the table; returns how many went. Async-signal-safe.
pub fn remove_all() -> usize {
    let mut n = 0;
    for slot in TABLE.iter() {
        let p = slot.load(Ordering::SeqCst);
        if !p.is_null() && remove_tree(libc::AT_FDCWD, p, 0) {
            n += 1;
        }
    }
    n
}

/// Writes `parts` to stderr with write(2) only.
fn say(parts: &[&[u8]]) {
    for p in parts {
        // SAFETY: writing our own bytes to fd 2; a short or failed write is acceptable here.
        unsafe { libc::write(2, p.as_ptr().cast(), p.len()) };
    }
}

extern "C" fn on_signal(sig: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
    end_children();
    let n = remove_all();
    let what: &[u8] = if sig == libc::SIGTERM {
        b"\niolab: terminated"
    } else {
        b"\niolab: interrupted"
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

/// From now on SIGINT and SIGTERM remove the partial outputs and end the process with 130 / 143.
pub fn install() -> std::io::Result<()> {
    on_interrupts(on_signal)
}

extern "C" fn on_signal_note(_sig: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// From now on SIGINT and SIGTERM only set the flag [`super::interrupted`] reads, and interrupt a
/// blocking wait (no `SA_RESTART`): for `iolab trace`, which stops its program and keeps what it
/// recorded.
pub fn note_interrupts() -> std::io::Result<()> {
    on_interrupts(on_signal_note)
}

/// SIGINT and SIGTERM go to `handler` (no flags: no `SA_RESTART`). Both handlers here make only
/// async-signal-safe calls (`on_signal`) or store to an atomic (`on_signal_note`).
fn on_interrupts(handler: extern "C" fn(libc::c_int)) -> std::io::Result<()> {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: sigaction is plain data; zeroed then filled in before use.
        let mut sa: libc::sigaction = unsafe { std::mem::zeroed() };
        sa.sa_sigaction = handler as *const () as libc::sighandler_t;
        // SAFETY: `sa` is a valid sigaction; the handler is async-signal-safe (see above).
        let rc = unsafe {
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut())
        };
        if rc != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// From now on SIGINT and SIGTERM are ignored: for a helper process whose parent ends it (and
/// cleans up) when the user interrupts.
pub fn ignore_interrupts() -> std::io::Result<()> {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: setting a signal's disposition to SIG_IGN has no memory effects.
        if unsafe { libc::signal(sig, libc::SIG_IGN) } == libc::SIG_ERR {
            return Err(std::io::Error::last_os_error());
        }
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
        assert!(remove_tree(libc::AT_FDCWD, c(&f).as_ptr(), 0));
        assert!(remove_tree(libc::AT_FDCWD, c(&d).as_ptr(), 0));
        assert!(!remove_tree(
            libc::AT_FDCWD,
            c(&top.path().join("never")).as_ptr(),
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
