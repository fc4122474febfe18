//! The Rust-native form of the scheduler interface.
//!
//! [`SchedulerApi`] mirrors the SI's `SchedulerAPI` and
//! [`ResourceManagerCallback`] its `ResourceManagerCallback`, with the prost
//! message types of [`crate::proto::si::v1`]. The C ABI in [`crate::ffi`] is a
//! thin adapter over these traits, so a Rust resource manager embeds sicore
//! without going through FFI.

use std::sync::Arc;

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
    /// Before each call, [`Self::resync_scheduler_cache`] has told the RM
    /// of every allocation decided before it (on the core thread).
    fn predicates(&self, _args: &si::PredicatesArgs) -> Result<(), String> {
        Ok(())
    }

    /// Whether [`Self::predicates`] is implemented. When false the core
    /// never calls it and every node passes.
    fn has_predicates(&self) -> bool {
        true
    }

    /// Allocations the core assumed (before the RM hears of them) or forgot
    /// (after releases).
    fn resync_scheduler_cache(&self, _args: &si::ReSyncSchedulerCacheArgs) -> Result<(), String> {
        Ok(())
    }

    /// One batch of event records per flush.
    fn send_event(&self, _events: &[si::EventRecord]) {}

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
