//! The architecture's rule on length, checked on the sources (docs/architecture.md): no function
//! over [`MAX_FUNCTION_LINES`], shown to fail on planted violations.

use super::layers::sources;

/// The longest a function may be, in lines from its `fn` to its closing brace
/// (docs/architecture.md): a longer one is split along the steps it already names.
const MAX_FUNCTION_LINES: usize = 100;

/// `code` with comments, strings and character literals blanked (newlines kept), so that only
/// the code's own braces and `fn`s remain; a lifetime (`'a`) is code.
fn code_only(code: &str) -> String {
    let c: Vec<char> = code.chars().collect();
    let mut out = String::with_capacity(code.len());
    let blank = |out: &mut String, s: &[char]| {
        out.extend(s.iter().map(|&ch| if ch == '\n' { '\n' } else { ' ' }));
    };
    let mut i = 0;
    while i < c.len() {
        let rest = &c[i..];
        let end = if rest.starts_with(&['/', '/']) {
            i + rest.iter().position(|&ch| ch == '\n').unwrap_or(rest.len())
        } else if rest.starts_with(&['/', '*']) {
            // Block comments nest in Rust.
            let (mut depth, mut j) = (0, i);
            while j < c.len() {
                if c[j..].starts_with(&['/', '*']) {
                    depth += 1;
                    j += 2;
                } else if c[j..].starts_with(&['*', '/']) {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            j
        } else if rest[0] == 'r'
            && rest.get(1).is_some_and(|&ch| ch == '"' || ch == '#')
            && (i == 0 || !(c[i - 1].is_alphanumeric() || c[i - 1] == '_'))
        {
            // r"..." or r#"..."#: ends at the quote followed by as many hashes.
            let hashes = rest[1..].iter().take_while(|&&ch| ch == '#').count();
            if rest.get(1 + hashes) != Some(&'"') {
                out.push(c[i]);
                i += 1;
                continue;
            }
            let mut close = vec!['"'];
            close.extend(std::iter::repeat_n('#', hashes));
            let from = i + 2 + hashes;
            (from..c.len())
                .find(|&j| c[j..].starts_with(&close))
                .map_or(c.len(), |j| j + close.len())
        } else if rest[0] == '"' {
            let mut j = i + 1;
            while j < c.len() && c[j] != '"' {
                j += if c[j] == '\\' { 2 } else { 1 };
            }
            j + 1
        } else if rest[0] == '\'' && rest.get(1) == Some(&'\\') {
            i + 2 + rest[2..].iter().position(|&ch| ch == '\'').unwrap_or(0) + 1
        } else if rest[0] == '\'' && rest.get(2) == Some(&'\'') {
            i + 3
        } else {
            out.push(c[i]);
            i += 1;
            continue;
        };
        let end = end.min(c.len());
        blank(&mut out, &c[i..end]);
        i = end;
    }
    out
}

/// The functions of `code` longer than `max` lines: each its name, first line and length.
fn long_functions(code: &str, max: usize) -> Vec<(String, usize, usize)> {
    let code = code_only(code);
    let lines: Vec<&str> = code.lines().collect();
    let mut long = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let words: Vec<&str> = line
            .split(|ch: char| !(ch.is_alphanumeric() || ch == '_'))
            .filter(|w| !w.is_empty())
            .collect();
        let Some(k) = words.iter().position(|w| *w == "fn") else {
            continue;
        };
        // A function item: `fn` first, or after its qualifiers.
        let quals = [
            "pub", "crate", "super", "self", "in", "const", "async", "unsafe", "extern",
        ];
        if !words[..k].iter().all(|w| quals.contains(w)) || !line.trim_start().starts_with(words[0])
        {
            continue;
        }
        let Some(name) = words.get(k + 1) else {
            continue;
        };
        let (mut depth, mut end) = (0usize, None);
        'scan: for (j, l) in lines.iter().enumerate().skip(i) {
            for ch in l.chars() {
                match ch {
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            end = Some(j);
                            break 'scan;
                        }
                    }
                    // A declaration without a body (in a trait).
                    ';' if depth == 0 => break 'scan,
                    _ => {}
                }
            }
        }
        if let Some(j) = end
            && j - i + 1 > max
        {
            long.push((name.to_string(), i + 1, j - i + 1));
        }
    }
    long
}

#[test]
fn no_function_is_longer_than_the_rule() {
    // Planted: a function of 101 lines is found, one of 100 is not; braces and `fn` in strings,
    // comments, raw strings and character literals are not code; a lifetime is.
    let body = |n: usize| {
        let mut s = String::from("fn f<'a>(x: &'a str) -> char {\n");
        s.push_str("    let _ = \"{ fn g() {\"; // }}}\n");
        s.push_str("    let _ = r#\"} \"fn\" {\"#; /* { /* } */ { */\n");
        for _ in 0..n - 5 {
            s.push_str("    let _ = '{';\n");
        }
        s.push_str("    '}'\n}\n");
        s
    };
    assert_eq!(body(101).lines().count(), 101);
    assert_eq!(
        long_functions(&body(101), MAX_FUNCTION_LINES),
        [("f".to_string(), 1, 101)]
    );
    assert!(long_functions(&body(100), MAX_FUNCTION_LINES).is_empty());
    assert!(long_functions("trait T {\n    fn f(&self);\n}\n", 1).is_empty());
    let long: Vec<String> = sources()
        .iter()
        .flat_map(|(rel, text)| {
            long_functions(text, MAX_FUNCTION_LINES)
                .into_iter()
                .map(move |(name, line, n)| format!("src/{rel}:{line} {name}: {n} lines"))
        })
        .collect();
    assert!(
        long.is_empty(),
        "functions over {MAX_FUNCTION_LINES} lines (split them along their steps): {long:#?}"
    );
}
