//! Gang: placeholders replaced by real allocations, on the same or another node, of any size.

use super::*;

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
