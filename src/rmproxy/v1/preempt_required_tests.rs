//! Required-node preemption in the v1.8 edition through the v1 adapter:
//! the RM's `PreemptionPredicates` decides, and an RM that does not
//! implement it is not asked (the check succeeds).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use super::api::ResourceManagerCallbackV1;
use super::edge::EdgeV1;
use crate::proto::si::v1::TerminationType;
use crate::proto::si18::v1 as si18;
use crate::scheduler::edition::Edition;
use crate::scheduler::objects::application::TAG_REQUIRED_NODE;
use crate::scheduler::request::AskRequest;
use crate::scheduler::testkit::{ask, Harness};

/// Answers every check with `success`, recording it; `implemented` says
/// whether it claims the callback at all.
struct Rm {
    success: bool,
    implemented: bool,
    checks: Mutex<Vec<si18::PreemptionPredicatesArgs>>,
}

impl ResourceManagerCallbackV1 for Rm {
    fn has_preemption_predicates(&self) -> bool {
        self.implemented
    }

    fn preemption_predicates(
        &self,
        args: &si18::PreemptionPredicatesArgs,
    ) -> si18::PreemptionPredicatesResponse {
        self.checks.lock().unwrap().push(args.clone());
        si18::PreemptionPredicatesResponse {
            success: self.success,
            index: if self.success { args.start_index } else { -1 },
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
          - name: ds
";

/// `n1` full of two allocations of `app-1`, room in the queues (an empty
/// node `n2`), and a pod of `app-ds` pinned to `n1` holding its node.
fn pinned() -> Harness {
    let mut h = Harness::new(YAML);
    h.p.set_edition(Edition::V1);
    h.node("n1", 500);
    h.app("app-1", "root.a");
    h.ask(ask("app-1", "a1", 250, 1));
    h.ask(ask("app-1", "a2", 250, 1));
    assert_eq!(h.schedule().allocated.len(), 2);
    h.node("n2", 500);
    h.app("app-ds", "root.ds");
    h.ask(AskRequest {
        required_node: Some("n1".into()),
        tags: crate::scheduler::tags::Tags::from(BTreeMap::from([(
            TAG_REQUIRED_NODE.into(),
            "n1".into(),
        )])),
        ..ask("app-ds", "ds", 250, 1)
    });
    h
}

#[test]
fn the_rm_s_answer_decides_and_an_rm_without_the_callback_is_not_asked() {
    for (success, implemented, preempts, asked) in [
        (true, true, true, 1),
        (false, true, false, 1),
        (false, false, true, 0),
    ] {
        let mut h = pinned();
        let rm = Arc::new(Rm {
            success,
            implemented,
            checks: Mutex::new(Vec::new()),
        });
        let cb = Arc::new(EdgeV1::new(rm.clone()));
        h.schedule_with(&cb); // reserves n1
        let seen = h.schedule_with(&cb);
        let victims = seen.released_as(TerminationType::PreemptedByScheduler);
        assert_eq!(victims.len(), preempts as usize, "{success} {implemented}");
        let checks = rm.checks.lock().unwrap();
        assert_eq!(checks.len(), asked, "{success} {implemented}");
        if let Some(c) = checks.first() {
            assert_eq!(c.allocation_key, "ds");
            assert_eq!(c.node_id, "n1");
            assert_eq!(c.preempt_allocation_keys, ["a2"]);
            assert_eq!(c.start_index, 0);
        }
    }
}
