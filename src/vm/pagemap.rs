//! Page descriptors from user space: `/proc/self/pagemap` (one 64-bit entry per virtual page:
//! present, swapped, file-backed, soft-dirty, exclusive, and the PFN, which only root sees) and
//! `/proc/kpageflags` (the kernel's flags of a physical page, root only).

use serde::{Deserialize, Serialize};
use std::fs::File;
use std::os::unix::fs::FileExt;

/// What pagemap says of one virtual page.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageEntry {
    /// The page is in memory.
    pub present: bool,
    /// The page is swapped out.
    pub swapped: bool,
    /// A file page or shared anonymous memory.
    pub file_or_shared: bool,
    /// Mapped by this process only.
    pub exclusive: bool,
    /// Written since the soft-dirty bits were cleared.
    pub soft_dirty: bool,
    /// Page frame number; 0 when hidden (without CAP_SYS_ADMIN) or not present.
    pub pfn: u64,
}

/// Decodes one pagemap entry.
pub fn decode_entry(raw: u64) -> PageEntry {
    PageEntry {
        present: raw >> 63 & 1 == 1,
        swapped: raw >> 62 & 1 == 1,
        file_or_shared: raw >> 61 & 1 == 1,
        exclusive: raw >> 56 & 1 == 1,
        soft_dirty: raw >> 55 & 1 == 1,
        pfn: raw & ((1 << 55) - 1),
    }
}

/// kpageflags bit names (include/uapi/linux/kernel-page-flags.h).
pub const FLAG_NAMES: [(u32, &str); 27] = [
    (0, "LOCKED"),
    (1, "ERROR"),
    (2, "REFERENCED"),
    (3, "UPTODATE"),
    (4, "DIRTY"),
    (5, "LRU"),
    (6, "ACTIVE"),
    (7, "SLAB"),
    (8, "WRITEBACK"),
    (9, "RECLAIM"),
    (10, "BUDDY"),
    (11, "MMAP"),
    (12, "ANON"),
    (13, "SWAPCACHE"),
    (14, "SWAPBACKED"),
    (15, "COMPOUND_HEAD"),
    (16, "COMPOUND_TAIL"),
    (17, "HUGE"),
    (18, "UNEVICTABLE"),
    (19, "HWPOISON"),
    (20, "NOPAGE"),
    (21, "KSM"),
    (22, "THP"),
    (23, "OFFLINE"),
    (24, "ZERO_PAGE"),
    (25, "IDLE"),
    (26, "PGTABLE"),
];

/// Names of the kpageflags bits set in `raw`.
pub fn decode_flags(raw: u64) -> Vec<&'static str> {
    FLAG_NAMES
        .iter()
        .filter(|(bit, _)| raw >> bit & 1 == 1)
        .map(|(_, n)| *n)
        .collect()
}

fn read_u64(file: &File, index: u64) -> std::io::Result<u64> {
    let mut b = [0u8; 8];
    file.read_exact_at(&mut b, index * 8)?;
    Ok(u64::from_le_bytes(b))
}

/// Reads the pagemap entries of the pages holding `addrs` (virtual addresses of this process).
pub fn entries(addrs: &[usize]) -> std::io::Result<Vec<PageEntry>> {
    let f = File::open("/proc/self/pagemap")?;
    let page = crate::sys::page_size() as u64;
    addrs
        .iter()
        .map(|a| read_u64(&f, *a as u64 / page).map(decode_entry))
        .collect()
}

/// The kpageflags of a physical page (needs root).
pub fn flags(pfn: u64) -> std::io::Result<u64> {
    read_u64(&File::open("/proc/kpageflags")?, pfn)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_known_entries() {
        let e = decode_entry((1 << 63) | (1 << 61) | (1 << 55) | 0x1234);
        assert!(e.present && e.file_or_shared && e.soft_dirty && !e.swapped && !e.exclusive);
        assert_eq!(e.pfn, 0x1234);
        let s = decode_entry(1 << 62);
        assert!(s.swapped && !s.present);
        assert_eq!(
            decode_entry(0),
            PageEntry {
                present: false,
                swapped: false,
                file_or_shared: false,
                exclusive: false,
                soft_dirty: false,
                pfn: 0
            }
        );
    }

    #[test]
    fn decodes_known_flags() {
        assert_eq!(
            decode_flags((1 << 3) | (1 << 5) | (1 << 11)),
            ["UPTODATE", "LRU", "MMAP"]
        );
        assert_eq!(
            decode_flags((1 << 12) | (1 << 14) | (1 << 22)),
            ["ANON", "SWAPBACKED", "THP"]
        );
        assert!(decode_flags(0).is_empty());
        assert_eq!(
            decode_flags(1 << 40),
            Vec::<&str>::new(),
            "unknown bits are not named"
        );
    }

    #[test]
    fn a_touched_stack_page_is_present() {
        let x = std::hint::black_box(42u64);
        let e = entries(&[&x as *const u64 as usize]).unwrap();
        assert!(e[0].present);
    }
}
