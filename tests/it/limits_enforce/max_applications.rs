//! Limits: maxapplications holds the next application, also back from Completing.

use super::*;

/// One application cap at root.default, by each kind of limit (L10, L12).
fn max_apps_case(limit: &str, user: &str, groups: &[&str]) {
    let queues = format!("- name: default\n  limits:\n{limit}");
    let h = Harness::configured(options(&yaml("", &queues)), 1);
    h.submit(app_by("app-1", "root.default", user, groups))
        .unwrap();
    assert_eq!(h.asks(vec![ask("app-1", "k1", 10, 1, 1)]).0, SICORE_OK);
    h.wait("app-1 allocated", |s| s.allocations.len() == 1);
    h.submit(app_by("app-2", "root.default", user, groups))
        .unwrap();
    assert_eq!(h.asks(vec![ask("app-2", "k2", 10, 1, 1)]).0, SICORE_OK);
    h.settle();
    assert_eq!(h.allocs_of("app-2"), 0, "{limit}");
    assert!(!started(&h, "app-2"), "app-2 stays Accepted: {limit}");
    let d = h.dump();
    let app2 = d["partitions"][0]["applications"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["id"] == "app-2")
        .unwrap()
        .clone();
    assert_eq!(app2["state"], "Accepted");
    // No autoscaler signal for an application held back by a cap.
    h.seen(|s| assert!(!s.container_states.iter().any(|c| c.allocation_key == "k2")));
    // app-1 finishes: app-2 may run.
    assert_eq!(
        h.releases(
            vec![si::AllocationRelease {
                partition_name: "default".into(),
                application_id: "app-1".into(),
                uuid: h.seen(|s| s.allocations[0].uuid.clone()),
                termination_type: si::TerminationType::StoppedByRm as i32,
                message: String::new(),
            }],
            vec![si::AllocationAskRelease {
                partition_name: "default".into(),
                application_id: "app-1".into(),
                allocationkey: String::new(),
                termination_type: si::TerminationType::StoppedByRm as i32,
                message: String::new(),
            }],
        )
        .0,
        SICORE_OK
    );
    h.wait("app-2 allocated after app-1 stopped", |s| {
        s.allocations.iter().any(|a| a.application_id == "app-2")
    });
}

#[test]
fn max_applications_keeps_the_next_application_accepted() {
    // L10/L12: named user, named group, wildcard user, wildcard group
    // after a named group, user cap lower than group cap, group cap lower
    // than user cap.
    max_apps_case(
        "    - {users: [testuser], maxapplications: 1}\n",
        "testuser",
        &[],
    );
    max_apps_case(
        "    - {groups: [testgroup], maxapplications: 1}\n",
        "testuser",
        &["testgroup"],
    );
    max_apps_case(
        "    - {users: ['*'], maxapplications: 1}\n",
        "testuser",
        &[],
    );
    max_apps_case(
        "    - {groups: [other], maxapplications: 5}\n    - {groups: ['*'], maxapplications: 1}\n",
        "testuser",
        &["testgroup"],
    );
    max_apps_case(
        "    - {users: [testuser], maxapplications: 1}\n    - {groups: [testgroup], maxapplications: 2}\n",
        "testuser",
        &["testgroup"],
    );
    max_apps_case(
        "    - {users: [testuser], maxapplications: 2}\n    - {groups: [testgroup], maxapplications: 1}\n",
        "testuser",
        &["testgroup"],
    );
}

#[test]
fn a_reservation_under_max_applications_is_skipped() {
    // L11: both applications of one user reserve a node while neither runs
    // yet; when the nodes free up, the first allocated from its
    // reservation takes the user's only slot and the reserved step skips
    // the other (Accepted, no allocation, its reservation kept).
    let queues = "- name: default\n  limits:\n    - {users: [testuser], maxapplications: 1}\n";
    let mut o = options(&yaml("", queues));
    o.reservation_delay_ms = Some(0);
    let h = Harness::configured(o, 0);
    let two = vec![node("n0", 1000, 10), node("n1", 1000, 10)];
    assert_eq!(h.nodes(two).0, SICORE_OK);
    h.wait("nodes accepted", |s| s.nodes_accepted.len() == 2);
    h.submit(app_by("filler", "root.default", "other", &[]))
        .unwrap();
    assert_eq!(h.asks(vec![ask("filler", "f", 600, 1, 2)]).0, SICORE_OK);
    h.wait("filler allocated", |s| s.allocations.len() == 2);
    h.submit(app_by("app-1", "root.default", "testuser", &[]))
        .unwrap();
    h.submit(app_by("app-2", "root.default", "testuser", &[]))
        .unwrap();
    assert_eq!(h.asks(vec![ask("app-1", "k1", 500, 1, 1)]).0, SICORE_OK);
    assert_eq!(h.asks(vec![ask("app-2", "k2", 500, 1, 1)]).0, SICORE_OK);
    h.wait_dump("both reserved", |d| {
        d["partitions"][0]["reservations"]
            .as_array()
            .is_some_and(|r| r.len() == 2)
    });
    let fillers: Vec<si::AllocationRelease> = h.seen(|s| {
        s.allocations
            .iter()
            .map(|a| si::AllocationRelease {
                partition_name: "default".into(),
                application_id: "filler".into(),
                uuid: a.uuid.clone(),
                termination_type: si::TerminationType::StoppedByRm as i32,
                message: String::new(),
            })
            .collect()
    });
    assert_eq!(h.releases(fillers, vec![]).0, SICORE_OK);
    h.wait("one reservation allocated", |s| {
        s.allocations
            .iter()
            .any(|a| a.application_id == "app-1" || a.application_id == "app-2")
    });
    h.settle();
    let (one, two) = (h.allocs_of("app-1"), h.allocs_of("app-2"));
    assert_eq!(one + two, 1, "one slot for testuser: {one} + {two}");
    let held = if one == 0 { "app-1" } else { "app-2" };
    assert!(!started(&h, held), "{held} stays Accepted");
    let d = h.dump();
    let user = user(&d, "testuser").unwrap();
    assert_eq!(
        level(user, "root.default").unwrap()["runningApplications"]
            .as_array()
            .map(Vec::len),
        Some(1)
    );
}

#[test]
fn an_application_back_from_completing_is_still_held_by_the_cap() {
    // limits.md 4.1: app-2 is held by the user's maxapplications; the RM
    // takes its request back (Completing), then asks again (Running, with
    // no allocation). The user still has one slot, app-1's: app-2 gets
    // nothing until app-1 stops. (Upstream lets it through.)
    let h = second_app_held_by_the_cap();
    let take_back = |key: &str| si::AllocationAskRelease {
        partition_name: "default".into(),
        application_id: "app-2".into(),
        allocationkey: key.into(),
        termination_type: si::TerminationType::StoppedByRm as i32,
        message: String::new(),
    };
    assert_eq!(h.releases(vec![], vec![take_back("k2")]).0, SICORE_OK);
    h.wait("app-2 Completing", |s| {
        s.app_updates
            .iter()
            .any(|u| u.application_id == "app-2" && u.state == "Completing")
    });
    assert_eq!(h.asks(vec![ask("app-2", "k3", 10, 1, 1)]).0, SICORE_OK);
    h.wait("app-2 Running", |s| {
        s.app_updates
            .iter()
            .any(|u| u.application_id == "app-2" && u.state == "Running")
    });
    h.wait_dump("app-2 held again", |d| {
        app_entry(d, "app-2")["held_by_limits"] == true
    });
    // Other work makes more passes: app-2 still gets nothing.
    h.submit(app_by("other", "root.default", "someone", &[]))
        .unwrap();
    assert_eq!(h.asks(vec![ask("other", "o", 10, 1, 1)]).0, SICORE_OK);
    h.wait("other allocated", |s| {
        s.allocations.iter().any(|a| a.application_id == "other")
    });
    h.settle();
    assert_eq!(h.allocs_of("app-2"), 0);
    let d = h.dump();
    let t = user(&d, "testuser").expect("testuser tracked");
    let running = level(t, "root.default").unwrap()["runningApplications"].clone();
    assert_eq!(running, serde_json::json!(["app-1"]));
    // No autoscaler signal for the held request either.
    h.seen(|s| assert!(!s.container_states.iter().any(|c| c.allocation_key == "k3")));
    // app-1 stops: app-2 runs.
    let uuid = h.seen(|s| s.allocations[0].uuid.clone());
    assert_eq!(
        h.releases(
            vec![si::AllocationRelease {
                partition_name: "default".into(),
                application_id: "app-1".into(),
                uuid,
                termination_type: si::TerminationType::StoppedByRm as i32,
                message: String::new(),
            }],
            vec![],
        )
        .0,
        SICORE_OK
    );
    h.wait("app-2 allocated", |s| {
        s.allocations.iter().any(|a| a.application_id == "app-2")
    });
    h.settle();
    // Held, let go with its demand (no record), held again, runnable.
    let reasons: Vec<String> = h.seen(|s| {
        s.events
            .iter()
            .filter(|e| e.object_id == "app-2" && e.reason.ends_with("Quota"))
            .map(|e| e.reason.clone())
            .collect()
    });
    assert_eq!(
        reasons,
        ["AppCannotRunQuota", "AppCannotRunQuota", "AppRunnableQuota"]
    );
}
