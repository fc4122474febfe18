//! Gang: swaps undone by node removal or by a placeholder released with another type.

use super::*;

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
