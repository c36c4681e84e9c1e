//! SIGBUS as an error, not a crash. A mapped file that another process truncates raises SIGBUS on
//! the next access past its new end. Registered mappings get a handler that replaces the rest of
//! the mapping from the faulting page on with anonymous zero pages and counts the hit; the access
//! then completes and the engine turns the count into a clear error. A SIGBUS outside every
//! registered mapping gets the default action.

use std::sync::Once;
use std::sync::atomic::{AtomicUsize, Ordering};

const SLOTS: usize = 256;

struct HandlerSlot {
    start: AtomicUsize,
    len: AtomicUsize,
    hits: AtomicUsize,
}

#[allow(clippy::declare_interior_mutable_const)]
const EMPTY: HandlerSlot = HandlerSlot {
    start: AtomicUsize::new(0),
    len: AtomicUsize::new(0),
    hits: AtomicUsize::new(0),
};
static SLOTS_TABLE: [HandlerSlot; SLOTS] = [EMPTY; SLOTS];
static INSTALL: Once = Once::new();

/// A registration of one mapping; `None` slot when the table was full (then SIGBUS kills).
pub struct Guard {
    slot: Option<usize>,
}

impl Guard {
    /// Guards `start..start+len`: a SIGBUS there maps zero pages instead of killing the process.
    pub fn register(start: usize, len: usize) -> Guard {
        INSTALL.call_once(install_handler);
        for (i, s) in SLOTS_TABLE.iter().enumerate() {
            if s.start
                .compare_exchange(0, usize::MAX, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                s.hits.store(0, Ordering::Release);
                s.len.store(len, Ordering::Release);
                s.start.store(start, Ordering::Release);
                return Guard { slot: Some(i) };
            }
        }
        Guard { slot: None }
    }

    /// SIGBUS faults absorbed in the range.
    pub fn hits(&self) -> usize {
        self.slot
            .map(|i| SLOTS_TABLE[i].hits.load(Ordering::Acquire))
            .unwrap_or(0)
    }

    /// Stops guarding the range (before it is unmapped).
    pub fn unregister(&mut self) {
        if let Some(i) = self.slot.take() {
            SLOTS_TABLE[i].len.store(0, Ordering::Release);
            SLOTS_TABLE[i].start.store(0, Ordering::Release);
        }
    }
}

extern "C" fn on_sigbus(sig: libc::c_int, info: *mut libc::siginfo_t, _ctx: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo for SA_SIGINFO handlers.
    let addr = unsafe { (*info).si_addr() } as usize;
    let page = 4096usize;
    for s in SLOTS_TABLE.iter() {
        let start = s.start.load(Ordering::Acquire);
        let len = s.len.load(Ordering::Acquire);
        if start != 0 && start != usize::MAX && addr >= start && addr < start + len {
            let from = addr / page * page;
            // SAFETY: from..start+len lies inside a live registered mapping of ours; replacing
            // it with anonymous memory keeps it valid until the owner unmaps the whole range.
            let p = unsafe {
                libc::mmap(
                    from as *mut libc::c_void,
                    start + len - from,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_FIXED | libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                    -1,
                    0,
                )
            };
            if p != libc::MAP_FAILED {
                s.hits.fetch_add(1, Ordering::AcqRel);
                return;
            }
        }
    }
    // Not ours: restore the default action and return, so the fault repeats and kills as usual.
    // SAFETY: signal() with SIG_DFL is async-signal-safe.
    unsafe { libc::signal(sig, libc::SIG_DFL) };
}

fn install_handler() {
    // SAFETY: sigaction is plain data; zeroed is valid, then filled in below.
    let mut sa: libc::sigaction = unsafe { std::mem::zeroed() };
    sa.sa_sigaction = on_sigbus as *const () as usize;
    sa.sa_flags = libc::SA_SIGINFO | libc::SA_NODEFER;
    // SAFETY: sa is a valid sigaction whose handler only does async-signal-safe work.
    unsafe {
        libc::sigemptyset(&mut sa.sa_mask);
        libc::sigaction(libc::SIGBUS, &sa, std::ptr::null_mut());
    }
}
