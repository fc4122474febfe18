//! Dynamic queues come and go without leaking (issue 16, defect 5): the
//! slot of a removed queue is reused. Its own test binary, since it reads
//! the process's resident memory.

mod common;

use common::*;
use sicore::ffi::sicore_status::*;
use sicore::proto::si::v1 as si;
use sicore::proto::sicore::v1::SchedulerOptions;

fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: u64 = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    pages * 4096
}

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
fn dynamic_queue_churn_keeps_memory_flat() {
    // No events: the test RM keeps every record it is sent, which would
    // be the test's own growth, not the library's.
    let o = SchedulerOptions {
        disable_events: true,
        ..Default::default()
    };
    let h = Harness::configured(o, 0);
    churn(&h, 0, 5_000); // warm up allocator and maps
    let before = rss_bytes();
    churn(&h, 5_000, 60_000);
    let after = rss_bytes();
    let d = h.dump();
    let root = &d["partitions"][0]["root"];
    assert_eq!(
        root["children"].as_array().unwrap().len(),
        0,
        "every dynamic queue went"
    );
    // 60,000 leaked queues would be some 40 MB; reused slots stay flat.
    let growth = after.saturating_sub(before);
    assert!(
        growth < 16 << 20,
        "RSS grew by {} KiB over 60,000 queues",
        growth >> 10
    );
}
