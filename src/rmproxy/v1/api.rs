//! The Rust-native form of the SI v1.x edition, re-exported as
//! `sicore::v1`.
//!
//! [`SchedulerApiV1`] mirrors the v1.8 `SchedulerAPI` and
//! [`ResourceManagerCallbackV1`] its `ResourceManagerCallback`, with the
//! prost message types of [`crate::proto::si18::v1`]. One scheduler serves
//! RMs of both editions; the edition is bound to the rmID when it
//! registers, and a call of the other edition's API for that rmID is
//! refused with [`crate::Status::Rejected`].

use std::sync::Arc;

use crate::error::Error;
use crate::proto::si18::v1 as si18;

/// What a v1.8 resource manager calls. Implemented by [`crate::Scheduler`].
pub trait SchedulerApiV1: Send + Sync {
    /// Registers (or re-registers, resetting its state) a resource manager
    /// through the v1.8 edition. `extraConfig` is applied first, then
    /// `config` is loaded (empty: the built-in v1 default); invalid YAML
    /// fails the registration with the reason. Synchronous.
    fn register_resource_manager_v1(
        &self,
        request: si18::RegisterResourceManagerRequest,
        callback: Arc<dyn ResourceManagerCallbackV1>,
    ) -> Result<si18::RegisterResourceManagerResponse, Error>;

    /// Adds, updates (by key) and releases requests and allocations.
    /// Returns once the request is checked and queued; outcomes reach the
    /// callback, never on the calling thread.
    fn update_allocation_v1(&self, request: si18::AllocationRequest) -> Result<(), Error>;

    /// Adds and removes applications. Asynchronous like `update_allocation_v1`.
    fn update_application_v1(&self, request: si18::ApplicationRequest) -> Result<(), Error>;

    /// Creates (also unschedulable, `CREATE_DRAIN`), updates, drains and
    /// removes nodes. Every created node is answered. Asynchronous.
    fn update_node_v1(&self, request: si18::NodeRequest) -> Result<(), Error>;

    /// Applies `extraConfig`, then the configuration text (empty: the v1
    /// default). Synchronous: invalid YAML is refused and the old queues
    /// stay; an unchanged checksum changes nothing.
    fn update_configuration_v1(
        &self,
        request: si18::UpdateConfigurationRequest,
    ) -> Result<(), Error>;

    /// The v1.8 `Stop()`: shuts the scheduler down (as `sicore_shutdown`).
    fn stop(&self) -> Result<(), Error>;
}

/// What the scheduler calls back on a v1.8 resource manager.
///
/// Every method runs on a thread owned by the library, never on the thread
/// of the RM's own API call, and different methods may run concurrently.
/// A method may call the asynchronous [`SchedulerApiV1`] methods. Every
/// method has a default that does nothing and succeeds.
pub trait ResourceManagerCallbackV1: Send + Sync {
    /// New, released and rejected allocations. With a `predicates`
    /// callback, `new` reaches the RM (and this returns) before the core
    /// asks the next `predicates`, so an RM that assumes its pods here
    /// answers from a current cache.
    fn update_allocation(&self, _response: &si18::AllocationResponse) -> Result<(), String> {
        Ok(())
    }

    /// Accepted, rejected and updated applications.
    fn update_application(&self, _response: &si18::ApplicationResponse) -> Result<(), String> {
        Ok(())
    }

    /// Accepted and rejected nodes.
    fn update_node(&self, _response: &si18::NodeResponse) -> Result<(), String> {
        Ok(())
    }

    /// May the request run on the node? `Err(reason)` keeps it off.
    fn predicates(&self, _args: &si18::PredicatesArgs) -> Result<(), String> {
        Ok(())
    }

    /// Whether [`Self::predicates`] is implemented; when false every node passes.
    fn has_predicates(&self) -> bool {
        true
    }

    /// Guarantee preemption's node check: may the request run on the node
    /// once `preempt_allocation_keys[..start_index]` are gone, and which
    /// index from `start_index` on is the first at which it fits? The
    /// default refuses (a refusal preempts nothing on that node).
    fn preemption_predicates(
        &self,
        _args: &si18::PreemptionPredicatesArgs,
    ) -> si18::PreemptionPredicatesResponse {
        si18::PreemptionPredicatesResponse {
            success: false,
            index: -1,
        }
    }

    /// Whether [`Self::preemption_predicates`] is implemented; when false
    /// the core takes every preemption check as a success (as for an RM
    /// without a callback) and never calls it.
    fn has_preemption_predicates(&self) -> bool {
        true
    }

    /// One batch of event records per flush.
    fn send_event(&self, _events: &[si18::EventRecord]) {}

    /// Scheduling state of a request that cannot be placed.
    fn update_container_scheduling_state(
        &self,
        _request: &si18::UpdateContainerSchedulingStateRequest,
    ) {
    }

    /// Whether [`Self::update_container_scheduling_state`] is implemented
    /// (when false the core skips the outstanding-request check for this RM).
    fn has_container_scheduling_state(&self) -> bool {
        true
    }

    /// The optional `StateDumpPlugin`: the RM's own state as JSON. `None`:
    /// not implemented. Called for every full state dump, which includes it
    /// under `resourceManagerDumps.<rmID>`.
    fn get_state_dump(&self) -> Option<Result<String, String>> {
        None
    }
}
