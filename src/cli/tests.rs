use super::layers::{rust_files, sources};
use super::*;

/// A README command line as arguments: placeholders get sample values, `[optional]` parts
/// are kept, and `a\|b` alternatives give one variant each.
fn readme_variants(span: &str) -> Vec<Vec<String>> {
    let sample = |t: &str| -> String {
        let t = t
            .trim_matches(|c| c == '[' || c == ']')
            .trim_end_matches("...");
        match t {
            "FILE" | "FILES" | "f1..fN" => "f".into(),
            "N" | "BLOCK_COUNT" => "1".into(),
            "BLOCK_SIZE" | "S" => "4K".into(),
            "DIR" => "d".into(),
            "IP" => "127.0.0.1".into(),
            "RESULTS.json" => "r.json".into(),
            "COMMAND" => "read".into(),
            other => other.into(),
        }
    };
    let tokens: Vec<Vec<String>> = span
        .split_whitespace()
        .map(|t| {
            t.split("\\|")
                .map(sample)
                .filter(|t| !t.is_empty())
                .collect()
        })
        .filter(|alts: &Vec<String>| !alts.is_empty())
        .collect();
    let n = tokens.iter().map(Vec::len).max().unwrap_or(1);
    (0..n)
        .map(|i| {
            tokens
                .iter()
                .map(|alts| alts[i.min(alts.len() - 1)].clone())
                .collect()
        })
        .collect()
}

/// The `iolab ...` spans of a Markdown table's first column, under `heading` in `doc`.
fn table_commands(doc: &str, heading: &str) -> Vec<String> {
    let table = doc.split(heading).nth(1).expect("the section");
    let table = table
        .split("\n\n")
        .find(|p| p.contains("|---|"))
        .expect("its table");
    let mut lines = Vec::new();
    for row in table.lines().filter(|l| l.starts_with("| `iolab")) {
        let first = row
            .trim_start_matches("| ")
            .split(" | ")
            .next()
            .unwrap_or_default();
        lines.extend(
            first
                .split('`')
                .skip(1)
                .step_by(2)
                .filter(|c| c.starts_with("iolab "))
                .map(String::from),
        );
    }
    lines
}

/// Reports are typed documents: no code outside the renderers (`src/report/`) forks on the
/// output format, and no experiment or command writes a table by hand for one format.
#[test]
fn only_the_renderers_fork_on_the_output_format() {
    for (rel, text) in &sources() {
        if rel.starts_with("report/") || rel.ends_with("tests.rs") {
            continue;
        }
        for arm in [
            "Format::Csv =>",
            "Format::Markdown =>",
            "Format::Text =>",
            "Format::Json =>",
        ] {
            assert!(
                !text.contains(arm),
                "src/{rel} forks on the output format ({arm}): build a Document and let report::render write it"
            );
        }
        // The suite's report is Markdown alone (report.md, then HTML): its assembly writes it.
        if rel.starts_with("suite/") {
            continue;
        }
        for by_hand in ["markdown_table(", "csv_table(", "csv_line("] {
            assert!(
                !text.contains(by_hand),
                "src/{rel} writes a table by hand ({by_hand}..)): build a report::Table"
            );
        }
    }
}

/// One meaning per name: no two types of the library (structs, enums, traits, aliases) share a
/// name, and no folder's name is another's plural (`classic/` beside `classics/` once meant
/// `iolab run` and the course tables).
#[test]
fn no_name_means_two_things() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    let mut seen: std::collections::BTreeMap<String, String> = Default::default();
    for f in &files {
        let rel = f
            .strip_prefix(&root)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        for line in std::fs::read_to_string(f).unwrap().lines() {
            let rest = line
                .strip_prefix("pub ")
                .or_else(|| line.strip_prefix("pub(crate) "))
                .or_else(|| line.strip_prefix("pub(super) "))
                .unwrap_or(line);
            let Some(decl) = ["struct ", "enum ", "trait ", "type "]
                .iter()
                .find_map(|k| rest.strip_prefix(k))
            else {
                continue;
            };
            let name: String = decl
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if let Some(other) = seen.insert(name.clone(), rel.clone()) {
                panic!("{name} names a type in src/{other} and in src/{rel}");
            }
        }
    }
    assert!(seen.len() > 150, "only {} types seen", seen.len());
    let mut dirs = Vec::new();
    for f in &files {
        let mut d = f.parent();
        while let Some(p) = d.filter(|p| *p != root) {
            dirs.push(p.file_name().unwrap().to_string_lossy().into_owned());
            d = p.parent();
        }
    }
    for d in &dirs {
        assert!(
            !dirs.contains(&format!("{d}s")),
            "folders {d}/ and {d}s/: one word, two meanings"
        );
    }
}

/// No source comment cites a file the repository does not hold (the shared DESIGN.md is
/// beside the project, not in it), and no file is over 600 lines.
#[test]
fn sources_cite_what_exists_and_stay_small() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    assert!(files.len() > 50);
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        let rel = f
            .strip_prefix(&root)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        assert!(
            !text.contains(concat!("DESIGN ", "§")),
            "{rel} cites DESIGN"
        );
        // Smaller rooms: a file that grows past this is split by concern (docs/architecture.md).
        let lines = text.lines().count();
        assert!(lines <= 600, "{rel} has {lines} lines, over 600");
    }
}

/// Every relative link of README.md and docs/*.md names a file that exists.
#[test]
fn doc_links_resolve() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut docs = vec![root.join("README.md")];
    for e in std::fs::read_dir(root.join("docs")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "md") {
            docs.push(p);
        }
    }
    let mut checked = 0;
    for doc in &docs {
        let text = std::fs::read_to_string(doc).unwrap();
        for target in text.split("](").skip(1).filter_map(|t| t.split(')').next()) {
            let target = target.split('#').next().unwrap_or_default();
            if target.is_empty() || target.contains("://") {
                continue;
            }
            let path = doc.parent().unwrap().join(target);
            assert!(
                path.exists(),
                "{}: link to {target}, no such file",
                doc.display()
            );
            checked += 1;
        }
    }
    assert!(checked >= 10, "{checked} links");
}

/// README is short, says first what iolab answers and then the two set-up commands, and the
/// test command is the one CI runs.
#[test]
fn readme_is_short_and_starts_with_what_it_answers() {
    let readme = include_str!("../../README.md");
    assert!(
        readme.lines().count() <= 150,
        "README has {} lines",
        readme.lines().count()
    );
    let headings: Vec<&str> = readme.lines().filter(|l| l.starts_with("## ")).collect();
    assert_eq!(
        &headings[..2],
        ["## What it answers", "## Quick start"],
        "{headings:?}"
    );
    let quick = readme.split("## Quick start").nth(1).unwrap();
    let block = quick
        .split("```sh")
        .nth(1)
        .unwrap()
        .split("```")
        .next()
        .unwrap();
    let commands: Vec<&str> = block
        .lines()
        .map(|l| l.split('#').next().unwrap().trim())
        .filter(|l| !l.is_empty())
        .collect();
    assert_eq!(
        commands,
        ["cargo run --release -- suite", "cargo test --locked"]
    );
    let ci = include_str!("../../.ci/run");
    assert!(
        ci.lines().any(|l| l.trim() == commands[1]),
        ".ci/run does not run README's test command"
    );
    for section in ["## Install", "## Requirements", "## License"] {
        assert!(readme.contains(section), "README lacks {section}");
    }
}

/// The README's and docs/commands.md's command tables, and every example typed after `$ `
/// in docs/examples.md, parse; every command the user can see is in the README.
#[test]
fn readme_commands_exist_and_their_flags_parse() {
    let readme = include_str!("../../README.md");
    let examples = include_str!("../../docs/examples.md");
    let reference = include_str!("../../docs/commands.md");
    let mut named = std::collections::BTreeSet::new();
    let mut lines = table_commands(readme, "## Commands");
    assert!(lines.len() >= 18, "{lines:?}");
    let in_readme = lines.len();
    lines.extend(table_commands(reference, "## The commands"));
    // The examples, as typed after `$ ` (comments, redirections and other programs left out).
    for l in examples.lines().filter_map(|l| l.strip_prefix("$ ")) {
        for part in l.split(';') {
            let part = part.split('#').next().unwrap_or_default().trim();
            if let Some(rest) = part.strip_prefix("iolab ") {
                let args: Vec<&str> = rest
                    .split_whitespace()
                    .filter(|t| !t.contains('>') && *t != "&")
                    .collect();
                lines.push(format!("iolab {}", args.join(" ")));
            }
        }
    }
    assert!(lines.len() > in_readme + 20, "{lines:?}");
    for (i, line) in lines.iter().enumerate() {
        for args in readme_variants(line) {
            if i < in_readme {
                named.insert(args.get(1).cloned().unwrap_or_default());
            }
            if let Err(e) = Cli::try_parse_from(&args) {
                panic!("README's `{line}` as {args:?} does not parse: {e}");
            }
        }
    }
    // Every command the user can see is in the README.
    for c in super::command()
        .get_subcommands()
        .filter(|c| !c.is_hide_set())
    {
        let listed = named.contains(c.get_name()) || c.get_all_aliases().any(|a| named.contains(a));
        assert!(
            listed || c.get_name() == "calibrate",
            "README lacks `iolab {}`",
            c.get_name()
        );
    }
}

#[test]
fn schema_names_come_from_the_command() {
    assert_eq!(
        schema_name("/usr/bin/iolab read f.bin --format json"),
        "iolab-read/1"
    );
    assert_eq!(
        schema_name("iolab cache status d --format json"),
        "iolab-cache-status/1"
    );
    assert_eq!(schema_name("iolab run2 f 4K"), "iolab-run2/1");
    assert_eq!(schema_name("iolab"), "iolab-unknown/1");
}

#[test]
fn plain_progress_names_steps_and_their_durations() {
    assert_eq!(human_secs(4.24), "4.2 s");
    assert_eq!(human_secs(185.0), "3 min 5 s");
    assert_eq!(stage_name(3, 14, "run2"), "suite [3/14] run2");
    let started = Instant::now() - std::time::Duration::from_millis(1500);
    let line = ended_line(&("suite [3/14] run2".to_string(), started));
    assert!(
        line.starts_with("iolab: suite [3/14] run2: done in 1."),
        "{line}"
    );
    // Off a terminal, a step is remembered until the next one or the end.
    let p = Progress::new(false, ProgressMode::Auto);
    p.stage(1, 2, "data");
    p.progress("data", 3, 9);
    assert_eq!(
        p.state.lock().unwrap().stage.as_ref().unwrap().0,
        "suite [1/2] data"
    );
    assert!(
        p.state.lock().unwrap().work.is_none(),
        "no bars without a terminal"
    );
    p.clear();
    assert!(p.state.lock().unwrap().stage.is_none());
}

#[test]
fn command_definition_is_consistent() {
    super::command().debug_assert();
}

#[test]
fn every_command_with_rounds_takes_the_same_flags_with_its_own_defaults() {
    use super::rounds::round_defaults;
    use iolab::harness::Rounds;
    use std::time::Duration;
    let cmd = super::command();
    let with: Vec<&clap::Command> = cmd
        .get_subcommands()
        .filter(|s| s.get_arguments().any(|a| a.get_id() == "repeat"))
        .collect();
    let mut names: Vec<&str> = with.iter().map(|s| s.get_name()).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "access", "advise", "read", "replay", "sweep", "syscalls", "transfer", "vm", "write"
        ],
        "the commands with rounds"
    );
    // A command's own words before its file, and what it needs to accept rounds.
    let line = |name: &str, extra: &[&str]| -> Vec<String> {
        let mut v = vec!["iolab".to_string(), name.to_string()];
        v.extend(
            match name {
                "write" => vec!["f", "--size", "1M"],
                "syscalls" => vec![],
                "vm" => vec!["f", "--part-b"],
                _ => vec!["f"],
            }
            .into_iter()
            .chain(extra.iter().copied())
            .map(String::from),
        );
        v
    };
    let rounds_of = |name: &str, extra: &[&str]| -> Result<Rounds, clap::Error> {
        let m = super::command().try_get_matches_from(line(name, extra))?;
        let sub = m.subcommand_matches(name).unwrap();
        let args = <super::rounds::RoundArgs as clap::FromArgMatches>::from_arg_matches(sub)?;
        Ok(args.rounds(name))
    };
    for s in with {
        let name = s.get_name();
        let d = round_defaults(name).expect("a default for every command with rounds");
        // Nothing given: the table's default, and the help says it.
        assert_eq!(rounds_of(name, &[]).unwrap(), d, "{name}");
        let help = |id: &str| {
            let a = s.get_arguments().find(|a| a.get_id() == id).unwrap();
            a.get_help().unwrap().to_string()
        };
        assert!(
            help("warmup").ends_with(&format!("[default: {}]", d.warmup)),
            "{name}"
        );
        match d.budget {
            Some(b) => assert!(
                help("budget").ends_with(&format!("[default: {}s]", b.as_secs_f64())),
                "{name}: {}",
                help("budget")
            ),
            None => assert!(
                help("repeat").ends_with(&format!("[default: {}]", d.repeat)),
                "{name}"
            ),
        }
        // The same meaning everywhere: --repeat exactly, --budget adaptive, --warmup over both;
        // --repeat with --budget refused.
        let fixed = rounds_of(name, &["--repeat", "4", "--warmup", "2"]).unwrap();
        assert_eq!(fixed, Rounds::fixed(4, 2), "{name}");
        let capped = rounds_of(name, &["--budget", "7s"]).unwrap();
        assert_eq!(capped.budget, Some(Duration::from_secs(7)), "{name}");
        assert_eq!(capped.warmup, d.warmup, "{name}");
        assert!(
            rounds_of(name, &["--repeat", "2", "--budget", "7s"]).is_err(),
            "{name}"
        );
        assert!(rounds_of(name, &["--repeat", "0"]).is_err(), "{name}");
    }
    // `syscalls --samples`, its first spelling, is --repeat.
    assert_eq!(
        rounds_of("syscalls", &["--samples", "3"]).unwrap().repeat,
        3
    );
}

#[test]
fn every_command_with_rounds_decides_at_the_level_asked() {
    use super::rounds::{RoundArgs, round_defaults};
    use iolab::harness::Rounds;
    use std::time::Duration;
    let cmd = super::command();
    let mut seen = 0;
    for s in cmd.get_subcommands() {
        if !s.get_arguments().any(|a| a.get_id() == "repeat") {
            continue;
        }
        seen += 1;
        let name = s.get_name();
        let d = round_defaults(name).unwrap();
        let rounds_of = |extra: &[&str]| -> Result<Rounds, clap::Error> {
            let m = s.clone().try_get_matches_from(
                [name, "f", "--size", "1M", "--part-b"]
                    .iter()
                    .filter(|w| match **w {
                        "--size" | "1M" => name == "write",
                        "--part-b" => name == "vm",
                        "f" => name != "syscalls",
                        _ => true,
                    })
                    .chain(extra),
            )?;
            Ok(<RoundArgs as clap::FromArgMatches>::from_arg_matches(&m)?.rounds(name))
        };
        let help = s
            .get_arguments()
            .find(|a| a.get_id() == "level")
            .and_then(|a| a.get_help())
            .map(|h| h.to_string())
            .unwrap_or_default();
        // 95% unless given, in any spelling, within 80..99.9%, over any rounds.
        assert_eq!(d.level, iolab::measure::decide::LEVEL, "{name}");
        assert!(help.ends_with("[default: 95%]"), "{name}: {help}");
        assert_eq!(rounds_of(&["--level", "99.9%"]).unwrap().level, 0.999);
        for spelt in ["99", "99%", "0.99"] {
            let r = rounds_of(&["--level", spelt, "--repeat", "4"]).unwrap();
            let want = Rounds {
                level: 0.99,
                ..Rounds::fixed(4, d.warmup)
            };
            assert_eq!(r, want, "{name}");
        }
        let r = rounds_of(&["--level", "90", "--budget", "7s"]).unwrap();
        assert_eq!(
            (r.level, r.budget),
            (0.9, Some(Duration::from_secs(7))),
            "{name}"
        );
        for bad in ["50", "100", "99.99", "x", "-95", "nan"] {
            assert!(rounds_of(&["--level", bad]).is_err(), "{name} {bad}");
        }
    }
    assert_eq!(seen, 9);
}
