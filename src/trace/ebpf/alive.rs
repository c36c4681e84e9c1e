//! Processes known by pid and birth. A pid alone may name a later process once the first has
//! ended (`pid_max` is 32,768 on this machine kind, and a busy build goes round it in
//! seconds): each followed process is kept with its birth, looked up by both, and signalled
//! only through a pidfd checked to be that birth. A process whose exit event was lost (the ring
//! buffer full) is then found ended, never waited for, and its pid never signalled again.

/// Clock ticks of /proc/PID/stat's `starttime` for a birth of `ns` since boot (the kernel's
/// `nsec_to_clock_t`).
pub fn ticks(ns: u64) -> u64 {
    let hz = rustix::param::clock_ticks_per_second().max(1);
    ns / (1_000_000_000 / hz)
}

/// Process `pid`'s birth (clock ticks since boot) and whether it has ended (a zombie, or
/// dead), from /proc/PID/stat; None when there is no such process.
pub fn stat(pid: u32) -> Option<(u64, bool)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The name may hold anything, spaces and parentheses too: the fields follow its last ')'.
    let rest = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let state = fields.first()?;
    let birth = fields.get(19)?.parse().ok()?;
    Some((birth, matches!(*state, "Z" | "X" | "x")))
}

/// Whether `pid` is still the process born at `birth` (ticks) and has not ended.
pub fn running(pid: u32, birth: u64) -> bool {
    stat(pid).is_some_and(|(b, ended)| b == birth && !ended)
}

/// Sends `sig` to `pid` only if it is the process born at `birth` (ticks): through a pidfd
/// opened first and checked after, so that a pid given to another process meanwhile is never
/// signalled. Whether it was sent.
pub fn signal(pid: u32, birth: u64, sig: i32) -> bool {
    let Some(p) = rustix::process::Pid::from_raw(pid as i32) else {
        return false;
    };
    let Ok(fd) = rustix::process::pidfd_open(p, rustix::process::PidfdFlags::empty()) else {
        return false;
    };
    // The pidfd names whichever process had the pid at its opening; that one is ours only if
    // the pid still has our birth now (a process that ended frees its pid only after).
    if stat(pid).is_none_or(|(b, _)| b != birth) {
        return false;
    }
    let Some(sig) = rustix::process::Signal::from_named_raw(sig) else {
        return false;
    };
    rustix::process::pidfd_send_signal(&fd, sig).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_is_known_by_its_birth_and_a_wrong_birth_is_never_signalled() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let pid = child.id();
        let (birth, ended) = stat(pid).unwrap();
        assert!(!ended);
        assert!(running(pid, birth));
        // Another birth under the same pid: a stranger, left alone.
        assert!(!running(pid, birth + 1));
        assert!(!signal(pid, birth + 1, libc::SIGKILL));
        assert!(
            child.try_wait().unwrap().is_none(),
            "a stranger was signalled"
        );
        assert!(signal(pid, birth, libc::SIGKILL));
        child.wait().unwrap();
        assert!(stat(pid).is_none() || !running(pid, birth));
        // Our own birth, as the probe gives it (ns since boot) and /proc says it.
        let me = stat(std::process::id()).unwrap().0;
        assert!(me > 0);
        assert_eq!(
            ticks(1_000_000_000),
            rustix::param::clock_ticks_per_second()
        );
    }

    #[test]
    fn a_zombie_has_ended() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        // Not reaped: a zombie once it exits.
        let birth = stat(pid).unwrap().0;
        let t = std::time::Instant::now();
        while running(pid, birth) {
            assert!(t.elapsed().as_secs() < 30, "true never ended");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert_eq!(stat(pid).map(|s| s.1), Some(true));
        child.wait().unwrap();
    }
}
