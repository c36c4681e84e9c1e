//! The architecture's rules, checked on the sources (docs/architecture.md): the layering of
//! the library's modules (grouped imports and folders' inner files included), no circle
//! between the files of one folder, and modules meant apart naming nothing of each other; each
//! check shown to fail on a planted violation (the rule on length is `lengths.rs`).

/// The library's layers, top to bottom: a module imports only from layers below its own, so
/// data flows one way and no two modules need each other (docs/architecture.md).
const LAYERS: &[(&str, &[&str])] = &[
    (
        "the main job: the registry, the runner, the report",
        &["suite"],
    ),
    (
        "the experiments, and the suite's contract with them",
        &["experiments"],
    ),
    ("tables and plots of typed results", &["report"]),
    (
        "the harness: declared cells, rounds, verdicts",
        &["harness"],
    ),
    ("the transfer protocol and both sides", &["transfer"]),
    (
        "how bytes move, a mapping's memory, a program's I/O",
        &["engine", "vm", "trace"],
    ),
    ("the page cache", &["cache"]),
    ("outputs and blocks", &["output", "workload"]),
    (
        "sizes, XOR, leftovers, counters, the file read",
        &["size", "xor", "clean", "measure", "source"],
    ),
    ("errors, names, system calls", &["error", "names", "sys"]),
    ("names printed safely", &["shown"]),
];

/// The layer of top-level module `m` (0 is the top), if it is one of the library's.
fn layer_of(m: &str) -> Option<usize> {
    LAYERS.iter().position(|(_, mods)| mods.contains(&m))
}

/// Every `.rs` file under src/: its path there (`trace/ops.rs`) and its text.
pub(super) fn sources() -> Vec<(String, String)> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    files
        .iter()
        .map(|f| {
            let rel = f
                .strip_prefix(&root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            (rel, std::fs::read_to_string(f).unwrap())
        })
        .collect()
}

/// Every `.rs` file under `dir`.
pub(super) fn rust_files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The top-level modules `code` names through `crate::`, each once per mention: `crate::a::X`
/// names `a`; a group `crate::{a::X, b::{Y, Z}}` names `a` and `b`.
fn crate_modules(code: &str) -> Vec<String> {
    let word = |s: &str| -> String {
        s.trim_start()
            .chars()
            .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_')
            .collect()
    };
    let mut out = Vec::new();
    for (i, _) in code.match_indices("crate::") {
        let rest = &code[i + 7..];
        let Some(group) = rest.strip_prefix('{') else {
            out.push(word(rest));
            continue;
        };
        // The group's entries at its own depth, up to its closing brace.
        let (mut depth, mut start) = (0usize, 0usize);
        for (j, c) in group.char_indices() {
            match c {
                '{' => depth += 1,
                '}' if depth == 0 => {
                    out.push(word(&group[start..j]));
                    break;
                }
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    out.push(word(&group[start..j]));
                    start = j + 1;
                }
                _ => {}
            }
        }
    }
    out.retain(|m| !m.is_empty());
    out
}

/// The imports of file `rel` (under src/) that go up or sideways in the layering, each said;
/// and how many of its imports name a layered module.
fn layer_violations(rel: &str, code: &str) -> (usize, Vec<String>) {
    let top = rel.split('/').next().unwrap().trim_end_matches(".rs");
    let Some(here) = layer_of(top) else {
        return (0, Vec::new());
    };
    let mut imports = 0;
    let mut wrong = Vec::new();
    for name in crate_modules(code) {
        let Some(there) = layer_of(&name) else {
            continue;
        };
        imports += 1;
        if name != top && there <= here {
            wrong.push(format!(
                "src/{rel} ({}) imports {name} ({}): a module imports only from layers below its own",
                LAYERS[here].0, LAYERS[there].0
            ));
        }
    }
    (imports, wrong)
}

/// The layering check sees grouped imports and imports in a folder's inner files, and fails on
/// a planted violation of each kind.
#[test]
fn the_layering_check_fails_on_planted_violations() {
    assert_eq!(
        crate_modules("use crate::{sys::a, cache::{B, c::D}};\nlet x = crate::size::parse(s);"),
        ["sys", "cache", "size"]
    );
    // The page cache (a low layer) importing the experiments, plainly and in a group.
    let (_, plain) = layer_violations("cache/inner/x.rs", "use crate::experiments::X;");
    assert_eq!(plain.len(), 1, "{plain:?}");
    let (n, grouped) = layer_violations("cache/x.rs", "use crate::{sys::Y, experiments::{A, B}};");
    assert_eq!((n, grouped.len()), (2, 1), "{grouped:?}");
    assert!(grouped[0].contains("imports experiments"), "{grouped:?}");
    // Downward imports pass.
    let (_, fine) = layer_violations("experiments/x/y.rs", "use crate::{cache::A, sys::B};");
    assert!(fine.is_empty(), "{fine:?}");
}

/// Each rule of the layering, checked on every import of the library: every top-level module
/// has a layer; `crate::X` in a module of layer L names an X of a layer below L (tests
/// excepted: they may reach up for fixtures). Then: nothing but the harness and the `cache`
/// command puts a file into a cache state.
#[test]
fn imports_flow_down_the_layers_and_only_the_harness_prepares_the_cache() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut tops = Vec::new();
    for e in std::fs::read_dir(&root).unwrap() {
        let name = e.unwrap().file_name().to_string_lossy().into_owned();
        let m = name.trim_end_matches(".rs").to_string();
        if !["main", "lib", "cli", "testutil"].contains(&m.as_str()) {
            tops.push(m);
        }
    }
    for m in &tops {
        assert!(layer_of(m).is_some(), "src/{m} has no layer in LAYERS");
    }
    let mut imports = 0;
    for (rel, text) in &sources() {
        let top = rel.split('/').next().unwrap().trim_end_matches(".rs");
        if layer_of(top).is_none() || rel.ends_with("tests.rs") {
            continue;
        }
        let code = text.split("#[cfg(test)]\nmod tests {").next().unwrap();
        let (n, wrong) = layer_violations(rel, code);
        imports += n;
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
        if !(rel.starts_with("harness/")
            || rel.starts_with("cache/")
            || rel.starts_with("experiments/page_cache/"))
        {
            // Loading too: only pollute's worker loads its hot set itself, inside its memory
            // cgroup so that the pages are charged there (the harness's child protocol).
            let load = (rel != "experiments/pollute/worker.rs").then_some("cache::load(");
            for call in [
                "cache::prepare(",
                "cache::evict(",
                "cache::drop_all_caches(",
            ]
            .into_iter()
            .chain(load)
            {
                assert!(
                    !code.contains(call),
                    "src/{rel} calls {call}..): a cell declares its cache state and the harness puts it in place"
                );
            }
        }
    }
    assert!(imports > 300, "only {imports} imports seen");
}

/// Every module path `code` names (each a list of segments, absolute from the crate), from
/// `crate::`, `super::` and `self::` paths, groups expanded; `module` is the file's own path.
/// Line comments are left out.
fn named_paths(code: &str, module: &[String]) -> Vec<Vec<String>> {
    let code: String = code
        .lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n");
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    // The segments of a path at the start of `s`, groups expanded, each after `prefix`.
    fn expand(s: &str, prefix: Vec<String>, out: &mut Vec<Vec<String>>) {
        let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
        let mut segs = prefix;
        let mut rest = s;
        loop {
            rest = rest.trim_start();
            if let Some(g) = rest.strip_prefix('{') {
                let (mut depth, mut start) = (0usize, 0usize);
                for (j, c) in g.char_indices() {
                    match c {
                        '{' => depth += 1,
                        '}' if depth == 0 => {
                            expand(&g[start..j], segs.clone(), out);
                            return;
                        }
                        '}' => depth -= 1,
                        ',' if depth == 0 => {
                            expand(&g[start..j], segs.clone(), out);
                            start = j + 1;
                        }
                        _ => {}
                    }
                }
                return;
            }
            let w: String = rest.chars().take_while(|c| ident(*c)).collect();
            if w.is_empty() {
                break;
            }
            rest = &rest[w.len()..];
            segs.push(w);
            match rest.strip_prefix("::") {
                Some(r) => rest = r,
                None => break,
            }
        }
        out.push(segs);
    }
    let mut out = Vec::new();
    for start in ["crate::", "super::", "self::"] {
        for (i, _) in code.match_indices(start) {
            if code[..i].chars().next_back().is_some_and(ident) {
                continue;
            }
            // Where the path starts, as absolute segments.
            let mut base: Vec<String> = match start {
                "crate::" => Vec::new(),
                "self::" => module.to_vec(),
                _ => module[..module.len().saturating_sub(1)].to_vec(),
            };
            let mut rest = &code[i + start.len()..];
            while let Some(r) = rest.strip_prefix("super::") {
                base.pop();
                rest = r;
            }
            expand(rest, base, &mut out);
        }
    }
    out
}

/// The module path of a file under src/ (`replay/plan/tests.rs` is replay::plan::tests;
/// `replay/mod.rs` is replay).
fn module_of(rel: &str) -> Vec<String> {
    let mut segs: Vec<String> = rel
        .trim_end_matches(".rs")
        .split('/')
        .map(String::from)
        .collect();
    if segs.last().is_some_and(|s| s == "mod") {
        segs.pop();
    }
    segs
}

/// The circles between the files (and inner folders) of one folder: for each folder, an edge
/// from one child to another when a file of the first names the second; each circle as its
/// children's names, `a -> b -> a`.
fn folder_circles(files: &[(String, String)]) -> Vec<String> {
    use std::collections::{BTreeMap, BTreeSet};
    // folder path -> child -> children it names.
    let mut edges: BTreeMap<Vec<String>, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for (rel, code) in files {
        let module = module_of(rel);
        for path in named_paths(code, &module) {
            // Every folder above the file that the path points into.
            for k in 1..module.len() {
                let folder = &module[..k];
                if path.len() <= k || path[..k] != *folder || module.len() <= k {
                    continue;
                }
                let (from, to) = (&module[k], &path[k]);
                // A folder's own file (mod.rs) is no child; a name inside the same child is
                // no edge.
                if from != to {
                    edges
                        .entry(folder.to_vec())
                        .or_default()
                        .entry(from.clone())
                        .or_default()
                        .insert(to.clone());
                }
            }
        }
    }
    let mut circles = BTreeSet::new();
    for (folder, g) in &edges {
        // Each child's reach; a circle where a child reaches itself.
        for start in g.keys() {
            let mut stack = vec![(start.clone(), vec![start.clone()])];
            let mut seen = BTreeSet::new();
            while let Some((at, trail)) = stack.pop() {
                for next in g.get(&at).into_iter().flatten() {
                    if next == start {
                        let mut c = trail.clone();
                        // Named from its smallest child, so each circle is said once.
                        let m = (0..c.len()).min_by_key(|&i| c[i].clone()).unwrap();
                        c.rotate_left(m);
                        let first = c[0].clone();
                        c.push(first);
                        circles.insert(format!("{}: {}", folder.join("/"), c.join(" -> ")));
                    } else if seen.insert(next.clone()) {
                        let mut t = trail.clone();
                        t.push(next.clone());
                        stack.push((next.clone(), t));
                    }
                }
            }
        }
    }
    circles.into_iter().collect()
}

#[test]
fn no_circle_between_the_files_of_a_folder() {
    // Planted: two files of one folder naming each other (plainly, through a group, and from
    // a file of an inner folder) are found; a file naming its folder's mod.rs is not.
    let planted = [
        ("m/a.rs".to_string(), "use super::b::X;".to_string()),
        ("m/b.rs".to_string(), "use crate::m::{a::Y, c};".to_string()),
        (
            "m/c/d.rs".to_string(),
            "fn f() { super::super::e::g(); }".to_string(),
        ),
        (
            "m/e.rs".to_string(),
            "use super::c::d::Z;\nuse super::Top;".to_string(),
        ),
    ];
    assert_eq!(
        folder_circles(&planted),
        ["m: a -> b -> a", "m: c -> e -> c"],
        "{:?}",
        named_paths("use crate::m::{a::Y, c};", &module_of("m/b.rs"))
    );
    let files: Vec<(String, String)> = sources()
        .into_iter()
        .filter(|(rel, _)| !rel.ends_with("tests.rs"))
        .map(|(rel, text)| {
            let code = text.split("#[cfg(test)]").next().unwrap().to_string();
            (rel, code)
        })
        .collect();
    let circles = folder_circles(&files);
    // Known circles, each to be broken: the list may only shrink, and is empty. The check found
    // 14, all broken (replay's plan, report, thread and suite; host and host_io; decide and
    // stats; access and advise; trace's ops, timing and tracer: a thread's I/O counters read by
    // `KernelIo::of_thread`, a timed call's entry beside the other calls' in ops; the
    // receiver's small checks shared by splice and storing, in receiver.rs; a recommendation's
    // type in recommend.rs, the profile with its advice made by advice; the rings the trace
    // keeps in rings.rs, read by uring.rs).
    let known: [&str; 0] = [];
    let gone: Vec<&&str> = known
        .iter()
        .filter(|k| !circles.iter().any(|c| c == *k))
        .collect();
    assert!(
        gone.is_empty(),
        "broken since: take them off the list: {gone:?}"
    );
    let new: Vec<&String> = circles
        .iter()
        .filter(|c| !known.contains(&c.as_str()))
        .collect();
    assert!(
        new.is_empty(),
        "circles between files of a folder: {new:#?}"
    );
}

/// Modules that stand beside each other and share only what their parent holds: neither names
/// the other (the two tracers each fill the trace's neutral record, `trace/record.rs`, with
/// state of their own).
const APART: &[(&str, &str)] = &[("trace::ptrace", "trace::ebpf")];

/// Each file of one module of an [`APART`] pair that names the other, as `file -> path`.
fn apart_violations(files: &[(String, String)], pairs: &[(&str, &str)]) -> Vec<String> {
    let segs = |m: &str| m.split("::").map(String::from).collect::<Vec<_>>();
    let mut out = Vec::new();
    for (rel, code) in files {
        let module = module_of(rel);
        for &(a, b) in pairs {
            for (own, other) in [(segs(a), segs(b)), (segs(b), segs(a))] {
                if !module.starts_with(&own) {
                    continue;
                }
                for path in named_paths(code, &module) {
                    if path.starts_with(&other) {
                        out.push(format!("{rel} -> {}", path.join("::")));
                    }
                }
            }
        }
    }
    out
}

#[test]
fn the_two_tracers_name_nothing_of_each_other() {
    // Planted: a file of one naming the other, through a group and through `super`, is found;
    // both naming their parent is not.
    let planted = [
        (
            "m/a/x.rs".to_string(),
            "use crate::m::{b::Y, r::R};".to_string(),
        ),
        (
            "m/b/mod.rs".to_string(),
            "fn f() { super::a::x::g(); }".to_string(),
        ),
        ("m/b/y.rs".to_string(), "use crate::m::r::R;".to_string()),
    ];
    assert_eq!(
        apart_violations(&planted, &[("m::a", "m::b")]),
        ["m/a/x.rs -> m::b::Y", "m/b/mod.rs -> m::a::x::g"]
    );
    let files = sources();
    let found = apart_violations(&files, APART);
    assert!(
        found.is_empty(),
        "modules meant apart name each other: {found:#?}"
    );
    // Both exist: a pair renamed away would pass unseen.
    for (a, b) in APART {
        for m in [a, b] {
            let dir = m.replace("::", "/");
            assert!(
                files
                    .iter()
                    .any(|(rel, _)| rel.starts_with(&format!("{dir}/"))),
                "{m} has no files"
            );
        }
    }
}
