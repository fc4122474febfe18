//! The SI v1.8 family: `sicore_v1_*` entry points and the
//! `sicore_v1_callbacks` table, over the same scheduler handle as the
//! v0.12 family. Bytes are v1.8 messages (`proto/si18/si.proto`); the
//! edition is bound to the rmID at registration.

use std::ffi::c_void;
use std::mem::{offset_of, size_of};
use std::sync::Arc;

use prost::Message;

use super::buffer::{borrow_bytes, decode, sicore_buffer};
use super::callbacks::{
    read_into, sicore_answer_callback, sicore_notify_callback, sicore_reply,
    sicore_status_callback, with_scratch,
};
use super::scheduler::scheduler;
use super::{boundary, sicore_status};
use crate::error::Error;
use crate::proto::si::v1 as si;
use crate::proto::si18::sicore::si18 as sicore18;
use crate::proto::si18::v1 as si18;
use crate::rmproxy::v1::edge;
use crate::scheduler::outcome::{NewAllocation, OutMsg};
use crate::scheduler::port::RmPort;

/// A callback that answers through `response`, with no message in.
pub type sicore_dump_callback =
    Option<unsafe extern "C" fn(user_data: *mut c_void, response: *mut sicore_reply)>;

/// The callbacks of an RM that registers through the SI v1.8 family
/// (`sicore_v1_register_resource_manager`). Copied at registration, as far
/// as `struct_size` reaches; a NULL function, or one past the caller's
/// size, is "not implemented": the core acts as if it succeeded (for
/// `predicates`: every node fits) and never calls it. Messages are SI v1.8
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
    /// SI v1.8 `AllocationResponse`: new (by key), released and rejected allocations.
    pub update_allocation: sicore_status_callback,
    /// SI v1.8 `ApplicationResponse`: accepted, rejected and updated applications.
    pub update_application: sicore_status_callback,
    /// SI v1.8 `NodeResponse`: accepted and rejected nodes (every created node is answered).
    pub update_node: sicore_status_callback,
    /// SI v1.8 `PredicatesArgs`: return 0 when the allocation may run on the node.
    pub predicates: sicore_status_callback,
    /// SI v1.8 `PreemptionPredicatesArgs`; answer with an encoded
    /// `PreemptionPredicatesResponse`. Called for guarantee and
    /// required-node preemption while preemption is on, whether or not
    /// `predicates` is set, after the RM has heard of every earlier decision.
    pub preemption_predicates: sicore_answer_callback,
    /// `sicore.si18.EventRecords` (field 1 = repeated SI v1.8 `EventRecord`): one batch per flush.
    pub send_event: sicore_notify_callback,
    /// SI v1.8 `UpdateContainerSchedulingStateRequest`.
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

/// Copies the caller's table as far as its `struct_size` covers whole
/// fields; refuses a size below [`MIN_V1_CALLBACKS_SIZE`], having read
/// nothing but `struct_size`.
///
/// # Safety
/// `p` is non-null and points at a readable `size_t` followed by at least
/// `struct_size - sizeof(size_t)` readable bytes, laid out as the header's
/// `sicore_v1_callbacks` up to that size.
unsafe fn copy_v1_callbacks(p: *const sicore_v1_callbacks) -> Result<sicore_v1_callbacks, Error> {
    let base = p.cast::<u8>();
    // SAFETY: the caller's table starts with a `size_t` (see above).
    let size = unsafe { base.cast::<usize>().read_unaligned() };
    if size < MIN_V1_CALLBACKS_SIZE {
        return Err(Error::invalid(format!(
            "callbacks: struct_size {size} is smaller than the table's first fields \
             (struct_size, user_data, update_allocation, update_application, update_node: \
             {MIN_V1_CALLBACKS_SIZE} bytes); set it to sizeof(sicore_v1_callbacks)"
        )));
    }
    let mut t = sicore_v1_callbacks {
        struct_size: size,
        ..Default::default()
    };
    macro_rules! read_fields {
        ($($field:ident),*) => {$(
            let offset = offset_of!(sicore_v1_callbacks, $field);
            if offset + size_of_val(&t.$field) <= size {
                // SAFETY: the field lies within the caller's `struct_size`
                // bytes, which the caller promises are readable and laid
                // out as the header says; every bit pattern the C side can
                // store there (a pointer or NULL) is valid for the type.
                unsafe { read_into(&mut t.$field, base.add(offset)) };
            }
        )*};
    }
    read_fields!(
        user_data,
        update_allocation,
        update_application,
        update_node,
        predicates,
        preemption_predicates,
        send_event,
        update_container_scheduling_state,
        get_state_dump,
        release
    );
    Ok(t)
}

/// A registered v1 table. Dropping it calls `release`.
struct V1Table(sicore_v1_callbacks);

// SAFETY: the contract requires the RM's callbacks and user_data to be
// usable from any thread, concurrently; the table itself is immutable.
unsafe impl Send for V1Table {}
// SAFETY: as above; nothing in the table is mutated after registration.
unsafe impl Sync for V1Table {}

impl Drop for V1Table {
    fn drop(&mut self) {
        if let Some(release) = self.0.release {
            // SAFETY: called exactly once, when the last reference to the
            // table goes away; the RM owns user_data and frees it here.
            unsafe { release(self.0.user_data) };
        }
    }
}

impl V1Table {
    fn status_call(
        &self,
        f: sicore_status_callback,
        msg: &impl Message,
        what: &str,
    ) -> Result<(), String> {
        let Some(f) = f else {
            return Ok(());
        };
        with_scratch(|buf| {
            msg.encode_raw(buf);
            self.call_bytes(f, buf, what)
        })
    }

    fn call_bytes(
        &self,
        f: unsafe extern "C" fn(*mut c_void, *const u8, usize, *mut sicore_reply) -> i32,
        bytes: &[u8],
        what: &str,
    ) -> Result<(), String> {
        let mut reply = sicore_reply { data: None };
        // SAFETY: a non-null function pointer registered by the RM,
        // called with its own user_data, a message valid for the call
        // and a reply slot valid for the call, as the header documents.
        let rc = unsafe { f(self.0.user_data, bytes.as_ptr(), bytes.len(), &mut reply) };
        if rc == 0 {
            Ok(())
        } else {
            Err(match reply.data {
                Some(d) if !d.is_empty() => String::from_utf8_lossy(&d).into_owned(),
                _ => format!("{what} callback returned {rc}"),
            })
        }
    }

    fn notify_call(&self, f: sicore_notify_callback, msg: &impl Message) {
        if let Some(f) = f {
            let bytes = msg.encode_to_vec();
            // SAFETY: as in `status_call`.
            unsafe { f(self.0.user_data, bytes.as_ptr(), bytes.len()) };
        }
    }
}

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
            super::encode::allocation_response_v1_into(allocations, buf);
            self.call_bytes(f, buf, "update_allocation")
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
        let Some(f) = self.0.preemption_predicates else {
            return refused;
        };
        let bytes = args.encode_to_vec();
        let mut reply = sicore_reply { data: None };
        // SAFETY: as in `status_call`.
        unsafe { f(self.0.user_data, bytes.as_ptr(), bytes.len(), &mut reply) };
        reply
            .data
            .and_then(|d| si18::PreemptionPredicatesResponse::decode(d.as_slice()).ok())
            .unwrap_or(refused)
    }
}

/// The v1 edge's rules (`rmproxy::v1::edge`) over the table: `new` goes
/// once, at the barrier when there is one; the messages whose wire is the
/// same in both editions (applications, nodes, predicates) are encoded as
/// the core made them.
impl RmPort for V1Table {
    fn deliver(&self, msg: &OutMsg) -> Result<(), String> {
        match msg {
            OutMsg::NewAllocations(v) => self.deliver_new(v),
            OutMsg::NewAllocationsResynced(_) => Ok(()),
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

    fn predicates(&self, args: &si::PredicatesArgs) -> Result<(), String> {
        self.status_call(self.0.predicates, args, "predicates")
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
        let mut reply = sicore_reply { data: None };
        // SAFETY: a non-null function pointer registered by the RM, called
        // with its own user_data and a reply slot valid for the call.
        unsafe { f(self.0.user_data, &mut reply) };
        // An unset reply is "nothing to add" (the Go binding's RM without
        // a StateDumpPlugin).
        let d = reply.data?;
        Some(String::from_utf8(d).map_err(|e| format!("state dump is not UTF-8: {e}")))
    }

    fn update_configuration(
        &self,
        _request: &si::UpdateConfigurationRequest,
    ) -> si::UpdateConfigurationResponse {
        edge::no_update_configuration()
    }
}

/// Registers (or re-registers, resetting its state) a resource manager
/// through the SI v1.8 edition; its rmID is bound to this family until it
/// registers again.
///
/// `request` is an encoded SI v1.8 `RegisterResourceManagerRequest`:
/// `extraConfig` is applied first (the keys read are listed in
/// docs/si-v1.md), then `config`, the queues configuration text, is loaded
/// (empty: the built-in default, partition `default` with namespace
/// placement). Invalid YAML returns `SICORE_REJECTED` with the reason and
/// leaves the RM unregistered. `rmID` and `policyGroup` must not be empty
/// (`SICORE_INVALID_ARGUMENT`).
///
/// `callbacks` is copied as far as its `struct_size` reaches; NULL, or a
/// `struct_size` that does not cover `struct_size`, `user_data` and the
/// three response callbacks, is `SICORE_INVALID_ARGUMENT` and the table is
/// not taken (its `release` does not run). Once taken, the library owns
/// `user_data` as for `sicore_register_resource_manager`: `release` runs
/// exactly once, right away if the registration fails. On success
/// `response_out` (nullable) receives an encoded SI v1.8
/// `RegisterResourceManagerResponse`. Synchronous: from inside a callback
/// this returns `SICORE_WOULD_DEADLOCK`.
#[no_mangle]
pub extern "C" fn sicore_v1_register_resource_manager(
    s: *mut super::sicore_scheduler,
    request: *const u8,
    request_len: usize,
    callbacks: *const sicore_v1_callbacks,
    response_out: *mut sicore_buffer,
    error_out: *mut sicore_buffer,
) -> sicore_status {
    boundary(error_out, || {
        if callbacks.is_null() {
            return Err(Error::invalid("callbacks is a null pointer"));
        }
        // SAFETY: a non-null pointer to the caller's table, readable for its
        // `struct_size` bytes during this call; it is copied here.
        let table = unsafe { copy_v1_callbacks(callbacks) }?;
        // Owned from here on: whatever happens next, `release` runs once.
        let table = Arc::new(V1Table(table));
        let sched = scheduler(s)?;
        let req: si18::RegisterResourceManagerRequest = decode(
            request,
            request_len,
            "request (SI v1.8 RegisterResourceManagerRequest)",
        )?;
        let resp = sched.register_port_v1(req, table)?;
        // SAFETY: null or writable storage for one sicore_buffer.
        if let Some(out) = unsafe { response_out.as_mut() } {
            *out = sicore_buffer::from_vec(resp.encode_to_vec());
        }
        Ok(())
    })
}

/// Queues an encoded SI v1.8 `AllocationRequest`: allocations merged by
/// key (without a node: a request; with a node: placed by the RM, echoed
/// in `new`; tagged `foreign`: tracked on its node) and releases by key
/// (an empty key releases the whole application). Decoded and checked on
/// this thread; the outcome reaches the callbacks on a library thread.
/// An rmID registered through the v0.12 family is `SICORE_REJECTED`. Safe
/// to call from inside a callback.
#[no_mangle]
pub extern "C" fn sicore_v1_update_allocation(
    s: *mut super::sicore_scheduler,
    request: *const u8,
    request_len: usize,
    error_out: *mut sicore_buffer,
) -> sicore_status {
    boundary(error_out, || {
        let sched = scheduler(s)?;
        let bytes = borrow_bytes(request, request_len, crate::rmproxy::v1::wire::WHAT, false)?;
        sched.update_allocation_v1_encoded(bytes)
    })
}

/// Queues an encoded SI v1.8 `ApplicationRequest` (the same message as in
/// v0.12). Asynchronous like `sicore_v1_update_allocation`.
#[no_mangle]
pub extern "C" fn sicore_v1_update_application(
    s: *mut super::sicore_scheduler,
    request: *const u8,
    request_len: usize,
    error_out: *mut sicore_buffer,
) -> sicore_status {
    boundary(error_out, || {
        let sched = scheduler(s)?;
        let req: si::ApplicationRequest =
            decode(request, request_len, "request (SI v1.8 ApplicationRequest)")?;
        sched.update_application_same_wire(req)
    })
}

/// Queues an encoded SI v1.8 `NodeRequest`: `CREATE_DRAIN` (created
/// unschedulable), `UPDATE`, `DRAIN_NODE`, `DRAIN_TO_SCHEDULABLE`,
/// `DECOMISSION`. Asynchronous like `sicore_v1_update_allocation`.
#[no_mangle]
pub extern "C" fn sicore_v1_update_node(
    s: *mut super::sicore_scheduler,
    request: *const u8,
    request_len: usize,
    error_out: *mut sicore_buffer,
) -> sicore_status {
    boundary(error_out, || {
        let sched = scheduler(s)?;
        sched.update_node_v1(decode(
            request,
            request_len,
            "request (SI v1.8 NodeRequest)",
        )?)
    })
}

/// Applies an encoded SI v1.8 `UpdateConfigurationRequest`: `extraConfig`
/// first, then `config` (empty: the built-in default). Synchronous:
/// invalid YAML returns `SICORE_REJECTED` with the reason and the old
/// queues stay; an unchanged checksum changes nothing. From inside a
/// callback this returns `SICORE_WOULD_DEADLOCK`.
#[no_mangle]
pub extern "C" fn sicore_v1_update_configuration(
    s: *mut super::sicore_scheduler,
    request: *const u8,
    request_len: usize,
    error_out: *mut sicore_buffer,
) -> sicore_status {
    boundary(error_out, || {
        let sched = scheduler(s)?;
        sched.update_configuration_v1(decode(
            request,
            request_len,
            "request (SI v1.8 UpdateConfigurationRequest)",
        )?)
    })
}
