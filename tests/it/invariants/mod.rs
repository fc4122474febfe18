//! Thousands of random RM operations (nodes come and go, applications,
//! asks, releases, gang placeholders, replacements and their confirmations,
//! placeholder timeouts), checking after every few steps, through the state
//! dump and what the RM was told, that the scheduler's books balance.

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::common::*;
use serde_json::Value;
use sicore::ffi::sicore_status::*;
use sicore::proto::si::v1 as si;

mod preemption;
mod without_preemption;

const CONFIG: &str = "
partitions:
  - name: default
    nodesortpolicy: {type: binpacking}
    placementrules:
      - name: provided
        create: true
    queues:
      - name: root
        submitacl: '*'
        limits:
          - {users: [alice], maxresources: {memory: 4000}}
          - {groups: [dev], maxapplications: 6}
          - {groups: ['*'], maxresources: {memory: 5000}}
        queues:
          - name: capped
            resources:
              max: {memory: 3000, vcore: 30}
            limits:
              - {users: ['*'], maxresources: {memory: 1200}}
              - {groups: [ops], maxresources: {memory: 2000}}
            queues:
              - name: x
                resources:
                  max: {memory: 1500}
              - name: y
                maxapplications: 2
          - name: open
            properties: {application.sort.policy: fair}
";

fn res_of(v: &Value) -> BTreeMap<String, i64> {
    v.as_object()
        .map(|m| {
            m.iter()
                .map(|(k, q)| (k.clone(), q.as_i64().unwrap()))
                .collect()
        })
        .unwrap_or_default()
}

fn add(a: &mut BTreeMap<String, i64>, b: &BTreeMap<String, i64>) {
    for (k, v) in b {
        *a.entry(k.clone()).or_default() += v;
    }
}

fn same(a: &BTreeMap<String, i64>, b: &BTreeMap<String, i64>) -> bool {
    let keys: HashSet<&String> = a.keys().chain(b.keys()).collect();
    keys.into_iter()
        .all(|k| a.get(k).copied().unwrap_or(0) == b.get(k).copied().unwrap_or(0))
}

fn fits(a: &BTreeMap<String, i64>, max: &BTreeMap<String, i64>) -> bool {
    a.iter().all(|(k, v)| max.get(k).is_none_or(|m| v <= m))
}

/// Whether an application counts against `maxapplications` (spec 3.8):
/// it holds allocations, or it has had one and is not done.
fn counts_as_active(a: &Value) -> bool {
    let holds = !a["allocations"].as_array().unwrap().is_empty();
    match a["state"].as_str().unwrap() {
        "Starting" | "Running" | "Completing" => holds || a["started"].as_bool().unwrap(),
        "Completed" | "Failed" | "Expired" | "Rejected" => false,
        _ => holds,
    }
}

/// Checks a queue and its subtree; returns its allocated resource.
fn check_queue(
    q: &Value,
    apps: &HashMap<String, BTreeMap<String, i64>>,
    app_queue: &HashMap<String, String>,
    active: &HashSet<String>,
    max_holds: bool,
) -> BTreeMap<String, i64> {
    let path = q["path"].as_str().unwrap();
    // The maxapplications counter matches the applications below, and the
    // limit holds (no allocation recovery or reload in this test).
    let below = app_queue
        .iter()
        .filter(|(app, queue)| {
            active.contains(*app) && (*queue == path || queue.starts_with(&format!("{path}.")))
        })
        .count() as u64;
    assert_eq!(
        q["active_applications"].as_u64().unwrap(),
        below,
        "queue {path}: active applications counter"
    );
    let limit = q["max_applications"].as_u64().unwrap();
    assert!(
        limit == 0 || below <= limit,
        "queue {path}: {below} active applications over maxapplications {limit}"
    );
    let allocated = res_of(&q["allocated"]);
    let mut sum = BTreeMap::new();
    if q["leaf"].as_bool().unwrap() {
        for (app, queue) in app_queue {
            if queue == path {
                add(&mut sum, &apps[app]);
            }
        }
    } else {
        for c in q["children"].as_array().unwrap() {
            add(
                &mut sum,
                &check_queue(c, apps, app_queue, active, max_holds),
            );
        }
    }
    assert!(
        same(&allocated, &sum),
        "queue {path}: allocated {allocated:?} but its members hold {sum:?}"
    );
    // A lowered max may be under the usage until quota preemption acts.
    if path != "root" && max_holds {
        if let Some(max) = q["max"].as_object() {
            let max = res_of(&Value::Object(max.clone()));
            assert!(
                fits(&allocated, &max),
                "queue {path} over its max: {allocated:?} > {max:?}"
            );
        }
    }
    allocated
}

/// What the test, as the RM, confirmed with `PLACEHOLDER_REPLACED`.
type Confirmed = std::sync::Mutex<HashSet<String>>;

/// Per tracker name, per queue path: the usage the trackers must show.
type PerLevel = BTreeMap<String, BTreeMap<String, BTreeMap<String, i64>>>;

/// The sum of the allocations (real and placeholder) of every application
/// at every level of its path, per user and per linked group, equals what
/// the tracker holds there (limits.md 3.1).
fn check_trackers(p: &Value, step: usize) {
    let usage = &p["usage"];
    let mut links: HashMap<String, String> = HashMap::new();
    for u in usage["users"].as_array().unwrap() {
        if let Some(g) = u["groups"].as_object() {
            for (app, group) in g {
                links.insert(app.clone(), group.as_str().unwrap().to_string());
            }
        }
    }
    let (mut users, mut groups) = (PerLevel::new(), PerLevel::new());
    for a in p["applications"].as_array().unwrap() {
        let mut r = res_of(&a["allocated"]);
        add(&mut r, &res_of(&a["placeholder"]));
        let path = a["queue"].as_str().unwrap();
        let mut prefix = String::new();
        for part in path.split('.') {
            if !prefix.is_empty() {
                prefix.push('.');
            }
            prefix.push_str(part);
            let user = a["user"].as_str().unwrap().to_string();
            add(
                users
                    .entry(user)
                    .or_default()
                    .entry(prefix.clone())
                    .or_default(),
                &r,
            );
            if let Some(g) = links.get(a["id"].as_str().unwrap()) {
                add(
                    groups
                        .entry(g.clone())
                        .or_default()
                        .entry(prefix.clone())
                        .or_default(),
                    &r,
                );
            }
        }
    }
    fn walk(q: &Value, out: &mut BTreeMap<String, BTreeMap<String, i64>>) {
        out.insert(
            q["queuePath"].as_str().unwrap().to_string(),
            res_of(&q["resourceUsage"]),
        );
        for c in q["children"].as_array().into_iter().flatten() {
            walk(c, out);
        }
    }
    for (list, key, want) in [
        ("users", "userName", &users),
        ("groups", "groupName", &groups),
    ] {
        for t in usage[list].as_array().unwrap() {
            let name = t[key].as_str().unwrap();
            let mut got = BTreeMap::new();
            walk(&t["queues"], &mut got);
            let empty = BTreeMap::new();
            let expected = want.get(name).unwrap_or(&empty);
            for (path, r) in got.iter().chain(expected.iter()) {
                let g = got.get(path).cloned().unwrap_or_default();
                let e = expected.get(path).cloned().unwrap_or_default();
                assert!(
                    same(&g, &e),
                    "step {step}: {list} {name} at {path}: tracker {g:?}, allocations {e:?} ({r:?})"
                );
            }
        }
    }
    // Every user with an application has a tracker.
    for name in users.keys() {
        assert!(
            usage["users"]
                .as_array()
                .unwrap()
                .iter()
                .any(|t| t["userName"] == name.as_str()),
            "step {step}: no tracker for user {name}"
        );
    }
}

/// The books after `step`; `max_holds`: no max was lowered (quota-change
/// preemption takes a queue back under a lowered max only over time).
fn check(h: &Harness, step: usize, confirmed: &Confirmed, max_holds: bool) {
    let d = h.dump();
    check_trackers(&d["partitions"][0], step);
    // The checks every test shares (tests/it/common/books.rs) ...
    if let Err(e) = books::check_books(&d) {
        panic!("step {step}: {e}");
    }
    // ... and this test's own, which know the configuration.
    let p = &d["partitions"][0];
    // Real allocations of swaps in flight: on a node, in no application yet.
    let mut in_flight: HashMap<String, String> = HashMap::new();
    for a in p["applications"].as_array().unwrap() {
        for r in a["replacements"].as_array().unwrap() {
            let prev = in_flight.insert(
                r["real"].as_str().unwrap().to_string(),
                r["placeholder"].as_str().unwrap().to_string(),
            );
            assert!(
                prev.is_none(),
                "step {step}: one real allocation, two swaps"
            );
            let ph = r["placeholder"].as_str().unwrap();
            assert!(
                a["allocations"].as_array().unwrap().iter().any(|u| u == ph),
                "step {step}: swap of a placeholder its application does not hold"
            );
        }
    }
    // Every allocation sits on exactly one node and the node's usage adds up.
    let mut on_nodes: HashMap<String, (String, BTreeMap<String, i64>)> = HashMap::new();
    for n in p["nodes"].as_array().unwrap() {
        let id = n["id"].as_str().unwrap();
        let mut sum = BTreeMap::new();
        for a in n["allocations"].as_array().unwrap() {
            let r = res_of(&a["resource"]);
            add(&mut sum, &r);
            if let Some(ph) = a["replacing"].as_str() {
                assert_eq!(
                    in_flight
                        .get(a["uuid"].as_str().unwrap())
                        .map(String::as_str),
                    Some(ph),
                    "step {step}: node {id} lists an unknown replacement"
                );
            }
            let prev =
                on_nodes.insert(a["uuid"].as_str().unwrap().to_string(), (id.to_string(), r));
            assert!(prev.is_none(), "step {step}: allocation on two nodes");
        }
        assert!(
            same(&sum, &res_of(&n["allocated"])),
            "step {step}: node {id} books"
        );
        let mut used = sum.clone();
        add(&mut used, &res_of(&n["occupied"]));
        assert!(
            fits(&used, &res_of(&n["capacity"])),
            "step {step}: node {id} over capacity: {used:?}"
        );
    }
    let placeholder_uuids: HashSet<String> = p["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|n| n["allocations"].as_array().unwrap().iter())
        .filter(|a| a["placeholder"].as_bool().unwrap())
        .map(|a| a["uuid"].as_str().unwrap().to_string())
        .collect();
    // Every allocation belongs to exactly one application, which holds it.
    let mut app_alloc: HashMap<String, BTreeMap<String, i64>> = HashMap::new();
    let mut app_queue = HashMap::new();
    let mut seen = HashSet::new();
    let mut active = HashSet::new();
    for a in p["applications"].as_array().unwrap() {
        let id = a["id"].as_str().unwrap().to_string();
        if counts_as_active(a) {
            active.insert(id.clone());
        }
        let mut sum = BTreeMap::new();
        for u in a["allocations"].as_array().unwrap() {
            let u = u.as_str().unwrap();
            assert!(
                seen.insert(u.to_string()),
                "step {step}: allocation in two applications"
            );
            let (_, r) = on_nodes
                .get(u)
                .unwrap_or_else(|| panic!("step {step}: allocation {u} on no node"));
            add(&mut sum, r);
        }
        // Real and placeholder allocations, each counted once.
        let mut booked = res_of(&a["allocated"]);
        add(&mut booked, &res_of(&a["placeholder"]));
        assert!(same(&sum, &booked), "step {step}: app {id} books");
        let placeholders = a["allocations"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|u| placeholder_uuids.contains(u.as_str().unwrap()))
            .count();
        let in_groups: u64 = a["task_groups"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g["placeholders"].as_u64().unwrap())
            .sum();
        assert_eq!(
            placeholders as u64, in_groups,
            "step {step}: app {id} task group counts"
        );
        // Pending is what the listed asks still wait for (the dump lists
        // up to 1,000 asks, more than this test makes per application).
        let mut waiting = BTreeMap::new();
        for k in a["pending_asks"].as_array().unwrap() {
            let repeat = k["pending_repeat"].as_i64().unwrap();
            for (t, v) in res_of(&k["resource"]) {
                *waiting.entry(t).or_default() += v * repeat;
            }
        }
        assert!(
            same(&waiting, &res_of(&a["pending"])),
            "step {step}: app {id} pending {:?} but its asks wait for {waiting:?}: {}",
            res_of(&a["pending"]),
            serde_json::to_string_pretty(a).unwrap()
        );
        app_queue.insert(id.clone(), a["queue"].as_str().unwrap().to_string());
        // A bigger real allocation in flight counts its excess in the queue.
        for r in a["replacements"].as_array().unwrap() {
            add(&mut sum, &res_of(&r["queue_excess"]));
        }
        app_alloc.insert(id, sum);
    }
    assert!(
        in_flight.keys().all(|r| !seen.contains(r)),
        "step {step}: a real allocation both in flight and its application's"
    );
    let cross_node = in_flight
        .keys()
        .filter(|r| on_nodes.contains_key(*r))
        .count();
    assert_eq!(
        seen.len() + cross_node,
        on_nodes.len(),
        "step {step}: allocations without an application"
    );
    check_queue(&p["root"], &app_alloc, &app_queue, &active, max_holds);
    // What the RM was told matches: allocations minus releases. The
    // dispatcher delivers asynchronously, and the scheduler may still move
    // on by itself (a timer frees a maxapplications slot, say): compare
    // against its current state until both agree.
    // The RM does not know a swap's real allocation before it lands.
    let on_nodes_of = |d: &Value| -> HashSet<String> {
        d["partitions"][0]["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|n| n["allocations"].as_array().unwrap().iter())
            .filter(|a| a["replacing"].is_null())
            .map(|a| a["uuid"].as_str().unwrap().to_string())
            .collect()
    };
    // Gone for the RM: echoed releases, placeholders it confirmed as
    // replaced, and placeholders whose real allocation arrived.
    let confirmed_now = confirmed.lock().unwrap().clone();
    let rm_view = |s: &Seen| -> HashSet<String> {
        let landed: HashSet<&str> = s.allocations.iter().map(|a| a.uuid.as_str()).collect();
        let mut gone: HashSet<&str> = s
            .released
            .iter()
            .filter(|r| r.termination_type == si::TerminationType::StoppedByRm as i32)
            .map(|r| r.uuid.as_str())
            .collect();
        for r in &s.released {
            if r.termination_type == si::TerminationType::PlaceholderReplaced as i32 {
                let real = r.message.trim_start_matches("replacing UUID: ");
                if landed.contains(real) || confirmed_now.contains(&r.uuid) {
                    gone.insert(r.uuid.as_str());
                }
            }
        }
        s.allocations
            .iter()
            .map(|a| a.uuid.as_str())
            .filter(|u| !gone.contains(u))
            .map(String::from)
            .collect()
    };
    let mut known: HashSet<String> = on_nodes_of(&d);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let live = h.seen(|s| rm_view(s));
        if live == known {
            break;
        }
        if std::time::Instant::now() > deadline {
            let only_rm: Vec<String> = h.seen(|s| {
                s.allocations
                    .iter()
                    .filter(|a| live.contains(&a.uuid) && !known.contains(&a.uuid))
                    .map(|a| {
                        format!(
                            "{} ({} {} on {})",
                            a.uuid, a.application_id, a.allocation_key, a.node_id
                        )
                    })
                    .collect()
            });
            panic!(
                "step {step}: the RM's view does not match the scheduler's: only the RM has {only_rm:?}, only the scheduler has {:?}",
                known.difference(&live).collect::<Vec<_>>(),
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
        known = on_nodes_of(&h.dump());
    }
}
