//! `iolab trace`'s profile as text and Markdown: a summary, the files table, the calls table.

mod answer;

pub use answer::{advice_document, gain_text, threads_table, wall_table};

use super::{Document, Table, Value};
use crate::size::format_size;
use crate::trace::profile::{FileProfile, Profile};
use crate::trace::timeline::Timeline;

fn pct(x: f64) -> Value {
    Value::text(format!("{:.0}%", 100.0 * x))
}

fn opt_size(x: Option<u64>) -> Value {
    x.map_or(Value::text("hidden"), Value::Bytes)
}

/// What the program did to the cache itself, in the files' own words: reads that bypassed it
/// (O_DIRECT: from storage, never cached) and pages it dropped (fadvise DONTNEED); None when it
/// did neither.
fn own_cache_use(p: &Profile) -> Option<String> {
    let direct: Vec<&FileProfile> = p.files.iter().filter(|f| f.direct).collect();
    let dropped: Vec<&FileProfile> = p.files.iter().filter(|f| f.dropped).collect();
    let mut parts = Vec::new();
    if let Some(f) = direct.first() {
        parts.push(format!(
            "{} file(s) read with O_DIRECT bypassed the cache (first: {}): their storage reads are in no cache growth",
            direct.len(),
            crate::shown::line(&f.path)
        ));
    }
    if let Some(f) = dropped.first() {
        parts.push(format!(
            "the program dropped its own cached pages of {} file(s) (fadvise DONTNEED; first: {})",
            dropped.len(),
            crate::shown::line(&f.path)
        ));
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}

/// A file's path and, when the program renamed it, its last name (only the file name when it
/// stayed in its directory): `pg_wal/xlogtemp.123 -> 000000010000000000000002`.
fn names(path: &str, renamed: &[String]) -> String {
    let Some(last) = renamed.last() else {
        return path.to_string();
    };
    let (dir, new) = (
        std::path::Path::new(path).parent(),
        std::path::Path::new(last),
    );
    let shown = match (dir, new.parent(), new.file_name()) {
        (Some(a), Some(b), Some(n)) if a == b => n.to_string_lossy().into_owned(),
        _ => last.clone(),
    };
    let more = if renamed.len() > 1 {
        format!(" ({} renames)", renamed.len())
    } else {
        String::new()
    };
    format!("{path} -> {shown}{more}")
}

/// The command, how long it ran and how it ended, before the verdict.
pub fn headline(p: &Profile) -> String {
    let how = match (p.ended.code, p.ended.signal) {
        (Some(c), _) => format!("exit code {c}"),
        (None, Some(s)) => format!("killed by signal {s}"),
        _ => "end unknown".into(),
    };
    format!(
        "{} ({:.3} s, {how}{}):",
        p.command
            .iter()
            .map(|a| crate::shown::word(std::ffi::OsStr::new(a)))
            .collect::<Vec<_>>()
            .join(" "),
        p.wall_s,
        if p.interrupted { ", interrupted" } else { "" },
    )
}

/// The summary lines (the headline says the command, its time and its end).
pub fn summary(p: &Profile) -> Vec<String> {
    let mut l = Vec::new();
    l.push(format!(
        "{} process(es), {} thread(s), stopped {} times for the tracer",
        p.processes, p.threads, p.stops
    ));
    l.push(calls_line(p));
    l.push(kernel_line(p));
    if let Some(d) = p.device_agreement {
        l.push(format!(
            "from storage {}; brought into the cache by the run {}: {} of file pages + {} of file-system metadata ({:+.1}%; {})",
            format_size(p.kernel.read_bytes),
            format_size(p.cache_growth + p.metadata_growth),
            format_size(p.cache_growth),
            format_size(p.metadata_growth),
            100.0 * (d - 1.0),
            match (own_cache_use(p), p.shrunk_files) {
                (Some(why), _) => why,
                (None, 0) => "evictions during the run and other programs' metadata reads make a difference".to_string(),
                (None, n) => format!("{n} file(s) held fewer cached pages after the run than before, or none once read: pages were evicted during it, and what was read and evicted is missed"),
            }
        ));
    }
    if let Some(c) = &p.cache {
        l.push(page_cache_line(p, c));
    }
    l.push(format!(
        "time in traced calls: {} of the wall time (tracer-side, so each call includes ~2 stops){}",
        pct(p.io_share).shown(),
        match (p.device_per_unique, &p.device_per_unique_withheld) {
            (Some(d), _) => format!("; storage bytes per unique file byte read: {d:.2}"),
            (None, Some(why)) => format!("; storage bytes per unique byte read: not given ({why})"),
            (None, None) => String::new(),
        }
    ));
    if let Some(why) = &p.faults_unavailable {
        l.push(format!(
            "page faults: not sampled ({why}); mapped access shows only as mmap calls"
        ));
    } else {
        l.push(format!(
            "page faults on file mappings: {}{}; mapped data: {} (distinct {} KiB fault windows on data files, beside the {} read by calls)",
            p.faults,
            if p.faults_lost > 0 {
                format!(" ({} lost)", p.faults_lost)
            } else {
                String::new()
            },
            format_size(p.mapped_bytes),
            crate::trace::FAULT_AROUND >> 10,
            format_size(p.file_reads.bytes)
        ));
    }
    if !p.request_sizes.is_empty() {
        let sizes: Vec<String> = p
            .request_sizes
            .iter()
            .map(|(s, n)| format!("{}:{n}", format_size(*s)))
            .collect();
        l.push(format!(
            "file read sizes (returned, up to): {}",
            sizes.join(" ")
        ));
    }
    for n in &p.notes {
        l.push(format!("note: {n}"));
    }
    l
}

/// The calls' line: reads and writes, io_uring's requests.
fn calls_line(p: &Profile) -> String {
    let uring = p.uring.as_ref().map(|u| {
        let unseen = match (u.unseen, &u.why) {
            (0, _) => String::new(),
            (n, Some(why)) => format!(", {n} not seen ({why})"),
            (n, None) => format!(", {n} not seen"),
        };
        format!(
            "; io_uring: {} requests read from its rings, {} reads returning {}, {} writes of {}{unseen}",
            u.requests,
            p.uring_reads.calls,
            format_size(p.uring_reads.bytes),
            p.uring_writes.calls,
            format_size(p.uring_writes.bytes),
        )
    });
    format!(
        "reads: {} calls, {} returned ({} from regular files); writes: {} calls, {} ({} to regular files, copies included){}",
        p.reads.calls,
        format_size(p.reads.bytes),
        format_size(p.file_reads.bytes),
        p.writes.calls,
        format_size(p.writes.bytes),
        format_size(p.file_writes.bytes),
        uring.unwrap_or_default()
    )
}

/// The kernel's own count beside the traced one (rchar, wchar, storage bytes).
fn kernel_line(p: &Profile) -> String {
    match p.rchar_agreement {
        Some(a) => {
            format!(
                "kernel's count (/proc io, {} threads): rchar {} = traced reads {} + exec headers {} {:+.3}%; from storage {}, to storage {}",
                p.kernel.threads,
                format_size(p.kernel.rchar),
                format_size(p.reads.bytes),
                format_size(p.kernel.exec_rchar),
                100.0 * (a - 1.0),
                format_size(p.kernel.read_bytes),
                format_size(p.kernel.write_bytes)
            ) + &p
                .wchar_agreement
                .map(|w| {
                    format!(
                        "; wchar {} = traced writes and copies {} {:+.3}%",
                        format_size(p.kernel.wchar),
                        format_size(p.writes.bytes),
                        100.0 * (w - 1.0)
                    )
                })
                .unwrap_or_default()
        }
        None => "kernel's count: not read (no thread's /proc io was readable)".into(),
    }
}

/// A column of bytes from storage: its title, and the bytes of a file's cache work it shows.
type BroughtBy = (&'static str, fn(&crate::trace::CacheWork) -> u64);

/// What brought a file's bytes from storage, as the kernel tracer tells them apart (the call
/// in progress when its pages entered the cache, or O_DIRECT past it): each a column of the
/// files table where more than one kind did (readahead counts with the reads that set it off:
/// the kernel's tracepoint does not tell them apart).
const BROUGHT_BY: [BroughtBy; 5] = [
    ("by reads", |c| c.by_reads),
    ("by faults", |c| c.by_faults),
    ("by io_uring", |c| c.by_uring),
    ("O_DIRECT", |c| c.direct),
    ("by other", |c| c.by_other),
];

/// The kinds of [`BROUGHT_BY`] the first `limit` of `files` split their bytes from storage
/// into: none when at most one kind brought any.
fn brought_by(files: &[&FileProfile], limit: usize) -> Vec<BroughtBy> {
    let some: Vec<_> = BROUGHT_BY
        .into_iter()
        .filter(|(_, of)| {
            files
                .iter()
                .take(limit)
                .filter_map(|f| f.cache.as_ref())
                .any(|c| of(c) > 0)
        })
        .collect();
    if some.len() > 1 { some } else { Vec::new() }
}

/// The files table (regular files, most bytes first; at most `limit` rows).
pub fn files_table(files: &[&FileProfile], limit: usize) -> Table {
    // The kernel tracer's view of the page cache, where it was taken.
    let kernel = files.iter().any(|f| f.cache.is_some());
    let kinds = brought_by(files, limit);
    let mut titles = vec![
        "file",
        "size",
        "reads",
        "read",
        "unique",
        "re-read",
        "seq",
        "typical",
        "res before",
        "res after",
    ];
    if kernel {
        titles.push("from storage");
        titles.extend(kinds.iter().map(|(title, _)| *title));
        titles.push("cache served");
    }
    titles.extend(["faults", "writes", "xor"]);
    let mut t = Table::titled(&titles);
    for f in files.iter().take(limit) {
        let mut row = vec![
            Value::text(names(&f.path, &f.renamed)),
            Value::Bytes(f.size),
            Value::Count(f.reads.calls),
            Value::Bytes(f.reads.bytes),
            Value::Bytes(f.unique),
            pct(f.reread),
            pct(f.sequential),
            if f.typical_request > 0 {
                Value::Bytes(f.typical_request)
            } else {
                Value::Missing
            },
            opt_size(f.resident_before),
            opt_size(f.resident_after),
        ];
        if kernel {
            let c = f.cache.as_ref();
            row.push(c.map_or(Value::Missing, |c| Value::Bytes(c.from_storage())));
            row.extend(
                (kinds.iter()).map(|(_, of)| c.map_or(Value::Missing, |c| Value::Bytes(of(c)))),
            );
            row.push(crate::trace::hit_ratio([(f.reads.bytes, c)]).map_or(Value::Missing, pct));
        }
        row.extend([
            if f.mapped || f.faults > 0 {
                Value::text(format!("{} ({} pages)", f.faults, f.fault_pages))
            } else {
                Value::Missing
            },
            Value::Bytes(f.writes.bytes),
            f.xor.as_ref().map_or(Value::Missing, Value::text),
        ]);
        t.row(row);
    }
    t
}

/// What the kernel tracer saw the page cache do: bytes from storage, set beside the kernel's
/// read_bytes; the share of the file reads the cache served; pages dirtied beside
/// write_bytes.
fn page_cache_line(p: &Profile, c: &crate::trace::CacheSeen) -> String {
    let k = &p.kernel;
    let versus = |ours: u64, kernel: u64| {
        if kernel > 0 {
            format!("{:+.1}%", 100.0 * (ours as f64 / kernel as f64 - 1.0))
        } else if ours == 0 {
            "equal".to_string()
        } else {
            "the kernel counted none".to_string()
        }
    };
    let files = p.files.iter().chain(&p.code_files);
    let hits = crate::trace::hit_ratio(files.map(|f| (f.reads.bytes, f.cache.as_ref())));
    format!(
        "page cache (kernel tracer): {} read from storage for the program ({}{} of file-system metadata, {} of files it did not open, such as its program loaded by exec), the kernel's read_bytes {} ({}); file reads served by the cache: {}; dirtied {}, the kernel's write_bytes {} ({}){}",
        format_size(c.from_storage()),
        if c.direct > 0 {
            format!("{} past the cache with O_DIRECT, ", format_size(c.direct))
        } else {
            String::new()
        },
        format_size(c.metadata),
        format_size(c.unnamed),
        format_size(k.read_bytes),
        versus(c.from_storage(), k.read_bytes),
        hits.map_or("none read".to_string(), |h| format!("{:.1}%", 100.0 * h)),
        format_size(c.dirtied),
        format_size(k.write_bytes),
        versus(c.dirtied, k.write_bytes),
        if c.files_lost > 0 {
            format!(
                "; {} file(s) not counted (the probes' table was full)",
                c.files_lost
            )
        } else {
            String::new()
        }
    )
}

/// The calls table.
pub fn calls_table(p: &Profile) -> Table {
    let mut t = Table::titled(&["call", "calls", "errors", "bytes", "ms", "us/call"]);
    for c in &p.calls {
        t.row(vec![
            Value::text(&c.call),
            Value::Count(c.calls),
            Value::Count(c.errors),
            Value::Bytes(c.bytes),
            Value::Fixed(c.time_ns as f64 / 1e6, 1),
            Value::Fixed(c.time_ns as f64 / 1e3 / c.calls.max(1) as f64, 1),
        ]);
    }
    t
}

/// The timeline: bytes and calls per interval of the run.
pub fn timeline_table(tl: &Timeline) -> Table {
    let mut t = Table::titled(&[
        "from s",
        "file reads",
        "file writes",
        "mapped",
        "pipes, sockets",
        "calls",
        "metadata",
        "busiest file",
    ]);
    for r in &tl.rows {
        t.row(vec![
            Value::Fixed(r.from_s, 3),
            Value::Bytes(r.file_read),
            Value::Bytes(r.file_written),
            Value::Bytes(r.mapped),
            Value::Bytes(r.pipes),
            Value::Count(r.calls),
            Value::Count(r.metadata_calls),
            r.busiest
                .as_deref()
                .map_or(Value::Missing, |p| Value::text(crate::shown::line(p))),
        ]);
    }
    t
}

/// The timeline as an SVG line plot: MiB/s of each kind of I/O against time.
pub fn timeline_svg(tl: &Timeline, command: &str) -> String {
    use super::svg::{Plot, Series, series_points};
    type Of = fn(&crate::trace::timeline::TimelineRow) -> u64;
    let rate = |f: Of| {
        series_points(tl.rows.iter().map(|r| {
            let mid = r.from_s + tl.step_s / 2.0;
            (
                mid,
                Some(f(r) as f64 / (1 << 20) as f64 / tl.step_s.max(1e-9)),
            )
        }))
    };
    let kinds: [(&str, Of); 4] = [
        ("file reads", |r| r.file_read),
        ("file writes", |r| r.file_written),
        ("mapped (faulted pages)", |r| r.mapped),
        ("pipes, sockets", |r| r.pipes),
    ];
    let series = kinds
        .into_iter()
        .map(|(name, of)| Series {
            name: name.into(),
            points: rate(of),
        })
        .collect();
    super::svg::line_plot(&Plot::over_time(
        format!("I/O over time: {command}"),
        "seconds from the start",
        "MiB/s",
        series,
    ))
}

/// Metadata calls per directory (at most `limit` rows, most time first).
pub fn metadata_table(p: &Profile, limit: usize) -> Table {
    let mut t = Table::titled(&[
        "directory",
        "stats",
        "failed",
        "getdents",
        "entries",
        "ms",
        "us/call",
    ]);
    for r in p.metadata_dirs.iter().take(limit) {
        let calls = r.stats + r.getdents;
        t.row(vec![
            Value::text(&r.path),
            Value::Count(r.stats),
            Value::Count(r.stat_errors),
            Value::Count(r.getdents),
            Value::Bytes(r.entry_bytes),
            Value::Fixed(r.time_ns as f64 / 1e6, 1),
            Value::Fixed(r.time_ns as f64 / 1e3 / calls.max(1) as f64, 1),
        ]);
    }
    t
}

/// The whole profile: the summary, the files read or written (at most `limit`), the calls.
pub fn profile_document(p: &Profile, limit: usize) -> Document {
    // By reference: rg's 73,000 files cloned took 25 ms.
    let (used, idle): (Vec<&FileProfile>, Vec<&FileProfile>) = p
        .files
        .iter()
        .partition(|f| f.reads.calls > 0 || f.writes.calls > 0 || f.faults > 0);
    let more = used.len().saturating_sub(limit);
    let mut after = Vec::new();
    if more > 0 {
        after.push(format!(
            "... and {more} more file(s) read or written (--files N shows more)"
        ));
    }
    if !idle.is_empty() {
        after.push(format!(
            "{} more file(s) opened or mapped, never read, written or faulted on",
            idle.len()
        ));
    }
    if !p.code_files.is_empty() {
        let faults: u64 = p.code_files.iter().map(|f| f.faults).sum();
        after.push(format!(
            "code: {} program/library file(s) mapped executable, {faults} page faults on them",
            p.code_files.len()
        ));
    }
    // The answer first: what the program was bound by; then where each thread's time went;
    // then the details.
    let doc = match &p.time {
        Some(t) => {
            let doc = Document::new().para(format!("{} {}", headline(p), t.verdict.text));
            let doc = match &t.wall {
                Some(w) => doc.table(wall_table(w)),
                None => doc,
            };
            doc.then(advice_document(&p.advice))
                .para(format!("per thread ({})", t.tracer_note))
                .table(threads_table(t, limit))
        }
        None => Document::new().para(format!(
            "{} where the time went is not known: this trace has no per-thread times (recorded by an older iolab); trace the program again",
            headline(p)
        )),
    };
    let doc = doc
        .items(summary(p))
        .table(files_table(&used, limit))
        .para(after.join("\n"))
        .table(calls_table(p));
    let doc = if p.timeline.rows.len() > 1 {
        doc.para(format!(
            "timeline: every {:.3} s (--svg FILE plots it)",
            p.timeline.step_s
        ))
        .table(timeline_table(&p.timeline))
    } else {
        doc
    };
    if p.metadata_dirs.is_empty() {
        return if p.failed_opens.0 > 0 {
            doc.para(format!(
                "opens that failed: {}, {:.1} ms",
                p.failed_opens.0,
                p.failed_opens.1 as f64 / 1e6
            ))
        } else {
            doc
        };
    }
    let more = p.metadata_dirs.len().saturating_sub(limit);
    doc.para(format!(
        "metadata by directory{}{}",
        if more > 0 {
            format!(" ({more} more directories: --files N shows more)")
        } else {
            String::new()
        },
        if p.failed_opens.0 > 0 {
            format!(
                "; opens that failed: {}, {:.1} ms",
                p.failed_opens.0,
                p.failed_opens.1 as f64 / 1e6
            )
        } else {
            String::new()
        }
    ))
    .table(metadata_table(p, limit))
}
