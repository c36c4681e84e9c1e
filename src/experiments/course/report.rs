//! The three classic tables: mmap-bench's KIOPS, Part B, and the NTU course inputs' transmission
//! times, each figure a median with its interval.

use super::{COURSE_12MB_MS, ClassicNetResult, Method, NetRow};
use crate::cache::CacheMode;
use crate::engine::ReadMethod;
use crate::experiments::access::AccessResult;
use crate::experiments::partb::{PartBCell, PartBResult};
use crate::measure::decide::{Decided, Verdict};
use crate::measure::stats::Summary;
use crate::report::{Document, Shown, Table, Value};
use crate::transfer::ChunkSizes;
use crate::workload::Pattern;

/// `12.3 (11.9-12.8)`: a median and its interval, `digits` decimals (missing without runs).
pub fn with_interval(s: &Summary, digits: usize) -> Value {
    if s.n == 0 {
        return Value::Missing;
    }
    Value::text(format!(
        "{:.*} ({:.*}-{:.*})",
        digits, s.median, digits, s.ci[0], digits, s.ci[1]
    ))
}

/// The smallest coverage of the intervals shown, for the table's foot.
fn level_of<'a>(sums: impl Iterator<Item = &'a Summary>) -> f64 {
    sums.filter(|s| s.n > 1)
        .map(|s| s.ci_level)
        .fold(1.0, f64::min)
}

/// The classic benchmark's name of an access method.
fn classic_way(m: ReadMethod) -> &'static str {
    match m {
        ReadMethod::Read => "read",
        ReadMethod::Mmap => "mmap",
        ReadMethod::MmapSeq => "mmap adv_seq",
        ReadMethod::MmapRandom => "mmap adv_random",
        other => other.name(),
    }
}

/// mmap-bench's table: a row per order and way, KIOPS cold and warm.
pub fn access_table(r: &AccessResult) -> Table {
    let mut t = Table::titled(&[
        "order",
        "way",
        "cold KIOPS (interval)",
        "warm KIOPS (interval)",
    ]);
    for pattern in [Pattern::Seq, Pattern::Random] {
        for &method in &r.config.methods {
            let cell = |cache: CacheMode| {
                r.rows
                    .iter()
                    .find(|row| {
                        row.method == method && row.pattern == pattern && row.cache == cache
                    })
                    .map_or(Value::Missing, |row| match &row.unsupported {
                        Some(why) => Value::text(format!("unsupported: {why}")),
                        None => with_interval(&row.kiops, 1),
                    })
            };
            t.row(vec![
                Value::text(pattern.name()),
                Value::text(classic_way(method)),
                cell(CacheMode::Cold),
                cell(CacheMode::Warm),
            ]);
        }
    }
    t
}

/// What the mmap-bench table shows and what the original measured instead.
pub fn access_note(r: &AccessResult) -> String {
    let level = level_of(r.rows.iter().map(|row| &row.kiops));
    format!(
        "The original's work on a file of {}: every whole 4 KiB block once, one byte touched, no file hint, an lseek before every read; intervals at {:.0}% or more. The original OR-ed each hint with MADV_WILLNEED, and 2 | 3 and 1 | 3 are both 3 (WILLNEED): its adv_seq and adv_random rows measured WILLNEED; here each hint is applied alone.",
        crate::size::format_size(r.file_size),
        level * 100.0
    )
}

/// mmap-bench's table with its note.
pub fn access_document(r: &AccessResult) -> Document {
    Document::new().table(access_table(r)).para(access_note(r))
}

/// Part B's ways, MiB/s with intervals.
pub fn partb_table(r: &PartBResult) -> Table {
    let mut t = Table::titled(&["how", "MiB/s (interval)", "calls/run", "faults/run"]);
    let cells: [&PartBCell; 5] = [
        &r.read,
        &r.mmap_read,
        &r.write_fsync_each,
        &r.mmap_write_msync_end,
        &r.write_fsync_end,
    ];
    for c in cells {
        t.row(vec![
            Value::text(&c.name),
            with_interval(&c.mib_s, 1),
            Value::Count(c.syscalls),
            Value::Count(c.faults),
        ]);
    }
    t
}

/// Part B's table, `free -m` before and after, and its explanation (those two folded: they are
/// long for a printed page).
pub fn partb_document(r: &PartBResult) -> Document {
    let level = level_of(
        [
            &r.read,
            &r.mmap_read,
            &r.write_fsync_each,
            &r.mmap_write_msync_end,
            &r.write_fsync_end,
        ]
        .iter()
        .map(|c| &c.mib_s),
    );
    Document::new()
        .table(partb_table(r))
        .para(format!(
            "Intervals at {:.0}% or more, over {} rounds; blocks of {}, writes of {}.",
            level * 100.0,
            r.config.rounds.repeat,
            crate::size::format_size(r.config.bs),
            crate::size::format_size(r.config.write_len),
        ))
        .fold("free -m before and after, and what the figures say")
        .table(crate::experiments::vm::report::partb_free_table(r))
        .para(r.explanation.join("\n\n"))
}

/// The course's sizes or iolab's, shortly.
fn sizes_name(s: &ChunkSizes) -> &'static str {
    if *s == ChunkSizes::CLASSIC {
        "course: 512 B, 8 KiB maps"
    } else {
        "iolab: 1 MiB, whole maps"
    }
}

/// Milliseconds with their interval, as many decimals as their size needs.
fn ms_cell(s: &Summary) -> Value {
    with_interval(s, if s.median < 10.0 { 2 } else { 1 })
}

/// fcntl's slave time over mmap's, from the harness's verdict on their rates (fcntl / mmap:
/// the time ratio is its inverse), with what it decided.
pub fn versus_text(v: Option<&Verdict>) -> String {
    let Some(v) = v else {
        return "not compared".into();
    };
    let (r, lo, hi) = (1.0 / v.ratio, 1.0 / v.ci[1], 1.0 / v.ci[0]);
    let said = match (v.decided, v.a_larger) {
        (Decided::Winner, Some(true)) => "fcntl faster",
        (Decided::Winner, _) => "mmap faster",
        (Decided::Equivalent, _) => "within 5%",
        _ => "undecided",
    };
    format!("{r:.2}x ({lo:.2}-{hi:.2}, {:.0}%) {said}", v.level * 100.0)
}

fn row<'a>(
    r: &'a ClassicNetResult,
    input: &str,
    sizes: &ChunkSizes,
    m: Method,
) -> Option<&'a NetRow> {
    r.rows
        .iter()
        .find(|x| x.input == input && x.sizes == *sizes && x.method == m)
}

/// The course inputs' table: a row per input and sizes, master and slave ms for fcntl and mmap.
pub fn net_table(r: &ClassicNetResult) -> Table {
    let mut t = Table::titled(&[
        "input",
        "sizes",
        "master fcntl ms",
        "master mmap ms",
        "slave fcntl ms",
        "slave mmap ms",
        "slave fcntl / mmap time",
        "the course's",
    ]);
    for v in &r.versus {
        let ms = |m: Method, master: bool| {
            row(r, &v.input, &v.sizes, m).map_or(Value::Missing, |x| {
                ms_cell(if master { &x.master_ms } else { &x.slave_ms })
            })
        };
        let course = if v.input.contains("12 MB") {
            let (f, m) = COURSE_12MB_MS;
            Value::text(format!("{:.2}x ({f} / {m} ms)", f / m))
        } else {
            Value::Missing
        };
        t.row(vec![
            Value::text(format!(
                "{} ({})",
                v.input,
                crate::size::format_size(
                    r.config
                        .inputs
                        .iter()
                        .find(|i| i.name == v.input)
                        .map_or(0, |i| i.bytes)
                )
            )),
            Value::text(sizes_name(&v.sizes)),
            ms(Method::Fcntl, true),
            ms(Method::Mmap, true),
            ms(Method::Fcntl, false),
            ms(Method::Mmap, false),
            Value::text(versus_text(v.verdict.as_ref())),
            course,
        ]);
    }
    t
}

/// What the course inputs' table shows, in two sentences.
pub fn net_summary(r: &ClassicNetResult) -> String {
    let level = level_of(r.rows.iter().flat_map(|x| [&x.master_ms, &x.slave_ms]));
    format!(
        "Each side's one `Transmission time` per run (all the input's files), medians with intervals at {:.0}% or more; the ratio is the harness's verdict on the slave's time. The course's programs printed (microseconds) x 0.0001, milliseconds 10x too small, and some file_size / 8: multiply their figures by 10 and 8; its ratio holds.",
        level * 100.0
    )
}

/// How to read the course inputs' table beside the course's own figure.
pub fn net_note(r: &ClassicNetResult) -> String {
    format!(
        "`master N f1 .. fN fcntl|mmap` to `slave N ...` over loopback, one line per run as the 2020 programs printed it, from the first connection to the last file done. {} The course reported only its 12 MB file, from a kernel module that copied each page-sized window once into a device buffer and sent it in one kernel send, against 512-byte reads and writes for fcntl. iolab moves the files in user space: its mmap maps the file and sends each window in one call; with large buffers on both sides read/write needs no mapping's page faults.",
        if r.processes {
            "Master and slave ran as two processes, as the course's did."
        } else {
            "Master and slave ran as two threads of one process: every munmap of a window also interrupted the other side's core to flush its TLB, which two processes would not do, so mmap's times here are pessimistic."
        }
    )
}

/// The course inputs' table, what it shows, how the rounds went (text) and how to read it
/// beside the course's figure (folded).
pub fn net_document(r: &ClassicNetResult) -> Document {
    Document::new()
        .table(net_table(r))
        .para(net_summary(r))
        .para(crate::report::rounds_line(&r.rounds))
        .only(Shown::Text)
        .fold("how to read it beside the course's figure")
        .para(net_note(r))
}
