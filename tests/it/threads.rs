//! Threading rules of the contract: callbacks may call the asynchronous
//! entry points, synchronous ones are refused from inside a callback, and
//! `sicore_free` joins everything, releases each table once and silences
//! all callbacks.

use std::sync::atomic::Ordering;
use std::time::Duration;

use crate::common::*;
use sicore::ffi::sicore_status::*;
use sicore::proto::sicore::v1::SchedulerOptions;

#[test]
fn callbacks_may_call_async_entry_points_but_not_sync_ones() {
    let b = Behaviour {
        reenter: true,
        ..Default::default()
    };
    let h = Harness::standard(SchedulerOptions::default(), b, 1);
    assert_eq!(h.asks(vec![ask("app-1", "loop", 10, 1, 4)]).0, SICORE_OK);
    // Each allocation is released again from inside the callback, so the
    // node's 1000 memory is never exhausted and all four arrive.
    h.wait("four allocations and their release echoes", |s| {
        s.allocations.len() == 4 && s.released.len() == 4
    });
    h.seen(|s| {
        for pair in s.reentrant_statuses.chunks(2) {
            assert_eq!(pair[0], SICORE_OK, "async call from a callback works");
            assert_eq!(
                pair[1], SICORE_WOULD_DEADLOCK,
                "sync call from a callback is refused"
            );
        }
    });
    let d = h.dump();
    assert_eq!(d["partitions"][0]["root"]["allocated"]["memory"], 0);
}

#[test]
fn many_threads_submit_concurrently() {
    let h = Harness::standard(SchedulerOptions::default(), Behaviour::default(), 4);
    std::thread::scope(|scope| {
        for t in 0..8 {
            let h = &h;
            scope.spawn(move || {
                for i in 0..50 {
                    assert_eq!(
                        h.asks(vec![ask("app-1", &format!("t{t}-{i}"), 1, 0, 1)]).0,
                        SICORE_OK
                    );
                }
            });
        }
    });
    h.wait("400 allocations", |s| s.allocations.len() == 400);
    let d = h.dump();
    assert_eq!(d["partitions"][0]["root"]["allocated"]["memory"], 400);
}

#[test]
fn free_with_callbacks_in_flight_joins_and_releases_once() {
    let b = Behaviour {
        slow: Some(Duration::from_millis(20)),
        ..Default::default()
    };
    let h = Harness::standard(SchedulerOptions::default(), b, 2);
    let rec = h.rec.clone();
    // Many small batches keep the dispatcher busy in the slow callback.
    for i in 0..50 {
        assert_eq!(
            h.asks(vec![ask("app-1", &format!("k{i}"), 1, 0, 1)]).0,
            SICORE_OK
        );
    }
    h.wait("some allocations in flight", |s| !s.allocations.is_empty());
    drop(h); // sicore_free
    assert_eq!(
        rec.releases.load(Ordering::SeqCst),
        1,
        "release ran exactly once"
    );
    let seen_at_free = rec.seen.lock().unwrap().allocations.len();
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(
        rec.calls_after_release.load(Ordering::SeqCst),
        0,
        "no callback after release"
    );
    assert_eq!(rec.seen.lock().unwrap().allocations.len(), seen_at_free);
}

#[test]
fn calls_after_close_report_stopped() {
    use sicore::{Options, Scheduler, SchedulerApi};
    let s = Scheduler::new(Options::default()).unwrap();
    s.close().unwrap();
    s.close().unwrap();
    let err = s.update_configuration("rm").unwrap_err();
    assert_eq!(err.status, sicore::Status::Stopped);
    let err = s.state_dump().unwrap_err();
    assert_eq!(err.status, sicore::Status::Stopped);
}

/// What an RM of scheduler A saw when it stopped and freed scheduler B
/// from inside its `update_node` callback.
struct StopsOther {
    other: std::sync::atomic::AtomicPtr<sicore::ffi::sicore_scheduler>,
    outcome: std::sync::Mutex<Option<(sicore::ffi::sicore_status, String)>>,
}

unsafe extern "C" fn node_callback_stopping_other(
    ud: *mut std::ffi::c_void,
    _msg: *const u8,
    _len: usize,
    _reply: *mut sicore::ffi::sicore_reply,
) -> i32 {
    // SAFETY: `ud` is the test's StopsOther, alive until the scheduler
    // whose table holds it is freed.
    let s = unsafe { &*(ud as *const StopsOther) };
    let other = s.other.load(Ordering::SeqCst);
    let mut err = sicore::ffi::sicore_buffer::empty();
    let st = sicore::ffi::sicore_shutdown(other, &mut err);
    // Refused as well: it must leave `other` valid and running.
    sicore::ffi::sicore_free(other);
    *s.outcome.lock().unwrap() = Some((st, take_string(err)));
    0
}

/// Issue 24, defect 3, the C side: stopping scheduler B from a callback of
/// scheduler A is refused with a status and a reason, and B stays usable,
/// then stops normally from an ordinary thread.
#[test]
fn shutdown_from_a_callback_of_another_scheduler_would_deadlock_and_b_stays_usable() {
    use prost::Message;
    use sicore::ffi::*;
    use sicore::proto::si::v1 as si;
    let a = Harness::new(SchedulerOptions::default());
    let b = Harness::standard(SchedulerOptions::default(), Behaviour::default(), 1);
    let s = Box::new(StopsOther {
        other: std::sync::atomic::AtomicPtr::new(b.sched),
        outcome: std::sync::Mutex::new(None),
    });
    let cbs = sicore_callbacks {
        struct_size: std::mem::size_of::<sicore_callbacks>(),
        user_data: &*s as *const StopsOther as *mut std::ffi::c_void,
        update_allocation: None,
        update_application: None,
        update_node: Some(node_callback_stopping_other),
        predicates: None,
        resync_scheduler_cache: None,
        send_event: None,
        update_container_scheduling_state: None,
        update_configuration: None,
        release: None,
    };
    let req = si::RegisterResourceManagerRequest {
        rm_id: "rm".into(),
        version: "test".into(),
        policy_group: "queues".into(),
    }
    .encode_to_vec();
    let mut err = sicore_buffer::empty();
    let st = sicore_register_resource_manager(
        a.sched,
        req.as_ptr(),
        req.len(),
        &cbs,
        std::ptr::null_mut(),
        &mut err,
    );
    assert_eq!(st, SICORE_OK, "{}", take_string(err));
    assert_eq!(a.nodes(vec![node("n", 10, 1)]).0, SICORE_OK);
    let deadline = std::time::Instant::now() + WAIT;
    while s.outcome.lock().unwrap().is_none() {
        assert!(std::time::Instant::now() < deadline, "no node callback");
        std::thread::sleep(Duration::from_millis(5));
    }
    let (st, msg) = s.outcome.lock().unwrap().clone().unwrap();
    assert_eq!(st, SICORE_WOULD_DEADLOCK, "{msg}");
    assert!(msg.contains("inside a callback"), "the reason: {msg}");
    // B still schedules and answers: neither call stopped or freed it.
    assert_eq!(b.asks(vec![ask("app-1", "after", 10, 1, 1)]).0, SICORE_OK);
    b.wait("the allocation after the refused shutdown", |s| {
        s.allocations.iter().any(|a| a.allocation_key == "after")
    });
    assert_eq!(b.dump()["rms"][0]["rm_id"], "rm");
    assert_eq!(b.rec.releases.load(Ordering::SeqCst), 0);
    // From an ordinary thread it stops, releasing B's table once.
    let mut err = sicore_buffer::empty();
    assert_eq!(sicore_shutdown(b.sched, &mut err), SICORE_OK);
    assert_eq!(b.rec.releases.load(Ordering::SeqCst), 1);
    drop(a); // no callback runs after free: `s` may go
    drop(s);
    drop(b);
}
