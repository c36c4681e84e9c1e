//! The rules' checks: each looks for its evidence in the trace, and says it with the change.

use super::{Evidence, Level, Recommendation, Remedy};
use crate::cache::CacheMode;
use crate::size::format_size;
use crate::trace::Call;
use crate::trace::cause::Cause;
use crate::trace::profile::FileProfile;
use crate::trace::time::verdict::secs;

fn level(share: f64) -> Level {
    if share >= 0.5 {
        Level::High
    } else {
        Level::Warn
    }
}

fn pct(x: f64) -> String {
    format!("{:.0}%", 100.0 * x)
}

/// A sync per record: syncs are a large share of the wall time and there are many of them.
pub(super) fn sync_per_record(e: &Evidence<'_>) -> Option<Recommendation> {
    let share = e.share(Cause::Durability);
    let (syncs, ns) = e.calls(&["fsync", "fdatasync", "sync_file_range", "msync"]);
    let writes: u64 = e.data_files().map(|f| f.writes.bytes).sum();
    if share < 0.2 || syncs < 20 {
        return None;
    }
    let each = ns / syncs.max(1);
    Some(
        Recommendation::new(
            "sync-per-record",
            level(share),
            "make data durable once per batch, not once per record",
            format!(
                "{syncs} syncs (fsync, fdatasync, sync_file_range, msync) took {} of the program's {} ({}): one costs {} here, and {} were written between two on average",
                secs(e.wall_in(Cause::Durability)),
                secs(e.wall()),
                pct(share),
                secs(each),
                format_size(writes / syncs.max(1))
            ),
            format!(
                "group the records into transactions and sync once per transaction (sqlite: BEGIN ... COMMIT around many INSERTs, or PRAGMA journal_mode=WAL with synchronous=NORMAL; a log: sync every N records or every few milliseconds, if the application may lose the last ones): N records a sync saves about (N-1)/N of the {} spent in syncs",
                secs(e.wall_in(Cause::Durability))
            ),
        )
        .unmeasurable(
            "replay replays reads only (writes would change the files): the cost of one sync is measured above",
        ),
    )
}

/// The cache state a file's reads ran in when traced: warm when it was resident before.
fn cache_of(f: &FileProfile) -> CacheMode {
    match f.resident_before {
        Some(r) if r * 10 >= f.size * 9 => CacheMode::Warm,
        _ => CacheMode::Cold,
    }
}

/// Many small reads of one file, one after the other.
pub(super) fn small_sequential_reads(e: &Evidence<'_>) -> Option<Recommendation> {
    let f = e.data_files().find(|f| {
        f.reads.calls >= 1000
            && f.typical_request > 0
            && f.typical_request <= 32 << 10
            && f.sequential >= 0.8
            && !f.direct
    })?;
    let read_ns = e.read_time(&f.path).min(e.wall());
    let share = e.share(Cause::FileData).max(e.share(Cause::Cpu) * 0.5);
    // Enough calls say it alone: each costs a system call, whatever the tracer's share hides.
    if (read_ns as f64) < 0.1 * e.wall() as f64 && share < 0.2 && f.reads.calls < 10_000 {
        return None;
    }
    let calls_then = f.reads.bytes.div_ceil(128 << 10);
    Some(
        Recommendation::new(
            "small-sequential-reads",
            level(read_ns as f64 / e.wall() as f64),
            "read in larger blocks",
            format!(
                "{}: {} reads of {} (typical), {} of them one after the other, {} in all; the read calls took {} of the program's {}",
                crate::shown::line(&f.path),
                f.reads.calls,
                format_size(f.typical_request),
                pct(f.sequential),
                format_size(f.reads.bytes),
                secs(read_ns),
                secs(e.wall())
            ),
            format!(
                "read 128 KiB to 1 MiB at a time ({calls_then} calls of 128 KiB instead of {}), or map the file and use its bytes in place: each call costs a system call and a copy, whatever its size",
                f.reads.calls
            ),
        )
        .measured_by(Remedy::Merged, cache_of(f)),
    )
}

/// Small O_DIRECT reads of a file that fits in memory.
pub(super) fn direct_fits_in_memory(e: &Evidence<'_>) -> Option<Recommendation> {
    let f = e.data_files().find(|f| {
        f.direct
            && f.reads.calls >= 100
            && f.typical_request <= 64 << 10
            && (e.available == 0 || f.size * 2 <= e.available)
    })?;
    let share = e.share(Cause::FileData);
    if share < 0.2 {
        return None;
    }
    Some(
        Recommendation::new(
            "direct-small-reads-of-a-file-that-fits",
            level(share),
            "read it through the page cache (or map it): it fits in memory",
            format!(
                "{}: {} O_DIRECT reads of {} (typical) of a {} file, {} sequential; file reads took {} of the program's {} ({}), and the machine has {} available",
                crate::shown::line(&f.path),
                f.reads.calls,
                format_size(f.typical_request),
                format_size(f.size),
                pct(f.sequential),
                secs(e.wall_in(Cause::FileData)),
                secs(e.wall()),
                pct(share),
                format_size(e.available)
            ),
            "open it without O_DIRECT (or map it): every read after the first of a page is then served from memory, where each O_DIRECT read waits for storage",
        )
        .measured_by(Remedy::Buffered, CacheMode::Warm),
    )
}

/// Random reads that made the kernel read ahead pages never used (the kernel tracer's per-file
/// storage bytes).
pub(super) fn readahead_wasted(e: &Evidence<'_>) -> Option<Recommendation> {
    let f = e.data_files().find(|f| {
        let from = f.cache.map_or(0, |c| c.by_reads);
        f.reads.calls >= 100
            && f.sequential < 0.3
            && f.typical_request <= 64 << 10
            && !f.direct
            && from > 2 * f.unique.max(1)
    })?;
    let from = f.cache.map_or(0, |c| c.by_reads);
    let share = e.share(Cause::FileData);
    if share < 0.1 {
        return None;
    }
    Some(
        Recommendation::new(
            "readahead-wasted",
            level(share),
            "tell the kernel the reads are random",
            format!(
                "{}: {} reads of {} (typical), {} of them one after the other; the kernel read {} from storage for the {} they asked for ({:.1}x): readahead brought pages they never used",
                crate::shown::line(&f.path),
                f.reads.calls,
                format_size(f.typical_request),
                pct(f.sequential),
                format_size(from),
                format_size(f.unique),
                from as f64 / f.unique.max(1) as f64
            ),
            "posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM) after opening it (madvise(MADV_RANDOM) on a mapping): the kernel then reads only the pages asked for",
        )
        .measured_by(Remedy::MmapRandom, CacheMode::Cold),
    )
}

/// Bytes read again from storage: the file did not stay in the cache between its reads.
pub(super) fn reread_after_eviction(e: &Evidence<'_>) -> Option<Recommendation> {
    let f = e.data_files().find(|f| {
        let from = f.cache.map_or(0, |c| c.by_reads + c.by_faults);
        f.reread >= 0.3 && f.cache.is_some() && from as f64 > 1.3 * f.unique as f64
    })?;
    let from = f.cache.map_or(0, |c| c.by_reads + c.by_faults);
    let share = e.share(Cause::FileData) + e.share(Cause::Faults);
    if share < 0.1 {
        return None;
    }
    Some(
        Recommendation::new(
            "reread-after-eviction",
            level(share),
            "keep the file in memory between its reads",
            format!(
                "{}: {} of its {} read were reads of bytes read before ({} distinct), and the kernel read {} of it from storage: pages were evicted between two reads of them",
                crate::shown::line(&f.path),
                pct(f.reread),
                format_size(f.reads.bytes),
                format_size(f.unique),
                format_size(from)
            ),
            format!(
                "keep it cached or mapped (it needs {} of memory; the machine has {} available), or read what is needed once and keep it in the program",
                format_size(f.unique),
                format_size(e.available)
            ),
        )
        .measured_by(Remedy::Mmap, CacheMode::Warm),
    )
}

/// Reads waiting for storage, in order: the storage (or its queue depth) is the limit.
pub(super) fn cold_reads(e: &Evidence<'_>) -> Option<Recommendation> {
    let share = e.share(Cause::FileData);
    let f = e.data_files().find(|f| {
        f.reads.bytes >= 16 << 20 && f.sequential >= 0.8 && cache_of(f) == CacheMode::Cold
    })?;
    if share < 0.4 {
        return None;
    }
    let rate = f.reads.bytes as f64
        / (e.wall_in(Cause::FileData).max(1) as f64 / 1e9)
        / (1u64 << 20) as f64;
    Some(
        Recommendation::new(
            "cold-reads",
            level(share),
            "keep more requests in flight (or keep the file cached)",
            format!(
                "{}: {} read in order from storage (not cached before the run) at {:.0} MiB/s; file reads took {} of the program's {} ({})",
                crate::shown::line(&f.path),
                format_size(f.reads.bytes),
                rate,
                secs(e.wall_in(Cause::FileData)),
                secs(e.wall()),
                pct(share)
            ),
            "queue several reads at once (io_uring with 16-32 in flight, or a few threads reading parts), or ask for the file ahead (posix_fadvise WILLNEED, madvise MADV_WILLNEED); if it is read again later, keep it cached",
        )
        .measured_by(Remedy::Uring, CacheMode::Cold),
    )
}

/// Page faults on mapped files waiting for storage.
pub(super) fn faults(e: &Evidence<'_>) -> Option<Recommendation> {
    let share = e.share(Cause::Faults);
    if share < 0.3 || e.p.mapped_bytes == 0 {
        return None;
    }
    Some(
        Recommendation::new(
            "faults",
            level(share),
            "fault the mapping in ahead (or read it with calls)",
            format!(
                "the program waited {} of its {} ({}) outside any call, blocked: page faults on its mappings ({} of data files faulted in) waiting for storage",
                secs(e.wall_in(Cause::Faults)),
                secs(e.wall()),
                pct(share),
                format_size(e.p.mapped_bytes)
            ),
            "madvise(MADV_WILLNEED) or MAP_POPULATE for what will be used, MADV_SEQUENTIAL for a scan; for scattered small accesses of a cold file, pread reads only what is asked",
        )
        .measured_by(Remedy::MmapWillneed, CacheMode::Cold),
    )
}

/// Opens, stats, directory reads, unlinks, renames as the main cost.
pub(super) fn metadata(e: &Evidence<'_>) -> Option<Recommendation> {
    let share = e.share(Cause::Metadata);
    let stats = e.t.ops.iter().filter(|o| o.call == Call::Stat).count() as u64;
    let failed =
        e.t.ops
            .iter()
            .filter(|o| matches!(o.call, Call::Stat | Call::Open) && o.ret < 0)
            .count() as u64;
    let opens = e.t.ops.iter().filter(|o| o.call == Call::Open).count() as u64;
    let (changes, _) = e.calls(&[
        "unlink",
        "unlinkat",
        "rename",
        "renameat",
        "renameat2",
        "mkdir",
        "mkdirat",
        "rmdir",
        "utimensat",
        "chmod",
        "fchmod",
        "fchmodat",
        "chown",
        "fchownat",
    ]);
    if share < 0.3 || stats + opens + changes < 500 {
        return None;
    }
    Some(
        Recommendation::new(
            "metadata",
            level(share),
            "look up fewer names",
            format!(
                "file-system metadata took {} of the program's {} ({}): {opens} opens, {stats} stats, {changes} unlinks, renames, mkdirs and attribute changes; {failed} opens and stats failed (names that were not there)",
                secs(e.wall_in(Cause::Metadata)),
                secs(e.wall()),
                pct(share)
            ),
            "stat each name once and keep the answer; open relative to a directory's descriptor (openat) instead of full paths; read a directory once rather than stat each possible name (a long search path fails many lookups); many small files: pack them (an archive, a database)",
        )
        .unmeasurable("replay replays reads of file data, not metadata calls"),
    )
}

/// The main thread waited on a pipe or a child that was the bottleneck.
pub(super) fn other_process(e: &Evidence<'_>) -> Option<Recommendation> {
    let w = e.time.wall.as_ref()?;
    if (w.handed_ns as f64) < 0.5 * w.wall_ns as f64 {
        return None;
    }
    let first = w.causes.iter().find(|c| c.cause != Cause::Tracer)?;
    let who = first.threads.iter().find(|s| s.tid != w.main_tid)?;
    if first.cause != Cause::Cpu || who.pid == e.t.root.unwrap_or(0) {
        return None;
    }
    let share = who.ns as f64 / e.wall().max(1) as f64;
    if share < 0.2 {
        return None;
    }
    let name = crate::shown::line(&who.name);
    Some(
        Recommendation::new(
            "other-process",
            level(share),
            format!("speed up {name}: the rest waits for it"),
            format!(
                "the program's main thread waited {} on pipes and children of its {} wall time; meanwhile {name} (pid {}) computed for {} of it ({})",
                secs(w.handed_ns),
                secs(w.wall_ns),
                who.pid,
                secs(who.ns),
                pct(share)
            ),
            format!(
                "the program runs at the pace of {name}'s computing: give it less work or a faster setting (a lower compression level, say), or spread its work over the machine's cores (pigz or zstd -T0 for gzip); a faster I/O method would not help it"
            ),
        )
        .unmeasurable("replay measures file reads, not another process's computing"),
    )
}

/// Waiting on a socket or a poll whose other end was not traced.
pub(super) fn peer(e: &Evidence<'_>) -> Option<Recommendation> {
    let share = e.share(Cause::Sockets) + e.share(Cause::Polls);
    if share < 0.5 {
        return None;
    }
    Some(
        Recommendation::new(
            "peer",
            Level::Info,
            "look at the other end",
            format!(
                "the program waited on sockets and polls for {} of its {} ({}), with no traced thread working meanwhile",
                secs(e.wall_in(Cause::Sockets) + e.wall_in(Cause::Polls)),
                secs(e.wall()),
                pct(share)
            ),
            "what would speed it up is at the other end (a server, a peer): trace that process too (`iolab trace --pid PID`, as root) and look at its answer",
        )
        .unmeasurable("the time is the peer's"),
    )
}

/// Sleeping.
pub(super) fn sleep(e: &Evidence<'_>) -> Option<Recommendation> {
    let share = e.share(Cause::Sleep);
    if share < 0.3 {
        return None;
    }
    Some(
        Recommendation::new(
            "sleep",
            Level::Info,
            "the program chose to wait",
            format!(
                "it slept {} of its {} ({}): nanosleep, pause, waiting for a signal",
                secs(e.wall_in(Cause::Sleep)),
                secs(e.wall()),
                pct(share)
            ),
            "a timer, a retry delay or a rate limit of its own: shorten it if the program allows; its I/O is not where the time went",
        )
        .unmeasurable("the time is the program's own choice"),
    )
}

/// Computing: the I/O is not where the time went.
pub(super) fn computing(e: &Evidence<'_>) -> Option<Recommendation> {
    let share = e.share(Cause::Cpu);
    if share < 0.6 {
        return None;
    }
    let io = e.wall_in(Cause::FileData) + e.wall_in(Cause::Faults) + e.wall_in(Cause::Metadata);
    Some(
        Recommendation::new(
            "computing",
            Level::Info,
            "its I/O is not the bottleneck",
            format!(
                "it computed {} of its {} ({}); file data, faults and metadata took {}",
                secs(e.wall_in(Cause::Cpu)),
                secs(e.wall()),
                pct(share),
                secs(io)
            ),
            format!(
                "a faster I/O method can save at most the {} its I/O took: profile its computing (perf record, py-spy) instead",
                secs(io)
            ),
        )
        .unmeasurable("the time is computing"),
    )
}
