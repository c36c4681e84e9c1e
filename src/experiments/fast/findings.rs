//! What `fast` concludes: warm against cold.

use super::FastSeries;
use crate::measure::finding::{Better, Finding, Pairing, Side, compare};

/// The whole file's XOR warm against cold: what the page cache is worth.
pub fn fast_warm_cold(warm: &FastSeries, cold: &FastSeries) -> Option<Finding> {
    let side = |f: &FastSeries, name: &str| Side {
        name: name.into(),
        s: f.mib_s.clone(),
        cite: format!("fast: {name}"),
    };
    compare(
        "fast-warm-cold",
        "the whole file's XOR",
        "MiB/s",
        Better::Higher,
        Pairing::Apart(crate::measure::decide::Spend::ONCE),
        side(warm, "warm"),
        side(cold, "cold"),
    )
}
