//! `sicore-sim --workload tenants|preemption` in both SI editions: what the
//! text and HTML reports say (every tenant within its caps and at a cap
//! somewhere, preemptions confirmed and the guaranteed queue at its
//! guarantee, recorded usage matching the state dump).

use std::process::{Command, Output};

fn sim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sicore-sim"))
        .args(args)
        .output()
        .expect("run sicore-sim")
}

fn field<'a>(report: &'a str, label: &str) -> &'a str {
    report
        .lines()
        .find_map(|l| l.trim_start().strip_prefix(label))
        .map(str::trim)
        .unwrap_or_else(|| panic!("no {label:?} line in:\n{report}"))
}

/// Runs a workload with `--html`; the text report and the page.
fn run(workload: &str, edition: &str) -> (String, String) {
    let dir = std::env::temp_dir().join(format!(
        "sicore-sim-{workload}-{edition}-{}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let html = dir.join("report.html");
    let out = sim(&[
        "--workload",
        workload,
        "--edition",
        edition,
        "--html",
        html.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let page = std::fs::read_to_string(&html).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    (stdout, page)
}

/// `(used, cap)` pairs of a tenant line's `res U of C` cells.
fn cells(line: &str) -> Vec<(String, i64, i64)> {
    let rest = line.split_once(" at ").unwrap().1;
    let rest = rest.trim_start().split_once(' ').unwrap().1;
    rest.split(", ")
        .map(|c| {
            let words: Vec<&str> = c.split_whitespace().collect();
            let n = words.len();
            assert_eq!(words[n - 2], "of", "{line}");
            (
                words[..n - 3].join(" "),
                words[n - 3].parse().unwrap(),
                words[n - 1].parse().unwrap(),
            )
        })
        .collect()
}

fn check_tenants(edition: &str) {
    let (out, page) = run("tenants", edition);
    assert_eq!(field(&out, "workload"), "tenants");
    assert_eq!(field(&out, "caps exceeded"), "none", "{out}");
    assert_eq!(field(&out, "state dump"), "matches the recorded usage");
    let lines: Vec<&str> = out
        .lines()
        .skip_while(|l| !l.starts_with("tenants ("))
        .skip(1)
        .take_while(|l| !l.trim_start().starts_with("caps exceeded"))
        .collect();
    let tenants: Vec<String> = lines
        .iter()
        .map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            format!("{} {} {}", w[0], w[1], w[3])
        })
        .collect();
    // Every configured cap shows up, for the tenants it applies to: the
    // user wildcard for each user, the named user and group caps at their
    // levels, and the group wildcard pooling eng and ops.
    for t in [
        "group * root.tenants",
        "group datasci root.tenants",
        "user alice root",
        "user alice root.tenants.research",
        "user carol root.tenants.prod",
        "user frank root",
    ] {
        assert!(tenants.iter().any(|x| x == t), "{t} missing: {tenants:?}");
    }
    assert!(
        !tenants.iter().any(|x| x.starts_with("group eng")),
        "{tenants:?}"
    );
    let mut at_cap = Vec::new();
    for l in &lines {
        for (what, used, cap) in cells(l) {
            assert!(used <= cap, "{l}");
            if used == cap {
                at_cap.push(format!("{l}: {what}"));
            }
        }
    }
    // The caps did the holding back: the resource caps and the application
    // caps were reached (and no further).
    for needle in [
        "group datasci",
        "user  alice    at root.tenants.research",
        "user  carol    at root.tenants.prod",
        "group *",
    ] {
        assert!(
            at_cap.iter().any(|l| l.contains(needle)),
            "{needle} never at its cap: {at_cap:?}"
        );
    }
    assert!(
        at_cap.iter().any(|l| l.contains("running applications")),
        "{at_cap:?}"
    );
    // Half the pods finishing let held-back work in.
    let after: Vec<&str> = field(&out, "released by RM").split_whitespace().collect();
    assert!(after[3].parse::<usize>().unwrap() > 0, "{out}");

    assert!(page.contains(r#"id="tenants""#));
    assert!(page.contains(r#"id="limits-check" class="ok""#));
    assert!(page.contains(r#"id="consistency" class="ok""#));
    assert!(page.contains("group datasci"));
    assert!(!page.contains(r#"id="preemptions""#));
}

fn check_preemption(edition: &str) {
    let (out, page) = run("preemption", edition);
    assert_eq!(field(&out, "workload"), "preemption");
    let victims: Vec<&str> = field(&out, "victims").split_whitespace().collect();
    let (released, confirmed): (usize, usize) =
        (victims[0].parse().unwrap(), victims[4].parse().unwrap());
    assert!(released >= 1, "{out}");
    assert_eq!(released, confirmed, "{out}");
    assert!(field(&out, "victims").ends_with("0 confirmations refused"));
    let checks: usize = field(&out, "preemption checks")
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(checks >= 1, "{out}");
    assert!(
        field(&out, "preemption checks").contains(if edition == "v1" {
            "PreemptionPredicates"
        } else {
            "Predicates{allocate: false}"
        })
    );
    assert_eq!(field(&out, "guarantee reached"), "yes", "{out}");
    assert_eq!(
        field(&out, "root.prod at end"),
        "memory 40k vcore 40 (guaranteed memory 40k vcore 40)"
    );
    // Guarantee victims came only from above root.batch's guarantee
    // (it kept 40k); the quota-change run then took it to its new max.
    assert_eq!(
        field(&out, "root.batch at end"),
        "memory 30k vcore 30 (guaranteed memory 20k vcore 20)"
    );
    assert!(
        field(&out, "quota run")
            .starts_with("10 victims released, root.batch from memory 40k to 30k"),
        "{out}"
    );
    let summary = field(&out, "summary record");
    if edition == "v1" {
        assert!(
            summary.starts_with("QUEUE_PREEMPTION root.batch: Quota Preemption results summary")
                && summary.ends_with("preempted victims: 10"),
            "{out}"
        );
    } else {
        assert_eq!(summary, "none (SI v0.12 has no QUEUE_PREEMPTION)");
    }
    assert_eq!(field(&out, "state dump"), "matches the recorded usage");
    let allocated: Vec<&str> = field(&out, "prod allocated").split_whitespace().collect();
    assert_eq!(allocated[0], allocated[2], "{out}");

    assert!(page.contains(r#"id="preemptions""#));
    assert!(page.contains(r#"id="guarantee-check" class="ok""#));
    assert!(page.contains(r#"id="consistency" class="ok""#));
    assert_eq!(
        page.matches(r#"<path class="preempt""#).count(),
        // Marked on the throughput chart and both guarantee charts.
        3 * released,
        "one triangle per victim on each chart"
    );
    assert!(!page.contains(r#"id="tenants""#));
}

#[test]
fn tenants_stay_within_their_caps_v012() {
    check_tenants("v0.12");
}

#[test]
fn tenants_stay_within_their_caps_v1() {
    check_tenants("v1");
}

#[test]
fn preemption_gives_the_guaranteed_queue_its_share_v012() {
    check_preemption("v0.12");
}

#[test]
fn preemption_gives_the_guaranteed_queue_its_share_v1() {
    check_preemption("v1");
}

#[test]
fn workloads_refuse_gang() {
    let out = sim(&["--workload", "tenants", "--gang"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("does not combine with --workload"));
}
