//! The layer rule of the crate (docs: architecture, "Layers"): imports
//! point down, `ffi` -> `entrypoint` -> `rmproxy` -> `scheduler` ->
//! `config`, `events`, `security`; `rest` and `metrics` read what the
//! scheduler publishes. This test reads the sources under `src/` and fails
//! when a path names a module above its own, or when two top-level modules
//! reach each other through any chain.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Edges that must not exist: (from, to).
const FORBIDDEN: &[(&str, &[&str])] = &[
    (
        "scheduler",
        &["rmproxy", "rest", "metrics", "ffi", "entrypoint"],
    ),
    (
        "config",
        &[
            "scheduler",
            "rmproxy",
            "rest",
            "metrics",
            "ffi",
            "entrypoint",
        ],
    ),
    (
        "events",
        &[
            "scheduler",
            "rmproxy",
            "rest",
            "metrics",
            "ffi",
            "entrypoint",
        ],
    ),
    (
        "security",
        &[
            "scheduler",
            "rmproxy",
            "rest",
            "metrics",
            "ffi",
            "entrypoint",
        ],
    ),
    ("rest", &["ffi", "rmproxy", "entrypoint"]),
    ("metrics", &["ffi", "rmproxy", "rest", "entrypoint"]),
    ("rmproxy", &["ffi", "entrypoint", "rest", "metrics"]),
];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("readable src dir") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            // The simulator is a program over the library, not part of it.
            if path.file_name().is_some_and(|n| n == "bin") {
                continue;
            }
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Top-level module a file under `src/` belongs to (`None` for lib.rs).
fn module_of(src: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src).ok()?;
    let first = rel.components().next()?.as_os_str().to_str()?.to_string();
    if first == "lib.rs" {
        return None;
    }
    Some(first.trim_end_matches(".rs").to_string())
}

/// The names a path segment list starts with: `{a, b::c}` gives `a`, `b`;
/// `a::b` gives `a`.
fn first_names(after: &str) -> Vec<String> {
    let ident = |t: &str| -> String {
        t.trim()
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    if let Some(group) = after.strip_prefix('{') {
        // The group may span lines; the first line is enough for the names
        // it starts with.
        group
            .split(',')
            .map(|s| ident(s.trim().split("::").next().unwrap_or("")))
            .filter(|n| !n.is_empty())
            .collect()
    } else {
        let n = ident(after);
        if n.is_empty() {
            vec![]
        } else {
            vec![n]
        }
    }
}

/// Names the crate root (`lib.rs`) re-exports, with the top-level module
/// each comes from (`pub use scheduler::api;` makes `crate::api` mean
/// `scheduler`).
fn root_aliases(lib: &str, modules: &BTreeSet<String>) -> BTreeMap<String, String> {
    let mut aliases: BTreeMap<String, String> = BTreeMap::new();
    // Twice, so an alias of an alias resolves.
    for _ in 0..2 {
        for line in lib.lines() {
            let Some(path) = line.trim().strip_prefix("pub use ") else {
                continue;
            };
            let path = path.trim_end_matches(';');
            let (head, tail) = path.split_once("::").unwrap_or((path, ""));
            let head = head.trim_start_matches("crate::");
            let Some(module) = modules
                .get(head)
                .cloned()
                .or_else(|| aliases.get(head).cloned())
            else {
                continue;
            };
            let last = tail.rsplit("::").next().unwrap_or("");
            let names = if last.is_empty() {
                vec![head.to_string()]
            } else if last.starts_with('{') {
                first_names(last)
            } else {
                vec![last.to_string()]
            };
            for n in names {
                if !modules.contains(&n) {
                    aliases.insert(n, module.clone());
                }
            }
        }
    }
    aliases
}

/// Top-level names a source text reaches, with the line of the first
/// mention of each: every `crate::` path, and `super::` chains that climb
/// out to the crate root from a file `depth` modules deep. Comments are
/// skipped.
fn referenced(text: &str, depth: usize) -> BTreeMap<String, usize> {
    let mut found = BTreeMap::new();
    for (no, line) in text.lines().enumerate() {
        let code = line.split("//").next().unwrap_or("");
        let mut rest = code;
        while let Some(at) = rest.find(['c', 's']) {
            let here = &rest[at..];
            let preceded = rest[..at]
                .chars()
                .next_back()
                .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$' || c == ':');
            let mut after = None;
            if !preceded {
                if let Some(a) = here.strip_prefix("crate::") {
                    after = Some(a);
                } else if here.starts_with("super::") {
                    let mut a = here;
                    let mut ups = 0;
                    while let Some(next) = a.strip_prefix("super::") {
                        a = next;
                        ups += 1;
                    }
                    if ups >= depth {
                        after = Some(a);
                    }
                }
            }
            match after {
                Some(a) => {
                    for n in first_names(a) {
                        found.entry(n).or_insert(no + 1);
                    }
                    rest = a;
                }
                None => rest = &rest[at + 1..],
            }
        }
    }
    found
}

/// How many modules deep a file under `src/` is (`src/x.rs` and
/// `src/x/mod.rs` are 1, `src/x/y.rs` is 2).
fn depth_of(src: &Path, file: &Path) -> usize {
    let rel = file.strip_prefix(src).expect("under src");
    let parts = rel.components().count();
    if rel.file_name().is_some_and(|n| n == "mod.rs") {
        parts - 1
    } else {
        parts
    }
}

/// The import graph between top-level modules: from -> to -> (file, line).
fn graph() -> BTreeMap<String, BTreeMap<String, (String, usize)>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let modules: BTreeSet<String> = files.iter().filter_map(|f| module_of(&src, f)).collect();
    let lib = std::fs::read_to_string(src.join("lib.rs")).expect("readable lib.rs");
    let aliases = root_aliases(&lib, &modules);
    let mut g: BTreeMap<String, BTreeMap<String, (String, usize)>> = BTreeMap::new();
    for file in &files {
        let Some(from) = module_of(&src, file) else {
            continue;
        };
        let text = std::fs::read_to_string(file).expect("readable source");
        let shown = file
            .strip_prefix(&src)
            .unwrap_or(file)
            .display()
            .to_string();
        for (name, line) in referenced(&text, depth_of(&src, file)) {
            let to = aliases.get(&name).cloned().unwrap_or(name);
            if to != from && modules.contains(&to) {
                g.entry(from.clone())
                    .or_default()
                    .entry(to)
                    .or_insert((shown.clone(), line));
            }
        }
    }
    g
}

#[test]
fn imports_point_down() {
    let g = graph();
    let mut wrong = Vec::new();
    for (from, banned) in FORBIDDEN {
        for to in *banned {
            if let Some((file, line)) = g.get(*from).and_then(|e| e.get(*to)) {
                wrong.push(format!("{from} -> {to} (src/{file}:{line})"));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "imports that run back up:\n  {}",
        wrong.join("\n  ")
    );
}

#[test]
fn no_circle_between_top_level_modules() {
    let g = graph();
    // Depth-first search for a back edge, reporting the circle found.
    fn visit(
        g: &BTreeMap<String, BTreeMap<String, (String, usize)>>,
        node: &str,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
        circles: &mut Vec<String>,
    ) {
        if let Some(at) = path.iter().position(|n| n == node) {
            let mut c = path[at..].to_vec();
            c.push(node.to_string());
            let edges: Vec<String> = c
                .windows(2)
                .map(|w| {
                    let (file, line) = &g[&w[0]][&w[1]];
                    format!("{} -> {} (src/{file}:{line})", w[0], w[1])
                })
                .collect();
            circles.push(edges.join(", "));
            return;
        }
        if done.contains(node) {
            return;
        }
        path.push(node.to_string());
        if let Some(edges) = g.get(node) {
            for to in edges.keys() {
                visit(g, to, path, done, circles);
            }
        }
        path.pop();
        done.insert(node.to_string());
    }
    let mut done = BTreeSet::new();
    let mut circles = Vec::new();
    for node in g.keys() {
        visit(&g, node, &mut Vec::new(), &mut done, &mut circles);
    }
    assert!(
        circles.is_empty(),
        "import circles between top-level modules:\n  {}",
        circles.join("\n  ")
    );
}

#[test]
fn the_reader_sees_paths() {
    // The scanner itself: a group, a plain path, a comment, a macro path,
    // and `super::` chains that do and do not reach the crate root.
    let text = "use crate::{a, b::c};\nlet x = crate::d::e();\n// crate::f\n$crate::g\nuse super::super::h;\nuse super::i;\n";
    let names: Vec<String> = referenced(text, 2).into_keys().collect();
    assert_eq!(names, ["a", "b", "d", "h"]);
    let modules: BTreeSet<String> = ["scheduler".to_string()].into();
    let aliases = root_aliases("pub use scheduler::api;\npub use api::{T, U};\n", &modules);
    assert_eq!(aliases.get("api").map(String::as_str), Some("scheduler"));
    assert_eq!(aliases.get("U").map(String::as_str), Some("scheduler"));
}
