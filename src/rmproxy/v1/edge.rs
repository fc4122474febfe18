//! The outbound half of the v1.8 edge: the core's [`RmPort`] over a Rust
//! RM's [`ResourceManagerCallbackV1`], and the translations the C ABI's v1
//! table shares.
//!
//! The barrier. In v0.12 the RM learns of a decision through ReSync
//! (assumed) before the next `Predicates`; a v1.8 RM (the k8shim) assumes
//! the pod inside its `UpdateAllocation` callback for `new`. So here
//! [`RmPort::assume`] delivers the `new`: the core thread calls it before
//! the next `predicates`, or the dispatcher for an [`OutMsg::Assume`] (what
//! a pass decided after its last check); the later
//! [`OutMsg::NewAllocationsResynced`] of the same batch does nothing, and
//! without a barrier [`OutMsg::NewAllocations`] delivers once. A ReSync
//! (forget) has no v1 form and is dropped, as is the core→RM
//! `update_configuration` (the REST service refuses v1 RMs' edits).

use std::sync::Arc;

use super::api::ResourceManagerCallbackV1;
use super::convert::resource_to_v1;
use super::events;
use crate::proto::si::v1 as si;
use crate::proto::si18::v1 as si18;
use crate::scheduler::outcome::{NewAllocation, OutMsg};
use crate::scheduler::port::{PredicateCheck, RmPort};

/// A Rust v1.8 RM's callbacks as the core calls them.
pub struct EdgeV1 {
    rm: Arc<dyn ResourceManagerCallbackV1>,
}

impl EdgeV1 {
    /// Wraps the RM's callbacks.
    pub fn new(rm: Arc<dyn ResourceManagerCallbackV1>) -> Self {
        EdgeV1 { rm }
    }

    fn deliver_new(&self, allocations: &[Arc<NewAllocation>]) -> Result<(), String> {
        if allocations.is_empty() {
            return Ok(());
        }
        self.rm.update_allocation(&si18::AllocationResponse {
            new: allocations
                .iter()
                .map(|a| super::convert::new_allocation(a))
                .collect(),
            ..Default::default()
        })
    }
}

/// A v0.12 `AllocationResponse` in v1 terms: `new` without uuid and queue;
/// `released` by key; a released placeholder request that timed out is a
/// `released` TIMEOUT of its key; other released requests (echoes of the
/// RM's own removals) have no v1 form; rejected requests are
/// `rejectedAllocations`.
pub fn allocation_response(r: &si::AllocationResponse) -> si18::AllocationResponse {
    let timeout = si::TerminationType::Timeout as i32;
    let mut released: Vec<si18::AllocationRelease> = r
        .released
        .iter()
        .map(|a| si18::AllocationRelease {
            partition_name: a.partition_name.clone(),
            application_id: a.application_id.clone(),
            termination_type: a.termination_type,
            message: a.message.clone(),
            allocation_key: a.uuid.clone(),
        })
        .collect();
    released.extend(
        r.released_asks
            .iter()
            .filter(|a| a.termination_type == timeout)
            .map(|a| si18::AllocationRelease {
                partition_name: a.partition_name.clone(),
                application_id: a.application_id.clone(),
                termination_type: a.termination_type,
                message: a.message.clone(),
                allocation_key: a.allocationkey.clone(),
            }),
    );
    si18::AllocationResponse {
        new: r
            .new
            .iter()
            .map(|a| si18::Allocation {
                allocation_key: a.allocation_key.clone(),
                allocation_tags: a.allocation_tags.clone(),
                resource_per_alloc: a.resource_per_alloc.clone().map(resource_to_v1),
                priority: crate::scheduler::request::priority_of(a.priority.as_ref()),
                node_id: a.node_id.clone(),
                application_id: a.application_id.clone(),
                partition_name: a.partition_name.clone(),
                task_group_name: a.task_group_name.clone(),
                placeholder: a.placeholder,
                originator: false,
                preemption_policy: None,
            })
            .collect(),
        released,
        rejected_allocations: r
            .rejected
            .iter()
            .map(|a| si18::RejectedAllocation {
                allocation_key: a.allocation_key.clone(),
                application_id: a.application_id.clone(),
                reason: a.reason.clone(),
            })
            .collect(),
    }
}

/// Whether a translated response has anything for a v1 RM (echoes of its
/// own removals have no v1 form).
pub fn has_content(r: &si18::AllocationResponse) -> bool {
    !(r.new.is_empty() && r.released.is_empty() && r.rejected_allocations.is_empty())
}

/// An `ApplicationResponse` in the v1 types (the same fields).
pub fn application_response(r: &si::ApplicationResponse) -> si18::ApplicationResponse {
    si18::ApplicationResponse {
        rejected: r
            .rejected
            .iter()
            .map(|a| si18::RejectedApplication {
                application_id: a.application_id.clone(),
                reason: a.reason.clone(),
            })
            .collect(),
        accepted: r
            .accepted
            .iter()
            .map(|a| si18::AcceptedApplication {
                application_id: a.application_id.clone(),
            })
            .collect(),
        updated: r
            .updated
            .iter()
            .map(|a| si18::UpdatedApplication {
                application_id: a.application_id.clone(),
                state: a.state.clone(),
                state_transition_timestamp: a.state_transition_timestamp,
                message: a.message.clone(),
            })
            .collect(),
    }
}

/// A `NodeResponse` in the v1 types (the same fields).
pub fn node_response(r: &si::NodeResponse) -> si18::NodeResponse {
    si18::NodeResponse {
        rejected: r
            .rejected
            .iter()
            .map(|n| si18::RejectedNode {
                node_id: n.node_id.clone(),
                reason: n.reason.clone(),
            })
            .collect(),
        accepted: r
            .accepted
            .iter()
            .map(|n| si18::AcceptedNode {
                node_id: n.node_id.clone(),
            })
            .collect(),
    }
}

/// A container-state report in the v1 types.
pub fn container_state(
    r: &si::UpdateContainerSchedulingStateRequest,
) -> si18::UpdateContainerSchedulingStateRequest {
    si18::UpdateContainerSchedulingStateRequest {
        application_id: r.applicartion_id.clone(),
        allocation_key: r.allocation_key.clone(),
        state: r.state,
        reason: r.reason.clone(),
    }
}

/// One flush of the core's records in the v1 types (every record has one).
pub fn records(records: &[crate::events::Record]) -> Vec<si18::EventRecord> {
    records.iter().map(events::translate).collect()
}

/// Guarantee preemption's node check through a v1 RM: `ask` is its
/// `PreemptionPredicates`, or `None` when it has none (the check then
/// succeeds with the core's index). An index outside the list is a
/// refusal (spec 9.3: unfit).
pub fn preemption_check(
    ask: Option<&dyn Fn(&si18::PreemptionPredicatesArgs) -> si18::PreemptionPredicatesResponse>,
    allocation_key: &str,
    node: &str,
    victims: &[String],
    start_index: i32,
) -> Option<Option<i32>> {
    let Some(ask) = ask else {
        return Some(Some(start_index));
    };
    let answer = ask(&si18::PreemptionPredicatesArgs {
        allocation_key: allocation_key.to_string(),
        node_id: node.to_string(),
        preempt_allocation_keys: victims.to_vec(),
        start_index,
    });
    let usable = answer.success
        && answer.index >= start_index.max(0)
        && (answer.index as usize) < victims.len();
    Some(usable.then_some(answer.index))
}

/// v1.8 has no core→RM configuration callback.
pub fn no_update_configuration() -> si::UpdateConfigurationResponse {
    si::UpdateConfigurationResponse {
        success: false,
        old_config: String::new(),
        reason:
            "an SI v1.x resource manager owns its configuration and sends it in UpdateConfiguration"
                .into(),
    }
}

impl RmPort for EdgeV1 {
    fn deliver(&self, msg: &OutMsg) -> Result<(), String> {
        match msg {
            // Without predicates: the one delivery of `new`.
            OutMsg::NewAllocations(v) => self.deliver_new(v),
            // `assume` delivered the batch already.
            OutMsg::NewAllocationsResynced(_) => Ok(()),
            OutMsg::Assume(v) => self.assume(v),
            OutMsg::Allocation(r) => {
                let v1 = allocation_response(r);
                if !has_content(&v1) {
                    return Ok(());
                }
                self.rm.update_allocation(&v1)
            }
            OutMsg::Application(r) => self.rm.update_application(&application_response(r)),
            OutMsg::Node(r) => self.rm.update_node(&node_response(r)),
        }
    }

    /// With a barrier, the one delivery of `new`: on the core thread before
    /// the next check, or from the dispatcher ([`OutMsg::Assume`]).
    fn assume(&self, allocations: &[Arc<NewAllocation>]) -> Result<(), String> {
        self.deliver_new(allocations)
    }

    /// No ReSync in v1: forgotten allocations reach the RM as `released`.
    fn resync(&self, _args: &si::ReSyncSchedulerCacheArgs) -> Result<(), String> {
        Ok(())
    }

    fn predicates(&self, args: &PredicateCheck<'_>) -> Result<(), String> {
        self.rm.predicates(&si18::PredicatesArgs {
            allocation_key: args.allocation_key.to_string(),
            node_id: args.node_id.to_string(),
            allocate: args.allocate,
        })
    }

    fn has_predicates(&self) -> bool {
        self.rm.has_predicates()
    }

    fn preemption_predicates(
        &self,
        ask: &str,
        node: &str,
        victims: &[String],
        start_index: i32,
    ) -> Option<Option<i32>> {
        let call = |a: &si18::PreemptionPredicatesArgs| self.rm.preemption_predicates(a);
        let installed = self.rm.has_preemption_predicates();
        preemption_check(
            installed.then_some(&call as _),
            ask,
            node,
            victims,
            start_index,
        )
    }

    fn has_preemption_predicates(&self) -> bool {
        self.rm.has_preemption_predicates()
    }

    fn records(&self, batch: &[crate::events::Record]) {
        self.rm.send_event(&records(batch));
    }

    fn container_state(&self, r: &si::UpdateContainerSchedulingStateRequest) {
        self.rm
            .update_container_scheduling_state(&container_state(r));
    }

    fn has_container_state(&self) -> bool {
        self.rm.has_container_scheduling_state()
    }

    fn state_dump(&self) -> Option<Result<String, String>> {
        self.rm.get_state_dump()
    }

    fn update_configuration(
        &self,
        _request: &si::UpdateConfigurationRequest,
    ) -> si::UpdateConfigurationResponse {
        no_update_configuration()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    #[derive(Default)]
    struct Rm {
        got: Mutex<Vec<si18::AllocationResponse>>,
    }

    impl ResourceManagerCallbackV1 for Rm {
        fn update_allocation(&self, r: &si18::AllocationResponse) -> Result<(), String> {
            self.got.lock().unwrap().push(r.clone());
            Ok(())
        }
    }

    fn alloc(key: &str) -> Arc<NewAllocation> {
        Arc::new(NewAllocation {
            key: key.into(),
            uuid: key.into(),
            node: "n1".into(),
            ctx: crate::scheduler::outcome::AllocCtx::new("app", "root.a", "default", ""),
            resource: Default::default(),
            priority: 3,
            tags: Default::default(),
            placeholder: false,
            preempt_self: true,
            preempt_other: true,
            originator: false,
        })
    }

    #[test]
    fn new_reaches_the_rm_once_through_either_path() {
        let rm = Arc::new(Rm::default());
        let cb = EdgeV1::new(rm.clone());
        let batch = vec![alloc("k1"), alloc("k2")];
        // With predicates: the barrier's assume, then the dispatcher's announce.
        cb.assume(&batch).unwrap();
        cb.deliver(&OutMsg::NewAllocationsResynced(batch.clone()))
            .unwrap();
        // Without: one delivery.
        cb.deliver(&OutMsg::NewAllocations(batch[..1].to_vec()))
            .unwrap();
        let got = rm.got.lock().unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].new.len(), 2);
        assert_eq!(got[0].new[0].allocation_key, "k1");
        assert_eq!(got[0].new[0].priority, 3);
        assert_eq!(got[1].new.len(), 1);
    }

    #[test]
    fn responses_translate_by_key_and_drop_ask_echoes() {
        let r = si::AllocationResponse {
            released: vec![si::AllocationRelease {
                application_id: "app".into(),
                uuid: "k1".into(),
                termination_type: si::TerminationType::StoppedByRm as i32,
                ..Default::default()
            }],
            released_asks: vec![
                si::AllocationAskRelease {
                    allocationkey: "ph".into(),
                    termination_type: si::TerminationType::Timeout as i32,
                    ..Default::default()
                },
                si::AllocationAskRelease {
                    allocationkey: "k2".into(),
                    termination_type: si::TerminationType::StoppedByRm as i32,
                    ..Default::default()
                },
            ],
            rejected: vec![si::RejectedAllocationAsk {
                allocation_key: "k3".into(),
                application_id: "app".into(),
                reason: "no".into(),
            }],
            ..Default::default()
        };
        let v1 = allocation_response(&r);
        let keys: Vec<_> = v1
            .released
            .iter()
            .map(|a| a.allocation_key.as_str())
            .collect();
        assert_eq!(keys, ["k1", "ph"]);
        assert_eq!(
            v1.released[1].termination_type,
            si18::TerminationType::Timeout as i32
        );
        assert_eq!(v1.rejected_allocations[0].allocation_key, "k3");
        assert_eq!(v1.rejected_allocations[0].reason, "no");
    }

    #[test]
    fn application_and_node_responses_keep_every_field_of_the_shared_wire() {
        use prost::Message;
        let app = si::ApplicationResponse {
            rejected: vec![si::RejectedApplication {
                application_id: "r".into(),
                reason: "no queue".into(),
            }],
            accepted: vec![si::AcceptedApplication {
                application_id: "a".into(),
            }],
            updated: vec![si::UpdatedApplication {
                application_id: "u".into(),
                state: "Running".into(),
                state_transition_timestamp: 42,
                message: "ran".into(),
            }],
        };
        assert_eq!(
            application_response(&app).encode_to_vec(),
            app.encode_to_vec()
        );
        let node = si::NodeResponse {
            rejected: vec![si::RejectedNode {
                node_id: "n1".into(),
                reason: "dup".into(),
            }],
            accepted: vec![si::AcceptedNode {
                node_id: "n2".into(),
            }],
        };
        assert_eq!(node_response(&node).encode_to_vec(), node.encode_to_vec());
    }

    #[test]
    fn predicates_reach_a_rust_v1_rm_as_asked() {
        // That both editions share the wire is checked on the encoder the
        // C ABI uses (ffi::encode); here, the edge's message.
        for (key, node, allocate) in [("k", "n1", true), ("", "", false), ("ключ", "n", false)]
        {
            struct Rm(Mutex<Vec<si18::PredicatesArgs>>);
            impl ResourceManagerCallbackV1 for Rm {
                fn predicates(&self, a: &si18::PredicatesArgs) -> Result<(), String> {
                    self.0.lock().unwrap().push(a.clone());
                    Ok(())
                }
            }
            let rm = Arc::new(Rm(Mutex::default()));
            EdgeV1::new(rm.clone())
                .predicates(&PredicateCheck {
                    allocation_key: key,
                    node_id: node,
                    allocate,
                })
                .unwrap();
            let want = si18::PredicatesArgs {
                allocation_key: key.into(),
                node_id: node.into(),
                allocate,
            };
            assert_eq!(rm.0.lock().unwrap()[..], [want]);
        }
    }
}
