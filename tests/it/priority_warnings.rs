//! A bad priority property is warned about once per configuration that
//! goes live: at registration, and once more at each reload (not once
//! per trial build of the reload's checks). The logger is process-wide:
//! the test holds [`serial::log`](crate::common::serial::log).

use std::ffi::c_void;
use std::sync::Mutex;

use crate::common::*;
use sicore::ffi::sicore_status::*;
use sicore::ffi::*;

static WARNINGS: Mutex<Vec<String>> = Mutex::new(Vec::new());

unsafe extern "C" fn collect(
    _ud: *mut c_void,
    level: i32,
    _target: *const u8,
    _target_len: usize,
    message: *const u8,
    message_len: usize,
) {
    if level != 2 {
        return; // warnings only
    }
    // SAFETY: the library passes a valid UTF-8 buffer of `message_len`
    // bytes that lives for the call.
    let text = unsafe { std::slice::from_raw_parts(message, message_len) };
    WARNINGS
        .lock()
        .unwrap()
        .push(String::from_utf8_lossy(text).into_owned());
}

fn offset_warnings() -> usize {
    WARNINGS
        .lock()
        .unwrap()
        .iter()
        .filter(|w| w.contains("root.a") && w.contains("priority.offset"))
        .count()
}

fn config(extra_queue: &str) -> String {
    format!(
        "partitions:\n  - name: default\n    queues:\n      - name: root\n        submitacl: '*'\n        queues:\n          - name: a\n            properties:\n              priority.offset: not-a-number\n{extra_queue}"
    )
}

#[test]
fn a_bad_priority_property_is_warned_about_once_per_applied_configuration() {
    let _log = crate::common::serial::log();
    sicore_set_logger(Some(collect), std::ptr::null_mut(), 3);
    let dir = temp_config_dir("priority-warnings");
    let h = Harness::new(dir_options(&dir, &config("")));
    let (st, msg) = h.register("rm", "queues");
    assert_eq!(st, SICORE_OK, "{msg}");
    assert_eq!(offset_warnings(), 1, "{:?}", WARNINGS.lock().unwrap());
    // A reload that changes another queue: root.a is applied again.
    std::fs::write(dir.join("queues.yaml"), config("          - name: b\n")).unwrap();
    let (st, msg) = h.reload("rm");
    assert_eq!(st, SICORE_OK, "{msg}");
    assert_eq!(offset_warnings(), 2, "{:?}", WARNINGS.lock().unwrap());
    sicore_set_logger(None, std::ptr::null_mut(), 0);
}
