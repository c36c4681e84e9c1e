//! `fast` on the data file, warm and then cold.

use crate::cache::CacheMode;
use crate::error::Result;
use crate::experiments::Observer;
use crate::experiments::fast::{FastConfig, FastResult, run_fast};
use crate::report;
use crate::suite::entry::{About, Entry, SuiteContext, SuiteResult};
use crate::suite::findings::{Finding, fast_warm_cold};

/// `fast` with the file resident, or after evicting it; cold also feeds the warm-vs-cold finding.
pub struct Fast {
    cache: CacheMode,
}

/// `fast` with the file resident.
pub const FAST_WARM: Fast = Fast {
    cache: CacheMode::Warm,
};
/// `fast` after evicting the file.
pub const FAST_COLD: Fast = Fast {
    cache: CacheMode::Cold,
};

impl Entry for Fast {
    type Output = FastResult;
    fn about(&self) -> &'static About {
        match self.cache {
            CacheMode::Warm => &About {
                name: "fast_warm",
                title: "fast, warm",
                explains: "The whole file's XOR as fast as iolab can, with the page cache full. Using the bytes where they are (mmap) avoids one copy per byte.",
            },
            _ => &About {
                name: "fast_cold",
                title: "fast, cold",
                explains: "The same after evicting the file: the device and readahead set the pace. Several threads faulting their own parts keep more reads in flight.",
            },
        }
    }

    fn run(&self, ctx: &SuiteContext<'_>, _: &dyn Observer) -> Result<FastResult> {
        let file = ctx.file();
        let src = crate::engine::open_source(file)?;
        crate::cache::prepare(&src.file, src.size, file, self.cache, false)?;
        drop(src);
        run_fast(&FastConfig {
            path: file.to_path_buf(),
            method: None,
            threads: None,
            bs: None,
            depth: None,
        })
    }

    fn table(&self, out: &FastResult) -> String {
        report::classic::fast_talk(out)
    }

    fn findings(&self, this: &FastResult, suite: &SuiteResult) -> Vec<Finding> {
        if self.cache == CacheMode::Warm {
            return Vec::new();
        }
        suite
            .result::<FastResult>(FAST_WARM.about().name)
            .map(|warm| fast_warm_cold(&warm, this))
            .into_iter()
            .collect()
    }
}
