//! After the program: page-fault samples turned into file offsets, each file's state after the
//! run (size, modification time, residency), and the XOR of the bytes its reads returned.

use super::faults::Samples;
use super::record::Recording;
use super::{Ended, Fault, FileKind, SCHEMA, Trace, TraceConfig};
use rustc_hash::FxHashMap as HashMap;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::time::Duration;

/// The page faults a tracer saw on file mappings.
pub struct FaultsSeen {
    /// In time order.
    pub faults: Vec<Fault>,
    /// Faults the kernel dropped.
    pub lost: u64,
    /// Why faults were not recorded, when they were not.
    pub unavailable: Option<String>,
}

/// The ptrace tracer's fault samples as file offsets, through its model of the mappings.
pub fn sampled(
    st: &Recording,
    samples: Option<Samples>,
    unavailable: Option<String>,
) -> FaultsSeen {
    let (faults, lost) = match samples {
        Some(s) => (resolve(st, &s), s.lost),
        None => (Vec::new(), 0),
    };
    FaultsSeen {
        faults,
        lost,
        unavailable,
    }
}

/// The trace, from the tracer's state and the faults it saw.
pub fn finish(
    cfg: &TraceConfig,
    mut st: Recording,
    seen: FaultsSeen,
    ended: Ended,
    interrupted: bool,
    wall: Duration,
) -> Trace {
    let FaultsSeen {
        faults,
        lost: faults_lost,
        unavailable: faults_unavailable,
    } = seen;
    if faults_lost > 0 {
        st.note(&format!(
            "{faults_lost} page faults were not recorded (the kernel's sample buffer was full): mapped access is undercounted"
        ));
    }
    if let Some(b) = st.baseline {
        let k = &mut st.kernel;
        k.rchar = k.rchar.saturating_sub(b.rchar);
        k.wchar = k.wchar.saturating_sub(b.wchar);
        k.syscr = k.syscr.saturating_sub(b.syscr);
        k.syscw = k.syscw.saturating_sub(b.syscw);
        k.read_bytes = k.read_bytes.saturating_sub(b.read_bytes);
        k.write_bytes = k.write_bytes.saturating_sub(b.write_bytes);
    }
    after(&mut st);
    if cfg.xor {
        xors(&mut st, &faults);
    }
    cut_short(&mut st, ended, interrupted);
    if st.kernel.threads < st.threads {
        st.note(&format!(
            "the kernel's counters were read for {} of {} threads",
            st.kernel.threads, st.threads
        ));
    }
    Trace {
        schema: SCHEMA.to_string(),
        command: cfg
            .command
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect(),
        cwd: std::env::current_dir()
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default(),
        wall_ns: wall.as_nanos() as u64,
        ended,
        interrupted,
        processes: st.processes,
        threads: st.threads,
        stops: st.stops,
        files: st.files,
        ops: st.ops,
        faults,
        faults_lost,
        faults_unavailable,
        kernel: st.kernel,
        notes: st.notes.into_iter().collect(),
        procs: Vec::new(),
        root: st.root,
        thread_times: {
            let mut v = st.thread_times;
            v.sort_by_key(|t| (t.born, t.tid));
            v
        },
        spans: {
            let mut v = st.spans;
            v.sort_by_key(|s| s.t + s.dur);
            v
        },
        stop_cost: st.stop_cost,
        uring: (st.uring.requests + st.uring.unseen > 0).then_some(st.uring),
        cache: st.cache,
        tracer: Some(super::Tracer::Ptrace),
    }
}

/// Notes on what the run may have left half done: files it was writing when a signal ended it,
/// and block devices it read directly (their bytes are no file's).
fn cut_short(st: &mut Recording, ended: Ended, interrupted: bool) {
    let written: std::collections::BTreeSet<u32> = st
        .ops
        .iter()
        .filter(|o| o.call.writes_file() && o.ret > 0)
        .filter_map(|o| o.file)
        .filter(|&f| st.files[f as usize].kind == FileKind::File)
        .collect();
    let how = match (interrupted, ended.signal) {
        (true, _) => Some("was interrupted".to_string()),
        (false, Some(sig)) => Some(format!("was killed by signal {sig}")),
        _ => None,
    };
    if let (Some(how), Some(&first)) = (how, written.first()) {
        st.note(&format!(
            "the program {how} after writing {} file(s), which may be incomplete (the first: {})",
            written.len(),
            st.files[first as usize].path
        ));
    }
    let devices: Vec<String> = st
        .ops
        .iter()
        .filter(|o| o.call.reads() && o.ret > 0)
        .filter_map(|o| o.file)
        .map(|f| &st.files[f as usize])
        .filter(|f| f.kind == FileKind::Device && is_block_device(&f.path))
        .map(|f| f.path.clone())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    if let Some(d) = devices.first() {
        st.note(&format!(
            "the program read block device(s) directly ({d}{}): those bytes are no file's, and residency says nothing of them",
            if devices.len() > 1 { ", ..." } else { "" }
        ));
    }
}

fn is_block_device(path: &str) -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::metadata(path).is_ok_and(|m| m.file_type().is_block_device())
}

/// Fault samples on file mappings, as files and page offsets, in time order.
fn resolve(st: &Recording, s: &Samples) -> Vec<Fault> {
    let page = crate::sys::page_size() as u64;
    let mut out: Vec<Fault> = s
        .samples
        .iter()
        .filter_map(|x| {
            let t = x.t.checked_sub(st.t0)?;
            let (file, off) = st.spaces.resolve(x.pid, x.addr, t)?;
            Some(Fault {
                t,
                tid: x.tid,
                file,
                off: off / page * page,
            })
        })
        .collect();
    out.sort_by_key(|f| f.t);
    out
}

/// Size, modification time and residency of each regular file after the run (of those the
/// kernel tracer has not given from their last close).
fn after(st: &mut Recording) {
    let pending = |f: &&mut super::FileInfo| f.kind == FileKind::File && f.size_after.is_none();
    for f in st.files.iter_mut().filter(pending) {
        // The name was the traced program's to change: opened only if it is still the
        // regular file traced (no FIFO, device or link put in its place is ever opened).
        let Ok((file, meta)) =
            crate::source::open_regular(&f.last_path(), false, Some((f.dev, f.ino)))
        else {
            continue;
        };
        f.size_after = Some(meta.len());
        f.mtime_after_ns = Some(meta.mtime() as i128 * 1_000_000_000 + meta.mtime_nsec() as i128);
        let path = &f.last_path();
        if crate::cache::residency_visible(&file, path)
            && let Ok(r) = crate::cache::residency_of(&file, meta.len(), path)
        {
            f.resident_after = Some((r.resident_pages * r.page_size).min(meta.len()));
        }
    }
}

/// Each unchanged file's XOR over the bytes its read calls returned (each call's bytes by file
/// offset, so it does not depend on order, size of the calls or method), and over the ranges
/// its page faults stand for ([`super::mapped_ranges`]), each counted as often as it happened.
fn xors(st: &mut Recording, faults: &[Fault]) {
    let mut reads: HashMap<u32, Vec<(u64, u64)>> = HashMap::default();
    for op in &st.ops {
        if let (true, Some(file), Some(off)) = (op.call.reads_file(), op.file, op.off)
            && op.ret > 0
        {
            reads.entry(file).or_default().push((off, op.ret as u64));
        }
    }
    let mut mapped: HashMap<u32, Vec<(u64, u64)>> = HashMap::default();
    let size = |f: u32| st.files.get(f as usize).map_or(0, |x| x.size);
    for (f, range) in faults.iter().zip(super::mapped_ranges(faults, size)) {
        mapped.entry(f.file).or_default().push(range);
    }
    let mut jobs = Vec::new();
    for (map, mapped) in [(reads, false), (mapped, true)] {
        for (file, list) in map {
            let f = &st.files[file as usize];
            let unchanged = f.size_after == Some(f.size) && f.mtime_after_ns == Some(f.mtime_ns);
            if f.kind == FileKind::File && unchanged {
                jobs.push((file, mapped, f, list));
            }
        }
    }
    // The re-reads are what the user waits for after the program: spread over the CPUs.
    let done = std::sync::atomic::AtomicUsize::new(0);
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get().min(4));
    let results: Vec<(usize, Option<u32>)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..workers.min(jobs.len()))
            .map(|_| {
                s.spawn(|| {
                    let mut buf = vec![0u8; 1 << 20];
                    let mut out = Vec::new();
                    loop {
                        let j = done.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some((_, _, f, list)) = jobs.get(j) else {
                            return out;
                        };
                        out.push((j, ranges_xor(f, list, &mut buf)));
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_default())
            .collect()
    });
    let which: Vec<(u32, bool)> = jobs
        .iter()
        .map(|(file, mapped, _, _)| (*file, *mapped))
        .collect();
    for (j, x) in results {
        let (file, mapped) = which[j];
        let f = &mut st.files[file as usize];
        let x = x.map(|x| format!("{x:08x}"));
        if mapped {
            f.mapped_xor = x;
        } else {
            f.xor = x;
        }
    }
}

/// The XOR of `ranges` of file `f`, each byte by its offset; None if one cannot be read, or if
/// its name no longer holds that file unchanged (checked through the descriptor read).
fn ranges_xor(f: &super::FileInfo, ranges: &[(u64, u64)], buf: &mut [u8]) -> Option<u32> {
    let (file, meta) =
        crate::source::open_regular(&f.last_path(), false, Some((f.dev, f.ino))).ok()?;
    let mtime = meta.mtime() as i128 * 1_000_000_000 + meta.mtime_nsec() as i128;
    if meta.len() != f.size || mtime != f.mtime_ns {
        return None;
    }
    let mut x = 0u32;
    for &(off, len) in ranges {
        let mut done = 0u64;
        while done < len {
            let n = ((len - done) as usize).min(buf.len());
            match file.read_at(&mut buf[..n], off + done) {
                Ok(0) | Err(_) => return None,
                Ok(got) => {
                    x ^= crate::xor::xor_at(off + done, &buf[..got]);
                    done += got as u64;
                }
            }
        }
    }
    Some(x)
}
