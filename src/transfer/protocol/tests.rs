use super::pace::seconds;
use super::*;

#[test]
fn a_peers_failure_reason_reaches_the_terminal_without_controls() {
    let wire = status_bytes(Some("disk full\u{202E}txt.exe\x1b[2J"));
    let st = read_status(&mut &wire[..]).unwrap();
    let why = st.reason.unwrap();
    assert_eq!(why, "disk full?txt.exe?[2J");
    assert!(!why.chars().any(crate::shown::is_hidden), "{why:?}");
}

#[test]
fn hello_round_trip_and_refusals() {
    let h = Hello {
        version: VERSION,
        flags: FLAG_TOKEN,
        nonce: [7; 16],
    };
    assert_eq!(Hello::decode(&h.encode()).unwrap(), h);
    let mut bad = h.encode();
    bad[0] = b'X';
    assert!(Hello::decode(&bad).unwrap_err().contains("magic"));
    let old = Hello { version: 0, ..h }.encode();
    assert!(Hello::decode(&old).unwrap_err().contains("version 0"));
}

#[test]
fn names_are_checked() {
    for ok in [
        "a.txt",
        "file 1",
        ".hidden",
        "x.y",
        "ünï",
        "a..b",
        "v1..2.tar",
    ] {
        assert!(check_name(ok.as_bytes()).is_ok(), "{ok}");
    }
    for bad in [
        "",
        ".",
        "..",
        "../x",
        "..hidden",
        "a/b",
        "/etc/passwd",
        "a\0b",
        "a\nb",
        "x/..",
        "cod\u{202E}txt.exe",
        "a\u{2066}b",
        "one\u{2028}two",
        "para\u{2029}graph",
        "zero\u{200B}width",
    ] {
        assert!(check_name(bad.as_bytes()).is_err(), "{bad:?}");
    }
    assert!(check_name(b".").unwrap_err().contains("directory itself"));
    assert!(check_name(&[b'a'; 256]).is_err());
    assert!(check_name(&[0xff, 0xfe]).is_err());
}

#[test]
fn header_round_trip_and_truncation() {
    let h = Header {
        name: "f".into(),
        size: 12,
    };
    let b = h.encode();
    match read_frame(&mut &b[..], "p").unwrap() {
        Frame::File(g) => assert_eq!(g, h),
        Frame::End => panic!("end"),
    }
    for cut in 1..b.len() {
        let e = read_frame(&mut &b[..cut], "p").unwrap_err();
        assert!(e.to_string().contains("truncated"), "{cut}: {e}");
    }
    assert!(matches!(
        read_frame(&mut &[FRAME_END][..], "p").unwrap(),
        Frame::End
    ));
    assert!(
        read_frame(&mut &[9u8][..], "p")
            .unwrap_err()
            .to_string()
            .contains("unknown frame")
    );
}

#[test]
fn decoder_never_panics_on_random_bytes() {
    let mut s = 1u64;
    for _ in 0..20_000 {
        let n = (crate::workload::splitmix64(&mut s) % 80) as usize;
        let mut b = vec![0u8; n];
        crate::workload::fill_random(&mut b, s);
        if n > 0 && s.is_multiple_of(2) {
            b[0] = FRAME_FILE;
        }
        let _ = read_frame(&mut &b[..], "fuzz");
        if b.len() >= HELLO_LEN {
            let _ = Hello::decode(b[..HELLO_LEN].try_into().unwrap());
        }
    }
}

#[test]
fn proofs_depend_on_token_role_and_both_nonces() {
    let (a, b) = ([1u8; 16], [2u8; 16]);
    let p = |t: &str, role: &[u8], x: &[u8; 16], y: &[u8; 16]| proof(t, role, x, y);
    assert_eq!(p("s", b"recv", &a, &b), p("s", b"recv", &a, &b));
    assert_ne!(p("s", b"recv", &a, &b), p("t", b"recv", &a, &b));
    assert_ne!(p("s", b"recv", &a, &b), p("s", b"send", &a, &b));
    assert_ne!(p("s", b"recv", &a, &b), p("s", b"recv", &[3; 16], &b));
    assert_ne!(p("s", b"recv", &a, &b), p("s", b"recv", &a, &[3; 16]));
    assert_ne!(p("s", b"recv", &a, &b), p("s", b"recv", &b, &a));
}

#[test]
fn deadlines_read_as_given() {
    assert_eq!(seconds(Duration::from_secs(10)), "10 s");
    assert_eq!(seconds(Duration::from_millis(500)), "0.5 s");
}

#[test]
fn session_tags_bind_frames_to_the_connection_and_their_order() {
    let (a, b) = ([1u8; 16], [2u8; 16]);
    let mut tx = Session::new(Some("tok"), &a, &b);
    let one = tx.seal(b"send", b"frame one");
    let two = tx.seal(b"send", b"frame two");
    assert_eq!(one.len(), 9 + TAG_LEN);
    // In order, with the same key: accepted.
    let mut rx = Session::new(Some("tok"), &a, &b);
    rx.open(&mut &one[9..], b"send", b"frame one", "p").unwrap();
    rx.open(&mut &two[9..], b"send", b"frame two", "p").unwrap();
    // Replayed, reordered, altered, another connection's nonces or another token: refused.
    let mut rx = Session::new(Some("tok"), &a, &b);
    assert!(rx.open(&mut &two[9..], b"send", b"frame two", "p").is_err());
    let mut rx = Session::new(Some("tok"), &a, &b);
    assert!(rx.open(&mut &one[9..], b"send", b"frame 0ne", "p").is_err());
    let mut rx = Session::new(Some("tok"), &a, &[9; 16]);
    assert!(rx.open(&mut &one[9..], b"send", b"frame one", "p").is_err());
    let mut rx = Session::new(Some("other"), &a, &b);
    assert!(rx.open(&mut &one[9..], b"send", b"frame one", "p").is_err());
    // Without a token nothing is added or read.
    let mut plain = Session::new(None, &a, &b);
    assert_eq!(plain.seal(b"send", b"x"), b"x");
    plain.open(&mut &[][..], b"send", b"x", "p").unwrap();
}

#[test]
fn a_digest_is_read_whole_or_refused_as_truncated() {
    let d = [5u8; DIGEST_LEN];
    assert_eq!(read_digest(&mut &d[..], "f", "p").unwrap(), d);
    for cut in 0..DIGEST_LEN {
        let e = read_digest(&mut &d[..cut], "f", "p")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(&format!("truncated checksum of f: {cut} of 32")),
            "{cut}: {e}"
        );
    }
}
