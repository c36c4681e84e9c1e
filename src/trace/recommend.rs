//! A piece of advice as a profile keeps it: the change, its evidence, how much it matters, and
//! the remedy replay can measure with what it measured. The rules that make them are in
//! `advice/` (which reads the profile); the profile only carries them.

use crate::cache::CacheMode;
use serde::{Deserialize, Serialize};

/// How much a piece of advice matters.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    /// Its evidence is a large share of the wall time.
    High,
    /// A smaller share, or a likely gain.
    Warn,
    /// Worth knowing: where the time went is not the program's I/O.
    Info,
}

/// A change replay can run against the accesses as recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Remedy {
    /// The same reads merged where they follow one another, up to 128 KiB (larger requests).
    Merged,
    /// The file mapped (mmap), its bytes used in place.
    Mmap,
    /// Mapped, with MADV_RANDOM (no readahead).
    MmapRandom,
    /// Mapped, with MADV_WILLNEED (read ahead of the accesses).
    MmapWillneed,
    /// The same reads through io_uring, up to 16 in flight.
    Uring,
    /// The same reads with pread through the page cache (not O_DIRECT).
    Buffered,
}

impl Remedy {
    /// Its name in replay's table.
    pub fn name(self) -> &'static str {
        match self {
            Remedy::Merged => "pread 128 KiB merged",
            Remedy::Mmap => "mmap",
            Remedy::MmapRandom => "mmap-random",
            Remedy::MmapWillneed => "mmap-willneed",
            Remedy::Uring => "uring",
            Remedy::Buffered => "pread",
        }
    }
}

/// A remedy's gain as replay measured it here.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Gain {
    /// The replayed reads' speed with the remedy over as recorded (above 1: faster).
    pub ratio: f64,
    /// Its interval.
    pub ci: [f64; 2],
    /// The interval's level.
    pub level: f64,
    /// The level asked (95% unless `--level` said otherwise).
    #[serde(default = "crate::measure::decide::default_level")]
    pub asked: f64,
    /// `faster`, `slower`, `within 5%`, or `undecided`.
    pub decided: String,
    /// Rounds it took.
    pub rounds: usize,
}

/// One piece of advice: a recommendation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Recommendation {
    /// The rule that fired (`advice::RULES`).
    pub rule: String,
    /// How much it matters.
    pub level: Level,
    /// The change, in a few words.
    pub title: String,
    /// What the trace shows, with its figures.
    pub evidence: String,
    /// The change, and what it would save.
    pub change: String,
    /// The change replay can measure, and in which cache state (None: it cannot).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remedy: Option<Remedy>,
    /// The cache state the remedy matters in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache: Option<CacheMode>,
    /// Why replay cannot measure it, when it cannot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unmeasured: Option<String>,
    /// What replay measured (`iolab trace --advise`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured: Option<Gain>,
}

impl Recommendation {
    /// Rule `rule`'s advice: its evidence and the change, with nothing yet on its gain.
    pub fn new(
        rule: &str,
        level: Level,
        title: impl Into<String>,
        evidence: String,
        change: impl Into<String>,
    ) -> Recommendation {
        Recommendation {
            rule: rule.to_string(),
            level,
            title: title.into(),
            evidence,
            change: change.into(),
            remedy: None,
            cache: None,
            unmeasured: None,
            measured: None,
        }
    }

    /// Replay measures it as `remedy` in `cache`.
    pub fn measured_by(mut self, remedy: Remedy, cache: CacheMode) -> Recommendation {
        self.remedy = Some(remedy);
        self.cache = Some(cache);
        self
    }

    /// Replay cannot measure it, for `why`.
    pub fn unmeasurable(mut self, why: impl Into<String>) -> Recommendation {
        self.unmeasured = Some(why.into());
        self
    }
}
