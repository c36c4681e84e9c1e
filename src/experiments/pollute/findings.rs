//! `pollute`'s findings: which read and which written stream method keeps the hot set fastest
//! against the plain buffered one, and what it costs the stream, decided over every pass.

use crate::experiments::pollute::{Effect, PolluteResult, StreamRun};
use crate::measure::decide::{self, Decided};
use crate::measure::finding::{Better, Finding, Pairing, Side, compare};
use crate::measure::stats::{Summary, summarize};

/// Read streams whose effect on the hot set a finding prefers to name, in this order, when
/// several keep it equally fast: the method uncached I/O was made for first, then the portable
/// trick, then O_DIRECT, then the mappings. A fixed order, so that methods within noise of each
/// other do not take turns at being named from run to run.
const POLLUTE_READ_ORDER: [&str; 5] =
    ["uncached", "fadvise-dontneed", "direct", "mmap-seq", "mmap"];
/// The same for written streams.
const POLLUTE_WRITE_ORDER: [&str; 2] = ["uncached", "direct"];

/// `pollute`: the stream method that keeps the hot set fastest against the plain buffered one
/// (`read`, `write`), by the hot reader's KIOPS per tick under the stream; and what that method
/// costs the stream itself. The method named is the first of a fixed order whose hot KIOPS is not
/// decidedly below the best median's; the others as fast are listed.
pub fn pollute(r: &PolluteResult) -> Vec<Finding> {
    let mut out = Vec::new();
    for (runs, plain, order, key) in [
        (&r.reads, "read", &POLLUTE_READ_ORDER[..], "pollute-read"),
        (
            &r.writes,
            "write",
            &POLLUTE_WRITE_ORDER[..],
            "pollute-write",
        ),
    ] {
        if let Some(f) = pollute_pair(r, runs, plain, order, key) {
            out.push(f);
        }
    }
    out
}

/// One stream method's runs: its effect in each pass it ran.
struct MethodRuns<'a> {
    name: &'a str,
    writes: bool,
    passes: Vec<(usize, &'a Effect)>,
}

impl MethodRuns<'_> {
    /// The median of its runs' hot KIOPS medians.
    fn hot_median(&self) -> f64 {
        crate::report::median(self.passes.iter().map(|(_, e)| e.hot_kiops.median))
    }

    /// Every run's samples of `f` together, for the figures a finding prints.
    fn pooled(&self, f: fn(&Effect) -> &Summary) -> Summary {
        summarize(
            &self
                .passes
                .iter()
                .flat_map(|(_, e)| f(e).samples.iter().copied())
                .collect::<Vec<_>>(),
        )
    }
}

/// `a` against `b` on `f`, run by run (the same pass), as one replicated verdict.
fn per_pass(a: &MethodRuns, b: &MethodRuns, f: fn(&Effect) -> &Summary) -> Option<decide::Verdict> {
    let verdicts: Vec<decide::Verdict> = a
        .passes
        .iter()
        .filter_map(|(p, ea)| {
            let (_, eb) = b.passes.iter().find(|(q, _)| q == p)?;
            decide::unpaired(&f(ea).samples, &f(eb).samples, decide::Spend::ONCE)
        })
        .collect();
    decide::replicated(&verdicts)
}

fn pollute_pair(
    r: &PolluteResult,
    runs: &[StreamRun],
    plain: &str,
    order: &[&str],
    key: &str,
) -> Option<Finding> {
    let methods = by_method(runs);
    let find = |name: &str| methods.iter().find(|m| m.name == name);
    let base = find(plain)?;
    let best = methods
        .iter()
        .max_by(|a, b| a.hot_median().total_cmp(&b.hot_median()))?;
    let hot: fn(&Effect) -> &Summary = |e| &e.hot_kiops;
    // Level with the best: no replicated interval says the best is ahead.
    let level_with_best = |m: &MethodRuns| {
        m.name == best.name
            || per_pass(best, m, hot)
                .is_none_or(|v| !(v.decided == Decided::Winner && v.a_larger == Some(true)))
    };
    let tied: Vec<&MethodRuns> = order
        .iter()
        .filter_map(|n| find(n))
        .filter(|m| level_with_best(m))
        .collect();
    let chosen = tied
        .first()
        .copied()
        .or_else(|| order.iter().find_map(|n| find(n)))?;
    let v = per_pass(chosen, base, hot)?;
    let side = |m: &MethodRuns| Side {
        name: m.name.to_string(),
        s: m.pooled(hot),
        cite: format!(
            "pollute: {} {}",
            if m.writes { "write" } else { "read" },
            m.name
        ),
    };
    let verb = if plain == "read" { "reads" } else { "writes" };
    let what = format!(
        "the hot set's random {} reads while a stream {verb} {} in the same {} memory group, stream {} against {plain}",
        crate::size::format_size(r.config.hot_bs),
        if plain == "read" {
            format!(
                "a file {:.1}x the group's limit",
                r.stream_size as f64 / r.limit.max(1) as f64
            )
        } else {
            format!("{} a pass", crate::size::format_size(r.config.write_size))
        },
        crate::size::format_size(r.limit),
        chosen.name
    );
    let mut f = compare(
        key,
        &what,
        "hot KIOPS",
        Better::Higher,
        Pairing::Given(v),
        side(chosen),
        side(base),
    )?;
    // Each run gives one ratio (its ticks share the run's state); the verdict is over runs.
    f.text = f.text.replace(
        &format!("over {} rounds", f.rounds),
        &format!(
            "over {} runs of each (a run's ticks share its state)",
            f.rounds
        ),
    );
    let runs = if f.rounds == 1 { "run" } else { "runs" };
    f.text = f
        .text
        .replace(
            &format!(
                "budget: {} round{}",
                f.rounds,
                if f.rounds == 1 { "" } else { "s" }
            ),
            &format!("budget: {} {runs}", f.rounds),
        )
        .replace(
            &format!("undecided after {} rounds", f.rounds),
            &format!("undecided after {} {runs}", f.rounds),
        );
    let more = notes(chosen, base, best, &tied, plain);
    f.text = format!("{}; {}", f.text, more.join("; "));
    Some(f)
}

/// The measured runs of each method, in the order they first ran.
fn by_method(runs: &[StreamRun]) -> Vec<MethodRuns<'_>> {
    let mut methods: Vec<MethodRuns> = Vec::new();
    for m in runs.iter().filter(|m| m.unsupported.is_none()) {
        let Some(e) = m.effect.as_ref() else { continue };
        match methods.iter_mut().find(|x| x.name == m.method) {
            Some(x) => x.passes.push((m.pass, e)),
            None => methods.push(MethodRuns {
                name: &m.method,
                writes: m.writes,
                passes: vec![(m.pass, e)],
            }),
        }
    }
    methods
}

/// What the finding adds after its comparison: the hot set's residency under each side, what
/// the method cost the stream, and which methods were level with the best.
fn notes(
    chosen: &MethodRuns,
    base: &MethodRuns,
    best: &MethodRuns,
    tied: &[&MethodRuns],
    plain: &str,
) -> Vec<String> {
    let pct = |m: &MethodRuns| {
        let p = crate::report::median(m.passes.iter().filter_map(|(_, e)| e.hot_resident_pct));
        format!("{p:.0}%")
    };
    let mut more = vec![format!(
        "hot set resident {} under {} against {} under {plain}",
        pct(chosen),
        chosen.name,
        pct(base)
    )];
    let stream: fn(&Effect) -> &Summary = |e| &e.stream_mib_s;
    if let Some(v) = per_pass(chosen, base, stream) {
        let interval = if v.has_interval() {
            format!(
                ", interval {:.2}-{:.2}x at {}: {}",
                v.ci[0],
                v.ci[1],
                v.asked_words(),
                match v.decided {
                    Decided::Winner => "a difference",
                    Decided::Equivalent => "within 5%",
                    Decided::Undecided => "undecided",
                }
            )
        } else {
            format!(
                ": undecided ({} runs; a verdict over runs needs {})",
                v.rounds,
                decide::MIN_RUNS
            )
        };
        more.push(format!(
            "the stream itself ran at {:.0} MiB/s against {:.0} (medians of every tick); the geometric mean of the runs' ratios {:.2}x{interval}",
            chosen.pooled(stream).median,
            base.pooled(stream).median,
            v.ratio,
        ));
    }
    let others: Vec<&str> = tied
        .iter()
        .filter(|m| m.name != chosen.name)
        .map(|m| m.name)
        .collect();
    if best.name == plain && best.name != chosen.name {
        more.push(format!("{plain} itself kept the hot set fastest by median"));
    } else if !others.is_empty() {
        more.push(format!(
            "not told apart from the best for the hot set by their intervals: {}",
            others.join(", ")
        ));
    }
    more
}

#[cfg(test)]
mod pollute_tests {
    use super::*;
    use crate::experiments::pollute::PolluteConfig;

    fn effect(hot: f64, stream: f64) -> Effect {
        // Nine ticks a side, 0.2% apart: tight enough for an interval at 95% within 5%.
        let around = |x: f64| {
            summarize(
                &(0..9)
                    .map(|i| x * (1.0 + 0.002 * (i as f64 - 4.0)))
                    .collect::<Vec<_>>(),
            )
        };
        Effect {
            hot_alone: around(1500.0),
            hot_kiops: around(hot),
            hot_p99_us: None,
            hot_p99_alone_us: None,
            hot_resident_pct: Some(if hot > 100.0 { 100.0 } else { 80.0 }),
            hot_resident_min_pct: None,
            stream_mib_s: around(stream),
            mem_bytes: None,
            scan_kswapd_per_s: None,
            evicted_per_s: None,
            refaults_per_s: None,
            dev_mib_s: None,
            ticks: 9,
        }
    }

    /// Three runs of the same figures, each a little off the last (as runs of one machine).
    fn result(reads: &[(&str, f64)]) -> PolluteResult {
        let runs: Vec<Vec<(&str, f64)>> = (0..3)
            .map(|i| {
                let k = 1.0 + 0.001 * i as f64;
                reads.iter().map(|(m, x)| (*m, x * k)).collect()
            })
            .collect();
        let each: Vec<&[(&str, f64)]> = runs.iter().map(|r| &r[..]).collect();
        passes(&each)
    }

    /// Several passes, each the hot KIOPS of each method.
    fn passes(each: &[&[(&str, f64)]]) -> PolluteResult {
        PolluteResult {
            config: PolluteConfig::new("big".into(), 256 << 20, "iolab".into()),
            stream_size: 1 << 30,
            hot_size: 128 << 20,
            cgroup: crate::cache::cgroup::Controller {
                version: crate::cache::cgroup::Version::V1,
                parent: "/sys/fs/cgroup/memory".into(),
            },
            limit: 256 << 20,
            reads: each
                .iter()
                .enumerate()
                .flat_map(|(pass, reads)| reads.iter().map(move |r| (pass, r)))
                .map(|(pass, (m, hot))| StreamRun {
                    method: m.to_string(),
                    writes: false,
                    pass,
                    unsupported: None,
                    ticks: Vec::new(),
                    done: None,
                    effect: Some(effect(*hot, if *m == "read" { 1700.0 } else { 1200.0 })),
                })
                .collect(),
            writes: Vec::new(),
            warnings: Vec::new(),
        }
    }

    #[test]
    fn the_first_method_of_the_order_level_with_the_best_is_named() {
        let r = result(&[
            ("read", 8.0),
            ("uncached", 1400.0),
            ("direct", 1410.0),
            ("fadvise-dontneed", 1395.0),
            ("mmap", 3.0),
        ]);
        let f = pollute(&r);
        assert_eq!(f.len(), 1, "no write streams, no write finding");
        let f = &f[0];
        assert_eq!(
            (f.key.as_str(), f.winner.as_deref()),
            ("pollute-read", Some("uncached"))
        );
        assert!(
            f.ci[0] <= f.ratio && f.ratio <= f.ci[1] && f.ci[0] > 1.05,
            "{f:?}"
        );
        assert!(
            f.text
                .contains("the stream itself ran at 1200 MiB/s against 1700"),
            "{}",
            f.text
        );
        assert!(
            f.text
                .contains("by their intervals: fadvise-dontneed, direct"),
            "{}",
            f.text
        );
        assert!(!f.text.contains("mmap"), "{}", f.text);
        // Uncached decidedly behind the best: the next of the order level with it is named.
        let r = result(&[
            ("read", 8.0),
            ("uncached", 300.0),
            ("fadvise-dontneed", 1400.0),
        ]);
        assert_eq!(pollute(&r)[0].winner.as_deref(), Some("fadvise-dontneed"));
    }

    #[test]
    fn a_winner_is_decided_over_runs() {
        let agree = passes(&[
            &[("read", 8.0), ("uncached", 1400.0)],
            &[("read", 50.0), ("uncached", 1300.0)],
            &[("read", 20.0), ("uncached", 1350.0)],
        ]);
        let f = &pollute(&agree)[0];
        assert_eq!(f.winner.as_deref(), Some("uncached"), "{}", f.text);
        assert!(f.text.contains("over 3 runs of each"), "{}", f.text);
        // Two runs, however far apart their sides: too few runs, no interval printed.
        let two = passes(&[
            &[("read", 8.0), ("uncached", 1400.0)],
            &[("read", 9.0), ("uncached", 1300.0)],
        ]);
        let f = &pollute(&two)[0];
        assert_eq!(f.decided, Some(Decided::Undecided), "{}", f.text);
        assert!(f.text.contains("undecided (budget: 2 runs"), "{}", f.text);
        assert!(!f.text.contains(", interval"), "{}", f.text);
        // The third run reverses the first two (pollute-write's two quick suites): nobody wins.
        let split = passes(&[
            &[("write", 25.0), ("uncached", 1.1)],
            &[("write", 3.0), ("uncached", 20.0)],
            &[("write", 30.0), ("uncached", 2.0)],
        ]);
        let f = &pollute(&PolluteResult {
            writes: split
                .reads
                .iter()
                .map(|r| StreamRun {
                    writes: true,
                    method: r.method.replace("read", "write"),
                    ..r.clone()
                })
                .collect(),
            reads: Vec::new(),
            ..split.clone()
        })[0];
        assert_eq!(
            (f.key.as_str(), f.winner.as_deref()),
            ("pollute-write", None),
            "{}",
            f.text
        );
        assert_eq!(f.decided, Some(Decided::Undecided), "{}", f.text);
    }

    #[test]
    fn a_plain_stream_as_good_as_any_is_said_so() {
        let r = result(&[("read", 1400.0), ("uncached", 1405.0), ("direct", 1398.0)]);
        let f = &pollute(&r)[0];
        assert_eq!(f.winner, None, "{}", f.text);
        assert_eq!(f.decided, Some(Decided::Equivalent), "{}", f.text);
        // Read decidedly best: compared with the first of the order, the winner is read.
        let r = result(&[("read", 1400.0), ("uncached", 700.0), ("direct", 650.0)]);
        let f = &pollute(&r)[0];
        assert_eq!(f.winner.as_deref(), Some("read"), "{}", f.text);
        assert!(
            f.text.contains("read itself kept the hot set fastest"),
            "{}",
            f.text
        );
    }
}
