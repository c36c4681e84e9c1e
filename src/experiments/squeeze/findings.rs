//! `squeeze`'s findings: the paper's pair (uring-direct against mmap) and the mapping's own cost
//! under eviction (mmap-random against pread), from each method's steady seconds.

use super::{MethodSeries, SqueezeResult};
use crate::engine::ReadMethod;
use crate::measure::finding::{Better, Finding, Pairing, Side, compare};
use crate::measure::stats::summarize;

/// Larger than memory, steady state (each second of it one measurement; the methods ran one
/// after the other, so the ratios are unpaired):
/// - uring-direct against mmap, the paper's pair (the first two methods with a steady state when
///   either is missing), with the TLB shootdowns each caused;
/// - mmap-random against pread: the same reads in flight (one per thread), so what is left is
///   the cost of reading through a mapping under eviction.
pub fn squeeze(r: &SqueezeResult) -> Vec<Finding> {
    let steady: Vec<&MethodSeries> = r.methods.iter().filter(|m| m.steady.is_some()).collect();
    let find = |m: ReadMethod| steady.iter().copied().find(|x| x.method == m);
    let mut out = Vec::new();
    let main = match (find(ReadMethod::UringDirect), find(ReadMethod::Mmap)) {
        (Some(a), Some(b)) => Some((a, b)),
        _ => steady.first().zip(steady.get(1)).map(|(a, b)| (*a, *b)),
    };
    if let Some((a, b)) = main
        && let Some(f) = squeeze_pair(r, a, b, "", "")
    {
        out.push(f);
    }
    if let (Some(a), Some(b)) = (find(ReadMethod::MmapRandom), find(ReadMethod::Pread))
        && main.is_none_or(|(x, y)| (x.method, y.method) != (a.method, b.method))
        && let Some(f) = squeeze_pair(
            r,
            a,
            b,
            "-mapping",
            ", the same reads in flight (a mapping's cost under eviction)",
        )
    {
        out.push(f);
    }
    out
}

fn squeeze_pair(
    r: &SqueezeResult,
    a: &MethodSeries,
    b: &MethodSeries,
    key: &str,
    what_more: &str,
) -> Option<Finding> {
    let pattern = r.config.reads.pattern.name();
    let bs = crate::size::format_size(r.config.reads.bs);
    let side = |m: &MethodSeries| Side {
        name: m.method.name().into(),
        s: m.steady
            .as_ref()
            .map(|s| s.kiops.clone())
            .unwrap_or_else(|| summarize(&[])),
        cite: format!("squeeze: {} {pattern}", m.method.name()),
    };
    let what = format!(
        "the file {:.1}x larger than memory, {pattern} {bs} reads{what_more}, steady state (a sample every {} s)",
        r.oversize, r.config.reads.tick
    );
    let mut f = compare(
        &format!("squeeze-{pattern}-{}{key}", r.config.reads.bs),
        &what,
        "KIOPS",
        Better::Higher,
        Pairing::Apart { looks: 1 },
        side(a),
        side(b),
    )?;
    let shootdowns: Vec<String> = [a, b]
        .iter()
        .filter_map(|m| {
            let s = m.steady.as_ref()?;
            Some(match s.tlb_per_s {
                Some(t) => format!("{} {:.0} TLB shootdowns/s", m.method.name(), t),
                None => format!("{} TLB shootdowns not counted here", m.method.name()),
            })
        })
        .collect();
    // Each measurement here is one second of the steady state, not a separate run.
    f.text = format!(
        "{}; {}",
        f.text.replace(" runs)", " seconds)"),
        shootdowns.join(", ")
    );
    Some(f)
}

#[cfg(test)]
mod squeeze_tests {
    use super::*;
    use crate::experiments::squeeze::{SqueezeConfig, Steady};
    use crate::measure::decide::RatioKind;

    fn series(method: ReadMethod, kiops: &[f64]) -> MethodSeries {
        MethodSeries {
            method,
            unsupported: None,
            resident_before_pct: 0.0,
            ticks: Vec::new(),
            done: None,
            peak: None,
            needed_bytes: 0,
            dev_read_bytes: None,
            steady: Some(Steady {
                from_s: 2.0,
                why: String::new(),
                seconds: kiops.len(),
                kiops: summarize(kiops),
                mib_s: summarize(kiops),
                dev_mib_s: None,
                tlb_per_s: Some(1200.0),
                major_faults_per_s: 0.0,
                pressure_pct: None,
                cpu_left_pct: None,
            }),
        }
    }

    fn result(methods: Vec<MethodSeries>) -> SqueezeResult {
        SqueezeResult {
            config: SqueezeConfig::new("f".into(), 128 << 20, "iolab".into()),
            file_size: 1 << 30,
            oversize: 8.0,
            cgroup: crate::cache::cgroup::Controller {
                version: crate::cache::cgroup::Version::V1,
                parent: "/sys/fs/cgroup/memory".into(),
            },
            limit: 128 << 20,
            companion_alone: 100.0,
            methods,
            warnings: Vec::new(),
            read_ahead_kb: None,
            explanations: Vec::new(),
        }
    }

    #[test]
    fn names_a_winner_only_when_the_seconds_say_so() {
        let fast = [66.0, 68.0, 70.0, 67.0, 69.0, 68.5, 67.5];
        let slow = [21.0, 22.0, 23.0, 22.5, 21.5, 22.2, 21.8];
        let r = result(vec![
            series(ReadMethod::Mmap, &slow),
            series(ReadMethod::MmapRandom, &slow),
            series(
                ReadMethod::Pread,
                &[21.9, 22.1, 22.4, 21.7, 22.3, 22.0, 21.6],
            ),
            series(ReadMethod::UringDirect, &fast),
        ]);
        let f = squeeze(&r);
        assert_eq!(f.len(), 2);
        assert_eq!(f[0].winner.as_deref(), Some("uring-direct"));
        assert!(
            f[0].text.contains("mmap 1200 TLB shootdowns/s"),
            "{}",
            f[0].text
        );
        assert!(f[0].text.contains("over 7 rounds"), "{}", f[0].text);
        assert_eq!(f[0].ratio_kind, Some(RatioKind::OfMedians));
        assert!(f[0].level >= 0.95, "{f:?}");
        // Equal within noise: no winner, said so.
        assert_eq!(f[1].winner, None, "{}", f[1].text);
        assert!(
            f[1].text.contains("undecided after 7 rounds"),
            "{}",
            f[1].text
        );
        // A method without a steady state is left out; with one left there is nothing to compare.
        let mut r = result(vec![
            series(ReadMethod::Mmap, &slow),
            series(ReadMethod::UringDirect, &fast),
        ]);
        r.methods[0].steady = None;
        assert!(squeeze(&r).is_empty());
    }
}
