//! The parent's analysis of series and the worker's sampling, on made-up ticks.

use super::*;

fn tick(t: f64, kiops: f64, mem: u64) -> SqueezeTick {
    SqueezeTick {
        t,
        secs: 1.0,
        ops: (kiops * 1e3) as u64,
        kiops,
        mib_s: kiops * 1e3 * 4096.0 / (1 << 20) as f64,
        dev_read_bytes: Some((kiops * 1e3) as u64 * 4096),
        tlb_shootdowns: Some(100),
        mem_current: Some(mem),
        cpu_work: 50,
        ..Default::default()
    }
}

#[test]
fn steady_state_starts_after_the_group_fills() {
    let limit = 100 << 20;
    // Fast while filling, then slower; the window must leave out the filling seconds.
    let mut ticks: Vec<SqueezeTick> = (0..3)
        .map(|i| tick(i as f64 + 1.0, 90.0, (i + 1) * (25 << 20)))
        .collect();
    ticks.extend((3..10).map(|i| tick(i as f64 + 1.0, 20.0 + i as f64 * 0.1, 99 << 20)));
    let s = steady_state(&ticks, 1.0, limit, false, 100.0).unwrap();
    // Second 4 (index 3) is the first at 90%: the window starts after it.
    assert_eq!(s.seconds, 6);
    assert!((s.from_s - 4.0).abs() < 1e-9, "{}", s.from_s);
    assert!(s.kiops.max < 21.0, "no filling second in it: {:?}", s.kiops);
    assert_eq!(s.tlb_per_s, Some(100.0));
    assert_eq!(s.cpu_left_pct, Some(50.0));
    assert!(s.why.contains("second 4"), "{}", s.why);
    // O_DIRECT never fills the group: from the second second.
    let flat: Vec<SqueezeTick> = (0..6)
        .map(|i| tick(i as f64 + 1.0, 30.0, 1 << 20))
        .collect();
    let d = steady_state(&flat, 1.0, limit, true, 0.0).unwrap();
    assert_eq!((d.seconds, d.cpu_left_pct), (5, None));
    // Not direct and never full: the second half, said so.
    let n = steady_state(&flat, 1.0, limit, false, 0.0).unwrap();
    assert_eq!(n.seconds, 3);
    assert!(n.why.contains("never filled"));
    // Too short: nothing.
    assert!(steady_state(&flat[..3], 1.0, limit, false, 0.0).is_none());
}

#[test]
fn a_last_partial_second_is_left_out() {
    let limit = 10 << 20;
    let mut ticks: Vec<SqueezeTick> = (0..5)
        .map(|i| tick(i as f64 + 1.0, 10.0, 10 << 20))
        .collect();
    let mut last = tick(5.3, 1.0, 10 << 20);
    last.secs = 0.3;
    ticks.push(last);
    let s = steady_state(&ticks, 1.0, limit, false, 0.0).unwrap();
    assert_eq!(s.seconds, 4);
    assert_eq!(s.kiops.min, 10.0);
}

fn series(method: ReadMethod, ticks: Vec<SqueezeTick>) -> MethodSeries {
    MethodSeries {
        method,
        pass: 0,
        unsupported: None,
        resident_before_pct: 0.0,
        ticks,
        done: None,
        peak: None,
        needed_bytes: 0,
        dev_read_bytes: None,
        steady: None,
    }
}

#[test]
fn readahead_is_named_only_where_the_bytes_say_so() {
    let mut amplified: Vec<SqueezeTick> = (0..4).map(|i| tick(i as f64 + 1.0, 0.2, 0)).collect();
    for t in &mut amplified {
        // 200 reads of 4 KiB a second, 8 MiB from the device for each.
        t.own_read_bytes = Some(t.ops * (8 << 20));
    }
    let plain: Vec<SqueezeTick> = (0..4)
        .map(|i| {
            let mut t = tick(i as f64 + 1.0, 20.0, 0);
            t.own_read_bytes = Some(t.ops * 4096);
            t
        })
        .collect();
    let methods = vec![
        series(ReadMethod::Mmap, amplified.clone()),
        series(ReadMethod::MmapRandom, plain),
        series(ReadMethod::UringDirect, amplified),
    ];
    let amp = amplification(&methods[0], 4096).unwrap();
    assert!((amp - 2048.0).abs() < 1.0, "{amp}");
    let e = explain(&methods, 4096, Some(8192));
    assert_eq!(e.len(), 1, "{e:?}");
    assert!(e[0].starts_with("mmap: 2048x") && e[0].contains("read_ahead_kb 8192"));
    // No readahead figure: the cause without it.
    let e = explain(&methods, 4096, None);
    assert!(!e[0].contains("read_ahead_kb"));
    // Nothing amplified: nothing said.
    assert!(explain(&methods[1..2], 4096, Some(8192)).is_empty());
}

#[test]
fn needed_bytes_count_distinct_blocks() {
    assert_eq!(
        needed_bytes(SqueezePattern::Random, 10, 100, 4096),
        10 * 4096
    );
    assert_eq!(
        needed_bytes(SqueezePattern::Seq, 500, 100, 4096),
        100 * 4096
    );
    let u = needed_bytes(SqueezePattern::Uniform, 100, 100, 1);
    // 100 draws of 100: about 63 distinct.
    assert!((58..=63).contains(&u), "{u}");
}

#[test]
fn a_worker_without_a_group_writes_ticks_then_done() {
    let (_dir, path) = crate::testutil::file_with("sq.bin", &vec![7u8; 4 << 20]);
    let cfg = SqueezeWorker {
        path,
        method: ReadMethod::Pread,
        reads: SqueezeReads {
            pattern: SqueezePattern::Uniform,
            bs: 4096,
            threads: 2,
            depth: 4,
            seconds: 1.3,
            tick: 1.0,
            seed: 3,
        },
        group: None,
    };
    let mut out = Vec::new();
    run_worker(&cfg, &mut &b"go\n"[..], &mut out).unwrap();
    let msgs: Vec<SqueezeMessage> = String::from_utf8(out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let ticks: Vec<&SqueezeTick> = msgs
        .iter()
        .filter_map(|m| match m {
            SqueezeMessage::Tick(t) => Some(t),
            _ => None,
        })
        .collect();
    let Some(SqueezeMessage::Done(done)) = msgs.last() else {
        panic!("ends with done: {msgs:?}")
    };
    assert_eq!(ticks.len(), 2, "one per second and the last 0.3 s");
    assert!((ticks[0].secs - 1.0).abs() < 0.1);
    let counted: u64 = ticks.iter().map(|t| t.ops).sum();
    assert_eq!(
        counted, done.moved.blocks,
        "every read counted in some second"
    );
    assert!(done.moved.blocks > 0 && done.laps >= 1);
    assert!(ticks.iter().all(|t| t.mem_current.is_none()));
    assert!(ticks[0].cpu_work > 0, "the companion ran");
}

#[test]
fn a_failure_is_reported_as_a_message() {
    let (_dir, path) = crate::testutil::file_with("tiny.bin", b"abc");
    let cfg = SqueezeWorker {
        path,
        method: ReadMethod::Pread,
        reads: SqueezeReads {
            pattern: SqueezePattern::Random,
            bs: 4096,
            threads: 1,
            depth: 1,
            seconds: 0.1,
            tick: 1.0,
            seed: 1,
        },
        group: None,
    };
    let mut out = Vec::new();
    run_worker(&cfg, &mut &b"go\n"[..], &mut out).unwrap();
    let m: SqueezeMessage = serde_json::from_str(String::from_utf8(out).unwrap().trim()).unwrap();
    match m {
        SqueezeMessage::Failed { error, unsupported } => {
            assert!(!unsupported);
            assert!(error.contains("smaller than one block"), "{error}");
        }
        other => panic!("{other:?}"),
    }
}
