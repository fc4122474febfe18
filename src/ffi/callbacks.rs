//! The RM's callback table: the core's [`RmPort`] over C function
//! pointers, encoding straight from the core's records.

use std::ffi::c_void;
use std::mem::{offset_of, size_of};

use prost::Message;

use super::table::{
    c_table, sicore_answer_callback, sicore_notify_callback, sicore_reply, sicore_status_callback,
    with_scratch, Table,
};
use crate::proto::si::v1 as si;
use crate::proto::sicore::v1 as sicore;
use crate::scheduler::outcome::{NewAllocation, OutMsg};
use crate::scheduler::port::{PredicateCheck, RmPort};

/// Stores `len` bytes at `data` (copied) as the callback's answer. A later
/// call replaces an earlier one. NULL `reply` is ignored; NULL `data` with
/// `len` 0 sets an empty answer.
#[no_mangle]
pub extern "C" fn sicore_reply_set(reply: *mut sicore_reply, data: *const u8, len: usize) {
    super::void_boundary("sicore_reply_set", || {
        // SAFETY: `reply` is null or the pointer the library passed to the
        // running callback, valid until that callback returns.
        let Some(reply) = (unsafe { reply.as_mut() }) else {
            return;
        };
        if let Ok(bytes) = super::buffer::borrow_bytes(data, len, "data", true) {
            reply.data = Some(bytes.to_vec());
        }
    });
}

/// The RM's callbacks. The table is copied at registration; a NULL function
/// means "not implemented": the core acts as if it succeeded (for
/// `predicates`: every node fits) and never calls it. Messages are borrowed
/// for the duration of the call. Callbacks run on library threads, possibly
/// concurrently with each other, and must be thread-safe.
///
/// Set `struct_size` to `sizeof(sicore_callbacks)`: the library reads only
/// the fields that size covers, so a program compiled against an older
/// header (a shorter table) keeps working when later releases of the same
/// ABI version add callbacks at the end; the fields it does not have count
/// as NULL. A size that does not cover `struct_size`, `user_data` and
/// `update_allocation` is refused.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct sicore_callbacks {
    /// `sizeof(sicore_callbacks)` as the caller compiled it.
    pub struct_size: usize,
    /// Passed back to every callback and to `release`.
    pub user_data: *mut c_void,
    /// `si.v1.AllocationResponse`: new, released and rejected allocations and asks.
    pub update_allocation: sicore_status_callback,
    /// `si.v1.ApplicationResponse`: accepted, rejected and updated applications.
    pub update_application: sicore_status_callback,
    /// `si.v1.NodeResponse`: accepted and rejected nodes.
    pub update_node: sicore_status_callback,
    /// `si.v1.PredicatesArgs`: return 0 when the ask may run on the node.
    pub predicates: sicore_status_callback,
    /// `si.v1.ReSyncSchedulerCacheArgs`: assumed and forgotten allocations.
    /// When `predicates` is set, assumed allocations arrive from the core
    /// thread before the next `predicates` call and before the
    /// `update_allocation` that announces them.
    pub resync_scheduler_cache: sicore_status_callback,
    /// `sicore.v1.EventRecords`: one batch of events.
    pub send_event: sicore_notify_callback,
    /// `si.v1.UpdateContainerSchedulingStateRequest`.
    pub update_container_scheduling_state: sicore_notify_callback,
    /// `si.v1.UpdateConfigurationRequest`; answer with an encoded
    /// `si.v1.UpdateConfigurationResponse` (no answer = failure).
    pub update_configuration: sicore_answer_callback,
    /// Called once when the library is done with `user_data`. Nullable.
    pub release: Option<unsafe extern "C" fn(user_data: *mut c_void)>,
}

impl Default for sicore_callbacks {
    /// A table of this library's size with every callback NULL: for Rust
    /// callers, as `sicore_callbacks { update_node: Some(f), ..Default::default() }`.
    fn default() -> Self {
        sicore_callbacks {
            struct_size: size_of::<sicore_callbacks>(),
            user_data: std::ptr::null_mut(),
            update_allocation: None,
            update_application: None,
            update_node: None,
            predicates: None,
            resync_scheduler_cache: None,
            send_event: None,
            update_container_scheduling_state: None,
            update_configuration: None,
            release: None,
        }
    }
}

/// The smallest `struct_size` accepted: through `update_allocation`, the
/// first callback. A table without it has nothing to tell the RM.
pub(crate) const MIN_CALLBACKS_SIZE: usize =
    offset_of!(sicore_callbacks, update_allocation) + size_of::<sicore_status_callback>();

c_table!(
    sicore_callbacks,
    "struct_size, user_data, update_allocation",
    MIN_CALLBACKS_SIZE,
    [
        user_data,
        update_allocation,
        update_application,
        update_node,
        predicates,
        resync_scheduler_cache,
        send_event,
        update_container_scheduling_state,
        update_configuration,
        release,
    ]
);

/// A registered v0.12 callback table.
pub(crate) type CallbackTable = Table<sicore_callbacks>;

impl CallbackTable {
    /// One `UpdateAllocation` with `new`, encoded from the records.
    fn announce(&self, allocations: &[std::sync::Arc<NewAllocation>]) -> Result<(), String> {
        if self.0.update_allocation.is_none() {
            return Ok(());
        }
        let bytes = super::encode::allocation_response(allocations);
        self.status_call_bytes(self.0.update_allocation, &bytes, "update_allocation")
    }
}

impl RmPort for CallbackTable {
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
            OutMsg::Allocation(r) => {
                self.status_call(self.0.update_allocation, r, "update_allocation")
            }
            OutMsg::Application(r) => {
                self.status_call(self.0.update_application, r, "update_application")
            }
            OutMsg::Node(r) => self.status_call(self.0.update_node, r, "update_node"),
        }
    }

    fn assume(&self, allocations: &[std::sync::Arc<NewAllocation>]) -> Result<(), String> {
        if self.0.resync_scheduler_cache.is_none() {
            return Ok(());
        }
        with_scratch(|buf| {
            super::encode::assumed_allocations_into(allocations, buf);
            self.status_call_bytes(self.0.resync_scheduler_cache, buf, "resync_scheduler_cache")
        })
    }

    fn resync(&self, args: &si::ReSyncSchedulerCacheArgs) -> Result<(), String> {
        self.status_call(
            self.0.resync_scheduler_cache,
            args,
            "resync_scheduler_cache",
        )
    }

    fn predicates(&self, args: &PredicateCheck<'_>) -> Result<(), String> {
        self.predicates_call(self.0.predicates, args)
    }

    fn has_predicates(&self) -> bool {
        self.0.predicates.is_some()
    }

    /// The v0.12 table has no such check: preemption asks `predicates`.
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

    fn records(&self, records: &[crate::events::Record]) {
        // No SI v1.x-only record.
        let batch = sicore::EventRecords {
            events: records
                .iter()
                .filter(|r| r.structured.is_none())
                .map(|r| r.base.clone())
                .collect(),
        };
        if !batch.events.is_empty() {
            self.notify_call(self.0.send_event, &batch);
        }
    }

    fn container_state(&self, r: &si::UpdateContainerSchedulingStateRequest) {
        self.notify_call(self.0.update_container_scheduling_state, r);
    }

    fn has_container_state(&self) -> bool {
        self.0.update_container_scheduling_state.is_some()
    }

    fn state_dump(&self) -> Option<Result<String, String>> {
        None
    }

    fn update_configuration(
        &self,
        r: &si::UpdateConfigurationRequest,
    ) -> si::UpdateConfigurationResponse {
        let failed = |reason: &str| si::UpdateConfigurationResponse {
            success: false,
            old_config: String::new(),
            reason: reason.into(),
        };
        if self.0.update_configuration.is_none() {
            return failed("update_configuration is not implemented by the resource manager");
        }
        match self.answer_call(self.0.update_configuration, r) {
            None => failed("the resource manager gave no answer"),
            Some(d) => si::UpdateConfigurationResponse::decode(d.as_slice()).unwrap_or_else(|e| {
                failed(&format!("undecodable UpdateConfigurationResponse: {e}"))
            }),
        }
    }
}
