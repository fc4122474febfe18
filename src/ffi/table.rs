//! What the callback tables of both editions share: the copy of a
//! caller's table as far as its `struct_size` reaches, the registered
//! table that owns `user_data` (and calls `release` when dropped), and
//! the calls through its function pointers, with the function types and
//! the reply slot of the header.

use std::cell::Cell;
use std::ffi::c_void;

use prost::Message;

use crate::error::Error;
use crate::scheduler::port::PredicateCheck;

use super::encode;

/// Where a callback puts its answer: an error reason, or for
/// `update_configuration` an encoded `si.v1.UpdateConfigurationResponse`.
/// Valid only during the one callback it is passed to; set it with
/// `sicore_reply_set`.
pub struct sicore_reply {
    pub(super) data: Option<Vec<u8>>,
}

/// A callback that reports success (0) or failure (non-zero, with a
/// reason set through `sicore_reply_set`).
pub type sicore_status_callback = Option<
    unsafe extern "C" fn(
        user_data: *mut c_void,
        msg: *const u8,
        len: usize,
        error: *mut sicore_reply,
    ) -> i32,
>;

/// A callback with nothing to report back.
pub type sicore_notify_callback =
    Option<unsafe extern "C" fn(user_data: *mut c_void, msg: *const u8, len: usize)>;

/// A callback that answers through `response`.
pub type sicore_answer_callback = Option<
    unsafe extern "C" fn(
        user_data: *mut c_void,
        msg: *const u8,
        len: usize,
        response: *mut sicore_reply,
    ),
>;

/// A C callback table of the header: `#[repr(C)]`, starting with
/// `size_t struct_size`, then `void *user_data`, with a nullable `release`.
///
/// # Safety
/// The implementing type's first field is `struct_size: usize`, and
/// [`CTable::read_fields`] reads only fields that lie within `size` bytes.
pub(crate) unsafe trait CTable: Copy + Default {
    /// The C type's name, for the refusal of a short table.
    const NAME: &'static str;
    /// The fields a table must cover, for the refusal of a short table.
    const FIRST_FIELDS: &'static str;
    /// The smallest `struct_size` accepted.
    const MIN_SIZE: usize;

    /// Passed back to every callback and to `release`.
    fn user_data(&self) -> *mut c_void;

    /// Called once when the library is done with `user_data`.
    fn release(&self) -> Option<unsafe extern "C" fn(user_data: *mut c_void)>;

    /// A table of this library's size and every callback NULL, but for
    /// `struct_size`, which is `size`.
    fn sized(size: usize) -> Self;

    /// Reads into `self` every field after `struct_size` that lies
    /// within the caller's `size` bytes at `base`.
    ///
    /// # Safety
    /// `base` points at `size` readable bytes laid out as the header's
    /// table up to that size.
    unsafe fn read_fields(&mut self, base: *const u8, size: usize);
}

/// Implements [`CTable`] for a header table whose fields after
/// `struct_size` are listed (each read when the caller's size covers it).
macro_rules! c_table {
    ($ty:ident, $first:literal, $min:expr, [$($field:ident),* $(,)?]) => {
        // SAFETY: the table is `#[repr(C)]` with `struct_size` first, and
        // `read_fields` reads only fields within the caller's size.
        unsafe impl $crate::ffi::table::CTable for $ty {
            const NAME: &'static str = stringify!($ty);
            const FIRST_FIELDS: &'static str = $first;
            const MIN_SIZE: usize = $min;

            fn user_data(&self) -> *mut std::ffi::c_void {
                self.user_data
            }

            fn release(&self) -> Option<unsafe extern "C" fn(user_data: *mut std::ffi::c_void)> {
                self.release
            }

            fn sized(size: usize) -> Self {
                $ty {
                    struct_size: size,
                    ..Default::default()
                }
            }

            unsafe fn read_fields(&mut self, base: *const u8, size: usize) {
                $(
                    let offset = std::mem::offset_of!($ty, $field);
                    if offset + std::mem::size_of_val(&self.$field) <= size {
                        // SAFETY: the field lies within the caller's
                        // `struct_size` bytes, which the caller promises
                        // are readable and laid out as the header says;
                        // every bit pattern the C side can store there (a
                        // pointer or NULL) is valid for the type.
                        unsafe { $crate::ffi::table::read_into(&mut self.$field, base.add(offset)) };
                    }
                )*
            }
        }
    };
}
pub(crate) use c_table;

/// Reads a `T` at `src` into `slot`.
///
/// # Safety
/// `src` points at `size_of::<T>()` readable bytes holding a valid `T`.
pub(super) unsafe fn read_into<T>(slot: &mut T, src: *const u8) {
    // SAFETY: as the caller promises; unaligned reads are allowed.
    *slot = unsafe { src.cast::<T>().read_unaligned() };
}

/// Copies the caller's table, reading only the fields its `struct_size`
/// covers (whole fields; the rest stay NULL). Refuses a size below
/// [`CTable::MIN_SIZE`], having read nothing but `struct_size`.
///
/// # Safety
/// `p` is non-null and points at a readable `size_t` followed by at least
/// `struct_size - sizeof(size_t)` readable bytes, laid out as the header's
/// table `T` up to that size.
pub(crate) unsafe fn copy_table<T: CTable>(p: *const T) -> Result<T, Error> {
    let base = p.cast::<u8>();
    // SAFETY: the caller's table starts with a `size_t` (see above).
    let size = unsafe { base.cast::<usize>().read_unaligned() };
    if size < T::MIN_SIZE {
        return Err(Error::invalid(format!(
            "callbacks: struct_size {size} is smaller than the table's first fields \
             ({}: {} bytes); set it to sizeof({})",
            T::FIRST_FIELDS,
            T::MIN_SIZE,
            T::NAME
        )));
    }
    let mut t = T::sized(size);
    // SAFETY: `size` bytes at `base` are readable and laid out as `T`, as
    // the caller promises.
    unsafe { t.read_fields(base, size) };
    Ok(t)
}

thread_local! {
    /// Where this thread encodes callback messages. The core thread sends
    /// a `ReSyncSchedulerCache` and a `Predicates` per decision when the RM
    /// has a predicates callback; reusing one buffer spares an allocation
    /// and a free per message.
    static SCRATCH: Cell<Vec<u8>> = const { Cell::new(Vec::new()) };
}

/// Runs `f` with this thread's empty scratch buffer. The buffer is taken
/// out for the call, so a nested use (a callback that leads to another
/// message on the same thread) gets a fresh one; one grown past 64 KiB
/// (a large batch) is not kept.
pub(super) fn with_scratch<R>(f: impl FnOnce(&mut Vec<u8>) -> R) -> R {
    let mut buf = SCRATCH.take();
    buf.clear();
    let r = f(&mut buf);
    if buf.capacity() <= 64 * 1024 {
        SCRATCH.set(buf);
    }
    r
}

/// A registered callback table. Dropping it calls `release`.
pub(crate) struct Table<T: CTable>(pub(super) T);

// SAFETY: the contract requires the RM's callbacks and user_data to be
// usable from any thread, concurrently; the table itself is immutable.
unsafe impl<T: CTable> Send for Table<T> {}
// SAFETY: as above; nothing in the table is mutated after registration.
unsafe impl<T: CTable> Sync for Table<T> {}

impl<T: CTable> Table<T> {
    /// Takes ownership of a copied table (and so of its `user_data`).
    pub(crate) fn new(table: T) -> Self {
        Table(table)
    }

    /// Encodes `msg` and calls `f` with it; success when `f` is NULL.
    pub(super) fn status_call(
        &self,
        f: sicore_status_callback,
        msg: &impl Message,
        what: &str,
    ) -> Result<(), String> {
        if f.is_none() {
            return Ok(());
        }
        with_scratch(|buf| {
            msg.encode_raw(buf);
            self.status_call_bytes(f, buf, what)
        })
    }

    /// Asks `f` (an edition's `predicates`) the question `q`, encoded
    /// straight from its borrowed strings.
    pub(super) fn predicates_call(
        &self,
        f: sicore_status_callback,
        q: &PredicateCheck<'_>,
    ) -> Result<(), String> {
        if f.is_none() {
            return Ok(());
        }
        with_scratch(|buf| {
            encode::predicates_args_into(q, buf);
            self.status_call_bytes(f, buf, "predicates")
        })
    }

    /// Calls `f` with `bytes`; success when `f` is NULL. A failure carries
    /// the reason the RM set, or names the callback and its return code.
    pub(super) fn status_call_bytes(
        &self,
        f: sicore_status_callback,
        bytes: &[u8],
        what: &str,
    ) -> Result<(), String> {
        let Some(f) = f else {
            return Ok(());
        };
        let mut reply = sicore_reply { data: None };
        // SAFETY: a non-null function pointer registered by the RM, called
        // with its own user_data, a message valid for the call and a reply
        // slot valid for the call, as the header documents.
        let rc = unsafe { f(self.0.user_data(), bytes.as_ptr(), bytes.len(), &mut reply) };
        if rc == 0 {
            Ok(())
        } else {
            Err(match reply.data {
                Some(d) if !d.is_empty() => String::from_utf8_lossy(&d).into_owned(),
                _ => format!("{what} callback returned {rc}"),
            })
        }
    }

    /// Encodes `msg` and calls `f` with it, if set.
    pub(super) fn notify_call(&self, f: sicore_notify_callback, msg: &impl Message) {
        if let Some(f) = f {
            let bytes = msg.encode_to_vec();
            // SAFETY: as in `status_call_bytes`.
            unsafe { f(self.0.user_data(), bytes.as_ptr(), bytes.len()) };
        }
    }

    /// Encodes `msg` and calls `f` with it; the RM's answer, if it set one
    /// (`None` too when `f` is NULL).
    pub(super) fn answer_call(
        &self,
        f: sicore_answer_callback,
        msg: &impl Message,
    ) -> Option<Vec<u8>> {
        let f = f?;
        let bytes = msg.encode_to_vec();
        let mut reply = sicore_reply { data: None };
        // SAFETY: as in `status_call_bytes`.
        unsafe { f(self.0.user_data(), bytes.as_ptr(), bytes.len(), &mut reply) };
        reply.data
    }

    /// Calls a callback that answers with no message in; the RM's answer,
    /// if it set one.
    pub(super) fn reply_call(
        &self,
        f: unsafe extern "C" fn(user_data: *mut c_void, response: *mut sicore_reply),
    ) -> Option<Vec<u8>> {
        let mut reply = sicore_reply { data: None };
        // SAFETY: a non-null function pointer registered by the RM, called
        // with its own user_data and a reply slot valid for the call.
        unsafe { f(self.0.user_data(), &mut reply) };
        reply.data
    }
}

impl<T: CTable> Drop for Table<T> {
    fn drop(&mut self) {
        if let Some(release) = self.0.release() {
            // SAFETY: called exactly once, when the last reference to the
            // table goes away; the RM owns user_data and frees it here.
            unsafe { release(self.0.user_data()) };
        }
    }
}
