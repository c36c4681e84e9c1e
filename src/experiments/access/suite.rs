//! Sequential against random 4 KiB blocks, per method and cache state.

use super::findings::random_warm;
use super::{AccessConfig, AccessResult, run_access};
use crate::cache::CacheMode;
use crate::engine::ReadMethod;
use crate::error::Result;
use crate::experiments::entry::{About, Entry, SuiteContext, SuiteResult};
use crate::harness::{BudgetClass, Observer};
use crate::measure::finding::Finding;

use crate::report::svg::{Bars, bar_chart};
use crate::workload::Pattern;

/// `access` over the data file, warm and cold.
pub struct Access;

impl Entry for Access {
    type Output = AccessResult;
    fn about(&self) -> &'static About {
        &About {
            name: "access",
            title: "access: sequential vs random 4 KiB",
            explains: "Random access defeats readahead, so cold random reads wait for the device on every block; warm, mmap skips the system call and the copy. Faults per op show fault-around and large folios, device bytes per byte show readahead waste.",
        }
    }

    fn run(&self, ctx: &SuiteContext<'_>, obs: &dyn Observer) -> Result<AccessResult> {
        let quick_methods = [
            ReadMethod::Pread,
            ReadMethod::Mmap,
            ReadMethod::MmapRandom,
            ReadMethod::Uring,
        ];
        // A 256 MiB file of its own, quick and full alike (one comparison under one key): every
        // round's warm cells load their file again after its cold cells (1.4 s for 1 GiB here,
        // a round's largest cost), which left a quick budget no room for the first look.
        let file = ctx.file_of("access.bin", ACCESS_FILE, 12)?;
        let cfg = AccessConfig {
            methods: ctx
                .scale(&quick_methods[..], &AccessConfig::DEFAULT_METHODS[..])
                .to_vec(),
            rounds: ctx.rounds(BudgetClass::Long),
            focus: Some((Pattern::Random, CacheMode::Warm)),
            ..AccessConfig::new(file)
        };
        // Each run lasts a share of the budget (cold runs also stop at their file's end), so
        // that the first look fits under the cap: 50 ms quick, 100 ms full.
        let cfg = AccessConfig {
            duration: Some(cfg.run_length()),
            ..cfg
        };
        run_access(&cfg, ctx.command_line, obs)
    }

    fn document(&self, out: &AccessResult) -> crate::report::Document {
        super::report::access_document(out)
    }

    fn plot(&self, a: &AccessResult) -> Option<String> {
        let mut groups: Vec<ReadMethod> = Vec::new();
        for row in &a.rows {
            if !groups.contains(&row.method) {
                groups.push(row.method);
            }
        }
        let series: Vec<(Pattern, CacheMode)> = a
            .config
            .caches
            .iter()
            .flat_map(|c| a.config.patterns.iter().map(move |p| (*p, *c)))
            .collect();
        let cell = |g: ReadMethod, (p, c): (Pattern, CacheMode)| {
            a.rows.iter().find(|r| {
                r.method == g && r.pattern == p && r.cache == c && r.unsupported.is_none()
            })
        };
        Some(bar_chart(&Bars {
            title: "4 KiB block reads by method, pattern and cache (p99 latency on top)".into(),
            y_label: "KIOPS (log scale)".into(),
            values: groups
                .iter()
                .map(|g| {
                    series
                        .iter()
                        .map(|s| cell(*g, *s).map(|r| r.kiops.median))
                        .collect()
                })
                .collect(),
            notes: groups
                .iter()
                .map(|g| {
                    series
                        .iter()
                        .map(|s| cell(*g, *s).map(|r| short_latency(r.latency.p99_ns)))
                        .collect()
                })
                .collect(),
            series: series
                .iter()
                .map(|(p, c)| format!("{} {}", p.name(), c.name()))
                .collect(),
            groups: groups.iter().map(|g| g.name().to_string()).collect(),
            log_y: true,
        }))
    }

    fn finding_keys(&self) -> &'static [&'static str] {
        &["random-4k-warm"]
    }

    fn findings(&self, out: &AccessResult, _: &SuiteResult) -> Vec<Finding> {
        random_warm(&out.rows, out.rounds.spend())
            .into_iter()
            .collect()
    }
}

/// The size of the suite's access file.
pub const ACCESS_FILE: u64 = 256 << 20;

/// A p99 short enough to sit on a bar: `6us`, `344us`, `11.8ms`.
fn short_latency(ns: u64) -> String {
    let us = ns as f64 / 1000.0;
    if us < 1000.0 {
        format!("{us:.0}us")
    } else {
        format!("{:.1}ms", us / 1000.0)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn latencies_on_bars_are_short() {
        assert_eq!(super::short_latency(6_200), "6us");
        assert_eq!(super::short_latency(11_795_000), "11.8ms");
    }
}
