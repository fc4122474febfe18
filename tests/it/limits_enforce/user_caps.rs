//! Limits: resource caps of users and groups, within one pass and with recovered allocations.

use super::*;

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
