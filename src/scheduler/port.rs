//! What the core needs from a resource manager, in the core's own terms.
//!
//! The public traits (`api::ResourceManagerCallback`, and the v1.8
//! edition's `ResourceManagerCallbackV1`) are the SI's callbacks as an RM
//! writes them. The core does not call them: it calls an [`RmPort`], which
//! each edge implements once, so that the core's records ([`NewAllocation`],
//! [`Record`]) and its ordering hooks never show in the public API:
//!
//! - `rmproxy::edge` over a Rust v0.12 `ResourceManagerCallback`;
//! - `rmproxy::v1::edge` over a Rust v1.8 `ResourceManagerCallbackV1`;
//! - the C ABI's callback tables (`ffi`), which encode straight from the
//!   core's records.
//!
//! The core holds every registration behind its [`super::order::RmOrder`],
//! which keeps one RM's messages in order and its calls one at a time.

use std::sync::Arc;

use super::outcome::{NewAllocation, OutMsg};
use crate::events::Record;
use crate::proto::si::v1 as si;

/// A `Predicates` question: may the ask `allocation_key` run on node
/// `node_id`? `allocate` is false for preemption's what-if checks.
/// Borrowed from the core's records, so asking copies nothing; each edge
/// encodes it or builds its edition's message from it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PredicateCheck<'a> {
    /// The ask's key.
    pub allocation_key: &'a str,
    /// The node's id.
    pub node_id: &'a str,
    /// Whether the answer is for an allocation now.
    pub allocate: bool,
}

/// One registered RM as the core sees it.
///
/// Calls come from library threads (the core thread and the dispatcher),
/// one at a time per RM. The defaults do nothing and succeed, as an RM
/// that installed no callback; they serve the core's own test RMs, and
/// every edge overrides each method.
pub trait RmPort: Send + Sync {
    /// Delivers one message for `UpdateAllocation`, `UpdateApplication` or
    /// `UpdateNode`. New allocations come in two kinds:
    /// [`OutMsg::NewAllocations`] is the one delivery of a batch the RM has
    /// not heard of (the edge tells the RM's cache first where its edition
    /// has one); [`OutMsg::NewAllocationsResynced`] follows an
    /// [`Self::assume`] of the same batch.
    fn deliver(&self, _msg: &OutMsg) -> Result<(), String> {
        Ok(())
    }

    /// Tells the RM of allocations the core decided on, before it is asked
    /// anything more in the same pass (the ReSync barrier, on the core
    /// thread). Its return is the barrier.
    fn assume(&self, _allocations: &[Arc<NewAllocation>]) -> Result<(), String> {
        Ok(())
    }

    /// A `ReSyncSchedulerCache` of forgotten allocations (after releases).
    /// Editions without it drop it.
    fn resync(&self, _args: &si::ReSyncSchedulerCacheArgs) -> Result<(), String> {
        Ok(())
    }

    /// May the ask run on the node? `Err(reason)` keeps it off.
    fn predicates(&self, _args: &PredicateCheck<'_>) -> Result<(), String> {
        Ok(())
    }

    /// Whether the RM answers [`Self::predicates`]; when false the core
    /// never asks and every node passes.
    fn has_predicates(&self) -> bool {
        true
    }

    /// Guarantee preemption's node check: may `ask` run on `node` once the
    /// victims `victims[..start_index]` are gone and, from `start_index`
    /// on, how many more? `Some(Some(i))`: it fits once `victims[..=i]` are
    /// gone; `Some(None)`: it does not. `None`: the RM has no such check,
    /// and the core asks [`Self::predicates`] with `allocate: false`.
    fn preemption_predicates(
        &self,
        _ask: &str,
        _node: &str,
        _victims: &[String],
        _start_index: i32,
    ) -> Option<Option<i32>> {
        None
    }

    /// Whether preemption's node checks go through
    /// [`Self::preemption_predicates`] behind the ReSync barrier, whether
    /// or not the RM has [`Self::predicates`].
    fn has_preemption_predicates(&self) -> bool {
        false
    }

    /// One flush of the core's event records; each edition sends the ones
    /// it has a form for.
    fn records(&self, _records: &[Record]) {}

    /// Scheduling state of an ask that cannot be placed.
    fn container_state(&self, _request: &si::UpdateContainerSchedulingStateRequest) {}

    /// Whether the RM takes [`Self::container_state`]; when false the core
    /// skips the outstanding-request check for it (spec 8.12).
    fn has_container_state(&self) -> bool {
        true
    }

    /// The RM's own state as JSON for the full state dump; `None` when it
    /// has none.
    fn state_dump(&self) -> Option<Result<String, String>> {
        None
    }

    /// Asks the RM to persist a new configuration text (the REST update).
    fn update_configuration(
        &self,
        _request: &si::UpdateConfigurationRequest,
    ) -> si::UpdateConfigurationResponse {
        not_implemented()
    }
}

/// The answer of an RM that cannot persist a configuration.
pub fn not_implemented() -> si::UpdateConfigurationResponse {
    si::UpdateConfigurationResponse {
        success: false,
        old_config: String::new(),
        reason: "not implemented by the resource manager".into(),
    }
}

/// Whether two handles are one registration's (the data pointer alone:
/// vtable pointers of one type may differ between codegen units).
pub fn same_registration(a: &Arc<dyn RmPort>, b: &Arc<dyn RmPort>) -> bool {
    std::ptr::eq(Arc::as_ptr(a).cast::<()>(), Arc::as_ptr(b).cast::<()>())
}
