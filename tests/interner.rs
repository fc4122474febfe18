//! The process-wide resource-name table (issue 16, defect 3): a refused
//! request leaves no names behind, and one RM cannot exhaust the table for
//! the other RMs and schedulers of the process. Its own test binary, since
//! the table is per process.

mod common;

use common::*;
use prost::Message;
use sicore::ffi::sicore_status::*;
use sicore::ffi::*;
use sicore::proto::si::v1 as si;
use sicore::proto::sicore::v1::SchedulerOptions;

fn junk_ask(rm_id: &str, prefix: &str, names: usize) -> Vec<u8> {
    let mut a = ask("app-1", "junk", 1, 1, 1);
    a.resource_ask = Some(si::Resource {
        resources: (0..names)
            .map(|i| (format!("{prefix}-{i}"), si::Quantity { value: 1 }))
            .collect(),
    });
    si::AllocationRequest {
        asks: vec![a],
        rm_id: rm_id.into(),
        ..Default::default()
    }
    .encode_to_vec()
}

fn gpu_node(id: &str, gpu: &str) -> si::NodeInfo {
    let mut n = node(id, 1000, 10);
    n.schedulable_resource
        .as_mut()
        .unwrap()
        .resources
        .insert(gpu.into(), si::Quantity { value: 4 });
    n
}

#[test]
fn junk_names_from_refused_or_hostile_callers_leave_room_for_others() {
    let h = Harness::standard(SchedulerOptions::default(), Behaviour::default(), 1);

    // An unregistered rmID with 4,200 new names: refused, nothing kept.
    let (st, msg) = h.raw(
        sicore_update_allocation,
        &junk_ask("nobody", "refused", 4200),
    );
    assert_eq!(st, SICORE_REJECTED, "{msg}");
    assert!(msg.contains("not registered"), "{msg}");

    // A registered RM asking with 4,200 new names: its ask is rejected
    // with a reason once it passes its own share of the table.
    let (st, msg) = h.raw(sicore_update_allocation, &junk_ask("rm", "hostile", 4200));
    assert_eq!(st, SICORE_OK, "{msg}");
    h.wait("junk ask rejected", |s| !s.rejected_asks.is_empty());
    let reason = h.seen(|s| s.rejected_asks[0].reason.clone());
    assert!(
        reason.contains("too many distinct resource types"),
        "{reason}"
    );

    // Another scheduler of the process can still use new resource types.
    let other = Harness::configured(SchedulerOptions::default(), 0);
    assert_eq!(
        other.nodes(vec![gpu_node("g1", "nvidia.com/gpu")]).0,
        SICORE_OK
    );
    other.wait("gpu node accepted", |s| s.nodes_accepted == ["g1"]);
    let d = other.dump();
    assert_eq!(d["partitions"][0]["total"]["nvidia.com/gpu"], 4);

    // The hostile RM has used up its own share: its next new type is
    // refused with the reason, and scheduling goes on.
    let (st, msg) = h.nodes(vec![gpu_node("g2", "amd.com/gpu")]);
    assert_eq!(st, SICORE_OK, "{msg}");
    h.wait("node verdict", |s| !s.nodes_rejected.is_empty());
    let reason = h.seen(|s| s.nodes_rejected[0].reason.clone());
    assert!(reason.contains("limit 256 per RM"), "{reason}");
    assert_eq!(h.asks(vec![ask("app-1", "fine", 10, 1, 1)]).0, SICORE_OK);
    h.wait("an allocation", |s| s.allocations.len() == 1);
}
