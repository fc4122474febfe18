//! Owned and borrowed byte buffers at the boundary.

use crate::error::Error;

/// Bytes owned by the library, handed to the caller. Free with
/// `sicore_buffer_free` exactly once. `{NULL, 0}` is the empty buffer.
#[repr(C)]
#[derive(Debug)]
pub struct sicore_buffer {
    /// Start of the bytes, or NULL when empty.
    pub data: *mut u8,
    /// Number of bytes.
    pub len: usize,
}

impl sicore_buffer {
    /// `{NULL, 0}`.
    pub fn empty() -> Self {
        sicore_buffer {
            data: std::ptr::null_mut(),
            len: 0,
        }
    }

    /// Hands a vector's bytes to the caller.
    pub fn from_vec(v: Vec<u8>) -> Self {
        if v.is_empty() {
            return Self::empty();
        }
        let boxed: Box<[u8]> = v.into_boxed_slice();
        let len = boxed.len();
        sicore_buffer {
            data: Box::into_raw(boxed) as *mut u8,
            len,
        }
    }
}

/// Frees a buffer the library returned. `{NULL, 0}` is a no-op.
#[no_mangle]
pub extern "C" fn sicore_buffer_free(buf: sicore_buffer) {
    if buf.data.is_null() {
        return;
    }
    super::void_boundary("sicore_buffer_free", || {
        // SAFETY: non-null buffers are only made by `from_vec`, which leaks
        // a boxed slice of exactly `len` bytes; the caller frees each once.
        drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(buf.data, buf.len)) });
    });
}

/// Borrows `len` bytes at `ptr` for the duration of a call. NULL is refused
/// (naming `what`), except that NULL with length 0 is allowed when
/// `null_ok` is set.
pub(crate) fn borrow_bytes<'a>(
    ptr: *const u8,
    len: usize,
    what: &str,
    null_ok: bool,
) -> Result<&'a [u8], Error> {
    if ptr.is_null() {
        if null_ok && len == 0 {
            return Ok(&[]);
        }
        return Err(Error::invalid(format!("{what} is a null pointer")));
    }
    if len > isize::MAX as usize {
        return Err(Error::invalid(format!(
            "{what}: length {len} is not a valid size"
        )));
    }
    // SAFETY: the caller promises `ptr` points at `len` readable bytes that
    // stay valid and unmodified for the duration of this call.
    Ok(unsafe { std::slice::from_raw_parts(ptr, len) })
}

/// Borrows a UTF-8 string argument.
pub(crate) fn borrow_str<'a>(ptr: *const u8, len: usize, what: &str) -> Result<&'a str, Error> {
    let bytes = borrow_bytes(ptr, len, what, false)?;
    std::str::from_utf8(bytes)
        .map_err(|e| Error::invalid(format!("{what} is not valid UTF-8: {e}")))
}

/// Decodes a protobuf message argument.
pub(crate) fn decode<M: prost::Message + Default>(
    ptr: *const u8,
    len: usize,
    what: &str,
) -> Result<M, Error> {
    let bytes = borrow_bytes(ptr, len, what, false)?;
    M::decode(bytes).map_err(|e| Error::decode(what, e))
}
