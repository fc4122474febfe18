//! User and group limits through the C ABI (limits.md 9, YuniKorn v1.8
//! semantics): what the RM sees (allocations, application states, events)
//! and what the state dump shows of the trackers.

use crate::common::*;
use serde_json::Value;
use sicore::ffi::sicore_status::*;
use sicore::proto::si::v1 as si;
use sicore::proto::sicore::v1::SchedulerOptions;

/// A partition whose root has `root_limits` (YAML list, may be empty) and
/// children `queues` (indented for root's `queues:`).
fn yaml(root_limits: &str, queues: &str) -> String {
    let mut s = String::from(
        "partitions:\n  - name: default\n    queues:\n      - name: root\n        submitacl: '*'\n",
    );
    if !root_limits.is_empty() {
        s.push_str("        limits:\n");
        for l in root_limits.lines() {
            s.push_str("          ");
            s.push_str(l);
            s.push('\n');
        }
    }
    s.push_str("        queues:\n");
    for l in queues.lines() {
        s.push_str("          ");
        s.push_str(l);
        s.push('\n');
    }
    s
}

fn options(text: &str) -> SchedulerOptions {
    let mut o = yaml_options(text);
    o.event_flush_interval_ms = 20;
    o
}

fn started(h: &Harness, app: &str) -> bool {
    h.seen(|s| {
        s.app_updates
            .iter()
            .any(|u| u.application_id == app && (u.state == "Starting" || u.state == "Running"))
    })
}

fn user<'a>(d: &'a Value, name: &str) -> Option<&'a Value> {
    d["partitions"][0]["usage"]["users"]
        .as_array()?
        .iter()
        .find(|u| u["userName"] == name)
}

fn group<'a>(d: &'a Value, name: &str) -> Option<&'a Value> {
    d["partitions"][0]["usage"]["groups"]
        .as_array()?
        .iter()
        .find(|u| u["groupName"] == name)
}

/// The level at `path` of a tracker's queue tree.
fn level<'a>(t: &'a Value, path: &str) -> Option<&'a Value> {
    fn walk<'a>(q: &'a Value, path: &str) -> Option<&'a Value> {
        if q["queuePath"] == path {
            return Some(q);
        }
        q["children"].as_array()?.iter().find_map(|c| walk(c, path))
    }
    walk(&t["queues"], path)
}

fn mem(v: &Value) -> i64 {
    v["resourceUsage"]["memory"].as_i64().unwrap_or(0)
}

#[test]
fn user_headroom_blocks_and_uncapped_users_run_freely() {
    // L9: testuser capped to {3,3} at root.parent.sub-leaf, 5 at
    // root.parent and root.leaf.
    let queues = "\
- name: parent
  limits:
    - {limit: p, users: [testuser], maxresources: {memory: 5, vcore: 5}}
  queues:
    - name: sub-leaf
      limits:
        - {limit: s, users: [testuser], maxresources: {memory: 3, vcore: 3}}
- name: leaf
  limits:
    - {limit: l, users: [testuser], maxresources: {memory: 5, vcore: 5}}
";
    let h = Harness::configured(options(&yaml("", queues)), 4);
    for (id, q) in [
        ("app-1", "root.parent.sub-leaf"),
        ("app-2", "root.parent.sub-leaf"),
    ] {
        h.submit(app_by(id, q, "testuser", &[])).unwrap();
    }
    assert_eq!(h.asks(vec![ask("app-1", "a1", 3, 3, 1)]).0, SICORE_OK);
    h.wait("app-1 allocated", |s| s.allocations.len() == 1);
    assert_eq!(h.asks(vec![ask("app-2", "a2", 3, 3, 1)]).0, SICORE_OK);
    h.settle();
    assert_eq!(h.allocs_of("app-2"), 0, "over the sub-leaf cap");
    h.submit(app_by("app-3", "root.leaf", "testuser", &[]))
        .unwrap();
    assert_eq!(h.asks(vec![ask("app-3", "a3", 5, 5, 1)]).0, SICORE_OK);
    h.wait("app-3 allocated", |s| s.allocations.len() == 2);
    h.submit(app_by("app-4", "root.leaf", "testuser", &[]))
        .unwrap();
    assert_eq!(h.asks(vec![ask("app-4", "a4", 5, 5, 1)]).0, SICORE_OK);
    h.submit(app_by("free", "root.leaf", "testuser1", &[]))
        .unwrap();
    assert_eq!(h.asks(vec![ask("free", "f", 5, 5, 3)]).0, SICORE_OK);
    h.wait("uncapped user allocated", |s| {
        s.allocations
            .iter()
            .filter(|a| a.application_id == "free")
            .count()
            == 3
    });
    h.settle();
    assert_eq!(h.allocs_of("app-4"), 0, "over the leaf cap");
    assert_eq!(h.allocs_of("app-2"), 0);
    // No rejection, no autoscaler signal for the blocked asks.
    h.seen(|s| {
        assert!(s.rejected_asks.is_empty());
        assert!(!s
            .container_states
            .iter()
            .any(|c| c.allocation_key == "a2" || c.allocation_key == "a4"));
    });
    let d = h.dump();
    let t = user(&d, "testuser").expect("tracker");
    assert_eq!(mem(level(t, "root").unwrap()), 8);
    assert_eq!(mem(level(t, "root.parent.sub-leaf").unwrap()), 3);
    assert_eq!(
        level(t, "root.parent.sub-leaf").unwrap()["maxResources"]["memory"],
        3
    );
    assert_eq!(mem(level(t, "root.leaf").unwrap()), 5);
}

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
fn ten_thousand_asks_in_one_pass_never_pass_the_user_cap() {
    // A batched pass counts every allocation at once (issue 22 item 3):
    // 10,000 one-unit asks against a cap of 100, enough nodes for all.
    let queues = "- name: a\n";
    let limits = "- {users: [alice], maxresources: {memory: 100}}\n";
    let h = Harness::configured(options(&yaml(limits, queues)), 20);
    h.submit(app_by("app-1", "root.a", "alice", &[])).unwrap();
    assert_eq!(h.asks(vec![ask("app-1", "k", 1, 0, 10_000)]).0, SICORE_OK);
    h.wait("the cap", |s| s.allocations.len() >= 100);
    h.settle();
    assert_eq!(h.allocs_of("app-1"), 100);
    let d = h.dump();
    assert_eq!(
        mem(level(user(&d, "alice").unwrap(), "root.a").unwrap()),
        100
    );
    // A second application of the same user shares the cap.
    h.submit(app_by("app-2", "root.a", "alice", &[])).unwrap();
    assert_eq!(h.asks(vec![ask("app-2", "k2", 1, 0, 50)]).0, SICORE_OK);
    h.settle();
    assert_eq!(h.allocs_of("app-2"), 0);
}

#[test]
fn two_applications_of_one_user_share_the_cap_within_one_pass() {
    // Both applications' asks wait for one pass (no nodes yet): each
    // allocation of one must shrink the other's headroom at once, at the
    // root cap (shared by both) and the leaf cap (each leaf its own).
    let queues =
        "- name: a\n  limits:\n    - {users: [alice], maxresources: {memory: 70}}\n- name: b\n";
    let limits = "- {users: [alice], maxresources: {memory: 100}}\n";
    let h = Harness::configured(options(&yaml(limits, queues)), 0);
    h.submit(app_by("app-1", "root.a", "alice", &[])).unwrap();
    h.submit(app_by("app-2", "root.b", "alice", &[])).unwrap();
    assert_eq!(h.asks(vec![ask("app-1", "k1", 1, 0, 5_000)]).0, SICORE_OK);
    assert_eq!(h.asks(vec![ask("app-2", "k2", 1, 0, 5_000)]).0, SICORE_OK);
    let list = (0..20)
        .map(|i| node(&format!("node-{i}"), 1000, 10))
        .collect();
    assert_eq!(h.nodes(list).0, SICORE_OK);
    h.wait("the cap", |s| s.allocations.len() >= 100);
    h.settle();
    let (one, two) = (h.allocs_of("app-1"), h.allocs_of("app-2"));
    assert_eq!(one + two, 100, "root cap: {one} + {two}");
    assert!(one <= 70, "leaf cap: {one}");
    let d = h.dump();
    let alice = user(&d, "alice").unwrap();
    assert_eq!(mem(level(alice, "root").unwrap()), 100);
    assert_eq!(mem(level(alice, "root.a").unwrap()), one as i64);
}

#[test]
fn running_slots_count_at_the_first_allocation_of_a_pass() {
    // Several applications of one user with work for one pass: only as
    // many start as the application cap allows.
    let queues = "- name: a\n";
    let limits = "- {users: [alice], maxapplications: 2}\n";
    let h = Harness::configured(options(&yaml(limits, queues)), 2);
    let apps: Vec<si::AddApplicationRequest> = (0..6)
        .map(|i| app_by(&format!("app-{i}"), "root.a", "alice", &[]))
        .collect();
    assert_eq!(h.apps(apps, vec![]).0, SICORE_OK);
    h.wait("accepted", |s| s.apps_accepted.len() == 6);
    let asks = (0..6)
        .map(|i| ask(&format!("app-{i}"), &format!("k{i}"), 1, 0, 3))
        .collect();
    assert_eq!(h.asks(asks).0, SICORE_OK);
    h.wait("allocations", |s| s.allocations.len() >= 6);
    h.settle();
    let with: std::collections::BTreeSet<String> = h.seen(|s| {
        s.allocations
            .iter()
            .map(|a| a.application_id.clone())
            .collect()
    });
    assert_eq!(with.len(), 2, "{with:?}");
    assert_eq!(h.seen(|s| s.allocations.len()), 6);
}

#[test]
fn headroom_is_the_smaller_of_user_and_group() {
    // L13, both ways.
    for (user_cap, group_cap, fits) in [(30, 60, 3), (60, 20, 2)] {
        let queues = format!(
            "- name: a\n  limits:\n    - {{users: [u], maxresources: {{memory: {user_cap}}}}}\n    - {{groups: [g], maxresources: {{memory: {group_cap}}}}}\n"
        );
        let h = Harness::configured(options(&yaml("", &queues)), 1);
        h.submit(app_by("app-1", "root.a", "u", &["g"])).unwrap();
        assert_eq!(h.asks(vec![ask("app-1", "k", 10, 0, 10)]).0, SICORE_OK);
        h.wait("allocations", |s| s.allocations.len() >= fits);
        h.settle();
        assert_eq!(h.allocs_of("app-1"), fits);
        let d = h.dump();
        let g = group(&d, "g").expect("group tracker");
        assert_eq!(mem(level(g, "root.a").unwrap()), 10 * fits as i64);
        assert_eq!(g["applications"][0], "app-1");
        assert_eq!(user(&d, "u").unwrap()["groups"]["app-1"], "g");
    }
}

#[test]
fn group_resolution_follows_configuration_order_and_queue() {
    // L7: the first configured group among the user's, at the queue
    // first, then its ancestors.
    let limits = "- {groups: [test_root], maxapplications: 10}\n";
    let queues = "\
- name: parent
  limits:
    - {groups: [test, test_parent], maxapplications: 10}
  queues:
    - name: leaf
- name: parent1
  queues:
    - name: leaf1
";
    let h = Harness::configured(options(&yaml(limits, queues)), 1);
    h.submit(app_by(
        "a",
        "root.parent.leaf",
        "u",
        &["test1", "test_root", "test_parent", "test"],
    ))
    .unwrap();
    h.submit(app_by(
        "b",
        "root.parent1.leaf1",
        "u",
        &["test", "test_root"],
    ))
    .unwrap();
    h.submit(app_by("c", "root.parent1.leaf1", "v", &["none"]))
        .unwrap();
    h.settle();
    let d = h.dump();
    let u = user(&d, "u").unwrap();
    assert_eq!(u["groups"]["a"], "test", "config order, not the user's");
    assert_eq!(u["groups"]["b"], "test_root");
    assert!(
        user(&d, "v").unwrap()["groups"].is_null(),
        "no group linked"
    );
}

#[test]
fn one_user_two_groups_by_queue() {
    // L8
    let queues = "\
- name: parent
  limits:
    - {groups: [group1], maxresources: {memory: 500}}
  queues:
    - name: child1
      limits:
        - {groups: [group2], maxresources: {memory: 500}}
    - name: child2
";
    let h = Harness::configured(options(&yaml("", queues)), 1);
    h.submit(app_by(
        "app1",
        "root.parent.child1",
        "u",
        &["group1", "group2"],
    ))
    .unwrap();
    h.submit(app_by(
        "app2",
        "root.parent.child2",
        "u",
        &["group1", "group2"],
    ))
    .unwrap();
    assert_eq!(
        h.asks(vec![
            ask("app1", "k1", 10, 1, 1),
            ask("app2", "k2", 20, 1, 1)
        ])
        .0,
        SICORE_OK
    );
    h.wait("both allocated", |s| s.allocations.len() == 2);
    h.settle();
    let d = h.dump();
    assert_eq!(user(&d, "u").unwrap()["groups"]["app1"], "group2");
    assert_eq!(user(&d, "u").unwrap()["groups"]["app2"], "group1");
    assert_eq!(
        mem(level(group(&d, "group2").unwrap(), "root.parent").unwrap()),
        10
    );
    assert_eq!(
        mem(level(group(&d, "group1").unwrap(), "root.parent").unwrap()),
        20
    );
    let remove = |id: &str| si::RemoveApplicationRequest {
        application_id: id.into(),
        partition_name: "default".into(),
    };
    assert_eq!(
        h.apps(vec![], vec![remove("app1"), remove("app2")]).0,
        SICORE_OK
    );
    h.wait_dump("links gone", |d| {
        d["partitions"][0]["usage"]["users"]
            .as_array()
            .is_some_and(|a| a.is_empty())
            && d["partitions"][0]["usage"]["groups"]
                .as_array()
                .is_some_and(|a| a.is_empty())
    });
}

#[test]
fn wildcard_user_caps_each_user_separately() {
    // L14 (the part the RM sees): every user not named gets the wildcard
    // cap for themselves; a named user keeps its own.
    let limits = "- {users: [user2], maxresources: {memory: 50}}\n- {users: ['*'], maxresources: {memory: 20}}\n";
    let h = Harness::configured(options(&yaml(limits, "- name: a\n")), 1);
    for u in ["user1", "user2", "user3"] {
        h.submit(app_by(&format!("app-{u}"), "root.a", u, &[]))
            .unwrap();
        assert_eq!(
            h.asks(vec![ask(&format!("app-{u}"), "k", 10, 0, 10)]).0,
            SICORE_OK
        );
    }
    h.wait("allocations", |s| s.allocations.len() >= 9);
    h.settle();
    assert_eq!(h.allocs_of("app-user1"), 2);
    assert_eq!(h.allocs_of("app-user2"), 5);
    assert_eq!(h.allocs_of("app-user3"), 2);
    let d = h.dump();
    assert_eq!(
        level(user(&d, "user1").unwrap(), "root").unwrap()["maxResources"]["memory"],
        20
    );
}

#[test]
fn user_quota_events_once_per_transition() {
    // L19
    let dir = temp_config_dir("limits-events");
    let capped = yaml(
        "- {users: [testuser], maxresources: {memory: 1, vcore: 1}}\n",
        "- name: a\n",
    );
    let mut o = dir_options(&dir, &capped);
    o.event_flush_interval_ms = 20;
    // Room for the ask once the cap goes (the event store keeps only the
    // latest record per ask, so a queue refusal would replace the "fits").
    let h = Harness::configured(o, 2);
    h.submit(app_by("app-1", "root.a", "testuser", &[]))
        .unwrap();
    assert_eq!(
        h.asks(vec![ask("app-1", "alloc-0", 100, 10, 1)]).0,
        SICORE_OK
    );
    h.wait("quota event", |s| {
        s.events.iter().any(|e| e.reason == "UserQuotaExceeded")
    });
    // More passes: no second event.
    h.submit(app_by("other", "root.a", "someone", &[])).unwrap();
    assert_eq!(h.asks(vec![ask("other", "o", 1, 1, 1)]).0, SICORE_OK);
    h.wait("other allocated", |s| s.allocations.len() == 1);
    h.settle();
    h.seen(|s| {
        let quota: Vec<&si::EventRecord> = s
            .events
            .iter()
            .filter(|e| e.reason.starts_with("UserQuota"))
            .collect();
        assert_eq!(quota.len(), 1, "{quota:?}");
        let e = quota[0];
        assert_eq!(e.r#type, si::event_record::Type::Request as i32);
        assert_eq!(e.object_id, "alloc-0");
        assert_eq!(e.group_id, "app-1");
        assert_eq!(
            e.message,
            "Request 'alloc-0' exceeds the available user quota (requested map[memory:100 vcore:10], available map[memory:1 vcore:1])"
        );
    });
    // The cap goes: one "fits" event, and the ask is allocated.
    std::fs::write(dir.join("queues.yaml"), yaml("", "- name: a\n")).unwrap();
    assert_eq!(h.reload("rm").0, SICORE_OK);
    h.wait("fits event", |s| {
        s.events.iter().any(|e| e.reason == "UserQuotaAvailable")
    });
    h.wait("allocated", |s| {
        s.allocations.iter().any(|a| a.allocation_key == "alloc-0")
    });
    h.settle();
    h.seen(|s| {
        let fits: Vec<&si::EventRecord> = s
            .events
            .iter()
            .filter(|e| e.reason == "UserQuotaAvailable")
            .collect();
        assert_eq!(fits.len(), 1);
        assert_eq!(
            fits[0].message,
            "Request 'alloc-0' fits in the available user quota"
        );
    });
}

#[test]
fn recovered_allocations_count_and_are_never_refused() {
    // A node comes back with an allocation that already breaks the cap:
    // it is counted; nothing new is allocated for that user.
    let limits = "- {users: [alice], maxresources: {memory: 10}}\n";
    let h = Harness::configured(options(&yaml(limits, "- name: a\n")), 0);
    h.submit(app_by("app-1", "root.a", "alice", &[])).unwrap();
    let mut n = node("node-r", 1000, 10);
    n.existing_allocations.push(si::Allocation {
        allocation_key: "old".into(),
        uuid: "uuid-old".into(),
        application_id: "app-1".into(),
        partition_name: "default".into(),
        queue_name: "root.a".into(),
        node_id: "node-r".into(),
        resource_per_alloc: res(&[("memory", 40), ("vcore", 1)]),
        ..Default::default()
    });
    assert_eq!(h.nodes(vec![n]).0, SICORE_OK);
    h.wait("node", |s| s.nodes_accepted.len() == 1);
    h.wait_dump("recovered usage", |d| {
        user(d, "alice").is_some_and(|u| mem(level(u, "root.a").unwrap_or(&Value::Null)) == 40)
    });
    assert_eq!(h.asks(vec![ask("app-1", "k", 1, 0, 1)]).0, SICORE_OK);
    h.settle();
    assert_eq!(h.allocs_of("app-1"), 0);
}

/// The application's entry in the state dump.
fn app_entry(d: &Value, id: &str) -> Value {
    d["partitions"][0]["applications"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["id"] == id)
        .unwrap_or_else(|| panic!("{id} in the dump"))
        .clone()
}

/// testuser may run one application (APP records on): app-1 runs and
/// holds the slot; app-2 asks and is held, its `AppCannotRunQuota` record
/// seen.
fn second_app_held_by_the_cap() -> Harness {
    let queues = "- name: default\n  limits:\n    - {users: [testuser], maxapplications: 1}\n";
    let mut o = options(&yaml("", queues));
    o.event_types = vec!["REQUEST".into(), "APP".into()];
    let h = Harness::configured(o, 1);
    h.submit(app_by("app-1", "root.default", "testuser", &[]))
        .unwrap();
    assert_eq!(h.asks(vec![ask("app-1", "k1", 10, 1, 1)]).0, SICORE_OK);
    h.wait("app-1 allocated", |s| s.allocations.len() == 1);
    h.submit(app_by("app-2", "root.default", "testuser", &[]))
        .unwrap();
    assert_eq!(h.asks(vec![ask("app-2", "k2", 10, 1, 1)]).0, SICORE_OK);
    h.wait("held record", |s| {
        s.events.iter().any(|e| e.reason == "AppCannotRunQuota")
    });
    h
}

#[test]
fn app_records_once_per_quota_transition() {
    // limits.md 6.2 / L20: an application held in Accepted by a user's
    // maxapplications gets one APP record when held and one when it may
    // run again, however many passes see it; the dump shows the state.
    let h = second_app_held_by_the_cap();
    // More passes (another user's work) see app-2 again: no repeat.
    h.submit(app_by("other", "root.default", "someone", &[]))
        .unwrap();
    assert_eq!(h.asks(vec![ask("other", "o", 10, 1, 1)]).0, SICORE_OK);
    h.wait("other allocated", |s| {
        s.allocations.iter().any(|a| a.application_id == "other")
    });
    h.settle();
    let quota = |s: &Seen| -> Vec<si::EventRecord> {
        s.events
            .iter()
            .filter(|e| e.reason.starts_with("App") && e.reason.ends_with("Quota"))
            .cloned()
            .collect()
    };
    let held = h.seen(quota);
    assert_eq!(held.len(), 1, "{held:?}");
    assert_eq!(held[0].r#type, si::event_record::Type::App as i32);
    assert_eq!(held[0].object_id, "app-2");
    assert!(
        held[0].message.contains("app-2") && held[0].message.contains("maxapplications"),
        "{:?}",
        held[0]
    );
    // Its state record of the same flush is not hidden by it.
    h.seen(|s| {
        assert!(s
            .events
            .iter()
            .any(|e| e.object_id == "app-2" && e.reason == "Accepted"));
    });
    let d = h.dump();
    assert_eq!(app_entry(&d, "app-2")["held_by_limits"], true);
    assert_eq!(app_entry(&d, "app-1")["held_by_limits"], false);
    // app-1 stops: app-2 is runnable (one record) and allocated.
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
    h.wait("app-2 allocated", |s| {
        s.allocations.iter().any(|a| a.application_id == "app-2")
    });
    h.wait("runnable record", |s| {
        s.events.iter().any(|e| e.reason == "AppRunnableQuota")
    });
    h.settle();
    let all = h.seen(quota);
    let reasons: Vec<&str> = all.iter().map(|e| e.reason.as_str()).collect();
    assert_eq!(
        reasons,
        ["AppCannotRunQuota", "AppRunnableQuota"],
        "{all:?}"
    );
    assert!(all.iter().all(|e| e.object_id == "app-2"));
    assert_eq!(app_entry(&h.dump(), "app-2")["held_by_limits"], false);
}

#[test]
fn app_records_stay_off_by_default_and_the_dump_still_shows_the_hold() {
    // A v0.12 RM gets REQUEST and NODE records by default: no APP record
    // reaches it, the dump says which application is held.
    let queues = "- name: default\n  limits:\n    - {users: ['*'], maxapplications: 1}\n";
    let h = Harness::configured(options(&yaml("", queues)), 1);
    h.submit(app_by("app-1", "root.default", "u", &[])).unwrap();
    assert_eq!(h.asks(vec![ask("app-1", "k1", 10, 1, 1)]).0, SICORE_OK);
    h.wait("app-1 allocated", |s| s.allocations.len() == 1);
    h.submit(app_by("app-2", "root.default", "u", &[])).unwrap();
    assert_eq!(h.asks(vec![ask("app-2", "k2", 10, 1, 1)]).0, SICORE_OK);
    h.wait_dump("app-2 held", |d| {
        app_entry(d, "app-2")["held_by_limits"] == true
    });
    h.settle();
    h.seen(|s| {
        assert!(
            !s.events
                .iter()
                .any(|e| e.r#type == si::event_record::Type::App as i32),
            "{:?}",
            s.events
        )
    });
}

#[test]
fn a_fits_again_record_is_not_hidden_by_the_queue_refusal_of_the_same_pass() {
    // The user cap goes while the queue's max still refuses the ask: the
    // same pass says "fits in the user quota" and "does not fit the
    // queue" for one ask. Both reach the RM, the transition once.
    let dir = temp_config_dir("limits-fits-queue");
    let queue = "- name: a\n  resources:\n    max: {memory: 50, vcore: 10}\n";
    let capped = yaml("- {users: [testuser], maxresources: {memory: 1}}\n", queue);
    let mut o = dir_options(&dir, &capped);
    o.event_flush_interval_ms = 20;
    let h = Harness::configured(o, 1);
    h.submit(app_by("app-1", "root.a", "testuser", &[]))
        .unwrap();
    assert_eq!(h.asks(vec![ask("app-1", "big", 100, 1, 1)]).0, SICORE_OK);
    h.wait("exceeds record", |s| {
        s.events.iter().any(|e| e.reason == "UserQuotaExceeded")
    });
    std::fs::write(dir.join("queues.yaml"), yaml("", queue)).unwrap();
    assert_eq!(h.reload("rm").0, SICORE_OK);
    h.wait("queue refusal after the reload", |s| {
        let fits = s
            .events
            .iter()
            .position(|e| e.reason == "UserQuotaAvailable");
        fits.is_some_and(|i| {
            s.events[i..]
                .iter()
                .any(|e| e.reason == "InsufficientQueueResources" && e.object_id == "big")
        })
    });
    h.settle();
    h.seen(|s| {
        let fits: Vec<&si::EventRecord> = s
            .events
            .iter()
            .filter(|e| e.reason == "UserQuotaAvailable")
            .collect();
        assert_eq!(fits.len(), 1, "{fits:?}");
        assert_eq!(fits[0].object_id, "big");
    });
    assert_eq!(h.allocs_of("app-1"), 0);
}

#[test]
fn users_of_one_group_share_its_cap_within_one_pass_whatever_their_own_caps() {
    // Three users of one group with work for one pass: the group's vcore
    // cap binds across them at once, while each user's own memory cap
    // (another type, at another level) binds each one; bob's leaf has no
    // user cap at all.
    let queues =
        "- name: a\n  limits:\n    - {users: ['*'], maxresources: {memory: 30}}\n- name: b\n";
    let limits = "- {groups: [dev], maxresources: {vcore: 50}}\n";
    let h = Harness::configured(options(&yaml(limits, queues)), 0);
    h.submit(app_by("app-a", "root.a", "alice", &["dev"]))
        .unwrap();
    h.submit(app_by("app-c", "root.a", "carol", &["dev"]))
        .unwrap();
    h.submit(app_by("app-b", "root.b", "bob", &["dev"]))
        .unwrap();
    for (app, key) in [("app-a", "ka"), ("app-c", "kc"), ("app-b", "kb")] {
        assert_eq!(h.asks(vec![ask(app, key, 1, 1, 1_000)]).0, SICORE_OK);
    }
    let list = (0..10)
        .map(|i| node(&format!("node-{i}"), 1000, 100))
        .collect();
    assert_eq!(h.nodes(list).0, SICORE_OK);
    h.wait("the group cap", |s| s.allocations.len() >= 50);
    h.settle();
    let (a, c, b) = (
        h.allocs_of("app-a"),
        h.allocs_of("app-c"),
        h.allocs_of("app-b"),
    );
    assert_eq!(a + b + c, 50, "group cap: {a} + {c} + {b}");
    assert!(a <= 30 && c <= 30, "user caps: {a}, {c}");
    let d = h.dump();
    let dev = group(&d, "dev").unwrap();
    let vcore = level(dev, "root").unwrap()["resourceUsage"]["vcore"].as_i64();
    assert_eq!(vcore, Some(50));
    for (name, n) in [("alice", a), ("carol", c), ("bob", b)] {
        assert_eq!(
            mem(level(user(&d, name).unwrap(), "root").unwrap()),
            n as i64
        );
    }
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
