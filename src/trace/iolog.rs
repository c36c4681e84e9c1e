//! A trace as fio's iolog version 3 (`fio --read_iolog=FILE`): one line per file action (`add`,
//! `open`, `close`) and per read, write, sync and datasync of a regular file, each with its time
//! in microseconds from the start. fio's format cannot name files with white space in their path
//! and has no mapped access: those are left out and counted.

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

/// fio's iolog v3 of `t`'s file reads, writes and syncs.
pub fn iolog(t: &Trace) -> Iolog {
    let mut text = String::from("fio version 3 iolog\n");
    let mut opened = BTreeSet::new();
    let mut spaced = BTreeSet::new();
    let mut ios = 0u64;
    for op in &t.ops {
        let Some(f) = op
            .file
            .and_then(|i| t.files.get(i as usize).map(|x| (i, x)))
        else {
            continue;
        };
        let (i, info) = f;
        let action = if op.call.reads() {
            "read"
        } else if op.call.writes() {
            "write"
        } else if op.call == Call::Fsync {
            "sync"
        } else if op.call == Call::Fdatasync {
            "datasync"
        } else {
            continue;
        };
        if info.kind != FileKind::File || op.ret < 0 {
            continue;
        }
        if info.path.chars().any(char::is_whitespace) {
            spaced.insert(info.path.clone());
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
        let (Some(off), true) = (op.off, op.ret > 0) else {
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
    let end = t.wall_ns / 1000;
    for i in &opened {
        let _ = writeln!(text, "{end} {} close", t.files[*i as usize].path);
    }
    let mut left_out = Vec::new();
    if !spaced.is_empty() {
        left_out.push(format!(
            "{} file(s) whose path has white space (fio's iolog cannot name them)",
            spaced.len()
        ));
    }
    if !t.faults.is_empty() {
        left_out.push(format!(
            "{} page faults of mapped access (fio's iolog has reads and writes only)",
            t.faults.len()
        ));
    }
    Iolog {
        text,
        ios,
        left_out,
    }
}
