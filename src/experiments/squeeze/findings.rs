//! `squeeze`'s findings: the paper's pair (uring-direct against mmap) and the mapping's own cost
//! under eviction (mmap-random against pread), over every run of each method.

use super::{MethodSeries, SqueezeResult};
use crate::engine::ReadMethod;
use crate::measure::decide::{self, Verdict};
use crate::measure::finding::{Better, Finding, Pairing, Side, compare};
use crate::measure::stats::summarize;

/// Larger than memory, steady state; each run of a method gives one figure (the median of its
/// steady seconds, which share the run's state: how its group settled), and a comparison takes
/// the runs as the unit ([`decide::replicated`]: three runs of each at least):
/// - uring-direct against mmap, the paper's pair (the first two methods with a steady state when
///   either is missing), with the TLB shootdowns each caused;
/// - mmap-random against pread: the same reads in flight (one per thread), so what is left is
///   the cost of reading through a mapping under eviction.
pub fn squeeze(r: &SqueezeResult) -> Vec<Finding> {
    let mut steady: Vec<ReadMethod> = Vec::new();
    for m in r.methods.iter().filter(|m| m.steady.is_some()) {
        if !steady.contains(&m.method) {
            steady.push(m.method);
        }
    }
    let has = |m: ReadMethod| steady.contains(&m).then_some(m);
    let mut out = Vec::new();
    let main = match (has(ReadMethod::UringDirect), has(ReadMethod::Mmap)) {
        (Some(a), Some(b)) => Some((a, b)),
        _ => steady.first().copied().zip(steady.get(1).copied()),
    };
    if let Some((a, b)) = main
        && let Some(f) = squeeze_pair(r, a, b, "", "")
    {
        out.push(f);
    }
    if let (Some(a), Some(b)) = (has(ReadMethod::MmapRandom), has(ReadMethod::Pread))
        && main != Some((a, b))
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

/// The runs of `method` with a steady state.
fn runs(r: &SqueezeResult, method: ReadMethod) -> Vec<&MethodSeries> {
    r.methods
        .iter()
        .filter(|m| m.method == method && m.steady.is_some())
        .collect()
}

/// `a` against `b` over the passes both have a steady state in: each pass's ratio of their
/// steady medians, one verdict over the passes.
fn over_runs(r: &SqueezeResult, a: ReadMethod, b: ReadMethod) -> Option<Verdict> {
    let kiops = |m: &MethodSeries| m.steady.as_ref().map(|s| s.kiops.samples.clone());
    let each: Vec<Verdict> = runs(r, a)
        .into_iter()
        .filter_map(|x| {
            let y = runs(r, b).into_iter().find(|y| y.pass == x.pass)?;
            decide::unpaired(&kiops(x)?, &kiops(y)?, decide::Spend::ONCE)
        })
        .collect();
    decide::replicated(&each)
}

fn squeeze_pair(
    r: &SqueezeResult,
    a: ReadMethod,
    b: ReadMethod,
    key: &str,
    what_more: &str,
) -> Option<Finding> {
    let v = over_runs(r, a, b)?;
    let pattern = r.config.reads.pattern.name();
    let bs = crate::size::format_size(r.config.reads.bs);
    // The sides' figures: every steady second of every run (context beside the ratio).
    let side = |m: ReadMethod| Side {
        name: m.name().into(),
        s: summarize(
            &runs(r, m)
                .iter()
                .filter_map(|x| x.steady.as_ref())
                .flat_map(|s| s.kiops.samples.iter().copied())
                .collect::<Vec<_>>(),
        ),
        cite: format!("squeeze: {} {pattern}", m.name()),
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
        Pairing::Given(v),
        side(a),
        side(b),
    )?;
    let shootdowns: Vec<String> = [a, b]
        .iter()
        .map(|&m| {
            let tlb: Vec<f64> = runs(r, m)
                .iter()
                .filter_map(|x| x.steady.as_ref()?.tlb_per_s)
                .collect();
            if tlb.is_empty() {
                format!("{} TLB shootdowns not counted here", m.name())
            } else {
                format!(
                    "{} {:.0} TLB shootdowns/s",
                    m.name(),
                    crate::report::median(tlb.into_iter())
                )
            }
        })
        .collect();
    // Each run gives one ratio; the verdict is over runs (the seconds of one run share its
    // state, and one run of each named mmap-random in one quick suite and pread in the next).
    let n = f.rounds;
    let word = if n == 1 { "run" } else { "runs" };
    f.text = f
        .text
        .replace(
            &format!("over {n} rounds"),
            &format!("over {n} {word} of each (a run's seconds share its state)"),
        )
        .replace(
            &format!("budget: {n} round{}", if n == 1 { "" } else { "s" }),
            &format!("budget: {n} {word}"),
        )
        .replace(
            &format!("undecided after {n} rounds"),
            &format!("undecided after {n} {word}"),
        );
    f.text = format!("{}; {}", f.text, shootdowns.join(", "));
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
            pass: 0,
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

    /// Each method's runs: its seconds in run p are `kiops` scaled by `1 + wobble * p`.
    fn three(method: ReadMethod, kiops: &[f64], wobble: f64) -> Vec<MethodSeries> {
        (0..3)
            .map(|p| {
                let k = 1.0 + wobble * p as f64;
                let v: Vec<f64> = kiops.iter().map(|x| x * k).collect();
                MethodSeries {
                    pass: p,
                    ..series(method, &v)
                }
            })
            .collect()
    }

    #[test]
    fn names_a_winner_only_when_the_runs_say_so() {
        let fast = [66.0, 68.0, 70.0, 67.0, 69.0, 68.5, 67.5];
        let slow = [21.0, 22.0, 23.0, 22.5, 21.5, 22.2, 21.8];
        let pread = [21.9, 22.1, 22.4, 21.7, 22.3, 22.0, 21.6];
        let mut methods = Vec::new();
        methods.extend(three(ReadMethod::Mmap, &slow, 0.01));
        methods.extend(three(ReadMethod::MmapRandom, &slow, 0.2));
        methods.extend(three(ReadMethod::Pread, &pread, -0.2));
        methods.extend(three(ReadMethod::UringDirect, &fast, 0.02));
        let r = result(methods);
        let f = squeeze(&r);
        assert_eq!(f.len(), 2);
        assert_eq!(
            f[0].winner.as_deref(),
            Some("uring-direct"),
            "{}",
            f[0].text
        );
        assert!(
            f[0].text.contains("mmap 1200 TLB shootdowns/s"),
            "{}",
            f[0].text
        );
        assert!(f[0].text.contains("over 3 runs of each"), "{}", f[0].text);
        assert_eq!(f[0].ratio_kind, Some(RatioKind::Replicated));
        assert!(f[0].level >= 0.95, "{f:?}");
        // Runs that disagree (one side ahead in one run, behind in the next): no winner.
        assert_eq!(f[1].winner, None, "{}", f[1].text);
        assert!(
            f[1].text.contains("undecided after 3 runs"),
            "{}",
            f[1].text
        );
        // One run of each, however sure its seconds: too few runs to decide, said.
        let one = result(vec![
            series(ReadMethod::Mmap, &slow),
            series(ReadMethod::UringDirect, &fast),
        ]);
        let f = squeeze(&one);
        assert_eq!(f[0].winner, None, "{}", f[0].text);
        assert!(
            f[0].text.contains("undecided (budget: 1 run,"),
            "{}",
            f[0].text
        );
        assert_eq!(f[0].ci, [0.0, 0.0]);
        // A method without a steady state is left out; with one left there is nothing to compare.
        let mut r = result(vec![
            series(ReadMethod::Mmap, &slow),
            series(ReadMethod::UringDirect, &fast),
        ]);
        r.methods[0].steady = None;
        assert!(squeeze(&r).is_empty());
    }
}
