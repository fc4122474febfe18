//! The RM's view of a whole session through the C ABI: register, nodes, an
//! application, asks, allocations, releases and removal.

use crate::common::*;
use sicore::ffi::sicore_status::*;
use sicore::proto::si::v1 as si;
use sicore::proto::sicore::v1::SchedulerOptions;

#[test]
fn allocations_flow_from_asks_to_the_rm() {
    let h = Harness::standard(
        SchedulerOptions::default(),
        Behaviour {
            with_predicates: true,
            ..Default::default()
        },
        2,
    );
    assert_eq!(h.asks(vec![ask("app-1", "ask-1", 100, 1, 3)]).0, SICORE_OK);
    h.wait("three allocations", |s| s.allocations.len() == 3);

    let allocs = h.seen(|s| s.allocations.clone());
    let mut uuids: Vec<&str> = allocs.iter().map(|a| a.uuid.as_str()).collect();
    uuids.sort();
    uuids.dedup();
    assert_eq!(uuids.len(), 3, "every allocation has its own UUID");
    for a in &allocs {
        assert_eq!(a.allocation_key, "ask-1");
        assert_eq!(a.application_id, "app-1");
        assert_eq!(a.queue_name, "root.a");
        assert_eq!(a.partition_name, "default");
        assert!(a.node_id == "node-0" || a.node_id == "node-1");
        assert_eq!(a.uuid.len(), 36);
        assert_eq!(a.resource_per_alloc, res(&[("memory", 100), ("vcore", 1)]));
    }
    // The RM heard of each allocation through ReSync before UpdateAllocation.
    h.seen(|s| {
        let first_alloc = s.log.iter().position(|l| l.starts_with("alloc:")).unwrap();
        assert!(s.log[..first_alloc].iter().any(|l| l == "assume:ask-1"));
        assert_eq!(s.assumed.len(), 3);
        assert!(s
            .predicate_calls
            .iter()
            .all(|p| p.allocate && p.allocation_key == "ask-1"));
        assert!(!s.predicate_calls.is_empty());
    });
    // Fair node order spreads the three allocations over both nodes.
    assert!(
        allocs.iter().any(|a| a.node_id == "node-0")
            && allocs.iter().any(|a| a.node_id == "node-1")
    );

    // The application went New -> Accepted -> Starting -> Running.
    h.wait("app running", |s| {
        s.app_updates.iter().any(|u| u.state == "Running")
    });
    let states: Vec<String> = h.seen(|s| s.app_updates.iter().map(|u| u.state.clone()).collect());
    assert_eq!(states[..3], ["Accepted", "Starting", "Running"]);

    let dump = h.dump();
    let p = &dump["partitions"][0];
    assert_eq!(p["name"], "default");
    assert_eq!(p["root"]["allocated"]["memory"], 300);
    assert_eq!(p["root"]["children"][0]["path"], "root.a");
    assert_eq!(p["applications"][0]["id"], "app-1");
    assert_eq!(p["applications"][0]["state"], "Running");

    // Release one allocation by UUID: echoed with STOPPED_BY_RM, key forgotten.
    let first = allocs[0].clone();
    let rel = si::AllocationRelease {
        partition_name: "default".into(),
        application_id: "app-1".into(),
        uuid: first.uuid.clone(),
        termination_type: si::TerminationType::StoppedByRm as i32,
        message: "done".into(),
    };
    assert_eq!(h.releases(vec![rel], vec![]).0, SICORE_OK);
    h.wait("release echo", |s| s.released.len() == 1);
    h.seen(|s| {
        assert_eq!(s.released[0].uuid, first.uuid);
        assert_eq!(s.released[0].partition_name, "default");
        assert_eq!(
            s.released[0].termination_type,
            si::TerminationType::StoppedByRm as i32
        );
        assert_eq!(s.released[0].message, "allocation remove as per RM request");
    });
    h.wait("forget", |s| {
        s.forgotten.iter().any(|f| f.allocation_key == "ask-1")
    });
    assert_eq!(
        h.dump()["partitions"][0]["root"]["allocated"]["memory"],
        200
    );

    // Removing the application releases the rest.
    let remove = si::RemoveApplicationRequest {
        application_id: "app-1".into(),
        partition_name: "default".into(),
    };
    assert_eq!(h.apps(vec![], vec![remove]).0, SICORE_OK);
    h.wait("removal releases", |s| s.released.len() == 3);
    h.seen(|s| {
        assert!(s.released[1..]
            .iter()
            .all(|r| r.message == "Application app-1 Removed"))
    });
    h.wait("app completed", |s| {
        s.app_updates.iter().any(|u| u.state == "Completed")
    });
    let dump = h.dump();
    assert_eq!(
        dump["partitions"][0]["applications"]
            .as_array()
            .unwrap()
            .len(),
        0
    );
    assert_eq!(
        dump["partitions"][0]["completed_applications"][0]["id"],
        "app-1"
    );
    assert!(dump["partitions"][0]["nodes"][0]["allocations"]
        .as_array()
        .unwrap()
        .is_empty());
}

#[test]
fn asks_wait_for_capacity_and_run_when_it_appears() {
    let h = Harness::standard(SchedulerOptions::default(), Behaviour::default(), 1);
    // 1000 memory per node: the fourth ask of 300 does not fit.
    assert_eq!(h.asks(vec![ask("app-1", "big", 300, 1, 4)]).0, SICORE_OK);
    h.wait("three fit", |s| s.allocations.len() == 3);
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert_eq!(h.seen(|s| s.allocations.len()), 3);
    assert_eq!(
        h.dump()["partitions"][0]["applications"][0]["pending_asks"][0]["pending_repeat"],
        1
    );
    assert_eq!(h.nodes(vec![node("node-9", 1000, 10)]).0, SICORE_OK);
    h.wait("fourth on the new node", |s| s.allocations.len() == 4);
    assert_eq!(h.seen(|s| s.allocations[3].node_id.clone()), "node-9");
}

#[test]
fn a_refusing_predicate_keeps_an_ask_off_a_node() {
    let mut b = Behaviour {
        with_predicates: true,
        ..Default::default()
    };
    b.refuse_nodes.insert("node-0".into());
    let h = Harness::standard(SchedulerOptions::default(), b, 2);
    assert_eq!(h.asks(vec![ask("app-1", "a", 10, 1, 5)]).0, SICORE_OK);
    h.wait("five allocations", |s| s.allocations.len() == 5);
    h.seen(|s| {
        assert!(s.allocations.iter().all(|a| a.node_id == "node-1"));
        assert!(s.predicate_calls.iter().any(|p| p.node_id == "node-0"));
    });
}

#[test]
fn rejected_asks_and_applications_carry_reasons() {
    let h = Harness::standard(SchedulerOptions::default(), Behaviour::default(), 1);
    let mut zero = ask("app-1", "zero", 0, 0, 1);
    zero.resource_ask = res(&[]);
    let asks = vec![
        ask("nope", "k1", 10, 1, 1),
        zero,
        ask("app-1", "neg", 10, 1, -1),
    ];
    assert_eq!(h.asks(asks).0, SICORE_OK);
    h.wait("three rejections", |s| s.rejected_asks.len() == 3);
    h.seen(|s| {
        assert_eq!(
            s.rejected_asks[0].reason,
            "failed to find application nope, for allocation ask k1"
        );
        assert!(s.rejected_asks[1]
            .reason
            .starts_with("invalid ask added to app app-1"));
        assert!(s.rejected_asks[2]
            .reason
            .starts_with("invalid ask added to app app-1"));
    });
    let mut no_user = app("app-2", "root.b");
    no_user.ugi = None;
    let dup = app("app-1", "root.a");
    let wrong_partition = si::AddApplicationRequest {
        partition_name: "gpu".into(),
        ..app("app-3", "root.a")
    };
    assert_eq!(
        h.apps(vec![no_user, dup, wrong_partition], vec![]).0,
        SICORE_OK
    );
    h.wait("three app rejections", |s| s.apps_rejected.len() == 3);
    h.seen(|s| {
        assert_eq!(s.apps_rejected[0].reason, "empty user cannot resolve");
        assert_eq!(
            s.apps_rejected[1].reason,
            "adding application app-1 to partition [rm]default, but application already existed"
        );
        assert_eq!(
            s.apps_rejected[2].reason,
            "Failed to add application app-3 to partition [rm]gpu, partition doesn't exist"
        );
    });
}

#[test]
fn ask_release_removes_pending_demand() {
    let h = Harness::standard(SchedulerOptions::default(), Behaviour::default(), 1);
    assert_eq!(h.asks(vec![ask("app-1", "huge", 5000, 1, 2)]).0, SICORE_OK);
    let d = h.dump();
    assert_eq!(d["partitions"][0]["root"]["pending"]["memory"], 10000);
    let rel = si::AllocationAskRelease {
        partition_name: "default".into(),
        application_id: "app-1".into(),
        allocationkey: "huge".into(),
        termination_type: si::TerminationType::StoppedByRm as i32,
        message: String::new(),
    };
    assert_eq!(h.releases(vec![], vec![rel]).0, SICORE_OK);
    let d = h.dump();
    assert_eq!(d["partitions"][0]["root"]["pending"]["memory"], 0);
    assert!(d["partitions"][0]["applications"][0]["pending_asks"]
        .as_array()
        .unwrap()
        .is_empty());
}

#[test]
fn duplicate_and_invalid_nodes_are_rejected() {
    let h = Harness::standard(SchedulerOptions::default(), Behaviour::default(), 1);
    let mut neg = node("node-neg", 10, 1);
    neg.schedulable_resource = res(&[("memory", -5)]);
    assert_eq!(h.nodes(vec![node("node-0", 1, 1), neg]).0, SICORE_OK);
    h.wait("two rejections", |s| s.nodes_rejected.len() == 2);
    h.seen(|s| {
        assert!(
            s.nodes_rejected[0]
                .reason
                .contains("node name must be unique"),
            "{:?}",
            s.nodes_rejected
        );
        assert!(s.nodes_rejected[1].reason.contains("negative"));
    });
    assert_eq!(
        h.dump()["partitions"][0]["nodes"].as_array().unwrap().len(),
        1
    );
}

#[test]
fn reregistering_resets_the_rm_state() {
    let h = Harness::standard(SchedulerOptions::default(), Behaviour::default(), 2);
    assert_eq!(h.register("rm", "queues").0, SICORE_OK);
    let d = h.dump();
    assert!(d["partitions"][0]["nodes"].as_array().unwrap().is_empty());
    assert!(d["partitions"][0]["applications"]
        .as_array()
        .unwrap()
        .is_empty());
    // The first callback table is released once the dispatcher lets go of
    // it; the second one stays live.
    let deadline = std::time::Instant::now() + WAIT;
    while h.rec.releases.load(std::sync::atomic::Ordering::SeqCst) == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "first table never released"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert_eq!(h.rec.releases.load(std::sync::atomic::Ordering::SeqCst), 1);
}

/// YuniKorn's BenchmarkScheduling request shape (also a variant of
/// `cargo bench --bench scheduling`): one ask per application, the same key
/// in both, each repeated thousands of times. An ask partly served keeps
/// its entry with the repeats left, and those are placed once capacity
/// appears; every allocation has its own UUID.
#[test]
fn one_ask_per_application_with_thousands_of_repeats() {
    let config = "
partitions:
  - name: default
    queues:
      - name: root
        submitacl: '*'
        queues:
          - name: a
          - name: b
";
    let h = Harness::new(yaml_options(config));
    let (st, msg) = h.register("rm", "queues");
    assert_eq!(st, SICORE_OK, "{msg}");
    // 100 nodes of 40 slots: 4,000 of the 5,000 allocations fit.
    let list = (0..100)
        .map(|i| node(&format!("node-{i}"), 400, 40))
        .collect();
    assert_eq!(h.nodes(list).0, SICORE_OK);
    h.wait("nodes", |s| s.nodes_accepted.len() == 100);
    let apps = vec![app("app-1", "root.a"), app("app-2", "root.b")];
    assert_eq!(h.apps(apps, vec![]).0, SICORE_OK);
    h.wait("apps", |s| s.apps_accepted.len() == 2);
    for a in ["app-1", "app-2"] {
        assert_eq!(h.asks(vec![ask(a, "alloc-1", 10, 1, 2500)]).0, SICORE_OK);
    }
    h.wait("4,000 allocations", |s| s.allocations.len() == 4000);
    let d = h.dump();
    let left: i64 = d["partitions"][0]["applications"]
        .as_array()
        .unwrap()
        .iter()
        .map(|app| {
            let asks = app["pending_asks"].as_array().unwrap();
            assert_eq!(asks.len(), 1, "the ask keeps its entry: {app}");
            asks[0]["pending_repeat"].as_i64().unwrap()
        })
        .sum();
    assert_eq!(left, 1000);
    assert_eq!(d["partitions"][0]["root"]["pending"]["memory"], 10_000);

    let more = (100..125)
        .map(|i| node(&format!("node-{i}"), 400, 40))
        .collect();
    assert_eq!(h.nodes(more).0, SICORE_OK);
    h.wait("5,000 allocations", |s| s.allocations.len() == 5000);
    std::thread::sleep(std::time::Duration::from_millis(200));
    h.seen(|s| {
        assert_eq!(
            s.allocations.len(),
            5000,
            "no allocation beyond the repeats"
        );
        let mut uuids: Vec<&str> = s.allocations.iter().map(|a| a.uuid.as_str()).collect();
        uuids.sort_unstable();
        uuids.dedup();
        assert_eq!(uuids.len(), 5000, "every allocation has its own UUID");
        for a in ["app-1", "app-2"] {
            let n = s
                .allocations
                .iter()
                .filter(|x| x.application_id == a && x.allocation_key == "alloc-1")
                .count();
            assert_eq!(n, 2500, "{a}");
        }
    });
    let d = h.dump();
    assert_eq!(d["partitions"][0]["root"]["pending"]["memory"], 0);
    assert_eq!(d["partitions"][0]["root"]["allocated"]["memory"], 50_000);
    for app in d["partitions"][0]["applications"].as_array().unwrap() {
        assert!(app["pending_asks"].as_array().unwrap().is_empty(), "{app}");
    }
}
