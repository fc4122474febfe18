//! The SI v1.x callback table, `sicore_v1_callbacks`, and the core's port
//! over it: the v1 edge's rules (`rmproxy::v1::edge`), encoding straight
//! from the core's records.

use std::ffi::c_void;
use std::mem::{offset_of, size_of};
use std::sync::Arc;

use prost::Message;

use super::super::table::{
    c_table, sicore_answer_callback, sicore_notify_callback, sicore_reply, sicore_status_callback,
    with_scratch, Table,
};
use crate::proto::si::v1 as si;
use crate::proto::si18::sicore::si18 as sicore18;
use crate::proto::si18::v1 as si18;
use crate::rmproxy::v1::edge;
use crate::scheduler::outcome::{NewAllocation, OutMsg};
use crate::scheduler::port::{PredicateCheck, RmPort};

/// A callback that answers through `response`, with no message in.
pub type sicore_dump_callback =
    Option<unsafe extern "C" fn(user_data: *mut c_void, response: *mut sicore_reply)>;

/// The callbacks of an RM that registers through the SI v1.x family
/// (`sicore_v1_register_resource_manager`). Copied at registration, as far
/// as `struct_size` reaches; a NULL function, or one past the caller's
/// size, is "not implemented": the core acts as if it succeeded (for
/// `predicates`: every node fits) and never calls it. Messages are SI v1.x
/// encodings, borrowed for the call. Callbacks run on library threads,
/// never on the thread of the RM's own call, possibly concurrently with
/// each other, and must be thread-safe.
///
/// With `predicates` set, a decided allocation's `update_allocation`
/// (`new`) is called, and has returned, before the next `predicates` call:
/// an RM may assume the pod inside `update_allocation` and answer
/// `predicates` from that cache.
///
/// Set `struct_size` to `sizeof(sicore_v1_callbacks)`. A size that does
/// not cover `struct_size`, `user_data` and the three response callbacks
/// (`update_allocation`, `update_application`, `update_node`) is refused.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct sicore_v1_callbacks {
    /// `sizeof(sicore_v1_callbacks)` as the caller compiled it.
    pub struct_size: usize,
    /// Passed back to every callback and to `release`.
    pub user_data: *mut c_void,
    /// SI v1.x `AllocationResponse`: new (by key), released and rejected allocations.
    pub update_allocation: sicore_status_callback,
    /// SI v1.x `ApplicationResponse`: accepted, rejected and updated applications.
    pub update_application: sicore_status_callback,
    /// SI v1.x `NodeResponse`: accepted and rejected nodes (every created node is answered).
    pub update_node: sicore_status_callback,
    /// SI v1.x `PredicatesArgs`: return 0 when the allocation may run on the node.
    pub predicates: sicore_status_callback,
    /// SI v1.x `PreemptionPredicatesArgs`; answer with an encoded
    /// `PreemptionPredicatesResponse`. Called for guarantee and
    /// required-node preemption while preemption is on, whether or not
    /// `predicates` is set, after the RM has heard of every earlier decision.
    pub preemption_predicates: sicore_answer_callback,
    /// `sicore.si18.EventRecords` (field 1 = repeated SI v1.x `EventRecord`): one batch per flush.
    pub send_event: sicore_notify_callback,
    /// SI v1.x `UpdateContainerSchedulingStateRequest`.
    pub update_container_scheduling_state: sicore_notify_callback,
    /// Nullable: the RM's own state as UTF-8 JSON, set through
    /// `sicore_reply_set`; called (on the core thread) for every full
    /// state dump, which includes it under `resourceManagerDumps.<rmID>`
    /// (a reply left unset adds nothing).
    pub get_state_dump: sicore_dump_callback,
    /// Called once when the library is done with `user_data`. Nullable.
    pub release: Option<unsafe extern "C" fn(user_data: *mut c_void)>,
}

impl Default for sicore_v1_callbacks {
    /// A table of this library's size with every callback NULL.
    fn default() -> Self {
        sicore_v1_callbacks {
            struct_size: size_of::<sicore_v1_callbacks>(),
            user_data: std::ptr::null_mut(),
            update_allocation: None,
            update_application: None,
            update_node: None,
            predicates: None,
            preemption_predicates: None,
            send_event: None,
            update_container_scheduling_state: None,
            get_state_dump: None,
            release: None,
        }
    }
}

/// The smallest `struct_size` accepted: through `update_node`.
pub(crate) const MIN_V1_CALLBACKS_SIZE: usize =
    offset_of!(sicore_v1_callbacks, update_node) + size_of::<sicore_status_callback>();

c_table!(
    sicore_v1_callbacks,
    "struct_size, user_data, update_allocation, update_application, update_node",
    MIN_V1_CALLBACKS_SIZE,
    [
        user_data,
        update_allocation,
        update_application,
        update_node,
        predicates,
        preemption_predicates,
        send_event,
        update_container_scheduling_state,
        get_state_dump,
        release,
    ]
);

/// A registered v1 table.
pub(crate) type V1Table = Table<sicore_v1_callbacks>;

impl V1Table {
    /// `new` encoded straight from the records, as the v0.12 table does.
    fn deliver_new(&self, allocations: &[Arc<NewAllocation>]) -> Result<(), String> {
        let Some(f) = self.0.update_allocation else {
            return Ok(());
        };
        if allocations.is_empty() {
            return Ok(());
        }
        with_scratch(|buf| {
            super::super::encode::allocation_response_v1_into(allocations, buf);
            self.status_call_bytes(Some(f), buf, "update_allocation")
        })
    }

    fn ask_preemption(
        &self,
        args: &si18::PreemptionPredicatesArgs,
    ) -> si18::PreemptionPredicatesResponse {
        let refused = si18::PreemptionPredicatesResponse {
            success: false,
            index: -1,
        };
        self.answer_call(self.0.preemption_predicates, args)
            .and_then(|d| si18::PreemptionPredicatesResponse::decode(d.as_slice()).ok())
            .unwrap_or(refused)
    }
}

/// The v1 edge's rules (`rmproxy::v1::edge`) over the table: `new` goes
/// once, as the assume of a barrier when there is one; the messages whose wire is the
/// same in both editions (applications, nodes, predicates) are encoded as
/// the core made them.
impl RmPort for V1Table {
    fn deliver(&self, msg: &OutMsg) -> Result<(), String> {
        match msg {
            OutMsg::NewAllocations(v) => self.deliver_new(v),
            OutMsg::NewAllocationsResynced(_) => Ok(()),
            OutMsg::Assume(v) => self.assume(v),
            OutMsg::Allocation(r) => {
                let v1 = edge::allocation_response(r);
                if !edge::has_content(&v1) {
                    return Ok(());
                }
                self.status_call(self.0.update_allocation, &v1, "update_allocation")
            }
            OutMsg::Application(r) => {
                self.status_call(self.0.update_application, r, "update_application")
            }
            OutMsg::Node(r) => self.status_call(self.0.update_node, r, "update_node"),
        }
    }

    fn assume(&self, allocations: &[Arc<NewAllocation>]) -> Result<(), String> {
        self.deliver_new(allocations)
    }

    /// No ReSync in v1.
    fn resync(&self, _args: &si::ReSyncSchedulerCacheArgs) -> Result<(), String> {
        Ok(())
    }

    fn predicates(&self, args: &PredicateCheck<'_>) -> Result<(), String> {
        self.predicates_call(self.0.predicates, args)
    }

    fn has_predicates(&self) -> bool {
        self.0.predicates.is_some()
    }

    fn preemption_predicates(
        &self,
        ask: &str,
        node: &str,
        victims: &[String],
        start_index: i32,
    ) -> Option<Option<i32>> {
        let call = |a: &si18::PreemptionPredicatesArgs| self.ask_preemption(a);
        let installed = self.0.preemption_predicates.is_some();
        edge::preemption_check(
            installed.then_some(&call as _),
            ask,
            node,
            victims,
            start_index,
        )
    }

    fn has_preemption_predicates(&self) -> bool {
        self.0.preemption_predicates.is_some()
    }

    fn records(&self, records: &[crate::events::Record]) {
        let batch = sicore18::EventRecords {
            events: edge::records(records),
        };
        self.notify_call(self.0.send_event, &batch);
    }

    fn container_state(&self, r: &si::UpdateContainerSchedulingStateRequest) {
        self.notify_call(
            self.0.update_container_scheduling_state,
            &edge::container_state(r),
        );
    }

    fn has_container_state(&self) -> bool {
        self.0.update_container_scheduling_state.is_some()
    }

    fn state_dump(&self) -> Option<Result<String, String>> {
        let f = self.0.get_state_dump?;
        // An unset reply is "nothing to add" (the Go binding's RM without
        // a StateDumpPlugin).
        let d = self.reply_call(f)?;
        Some(String::from_utf8(d).map_err(|e| format!("state dump is not UTF-8: {e}")))
    }

    fn update_configuration(
        &self,
        _request: &si::UpdateConfigurationRequest,
    ) -> si::UpdateConfigurationResponse {
        edge::no_update_configuration()
    }
}
