//! `fast` auto: the probe and the partly resident file, through the library. Each claim the
//! choice makes (this method measured fastest, these bytes read this way) is checked against the
//! figures it reports, and the XOR against an independent computation.

mod common;

use common::{bytes, plain_xor, write_file};
use iolab::cache;
use iolab::experiments::fast::{CHUNK, FastConfig, FastResult, run_fast};
use std::io::{Read, Seek, SeekFrom};

fn check_claims(r: &FastResult, size: u64) {
    let c = &r.choice;
    assert_eq!(r.bytes, size, "every byte read once");
    assert_eq!(
        c.uses.iter().map(|u| u.bytes).sum::<u64>(),
        size,
        "the parts cover the file: {c:?}"
    );
    // Probe slices are disjoint and inside the file (raced probes share one slice, block by
    // block; the others have slices of their own).
    let mut slices: Vec<(u64, u64)> = c
        .probes
        .iter()
        .filter(|p| !p.raced)
        .map(|p| (p.offset, p.offset + p.bytes))
        .collect();
    slices.sort_unstable();
    for w in slices.windows(2) {
        assert!(w[0].1 <= w[1].0, "overlapping probe slices {slices:?}");
    }
    assert!(slices.last().is_none_or(|s| s.1 <= size));
    // Each probed part is read by the candidate that measured fastest on it.
    for u in &c.uses {
        let mine: Vec<_> = c.probes.iter().filter(|p| p.warm == u.warm).collect();
        if mine.is_empty() {
            assert!(u.why.starts_with("rule"), "{}", u.why);
            continue;
        }
        if u.why.contains("inconclusive") {
            // A race where one side got too few blocks: the rule's candidate (the first) reads.
            assert_eq!(mine[0].plan.method, u.plan.method, "{}", u.why);
            continue;
        }
        let best = mine
            .iter()
            .max_by(|a, b| a.mib_s.total_cmp(&b.mib_s))
            .unwrap();
        assert_eq!(best.plan.method, u.plan.method, "{}", u.why);
        let word = if best.raced { "faster" } else { "fastest" };
        let said = format!("{} {word}", best.plan.method.name());
        assert!(u.why.contains(&said), "{}", u.why);
    }
    let wall = r.counters.wall.as_secs_f64();
    assert!(c.probe_cost_secs >= 0.0 && c.probe_cost_secs < wall);
    let probe_secs: f64 = c.probes.iter().map(|p| p.secs).sum();
    assert!(probe_secs <= wall, "the probe is inside the reported time");
    // The cost stated is what the part's own figures give: the probe's wall time, less the
    // winner's own start, beyond its other bytes at the winner's pace over the rest; the
    // probe's bytes are its slices' bytes, and
    // its wall time holds every slice (read one after another, or raced side by side).
    let mut total = 0.0;
    for u in &c.uses {
        let mine: Vec<_> = c.probes.iter().filter(|p| p.warm == u.warm).collect();
        if mine.is_empty() {
            assert_eq!(
                (u.probe_secs, u.probe_bytes, u.probe_cost_secs),
                (0.0, 0, 0.0)
            );
            assert_eq!((u.start_secs, u.start_bytes), (0.0, 0));
            continue;
        }
        // The winner's own start is left out of the cost only where it was the first candidate
        // of a non-resident part, probed from the part's start: then it is the first half of
        // that candidate's slice, read within its time.
        let first = mine[0];
        if !u.warm && !first.raced && first.plan == u.plan {
            assert!(
                u.start_bytes > 0 && u.start_bytes < first.bytes,
                "{u:?} {first:?}"
            );
            assert!(u.start_secs > 0.0 && u.start_secs < first.secs, "{u:?}");
        } else {
            assert_eq!((u.start_secs, u.start_bytes), (0.0, 0), "{u:?}");
        }
        assert_eq!(
            u.probe_bytes,
            mine.iter().map(|p| p.bytes).sum::<u64>(),
            "{u:?}"
        );
        let slices = if mine[0].raced {
            mine.iter().map(|p| p.secs).fold(0.0, f64::max)
        } else {
            mine.iter().map(|p| p.secs).sum()
        };
        assert!(
            u.probe_secs >= slices && u.probe_secs <= wall,
            "{u:?} {mine:?}"
        );
        // Computed here, not by the library's helper, so a wrong helper fails the test.
        let at_pace = if u.rest_mib_s > 0.0 {
            (u.probe_bytes - u.start_bytes) as f64 / (u.rest_mib_s * (1u64 << 20) as f64)
        } else {
            0.0
        };
        let want = (u.probe_secs - u.start_secs - at_pace).max(0.0);
        assert!((u.probe_cost_secs - want).abs() < 1e-9, "{u:?}");
        total += u.probe_cost_secs;
    }
    assert!((c.probe_cost_secs - total).abs() < 1e-9);
}

#[test]
fn a_warm_file_is_probed_and_read_by_the_faster_way() {
    let dir = tempfile::tempdir().unwrap();
    let data = bytes(64 << 20, 7);
    let f = write_file(dir.path(), "w", &data);
    let src = iolab::engine::open_source(&f).unwrap();
    cache::load(&src.file, src.size, &f).unwrap();
    let cfg = FastConfig {
        probe_from: 16 << 20,
        ..FastConfig::new(f.clone())
    };
    let r = run_fast(&cfg).unwrap();
    assert_eq!(r.xor, plain_xor(&data));
    check_claims(&r, data.len() as u64);
    if r.resident >= 0.999 {
        assert_eq!(r.choice.uses.len(), 1);
        assert!(r.choice.uses[0].warm);
        assert_eq!(
            r.choice.probes.len(),
            2,
            "mmap and pread tried: {:?}",
            r.choice
        );
        assert!(r.choice.probes.iter().all(|p| p.raced && p.warm));
        let raced: u64 = r.choice.probes.iter().map(|p| p.bytes).sum();
        assert!(raced > 0 && raced <= data.len() as u64);
    }
}

#[test]
fn a_partly_resident_file_reads_each_part_its_own_way_with_the_right_xor() {
    let dir = tempfile::tempdir().unwrap();
    let size = 160usize << 20;
    let data = bytes(size, 9);
    let f = write_file(dir.path(), "p", &data);
    let src = iolab::engine::open_source(&f).unwrap();
    let want = plain_xor(&data);
    for round in 0..2 {
        cache::evict(&src.file, &f, false).unwrap();
        // Bring the last 4 chunks back (readahead may add a little more before them).
        let mut h = std::fs::File::open(&f).unwrap();
        let from = size as u64 - 4 * CHUNK;
        h.seek(SeekFrom::Start(from)).unwrap();
        let mut sink = Vec::new();
        h.read_to_end(&mut sink).unwrap();
        let cfg = FastConfig {
            probe_from: if round == 0 { 64 << 20 } else { u64::MAX },
            ..FastConfig::new(f.clone())
        };
        let r = run_fast(&cfg).unwrap();
        assert_eq!(r.xor, want, "round {round}: {:?}", r.choice);
        check_claims(&r, size as u64);
        if r.resident > 0.0 && r.resident < 1.0 {
            let states: Vec<bool> = r.choice.uses.iter().map(|u| u.warm).collect();
            assert_eq!(states, vec![true, false], "{:?}", r.choice);
            let warm = &r.choice.uses[0];
            assert!(
                warm.bytes >= 4 * CHUNK && warm.bytes < size as u64 / 2,
                "{warm:?}"
            );
        }
        if round == 0 {
            // The cold part (over 96 MiB) had room for both slices: O_DIRECT and buffered tried,
            // unless O_DIRECT is refused here, which the reason then says.
            let cold: Vec<_> = r.choice.probes.iter().filter(|p| !p.warm).collect();
            assert!(!cold.is_empty(), "{:?}", r.choice);
            assert!(cold.len() == 2 || r.choice.reason.contains("skipped"));
        } else {
            assert!(r.choice.probes.is_empty(), "no probe below probe_from");
        }
    }
}

#[test]
fn a_warm_method_does_not_flip_while_the_profile_learns_and_stays_once_it_decides() {
    use iolab::engine::ReadMethod;
    use iolab::experiments::fast::profile::{FILE, LOOKS};
    let dir = tempfile::tempdir().unwrap();
    let data = bytes(48 << 20, 5);
    let f = write_file(dir.path(), "w", &data);
    let src = iolab::engine::open_source(&f).unwrap();
    let path = dir.path().join("cache").join(FILE);
    let cfg = FastConfig {
        probe_from: 16 << 20,
        profile: Some(path.clone()),
        ..FastConfig::new(f.clone())
    };
    let stored = || -> usize {
        std::fs::read(&path).map_or(0, |t| {
            let v: serde_json::Value = serde_json::from_slice(&t).unwrap();
            v["machines"][0]["races"].as_array().unwrap().len()
        })
    };
    let mut decided = None;
    for run in 0..40 {
        cache::load(&src.file, src.size, &f).unwrap();
        let before = stored();
        let r = run_fast(&cfg).unwrap();
        assert_eq!(r.xor, plain_xor(&data));
        if r.resident < 0.999 {
            continue;
        }
        let c = &r.choice;
        let learned = c.uses[0].profile.as_ref().expect("the profile is said");
        assert_eq!(
            (learned.path.as_path(), learned.races),
            (path.as_path(), before)
        );
        assert_eq!(learned.note, "", "{learned:?}");
        let raced = !c.probes.is_empty();
        if raced {
            // Learning: the rule's mmap reads whoever won this race, and a conclusive race is
            // kept (one more in the file).
            assert!(decided.is_none(), "a decided profile races no more: {c:?}");
            assert_eq!(c.method, ReadMethod::Mmap, "run {run}: {}", c.reason);
            assert!(c.reason.contains("learning this machine"), "{}", c.reason);
            let conclusive = !c.reason.contains("inconclusive");
            assert_eq!(stored(), before + usize::from(conclusive), "{}", c.reason);
            assert_eq!(learned.kept, conclusive);
            assert!(before < LOOKS[1], "no race after the last look");
        } else {
            // Decided (or settled on the rule) at a look, from the races kept: the same
            // method every run from then on, said with its interval.
            assert!(before >= LOOKS[0], "{before} races: {}", c.reason);
            assert!(c.reason.contains("this machine's profile"), "{}", c.reason);
            assert!(!learned.kept && stored() == before);
            let v = learned.verdict.expect("a look's verdict");
            assert!(
                c.reason.contains(&format!("{:.2}x", v.ratio)),
                "{}",
                c.reason
            );
            let want = learned.method.unwrap_or(ReadMethod::Mmap);
            assert_eq!(c.method, want);
            if let Some(m) = learned.method {
                // A winner's interval lies wholly on its side.
                assert_eq!(m == ReadMethod::Mmap, v.ci[0] >= 1.05, "{v:?}");
                assert_eq!(m == ReadMethod::Pread, v.ci[1] <= 1.0 / 1.05, "{v:?}");
            }
            if decided.replace(c.method).is_some_and(|d| d != c.method) {
                panic!("the decided method changed: {c:?}");
            }
            if run > 2 && decided.is_some() && stored() == before {
                let again = run_fast(&cfg).unwrap();
                assert_eq!(again.choice.method, c.method);
                assert!(again.choice.probes.is_empty());
                break;
            }
        }
    }
    assert!(decided.is_some(), "the profile decided by the last look");
}

#[test]
fn a_cold_method_is_the_rules_while_the_profile_learns_and_then_what_it_decided() {
    use iolab::engine::ReadMethod;
    use iolab::experiments::fast::profile::FILE;
    let dir = tempfile::tempdir().unwrap();
    if common::fs_type(dir.path()) == "tmpfs" {
        return common::skip(common::Lack::Machine, "tmpfs has no O_DIRECT to probe");
    }
    let data = bytes(96 << 20, 6);
    let f = write_file(dir.path(), "c", &data);
    let src = iolab::engine::open_source(&f).unwrap();
    let path = dir.path().join("cache").join(FILE);
    let cfg = FastConfig {
        probe_from: 16 << 20,
        profile: Some(path.clone()),
        ..FastConfig::new(f.clone())
    };
    let mut decided = None;
    for _ in 0..40 {
        cache::evict(&src.file, &f, false).unwrap();
        let r = run_fast(&cfg).unwrap();
        assert_eq!(r.xor, plain_xor(&data));
        if r.resident > 0.0 {
            continue;
        }
        let (c, u) = (&r.choice, &r.choice.uses[0]);
        let learned = u.profile.as_ref().expect("the profile is said");
        if !c.probes.is_empty() {
            assert!(decided.is_none(), "a decided profile probes no more: {c:?}");
            assert!(u.why.contains("learning this machine"), "{}", u.why);
            if !u.why.contains("skipped") {
                // Learning: O_DIRECT, the rule's, reads the part whoever was faster.
                assert_eq!(u.plan.method, ReadMethod::UringDirect, "{}", u.why);
            }
        } else {
            assert!(u.why.contains("this machine's profile"), "{}", u.why);
            assert!(!learned.kept);
            let want = learned.method.unwrap_or(ReadMethod::UringDirect);
            assert_eq!(u.plan.method, want, "{}", u.why);
            if decided.replace(want).is_some() {
                break;
            }
        }
    }
    assert!(decided.is_some(), "the profile decided by the last look");
}
