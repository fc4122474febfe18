//! Dynamic queues come and go without leaking (issue 16, defect 5): the
//! slot of a removed queue is reused. In the memory binary, since it counts
//! the process's live heap bytes with its own global allocator.

use crate::common::*;
use sicore::ffi::sicore_status::*;
use sicore::proto::si::v1 as si;
use sicore::proto::sicore::v1::SchedulerOptions;

/// `n` rounds of creating an application in a new dynamic queue and
/// removing it again (which removes the queue).
fn churn(h: &Harness, from: usize, n: usize) {
    for i in from..from + n {
        let id = format!("churn-{i}");
        let (st, msg) = h.apps(vec![app(&id, &format!("root.dyn-{i}"))], vec![]);
        assert_eq!(st, SICORE_OK, "{msg}");
        let remove = si::RemoveApplicationRequest {
            application_id: id,
            partition_name: "default".into(),
        };
        assert_eq!(h.apps(vec![], vec![remove]).0, SICORE_OK);
        if i % 500 == 0 {
            // Keep the request queue short: its peak would be measured too.
            let _ = h.dump();
        }
    }
    h.settle();
}

#[test]
// The library installs mimalloc as the global allocator by default; the
// count needs this binary's own. The sanitizer job (scripts/sanitizers.sh)
// builds with --no-default-features and runs it.
#[cfg_attr(
    feature = "mimalloc",
    ignore = "counts heap bytes with its own allocator: run with --no-default-features"
)]
fn dynamic_queue_churn_keeps_memory_flat() {
    let _alone = crate::alone();
    // No events: the test RM keeps every record it is sent, which would
    // be the test's own growth, not the library's.
    let o = SchedulerOptions {
        disable_events: true,
        ..Default::default()
    };
    let h = Harness::configured(o, 0);
    churn(&h, 0, 5_000); // warm up allocator and maps
    let before = crate::live_bytes::live_bytes();
    churn(&h, 5_000, 60_000);
    let after = crate::live_bytes::live_bytes();
    let d = h.dump();
    let root = &d["partitions"][0]["root"];
    assert_eq!(
        root["children"].as_array().unwrap().len(),
        0,
        "every dynamic queue went"
    );
    // 60,000 leaked queues would be some 40 MB of heap; reused slots stay
    // flat. Live bytes, unlike RSS, do not move in allocator-sized steps,
    // so the bound can be tight: 64 bytes a queue.
    let growth = after.saturating_sub(before);
    eprintln!(
        "queue churn: live heap {} KiB after warm-up, {} KiB after 60,000 more queues",
        before >> 10,
        after >> 10
    );
    assert!(
        growth < 60_000 * 64,
        "live heap grew by {} KiB over 60,000 queues",
        growth >> 10
    );
}
