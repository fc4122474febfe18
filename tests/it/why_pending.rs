//! Why is it pending (issue 31, docs/why-pending.md): an RM of each
//! edition makes an ask wait for one cause at a time and reads the reason
//! back from REST (`pendingReason`, `allocationLog`, the grouped
//! `/partition/{p}/pending`) and from the state dump.

use crate::common::editions::{req, req_p, Edition, EditionRm};
use crate::common::partition_yaml;
use crate::restkit::{http, poll, rest_address};
use serde_json::Value;

/// A partition (preemption off unless `switch` says so) with `queues`.
fn yaml(switch: &str, queues: &str) -> String {
    partition_yaml(switch, queues)
}

/// The pending request `key` of `app` as REST shows it, once present.
fn request(rm: &EditionRm, app: &str, key: &str) -> Option<Value> {
    let addr = rest_address(rm.sched());
    let r = http(
        &addr,
        "GET",
        &format!("/ws/v1/partition/default/application/{app}"),
        &[],
        b"",
    );
    if r.status != 200 {
        return None;
    }
    r.json()["requests"]
        .as_array()?
        .iter()
        .find(|q| q["allocationKey"] == key)
        .cloned()
}

/// The waiting request `key` of `app` on the v0.12 route `/ws/v1/apps`.
fn v012_request(rm: &EditionRm, app: &str, key: &str) -> Option<Value> {
    let r = http(&rest_address(rm.sched()), "GET", "/ws/v1/apps", &[], b"");
    assert_eq!(r.status, 200);
    let apps = r.json();
    let a = apps
        .as_array()?
        .iter()
        .find(|a| a["applicationID"] == app)?;
    a["requests"]
        .as_array()?
        .iter()
        .find(|q| q["allocationKey"] == key)
        .cloned()
}

/// Waits until request `key` of `app` waits for `cause` and `ok` holds
/// on its `pendingReason`; returns the request.
fn wait_cause(
    rm: &EditionRm,
    app: &str,
    key: &str,
    cause: &str,
    ok: impl Fn(&Value) -> bool,
) -> Value {
    let last = std::cell::RefCell::new(None);
    let what = format!("{app}/{key} pending for {cause}");
    let found = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        poll(&what, || {
            let r = request(rm, app, key);
            *last.borrow_mut() = r.clone();
            r.filter(|r| r["pendingReason"]["cause"] == cause && ok(&r["pendingReason"]))
        })
    }));
    found.unwrap_or_else(|_| panic!("{what}: last seen {:?}", last.borrow()))
}

/// The dump's reason of ask `key`.
fn dump_reason(rm: &EditionRm, key: &str) -> Value {
    fn find(v: &Value, key: &str) -> Option<Value> {
        match v {
            Value::Object(m) => {
                if m.get("allocation_key").is_some_and(|k| k == key) {
                    if let Some(r) = m.get("pending_reason") {
                        return Some(r.clone());
                    }
                }
                m.values().find_map(|c| find(c, key))
            }
            Value::Array(a) => a.iter().find_map(|c| find(c, key)),
            _ => None,
        }
    }
    find(&rm.dump(), key).unwrap_or(Value::Null)
}

/// Waits for the REQUEST record saying why `key` of `app` waits.
fn record(rm: &EditionRm, app: &str, key: &str, line: &str) {
    let want = format!("Request '{key}' waits: {line}");
    rm.wait_event(&want, |e| {
        e.object == key && e.app == app && e.message == want
    });
}

/// `/partition/default/pending`; its group counts add up to the waiting
/// asks, which are the asks REST lists as requests.
fn grouped(rm: &EditionRm) -> Value {
    let addr = rest_address(rm.sched());
    let r = http(&addr, "GET", "/ws/v1/partition/default/pending", &[], b"");
    assert_eq!(r.status, 200, "{}", r.body);
    let g = r.json();
    let sum: u64 = g["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["asks"].as_u64().unwrap())
        .sum();
    assert_eq!(Some(sum), g["waitingAsks"].as_u64(), "{g}");
    g
}

/// The group of `/pending` holding `key`.
fn group_of<'a>(g: &'a Value, key: &str) -> &'a Value {
    g["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| {
            x["requests"]
                .as_array()
                .unwrap()
                .iter()
                .any(|r| r["allocationKey"] == key)
        })
        .unwrap_or_else(|| panic!("{key} in no group: {g}"))
}

fn log_has(r: &Value, message: &str) -> bool {
    r["allocationLog"].as_array().is_some_and(|l| {
        l.iter()
            .any(|e| e["message"] == message && e["count"].as_u64() >= Some(1))
    })
}

const QUEUE_A: &str = "          - name: a
            resources: {max: {memory: 1000}}
          - name: b
";

fn queue_headroom(e: Edition) {
    let rm = EditionRm::with_rest(e, &yaml("", QUEUE_A), &[]);
    rm.nodes(&[("n1", 4000)], 100);
    rm.fill("app-1", "root.a", &[req("f", 800, 1)], 1);
    rm.request("app-1", &[req("big", 500, 1)]);
    let r = wait_cause(&rm, "app-1", "big", "queueHeadroom", |_| true);
    let p = &r["pendingReason"];
    assert_eq!(p["queue"], "root.a", "{r}");
    assert_eq!(p["resource"], "memory", "{r}");
    assert_eq!(p["asked"], 500, "{r}");
    assert_eq!(p["free"], 200, "{r}");
    assert_eq!(
        p["message"], "queue root.a at max memory: asked 500, free 200",
        "{r}"
    );
    assert!(log_has(&r, "Not enough queue quota"), "{r}");
    assert_eq!(r["schedulingAttempted"], true);
    assert_eq!(dump_reason(&rm, "big")["cause"], "queueHeadroom");
    assert_eq!(dump_reason(&rm, "big")["queue"], "root.a");
    // The v0.12 route's application carries the same reason.
    let old = v012_request(&rm, "app-1", "big").expect("the v0.12 apps route lists the ask");
    // (Read later than `r`: the counts of passes may have moved.)
    for field in [
        "cause", "queue", "resource", "asked", "free", "message", "since",
    ] {
        assert_eq!(old["pendingReason"][field], p[field], "{field}: {old}");
    }
    assert!(log_has(&old, "Not enough queue quota"), "{old}");
    assert_eq!(old["resource"], "[memory:500 vcore:1]", "{old}");
    assert_eq!(old["priority"], "0", "{old}");
    assert_eq!(old["pendingCount"], 1, "{old}");
    let g = grouped(&rm);
    let group = group_of(&g, "big");
    assert_eq!(group["group"], "queueHeadroom root.a memory", "{g}");
    assert_eq!(group["asks"], 1);
    record(
        &rm,
        "app-1",
        "big",
        "queue root.a at max memory: asked 500, free 200",
    );
}

#[test]
fn queue_headroom_names_the_queue() {
    queue_headroom(Edition::V012);
}

#[test]
fn queue_headroom_names_the_queue_v1() {
    queue_headroom(Edition::V1);
}

fn user_limit(e: Edition) {
    let queues = "          - name: a
            limits:
              - {limit: per-user, users: [alice], maxresources: {memory: 1000}}
";
    let rm = EditionRm::with_rest(e, &yaml("", queues), &[]);
    rm.nodes(&[("n1", 4000)], 100);
    rm.fill("app-1", "root.a", &[req("f", 700, 1)], 1);
    rm.request("app-1", &[req("more", 500, 1)]);
    let r = wait_cause(&rm, "app-1", "more", "userLimit", |_| true);
    let p = &r["pendingReason"];
    assert_eq!(p["scope"], "user", "{r}");
    assert_eq!(p["name"], "alice", "{r}");
    assert_eq!(p["queue"], "root.a", "{r}");
    assert_eq!(p["free"], 300, "{r}");
    assert!(log_has(&r, "Not enough user quota"), "{r}");
    assert_eq!(dump_reason(&rm, "more")["name"], "alice");
    record(
        &rm,
        "app-1",
        "more",
        "user alice at its limit in queue root.a: asked memory 500, free 300",
    );
}

#[test]
fn user_limit_names_the_user() {
    user_limit(Edition::V012);
}

#[test]
fn user_limit_names_the_user_v1() {
    user_limit(Edition::V1);
}

fn nodes_short_and_refused(e: Edition) {
    let rm = EditionRm::with_rest(e, &yaml("", "          - name: a\n"), &["n4", "n5"]);
    rm.nodes(
        &[
            ("n1", 100),
            ("n2", 100),
            ("n3", 100),
            ("n4", 1000),
            ("n5", 1000),
        ],
        100,
    );
    rm.submit("app-1", "root.a");
    rm.request("app-1", &[req("x", 500, 1)]);
    let r = wait_cause(&rm, "app-1", "x", "nodes", |_| true);
    let p = &r["pendingReason"];
    let nodes = &p["nodes"];
    assert_eq!(nodes["total"], 5, "{r}");
    assert_eq!(nodes["examined"], 5, "{r}");
    assert_eq!(nodes["insufficient"]["memory"], 3, "{r}");
    assert_eq!(nodes["refused"], 2, "{r}");
    let text = match e {
        Edition::V012 => "node refused by the test RM",
        Edition::V1 => "port 8080 in use",
    };
    assert_eq!(nodes["refusals"][0]["reason"], text, "{r}");
    assert_eq!(nodes["refusals"][0]["count"], 2, "{r}");
    assert_eq!(
        p["message"],
        format!("0/5 nodes fit: 3 short of memory, 2 refused by the RM (2: {text})"),
        "{r}"
    );
    assert!(log_has(&r, "Insufficient memory"), "{r}");
    assert!(log_has(&r, "Refused by the RM's predicates"), "{r}");
    assert_eq!(dump_reason(&rm, "x")["nodes"]["refused"], 2);
    let g = grouped(&rm);
    assert_eq!(group_of(&g, "x")["group"], "nodes insufficient memory");
    record(
        &rm,
        "app-1",
        "x",
        &format!("0/5 nodes fit: 3 short of memory, 2 refused by the RM (2: {text})"),
    );
}

#[test]
fn nodes_short_of_memory_and_refused_by_the_rm() {
    nodes_short_and_refused(Edition::V012);
}

#[test]
fn nodes_short_of_memory_and_refused_by_the_rm_v1() {
    nodes_short_and_refused(Edition::V1);
}

fn queue_max_applications(e: Edition) {
    let queues = "          - name: a
            maxapplications: 1
";
    let rm = EditionRm::with_rest(e, &yaml("", queues), &[]);
    rm.nodes(&[("n1", 4000)], 100);
    rm.fill("app-1", "root.a", &[req("f", 100, 1)], 1);
    rm.submit("app-2", "root.a");
    rm.request("app-2", &[req("w", 100, 1)]);
    let r = wait_cause(&rm, "app-2", "w", "applicationLimit", |_| true);
    let p = &r["pendingReason"];
    assert_eq!(p["scope"], "queue", "{r}");
    assert_eq!(p["queue"], "root.a", "{r}");
    assert_eq!(p["limit"], 1, "{r}");
    assert_eq!(dump_reason(&rm, "w")["cause"], "applicationLimit");
    let g = grouped(&rm);
    assert_eq!(group_of(&g, "w")["group"], "applicationLimit queue root.a");
}

#[test]
fn queue_max_applications_holds_the_application() {
    queue_max_applications(Edition::V012);
}

#[test]
fn queue_max_applications_holds_the_application_v1() {
    queue_max_applications(Edition::V1);
}

fn user_max_applications(e: Edition) {
    let queues = "          - name: a
            limits:
              - {limit: one-app, users: [alice], maxapplications: 1}
";
    let rm = EditionRm::with_rest(e, &yaml("", queues), &[]);
    rm.nodes(&[("n1", 4000)], 100);
    rm.fill("app-1", "root.a", &[req("f", 100, 1)], 1);
    rm.submit("app-2", "root.a");
    rm.request("app-2", &[req("w", 100, 1)]);
    let r = wait_cause(&rm, "app-2", "w", "applicationLimit", |_| true);
    let p = &r["pendingReason"];
    assert_eq!(p["scope"], "user", "{r}");
    assert_eq!(p["name"], "alice", "{r}");
    assert_eq!(p["queue"], "root.a", "{r}");
    assert_eq!(p["limit"], 1, "{r}");
}

#[test]
fn user_max_applications_names_the_user() {
    user_max_applications(Edition::V012);
}

#[test]
fn user_max_applications_names_the_user_v1() {
    user_max_applications(Edition::V1);
}

fn fence(e: Edition) {
    let queues = "          - name: parent1
            properties: {preemption.policy: fence}
            queues:
              - name: leaf1
                resources: {guaranteed: {memory: 500}}
                properties: {preemption.delay: 1ms}
          - name: parent2
            queues:
              - name: leaf2
";
    let rm = EditionRm::with_rest(e, &yaml("    preemption: {enabled: true}\n", queues), &[]);
    rm.nodes(&[("node-0", 1000)], 100);
    rm.fill(
        "app-2",
        "root.parent2.leaf2",
        &[req_p("v1", 500, -1000), req_p("v2", 500, -1000)],
        2,
    );
    rm.preemptor("app-1", "root.parent1.leaf1", req_p("p", 500, 0));
    // The partition is full: root (its size) is the queue at max.
    let r = wait_cause(&rm, "app-1", "p", "queueHeadroom", |p| {
        p["preemption"]["outcome"] == "fence"
    });
    let p = &r["pendingReason"];
    assert!(p["preemption"]["attempted"].as_i64() > Some(0), "{r}");
    assert!(
        p["message"]
            .as_str()
            .unwrap()
            .ends_with("; preemption: fence"),
        "{r}"
    );
    assert_eq!(p["queue"], "root", "{r}");
    assert_eq!(p["free"], 0, "{r}");
    rm.assert_no_victim("fenced");
}

#[test]
fn preemption_stopped_by_a_fence() {
    fence(Edition::V012);
}

#[test]
fn preemption_stopped_by_a_fence_v1() {
    fence(Edition::V1);
}

/// A v0.12 RM with REST and `options` tweaked.
fn v012_rm(
    queues: &str,
    tweak: impl FnOnce(&mut sicore::proto::sicore::v1::SchedulerOptions),
) -> EditionRm {
    let mut o = crate::common::yaml_options(&yaml("", queues));
    o.rest_address = "127.0.0.1:0".into();
    tweak(&mut o);
    EditionRm::V012(crate::common::preempt::predicates_rm(o, &[]))
}

#[test]
fn a_reservation_names_its_node_and_keeps_its_age() {
    let rm = v012_rm("          - name: a\n", |o| {
        o.reservation_delay_ms = Some(1)
    });
    // Room in the partition (800), on no node (400 each).
    rm.nodes(&[("n1", 1000), ("n2", 1000)], 100);
    rm.fill("app-1", "root.a", &[req("f", 600, 2)], 2);
    rm.request("app-1", &[req("r", 600, 1)]);
    let first = wait_cause(&rm, "app-1", "r", "reserved", |_| true);
    let later = wait_cause(&rm, "app-1", "r", "reserved", |p| {
        p["passes"].as_u64() > first["pendingReason"]["passes"].as_u64()
    });
    let (p0, p) = (&first["pendingReason"], &later["pendingReason"]);
    let node = p["reservedNode"].as_str().unwrap().to_string();
    assert!(node == "n1" || node == "n2", "{later}");
    assert_eq!(p["since"], p0["since"], "the age is the first sighting's");
    assert_eq!(
        p["message"],
        format!("node {node} is reserved for it, waiting for room there"),
        "{later}"
    );
    assert!(log_has(&later, "Waiting on a reserved node"), "{later}");
    assert_eq!(group_of(&grouped(&rm), "r")["group"], "reserved");
    record(
        &rm,
        "app-1",
        "r",
        &format!("node {node} is reserved for it, waiting for room there"),
    );
}

#[test]
fn a_gang_at_one_of_three_placeholders() {
    use crate::common::{ask, res};
    let rm = v012_rm("          - name: a\n", |_| {});
    // Room in the partition for a second placeholder, on no node.
    rm.nodes(&[("n1", 150), ("n2", 50)], 100);
    let h = rm.harness();
    let mut a = crate::common::app("gang-1", "root.a");
    a.placeholder_ask = res(&[("memory", 300), ("vcore", 3)]);
    h.submit(a).unwrap();
    let mut ph = ask("gang-1", "ph", 100, 1, 3);
    ph.task_group_name = "tg".into();
    ph.placeholder = true;
    assert_eq!(h.asks(vec![ph]).0, sicore::ffi::sicore_status::SICORE_OK);
    let r = wait_cause(&rm, "gang-1", "ph", "nodes", |p| p["gang"]["placed"] == 1);
    let p = &r["pendingReason"];
    assert_eq!(p["gang"]["taskGroup"], "tg", "{r}");
    assert_eq!(p["gang"]["total"], 3, "{r}");
    assert_eq!(p["gang"]["waitingFor"], "placeholders", "{r}");
    assert_eq!(p["nodes"]["insufficient"]["memory"], 2, "{r}");
    assert_eq!(dump_reason(&rm, "ph")["gang"]["placed"], 1);
    record(&rm, "gang-1", "ph", "0/2 nodes fit: 2 short of memory");
}

#[test]
fn a_type_no_node_has_is_not_accepted() {
    use crate::common::{ask, res};
    let rm = v012_rm("          - name: a\n", |_| {});
    rm.nodes(&[("n1", 1000), ("n2", 1000)], 100);
    rm.submit("app-1", "root.a");
    let mut g = ask("app-1", "gpu", 100, 1, 1);
    g.resource_ask = res(&[("memory", 100), ("vcore", 1), ("nvidia.com/gpu", 1)]);
    assert_eq!(
        rm.harness().asks(vec![g]).0,
        sicore::ffi::sicore_status::SICORE_OK
    );
    let r = wait_cause(&rm, "app-1", "gpu", "resourceType", |_| true);
    let p = &r["pendingReason"];
    assert_eq!(p["scope"], "partition", "{r}");
    assert_eq!(p["resource"], "nvidia.com/gpu", "{r}");
    assert_eq!(
        p["message"], "no node of the partition has resource nvidia.com/gpu",
        "{r}"
    );
    record(
        &rm,
        "app-1",
        "gpu",
        "no node of the partition has resource nvidia.com/gpu",
    );
}

/// The v1 RM of the cause-change scenario: REST on, no reservations.
fn v1_rm(queues: &str) -> EditionRm {
    let mut o = crate::common::v1::v1_options();
    o.rest_address = "127.0.0.1:0".into();
    o.disable_reservation = true;
    let rm = crate::common::v1::V1Rm::with(o, &yaml("", queues), false, |_| {});
    EditionRm::V1(rm)
}

#[test]
fn a_cause_that_changes_queue_then_nodes_then_placed_v1() {
    let queues = |max: i64| {
        format!(
            "          - name: a
            resources: {{max: {{memory: {max}}}}}
          - name: b
"
        )
    };
    let rm = v1_rm(&queues(600));
    // Once root.a may grow: room in the partition (900), on no node (300 each).
    rm.nodes(&[("n1", 1000), ("n2", 1000), ("n3", 1000)], 10);
    rm.fill("app-2", "root.b", &[req("hog", 700, 3)], 3);
    rm.submit("app-1", "root.a");
    rm.request("app-1", &[req("x", 800, 1)]);
    // Held by its queue, pass after pass: one cause, one age.
    let q1 = wait_cause(&rm, "app-1", "x", "queueHeadroom", |p| p["free"] == 600);
    let q2 = wait_cause(&rm, "app-1", "x", "queueHeadroom", |p| {
        p["passes"].as_u64() > q1["pendingReason"]["passes"].as_u64()
    });
    assert_eq!(q1["pendingReason"]["since"], q2["pendingReason"]["since"]);
    let EditionRm::V1(v1) = &rm else {
        unreachable!()
    };
    // The k8shim's view: REQUEST records for the pod (object = request
    // key, reference = application), one per cause, not one per pass.
    let why = |s: &crate::common::v1::V1Seen| -> Vec<String> {
        s.events
            .iter()
            .filter(|e| {
                e.r#type == sicore::proto::si18::v1::event_record::Type::Request as i32
                    && e.message.starts_with("Request 'x' waits: ")
                    && e.object_id == "x"
                    && e.reference_id == "app-1"
            })
            .map(|e| e.message.clone())
            .collect()
    };
    v1.rec.wait("queue record", |s| !why(s).is_empty());
    // Ten passes more (a record per pass would show in the flushes).
    let seen = q2["pendingReason"]["passes"].as_u64().unwrap_or(0);
    wait_cause(&rm, "app-1", "x", "queueHeadroom", |p| {
        p["passes"].as_u64() > Some(seen + 10)
    });
    rm.settle();
    assert_eq!(
        why(&v1.rec.copy()),
        ["Request 'x' waits: queue root.a at max memory: asked 800, free 600"]
    );
    // The queue grows: now the node is short.
    let EditionRm::V1(v1) = &rm else {
        unreachable!()
    };
    let (st, msg) = v1.update_config(&yaml("", &queues(5000)));
    assert_eq!(st, sicore::ffi::sicore_status::SICORE_OK, "{msg}");
    let n = wait_cause(&rm, "app-1", "x", "nodes", |_| true);
    let p = &n["pendingReason"];
    assert_eq!(p["nodes"]["insufficient"]["memory"], 3, "{n}");
    assert!(
        p["since"].as_i64() > q2["pendingReason"]["since"].as_i64(),
        "{n}"
    );
    assert!(
        log_has(&n, "Not enough queue quota"),
        "the log keeps the old cause: {n}"
    );
    assert!(log_has(&n, "Insufficient memory"), "{n}");
    let nodes_line = "Request 'x' waits: 0/3 nodes fit: 3 short of memory";
    v1.rec.wait("nodes record", |s| why(s).len() == 2);
    let passes = n["pendingReason"]["passes"].as_u64().unwrap_or(0);
    wait_cause(&rm, "app-1", "x", "nodes", |p| {
        p["passes"].as_u64() > Some(passes + 10)
    });
    rm.settle();
    assert_eq!(why(&v1.rec.copy())[1], nodes_line);
    assert_eq!(why(&v1.rec.copy()).len(), 2, "one record per cause");
    // The hog goes: placed, and no longer listed.
    v1.allocate(vec![], vec![sicore_c_rm::v1::release("app-2", "hog-0")]);
    rm.wait_allocated("x");
    poll("x no longer pending", || {
        request(&rm, "app-1", "x").is_none().then_some(())
    });
    assert_eq!(grouped(&rm)["waitingAsks"], 0);
}

#[test]
fn a_required_node_that_is_not_registered() {
    use crate::common::ask;
    let rm = v012_rm("          - name: a\n", |_| {});
    rm.nodes(&[("n1", 1000)], 100);
    rm.submit("app-1", "root.a");
    let mut a = ask("app-1", "pinned", 100, 1, 1);
    a.tags.insert(
        "yunikorn.apache.org/requiredNode".to_string(),
        "n9".to_string(),
    );
    assert_eq!(
        rm.harness().asks(vec![a]).0,
        sicore::ffi::sicore_status::SICORE_OK
    );
    let r = wait_cause(&rm, "app-1", "pinned", "requiredNodeMissing", |_| true);
    let p = &r["pendingReason"];
    assert_eq!(p["nodes"]["requiredNodeMissing"], true, "{r}");
    assert_eq!(p["nodes"]["examined"], 0, "{r}");
    assert_eq!(p["message"], "the required node is not registered", "{r}");
    assert!(log_has(&r, "Required node not found"), "{r}");
    assert_eq!(
        group_of(&grouped(&rm), "pinned")["group"],
        "requiredNodeMissing"
    );
}
