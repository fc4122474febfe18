//! The outbound half of the v1.8 edge: a v0.12-shaped
//! [`ResourceManagerCallback`] that wraps the RM's v1 callback and
//! translates what the core reports.
//!
//! The barrier. In v0.12 the RM learns of a decision through ReSync
//! (assumed) before the next `Predicates`; a v1.8 RM (the k8shim) assumes
//! the pod inside its `UpdateAllocation` callback for `new`. So here
//! [`ResourceManagerCallback::assume_allocations`], which the core calls on
//! its own thread before the next `predicates`, delivers the `new`; the
//! dispatcher's later `announce_allocations` of the same batch does
//! nothing, and without predicates `new_allocations` delivers once. A ReSync
//! (forget) has no v1 form and is dropped, as is the core→RM
//! `update_configuration` (the REST service refuses v1 RMs' edits).

use std::sync::Arc;

use prost::Message;

use super::api::ResourceManagerCallbackV1;
use super::convert::resource_to_v1;
use super::events;
use crate::proto::si::v1 as si;
use crate::proto::si18::v1 as si18;
use crate::scheduler::api::{NewAllocation, ResourceManagerCallback};

/// The core's view of a v1.8 RM's callbacks.
pub struct V1Callback {
    rm: Arc<dyn ResourceManagerCallbackV1>,
}

impl V1Callback {
    /// Wraps the RM's callbacks.
    pub fn new(rm: Arc<dyn ResourceManagerCallbackV1>) -> Self {
        V1Callback { rm }
    }

    fn deliver_new(&self, allocations: &[Arc<NewAllocation>]) -> Result<(), String> {
        if allocations.is_empty() {
            return Ok(());
        }
        self.rm.new_allocations(allocations)
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

/// A message that is the same on both wires, re-read in the v1 types.
fn same_wire<A: Message, B: Message + Default>(m: &A) -> Result<B, String> {
    B::decode(m.encode_to_vec().as_slice()).map_err(|e| format!("re-encoding for SI v1.8: {e}"))
}

impl ResourceManagerCallback for V1Callback {
    fn preemption_predicates(
        &self,
        ask: &str,
        node: &str,
        victims: &[String],
        start_index: i32,
    ) -> Option<Option<i32>> {
        if !self.rm.has_preemption_predicates() {
            // Not implemented: the check succeeds with the core's index.
            return Some(Some(start_index));
        }
        let answer = self
            .rm
            .preemption_predicates(&si18::PreemptionPredicatesArgs {
                allocation_key: ask.to_string(),
                node_id: node.to_string(),
                preempt_allocation_keys: victims.to_vec(),
                start_index,
            });
        // An index outside the list is a refusal (spec 9.3: unfit).
        let usable = answer.success
            && answer.index >= start_index.max(0)
            && (answer.index as usize) < victims.len();
        Some(usable.then_some(answer.index))
    }

    fn update_allocation(&self, r: &si::AllocationResponse) -> Result<(), String> {
        let v1 = allocation_response(r);
        if v1.new.is_empty() && v1.released.is_empty() && v1.rejected_allocations.is_empty() {
            return Ok(());
        }
        self.rm.update_allocation(&v1)
    }

    fn update_application(&self, r: &si::ApplicationResponse) -> Result<(), String> {
        self.rm.update_application(&same_wire(r)?)
    }

    fn update_node(&self, r: &si::NodeResponse) -> Result<(), String> {
        self.rm.update_node(&same_wire(r)?)
    }

    fn predicates(&self, args: &si::PredicatesArgs) -> Result<(), String> {
        self.rm.predicates_same_wire(args)
    }

    fn has_predicates(&self) -> bool {
        self.rm.has_predicates()
    }

    fn has_preemption_predicates(&self) -> bool {
        self.rm.has_preemption_predicates()
    }

    /// Without predicates: the one delivery of `new`.
    fn new_allocations(&self, allocations: &[Arc<NewAllocation>]) -> Result<(), String> {
        self.deliver_new(allocations)
    }

    /// With predicates, on the core thread before the next `predicates`:
    /// the one delivery of `new` (its return is the barrier).
    fn assume_allocations(&self, allocations: &[Arc<NewAllocation>]) -> Result<(), String> {
        self.deliver_new(allocations)
    }

    /// The dispatcher's announcement of a batch `assume_allocations`
    /// already delivered.
    fn announce_allocations(&self, _allocations: &[Arc<NewAllocation>]) -> Result<(), String> {
        Ok(())
    }

    /// No ReSync in v1: forgotten allocations reach the RM as `released`.
    fn resync_scheduler_cache(&self, _args: &si::ReSyncSchedulerCacheArgs) -> Result<(), String> {
        Ok(())
    }

    fn send_event(&self, records: &[si::EventRecord]) {
        let v1: Vec<si18::EventRecord> = records.iter().map(events::record).collect();
        self.rm.send_event(&v1);
    }

    fn send_records(&self, records: &[crate::events::Record]) {
        let v1: Vec<si18::EventRecord> = records.iter().map(events::translate).collect();
        self.rm.send_event(&v1);
    }

    fn update_container_scheduling_state(&self, r: &si::UpdateContainerSchedulingStateRequest) {
        self.rm
            .update_container_scheduling_state(&si18::UpdateContainerSchedulingStateRequest {
                application_id: r.applicartion_id.clone(),
                allocation_key: r.allocation_key.clone(),
                state: r.state,
                reason: r.reason.clone(),
            });
    }

    fn has_container_scheduling_state(&self) -> bool {
        self.rm.has_container_scheduling_state()
    }

    fn rm_state_dump(&self) -> Option<Result<String, String>> {
        self.rm.get_state_dump()
    }

    /// v1.8 has no core→RM configuration callback.
    fn update_configuration(
        &self,
        _request: &si::UpdateConfigurationRequest,
    ) -> si::UpdateConfigurationResponse {
        si::UpdateConfigurationResponse {
            success: false,
            old_config: String::new(),
            reason: "an SI v1.8 resource manager owns its configuration and sends it in UpdateConfiguration".into(),
        }
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
            app: "app".into(),
            queue: "root.a".into(),
            partition: "default".into(),
            resource: Default::default(),
            priority: 3,
            tags: Default::default(),
            task_group: "".into(),
            placeholder: false,
            preempt_self: true,
            preempt_other: true,
            originator: false,
        })
    }

    #[test]
    fn new_reaches_the_rm_once_through_either_path() {
        let rm = Arc::new(Rm::default());
        let cb = V1Callback::new(rm.clone());
        let batch = [alloc("k1"), alloc("k2")];
        // With predicates: the barrier's assume, then the dispatcher's announce.
        cb.assume_allocations(&batch).unwrap();
        cb.announce_allocations(&batch).unwrap();
        // Without: one call does both halves.
        cb.new_allocations(&batch[..1]).unwrap();
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
    fn predicates_args_share_the_wire_with_v012() {
        use prost::Message;
        for (key, node, allocate) in [("k", "n1", true), ("", "", false), ("ключ", "n", false)]
        {
            let v0 = si::PredicatesArgs {
                allocation_key: key.into(),
                node_id: node.into(),
                allocate,
            };
            let v1 = si18::PredicatesArgs {
                allocation_key: key.into(),
                node_id: node.into(),
                allocate,
            };
            assert_eq!(v0.encode_to_vec(), v1.encode_to_vec());
            // The default hook hands the RM the same arguments.
            struct Rm(Mutex<Vec<si18::PredicatesArgs>>);
            impl ResourceManagerCallbackV1 for Rm {
                fn predicates(&self, a: &si18::PredicatesArgs) -> Result<(), String> {
                    self.0.lock().unwrap().push(a.clone());
                    Ok(())
                }
            }
            let rm = Rm(Mutex::default());
            rm.predicates_same_wire(&v0).unwrap();
            assert_eq!(rm.0.lock().unwrap()[..], [v1]);
        }
    }
}
