//! The callback table's `struct_size`: the library reads only the fields the
//! caller's size covers, refuses a size below the first fields, and takes
//! (and later releases) only a table it accepted. Also `sicore_status_str`.

use std::ffi::CStr;
use std::mem::{offset_of, size_of};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::common::*;
use prost::Message;
use sicore::ffi::*;
use sicore::proto::si::v1 as si;

fn register_raw(h: &Harness, rm: &str, table: *const sicore_callbacks) -> (sicore_status, String) {
    let req = si::RegisterResourceManagerRequest {
        rm_id: rm.into(),
        version: "test".into(),
        policy_group: "queues".into(),
    }
    .encode_to_vec();
    let mut err = sicore_buffer::empty();
    let st = sicore_register_resource_manager(
        h.sched,
        req.as_ptr(),
        req.len(),
        table,
        std::ptr::null_mut(),
        &mut err,
    );
    (st, take_string(err))
}

/// Takes back the reference a table's `user_data` holds when the library
/// did not take the table (so no `release` will run).
fn reclaim(table: &sicore_callbacks) {
    // SAFETY: `user_data` is the Arc<Recorder> that `callbacks_for` leaked,
    // and the library never took it.
    drop(unsafe { Arc::from_raw(table.user_data as *const Recorder) });
}

#[test]
fn a_size_below_the_first_fields_is_refused_and_not_taken() {
    let h = Harness::new(yaml_options(
        "partitions: [{name: default, queues: [{name: root, submitacl: '*'}]}]",
    ));
    let first_fields = offset_of!(sicore_callbacks, update_allocation) + size_of::<usize>();
    for size in [0, 1, size_of::<usize>(), first_fields - 1] {
        let rec = new_recorder(h.sched, Behaviour::default());
        let mut table = callbacks_for(&rec);
        table.struct_size = size;
        let (st, msg) = register_raw(&h, "rm", &table);
        assert_eq!(
            st,
            sicore_status::SICORE_INVALID_ARGUMENT,
            "size {size}: {msg}"
        );
        assert!(
            msg.contains("struct_size") && msg.contains(&size.to_string()),
            "size {size}: the message names the field and the value: {msg}"
        );
        assert_eq!(
            rec.releases.load(Ordering::SeqCst),
            0,
            "a refused table is not taken, so its release does not run"
        );
        reclaim(&table);
        assert_eq!(Arc::strong_count(&rec), 1);
    }
    // Nothing was registered: an update for the RM is refused.
    let (st, msg) = h.nodes(vec![node("n", 10, 1)]);
    assert_eq!(st, sicore_status::SICORE_REJECTED, "{msg}");
}

/// The table of a program built against a header that ended after
/// `update_node`: an older, shorter `sicore_callbacks`.
#[repr(C)]
struct ShortTable {
    struct_size: usize,
    user_data: *mut std::ffi::c_void,
    update_allocation: sicore_status_callback,
    update_application: sicore_status_callback,
    update_node: sicore_status_callback,
}

#[test]
fn a_shorter_table_works_and_what_it_lacks_counts_as_null() {
    let h = Harness::new(yaml_options(
        "partitions: [{name: default, queues: [{name: root, submitacl: '*', queues: [{name: a}]}]}]",
    ));
    // The recorder behind `h` gets a full table (predicates included) whose
    // fields past update_node the library must not read.
    h.rec.behaviour.lock().unwrap().with_predicates = true;
    let full = h.callbacks();
    let short = ShortTable {
        struct_size: size_of::<ShortTable>(),
        user_data: full.user_data,
        update_allocation: full.update_allocation,
        update_application: full.update_application,
        update_node: full.update_node,
    };
    assert_eq!(
        short.struct_size,
        offset_of!(sicore_callbacks, predicates),
        "the short table is a prefix of the full one"
    );
    let (st, msg) = register_raw(&h, "rm", (&short as *const ShortTable).cast());
    assert_eq!(st, sicore_status::SICORE_OK, "{msg}");
    assert_eq!(
        h.nodes(vec![node("node-0", 1000, 10)]).0,
        sicore_status::SICORE_OK
    );
    h.wait("node accepted", |s| s.nodes_accepted.len() == 1);
    assert_eq!(
        h.apps(vec![app("app-1", "root.a")], vec![]).0,
        sicore_status::SICORE_OK
    );
    h.wait("app accepted", |s| s.apps_accepted.len() == 1);
    assert_eq!(
        h.asks(vec![ask("app-1", "ask-1", 10, 1, 2)]).0,
        sicore_status::SICORE_OK
    );
    h.wait("allocations", |s| s.allocations.len() == 2);
    h.settle();
    h.seen(|s| {
        assert!(
            s.predicate_calls.is_empty(),
            "predicates lies past the caller's struct_size: never called"
        );
        assert!(
            s.assumed.is_empty(),
            "resync_scheduler_cache is past it too"
        );
        assert!(s.events.is_empty(), "send_event is past it too");
    });
    let rec = h.rec.clone();
    drop(h);
    assert_eq!(
        rec.releases.load(Ordering::SeqCst),
        0,
        "release lies past the caller's struct_size: not called"
    );
    assert_eq!(rec.calls_after_release.load(Ordering::SeqCst), 0);
    reclaim(&full);
}

#[test]
fn a_longer_table_from_a_newer_header_is_accepted_and_released_once() {
    #[repr(C)]
    struct LongTable {
        known: sicore_callbacks,
        later_callback: sicore_status_callback,
    }
    let h = Harness::new(yaml_options(
        "partitions: [{name: default, queues: [{name: root, submitacl: '*'}]}]",
    ));
    let mut table = LongTable {
        known: h.callbacks(),
        later_callback: None,
    };
    table.known.struct_size = size_of::<LongTable>();
    let (st, msg) = register_raw(&h, "rm", &table.known);
    assert_eq!(st, sicore_status::SICORE_OK, "{msg}");
    assert_eq!(
        h.nodes(vec![node("node-0", 1000, 10)]).0,
        sicore_status::SICORE_OK
    );
    h.wait("node accepted", |s| s.nodes_accepted.len() == 1);
    let rec = h.rec.clone();
    drop(h);
    assert_eq!(rec.releases.load(Ordering::SeqCst), 1);
    assert_eq!(
        Arc::strong_count(&rec),
        1,
        "release dropped the table's reference"
    );
}

#[test]
fn a_refusal_after_the_table_was_taken_releases_it_at_once() {
    let h = Harness::new(yaml_options(
        "partitions: [{name: default, queues: [{name: root, submitacl: '*'}]}]",
    ));
    let rec = new_recorder(h.sched, Behaviour::default());
    let table = callbacks_for(&rec);
    // An undecodable request: the table was taken first, so release runs.
    let mut err = sicore_buffer::empty();
    let bad = [0xffu8; 3];
    let st = sicore_register_resource_manager(
        h.sched,
        bad.as_ptr(),
        bad.len(),
        &table,
        std::ptr::null_mut(),
        &mut err,
    );
    // Taken before the assertion: a format argument runs only on failure,
    // and the message must be freed either way.
    let msg = take_string(err);
    assert_eq!(st, sicore_status::SICORE_DECODE_ERROR, "{msg}");
    assert_eq!(rec.releases.load(Ordering::SeqCst), 1);
    assert_eq!(Arc::strong_count(&rec), 1);
}

#[test]
fn status_str_names_every_status_and_an_unknown_value() {
    let name = |v: std::ffi::c_int| {
        // SAFETY: sicore_status_str returns a static NUL-terminated string.
        unsafe { CStr::from_ptr(sicore_status_str(v)) }
            .to_str()
            .unwrap()
            .to_string()
    };
    let all = [
        (sicore_status::SICORE_OK, "SICORE_OK"),
        (
            sicore_status::SICORE_INVALID_ARGUMENT,
            "SICORE_INVALID_ARGUMENT",
        ),
        (sicore_status::SICORE_DECODE_ERROR, "SICORE_DECODE_ERROR"),
        (sicore_status::SICORE_REJECTED, "SICORE_REJECTED"),
        (sicore_status::SICORE_STOPPED, "SICORE_STOPPED"),
        (
            sicore_status::SICORE_WOULD_DEADLOCK,
            "SICORE_WOULD_DEADLOCK",
        ),
        (sicore_status::SICORE_INTERNAL, "SICORE_INTERNAL"),
    ];
    for (status, want) in all {
        assert_eq!(name(status as std::ffi::c_int), want);
    }
    for unknown in [-1, 7, 1000, std::ffi::c_int::MIN, std::ffi::c_int::MAX] {
        assert_eq!(name(unknown), "unknown sicore_status");
    }
}
