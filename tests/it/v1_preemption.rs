//! Guarantee preemption through the SI v1.x C family, as the k8shim drives
//! it: the per-request `preemptionPolicy` and `originator` reach the core
//! (policy/preemption.md 1.3), order each node's victims (7.2) and score
//! the RM's answers (9.3), so an `allowPreemptSelf: false` allocation or an
//! originator is taken only as a last resort; the victim is released with
//! `PREEMPTED_BY_SCHEDULER`, the RM confirms by releasing it with the same
//! type, and the preemptor gets the node.

use std::time::Duration;

use crate::common::v1::{v1_confirmation, v1_preempted, V1Rm, V1Seen};
use crate::common::*;
use sicore::ffi::sicore_status::*;
use sicore::proto::si18::v1 as si18;
use sicore::proto::sicore::v1 as sicore_pb;
use sicore_c_rm::v1 as rmv1;

/// `a` holds the victims; `b` is below its guarantee and may preempt after
/// 1 ms. Preemption is on by default in the v1.8 edition.
const CONFIG: &str = "
partitions:
  - name: default
    queues:
      - name: root
        submitacl: '*'
        queues:
          - name: a
            resources: {guaranteed: {memory: 100}}
          - name: b
            resources: {guaranteed: {memory: 500}}
            properties: {preemption.delay: 1ms}
";

/// A pod the RM already runs on `node`, with its preemption fields.
fn running(key: &str, node: &str, allow_self: bool, originator: bool) -> si18::Allocation {
    si18::Allocation {
        node_id: node.into(),
        originator,
        preemption_policy: Some(si18::PreemptionPolicy {
            allow_preempt_self: allow_self,
            allow_preempt_other: true,
        }),
        ..rmv1::ask("app-1", key, 250, 1)
    }
}

/// Two nodes of 500 memory, each filled by two running pods of `app-1`
/// in `root.a`: on n1 two opted out (`allowPreemptSelf: false`), on n2
/// one opted in and, newer, an opted-in originator. The RM's
/// `PreemptionPredicates` answers as the k8shim does when nothing but
/// resources stands in the way: the request fits once the victims up to
/// the start index are gone.
fn set_up() -> V1Rm {
    let opts = sicore_pb::SchedulerOptions {
        scheduling_interval_ms: 10,
        ..Default::default()
    };
    let rm = V1Rm::with(opts, CONFIG, true, |_| {});
    rm.rec.accept_all();
    let nodes = ["n1", "n2"].map(|n| si18::NodeInfo {
        action: si18::node_info::ActionFromRm::Create as i32,
        ..rmv1::node(n, 500, 10)
    });
    let (st, msg) = rm.nodes(nodes.to_vec());
    assert_eq!(st, SICORE_OK, "{msg}");
    rm.rec.wait("nodes", |s| s.nodes_accepted.len() == 2);
    let (st, msg) = rm.apps(vec![
        rmv1::app("app-1", "root.a", "alice"),
        rmv1::app("app-2", "root.b", "bob"),
    ]);
    assert_eq!(st, SICORE_OK, "{msg}");
    rm.rec.wait("apps", |s| s.apps_accepted.len() == 2);
    // Placement order is age: a4 is older than the originator a3.
    rm.allocate(
        vec![
            running("a1", "n1", false, false),
            running("a2", "n1", false, false),
            running("a4", "n2", true, false),
            running("a3", "n2", true, true),
        ],
        vec![],
    );
    rm.rec.wait("the running pods echoed", |s| s.new.len() == 4);
    rm
}

/// The keys of the victims the RM was told of, in order.
fn preempted(s: &V1Seen) -> Vec<String> {
    v1_preempted(s)
        .into_iter()
        .map(|r| r.allocation_key)
        .collect()
}

#[test]
fn opted_out_pods_and_originators_are_last_resort_victims() {
    let rm = set_up();
    let seen = rm.rec.wait("echoes", |s| s.new.len() == 4);
    // The echo carries the fields as the request sent them.
    let echo = |k: &str| seen.new.iter().find(|a| a.allocation_key == k).unwrap();
    assert_eq!(
        echo("a1").preemption_policy,
        Some(si18::PreemptionPolicy {
            allow_preempt_self: false,
            allow_preempt_other: true,
        })
    );
    assert!(echo("a3").originator);
    assert!(!echo("a4").originator);

    let preemptor = si18::Allocation {
        preemption_policy: Some(si18::PreemptionPolicy {
            allow_preempt_self: true,
            allow_preempt_other: true,
        }),
        ..rmv1::ask("app-2", "b1", 250, 1)
    };
    rm.allocate(vec![preemptor], vec![]);
    let s = rm.rec.wait("a victim", |s| !preempted(s).is_empty());
    // n1 is checked first (same start index, lower node id) and accepted,
    // but taking an opted-out pod scores worse than n2's opted-in one;
    // on n2 the older non-originator goes before the newer originator.
    let checks: Vec<(&str, Vec<&str>, i32)> = s
        .checks
        .iter()
        .map(|c| {
            (
                c.node_id.as_str(),
                c.preempt_allocation_keys
                    .iter()
                    .map(|k| k.as_str())
                    .collect(),
                c.start_index,
            )
        })
        .collect();
    assert_eq!(
        checks,
        [("n1", vec!["a2", "a1"], 0), ("n2", vec!["a4", "a3"], 0)]
    );
    assert_eq!(preempted(&s), ["a4"]);
    let r = s
        .released
        .iter()
        .find(|r| r.allocation_key == "a4")
        .unwrap();
    assert_eq!(r.application_id, "app-1");
    assert_eq!(
        r.message,
        "preempting allocations to free up resources to run ask: b1"
    );

    // The RM confirms; the preemptor gets the node its victim left.
    rm.allocate(vec![], vec![v1_confirmation("app-1", "a4")]);
    let s = rm.rec.wait("the preemptor", |s| {
        s.new.iter().any(|a| a.allocation_key == "b1")
    });
    let b1 = s.new.iter().find(|a| a.allocation_key == "b1").unwrap();
    assert_eq!(b1.node_id, "n2");
    assert_eq!(preempted(&s), ["a4"], "exactly one victim");
    let d = rm.dump();
    assert_eq!(memory_of(&d, "root.a"), 750);
    assert_eq!(memory_of(&d, "root.b"), 250);
}

#[test]
fn a_request_without_allow_preempt_other_never_preempts() {
    let rm = set_up();
    // No preemptionPolicy at all: allowPreemptOther is false (quirk Q1).
    rm.allocate(vec![rmv1::ask("app-2", "b1", 250, 1)], vec![]);
    // Give the core passes well past the 1 ms delay.
    std::thread::sleep(Duration::from_millis(300));
    let s = rm.rec.copy();
    assert!(preempted(&s).is_empty(), "{:?}", s.released);
    assert!(s.checks.is_empty(), "{:?}", s.checks);
}
