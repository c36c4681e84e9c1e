//! The calls of a trace added up for its profile: overall, per call, per file.

use super::{CallRow, Totals};
use crate::trace::{Call, FileKind, Trace};
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::collections::BTreeMap;

fn add(t: &mut Totals, asked: u64, ret: i64, dur: u64) {
    // Saturating: a copy_file_range asks for SSIZE_MAX bytes, and a trace is input.
    t.calls += 1;
    t.asked = t.asked.saturating_add(asked);
    t.time_ns = t.time_ns.saturating_add(dur);
    if ret > 0 {
        t.bytes = t.bytes.saturating_add(ret as u64);
    }
}

#[derive(Default)]
pub(super) struct Acc {
    pub(super) reads: Totals,
    pub(super) writes: Totals,
    pub(super) ranges: Vec<(u64, u64)>,
    pub(super) seq: u64,
    pub(super) next: Option<u64>,
    pub(super) sizes: HashMap<u64, u64>,
    pub(super) fault_pages: HashSet<u64>,
    pub(super) faults: u64,
    pub(super) mapped: bool,
    pub(super) direct: bool,
    pub(super) dropped: bool,
}

/// The calls of a trace added up: overall, per call, per file.
#[derive(Default)]
pub(super) struct Tally<'a> {
    pub(super) acc: BTreeMap<u32, Acc>,
    pub(super) reads: Totals,
    pub(super) file_reads: Totals,
    pub(super) writes: Totals,
    pub(super) file_writes: Totals,
    pub(super) uring_reads: Totals,
    pub(super) uring_writes: Totals,
    pub(super) calls: BTreeMap<&'a str, CallRow>,
    pub(super) sizes: BTreeMap<u64, u64>,
    pub(super) io_ns: u64,
}

/// The kind of file index `f` names.
fn kind(t: &Trace, f: Option<u32>) -> Option<FileKind> {
    t.files.get(f? as usize).map(|x| x.kind)
}

pub(super) fn tally(t: &Trace) -> Tally<'static> {
    let mut y = Tally::default();
    let Tally {
        acc,
        reads,
        file_reads,
        writes,
        file_writes,
        uring_reads,
        uring_writes,
        calls,
        sizes,
        io_ns,
    } = &mut y;
    // Per call and per file in vectors while the ops are added (a map lookup per op was a
    // third of this on 400,000 ops), into the maps at the end.
    let mut rows: Vec<Option<(&'static str, CallRow)>> = Vec::new();
    let mut by_file: Vec<Option<Acc>> = Vec::new();
    by_file.resize_with(t.files.len(), || None);
    fn acc_of(by_file: &mut Vec<Option<Acc>>, f: u32) -> &mut Acc {
        let i = f as usize;
        if i >= by_file.len() {
            by_file.resize_with(i + 1, || None);
        }
        by_file[i].get_or_insert_with(Acc::default)
    }
    for op in &t.ops {
        if !op.call.is_request() {
            *io_ns += op.dur;
        }
        let c = op.call as usize;
        if c >= rows.len() {
            rows.resize_with(c + 1, || None);
        }
        let (_, row) = rows[c].get_or_insert_with(|| {
            let row = CallRow {
                call: op.call.name().to_string(),
                calls: 0,
                errors: 0,
                bytes: 0,
                time_ns: 0,
            };
            (op.call.name(), row)
        });
        row.calls += 1;
        row.time_ns += op.dur;
        if op.ret < 0 {
            row.errors += 1;
        }
        let is_file = kind(t, op.file) == Some(FileKind::File);
        if op.call.reads() || op.call.writes() || op.call.copies() || op.call.is_request() {
            row.bytes += op.ret.max(0) as u64;
        }
        if op.call.reads() {
            add(reads, op.len, op.ret, op.dur);
        }
        match op.call {
            Call::UringRead => add(uring_reads, op.len, op.ret, op.dur),
            Call::UringWrite => add(uring_writes, op.len, op.ret, op.dur),
            _ => {}
        }
        if op.call.counts_wchar() {
            add(writes, op.len, op.ret, op.dur);
        }
        // A copy's destination file: written, by the kernel (its time is the source's row's).
        if op.call.copies()
            && let Some(to) = op
                .to_file
                .filter(|&f| kind(t, Some(f)) == Some(FileKind::File))
        {
            add(&mut acc_of(&mut by_file, to).writes, op.len, op.ret, 0);
            add(file_writes, op.len, op.ret, op.dur);
        }
        let (Some(f), true) = (op.file, is_file) else {
            continue;
        };
        file_op(
            acc_of(&mut by_file, f),
            op,
            (file_reads, file_writes),
            sizes,
        );
    }
    for fault in &t.faults {
        let a = acc_of(&mut by_file, fault.file);
        a.faults += 1;
        a.fault_pages.insert(fault.off);
    }
    *acc = by_file
        .into_iter()
        .enumerate()
        .filter_map(|(i, a)| Some((i as u32, a?)))
        .collect();
    *calls = rows.into_iter().flatten().collect();
    y
}

/// A call `op` on a data file: its reads (sizes, sequential, ranges), writes, mapping, opening
/// with O_DIRECT and dropping, into the file's `a` and the totals over files.
fn file_op(
    a: &mut Acc,
    op: &crate::trace::Op,
    (file_reads, file_writes): (&mut Totals, &mut Totals),
    sizes: &mut BTreeMap<u64, u64>,
) {
    if op.call.reads_file() {
        add(&mut a.reads, op.len, op.ret, op.dur);
        add(file_reads, op.len, op.ret, op.dur);
        if op.ret > 0 {
            let got = op.ret as u64;
            *sizes.entry(got.next_power_of_two()).or_default() += 1;
            *a.sizes.entry(got).or_default() += 1;
        }
        if let Some(off) = op.off {
            if a.next.unwrap_or(0) == off {
                a.seq += 1;
            }
            if op.ret > 0 {
                a.ranges.push((off, op.ret as u64));
                a.next = Some(off + op.ret as u64);
            }
        }
    } else if op.call.writes_file() {
        add(&mut a.writes, op.len, op.ret, op.dur);
        add(file_writes, op.len, op.ret, op.dur);
    } else if op.call == Call::Mmap {
        a.mapped = true;
    } else if op.call == Call::Open && op.ret >= 0 {
        a.direct |= op.arg.unwrap_or(0) & libc::O_DIRECT as u64 != 0;
    } else if op.call == Call::Fadvise && op.arg == Some(libc::POSIX_FADV_DONTNEED as u64) {
        a.dropped = true;
    }
}
