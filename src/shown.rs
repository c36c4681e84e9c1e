//! Names printed safely: a file name, a program's argument or a peer's words reach a terminal,
//! a table or a log line only escaped, so that no name can move the cursor, clear the screen,
//! start a new line in a one-line-per-item output or make itself display as another.
//!
//! A name that is valid UTF-8 with nothing to hide is shown as it is; any other is shown in
//! Bash's ANSI-C quoting (`$'...'`), which a user can paste back into a shell: bytes that are not
//! UTF-8 as `\xHH`, control characters as `\n`, `\e`, `\xHH`, and invisible format characters
//! (line and paragraph separators, bidirectional controls, zero-width characters) as `\uHHHH`.
//! (The `shell-quote` crate was tried: it passes U+2028, C1 controls and bidirectional controls
//! through raw, which is the case this module exists for.)

use std::borrow::Cow;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// A bidirectional text control: it makes what follows display in another order
/// (`"txt.exe"` shown as `"exe.txt"`).
pub fn is_bidi(c: char) -> bool {
    matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{200E}' | '\u{200F}' | '\u{061C}')
}

/// A character that must not reach a terminal or a line-based output raw: control characters
/// (C0, DEL, C1: escape sequences, new lines), bidirectional controls, the line and paragraph
/// separators U+2028/U+2029 (a new line to many readers), and invisible format characters
/// (zero-width, soft hyphen, byte-order mark, interlinear annotation).
pub fn is_hidden(c: char) -> bool {
    c.is_control()
        || is_bidi(c)
        || matches!(
            c,
            '\u{00AD}'
                | '\u{200B}'..='\u{200D}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{2060}'..='\u{2064}'
                | '\u{FEFF}'
                | '\u{FFF9}'..='\u{FFFB}'
        )
}

/// `s` as it is when nothing in it is hidden, otherwise `$'...'` with the hidden characters
/// escaped.
pub fn text(s: &str) -> Cow<'_, str> {
    if !s.chars().any(is_hidden) {
        return Cow::Borrowed(s);
    }
    let mut out = String::from("$'");
    push_escaped(s.as_bytes(), &mut out);
    out.push('\'');
    Cow::Owned(out)
}

/// Text bound for a terminal or a log, line by line: its new lines and tabs kept, every other
/// hidden character replaced by its escape (`\e`, `\xHH`, `\uHHHH`). The last guard on what
/// iolab prints, for words that did not pass through [`name`] on their way.
pub fn line(s: &str) -> Cow<'_, str> {
    if !s.chars().any(|c| is_hidden(c) && c != '\n' && c != '\t') {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        match c {
            '\n' | '\t' => out.push(c),
            '\x1b' => out.push_str(r"\e"),
            c if (c as u32) < 0x80 && is_hidden(c) => out.push_str(&format!("\\x{:02X}", c as u32)),
            c if is_hidden(c) => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// A name (a file name, an argument) as printed: as it is when it is UTF-8 with nothing hidden,
/// otherwise `$'...'`.
pub fn name(s: &OsStr) -> Cow<'_, str> {
    match s.to_str() {
        Some(t) => text(t),
        None => {
            let mut out = String::from("$'");
            push_escaped(s.as_bytes(), &mut out);
            out.push('\'');
            Cow::Owned(out)
        }
    }
}

/// A path as printed; see [`name`].
pub fn path(p: &Path) -> Cow<'_, str> {
    name(p.as_os_str())
}

/// One word of a command line as a shell would need it: as it is when it holds only characters
/// no shell treats specially, `'...'` when it is printable, `$'...'` otherwise.
pub fn word(s: &OsStr) -> String {
    let inert = |b: u8| b.is_ascii_alphanumeric() || b",./_-:@+=".contains(&b);
    let bytes = s.as_bytes();
    if !bytes.is_empty() && bytes.iter().all(|&b| inert(b)) {
        return String::from_utf8_lossy(bytes).into_owned();
    }
    match s.to_str() {
        Some(t) if !t.chars().any(is_hidden) => format!("'{}'", t.replace('\'', r"'\''")),
        _ => {
            let mut out = String::from("$'");
            push_escaped(bytes, &mut out);
            out.push('\'');
            out
        }
    }
}

/// Appends `bytes` in ANSI-C quoting's escapes (without the quotes).
fn push_escaped(bytes: &[u8], out: &mut String) {
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\\' => out.push_str(r"\\"),
                '\'' => out.push_str(r"\'"),
                '\n' => out.push_str(r"\n"),
                '\t' => out.push_str(r"\t"),
                '\r' => out.push_str(r"\r"),
                '\x1b' => out.push_str(r"\e"),
                c if (c as u32) < 0x80 && is_hidden(c) => {
                    out.push_str(&format!("\\x{:02X}", c as u32));
                }
                c if is_hidden(c) => out.push_str(&format!("\\u{:04X}", c as u32)),
                c => out.push(c),
            }
        }
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02X}"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::ffi::OsStrExt;

    #[test]
    fn plain_names_are_shown_as_they_are() {
        assert_eq!(text("data/file 1.bin"), "data/file 1.bin");
        assert_eq!(text("café ✓"), "café ✓");
        assert!(matches!(text("x"), Cow::Borrowed(_)));
    }

    #[test]
    fn nothing_hidden_reaches_the_output_raw() {
        let cases: &[(&[u8], &str)] = &[
            (b"a\x1b[2Jb", r"$'a\e[2Jb'"),
            (b"two\nlines", r"$'two\nlines'"),
            ("one\u{2028}two".as_bytes(), r"$'one\u2028two'"),
            ("txt\u{202E}exe".as_bytes(), r"$'txt\u202Eexe'"),
            ("c1\u{9b}31m".as_bytes(), r"$'c1\u009B31m'"),
            (b"bad\xffbyte", r"$'bad\xFFbyte'"),
            (b"it's\x07", r"$'it\'s\x07'"),
        ];
        for (raw, want) in cases {
            let got = name(OsStr::from_bytes(raw));
            assert_eq!(&got, want, "{raw:?}");
            assert!(!got.chars().any(is_hidden), "{got:?}");
        }
    }

    #[test]
    fn a_line_keeps_its_lines_and_loses_its_escapes() {
        assert_eq!(line("a\tb\nc"), "a\tb\nc");
        assert_eq!(line("red\x1b[31m\u{2028}x\x07"), r"red\e[31m\u2028x\x07");
        assert!(matches!(line("plain"), Cow::Borrowed(_)));
    }

    #[test]
    fn a_word_is_quoted_only_when_a_shell_needs_it() {
        let w = |b: &[u8]| word(OsStr::from_bytes(b));
        assert_eq!(w(b"--size=4K"), "--size=4K");
        assert_eq!(w(b"two words"), "'two words'");
        assert_eq!(w(b""), "''");
        assert_eq!(w(b"it's"), r"'it'\''s'");
        assert_eq!(w(b"\xff"), r"$'\xFF'");
        assert_eq!(w(b"a;rm -rf"), "'a;rm -rf'");
    }
}
