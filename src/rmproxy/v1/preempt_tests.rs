//! Guarantee preemption in the v1.8 edition: the core's check goes to the
//! RM's `PreemptionPredicates` through the v1 adapter, after the barrier.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::api::ResourceManagerCallbackV1;
use super::edge::EdgeV1;
use crate::proto::si::v1::TerminationType;
use crate::proto::si18::v1 as si18;
use crate::scheduler::edition::Edition;
use crate::scheduler::testkit::{ask, Harness};

/// Refuses node `n1`; on any other node the request fits once the
/// victims up to `start_index` are gone.
#[derive(Default)]
struct Rm {
    checks: Mutex<Vec<si18::PreemptionPredicatesArgs>>,
}

impl ResourceManagerCallbackV1 for Rm {
    fn preemption_predicates(
        &self,
        args: &si18::PreemptionPredicatesArgs,
    ) -> si18::PreemptionPredicatesResponse {
        self.checks.lock().unwrap().push(args.clone());
        let success = args.node_id != "n1";
        si18::PreemptionPredicatesResponse {
            success,
            index: if success { args.start_index } else { -1 },
        }
    }
}

const YAML: &str = "partitions:
  - name: default
    queues:
      - name: root
        submitacl: '*'
        queues:
          - name: a
            resources: {guaranteed: {memory: 500}}
            properties: {application.sort.policy: fifo}
          - name: b
            resources: {guaranteed: {memory: 500}}
            properties: {application.sort.policy: fifo}
";

#[test]
fn the_v18_edition_asks_preemption_predicates_per_node_in_check_order() {
    let mut h = Harness::new(YAML);
    h.p.set_edition(Edition::V1);
    h.node("n1", 500);
    h.node("n2", 500);
    h.app("app-1", "root.a");
    for k in ["a1", "a2", "a3", "a4"] {
        h.ask(ask("app-1", k, 250, 1));
    }
    assert_eq!(h.schedule().allocated.len(), 4);
    h.app("app-2", "root.b");
    h.ask(ask("app-2", "b", 250, 1));
    let rm = Arc::new(Rm::default());
    let cb = Arc::new(EdgeV1::new(rm.clone()));
    h.advance(Duration::from_secs(31));
    let seen = h.schedule_with(&cb);
    let victims = seen.released_as(TerminationType::PreemptedByScheduler);
    assert_eq!(victims.len(), 1);
    let on_n2 =
        h.p.allocations()
            .get(&victims[0].uuid)
            .unwrap()
            .node
            .to_string();
    assert_eq!(on_n2, "n2");
    let checks = rm.checks.lock().unwrap();
    let nodes: Vec<&str> = checks.iter().map(|c| c.node_id.as_str()).collect();
    assert_eq!(nodes, ["n1", "n2"]);
    assert!(checks.iter().all(|c| c.allocation_key == "b"
        && c.start_index == 0
        // The node's whole list goes; the first victim suffices.
        && c.preempt_allocation_keys.len() == 2));
}

#[test]
fn a_v18_request_without_allow_preempt_other_never_preempts() {
    let mut h = Harness::new(YAML);
    h.p.set_edition(Edition::V1);
    h.node("n1", 500);
    h.app("app-1", "root.a");
    h.ask(ask("app-1", "a1", 250, 1));
    h.ask(ask("app-1", "a2", 250, 1));
    h.schedule();
    h.app("app-2", "root.b");
    let mut b = ask("app-2", "b", 250, 1);
    b.preempt_other = false;
    h.ask(b);
    let rm = Arc::new(Rm::default());
    h.advance(Duration::from_secs(31));
    let seen = h.schedule_with(&Arc::new(EdgeV1::new(rm.clone())));
    assert!(seen
        .released_as(TerminationType::PreemptedByScheduler)
        .is_empty());
    assert!(rm.checks.lock().unwrap().is_empty());
}
