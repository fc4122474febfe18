//! Thousands of random RM operations (nodes come and go, applications,
//! asks, releases), checking after every few steps, through the state dump
//! and what the RM was told, that the scheduler's books balance.

mod common;

use std::collections::{BTreeMap, HashMap, HashSet};

use common::*;
use serde_json::Value;
use sicore::ffi::sicore_status::*;
use sicore::proto::si::v1 as si;

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
        queues:
          - name: capped
            resources:
              max: {memory: 3000, vcore: 30}
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
            add(&mut sum, &check_queue(c, apps, app_queue, active));
        }
    }
    assert!(
        same(&allocated, &sum),
        "queue {path}: allocated {allocated:?} but its members hold {sum:?}"
    );
    if path != "root" {
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

fn check(h: &Harness, step: usize) {
    let d = h.dump();
    // The checks every test shares (tests/common/books.rs) ...
    if let Err(e) = books::check_books(&d) {
        panic!("step {step}: {e}");
    }
    // ... and this test's own, which know the configuration.
    let p = &d["partitions"][0];
    // Every allocation sits on exactly one node and the node's usage adds up.
    let mut on_nodes: HashMap<String, (String, BTreeMap<String, i64>)> = HashMap::new();
    for n in p["nodes"].as_array().unwrap() {
        let id = n["id"].as_str().unwrap();
        let mut sum = BTreeMap::new();
        for a in n["allocations"].as_array().unwrap() {
            let r = res_of(&a["resource"]);
            add(&mut sum, &r);
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
        assert!(
            same(&sum, &res_of(&a["allocated"])),
            "step {step}: app {id} books"
        );
        app_queue.insert(id.clone(), a["queue"].as_str().unwrap().to_string());
        app_alloc.insert(id, sum);
    }
    assert_eq!(
        seen.len(),
        on_nodes.len(),
        "step {step}: allocations without an application"
    );
    check_queue(&p["root"], &app_alloc, &app_queue, &active);
    // What the RM was told matches: allocations minus releases. The
    // dispatcher delivers asynchronously, and the scheduler may still move
    // on by itself (a timer frees a maxapplications slot, say): compare
    // against its current state until both agree.
    let on_nodes_of = |d: &Value| -> HashSet<String> {
        d["partitions"][0]["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|n| n["allocations"].as_array().unwrap().iter())
            .map(|a| a["uuid"].as_str().unwrap().to_string())
            .collect()
    };
    let rm_view = |s: &Seen| -> HashSet<String> {
        let released: HashSet<&str> = s.released.iter().map(|r| r.uuid.as_str()).collect();
        s.allocations
            .iter()
            .map(|a| a.uuid.as_str())
            .filter(|u| !released.contains(u))
            .map(String::from)
            .collect()
    };
    let mut known: HashSet<String> = on_nodes.keys().cloned().collect();
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

#[test]
fn random_operations_keep_the_books_balanced() {
    // SICORE_TEST_SEED explores other runs; CI uses the fixed default.
    let seed = std::env::var("SICORE_TEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(7);
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut o = yaml_options(CONFIG);
    o.reservation_delay_ms = Some(0);
    o.app_completing_timeout_ms = Some(50);
    let h = Harness::new(o);
    assert_eq!(h.register("rm", "queues").0, SICORE_OK);
    let queues = ["root.capped.x", "root.capped.y", "root.open", "root.dyn"];
    let mut next_node = 0;
    let mut next_app = 0;
    let mut live_nodes: Vec<String> = Vec::new();
    let mut live_apps: Vec<String> = Vec::new();
    for step in 0..2000 {
        match rng.u32(0..100) {
            0..=9 => {
                let id = format!("n{next_node}");
                next_node += 1;
                let _ = h.nodes(vec![node(&id, rng.i64(200..2000), rng.i64(2..20))]);
                live_nodes.push(id);
            }
            10..=13 if !live_nodes.is_empty() => {
                let id = live_nodes.swap_remove(rng.usize(..live_nodes.len()));
                let n = si::NodeInfo {
                    action: si::node_info::ActionFromRm::Decomission as i32,
                    ..node(&id, 0, 0)
                };
                let _ = h.nodes(vec![n]);
            }
            14..=16 if !live_nodes.is_empty() => {
                let id = &live_nodes[rng.usize(..live_nodes.len())];
                let action = if rng.bool() {
                    si::node_info::ActionFromRm::DrainNode
                } else {
                    si::node_info::ActionFromRm::DrainToSchedulable
                };
                let _ = h.nodes(vec![si::NodeInfo {
                    action: action as i32,
                    ..node(id, 0, 0)
                }]);
            }
            17..=26 => {
                let id = format!("app{next_app}");
                next_app += 1;
                let _ = h.apps(vec![app(&id, queues[rng.usize(..queues.len())])], vec![]);
                live_apps.push(id);
            }
            27..=30 if !live_apps.is_empty() => {
                let id = live_apps.swap_remove(rng.usize(..live_apps.len()));
                let rm = si::RemoveApplicationRequest {
                    application_id: id,
                    partition_name: "default".into(),
                };
                let _ = h.apps(vec![], vec![rm]);
            }
            31..=70 if !live_apps.is_empty() => {
                let app_id = &live_apps[rng.usize(..live_apps.len())];
                let a = ask(
                    app_id,
                    &format!("k{}", rng.u32(0..20)),
                    rng.i64(1..400),
                    rng.i64(0..4),
                    rng.i32(1..4),
                );
                let _ = h.asks(vec![a]);
            }
            71..=85 => {
                let pick = h.seen(|s| {
                    let released: HashSet<&str> =
                        s.released.iter().map(|r| r.uuid.as_str()).collect();
                    let live: Vec<&si::Allocation> = s
                        .allocations
                        .iter()
                        .filter(|a| !released.contains(a.uuid.as_str()))
                        .collect();
                    (!live.is_empty()).then(|| live[rng.usize(..live.len())].clone())
                });
                if let Some(a) = pick {
                    let rel = si::AllocationRelease {
                        application_id: a.application_id,
                        partition_name: "default".into(),
                        uuid: if rng.u32(0..10) == 0 {
                            String::new()
                        } else {
                            a.uuid
                        },
                        termination_type: si::TerminationType::StoppedByRm as i32,
                        message: String::new(),
                    };
                    let _ = h.releases(vec![rel], vec![]);
                }
            }
            86..=92 if !live_apps.is_empty() => {
                let rel = si::AllocationAskRelease {
                    application_id: live_apps[rng.usize(..live_apps.len())].clone(),
                    partition_name: "default".into(),
                    allocationkey: format!("k{}", rng.u32(0..20)),
                    ..Default::default()
                };
                let _ = h.releases(vec![], vec![rel]);
            }
            _ => {}
        }
        if step % 10 == 9 {
            check(&h, step);
        }
    }
    check(&h, 2000);
    // The run did real work.
    h.seen(|s| {
        assert!(
            s.allocations.len() > 200 && !s.released.is_empty(),
            "{} allocations",
            s.allocations.len()
        )
    });
}
