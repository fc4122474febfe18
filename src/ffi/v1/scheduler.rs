//! The SI v1.x family's entry points, `sicore_v1_*`, over the same
//! scheduler handle as the v0.12 family.

use std::sync::Arc;

use prost::Message;

use super::super::buffer::{borrow_bytes, decode, sicore_buffer};
use super::super::scheduler::scheduler;
use super::super::table::copy_table;
use super::super::{boundary, sicore_scheduler, sicore_status};
use super::callbacks::{sicore_v1_callbacks, V1Table};
use crate::error::Error;
use crate::proto::si::v1 as si;
use crate::proto::si18::v1 as si18;
use crate::rmproxy::v1::api::SchedulerApiV1;

/// Registers (or re-registers, resetting its state) a resource manager
/// through the SI v1.x edition; its rmID is bound to this family until it
/// registers again.
///
/// `request` is an encoded SI v1.x `RegisterResourceManagerRequest`:
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
/// `response_out` (nullable) receives an encoded SI v1.x
/// `RegisterResourceManagerResponse`. Synchronous: from inside a callback
/// this returns `SICORE_WOULD_DEADLOCK`.
#[no_mangle]
pub extern "C" fn sicore_v1_register_resource_manager(
    s: *mut sicore_scheduler,
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
        let table = unsafe { copy_table(callbacks) }?;
        // Owned from here on: whatever happens next, `release` runs once.
        let table = Arc::new(V1Table::new(table));
        let sched = scheduler(s)?;
        let req: si18::RegisterResourceManagerRequest = decode(
            request,
            request_len,
            "request (SI v1.x RegisterResourceManagerRequest)",
        )?;
        let resp = sched.register_port_v1(req, table)?;
        // SAFETY: null or writable storage for one sicore_buffer.
        if let Some(out) = unsafe { response_out.as_mut() } {
            *out = sicore_buffer::from_vec(resp.encode_to_vec());
        }
        Ok(())
    })
}

/// Queues an encoded SI v1.x `AllocationRequest`: allocations merged by
/// key (without a node: a request; with a node: placed by the RM, echoed
/// in `new`; tagged `foreign`: tracked on its node) and releases by key
/// (an empty key releases the whole application). Decoded and checked on
/// this thread; the outcome reaches the callbacks on a library thread.
/// An rmID registered through the v0.12 family is `SICORE_REJECTED`. Safe
/// to call from inside a callback.
#[no_mangle]
pub extern "C" fn sicore_v1_update_allocation(
    s: *mut sicore_scheduler,
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

/// Queues an encoded SI v1.x `ApplicationRequest` (the same message as in
/// v0.12). Asynchronous like `sicore_v1_update_allocation`.
#[no_mangle]
pub extern "C" fn sicore_v1_update_application(
    s: *mut sicore_scheduler,
    request: *const u8,
    request_len: usize,
    error_out: *mut sicore_buffer,
) -> sicore_status {
    boundary(error_out, || {
        let sched = scheduler(s)?;
        let req: si::ApplicationRequest =
            decode(request, request_len, "request (SI v1.x ApplicationRequest)")?;
        sched.update_application_same_wire(req)
    })
}

/// Queues an encoded SI v1.x `NodeRequest`: `CREATE_DRAIN` (created
/// unschedulable), `UPDATE`, `DRAIN_NODE`, `DRAIN_TO_SCHEDULABLE`,
/// `DECOMISSION`. Asynchronous like `sicore_v1_update_allocation`.
#[no_mangle]
pub extern "C" fn sicore_v1_update_node(
    s: *mut sicore_scheduler,
    request: *const u8,
    request_len: usize,
    error_out: *mut sicore_buffer,
) -> sicore_status {
    boundary(error_out, || {
        let sched = scheduler(s)?;
        sched.update_node_v1(decode(
            request,
            request_len,
            "request (SI v1.x NodeRequest)",
        )?)
    })
}

/// Applies an encoded SI v1.x `UpdateConfigurationRequest`: `extraConfig`
/// first, then `config` (empty: the built-in default). Synchronous:
/// invalid YAML returns `SICORE_REJECTED` with the reason and the old
/// queues stay; an unchanged checksum changes nothing. From inside a
/// callback this returns `SICORE_WOULD_DEADLOCK`.
#[no_mangle]
pub extern "C" fn sicore_v1_update_configuration(
    s: *mut sicore_scheduler,
    request: *const u8,
    request_len: usize,
    error_out: *mut sicore_buffer,
) -> sicore_status {
    boundary(error_out, || {
        let sched = scheduler(s)?;
        sched.update_configuration_v1(decode(
            request,
            request_len,
            "request (SI v1.x UpdateConfigurationRequest)",
        )?)
    })
}
