//! Guarantee preemption's fence root as YuniKorn v1.9 finds it, through the
//! SI v1 C family (`shared/spec/si-v1.9-delta.md` 6.1, Q19-16): walking up
//! from the request's queue, a queue stops the walk when the request would
//! push it past its max in a type the max and the sum have; a queue that is
//! exactly full in types the request does not have no longer does (v1.8
//! stopped there), so the victims may come from outside it.

use crate::common::v1::{v1_preempted, V1Rm};
use crate::common::*;
use sicore::ffi::sicore_status::*;
use sicore::proto::si18::v1 as si18;
use sicore::proto::sicore::v1 as sicore_pb;
use sicore_c_rm::v1 as rmv1;

/// `p` capped at 2 (raw) vcore holds `x`, whose pods use vcore only, and
/// `y`, below its memory guarantee; `q` is above its guarantee.
const CONFIG: &str = "
partitions:
  - name: default
    queues:
      - name: root
        submitacl: '*'
        queues:
          - name: p
            resources: {max: {vcore: 2m}}
            queues:
              - name: x
              - name: y
                resources: {guaranteed: {memory: 250}}
                properties: {preemption.delay: 1ms}
          - name: q
            resources: {guaranteed: {memory: 100}}
";

/// Opted in both ways, as the k8shim sends a default pod.
fn policy() -> Option<si18::PreemptionPolicy> {
    Some(si18::PreemptionPolicy {
        allow_preempt_self: true,
        allow_preempt_other: true,
    })
}

fn running(app: &str, key: &str, pairs: &[(&str, i64)]) -> si18::Allocation {
    si18::Allocation {
        node_id: "n1".into(),
        preemption_policy: policy(),
        resource_per_alloc: rmv1::res(pairs),
        ..rmv1::ask(app, key, 1, 1)
    }
}

/// Spec 16 Q19-16.
#[test]
fn a_parent_full_only_in_types_the_request_lacks_does_not_fence() {
    let opts = sicore_pb::SchedulerOptions {
        scheduling_interval_ms: 10,
        ..Default::default()
    };
    let rm = V1Rm::with(opts, CONFIG, true, |_| {});
    rm.rec.accept_all();
    rm.node("n1", 1000);
    let (st, msg) = rm.apps(vec![
        rmv1::app("app-x", "root.p.x", "alice"),
        rmv1::app("app-q", "root.q", "bob"),
        rmv1::app("app-y", "root.p.y", "carol"),
    ]);
    assert_eq!(st, SICORE_OK, "{msg}");
    rm.rec.wait("apps", |s| s.apps_accepted.len() == 3);
    // p exactly at its max (2 vcore); the node's memory all used by q.
    rm.allocate(
        vec![
            running("app-x", "x1", &[("vcore", 1)]),
            running("app-x", "x2", &[("vcore", 1)]),
            running("app-q", "q1", &[("memory", 250)]),
            running("app-q", "q2", &[("memory", 250)]),
            running("app-q", "q3", &[("memory", 250)]),
            running("app-q", "q4", &[("memory", 250)]),
        ],
        vec![],
    );
    rm.rec.wait("running pods echoed", |s| s.new.len() == 6);
    // y asks for memory only: p's vcore cap is no obstacle, nor a fence.
    let y = si18::Allocation {
        preemption_policy: policy(),
        resource_per_alloc: rmv1::res(&[("memory", 250)]),
        ..rmv1::ask("app-y", "y", 1, 1)
    };
    rm.allocate(vec![y], vec![]);
    let s = rm.rec.wait("a victim", |s| !v1_preempted(s).is_empty());
    let victims = v1_preempted(&s);
    assert_eq!(victims.len(), 1, "{victims:?}");
    assert_eq!(victims[0].application_id, "app-q", "taken outside p");
    assert!(victims[0].allocation_key.starts_with('q'));
    // The RM confirms; y runs on the freed memory.
    rm.allocate(
        vec![],
        vec![crate::common::v1::v1_confirmation(
            "app-q",
            &victims[0].allocation_key,
        )],
    );
    rm.rec.wait("y placed", |s| {
        s.new.iter().any(|a| a.allocation_key == "y")
    });
    books::check_books(&rm.dump()).unwrap();
}
