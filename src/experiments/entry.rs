//! The contract between the suite and its experiments: what an experiment says about itself
//! ([`About`]), what it is given ([`SuiteContext`]), what it returns ([`Entry`], erased to JSON as
//! [`Experiment`]), and the result they all go into ([`SuiteResult`]). Nothing here knows which
//! experiments exist; the registry in the parent module lists them.

use super::dataset::{DataDir, DataSet};
use crate::cache::meminfo::PageCache;
use crate::error::{Error, ErrorKind, Result};
use crate::experiments::host::Host;
use crate::harness::Observer;
use crate::measure::finding::Finding;
use crate::measure::interference::Interference;
use crate::report::{Document, Format, render};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// What the suite was asked to do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SuiteConfig {
    /// Where the data goes (removed at the end unless `keep_data`).
    pub dir: PathBuf,
    /// Size of the random file (capped to fit the disk and a quarter of RAM).
    pub size: u64,
    /// Fewer sizes, methods and repeats.
    pub quick: bool,
    /// Keep the generated data.
    pub keep_data: bool,
    /// Wait up to this many seconds for a quiet machine before each experiment (0: do not wait).
    #[serde(default)]
    pub wait_quiet: f64,
    /// Only these experiments (by key), in the registry's order; empty: every one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub only: Vec<String>,
    /// The iolab program, for experiments that run parts of themselves in a child process
    /// (squeeze); without it they say so. Not part of the result.
    #[serde(skip)]
    pub worker: Option<PathBuf>,
}

/// One experiment's outcome: its result (as its `--format json` prints it), or why there is none.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
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
    /// What else the machine was doing meanwhile.
    #[serde(default)]
    pub interference: Interference,
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
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
    /// Every experiment's outcome by name, in the order they ran (top-level keys in JSON).
    #[serde(flatten, with = "outcomes")]
    #[schemars(with = "std::collections::BTreeMap<String, Outcome>")]
    pub experiments: Vec<(String, Outcome)>,
    /// What else the machine was doing, over all experiments: `busy`, `reasons`, the figures.
    #[serde(default)]
    pub interference: Interference,
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

/// Outcomes as top-level JSON keys, in the order they ran.
mod outcomes {
    use super::Outcome;
    use serde::de::{MapAccess, Visitor};
    use serde::ser::SerializeMap;
    use serde::{Deserializer, Serializer};

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
        d.deserialize_map(InOrder)
    }

    /// The outcomes in the order the document has them (the order they ran).
    struct InOrder;

    impl<'de> Visitor<'de> for InOrder {
        type Value = Vec<(String, Outcome)>;

        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("experiment outcomes by name")
        }

        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut out = Vec::new();
            while let Some(entry) = map.next_entry::<String, Outcome>()? {
                out.push(entry);
            }
            Ok(out)
        }
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

    /// The rounds of `class` at this suite's scale.
    pub fn rounds(&self, class: crate::harness::BudgetClass) -> crate::harness::Rounds {
        class.rounds(self.cfg.quick)
    }

    /// `quick` in a `--quick` suite, else `full`.
    pub fn scale<T>(&self, quick: T, full: T) -> T {
        if self.cfg.quick { quick } else { full }
    }

    /// A whole file of `len` random bytes (from `seed`) for one experiment, named `name` in
    /// the data directory and on the device; the random data file itself when it is no longer.
    /// Whole, not the data file's start: cold, the kernel reads ahead past the end of what is
    /// measured, device time a run pays for and does not count.
    pub fn file_of(&self, name: &str, len: u64, seed: u64) -> Result<PathBuf> {
        if len >= self.data.random_size {
            return Ok(self.file().to_path_buf());
        }
        let p = self.dir.scratch(name)?;
        crate::workload::write_random(&p, len, seed)?;
        let f = std::fs::File::open(&p).map_err(|e| Error::io("cannot open", &p, &e))?;
        crate::sys::syncfs(&f).map_err(|e| Error::io("cannot write data", &p, &e))?;
        Ok(p)
    }
}

/// A section of the report: an experiment's table and plot, or why it has none.
pub struct Section {
    /// The experiment's key (the section's anchor in report.html).
    pub name: &'static str,
    /// Heading.
    pub title: &'static str,
    /// The explanation under the heading: the experiment's two sentences, and what this run's
    /// own figures add to them.
    pub why: String,
    /// The plot's name under `plots/` (without `.svg`), if it has one.
    pub plot: Option<String>,
    /// The text table.
    pub table: Option<String>,
    /// The same in Markdown, with real tables, when the experiment has it.
    pub markdown: Option<String>,
    /// Why it was not measured.
    pub error: Option<String>,
    /// How long it took.
    pub seconds: f64,
    /// Why the machine counted as busy while it ran, when it did.
    pub busy: Option<String>,
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
    type Output: Serialize + DeserializeOwned + schemars::JsonSchema;
    /// Its name, heading and explanation.
    fn about(&self) -> &'static About;

    /// Measures.
    fn run(&self, ctx: &SuiteContext<'_>, obs: &dyn Observer) -> Result<Self::Output>;

    /// Its report: tables (report.md shows them as tables, report.html as `<table>`s, the
    /// text report aligned) and what they mean.
    fn document(&self, out: &Self::Output) -> Document;

    /// Its plot as SVG, if it has one.
    fn plot(&self, _out: &Self::Output) -> Option<String> {
        None
    }

    /// What this result adds to the explanation, from its own figures (what was chosen, the
    /// window used), after [`About::explains`].
    fn explain(&self, _out: &Self::Output) -> Option<String> {
        None
    }

    /// The findings it feeds; `suite` gives the other experiments' outcomes.
    fn findings(&self, _out: &Self::Output, _suite: &SuiteResult) -> Vec<Finding> {
        Vec::new()
    }

    /// The keys of the findings it always feeds when it is measured: one that is missing from a
    /// run is listed as not judged, with why.
    fn finding_keys(&self) -> &'static [&'static str] {
        &[]
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
    /// Its section's heading.
    fn title(&self) -> &'static str;
    /// See [`Entry::finding_keys`].
    fn finding_keys(&self) -> &'static [&'static str];
    /// Why its stored result cannot be rendered, when it cannot (it no longer parses as the
    /// experiment's result).
    fn unrenderable(&self, o: &Outcome) -> Option<String>;
    /// The JSON schema of its result (generated from its type).
    fn result_schema(&self, g: &mut schemars::SchemaGenerator) -> schemars::Schema;
}

impl<E: Entry> Experiment for E {
    fn result_schema(&self, g: &mut schemars::SchemaGenerator) -> schemars::Schema {
        g.subschema_for::<E::Output>()
    }

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
        let doc = typed.as_ref().map(|t| self.document(t));
        let plot = typed.as_ref().and_then(|t| self.plot(t)).map(|svg| {
            let name = self.about().name.replace('_', "-");
            plots.push((format!("{name}.svg"), svg));
            name
        });
        Section {
            name: self.about().name,
            title: self.about().title,
            why: match typed.as_ref().and_then(|t| self.explain(t)) {
                Some(more) => format!("{} {more}", self.about().explains),
                None => self.about().explains.to_string(),
            },
            plot,
            table: doc.as_ref().map(|d| render(d, Format::Text)),
            markdown: doc.as_ref().map(|d| render(d, Format::Markdown)),
            error: o.error.clone(),
            seconds: o.seconds,
            busy: o
                .interference
                .busy
                .then(|| o.interference.reasons.join("; ")),
        }
    }

    fn unrenderable(&self, o: &Outcome) -> Option<String> {
        let v = o.result.as_ref()?;
        serde_json::from_value::<E::Output>(v.clone())
            .err()
            .map(|e| e.to_string())
    }

    fn findings(&self, o: &Outcome, suite: &SuiteResult) -> Vec<Finding> {
        o.typed()
            .map(|t| Entry::findings(self, &t, suite))
            .unwrap_or_default()
    }

    fn title(&self) -> &'static str {
        self.about().title
    }

    fn finding_keys(&self) -> &'static [&'static str] {
        Entry::finding_keys(self)
    }
}
