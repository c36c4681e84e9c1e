//! The pmap lab on a 10 MiB file of its own.

use super::{Stage, VmConfig, VmResult, create_file, run_vm};
use crate::error::Result;
use crate::experiments::Observer;
use crate::experiments::entry::{About, Entry, SuiteContext};
use crate::report::Document;
use crate::report::svg::{Bars, bar_chart, stack};

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

    /// The stages at a glance, then each stage's pmap table and explanation.
    fn document(&self, out: &VmResult) -> Document {
        let glance = Document::new().table(super::report::stages_table(out));
        glance.then(super::report::vm_document(out))
    }

    fn plot(&self, v: &VmResult) -> Option<String> {
        // Stages named on the axis; the address space and the memory in use on scales of
        // their own (VmSize is ten times VmRSS and flattened it).
        let groups: Vec<String> = v
            .stages
            .iter()
            .map(|s| {
                s.name
                    .replace("after ", "")
                    .replace("touching ", "touch ")
                    .replace("process ", "")
            })
            .collect();
        let kib = |f: &dyn Fn(&Stage) -> u64| -> Vec<Option<f64>> {
            v.stages.iter().map(|s| Some(f(s) as f64)).collect()
        };
        let columns = |cols: Vec<Vec<Option<f64>>>| -> Vec<Vec<Option<f64>>> {
            (0..v.stages.len())
                .map(|g| cols.iter().map(|c| c[g]).collect())
                .collect()
        };
        let size = bar_chart(&Bars {
            title: "address space: VmSize at each stage".into(),
            y_label: "KiB".into(),
            groups: groups.clone(),
            series: vec!["VmSize".into()],
            values: columns(vec![kib(&|s| s.vm_size_kb)]),
            notes: Vec::new(),
            log_y: false,
        });
        let resident = bar_chart(&Bars {
            title: "memory in use: the process and the mapped file".into(),
            y_label: "KiB".into(),
            groups,
            series: vec!["VmRSS".into(), "file RSS".into(), "file Dirty".into()],
            values: columns(vec![
                kib(&|s| s.vm_rss_kb),
                kib(&|s| s.map_row().map(|m| m.rss_kb).unwrap_or(0)),
                kib(&|s| s.map_row().map(|m| m.dirty_kb).unwrap_or(0)),
            ]),
            notes: Vec::new(),
            log_y: false,
        });
        Some(stack(&[size, resident], "a mapped file, stage by stage"))
    }
}
