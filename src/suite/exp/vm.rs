//! The pmap lab on a 10 MiB file of its own.

use crate::error::Result;
use crate::experiments::Observer;
use crate::experiments::vm::{Stage, VmConfig, VmResult, create_file, run_vm};
use crate::report::svg::{Plot, Point, Series, line_plot};
use crate::report::{self, Format};
use crate::suite::entry::{About, Entry, SuiteContext};

/// `vm` with reads, writes and the page cache.
pub struct Vm;

impl Entry for Vm {
    type Output = VmResult;
    fn about(&self) -> &'static About {
        &About {
            name: "vm",
            title: "vm: a mapped file, stage by stage",
            explains: "mmap reserves address space (VmSize) without memory; touches fault pages in many at a time (fault-around, large folios), and writes make them dirty until msync.",
        }
    }

    fn run(&self, ctx: &SuiteContext<'_>, _: &dyn Observer) -> Result<VmResult> {
        let p = ctx.dir.scratch("vm.bin")?;
        create_file(&p, 10 << 20, false)?;
        run_vm(&VmConfig {
            path: p,
            touches: vec![0, 10000],
            write: true,
            evict: true,
            page_cache: true,
        })
    }

    fn table(&self, out: &VmResult) -> String {
        report::vm::vm_report(out, Format::Text)
    }

    fn plot(&self, v: &VmResult) -> Option<String> {
        let pts = |f: &dyn Fn(&Stage) -> u64| {
            v.stages
                .iter()
                .enumerate()
                .map(|(i, s)| {
                    let y = f(s) as f64;
                    Point {
                        x: (i + 1) as f64,
                        y,
                        lo: y,
                        hi: y,
                    }
                })
                .collect()
        };
        let series = |name: &str, f: &dyn Fn(&Stage) -> u64| Series {
            name: name.into(),
            points: pts(f),
        };
        Some(line_plot(&Plot {
            title: "a mapped 10 MiB file, stage by stage".into(),
            x_label: "stage (see the table)".into(),
            y_label: "KiB".into(),
            log2_x: false,
            log_y: false,
            series: vec![
                series("VmSize", &|s| s.vm_size_kb),
                series("VmRSS", &|s| s.vm_rss_kb),
                series("file mapping RSS", &|s| {
                    s.map_row().map(|m| m.rss_kb).unwrap_or(0)
                }),
                series("file mapping Dirty", &|s| {
                    s.map_row().map(|m| m.dirty_kb).unwrap_or(0)
                }),
            ],
        }))
    }
}
