//! The host's log function may call `sicore_set_logger` itself (issue 16,
//! defect 10): no lock is held while it runs. The logger is process-wide:
//! the test holds [`serial::log`](crate::common::serial::log).

use std::ffi::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;

use crate::common::*;
use sicore::ffi::sicore_status::*;
use sicore::ffi::*;
use sicore::proto::sicore::v1::SchedulerOptions;

static RECORDS: AtomicUsize = AtomicUsize::new(0);

unsafe extern "C" fn reinstalling_logger(
    ud: *mut c_void,
    _level: i32,
    _target: *const u8,
    _target_len: usize,
    _message: *const u8,
    _message_len: usize,
) {
    RECORDS.fetch_add(1, Ordering::SeqCst);
    // A host that adjusts its logger from inside the log function.
    sicore_set_logger(Some(reinstalling_logger), ud, 3);
}

#[test]
fn the_log_function_may_reinstall_the_logger() {
    let _log = crate::common::serial::log();
    sicore_set_logger(Some(reinstalling_logger), std::ptr::null_mut(), 3);
    let (done, finished) = mpsc::channel();
    std::thread::spawn(move || {
        // Registration logs on the core thread (info level).
        let h = Harness::new(SchedulerOptions::default());
        let (st, msg) = h.register("rm", "queues");
        let _ = done.send((st, msg, h.dump()));
    });
    // A deadlock would keep the core thread, and so this reply, forever.
    let (st, msg, dump) = finished
        .recv_timeout(WAIT)
        .expect("registration finished: the core thread did not hang in the logger");
    assert_eq!(st, SICORE_OK, "{msg}");
    assert_eq!(dump["rms"][0]["rm_id"], "rm");
    assert!(
        RECORDS.load(Ordering::SeqCst) > 0,
        "records reached the host"
    );
    sicore_set_logger(None, std::ptr::null_mut(), 0);
}
