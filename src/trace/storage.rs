//! The storage side of a profile: what the run brought into the page cache, to set beside the
//! kernel's count of bytes read from storage.

use super::{Call, FileKind, Trace};
use rustc_hash::FxHashSet as HashSet;

/// The page cache's growth over the run in whole pages (storage reads whole pages, a 100-byte
/// file costs 4 KiB): residency after less before, over the regular files the program did not
/// write (those grew by writing, not from storage); and how many of them hold fewer pages after
/// than before, or none after the program read them (evicted during the run: the growth misses
/// what was read and evicted).
pub fn cache_growth(t: &Trace) -> (u64, usize) {
    let page = crate::sys::page_size() as u64;
    // Residency is kept capped at the file's size: a partial last page is a whole one.
    let pages = |b: u64| b.div_ceil(page) * page;
    // Files the program wrote grew the cache by writing, not from storage: left out.
    let written: HashSet<u32> = t
        .ops
        .iter()
        .filter_map(|o| {
            if o.call.copies() {
                o.to_file
            } else if o.call.writes_file() || o.call == Call::Ftruncate || o.call == Call::Fallocate
            {
                o.file
            } else {
                None
            }
        })
        .collect();
    let read: HashSet<u32> = t
        .ops
        .iter()
        .filter(|o| o.call.reads_file() && o.ret > 0)
        .filter_map(|o| o.file)
        .collect();
    // (before, after, read by the program)
    let both: Vec<(u64, u64, bool)> = t
        .files
        .iter()
        .enumerate()
        .filter(|(i, f)| f.kind == FileKind::File && !written.contains(&(*i as u32)))
        .filter_map(|(i, f)| {
            // A file of size 0 that reads return bytes from is the kernel's (/proc, /sys).
            let r = read.contains(&(i as u32)) && f.size > 0;
            Some((pages(f.resident_before?), pages(f.resident_after?), r))
        })
        .collect();
    let growth = both.iter().map(|(b, a, _)| a.saturating_sub(*b)).sum();
    // Fewer pages after than before, or read and no page left.
    let shrunk = both
        .iter()
        .filter(|(b, a, r)| a < b || (*r && *a == 0))
        .count();
    (growth, shrunk)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_growth_counts_whole_pages_and_files_that_lost_pages() {
        use crate::trace::fixture::{file, op, trace};
        let t = trace(
            vec![
                // Read whole: three pages from storage for 10000 bytes.
                file("/d/a", 10000, 0, 10000),
                // Read, and no page left after: evicted.
                file("/d/b", 100, 0, 0),
                // The kernel's: size 0, reads return bytes, nothing cached.
                file("/sys/x", 0, 0, 0),
                // Fewer pages after than before: evicted.
                file("/d/d", 8192, 8192, 4096),
                // Written: grew by writing, left out.
                file("/d/e", 4096, 0, 4096),
            ],
            vec![
                op(0, 1, "read", Some(0), 0, 10000),
                op(0, 1, "read", Some(1), 0, 100),
                op(0, 1, "read", Some(2), 0, 5),
                op(0, 1, "write", Some(4), 0, 4096),
            ],
            serde_json::json!([]),
        );
        assert_eq!(cache_growth(&t), (12288, 2));
    }
}
