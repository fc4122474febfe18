//! Gang scheduling as an RM sees it through the C ABI (spec 9): admission,
//! placeholders, replacement on the same or another node, confirmation,
//! placeholder timeouts, node removal during a swap and bad input.

use std::collections::HashSet;

use crate::common::*;
use serde_json::Value;
use sicore::ffi::sicore_status::*;
use sicore::proto::si::v1 as si;
use sicore::proto::sicore::v1::SchedulerOptions;

const PR: i32 = si::TerminationType::PlaceholderReplaced as i32;
const TIMEOUT: i32 = si::TerminationType::Timeout as i32;
const STOPPED: i32 = si::TerminationType::StoppedByRm as i32;

/// A gang application: `placeholder_memory` of memory (and one vcore per
/// 100) in total for its placeholders.
fn gang_app(
    id: &str,
    queue: &str,
    placeholder_memory: i64,
    style: &str,
) -> si::AddApplicationRequest {
    let mut a = app(id, queue);
    a.placeholder_ask = res(&[
        ("memory", placeholder_memory),
        ("vcore", placeholder_memory / 100),
    ]);
    a.gang_scheduling_style = style.into();
    a
}

fn placeholder_ask(
    app: &str,
    key: &str,
    group: &str,
    memory: i64,
    repeat: i32,
) -> si::AllocationAsk {
    let mut a = ask(app, key, memory, memory / 100, repeat);
    a.task_group_name = group.into();
    a.placeholder = true;
    a
}

fn real_ask(app: &str, key: &str, group: &str, memory: i64, repeat: i32) -> si::AllocationAsk {
    let mut a = ask(app, key, memory, memory / 100, repeat);
    a.task_group_name = group.into();
    a
}

fn confirm(app: &str, uuid: &str) -> si::AllocationRelease {
    si::AllocationRelease {
        partition_name: "default".into(),
        application_id: app.into(),
        uuid: uuid.into(),
        termination_type: PR,
        message: "placeholder stopped".into(),
    }
}

fn stopped(app: &str, uuid: &str) -> si::AllocationRelease {
    si::AllocationRelease {
        termination_type: STOPPED,
        ..confirm(app, uuid)
    }
}

/// The real UUID named by a `PLACEHOLDER_REPLACED` release.
fn real_of(r: &si::AllocationRelease) -> String {
    r.message
        .strip_prefix("replacing UUID: ")
        .unwrap_or_else(|| panic!("unexpected message {:?}", r.message))
        .to_string()
}

fn app_dump(d: &Value, id: &str) -> Value {
    d["partitions"][0]["applications"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["id"] == id)
        .cloned()
        .unwrap_or(Value::Null)
}

fn node_dump(d: &Value, id: &str) -> Value {
    d["partitions"][0]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["id"] == id)
        .cloned()
        .unwrap_or(Value::Null)
}

fn states(h: &Harness, app: &str) -> Vec<String> {
    h.seen(|s| {
        s.app_updates
            .iter()
            .filter(|u| u.application_id == app)
            .map(|u| u.state.clone())
            .collect()
    })
}

fn placeholders_of(h: &Harness, app: &str) -> Vec<si::Allocation> {
    h.seen(|s| {
        s.allocations
            .iter()
            .filter(|a| a.application_id == app && a.placeholder)
            .cloned()
            .collect()
    })
}

fn replaced(h: &Harness) -> Vec<si::AllocationRelease> {
    h.seen(|s| {
        s.released
            .iter()
            .filter(|r| r.termination_type == PR)
            .cloned()
            .collect()
    })
}

/// Options with a fast event flush, so APP records arrive quickly.
fn fast_events() -> SchedulerOptions {
    SchedulerOptions {
        event_flush_interval_ms: 20,
        event_types: vec!["REQUEST".into(), "APP".into()],
        ..Default::default()
    }
}

fn with_predicates() -> Behaviour {
    Behaviour {
        with_predicates: true,
        ..Default::default()
    }
}

/// Registers, adds `nodes` nodes of 1000 memory / 10 vcore, submits `a`.
fn gang_harness(
    o: SchedulerOptions,
    b: Behaviour,
    nodes: usize,
    a: si::AddApplicationRequest,
) -> Harness {
    let h = Harness::with_behaviour(o, b);
    assert_eq!(h.register("rm", "queues").0, SICORE_OK);
    let list = (0..nodes)
        .map(|i| node(&format!("node-{i}"), 1000, 10))
        .collect();
    assert_eq!(h.nodes(list).0, SICORE_OK);
    h.wait("nodes", |s| s.nodes_accepted.len() == nodes);
    h.submit(a).expect("gang application accepted");
    h
}

/// Submits `n` placeholders of 100 memory for gang `g` (task group `tg`)
/// and waits until the RM holds them.
fn place_placeholders(h: &Harness, n: usize) {
    assert_eq!(
        h.asks(vec![placeholder_ask("g", "ph", "tg", 100, n as i32)])
            .0,
        SICORE_OK
    );
    h.wait("placeholders", |s| s.allocations.len() == n);
}

/// Submits gang `g`'s real ask of 100 memory and waits for the first
/// placeholder release that starts its swap.
fn submit_real_and_wait_for_swap(h: &Harness) {
    assert_eq!(
        h.asks(vec![real_ask("g", "real", "tg", 100, 1)]).0,
        SICORE_OK
    );
    h.wait("replacement", |s| s.released.len() == 1);
}

/// Two nodes, one placeholder of gang `g` on one of them, and the real ask
/// `real` submitted while the RM's predicates refuse the placeholder's node:
/// the swap must go to the other node. Returns the harness, the placeholder
/// and the other node's id.
fn vetoed_swap() -> (Harness, si::Allocation, &'static str) {
    let h = gang_harness(
        SchedulerOptions::default(),
        with_predicates(),
        2,
        gang_app("g", "root.a", 100, ""),
    );
    place_placeholders(&h, 1);
    let ph = placeholders_of(&h, "g").remove(0);
    let other = if ph.node_id == "node-0" {
        "node-1"
    } else {
        "node-0"
    };
    h.rec
        .behaviour
        .lock()
        .unwrap()
        .refuse_nodes
        .insert(ph.node_id.clone());
    assert_eq!(
        h.asks(vec![real_ask("g", "real", "tg", 100, 1)]).0,
        SICORE_OK
    );
    (h, ph, other)
}

#[test]
fn placeholders_hold_the_gang_and_real_asks_replace_them() {
    let h = gang_harness(
        fast_events(),
        with_predicates(),
        2,
        gang_app("g", "root.a", 300, ""),
    );
    assert_eq!(
        h.asks(vec![placeholder_ask("g", "ph", "workers", 100, 3)])
            .0,
        SICORE_OK
    );
    h.wait("three placeholders", |s| s.allocations.len() == 3);
    let phs = placeholders_of(&h, "g");
    assert_eq!(phs.len(), 3);
    for p in &phs {
        assert!(p.placeholder);
        assert_eq!(p.task_group_name, "workers");
    }
    // The placeholders add up to placeholderAsk: Accepted -> Starting.
    h.wait("starting", |s| {
        s.app_updates.iter().any(|u| u.state == "Starting")
    });
    let d = h.dump();
    let a = app_dump(&d, "g");
    assert_eq!(a["placeholder"]["memory"], 300);
    assert_eq!(a["placeholder_ask"]["memory"], 300);
    assert_eq!(a["gang_style"], "Soft");
    assert!(a["allocated"]["memory"].is_null() || a["allocated"]["memory"] == 0);
    assert_eq!(a["task_groups"][0]["name"], "workers");
    assert_eq!(a["task_groups"][0]["placeholders"], 3);
    assert_eq!(d["partitions"][0]["root"]["allocated"]["memory"], 300);

    // Real asks of the group replace the placeholders: the RM is told to
    // stop each placeholder, and gets no real allocation yet.
    assert_eq!(
        h.asks(vec![real_ask("g", "worker", "workers", 100, 3)]).0,
        SICORE_OK
    );
    h.wait("three replacements", |s| {
        s.released
            .iter()
            .filter(|r| r.termination_type == PR)
            .count()
            == 3
    });
    let rels = replaced(&h);
    let ph_uuids: HashSet<String> = phs.iter().map(|p| p.uuid.clone()).collect();
    for r in &rels {
        assert!(ph_uuids.contains(&r.uuid));
        assert_eq!(r.partition_name, "default");
        assert_eq!(r.application_id, "g");
        assert_eq!(real_of(r).len(), 36);
    }
    assert_eq!(
        h.seen(|s| s.allocations.len()),
        3,
        "no real allocation before confirmation"
    );
    h.seen(|s| {
        assert!(s
            .predicate_calls
            .iter()
            .any(|p| p.allocation_key == "worker" && !p.allocate));
    });
    let d = h.dump();
    let a = app_dump(&d, "g");
    assert_eq!(a["replacements"].as_array().unwrap().len(), 3);
    assert_eq!(a["task_groups"][0]["free_placeholders"], 0);
    assert_eq!(d["partitions"][0]["root"]["allocated"]["memory"], 300);
    h.wait("replacement events", |s| {
        s.events
            .iter()
            .any(|e| e.object_id == "g" && e.reason == "PlaceholderReplacing")
    });

    // Confirmation: each real allocation arrives, announced by ReSync first,
    // on its placeholder's node.
    let confirms = rels.iter().map(|r| confirm("g", &r.uuid)).collect();
    assert_eq!(h.releases(confirms, vec![]).0, SICORE_OK);
    h.wait("three real allocations", |s| s.allocations.len() == 6);
    let reals: Vec<si::Allocation> = h.seen(|s| s.allocations[3..].to_vec());
    for (r, rel) in reals.iter().zip(&rels) {
        assert!(!r.placeholder);
        assert_eq!(r.allocation_key, "worker");
        assert_eq!(r.task_group_name, "workers");
        assert_eq!(r.uuid, real_of(rel));
        let ph = phs.iter().find(|p| p.uuid == rel.uuid).unwrap();
        assert_eq!(r.node_id, ph.node_id, "same-node replacement");
    }
    h.seen(|s| {
        for r in &reals {
            let assumed = s.log.iter().position(|l| l == "assume:worker").unwrap();
            let alloc = s.log.iter().position(|l| l == "alloc:worker").unwrap();
            assert!(
                assumed < alloc,
                "ReSync before UpdateAllocation for {}",
                r.uuid
            );
        }
        // No echo and no forget for a confirmed placeholder.
        assert!(s.released.iter().all(|r| r.termination_type == PR));
        assert!(s.forgotten.is_empty());
    });
    // The first replacement does not move the state; the second does.
    h.wait("running", |s| {
        s.app_updates.iter().any(|u| u.state == "Running")
    });
    assert_eq!(states(&h, "g"), ["Accepted", "Starting", "Running"]);
    let d = h.dump();
    let a = app_dump(&d, "g");
    assert_eq!(a["allocated"]["memory"], 300);
    assert!(a["placeholder"]["memory"].is_null() || a["placeholder"]["memory"] == 0);
    assert_eq!(a["task_groups"][0]["placeholders"], 0);
    assert_eq!(a["task_groups"][0]["real"], 3);
    assert!(a["replacements"].as_array().unwrap().is_empty());
    assert_eq!(d["partitions"][0]["root"]["allocated"]["memory"], 300);
    let on_nodes: usize = d["partitions"][0]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["allocations"].as_array().unwrap().len())
        .sum();
    assert_eq!(on_nodes, 3);
    h.wait("replaced events", |s| {
        s.events
            .iter()
            .any(|e| e.object_id == "g" && e.reason == "PlaceholderReplaced")
    });
}

#[test]
fn a_vetoed_placeholder_node_sends_the_real_allocation_to_another_node() {
    let (h, ph, other) = vetoed_swap();
    h.wait("replacement", |s| {
        s.released.iter().any(|r| r.termination_type == PR)
    });
    let rel = replaced(&h).remove(0);
    h.seen(|s| {
        let calls: Vec<&si::PredicatesArgs> = s
            .predicate_calls
            .iter()
            .filter(|p| p.allocation_key == "real")
            .collect();
        assert!(calls.iter().any(|p| p.node_id == ph.node_id && !p.allocate));
        assert!(calls.iter().any(|p| p.node_id == other && p.allocate));
    });
    // In flight: the real allocation occupies the other node already, the
    // queue still counts the placeholder only.
    let d = h.dump();
    let n = node_dump(&d, other);
    assert_eq!(n["allocated"]["memory"], 100);
    assert_eq!(n["allocations"][0]["uuid"], real_of(&rel));
    assert_eq!(n["allocations"][0]["replacing"], ph.uuid);
    assert_eq!(node_dump(&d, &ph.node_id)["allocated"]["memory"], 100);
    assert_eq!(d["partitions"][0]["root"]["allocated"]["memory"], 100);
    assert_eq!(app_dump(&d, "g")["replacements"][0]["node"], other);

    assert_eq!(
        h.releases(vec![confirm("g", &ph.uuid)], vec![]).0,
        SICORE_OK
    );
    h.wait("real allocation", |s| s.allocations.len() == 2);
    let real = h.seen(|s| s.allocations[1].clone());
    assert_eq!(real.node_id, other);
    assert_eq!(real.uuid, real_of(&rel));
    let d = h.dump();
    assert!(
        node_dump(&d, &ph.node_id)["allocated"]["memory"].is_null()
            || node_dump(&d, &ph.node_id)["allocated"]["memory"] == 0
    );
    assert_eq!(node_dump(&d, other)["allocated"]["memory"], 100);
    assert_eq!(d["partitions"][0]["root"]["allocated"]["memory"], 100);
}

#[test]
fn a_different_size_replacement_adjusts_usage_on_confirmation() {
    let h = gang_harness(
        fast_events(),
        Behaviour::default(),
        1,
        gang_app("g", "root.a", 400, ""),
    );
    assert_eq!(
        h.asks(vec![placeholder_ask("g", "ph", "tg", 200, 2)]).0,
        SICORE_OK
    );
    h.wait("placeholders", |s| s.allocations.len() == 2);
    // Smaller: replaces on the same node, with a mismatch event.
    let mut small = real_ask("g", "small", "tg", 100, 1);
    small.resource_ask = res(&[("memory", 100), ("vcore", 2)]);
    assert_eq!(h.asks(vec![small]).0, SICORE_OK);
    h.wait("replacement", |s| {
        s.released.iter().any(|r| r.termination_type == PR)
    });
    h.wait("mismatch event", |s| {
        s.events.iter().any(|e| {
            e.object_id == "small"
                && e.reason == "Resource Allocation Mismatch between real and placeholder"
        })
    });
    let rel = replaced(&h).remove(0);
    assert_eq!(
        h.dump()["partitions"][0]["root"]["allocated"]["memory"],
        400
    );
    assert_eq!(
        h.releases(vec![confirm("g", &rel.uuid)], vec![]).0,
        SICORE_OK
    );
    h.wait("real", |s| s.allocations.len() == 3);
    let d = h.dump();
    assert_eq!(d["partitions"][0]["root"]["allocated"]["memory"], 300);
    assert_eq!(node_dump(&d, "node-0")["allocated"]["memory"], 300);
    let a = app_dump(&d, "g");
    assert_eq!(a["allocated"]["memory"], 100);
    assert_eq!(a["placeholder"]["memory"], 200);

    // Bigger: needs room beside the placeholder, and takes it.
    assert_eq!(
        h.asks(vec![real_ask("g", "big", "tg", 500, 1)]).0,
        SICORE_OK
    );
    h.wait("second replacement", |s| {
        s.released
            .iter()
            .filter(|r| r.termination_type == PR)
            .count()
            == 2
    });
    let rel = replaced(&h).remove(1);
    let d = h.dump();
    assert_eq!(
        node_dump(&d, "node-0")["allocated"]["memory"],
        800,
        "placeholder and real"
    );
    // The queue holds the excess from the decision on, so its max holds.
    assert_eq!(
        app_dump(&d, "g")["replacements"][0]["queue_excess"]["memory"],
        300
    );
    assert_eq!(d["partitions"][0]["root"]["allocated"]["memory"], 600);
    assert_eq!(
        h.releases(vec![confirm("g", &rel.uuid)], vec![]).0,
        SICORE_OK
    );
    h.wait("big real", |s| s.allocations.len() == 4);
    let d = h.dump();
    assert_eq!(d["partitions"][0]["root"]["allocated"]["memory"], 600);
    assert_eq!(node_dump(&d, "node-0")["allocated"]["memory"], 600);
    assert_eq!(app_dump(&d, "g")["allocated"]["memory"], 600);
}

#[test]
fn soft_gang_timeout_resumes_and_returns_to_accepted() {
    let mut a = gang_app("g", "root.a", 300, "Soft");
    a.execution_timeout_milli_seconds = 150;
    let h = gang_harness(fast_events(), Behaviour::default(), 1, a);
    // Only two of the three placeholders are asked for: the gang never completes.
    assert_eq!(
        h.asks(vec![
            placeholder_ask("g", "ph", "tg", 100, 2),
            // Another group's real ask waits while placeholders are held.
            real_ask("g", "real", "other", 100, 3)
        ])
        .0,
        SICORE_OK
    );
    h.wait("placeholders", |s| s.allocations.len() == 2);
    h.wait("resuming", |s| {
        s.app_updates.iter().any(|u| u.state == "Resuming")
    });
    h.wait("releases", |s| {
        s.released_asks.len() == 2 && s.released.len() == 2
    });
    h.seen(|s| {
        let u = s
            .app_updates
            .iter()
            .find(|u| u.state == "Resuming")
            .unwrap();
        assert_eq!(u.message, "ResourceReservationTimeout");
        let keys: HashSet<&str> = s
            .released_asks
            .iter()
            .map(|r| r.allocationkey.as_str())
            .collect();
        assert_eq!(keys, HashSet::from(["ph", "real"]));
        for r in &s.released_asks {
            assert_eq!(r.termination_type, TIMEOUT);
            assert_eq!(r.partition_name, "[rm]default");
            assert_eq!(
                r.message,
                "releasing placeholders asks on placeholder timeout"
            );
        }
        for r in &s.released {
            assert_eq!(r.termination_type, TIMEOUT);
            assert_eq!(
                r.message,
                "releasing allocated placeholders on placeholder timeout"
            );
        }
    });
    h.wait("timeout event", |s| {
        s.events.iter().any(|e| {
            e.object_id == "g" && (e.reason == "PlaceholderTimeout" || e.reason == "Resuming")
        })
    });
    let d = h.dump();
    let ad = app_dump(&d, "g");
    assert_eq!(ad["state"], "Resuming");
    assert!(ad["pending_asks"].as_array().unwrap().is_empty());
    assert_eq!(ad["releasing_placeholders"].as_array().unwrap().len(), 2);
    // The RM stops the placeholders; once the last is gone: Accepted.
    let rels: Vec<si::AllocationRelease> =
        h.seen(|s| s.released.iter().map(|r| stopped("g", &r.uuid)).collect());
    assert_eq!(h.releases(vec![rels[0].clone()], vec![]).0, SICORE_OK);
    h.wait("first echo", |s| s.released.len() == 3);
    assert_eq!(app_dump(&h.dump(), "g")["state"], "Resuming");
    assert_eq!(h.releases(vec![rels[1].clone()], vec![]).0, SICORE_OK);
    h.wait("accepted again", |s| {
        s.app_updates
            .iter()
            .filter(|u| u.state == "Accepted")
            .count()
            == 2
    });
    assert_eq!(states(&h, "g"), ["Accepted", "Resuming", "Accepted"]);
    let d = h.dump();
    assert!(
        d["partitions"][0]["root"]["allocated"]["memory"].is_null()
            || d["partitions"][0]["root"]["allocated"]["memory"] == 0
    );
    // Resubmitted as ordinary asks, the real ones are scheduled normally.
    assert_eq!(
        h.asks(vec![real_ask("g", "real", "tg", 100, 1)]).0,
        SICORE_OK
    );
    h.wait("ordinary allocation", |s| {
        s.allocations.iter().any(|a| a.allocation_key == "real")
    });
}

#[test]
fn hard_gang_timeout_fails_the_application() {
    let o = SchedulerOptions {
        placeholder_timeout_ms: Some(150),
        ..Default::default()
    };
    let h = gang_harness(
        o,
        Behaviour::default(),
        1,
        gang_app("g", "root.a", 300, "Hard"),
    );
    assert_eq!(
        h.dump()["partitions"][0]["applications"][0]["gang_style"],
        "Hard"
    );
    place_placeholders(&h, 1);
    h.wait("failing", |s| {
        s.app_updates.iter().any(|u| u.state == "Failing")
    });
    h.wait("release", |s| {
        s.released.len() == 1 && s.released_asks.len() == 1
    });
    let uuid = h.seen(|s| s.released[0].uuid.clone());
    assert_eq!(h.releases(vec![stopped("g", &uuid)], vec![]).0, SICORE_OK);
    h.wait("failed", |s| {
        s.app_updates.iter().any(|u| u.state == "Failed")
    });
    assert_eq!(states(&h, "g"), ["Accepted", "Failing", "Failed"]);
    let d = h.dump();
    assert!(d["partitions"][0]["applications"]
        .as_array()
        .unwrap()
        .is_empty());
    assert_eq!(
        d["partitions"][0]["completed_applications"][0]["state"],
        "Failed"
    );
    assert!(node_dump(&d, "node-0")["allocations"]
        .as_array()
        .unwrap()
        .is_empty());
}

#[test]
fn timeout_after_the_gang_started_releases_only_unused_placeholders() {
    let mut a = gang_app("g", "root.a", 200, "Hard");
    a.execution_timeout_milli_seconds = 2000;
    let h = gang_harness(SchedulerOptions::default(), Behaviour::default(), 1, a);
    assert_eq!(
        h.asks(vec![placeholder_ask("g", "ph", "tg", 100, 2)]).0,
        SICORE_OK
    );
    h.wait("starting", |s| {
        s.app_updates.iter().any(|u| u.state == "Starting")
    });
    assert_eq!(
        h.asks(vec![real_ask("g", "real", "tg", 100, 1)]).0,
        SICORE_OK
    );
    h.wait("replacement", |s| {
        s.released.iter().any(|r| r.termination_type == PR)
    });
    let rel = replaced(&h).remove(0);
    assert_eq!(
        h.releases(vec![confirm("g", &rel.uuid)], vec![]).0,
        SICORE_OK
    );
    h.wait("real", |s| s.allocations.len() == 3);
    h.wait("leftover released", |s| {
        s.released.iter().any(|r| r.termination_type == TIMEOUT)
    });
    h.seen(|s| {
        let t: Vec<&si::AllocationRelease> = s
            .released
            .iter()
            .filter(|r| r.termination_type == TIMEOUT)
            .collect();
        assert_eq!(t.len(), 1);
        assert_ne!(t[0].uuid, rel.uuid);
        assert_eq!(
            t[0].message,
            "releasing allocated placeholders on placeholder timeout"
        );
        assert!(s.released_asks.is_empty(), "no ask release once started");
    });
    assert_eq!(states(&h, "g"), ["Accepted", "Starting"]);
}

#[test]
fn admission_checks_and_bad_placeholder_asks() {
    let yaml = "
partitions:
  - name: default
    queues:
      - name: root
        submitacl: '*'
        queues:
          - name: fairq
            properties: {application.sort.policy: fair}
          - name: small
            resources:
              max: {memory: 500}
            queues:
              - name: leaf
                resources:
                  max: {vcore: 3}
";
    let h = Harness::configured(yaml_options(yaml), 1);
    let err = h.submit(gang_app("f", "root.fairq", 100, "")).unwrap_err();
    assert_eq!(
        err,
        "queue root.fairq cannot run application f with task group request: unsupported sort type"
    );
    // The max set combines the leaf's vcore and the parent's memory.
    let err = h
        .submit(gang_app("m", "root.small.leaf", 600, ""))
        .unwrap_err();
    assert!(
        err.starts_with("queue root.small.leaf cannot fit application m: task group request"),
        "{err}"
    );
    assert!(err.contains("larger than max queue allocation"), "{err}");
    let err = h
        .submit(gang_app("v", "root.small.leaf", 400, ""))
        .unwrap_err();
    assert!(err.contains("larger than max queue allocation"), "{err}");
    h.submit(gang_app("ok", "root.small.leaf", 300, "Hard"))
        .unwrap();
    h.submit(gang_app("soft", "root.small.leaf", 300, "hard"))
        .unwrap();
    // No placeholderAsk: a fair queue is fine.
    h.submit(app("plain", "root.fairq")).unwrap();
    let d = h.dump();
    assert_eq!(app_dump(&d, "ok")["gang_style"], "Hard");
    assert_eq!(
        app_dump(&d, "soft")["gang_style"],
        "Soft",
        "style is case-sensitive"
    );
    assert!(app_dump(&d, "f").is_null() && app_dump(&d, "m").is_null());

    // A placeholder ask without a task group is rejected with the reason.
    let mut bad = placeholder_ask("ok", "nogroup", "", 100, 1);
    bad.task_group_name.clear();
    assert_eq!(h.asks(vec![bad]).0, SICORE_OK);
    h.wait("rejected ask", |s| !s.rejected_asks.is_empty());
    h.seen(|s| {
        assert_eq!(s.rejected_asks[0].allocation_key, "nogroup");
        assert!(
            s.rejected_asks[0].reason.contains("no taskGroupName"),
            "{}",
            s.rejected_asks[0].reason
        );
    });
    // A real ask whose task group has no placeholders is an ordinary ask.
    assert_eq!(
        h.asks(vec![real_ask("ok", "lonely", "nobody", 100, 1)]).0,
        SICORE_OK
    );
    h.wait("ordinary", |s| {
        s.allocations.iter().any(|a| a.allocation_key == "lonely")
    });
    assert!(h.seen(|s| s.released.is_empty()));
}

#[test]
fn confirmations_that_match_nothing_change_nothing() {
    let h = gang_harness(
        SchedulerOptions::default(),
        Behaviour::default(),
        1,
        gang_app("g", "root.a", 200, ""),
    );
    place_placeholders(&h, 2);
    let phs = placeholders_of(&h, "g");
    // Unknown UUID, and a placeholder that is not being replaced.
    assert_eq!(
        h.releases(
            vec![confirm("g", "no-such-uuid"), confirm("g", &phs[0].uuid)],
            vec![]
        )
        .0,
        SICORE_OK
    );
    h.settle();
    let d = h.dump();
    assert_eq!(
        app_dump(&d, "g")["allocations"].as_array().unwrap().len(),
        2
    );
    assert!(h.seen(|s| s.released.is_empty()));

    submit_real_and_wait_for_swap(&h);
    let rel = replaced(&h).remove(0);
    // The same confirmation twice: one real allocation.
    assert_eq!(
        h.releases(
            vec![confirm("g", &rel.uuid), confirm("g", &rel.uuid)],
            vec![]
        )
        .0,
        SICORE_OK
    );
    assert_eq!(
        h.releases(vec![confirm("g", &rel.uuid)], vec![]).0,
        SICORE_OK
    );
    h.wait("real", |s| s.allocations.len() == 3);
    h.settle();
    assert_eq!(h.seen(|s| s.allocations.len()), 3);
    assert_eq!(h.seen(|s| s.released.len()), 1, "nothing echoed");
    let d = h.dump();
    assert_eq!(d["partitions"][0]["root"]["allocated"]["memory"], 200);
    assert_eq!(node_dump(&d, "node-0")["allocated"]["memory"], 200);
    assert_eq!(
        app_dump(&d, "g")["allocations"].as_array().unwrap().len(),
        2
    );
}

#[test]
fn a_placeholder_released_with_another_type_undoes_its_swap() {
    let h = gang_harness(
        SchedulerOptions::default(),
        Behaviour::default(),
        1,
        gang_app("g", "root.a", 200, ""),
    );
    place_placeholders(&h, 2);
    submit_real_and_wait_for_swap(&h);
    let first = replaced(&h).remove(0);
    // Stopped instead of confirmed: removed as a normal release (echoed),
    // and the real ask goes on to the other placeholder.
    assert_eq!(
        h.releases(vec![stopped("g", &first.uuid)], vec![]).0,
        SICORE_OK
    );
    h.wait("echo and a new replacement", |s| {
        s.released
            .iter()
            .any(|r| r.uuid == first.uuid && r.termination_type == STOPPED)
            && s.released
                .iter()
                .filter(|r| r.termination_type == PR)
                .count()
                == 2
    });
    let second = replaced(&h).remove(1);
    assert_ne!(second.uuid, first.uuid);
    assert_ne!(real_of(&second), real_of(&first));
    let d = h.dump();
    assert_eq!(d["partitions"][0]["root"]["allocated"]["memory"], 100);
    assert_eq!(node_dump(&d, "node-0")["allocated"]["memory"], 100);
}

#[test]
fn node_removal_during_a_replacement() {
    // Cross-node: the placeholder's node goes, the real allocation lands.
    let h = gang_harness(
        SchedulerOptions::default(),
        with_predicates(),
        3,
        gang_app("g", "root.a", 200, ""),
    );
    place_placeholders(&h, 2);
    let phs = placeholders_of(&h, "g");
    let ph_nodes: HashSet<String> = phs.iter().map(|p| p.node_id.clone()).collect();
    {
        let mut b = h.rec.behaviour.lock().unwrap();
        b.refuse_nodes = ph_nodes.clone();
    }
    submit_real_and_wait_for_swap(&h);
    let rel = replaced(&h).remove(0);
    let ph = phs.iter().find(|p| p.uuid == rel.uuid).unwrap().clone();
    let real_node = app_dump(&h.dump(), "g")["replacements"][0]["node"]
        .as_str()
        .unwrap()
        .to_string();
    assert_ne!(real_node, ph.node_id);
    let decommission = |id: &str| si::NodeInfo {
        action: si::node_info::ActionFromRm::Decomission as i32,
        ..node(id, 0, 0)
    };
    assert_eq!(h.nodes(vec![decommission(&ph.node_id)]).0, SICORE_OK);
    h.wait("real allocation lands", |s| s.allocations.len() == 3);
    let real = h.seen(|s| s.allocations[2].clone());
    assert_eq!(real.uuid, real_of(&rel));
    assert_eq!(real.node_id, real_node);
    h.seen(|s| assert!(s.log.iter().any(|l| l == "assume:real")));
    let d = h.dump();
    assert_eq!(app_dump(&d, "g")["allocated"]["memory"], 100);
    assert_eq!(app_dump(&d, "g")["placeholder"]["memory"], 100);
    assert_eq!(d["partitions"][0]["root"]["allocated"]["memory"], 200);
    // A late confirmation changes nothing.
    assert_eq!(
        h.releases(vec![confirm("g", &rel.uuid)], vec![]).0,
        SICORE_OK
    );
    h.settle();
    assert_eq!(h.seen(|s| s.allocations.len()), 3);
    assert_eq!(
        h.dump()["partitions"][0]["root"]["allocated"]["memory"],
        200
    );
}

#[test]
fn node_removal_of_the_real_allocations_node_undoes_the_swap() {
    let (h, ph, other) = vetoed_swap();
    h.wait("replacement", |s| s.released.len() == 1);
    let decommission = si::NodeInfo {
        action: si::node_info::ActionFromRm::Decomission as i32,
        ..node(other, 0, 0)
    };
    assert_eq!(h.nodes(vec![decommission]).0, SICORE_OK);
    h.settle();
    let d = h.dump();
    let a = app_dump(&d, "g");
    assert!(
        a["replacements"].as_array().unwrap().is_empty(),
        "swap undone"
    );
    assert_eq!(
        a["pending_asks"][0]["allocation_key"], "real",
        "ask restored"
    );
    assert_eq!(a["task_groups"][0]["free_placeholders"], 1);
    assert_eq!(h.seen(|s| s.released.len()), 1, "nothing new for the RM");
    // The RM had already stopped the placeholder: its confirmation now
    // removes it like a normal release, and the real ask becomes ordinary.
    // The node is let go only after the echo: a pass in between would
    // swap the free placeholder again, and the confirmation would then
    // confirm that swap instead.
    assert_eq!(
        h.releases(vec![confirm("g", &ph.uuid)], vec![]).0,
        SICORE_OK
    );
    h.wait("echo", |s| {
        s.released.iter().any(|r| r.termination_type == STOPPED)
    });
    h.rec.behaviour.lock().unwrap().refuse_nodes.clear();
    h.wait("ordinary allocation", |s| {
        s.allocations.iter().any(|a| a.allocation_key == "real")
    });
    let d = h.dump();
    assert_eq!(d["partitions"][0]["root"]["allocated"]["memory"], 100);
    assert_eq!(
        node_dump(&d, &ph.node_id)["allocations"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
}

#[test]
fn node_removal_with_both_allocations_on_it_restores_the_ask() {
    let h = gang_harness(
        SchedulerOptions::default(),
        Behaviour::default(),
        1,
        gang_app("g", "root.a", 100, ""),
    );
    place_placeholders(&h, 1);
    submit_real_and_wait_for_swap(&h);
    let ph = placeholders_of(&h, "g").remove(0);
    let decommission = si::NodeInfo {
        action: si::node_info::ActionFromRm::Decomission as i32,
        ..node("node-0", 0, 0)
    };
    assert_eq!(h.nodes(vec![decommission]).0, SICORE_OK);
    h.wait("placeholder released", |s| {
        s.released
            .iter()
            .any(|r| r.uuid == ph.uuid && r.message == "Node node-0 Removed")
    });
    // The real ask is pending again, now as an ordinary ask; a new node runs it.
    assert_eq!(h.nodes(vec![node("node-9", 1000, 10)]).0, SICORE_OK);
    h.wait("ordinary allocation", |s| {
        s.allocations
            .iter()
            .any(|a| a.allocation_key == "real" && a.node_id == "node-9")
    });
    let d = h.dump();
    assert_eq!(d["partitions"][0]["root"]["allocated"]["memory"], 100);
    assert_eq!(app_dump(&d, "g")["allocated"]["memory"], 100);
}

#[test]
fn timeout_undoes_swaps_in_flight_and_late_confirmations_release() {
    let mut a = gang_app("g", "root.a", 300, "Soft");
    a.execution_timeout_milli_seconds = 1500;
    let h = gang_harness(SchedulerOptions::default(), with_predicates(), 3, a);
    place_placeholders(&h, 2);
    let phs = placeholders_of(&h, "g");
    // Cross-node swap in flight when the timer fires.
    h.rec.behaviour.lock().unwrap().refuse_nodes = phs.iter().map(|p| p.node_id.clone()).collect();
    assert_eq!(
        h.asks(vec![real_ask("g", "real", "tg", 100, 1)]).0,
        SICORE_OK
    );
    h.wait("replacement", |s| {
        s.released.iter().any(|r| r.termination_type == PR)
    });
    let rel = replaced(&h).remove(0);
    h.wait("timeout releases", |s| {
        s.released
            .iter()
            .filter(|r| r.termination_type == TIMEOUT)
            .count()
            == 2
    });
    let d = h.dump();
    let ad = app_dump(&d, "g");
    assert_eq!(ad["state"], "Resuming");
    assert!(
        ad["replacements"].as_array().unwrap().is_empty(),
        "swap undone"
    );
    let used: i64 = d["partitions"][0]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["allocated"]["memory"].as_i64().unwrap_or(0))
        .sum();
    assert_eq!(used, 200, "the real allocation left its node");
    // The RM confirms the replacement late: released like a normal release.
    let others: Vec<si::AllocationRelease> = phs
        .iter()
        .filter(|p| p.uuid != rel.uuid)
        .map(|p| stopped("g", &p.uuid))
        .collect();
    assert_eq!(
        h.releases(vec![confirm("g", &rel.uuid)], vec![]).0,
        SICORE_OK
    );
    assert_eq!(h.releases(others, vec![]).0, SICORE_OK);
    h.wait("accepted", |s| {
        s.app_updates
            .iter()
            .filter(|u| u.state == "Accepted")
            .count()
            == 2
    });
    assert_eq!(
        h.seen(|s| s
            .released
            .iter()
            .filter(|r| r.termination_type == STOPPED)
            .count()),
        2
    );
    assert_eq!(
        h.seen(|s| s.allocations.len()),
        2,
        "the real allocation never landed"
    );
    let d = h.dump();
    assert!(d["partitions"][0]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .all(|n| n["allocations"].as_array().unwrap().is_empty()));
}

#[test]
fn a_bigger_replacement_needs_queue_headroom_for_the_difference() {
    let yaml = "
partitions:
  - name: default
    queues:
      - name: root
        submitacl: '*'
        queues:
          - name: capped
            resources:
              max: {memory: 300, vcore: 10}
";
    let h = Harness::configured(yaml_options(yaml), 2);
    h.submit(gang_app("g", "root.capped", 200, "")).unwrap();
    place_placeholders(&h, 2);
    // 250 in place of 100: the queue would end at 350 > 300. It waits.
    assert_eq!(
        h.asks(vec![real_ask("g", "huge", "tg", 250, 1)]).0,
        SICORE_OK
    );
    h.settle();
    assert!(
        h.seen(|s| s.released.is_empty()),
        "no replacement over the queue max"
    );
    let d = h.dump();
    assert!(app_dump(&d, "g")["replacements"]
        .as_array()
        .unwrap()
        .is_empty());
    assert_eq!(d["partitions"][0]["root"]["allocated"]["memory"], 200);
    // 150 in place of 100 fits (250 <= 300): replaced, the excess held.
    let release = si::AllocationAskRelease {
        partition_name: "default".into(),
        application_id: "g".into(),
        allocationkey: "huge".into(),
        termination_type: STOPPED,
        ..Default::default()
    };
    assert_eq!(h.releases(vec![], vec![release]).0, SICORE_OK);
    assert_eq!(
        h.asks(vec![real_ask("g", "big", "tg", 150, 1)]).0,
        SICORE_OK
    );
    h.wait("replacement", |s| {
        s.released.iter().any(|r| r.termination_type == PR)
    });
    let d = h.dump();
    assert_eq!(
        find_queue(&d, "default", "root.capped").unwrap()["allocated"]["memory"],
        250
    );
    let rel = replaced(&h).remove(0);
    assert_eq!(
        h.releases(vec![confirm("g", &rel.uuid)], vec![]).0,
        SICORE_OK
    );
    h.wait("real", |s| s.allocations.len() == 3);
    let d = h.dump();
    assert_eq!(
        find_queue(&d, "default", "root.capped").unwrap()["allocated"]["memory"],
        250
    );
    assert_eq!(app_dump(&d, "g")["allocated"]["memory"], 150);
}
