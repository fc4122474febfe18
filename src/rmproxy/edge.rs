//! The SI v0.12 edge for a Rust RM: the core's [`RmPort`] over the public
//! [`ResourceManagerCallback`], building the SI messages from the core's
//! records. (The C ABI's table implements the port itself, encoding
//! straight from the records.)

use std::sync::Arc;

use crate::proto::si::v1 as si;
use crate::scheduler::api::ResourceManagerCallback;
use crate::scheduler::outcome::{NewAllocation, OutMsg};
use crate::scheduler::port::{PredicateCheck, RmPort};

/// A Rust v0.12 RM's callbacks as the core calls them.
pub struct Edge {
    rm: Arc<dyn ResourceManagerCallback>,
}

impl Edge {
    /// Wraps the RM's callbacks.
    pub fn new(rm: Arc<dyn ResourceManagerCallback>) -> Self {
        Edge { rm }
    }
}

/// The `ReSyncSchedulerCache` that tells the RM's cache of `allocations`.
pub fn assumed(allocations: &[Arc<NewAllocation>]) -> si::ReSyncSchedulerCacheArgs {
    si::ReSyncSchedulerCacheArgs {
        assumed_allocations: allocations
            .iter()
            .map(|a| si::AssumedAllocation {
                allocation_key: a.key.to_string(),
                node_id: a.node.to_string(),
            })
            .collect(),
        forget_allocations: Vec::new(),
    }
}

impl Edge {
    /// The `UpdateAllocation` that hands the RM `allocations`.
    fn announce(&self, allocations: &[Arc<NewAllocation>]) -> Result<(), String> {
        self.rm.update_allocation(&si::AllocationResponse {
            new: allocations.iter().map(|a| a.to_proto()).collect(),
            ..Default::default()
        })
    }
}

impl RmPort for Edge {
    fn deliver(&self, msg: &OutMsg) -> Result<(), String> {
        match msg {
            // Without a barrier: the ReSync right before the announcement
            // (spec 8.11); its error is only logged.
            OutMsg::NewAllocations(v) => {
                if let Err(e) = self.assume(v) {
                    log::warn!("RM callback ReSyncSchedulerCache returned an error: {e}");
                }
                self.announce(v)
            }
            OutMsg::NewAllocationsResynced(v) => self.announce(v),
            OutMsg::Assume(v) => self.assume(v),
            OutMsg::Allocation(r) => self.rm.update_allocation(r),
            OutMsg::Application(r) => self.rm.update_application(r),
            OutMsg::Node(r) => self.rm.update_node(r),
        }
    }

    fn assume(&self, allocations: &[Arc<NewAllocation>]) -> Result<(), String> {
        self.rm.resync_scheduler_cache(&assumed(allocations))
    }

    fn resync(&self, args: &si::ReSyncSchedulerCacheArgs) -> Result<(), String> {
        self.rm.resync_scheduler_cache(args)
    }

    fn predicates(&self, args: &PredicateCheck<'_>) -> Result<(), String> {
        self.rm.predicates(&si::PredicatesArgs {
            allocation_key: args.allocation_key.to_string(),
            node_id: args.node_id.to_string(),
            allocate: args.allocate,
        })
    }

    fn has_predicates(&self) -> bool {
        self.rm.has_predicates()
    }

    /// SI v0.12 has no such check: preemption asks `predicates`.
    fn preemption_predicates(
        &self,
        _ask: &str,
        _node: &str,
        _victims: &[String],
        _start_index: i32,
    ) -> Option<Option<i32>> {
        None
    }

    fn has_preemption_predicates(&self) -> bool {
        false
    }

    /// The records with an SI v0.12 form (structured records exist in SI
    /// v1.8 only); nothing when none has.
    fn records(&self, records: &[crate::events::Record]) {
        let v0: Vec<si::EventRecord> = records
            .iter()
            .filter(|r| r.structured.is_none())
            .map(|r| r.base.clone())
            .collect();
        if !v0.is_empty() {
            self.rm.send_event(&v0);
        }
    }

    fn container_state(&self, request: &si::UpdateContainerSchedulingStateRequest) {
        self.rm.update_container_scheduling_state(request)
    }

    fn has_container_state(&self) -> bool {
        self.rm.has_container_scheduling_state()
    }

    fn state_dump(&self) -> Option<Result<String, String>> {
        self.rm.rm_state_dump()
    }

    fn update_configuration(
        &self,
        request: &si::UpdateConfigurationRequest,
    ) -> si::UpdateConfigurationResponse {
        self.rm.update_configuration(request)
    }
}
