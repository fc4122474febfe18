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

/// Top-level modules a source text names through `crate::`, with the
/// line of the first mention of each. Comments are skipped.
fn referenced(text: &str) -> BTreeMap<String, usize> {
    let mut found = BTreeMap::new();
    for (no, line) in text.lines().enumerate() {
        let code = line.split("//").next().unwrap_or("");
        let mut rest = code;
        while let Some(at) = rest.find("crate::") {
            let after = &rest[at + "crate::".len()..];
            // `sicore::crate::` cannot occur; `$crate::` is a macro path.
            let preceded = rest[..at]
                .chars()
                .next_back()
                .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$');
            rest = after;
            if preceded {
                continue;
            }
            let names: Vec<String> = if let Some(group) = after.strip_prefix('{') {
                // `use crate::{a, b::c}`: the group may span lines; the
                // first line is enough for the names it starts with.
                group
                    .split(',')
                    .map(|s| s.trim().split("::").next().unwrap_or("").to_string())
                    .collect()
            } else {
                vec![after
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect()]
            };
            for n in names {
                let n: String = n
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if !n.is_empty() {
                    found.entry(n).or_insert(no + 1);
                }
            }
        }
    }
    found
}

/// The import graph between top-level modules: from -> to -> (file, line).
fn graph() -> BTreeMap<String, BTreeMap<String, (String, usize)>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let modules: BTreeSet<String> = files.iter().filter_map(|f| module_of(&src, f)).collect();
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
        for (to, line) in referenced(&text) {
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
    // The scanner itself: a group, a plain path, a comment and a macro path.
    let text = "use crate::{a, b::c};\nlet x = crate::d::e();\n// crate::f\n$crate::g\n";
    let names: Vec<String> = referenced(text).into_keys().collect();
    assert_eq!(names, ["a", "b", "d"]);
}
