//! The order of scheduling decisions, seen by the RM: node sorting
//! policies and weights, fair shares between queues, application sort
//! policies, ask priority, reservations and predicates.

use crate::common::*;
use sicore::ffi::sicore_status::*;
use sicore::proto::si::v1 as si;
use sicore::proto::sicore::v1::SchedulerOptions;

fn config(nodesort: &str, queues: &str) -> SchedulerOptions {
    yaml_options(&format!(
        "partitions:
  - name: default
    nodesortpolicy: {nodesort}
    queues:
      - name: root
        submitacl: '*'
        queues:
{queues}"
    ))
}

fn per_node(h: &Harness) -> std::collections::BTreeMap<String, usize> {
    h.seen(|s| {
        s.allocations
            .iter()
            .fold(std::collections::BTreeMap::new(), |mut m, a| {
                *m.entry(a.node_id.clone()).or_default() += 1;
                m
            })
    })
}

const TWO_LEAVES: &str = "          - name: a\n          - name: b\n";

#[test]
fn binpacking_fills_one_node_before_the_next_and_fair_spreads() {
    let h = Harness::configured(config("{type: binpacking}", TWO_LEAVES), 3);
    h.submit(app("app-1", "root.a")).unwrap();
    assert_eq!(h.asks(vec![ask("app-1", "k", 100, 1, 10)]).0, SICORE_OK);
    h.wait("ten allocations", |s| s.allocations.len() == 10);
    assert_eq!(
        per_node(&h).into_iter().collect::<Vec<_>>(),
        vec![("node-0".to_string(), 10)]
    );

    let h = Harness::configured(config("{type: fair}", TWO_LEAVES), 3);
    h.submit(app("app-1", "root.a")).unwrap();
    assert_eq!(h.asks(vec![ask("app-1", "k", 100, 1, 9)]).0, SICORE_OK);
    h.wait("nine allocations", |s| s.allocations.len() == 9);
    assert!(per_node(&h).values().all(|n| *n == 3), "{:?}", per_node(&h));
}

#[test]
fn resource_weights_change_the_choice() {
    // node-mem is busy on memory, node-cpu on vcores.
    let busy = |id: &str, mem: i64, vcore: i64| si::NodeInfo {
        occupied_resource: res(&[("memory", mem), ("vcore", vcore)]),
        ..node(id, 1000, 100)
    };
    for (weights, expected) in [("{memory: 1.0}", "node-cpu"), ("{vcore: 1.0}", "node-mem")] {
        let h = Harness::configured(
            config(
                &format!("{{type: fair, resourceweights: {weights}}}"),
                TWO_LEAVES,
            ),
            0,
        );
        assert_eq!(
            h.nodes(vec![busy("node-mem", 800, 10), busy("node-cpu", 100, 80)])
                .0,
            SICORE_OK
        );
        h.wait("nodes", |s| s.nodes_accepted.len() == 2);
        h.submit(app("app-1", "root.a")).unwrap();
        assert_eq!(h.asks(vec![ask("app-1", "k", 10, 1, 1)]).0, SICORE_OK);
        h.wait("allocation", |s| s.allocations.len() == 1);
        assert_eq!(
            h.seen(|s| s.allocations[0].node_id.clone()),
            expected,
            "weights {weights}"
        );
    }
}

fn contended_split(ga: i64, gb: i64) -> (usize, usize) {
    let queues = format!(
        "          - name: a\n            resources: {{guaranteed: {{memory: {ga}}}}}\n          - name: b\n            resources: {{guaranteed: {{memory: {gb}}}}}\n"
    );
    // One node with room for ten asks; each application wants twenty.
    let h = Harness::configured(config("{type: fair}", &queues), 1);
    h.submit(app("app-a", "root.a")).unwrap();
    h.submit(app("app-b", "root.b")).unwrap();
    assert_eq!(
        h.asks(vec![
            ask("app-a", "k", 100, 0, 20),
            ask("app-b", "k", 100, 0, 20)
        ])
        .0,
        SICORE_OK
    );
    h.wait("ten allocations", |s| s.allocations.len() == 10);
    h.settle();
    assert_eq!(h.seen(|s| s.allocations.len()), 10);
    (h.allocs_of("app-a"), h.allocs_of("app-b"))
}

#[test]
fn equal_guarantees_split_contended_capacity_evenly() {
    assert_eq!(contended_split(500, 500), (5, 5));
}

#[test]
fn unequal_guarantees_split_in_proportion() {
    let (a, b) = contended_split(300, 600);
    assert!((3..=4).contains(&a) && a + b == 10, "a={a} b={b}");
}

fn policy_queue(policy: &str) -> SchedulerOptions {
    let mut o = config(
        "{type: fair}",
        &format!(
            "          - name: a\n            properties: {{application.sort.policy: {policy}}}\n"
        ),
    );
    o.app_start_timeout_ms = Some(300);
    o
}

#[test]
fn fifo_serves_the_oldest_application_first() {
    let h = Harness::configured(policy_queue("fifo"), 1);
    h.submit(app("old", "root.a")).unwrap();
    h.submit(app("new", "root.a")).unwrap();
    // The newer application asks first; the older one still wins.
    assert_eq!(
        h.asks(vec![
            ask("new", "k", 100, 0, 10),
            ask("old", "k", 100, 0, 10)
        ])
        .0,
        SICORE_OK
    );
    h.wait("ten allocations", |s| s.allocations.len() == 10);
    assert_eq!((h.allocs_of("old"), h.allocs_of("new")), (10, 0));
}

#[test]
fn fair_balances_applications() {
    let h = Harness::configured(policy_queue("fair"), 1);
    h.submit(app("old", "root.a")).unwrap();
    h.submit(app("new", "root.a")).unwrap();
    assert_eq!(
        h.asks(vec![
            ask("old", "k", 100, 0, 10),
            ask("new", "k", 100, 0, 10)
        ])
        .0,
        SICORE_OK
    );
    h.wait("ten allocations", |s| s.allocations.len() == 10);
    assert_eq!((h.allocs_of("old"), h.allocs_of("new")), (5, 5));
}

#[test]
fn stateaware_admits_one_application_at_a_time() {
    let h = Harness::configured(policy_queue("stateaware"), 1);
    h.submit(app("first", "root.a")).unwrap();
    h.submit(app("second", "root.a")).unwrap();
    // One allocation puts `first` in Starting; `second` waits until the
    // start timer (300 ms here) moves `first` to Running.
    assert_eq!(
        h.asks(vec![
            ask("first", "k", 100, 0, 1),
            ask("second", "k", 100, 0, 1)
        ])
        .0,
        SICORE_OK
    );
    h.wait("both allocated and started", |s| {
        s.allocations.len() == 2
            && s.app_updates
                .iter()
                .any(|u| u.application_id == "second" && u.state == "Starting")
    });
    h.seen(|s| {
        assert_eq!(s.allocations[0].application_id, "first");
        assert_eq!(s.allocations[1].application_id, "second");
        let running = s
            .app_updates
            .iter()
            .position(|u| u.application_id == "first" && u.state == "Running")
            .expect("first went Running");
        let second_starting = s
            .app_updates
            .iter()
            .position(|u| u.application_id == "second" && u.state == "Starting")
            .expect("second started");
        assert!(
            running < second_starting,
            "second started before first ran: {:?}",
            s.app_updates
        );
    });
}

#[test]
fn higher_priority_asks_go_first() {
    let h = Harness::configured(config("{type: fair}", TWO_LEAVES), 1);
    h.submit(app("app-1", "root.a")).unwrap();
    let prio = |key: &str, p: i32| si::AllocationAsk {
        priority: Some(si::Priority {
            priority: Some(si::priority::Priority::PriorityValue(p)),
        }),
        ..ask("app-1", key, 600, 0, 1)
    };
    let class = si::AllocationAsk {
        priority: Some(si::Priority {
            priority: Some(si::priority::Priority::PriorityClassName("high".into())),
        }),
        ..ask("app-1", "class", 600, 0, 1)
    };
    // Only one of these fits; the highest priority wins whatever the order.
    assert_eq!(
        h.asks(vec![
            prio("low", 1),
            class,
            prio("high", 10),
            prio("mid", 5)
        ])
        .0,
        SICORE_OK
    );
    h.wait("one allocation", |s| s.allocations.len() == 1);
    h.settle();
    h.seen(|s| {
        assert_eq!(s.allocations.len(), 1);
        assert_eq!(s.allocations[0].allocation_key, "high");
    });
}

#[test]
fn an_ask_sent_again_with_its_key_replaces_the_first() {
    let h = Harness::configured(config("{type: fair}", TWO_LEAVES), 1);
    h.submit(app("app-1", "root.a")).unwrap();
    let pending = |h: &Harness| {
        let d = h.dump();
        let app = d["partitions"][0]["applications"][0].clone();
        let queue = find_queue(&d, "default", "root.a").unwrap();
        (
            app["pending"]["memory"].as_i64().unwrap_or(0),
            queue["pending"]["memory"].as_i64().unwrap_or(0),
            app["pending_asks"].as_array().unwrap().len(),
        )
    };
    // Too big for the 1000-memory node: it waits, 2 x 2000 pending.
    assert_eq!(h.asks(vec![ask("app-1", "k", 2000, 0, 2)]).0, SICORE_OK);
    assert_eq!(pending(&h), (4000, 4000, 1));
    // The same key again replaces it, demand and all: 3 x 100.
    assert_eq!(h.asks(vec![ask("app-1", "k", 100, 0, 3)]).0, SICORE_OK);
    h.wait("three allocations of the new ask", |s| {
        s.allocations.len() == 3
    });
    h.settle();
    h.seen(|s| {
        assert_eq!(s.allocations.len(), 3);
        assert!(s.allocations.iter().all(|a| a.allocation_key == "k"
            && a.resource_per_alloc.as_ref().unwrap().resources["memory"].value == 100));
    });
    assert_eq!(pending(&h), (0, 0, 0));
}

fn reservations(h: &Harness) -> Vec<(String, String)> {
    h.dump()["partitions"][0]["reservations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["node"].as_str().unwrap().to_string(),
                r["allocation_key"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// Two nodes of 1000 memory: node-0 with 600 used, node-1 with 900 used.
/// Returns the harness and the UUID of the allocation on node-0.
fn fragmented(behaviour: Behaviour) -> (Harness, String) {
    fragmented_with(behaviour, |o| o.reservation_delay_ms = Some(0))
}

fn fragmented_with(
    behaviour: Behaviour,
    tweak: impl FnOnce(&mut SchedulerOptions),
) -> (Harness, String) {
    let mut o = config("{type: fair}", TWO_LEAVES);
    tweak(&mut o);
    let h = Harness::with_behaviour(o, behaviour);
    assert_eq!(h.register("rm", "queues").0, SICORE_OK);
    assert_eq!(
        h.nodes(vec![node("node-0", 1000, 10), node("node-1", 1000, 10)])
            .0,
        SICORE_OK
    );
    h.submit(app("app-1", "root.a")).unwrap();
    assert_eq!(h.asks(vec![ask("app-1", "a", 600, 0, 1)]).0, SICORE_OK);
    h.wait("a allocated", |s| s.allocations.len() == 1);
    assert_eq!(h.asks(vec![ask("app-1", "b", 900, 0, 1)]).0, SICORE_OK);
    h.wait("b allocated", |s| s.allocations.len() == 2);
    let on_node0 = h.seen(|s| {
        assert_eq!(
            (
                s.allocations[0].node_id.as_str(),
                s.allocations[1].node_id.as_str()
            ),
            ("node-0", "node-1")
        );
        s.allocations[0].uuid.clone()
    });
    (h, on_node0)
}

#[test]
fn a_reservation_holds_a_node_until_room_appears() {
    let (h, on_node0) = fragmented(Behaviour::default());
    // 500 is free in all, but no node has 450: `big` reserves node-0, the
    // node it fits best.
    assert_eq!(h.asks(vec![ask("app-1", "big", 450, 0, 1)]).0, SICORE_OK);
    assert_eq!(
        reservations(&h),
        vec![("node-0".to_string(), "big".to_string())]
    );
    // The reserved node is hidden from other asks: `small` would fit there.
    assert_eq!(h.asks(vec![ask("app-1", "small", 300, 0, 1)]).0, SICORE_OK);
    h.settle();
    assert_eq!(h.seen(|s| s.allocations.len()), 2);
    // Room appears: the reservation is satisfied first, then the rest.
    let rel = si::AllocationRelease {
        application_id: "app-1".into(),
        partition_name: "default".into(),
        uuid: on_node0,
        ..Default::default()
    };
    assert_eq!(h.releases(vec![rel], vec![]).0, SICORE_OK);
    h.wait("big then small", |s| s.allocations.len() == 4);
    h.seen(|s| {
        assert_eq!(
            (
                s.allocations[2].allocation_key.as_str(),
                s.allocations[2].node_id.as_str()
            ),
            ("big", "node-0")
        );
        assert_eq!(s.allocations[3].allocation_key, "small");
    });
    assert!(reservations(&h).is_empty());
}

#[test]
fn reserved_asks_are_retried_in_fair_queue_order_not_node_order() {
    let mut o = config("{type: fair}", TWO_LEAVES);
    o.reservation_delay_ms = Some(0);
    let h = Harness::new(o);
    assert_eq!(h.register("rm", "queues").0, SICORE_OK);
    assert_eq!(
        h.nodes(vec![node("node-0", 1000, 10), node("node-1", 1000, 10)])
            .0,
        SICORE_OK
    );
    h.submit(app("app-a", "root.a")).unwrap();
    h.submit(app("app-b", "root.b")).unwrap();
    // Queue a uses 600 on node-0, queue b 700 on node-1: a is first in
    // fair order.
    assert_eq!(h.asks(vec![ask("app-a", "a-used", 600, 0, 1)]).0, SICORE_OK);
    h.wait("a-used", |s| s.allocations.len() == 1);
    assert_eq!(h.asks(vec![ask("app-b", "b-used", 700, 0, 1)]).0, SICORE_OK);
    h.wait("b-used", |s| s.allocations.len() == 2);
    // Neither 500 fits: b reserves node-0 (first in node order), a node-1.
    assert_eq!(h.asks(vec![ask("app-b", "b-big", 500, 0, 1)]).0, SICORE_OK);
    assert_eq!(
        reservations(&h),
        vec![("node-0".to_string(), "b-big".to_string())]
    );
    assert_eq!(h.asks(vec![ask("app-a", "a-big", 500, 0, 1)]).0, SICORE_OK);
    assert_eq!(
        reservations(&h),
        vec![
            ("node-0".to_string(), "b-big".to_string()),
            ("node-1".to_string(), "a-big".to_string())
        ]
    );
    // A node with room for one of them: the reserved pass goes in queue
    // order, so a (the lower share) gets it although b holds node-0.
    assert_eq!(h.nodes(vec![node("node-2", 500, 10)]).0, SICORE_OK);
    h.wait("a-big placed", |s| s.allocations.len() == 3);
    h.seen(|s| {
        assert_eq!(
            (
                s.allocations[2].allocation_key.as_str(),
                s.allocations[2].node_id.as_str()
            ),
            ("a-big", "node-2")
        );
    });
    assert_eq!(
        reservations(&h),
        vec![("node-0".to_string(), "b-big".to_string())]
    );
}

#[test]
fn releasing_a_reserved_ask_cancels_its_reservation() {
    let (h, _) = fragmented(Behaviour::default());
    assert_eq!(h.asks(vec![ask("app-1", "big", 450, 0, 1)]).0, SICORE_OK);
    assert_eq!(reservations(&h).len(), 1);
    let rel = si::AllocationAskRelease {
        application_id: "app-1".into(),
        partition_name: "default".into(),
        allocationkey: "big".into(),
        ..Default::default()
    };
    assert_eq!(h.releases(vec![], vec![rel]).0, SICORE_OK);
    assert!(reservations(&h).is_empty());
    // With the reservation gone, node-0 serves other asks again.
    assert_eq!(h.asks(vec![ask("app-1", "small", 300, 0, 1)]).0, SICORE_OK);
    h.wait("small allocated", |s| s.allocations.len() == 3);
    assert_eq!(h.seen(|s| s.allocations[2].node_id.clone()), "node-0");
}

#[test]
fn reservations_wait_for_the_delay_and_can_be_switched_off() {
    let (h, _) = fragmented_with(Behaviour::default(), |o| {
        o.reservation_delay_ms = Some(0);
        o.disable_reservation = true;
    });
    assert_eq!(h.asks(vec![ask("app-1", "big", 450, 0, 1)]).0, SICORE_OK);
    h.settle();
    assert!(reservations(&h).is_empty(), "reservations are off");

    // With the default 2 s delay a fresh ask does not reserve at once.
    let (h, _) = fragmented_with(Behaviour::default(), |_| {});
    assert_eq!(h.asks(vec![ask("app-1", "big", 450, 0, 1)]).0, SICORE_OK);
    assert!(reservations(&h).is_empty(), "too young to reserve");
}

#[test]
fn predicates_are_asked_before_reserving() {
    let (h, _) = fragmented(Behaviour {
        with_predicates: true,
        ..Default::default()
    });
    assert_eq!(h.asks(vec![ask("app-1", "big", 450, 0, 1)]).0, SICORE_OK);
    h.wait("reservation predicate", |s| {
        s.predicate_calls
            .iter()
            .any(|p| !p.allocate && p.allocation_key == "big")
    });
    assert_eq!(
        reservations(&h),
        vec![("node-0".to_string(), "big".to_string())]
    );
}

#[test]
fn a_predicate_refusal_is_reported_as_an_event() {
    let mut o = config("{type: fair}", TWO_LEAVES);
    o.event_flush_interval_ms = 20;
    let mut b = Behaviour {
        with_predicates: true,
        ..Default::default()
    };
    b.refuse_nodes.insert("node-0".into());
    let h = Harness::with_behaviour(o, b);
    assert_eq!(h.register("rm", "queues").0, SICORE_OK);
    assert_eq!(h.nodes(vec![node("node-0", 1000, 10)]).0, SICORE_OK);
    h.submit(app("app-1", "root.a")).unwrap();
    assert_eq!(h.asks(vec![ask("app-1", "picky", 10, 1, 1)]).0, SICORE_OK);
    h.wait("refusal event", |s| {
        s.events.iter().any(|e| {
            e.object_id == "picky"
                && e.group_id == "app-1"
                && e.reason == "PredicateRefused"
                && e.message.contains("node refused by the test RM")
        })
    });
    assert!(h.seen(|s| s.allocations.is_empty()));
}
