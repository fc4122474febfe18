//! Threading rules of the contract: callbacks may call the asynchronous
//! entry points, synchronous ones are refused from inside a callback, and
//! `sicore_free` joins everything, releases each table once and silences
//! all callbacks.

mod common;

use std::sync::atomic::Ordering;
use std::time::Duration;

use common::*;
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
