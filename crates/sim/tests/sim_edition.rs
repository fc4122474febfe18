//! `sicore-sim --edition`: the same workload over the SI v1.x family, and
//! the reports naming the edition that ran.

use std::process::{Command, Output};

fn sim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sicore-sim"))
        .args(args)
        .output()
        .expect("run sicore-sim")
}

/// The value of a `  label   value` line of the text report.
fn field<'a>(report: &'a str, label: &str) -> &'a str {
    report
        .lines()
        .find_map(|l| l.trim_start().strip_prefix(label))
        .map(str::trim)
        .unwrap_or_else(|| panic!("no {label:?} line in:\n{report}"))
}

#[test]
fn v1_edition_runs_the_workload_and_says_so() {
    let dir = std::env::temp_dir().join(format!("sicore-sim-edition-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let html = dir.join("report.html");
    let out = sim(&[
        "--edition",
        "v1",
        "--nodes",
        "10",
        "--asks",
        "300",
        "--predicates",
        "--html",
        html.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(field(&stdout, "edition"), "SI v1.x");
    assert_eq!(field(&stdout, "allocations made"), "300");
    assert_eq!(field(&stdout, "asks rejected"), "0");
    assert_eq!(field(&stdout, "left pending"), "0");
    assert_eq!(field(&stdout, "nodes"), "10 accepted, 0 rejected");
    // The Predicates callback of the v1 table was asked at least once per
    // allocation.
    let calls: usize = field(&stdout, "predicate calls").parse().unwrap();
    assert!(calls >= 300, "{stdout}");
    // The allocations reached the queues the applications asked for.
    for q in ["root.team-a", "root.team-b", "root.batch"] {
        assert!(stdout.contains(q), "{q} missing:\n{stdout}");
    }
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("<td>edition</td><td>SI v1.x</td>"), "{page}");
    assert!(page.contains("<td>allocations made</td><td>300</td>"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn default_edition_is_v012() {
    let out = sim(&["--nodes", "5", "--asks", "50"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert_eq!(field(&stdout, "edition"), "SI v0.12");
    assert_eq!(field(&stdout, "allocations made"), "50");
}

#[test]
fn gang_refuses_v1_and_bad_editions_are_rejected() {
    let out = sim(&["--gang", "--edition", "v1"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--gang runs over SI v0.12 only"),
        "{stderr}"
    );
    assert!(out.stdout.is_empty(), "nothing ran");

    let out = sim(&["--edition", "v2"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("possible values: v0.12, v1"));
}
