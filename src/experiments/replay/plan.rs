//! What a replay does, from a trace: the data files and what their bytes must XOR to, and per
//! traced thread its accesses in time order (read calls, and the windows its page faults
//! mapped), cut into segments of consecutive accesses to one file.

use crate::error::{Error, Result};
use crate::trace::{Call, FileKind, Trace, mapped_ranges};
use crate::workload::Block;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;

/// A data file of the replay.
#[derive(Debug, Clone)]
pub(super) struct DataFile {
    pub(super) path: PathBuf,
    /// XOR of every access's bytes (reads and fault windows), when the trace has both parts.
    pub(super) xor: Option<u32>,
}

/// Consecutive accesses of one thread to one file.
#[derive(Debug, Clone)]
pub(super) struct Segment {
    pub(super) file: usize,
    pub(super) blocks: Arc<[Block]>,
}

/// The whole replay.
#[derive(Debug, Clone, Default)]
pub(super) struct Plan {
    pub(super) files: Vec<DataFile>,
    /// Per traced thread, its segments in order.
    pub(super) threads: Vec<Vec<Segment>>,
    /// Bytes of read calls and of fault windows.
    pub(super) read_bytes: u64,
    pub(super) mapped_bytes: u64,
    pub(super) notes: Vec<String>,
}

impl Plan {
    /// Every access.
    pub(super) fn blocks(&self) -> impl Iterator<Item = &Block> {
        self.threads
            .iter()
            .flat_map(|t| t.iter().flat_map(|s| s.blocks.iter()))
    }
}

fn hex(x: &Option<String>) -> Option<u32> {
    x.as_deref().and_then(|x| u32::from_str_radix(x, 16).ok())
}

/// Whether file `i` of `t` is data: a regular file, not program code, not the kernel's.
fn data(t: &Trace, i: u32) -> bool {
    t.files.get(i as usize).is_some_and(|x| {
        let kernel = x.path.starts_with("/proc/") || x.path.starts_with("/sys/");
        x.kind == FileKind::File && !x.code && !kernel
    })
}

/// The plan of `t`: its data files' read calls and fault windows, per thread in time order.
pub(super) fn plan(t: &Trace) -> Plan {
    // (time, thread, file, block, mapped)
    let mut events: Vec<(u64, u32, u32, Block, bool)> = Vec::new();
    for op in &t.ops {
        let readlike = op.call.reads() || op.call == Call::Splice;
        if let (true, Some(f), Some(off)) = (readlike && op.ret > 0, op.file, op.off)
            && data(t, f)
        {
            let block = Block {
                offset: off,
                len: op.ret as u64,
            };
            events.push((op.t, op.tid, f, block, false));
        }
    }
    let size = |f: u32| t.files.get(f as usize).map_or(0, |x| x.size);
    for (fault, (offset, len)) in t.faults.iter().zip(mapped_ranges(&t.faults, size)) {
        if len > 0 && data(t, fault.file) {
            events.push((fault.t, fault.tid, fault.file, Block { offset, len }, true));
        }
    }
    events.sort_by_key(|e| (e.0, e.1));
    let mut index: BTreeMap<u32, usize> = BTreeMap::new();
    let mut p = Plan::default();
    let mut threads: BTreeMap<u32, Vec<(usize, Block)>> = BTreeMap::new();
    let (mut read, mut faulted) = (BTreeSet::new(), BTreeSet::new());
    for (_, tid, f, block, mapped) in events {
        let i = *index.entry(f).or_insert_with(|| {
            p.files.push(DataFile {
                path: PathBuf::from(&t.files[f as usize].path),
                xor: None,
            });
            p.files.len() - 1
        });
        if mapped {
            p.mapped_bytes += block.len;
            faulted.insert(f);
        } else {
            p.read_bytes += block.len;
            read.insert(f);
        }
        threads.entry(tid).or_default().push((i, block));
    }
    // A file's expected XOR covers both kinds of access it had.
    for (&f, &i) in &index {
        let info = &t.files[f as usize];
        let r = if read.contains(&f) {
            hex(&info.xor)
        } else {
            Some(0)
        };
        let m = if faulted.contains(&f) {
            hex(&info.mapped_xor)
        } else {
            Some(0)
        };
        p.files[i].xor = r.zip(m).map(|(a, b)| a ^ b);
    }
    p.threads = threads.into_values().map(segments).collect();
    p
}

/// A thread's accesses cut into runs of one file.
fn segments(list: Vec<(usize, Block)>) -> Vec<Segment> {
    let mut out: Vec<(usize, Vec<Block>)> = Vec::new();
    for (f, b) in list {
        match out.last_mut() {
            Some((lf, v)) if *lf == f => v.push(b),
            _ => out.push((f, vec![b])),
        }
    }
    out.into_iter()
        .map(|(file, v)| Segment {
            file,
            blocks: v.into(),
        })
        .collect()
}

/// Notes on what the replay leaves out, and the files gone since the trace taken out.
pub(super) fn prune(t: &Trace, p: &mut Plan) -> Result<()> {
    let writes = t
        .ops
        .iter()
        .filter(|o| o.call.writes() && o.file.is_some_and(|f| data(t, f)))
        .count();
    if writes > 0 {
        p.notes.push(format!(
            "{writes} writes to files are not replayed (they would change them)"
        ));
    }
    if p.mapped_bytes > 0 {
        p.notes.push(format!(
            "mapped access replayed as the range each page fault stands for (its {} KiB window, or up to the next fault of a forward scan; {} of the {} replayed): the program may have touched less",
            crate::trace::FAULT_AROUND >> 10,
            crate::size::format_size(p.mapped_bytes),
            crate::size::format_size(p.mapped_bytes + p.read_bytes),
        ));
    }
    let gone: Vec<usize> = (0..p.files.len())
        .filter(|&i| !p.files[i].path.exists())
        .collect();
    if let Some(&first) = gone.first() {
        p.notes.push(format!(
            "{} file(s) the program read no longer exist and are left out (the first: {})",
            gone.len(),
            p.files[first].path.display()
        ));
        for t in p.threads.iter_mut() {
            t.retain(|s| !gone.contains(&s.file));
        }
    }
    if p.threads.iter().all(|t| t.is_empty()) {
        return Err(Error::usage(
            "nothing to replay",
            "the trace has no reads or mapped access of regular files that still exist",
        ));
    }
    Ok(())
}
