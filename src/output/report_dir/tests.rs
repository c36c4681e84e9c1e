use super::*;

#[test]
fn dirs_are_dated_when_taken_and_replaced_with_force() {
    let (dir, out) = crate::testutil::path_in("rep");
    // A report (what --force may replace carries the suite's schema tag).
    let files = vec![
        ("a.txt".to_string(), b"1".to_vec()),
        ("plots/p.svg".to_string(), b"<svg/>".to_vec()),
        (
            "results.json".to_string(),
            b"{\"schema\": \"iolab-suite/1\"}".to_vec(),
        ),
    ];
    assert_eq!(save_dir(&out, &files, false).unwrap(), out);
    assert_eq!(std::fs::read(out.join("plots/p.svg")).unwrap(), b"<svg/>");
    let second = save_dir(&out, &files, false).unwrap();
    assert_ne!(second, out);
    assert!(
        second
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("rep-20")
    );
    // Another in the same second never takes (and so never replaces) the same folder.
    let third = save_dir(&out, &files, false).unwrap();
    assert!(third != second && third != out, "{third:?}");
    assert!(out.join(MANIFEST).is_file() && third.join("a.txt").is_file());
    std::fs::remove_dir_all(&third).unwrap();
    let f2 = vec![("b.txt".to_string(), b"2".to_vec())];
    assert_eq!(save_dir(&out, &f2, true).unwrap(), out);
    assert!(!out.join("a.txt").exists() && out.join("b.txt").exists());
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        2,
        "no temporary directories left"
    );
    assert_eq!(timestamp().len(), 15);
}

#[test]
fn force_replaces_only_an_iolab_report() {
    let (dir, out) = crate::testutil::path_in("rep");
    let files = vec![(
        "results.json".to_string(),
        b"{\"schema\": \"iolab-suite/1\"}".to_vec(),
    )];
    // Someone's folder: --force must not delete it.
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("thesis.txt"), b"years of work").unwrap();
    let err = save_dir(&out, &files, true).unwrap_err();
    assert_eq!(err.exit_code(), 2, "{err}");
    assert_eq!(
        std::fs::read(out.join("thesis.txt")).unwrap(),
        b"years of work"
    );
    // A file as --out with --force: refused, and nothing left beside it.
    let f = dir.path().join("afile");
    std::fs::write(&f, b"x").unwrap();
    assert!(save_dir(&f, &files, true).is_err());
    assert_eq!(std::fs::read(&f).unwrap(), b"x");
    // An earlier report is replaced.
    let rep = dir.path().join("old-report");
    save_dir(&rep, &files, false).unwrap();
    assert!(is_iolab_report(&rep));
    // A file iolab wrote and no longer writes goes; a user's note beside the report stays.
    save_dir(
        &rep,
        &[
            files.clone(),
            vec![("plots/old.svg".to_string(), b"<svg/>".to_vec())],
        ]
        .concat(),
        true,
    )
    .unwrap();
    assert!(rep.join("plots/old.svg").exists());
    std::fs::write(rep.join("notes.txt"), b"my notes").unwrap();
    std::fs::write(rep.join("thesis.tex"), b"years of work").unwrap();
    assert_eq!(save_dir(&rep, &files, true).unwrap(), rep);
    assert!(!rep.join("plots/old.svg").exists());
    assert_eq!(std::fs::read(rep.join("notes.txt")).unwrap(), b"my notes");
    assert_eq!(
        std::fs::read(rep.join("thesis.tex")).unwrap(),
        b"years of work"
    );
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert!(
        names.iter().all(|n| !n.starts_with('.')),
        "temporaries left: {names:?}"
    );
    // An output whose parent does not exist is refused before any work.
    assert!(check_can_write(&dir.path().join("no/such/rep")).is_err());
    check_can_write(&dir.path().join("new-rep")).unwrap();
}

/// A report with one file at `rel`, written by iolab, and `out` forced over it later.
fn report(out: &Path, extra: &[(&str, &[u8])]) -> Vec<(String, Vec<u8>)> {
    let mut files = vec![(
        "results.json".to_string(),
        b"{\"schema\": \"iolab-suite/1\"}".to_vec(),
    )];
    files.extend(extra.iter().map(|(r, b)| (r.to_string(), b.to_vec())));
    save_dir(out, &files, false).unwrap();
    files
}

#[test]
fn a_link_inside_the_report_never_leads_a_removal_or_a_write_outside_it() {
    let top = tempfile::tempdir().unwrap();
    let (out, elsewhere) = (top.path().join("rep"), top.path().join("elsewhere"));
    std::fs::create_dir(&elsewhere).unwrap();
    std::fs::write(elsewhere.join("thesis.tex"), b"years of work").unwrap();
    std::fs::write(elsewhere.join("old.svg"), b"someone's plot").unwrap();
    let files = report(
        &out,
        &[
            ("docs/thesis.tex", b"iolab's"),
            ("plots/old.svg", b"<svg/>"),
        ],
    );
    // Someone with write access swaps the report's folders for links elsewhere, and lists
    // elsewhere's file by the hash of its content.
    std::fs::remove_dir_all(out.join("docs")).unwrap();
    std::os::unix::fs::symlink(&elsewhere, out.join("docs")).unwrap();
    let forged = format!(
        "b3:{} 13 docs/thesis.tex\n",
        blake3::hash(b"years of work").to_hex()
    );
    let mut m = std::fs::read_to_string(out.join(MANIFEST)).unwrap();
    m.push_str(&forged);
    std::fs::write(out.join(MANIFEST), m).unwrap();
    // A new report without that file: the listed file behind the link is not removed.
    save_dir(&out, &files[..1], true).unwrap();
    assert_eq!(
        std::fs::read(elsewhere.join("thesis.tex")).unwrap(),
        b"years of work"
    );
    // New plots where `plots` is a link elsewhere: refused, nothing written there.
    std::fs::remove_dir_all(out.join("plots")).unwrap();
    std::os::unix::fs::symlink(&elsewhere, out.join("plots")).unwrap();
    let err = save_dir(&out, &files, true).unwrap_err();
    assert!(err.to_string().contains("not a file iolab wrote"), "{err}");
    assert_eq!(
        std::fs::read(elsewhere.join("old.svg")).unwrap(),
        b"someone's plot"
    );
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 2);
    // The report itself a link to a folder: refused.
    let fake = top.path().join("fake");
    std::os::unix::fs::symlink(&out, &fake).unwrap();
    assert_eq!(
        save_dir(&fake, &files[..1], true).unwrap_err().exit_code(),
        2
    );
}

#[test]
fn only_files_still_as_iolab_wrote_them_are_removed_or_replaced() {
    let top = tempfile::tempdir().unwrap();
    let out = top.path().join("rep");
    let files = report(
        &out,
        &[
            ("report.md", b"iolab's report"),
            ("notes.md", b"iolab's notes"),
        ],
    );
    // The user edited one file iolab wrote, and a forged line lists their own file.
    std::fs::write(out.join("notes.md"), b"my edits").unwrap();
    std::fs::write(out.join("mine.txt"), b"mine").unwrap();
    let mut m = std::fs::read_to_string(out.join(MANIFEST)).unwrap();
    m.push_str("mine.txt\n");
    std::fs::write(out.join(MANIFEST), m).unwrap();
    // notes.md is no longer written: the edited file stays, as does the user's own.
    save_dir(&out, &files[..2], true).unwrap();
    assert_eq!(std::fs::read(out.join("notes.md")).unwrap(), b"my edits");
    assert_eq!(std::fs::read(out.join("mine.txt")).unwrap(), b"mine");
    // Writing notes.md again over the edited one is refused: it is the user's now.
    let err = save_dir(&out, &files, true).unwrap_err();
    assert!(err.to_string().contains("notes.md is there"), "{err}");
    assert_eq!(std::fs::read(out.join("notes.md")).unwrap(), b"my edits");
    // Every line of a manifest is read back as written.
    let text = manifest(&files);
    let parsed = parse(&text);
    assert_eq!(parsed.len(), 3);
    assert_eq!(parsed[1].rel, "report.md");
    assert_eq!(parsed[1].written.as_ref().unwrap().1, 14);
    assert_eq!(parse("results.json\n")[0].written, None);
}

#[test]
fn a_temporary_name_taken_by_a_link_makes_nothing_elsewhere() {
    let top = tempfile::tempdir().unwrap();
    let (out, elsewhere) = (top.path().join("rep"), top.path().join("elsewhere"));
    std::fs::create_dir(&elsewhere).unwrap();
    let tmp = temp_path(&out, "dir").unwrap();
    std::os::unix::fs::symlink(&elsewhere, &tmp).unwrap();
    let files = vec![("results.json".to_string(), b"{}".to_vec())];
    assert!(save_dir(&out, &files, false).is_err());
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
    assert!(!out.exists());
    // A path that leaves the folder is refused before anything is made.
    let bad = vec![("../escape".to_string(), b"x".to_vec())];
    assert!(save_dir(&top.path().join("rep2"), &bad, false).is_err());
    assert!(!top.path().join("escape").exists() && !top.path().join("rep2").exists());
}
