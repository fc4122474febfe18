//! Reference details (issue 11 part 5): the fair order's tie-break by
//! pending demand, `childtemplate.maxapplications`, unlimited nodes.

use crate::common::*;
use sicore::ffi::sicore_status::*;
use sicore::proto::si::v1 as si;
use sicore::proto::sicore::v1::SchedulerOptions;

fn allocated_apps(h: &Harness) -> Vec<String> {
    h.seen(|s| {
        s.allocations
            .iter()
            .map(|a| a.application_id.clone())
            .collect()
    })
}

/// Queues `root.a` and `root.b` under the default fair policy, listed in
/// the configuration in `order`, one large node, and applications `app-a`
/// in `root.a` and `app-b` in `root.b`.
fn two_fair_queues(order: [&str; 2]) -> Harness {
    let h = Harness::with_behaviour(
        yaml_options(&format!(
            "
partitions:
  - name: default
    queues:
      - name: root
        submitacl: '*'
        queues: [{{name: {}}}, {{name: {}}}]
",
            order[0], order[1]
        )),
        Behaviour::default(),
    );
    assert_eq!(h.register("rm", "queues").0, SICORE_OK);
    assert_eq!(h.nodes(vec![node("n1", 10_000, 100)]).0, SICORE_OK);
    h.wait("node", |s| s.nodes_accepted.len() == 1);
    assert_eq!(h.submit(app("app-a", "root.a")), Ok(()));
    assert_eq!(h.submit(app("app-b", "root.b")), Ok(()));
    h
}

#[test]
fn a_usage_tie_goes_to_the_queue_with_the_larger_pending_demand() {
    // Queues a and b both use nothing (a tie), b wants more of every
    // resource type: b goes first although a sorts first by name.
    let h = two_fair_queues(["a", "b"]);
    // One request: both asks are in before the pass that places them.
    let asks = vec![
        ask("app-a", "small", 100, 1, 1),
        ask("app-b", "large", 200, 2, 1),
    ];
    assert_eq!(h.asks(asks).0, SICORE_OK);
    h.wait("two allocations", |s| s.allocations.len() == 2);
    assert_eq!(allocated_apps(&h), ["app-b", "app-a"]);
}

#[test]
fn without_a_pending_difference_the_tie_goes_by_name() {
    let h = two_fair_queues(["b", "a"]);
    let asks = vec![ask("app-b", "kb", 100, 1, 1), ask("app-a", "ka", 100, 1, 1)];
    assert_eq!(h.asks(asks).0, SICORE_OK);
    h.wait("two allocations", |s| s.allocations.len() == 2);
    assert_eq!(allocated_apps(&h), ["app-a", "app-b"]);
}

const TEMPLATE: &str = "
partitions:
  - name: default
    placementrules:
      - name: provided
        create: true
    queues:
      - name: root
        submitacl: '*'
        queues:
          - name: tenants
            parent: true
            childtemplate:
              maxapplications: 1
              resources:
                max: {memory: 5000}
          - name: open
            parent: true
";

#[test]
fn childtemplate_maxapplications_limits_the_dynamic_leaves() {
    let h = Harness::configured(yaml_options(TEMPLATE), 2);
    for (id, queue) in [
        ("t1", "root.tenants.t"),
        ("t2", "root.tenants.t"),
        ("o1", "root.open.o"),
        ("o2", "root.open.o"),
    ] {
        assert_eq!(h.submit(app(id, queue)), Ok(()));
    }
    let asks = ["t1", "t2", "o1", "o2"]
        .iter()
        .map(|a| ask(a, &format!("{a}-k"), 100, 1, 1))
        .collect();
    assert_eq!(h.asks(asks).0, SICORE_OK);
    h.wait("three allocations", |s| s.allocations.len() == 3);
    h.settle();
    let d = h.dump();
    let t = find_queue(&d, "default", "root.tenants.t").expect("dynamic leaf");
    assert_eq!(t["max_applications"], 1, "{t:#}");
    assert_eq!(t["max"]["memory"], 5000);
    let o = find_queue(&d, "default", "root.open.o").expect("dynamic leaf");
    assert_eq!(o["max_applications"], 0);
    // One of t1/t2 runs, the other waits for the slot; both of the open
    // queue run.
    let mut apps = allocated_apps(&h);
    apps.sort();
    assert_eq!(apps.len(), 3);
    assert!(apps.contains(&"o1".to_string()) && apps.contains(&"o2".to_string()));
    assert!(
        apps.contains(&"t1".to_string()) != apps.contains(&"t2".to_string()),
        "{apps:?}"
    );
}

fn unlimited(id: &str) -> si::NodeInfo {
    let mut n = node(id, 0, 0);
    n.schedulable_resource = None;
    n.attributes
        .insert("yunikorn.apache.org/nodeType".into(), "unlimited".into());
    n
}

fn rejection(h: &Harness, id: &str) -> String {
    h.wait("node verdict", |s| {
        s.nodes_accepted.iter().any(|n| n == id) || s.nodes_rejected.iter().any(|r| r.node_id == id)
    });
    h.seen(|s| {
        s.nodes_rejected
            .iter()
            .find(|r| r.node_id == id)
            .map(|r| r.reason.clone())
            .unwrap_or_default()
    })
}

#[test]
fn an_unlimited_node_needs_reservations_off() {
    let h = Harness::configured(SchedulerOptions::default(), 0);
    assert_eq!(h.nodes(vec![unlimited("u")]).0, SICORE_OK);
    assert_eq!(
        rejection(&h, "u"),
        "Reservation is enabled, registering unlimited node is forbidden"
    );
}

#[test]
fn an_unlimited_node_comes_alone_and_first() {
    let o = SchedulerOptions {
        disable_reservation: true,
        ..Default::default()
    };
    let h = Harness::configured(o, 0);
    // Not with other nodes in the same request.
    assert_eq!(
        h.nodes(vec![unlimited("u0"), node("n0", 1000, 10)]).0,
        SICORE_OK
    );
    assert_eq!(
        rejection(&h, "u0"),
        "There are other nodes as well, registering unlimited nodes is forbidden"
    );
    assert_eq!(rejection(&h, "n0"), "", "the ordinary node is accepted");
    // Not after other nodes.
    assert_eq!(h.nodes(vec![unlimited("u1")]).0, SICORE_OK);
    assert_eq!(
        rejection(&h, "u1"),
        "The unlimited node should be registered first, there are other nodes registered in the partition"
    );
}

#[test]
fn an_unlimited_node_takes_any_ask_without_predicates_and_no_other_node() {
    let mut o = yaml_options(
        "
partitions:
  - name: default
    placementrules: [{name: provided, create: true}]
    queues:
      - name: root
        submitacl: '*'
        queues:
          - name: capped
            resources: {max: {memory: 1500}}
",
    );
    o.disable_reservation = true;
    let mut b = Behaviour {
        with_predicates: true,
        ..Default::default()
    };
    b.refuse_nodes.insert("u".into());
    let h = Harness::with_behaviour(o, b);
    assert_eq!(h.register("rm", "queues").0, SICORE_OK);
    assert_eq!(h.nodes(vec![unlimited("u")]).0, SICORE_OK);
    assert_eq!(rejection(&h, "u"), "");
    assert_eq!(h.nodes(vec![node("n1", 1000, 10)]).0, SICORE_OK);
    assert_eq!(
        rejection(&h, "n1"),
        "The partition has an unlimited node registered, registering other nodes is forbidden"
    );
    assert_eq!(h.submit(app("big", "root.a")), Ok(()));
    assert_eq!(h.submit(app("capped", "root.capped")), Ok(()));
    // Any size fits (the node reports no resources at all) and the RM's
    // predicate, which refuses the node, is not asked.
    let asks = vec![
        ask("big", "huge", 1_000_000_000_000, 1_000_000, 3),
        ask("capped", "c", 1000, 1, 2),
    ];
    assert_eq!(h.asks(asks).0, SICORE_OK);
    h.wait("four allocations", |s| s.allocations.len() == 4);
    h.settle();
    h.seen(|s| {
        assert!(s.allocations.iter().all(|a| a.node_id == "u"));
        assert!(s.predicate_calls.is_empty(), "{:?}", s.predicate_calls);
    });
    // Queue quotas still hold: the second 1000 of `capped` stays pending.
    let d = h.dump();
    let capped = find_queue(&d, "default", "root.capped").unwrap();
    assert_eq!(capped["allocated"]["memory"], 1000);
    assert_eq!(capped["pending"]["memory"], 1000);
    // Removing the unlimited node makes room for ordinary nodes again.
    let gone = si::NodeInfo {
        action: si::node_info::ActionFromRm::Decomission as i32,
        ..unlimited("u")
    };
    assert_eq!(h.nodes(vec![gone]).0, SICORE_OK);
    assert_eq!(h.nodes(vec![node("n2", 1000, 10)]).0, SICORE_OK);
    assert_eq!(rejection(&h, "n2"), "");
}
