//! The edition-neutral half of a callback table: what the trampolines of
//! both editions do around the RM's own method (find the RM behind
//! `user_data`, decode the borrowed message, answer through the reply),
//! and the registration call.

use std::ffi::c_void;
use std::sync::Arc;

use prost::Message;
use sicore::ffi::*;

/// The RM behind a table's `user_data`.
pub(crate) fn rm<'a, R>(ud: *mut c_void) -> &'a R {
    // SAFETY: user_data is the Arc<R> that the edition's `table` leaked;
    // the library calls no callback after `release`, which reclaims it.
    unsafe { &*(ud as *const R) }
}

/// The RM a table's `release` gives back.
///
/// # Safety
/// `ud` is the pointer an edition's `table` made from an `Arc<R>`, and
/// the library releases it once.
pub(crate) unsafe fn reclaimed<R>(ud: *mut c_void) -> Arc<R> {
    // SAFETY: as the caller promises.
    unsafe { Arc::from_raw(ud as *const R) }
}

/// Decodes the borrowed message of a callback.
pub(crate) fn decode<M: Message + Default>(p: *const u8, len: usize) -> M {
    let bytes = if p.is_null() {
        &[][..]
    } else {
        // SAFETY: the library passes a message valid for the call.
        unsafe { std::slice::from_raw_parts(p, len) }
    };
    M::decode(bytes).expect("the library sends valid messages")
}

/// A status callback's answer: 0, or 1 with the reason in `reply`.
pub(crate) fn answer(result: Result<(), String>, reply: *mut sicore_reply) -> i32 {
    match result {
        Ok(()) => 0,
        Err(reason) => {
            sicore_reply_set(reply, reason.as_ptr(), reason.len());
            1
        }
    }
}

/// An answering callback's reply: `m`, encoded.
pub(crate) fn reply_with(reply: *mut sicore_reply, m: &impl Message) {
    let bytes = m.encode_to_vec();
    sicore_reply_set(reply, bytes.as_ptr(), bytes.len());
}

/// A status callback of the RM trait `$rm`: decodes `$msg`, calls
/// `$method`, answers.
macro_rules! status_trampoline {
    ($rm:ident, $name:ident, $method:ident, $msg:ty) => {
        unsafe extern "C" fn $name<R: $rm>(
            ud: *mut c_void,
            p: *const u8,
            len: usize,
            e: *mut sicore_reply,
        ) -> i32 {
            $crate::trampoline::answer(
                $crate::trampoline::rm::<R>(ud).$method($crate::trampoline::decode::<$msg>(p, len)),
                e,
            )
        }
    };
}
pub(crate) use status_trampoline;

/// A notify callback of the RM trait `$rm`: decodes the message, calls
/// `$method`.
macro_rules! notify_trampoline {
    ($rm:ident, $name:ident, $method:ident) => {
        unsafe extern "C" fn $name<R: $rm>(ud: *mut c_void, p: *const u8, len: usize) {
            $crate::trampoline::rm::<R>(ud).$method($crate::trampoline::decode(p, len));
        }
    };
}
pub(crate) use notify_trampoline;

/// One of the two `register_resource_manager` entry points.
pub(crate) type RegisterFn<T> = extern "C" fn(
    *mut sicore_scheduler,
    *const u8,
    usize,
    *const T,
    *mut sicore_buffer,
    *mut sicore_buffer,
) -> sicore_status;

/// Registers through `f` with `req` and `table`: the status and the
/// library's message (the response is dropped).
pub(crate) fn register_with<T>(
    f: RegisterFn<T>,
    s: *mut sicore_scheduler,
    req: &impl Message,
    table: *const T,
) -> (sicore_status, String) {
    let bytes = req.encode_to_vec();
    let mut resp = sicore_buffer::empty();
    let mut err = sicore_buffer::empty();
    let st = f(s, bytes.as_ptr(), bytes.len(), table, &mut resp, &mut err);
    sicore_buffer_free(resp);
    (st, super::take_string(err))
}
