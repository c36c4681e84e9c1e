use super::phases::expected;
use super::*;

/// Two segments of 4 KiB blocks in 1 KiB transfers, shared file, write and read, at `path`.
fn config(path: PathBuf) -> IorConfig {
    IorConfig {
        api: IorApi::Posix,
        block: 4096,
        transfer: 1024,
        segments: 2,
        file_per_proc: false,
        reorder: false,
        reorder_offset: 1,
        tasks_per_node: None,
        fsync: false,
        write: true,
        read: true,
        iterations: 1,
        stonewall: None,
        path,
        keep: false,
        seed: 1,
        verify: true,
    }
}

fn phase(start: f64, end: f64, bytes: u64) -> RankPhase {
    RankPhase {
        open_start: start,
        open_end: start + 0.1,
        xfer_end: end - 0.1,
        close_end: end,
        bytes,
        transfers: bytes / 1024,
        ..RankPhase::default()
    }
}

#[test]
fn bandwidth_is_all_bytes_over_first_start_to_last_end() {
    let mib = 1_048_576;
    let p = PhaseResult::of("write", 0, vec![phase(0.0, 1.0, mib), phase(0.5, 2.0, mib)]);
    assert!((p.mib_s - 1.0).abs() < 1e-9, "2 MiB over 2 s: {}", p.mib_s);
    assert!((p.total_s - 2.0).abs() < 1e-9);
    assert_eq!(p.slowest_rank, 1);
    assert!((p.slowest_ratio - 1.5).abs() < 1e-9);
    assert!((p.open_s - 0.1).abs() < 1e-9);
    assert!((p.xfer_s - 1.3).abs() < 1e-9, "{}", p.xfer_s);
}

#[test]
fn an_unchecked_rank_makes_the_phase_unchecked_not_verified() {
    let rank = |xor| RankPhase {
        xor,
        expected_xor: 7,
        ..phase(0.0, 1.0, 1024)
    };
    let ok = PhaseResult::of("read", 0, vec![rank(Some(7)), rank(Some(7))]);
    assert!(ok.checked() && ok.verified() && ok.xor == Some(0));
    let bad = PhaseResult::of("read", 0, vec![rank(Some(7)), rank(Some(6))]);
    assert!(bad.checked() && !bad.verified() && bad.xor == Some(1));
    let none = PhaseResult::of("read", 0, vec![rank(Some(7)), rank(None)]);
    assert!(!none.checked() && !none.verified() && none.xor.is_none());
    // Gathered between ranks as numbers, an absent XOR stays absent.
    for r in [rank(Some(0xffff_ffff)), rank(None)] {
        assert_eq!(RankPhase::from_slice(&r.to_vec()), r);
    }
}

#[test]
fn ranks_cover_the_file_once_in_ior_order() {
    let cfg = config("f".into());
    let mut all: Vec<u64> = (0..3).flat_map(|r| cfg.offsets(r, 3)).collect();
    assert_eq!(cfg.offsets(1, 3).next(), Some(4096), "segment 0, rank 1");
    assert_eq!(
        cfg.offsets(0, 3).nth(4),
        Some(3 * 4096),
        "rank 0's second segment"
    );
    all.sort();
    let want: Vec<u64> = (0..24).map(|i| i * 1024).collect();
    assert_eq!(all, want);
    assert_eq!(cfg.file_of(2), PathBuf::from("f"));
    let fpp = IorConfig {
        file_per_proc: true,
        ..cfg.clone()
    };
    assert_eq!(fpp.file_of(2), PathBuf::from("f.00000002"));
    assert_eq!(
        fpp.offsets(2, 3).collect::<Vec<_>>(),
        (0..8).map(|i| i * 1024).collect::<Vec<_>>()
    );
    // The expected XOR is the XOR of the bytes the definition places.
    let data = cfg.data(1);
    let mut buf = data.base();
    let head: [u8; 8] = buf[..8].try_into().unwrap();
    let mut x = 0;
    for o in cfg.offsets(1, 3) {
        x ^= xor_at(o, data.place(&mut buf, &head, o, 1024));
    }
    assert_eq!(expected(&cfg, 1, 3, 8), x);
    assert!(
        IorConfig {
            transfer: 1000,
            ..cfg.clone()
        }
        .check()
        .is_err()
    );
}

/// Two jobs on one `-o` cannot both start: without `--force` the create is exclusive (of
/// runs started side by side exactly one takes the file), and with it a file another job
/// holds is refused; a refused claim leaves the other job's file alone.
#[test]
fn one_job_at_a_time_takes_a_test_file() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = IorConfig {
        segments: 1,
        ..config(dir.path().join("t"))
    };
    for _ in 0..20 {
        let won = std::thread::scope(|s| {
            let a = s.spawn(|| cfg.claim_targets(&Solo, false));
            let b = s.spawn(|| cfg.claim_targets(&Solo, false));
            let (a, b) = (a.join().unwrap(), b.join().unwrap());
            assert!(a.is_ok() != b.is_ok(), "{a:?} {b:?}");
            let lost = if a.is_ok() { &b } else { &a };
            assert!(
                lost.as_ref().unwrap_err().to_string().contains("exists"),
                "{lost:?}"
            );
            a.or(b).unwrap()
        });
        let forced = cfg.claim_targets(&Solo, true).unwrap_err();
        assert!(forced.to_string().contains("another iolab ior"), "{forced}");
        assert!(cfg.path.exists(), "the holder's file stays");
        drop(won);
        let again = cfg.claim_targets(&Solo, true).unwrap();
        drop(again);
        std::fs::remove_file(&cfg.path).unwrap();
    }
}
