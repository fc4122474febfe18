//! Observability entry points: metrics and the REST service's address.

use super::buffer::sicore_buffer;
use super::scheduler::{scheduler, sicore_scheduler};
use super::{boundary, sicore_status};
use crate::error::Error;

fn write_out(out: *mut sicore_buffer, what: &str, text: String) -> Result<(), Error> {
    if out.is_null() {
        return Err(Error::invalid(format!("{what} is a null pointer")));
    }
    // SAFETY: checked non-null; the caller provides writable storage for
    // one sicore_buffer.
    unsafe { *out = sicore_buffer::from_vec(text.into_bytes()) };
    Ok(())
}

/// Writes the Prometheus text exposition of the `yunikorn_*` metrics
/// (Prometheus text format 0.0.4) into `text_out` (owned
/// by the caller; free with `sicore_buffer_free`). For an RM that already
/// serves `/metrics`. Never waits for the scheduling thread, so it may be
/// called from inside a callback.
#[no_mangle]
pub extern "C" fn sicore_metrics(
    s: *mut sicore_scheduler,
    text_out: *mut sicore_buffer,
    error_out: *mut sicore_buffer,
) -> sicore_status {
    boundary(error_out, || {
        let sched = scheduler(s)?;
        let text = sched.metrics_text()?;
        write_out(text_out, "text_out", text)
    })
}

/// Writes the `host:port` the REST service listens on into `address_out`
/// (UTF-8; free with `sicore_buffer_free`): useful with a port of 0 in
/// `SchedulerOptions.rest_address`. Empty when no REST service runs.
#[no_mangle]
pub extern "C" fn sicore_rest_address(
    s: *mut sicore_scheduler,
    address_out: *mut sicore_buffer,
    error_out: *mut sicore_buffer,
) -> sicore_status {
    boundary(error_out, || {
        let sched = scheduler(s)?;
        let addr = sched
            .rest_address()
            .map(|a| a.to_string())
            .unwrap_or_default();
        write_out(address_out, "address_out", addr)
    })
}
