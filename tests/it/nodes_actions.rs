//! Nodes (spec 11): recovery of existing allocations, its rejections,
//! UPDATE, draining and decommissioning, through the C ABI.

use crate::common::*;
use sicore::ffi::sicore_status::*;
use sicore::proto::si::v1 as si;
use sicore::proto::sicore::v1::SchedulerOptions;

use si::node_info::ActionFromRm;

fn existing(app: &str, key: &str, uuid: &str, node: &str, memory: i64) -> si::Allocation {
    si::Allocation {
        allocation_key: key.into(),
        uuid: uuid.into(),
        node_id: node.into(),
        application_id: app.into(),
        partition_name: "default".into(),
        resource_per_alloc: res(&[("memory", memory), ("vcore", 1)]),
        ..Default::default()
    }
}

fn action(id: &str, a: ActionFromRm) -> si::NodeInfo {
    si::NodeInfo {
        node_id: id.into(),
        action: a as i32,
        ..Default::default()
    }
}

fn node_json(d: &serde_json::Value, id: &str) -> Option<serde_json::Value> {
    d["partitions"][0]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["id"] == id)
        .cloned()
}

/// The memory of a dumped resource; zero quantities are left out.
fn mem(r: &serde_json::Value) -> i64 {
    r["memory"].as_i64().unwrap_or(0)
}

fn app_states(h: &Harness) -> Vec<String> {
    h.seen(|s| s.app_updates.iter().map(|u| u.state.clone()).collect())
}

#[test]
fn existing_allocations_are_adopted_not_resent() {
    let h = Harness::standard(SchedulerOptions::default(), Behaviour::default(), 1);
    let mut n = node("node-r", 1000, 10);
    n.existing_allocations = vec![
        existing("app-1", "k1", "uuid-1", "node-r", 200),
        existing("app-1", "k2", "uuid-2", "node-r", 300),
        // A placeholder without a task group is skipped silently.
        si::Allocation {
            placeholder: true,
            ..existing("app-1", "ph", "uuid-ph", "node-r", 50)
        },
    ];
    assert_eq!(h.nodes(vec![n]).0, SICORE_OK);
    h.wait("node accepted", |s| s.nodes_accepted.len() == 2);
    h.wait("running", |s| {
        s.app_updates.iter().any(|u| u.state == "Running")
    });
    assert_eq!(app_states(&h), ["Accepted", "Starting", "Running"]);
    let d = h.dump();
    let p = &d["partitions"][0];
    let nr = node_json(&d, "node-r").unwrap();
    assert_eq!(nr["allocated"]["memory"], 500);
    assert_eq!(nr["available"]["memory"], 500);
    assert_eq!(nr["allocations"].as_array().unwrap().len(), 2);
    assert_eq!(p["root"]["allocated"]["memory"], 500);
    assert_eq!(p["root"]["children"][0]["allocated"]["memory"], 500);
    assert_eq!(mem(&p["root"]["pending"]), 0);
    assert_eq!(p["total"]["memory"], 2000);
    let a = &p["applications"][0];
    assert_eq!(a["allocated"]["memory"], 500);
    assert!(a["pending_asks"].as_array().unwrap().is_empty());
    h.seen(|s| {
        assert!(
            s.allocations.is_empty(),
            "recovered allocations are not new"
        );
        assert!(s.assumed.is_empty());
    });
    // A recovered allocation is released like any other.
    let rel = si::AllocationRelease {
        partition_name: "default".into(),
        application_id: "app-1".into(),
        uuid: "uuid-1".into(),
        termination_type: si::TerminationType::StoppedByRm as i32,
        message: String::new(),
    };
    assert_eq!(h.releases(vec![rel], vec![]).0, SICORE_OK);
    h.wait("echo", |s| s.released.len() == 1);
    h.wait("forget", |s| s.forgotten.len() == 1);
    assert_eq!(h.seen(|s| s.forgotten[0].allocation_key.clone()), "k1");
    assert_eq!(
        node_json(&h.dump(), "node-r").unwrap()["allocated"]["memory"],
        300
    );
}

/// An RM's UUIDs are kept as it wrote them, whatever their form (the core
/// holds a canonical lowercase UUID as 16 bytes, any other text as given),
/// found by that text, and told back as that text.
#[test]
fn recovered_uuids_are_found_and_echoed_as_the_rm_wrote_them() {
    let h = Harness::standard(SchedulerOptions::default(), Behaviour::default(), 1);
    let canon = "6f1c9a52-2a0b-4a39-9d7e-0c1f3b8b7a11";
    let upper = "6F1C9A52-2A0B-4A39-9D7E-0C1F3B8B7A11";
    let long = format!("{canon}-{}", "x".repeat(4096));
    let mut n = node("node-r", 1000, 10);
    n.existing_allocations = vec![
        existing("app-1", "k1", canon, "node-r", 100),
        // The same UUID in capitals is another string, so another UUID.
        existing("app-1", "k2", upper, "node-r", 100),
        existing("app-1", "k3", "legacy-1", "node-r", 100),
        existing("app-1", "k4", &long, "node-r", 100),
    ];
    assert_eq!(h.nodes(vec![n]).0, SICORE_OK);
    h.wait("node accepted", |s| s.nodes_accepted.len() == 2);
    let uuids = |d: &serde_json::Value| -> Vec<String> {
        let mut v: Vec<String> = node_json(d, "node-r").unwrap()["allocations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["uuid"].as_str().unwrap().to_string())
            .collect();
        v.sort();
        v
    };
    let mut want = vec![
        canon.to_string(),
        upper.to_string(),
        "legacy-1".into(),
        long.clone(),
    ];
    want.sort();
    assert_eq!(uuids(&h.dump()), want);
    // A second node bringing the canonical UUID again is refused: the
    // RM's text finds the one held as bytes.
    let mut again = node("node-s", 1000, 10);
    again.existing_allocations = vec![existing("app-1", "k5", canon, "node-s", 100)];
    assert_eq!(h.nodes(vec![again]).0, SICORE_OK);
    h.wait("rejected", |s| s.nodes_rejected.len() == 1);
    h.seen(|s| {
        assert!(
            s.nodes_rejected[0].reason.contains(canon),
            "{:?}",
            s.nodes_rejected
        )
    });
    // Each is released by the RM's text and echoed with it.
    for (i, u) in [canon, "legacy-1", long.as_str(), upper]
        .into_iter()
        .enumerate()
    {
        let rel = si::AllocationRelease {
            partition_name: "default".into(),
            application_id: "app-1".into(),
            uuid: u.into(),
            termination_type: si::TerminationType::StoppedByRm as i32,
            message: String::new(),
        };
        assert_eq!(h.releases(vec![rel], vec![]).0, SICORE_OK);
        h.wait("echo", |s| s.released.len() == i + 1);
        assert_eq!(h.seen(|s| s.released[i].uuid.clone()), u);
    }
    assert!(uuids(&h.dump()).is_empty());
}

#[test]
fn recovery_failures_reject_the_node_and_leave_no_trace() {
    let h = Harness::standard(SchedulerOptions::default(), Behaviour::default(), 1);
    let mut unknown_app = node("node-a", 1000, 10);
    unknown_app.existing_allocations = vec![
        existing("app-1", "k1", "uuid-1", "node-a", 100),
        existing("nope", "k2", "uuid-2", "node-a", 100),
    ];
    let mut no_uuid = node("node-b", 1000, 10);
    no_uuid.existing_allocations = vec![existing("app-1", "k3", "", "node-b", 100)];
    let mut no_node = node("node-c", 1000, 10);
    no_node.existing_allocations = vec![existing("app-1", "k4", "uuid-4", "node-zz", 100)];
    assert_eq!(h.nodes(vec![unknown_app, no_uuid, no_node]).0, SICORE_OK);
    h.wait("three rejections", |s| s.nodes_rejected.len() == 3);
    h.seen(|s| {
        let r: Vec<(&str, &str)> = s
            .nodes_rejected
            .iter()
            .map(|r| (r.node_id.as_str(), r.reason.as_str()))
            .collect();
        assert_eq!(
            r,
            [
                (
                    "node-a",
                    "Failure while adding new node, node rejected with error failed to find application nope"
                ),
                (
                    "node-b",
                    "Failure while adding new node, node rejected with error failing to restore allocation k3 for application app-1: missing UUID"
                ),
                (
                    "node-c",
                    "Failure while adding new node, node rejected with error failed to find node node-zz"
                ),
            ]
        );
        assert!(s.app_updates.is_empty(), "nothing was recovered");
    });
    let d = h.dump();
    assert_eq!(d["partitions"][0]["nodes"].as_array().unwrap().len(), 1);
    assert_eq!(mem(&d["partitions"][0]["root"]["allocated"]), 0);
    assert_eq!(d["partitions"][0]["total"]["memory"], 1000);
}

#[test]
fn update_changes_capacity_and_occupied() {
    let h = Harness::standard(SchedulerOptions::default(), Behaviour::default(), 1);
    let mut up = action("node-0", ActionFromRm::Update);
    up.schedulable_resource = res(&[("memory", 400), ("vcore", 4)]);
    up.occupied_resource = res(&[("memory", 100)]);
    assert_eq!(h.nodes(vec![up]).0, SICORE_OK);
    let d = h.dump();
    let n = node_json(&d, "node-0").unwrap();
    assert_eq!(n["capacity"]["memory"], 400);
    assert_eq!(n["occupied"]["memory"], 100);
    assert_eq!(n["available"]["memory"], 300);
    assert_eq!(d["partitions"][0]["total"]["memory"], 400);
    assert_eq!(d["partitions"][0]["root"]["max"]["memory"], 400);
    // 300 free: the 350 ask waits, the 250 one goes.
    assert_eq!(
        h.asks(vec![
            ask("app-1", "a", 350, 1, 1),
            ask("app-1", "b", 250, 1, 1)
        ])
        .0,
        SICORE_OK
    );
    h.wait("one allocation", |s| s.allocations.len() == 1);
    assert_eq!(h.seen(|s| s.allocations[0].allocation_key.clone()), "b");
    // More capacity and a present-but-empty occupied (zero): 450 free.
    let mut grow = action("node-0", ActionFromRm::Update);
    grow.schedulable_resource = res(&[("memory", 700), ("vcore", 4)]);
    grow.occupied_resource = res(&[]);
    assert_eq!(h.nodes(vec![grow]).0, SICORE_OK);
    h.wait("second allocation", |s| s.allocations.len() == 2);
    let d = h.dump();
    let n = node_json(&d, "node-0").unwrap();
    assert_eq!(mem(&n["occupied"]), 0);
    assert_eq!(mem(&n["available"]), 100);
    assert_eq!(mem(&d["partitions"][0]["total"]), 700);
    // Only occupied: capacity stays, the node may go over-allocated.
    let mut occ = action("node-0", ActionFromRm::Update);
    occ.occupied_resource = res(&[("memory", 300)]);
    assert_eq!(h.nodes(vec![occ]).0, SICORE_OK);
    let n = node_json(&h.dump(), "node-0").unwrap();
    assert_eq!(mem(&n["capacity"]), 700);
    assert_eq!(mem(&n["allocated"]), 600);
    assert_eq!(mem(&n["available"]), -200);
    // Nodes update responses are only sent for CREATE.
    assert_eq!(h.seen(|s| s.nodes_accepted.len()), 1);
}

#[test]
fn unknown_nodes_and_actions_are_ignored() {
    let h = Harness::standard(SchedulerOptions::default(), Behaviour::default(), 1);
    let mut bad = vec![
        action("ghost", ActionFromRm::Update),
        action("ghost", ActionFromRm::DrainNode),
        action("ghost", ActionFromRm::DrainToSchedulable),
        action("ghost", ActionFromRm::Decomission),
        action("node-0", ActionFromRm::UnknownActionFromRm),
    ];
    bad[0].schedulable_resource = res(&[("memory", 1)]);
    assert_eq!(h.nodes(bad).0, SICORE_OK);
    let d = h.dump();
    let n = node_json(&d, "node-0").unwrap();
    assert_eq!(n["schedulable"], true);
    assert_eq!(d["partitions"][0]["total"]["memory"], 1000);
    // Still scheduling.
    assert_eq!(h.asks(vec![ask("app-1", "a", 10, 1, 1)]).0, SICORE_OK);
    h.wait("allocation", |s| s.allocations.len() == 1);
}

/// Spec 16 Q19-20.
#[test]
fn drain_keeps_new_asks_off_and_drain_to_schedulable_lets_them_back() {
    let h = Harness::standard(SchedulerOptions::default(), Behaviour::default(), 2);
    assert_eq!(
        h.nodes(vec![action("node-0", ActionFromRm::DrainNode)]).0,
        SICORE_OK
    );
    assert_eq!(h.asks(vec![ask("app-1", "a", 100, 1, 4)]).0, SICORE_OK);
    h.wait("four allocations", |s| s.allocations.len() == 4);
    assert!(h.seen(|s| s.allocations.iter().all(|a| a.node_id == "node-1")));
    assert_eq!(
        node_json(&h.dump(), "node-0").unwrap()["schedulable"],
        false
    );
    // A required-node ask still lands on the draining node.
    let mut pinned = ask("app-1", "pinned", 100, 1, 1);
    pinned
        .tags
        .insert("yunikorn.apache.org/requiredNode".into(), "node-0".into());
    assert_eq!(h.asks(vec![pinned]).0, SICORE_OK);
    h.wait("pinned", |s| s.allocations.len() == 5);
    assert_eq!(h.seen(|s| s.allocations[4].node_id.clone()), "node-0");
    // Back to schedulable: fair order prefers the emptier node-0.
    assert_eq!(
        h.nodes(vec![action("node-0", ActionFromRm::DrainToSchedulable)])
            .0,
        SICORE_OK
    );
    assert_eq!(h.asks(vec![ask("app-1", "b", 100, 1, 1)]).0, SICORE_OK);
    h.wait("sixth", |s| s.allocations.len() == 6);
    assert_eq!(h.seen(|s| s.allocations[5].node_id.clone()), "node-0");
    assert_eq!(node_json(&h.dump(), "node-0").unwrap()["schedulable"], true);
}

#[test]
fn decommission_releases_everything_on_the_node() {
    let opts = SchedulerOptions {
        app_completing_timeout_ms: Some(60_000),
        ..Default::default()
    };
    let h = Harness::standard(opts, Behaviour::default(), 2);
    assert_eq!(h.apps(vec![app("app-2", "root.b")], vec![]).0, SICORE_OK);
    h.wait("app-2", |s| s.apps_accepted.len() == 2);
    let mut a1 = ask("app-1", "a", 100, 1, 1);
    a1.tags
        .insert("yunikorn.apache.org/requiredNode".into(), "node-0".into());
    let mut a2 = ask("app-2", "b", 100, 1, 2);
    a2.tags
        .insert("yunikorn.apache.org/requiredNode".into(), "node-0".into());
    let mut c = ask("app-2", "c", 100, 1, 1);
    c.tags
        .insert("yunikorn.apache.org/requiredNode".into(), "node-1".into());
    assert_eq!(h.asks(vec![a1, a2, c]).0, SICORE_OK);
    h.wait("four allocations", |s| s.allocations.len() == 4);
    assert_eq!(
        h.nodes(vec![action("node-0", ActionFromRm::Decomission)]).0,
        SICORE_OK
    );
    h.wait("three released", |s| s.released.len() == 3);
    h.seen(|s| {
        assert!(s.released.iter().all(|r| r.message == "Node node-0 Removed"
            && r.termination_type == si::TerminationType::StoppedByRm as i32
            && r.partition_name == "default"));
        let on_node0: Vec<&str> = s
            .allocations
            .iter()
            .filter(|a| a.node_id == "node-0")
            .map(|a| a.uuid.as_str())
            .collect();
        let mut released: Vec<&str> = s.released.iter().map(|r| r.uuid.as_str()).collect();
        released.sort();
        let mut want = on_node0.clone();
        want.sort();
        assert_eq!(released, want);
        // No forget for node removal.
        assert!(s.forgotten.is_empty());
    });
    // app-1 lost its only allocation: Completing. app-2 still runs on node-1.
    h.wait("app-1 completing", |s| {
        s.app_updates
            .iter()
            .any(|u| u.application_id == "app-1" && u.state == "Completing")
    });
    assert!(!h.seen(|s| s
        .app_updates
        .iter()
        .any(|u| u.application_id == "app-2" && u.state == "Completing")));
    let d = h.dump();
    let p = &d["partitions"][0];
    assert!(node_json(&d, "node-0").is_none());
    assert_eq!(p["total"]["memory"], 1000);
    assert_eq!(p["root"]["max"]["memory"], 1000);
    assert_eq!(p["root"]["allocated"]["memory"], 100);
    // Decommissioning again, or an unknown node, is ignored.
    assert_eq!(
        h.nodes(vec![action("node-0", ActionFromRm::Decomission)]).0,
        SICORE_OK
    );
    assert_eq!(h.dump()["partitions"][0]["total"]["memory"], 1000);
    assert_eq!(h.seen(|s| s.released.len()), 3);
}
