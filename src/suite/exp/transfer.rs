//! The classic transfer inputs over loopback, per sender:receiver pair.

use crate::error::Result;
use crate::experiments::Observer;
use crate::experiments::transfer::{TransferConfig, TransferResult, all_pairs, run_transfer};
use crate::report::svg::{Plot, Point, Series, line_plot};
use crate::report::{self, Format};
use crate::suite::entry::{About, Entry, SuiteContext, SuiteResult};
use crate::suite::findings::{Finding, transfer_best};
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
            repeat: 3,
            connections: 1,
            sync: false,
            discard: false,
            sizes: Default::default(),
        };
        run_transfer(&cfg, ctx.command_line, obs)
    }

    fn table(&self, out: &TransferResult) -> String {
        report::transfer::matrix(out, Format::Text)
    }

    fn plot(&self, t: &TransferResult) -> Option<String> {
        let series = t
            .pairs
            .iter()
            .map(|p| {
                let mut pts: Vec<Point> = p
                    .runs
                    .iter()
                    .flat_map(|(_, recv)| recv.files.iter())
                    .filter(|f| f.bytes > 0)
                    .map(|f| {
                        let ms = f.time.as_secs_f64() * 1000.0;
                        Point {
                            x: f.bytes as f64,
                            y: ms,
                            lo: ms,
                            hi: ms,
                        }
                    })
                    .collect();
                pts.sort_by(|a, b| a.x.total_cmp(&b.x));
                Series {
                    name: format!("{}:{}", p.sender.name(), p.receiver.name()),
                    points: pts,
                }
            })
            .collect();
        Some(line_plot(&Plot {
            title: "transfer time per file by size and method pair (receiver side)".into(),
            x_label: "file size (bytes, log2 scale)".into(),
            y_label: "ms (log scale)".into(),
            log2_x: true,
            log_y: true,
            series,
        }))
    }

    fn findings(&self, out: &TransferResult, _: &SuiteResult) -> Vec<Finding> {
        transfer_best(out).into_iter().collect()
    }
}
