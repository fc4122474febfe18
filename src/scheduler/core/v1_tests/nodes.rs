//! v1 node actions (CREATE_DRAIN, DECOMMISSION) and application states.

use super::*;

// ------------------------------------------------------------------- nodes

#[test]
fn create_drain_creates_an_unschedulable_node_with_one_answer() {
    let mut core = v1();
    let (ok, bad) = node_answers(&mut core, vec![(node("n2", CREATE_DRAIN), 1000)]);
    assert_eq!((ok, bad.len()), (vec!["n2".to_string()], 0));
    assert!(!node_snap(&part(&core), "n2").schedulable);
    // Fill n1 so only n2 could take the next request.
    place(&mut core, vec![placed("app", "fill", 1000, "n1")]);
    asks(&mut core, vec![ask("app", "k", 100)]);
    assert!(pass(&mut core).new.is_empty(), "n2 is draining");
    let (ok, _) = node_answers(&mut core, vec![(node("n2", 5), 0)]);
    assert_eq!(ok, ["n2"], "DRAIN_TO_SCHEDULABLE is answered too");
    assert!(node_snap(&part(&core), "n2").schedulable);
    assert_eq!(pass(&mut core).new, [("k".into(), "k".into(), "n2".into())]);
}

#[test]
fn every_node_of_a_v1_request_gets_exactly_one_answer() {
    let mut core = v1();
    let mut bad_partition = node("np", 1);
    bad_partition
        .attributes
        .insert(node::ATTR_PARTITION.into(), "nowhere".into());
    let mut negative = node("neg", CREATE_DRAIN);
    negative.schedulable_resource = mem(-1);
    let mut update = node("n1", 2);
    update.schedulable_resource = mem(2000);
    let infos = vec![
        (node("n2", CREATE_DRAIN), 100),
        (node("n2", CREATE_DRAIN), 100), // duplicate
        (bad_partition, 100),
        (negative, 0),
        (node("n3", 0), 100),    // unknown action
        (node("n4", 42), 100),   // unknown action
        (node("ghost", 2), 100), // update of an unknown node
        (update, 0),
        (node("n2", 3), 0), // DRAIN_NODE
        (node("n1", 9), 0), // unknown action, known node
    ];
    let (ok, bad) = node_answers(&mut core, infos);
    assert_eq!(ok, ["n2", "n1", "n2"]);
    assert_eq!(bad, ["n2", "np", "neg", "n3", "n4", "ghost", "n1"]);
    let p = part(&core);
    assert_eq!(p.nodes.len(), 2);
    assert_eq!(node_snap(&p, "n1").capacity, m(2000));
    assert_eq!(p.total, m(2100));
}

#[test]
fn v012_partitions_answer_create_only_and_ignore_create_drain() {
    let (mut core, _) = core_of(Edition::V012, |_| {});
    let (ok, bad) = node_answers(
        &mut core,
        vec![
            (node("n1", 1), 100),
            (node("n2", CREATE_DRAIN), 100),
            (node("n1", 2), 200),
            (node("ghost", 2), 200),
        ],
    );
    assert_eq!((ok, bad), (vec!["n1".to_string()], vec![]));
    let p = part(&core);
    assert_eq!(p.nodes.len(), 1, "action 6 is no action in v0.12");
}

#[test]
fn decommission_releases_the_nodes_allocations_and_is_answered() {
    let mut core = v1();
    place(&mut core, vec![placed("app", "a", 100, "n1")]);
    asks(&mut core, vec![ask("app", "b", 100)]);
    pass(&mut core);
    core.step(Command::Node(si::NodeRequest {
        rm_id: RM.into(),
        nodes: vec![node("n1", 4)],
    }));
    let s = seen(&mut core);
    assert_eq!(s.accepted_nodes, ["n1"]);
    let mut keys = s.released_keys(T::StoppedByRm);
    keys.sort();
    assert_eq!(keys, ["a", "b"]);
    assert!(part(&core).nodes.is_empty());
    // The pod is recreated and asked for again: a new request.
    node_answers(&mut core, vec![(node("n1", 1), 1000)]);
    asks(&mut core, vec![ask("app", "b", 100)]);
    assert_eq!(pass(&mut core).new.len(), 1);
}

// ------------------------------------------------------------ app states

#[test]
fn v1_applications_go_from_accepted_to_running_with_no_timer() {
    let (mut core, clock) = core_of(Edition::V1, |o| {
        o.app_start_timeout = Duration::from_secs(300)
    });
    node_answers(&mut core, vec![(node("n1", 1), 1000)]);
    add_app(&mut core, "app", "root.a", None);
    asks(
        &mut core,
        vec![ask("app", "k1", 100), ask("app", "k2", 100)],
    );
    let s = pass(&mut core);
    assert_eq!(
        s.states_of("app"),
        ["Running"],
        "Accepted came with the ask"
    );
    assert_eq!(app_state(&core, "app"), "Running");
    clock.advance(Duration::from_secs(301));
    core.tick();
    assert!(seen(&mut core).states.is_empty(), "no start timer fired");
}

#[test]
fn a_resize_at_the_waiting_ask_limit_is_no_new_waiting_ask() {
    let (mut core, _) = core_of(Edition::V1, |o| o.max_asks_per_rm = 1);
    node_answers(&mut core, vec![(node("n1", 1), 1000)]);
    add_app(&mut core, "app", "root.a", None);
    asks(&mut core, vec![ask("app", "k", 100)]);
    pass(&mut core);
    asks(&mut core, vec![ask("app", "big", 5000)]);
    // One waiting ask: the limit. Resizing the allocated key is allowed,
    // and so is replacing the waiting one; a new request is not.
    let s = asks(
        &mut core,
        vec![
            ask("app", "k", 200),
            ask("app", "big", 4000),
            ask("app", "new", 1),
        ],
    );
    let keys: Vec<&str> = s
        .rejected
        .iter()
        .map(|r| r.allocation_key.as_str())
        .collect();
    assert_eq!(keys, ["new"], "{s:?}");
    let p = part(&core);
    assert_eq!(check_sums(&p), 200);
    assert_eq!(p.root.pending, m(4000));
}
