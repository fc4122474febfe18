//! Random operations without preemption, the books checked every few steps.

use super::*;

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
    // Placeholder timeouts fire during the run.
    o.placeholder_timeout_ms = Some(300);
    let h = Harness::new(o);
    let confirmed = Confirmed::default();
    assert_eq!(h.register("rm", "queues").0, SICORE_OK);
    let queues = ["root.capped.x", "root.capped.y", "root.open", "root.dyn"];
    let mut next_node = 0;
    let mut next_app = 0;
    let mut live_nodes: Vec<String> = Vec::new();
    let mut live_apps: Vec<String> = Vec::new();
    let mut gang_apps: Vec<String> = Vec::new();
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
                let mut a = app(&id, queues[rng.usize(..queues.len())]);
                // Users and groups under limits (the trackers are checked).
                let users = [
                    ("alice", "dev"),
                    ("bob", "ops"),
                    ("carol", "dev"),
                    ("dave", "qa"),
                ];
                let (user, group) = users[rng.usize(..users.len())];
                a.ugi = Some(si::UserGroupInformation {
                    user: user.into(),
                    groups: vec![group.into()],
                });
                let mut placeholders = None;
                if rng.bool() {
                    gang_apps.push(id.clone());
                    // A gang: placeholderAsk of 1-4 placeholders of 100.
                    let n = rng.i64(1..5);
                    a.placeholder_ask = res(&[("memory", 100 * n), ("vcore", n)]);
                    a.gang_scheduling_style = if rng.bool() { "Hard" } else { "Soft" }.into();
                    if rng.bool() {
                        a.execution_timeout_milli_seconds = rng.i64(50..800);
                    }
                    // Placeholders first, as an RM sends them; sometimes
                    // too few, so that the gang never assembles.
                    let mut p = ask(&id, "p0", 100, 1, (n - rng.i64(0..2)).max(1) as i32);
                    p.placeholder = true;
                    p.task_group_name = "tg0".into();
                    placeholders = Some(p);
                }
                let _ = h.apps(vec![a], vec![]);
                if let Some(p) = placeholders {
                    let _ = h.asks(vec![p]);
                }
                live_apps.push(id);
            }
            27..=30 if !live_apps.is_empty() => {
                let id = live_apps.swap_remove(rng.usize(..live_apps.len()));
                gang_apps.retain(|g| *g != id);
                let rm = si::RemoveApplicationRequest {
                    application_id: id,
                    partition_name: "default".into(),
                };
                let _ = h.apps(vec![], vec![rm]);
            }
            31..=55 if !live_apps.is_empty() => {
                // Mostly plain applications: a gang's asks come below.
                let mut app_id = &live_apps[rng.usize(..live_apps.len())];
                if gang_apps.contains(app_id) && rng.u32(0..4) > 0 {
                    app_id = &live_apps[rng.usize(..live_apps.len())];
                }
                let a = ask(
                    app_id,
                    &format!("k{}", rng.u32(0..20)),
                    rng.i64(1..400),
                    rng.i64(0..4),
                    rng.i32(1..4),
                );
                let _ = h.asks(vec![a]);
            }
            71..=80 => {
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
            56..=70 | 93..=95 if !gang_apps.is_empty() => {
                // Gang asks: placeholders, or real members (some of another
                // size than their placeholders).
                let app_id = &gang_apps[rng.usize(..gang_apps.len())];
                let group = format!("tg{}", rng.u32(0..2));
                let mut a = if rng.bool() {
                    let mut a = ask(
                        app_id,
                        &format!("p{}", rng.u32(0..4)),
                        100,
                        1,
                        rng.i32(1..4),
                    );
                    a.placeholder = true;
                    a
                } else {
                    let memory = [100, 100, 60, 150][rng.usize(..4)];
                    ask(
                        app_id,
                        &format!("r{}", rng.u32(0..4)),
                        memory,
                        1,
                        rng.i32(1..4),
                    )
                };
                a.task_group_name = group;
                let _ = h.asks(vec![a]);
            }
            81..=85 | 96..=99 => {
                // The RM answers a core release of a placeholder: confirms a
                // replacement (sometimes twice), or stops it.
                let pick = h.seen(|s| {
                    let rel: Vec<&si::AllocationRelease> = s
                        .released
                        .iter()
                        .filter(|r| r.termination_type != si::TerminationType::StoppedByRm as i32)
                        .collect();
                    (!rel.is_empty()).then(|| rel[rng.usize(..rel.len())].clone())
                });
                if let Some(r) = pick {
                    let replaced =
                        r.termination_type == si::TerminationType::PlaceholderReplaced as i32;
                    let kind = if replaced && rng.u32(0..4) > 0 {
                        confirmed.lock().unwrap().insert(r.uuid.clone());
                        si::TerminationType::PlaceholderReplaced
                    } else {
                        si::TerminationType::StoppedByRm
                    };
                    let rel = si::AllocationRelease {
                        application_id: r.application_id,
                        partition_name: "default".into(),
                        uuid: r.uuid,
                        termination_type: kind as i32,
                        message: String::new(),
                    };
                    let _ = h.releases(vec![rel.clone(), rel], vec![]);
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
            check(&h, step, &confirmed, true);
        }
    }
    check(&h, 2000, &confirmed, true);
    // Whether a random gang timed out depends on the machine's speed; one
    // that can never assemble (one of two placeholders), on a node of its
    // own in a fresh scheduler with the same configuration, makes the
    // timeout path run on every machine. (In the loaded scheduler above,
    // CI twice saw such a placeholder wait unplaced for 20 s; see the
    // closing note of stop 36.)
    let fresh = Harness::new({
        let mut o = yaml_options(CONFIG);
        o.placeholder_timeout_ms = Some(300);
        o
    });
    assert_eq!(fresh.register("rm", "queues").0, SICORE_OK);
    let _ = fresh.nodes(vec![node("n-timeout", 10_000, 100)]);
    let mut a = app("app-timeout", "root.timeout");
    a.ugi = Some(si::UserGroupInformation {
        user: "erin".into(),
        groups: vec!["timeout".into()],
    });
    a.placeholder_ask = res(&[("memory", 200), ("vcore", 2)]);
    a.execution_timeout_milli_seconds = 1_000;
    let _ = fresh.apps(vec![a], vec![]);
    let mut p = ask("app-timeout", "p0", 100, 1, 1);
    p.placeholder = true;
    p.task_group_name = "tg0".into();
    let _ = fresh.asks(vec![p]);
    fresh.wait("a placeholder released on timeout", |s| {
        s.released
            .iter()
            .any(|r| r.termination_type == si::TerminationType::Timeout as i32)
    });
    check(&fresh, 0, &Confirmed::default(), true);
    let fresh_timeouts = fresh.seen(|s| {
        s.released
            .iter()
            .filter(|r| r.termination_type == si::TerminationType::Timeout as i32)
            .count()
    });
    check(&h, 2001, &confirmed, true);
    // The run did real work.
    h.seen(|s| {
        assert!(
            s.allocations.len() > 200 && !s.released.is_empty(),
            "{} allocations",
            s.allocations.len()
        );
        // Gang operations happened: replacements, landed real allocations
        // and placeholder timeouts.
        let of = |t: si::TerminationType| {
            s.released
                .iter()
                .filter(|r| r.termination_type == t as i32)
                .count()
        };
        let uuids: HashSet<&str> = s.allocations.iter().map(|a| a.uuid.as_str()).collect();
        let landed = s
            .released
            .iter()
            .filter(|r| {
                r.termination_type == si::TerminationType::PlaceholderReplaced as i32
                    && uuids.contains(r.message.trim_start_matches("replacing UUID: "))
            })
            .count();
        assert!(
            of(si::TerminationType::PlaceholderReplaced) > 10
                && of(si::TerminationType::Timeout) + fresh_timeouts > 0
                && landed > 0,
            "replacements {}, timeouts {} (+{fresh_timeouts} in the fresh scheduler), landed {landed}",
            of(si::TerminationType::PlaceholderReplaced),
            of(si::TerminationType::Timeout)
        );
    });
}
