//! Page descriptors from user space: `/proc/self/pagemap` (one 64-bit entry per virtual page:
//! present, swapped, file-backed, soft-dirty, exclusive, and the PFN, which only root sees) and
//! `/proc/kpageflags` (the kernel's flags of a physical page, root only).

use serde::{Deserialize, Serialize};
use std::fs::File;
use std::os::unix::fs::FileExt;

/// What pagemap says of one virtual page.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
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

/// One mapped page as the course's kernel module printed it to dmesg: where it is in the file and
/// in this process, and what pagemap and kpageflags say of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PageDesc {
    /// Offset of the page in the file.
    pub offset: u64,
    /// Virtual address of the page in this process.
    pub addr: usize,
    /// The raw pagemap entry (what a PTE walk would print).
    pub entry: u64,
    /// Page frame number (0 when hidden without root, or not present).
    pub pfn: u64,
    /// kpageflags names (empty without root).
    pub flags: Vec<String>,
}

impl PageDesc {
    /// One line: `page <offset>: addr 0x.. entry 0x.. pfn 0x.. FLAGS`.
    pub fn line(&self) -> String {
        format!(
            "page {:>10}: addr {:#x} entry {:#018x} pfn {:#x} {}",
            self.offset,
            self.addr,
            self.entry,
            self.pfn,
            if self.flags.is_empty() {
                "-".to_string()
            } else {
                self.flags.join(",")
            }
        )
    }
}

/// Why page descriptors are incomplete here, if they are: PFNs and kpageflags need root.
pub fn describe_limit() -> Option<String> {
    if crate::cache::have_root() {
        None
    } else {
        Some("not root: pagemap hides PFNs and /proc/kpageflags is unreadable (run as root for the full descriptors)".into())
    }
}

/// The descriptors of the pages of `len` bytes mapped at `addr`, which hold the file from
/// `file_offset` on. The range must be mapped by this process while this runs.
pub fn describe_range(addr: usize, len: usize, file_offset: u64) -> std::io::Result<Vec<PageDesc>> {
    let map = File::open("/proc/self/pagemap")?;
    // Without root (or told to act so), no flags, and no PFNs: what an ordinary user sees.
    let root = crate::cache::have_root();
    let kflags = File::open("/proc/kpageflags").ok().filter(|_| root);
    let page = crate::sys::page_size();
    let mut out = Vec::with_capacity(len.div_ceil(page));
    for i in 0..len.div_ceil(page) {
        let a = addr + i * page;
        let mut raw = read_u64(&map, a as u64 / page as u64)?;
        if !root {
            raw &= !((1 << 55) - 1);
        }
        let e = decode_entry(raw);
        let flags = match (&kflags, e.pfn) {
            (Some(k), pfn) if pfn != 0 => read_u64(k, pfn)
                .map(|f| decode_flags(f).into_iter().map(String::from).collect())
                .unwrap_or_default(),
            _ => Vec::new(),
        };
        out.push(PageDesc {
            offset: file_offset + (i * page) as u64,
            addr: a,
            entry: raw,
            pfn: e.pfn,
            flags,
        });
    }
    Ok(out)
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
