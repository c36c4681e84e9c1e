//! "Your program" in the suite: a real program, `sha256sum` of the classic transfer inputs,
//! traced (with its tracing overhead) and its reads replayed with every method.
//!
//! Why `sha256sum`: coreutils is on every Debian machine, and it reads the way most streaming
//! tools do (one thread, 32 KiB `read` calls, front to back), so the replay answers the question
//! such tools raise: would mmap, larger reads, io_uring or O_DIRECT read the same bytes faster
//! here? The classic inputs give it many files of several sizes (one of 12 MB).

use super::{ReplayConfig, ReplayMethod, ReplayResult, replay_trace};
use crate::cache::CacheMode;
use crate::error::{Error, Result};
use crate::experiments::entry::{About, Entry, SuiteContext, SuiteResult};
use crate::harness::{BudgetClass, Observer};
use crate::measure::finding::Finding;
use crate::report::{Document, Table, Value};
use crate::size::format_size;
use crate::trace::advice::profiled;
use crate::trace::overhead::{Overhead, overhead};
use crate::trace::profile::Profile;
use crate::trace::{TraceConfig, run};
use serde::{Deserialize, Serialize};

/// The traced program's profile, the tracing overhead and the replay.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct YourProgram {
    /// The profile of the traced run.
    pub profile: Profile,
    /// Traced against untraced wall time.
    pub overhead: Overhead,
    /// Its reads replayed with each method.
    pub replay: ReplayResult,
}

/// The suite's entry.
pub struct YourProgramEntry;

impl Entry for YourProgramEntry {
    type Output = YourProgram;
    fn about(&self) -> &'static About {
        &About {
            name: "your_program",
            title: "your program: sha256sum traced and replayed",
            explains: "`iolab trace` records a program's file I/O without root, checked against the kernel's own count; `iolab replay` reads the same bytes with each method. Here: coreutils' sha256sum over the classic inputs; yours with `iolab trace --out t.json -- CMD`, then `iolab replay t.json`.",
        }
    }

    fn run(&self, ctx: &SuiteContext<'_>, obs: &dyn Observer) -> Result<YourProgram> {
        let launcher = ctx.cfg.worker.clone().ok_or_else(|| {
            Error::unsupported(
                "cannot trace",
                "the traced program starts as `iolab trace-exec` and needs the iolab program (run by `iolab suite`)",
            )
        })?;
        let mut command = vec!["sha256sum".into()];
        command.extend(
            ctx.data
                .classic_files
                .iter()
                .map(|p| p.as_os_str().to_owned()),
        );
        let cfg = TraceConfig {
            command,
            launcher,
            faults: true,
            xor: true,
            metadata: true,
            quiet: true,
            tracer: crate::trace::TracerChoice::Ptrace,
        };
        obs.progress("tracing sha256sum", 0, 1);
        let t = run(&cfg, &crate::sys::interrupted)?;
        if t.ended.code != Some(0) {
            return Err(Error::failed(
                "sha256sum failed under trace",
                format!("it ended with {:?}", t.ended),
            ));
        }
        let overhead = overhead(&cfg, 3, &crate::sys::interrupted)?;
        let rcfg = ReplayConfig {
            trace: "sha256sum".into(),
            methods: ReplayMethod::defaults(),
            caches: vec![CacheMode::Cold, CacheMode::Warm],
            rounds: ctx.rounds(BudgetClass::Brief),
            drop_all: false,
            keep_gaps: false,
            first: Vec::new(),
        };
        let replay = replay_trace(&t, &rcfg, obs)?;
        Ok(YourProgram {
            profile: profiled(&t),
            overhead,
            replay,
        })
    }

    fn document(&self, out: &YourProgram) -> crate::report::Document {
        suite_section(out)
    }

    fn finding_keys(&self) -> &'static [&'static str] {
        &["replay-cold", "replay-warm"]
    }

    fn findings(&self, out: &YourProgram, _: &SuiteResult) -> Vec<Finding> {
        out.replay.findings.clone()
    }
}

/// The suite's section: the profile's summary, the overhead, and one row per method with cold
/// and warm side by side (the findings are in the report's list of findings: not repeated
/// here, the printed report keeps to 12 pages).
fn suite_section(out: &YourProgram) -> Document {
    let p = &out.profile;
    let o = &out.overhead;
    let r = &out.replay;
    let head = vec![
        format!(
            "{} files, {} read in {} calls (typical {}); the kernel's rchar agrees {:+.3}%",
            r.files,
            format_size(p.reads.bytes),
            p.reads.calls,
            format_size(r.typical_read),
            100.0 * (p.rchar_agreement.unwrap_or(f64::NAN) - 1.0)
        ),
        format!(
            "tracing overhead: {:.2}x wall time (min {:.2}, max {:.2}, {} interleaved rounds)",
            o.ratio,
            o.ratio_min,
            o.ratio_max,
            o.traced_s.len()
        ),
    ];
    let mut t = Table::titled(&["method", "cold MiB/s", "warm MiB/s", "requests"]);
    let cell = |m: &str, c: CacheMode| {
        r.rows
            .iter()
            .find(|x| x.method == m && x.cache == c)
            .map_or(Value::Missing, |x| match &x.unsupported {
                Some(_) => Value::text("unsupported"),
                None => Value::text(format!(
                    "{:.0} ({:.0}-{:.0})",
                    x.mib_s.median, x.mib_s.ci[0], x.mib_s.ci[1]
                )),
            })
    };
    let mut seen = Vec::new();
    for row in &r.rows {
        if seen.contains(&row.method) {
            continue;
        }
        seen.push(row.method.clone());
        t.row(vec![
            Value::text(&row.method),
            cell(&row.method, CacheMode::Cold),
            cell(&row.method, CacheMode::Warm),
            Value::Count(row.ops),
        ]);
    }
    Document::new().items(head).table(t)
}
