//! The outbound dispatcher: one library-owned thread that delivers
//! allocation, application and node responses to the RM's callbacks in the
//! order the core produced them.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crossbeam_channel::Receiver;

use crate::api::ResourceManagerCallback;
use crate::proto::si::v1 as si;
use crate::scheduler::outcome::OutMsg;

/// Something to hand to an RM callback.
pub enum Outbound {
    /// A response for `update_allocation`, `update_application` or `update_node`.
    Message(Arc<dyn ResourceManagerCallback>, OutMsg),
    /// A `resync_scheduler_cache` call.
    Resync(
        Arc<dyn ResourceManagerCallback>,
        si::ReSyncSchedulerCacheArgs,
    ),
    /// A batch for `send_event`.
    Events(Arc<dyn ResourceManagerCallback>, Vec<si::EventRecord>),
    /// One `update_container_scheduling_state` call.
    ContainerState(
        Arc<dyn ResourceManagerCallback>,
        si::UpdateContainerSchedulingStateRequest,
    ),
}

/// Delivers until the channel closes; once `stopping` is set, what is left
/// is dropped unsent (shutdown abandons pending work).
pub fn run(inbox: Receiver<Outbound>, stopping: Arc<AtomicBool>) {
    for item in inbox {
        if stopping.load(Ordering::Acquire) {
            continue;
        }
        let result = catch_unwind(AssertUnwindSafe(|| deliver(item)));
        if result.is_err() {
            log::error!("an RM callback panicked; the message was dropped");
        }
    }
}

fn deliver(item: Outbound) {
    let (what, result) = match item {
        Outbound::Message(cb, OutMsg::NewAllocations(v)) => {
            ("UpdateAllocation", cb.new_allocations(&v))
        }
        Outbound::Message(cb, OutMsg::NewAllocationsResynced(v)) => {
            ("UpdateAllocation", cb.announce_allocations(&v))
        }
        Outbound::Message(cb, OutMsg::Allocation(r)) => {
            ("UpdateAllocation", cb.update_allocation(&r))
        }
        Outbound::Message(cb, OutMsg::Application(r)) => {
            ("UpdateApplication", cb.update_application(&r))
        }
        Outbound::Message(cb, OutMsg::Node(r)) => ("UpdateNode", cb.update_node(&r)),
        Outbound::Resync(cb, args) => ("ReSyncSchedulerCache", cb.resync_scheduler_cache(&args)),
        Outbound::Events(cb, events) => {
            cb.send_event(&events);
            ("SendEvent", Ok(()))
        }
        Outbound::ContainerState(cb, req) => {
            cb.update_container_scheduling_state(&req);
            ("UpdateContainerSchedulingState", Ok(()))
        }
    };
    if let Err(e) = result {
        log::warn!("RM callback {what} returned an error: {e}");
    }
}
