//! What one system call costs.

use super::findings::syscall_costs;
use super::{SyscallsResult, run_syscalls};
use crate::error::Result;
use crate::experiments::entry::{About, Entry, SuiteContext, SuiteResult};
use crate::harness::{BudgetClass, Observer};
use crate::measure::finding::Finding;
use crate::report::Document;
use crate::report::svg::{Bars, bar_chart};

/// `syscalls` on the data file.
pub struct Syscalls;

impl Entry for Syscalls {
    type Output = SyscallsResult;
    fn about(&self) -> &'static About {
        &About {
            name: "syscalls",
            title: "system calls",
            explains: "Every read pays a kernel entry and exit, which the vDSO clock avoids; the table sets a minor fault beside a read of a cached page.",
        }
    }

    fn run(&self, ctx: &SuiteContext<'_>, obs: &dyn Observer) -> Result<SyscallsResult> {
        // Enough samples for each row's median interval at 97.5% (the ratio of two rows at 95%).
        let rounds = ctx.rounds(BudgetClass::Ratio);
        run_syscalls(Some(ctx.file()), &rounds, ctx.command_line, obs)
    }

    fn document(&self, out: &SyscallsResult) -> Document {
        super::report::syscalls_document(out)
    }

    fn plot(&self, s: &SyscallsResult) -> Option<String> {
        let rows: Vec<_> = s.rows.iter().filter(|x| x.unsupported.is_none()).collect();
        Some(bar_chart(&Bars {
            title: "cost of one call".into(),
            y_label: "ns per call (log scale)".into(),
            groups: rows.iter().map(|x| x.name.clone()).collect(),
            series: vec!["ns/call".into()],
            values: rows.iter().map(|x| vec![Some(x.ns.median)]).collect(),
            notes: rows
                .iter()
                .map(|x| vec![Some(format!("{:.0}", x.ns.median))])
                .collect(),
            log_y: true,
        }))
    }

    fn finding_keys(&self) -> &'static [&'static str] {
        &["syscall-cost"]
    }

    fn findings(&self, out: &SyscallsResult, _: &SuiteResult) -> Vec<Finding> {
        syscall_costs(out).into_iter().collect()
    }
}
