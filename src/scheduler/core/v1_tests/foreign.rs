//! v1 foreign allocations: the nodes' occupied resource.

use super::*;

// ----------------------------------------------------------------- foreign

#[test]
fn foreign_allocations_are_the_nodes_occupied_resource() {
    let mut core = v1();
    let s = set_foreign(
        &mut core,
        vec![foreign("f1", "n1", 300), foreign("f2", "n1", 500)],
    );
    assert!(s.is_silent(), "never echoed: {s:?}");
    let p = part(&core);
    let n = node_snap(&p, "n1");
    assert_eq!(n.occupied, m(800));
    assert_eq!(n.available, m(200));
    let keys: Vec<&str> = n.foreign.keys().map(String::as_str).collect();
    assert_eq!(keys, ["f1", "f2"]);
    assert_eq!(n.foreign["f2"], m(500));
    let dump: serde_json::Value = serde_json::from_str(&core.dump_json()).unwrap();
    let dumped = &dump["partitions"][0]["nodes"][0]["foreign"];
    assert_eq!(dumped["f1"]["memory"], 300, "{dumped}");
    assert_eq!(check_sums(&p), 0, "not the core's allocations");
    // A request that only fits without them waits.
    asks(&mut core, vec![ask("app", "k", 300)]);
    assert!(pass(&mut core).new.is_empty());
    // Re-sending resizes; releasing (no application) removes.
    assert!(set_foreign(&mut core, vec![foreign("f2", "n1", 100)]).is_silent());
    assert_eq!(node_snap(&part(&core), "n1").occupied, m(400));
    assert_eq!(pass(&mut core).new.len(), 1);
    let s = releases(&mut core, vec![release("", "f1", T::StoppedByRm)]);
    assert!(s.is_silent(), "{s:?}");
    let p = part(&core);
    assert_eq!(node_snap(&p, "n1").occupied, m(100));
    assert_eq!(node_snap(&p, "n1").available, m(600));
    // Unknown keys are ignored.
    assert!(releases(&mut core, vec![release("", "f1", T::StoppedByRm)]).is_silent());
}

#[test]
fn foreign_allocations_that_cannot_be_tracked_are_rejected() {
    let mut core = v1();
    place(&mut core, vec![placed("app", "mine", 10, "n1")]);
    seen(&mut core);
    let mut bad = foreign("neg", "n1", 1);
    bad.resource = Ok(res(&[("memory", -1)]));
    let s = set_foreign(
        &mut core,
        vec![
            foreign("nowhere", "", 10),
            foreign("lost", "n7", 10),
            foreign("mine", "n1", 10),
            bad,
        ],
    );
    let keys: Vec<&str> = s
        .rejected
        .iter()
        .map(|r| r.allocation_key.as_str())
        .collect();
    assert_eq!(keys, ["nowhere", "lost", "mine", "neg"]);
    assert!(s.rejected.iter().all(|r| r.application_id.is_empty()));
    assert!(s.rejected[0].reason.contains("no node ID"));
    assert!(s.rejected[1].reason.contains("node n7"));
    assert!(node_snap(&part(&core), "n1").occupied.is_empty());
    // And the other way round: an ask for a foreign key.
    set_foreign(&mut core, vec![foreign("f", "n1", 10)]);
    let s = asks(&mut core, vec![ask("app", "f", 10)]);
    assert_eq!(s.rejected.len(), 1);
    assert!(s.rejected[0].reason.contains("foreign"));
}

#[test]
fn foreign_sums_past_an_i64_are_rejected_and_change_nothing() {
    let mut core = v1();
    set_foreign(&mut core, vec![foreign("f1", "n1", i64::MAX - 1)]);
    let s = set_foreign(&mut core, vec![foreign("f2", "n1", 2)]);
    assert_eq!(s.rejected.len(), 1);
    assert!(s.rejected[0].reason.contains("overflow"), "{s:?}");
    assert_eq!(node_snap(&part(&core), "n1").occupied, m(i64::MAX - 1));
    // Resizing the one there is exact (its old size is taken out first).
    assert!(set_foreign(&mut core, vec![foreign("f1", "n1", i64::MAX)])
        .rejected
        .is_empty());
    assert_eq!(node_snap(&part(&core), "n1").occupied, m(i64::MAX));
    // The node's free resource saturates; nothing fits.
    asks(&mut core, vec![ask("app", "k", 1)]);
    assert!(pass(&mut core).new.is_empty());
    releases(&mut core, vec![release("", "f1", T::StoppedByRm)]);
    assert!(node_snap(&part(&core), "n1")
        .occupied
        .values()
        .all(|v| *v == 0));
    assert_eq!(pass(&mut core).new.len(), 1);
}

#[test]
fn a_removed_node_takes_its_foreign_allocations() {
    let mut core = v1();
    set_foreign(&mut core, vec![foreign("f1", "n1", 10)]);
    node_answers(&mut core, vec![(node("n1", 4), 0)]);
    node_answers(&mut core, vec![(node("n1", 1), 1000)]);
    assert!(node_snap(&part(&core), "n1").occupied.is_empty());
    // The key is free for a new node.
    assert!(set_foreign(&mut core, vec![foreign("f1", "n1", 10)])
        .rejected
        .is_empty());
    assert_eq!(node_snap(&part(&core), "n1").occupied, m(10));
}
