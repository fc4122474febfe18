//! The SI v1.x side of the shared RM: trampolines of a
//! `sicore_v1_callbacks` table, registration through the v1 family and the
//! messages of a v1 set-up. Same shape as the v0.12 side: implement
//! [`RmV1`] and get a table with [`table`].

use std::ffi::c_void;
use std::sync::Arc;

use sicore::ffi::*;
use sicore::proto::si18::sicore::si18 as sicore18;
use sicore::proto::si18::v1 as si18;

use super::trampoline::{
    decode, notify_trampoline, reclaimed, register_with, reply_with, rm, status_trampoline,
};

/// What a v1 RM does with each callback, decoded.
pub trait RmV1: Send + Sync + 'static {
    /// New, released and rejected allocations.
    fn update_allocation(&self, _m: si18::AllocationResponse) -> Result<(), String> {
        Ok(())
    }
    /// Accepted, rejected and updated applications.
    fn update_application(&self, _m: si18::ApplicationResponse) -> Result<(), String> {
        Ok(())
    }
    /// Accepted and rejected nodes.
    fn update_node(&self, _m: si18::NodeResponse) -> Result<(), String> {
        Ok(())
    }
    /// May the allocation go on the node?
    fn predicates(&self, _m: si18::PredicatesArgs) -> Result<(), String> {
        Ok(())
    }
    /// A batch of event records.
    fn send_event(&self, _m: sicore18::EventRecords) {}
    /// A request's scheduling state.
    fn update_container_scheduling_state(&self, _m: si18::UpdateContainerSchedulingStateRequest) {}
    /// The preemption check (guarantee and required-node preemption).
    fn preemption_predicates(
        &self,
        _m: si18::PreemptionPredicatesArgs,
    ) -> si18::PreemptionPredicatesResponse {
        si18::PreemptionPredicatesResponse {
            success: false,
            index: -1,
        }
    }
    /// The library is done with the table.
    fn released(&self) {}
}

status_trampoline!(
    RmV1,
    on_allocation,
    update_allocation,
    si18::AllocationResponse
);
status_trampoline!(
    RmV1,
    on_application,
    update_application,
    si18::ApplicationResponse
);
status_trampoline!(RmV1, on_node, update_node, si18::NodeResponse);
status_trampoline!(RmV1, on_predicates, predicates, si18::PredicatesArgs);
notify_trampoline!(RmV1, on_event, send_event);
notify_trampoline!(RmV1, on_container_state, update_container_scheduling_state);

unsafe extern "C" fn on_preemption<R: RmV1>(
    ud: *mut c_void,
    p: *const u8,
    len: usize,
    reply: *mut sicore_reply,
) {
    reply_with(reply, &rm::<R>(ud).preemption_predicates(decode(p, len)));
}

unsafe extern "C" fn on_release<R: RmV1>(ud: *mut c_void) {
    // SAFETY: the Arc leaked by `table`; the library releases it once.
    unsafe { reclaimed::<R>(ud) }.released();
}

/// A v1 table whose `user_data` holds a reference to `rm`; `predicates`
/// only when `with_predicates`. The other optional callbacks are installed.
pub fn table<R: RmV1>(rm: &Arc<R>, with_predicates: bool) -> sicore_v1_callbacks {
    sicore_v1_callbacks {
        user_data: Arc::into_raw(rm.clone()) as *mut c_void,
        update_allocation: Some(on_allocation::<R>),
        update_application: Some(on_application::<R>),
        update_node: Some(on_node::<R>),
        predicates: with_predicates.then_some(on_predicates::<R> as _),
        preemption_predicates: Some(on_preemption::<R>),
        send_event: Some(on_event::<R>),
        update_container_scheduling_state: Some(on_container_state::<R>),
        get_state_dump: None,
        release: Some(on_release::<R>),
        ..Default::default()
    }
}

/// Registers through `sicore_v1_register_resource_manager`.
pub fn register(
    s: *mut sicore_scheduler,
    req: &si18::RegisterResourceManagerRequest,
    table: *const sicore_v1_callbacks,
) -> (sicore_status, String) {
    register_with(sicore_v1_register_resource_manager, s, req, table)
}

/// `sicore_v1_update_configuration`.
pub fn update_configuration(
    s: *mut sicore_scheduler,
    req: &si18::UpdateConfigurationRequest,
) -> (sicore_status, String) {
    super::call(s, sicore_v1_update_configuration, req)
}

/// A resource of `(name, quantity)` pairs.
pub fn res(pairs: &[(&str, i64)]) -> Option<si18::Resource> {
    Some(si18::Resource {
        resources: pairs
            .iter()
            .map(|(k, v)| (k.to_string(), si18::Quantity { value: *v }))
            .collect(),
    })
}

/// A node the k8shim way: `CREATE_DRAIN`, with host and rack attributes.
pub fn node(id: &str, memory: i64, vcore: i64) -> si18::NodeInfo {
    si18::NodeInfo {
        node_id: id.into(),
        action: si18::node_info::ActionFromRm::CreateDrain as i32,
        attributes: [
            ("si.io/hostname".to_string(), id.to_string()),
            ("si.io/rackname".to_string(), "/rack-1".to_string()),
        ]
        .into(),
        schedulable_resource: res(&[("memory", memory), ("vcore", vcore)]),
    }
}

/// A node action on an existing node.
pub fn node_action(id: &str, action: si18::node_info::ActionFromRm) -> si18::NodeInfo {
    si18::NodeInfo {
        node_id: id.into(),
        action: action as i32,
        ..Default::default()
    }
}

/// An application of `user` in `queue`.
pub fn app(id: &str, queue: &str, user: &str) -> si18::AddApplicationRequest {
    si18::AddApplicationRequest {
        application_id: id.into(),
        queue_name: queue.into(),
        ugi: Some(si18::UserGroupInformation {
            user: user.into(),
            groups: vec![],
        }),
        ..Default::default()
    }
}

/// A pending request (no node) of `memory` and `vcore`.
pub fn ask(app: &str, key: &str, memory: i64, vcore: i64) -> si18::Allocation {
    si18::Allocation {
        allocation_key: key.into(),
        application_id: app.into(),
        resource_per_alloc: res(&[("memory", memory), ("vcore", vcore)]),
        ..Default::default()
    }
}

/// A release by key (empty key: the whole application).
pub fn release(app: &str, key: &str) -> si18::AllocationRelease {
    si18::AllocationRelease {
        application_id: app.into(),
        allocation_key: key.into(),
        termination_type: si18::TerminationType::StoppedByRm as i32,
        message: "released by the RM".into(),
        ..Default::default()
    }
}

/// The same counters as the v0.12 side, told through the v1 family (the
/// bench's and the simulator's `--edition v1`).
impl super::Counters {
    /// Counts the new allocations (placeholders apart) and the rejected requests.
    pub fn allocation_v1(&self, m: &si18::AllocationResponse) {
        use std::sync::atomic::Ordering::AcqRel;
        let placeholders = m.new.iter().filter(|a| a.placeholder).count();
        self.placeholders.fetch_add(placeholders, AcqRel);
        self.real.fetch_add(m.new.len() - placeholders, AcqRel);
        self.allocations.fetch_add(m.new.len(), AcqRel);
        self.asks_rejected
            .fetch_add(m.rejected_allocations.len(), AcqRel);
        if m.rejected_allocations.is_empty() {
            self.wake_for_allocations();
        } else {
            // A waiter for allocations must learn that some never come.
            self.wake();
        }
    }

    /// Counts accepted and rejected applications.
    pub fn application_v1(&self, m: &si18::ApplicationResponse) {
        use std::sync::atomic::Ordering::AcqRel;
        self.apps_accepted.fetch_add(m.accepted.len(), AcqRel);
        self.apps_rejected.fetch_add(m.rejected.len(), AcqRel);
        self.wake();
    }

    /// Counts accepted and rejected nodes.
    pub fn node_v1(&self, m: &si18::NodeResponse) {
        use std::sync::atomic::Ordering::AcqRel;
        self.nodes_accepted.fetch_add(m.accepted.len(), AcqRel);
        self.nodes_rejected.fetch_add(m.rejected.len(), AcqRel);
        self.wake();
    }
}

/// An RM that only counts, deciding nothing (every node fits).
impl RmV1 for super::Counters {
    fn update_allocation(&self, m: si18::AllocationResponse) -> Result<(), String> {
        self.allocation_v1(&m);
        Ok(())
    }
    fn update_application(&self, m: si18::ApplicationResponse) -> Result<(), String> {
        self.application_v1(&m);
        Ok(())
    }
    fn update_node(&self, m: si18::NodeResponse) -> Result<(), String> {
        self.node_v1(&m);
        Ok(())
    }
    fn predicates(&self, _m: si18::PredicatesArgs) -> Result<(), String> {
        self.predicate();
        Ok(())
    }
}
