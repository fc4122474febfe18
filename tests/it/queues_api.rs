//! Queues through the C ABI: ACLs (spec 4), quotas and headroom (3.3),
//! `maxapplications` (YuniKorn v1.2 semantics) and hot reload (2.8, 3.7).

use std::time::Duration;

use crate::common::*;
use sicore::ffi::sicore_status::*;
use sicore::proto::si::v1 as si;

fn remove(id: &str) -> si::RemoveApplicationRequest {
    si::RemoveApplicationRequest {
        application_id: id.into(),
        partition_name: "default".into(),
    }
}

// ---------------------------------------------------------------- ACLs

/// The table of spec 4.2 as submit ACLs on `root.q` (root has no ACL):
/// (acl, user, groups, allowed).
#[test]
fn acl_matrix() {
    let table: &[(&str, &str, &[&str], bool)] = &[
        ("", "alice", &[], false),
        ("*", "anyone", &[], true),
        (" *", "anyone", &[], true),
        ("* ", "anyone", &[], true),
        ("alice,bob", "alice", &[], true),
        ("alice,bob", "bob", &["x"], true),
        ("alice,bob", "carol", &[], false),
        ("alice,bob dev,ops", "carol", &["qa", "ops"], true),
        ("alice,bob dev,ops", "carol", &["qa"], false),
        (" dev", "carol", &["dev"], true),
        (" dev", "alice", &[], false),
        // a user without groups is in a group named like the user
        (" carol", "carol", &[], true),
        ("alice ", "alice", &[], true),
        ("alice *", "anyone", &[], true),
        ("alice,* dev", "alice", &[], true),
        ("alice,* dev", "carol", &[], false),
        // matching is case-sensitive
        ("alice", "Alice", &[], false),
    ];
    for (i, (acl, user, groups, allowed)) in table.iter().enumerate() {
        let yaml = format!(
            "partitions:\n  - queues:\n      - name: root\n        queues:\n          - name: q\n            submitacl: \"{acl}\"\n"
        );
        let h = Harness::configured(yaml_options(&yaml), 0);
        let id = format!("app-{i}");
        let r = h.submit(app_by(&id, "root.q", user, groups));
        if *allowed {
            assert_eq!(r, Ok(()), "{acl:?} {user} {groups:?}");
        } else {
            assert_eq!(
                r.unwrap_err(),
                format!("failed to find queue root.q for application {id}"),
                "{acl:?} {user} {groups:?}"
            );
        }
    }
    // two spaces: rejected when the configuration is read
    let (st, msg) = Harness::new(yaml_options(
        "partitions:\n  - queues:\n      - name: root\n        queues:\n          - name: q\n            submitacl: \"alice  dev\"\n",
    ))
    .register("rm", "queues");
    assert_eq!(st, SICORE_REJECTED);
    assert!(
        msg.contains("multiple spaces found in ACL: 'alice  dev'"),
        "{msg}"
    );
}

#[test]
fn access_is_the_union_of_submit_and_admin_acls_up_to_root() {
    let yaml = r#"
partitions:
  - queues:
      - name: root
        adminacl: "boss"
        queues:
          - name: p
            submitacl: " devs"
            queues:
              - name: leaf
                submitacl: "alice"
          - name: other
            adminacl: "ops-user"
"#;
    let h = Harness::configured(yaml_options(yaml), 0);
    assert_eq!(h.submit(app_by("a1", "root.p.leaf", "alice", &[])), Ok(()));
    assert_eq!(
        h.submit(app_by("a2", "root.p.leaf", "dan", &["devs"])),
        Ok(())
    );
    assert_eq!(h.submit(app_by("a3", "root.p.leaf", "boss", &[])), Ok(()));
    assert_eq!(
        h.submit(app_by("a4", "root.other", "ops-user", &[])),
        Ok(())
    );
    assert!(h.submit(app_by("a5", "root.other", "alice", &[])).is_err());
    assert!(h
        .submit(app_by("a6", "root.p.leaf", "eve", &["ops"]))
        .is_err());
}

// ---------------------------------------------------------------- quotas

const QUOTAS: &str = r#"
partitions:
  - queues:
      - name: root
        submitacl: "*"
        queues:
          - name: small
            resources: {max: {memory: 300}}
          - name: team
            resources: {guaranteed: {memory: 200}, max: {memory: 500, vcore: 4}}
            queues:
              - name: x
              - name: y
                resources: {max: {memory: 400}}
"#;

fn assert_within_max(d: &serde_json::Value) {
    fn walk(q: &serde_json::Value) {
        if let Some(max) = q["max"].as_object() {
            for (k, v) in max {
                let used = q["allocated"][k].as_i64().unwrap_or(0);
                assert!(
                    used <= v.as_i64().unwrap(),
                    "{} {k}: {used} > {v}",
                    q["path"]
                );
            }
        }
        for c in q["children"].as_array().unwrap() {
            walk(c);
        }
    }
    walk(&d["partitions"][0]["root"]);
}

#[test]
fn leaf_max_stops_allocations_with_several_applications() {
    let h = Harness::configured(yaml_options(QUOTAS), 2);
    for id in ["s1", "s2", "s3"] {
        assert_eq!(h.submit(app(id, "root.small")), Ok(()));
    }
    assert_eq!(
        h.asks(vec![
            ask("s1", "k1", 100, 1, 2),
            ask("s2", "k2", 100, 1, 2),
            ask("s3", "k3", 100, 1, 2),
        ])
        .0,
        SICORE_OK
    );
    h.wait("three allocations", |s| s.allocations.len() == 3);
    h.settle();
    assert_eq!(h.seen(|s| s.allocations.len()), 3, "never past the max");
    let d = h.dump();
    assert_within_max(&d);
    assert_eq!(
        find_queue(&d, "default", "root.small").unwrap()["allocated"]["memory"],
        300
    );
    assert_eq!(
        find_queue(&d, "default", "root.small").unwrap()["pending"]["memory"],
        300
    );
}

#[test]
fn parent_max_bounds_its_children() {
    let h = Harness::configured(yaml_options(QUOTAS), 2);
    for (id, q) in [
        ("x1", "root.team.x"),
        ("x2", "root.team.x"),
        ("y1", "root.team.y"),
    ] {
        assert_eq!(h.submit(app(id, q)), Ok(()));
    }
    assert_eq!(
        h.asks(vec![
            ask("x1", "k", 100, 1, 5),
            ask("x2", "k", 50, 0, 5),
            ask("y1", "k", 100, 1, 5),
        ])
        .0,
        SICORE_OK
    );
    h.settle();
    h.settle();
    let d = h.dump();
    assert_within_max(&d);
    let team = find_queue(&d, "default", "root.team").unwrap();
    // vcore max 4 and memory max 500 both bind
    assert!(team["allocated"]["vcore"].as_i64().unwrap() <= 4);
    assert!(team["allocated"]["memory"].as_i64().unwrap() <= 500);
    let total: i64 = h.seen(|s| {
        s.allocations
            .iter()
            .map(|a| a.resource_per_alloc.as_ref().unwrap().resources["memory"].value)
            .sum()
    });
    assert_eq!(total, team["allocated"]["memory"].as_i64().unwrap());
    // nothing more fits: 4 vcore asks used; only 50-memory/0-vcore asks remain
    assert!(total >= 450, "allocated {total}");
}

// ---------------------------------------------------------------- maxapplications

#[test]
fn maxapplications_holds_applications_in_accepted() {
    let yaml = r#"
partitions:
  - queues:
      - name: root
        submitacl: "*"
        queues:
          - name: one
            maxapplications: 1
          - name: pair
            maxapplications: 2
            queues: [{name: a}, {name: b}]
"#;
    let mut o = yaml_options(yaml);
    o.app_completing_timeout_ms = Some(50);
    let h = Harness::configured(o, 1);
    for (id, q) in [("o1", "root.one"), ("o2", "root.one")] {
        assert_eq!(h.submit(app(id, q)), Ok(()));
    }
    assert_eq!(h.asks(vec![ask("o1", "k", 10, 0, 1)]).0, SICORE_OK);
    h.wait("o1 allocated", |s| s.allocations.len() == 1);
    assert_eq!(h.asks(vec![ask("o2", "k", 10, 0, 1)]).0, SICORE_OK);
    h.settle();
    assert_eq!(h.allocs_of("o2"), 0, "o2 waits while o1 runs");
    let state = |id: &str| {
        h.dump()["partitions"][0]["applications"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["id"] == id)
            .map(|a| a["state"].as_str().unwrap().to_string())
    };
    assert_eq!(state("o2").as_deref(), Some("Accepted"));
    // o1 finishes: release its allocation; it completes, o2 starts
    let uuid = h.seen(|s| s.allocations[0].uuid.clone());
    let rel = si::AllocationRelease {
        partition_name: "default".into(),
        application_id: "o1".into(),
        uuid,
        termination_type: si::TerminationType::StoppedByRm as i32,
        message: String::new(),
    };
    assert_eq!(h.releases(vec![rel], vec![]).0, SICORE_OK);
    h.wait("o2 allocated", |s| {
        s.allocations.iter().any(|a| a.application_id == "o2")
    });
    assert_eq!(state("o1"), None, "o1 completed and left");

    // parent limit across two leaves
    for (id, q) in [
        ("p1", "root.pair.a"),
        ("p2", "root.pair.b"),
        ("p3", "root.pair.a"),
    ] {
        assert_eq!(h.submit(app(id, q)), Ok(()));
    }
    assert_eq!(
        h.asks(vec![
            ask("p1", "k", 10, 0, 1),
            ask("p2", "k", 10, 0, 1),
            ask("p3", "k", 10, 0, 1),
        ])
        .0,
        SICORE_OK
    );
    h.wait("two running", |s| {
        s.allocations
            .iter()
            .filter(|a| a.application_id.starts_with('p'))
            .count()
            == 2
    });
    h.settle();
    assert_eq!(h.allocs_of("p3"), 0);
    assert_eq!(state("p3").as_deref(), Some("Accepted"));
    // removing a running one lets the next start
    assert_eq!(h.apps(vec![], vec![remove("p1")]).0, SICORE_OK);
    h.wait("p3 allocated", |s| {
        s.allocations.iter().any(|a| a.application_id == "p3")
    });
    // a running application keeps getting allocations at the limit
    assert_eq!(h.asks(vec![ask("p2", "more", 10, 0, 2)]).0, SICORE_OK);
    h.wait("p2 more", |s| {
        s.allocations
            .iter()
            .filter(|a| a.application_id == "p2")
            .count()
            == 3
    });
}

#[test]
fn an_application_that_never_ran_takes_no_maxapplications_slot() {
    let yaml = r#"
partitions:
  - queues:
      - name: root
        submitacl: "*"
        queues:
          - name: one
            maxapplications: 1
"#;
    let mut o = yaml_options(yaml);
    o.app_completing_timeout_ms = Some(60_000);
    let h = Harness::configured(o, 1);
    let queue = |h: &Harness| find_queue(&h.dump(), "default", "root.one").unwrap();
    assert_eq!(h.submit(app("w1", "root.one")), Ok(()));
    assert_eq!(h.submit(app("o2", "root.one")), Ok(()));
    // w1 asks for more than the node has, then withdraws: the state machine
    // moves it to Completing although it never held anything.
    assert_eq!(h.asks(vec![ask("w1", "big", 5000, 0, 1)]).0, SICORE_OK);
    let rel = si::AllocationAskRelease {
        application_id: "w1".into(),
        partition_name: "default".into(),
        allocationkey: "big".into(),
        ..Default::default()
    };
    assert_eq!(h.releases(vec![], vec![rel]).0, SICORE_OK);
    assert_eq!(queue(&h)["active_applications"], 0);
    // The single slot is still free for o2.
    assert_eq!(h.asks(vec![ask("o2", "k", 10, 0, 1)]).0, SICORE_OK);
    h.wait("o2 allocated", |s| {
        s.allocations.iter().any(|a| a.application_id == "o2")
    });
    let q = queue(&h);
    assert_eq!(q["active_applications"], 1);
    assert_eq!(q["max_applications"], 1);
}

// ---------------------------------------------------------------- reload

fn reload_config(max: &str, extra: &str) -> String {
    format!(
        r#"
partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: a
{max}          - name: b
{extra}"#
    )
}

fn ok_reload(h: &Harness, dir: &std::path::Path, yaml: &str) {
    std::fs::write(dir.join("queues.yaml"), yaml).unwrap();
    let (st, msg) = h.reload("rm");
    assert_eq!(st, SICORE_OK, "{msg}");
}

#[test]
fn reload_raises_and_lowers_limits_while_applications_run() {
    let dir = temp_config_dir("limits");
    let max = |m: i64| format!("            resources: {{max: {{memory: {m}}}}}\n");
    let h = Harness::configured(dir_options(&dir, &reload_config(&max(200), "")), 1);
    assert_eq!(h.submit(app("a1", "root.a")), Ok(()));
    assert_eq!(h.asks(vec![ask("a1", "k", 100, 1, 6)]).0, SICORE_OK);
    h.wait("two", |s| s.allocations.len() == 2);
    h.settle();
    assert_eq!(h.allocs_of("a1"), 2);
    // raised: pending asks run right after the reload
    ok_reload(&h, &dir, &reload_config(&max(400), ""));
    h.wait("four", |s| s.allocations.len() == 4);
    h.settle();
    assert_eq!(h.allocs_of("a1"), 4);
    // lowered below what is allocated: nothing new, even after a release
    ok_reload(&h, &dir, &reload_config(&max(250), ""));
    let uuid = h.seen(|s| s.allocations[0].uuid.clone());
    let rel = si::AllocationRelease {
        partition_name: "default".into(),
        application_id: "a1".into(),
        uuid,
        termination_type: si::TerminationType::StoppedByRm as i32,
        message: String::new(),
    };
    assert_eq!(h.releases(vec![rel], vec![]).0, SICORE_OK);
    h.wait("release", |s| s.released.len() == 1);
    h.settle();
    assert_eq!(h.allocs_of("a1"), 4, "300 allocated, max 250");
    let a = find_queue(&h.dump(), "default", "root.a").unwrap();
    assert_eq!(a["max"]["memory"], 250);
    assert_eq!(a["allocated"]["memory"], 300);
    // a removed limit is cleared: the rest runs
    ok_reload(&h, &dir, &reload_config("", ""));
    h.wait("all six", |s| s.allocations.len() == 6);
    assert!(find_queue(&h.dump(), "default", "root.a").unwrap()["max"].is_null());
}

#[test]
fn reload_drains_removed_queues() {
    let dir = temp_config_dir("drain");
    let mut o = dir_options(&dir, &reload_config("", ""));
    // Removed queues go when the queue cleaner runs (spec 3.7).
    o.queue_cleaner_interval_ms = Some(200);
    let h = Harness::configured(o, 1);
    assert_eq!(h.submit(app("b1", "root.b")), Ok(()));
    assert_eq!(h.asks(vec![ask("b1", "k", 100, 1, 1)]).0, SICORE_OK);
    h.wait("b1", |s| s.allocations.len() == 1);
    // b is gone from the config
    let without_b = "\npartitions:\n  - queues:\n      - name: root\n        submitacl: \"*\"\n        queues: [{name: a}]\n";
    ok_reload(&h, &dir, without_b);
    let b = find_queue(&h.dump(), "default", "root.b").unwrap();
    assert_eq!(b["state"], "Draining");
    // no new applications
    assert_eq!(
        h.submit(app("b2", "root.b")).unwrap_err(),
        "queue root.b is draining, it does not accept new application b2"
    );
    // existing ones keep running and scheduling
    assert_eq!(h.asks(vec![ask("b1", "k2", 100, 1, 1)]).0, SICORE_OK);
    h.wait("b1 again", |s| s.allocations.len() == 2);
    // back in the config: Active again
    ok_reload(&h, &dir, &reload_config("", ""));
    assert_eq!(
        find_queue(&h.dump(), "default", "root.b").unwrap()["state"],
        "Active"
    );
    // removed again; once its last application leaves, the cleaner
    // removes the queue
    ok_reload(&h, &dir, without_b);
    assert_eq!(h.apps(vec![], vec![remove("b1")]).0, SICORE_OK);
    h.wait_dump("root.b removed", |d| {
        find_queue(d, "default", "root.b").is_none()
    });
    // an empty queue removed by a reload drains until the cleaner runs
    ok_reload(
        &h,
        &dir,
        "\npartitions:\n  - queues:\n      - name: root\n        submitacl: \"*\"\n",
    );
    h.wait_dump("root.a removed", |d| {
        find_queue(d, "default", "root.a").is_none()
    });
}

#[test]
fn invalid_reload_keeps_the_old_configuration() {
    let dir = temp_config_dir("invalid");
    let good = reload_config("            resources: {max: {memory: 200}}\n", "");
    let h = Harness::configured(dir_options(&dir, &good), 1);
    let before = h.dump();
    for (bad, needle) in [
        ("partitions: [", "failed to parse configuration"),
        (
            "partitions:\n  - queues: [{name: root, queues: [{name: a, resources: {max: {memory: 100}}}, {name: a}]}]\n",
            "duplicate child name found with name a",
        ),
        (
            "partitions:\n  - placementrules: [{name: bogus}]\n    queues: [{name: root}]\n",
            "unknown rule name specified bogus",
        ),
    ] {
        std::fs::write(dir.join("queues.yaml"), bad).unwrap();
        let (st, msg) = h.reload("rm");
        assert_eq!(st, SICORE_REJECTED, "{bad}");
        assert!(msg.contains(needle), "{msg}");
        assert!(msg.contains("configuration reload for RM rm failed"), "{msg}");
    }
    std::fs::remove_file(dir.join("queues.yaml")).unwrap();
    let (st, msg) = h.reload("rm");
    assert_eq!(st, SICORE_REJECTED);
    assert!(msg.contains("queues.yaml"), "{msg}");
    let after = h.dump();
    assert_eq!(before["rms"], after["rms"], "checksum and source unchanged");
    assert_eq!(
        before["partitions"][0]["root"],
        after["partitions"][0]["root"]
    );
    // the old limit is still enforced
    assert_eq!(h.submit(app("a1", "root.a")), Ok(()));
    assert_eq!(h.asks(vec![ask("a1", "k", 100, 1, 4)]).0, SICORE_OK);
    h.wait("two", |s| s.allocations.len() == 2);
    h.settle();
    assert_eq!(h.allocs_of("a1"), 2);
    // unknown cluster id
    let (st, msg) = h.reload("nobody");
    assert_eq!(st, SICORE_REJECTED);
    assert_eq!(
        msg,
        "failed to reload configuration, because RM nobody is unknown to the scheduler"
    );
}

#[test]
fn reload_rejects_turning_a_busy_leaf_into_a_parent() {
    let dir = temp_config_dir("busy");
    let h = Harness::configured(dir_options(&dir, &reload_config("", "")), 0);
    assert_eq!(h.submit(app("a1", "root.a")), Ok(()));
    std::fs::write(
        dir.join("queues.yaml"),
        "partitions:\n  - queues: [{name: root, submitacl: \"*\", queues: [{name: a, queues: [{name: c}]}, {name: n}]}]\n",
    )
    .unwrap();
    let (st, msg) = h.reload("rm");
    assert_eq!(st, SICORE_REJECTED);
    assert!(
        msg.contains("queue root.a has applications and cannot become a parent queue"),
        "{msg}"
    );
    // nothing half-applied: the new queue n did not appear
    assert!(find_queue(&h.dump(), "default", "root.n").is_none());
}

/// Spec 16 Q19-4.
#[test]
fn reload_reapplies_properties_node_policy_and_adopts_dynamic_queues() {
    let dir = temp_config_dir("props");
    let v1 = "partitions:\n  - placementrules: [{name: provided, create: true}]\n    queues:\n      - name: root\n        submitacl: \"*\"\n        queues: [{name: a}]\n";
    let h = Harness::configured(dir_options(&dir, v1), 0);
    assert_eq!(
        h.nodes(vec![node("n1", 1000, 10), node("n2", 1000, 10)]).0,
        SICORE_OK
    );
    h.wait("nodes", |s| s.nodes_accepted.len() == 2);
    assert_eq!(h.submit(app("d1", "root.dyn")), Ok(()));
    assert_eq!(
        find_queue(&h.dump(), "default", "root.dyn").unwrap()["managed"],
        false
    );
    assert_eq!(h.dump()["partitions"][0]["node_sort_policy"], "fair");
    let v2 = "partitions:\n  - placementrules: [{name: provided, create: true}]\n    nodesortpolicy: {type: binpacking}\n    queues:\n      - name: root\n        submitacl: \"*\"\n        properties: {application.sort.policy: fair}\n        queues: [{name: a}, {name: dyn}, {name: fresh}]\n";
    ok_reload(&h, &dir, v2);
    let d = h.dump();
    assert_eq!(d["partitions"][0]["node_sort_policy"], "binpacking");
    let q = |p: &str| find_queue(&d, "default", p).unwrap();
    assert_eq!(q("root.a")["sort_policy"], "fair", "inherited on reload");
    assert_eq!(
        q("root.dyn")["managed"],
        true,
        "a listed dynamic queue becomes managed"
    );
    assert_eq!(q("root.fresh")["state"], "Active");
    // binpacking: four allocations all on one node
    assert_eq!(h.submit(app("a1", "root.a")), Ok(()));
    assert_eq!(h.asks(vec![ask("a1", "k", 100, 1, 4)]).0, SICORE_OK);
    h.wait("four", |s| s.allocations.len() == 4);
    h.seen(|s| {
        let first = &s.allocations[0].node_id;
        assert!(
            s.allocations.iter().all(|a| &a.node_id == first),
            "{:?}",
            s.allocations
        );
    });
    // and back: fair spreads
    ok_reload(&h, &dir, v1);
    assert_eq!(h.dump()["partitions"][0]["node_sort_policy"], "fair");
    assert_eq!(
        find_queue(&h.dump(), "default", "root.a").unwrap()["sort_policy"],
        "fifo"
    );
}

#[test]
fn reload_adds_and_removes_partitions() {
    let dir = temp_config_dir("parts");
    let both = "partitions:\n  - name: default\n    queues: [{name: root, submitacl: \"*\", queues: [{name: a}]}]\n  - name: gpu\n    queues: [{name: root, submitacl: \"*\", queues: [{name: g}]}]\n";
    let only_default = "partitions:\n  - name: default\n    queues: [{name: root, submitacl: \"*\", queues: [{name: a}]}]\n";
    let h = Harness::configured(dir_options(&dir, only_default), 0);
    ok_reload(&h, &dir, both);
    assert!(find_queue(&h.dump(), "gpu", "root.g").is_some());
    assert_eq!(h.nodes(vec![node_in("gn", "gpu", 1000, 10)]).0, SICORE_OK);
    h.wait("node", |s| s.nodes_accepted.len() == 1);
    let mut g = app("g1", "root.g");
    g.partition_name = "gpu".into();
    assert_eq!(h.submit(g), Ok(()));
    let mut k = ask("g1", "k", 100, 1, 1);
    k.partition_name = "gpu".into();
    assert_eq!(h.asks(vec![k]).0, SICORE_OK);
    h.wait("alloc", |s| s.allocations.len() == 1);
    // the partition goes: its application fails, its nodes are dropped
    ok_reload(&h, &dir, only_default);
    h.wait("g1 failed", |s| {
        s.app_updates
            .iter()
            .any(|u| u.application_id == "g1" && u.state == "Failed")
    });
    h.seen(|s| {
        let failing = s
            .app_updates
            .iter()
            .find(|u| u.application_id == "g1" && u.state == "Failing")
            .expect("Failing first");
        assert_eq!(failing.message, "PartitionRemoved");
    });
    let d = h.dump();
    assert_eq!(d["partitions"].as_array().unwrap().len(), 1);
    let mut g2 = app("g2", "root.g");
    g2.partition_name = "gpu".into();
    assert!(h
        .submit(g2)
        .unwrap_err()
        .contains("partition doesn't exist"));
    std::thread::sleep(Duration::from_millis(10));
}
