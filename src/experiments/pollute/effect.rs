//! What a method's ticks say: the hot set alone against the second half of the stream.

use super::*;

pub(super) const MIB: f64 = (1u64 << 20) as f64;

pub(super) fn median_of(v: impl Iterator<Item = f64>) -> Option<f64> {
    let v: Vec<f64> = v.collect();
    (!v.is_empty()).then(|| summarize(&v).median)
}

/// What a method's ticks say: the baseline ticks (all but the first, which holds the reader's
/// start) against the second half of the stream's. The first half holds the stream's start, the
/// group's filling and the hot set's slide: on this project's VM the group filled within 0.25 s
/// of a 1.3 GiB/s stream, but the hot set's reads fell from 1400 to 5 KIOPS over the next
/// second, while the LRU demoted its pages. `None` without a baseline tick and two steady ones.
pub fn effect(ticks: &[PolluteTick]) -> Option<Effect> {
    let alone: Vec<&PolluteTick> = ticks.iter().filter(|t| !t.streaming).skip(1).collect();
    let stream: Vec<&PolluteTick> = ticks
        .iter()
        .filter(|t| t.streaming && t.secs > 0.0)
        .collect();
    let under: Vec<&PolluteTick> = stream[stream.len() / 2..].to_vec();
    if alone.is_empty() || under.len() < 2 {
        return None;
    }
    let per_s = |f: fn(&PolluteTick) -> Option<u64>| -> Option<f64> {
        let n: Option<u64> = under.iter().map(|t| f(t)).sum();
        let secs: f64 = under.iter().map(|t| t.secs).sum();
        n.map(|n| n as f64 / secs)
    };
    Some(Effect {
        hot_alone: summarize(&alone.iter().map(|t| t.hot_kiops).collect::<Vec<_>>()),
        hot_kiops: summarize(&under.iter().map(|t| t.hot_kiops).collect::<Vec<_>>()),
        hot_p99_us: median_of(under.iter().filter_map(|t| t.hot_p99_us)),
        hot_p99_alone_us: median_of(alone.iter().filter_map(|t| t.hot_p99_us)),
        hot_resident_pct: median_of(under.iter().filter_map(|t| t.hot_resident_pct)),
        hot_resident_min_pct: under
            .iter()
            .filter_map(|t| t.hot_resident_pct)
            .reduce(f64::min),
        stream_mib_s: summarize(&under.iter().map(|t| t.stream_mib_s).collect::<Vec<_>>()),
        mem_bytes: median_of(under.iter().filter_map(|t| t.mem_current.map(|b| b as f64)))
            .map(|b| b as u64),
        scan_kswapd_per_s: per_s(|t| t.scan_kswapd),
        evicted_per_s: per_s(|t| t.group_evicted),
        refaults_per_s: per_s(|t| t.group_refaults),
        dev_mib_s: median_of(
            under
                .iter()
                .filter_map(|t| t.dev_read_bytes.map(|b| b as f64 / t.secs / MIB)),
        ),
        ticks: under.len(),
    })
}
