//! The ring's buffer slots: how many beyond the depth, and which free one the next request
//! takes.

/// Slots beyond the depth: a completion's slot stays busy while its block is digested, and a
/// spare lets the next request go out first, so the device keeps `depth` requests while the
/// thread XORs (before, the queue ran one short during the XOR of each block). One: every slot
/// is touched once, and on this VM a fresh buffer's first touch costs about 1.4 ms per MiB (the
/// host backs it then); 4 spares of 4 MiB cost more than they gained (cold 2 GiB at 4 MiB x 8:
/// 0.95 of fio with one spare, 0.89 with none, 0.87-0.92 with four, medians of 5-10 rounds).
pub const SPARE_SLOTS: usize = 1;

/// Slots beyond the depth: [`SPARE_SLOTS`] for buffered reads; for O_DIRECT, whose free slots
/// are taken oldest first ([`take_free`]), as many as fill 4 MiB, one to three, so a request
/// goes into a buffer whose XOR ended two or more blocks ago, out of this core's cache. Cold
/// 2 GiB at 1 MiB x 8 as it is on this VM, four interleaved runs, XOR every byte: 3074-3300
/// MiB/s with one spare, 3509-3625 with three, 3423-3573 with eight; the same reads XORing
/// nothing, 3588-3696. A 4 MiB block keeps the one spare measured for it above.
pub fn spare_slots(direct: bool, slot_len: usize) -> usize {
    match direct {
        true => ((4 << 20) / slot_len.max(1)).clamp(1, 3),
        false => SPARE_SLOTS,
    }
}

/// The slot the next request reads into, from the free slots, which are pushed at the back as
/// their blocks are digested. The device writes an O_DIRECT read into memory itself, and into
/// a buffer the CPU has just read (a block just XORed, likely its lines in this core's cache)
/// that took 1.7-2.2x as long on this VM (see [`crate::engine::direct`]): O_DIRECT takes the
/// slot digested longest ago (the front). A buffered read is a copy by this CPU, faster into
/// lines it holds: the slot digested last (the back).
pub(super) fn take_free(
    free: &mut std::collections::VecDeque<usize>,
    direct: bool,
) -> Option<usize> {
    match direct {
        true => free.pop_front(),
        false => free.pop_back(),
    }
}

/// Undoes [`take_free`].
pub(super) fn give_back(free: &mut std::collections::VecDeque<usize>, direct: bool, slot: usize) {
    match direct {
        true => free.push_front(slot),
        false => free.push_back(slot),
    }
}
