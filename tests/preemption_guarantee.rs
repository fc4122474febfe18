//! Guarantee preemption through the C ABI, as a v0.12 RM sees it
//! (`shared/spec/policy/preemption.md`, `summary.md` 3.3): the victims'
//! releases with `PREEMPTED_BY_SCHEDULER`, the stand-in
//! `Predicates{allocate: false}` checks, the RM's confirmation and the
//! preemptor's allocation; no allocation lost or counted twice.

mod common;

use std::collections::HashMap;

use common::*;
use sicore::ffi::*;
use sicore::proto::si::v1 as si;

/// Leaves `a` (guarantee 500) and `b` (guarantee 1000, delay 1 ms, so the
/// test never waits the default 30 s); preemption as `switch`.
fn config(switch: &str) -> String {
    format!(
        "partitions:
  - name: default
{switch}    queues:
      - name: root
        submitacl: '*'
        queues:
          - name: a
            resources: {{guaranteed: {{memory: 500}}}}
            properties: {{application.sort.policy: fifo}}
          - name: b
            resources: {{guaranteed: {{memory: 1000}}}}
            properties: {{application.sort.policy: fifo, preemption.delay: 1ms}}
"
    )
}

/// Two nodes of 1000 filled by four allocations of 500 of `app-1` in
/// `root.a`; the RM then refuses `Predicates` on node-0.
fn filled(switch: &str) -> Harness {
    let behaviour = Behaviour {
        with_predicates: true,
        ..Default::default()
    };
    let h = Harness::with_behaviour(yaml_options(&config(switch)), behaviour);
    let (st, msg) = h.register("rm", "queues");
    assert_eq!(st, sicore_status::SICORE_OK, "{msg}");
    let nodes = vec![node("node-0", 1000, 10), node("node-1", 1000, 10)];
    assert_eq!(h.nodes(nodes).0, sicore_status::SICORE_OK);
    h.wait("nodes", |s| s.nodes_accepted.len() == 2);
    h.submit(app("app-1", "root.a")).unwrap();
    assert_eq!(
        h.asks(vec![ask("app-1", "a", 500, 1, 4)]).0,
        sicore_status::SICORE_OK
    );
    h.wait("app-1 fills the nodes", |s| s.allocations.len() == 4);
    h.rec
        .behaviour
        .lock()
        .unwrap()
        .refuse_nodes
        .insert("node-0".into());
    h.submit(app("app-2", "root.b")).unwrap();
    assert_eq!(
        h.asks(vec![ask("app-2", "b", 500, 1, 1)]).0,
        sicore_status::SICORE_OK
    );
    h
}

fn preempted(s: &Seen) -> Vec<si::AllocationRelease> {
    s.released
        .iter()
        .filter(|r| r.termination_type == si::TerminationType::PreemptedByScheduler as i32)
        .cloned()
        .collect()
}

#[test]
fn a_refused_node_keeps_its_allocations_and_the_preemptor_gets_the_next_node() {
    let h = filled("    preemption: {enabled: true}\n");
    h.wait("a victim", |s| !preempted(s).is_empty());
    h.settle();
    let node_of: HashMap<String, String> = h.seen(|s| {
        s.allocations
            .iter()
            .map(|a| (a.uuid.clone(), a.node_id.clone()))
            .collect()
    });
    let victims = h.seen(preempted);
    assert_eq!(victims.len(), 1, "{victims:?}");
    let v = &victims[0];
    assert_eq!(v.application_id, "app-1");
    assert_eq!(v.partition_name, "default");
    assert_eq!(
        node_of[&v.uuid], "node-1",
        "nothing goes on the refused node"
    );
    assert_eq!(
        v.message,
        "preempting allocations to free up resources to run ask: b"
    );
    h.seen(|s| {
        // The stand-in check asked about node-0 (refused) and node-1.
        let checks: Vec<&str> = s
            .predicate_calls
            .iter()
            .filter(|p| p.allocation_key == "b" && !p.allocate)
            .map(|p| p.node_id.as_str())
            .collect();
        assert!(
            checks.contains(&"node-0") && checks.contains(&"node-1"),
            "{checks:?}"
        );
        // Nothing allocated yet: the victim still holds its resources.
        assert_eq!(s.allocations.len(), 4);
    });
    // The victim is still counted in its queue until the RM confirms.
    let d = h.dump();
    assert_eq!(
        find_queue(&d, "default", "root.a").unwrap()["allocated"]["memory"],
        2000
    );
    // The RM confirms; the preemptor gets the freed node.
    let confirm = si::AllocationRelease {
        partition_name: "default".into(),
        application_id: "app-1".into(),
        uuid: v.uuid.clone(),
        termination_type: si::TerminationType::PreemptedByScheduler as i32,
        ..Default::default()
    };
    assert_eq!(
        h.releases(vec![confirm], vec![]).0,
        sicore_status::SICORE_OK
    );
    h.wait("the preemptor's allocation", |s| s.allocations.len() == 5);
    h.settle();
    h.seen(|s| {
        let b = s
            .allocations
            .iter()
            .find(|a| a.allocation_key == "b")
            .unwrap();
        assert_eq!(b.node_id, "node-1");
        assert_eq!(b.application_id, "app-2");
        // Exactly one preemption: a second would release another victim.
        assert_eq!(preempted(s).len(), 1);
    });
    // No allocation lost or counted twice.
    let d = h.dump();
    assert_eq!(
        find_queue(&d, "default", "root.a").unwrap()["allocated"]["memory"],
        1500
    );
    assert_eq!(
        find_queue(&d, "default", "root.b").unwrap()["allocated"]["memory"],
        500
    );
    assert_eq!(
        find_queue(&d, "default", "root").unwrap()["allocated"]["memory"],
        2000
    );
    // A REQUEST event on the victim (spec 15).
    h.wait("the victim's event", |s| {
        s.events.iter().any(|e| {
            e.object_id == "a"
                && e.group_id == "app-1"
                && e.message == "Preempted by b from application app-2 in root.b"
        })
    });
}

#[test]
fn without_the_switch_a_v012_partition_never_preempts() {
    let h = filled("");
    // Passes run while app-2 waits; give several of them time.
    h.settle();
    h.settle();
    h.seen(|s| {
        assert!(preempted(s).is_empty(), "{:?}", s.released);
        assert_eq!(s.allocations.len(), 4);
    });
}

/// The books across victim release, confirmation and the preemptors'
/// allocations: three preemptors of two queues in one pass take three
/// distinct victims on three distinct nodes, each is allocated on the node
/// its victim left, and every queue's allocated equals what the RM holds.
#[test]
fn three_preemptors_in_one_pass_balance_the_books() {
    let yaml = "partitions:
  - name: default
    preemption: {enabled: true}
    queues:
      - name: root
        submitacl: '*'
        queues:
          - name: a
            resources: {guaranteed: {memory: 1000}}
            properties: {application.sort.policy: fifo}
          - name: b
            resources: {guaranteed: {memory: 1000}}
            properties: {application.sort.policy: fifo, preemption.delay: 1ms}
          - name: c
            resources: {guaranteed: {memory: 1000}}
            properties: {application.sort.policy: fifo, preemption.delay: 1ms}
";
    let behaviour = Behaviour {
        with_predicates: true,
        ..Default::default()
    };
    let h = Harness::with_behaviour(yaml_options(yaml), behaviour);
    assert_eq!(h.register("rm", "queues").0, sicore_status::SICORE_OK);
    let nodes = (0..3)
        .map(|i| node(&format!("node-{i}"), 1000, 10))
        .collect();
    assert_eq!(h.nodes(nodes).0, sicore_status::SICORE_OK);
    h.wait("nodes", |s| s.nodes_accepted.len() == 3);
    h.submit(app("app-1", "root.a")).unwrap();
    assert_eq!(
        h.asks(vec![ask("app-1", "a", 250, 1, 12)]).0,
        sicore_status::SICORE_OK
    );
    h.wait("app-1 fills the nodes", |s| s.allocations.len() == 12);
    h.submit(app("app-2", "root.b")).unwrap();
    h.submit(app("app-3", "root.c")).unwrap();
    let asks = vec![
        ask("app-2", "b1", 250, 1, 1),
        ask("app-2", "b2", 250, 1, 1),
        ask("app-3", "c1", 250, 1, 1),
    ];
    assert_eq!(h.asks(asks).0, sicore_status::SICORE_OK);
    h.wait("three victims", |s| preempted(s).len() >= 3);
    h.settle();
    let victims = h.seen(preempted);
    assert_eq!(victims.len(), 3, "{victims:?}");
    let node_of: HashMap<String, String> = h.seen(|s| {
        s.allocations
            .iter()
            .map(|a| (a.uuid.clone(), a.node_id.clone()))
            .collect()
    });
    let mut victim_nodes: Vec<&str> = victims.iter().map(|v| node_of[&v.uuid].as_str()).collect();
    victim_nodes.sort();
    assert_eq!(victim_nodes, ["node-0", "node-1", "node-2"]);
    let confirms = victims
        .iter()
        .map(|v| si::AllocationRelease {
            partition_name: "default".into(),
            application_id: v.application_id.clone(),
            uuid: v.uuid.clone(),
            termination_type: si::TerminationType::PreemptedByScheduler as i32,
            ..Default::default()
        })
        .collect();
    assert_eq!(h.releases(confirms, vec![]).0, sicore_status::SICORE_OK);
    h.wait("the preemptors' allocations", |s| s.allocations.len() == 15);
    h.settle();
    let (live, per_app) = h.seen(|s| {
        assert_eq!(preempted(s).len(), 3, "no further victim");
        let gone: std::collections::HashSet<&str> =
            s.released.iter().map(|r| r.uuid.as_str()).collect();
        let mut per_app: HashMap<String, i64> = HashMap::new();
        let mut live = 0;
        for a in &s.allocations {
            if !gone.contains(a.uuid.as_str()) {
                live += 1;
                *per_app.entry(a.application_id.clone()).or_default() += 250;
            }
        }
        // Each preemptor landed where its victim left.
        let mut pre_nodes: Vec<&str> = s
            .allocations
            .iter()
            .filter(|a| a.application_id != "app-1")
            .map(|a| a.node_id.as_str())
            .collect();
        pre_nodes.sort();
        assert_eq!(pre_nodes, ["node-0", "node-1", "node-2"]);
        (live, per_app)
    });
    assert_eq!(live, 12);
    let d = h.dump();
    for (q, app) in [
        ("root.a", "app-1"),
        ("root.b", "app-2"),
        ("root.c", "app-3"),
    ] {
        assert_eq!(
            find_queue(&d, "default", q).unwrap()["allocated"]["memory"],
            per_app[app],
            "{q}"
        );
    }
    assert_eq!(per_app["app-1"], 2250);
    assert_eq!(
        find_queue(&d, "default", "root").unwrap()["allocated"]["memory"],
        3000
    );
}
