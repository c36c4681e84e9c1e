use super::report::{versus_text, with_interval};
use super::*;
use crate::measure::decide::{Decided, RatioKind};

#[test]
fn the_suite_files_group_into_the_course_inputs() {
    let dir = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    for (name, len) in [
        ("small00.txt", 10),
        ("small01.txt", 20),
        ("big.txt", 100),
        ("p4096_0.bin", 4096),
        ("p4097_0.bin", 4097),
        ("binary0.bin", 7),
        ("other.bin", 1),
    ] {
        let p = dir.path().join(name);
        std::fs::write(&p, vec![0u8; len]).unwrap();
        files.push(p);
    }
    let inputs = course_inputs(&files);
    let names: Vec<(&str, usize, u64)> = inputs
        .iter()
        .map(|i| (i.name.as_str(), i.files.len(), i.bytes))
        .collect();
    assert_eq!(
        names,
        [
            ("ten small texts", 2, 30),
            ("one 12 MB text", 1, 100),
            ("binary files", 1, 7),
            ("4 x 4096 bytes", 1, 4096),
            ("4 x 4097 bytes", 1, 4097),
        ]
    );
}

fn verdict(ratio: f64, ci: [f64; 2], decided: Decided, a_larger: Option<bool>) -> Verdict {
    Verdict {
        ratio,
        ci,
        level: 0.95,
        asked: 0.95,
        rounds: 8,
        kind: RatioKind::Paired,
        decided,
        a_larger,
    }
}

#[test]
fn the_time_ratio_is_the_rate_ratio_turned_over_and_says_what_the_interval_says() {
    // fcntl's rate half of mmap's: fcntl takes twice the time.
    let v = verdict(0.5, [0.4, 0.625], Decided::Winner, Some(false));
    assert_eq!(versus_text(Some(&v)), "2.00x (1.60-2.50, 95%) mmap faster");
    let v = verdict(1.02, [0.97, 1.04], Decided::Equivalent, None);
    assert!(versus_text(Some(&v)).ends_with(" within 5%"));
    let v = verdict(1.2, [0.9, 1.5], Decided::Undecided, None);
    assert!(versus_text(Some(&v)).ends_with(" undecided"));
    assert_eq!(versus_text(None), "not compared");
}

#[test]
fn a_median_shows_with_its_interval() {
    let s = crate::measure::stats::summarize(&[3.0, 1.0, 2.0]);
    assert_eq!(with_interval(&s, 1).shown(), "2.0 (1.0-3.0)");
    assert_eq!(with_interval(&Summary::default(), 1).shown(), "-");
}

/// Both inputs over loopback with both methods and both sizes: every row measured, the slave's
/// time covering the master's bytes, a verdict per input and sizes.
#[test]
fn the_course_inputs_run_with_both_methods_and_sizes() {
    let dir = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    for (name, len) in [("small00.txt", 2400usize), ("p4097_0.bin", 4097)] {
        let p = dir.path().join(name);
        std::fs::write(&p, vec![7u8; len]).unwrap();
        files.push(p);
    }
    let cfg = ClassicNetConfig {
        inputs: course_inputs(&files),
        sizes: vec![ChunkSizes::CLASSIC, ChunkSizes::default()],
        rounds: crate::harness::Rounds::fixed(crate::measure::decide::LOOKS[0], 0),
        program: None,
    };
    let r = run_classic_net(&cfg, &crate::experiments::Silent).unwrap();
    assert!(!r.processes);
    assert_eq!(r.rows.len(), 2 * 2 * 2);
    assert_eq!(r.versus.len(), 2 * 2);
    for row in &r.rows {
        assert!(row.slave_ms.n >= 1 && row.slave_ms.median > 0.0, "{row:?}");
        assert!(row.master_ms.median > 0.0, "{row:?}");
    }
    assert!(
        r.versus.iter().all(|v| v.verdict.is_some()),
        "{:?}",
        r.versus
    );
    let md = crate::report::render(&report::net_document(&r), crate::report::Format::Markdown);
    assert_eq!(md.matches("\n| ten small texts").count(), 2, "{md}");
    assert!(md.contains("x 0.0001"), "{md}");
}
