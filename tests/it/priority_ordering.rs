//! Priority through the C ABI (spec `policy/priority.md`): the order in
//! which the RM receives `new` allocations across queues, applications and
//! requests; `priority.offset`, `priority.policy: fence` and
//! `application.sort.priority`; the queue and application priorities in
//! the state dump and in REST; reloads that change or remove them.

use crate::common::*;
use serde_json::Value;
use sicore::ffi::*;
use sicore::proto::si::v1 as si;
use sicore::proto::sicore::v1::SchedulerOptions;

const MIN: i64 = i32::MIN as i64;

fn config(root_props: &str, queues: &str) -> String {
    format!(
        "partitions:
  - name: default
    queues:
      - name: root
        submitacl: '*'
        properties: {{{root_props}}}
        queues:
{queues}"
    )
}

fn options(yaml: &str) -> SchedulerOptions {
    let mut o = yaml_options(yaml);
    o.rest_address = "127.0.0.1:0".into();
    o
}

fn pask(app: &str, key: &str, memory: i64, priority: i32, repeat: i32) -> si::AllocationAsk {
    si::AllocationAsk {
        priority: Some(si::Priority {
            priority: Some(si::priority::Priority::PriorityValue(priority)),
        }),
        ..ask(app, key, memory, 1, repeat)
    }
}

/// Submits the applications, then sends every ask in one request and
/// returns the applications of the `n` allocations the RM receives, in
/// order.
fn run(h: &Harness, apps: &[(&str, &str)], asks: Vec<si::AllocationAsk>, n: usize) -> Vec<String> {
    for (id, queue) in apps {
        h.submit(app(id, queue)).unwrap();
    }
    assert_eq!(h.asks(asks).0, sicore_status::SICORE_OK);
    h.wait("allocations", |s| s.allocations.len() >= n);
    h.settle();
    h.seen(|s| {
        assert_eq!(s.allocations.len(), n);
        s.allocations
            .iter()
            .map(|a| a.application_id.clone())
            .collect()
    })
}

/// The same, answering with the allocation keys.
fn keys(h: &Harness) -> Vec<String> {
    h.seen(|s| {
        s.allocations
            .iter()
            .map(|a| a.allocation_key.clone())
            .collect()
    })
}

const FIFO_LEAF: &str = "          - name: a
            properties: {application.sort.policy: fifo}
";

/// PR8: in a fifo leaf, the application holding the higher priority goes
/// first; equal priorities keep submission order.
#[test]
fn applications_go_by_priority_then_submission() {
    let h = Harness::configured(options(&config("", FIFO_LEAF)), 1);
    let order = run(
        &h,
        &[
            ("app-0", "root.a"),
            ("app-1", "root.a"),
            ("app-2", "root.a"),
            ("app-3", "root.a"),
        ],
        vec![
            pask("app-0", "k0", 100, 0, 1),
            pask("app-1", "k1", 100, 5, 1),
            pask("app-2", "k2", 100, 0, 1),
            pask("app-3", "k3", 100, 4, 1),
        ],
        4,
    );
    assert_eq!(order, ["app-1", "app-3", "app-0", "app-2"]);
}

/// PR9 through the RM: priority sorting disabled on the leaf, submission
/// order wins.
#[test]
fn a_leaf_with_priority_sorting_disabled_keeps_submission_order() {
    let leaf = "          - name: a
            properties: {application.sort.policy: fifo, application.sort.priority: disabled}
";
    let h = Harness::configured(options(&config("", leaf)), 1);
    let order = run(
        &h,
        &[
            ("app-0", "root.a"),
            ("app-1", "root.a"),
            ("app-2", "root.a"),
        ],
        vec![
            pask("app-0", "k0", 100, 0, 1),
            pask("app-1", "k1", 100, 9, 1),
            pask("app-2", "k2", 100, 3, 1),
        ],
        3,
    );
    assert_eq!(order, ["app-0", "app-1", "app-2"]);
}

/// PR10 through the RM: in a fair leaf priority comes before usage.
#[test]
fn fair_leaf_orders_by_priority_before_usage() {
    let leaf = "          - name: a
            properties: {application.sort.policy: fair}
";
    let h = Harness::configured(options(&config("", leaf)), 1);
    // app-1 runs first and uses more; then both ask again.
    let first = run(
        &h,
        &[("app-0", "root.a"), ("app-1", "root.a")],
        vec![pask("app-1", "used", 300, 0, 1)],
        1,
    );
    assert_eq!(first, ["app-1"]);
    assert_eq!(
        h.asks(vec![
            pask("app-0", "k", 100, 0, 2),
            pask("app-1", "k", 100, 1, 2),
        ])
        .0,
        sicore_status::SICORE_OK
    );
    h.wait("five", |s| s.allocations.len() == 5);
    h.settle();
    let apps: Vec<String> = h.seen(|s| {
        s.allocations[1..]
            .iter()
            .map(|a| a.application_id.clone())
            .collect()
    });
    // Usage alone would pick app-0 first.
    assert_eq!(apps, ["app-1", "app-1", "app-0", "app-0"]);
}

/// Requests inside an application: priority, then age, over several
/// priorities and a re-sent ask whose priority changed (v0.12 edition:
/// the replacement counts).
#[test]
fn requests_go_by_priority_and_a_replacement_changes_it() {
    let h = Harness::configured(options(&config("", FIFO_LEAF)), 1);
    h.submit(app("app", "root.a")).unwrap();
    // Too big for the node: they wait while the replacement comes.
    assert_eq!(
        h.asks(vec![
            pask("app", "old", 2000, 1, 1),
            pask("app", "high", 2000, 50, 1),
            pask("app", "mid", 2000, 7, 1),
        ])
        .0,
        sicore_status::SICORE_OK
    );
    h.settle();
    let dump = h.dump();
    let a = &dump["partitions"][0]["applications"][0];
    assert_eq!(a["max_request_priority"], 50);
    let listed: Vec<&str> = a["pending_asks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["allocation_key"].as_str().unwrap())
        .collect();
    assert_eq!(listed, ["high", "mid", "old"]);
    // Each sent again, fitting now; "high" drops to -1.
    assert_eq!(
        h.asks(vec![
            pask("app", "high", 100, -1, 1),
            pask("app", "old", 100, 1, 1),
            pask("app", "mid", 100, 7, 1),
        ])
        .0,
        sicore_status::SICORE_OK
    );
    h.wait("three", |s| s.allocations.len() == 3);
    h.settle();
    assert_eq!(keys(&h), ["mid", "old", "high"]);
}

const TWO_LEAVES: &str = "          - name: a
          - name: b
";

/// A high-priority request lifts its queue above its siblings, however
/// fair order would go; with all priorities equal fair order decides.
#[test]
fn a_high_priority_request_puts_its_queue_first() {
    let h = Harness::configured(options(&config("", TWO_LEAVES)), 1);
    let order = run(
        &h,
        &[("in-a", "root.a"), ("in-b", "root.b")],
        vec![pask("in-a", "k", 100, 0, 3), pask("in-b", "k", 100, 7, 3)],
        6,
    );
    assert_eq!(order, ["in-b", "in-b", "in-b", "in-a", "in-a", "in-a"]);

    // Control: equal priorities alternate by fairness.
    let h = Harness::configured(options(&config("", TWO_LEAVES)), 1);
    let order = run(
        &h,
        &[("in-a", "root.a"), ("in-b", "root.b")],
        vec![pask("in-a", "k", 100, 7, 3), pask("in-b", "k", 100, 7, 3)],
        6,
    );
    assert_eq!(order, ["in-a", "in-b", "in-a", "in-b", "in-a", "in-b"]);
}

/// `priority.offset` alone reorders sibling queues (summary 2.3: what a
/// k8shim v0.12 user sees, every request at 0).
#[test]
fn an_offset_puts_a_queue_first() {
    let queues = "          - name: a
          - name: b
            properties: {priority.offset: \"10\"}
";
    let h = Harness::configured(options(&config("", queues)), 1);
    let order = run(
        &h,
        &[("in-a", "root.a"), ("in-b", "root.b")],
        vec![pask("in-a", "k", 100, 0, 3), pask("in-b", "k", 100, 0, 3)],
        6,
    );
    assert_eq!(order, ["in-b", "in-b", "in-b", "in-a", "in-a", "in-a"]);
    // A negative offset puts it last.
    let queues = "          - name: a
            properties: {priority.offset: \"-1\"}
          - name: b
";
    let h = Harness::configured(options(&config("", queues)), 1);
    let order = run(
        &h,
        &[("in-a", "root.a"), ("in-b", "root.b")],
        vec![pask("in-a", "k", 100, 0, 2), pask("in-b", "k", 100, 0, 2)],
        4,
    );
    assert_eq!(order, ["in-b", "in-b", "in-a", "in-a"]);
}

/// `fence`: a subtree competes with its siblings at exactly its offset.
#[test]
fn a_fence_hides_the_priorities_below_it() {
    let queues = |policy: &str| {
        format!(
            "          - name: p
            properties: {{priority.policy: {policy}}}
            queues:
              - name: x
          - name: y
"
        )
    };
    for (policy, want) in [
        ("fence", ["in-y", "in-y", "in-x", "in-x"]),
        ("default", ["in-x", "in-x", "in-y", "in-y"]),
    ] {
        let h = Harness::configured(options(&config("", &queues(policy))), 1);
        let order = run(
            &h,
            &[("in-x", "root.p.x"), ("in-y", "root.y")],
            vec![pask("in-x", "k", 100, 100, 2), pask("in-y", "k", 100, 1, 2)],
            4,
        );
        assert_eq!(order, want, "{policy}");
    }
}

/// `application.sort.priority: disabled` on a parent: fairness first,
/// priority only breaks ties.
#[test]
fn a_parent_with_priority_sorting_disabled_goes_by_fairness() {
    let h = Harness::configured(
        options(&config("application.sort.priority: disabled", TWO_LEAVES)),
        1,
    );
    let order = run(
        &h,
        &[("in-a", "root.a"), ("in-b", "root.b")],
        vec![pask("in-a", "k", 100, 0, 2), pask("in-b", "k", 100, 7, 2)],
        4,
    );
    // Equal usage at first: priority breaks the tie (b); then fairness.
    assert_eq!(order, ["in-b", "in-a", "in-b", "in-a"]);
}

/// The queue's priority as the dump and REST show it (REST serves a
/// snapshot a moment old: polled until it agrees with the dump).
fn priorities(h: &Harness, addr: &str, path: &str) -> (i64, i64) {
    let d = find_queue(&h.dump(), "default", path).unwrap()["current_priority"]
        .as_i64()
        .unwrap();
    let r = crate::restkit::poll("REST to catch up", || {
        let tree = crate::restkit::get_json(addr, "/ws/v1/partition/default/queues");
        let r = crate::restkit::queue_entry(&tree, path)?["currentPriority"].as_i64()?;
        (r == d).then_some(r)
    });
    (r, d)
}

/// Polls REST `path` until `check` accepts the document.
fn rest_until(addr: &str, path: &str, check: impl Fn(&Value) -> bool) -> Value {
    crate::restkit::poll(path, || {
        let v = crate::restkit::get_json(addr, path);
        check(&v).then_some(v)
    })
}

const OFFSETS: &str = "          - name: parent
            properties: {priority.offset: \"5\", key: value}
            queues:
              - name: leaf
                properties: {priority.offset: \"3\"}
";

/// PR2, PR3, PR4 as an operator sees them: queue entries carry the current
/// priority and the priority properties (v1.8 queue shape), application
/// entries the highest pending request priority; a reload that fences the
/// leaf, and one that removes every priority property, take effect at once.
#[test]
fn queue_priorities_in_rest_and_dump_follow_requests_and_reloads() {
    let dir = temp_config_dir("priority");
    let mut o = dir_options(&dir, &config("", OFFSETS));
    o.rest_address = "127.0.0.1:0".into();
    let h = Harness::configured(o, 1);
    let addr = crate::restkit::rest_address(h.sched);
    let leaf = "root.parent.leaf";
    assert_eq!(priorities(&h, &addr, leaf), (MIN, MIN));
    assert_eq!(priorities(&h, &addr, "root.parent"), (MIN, MIN));

    let tree = crate::restkit::get_json(&addr, "/ws/v1/partition/default/queues");
    let q = crate::restkit::queue_entry(&tree, leaf).unwrap();
    assert_eq!(q["prioritySorting"], true);
    assert_eq!(q["isPriorityFence"], false);
    assert_eq!(q["priorityOffset"], 3);
    // Inherited from the parent, the offset reset (PR2).
    assert_eq!(q["properties"]["key"], "value");
    assert_eq!(q["properties"]["priority.offset"], "3");
    let p = crate::restkit::queue_entry(&tree, "root.parent").unwrap();
    assert_eq!(p["priorityOffset"], 5);
    // No offset: the v1.8 entry leaves it out.
    assert!(tree.get("priorityOffset").is_none(), "{tree}");

    // Too big to fit: they stay pending.
    h.submit(app("app-1", leaf)).unwrap();
    assert_eq!(
        h.asks(vec![pask("app-1", "k", 5000, 0, 1)]).0,
        sicore_status::SICORE_OK
    );
    h.settle();
    assert_eq!(priorities(&h, &addr, leaf), (3, 3));
    assert_eq!(priorities(&h, &addr, "root.parent"), (8, 8));
    // Priority 0: omitted from the application entry, as v1.8 does.
    let apps = rest_until(&addr, "/ws/v1/apps", |a| a[0]["applicationID"] == "app-1");
    assert!(apps[0].get("maxRequestPriority").is_none(), "{apps}");
    h.submit(app("app-2", leaf)).unwrap();
    assert_eq!(
        h.asks(vec![pask("app-2", "k", 5000, 5, 1)]).0,
        sicore_status::SICORE_OK
    );
    h.settle();
    assert_eq!(priorities(&h, &addr, leaf), (8, 8));
    assert_eq!(priorities(&h, &addr, "root.parent"), (13, 13));
    assert_eq!(priorities(&h, &addr, "root"), (13, 13));
    let apps = crate::restkit::get_json(
        &addr,
        "/ws/v1/partition/default/queue/root.parent.leaf/applications",
    );
    let app2 = apps
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["applicationID"] == "app-2")
        .unwrap();
    assert_eq!(app2["maxRequestPriority"], 5);

    // PR4 after a reload: the leaf fenced at 3.
    let fenced = OFFSETS.replace(
        "{priority.offset: \"3\"}",
        "{priority.offset: \"3\", priority.policy: fence}",
    );
    std::fs::write(dir.join("queues.yaml"), config("", &fenced)).unwrap();
    let (st, msg) = h.reload("rm");
    assert_eq!(st, sicore_status::SICORE_OK, "{msg}");
    assert_eq!(priorities(&h, &addr, leaf), (3, 3));
    assert_eq!(priorities(&h, &addr, "root.parent"), (8, 8));
    let tree = rest_until(&addr, "/ws/v1/partition/default/queues", |t| {
        crate::restkit::queue_entry(t, leaf).is_some_and(|q| q["isPriorityFence"] == true)
    });
    assert_eq!(
        crate::restkit::queue_entry(&tree, leaf).unwrap()["priorityOffset"],
        3
    );
    let d = find_queue(&h.dump(), "default", leaf).unwrap();
    assert_eq!(d["priority_fence"], true);
    assert_eq!(d["priority_offset"], 3);

    // Every priority property removed: no stale value (priority.md Q1).
    std::fs::write(
        dir.join("queues.yaml"),
        config(
            "",
            "          - name: parent\n            queues:\n              - name: leaf\n",
        ),
    )
    .unwrap();
    let (st, msg) = h.reload("rm");
    assert_eq!(st, sicore_status::SICORE_OK, "{msg}");
    assert_eq!(priorities(&h, &addr, leaf), (5, 5));
    assert_eq!(priorities(&h, &addr, "root.parent"), (5, 5));
    let tree = rest_until(&addr, "/ws/v1/partition/default/queues", |t| {
        crate::restkit::queue_entry(t, leaf).is_some_and(|q| q["isPriorityFence"] == false)
    });
    let q = crate::restkit::queue_entry(&tree, leaf).unwrap();
    assert!(q.get("priorityOffset").is_none(), "{q}");
    assert!(q["properties"].get("priority.offset").is_none(), "{q}");

    // Both applications' requests withdrawn: no priority anywhere.
    let all = |app: &str| si::AllocationAskRelease {
        partition_name: "default".into(),
        application_id: app.into(),
        termination_type: si::TerminationType::StoppedByRm as i32,
        ..Default::default()
    };
    assert_eq!(
        h.releases(vec![], vec![all("app-1"), all("app-2")]).0,
        sicore_status::SICORE_OK
    );
    h.settle();
    assert_eq!(priorities(&h, &addr, leaf), (MIN, MIN));
    assert_eq!(priorities(&h, &addr, "root.parent"), (MIN, MIN));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A reload that adds an offset reorders the queues the RM is served from
/// on the next pass.
#[test]
fn a_reloaded_offset_reorders_pending_work() {
    let dir = temp_config_dir("priority-reload");
    let h = Harness::configured(dir_options(&dir, &config("", TWO_LEAVES)), 0);
    h.submit(app("in-a", "root.a")).unwrap();
    h.submit(app("in-b", "root.b")).unwrap();
    // No node yet: everything waits.
    assert_eq!(
        h.asks(vec![
            pask("in-a", "k", 100, 0, 2),
            pask("in-b", "k", 100, 0, 2)
        ])
        .0,
        sicore_status::SICORE_OK
    );
    let queues = "          - name: a
          - name: b
            properties: {priority.offset: \"1\"}
";
    std::fs::write(dir.join("queues.yaml"), config("", queues)).unwrap();
    let (st, msg) = h.reload("rm");
    assert_eq!(st, sicore_status::SICORE_OK, "{msg}");
    assert_eq!(
        h.nodes(vec![node("node-0", 1000, 10)]).0,
        sicore_status::SICORE_OK
    );
    h.wait("four", |s| s.allocations.len() == 4);
    h.settle();
    let order: Vec<String> = h.seen(|s| {
        s.allocations
            .iter()
            .map(|a| a.application_id.clone())
            .collect()
    });
    assert_eq!(order, ["in-b", "in-b", "in-a", "in-a"]);
    let _ = std::fs::remove_dir_all(&dir);
}
