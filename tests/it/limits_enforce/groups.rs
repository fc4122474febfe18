//! Limits: which group's limits apply to a user, by configuration order and queue.

use super::*;

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
