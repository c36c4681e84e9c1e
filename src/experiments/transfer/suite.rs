//! The classic transfer inputs over loopback, per sender:receiver pair.

use super::findings::transfer_best;
use super::{TransferConfig, TransferResult, all_pairs, run_transfer};
use crate::error::Result;
use crate::experiments::entry::{About, Entry, SuiteContext, SuiteResult};
use crate::harness::{BudgetClass, Observer};
use crate::measure::finding::Finding;

use crate::report::svg::{Bars, bar_chart};
use crate::transfer::{RecvMethod, SendMethod};

/// `transfer` of the classic files.
pub struct Transfer;

impl Entry for Transfer {
    type Output = TransferResult;
    fn about(&self) -> &'static About {
        &About {
            name: "transfer",
            title: "transfer: the classic files over loopback",
            explains: "Each pair moves the same files sender to receiver; the receiver stores them, so the file system's write path is part of the cost. splice and sendfile avoid copies through user space.",
        }
    }

    fn run(&self, ctx: &SuiteContext<'_>, obs: &dyn Observer) -> Result<TransferResult> {
        let quick_pairs = vec![
            (SendMethod::Read, RecvMethod::Write),
            (SendMethod::Mmap, RecvMethod::Mmap),
            (SendMethod::Sendfile, RecvMethod::Splice),
            (SendMethod::Splice, RecvMethod::Write),
        ];
        let pairs = ctx.scale(quick_pairs, all_pairs());
        let cfg = TransferConfig {
            files: ctx.data.classic_files.clone(),
            pairs,
            rounds: ctx.rounds(BudgetClass::Short),
            connections: 1,
            sync: false,
            discard: false,
            sizes: Default::default(),
        };
        run_transfer(&cfg, ctx.command_line, obs)
    }

    fn document(&self, out: &TransferResult) -> crate::report::Document {
        super::report::matrix(out)
    }

    fn plot(&self, t: &TransferResult) -> Option<String> {
        // Twelve pairs as lines zig-zagged through stacks of points: bars instead, a group per
        // pair and a bar per file-size class (the median MiB/s of its files over the runs).
        const CLASSES: [(u64, &str); 5] = [
            (4 << 10, "up to 4 KiB"),
            (64 << 10, "4-64 KiB"),
            (1 << 20, "64 KiB-1 MiB"),
            (16 << 20, "1-16 MiB"),
            (u64::MAX, "over 16 MiB"),
        ];
        let class = |bytes: u64| {
            CLASSES
                .iter()
                .position(|(top, _)| bytes <= *top)
                .unwrap_or(4)
        };
        let rates = |p: &crate::experiments::transfer::PairResult, c: usize| -> Vec<f64> {
            p.runs
                .iter()
                .flat_map(|(_, recv)| recv.files.iter())
                .filter(|f| f.bytes > 0 && class(f.bytes) == c && f.time.as_secs_f64() > 0.0)
                .map(|f| f.bytes as f64 / f.time.as_secs_f64() / 1_048_576.0)
                .collect()
        };
        let used: Vec<usize> = (0..CLASSES.len())
            .filter(|c| t.pairs.iter().any(|p| !rates(p, *c).is_empty()))
            .collect();
        let median = |mut v: Vec<f64>| -> Option<f64> {
            if v.is_empty() {
                return None;
            }
            v.sort_by(f64::total_cmp);
            Some(v[v.len() / 2])
        };
        Some(bar_chart(&Bars {
            title: "transfer rate by method pair and file size (receiver side)".into(),
            y_label: "MiB/s per file (median, log scale)".into(),
            groups: t
                .pairs
                .iter()
                .map(|p| format!("{}:{}", p.sender.name(), p.receiver.name()))
                .collect(),
            series: used.iter().map(|c| CLASSES[*c].1.to_string()).collect(),
            values: t
                .pairs
                .iter()
                .map(|p| used.iter().map(|c| median(rates(p, *c))).collect())
                .collect(),
            notes: Vec::new(),
            log_y: true,
        }))
    }

    fn finding_keys(&self) -> &'static [&'static str] {
        &["transfer-best"]
    }

    fn findings(&self, out: &TransferResult, _: &SuiteResult) -> Vec<Finding> {
        transfer_best(out, out.rounds.spend()).into_iter().collect()
    }
}
