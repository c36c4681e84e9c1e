//! What the trace keeps of the program's io_uring rings: each ring's layout as it was set up
//! and mapped, its requests in flight, its registered files, and what was seen. `uring.rs` (the
//! ptrace tracer's reader of the rings) fills it; the trace's state only holds it.

use crate::trace::Call;
use rustc_hash::FxHashMap as HashMap;
use std::collections::VecDeque;

pub(super) const SETUP_SQPOLL: u32 = 1 << 1;
pub(super) const SETUP_SQE128: u32 = 1 << 10;
pub(super) const SETUP_CQE32: u32 = 1 << 11;
pub(super) const SETUP_NO_MMAP: u32 = 1 << 14;
pub(super) const SETUP_NO_SQARRAY: u32 = 1 << 16;
/// Setup flags whose rings this module reads as they are laid out; any other flag from 1 << 17
/// on (mixed-size entries, say) makes the ring unread, and said.
pub(super) const SETUP_KNOWN: u32 = (1 << 17) - 1;

/// A submitted read or write waiting for its completion.
#[derive(Debug, Clone)]
pub(super) struct Req {
    pub(super) call: Call,
    pub(super) t: u64,
    pub(super) fd: i32,
    pub(super) file: Option<u32>,
    pub(super) off: Option<u64>,
    pub(super) len: u64,
    pub(super) opcode: u8,
}

/// One ring, as the program set it up and mapped it.
#[derive(Debug, Default)]
pub struct Ring {
    pub(super) flags: u32,
    pub(super) single_mmap: bool,
    /// `io_sqring_offsets`: head, tail, ring_mask, ring_entries, flags, dropped, array.
    pub(super) sq: [u32; 7],
    /// `io_cqring_offsets`: head, tail, ring_mask, ring_entries, overflow, cqes.
    pub(super) cq: [u32; 6],
    pub(super) sq_ring: Option<u64>,
    pub(super) cq_ring: Option<u64>,
    pub(super) sqes: Option<u64>,
    /// Completions read so far (the next index to read).
    pub(super) cq_seen: Option<u32>,
    pub(super) in_flight: HashMap<u64, VecDeque<Req>>,
    /// Registered files: index -> file (None: a descriptor iolab did not know).
    pub(super) fixed: Vec<Option<(i32, Option<u32>)>>,
}

/// Every ring of every process, by (process, descriptor); registered ring indexes.
#[derive(Debug, Default)]
pub struct Rings {
    pub(super) rings: HashMap<(u32, i32), Ring>,
    pub(super) registered: HashMap<(u32, u32), i32>,
}

impl Ring {
    pub(super) fn sqe_size(&self) -> u64 {
        if self.flags & SETUP_SQE128 != 0 {
            128
        } else {
            64
        }
    }

    pub(super) fn cqe_size(&self) -> u64 {
        if self.flags & SETUP_CQE32 != 0 {
            32
        } else {
            16
        }
    }

    pub(super) fn cq_base(&self) -> Option<u64> {
        self.cq_ring
            .or(if self.single_mmap { self.sq_ring } else { None })
    }

    /// Whether its submissions can be read at io_uring_enter.
    pub(super) fn readable(&self) -> Option<&'static str> {
        if self.flags & SETUP_SQPOLL != 0 {
            Some("a kernel thread polls its submission queue (SQPOLL)")
        } else if self.flags & !SETUP_KNOWN != 0 {
            Some("it was set up with flags this iolab does not read")
        } else if self.sq_ring.is_none() || self.sqes.is_none() {
            Some("its rings were not mapped where iolab saw")
        } else {
            None
        }
    }
}
