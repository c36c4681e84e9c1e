use super::*;

fn tick(t: f64, streaming: bool, kiops: f64, resident: f64) -> PolluteTick {
    PolluteTick {
        t,
        secs: 0.5,
        streaming,
        hot_kiops: kiops,
        hot_p99_us: Some(if streaming { 900.0 } else { 3.0 }),
        hot_resident_pct: Some(resident),
        stream_mib_s: if streaming { 800.0 } else { 0.0 },
        group_refaults: Some(if streaming { 1000 } else { 0 }),
        ..Default::default()
    }
}

#[test]
fn the_reader_start_and_the_streams_first_half_are_left_out() {
    let mut ticks = vec![tick(0.5, false, 50.0, 100.0)];
    ticks.extend((2..5).map(|i| tick(i as f64 * 0.5, false, 300.0, 100.0)));
    // The hot set slides for the first half of the stream, then holds.
    ticks.extend((5..9).map(|i| tick(i as f64 * 0.5, true, 1000.0 / i as f64, 90.0)));
    ticks.extend((9..13).map(|i| tick(i as f64 * 0.5, true, 20.0 + i as f64, 40.0)));
    let e = effect(&ticks).unwrap();
    assert_eq!((e.hot_alone.n, e.hot_kiops.n, e.ticks), (3, 4, 4));
    assert_eq!(e.hot_alone.median, 300.0);
    assert!(e.hot_kiops.max < 33.0, "{:?}", e.hot_kiops);
    assert_eq!(e.hot_resident_pct, Some(40.0));
    assert_eq!(e.hot_resident_min_pct, Some(40.0));
    assert_eq!((e.hot_p99_us, e.hot_p99_alone_us), (Some(900.0), Some(3.0)));
    assert_eq!(e.refaults_per_s, Some(2000.0));
    // Too few stream ticks: nothing to say.
    assert!(effect(&ticks[..6]).is_none());
}

#[test]
fn settings_that_cannot_give_a_result_are_refused() {
    let ok = PolluteConfig::new("f".into(), 512 << 20, "iolab".into());
    assert!(check(&ok).is_ok());
    for bad in [
        PolluteConfig {
            reads: vec![],
            writes: vec![],
            ..ok.clone()
        },
        PolluteConfig {
            tick: 0.01,
            ..ok.clone()
        },
        PolluteConfig {
            before: 0.5,
            ..ok.clone()
        },
        PolluteConfig {
            stream_bs: 1000,
            ..ok.clone()
        },
        PolluteConfig {
            passes: 0,
            ..ok.clone()
        },
    ] {
        assert_eq!(check(&bad).unwrap_err().kind, ErrorKind::Usage, "{bad:?}");
    }
}
