//! `iolab suite`, the main job: makes its own data, runs every experiment of the [`REGISTRY`],
//! derives the findings, and renders one report. Each experiment is one value implementing
//! [`Entry`] (name, title, what it explains, how to run it, its table and plot, the findings it
//! feeds) in its experiment's folder (`experiments/X/suite.rs`); progress, warnings, the JSON,
//! report sections and findings all iterate the registry. Adding an experiment is its folder,
//! one line in [`REGISTRY`]; docs/results.schema.json is generated from the types
//! ([`results_schema`]).

pub mod baseline;
mod render;
mod schema;
pub use schema::results_schema;

pub use crate::experiments::dataset::{DataDir, DataSet};
pub use crate::experiments::entry::{
    About, Entry, Experiment, Outcome, SCHEMA, Section, SuiteConfig, SuiteContext, SuiteResult,
};
pub use crate::measure::finding::Finding;
pub use render::Rendered;

use crate::cache::meminfo;
use crate::error::{Error, Result};
use crate::experiments::Observer;
use crate::experiments::host::host_facts;
use crate::measure::interference::{Interference, Probe, wait_quiet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The experiments of the suite, in the order they run and appear in the report.
pub const REGISTRY: &[&dyn Experiment] = &[
    &crate::experiments::run::suite::RunRead,
    &crate::experiments::run::suite::RunWrite,
    &crate::experiments::run2::suite::Run2,
    &crate::experiments::fast::suite::FAST_WARM,
    &crate::experiments::fast::suite::FAST_COLD,
    &crate::experiments::sweep::suite::SweepRead,
    &crate::experiments::sweep::suite::SweepWrite,
    &crate::experiments::access::suite::Access,
    &crate::experiments::course::suite::ClassicAccess,
    &crate::experiments::syscalls::suite::Syscalls,
    &crate::experiments::vm::suite::Vm,
    &crate::experiments::course::suite::PartB,
    &crate::experiments::transfer::suite::Transfer,
    &crate::experiments::course::suite::ClassicNet,
    &crate::experiments::squeeze::suite::Squeeze,
    &crate::experiments::pollute::suite::Pollute,
    &crate::experiments::replay::suite::YourProgramEntry,
];

fn interrupted() -> Error {
    Error::failed("interrupted", "stopped by a signal; nothing was kept")
}

/// Runs one experiment, recording its result or why there is none; a signal stops the suite.
fn outcome(e: &dyn Experiment, ctx: &SuiteContext<'_>, obs: &dyn Observer) -> Result<Outcome> {
    if crate::sys::interrupted() {
        return Err(interrupted());
    }
    if ctx.cfg.wait_quiet > 0.0 {
        obs.progress("waiting for a quiet machine", 0, 1);
        let (last, waited) = wait_quiet(Duration::from_secs_f64(ctx.cfg.wait_quiet));
        obs.note(&crate::measure::interference::waited_line(
            e.name(),
            &last,
            waited,
        ));
    }
    // What earlier experiments wrote goes to the device now, outside any timing: left dirty, the
    // kernel writes it back about 30 s later, during a later experiment's cold reads (tens of MiB
    // were still dirty when the read sweep began, and its cold verdict followed them).
    if let Ok(f) = std::fs::File::open(ctx.file()) {
        let _ = crate::sys::syncfs(&f);
    }
    let t = Instant::now();
    let probe = Probe::start();
    let r = e.run_json(ctx, obs);
    let interference = probe.finish();
    let seconds = t.elapsed().as_secs_f64();
    let (result, error, kind) = match r {
        Ok(v) => (Some(v), None, None),
        Err(err) => (None, Some(err.to_string()), Some(err.kind)),
    };
    Ok(Outcome {
        result,
        error,
        kind,
        seconds,
        interference,
    })
}

/// The experiments `only` names (every one when it is empty), in the registry's order; a name
/// the registry lacks is a usage error that lists the names.
pub fn chosen(only: &[String]) -> Result<Vec<&'static dyn Experiment>> {
    if let Some(bad) = only
        .iter()
        .find(|n| !REGISTRY.iter().any(|e| e.name() == n.as_str()))
    {
        let names: Vec<&str> = REGISTRY.iter().map(|e| e.name()).collect();
        return Err(Error::usage(
            format!("no experiment '{bad}'"),
            format!("expected one of {}", names.join(", ")),
        )
        .hint("iolab suite --list names them with what each measures"));
    }
    Ok(REGISTRY
        .iter()
        .copied()
        .filter(|e| only.is_empty() || only.iter().any(|n| n == e.name()))
        .collect())
}

/// The names of the suite's steps, for progress: the data, every experiment run, the findings.
pub fn steps(experiments: &[&dyn Experiment]) -> Vec<&'static str> {
    std::iter::once("data")
        .chain(experiments.iter().map(|e| e.name()))
        .chain(std::iter::once("findings"))
        .collect()
}

/// The suite's steps, announced to the observer as each begins.
struct Stepped<'a> {
    obs: &'a dyn Observer,
    steps: Vec<&'static str>,
}

impl Stepped<'_> {
    fn start(&self, i: usize) {
        self.obs.stage(i + 1, self.steps.len(), self.steps[i]);
    }
}

/// Runs every experiment (those `cfg.only` names) in `dir`. Experiments that fail are recorded
/// and the suite goes on; a signal stops it.
pub fn run_suite(
    cfg: &SuiteConfig,
    dir: &DataDir,
    command_line: &str,
    obs: &dyn Observer,
) -> Result<SuiteResult> {
    let started = Instant::now();
    let chosen = chosen(&cfg.only)?;
    let stepped = Stepped {
        obs,
        steps: steps(&chosen),
    };
    stepped.start(0);
    let before = meminfo::read();
    let data = crate::experiments::dataset::make_data(cfg.size, dir)?;
    let ctx = SuiteContext {
        cfg,
        data: &data,
        dir,
        command_line,
    };
    let mut experiments = Vec::new();
    for (i, e) in chosen.iter().enumerate() {
        stepped.start(i + 1);
        experiments.push((e.name().to_string(), outcome(*e, &ctx, obs)?));
    }
    stepped.start(chosen.len() + 1);
    let mut result = SuiteResult {
        schema: SCHEMA.into(),
        host: host_facts(Some(&data.random_file), command_line),
        config: cfg.clone(),
        data,
        page_cache_before: before,
        page_cache_after: meminfo::read(),
        interference: Interference::default(),
        experiments,
        findings: Vec::new(),
        seconds: 0.0,
    };
    result.interference =
        Interference::merge(result.experiments.iter().map(|(_, o)| &o.interference));
    result.findings = derive(&result);
    result.seconds = started.elapsed().as_secs_f64();
    Ok(result)
}

/// Every finding the registered experiments feed, in registry order.
pub fn derive(r: &SuiteResult) -> Vec<Finding> {
    REGISTRY
        .iter()
        .filter_map(|e| r.outcome(e.name()).map(|o| e.findings(o, r)))
        .flatten()
        .collect()
}

/// The findings an experiment of this run could have fed but did not, each with why: its
/// experiment was not measured (and why), or its results lack a side it compares.
pub fn not_judged(r: &SuiteResult) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for e in REGISTRY.iter() {
        let Some(o) = r.outcome(e.name()) else {
            continue;
        };
        for key in e.finding_keys() {
            if r.findings.iter().any(|f| f.key == *key) {
                continue;
            }
            let why = match &o.error {
                Some(err) => format!("'{}' was not measured: {err}", e.title()),
                None => format!("the results of '{}' lack a side it compares", e.title()),
            };
            out.push((key.to_string(), why));
        }
    }
    out
}

/// Reads a results.json: one suite result, or a list of them.
pub fn load(path: &Path) -> Result<Vec<SuiteResult>> {
    // Not /dev/zero (it never ends), not a FIFO (it may never start): a regular file of a sane size.
    const MAX: u64 = 256 << 20;
    let meta = std::fs::metadata(path).map_err(|e| Error::io("cannot read", path, &e))?;
    crate::engine::check_regular(path, &meta)?;
    if meta.len() > MAX {
        return Err(Error::usage(
            "not an iolab suite result",
            format!("{} bytes: results.json files are far smaller", meta.len()),
        )
        .at(path));
    }
    let text = std::fs::read_to_string(path).map_err(|e| Error::io("cannot read", path, &e))?;
    let results = serde_json::from_str::<SuiteResult>(&text)
        .map(|r| vec![r])
        .or_else(|_| serde_json::from_str::<Vec<SuiteResult>>(&text))
        .map_err(|e| {
            Error::usage("not an iolab suite result", e.to_string())
                .at(path)
                .hint("give the results.json that `iolab suite` wrote")
        })?;
    // Every section must render whole: a result that no longer parses is refused, never
    // rendered as an empty section.
    for r in &results {
        for (name, o) in &r.experiments {
            if let Some(cause) = REGISTRY
                .iter()
                .find(|e| e.name() == name)
                .and_then(|e| e.unrenderable(o))
            {
                return Err(
                    Error::failed(format!("cannot render section '{name}'"), cause).at(path),
                );
            }
        }
    }
    Ok(results)
}

/// Renders `results` (their sections in registry order) as the report's files.
pub fn render(results: &[SuiteResult]) -> Rendered {
    render::render(results, REGISTRY)
}

/// Renders `results` and writes the report directory (see [`crate::output::save_dir`]).
pub fn save_report(out_dir: &Path, results: &[SuiteResult], force: bool) -> Result<PathBuf> {
    let r = render(results);
    let mut files = vec![
        ("results.json".to_string(), r.results_json.into_bytes()),
        ("report.md".to_string(), r.markdown.into_bytes()),
        ("report.html".to_string(), r.html.into_bytes()),
    ];
    files.extend(
        r.plots
            .into_iter()
            .map(|(n, s)| (format!("plots/{n}"), s.into_bytes())),
    );
    crate::output::save_dir(out_dir, &files, force)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    #[test]
    fn only_chooses_experiments_in_registry_order_and_refuses_unknown_names() {
        let names = |v: Vec<&dyn Experiment>| v.iter().map(|e| e.name()).collect::<Vec<_>>();
        let two = chosen(&["access".into(), "fast_warm".into()]).unwrap();
        assert_eq!(names(two), ["fast_warm", "access"]);
        assert_eq!(chosen(&[]).unwrap().len(), REGISTRY.len());
        let Err(e) = chosen(&["acess".into()]) else {
            panic!("an unknown name is refused")
        };
        assert_eq!(e.kind, ErrorKind::Usage);
        assert!(e.to_string().contains("no experiment 'acess'"), "{e}");
        assert!(
            e.to_string().contains("access"),
            "names the valid ones: {e}"
        );
    }

    #[test]
    fn results_json_keeps_every_outcome_in_run_order_with_its_kind() {
        let outcome = |kind| Outcome {
            result: None,
            error: Some("not here".into()),
            kind,
            seconds: 0.5,
            interference: Interference::default(),
        };
        let r = SuiteResult {
            schema: SCHEMA.into(),
            host: host_facts(None, "iolab suite"),
            config: SuiteConfig {
                dir: "d".into(),
                size: 1 << 20,
                quick: true,
                keep_data: false,
                wait_quiet: 0.0,
                only: Vec::new(),
                worker: None,
            },
            data: DataSet {
                random_file: "d/random.bin".into(),
                random_size: 1 << 20,
                classic_files: Vec::new(),
                classic_bytes: 0,
                capped: None,
            },
            page_cache_before: meminfo::read(),
            page_cache_after: meminfo::read(),
            interference: Interference::default(),
            experiments: vec![
                ("zeta".into(), outcome(Some(ErrorKind::Unsupported))),
                ("alpha".into(), outcome(None)),
            ],
            findings: Vec::new(),
            seconds: 1.0,
        };
        let text = crate::report::json(&r);
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["zeta"]["kind"], "unsupported", "{text}");
        assert!(
            v["alpha"].get("kind").is_none(),
            "no kind without a failure kind"
        );
        let back: SuiteResult = serde_json::from_str(&text).unwrap();
        assert_eq!(back, r, "a round trip keeps every outcome, in order");
        let all = chosen(&[]).unwrap();
        assert_eq!(steps(&all).len(), REGISTRY.len() + 2);
        assert!(
            REGISTRY.iter().all(|e| steps(&all).contains(&e.name())),
            "progress has a step per registered experiment"
        );
    }
}
