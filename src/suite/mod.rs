//! `iolab suite`, the main job: makes its own data, runs every experiment of the [`REGISTRY`],
//! derives the findings, and renders one report. Each experiment is one value implementing
//! [`Entry`] (name, title, what it explains, how to run it, its table and plot, the findings it
//! feeds) in one file under `exp/`; progress, warnings, the JSON, report sections and findings
//! all iterate the registry. Adding an experiment is one file plus one line in [`REGISTRY`].

mod data;
mod exp;
pub mod findings;
mod render;

pub use data::{DataDir, DataSet};
pub use findings::Finding;
pub use render::{Rendered, render};

use crate::cache::meminfo::{self, PageCache};
use crate::error::{Error, ErrorKind, Result};
use crate::experiments::Observer;
use crate::experiments::host::{Host, host_facts};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The experiments of the suite, in the order they run and appear in the report.
pub const REGISTRY: &[&dyn Experiment] = &[
    &exp::run::RunRead,
    &exp::run::RunWrite,
    &exp::run2::Run2,
    &exp::fast::FAST_WARM,
    &exp::fast::FAST_COLD,
    &exp::sweep::SweepRead,
    &exp::sweep::SweepWrite,
    &exp::access::Access,
    &exp::syscalls::Syscalls,
    &exp::vm::Vm,
    &exp::transfer::Transfer,
];

/// What the suite was asked to do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SuiteConfig {
    /// Where the data goes (removed at the end unless `keep_data`).
    pub dir: PathBuf,
    /// Size of the random file (capped to fit the disk and a quarter of RAM).
    pub size: u64,
    /// Fewer sizes, methods and repeats.
    pub quick: bool,
    /// Keep the generated data.
    pub keep_data: bool,
}

/// One experiment's outcome: its result (as its `--format json` prints it), or why there is none.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    /// The experiment's result.
    pub result: Option<serde_json::Value>,
    /// Why there is no result.
    pub error: Option<String>,
    /// The kind of that failure (unsupported here, failed, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<ErrorKind>,
    /// How long it took.
    pub seconds: f64,
}

impl Outcome {
    /// The result as the experiment's own type; `None` without one (or if it does not parse).
    pub fn typed<T: DeserializeOwned>(&self) -> Option<T> {
        self.result
            .as_ref()
            .and_then(|v| serde_json::from_value(v.clone()).ok())
    }
}

/// One suite run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SuiteResult {
    /// [`SCHEMA`].
    pub schema: String,
    /// The machine.
    pub host: Host,
    /// What was asked.
    pub config: SuiteConfig,
    /// The data made for it.
    pub data: DataSet,
    /// /proc/meminfo's page-cache figures before.
    pub page_cache_before: PageCache,
    /// And after.
    pub page_cache_after: PageCache,
    /// Every experiment's outcome by name, in registry order (top-level keys in JSON).
    #[serde(flatten, with = "outcomes")]
    pub experiments: Vec<(String, Outcome)>,
    /// What the measurements say.
    pub findings: Vec<Finding>,
    /// How long the whole suite took.
    pub seconds: f64,
}

impl SuiteResult {
    /// The outcome of the experiment named `name`.
    pub fn outcome(&self, name: &str) -> Option<&Outcome> {
        self.experiments
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, o)| o)
    }

    /// The typed result of the experiment named `name`.
    pub fn result<T: DeserializeOwned>(&self, name: &str) -> Option<T> {
        self.outcome(name)?.typed()
    }
}

/// Outcomes as top-level JSON keys, kept in registry order.
mod outcomes {
    use super::Outcome;
    use serde::ser::SerializeMap;
    use serde::{Deserialize, Deserializer, Serializer};
    use std::collections::BTreeMap;

    pub fn serialize<S: Serializer>(v: &[(String, Outcome)], s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(v.len()))?;
        for (k, o) in v {
            map.serialize_entry(k, o)?;
        }
        map.end()
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Vec<(String, Outcome)>, D::Error> {
        let mut map = BTreeMap::<String, Outcome>::deserialize(d)?;
        let mut out = Vec::new();
        for e in super::REGISTRY {
            if let Some(o) = map.remove(e.name()) {
                out.push((e.name().to_string(), o));
            }
        }
        out.extend(map);
        Ok(out)
    }
}

/// The tag `results.json` carries.
pub const SCHEMA: &str = "iolab-suite/1";

/// What every experiment gets: the config, the data and the command line.
pub struct SuiteContext<'a> {
    /// What was asked.
    pub cfg: &'a SuiteConfig,
    /// The data made for the suite.
    pub data: &'a DataSet,
    /// The data directory, which hands out scratch names.
    pub dir: &'a DataDir,
    /// The exact command line, for host facts.
    pub command_line: &'a str,
}

impl SuiteContext<'_> {
    /// The random data file.
    pub fn file(&self) -> &Path {
        &self.data.random_file
    }

    /// `quick` in a `--quick` suite, else `full`.
    pub fn scale<T>(&self, quick: T, full: T) -> T {
        if self.cfg.quick { quick } else { full }
    }
}

/// A section of the report: an experiment's table and plot, or why it has none.
pub struct Section {
    /// Heading.
    pub title: &'static str,
    /// The two-sentence explanation under the heading.
    pub why: &'static str,
    /// The plot's name under `plots/` (without `.svg`), if it has one.
    pub plot: Option<String>,
    /// The text table.
    pub table: Option<String>,
    /// Why it was not measured.
    pub error: Option<String>,
    /// How long it took.
    pub seconds: f64,
}

/// What an experiment is called and what it shows.
pub struct About {
    /// Its key in results.json (stable across runs).
    pub name: &'static str,
    /// Its heading in the report.
    pub title: &'static str,
    /// What it shows and why, in two sentences.
    pub explains: &'static str,
}

/// One experiment of the suite, with its own result type. The registry holds these as
/// [`Experiment`] objects (every `Entry` is one).
pub trait Entry: Sync {
    /// Its result.
    type Output: Serialize + DeserializeOwned;
    /// Its name, heading and explanation.
    fn about(&self) -> &'static About;

    /// Measures.
    fn run(&self, ctx: &SuiteContext<'_>, obs: &dyn Observer) -> Result<Self::Output>;

    /// Its table as text.
    fn table(&self, out: &Self::Output) -> String;

    /// Its plot as SVG, if it has one.
    fn plot(&self, _out: &Self::Output) -> Option<String> {
        None
    }

    /// The findings it feeds; `suite` gives the other experiments' outcomes.
    fn findings(&self, _out: &Self::Output, _suite: &SuiteResult) -> Vec<Finding> {
        Vec::new()
    }
}

/// An experiment of the registry, its result type erased to JSON.
pub trait Experiment: Sync {
    /// Its key in results.json.
    fn name(&self) -> &'static str;
    /// Measures; the result as JSON.
    fn run_json(&self, ctx: &SuiteContext<'_>, obs: &dyn Observer) -> Result<serde_json::Value>;
    /// Its report section, its plot (if any) pushed onto `plots` as `(file name, svg)`.
    fn section(&self, o: &Outcome, plots: &mut Vec<(String, String)>) -> Section;
    /// The findings it feeds.
    fn findings(&self, o: &Outcome, suite: &SuiteResult) -> Vec<Finding>;
}

impl<E: Entry> Experiment for E {
    fn name(&self) -> &'static str {
        self.about().name
    }

    fn run_json(&self, ctx: &SuiteContext<'_>, obs: &dyn Observer) -> Result<serde_json::Value> {
        let out = self.run(ctx, obs)?;
        serde_json::to_value(&out).map_err(|e| {
            Error::failed("cannot record the result", e.to_string()).on(self.about().name)
        })
    }

    fn section(&self, o: &Outcome, plots: &mut Vec<(String, String)>) -> Section {
        let typed: Option<E::Output> = o.typed();
        let plot = typed.as_ref().and_then(|t| self.plot(t)).map(|svg| {
            let name = self.about().name.replace('_', "-");
            plots.push((format!("{name}.svg"), svg));
            name
        });
        Section {
            title: self.about().title,
            why: self.about().explains,
            plot,
            table: typed.as_ref().map(|t| self.table(t)),
            error: o.error.clone(),
            seconds: o.seconds,
        }
    }

    fn findings(&self, o: &Outcome, suite: &SuiteResult) -> Vec<Finding> {
        o.typed()
            .map(|t| Entry::findings(self, &t, suite))
            .unwrap_or_default()
    }
}

fn interrupted() -> Error {
    Error::failed("interrupted", "stopped by a signal; nothing was kept")
}

/// Runs one experiment, recording its result or why there is none; a signal stops the suite.
fn outcome(e: &dyn Experiment, ctx: &SuiteContext<'_>, obs: &dyn Observer) -> Result<Outcome> {
    if crate::sys::interrupted() {
        return Err(interrupted());
    }
    let t = Instant::now();
    let r = e.run_json(ctx, obs);
    let seconds = t.elapsed().as_secs_f64();
    Ok(match r {
        Ok(v) => Outcome {
            result: Some(v),
            error: None,
            kind: None,
            seconds,
        },
        Err(err) => Outcome {
            result: None,
            error: Some(err.to_string()),
            kind: Some(err.kind),
            seconds,
        },
    })
}

/// The names of the suite's steps, for progress: the data, every experiment, the findings.
pub fn steps() -> Vec<&'static str> {
    std::iter::once("data")
        .chain(REGISTRY.iter().map(|e| e.name()))
        .chain(std::iter::once("findings"))
        .collect()
}

/// Progress of the experiment under way, prefixed with the suite's overall step.
struct Stepped<'a> {
    obs: &'a dyn Observer,
    steps: Vec<&'static str>,
    step: std::cell::Cell<usize>,
}

impl Stepped<'_> {
    fn start(&self, i: usize) {
        self.step.set(i);
        self.progress("starting", 0, 1);
    }
}

impl Observer for Stepped<'_> {
    fn progress(&self, what: &str, done: usize, total: usize) {
        let i = self.step.get();
        self.obs.progress(
            &format!(
                "suite [{}/{}] {}: {what}",
                i + 1,
                self.steps.len(),
                self.steps[i]
            ),
            done,
            total,
        );
    }
}

/// Runs everything in `dir`. Experiments that fail are recorded and the suite goes on; a signal
/// stops it.
pub fn run_suite(
    cfg: &SuiteConfig,
    dir: &DataDir,
    command_line: &str,
    obs: &dyn Observer,
) -> Result<SuiteResult> {
    let started = Instant::now();
    let stepped = Stepped {
        obs,
        steps: steps(),
        step: std::cell::Cell::new(0),
    };
    stepped.start(0);
    let before = meminfo::read();
    let data = data::make_data(cfg, dir)?;
    let ctx = SuiteContext {
        cfg,
        data: &data,
        dir,
        command_line,
    };
    let mut experiments = Vec::new();
    for (i, e) in REGISTRY.iter().enumerate() {
        stepped.start(i + 1);
        experiments.push((e.name().to_string(), outcome(*e, &ctx, &stepped)?));
    }
    stepped.start(REGISTRY.len() + 1);
    let mut result = SuiteResult {
        schema: SCHEMA.into(),
        host: host_facts(Some(&data.random_file), command_line),
        config: cfg.clone(),
        data,
        page_cache_before: before,
        page_cache_after: meminfo::read(),
        experiments,
        findings: Vec::new(),
        seconds: 0.0,
    };
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

/// Reads a results.json: one suite result, or a list of them.
pub fn load(path: &Path) -> Result<Vec<SuiteResult>> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io("cannot read", path, &e))?;
    serde_json::from_str::<SuiteResult>(&text)
        .map(|r| vec![r])
        .or_else(|_| serde_json::from_str::<Vec<SuiteResult>>(&text))
        .map_err(|e| {
            Error::usage("not an iolab suite result", e.to_string())
                .at(path)
                .hint("give the results.json that `iolab suite` wrote")
        })
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
