//! What `syscalls` concludes: the cost of a system call.

use super::SyscallsResult;
use crate::measure::finding::{Better, Finding, Pairing, Side, compare, usable};

/// What a 1-byte read costs against the null system call.
pub fn syscall_costs(s: &SyscallsResult) -> Option<Finding> {
    let row = |n: &str| {
        s.rows
            .iter()
            .find(|r| r.name == n && usable(&r.ns, &r.unsupported))
    };
    let (read, null) = (row("read-1b")?, row("getppid")?);
    let side = |r: &crate::experiments::syscalls::SyscallRow| Side {
        name: r.name.clone(),
        s: r.ns.clone(),
        cite: format!("syscalls: {}", r.name),
    };
    let mut f = compare(
        "syscall-cost",
        "a 1-byte read against the null system call",
        "ns",
        Better::Lower,
        // Every round samples every call once: the two rows share their rounds.
        Pairing::Paired(crate::measure::decide::Spend {
            looks: 1,
            level: s.level,
        }),
        side(read),
        side(null),
    )?;
    f.text.push_str(&format!(
        "; 1-byte reads move {:.1} MiB/s",
        1e9 / read.ns.median / 1_048_576.0
    ));
    Some(f)
}
