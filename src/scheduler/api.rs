//! The Rust-native form of the scheduler interface.
//!
//! [`SchedulerApi`] mirrors the SI's `SchedulerAPI` and
//! [`ResourceManagerCallback`] its `ResourceManagerCallback`, with the prost
//! message types of [`crate::proto::si::v1`]. The C ABI in [`crate::ffi`] is a
//! thin adapter over these traits, so a Rust resource manager embeds sicore
//! without going through FFI.

use std::sync::Arc;

pub use super::outcome::NewAllocation;
use crate::error::Error;
use crate::proto::si::v1 as si;

/// What the resource manager calls. Implemented by [`crate::Scheduler`].
pub trait SchedulerApi: Send + Sync {
    /// Registers (or re-registers, resetting its state) a resource manager and
    /// loads its policy group's configuration. Synchronous.
    fn register_resource_manager(
        &self,
        request: si::RegisterResourceManagerRequest,
        callback: Arc<dyn ResourceManagerCallback>,
    ) -> Result<si::RegisterResourceManagerResponse, Error>;

    /// Adds or updates asks and releases asks and allocations. Returns once
    /// the request is validated and queued; outcomes reach the callback.
    fn update_allocation(&self, request: si::AllocationRequest) -> Result<(), Error>;

    /// Adds and removes applications. Asynchronous like `update_allocation`.
    fn update_application(&self, request: si::ApplicationRequest) -> Result<(), Error>;

    /// Creates, updates, drains and removes nodes. Asynchronous.
    fn update_node(&self, request: si::NodeRequest) -> Result<(), Error>;

    /// Re-reads the configuration of the RM `cluster_id` and applies it.
    /// Synchronous: an invalid configuration is refused and the old one stays.
    fn update_configuration(&self, cluster_id: &str) -> Result<(), Error>;
}

/// What the scheduler calls back on the resource manager.
///
/// Every method runs on a thread owned by the library, and different methods
/// may run concurrently, so implementations must be thread-safe. A method
/// may call the asynchronous [`SchedulerApi`] methods; synchronous ones fail
/// with [`crate::Status::WouldDeadlock`] from inside a callback.
///
/// Every method has a default that does nothing and succeeds.
pub trait ResourceManagerCallback: Send + Sync {
    /// New allocations, released allocations and asks, rejected asks.
    fn update_allocation(&self, _response: &si::AllocationResponse) -> Result<(), String> {
        Ok(())
    }

    /// Accepted, rejected and updated applications.
    fn update_application(&self, _response: &si::ApplicationResponse) -> Result<(), String> {
        Ok(())
    }

    /// Accepted and rejected nodes.
    fn update_node(&self, _response: &si::NodeResponse) -> Result<(), String> {
        Ok(())
    }

    /// May the ask run on the node? `Err(reason)` keeps it off the node.
    /// Before each call, [`Self::assume_allocations`] has told the RM of
    /// every allocation decided before it (on the core thread).
    fn predicates(&self, _args: &si::PredicatesArgs) -> Result<(), String> {
        Ok(())
    }

    /// Guarantee preemption's node check (SI v1.8 `PreemptionPredicates`):
    /// may `ask` run on `node` once the victims `victims[..start_index]`
    /// are gone and, from `start_index` on, how many more? `Some(Some(i))`:
    /// it fits once `victims[..=i]` are gone; `Some(None)`: it does not.
    /// `None` (the default, and every SI v0.12 RM): no such callback; the
    /// core asks [`Self::predicates`] with `allocate: false` instead.
    /// Called after the same ReSync barrier as [`Self::predicates`].
    fn preemption_predicates(
        &self,
        _ask: &str,
        _node: &str,
        _victims: &[String],
        _start_index: i32,
    ) -> Option<Option<i32>> {
        None
    }

    /// Whether [`Self::predicates`] is implemented. When false the core
    /// never calls it and every node passes.
    fn has_predicates(&self) -> bool {
        true
    }

    /// Whether [`Self::preemption_predicates`] is implemented (an SI v1.8
    /// RM that installed it). When true and preemption is on, the RM is
    /// asked it, through the ReSync barrier, whether or not it has
    /// [`Self::predicates`]; when false the core never asks it.
    fn has_preemption_predicates(&self) -> bool {
        false
    }

    /// New allocations of one batch: first announced as assumed through
    /// [`Self::assume_allocations`], then delivered through
    /// [`Self::announce_allocations`] (spec 8.11). Used when the RM has no
    /// `Predicates` callback; with one, the core calls the two halves
    /// separately (the ReSync on its own thread, before the next predicate
    /// call). Errors are only logged by the core.
    fn new_allocations(&self, allocations: &[Arc<NewAllocation>]) -> Result<(), String> {
        if let Err(e) = self.assume_allocations(allocations) {
            log::warn!("RM callback ReSyncSchedulerCache returned an error: {e}");
        }
        self.announce_allocations(allocations)
    }

    /// Tells the RM's cache of allocations the core has decided on (one
    /// `ReSyncSchedulerCache` with assumed allocations). The default builds
    /// the message and calls [`Self::resync_scheduler_cache`]; an adapter
    /// may encode straight from the records instead (the C ABI does).
    fn assume_allocations(&self, allocations: &[Arc<NewAllocation>]) -> Result<(), String> {
        let assumed = si::ReSyncSchedulerCacheArgs {
            assumed_allocations: allocations
                .iter()
                .map(|a| si::AssumedAllocation {
                    allocation_key: a.key.to_string(),
                    node_id: a.node.to_string(),
                })
                .collect(),
            forget_allocations: Vec::new(),
        };
        self.resync_scheduler_cache(&assumed)
    }

    /// Hands the RM new allocations whose ReSync it has already received
    /// (one `UpdateAllocation` with `new`). The default builds the message
    /// and calls [`Self::update_allocation`].
    fn announce_allocations(&self, allocations: &[Arc<NewAllocation>]) -> Result<(), String> {
        self.update_allocation(&si::AllocationResponse {
            new: allocations.iter().map(|a| a.to_proto()).collect(),
            ..Default::default()
        })
    }

    /// Allocations the core assumed (before the RM hears of them) or forgot
    /// (after releases).
    fn resync_scheduler_cache(&self, _args: &si::ReSyncSchedulerCacheArgs) -> Result<(), String> {
        Ok(())
    }

    /// One batch of event records per flush.
    fn send_event(&self, _events: &[si::EventRecord]) {}

    /// One batch of the core's records per flush, as the core made them.
    /// The default sends the SI v0.12 ones through [`Self::send_event`]
    /// (structured records exist in SI v1.8 only); the v1.8 edge maps
    /// every record.
    fn send_records(&self, records: &[crate::events::Record]) {
        let v0: Vec<si::EventRecord> = records
            .iter()
            .filter(|r| r.structured.is_none())
            .map(|r| r.base.clone())
            .collect();
        if !v0.is_empty() {
            self.send_event(&v0);
        }
    }

    /// Scheduling state of a container (asks that cannot be placed).
    fn update_container_scheduling_state(
        &self,
        _request: &si::UpdateContainerSchedulingStateRequest,
    ) {
    }

    /// Whether [`Self::update_container_scheduling_state`] is implemented.
    /// When false the core skips the outstanding-request check for this RM
    /// (spec 8.12): its only output is that callback, and at 500,000 waiting
    /// asks the walk and the reports cost a second of CPU per check.
    fn has_container_scheduling_state(&self) -> bool {
        true
    }

    /// The RM's own state as JSON for the full state dump (the v1.8
    /// `StateDumpPlugin`); `None` when it has none. Called on the core thread.
    fn rm_state_dump(&self) -> Option<Result<String, String>> {
        None
    }

    /// Asks the RM to persist a new configuration text.
    fn update_configuration(
        &self,
        _request: &si::UpdateConfigurationRequest,
    ) -> si::UpdateConfigurationResponse {
        si::UpdateConfigurationResponse {
            success: false,
            old_config: String::new(),
            reason: "not implemented by the resource manager".into(),
        }
    }
}
