//! `/proc/self/smaps` as `pmap -x` rows, and VmSize/VmRSS from `/proc/self/status`.

use serde::{Deserialize, Serialize};

/// One mapping, sizes in KiB as smaps gives them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MapRow {
    /// Start address.
    pub start: u64,
    /// End address.
    pub end: u64,
    /// `r-xp` and the like.
    pub perms: String,
    /// Offset in the mapped file.
    pub offset: u64,
    /// The mapped path, `[heap]`, `[stack]`..., or empty for anonymous memory.
    pub name: String,
    /// Size, KiB.
    pub size_kb: u64,
    /// Resident, KiB.
    pub rss_kb: u64,
    /// Shared_Dirty + Private_Dirty.
    pub dirty_kb: u64,
    /// Anonymous, KiB.
    pub anonymous_kb: u64,
    /// Anonymous memory on transparent huge pages, KiB.
    #[serde(default)]
    pub anon_huge_kb: u64,
}

/// Parses smaps text. Lines it does not know are skipped, so newer kernels' fields do no harm.
pub fn parse(text: &str) -> Vec<MapRow> {
    let mut rows: Vec<MapRow> = Vec::new();
    for line in text.lines() {
        if let Some(row) = header(line) {
            rows.push(row);
            continue;
        }
        let Some(row) = rows.last_mut() else { continue };
        let Some((key, rest)) = line.split_once(':') else {
            continue;
        };
        let kb = || {
            rest.split_whitespace()
                .next()
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(0)
        };
        match key {
            "Size" => row.size_kb = kb(),
            "Rss" => row.rss_kb = kb(),
            "Shared_Dirty" | "Private_Dirty" => row.dirty_kb += kb(),
            "Anonymous" => row.anonymous_kb = kb(),
            "AnonHugePages" => row.anon_huge_kb = kb(),
            _ => {}
        }
    }
    rows
}

/// A mapping's first line: `start-end perms offset dev inode [name]`.
fn header(line: &str) -> Option<MapRow> {
    let mut parts = line.splitn(6, char::is_whitespace);
    let range = parts.next()?;
    let (s, e) = range.split_once('-')?;
    let start = u64::from_str_radix(s, 16).ok()?;
    let end = u64::from_str_radix(e, 16).ok()?;
    let perms = parts.next()?;
    if perms.len() != 4 {
        return None;
    }
    let offset = u64::from_str_radix(parts.next()?, 16).ok()?;
    let _dev = parts.next()?;
    let _inode = parts.next()?;
    let name = parts.next().unwrap_or("").trim().to_string();
    Some(MapRow {
        start,
        end,
        perms: perms.to_string(),
        offset,
        name,
        size_kb: 0,
        rss_kb: 0,
        dirty_kb: 0,
        anonymous_kb: 0,
        anon_huge_kb: 0,
    })
}

/// The current process's mappings.
pub fn read_self() -> std::io::Result<Vec<MapRow>> {
    Ok(parse(&std::fs::read_to_string("/proc/self/smaps")?))
}

/// VmSize and VmRSS in KiB from status text.
pub fn parse_status(text: &str) -> (u64, u64) {
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap_or(0)
    };
    (field("VmSize"), field("VmRSS"))
}

/// `(VmSize, VmRSS)` of this process in KiB, from /proc/self/status.
pub fn read_status() -> (u64, u64) {
    std::fs::read_to_string("/proc/self/status")
        .map(|t| parse_status(&t))
        .unwrap_or((0, 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = include_str!("../../tests/fixtures/smaps.txt");

    #[test]
    fn parses_a_captured_sample() {
        let rows = parse(SAMPLE);
        assert!(rows.len() >= 2, "{rows:?}");
        let first = &rows[0];
        assert_eq!(first.perms, "r--p");
        assert_eq!(first.name, "/usr/bin/head");
        assert_eq!(first.size_kb, 8);
        assert_eq!(first.rss_kb, 8);
        assert_eq!(first.dirty_kb, 0);
        assert_eq!((first.end - first.start) / 1024, first.size_kb);
        assert_eq!(rows[1].perms, "r-xp");
        assert_eq!(rows[1].offset, 0x2000);
    }

    #[test]
    fn anonymous_and_special_names() {
        let text = "7f00-7f10 rw-p 00000000 00:00 0 \nSize: 4 kB\nRss: 4 kB\nPrivate_Dirty: 4 kB\nShared_Dirty: 0 kB\nAnonymous: 4 kB\nVmFlags: rd wr\n\
                    7ffd0000-7ffd1000 rw-p 00000000 00:00 0                          [stack]\nSize: 4 kB\n";
        let rows = parse(text);
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].name, "");
        assert_eq!((rows[0].dirty_kb, rows[0].anonymous_kb), (4, 4));
        assert_eq!(rows[1].name, "[stack]");
    }

    #[test]
    fn status_and_live() {
        assert_eq!(
            parse_status("Name: x\nVmSize:\t  3896 kB\nVmRSS:\t 1896 kB\n"),
            (3896, 1896)
        );
        let rows = read_self().unwrap();
        assert!(rows.iter().any(|r| r.name == "[stack]"));
        let (size, rss) = read_status();
        assert!(size > 0 && rss > 0 && rss <= size);
    }
}
