//! A victim confirmation that names the wrong application (issue 34 item
//! 6): refused with a reason, nothing changes; the owner's confirmation
//! then goes through.

use crate::common::v1::{v1_confirmation, v1_preempted, V1Rm};
use sicore::ffi::sicore_status::*;
use sicore::proto::si18::v1 as si18;
use sicore::proto::sicore::v1 as sicore_pb;
use sicore_c_rm::v1 as rmv1;

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

#[test]
fn a_victim_confirmation_naming_another_application_changes_nothing() {
    let opts = sicore_pb::SchedulerOptions {
        scheduling_interval_ms: 10,
        event_flush_interval_ms: 20,
        event_types: vec!["REQUEST".into()],
        ..Default::default()
    };
    let rm = V1Rm::with(opts, CONFIG, true, |_| {});
    rm.rec.accept_all();
    let n = si18::NodeInfo {
        action: si18::node_info::ActionFromRm::Create as i32,
        ..rmv1::node("n1", 500, 10)
    };
    assert_eq!(rm.nodes(vec![n]).0, SICORE_OK);
    rm.rec.wait("node", |s| s.nodes_accepted.len() == 1);
    let (st, msg) = rm.apps(vec![
        rmv1::app("app-a", "root.a", "alice"),
        rmv1::app("app-b", "root.b", "bob"),
        rmv1::app("app-c", "root.a", "carol"),
    ]);
    assert_eq!(st, SICORE_OK, "{msg}");
    rm.rec.wait("apps", |s| s.apps_accepted.len() == 3);
    let placed = si18::Allocation {
        node_id: "n1".into(),
        preemption_policy: Some(si18::PreemptionPolicy {
            allow_preempt_self: true,
            allow_preempt_other: true,
        }),
        ..rmv1::ask("app-a", "a1", 500, 1)
    };
    rm.allocate(vec![placed], vec![]);
    rm.rec.wait("a1 echoed", |s| s.new.len() == 1);
    let preemptor = si18::Allocation {
        preemption_policy: Some(si18::PreemptionPolicy {
            allow_preempt_self: true,
            allow_preempt_other: true,
        }),
        ..rmv1::ask("app-b", "b1", 250, 1)
    };
    rm.allocate(vec![preemptor], vec![]);
    rm.rec.wait("a1 is the victim", |s| {
        v1_preempted(s).iter().any(|r| r.allocation_key == "a1")
    });

    // The confirmation names app-c: refused, a1 stays app-a's.
    rm.allocate(vec![], vec![v1_confirmation("app-c", "a1")]);
    rm.rec.wait("the refusal's record", |s| {
        s.events
            .iter()
            .any(|e| e.message.contains("belongs to application app-a"))
    });
    rm.settle();
    assert_eq!(rm.memory("root.a"), 500, "a1 is still held");
    assert!(!rm.rec.copy().new.iter().any(|a| a.allocation_key == "b1"));

    // The owner's confirmation frees the node for the preemptor.
    rm.allocate(vec![], vec![v1_confirmation("app-a", "a1")]);
    rm.rec.wait("the preemptor", |s| {
        s.new.iter().any(|a| a.allocation_key == "b1")
    });
    assert_eq!(rm.memory("root.a"), 0);
}
