use super::*;
use crate::measure::decide::LOOKS;

/// Cells whose figure is a fixed sequence per cell, recording the order they ran in.
struct Fake {
    figures: Vec<Box<dyn FnMut(usize) -> f64>>,
    calls: Vec<usize>,
    xor: Vec<Option<(u64, u32)>>,
    unsupported: Vec<bool>,
}

impl Fake {
    fn new(figures: Vec<Box<dyn FnMut(usize) -> f64>>) -> Fake {
        let n = figures.len();
        Fake {
            figures,
            calls: Vec::new(),
            xor: vec![None; n],
            unsupported: vec![false; n],
        }
    }
}

impl Cells for Fake {
    type Extra = f64;
    fn count(&self) -> usize {
        self.figures.len()
    }
    fn name(&self, i: usize) -> String {
        format!("cell {i}")
    }
    fn cell(&self, i: usize) -> Cell<'_> {
        Cell {
            xor: self.xor[i].map(|(g, _)| XorCheck::group(g)),
            ..Cell::own()
        }
    }
    /// The figure, also read as milliseconds of run time.
    fn own(&mut self, i: usize) -> Result<Timed<f64>> {
        if self.unsupported[i] {
            return Err(Error::unsupported("fake", "not here"));
        }
        let k = self.calls.iter().filter(|&&c| c == i).count();
        self.calls.push(i);
        let figure = (self.figures[i])(k);
        Ok(Timed {
            moved: crate::engine::Moved {
                xor: self.xor[i].map_or(0, |(_, x)| x),
                ..Default::default()
            },
            counters: crate::measure::Counters {
                wall: Duration::from_secs_f64(figure / 1e3),
                ..Default::default()
            },
            extra: figure,
        })
    }
    fn figure(&self, run: &CellRun<f64>) -> f64 {
        run.extra
    }
}

fn wobble(base: f64) -> Box<dyn FnMut(usize) -> f64> {
    Box::new(move |k| base * (1.0 + 0.03 * ((k * 7919 % 13) as f64 / 13.0 - 0.5)))
}

#[test]
fn rounds_rotate_and_stop_at_the_first_look_when_decided() {
    let mut cells = Fake::new(vec![wobble(200.0), wobble(100.0), wobble(50.0)]);
    let plan = Rounds::adaptive(Duration::from_secs(60)).plan();
    let cmp = [Comparison { a: 0, b: 1 }];
    let out = run_plan("t", &mut cells, &plan, &cmp, &Silent).unwrap();
    assert_eq!(out.stop, Stop::Decided);
    assert_eq!(out.rounds, LOOKS[0]);
    assert_eq!(out.looks, 1);
    let v = out.verdicts[0].unwrap();
    assert_eq!((v.decided, v.a_larger), (Decided::Winner, Some(true)));
    // Warm-up round + 8 counted, every cell; each round starts one cell later.
    assert_eq!(cells.calls.len(), 3 * (1 + LOOKS[0]));
    assert_eq!(&cells.calls[..6], &[0, 1, 2, 1, 2, 0]);
    assert!(out.cells.iter().all(|c| c.runs.len() == LOOKS[0]));
    assert!(
        out.warnings.is_empty(),
        "runs of 50-200 ms: {:?}",
        out.warnings
    );
}

#[test]
fn only_undecided_comparisons_get_more_rounds() {
    // Cells 0 and 1 within 1% of each other but noisy (undecided at first), cell 2 far off.
    let noisy = |base: f64, phase: usize| -> Box<dyn FnMut(usize) -> f64> {
        Box::new(move |k| base * (1.0 + 0.08 * (((k + phase) * 7) % 5) as f64 / 4.0))
    };
    // A fourth cell in no comparison gets the floor only.
    let mut cells = Fake::new(vec![
        noisy(100.0, 0),
        noisy(101.0, 2),
        wobble(10.0),
        wobble(5.0),
    ]);
    let plan = Rounds {
        repeat: 3,
        ..Rounds::adaptive(Duration::from_secs(60))
    }
    .plan();
    let cmp = [Comparison { a: 0, b: 1 }, Comparison { a: 0, b: 2 }];
    let out = run_plan("t", &mut cells, &plan, &cmp, &Silent).unwrap();
    assert!(out.looks > 1, "{out:?}");
    assert_eq!(out.cells[2].runs.len(), LOOKS[0], "decided cell stopped");
    assert!(out.cells[0].runs.len() > LOOKS[0]);
    assert_eq!(out.cells[0].runs.len(), out.cells[1].runs.len());
    assert_eq!(out.verdicts[1].unwrap().decided, Decided::Winner);
    assert_eq!(out.cells[3].runs.len(), 3, "uncompared cell: the floor");
}

#[test]
fn a_budget_ends_the_rounds_undecided() {
    let noisy = |base: f64, phase: usize| -> Box<dyn FnMut(usize) -> f64> {
        Box::new(move |k| {
            std::thread::sleep(Duration::from_millis(2));
            base * (1.0 + 0.5 * (((k + phase) * 7) % 5) as f64 / 4.0)
        })
    };
    let mut cells = Fake::new(vec![noisy(100.0, 0), noisy(100.0, 3)]);
    // Uncapped by hand: the first look completes, the next does not fit.
    let plan = Plan {
        capped: false,
        ..Rounds::adaptive(Duration::from_millis(1)).plan()
    };
    let out = run_plan(
        "t",
        &mut cells,
        &plan,
        &[Comparison { a: 0, b: 1 }],
        &Silent,
    )
    .unwrap();
    assert_eq!(out.stop, Stop::Budget);
    assert_eq!(out.rounds, LOOKS[0]);
    assert_eq!(out.verdicts[0].unwrap().decided, Decided::Undecided);
}

#[test]
fn unsupported_cells_are_skipped_with_the_reason_and_xors_must_agree() {
    let mut cells = Fake::new(vec![wobble(1.0), wobble(2.0), wobble(3.0)]);
    cells.unsupported[1] = true;
    let out = run("t", &mut cells, &Rounds::fixed(3, 0), &[], &Silent).unwrap();
    assert_eq!(out.cells[1].skipped.as_ref().unwrap().cause, "not here");
    assert!(out.cells[1].runs.is_empty() && out.cells[2].runs.len() == 3);
    // Runs of 1 and 3 ms are said to be short, naming the cells.
    assert_eq!(out.warnings.len(), 1);
    assert!(
        out.warnings[0].contains("2 cell(s) ran under 5 ms"),
        "{:?}",
        out.warnings
    );
    assert!(
        out.warnings[0].contains("cell 0 (1.0 ms)"),
        "{:?}",
        out.warnings
    );

    let mut cells = Fake::new(vec![wobble(1.0), wobble(2.0)]);
    cells.xor = vec![Some((7, 0xaa)), Some((7, 0xab))];
    let e = run("t", &mut cells, &Rounds::fixed(3, 0), &[], &Silent).unwrap_err();
    assert!(e.to_string().contains("checksum mismatch"), "{e}");
    cells.xor = vec![Some((7, 0xaa)), Some((8, 0xab))];
    assert!(run("t", &mut cells, &Rounds::fixed(3, 0), &[], &Silent).is_ok());
}

#[test]
fn a_capped_budget_starts_no_run_that_would_end_past_it() {
    // Every run takes at least 20 ms; the cap is 30 ms: after the first warm-up run, the next
    // (expected as long as the longest so far) would end past it, so it is not started.
    let slow = || -> Box<dyn FnMut(usize) -> f64> {
        Box::new(|_| {
            std::thread::sleep(Duration::from_millis(20));
            20.0
        })
    };
    let mut cells = Fake::new(vec![slow(), slow()]);
    let plan = Rounds::adaptive(Duration::from_millis(30)).plan();
    assert!(plan.capped, "a budget is a cap");
    let out = run_plan(
        "t",
        &mut cells,
        &plan,
        &[Comparison { a: 0, b: 1 }],
        &Silent,
    )
    .unwrap();
    assert_eq!(out.stop, Stop::Capped);
    assert_eq!(cells.calls.len(), 1, "{:?}", cells.calls);
    assert_eq!(out.verdicts[0], None);
    for c in &out.cells {
        assert!(c.runs.is_empty());
        let why = c.skipped.as_ref().unwrap().to_string();
        assert!(why.contains("budget ran out"), "{why}");
    }
    // Uncapped (a plan made by hand), the same budget still completes the first look.
    let mut cells = Fake::new(vec![wobble(1.0), wobble(1.0)]);
    let plan = Plan {
        capped: false,
        ..Rounds::adaptive(Duration::from_millis(1)).plan()
    };
    let out = run_plan(
        "t",
        &mut cells,
        &plan,
        &[Comparison { a: 0, b: 1 }],
        &Silent,
    )
    .unwrap();
    assert_eq!(out.rounds, LOOKS[0]);
}
