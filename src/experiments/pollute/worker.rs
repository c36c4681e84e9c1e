//! The child of `pollute`, inside the memory group: loads the hot set (so it is charged to the
//! group), reads it at random for the whole run, starts the stream after the baseline seconds,
//! and writes a [`PolluteMessage::Tick`] per tick: the hot reader's reads, their p99, the hot set's
//! residency, the stream's bytes, the group's memory, reclaim counters and device reads.

use super::{PolluteDone, PolluteMessage, PolluteTick, PolluteWorker, StreamJob};
use crate::cache::cgroup::GroupFiles;
use crate::engine::write::{SyncMode, open_target, prepare_write};
use crate::engine::{self, EngineOptions, RunLimits, Work};
use crate::error::{Error, Result};
use crate::harness::child;
use crate::measure::latency::Histogram;
use crate::measure::series;
use crate::workload::{Pattern, Workload};
use std::fs::File;
use std::io::{BufRead, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The child: waits for the parent's line on `go`, runs, and writes its messages to `out`.
pub fn run_worker(cfg: &PolluteWorker, go: &mut dyn BufRead, out: &mut dyn Write) -> Result<()> {
    child::serve::<PolluteTick, PolluteDone>(go, out, |out| work(cfg, out))
}

/// /proc/vmstat's reclaim counters: pages scanned and stolen by kswapd and by direct reclaim,
/// machine-wide. The kernel leaves a memory group's own limit reclaim out of them (it counts
/// that in the group's memory.stat, read apart: [`GroupReclaim`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Reclaim {
    /// `pgscan_kswapd`.
    pub scan_kswapd: u64,
    /// `pgscan_direct`.
    pub scan_direct: u64,
    /// `pgsteal_kswapd`.
    pub steal_kswapd: u64,
    /// `pgsteal_direct`.
    pub steal_direct: u64,
}

/// The group's own reclaim, from its memory.stat: pages evicted (v2 `pgsteal`; v1 has no such
/// counter and `pgpgout`, pages uncharged, stands for it) and file pages read again after
/// eviction (`workingset_refault_file`, both versions: the hot set paying for its eviction).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct GroupReclaim {
    evicted: Option<u64>,
    refaults: Option<u64>,
}

fn group_reclaim(g: &GroupFiles) -> GroupReclaim {
    GroupReclaim {
        evicted: match g.version {
            crate::cache::cgroup::Version::V2 => g.stat("pgsteal"),
            crate::cache::cgroup::Version::V1 => g.stat("pgpgout"),
        },
        refaults: g.stat("workingset_refault_file"),
    }
}

/// The reclaim counters of /proc/vmstat's text; `None` without any of them.
pub fn parse_vmstat(text: &str) -> Option<Reclaim> {
    let mut r = Reclaim::default();
    let mut seen = false;
    for line in text.lines() {
        let mut it = line.split_whitespace();
        let (Some(k), Some(v)) = (it.next(), it.next()) else {
            continue;
        };
        let Ok(v) = v.parse::<u64>() else { continue };
        let slot = match k {
            "pgscan_kswapd" => &mut r.scan_kswapd,
            "pgscan_direct" => &mut r.scan_direct,
            "pgsteal_kswapd" => &mut r.steal_kswapd,
            "pgsteal_direct" => &mut r.steal_direct,
            _ => continue,
        };
        *slot = v;
        seen = true;
    }
    seen.then_some(r)
}

fn reclaim_now() -> Option<Reclaim> {
    parse_vmstat(&std::fs::read_to_string("/proc/vmstat").ok()?)
}

/// Counters at one moment.
struct HotSnap {
    at: Instant,
    hot_ops: u64,
    stream_bytes: u64,
    dev: Option<u64>,
    reclaim: Option<Reclaim>,
    group: GroupReclaim,
}

/// What the sampler reads.
struct HotSampler<'a> {
    hot_file: &'a File,
    hot_len: u64,
    hot_path: &'a Path,
    hot_ops: &'a AtomicU64,
    stream_blocks: &'a AtomicU64,
    stream_bs: u64,
    device: Option<(u32, u32)>,
    group: Option<&'a GroupFiles>,
}

impl HotSampler<'_> {
    fn snap(&self) -> HotSnap {
        HotSnap {
            at: Instant::now(),
            hot_ops: self.hot_ops.load(Ordering::Relaxed),
            stream_bytes: self.stream_blocks.load(Ordering::Relaxed) * self.stream_bs,
            dev: self
                .device
                .and_then(|(ma, mi)| series::device_read_bytes(ma, mi)),
            reclaim: reclaim_now(),
            group: self.group.map(group_reclaim).unwrap_or_default(),
        }
    }

    fn tick(
        &self,
        start: Instant,
        a: &HotSnap,
        b: &HotSnap,
        streaming: bool,
        p99: Option<u64>,
    ) -> PolluteTick {
        let secs = b.at.duration_since(a.at).as_secs_f64().max(1e-9);
        let hot_ops = b.hot_ops.saturating_sub(a.hot_ops);
        let bytes = b.stream_bytes.saturating_sub(a.stream_bytes);
        let d = |x: Option<u64>, y: Option<u64>| Some(y?.saturating_sub(x?));
        let r = |f: fn(&Reclaim) -> u64| d(a.reclaim.as_ref().map(f), b.reclaim.as_ref().map(f));
        PolluteTick {
            t: b.at.duration_since(start).as_secs_f64(),
            secs,
            streaming,
            hot_ops,
            hot_kiops: hot_ops as f64 / secs / 1e3,
            hot_p99_us: p99.map(|ns| ns as f64 / 1e3),
            hot_resident_pct: crate::cache::residency_of(
                self.hot_file,
                self.hot_len,
                self.hot_path,
            )
            .ok()
            .map(|r| r.percent()),
            stream_bytes: bytes,
            stream_mib_s: bytes as f64 / secs / (1u64 << 20) as f64,
            mem_current: self.group.and_then(|g| g.usage()),
            dev_read_bytes: d(a.dev, b.dev),
            scan_kswapd: r(|x| x.scan_kswapd),
            scan_direct: r(|x| x.scan_direct),
            group_evicted: d(a.group.evicted, b.group.evicted),
            group_refaults: d(a.group.refaults, b.group.refaults),
        }
    }
}

/// The hot reader: random `bs` reads of the hot file, uniformly drawn, until `stop`; counts each
/// read in `ops` and keeps each tick's p99 latency in `p99s[tick]`.
#[allow(clippy::too_many_arguments)]
fn hot_reader(
    file: &File,
    len: u64,
    bs: u64,
    start: Instant,
    tick: f64,
    stop: &AtomicBool,
    ops: &AtomicU64,
    p99s: &Mutex<Vec<Option<u64>>>,
) -> Result<()> {
    let blocks = (len / bs).max(1);
    let mut buf = crate::sys::buf::AlignedBuf::new(bs as usize);
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut hist = Histogram::default();
    let mut current = 0usize;
    let mut sink = 0u8;
    let flush = |k: usize, h: &Histogram| {
        if h.count() == 0 {
            return;
        }
        if let Ok(mut v) = p99s.lock() {
            if v.len() <= k {
                v.resize(k + 1, None);
            }
            v[k] = Some(h.quantile(0.99));
        }
    };
    while !stop.load(Ordering::Relaxed) {
        let off = crate::workload::splitmix64(&mut seed) % blocks * bs;
        let t0 = Instant::now();
        let n = engine::pread_full(file, buf.as_mut_slice(), off)
            .map_err(|e| Error::failed("hot read failed", e.to_string()))?;
        let t1 = Instant::now();
        sink ^= buf.as_slice()[..n].first().copied().unwrap_or(0);
        let k = (t1.duration_since(start).as_secs_f64() / tick) as usize;
        if k != current {
            flush(current, &hist);
            hist = Histogram::default();
            current = k;
        }
        hist.record(t1.duration_since(t0).as_nanos() as u64);
        ops.fetch_add(1, Ordering::Relaxed);
    }
    flush(current, &hist);
    std::hint::black_box(sink);
    Ok(())
}

/// Bytes moved by the stream and the times it went through its file.
struct Streamed {
    bytes: u64,
    laps: u64,
}

/// Chunks a `fadvise-dontneed` stream drops behind itself.
const DONTNEED_CHUNK: u64 = 8 << 20;

/// The portable trick: read(2) in order, and POSIX_FADV_DONTNEED on each [`DONTNEED_CHUNK`]
/// behind the reader, from `begin` (set up before it) until the deadline.
fn stream_dontneed(
    path: &Path,
    bs: u64,
    begin: Instant,
    deadline: Instant,
    blocks: &AtomicU64,
) -> Result<Streamed> {
    let mut done = Streamed { bytes: 0, laps: 0 };
    let file = File::open(path).map_err(|e| Error::io("cannot open", path, &e))?;
    let size = file
        .metadata()
        .map_err(|e| Error::io("cannot stat", path, &e))?
        .len();
    let _ = crate::sys::fadvise(&file, libc::POSIX_FADV_SEQUENTIAL);
    let mut buf = crate::sys::buf::AlignedBuf::new(bs as usize);
    let mut xor = 0u32;
    std::thread::sleep(begin.saturating_duration_since(Instant::now()));
    let (mut off, mut chunk) = (0u64, 0u64);
    while Instant::now() < deadline && size > 0 {
        let n = engine::pread_full(&file, buf.as_mut_slice(), off)
            .map_err(|e| Error::io("read failed", path, &e))?;
        xor ^= crate::xor::xor_at(off, &buf.as_slice()[..n]);
        off += n as u64;
        done.bytes += n as u64;
        blocks.fetch_add(1, Ordering::Relaxed);
        let end = n == 0 || off >= size;
        if off - chunk >= DONTNEED_CHUNK || end {
            // Advice: a file system that ignores it leaves the pages to reclaim.
            let _ = crate::sys::fadvise_range(&file, chunk, off - chunk, libc::POSIX_FADV_DONTNEED);
            chunk = off;
        }
        if end {
            (off, chunk) = (0, 0);
            done.laps += 1;
        }
    }
    std::hint::black_box(xor);
    Ok(done)
}

/// Runs the stream from `begin` to `deadline`, counting its blocks in `blocks` as they finish.
fn stream(
    job: &StreamJob,
    begin: Instant,
    deadline: Instant,
    blocks: &Arc<AtomicU64>,
) -> Result<Streamed> {
    let wait = |until: Instant| std::thread::sleep(until.saturating_duration_since(Instant::now()));
    let limits = || RunLimits {
        deadline: Some(deadline),
        progress: Some(blocks.clone()),
        progress_each: true,
        ..RunLimits::default()
    };
    let mut done = Streamed { bytes: 0, laps: 0 };
    match job {
        StreamJob::Read { path, method, bs } => {
            let src = engine::open_source(path)?;
            let w = Workload {
                bs: *bs,
                len: src.size,
                pattern: Pattern::Seq,
                seed: 0,
                threads: 1,
            };
            let opts = EngineOptions {
                work: Work::Xor,
                ..EngineOptions::default()
            };
            // Set up (a mapping made, buffers allocated) before the clock starts.
            let mut prepared = engine::prepare(*method, &src, &w, &opts)?;
            wait(begin);
            while Instant::now() < deadline {
                let (m, _) = prepared.run_over_limited(&w.parts(), limits())?;
                done.bytes += m.bytes;
                done.laps += 1;
            }
        }
        StreamJob::Dontneed { path, bs } => {
            done = stream_dontneed(path, *bs, begin, deadline, blocks)?;
        }
        StreamJob::Write {
            dir,
            method,
            bs,
            size,
        } => {
            // Never committed: the file is unnamed (or removed when dropped) and its dirty
            // pages go with it.
            let target = open_target(&dir.join("iolab-pollute-stream"), false)?;
            target.check_space(*size)?;
            let w = Workload {
                bs: *bs,
                len: *size,
                pattern: Pattern::Seq,
                seed: 1,
                threads: 1,
            };
            wait(begin);
            while Instant::now() < deadline {
                let m =
                    prepare_write(*method, &target, &w, SyncMode::None)?.run_limited(limits())?;
                done.bytes += m.bytes;
                done.laps += 1;
            }
        }
    }
    Ok(done)
}

/// `ticks` samples `tick` seconds apart from `start`, each sent as it is taken (with the hot
/// reader's p99 for it), until the last or until `stop`. A tick counts as streaming from
/// `before` seconds on.
#[allow(clippy::too_many_arguments)]
fn send_ticks(
    out: &mut dyn Write,
    sampler: &HotSampler<'_>,
    start: Instant,
    ticks: usize,
    tick: f64,
    before: f64,
    stop: &AtomicBool,
    p99s: &Mutex<Vec<Option<u64>>>,
) -> Result<()> {
    let mut last = sampler.snap();
    let mut sent: Result<()> = Ok(());
    for k in 1..=ticks {
        let at = start + Duration::from_secs_f64(k as f64 * tick);
        std::thread::sleep(at.saturating_duration_since(Instant::now()));
        let now = sampler.snap();
        // The reader files a tick's p99 with its first read after the tick: wait for it
        // briefly (a read stalled on the device may take that long).
        let wait_until = Instant::now() + Duration::from_millis(100);
        let p99 = loop {
            let got = p99s
                .lock()
                .ok()
                .and_then(|v| v.get(k - 1).copied().flatten());
            if got.is_some() || Instant::now() >= wait_until || stop.load(Ordering::Relaxed) {
                break got;
            }
            std::thread::sleep(Duration::from_millis(1));
        };
        let from = last.at.duration_since(start).as_secs_f64();
        let streaming = from + 1e-3 >= before;
        let t = sampler.tick(start, &last, &now, streaming, p99);
        last = now;
        if sent.is_ok() {
            sent = child::send(out, &PolluteMessage::Tick(t));
        }
        if stop.load(Ordering::Relaxed) {
            break;
        }
    }
    sent
}

fn work(cfg: &PolluteWorker, out: &mut dyn Write) -> Result<()> {
    let hot = File::open(&cfg.hot).map_err(|e| Error::io("cannot open", &cfg.hot, &e))?;
    let hot_len = hot
        .metadata()
        .map_err(|e| Error::io("cannot stat", &cfg.hot, &e))?
        .len();
    if hot_len < cfg.hot_bs.max(1) {
        return Err(Error::usage("hot file too small", "smaller than one read").at(&cfg.hot));
    }
    // Loaded here, inside the group: its pages are charged to the group the stream fills.
    crate::cache::load(&hot, hot_len, &cfg.hot)?;
    let _ = crate::sys::fadvise(&hot, libc::POSIX_FADV_RANDOM);
    let meta = hot
        .metadata()
        .map_err(|e| Error::io("cannot stat", &cfg.hot, &e))?;
    let (ma, mi) = series::dev_numbers(std::os::unix::fs::MetadataExt::dev(&meta));
    let diskstats = std::fs::read_to_string("/proc/diskstats").unwrap_or_default();
    let device = series::diskstats_name(&diskstats, ma, mi);
    let hot_ops = AtomicU64::new(0);
    let stream_blocks = Arc::new(AtomicU64::new(0));
    let stop = AtomicBool::new(false);
    let p99s = Mutex::new(Vec::new());
    let tick = cfg.tick.max(0.05);
    let start = Instant::now();
    let begin = start + Duration::from_secs_f64(cfg.before.max(0.0));
    let deadline = begin + Duration::from_secs_f64(cfg.seconds.max(0.0));
    let sampler = HotSampler {
        hot_file: &hot,
        hot_len,
        hot_path: &cfg.hot,
        hot_ops: &hot_ops,
        stream_blocks: &stream_blocks,
        stream_bs: cfg.stream.bs(),
        device: device.as_ref().map(|_| (ma, mi)),
        group: cfg.group.as_ref(),
    };
    let ticks = ((deadline - start).as_secs_f64() / tick).round().max(1.0) as usize;
    let result = std::thread::scope(|s| {
        let reader = s.spawn(|| {
            let r = hot_reader(
                &hot, hot_len, cfg.hot_bs, start, tick, &stop, &hot_ops, &p99s,
            );
            // A failed reader ends the run: the stream stops at its next block.
            stop.store(true, Ordering::Relaxed);
            r
        });
        let streamer = s.spawn(|| {
            let r = stream(&cfg.stream, begin, deadline, &stream_blocks);
            // A stream that cannot run (a method this file system lacks) ends the run now,
            // not after its seconds.
            if r.is_err() {
                stop.store(true, Ordering::Relaxed);
            }
            r
        });
        let sent = send_ticks(out, &sampler, start, ticks, tick, cfg.before, &stop, &p99s);
        stop.store(true, Ordering::Relaxed);
        let panicked = |what: &str| Error::failed("pollute failed", format!("the {what} panicked"));
        let read = reader
            .join()
            .unwrap_or_else(|_| Err(panicked("hot reader")));
        let streamed = streamer.join().unwrap_or_else(|_| Err(panicked("stream")));
        sent.and(read).and(streamed)
    });
    let streamed = result?;
    child::send(
        out,
        &PolluteMessage::Done(PolluteDone {
            hot_ops: hot_ops.load(Ordering::Relaxed),
            hot_bytes: hot_len,
            stream_bytes: streamed.bytes,
            laps: streamed.laps,
            device,
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vmstat_reclaim_counters_are_read_and_absence_is_none() {
        let t = "nr_free_pages 5\npgscan_kswapd 120\npgscan_direct 7\npgsteal_kswapd 100\npgsteal_direct 6\npgscan_khugepaged 3\n";
        assert_eq!(
            parse_vmstat(t),
            Some(Reclaim {
                scan_kswapd: 120,
                scan_direct: 7,
                steal_kswapd: 100,
                steal_direct: 6
            })
        );
        assert_eq!(parse_vmstat("nr_free_pages 5\n"), None);
    }
}
