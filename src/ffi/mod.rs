//! The C ABI: `extern "C"` functions, `#[repr(C)]` types and nothing else.
//!
//! This layer only translates: it checks pointers and UTF-8, decodes
//! protobuf bytes into the prost types, calls the Rust API
//! ([`crate::api::SchedulerApi`]) and turns results into status codes and
//! owned messages. Every entry point runs inside the panic boundary (the
//! private `boundary` module).
//! The generated header `include/sicore.h` is the C user's reference.

#![allow(non_camel_case_types)]
// The entry points take raw pointers from C by design; their validity is
// the C caller's side of the contract, stated in each function's docs, and
// every dereference is checked for null and marked with a SAFETY note.
#![allow(clippy::not_unsafe_ptr_arg_deref)]

mod allocator;
mod buffer;
mod callbacks;
mod encode;
mod logger;
mod observe;
mod scheduler;
mod table;
mod v1;

pub use buffer::*;
pub use callbacks::*;
pub use logger::*;
pub use observe::*;
pub use scheduler::*;
pub use table::{
    sicore_answer_callback, sicore_notify_callback, sicore_reply, sicore_status_callback,
};
pub use v1::*;

use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::error::{Error, Status};

/// Result of every fallible call. Non-zero values come with a message in
/// the call's `error_out` buffer when one is given.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum sicore_status {
    /// Success.
    SICORE_OK = 0,
    /// A null pointer, bad UTF-8, or a missing required field.
    SICORE_INVALID_ARGUMENT = 1,
    /// The bytes are not a valid encoding of the expected message.
    SICORE_DECODE_ERROR = 2,
    /// Understood and refused: bad configuration, unknown rmID, ...
    SICORE_REJECTED = 3,
    /// The scheduler is shutting down or shut down.
    SICORE_STOPPED = 4,
    /// A synchronous call made from inside a callback.
    SICORE_WOULD_DEADLOCK = 5,
    /// A bug: a panic was caught at the boundary.
    SICORE_INTERNAL = 6,
}

impl From<Status> for sicore_status {
    fn from(s: Status) -> Self {
        match s {
            Status::InvalidArgument => sicore_status::SICORE_INVALID_ARGUMENT,
            Status::DecodeError => sicore_status::SICORE_DECODE_ERROR,
            Status::Rejected => sicore_status::SICORE_REJECTED,
            Status::Stopped => sicore_status::SICORE_STOPPED,
            Status::WouldDeadlock => sicore_status::SICORE_WOULD_DEADLOCK,
            Status::Internal => sicore_status::SICORE_INTERNAL,
        }
    }
}

impl sicore_status {
    /// The enumerator's name, NUL-terminated.
    const fn name(self) -> &'static str {
        match self {
            sicore_status::SICORE_OK => "SICORE_OK\0",
            sicore_status::SICORE_INVALID_ARGUMENT => "SICORE_INVALID_ARGUMENT\0",
            sicore_status::SICORE_DECODE_ERROR => "SICORE_DECODE_ERROR\0",
            sicore_status::SICORE_REJECTED => "SICORE_REJECTED\0",
            sicore_status::SICORE_STOPPED => "SICORE_STOPPED\0",
            sicore_status::SICORE_WOULD_DEADLOCK => "SICORE_WOULD_DEADLOCK\0",
            sicore_status::SICORE_INTERNAL => "SICORE_INTERNAL\0",
        }
    }

    /// Every status, in value order.
    const ALL: [sicore_status; 7] = [
        sicore_status::SICORE_OK,
        sicore_status::SICORE_INVALID_ARGUMENT,
        sicore_status::SICORE_DECODE_ERROR,
        sicore_status::SICORE_REJECTED,
        sicore_status::SICORE_STOPPED,
        sicore_status::SICORE_WOULD_DEADLOCK,
        sicore_status::SICORE_INTERNAL,
    ];
}

/// The name of a status (`"SICORE_OK"`, `"SICORE_REJECTED"`, ...) as a
/// static NUL-terminated string, for logs; never free it. A value that is
/// no `sicore_status` gives `"unknown sicore_status"`. The argument is an
/// `int` rather than the enum so that any value a caller holds is defined.
#[no_mangle]
pub extern "C" fn sicore_status_str(status: std::ffi::c_int) -> *const std::ffi::c_char {
    let name = sicore_status::ALL
        .iter()
        .find(|s| **s as std::ffi::c_int == status)
        .map_or("unknown sicore_status\0", |s| s.name());
    name.as_ptr().cast()
}

/// Text of a caught panic payload.
pub(crate) fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<String>()
        .cloned()
        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "unknown panic".into())
}

/// Runs the body of an entry point that returns nothing (so has no status
/// to report a failure with): a panic is caught and logged as an error
/// naming `entry`, and the call returns as if it had done nothing more.
pub(crate) fn void_boundary(entry: &str, body: impl FnOnce()) {
    allocator::tune_once();
    if let Err(p) = catch_unwind(AssertUnwindSafe(body)) {
        // Logging runs under its own catch: a panic while logging must not
        // cross the boundary either.
        let message = panic_message(&*p);
        let _ = catch_unwind(AssertUnwindSafe(|| {
            log::error!("{entry}: internal error (panic): {message}");
        }));
    }
}

/// Runs the body of an entry point: clears `error_out`, catches panics and
/// writes the message of a failure into `error_out` (when non-null).
pub(crate) fn boundary(
    error_out: *mut sicore_buffer,
    body: impl FnOnce() -> Result<(), Error>,
) -> sicore_status {
    // Before anything the library allocates (allocator.rs).
    allocator::tune_once();
    // SAFETY: the caller passes either null or a pointer to writable
    // storage for one sicore_buffer, as every entry point documents.
    let error_out = unsafe { error_out.as_mut() };
    let error_out = error_out.map(|e| {
        *e = sicore_buffer::empty();
        e
    });
    let result = catch_unwind(AssertUnwindSafe(body)).unwrap_or_else(|p| {
        Err(Error::new(
            Status::Internal,
            format!("internal error (panic): {}", panic_message(&*p)),
        ))
    });
    match result {
        Ok(()) => sicore_status::SICORE_OK,
        Err(e) => {
            if let Some(out) = error_out {
                *out = sicore_buffer::from_vec(e.message.into_bytes());
            }
            e.status.into()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn void_boundary_stops_a_panic_and_runs_the_body_once() {
        let mut runs = 0;
        void_boundary("test", || {
            runs += 1;
            panic!("boom");
        });
        assert_eq!(runs, 1);
        let mut done = false;
        void_boundary("test", || done = true);
        assert!(done);
    }
}
