//! System-wide counters a per-second time series reads: TLB shootdowns (/proc/interrupts), bytes
//! read from one block device (/proc/diskstats), and the device a file lives on.

/// The sum over CPUs of the `TLB:` line of an /proc/interrupts text (`None` where the
/// architecture has no such line, as on arm64).
pub fn tlb_shootdowns(interrupts: &str) -> Option<u64> {
    let line = interrupts
        .lines()
        .find(|l| l.trim_start().starts_with("TLB:"))?;
    let rest = line.trim_start().strip_prefix("TLB:")?;
    // Per-CPU counts, then the description ("TLB shootdowns"): stop at the first word.
    Some(
        rest.split_whitespace()
            .map_while(|w| w.parse::<u64>().ok())
            .sum(),
    )
}

/// Bytes read from device `major:minor` as a /proc/diskstats text counts them (sectors read,
/// the sixth field, in 512-byte units whatever the device's sector size).
pub fn diskstats_read_bytes(diskstats: &str, major: u32, minor: u32) -> Option<u64> {
    diskstats.lines().find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.len() < 6 {
            return None;
        }
        let (ma, mi) = (f[0].parse::<u32>().ok()?, f[1].parse::<u32>().ok()?);
        if (ma, mi) != (major, minor) {
            return None;
        }
        f[5].parse::<u64>().ok().map(|s| s * 512)
    })
}

/// The name /proc/diskstats gives device `major:minor`.
pub fn diskstats_name(diskstats: &str, major: u32, minor: u32) -> Option<String> {
    diskstats.lines().find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        (f.len() >= 3
            && f[0].parse::<u32>().ok() == Some(major)
            && f[1].parse::<u32>().ok() == Some(minor))
        .then(|| f[2].to_string())
    })
}

/// `(major, minor)` of a `st_dev` (glibc's encoding).
pub fn dev_numbers(dev: u64) -> (u32, u32) {
    let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff);
    let minor = (dev & 0xff) | ((dev >> 12) & !0xff);
    (major as u32, minor as u32)
}

/// Bytes read from device `major:minor` now.
pub fn device_read_bytes(major: u32, minor: u32) -> Option<u64> {
    let t = std::fs::read_to_string("/proc/diskstats").ok()?;
    diskstats_read_bytes(&t, major, minor)
}

/// TLB shootdowns so far, over all CPUs.
pub fn tlb_shootdowns_now() -> Option<u64> {
    let t = std::fs::read_to_string("/proc/interrupts").ok()?;
    tlb_shootdowns(&t)
}

#[cfg(test)]
mod tests {
    use super::*;

    const INTERRUPTS: &str = "           CPU0       CPU1
  0:         35          0   IO-APIC   2-edge      timer
NMI:          0          0   Non-maskable interrupts
LOC:   60351840   59771237   Local timer interrupts
TLB:    2598998    2575950   TLB shootdowns
TRM:          0          0   Thermal event interrupts
";

    #[test]
    fn sums_the_tlb_line_over_cpus() {
        assert_eq!(tlb_shootdowns(INTERRUPTS), Some(2598998 + 2575950));
        assert_eq!(tlb_shootdowns("           CPU0\n  0:  1  timer\n"), None);
        // Four CPUs, extra spaces.
        assert_eq!(tlb_shootdowns("TLB: 1 2 3 4 TLB shootdowns\n"), Some(10));
    }

    const DISKSTATS: &str = " 254       0 vda 181245 2036 38151650 97520 411262 252760 42014416 1045219 0 262556 1195613 0 0 0 0 56087 52873
 254       1 vda1 180988 2036 38138754 97431 411262 252760 42014416 1045219 0 262476 1142650 0 0 0 0 0 0
   7       0 loop0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0
";

    #[test]
    fn reads_sectors_of_one_device() {
        assert_eq!(
            diskstats_read_bytes(DISKSTATS, 254, 1),
            Some(38138754 * 512)
        );
        assert_eq!(
            diskstats_read_bytes(DISKSTATS, 254, 0),
            Some(38151650 * 512)
        );
        assert_eq!(diskstats_read_bytes(DISKSTATS, 8, 0), None);
        assert_eq!(diskstats_name(DISKSTATS, 254, 1).as_deref(), Some("vda1"));
        assert_eq!(diskstats_read_bytes("garbage\n1 2\n", 1, 2), None);
    }

    #[test]
    fn splits_device_numbers() {
        assert_eq!(dev_numbers(0xfe01), (254, 1));
        assert_eq!(dev_numbers(0x0801), (8, 1));
        // A large minor (NVMe partitions, device mapper) lives in the high bits.
        let dev: u64 = (259 << 8) | (0x12 << 12 << 8) | 0x34;
        assert_eq!(dev_numbers(dev), (259, 0x1234));
    }

    #[test]
    fn this_machine_has_the_files() {
        let meta = std::fs::metadata("/proc/self/exe").unwrap();
        let _ = dev_numbers(std::os::unix::fs::MetadataExt::dev(&meta));
        // On x86 the TLB line exists; elsewhere None is the stated answer.
        if cfg!(target_arch = "x86_64") {
            assert!(tlb_shootdowns_now().is_some());
        }
    }
}
