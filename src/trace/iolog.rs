//! A trace as fio's iolog version 3 (`fio --read_iolog=FILE`): one line per file action (`add`,
//! `open`, `close`) and per read, write, sync and datasync of a regular file, each with its time
//! in microseconds from the start. fio's format cannot name files with white space in their path
//! and has no mapped access, and the kernel's files (/proc, /sys) cannot be replayed: those are
//! left out and counted.
//!
//! By default the iolog holds the program's reads only: fio performs an iolog's writes with its
//! own buffer contents, so replaying them overwrites the files the program wrote (an archive, a
//! build's objects, a database updated in place). Writes (and syncs) are kept only when asked
//! ([`Writes::Keep`]). Files the program deleted are left out too: fio would create them.

use super::{Call, FileKind, Trace};
use std::collections::BTreeSet;
use std::fmt::Write;

/// The iolog and what it left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Iolog {
    /// The text, ready for `fio --read_iolog`.
    pub text: String,
    /// Data operations written.
    pub ios: u64,
    /// What was left out, one sentence each.
    pub left_out: Vec<String>,
}

/// Whether the iolog keeps the program's writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Writes {
    /// Reads only: replaying it leaves every file as it is.
    LeaveOut,
    /// Writes and syncs too: fio will overwrite those ranges of those files with its own bytes.
    Keep,
}

/// fio's iolog v3 of `t`'s file reads (and, with [`Writes::Keep`], writes and syncs).
pub fn iolog(t: &Trace, writes: Writes) -> Iolog {
    let mut text = String::from("fio version 3 iolog\n");
    let mut opened = BTreeSet::new();
    let mut left = Left::default();
    let mut ios = 0u64;
    for op in &t.ops {
        // What the call did to files: a read of its own (a copy reads its source too), a
        // write of its destination, or a sync.
        let mut parts: Vec<(Option<u32>, &str, Option<u64>)> = Vec::new();
        if op.call.reads_file() {
            parts.push((op.file, "read", op.off));
        } else if op.call.writes_file() {
            parts.push((op.file, "write", op.off));
        } else if op.call == Call::Fsync {
            parts.push((op.file, "sync", None));
        } else if op.call == Call::Fdatasync {
            parts.push((op.file, "datasync", None));
        }
        if op.call.copies() {
            parts.push((op.to_file, "write", op.to_off));
        }
        for (file, action, off) in parts {
            let Some((i, info)) = file.and_then(|i| t.files.get(i as usize).map(|x| (i, x))) else {
                continue;
            };
            if info.kind != FileKind::File || op.ret < 0 {
                continue;
            }
            if info.path.chars().any(char::is_whitespace) || info.path_hex.is_some() {
                left.spaced.insert(info.path.clone());
                continue;
            }
            if info.is_kernels() {
                left.kernels.insert(info.path.clone());
                continue;
            }
            if writes == Writes::LeaveOut && action != "read" {
                if action == "write" {
                    left.writes += 1;
                    left.written_bytes += op.ret.max(0) as u64;
                    left.written.insert(i);
                }
                continue;
            }
            if info.size_after.is_none() {
                left.deleted.insert(i);
                continue;
            }
            let us = op.t / 1000;
            if opened.insert(i) {
                let _ = writeln!(text, "{us} {} add", info.path);
                let _ = writeln!(text, "{us} {} open", info.path);
            }
            if matches!(action, "sync" | "datasync") {
                let _ = writeln!(text, "{us} {} {action}", info.path);
                ios += 1;
                continue;
            }
            let (Some(off), true) = (off, op.ret > 0) else {
                continue;
            };
            // fio reads the length as an unsigned int.
            let mut done = 0u64;
            while done < op.ret as u64 {
                let n = (op.ret as u64 - done).min(u32::MAX as u64 & !4095);
                let _ = writeln!(text, "{us} {} {action} {} {n}", info.path, off + done);
                done += n;
                ios += 1;
            }
        }
    }
    let end = t.wall_ns / 1000;
    for i in &opened {
        let _ = writeln!(text, "{end} {} close", t.files[*i as usize].path);
    }
    Iolog {
        text,
        ios,
        left_out: left.lines(t.faults.len()),
    }
}

/// What an iolog leaves out, and why.
#[derive(Default)]
struct Left {
    /// The program's writes (and their bytes, to how many files) left out by [`Writes::LeaveOut`].
    writes: u64,
    written_bytes: u64,
    written: BTreeSet<u32>,
    /// Files the program deleted, fio would create.
    deleted: BTreeSet<u32>,
    /// Paths fio's iolog cannot name.
    spaced: BTreeSet<String>,
    /// The kernel's files.
    kernels: BTreeSet<String>,
}

impl Left {
    /// In words, with the trace's `faults` (mapped access, not in an iolog).
    fn lines(&self, faults: usize) -> Vec<String> {
        let mut left_out = Vec::new();
        if self.writes > 0 {
            left_out.push(format!(
                "the program's {} write(s), {} to {} file(s): fio would write its own bytes over them (--fio-iolog-writes keeps them)",
                self.writes,
                crate::size::format_size(self.written_bytes),
                self.written.len()
            ));
        }
        if !self.deleted.is_empty() {
            left_out.push(format!(
                "{} file(s) the program deleted (fio would create them)",
                self.deleted.len()
            ));
        }
        if !self.spaced.is_empty() {
            left_out.push(format!(
                "{} file(s) whose path has white space or is not UTF-8 (fio's iolog cannot name them)",
                self.spaced.len()
            ));
        }
        if !self.kernels.is_empty() {
            left_out.push(format!(
                "{} of the kernel's file(s) under /proc or /sys (made when read; a process's own are gone with it)",
                self.kernels.len()
            ));
        }
        if faults > 0 {
            left_out.push(format!(
                "{} page faults of mapped access (fio's iolog has reads and writes only)",
                faults
            ));
        }
        left_out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::fixture::{file, op, trace};

    #[test]
    fn the_kernels_files_are_left_out_and_said() {
        let t = trace(
            vec![
                file("/data/x", 8192, 0, 8192),
                file("/proc/42/maps", 0, 0, 0),
            ],
            vec![
                op(1000, 10, "read", Some(0), 0, 4096),
                op(2000, 10, "read", Some(1), 0, 300),
                op(3000, 10, "read", Some(0), 4096, 4096),
            ],
            serde_json::json!([]),
        );
        let log = iolog(&t, Writes::LeaveOut);
        assert_eq!(log.ios, 2);
        assert!(log.text.contains("1 /data/x read 0 4096\n"), "{}", log.text);
        assert!(
            log.text.contains("3 /data/x read 4096 4096\n"),
            "{}",
            log.text
        );
        assert!(!log.text.contains("/proc/"), "{}", log.text);
        assert!(log.left_out.iter().any(|l| l.contains("/proc or /sys")));
    }

    #[test]
    fn writes_and_deleted_files_are_left_out_unless_asked() {
        let mut gone = file("/tmp/gone", 4096, 0, 0);
        gone["size_after"] = serde_json::Value::Null;
        let t = trace(
            vec![file("/data/db", 8192, 0, 8192), gone],
            vec![
                op(1000, 10, "read", Some(0), 0, 4096),
                op(2000, 10, "write", Some(0), 4096, 4096),
                op(2500, 10, "fsync", Some(0), 0, 0),
                op(3000, 10, "read", Some(1), 0, 4096),
            ],
            serde_json::json!([]),
        );
        let log = iolog(&t, Writes::LeaveOut);
        assert_eq!(log.ios, 1, "{}", log.text);
        assert!(!log.text.contains(" write "), "{}", log.text);
        assert!(!log.text.contains(" sync"), "{}", log.text);
        assert!(!log.text.contains("/tmp/gone"), "{}", log.text);
        assert!(
            log.left_out
                .iter()
                .any(|l| l.contains("1 write(s), 4 KiB to 1 file(s)")),
            "{:?}",
            log.left_out
        );
        assert!(
            log.left_out
                .iter()
                .any(|l| l.contains("1 file(s) the program deleted"))
        );
        let all = iolog(&t, Writes::Keep);
        assert!(
            all.text.contains("2 /data/db write 4096 4096\n"),
            "{}",
            all.text
        );
        assert!(all.text.contains("2 /data/db sync\n"), "{}", all.text);
        assert_eq!(all.ios, 3);
    }
}
