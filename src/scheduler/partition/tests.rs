//! The scheduling pass, the reserved pass and releases, driven step by step
//! (see `scheduler::testkit`): what the RM would observe after each step.

use std::time::Duration;

use crate::proto::si::v1::TerminationType;
use crate::scheduler::testkit::{ask, res, Harness};

fn config(nodesort: &str, leaves: &str) -> String {
    format!(
        "partitions:
  - name: default
    nodesortpolicy: {{type: {nodesort}}}
    queues:
      - name: root
        submitacl: '*'
        queues:
{leaves}"
    )
}

const TWO_LEAVES: &str = "          - name: a\n          - name: b\n";
/// Two fifo leaves: no `stateaware` wait for a second application.
const FIFO_LEAVES: &str = "          - name: a
            properties: {application.sort.policy: fifo}
          - name: b
            properties: {application.sort.policy: fifo}
";

/// Two nodes of 300 memory, application `app` in `root.a`.
fn two_nodes(nodesort: &str) -> Harness {
    let mut h = Harness::new(&config(nodesort, TWO_LEAVES));
    h.node("n1", 300);
    h.node("n2", 300);
    h.app("app", "root.a");
    h
}

fn nodes_of(placed: &[(String, String)]) -> Vec<&str> {
    placed.iter().map(|(_, n)| n.as_str()).collect()
}

#[test]
fn fair_spreads_and_binpacking_packs() {
    let mut h = two_nodes("fair");
    h.ask(ask("app", "x", 100, 4));
    let seen = h.schedule();
    // Least used first, ties by id: n1, n2, n1, n2.
    assert_eq!(nodes_of(&seen.placed()), ["n1", "n2", "n1", "n2"]);
    // The first allocation starts the application, the second runs it.
    assert_eq!(seen.states_of("app"), ["Starting", "Running"]);

    let mut h = two_nodes("binpacking");
    h.ask(ask("app", "x", 100, 4));
    // Most used first: n1 fills before n2 is touched.
    assert_eq!(nodes_of(&h.schedule().placed()), ["n1", "n1", "n1", "n2"]);
}

#[test]
fn higher_priority_goes_first_and_a_pass_places_everything_that_fits() {
    let mut h = Harness::new(&config("fair", TWO_LEAVES));
    h.node("n1", 200);
    h.app("app", "root.a");
    h.ask(ask("app", "low", 100, 2));
    let mut high = ask("app", "high", 100, 1);
    high.priority = 10;
    h.ask(high);
    let seen = h.schedule();
    let keys: Vec<&str> = seen.allocated.iter().map(|a| &*a.key).collect();
    assert_eq!(keys, ["high", "low"]);
    for a in &seen.allocated {
        assert_eq!(&**a.app(), "app");
        assert_eq!(&**a.queue(), "root.a");
        assert_eq!(&**a.partition(), "default");
        assert_eq!(a.uuid.len(), 36);
    }
    // Nothing left fits: the next pass decides nothing.
    assert!(h.schedule().allocated.is_empty());
    assert_eq!(h.p.apps["app"].asks["low"].pending_repeat(), 1);
}

#[test]
fn a_leaf_max_holds_until_usage_is_released() {
    let leaves = "          - name: a\n            resources: {max: {memory: 200}}\n";
    let mut h = Harness::new(&config("fair", leaves));
    h.node("n1", 1000);
    h.app("app", "root.a");
    h.ask(ask("app", "x", 100, 3));
    let first = h.schedule();
    assert_eq!(first.allocated.len(), 2, "the third would pass the max");
    assert!(h.schedule().allocated.is_empty());
    let uuid = first.allocated[0].uuid.to_string();
    let rel = h.release("app", &uuid, TerminationType::StoppedByRm);
    assert_eq!(rel.released_as(TerminationType::StoppedByRm)[0].uuid, uuid);
    // The freed headroom takes the third.
    let next = h.schedule();
    assert_eq!(next.placed(), [("x".to_string(), "n1".to_string())]);
}

#[test]
fn a_reserved_node_waits_for_its_ask_and_the_reserved_pass_fills_it_first() {
    let mut h = Harness::with(&config("fair", FIFO_LEAVES), |t| {
        t.reservation_delay = Some(Duration::from_secs(2));
    });
    h.node("n1", 150);
    h.node("n2", 150);
    h.app("a", "root.a");
    h.ask(ask("a", "hold", 100, 2));
    let held = h.schedule().allocated;
    assert_eq!(
        nodes_of(
            &held
                .iter()
                .map(|a| (a.key.to_string(), a.node.to_string()))
                .collect::<Vec<_>>()
        ),
        ["n1", "n2"]
    );
    // 50 free on each node: the big ask fits the queue but no node, and
    // is too young to reserve one.
    h.app("big", "root.a");
    h.ask(ask("big", "big", 100, 1));
    assert!(h.schedule().allocated.is_empty());
    assert!(h.p.reservations.is_empty());
    // Old enough: it reserves the first of the equally good nodes.
    h.advance(Duration::from_secs(2));
    assert!(h.schedule().allocated.is_empty());
    let n1 = h.p.nodes.slot_of("n1").unwrap();
    assert_eq!(h.p.reservations.on_node(n1).map(|r| &*r.key), Some("big"));
    // A small ask would go first to n1 (same usage, lower id); it is kept
    // off the reserved node.
    h.app("small", "root.b");
    h.ask(ask("small", "small", 50, 1));
    assert_eq!(
        h.schedule().placed(),
        [("small".to_string(), "n2".to_string())]
    );
    // Room frees on n1: the reserved pass places the big ask there.
    h.release("a", &held[0].uuid.to_string(), TerminationType::StoppedByRm);
    assert_eq!(
        h.schedule().placed(),
        [("big".to_string(), "n1".to_string())]
    );
    assert!(h.p.reservations.is_empty());
}

#[test]
fn releasing_by_uuid_and_the_whole_application() {
    let mut h = two_nodes("fair");
    h.ask(ask("app", "x", 100, 3));
    let placed = h.schedule().allocated;
    assert_eq!(placed.len(), 3);
    // One by UUID: echoed with STOPPED_BY_RM, its key forgotten, its room free.
    let one = placed[1].uuid.to_string();
    let seen = h.release("app", &one, TerminationType::StoppedByRm);
    let echoed: Vec<&str> = seen
        .released_as(TerminationType::StoppedByRm)
        .iter()
        .map(|r| r.uuid.as_str())
        .collect();
    assert_eq!(echoed, [one.as_str()]);
    assert_eq!(seen.forgotten, ["x"]);
    assert_eq!(h.uuids_of("app").len(), 2);
    assert_eq!(
        h.p.nodes.get(&placed[1].node).unwrap().allocated(),
        &res(&[(
            "memory",
            if placed[1].node == placed[0].node {
                100
            } else {
                0
            }
        )])
    );
    // A UUID of another application changes nothing.
    h.app("other", "root.b");
    let uuid = placed[0].uuid.to_string();
    let seen = h.release("other", &uuid, TerminationType::StoppedByRm);
    assert!(seen.released.is_empty() && seen.forgotten.is_empty());
    assert_eq!(h.uuids_of("app").len(), 2);
    // No UUID: every allocation of the application.
    let seen = h.release("app", "", TerminationType::StoppedByRm);
    let mut echoed: Vec<String> = seen.released.iter().map(|r| r.uuid.clone()).collect();
    echoed.sort();
    let mut want = vec![placed[0].uuid.to_string(), placed[2].uuid.to_string()];
    want.sort();
    assert_eq!(echoed, want);
    assert!(h.uuids_of("app").is_empty());
    for n in h.p.nodes.values() {
        assert!(n.allocated().is_zero());
    }
    assert!(h
        .p
        .queues
        .get(crate::scheduler::objects::queue::ROOT)
        .allocated
        .is_zero());
    // With nothing left and no asks, the application moves on to Completing.
    assert_eq!(seen.states_of("app"), ["Completing"]);
}

#[test]
fn the_completing_timer_completes_an_application_on_the_clock() {
    let mut h = two_nodes("fair");
    h.ask(ask("app", "x", 100, 1));
    h.schedule();
    let seen = h.release("app", "", TerminationType::StoppedByRm);
    assert_eq!(seen.states_of("app"), ["Completing"]);
    let completing = h.p.timeouts.completing;
    assert!(h
        .advance(completing - Duration::from_millis(1))
        .states
        .is_empty());
    let seen = h.advance(Duration::from_millis(1));
    assert_eq!(seen.states_of("app"), ["Completed"]);
    assert!(!h.p.apps.contains_key("app"));
}
