//! Application life cycle (spec 6), releases (spec 7.4, 10.2, 10.3) and
//! application removal (spec 6.7), driven through the C ABI with
//! millisecond timers.

use crate::common::*;
use sicore::ffi::sicore_status::*;
use sicore::proto::si::v1 as si;
use sicore::proto::sicore::v1::SchedulerOptions;

/// Short completing and terminated timers; the start timer stays long so
/// only a second allocation moves `Starting` on.
fn fast() -> SchedulerOptions {
    SchedulerOptions {
        app_completing_timeout_ms: Some(50),
        app_terminated_timeout_ms: Some(50),
        ..Default::default()
    }
}

fn states(h: &Harness, app: &str) -> Vec<(String, String)> {
    h.seen(|s| {
        s.app_updates
            .iter()
            .filter(|u| u.application_id == app)
            .map(|u| (u.state.clone(), u.message.clone()))
            .collect()
    })
}

fn has_state(s: &Seen, app: &str, state: &str) -> bool {
    s.app_updates
        .iter()
        .any(|u| u.application_id == app && u.state == state)
}

fn release(app: &str, uuid: &str) -> si::AllocationRelease {
    si::AllocationRelease {
        partition_name: "default".into(),
        application_id: app.into(),
        uuid: uuid.into(),
        termination_type: si::TerminationType::StoppedByRm as i32,
        message: "done".into(),
    }
}

fn ask_release(app: &str, key: &str, kind: si::TerminationType) -> si::AllocationAskRelease {
    si::AllocationAskRelease {
        partition_name: "default".into(),
        application_id: app.into(),
        allocationkey: key.into(),
        termination_type: kind as i32,
        message: String::new(),
    }
}

/// The memory of a dumped resource; zero quantities are left out.
fn mem(r: &serde_json::Value) -> i64 {
    r["memory"].as_i64().unwrap_or(0)
}

fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
    v.iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

#[test]
fn typical_life_ends_expired_and_frees_the_id() {
    let h = Harness::standard(fast(), Behaviour::default(), 1);
    assert_eq!(h.asks(vec![ask("app-1", "k", 100, 1, 2)]).0, SICORE_OK);
    h.wait("two allocations", |s| s.allocations.len() == 2);
    h.wait("running", |s| has_state(s, "app-1", "Running"));
    let uuids: Vec<String> = h.seen(|s| s.allocations.iter().map(|a| a.uuid.clone()).collect());
    let rels = uuids.iter().map(|u| release("app-1", u)).collect();
    assert_eq!(h.releases(rels, vec![]).0, SICORE_OK);
    h.wait("expired", |s| has_state(s, "app-1", "Expired"));
    assert_eq!(
        states(&h, "app-1"),
        pairs(&[
            ("Accepted", "runApplication"),
            ("Starting", "runApplication"),
            ("Running", "runApplication"),
            ("Completing", "completeApplication"),
            ("Completed", "completeApplication"),
            ("Expired", "expireApplication"),
        ])
    );
    h.seen(|s| {
        // One echo per release entry, and both keys forgotten.
        assert_eq!(s.released.len(), 2);
        assert!(s
            .released
            .iter()
            .all(|r| r.message == "allocation remove as per RM request"));
        assert_eq!(s.forgotten.len(), 2);
        assert!(s
            .app_updates
            .iter()
            .all(|u| u.state_transition_timestamp > 0));
    });
    let d = h.dump();
    let p = &d["partitions"][0];
    assert!(p["applications"].as_array().unwrap().is_empty());
    assert_eq!(p["completed_applications"][0]["id"], "app-1");
    assert_eq!(p["completed_applications"][0]["state"], "Expired");
    assert_eq!(mem(&p["root"]["allocated"]), 0);

    // The id is free again.
    assert_eq!(h.apps(vec![app("app-1", "root.a")], vec![]).0, SICORE_OK);
    h.wait("accepted again", |s| s.apps_accepted.len() == 2);
    assert!(h.seen(|s| s.apps_rejected.is_empty()));
}

#[test]
fn start_timer_moves_a_single_allocation_app_to_running() {
    let opts = SchedulerOptions {
        app_start_timeout_ms: Some(30),
        ..fast()
    };
    let h = Harness::standard(opts, Behaviour::default(), 1);
    assert_eq!(h.asks(vec![ask("app-1", "k", 100, 1, 1)]).0, SICORE_OK);
    h.wait("running", |s| has_state(s, "app-1", "Running"));
    assert_eq!(
        states(&h, "app-1"),
        pairs(&[
            ("Accepted", "runApplication"),
            ("Starting", "runApplication"),
            ("Running", "runApplication"),
        ])
    );
    assert_eq!(h.seen(|s| s.allocations.len()), 1);
}

#[test]
fn stateaware_disable_tag_skips_the_starting_wait() {
    // Default start timeout (5 minutes): only the tag gets the app running.
    let h = Harness::standard(fast(), Behaviour::default(), 1);
    let mut tagged = app("app-2", "root.a");
    tagged
        .tags
        .insert("Application.StateAware.Disable".into(), "true".into());
    assert_eq!(h.apps(vec![tagged], vec![]).0, SICORE_OK);
    h.wait("accepted", |s| s.apps_accepted.len() == 2);
    assert_eq!(
        h.asks(vec![
            ask("app-2", "k", 100, 1, 1),
            ask("app-1", "j", 100, 1, 1)
        ])
        .0,
        SICORE_OK
    );
    h.wait("tagged app running", |s| has_state(s, "app-2", "Running"));
    h.wait("both allocated", |s| s.allocations.len() == 2);
    assert_eq!(
        states(&h, "app-2"),
        pairs(&[
            ("Accepted", "runApplication"),
            ("Starting", "runApplication"),
            ("Running", "runApplication"),
        ])
    );
    // The untagged app with one allocation waits in Starting.
    h.wait("untagged starting", |s| has_state(s, "app-1", "Starting"));
    assert!(!h.seen(|s| has_state(s, "app-1", "Running")));
    let d = h.dump();
    let apps = d["partitions"][0]["applications"]
        .as_array()
        .unwrap()
        .clone();
    let app1 = apps.iter().find(|a| a["id"] == "app-1").unwrap();
    assert_eq!(app1["state"], "Starting");
}

#[test]
fn a_new_ask_while_completing_returns_to_running() {
    let opts = SchedulerOptions {
        app_completing_timeout_ms: Some(60_000),
        ..fast()
    };
    let h = Harness::standard(opts, Behaviour::default(), 1);
    assert_eq!(h.asks(vec![ask("app-1", "k1", 100, 1, 1)]).0, SICORE_OK);
    h.wait("allocation", |s| s.allocations.len() == 1);
    let uuid = h.seen(|s| s.allocations[0].uuid.clone());
    assert_eq!(
        h.releases(vec![release("app-1", &uuid)], vec![]).0,
        SICORE_OK
    );
    h.wait("completing", |s| has_state(s, "app-1", "Completing"));
    assert_eq!(h.asks(vec![ask("app-1", "k2", 100, 1, 1)]).0, SICORE_OK);
    h.wait("running again", |s| has_state(s, "app-1", "Running"));
    h.wait("second allocation", |s| s.allocations.len() == 2);
    assert_eq!(
        states(&h, "app-1"),
        pairs(&[
            ("Accepted", "runApplication"),
            ("Starting", "runApplication"),
            ("Completing", "completeApplication"),
            ("Running", "runApplication"),
        ])
    );
    assert_eq!(
        h.dump()["partitions"][0]["applications"][0]["state"],
        "Running"
    );
}

#[test]
fn ask_releases_remove_demand_and_complete_an_idle_app() {
    let h = Harness::standard(fast(), Behaviour::default(), 1);
    // Too big for the node: stays pending.
    let asks = vec![
        ask("app-1", "big", 5000, 1, 2),
        ask("app-1", "huge", 9000, 1, 1),
    ];
    assert_eq!(h.asks(asks).0, SICORE_OK);
    h.wait("accepted", |s| has_state(s, "app-1", "Accepted"));
    // A TIMEOUT ask release is the core's own echo: ignored.
    let ignored = vec![
        ask_release("app-1", "big", si::TerminationType::Timeout),
        ask_release("nope", "big", si::TerminationType::StoppedByRm),
        ask_release("app-1", "unknown", si::TerminationType::StoppedByRm),
    ];
    assert_eq!(h.releases(vec![], ignored).0, SICORE_OK);
    let d = h.dump();
    assert_eq!(mem(&d["partitions"][0]["root"]["pending"]), 19000);
    // One by key, then all by an empty key.
    let one = ask_release("app-1", "huge", si::TerminationType::StoppedByRm);
    assert_eq!(h.releases(vec![], vec![one]).0, SICORE_OK);
    assert_eq!(mem(&h.dump()["partitions"][0]["root"]["pending"]), 10000);
    assert!(!h.seen(|s| has_state(s, "app-1", "Completing")));
    let all = ask_release("app-1", "", si::TerminationType::StoppedByRm);
    assert_eq!(h.releases(vec![], vec![all]).0, SICORE_OK);
    assert_eq!(mem(&h.dump()["partitions"][0]["root"]["pending"]), 0);
    h.wait("completed", |s| has_state(s, "app-1", "Completed"));
    h.seen(|s| {
        assert!(s.released.is_empty() && s.released_asks.is_empty());
        assert!(s.forgotten.is_empty());
    });
}

#[test]
fn release_by_application_removes_every_allocation() {
    let h = Harness::standard(fast(), Behaviour::default(), 2);
    assert_eq!(h.asks(vec![ask("app-1", "k", 100, 1, 3)]).0, SICORE_OK);
    h.wait("three allocations", |s| s.allocations.len() == 3);
    // Unknown UUID and unknown application: nothing happens.
    let noise = vec![release("app-1", "no-such-uuid"), release("nope", "")];
    assert_eq!(h.releases(noise, vec![]).0, SICORE_OK);
    assert_eq!(mem(&h.dump()["partitions"][0]["root"]["allocated"]), 300);
    assert_eq!(h.releases(vec![release("app-1", "")], vec![]).0, SICORE_OK);
    h.wait("three echoes", |s| s.released.len() == 3);
    h.wait("completed", |s| has_state(s, "app-1", "Completed"));
    h.seen(|s| {
        let mut echoed: Vec<&str> = s.released.iter().map(|r| r.uuid.as_str()).collect();
        let mut made: Vec<&str> = s.allocations.iter().map(|a| a.uuid.as_str()).collect();
        echoed.sort();
        made.sort();
        assert_eq!(echoed, made);
        assert!(s.released.iter().all(|r| {
            r.termination_type == si::TerminationType::StoppedByRm as i32
                && r.partition_name == "default"
                && r.application_id == "app-1"
        }));
        assert_eq!(s.forgotten.len(), 3);
        assert!(s.forgotten.iter().all(|f| f.allocation_key == "k"));
    });
    let d = h.dump();
    assert_eq!(mem(&d["partitions"][0]["root"]["allocated"]), 0);
    for n in d["partitions"][0]["nodes"].as_array().unwrap() {
        assert!(n["allocations"].as_array().unwrap().is_empty());
        assert_eq!(mem(&n["allocated"]), 0);
    }
}

#[test]
fn removing_an_app_with_running_allocations_releases_them() {
    let h = Harness::standard(fast(), Behaviour::default(), 1);
    assert_eq!(
        h.asks(vec![
            ask("app-1", "k", 100, 1, 2),
            ask("app-1", "big", 9000, 1, 1)
        ])
        .0,
        SICORE_OK
    );
    h.wait("two allocations", |s| s.allocations.len() == 2);
    h.wait("running", |s| has_state(s, "app-1", "Running"));
    let remove = si::RemoveApplicationRequest {
        application_id: "app-1".into(),
        partition_name: "default".into(),
    };
    assert_eq!(h.apps(vec![], vec![remove]).0, SICORE_OK);
    h.wait("two releases", |s| s.released.len() == 2);
    h.wait("completed", |s| has_state(s, "app-1", "Completed"));
    h.seen(|s| {
        assert!(s
            .released
            .iter()
            .all(|r| r.message == "Application app-1 Removed"
                && r.termination_type == si::TerminationType::StoppedByRm as i32
                && r.partition_name == "default"));
        // Removal sends no ReSync forget.
        assert!(s.forgotten.is_empty());
    });
    let tail: Vec<(String, String)> = states(&h, "app-1").split_off(3);
    assert_eq!(
        tail[..2],
        pairs(&[
            ("Completing", "completeApplication"),
            ("Completed", "completeApplication"),
        ])
    );
    let d = h.dump();
    let p = &d["partitions"][0];
    assert!(p["applications"].as_array().unwrap().is_empty());
    assert_eq!(mem(&p["root"]["allocated"]), 0);
    assert_eq!(mem(&p["root"]["pending"]), 0);
    assert!(p["nodes"][0]["allocations"].as_array().unwrap().is_empty());
    // Asks for the removed application are rejected now.
    assert_eq!(h.asks(vec![ask("app-1", "late", 1, 1, 1)]).0, SICORE_OK);
    h.wait("late ask rejected", |s| s.rejected_asks.len() == 1);
}

#[test]
fn removing_a_new_app_reports_nothing() {
    let h = Harness::standard(fast(), Behaviour::default(), 1);
    let remove = si::RemoveApplicationRequest {
        application_id: "app-1".into(),
        partition_name: "default".into(),
    };
    assert_eq!(
        h.apps(vec![app("app-2", "root.a")], vec![remove]).0,
        SICORE_OK
    );
    h.wait("app-2 accepted", |s| s.apps_accepted.len() == 2);
    let d = h.dump();
    let apps = d["partitions"][0]["applications"].as_array().unwrap();
    assert_eq!(apps.len(), 1);
    assert_eq!(apps[0]["id"], "app-2");
    assert!(h.seen(|s| s.app_updates.is_empty()));
}
