//! `--workload tenants`: users and groups under `limits` (docs/limits.md).
//!
//! Six users in three groups submit more than their caps allow, with
//! mixed application and request priorities, on a cluster larger than all
//! the caps together, so that only the limits hold them back:
//!
//! - a wildcard user cap at `root` (every user, separately);
//! - at `root.tenants`, a cap and an application cap for the group
//!   `datasci`, and a group wildcard (every other group, pooled);
//! - at `root.tenants.research`, a named cap for `alice` with an
//!   application cap, and at `root.tenants.prod` an application cap for
//!   `carol`.
//!
//! Phase 1 submits everything and waits until nothing moves (caps
//! reached); phase 2 the RM finishes half of every application's pods and
//! one of alice's applications, and the held-back work takes the room.
//! Both reports check every tenant against its caps after every callback.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use sicore::proto::si::v1 as si;

use crate::cli::Args;
use crate::workload::{app, ask, nodes, Driver};

const CONFIG: &str = "\
# sicore-sim --workload tenants (crates/sim/src/tenants.rs)
partitions:
  - name: default
    placementrules:
      - name: provided
        create: false
    queues:
      - name: root
        submitacl: '*'
        limits:
          - limit: every user
            users: ['*']
            maxresources: {memory: 48000, vcore: 48}
        queues:
          - name: tenants
            limits:
              - limit: data science
                groups: [datasci]
                maxresources: {memory: 40000, vcore: 40}
                maxapplications: 4
              - limit: every other group
                groups: ['*']
                maxresources: {memory: 60000}
            queues:
              - name: research
                limits:
                  - limit: alice
                    users: [alice]
                    maxresources: {memory: 16000, vcore: 16}
                    maxapplications: 2
              - name: prod
                limits:
                  - limit: carol
                    users: [carol]
                    maxapplications: 2
          - name: shared
";

/// (user, groups, queue, applications, application priority)
const TENANTS: [(&str, &[&str], &str, usize, i32); 7] = [
    ("alice", &["datasci"], "root.tenants.research", 3, 100),
    ("bob", &["datasci"], "root.tenants.research", 2, 0),
    ("bob", &["datasci"], "root.tenants.prod", 1, 10),
    ("carol", &["eng"], "root.tenants.prod", 3, 10),
    ("dave", &["eng", "ops"], "root.tenants.prod", 2, 0),
    ("erin", &["ops"], "root.tenants.research", 2, 100),
    ("frank", &[], "root.shared", 2, 0),
];

/// Asks per application, and their shapes (memory, vcore).
const ASKS_PER_APP: usize = 16;
const SHAPES: [(i64, i64); 4] = [(1000, 1), (2000, 1), (2000, 2), (4000, 2)];

pub fn run(args: &Args) -> Result<(), String> {
    let mut rng = fastrand::Rng::with_seed(args.seed);
    let config_name = "built-in (tenants)";
    let d = Driver::start(args, CONFIG, false, &[])?;

    d.mark("nodes submitted");
    d.nodes(nodes(16, 16_000, 16))?;

    let mut apps = Vec::new();
    let mut users = HashMap::new();
    let mut queues = HashMap::new();
    let mut app_priority = HashMap::new();
    for (user, groups, queue, count, priority) in TENANTS {
        for _ in 0..count {
            let id = format!("{user}-{}", 1 + apps.len());
            users.insert(id.clone(), user.to_string());
            queues.insert(id.clone(), queue.to_string());
            app_priority.insert(id.clone(), priority);
            apps.push(app(&id, queue, user, groups));
        }
    }
    d.declare(&apps);
    d.mark("applications submitted");
    d.apps(apps.clone())?;

    // Most asks at the application's priority, one in four 50 above it.
    let mut asks = Vec::new();
    for a in &apps {
        let base = app_priority[&a.application_id];
        for i in 0..ASKS_PER_APP {
            let (m, v) = SHAPES[rng.usize(..SHAPES.len())];
            let p = if rng.usize(..4) == 0 { base + 50 } else { base };
            asks.push(ask(
                &a.application_id,
                &format!("{}-pod-{i}", a.application_id),
                m,
                v,
                p,
            ));
        }
    }
    d.mark("asks submitted");
    d.asks(&asks, false)?;
    let quiet = Duration::from_millis(400);
    let timeout = Duration::from_secs(args.stall_seconds.max(1) * 6);
    d.settle(quiet, timeout)?;
    d.mark("caps reached");
    let first = d.dump()?;
    let allocated_phase1 = d
        .counters()
        .allocations
        .load(std::sync::atomic::Ordering::SeqCst);

    // Phase 2: half of every application's pods finish (the lower keys),
    // and alice's first application ends.
    let held: BTreeMap<String, crate::workload::Held> = d.rm().held.lock().unwrap().clone();
    let mut by_app: BTreeMap<&str, Vec<(&str, &str)>> = BTreeMap::new();
    for (uuid, h) in &held {
        by_app
            .entry(h.app.as_str())
            .or_default()
            .push((h.key.as_str(), uuid.as_str()));
    }
    let mut release = Vec::new();
    for (app, mut list) in by_app {
        list.sort();
        let n = if app == "alice-1" {
            list.len()
        } else {
            list.len() / 2
        };
        release.extend(
            list.into_iter()
                .take(n)
                .map(|(_, uuid)| (app.to_string(), uuid.to_string())),
        );
    }
    // alice-1's pending asks go too: it has finished.
    let alice1_pending: Vec<(String, String)> = asks
        .iter()
        .filter(|a| a.application_id == "alice-1")
        .filter(|a| !held.values().any(|h| h.key == a.allocation_key))
        .map(|a| (a.application_id.clone(), a.allocation_key.clone()))
        .collect();
    d.mark("pods finish");
    d.release(&release, &alice1_pending)?;
    d.settle(quiet, timeout)?;
    d.mark("workload done");
    let last = d.dump()?;

    let usage_of = |dump: &serde_json::Value| dump["partitions"][0]["usage"].clone();
    let input = crate::report::TenantInput {
        users,
        queues,
        usage: vec![usage_of(&first), usage_of(&last)],
    };
    let c = d.counters();
    let made = c.allocations.load(std::sync::atomic::Ordering::SeqCst);
    let mut meta = d.meta(args, "tenants", config_name);
    meta.extend([
        ("nodes".into(), "16 of memory 16000, vcore 16".into()),
        ("applications".into(), format!("{} of 6 users", apps.len())),
        ("asks submitted".into(), asks.len().to_string()),
        ("allocations made".into(), made.to_string()),
    ]);
    let report = d.recorder().finish_with(&last, meta, Some(&input));

    println!("sicore-sim report");
    for (k, v) in &report.meta {
        println!("  {k:<18} {v}");
    }
    println!("  after phase 1      {allocated_phase1} allocations (caps reached)");
    println!(
        "  released by RM     {} allocations, then {} more allocations",
        release.len(),
        made - allocated_phase1
    );
    print_priorities(&asks, &held);
    println!(
        "\ntenants (peak usage against the cap at each capped level, checked after every callback)"
    );
    for t in report.tenants.iter().flatten() {
        let mut cells: Vec<String> = t
            .cap
            .iter()
            .zip(&t.peak)
            .map(|((res, cap), peak)| format!("{res} {peak} of {cap}"))
            .collect();
        if t.max_apps > 0 {
            cells.push(format!(
                "running applications {} of {}",
                t.peak_running, t.max_apps
            ));
        }
        println!(
            "  {:<5} {:<8} at {:<24} {}",
            t.kind,
            t.name,
            t.level,
            cells.join(", ")
        );
    }
    println!(
        "  caps exceeded      {}",
        if report.cap_violations.is_empty() {
            "none".to_string()
        } else {
            report.cap_violations.join("; ")
        }
    );
    println!(
        "  state dump         {}",
        if report.mismatches.is_empty() {
            "matches the recorded usage".to_string()
        } else {
            report.mismatches.join("; ")
        }
    );
    d.finish(args, &report)
}

/// Of the asks of each priority, how many were allocated by the end of
/// phase 1, when the caps held the rest back.
fn print_priorities(asks: &[si::AllocationAsk], held: &BTreeMap<String, crate::workload::Held>) {
    let allocated: std::collections::HashSet<&str> =
        held.values().map(|h| h.key.as_str()).collect();
    let mut per: BTreeMap<i32, (usize, usize)> = BTreeMap::new();
    for a in asks {
        let p = match a.priority.as_ref().and_then(|p| p.priority.as_ref()) {
            Some(si::priority::Priority::PriorityValue(v)) => *v,
            _ => 0,
        };
        let e = per.entry(p).or_default();
        e.0 += 1;
        e.1 += usize::from(allocated.contains(a.allocation_key.as_str()));
    }
    let cells: Vec<String> = per
        .iter()
        .rev()
        .map(|(p, (n, a))| format!("{p}: {a} of {n}"))
        .collect();
    println!(
        "  by priority        {} (allocated after phase 1)",
        cells.join(", ")
    );
}
