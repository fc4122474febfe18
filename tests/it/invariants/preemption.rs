//! Random operations with preemption on: its victims checked beside the books.

use super::*;

/// Guarantee preemption on: `fill` (guarantee 1000) fills the nodes, then
/// `g1` and `g2` (guarantees, short delays) ask and preempt. Quota-change
/// preemption is on too: the test reloads with `fill` capped at `max`
/// memory, or uncapped (`None`), and after 5 ms over its max the core
/// releases the excess.
fn preempt_config(max: Option<i64>) -> String {
    fill_config("guaranteed: {memory: 1000}", max)
}

/// [`preempt_config`] with `fill`'s guarantee given as `guarantee`.
fn fill_config(guarantee: &str, max: Option<i64>) -> String {
    let cap = max.map_or(String::new(), |m| format!(", max: {{memory: {m}}}"));
    format!(
        "
partitions:
  - name: default
    preemption: {{enabled: true, quotapreemptionenabled: true}}
    queues:
      - name: root
        submitacl: '*'
        queues:
          - name: fill
            resources: {{{guarantee}{cap}}}
            properties: {{application.sort.policy: fifo, quota.preemption.delay: 5ms}}
          - name: g1
            resources: {{guaranteed: {{memory: 2000}}}}
            properties: {{application.sort.policy: fifo, preemption.delay: 1ms}}
          - name: g2
            resources: {{guaranteed: {{memory: 1500}}}}
            properties: {{preemption.delay: 20ms}}
"
    )
}

/// A quota-change victim (its release names the queue's new max).
fn is_quota_victim(r: &si::AllocationRelease) -> bool {
    is_preempted(r)
        && r.message
            .starts_with("preempting allocations to enforce new max quota")
}

/// The RM confirms every victim it has not let go of yet, and waits for
/// the scheduler to settle.
fn confirm_open_victims(h: &Harness, rm_gone: &mut HashSet<String>) {
    let open: Vec<si::AllocationRelease> = h.seen(|s| {
        s.released
            .iter()
            .filter(|r| is_preempted(r) && !rm_gone.contains(&r.uuid))
            .cloned()
            .collect()
    });
    for r in &open {
        rm_gone.insert(r.uuid.clone());
    }
    let _ = h.releases(open, vec![]);
    h.settle();
}

fn is_preempted(r: &si::AllocationRelease) -> bool {
    r.termination_type == si::TerminationType::PreemptedByScheduler as i32
}

/// Victims across release and confirmation: each is released once, and
/// one the RM has not let go of (confirmed, stopped, or its application
/// removed) is still on its node and in its application.
fn check_victims(h: &Harness, step: usize, rm_gone: &HashSet<String>, removed: &HashSet<String>) {
    // What the RM was told first, then the dump: everything told before
    // the dump is in it, unless the RM let go of it.
    let (released, allocations) = h.seen(|s| (s.released.clone(), s.allocations.clone()));
    let d = h.dump();
    let held: HashSet<String> = d["partitions"][0]["applications"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|a| a["allocations"].as_array().unwrap().iter())
        .map(|u| u.as_str().unwrap().to_string())
        .collect();
    let on_nodes: HashSet<String> = d["partitions"][0]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|n| n["allocations"].as_array().unwrap().iter())
        .map(|a| a["uuid"].as_str().unwrap().to_string())
        .collect();
    {
        let mut once = HashSet::new();
        for r in released.iter().filter(|r| is_preempted(r)) {
            assert!(
                once.insert(r.uuid.as_str()),
                "step {step}: victim {} released twice",
                r.uuid
            );
            if !rm_gone.contains(&r.uuid) && !removed.contains(&r.application_id) {
                assert!(
                    on_nodes.contains(&r.uuid) && held.contains(&r.uuid),
                    "step {step}: victim {} lost before the RM let go of it",
                    r.uuid
                );
            }
        }
        // A victim's preemptor never lands on top of it: every allocation
        // the RM was told of is still booked or was let go of.
        for a in &allocations {
            if !held.contains(&a.uuid) && !on_nodes.contains(&a.uuid) {
                let echoed = released.iter().any(|r| {
                    r.uuid == a.uuid
                        && r.termination_type == si::TerminationType::StoppedByRm as i32
                });
                assert!(
                    echoed || rm_gone.contains(&a.uuid) || removed.contains(&a.application_id),
                    "step {step}: allocation {} ({}) vanished",
                    a.uuid,
                    a.allocation_key
                );
            }
        }
    }
}

#[test]
fn random_operations_with_preemption_keep_the_books_balanced() {
    let seed = std::env::var("SICORE_TEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(11);
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut o = yaml_options(&preempt_config(None));
    // No ordinary reservations: a node reserved for a pending `fill` ask
    // would be no candidate for a preemptor (spec 7.1).
    o.reservation_delay_ms = Some(600_000);
    o.app_completing_timeout_ms = Some(50);
    let behaviour = Behaviour {
        with_predicates: true,
        ..Default::default()
    };
    let h = Harness::with_behaviour(o, behaviour);
    let confirmed = Confirmed::default();
    assert_eq!(h.register("rm", "queues").0, SICORE_OK);
    let nodes = (0..4).map(|i| node(&format!("n{i}"), 1000, 20)).collect();
    assert_eq!(h.nodes(nodes).0, SICORE_OK);
    h.wait("nodes", |s| s.nodes_accepted.len() == 4);
    let mut next_node = 4;
    // Allocations the RM let go of itself, applications it removed.
    let mut rm_gone: HashSet<String> = HashSet::new();
    let mut removed: HashSet<String> = HashSet::new();
    let mut fill_apps: Vec<String> = Vec::new();
    let mut g_apps: Vec<String> = Vec::new();
    let mut g_all: HashSet<String> = HashSet::new();
    let mut next_app = 0;
    let mut next_key = 0;
    let steps = 600;
    for step in 0..steps {
        // The first third fills the cluster, then the guaranteed queues ask.
        let filling = step < steps / 3;
        match rng.u32(0..100) {
            0..=2 if filling => {
                let id = format!("n{next_node}");
                next_node += 1;
                let _ = h.nodes(vec![node(&id, rng.i64(500..1500), 20)]);
            }
            3..=9 => {
                let id = format!("app{next_app}");
                next_app += 1;
                let queue = if filling || rng.u32(0..3) == 0 {
                    fill_apps.push(id.clone());
                    "root.fill"
                } else {
                    g_apps.push(id.clone());
                    g_all.insert(id.clone());
                    ["root.g1", "root.g2"][rng.usize(..2)]
                };
                let _ = h.apps(vec![app(&id, queue)], vec![]);
            }
            10..=39 => {
                let pool = if filling || g_apps.is_empty() || rng.u32(0..4) == 0 {
                    &fill_apps
                } else {
                    &g_apps
                };
                if !pool.is_empty() {
                    let app_id = &pool[rng.usize(..pool.len())];
                    next_key += 1;
                    let a = ask(
                        app_id,
                        &format!("k{next_key}"),
                        rng.i64(1..6) * 100,
                        1,
                        rng.i32(1..4),
                    );
                    let _ = h.asks(vec![a]);
                }
            }
            40..=64 => {
                // The RM confirms a victim, sometimes twice, sometimes by
                // stopping the pod instead.
                let pick = h.seen(|s| {
                    let open: Vec<&si::AllocationRelease> = s
                        .released
                        .iter()
                        .filter(|r| is_preempted(r) && !rm_gone.contains(&r.uuid))
                        .collect();
                    (!open.is_empty()).then(|| open[rng.usize(..open.len())].clone())
                });
                if let Some(r) = pick {
                    let kind = if rng.u32(0..5) == 0 {
                        si::TerminationType::StoppedByRm
                    } else {
                        si::TerminationType::PreemptedByScheduler
                    };
                    rm_gone.insert(r.uuid.clone());
                    let rel = si::AllocationRelease {
                        application_id: r.application_id,
                        partition_name: "default".into(),
                        uuid: r.uuid,
                        termination_type: kind as i32,
                        message: String::new(),
                    };
                    let twice = if rng.u32(0..4) == 0 { 2 } else { 1 };
                    let _ = h.releases(vec![rel; twice], vec![]);
                }
            }
            65..=67 => {
                // The RM stops a running allocation (a victim too, at times).
                let pick = h.seen(|s| {
                    let live: Vec<&si::Allocation> = s
                        .allocations
                        .iter()
                        .filter(|a| !rm_gone.contains(&a.uuid))
                        .collect();
                    (!live.is_empty()).then(|| live[rng.usize(..live.len())].clone())
                });
                if let Some(a) = pick {
                    rm_gone.insert(a.uuid.clone());
                    let rel = si::AllocationRelease {
                        application_id: a.application_id,
                        partition_name: "default".into(),
                        uuid: a.uuid,
                        termination_type: si::TerminationType::StoppedByRm as i32,
                        message: String::new(),
                    };
                    let _ = h.releases(vec![rel], vec![]);
                }
            }
            75 if !fill_apps.is_empty() || !g_apps.is_empty() => {
                let pool = if g_apps.is_empty() || (!fill_apps.is_empty() && rng.bool()) {
                    &mut fill_apps
                } else {
                    &mut g_apps
                };
                let id = pool.swap_remove(rng.usize(..pool.len()));
                removed.insert(id.clone());
                let rm = si::RemoveApplicationRequest {
                    application_id: id,
                    partition_name: "default".into(),
                };
                let _ = h.apps(vec![], vec![rm]);
            }
            78..=81 => {
                // The RM's predicates refuse a node for a while, or no more.
                let mut b = h.rec.behaviour.lock().unwrap();
                b.refuse_nodes.clear();
                if rng.bool() {
                    b.refuse_nodes.insert(format!("n{}", rng.u32(0..next_node)));
                }
            }
            86..=88 => {
                // The operator caps `fill` (often under what it holds),
                // or lifts the cap again.
                let max = (rng.u32(0..3) > 0).then(|| rng.i64(10..40) * 100);
                let (st, msg) = h.set_config("queues", &preempt_config(max));
                assert_eq!(st, SICORE_OK, "{msg}");
            }
            82..=85 if !g_apps.is_empty() => {
                let rel = si::AllocationAskRelease {
                    application_id: g_apps[rng.usize(..g_apps.len())].clone(),
                    partition_name: "default".into(),
                    allocationkey: format!("k{}", rng.u32(0..next_key + 1)),
                    ..Default::default()
                };
                let _ = h.releases(vec![], vec![rel]);
            }
            _ => std::thread::sleep(std::time::Duration::from_millis(1)),
        }
        if step % 10 == 9 {
            check(&h, step, &confirmed, false);
            check_victims(&h, step, &rm_gone, &removed);
        }
    }
    // The RM confirms every victim still open; the books balance after.
    h.rec.behaviour.lock().unwrap().refuse_nodes.clear();
    confirm_open_victims(&h, &mut rm_gone);
    check(&h, steps, &confirmed, false);
    check_victims(&h, steps, &rm_gone, &removed);
    // A last cap far under what `fill` holds, its guarantee gone so that
    // nothing bounds the amount: its run releases all but the last
    // allocation that fits the cap.
    let fill_memory = |d: &Value| {
        d["partitions"][0]["root"]["children"]
            .as_array()
            .unwrap()
            .iter()
            .find(|q| q["path"] == "root.fill")
            .and_then(|q| q["allocated"]["memory"].as_i64())
            .unwrap_or(0)
    };
    let held = fill_memory(&h.dump());
    assert!(held > 0, "fill holds nothing at the end");
    let before = h.seen(|s| s.released.iter().filter(|r| is_quota_victim(r)).count());
    let (st, msg) = h.set_config("queues", &fill_config("guaranteed: {}", Some(1)));
    assert_eq!(st, SICORE_OK, "{msg}");
    h.wait("the last quota run", |s| {
        s.released.iter().filter(|r| is_quota_victim(r)).count() > before
    });
    h.settle();
    confirm_open_victims(&h, &mut rm_gone);
    check(&h, steps + 1, &confirmed, false);
    check_victims(&h, steps + 1, &rm_gone, &removed);
    let after = fill_memory(&h.dump());
    assert!(after < held, "fill held {held} and still holds {after}");
    // The run did real work: victims were taken and confirmed, and the
    // guaranteed queues were allocated.
    h.seen(|s| {
        let victims = s.released.iter().filter(|r| is_preempted(r)).count();
        let guaranteed = s
            .allocations
            .iter()
            .filter(|a| g_all.contains(&a.application_id))
            .count();
        assert!(
            victims >= 5 && guaranteed >= 5,
            "victims {victims}, allocations of the guaranteed queues {guaranteed}"
        );
    });
}
