//! Zero quantities in a node's capacity (YuniKorn v1.9, delta spec 4.1):
//! an SI v1 RM's node reported as `{memory: 10, gpu: 0}` is kept as
//! `{memory: 10}`, at creation and at every capacity update, so the state
//! dump, REST, the NODE records and the partition total list no `gpu: 0`.
//! Fit is unchanged: a missing type is zero on a node. An SI v0.12 RM's
//! node keeps what it sent.

use crate::common::v1::V1Rm;
use crate::common::Harness;
use si18::event_record::{ChangeDetail, Type};
use sicore::ffi::sicore_status::*;
use sicore::proto::si::v1 as si;
use sicore::proto::si18::v1 as si18;
use sicore::proto::sicore::v1 as sicore_pb;

fn res18(pairs: &[(&str, i64)]) -> Option<si18::Resource> {
    Some(si18::Resource {
        resources: pairs
            .iter()
            .map(|(k, v)| (k.to_string(), si18::Quantity { value: *v }))
            .collect(),
    })
}

fn node_in(dump: &serde_json::Value, id: &str) -> serde_json::Value {
    dump["partitions"][0]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["id"] == id)
        .unwrap_or_else(|| panic!("no node {id}"))
        .clone()
}

const CONFIG: &str = "
partitions:
  - name: default
    queues:
      - name: root
        submitacl: '*'
";

/// Spec 16 Q19-19.
#[test]
fn a_v1_node_keeps_no_zero_quantities() {
    let rm = V1Rm::new(CONFIG);
    let node = si18::NodeInfo {
        node_id: "n1".into(),
        action: si18::node_info::ActionFromRm::CreateDrain as i32,
        schedulable_resource: res18(&[("memory", 10), ("gpu", 0)]),
        ..Default::default()
    };
    assert_eq!(rm.nodes(vec![node]).0, SICORE_OK);
    rm.rec.wait("n1 answered", |s| {
        s.nodes_accepted.iter().any(|n| n == "n1")
    });
    let d = rm.dump();
    assert_eq!(
        node_in(&d, "n1")["capacity"],
        serde_json::json!({"memory": 10})
    );
    assert!(
        d["partitions"][0]["total"].get("gpu").is_none(),
        "{}",
        d["partitions"][0]["total"]
    );
    let update = si18::NodeInfo {
        node_id: "n1".into(),
        action: si18::node_info::ActionFromRm::Update as i32,
        schedulable_resource: res18(&[("memory", 10), ("gpu", 0), ("vcore", 4)]),
        ..Default::default()
    };
    assert_eq!(rm.nodes(vec![update]).0, SICORE_OK);
    let s = rm.rec.wait("the NODE_CAPACITY record", |s| {
        s.events.iter().any(|e| {
            e.r#type == Type::Node as i32
                && e.event_change_detail == ChangeDetail::NodeCapacity as i32
        })
    });
    let record = s
        .events
        .iter()
        .find(|e| e.event_change_detail == ChangeDetail::NodeCapacity as i32)
        .unwrap();
    let mut names: Vec<(&str, i64)> = record
        .resource
        .as_ref()
        .unwrap()
        .resources
        .iter()
        .map(|(k, q)| (k.as_str(), q.value))
        .collect();
    names.sort();
    assert_eq!(names, vec![("memory", 10), ("vcore", 4)]);
    let d = rm.dump();
    assert_eq!(
        node_in(&d, "n1")["capacity"],
        serde_json::json!({"memory": 10, "vcore": 4})
    );
}

#[test]
fn a_v012_node_keeps_what_it_sent() {
    let h = Harness::configured(sicore_pb::SchedulerOptions::default(), 0);
    let mut node = sicore_c_rm::node("n1", 10, 0);
    node.schedulable_resource = Some(si::Resource {
        resources: [
            ("memory".to_string(), si::Quantity { value: 10 }),
            ("gpu".to_string(), si::Quantity { value: 0 }),
        ]
        .into(),
    });
    assert_eq!(h.nodes(vec![node]).0, SICORE_OK);
    h.wait("n1 accepted", |s| s.nodes_accepted.len() == 1);
    let d = h.dump();
    assert_eq!(
        node_in(&d, "n1")["capacity"],
        serde_json::json!({"memory": 10, "gpu": 0})
    );
}
