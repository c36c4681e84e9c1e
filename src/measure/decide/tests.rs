use super::*;

#[test]
fn intervals_decide_by_the_margin() {
    assert_eq!(decide([1.06, 1.2]), (Decided::Winner, Some(true)));
    assert_eq!(decide([0.5, 0.9]), (Decided::Winner, Some(false)));
    assert_eq!(decide([0.97, 1.03]), (Decided::Equivalent, None));
    assert_eq!(decide([0.97, 1.07]), (Decided::Undecided, None));
    assert_eq!(decide([1.01, 1.07]), (Decided::Undecided, None));
}

#[test]
fn too_few_rounds_decide_nothing_and_say_their_coverage() {
    let v = paired(&[2.0, 2.0, 2.0], &[1.0, 1.0, 1.0], Spend::ONCE).unwrap();
    assert_eq!(v.decided, Decided::Undecided);
    assert!((v.level - 0.75).abs() < 1e-12, "{v:?}");
    // Eight clear rounds under six looks decide.
    let v = paired(&[2.0; 8], &[1.0; 8], Spend::looks(LOOKS.len())).unwrap();
    assert_eq!(
        (v.decided, v.a_larger, v.level),
        (Decided::Winner, Some(true), LEVEL)
    );
    assert_eq!(v.kind, RatioKind::Paired);
    // The ratio printed is the one whose interval is printed.
    assert!(v.ci[0] <= v.ratio && v.ratio <= v.ci[1]);
    assert!(paired(&[], &[], Spend::ONCE).is_none());
}

#[test]
fn signed_rank_distribution_is_exact() {
    let b = signed_rank_below(8);
    assert!((b[1] - 1.0 / 256.0).abs() < 1e-15);
    // T <= 1 for n = 3: T = 0 or 1, two of eight sign sets.
    assert!((signed_rank_below(3)[2] - 2.0 / 8.0).abs() < 1e-15);
    assert!((b[b.len() - 1] - 1.0).abs() < 1e-12);
}

#[test]
fn unpaired_ratio_is_the_ratio_of_medians() {
    let a: Vec<f64> = (0..20).map(|i| 200.0 + i as f64).collect();
    let b: Vec<f64> = (0..20).map(|i| 100.0 + i as f64).collect();
    let v = unpaired(&a, &b, Spend::ONCE).unwrap();
    assert_eq!(v.kind, RatioKind::OfMedians);
    assert!((v.ratio - 209.5 / 109.5).abs() < 1e-12);
    assert_eq!(v.decided, Decided::Winner);
    assert!(v.ci[0] > 1.7 && v.ci[1] < 2.2, "{v:?}");
    // Six runs against seven: the two ranges cover 96.9% x 98.4% = 95.3%, enough.
    let v = unpaired(&a[..6], &b[..7], Spend::ONCE).unwrap();
    assert_eq!(v.level, LEVEL);
    assert_eq!(v.decided, Decided::Winner, "{v:?}");
    // Five against five: 93.75% squared is not.
    let v = unpaired(&a[..5], &b[..5], Spend::ONCE).unwrap();
    assert_eq!(v.decided, Decided::Undecided, "{v:?}");
    assert!(v.level < LEVEL, "{v:?}");
}

/// A small deterministic generator (xorshift64*), so the simulation is the same every run.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn unit(&mut self) -> f64 {
        ((self.next() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }
    fn normal(&mut self) -> f64 {
        let (u, v) = (self.unit(), self.unit());
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }
    /// Student's t with 3 degrees of freedom, scaled to unit standard deviation.
    fn t3(&mut self) -> f64 {
        let z = self.normal();
        let chi: f64 = (0..3).map(|_| self.normal().powi(2)).sum();
        z / (chi / 3.0).sqrt() / 3f64.sqrt()
    }
}

#[derive(Clone, Copy, Debug)]
enum Noise {
    Normal(f64),
    Heavy(f64),
    /// One round in five slow for both sides (halved), with extra noise on each.
    SlowBoth(f64),
    /// One round in five slow for one side, chosen at random.
    SlowOne(f64),
}

/// One round of a cell whose true figure is `truth` under `noise`.
fn pair(rng: &mut Rng, truth: f64, noise: Noise) -> (f64, f64) {
    let mut a = truth;
    let mut b = 1.0;
    let jitter = |rng: &mut Rng, s: f64| (s * rng.normal()).exp();
    match noise {
        Noise::Normal(s) => {
            a *= jitter(rng, s);
            b *= jitter(rng, s);
        }
        Noise::Heavy(s) => {
            a *= (s * rng.t3()).exp();
            b *= (s * rng.t3()).exp();
        }
        Noise::SlowBoth(s) => {
            a *= jitter(rng, s);
            b *= jitter(rng, s);
            if rng.unit() < 0.2 {
                a *= 0.5 * jitter(rng, 0.2);
                b *= 0.5 * jitter(rng, 0.2);
            }
        }
        Noise::SlowOne(s) => {
            a *= jitter(rng, s);
            b *= jitter(rng, s);
            if rng.unit() < 0.2 {
                if rng.unit() < 0.5 {
                    a *= 0.6;
                } else {
                    b *= 0.6;
                }
            }
        }
    }
    (a, b)
}

/// The harness's procedure: add rounds, look at each of [`LOOKS`], stop when decided.
fn sequential(rng: &mut Rng, truth: f64, noise: Noise) -> Verdict {
    let (mut a, mut b) = (Vec::new(), Vec::new());
    let mut last = None;
    for &look in &LOOKS {
        while a.len() < look {
            let (x, y) = pair(rng, truth, noise);
            a.push(x);
            b.push(y);
        }
        let v = paired(&a, &b, Spend::looks(LOOKS.len())).unwrap();
        if v.decided != Decided::Undecided {
            return v;
        }
        last = Some(v);
    }
    last.unwrap()
}

/// The guarantee, by simulation: with known truths (equal, 3% apart, 10% apart) under normal,
/// heavy-tailed and slow-round noise, a winner where there is none (or "within 5%" where there
/// is a 10% difference) at most 5% of the time, a reversed winner at most 1%.
#[test]
fn sequential_errors_stay_below_five_and_one_percent() {
    const TRIALS: usize = 2000;
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let noises = [
        Noise::Normal(0.03),
        Noise::Normal(0.10),
        Noise::Normal(0.25),
        Noise::Heavy(0.05),
        Noise::Heavy(0.15),
        Noise::SlowBoth(0.05),
        Noise::SlowOne(0.05),
    ];
    for &truth in &[1.0, 1.03, 1.10] {
        for &noise in &noises {
            let (mut wrong, mut reversed, mut decided) = (0, 0, 0);
            for _ in 0..TRIALS {
                let v = sequential(&mut rng, truth, noise);
                if v.decided != Decided::Undecided {
                    decided += 1;
                }
                let (w, r) = judged(&v, truth);
                wrong += usize::from(w);
                reversed += usize::from(r);
            }
            let (w, r) = (
                wrong as f64 / TRIALS as f64,
                reversed as f64 / TRIALS as f64,
            );
            eprintln!(
                "truth {truth:.2} {noise:?}: wrong {:.2}%, reversed {:.2}%, decided {:.1}%",
                100.0 * w,
                100.0 * r,
                100.0 * decided as f64 / TRIALS as f64
            );
            assert!(w <= 0.05, "truth {truth} {noise:?}: wrong {w}");
            assert!(r <= 0.01, "truth {truth} {noise:?}: reversed {r}");
        }
    }
}

/// Whether a verdict on a true ratio `truth` (a over b) is wrong, and whether it is reversed.
/// No winner exists under the margin: naming one is wrong, naming the slower side reversed.
fn judged(v: &Verdict, truth: f64) -> (bool, bool) {
    let (named_a, named_b) = (v.a_larger == Some(true), v.a_larger == Some(false));
    if truth < MARGIN {
        (named_a || named_b, named_b && truth > 1.0)
    } else {
        (named_b || v.decided == Decided::Equivalent, named_b)
    }
}

/// Cells measured apart (8 runs a side, one look): the same bounds on wrong and reversed
/// winners.
#[test]
fn unpaired_errors_stay_below_five_and_one_percent() {
    let mut rng = Rng(7);
    for &truth in &[1.0, 1.03, 1.10] {
        for &s in &[0.03, 0.10] {
            let (mut wrong, mut reversed) = (0, 0);
            for _ in 0..2000 {
                let a: Vec<f64> = (0..8).map(|_| truth * (s * rng.t3()).exp()).collect();
                let b: Vec<f64> = (0..8).map(|_| (s * rng.t3()).exp()).collect();
                let v = unpaired(&a, &b, Spend::ONCE).unwrap();
                let (w, r) = judged(&v, truth);
                wrong += usize::from(w);
                reversed += usize::from(r);
            }
            assert!(
                wrong <= 100,
                "truth {truth} noise {s}: wrong {wrong} of 2000"
            );
            assert!(
                reversed <= 20,
                "truth {truth} noise {s}: reversed {reversed} of 2000"
            );
        }
    }
}

/// And it decides: a clear 1.5x lead under 10% noise is named in the first look nearly always.
#[test]
fn a_clear_lead_is_named_early() {
    let mut rng = Rng(42);
    let mut early = 0;
    for _ in 0..500 {
        let v = sequential(&mut rng, 1.5, Noise::Normal(0.10));
        assert_eq!((v.decided, v.a_larger), (Decided::Winner, Some(true)));
        early += usize::from(v.rounds == LOOKS[0]);
    }
    assert!(early >= 450, "{early}");
}

/// A run's verdict with ratio `r` (its own interval does not enter a verdict over runs).
fn run(r: f64) -> Verdict {
    Verdict {
        ratio: r,
        ci: [r * 0.9, r * 1.1],
        level: LEVEL,
        asked: LEVEL,
        rounds: 8,
        kind: RatioKind::OfMedians,
        decided: decide([r * 0.9, r * 1.1]).0,
        a_larger: decide([r * 0.9, r * 1.1]).1,
    }
}

#[test]
fn a_verdict_over_runs_takes_the_runs_as_the_unit() {
    let both = replicated(&[run(2.0), run(2.2), run(1.9)]).unwrap();
    assert_eq!((both.decided, both.a_larger), (Decided::Winner, Some(true)));
    assert_eq!((both.rounds, both.kind), (3, RatioKind::Replicated));
    assert!(both.ci[0] <= both.ratio && both.ratio <= both.ci[1]);
    assert!((both.ratio - (2.0f64 * 2.2 * 1.9).cbrt()).abs() < 1e-9);
    // Runs that disagree (each sure of itself, as ticks of one state are): undecided.
    let split = replicated(&[run(14.8), run(0.12), run(3.0)]).unwrap();
    assert_eq!(split.decided, Decided::Undecided);
    // Within 5% in every run, close together: within 5%.
    let even = replicated(&[run(1.0), run(1.01), run(0.99), run(1.0)]).unwrap();
    assert_eq!(even.decided, Decided::Equivalent);
    // Two runs, however sure each is: too few to decide, and no interval to print.
    let two = replicated(&[run(5.0), run(5.1)]).unwrap();
    assert_eq!(
        (two.decided, two.level, two.ci),
        (Decided::Undecided, 0.0, [0.0, 0.0])
    );
    assert!(replicated(&[]).is_none());
    assert!((t975(40) - 2.021).abs() < 0.002 && (t975(200) - 1.972).abs() < 0.002);
}

/// The rule over runs names a winner in at most 5% of comparisons whose two sides are the same
/// (their runs' ratios scattered about 1 by the run's state, normal or heavy-tailed), and says
/// "within 5%" wrongly in at most 5% of those whose true ratio is 1.2.
#[test]
fn a_verdict_over_runs_errs_at_most_five_percent() {
    let mut rng = Rng(0x5EED);
    for runs in [3usize, 4, 6, 10] {
        for spread in [0.02, 0.3, 1.5] {
            for heavy in [false, true] {
                let noise = |rng: &mut Rng| {
                    if heavy {
                        spread * rng.t3()
                    } else {
                        spread * rng.normal()
                    }
                };
                let trials = 4000;
                let (mut wrong_winner, mut wrong_even) = (0, 0);
                for _ in 0..trials {
                    let same: Vec<Verdict> =
                        (0..runs).map(|_| run(noise(&mut rng).exp())).collect();
                    if replicated(&same).unwrap().decided == Decided::Winner {
                        wrong_winner += 1;
                    }
                    let apart: Vec<Verdict> = (0..runs)
                        .map(|_| run(1.2 * noise(&mut rng).exp()))
                        .collect();
                    if replicated(&apart).unwrap().decided == Decided::Equivalent {
                        wrong_even += 1;
                    }
                }
                let (w, e) = (
                    wrong_winner as f64 / trials as f64,
                    wrong_even as f64 / trials as f64,
                );
                // 4,000 trials: a rate of 5% reads at most 5.8% in 99.9% of seeds.
                assert!(
                    w <= 0.058,
                    "{runs} runs, spread {spread}, heavy {heavy}: winner {w}"
                );
                assert!(
                    e <= 0.058,
                    "{runs} runs, spread {spread}, heavy {heavy}: within 5% {e}"
                );
            }
        }
    }
}

#[test]
fn a_verdict_is_drawn_at_the_level_asked_and_says_it() {
    let a = [2.0, 2.1, 1.9, 2.05, 1.95, 2.2, 1.8, 2.0];
    let b = [1.0; 8];
    let at = |level| paired(&a, &b, Spend { looks: 1, level }).unwrap();
    let (low, mid, high) = (at(0.8), at(0.95), at(0.999));
    // A lower level, an interval inside the higher one's: never wider.
    assert!(
        low.ci[0] >= mid.ci[0] && low.ci[1] <= mid.ci[1],
        "{low:?} {mid:?}"
    );
    assert!(
        low.ci[1] - low.ci[0] < mid.ci[1] - mid.ci[0],
        "{low:?} {mid:?}"
    );
    for (v, words) in [(low, "at 80% over 8"), (mid, "at 95% over 8")] {
        assert!(v.has_interval(), "{v:?}");
        assert_eq!(v.level, v.asked);
        assert_eq!(v.decided, Decided::Winner, "{v:?}");
        assert!(v.interval_words().contains(words), "{}", v.interval_words());
    }
    // Eight rounds cannot reach 99.9% (the range covers 1 - 2/256): nothing decided, and said.
    assert!(!high.has_interval(), "{high:?}");
    assert_eq!((high.decided, high.asked), (Decided::Undecided, 0.999));
    assert!(high.level < 0.999);
    assert!(
        high.interval_words().contains("too few for one at 99.9%"),
        "{}",
        high.interval_words()
    );
    // Unpaired sides and looks spend the level alike: six looks at 80% are one at 1 - 0.2/6.
    let six = unpaired(
        &a,
        &b,
        Spend {
            looks: 6,
            level: 0.8,
        },
    )
    .unwrap();
    let one = unpaired(
        &a,
        &b,
        Spend {
            looks: 1,
            level: 1.0 - 0.2 / 6.0,
        },
    )
    .unwrap();
    assert_eq!(six.ci, one.ci);
    assert_eq!(percent(0.95), "95%");
    assert_eq!(percent(0.999), "99.9%");
}
