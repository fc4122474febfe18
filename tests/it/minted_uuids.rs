//! The UUIDs the core mints for an SI v0.12 RM name the slot their
//! allocation is stored in (src/scheduler/objects/slot_uuid.rs). An RM
//! sees version-4 UUIDs, each new, found by release whatever happened to
//! the slot before: the RM here releases, asks again, and brings a
//! released allocation's UUID back on another node.

use crate::common::*;
use sicore::ffi::sicore_status::*;
use sicore::proto::si::v1 as si;
use sicore::proto::sicore::v1::SchedulerOptions;

fn release(uuid: &str) -> si::AllocationRelease {
    si::AllocationRelease {
        partition_name: "default".into(),
        application_id: "app-1".into(),
        uuid: uuid.into(),
        termination_type: si::TerminationType::StoppedByRm as i32,
        message: String::new(),
    }
}

fn uuid_of(h: &Harness, key: &str) -> String {
    h.seen(|s| {
        s.allocations
            .iter()
            .find(|a| a.allocation_key == key)
            .map(|a| a.uuid.clone())
            .unwrap_or_else(|| panic!("no allocation for {key}"))
    })
}

fn node_memory(h: &Harness, id: &str) -> i64 {
    let d = h.dump();
    let nodes = d["partitions"][0]["nodes"].as_array().unwrap().clone();
    let n = nodes.iter().find(|n| n["id"] == id).unwrap();
    n["allocated"]["memory"].as_i64().unwrap_or(0)
}

#[test]
fn minted_uuids_are_version_4_new_and_released_by_their_text() {
    let h = Harness::standard(SchedulerOptions::default(), Behaviour::default(), 1);
    let asks = (1..=3)
        .map(|i| ask("app-1", &format!("k{i}"), 100, 1, 1))
        .collect();
    assert_eq!(h.asks(asks).0, SICORE_OK);
    h.wait("three allocations", |s| s.allocations.len() == 3);
    let first: Vec<String> = (1..=3).map(|i| uuid_of(&h, &format!("k{i}"))).collect();
    for u in &first {
        let parsed = uuid::Uuid::try_parse(u).unwrap_or_else(|e| panic!("{u}: {e}"));
        assert_eq!(parsed.get_version_num(), 4, "{u}");
        assert_eq!(parsed.get_variant(), uuid::Variant::RFC4122, "{u}");
        assert_eq!(parsed.hyphenated().to_string(), *u, "canonical text");
    }
    // Released, its slot is taken by the next allocation, under a UUID
    // of its own.
    assert_eq!(h.releases(vec![release(&first[0])], vec![]).0, SICORE_OK);
    h.wait("released", |s| s.released.len() == 1);
    assert_eq!(node_memory(&h, "node-0"), 200);
    assert_eq!(h.asks(vec![ask("app-1", "k4", 100, 1, 1)]).0, SICORE_OK);
    h.wait("fourth allocation", |s| s.allocations.len() == 4);
    let fourth = uuid_of(&h, "k4");
    assert!(!first.contains(&fourth), "{fourth} minted twice");
    // The RM brings the released UUID back, on a node it registers with
    // it: the core takes it as the RM's own, beside the newer one.
    let mut n = node("node-r", 1000, 10);
    n.existing_allocations = vec![si::Allocation {
        allocation_key: "k1".into(),
        uuid: first[0].clone(),
        node_id: "node-r".into(),
        application_id: "app-1".into(),
        partition_name: "default".into(),
        resource_per_alloc: res(&[("memory", 50), ("vcore", 1)]),
        ..Default::default()
    }];
    assert_eq!(h.nodes(vec![n]).0, SICORE_OK);
    h.wait("node-r", |s| s.nodes_accepted.len() == 2);
    assert_eq!(node_memory(&h, "node-r"), 50);
    // Each UUID releases its own allocation and no other.
    assert_eq!(h.releases(vec![release(&first[0])], vec![]).0, SICORE_OK);
    h.wait("released again", |s| s.released.len() == 2);
    assert_eq!(
        (node_memory(&h, "node-r"), node_memory(&h, "node-0")),
        (0, 300)
    );
    let rest = vec![release(&fourth), release(&first[1]), release(&first[2])];
    assert_eq!(h.releases(rest, vec![]).0, SICORE_OK);
    h.wait("all released", |s| s.released.len() == 5);
    assert_eq!(node_memory(&h, "node-0"), 0);
}
