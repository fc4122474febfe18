//! `--serve ADDR`: after the workload, keep the scheduler and its REST
//! service up until Ctrl-C (SIGINT or SIGTERM).

use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

use sicore::ffi::{sicore_buffer, sicore_rest_address, sicore_scheduler};

use sicore_c_rm::take_string;

use crate::rm::check;

/// The address the scheduler's REST service is bound to.
pub fn bound_address(sched: *mut sicore_scheduler) -> Result<String, String> {
    let mut out = sicore_buffer::empty();
    let mut err = sicore_buffer::empty();
    check(
        "sicore_rest_address",
        sicore_rest_address(sched, &mut out, &mut err),
        err,
    )?;
    Ok(take_string(out))
}

/// Prints where the service listens and blocks until Ctrl-C (SIGINT) or
/// SIGTERM.
pub fn until_interrupted(sched: *mut sicore_scheduler) -> Result<(), String> {
    let addr = bound_address(sched)?;
    let mut signals = Signals::new([SIGINT, SIGTERM])
        .map_err(|e| format!("cannot watch for SIGINT and SIGTERM: {e}"))?;
    println!("\nREST service on http://{addr}/ws/v1/queues (metrics: http://{addr}/metrics); Ctrl-C stops it");
    let _ = signals.forever().next();
    eprintln!("sicore-sim: stopping");
    Ok(())
}
