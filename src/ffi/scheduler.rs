//! Lifecycle and SchedulerAPI entry points.

use std::sync::Arc;

use super::buffer::{borrow_bytes, borrow_str, decode, sicore_buffer};
use super::callbacks::{sicore_callbacks, CallbackTable};
use super::table::copy_table;
use super::{boundary, sicore_status, void_boundary};
use crate::entrypoint::Scheduler;
use crate::error::{Error, Status};
use crate::options::Options;
use crate::proto::si::v1 as si;
use crate::proto::sicore::v1 as sicore;
use crate::scheduler::api::SchedulerApi;

/// A scheduler instance. Opaque; create with `sicore_new`, destroy with
/// `sicore_free`.
pub struct sicore_scheduler {
    inner: Scheduler,
}

pub(super) fn scheduler<'a>(s: *const sicore_scheduler) -> Result<&'a Scheduler, Error> {
    // SAFETY: the caller passes null or a pointer returned by `sicore_new`
    // and not yet freed (use after free is undefined, as documented).
    unsafe { s.as_ref() }
        .map(|s| &s.inner)
        .ok_or_else(|| Error::invalid("scheduler is a null pointer"))
}

/// The library version, a static NUL-terminated string. Never free it.
#[no_mangle]
pub extern "C" fn sicore_version() -> *const std::ffi::c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

/// Creates a scheduler and starts its threads.
///
/// `options` is an encoded `sicore.v1.SchedulerOptions`; NULL with length 0
/// means all defaults. On success `*out` receives the scheduler, which the
/// caller owns and frees with `sicore_free`. `error_out` (nullable)
/// receives the reason of a failure.
#[no_mangle]
pub extern "C" fn sicore_new(
    options: *const u8,
    options_len: usize,
    out: *mut *mut sicore_scheduler,
    error_out: *mut sicore_buffer,
) -> sicore_status {
    boundary(error_out, || {
        if out.is_null() {
            return Err(Error::invalid("out is a null pointer"));
        }
        let opts: sicore::SchedulerOptions = if options.is_null() && options_len == 0 {
            Default::default()
        } else {
            decode(options, options_len, "options (sicore.v1.SchedulerOptions)")?
        };
        let opts = Options::from_proto(opts)?;
        super::logger::set_library_level(opts.log_level);
        let boxed = Box::new(sicore_scheduler {
            inner: Scheduler::new(opts)?,
        });
        // SAFETY: `out` was checked non-null; the caller provides storage
        // for one pointer.
        unsafe { *out = Box::into_raw(boxed) };
        Ok(())
    })
}

/// Stops the scheduler (as `sicore_shutdown`, if not done yet) and frees
/// it. No other thread may be inside, or enter, a call on `s` while it
/// frees the memory: to end a scheduler other threads still use, call
/// `sicore_shutdown` first. NULL is a no-op.
/// Called on a library thread (inside a callback or the log function, of
/// any scheduler) it stops and frees nothing, logs an error, and `s` stays
/// valid and running; since it cannot report that, a host that may end a
/// scheduler from such a thread calls `sicore_shutdown` first, which
/// returns `SICORE_WOULD_DEADLOCK`, and frees `s` later from its own
/// thread.
#[no_mangle]
pub extern "C" fn sicore_free(s: *mut sicore_scheduler) {
    if s.is_null() {
        return;
    }
    let mut closed = false;
    void_boundary("sicore_free", || {
        // SAFETY: a pointer from `sicore_new`, not yet freed.
        let sched = unsafe { &*s };
        closed = match sched.inner.close() {
            Err(e) if e.status == Status::WouldDeadlock => {
                log::error!("sicore_free: {}", e.message);
                false
            }
            _ => true,
        };
    });
    if closed {
        void_boundary("sicore_free", || {
            // SAFETY: the pointer came from Box::into_raw in `sicore_new`,
            // the scheduler is closed, and the caller gives up the pointer.
            drop(unsafe { Box::from_raw(s) })
        });
    }
}

/// Stops the scheduler without freeing it: pending work is abandoned,
/// internal threads are joined, each registered callback table's `release`
/// is called once, and no callback runs after this returns. Every call on
/// `s` made after it, or racing with it from other threads, returns
/// `SICORE_STOPPED` (or finishes normally if it got in first), and the
/// handle stays valid. Once the threads that may call on `s` have seen
/// their calls return, `sicore_free(s)` releases the memory; this is how to
/// end a scheduler that other threads may still be using. Calling it again
/// is a no-op. On a library thread (inside a callback or the log function
/// of any scheduler) it stops nothing and returns `SICORE_WOULD_DEADLOCK`
/// with the reason: `s` keeps running and can be stopped later from
/// another thread.
#[no_mangle]
pub extern "C" fn sicore_shutdown(
    s: *mut sicore_scheduler,
    error_out: *mut sicore_buffer,
) -> sicore_status {
    boundary(error_out, || scheduler(s)?.close())
}

/// Registers (or re-registers, resetting its state) a resource manager.
///
/// `request` is an encoded `si.v1.RegisterResourceManagerRequest`;
/// `callbacks` is copied, as far as its `struct_size` reaches. A NULL
/// `callbacks`, or a `struct_size` that does not cover the first fields
/// (`struct_size`, `user_data`, `update_allocation`), is
/// `SICORE_INVALID_ARGUMENT` and the table is not taken: nothing past
/// `struct_size` is read, `release` does not run and `user_data` stays the
/// caller's. Once a table is taken the library owns `user_data`, whatever
/// the outcome: its `release` (when `struct_size` covers it) runs exactly
/// once, right away if the registration fails, else when the table is
/// replaced by a re-registration or the scheduler is freed. Synchronous: loads the policy group's
/// configuration and returns `SICORE_REJECTED` with the reason when it is
/// missing or invalid. The policy group names the file `<group>.yaml` in
/// the configuration directory, so it must be a plain name (not empty, no
/// `/`, `\` or NUL, not `.` or `..`): otherwise `SICORE_INVALID_ARGUMENT`.
/// On success `response_out` (nullable) receives an encoded
/// `si.v1.RegisterResourceManagerResponse`. From inside a callback this
/// returns `SICORE_WOULD_DEADLOCK`.
#[no_mangle]
pub extern "C" fn sicore_register_resource_manager(
    s: *mut sicore_scheduler,
    request: *const u8,
    request_len: usize,
    callbacks: *const sicore_callbacks,
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
        let table = Arc::new(CallbackTable::new(table));
        let sched = scheduler(s)?;
        let req: si::RegisterResourceManagerRequest = decode(
            request,
            request_len,
            "request (si.v1.RegisterResourceManagerRequest)",
        )?;
        let resp = sched.register_port(req, table)?;
        // SAFETY: null or writable storage for one sicore_buffer.
        if let Some(out) = unsafe { response_out.as_mut() } {
            *out = sicore_buffer::from_vec(prost::Message::encode_to_vec(&resp));
        }
        Ok(())
    })
}

/// Queues an encoded `si.v1.AllocationRequest`: asks to add or update, asks
/// and allocations to release. Decoded and checked on this thread (a
/// malformed buffer or an unregistered rmID fails here); the outcome
/// reaches the RM's callbacks. Safe to call from inside a callback.
#[no_mangle]
pub extern "C" fn sicore_update_allocation(
    s: *mut sicore_scheduler,
    request: *const u8,
    request_len: usize,
    error_out: *mut sicore_buffer,
) -> sicore_status {
    boundary(error_out, || {
        let sched = scheduler(s)?;
        let bytes = borrow_bytes(
            request,
            request_len,
            "request (si.v1.AllocationRequest)",
            false,
        )?;
        sched.update_allocation_encoded(bytes)
    })
}

/// Queues an encoded `si.v1.ApplicationRequest`: applications to add and
/// remove. Asynchronous like `sicore_update_allocation`.
#[no_mangle]
pub extern "C" fn sicore_update_application(
    s: *mut sicore_scheduler,
    request: *const u8,
    request_len: usize,
    error_out: *mut sicore_buffer,
) -> sicore_status {
    boundary(error_out, || {
        let sched = scheduler(s)?;
        sched.update_application(decode(
            request,
            request_len,
            "request (si.v1.ApplicationRequest)",
        )?)
    })
}

/// Queues an encoded `si.v1.NodeRequest`: nodes to create, update, drain
/// or remove. Asynchronous like `sicore_update_allocation`.
#[no_mangle]
pub extern "C" fn sicore_update_node(
    s: *mut sicore_scheduler,
    request: *const u8,
    request_len: usize,
    error_out: *mut sicore_buffer,
) -> sicore_status {
    boundary(error_out, || {
        let sched = scheduler(s)?;
        sched.update_node(decode(request, request_len, "request (si.v1.NodeRequest)")?)
    })
}

/// Re-reads the configuration of the RM `cluster_id` (UTF-8, the rmID
/// used at registration) and applies it. Synchronous: an invalid
/// configuration returns `SICORE_REJECTED` and the old one stays in force.
/// From inside a callback this returns `SICORE_WOULD_DEADLOCK`.
#[no_mangle]
pub extern "C" fn sicore_update_configuration(
    s: *mut sicore_scheduler,
    cluster_id: *const u8,
    cluster_id_len: usize,
    error_out: *mut sicore_buffer,
) -> sicore_status {
    boundary(error_out, || {
        let sched = scheduler(s)?;
        sched.update_configuration(borrow_str(cluster_id, cluster_id_len, "cluster_id")?)
    })
}

/// Replaces the in-memory configuration (queues.yaml text, UTF-8) of one
/// policy group, the text `SchedulerOptions.policy_configs` gave, and
/// reloads every registered RM that uses the group, like
/// `sicore_update_configuration`. `yaml` NULL with length 0 (or any empty
/// text) removes the in-memory text, so the group's file applies again.
///
/// Synchronous and all or nothing: invalid text, or a reload that would
/// fail for any RM of the group, returns `SICORE_REJECTED` with the reason
/// and changes nothing. A group no RM uses yet is checked and kept for
/// later registrations. A `policy_group` that is not a plain name (as for
/// `sicore_register_resource_manager`) is `SICORE_INVALID_ARGUMENT`. From
/// inside a callback this returns `SICORE_WOULD_DEADLOCK`.
#[no_mangle]
pub extern "C" fn sicore_set_policy_config(
    s: *mut sicore_scheduler,
    policy_group: *const u8,
    policy_group_len: usize,
    yaml: *const u8,
    yaml_len: usize,
    error_out: *mut sicore_buffer,
) -> sicore_status {
    boundary(error_out, || {
        let sched = scheduler(s)?;
        let group = borrow_str(policy_group, policy_group_len, "policy_group")?;
        let text = borrow_bytes(yaml, yaml_len, "yaml", true)?;
        let text = std::str::from_utf8(text)
            .map_err(|e| Error::invalid(format!("yaml is not valid UTF-8: {e}")))?;
        sched.set_policy_config(group, text)
    })
}

/// Writes the scheduler's state as UTF-8 JSON into `json_out` (owned by
/// the caller; free with `sicore_buffer_free`). Field names are documented
/// in docs/rest-and-metrics.md ("State dump"). From inside a callback this returns
/// `SICORE_WOULD_DEADLOCK`.
#[no_mangle]
pub extern "C" fn sicore_state_dump(
    s: *mut sicore_scheduler,
    json_out: *mut sicore_buffer,
    error_out: *mut sicore_buffer,
) -> sicore_status {
    boundary(error_out, || {
        let sched = scheduler(s)?;
        if json_out.is_null() {
            return Err(Error::invalid("json_out is a null pointer"));
        }
        let json = sched.state_dump()?;
        // SAFETY: checked non-null; writable storage for one sicore_buffer.
        unsafe { *json_out = sicore_buffer::from_vec(json.into_bytes()) };
        Ok(())
    })
}
