//! v1 edge: requests answered through new and release records; node events.

use super::*;

#[test]
fn create_drain_is_answered_and_requests_get_new_and_release_by_key() {
    let rm = V1Rm::new(CONFIG, false);
    assert_eq!(rm.nodes(vec![rmv1::node("n1", 1000, 10)]).0, SICORE_OK);
    rm.rec
        .wait("CREATE_DRAIN answered", |s| s.nodes_accepted == ["n1"]);
    rm.app("app-1", "root.a");
    // Unschedulable until the RM says so.
    assert_eq!(
        rm.allocate(vec![rmv1::ask("app-1", "pod-1", 100, 1)], vec![])
            .0,
        SICORE_OK
    );
    std::thread::sleep(Duration::from_millis(200));
    assert!(rm.rec.copy().new.is_empty(), "placed on a draining node");
    let ready = rmv1::node_action("n1", si18::node_info::ActionFromRm::DrainToSchedulable);
    assert_eq!(rm.nodes(vec![ready]).0, SICORE_OK);
    rm.rec.wait("pod-1 allocated", |s| s.new.len() == 1);
    let a = rm.rec.copy().new[0].clone();
    assert_eq!(
        (
            a.allocation_key.as_str(),
            a.application_id.as_str(),
            a.node_id.as_str()
        ),
        ("pod-1", "app-1", "n1")
    );
    // The same message again changes nothing (merge by key).
    assert_eq!(
        rm.allocate(vec![rmv1::ask("app-1", "pod-1", 100, 1)], vec![])
            .0,
        SICORE_OK
    );
    assert_eq!(
        rm.allocate(vec![], vec![rmv1::release("app-1", "pod-1")]).0,
        SICORE_OK
    );
    rm.rec.wait("pod-1 released", |s| !s.released.is_empty());
    let s = rm.rec.copy();
    assert_eq!(s.new.len(), 1, "{s:#?}");
    assert_eq!(s.released[0].allocation_key, "pod-1");
    assert_eq!(
        s.released[0].termination_type,
        si18::TerminationType::StoppedByRm as i32
    );
}

#[test]
fn a_placed_allocation_is_echoed_in_new() {
    let rm = V1Rm::new(CONFIG, false);
    rm.ready_nodes(&["n1"]);
    rm.app("app-1", "root.a");
    let mut placed = rmv1::ask("app-1", "running-pod", 100, 1);
    placed.node_id = "n1".into();
    assert_eq!(rm.allocate(vec![placed], vec![]).0, SICORE_OK);
    rm.rec.wait("echo", |s| s.new.len() == 1);
    let a = rm.rec.copy().new[0].clone();
    assert_eq!(
        (a.allocation_key.as_str(), a.node_id.as_str()),
        ("running-pod", "n1")
    );
    // An unknown application is rejected through the callbacks, by key.
    assert_eq!(
        rm.allocate(vec![rmv1::ask("nope", "k9", 1, 1)], vec![]).0,
        SICORE_OK
    );
    rm.rec.wait("rejection", |s| !s.rejected.is_empty());
    assert_eq!(rm.rec.copy().rejected[0].allocation_key, "k9");
}

#[test]
fn new_reaches_the_rm_before_the_next_predicates_call() {
    // Bin packing would put every pod on the first node: only a current
    // cache keeps them apart.
    let packing = CONFIG.replace(
        "  - name: default\n",
        "  - name: default\n    nodesortpolicy: {type: binpacking}\n",
    );
    let rm = V1Rm::new(&packing, true);
    let nodes = ["n1", "n2", "n3", "n4"];
    rm.ready_nodes(&nodes);
    rm.app("app-1", "root.a");
    let asks = (1..=4)
        .map(|i| rmv1::ask("app-1", &format!("pod-{i}"), 100, 1))
        .collect();
    assert_eq!(rm.allocate(asks, vec![]).0, SICORE_OK);
    rm.rec.wait("four pods placed", |s| s.new.len() == 4);
    let s = rm.rec.copy();
    assert!(s.violations.is_empty(), "stale cache: {:?}", s.violations);
    let mut used: Vec<&str> = s.new.iter().map(|a| a.node_id.as_str()).collect();
    used.sort();
    assert_eq!(used, nodes, "one pod per node");
    assert!(s.predicate_calls >= 4);
    // A fifth pod finds every node taken.
    assert_eq!(
        rm.allocate(vec![rmv1::ask("app-1", "pod-5", 100, 1)], vec![])
            .0,
        SICORE_OK
    );
    rm.rec.wait("pod-5 refused everywhere", |s| s.refused >= 4);
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(rm.rec.copy().new.len(), 4);
}

#[test]
fn node_events_arrive_as_v1_records() {
    let rm = V1Rm::new(CONFIG, false);
    use si18::event_record::{ChangeDetail, ChangeType, Type};
    let has = |s: &Seen, change: ChangeType, detail: ChangeDetail| {
        s.events.iter().any(|e| {
            e.r#type == Type::Node as i32
                && e.object_id == "n1"
                && e.event_change_type == change as i32
                && e.event_change_detail == detail as i32
        })
    };
    // The store keeps the latest record per object between flushes, so
    // each record is awaited before the next change of the node.
    assert_eq!(rm.nodes(vec![rmv1::node("n1", 1000, 10)]).0, SICORE_OK);
    rm.rec.wait("node ADD", |s| {
        has(s, ChangeType::Add, ChangeDetail::DetailsNone)
    });
    assert_eq!(
        rm.nodes(vec![rmv1::node_action(
            "n1",
            si18::node_info::ActionFromRm::Decomission
        )])
        .0,
        SICORE_OK
    );
    rm.rec.wait("node REMOVE/NODE_DECOMISSION", |s| {
        has(s, ChangeType::Remove, ChangeDetail::NodeDecomission)
    });
    let s = rm.rec.copy();
    let add = s
        .events
        .iter()
        .find(|e| e.event_change_type == ChangeType::Add as i32)
        .unwrap();
    assert!(add.message.contains("n1"), "{add:?}");
}
