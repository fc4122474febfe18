//! Every YuniKorn v1.x route against a schema written from the v1.9.0 web
//! service's types (`shared/spec/rest-v1.9.md` 29): field names and JSON
//! types, the fields the web UI reads present (32), the error bodies and
//! status codes, gzip (31), and the v0.12-only paths unchanged (33).
//!
//! The scheduler runs behind the C ABI with an RM of `tests/common`: one
//! application running with two allocations and one ask that fits
//! nowhere, one completed and one rejected.

use std::collections::BTreeSet;
use std::io::Read;

use crate::common::*;
use serde_json::Value;
use sicore::ffi::*;
use sicore::proto::si::v1 as si;

const YAML: &str = "partitions:
  - name: default
    placementrules:
      - name: provided
    queues:
      - name: root
        submitacl: '*'
        queues:
          - name: a
            resources:
              guaranteed: {memory: 500, vcore: 5}
              max: {memory: 4000, vcore: 40}
          - name: done
";

/// A JSON type in the schema.
#[derive(Clone, Copy)]
enum T {
    Str,
    Int,
    Bool,
    /// Resource or percent object: name -> integer.
    Res,
    /// Object of strings.
    StrMap,
    /// Array of strings.
    Strs,
    /// Any object (checked elsewhere).
    Obj,
    /// Array of objects of a schema.
    Arr(&'static [F]),
    /// Object of a schema.
    Of(&'static [F]),
}

/// A field: name, type, always present (the reference omits the others
/// when empty).
type F = (&'static str, T, bool);

const ALLOCATION: &[F] = &[
    ("allocationKey", T::Str, true),
    ("allocationTags", T::StrMap, false),
    ("requestTime", T::Int, false),
    ("allocationTime", T::Int, false),
    ("allocationDelay", T::Int, false),
    ("resource", T::Res, false),
    ("priority", T::Str, false),
    ("nodeId", T::Str, false),
    ("applicationId", T::Str, false),
    ("placeholder", T::Bool, false),
    ("placeholderUsed", T::Bool, false),
    ("taskGroupName", T::Str, false),
    ("preempted", T::Bool, false),
    ("originator", T::Bool, false),
];

const FOREIGN: &[F] = &[
    ("allocationKey", T::Str, true),
    ("allocationTags", T::StrMap, false),
    ("allocationTime", T::Int, false),
    ("resource", T::Res, false),
    ("priority", T::Str, false),
    ("nodeId", T::Str, false),
    ("preemptable", T::Bool, false),
];

const ALLOC_LOG: &[F] = &[
    ("message", T::Str, false),
    ("lastOccurrence", T::Int, false),
    ("count", T::Int, false),
];

const ASK: &[F] = &[
    ("allocationKey", T::Str, true),
    ("allocationTags", T::StrMap, false),
    ("requestTime", T::Int, false),
    ("resource", T::Res, false),
    ("priority", T::Str, false),
    ("requiredNodeId", T::Str, false),
    ("applicationId", T::Str, false),
    ("placeholder", T::Bool, false),
    ("taskGroupName", T::Str, false),
    ("allocationLog", T::Arr(ALLOC_LOG), false),
    // sicore's own: why the request waits (docs/why-pending.md).
    ("pendingReason", T::Obj, false),
    ("triggeredPreemption", T::Bool, false),
    ("originator", T::Bool, false),
    ("schedulingAttempted", T::Bool, false),
    ("triggeredScaleUp", T::Bool, false),
];

const STATE_LOG: &[F] = &[("time", T::Int, false), ("applicationState", T::Str, false)];

const PLACEHOLDER_DATA: &[F] = &[
    ("taskGroupName", T::Str, false),
    ("count", T::Int, false),
    ("minResource", T::Res, false),
    ("replaced", T::Int, false),
    ("timedout", T::Int, false),
];

const APPLICATION: &[F] = &[
    ("applicationID", T::Str, true),
    ("usedResource", T::Res, false),
    ("maxUsedResource", T::Res, false),
    ("pendingResource", T::Res, false),
    ("partition", T::Str, true),
    ("queueName", T::Str, true),
    ("submissionTime", T::Int, false),
    ("finishedTime", T::Int, false),
    ("requests", T::Arr(ASK), false),
    ("allocations", T::Arr(ALLOCATION), false),
    ("applicationState", T::Str, false),
    ("user", T::Str, false),
    ("groups", T::Strs, false),
    ("rejectedMessage", T::Str, false),
    // sicore: always (the UI's last-change column, 32.3).
    ("stateLog", T::Arr(STATE_LOG), true),
    ("placeholderData", T::Arr(PLACEHOLDER_DATA), false),
    ("hasReserved", T::Bool, false),
    ("reservations", T::Strs, false),
    ("maxRequestPriority", T::Int, false),
    ("startTime", T::Int, false),
    ("resourceHistory", T::Obj, true),
    ("backoffDeadline", T::Str, false),
];

const TEMPLATE: &[F] = &[
    ("maxApplications", T::Int, false),
    ("maxResource", T::Res, false),
    ("guaranteedResource", T::Res, false),
    ("properties", T::StrMap, false),
];

const QUEUE: &[F] = &[
    ("queuename", T::Str, true),
    ("status", T::Str, false),
    ("partition", T::Str, true),
    ("pendingResource", T::Res, false),
    ("maxResource", T::Res, false),
    ("guaranteedResource", T::Res, false),
    ("allocatedResource", T::Res, false),
    ("preemptingResource", T::Res, false),
    ("headroom", T::Res, false),
    ("headroom", T::Res, false),
    ("isLeaf", T::Bool, true),
    ("isManaged", T::Bool, true),
    ("properties", T::StrMap, false),
    ("parent", T::Str, false),
    ("template", T::Of(TEMPLATE), false),
    // Checked recursively by `queue_tree`.
    ("children", T::Obj, false),
    ("childNames", T::Strs, false),
    ("absUsedCapacity", T::Res, false),
    ("maxRunningApps", T::Int, false),
    ("runningApps", T::Int, false),
    ("currentPriority", T::Int, true),
    ("allocatingAcceptedApps", T::Strs, false),
    ("sortingPolicy", T::Str, false),
    ("prioritySorting", T::Bool, true),
    ("preemptionEnabled", T::Bool, true),
    ("isPreemptionFence", T::Bool, true),
    ("preemptionDelay", T::Str, false),
    ("quotaPreemptionDelay", T::Str, false),
    ("isPriorityFence", T::Bool, true),
    ("priorityOffset", T::Int, false),
    // sicore's addition (rest-and-metrics.md).
    ("limits", T::Obj, false),
];

const NODE: &[F] = &[
    ("nodeID", T::Str, true),
    ("hostName", T::Str, false),
    ("rackName", T::Str, false),
    // sicore: always (the UI's filter reads it, 32.3); `partition` is
    // read by the UI though the reference lacks it.
    ("partition", T::Str, true),
    ("attributes", T::StrMap, true),
    ("capacity", T::Res, false),
    ("allocated", T::Res, false),
    ("occupied", T::Res, false),
    ("available", T::Res, false),
    ("utilized", T::Res, false),
    ("allocations", T::Arr(ALLOCATION), false),
    ("foreignAllocations", T::Arr(FOREIGN), false),
    ("schedulable", T::Bool, true),
    ("isReserved", T::Bool, true),
    ("reservations", T::Strs, false),
];

const PARTITION_CAPACITY: &[F] = &[
    ("capacity", T::Res, false),
    ("usedCapacity", T::Res, false),
    ("utilization", T::Res, false),
];

const NODE_SORTING: &[F] = &[("type", T::Str, false), ("resourceWeights", T::Obj, false)];

const PARTITION: &[F] = &[
    ("clusterId", T::Str, true),
    ("name", T::Str, true),
    ("capacity", T::Of(PARTITION_CAPACITY), true),
    ("nodeSortingPolicy", T::Of(NODE_SORTING), true),
    ("preemptionEnabled", T::Bool, true),
    ("quotaPreemptionEnabled", T::Bool, true),
    ("totalNodes", T::Int, false),
    ("applications", T::Res, false),
    ("totalContainers", T::Int, false),
    ("state", T::Str, false),
    ("lastStateTransitionTime", T::Int, false),
];

/// One RM's build information: what it sent, plus its rmId.
const BUILD_INFO: &[F] = &[
    ("rmId", T::Str, true),
    ("buildVersion", T::Str, false),
    ("buildDate", T::Str, false),
    ("goVersion", T::Str, false),
    ("arch", T::Str, false),
    ("coreSHA", T::Str, false),
    ("siSHA", T::Str, false),
    ("shimSHA", T::Str, false),
];

/// v1.x fields plus the v0.12 string counters the v0.12 UI reads (33.2).
const CLUSTER: &[F] = &[
    ("startTime", T::Int, false),
    ("rmBuildInformation", T::Arr(BUILD_INFO), false),
    ("partition", T::Str, true),
    ("clusterName", T::Str, true),
    ("totalApplications", T::Str, true),
    ("failedApplications", T::Str, true),
    ("pendingApplications", T::Str, true),
    ("runningApplications", T::Str, true),
    ("completedApplications", T::Str, true),
    ("totalContainers", T::Str, true),
    ("failedContainers", T::Str, true),
    ("pendingContainers", T::Str, true),
    ("runningContainers", T::Str, true),
    ("activeNodes", T::Str, true),
    ("totalNodes", T::Str, true),
    ("failedNodes", T::Str, true),
];

const BUCKET: &[F] = &[
    ("bucketName", T::Str, false),
    // sicore: always (the chart sums them).
    ("numOfNodes", T::Int, true),
    ("nodeNames", T::Strs, false),
];

const NODES_UTIL: &[F] = &[
    ("type", T::Str, false),
    ("utilization", T::Arr(BUCKET), false),
];

const NODE_UTILIZATIONS: &[F] = &[
    ("clusterId", T::Str, true),
    ("partition", T::Str, true),
    ("utilizations", T::Arr(NODES_UTIL), true),
];

const HEALTH_CHECK: &[F] = &[
    ("Name", T::Str, false),
    ("Succeeded", T::Bool, true),
    ("Description", T::Str, false),
    ("DiagnosisMessage", T::Str, false),
];

const HEALTH: &[F] = &[
    ("Healthy", T::Bool, true),
    ("HealthChecks", T::Arr(HEALTH_CHECK), false),
];

const APP_HISTORY: &[F] = &[
    ("timestamp", T::Int, false),
    ("totalApplications", T::Str, false),
];
const CONTAINER_HISTORY: &[F] = &[
    ("timestamp", T::Int, false),
    ("totalContainers", T::Str, false),
];

const RULE_FILTER: &[F] = &[
    ("type", T::Str, true),
    ("userList", T::Strs, false),
    ("groupList", T::Strs, false),
    ("userExp", T::Str, false),
    ("groupExp", T::Str, false),
];

const RULE: &[F] = &[
    ("name", T::Str, true),
    ("parameters", T::StrMap, false),
    ("filter", T::Of(RULE_FILTER), false),
    ("parentRule", T::Obj, false),
];

const USAGE: &[F] = &[
    ("queuePath", T::Str, true),
    ("resourceUsage", T::Res, false),
    ("runningApplications", T::Strs, false),
    ("maxResources", T::Res, false),
    ("maxApplications", T::Int, false),
    ("children", T::Obj, false),
];

const USER_USAGE: &[F] = &[
    ("userName", T::Str, true),
    ("groups", T::StrMap, false),
    ("queues", T::Of(USAGE), false),
];

const GROUP_USAGE: &[F] = &[
    ("groupName", T::Str, true),
    ("applications", T::Strs, false),
    ("queues", T::Of(USAGE), false),
];

const VALIDATE: &[F] = &[("allowed", T::Bool, true), ("reason", T::Str, false)];

const ERROR: &[F] = &[
    ("status_code", T::Int, true),
    ("message", T::Str, false),
    ("description", T::Str, false),
];

const DUMP_NODES: &[F] = &[
    ("partitionName", T::Str, true),
    ("nodesInfo", T::Arr(NODE), false),
];

const DUMP_RULES: &[F] = &[("partition", T::Str, true), ("rules", T::Arr(RULE), false)];

const DUMP: &[F] = &[
    ("timestamp", T::Int, false),
    ("partitions", T::Arr(PARTITION), false),
    ("applications", T::Arr(APPLICATION), false),
    ("appHistory", T::Arr(APP_HISTORY), false),
    ("containerHistory", T::Arr(CONTAINER_HISTORY), false),
    ("nodes", T::Arr(DUMP_NODES), false),
    ("clusterInfo", T::Arr(CLUSTER), false),
    ("queues", T::Obj, false),
    ("rmDiagnostics", T::Obj, false),
    ("logLevel", T::Str, false),
    ("config", T::Obj, false),
    ("placementRules", T::Arr(DUMP_RULES), false),
    ("eventStreams", T::Obj, false),
];

/// Checks `v` against `schema`: every key known, every type right, every
/// always-present field there. `at` names the place in failures.
fn check(v: &Value, schema: &[F], at: &str) {
    let m = v
        .as_object()
        .unwrap_or_else(|| panic!("{at}: not an object: {v}"));
    for k in m.keys() {
        assert!(
            schema.iter().any(|(n, _, _)| n == k),
            "{at}: field {k:?} is not in the v1.9 schema: {v}"
        );
    }
    for (name, t, always) in schema {
        match m.get(*name) {
            None => assert!(!always, "{at}: {name} missing: {v}"),
            Some(f) => check_type(f, *t, &format!("{at}.{name}")),
        }
    }
}

fn check_type(f: &Value, t: T, at: &str) {
    let ok = match t {
        T::Str => f.is_string(),
        T::Int => f.is_i64() || f.is_u64(),
        T::Bool => f.is_boolean(),
        T::Res => f
            .as_object()
            .is_some_and(|o| o.values().all(|x| x.is_i64() || x.is_u64())),
        T::StrMap => f
            .as_object()
            .is_some_and(|o| o.values().all(Value::is_string)),
        T::Strs => f.as_array().is_some_and(|a| a.iter().all(Value::is_string)),
        T::Obj => f.is_object() || f.is_array(),
        T::Arr(s) => {
            let a = f
                .as_array()
                .unwrap_or_else(|| panic!("{at}: not an array: {f}"));
            for (i, e) in a.iter().enumerate() {
                check(e, s, &format!("{at}[{i}]"));
            }
            true
        }
        T::Of(s) => {
            check(f, s, at);
            true
        }
    };
    assert!(ok, "{at}: wrong JSON type: {f}");
}

/// A queue and its `children`, recursively.
fn queue_tree(q: &Value, at: &str) {
    check(q, QUEUE, at);
    if let Some(c) = q.get("children") {
        for (i, child) in c.as_array().expect("children array").iter().enumerate() {
            queue_tree(child, &format!("{at}.children[{i}]"));
        }
    }
}

fn get(addr: &str, path: &str) -> crate::restkit::Reply {
    crate::restkit::http(addr, "GET", path, &[], b"")
}

fn ok(addr: &str, path: &str) -> Value {
    let r = get(addr, path);
    assert_eq!(r.status, 200, "{path}: {}", r.body);
    assert_eq!(
        r.header("Content-Type"),
        Some("application/json; charset=UTF-8"),
        "{path}"
    );
    r.json()
}

fn error(addr: &str, path: &str, status: u16, message: &str) {
    let r = get(addr, path);
    assert_eq!(r.status, status, "{path}: {}", r.body);
    let v = r.json();
    check(&v, ERROR, path);
    assert_eq!(v["status_code"], status, "{path}");
    assert_eq!(v["message"], message, "{path}");
}

/// The scheduler of the module doc, with its REST address.
fn running() -> (Harness, String) {
    let mut o = yaml_options(YAML);
    o.rest_address = "127.0.0.1:0".into();
    o.app_completing_timeout_ms = Some(20);
    let h = Harness::configured(o, 2);
    assert_eq!(
        h.submit(app_by("app-1", "root.a", "alice", &["devs"])),
        Ok(())
    );
    let mut a = ask("app-1", "ask-1", 100, 1, 2);
    a.tags
        .insert("kubernetes.io/meta/podName".into(), "pod-1".into());
    let big = ask("app-1", "too-big", 5000, 1, 1);
    assert_eq!(h.asks(vec![a, big]).0, sicore_status::SICORE_OK);
    h.wait("two allocations", |s| s.allocations.len() == 2);
    // A short-lived application: one allocation, released, so it completes.
    assert_eq!(h.submit(app("app-done", "root.done")), Ok(()));
    assert_eq!(
        h.asks(vec![ask("app-done", "d", 10, 1, 1)]).0,
        sicore_status::SICORE_OK
    );
    h.wait("its allocation", |s| s.allocations.len() == 3);
    let release = si::AllocationRelease {
        partition_name: "default".into(),
        application_id: "app-done".into(),
        termination_type: si::TerminationType::StoppedByRm as i32,
        ..Default::default()
    };
    assert_eq!(
        h.releases(vec![release], vec![]).0,
        sicore_status::SICORE_OK
    );
    h.wait("app-done completed", |s| {
        s.app_updates
            .iter()
            .any(|u| u.application_id == "app-done" && u.state == "Completed")
    });
    assert!(h.submit(app("app-bad", "root.nope")).is_err());
    let addr = crate::restkit::rest_address(h.sched);
    // REST serves a snapshot a moment old.
    crate::restkit::poll("REST to show the completed application", || {
        let v = crate::restkit::get_json(&addr, "/ws/v1/partition/default/applications/completed");
        (v.as_array()?.len() == 1).then_some(())
    });
    (h, addr)
}

/// Spec 16 Q19-23.
#[test]
fn every_v1_route_has_the_v19_shapes() {
    let (_h, addr) = running();
    let mut routes: BTreeSet<&str> = BTreeSet::new();
    let mut seen = |r: &'static str| {
        routes.insert(r);
    };

    // 1 clusters
    seen("/clusters");
    let c = ok(&addr, "/ws/v1/clusters");
    check_type(&c, T::Arr(CLUSTER), "clusters");
    assert_eq!(c[0]["clusterName"], "kubernetes");
    assert!(c[0]["startTime"].as_i64().unwrap() > 1_600_000_000_000_000_000);
    // A v0.12 RM sends no build information: its rmId and version.
    let build = &c[0]["rmBuildInformation"];
    assert_eq!(build.as_array().map(Vec::len), Some(1), "{build}");
    assert_eq!(build[0]["rmId"], "rm", "{build}");
    assert!(build[0]["buildVersion"].is_string(), "{build}");

    // 2 metrics: text
    seen("/metrics");
    let r = get(&addr, "/ws/v1/metrics");
    assert_eq!(r.status, 200);
    assert!(r.body.contains("yunikorn_"), "{}", r.body);

    // 3 config, JSON and YAML
    seen("/config");
    let r = crate::restkit::http(
        &addr,
        "GET",
        "/ws/v1/config",
        &[("Accept", "application/json")],
        b"",
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let conf = r.json();
    assert!(conf["Partitions"].is_array(), "{conf}");
    assert!(conf["Checksum"].is_string());
    assert_eq!(conf["DeadlockDetectionEnabled"], false);
    assert_eq!(conf["DeadlockTimeoutSeconds"], 0);
    let r = get(&addr, "/ws/v1/config");
    assert_eq!(
        r.header("Content-Type"),
        Some("application/x-yaml; charset=UTF-8")
    );

    // 4 validate-conf: 200 either way, `reason` only when refused
    seen("/validate-conf");
    let r = crate::restkit::http(&addr, "POST", "/ws/v1/validate-conf", &[], YAML.as_bytes());
    assert_eq!(r.status, 200, "{}", r.body);
    check(&r.json(), VALIDATE, "validate-conf");
    assert_eq!(r.json(), serde_json::json!({"allowed": true}));
    let r = crate::restkit::http(&addr, "POST", "/ws/v1/validate-conf", &[], b"partitions: 7");
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["allowed"], false);
    assert!(r.json()["reason"].as_str().is_some_and(|s| !s.is_empty()));

    // 5, 6 history
    seen("/history/apps");
    seen("/history/containers");
    check_type(
        &ok(&addr, "/ws/v1/history/apps"),
        T::Arr(APP_HISTORY),
        "history/apps",
    );
    check_type(
        &ok(&addr, "/ws/v1/history/containers"),
        T::Arr(CONTAINER_HISTORY),
        "history/containers",
    );

    // 7 partitions
    seen("/partitions");
    let p = ok(&addr, "/ws/v1/partitions");
    check_type(&p, T::Arr(PARTITION), "partitions");
    let p0 = &p[0];
    assert_eq!(p0["totalNodes"], 2);
    assert_eq!(p0["totalContainers"], 2);
    assert_eq!(p0["applications"]["total"], 3, "{p0}");
    assert_eq!(p0["applications"]["Completed"], 1, "{p0}");
    assert_eq!(p0["applications"]["Rejected"], 1, "{p0}");
    assert_eq!(p0["nodeSortingPolicy"]["type"], "fair");

    // 8 placement rules: the configured ones, then recovery
    seen("/partition/{p}/placementrules");
    let rules = ok(&addr, "/ws/v1/partition/default/placementrules");
    check_type(&rules, T::Arr(RULE), "placementrules");
    let names: Vec<&str> = rules
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["provided", "recovery"]);
    assert_eq!(rules[1]["parameters"]["queue"], "root.@recovery@");
    error(
        &addr,
        "/ws/v1/partition/nope/placementrules",
        404,
        "Partition not found",
    );

    // 9 queues: the root with every child
    seen("/partition/{p}/queues");
    let root = ok(&addr, "/ws/v1/partition/default/queues");
    queue_tree(&root, "queues");
    assert_eq!(root["partition"], "default");
    let a = crate::restkit::queue_entry(&root, "root.a").unwrap();
    assert_eq!(
        a["allocatedResource"],
        serde_json::json!({"memory": 200, "vcore": 2})
    );
    assert_eq!(
        a["pendingResource"],
        serde_json::json!({"memory": 5000, "vcore": 1})
    );
    assert_eq!(
        a["absUsedCapacity"],
        serde_json::json!({"memory": 5, "vcore": 5})
    );
    assert_eq!(
        root["childNames"],
        serde_json::json!(["root.a", "root.done"])
    );
    // Headroom: the least max - allocated on the path; root's max is the
    // partition's size (2 nodes of 1000 memory and 10 vcore), so root.a's
    // own room (3800, 38) is cut to root's (1800, 18), and root.done, with
    // no max of its own, has root's.
    let room = serde_json::json!({"memory": 1800, "vcore": 18});
    assert_eq!(root["headroom"], room, "{root}");
    assert_eq!(a["headroom"], room, "{a}");
    let done = crate::restkit::queue_entry(&root, "root.done").unwrap();
    assert_eq!(done["headroom"], room, "{done}");
    let alone = ok(&addr, "/ws/v1/partition/default/queue/root.a");
    assert_eq!(
        alone["headroom"], room,
        "the same from the one-queue route: {alone}"
    );

    // 10 one queue, with and without its subtree
    seen("/partition/{p}/queue/{q}");
    let q = ok(&addr, "/ws/v1/partition/default/queue/root");
    queue_tree(&q, "queue");
    assert!(q.get("children").is_none(), "{q}");
    assert_eq!(q["partition"], "");
    let q = ok(&addr, "/ws/v1/partition/default/queue/root?subtree");
    assert_eq!(q["children"].as_array().unwrap().len(), 2);
    error(
        &addr,
        "/ws/v1/partition/nope/queue/root",
        404,
        "Partition not found",
    );
    error(
        &addr,
        "/ws/v1/partition/default/queue/root.a%2521",
        400,
        "invalid queue name, max 64 characters consisting of alphanumeric characters and '-', '_', '#', '@', '/', ':' allowed",
    );
    error(
        &addr,
        "/ws/v1/partition/default/queue/root.zzz",
        404,
        "Queue not found",
    );

    // 11, 12 nodes
    seen("/partition/{p}/nodes");
    seen("/partition/{p}/node/{node}");
    let nodes = ok(&addr, "/ws/v1/partition/default/nodes");
    check_type(&nodes, T::Arr(NODE), "nodes");
    assert_eq!(nodes.as_array().unwrap().len(), 2);
    let held: usize = nodes
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            n.get("allocations")
                .map_or(0, |a| a.as_array().unwrap().len())
        })
        .sum();
    assert_eq!(held, 2);
    let busy = nodes
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n.get("allocated").is_some())
        .expect("a node with allocations");
    assert!(busy["utilized"]["memory"].as_i64().unwrap() >= 10, "{busy}");
    let n = ok(&addr, "/ws/v1/partition/default/node/node-0");
    check(&n, NODE, "node");
    assert_eq!(n["nodeID"], "node-0");
    error(
        &addr,
        "/ws/v1/partition/default/node/nope",
        404,
        "Node not found",
    );
    error(
        &addr,
        "/ws/v1/partition/nope/node/node-0",
        404,
        "Partition not found",
    );

    // 13 a queue's applications
    seen("/partition/{p}/queue/{q}/applications");
    let apps = ok(&addr, "/ws/v1/partition/default/queue/root.a/applications");
    check_type(&apps, T::Arr(APPLICATION), "queue applications");
    let app1 = &apps[0];
    assert_eq!(app1["applicationID"], "app-1");
    assert_eq!(app1["user"], "alice");
    assert_eq!(app1["groups"], serde_json::json!(["devs"]));
    assert_eq!(
        app1["usedResource"],
        serde_json::json!({"memory": 200, "vcore": 2})
    );
    assert_eq!(app1["maxUsedResource"], app1["usedResource"]);
    assert_eq!(
        app1["pendingResource"],
        serde_json::json!({"memory": 5000, "vcore": 1})
    );
    assert_eq!(app1["requests"][0]["allocationKey"], "too-big");
    assert_eq!(app1["allocations"].as_array().unwrap().len(), 2);
    assert_eq!(
        app1["allocations"][0]["allocationTags"]["kubernetes.io/meta/podName"],
        "pod-1"
    );
    let log: Vec<&str> = app1["stateLog"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["applicationState"].as_str().unwrap())
        .collect();
    assert_eq!(log.first(), Some(&"New"), "{log:?}");
    assert!(log.contains(&"Accepted"), "{log:?}");
    let times: Vec<i64> = app1["stateLog"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["time"].as_i64().unwrap())
        .collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "{times:?}");
    assert!(times[0] > 1_600_000_000_000_000_000);
    error(
        &addr,
        "/ws/v1/partition/default/queue/root.zzz/applications",
        404,
        "Queue not found",
    );
    let root_apps = ok(&addr, "/ws/v1/partition/default/queue/root/applications");
    assert_eq!(root_apps, serde_json::json!([]), "a parent holds none");

    // 14 one application of a queue
    seen("/partition/{p}/queue/{q}/application/{app}");
    let one = ok(
        &addr,
        "/ws/v1/partition/default/queue/root.a/application/app-1",
    );
    check(&one, APPLICATION, "queue application");
    error(
        &addr,
        "/ws/v1/partition/default/queue/root.a/application/nope",
        404,
        "Application not found",
    );

    // 15 one active application
    seen("/partition/{p}/application/{app}");
    let one = ok(&addr, "/ws/v1/partition/default/application/app-1");
    check(&one, APPLICATION, "application");
    error(
        &addr,
        "/ws/v1/partition/default/application/app-done",
        404,
        "Application not found",
    );

    // 16 applications by state
    seen("/partition/{p}/applications/{state}");
    let active = ok(&addr, "/ws/v1/partition/default/applications/ACTIVE");
    check_type(&active, T::Arr(APPLICATION), "active");
    assert_eq!(active.as_array().unwrap().len(), 1);
    let state = app1["applicationState"].as_str().unwrap().to_lowercase();
    let filtered = ok(
        &addr,
        &format!("/ws/v1/partition/default/applications/active?status={state}"),
    );
    assert_eq!(filtered.as_array().unwrap().len(), 1);
    let none = ok(
        &addr,
        "/ws/v1/partition/default/applications/active?status=completing",
    );
    assert_eq!(none, serde_json::json!([]));
    let completed = ok(&addr, "/ws/v1/partition/default/applications/completed");
    check_type(&completed, T::Arr(APPLICATION), "completed");
    assert_eq!(completed[0]["applicationID"], "app-done");
    assert_eq!(completed[0]["applicationState"], "Completed");
    assert!(completed[0]["finishedTime"].as_i64().unwrap() > 0);
    let rejected = ok(&addr, "/ws/v1/partition/default/applications/rejected");
    check_type(&rejected, T::Arr(APPLICATION), "rejected");
    assert_eq!(rejected[0]["applicationID"], "app-bad");
    assert_eq!(rejected[0]["applicationState"], "Rejected");
    assert!(rejected[0]["rejectedMessage"]
        .as_str()
        .is_some_and(|m| !m.is_empty()));
    error(
        &addr,
        "/ws/v1/partition/default/applications/finished",
        400,
        "Only following application states are allowed: active, rejected, completed",
    );
    error(
        &addr,
        "/ws/v1/partition/default/applications/active?status=done",
        400,
        "Only following active statuses are allowed: new,accepted,running,completing,failing,resuming",
    );
    error(
        &addr,
        "/ws/v1/partition/nope/applications/active",
        404,
        "Partition not found",
    );

    // 17 a queue's applications by state
    seen("/partition/{p}/queue/{q}/applications/{state}");
    let q_active = ok(
        &addr,
        "/ws/v1/partition/default/queue/root.a/applications/active",
    );
    check_type(&q_active, T::Arr(APPLICATION), "queue active");
    assert_eq!(q_active.as_array().unwrap().len(), 1);
    error(
        &addr,
        "/ws/v1/partition/default/queue/root.a/applications/completed",
        400,
        "Only following application states are allowed: active",
    );

    // 18-21 usage
    seen("/partition/{p}/usage/users");
    seen("/partition/{p}/usage/user/{user}");
    seen("/partition/{p}/usage/groups");
    seen("/partition/{p}/usage/group/{group}");
    let users = ok(&addr, "/ws/v1/partition/default/usage/users");
    check_type(&users, T::Arr(USER_USAGE), "users");
    let alice = ok(&addr, "/ws/v1/partition/default/usage/user/alice");
    check(&alice, USER_USAGE, "user");
    check_type(
        &ok(&addr, "/ws/v1/partition/default/usage/groups"),
        T::Arr(GROUP_USAGE),
        "groups",
    );
    error(
        &addr,
        "/ws/v1/partition/default/usage/user/nobody",
        404,
        "User not found",
    );
    error(
        &addr,
        "/ws/v1/partition/default/usage/group/9bad",
        400,
        "Invalid group name",
    );
    error(
        &addr,
        "/ws/v1/partition/default/usage/group/nogroup",
        404,
        "Group not found",
    );

    // 24 health: 200 with the checks
    seen("/scheduler/healthcheck");
    let health = ok(&addr, "/ws/v1/scheduler/healthcheck");
    check(&health, HEALTH, "healthcheck");
    assert_eq!(health["Healthy"], true);

    // 25 node utilisations
    seen("/scheduler/node-utilizations");
    let nu = ok(&addr, "/ws/v1/scheduler/node-utilizations");
    check_type(&nu, T::Arr(NODE_UTILIZATIONS), "node-utilizations");
    let mem = nu[0]["utilizations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["type"] == "memory")
        .expect("memory");
    let buckets = mem["utilization"].as_array().unwrap();
    assert_eq!(buckets.len(), 10);
    assert_eq!(buckets[0]["bucketName"], "0-10%");
    let counted: i64 = buckets
        .iter()
        .map(|b| b["numOfNodes"].as_i64().unwrap())
        .sum();
    assert_eq!(counted, 2);
    error(
        &addr,
        "/ws/v1/scheduler/node-utilization",
        404,
        "no such endpoint: /ws/v1/scheduler/node-utilization",
    );

    // 28 debug routes
    seen("/debug/fullstatedump");
    let r = get(&addr, "/debug/fullstatedump");
    assert_eq!(r.status, 200, "{}", r.body);
    let dump = r.json();
    check(&dump, DUMP, "fullstatedump");
    for (i, q) in dump["queues"].as_array().unwrap().iter().enumerate() {
        queue_tree(q, &format!("fullstatedump.queues[{i}]"));
    }
    assert_eq!(dump["applications"].as_array().unwrap().len(), 3);
    seen("/debug/stack");
    seen("/debug/pprof/");
    for path in ["/debug/stack", "/debug/pprof/heap", "/ws/v1/stack"] {
        let r = get(&addr, path);
        assert_eq!(r.status, 404, "{path}");
        check(&r.json(), ERROR, path);
    }

    // The route count for the report (events are their own tests).
    assert_eq!(routes.len(), 26, "{routes:?}");
    eprintln!("v1.x routes checked: {}", routes.len());
}

/// Spec 16 Q19-23.
#[test]
fn answers_are_gzipped_when_asked_and_large_enough() {
    let (_h, addr) = running();
    let plain = get(&addr, "/debug/fullstatedump");
    assert!(plain.body.len() >= 1400, "{}", plain.body.len());
    let r = crate::restkit::http_raw(
        &addr,
        "/debug/fullstatedump",
        &[("Accept-Encoding", "deflate, gzip;q=0.8")],
    );
    assert_eq!(r.0, 200);
    assert!(r
        .1
        .iter()
        .any(|(k, v)| k.eq_ignore_ascii_case("Content-Encoding") && v == "gzip"));
    assert!(r
        .1
        .iter()
        .any(|(k, v)| k.eq_ignore_ascii_case("Vary") && v == "Accept-Encoding"));
    let mut text = String::new();
    flate2::read::GzDecoder::new(&r.2[..])
        .read_to_string(&mut text)
        .expect("a gzip body");
    let v: Value = serde_json::from_str(&text).unwrap();
    assert!(v["partitions"].is_array());
    // Refused by q=0, and small bodies go out plain.
    let r = crate::restkit::http_raw(
        &addr,
        "/debug/fullstatedump",
        &[("Accept-Encoding", "gzip;q=0")],
    );
    assert!(!r
        .1
        .iter()
        .any(|(k, _)| k.eq_ignore_ascii_case("Content-Encoding")));
    let r = crate::restkit::http_raw(
        &addr,
        "/ws/v1/scheduler/node-utilizations",
        &[("Accept-Encoding", "gzip")],
    );
    assert!(r.2.len() < 1400);
    assert!(!r
        .1
        .iter()
        .any(|(k, _)| k.eq_ignore_ascii_case("Content-Encoding")));
}

#[test]
fn the_v012_paths_keep_their_shapes() {
    let (_h, addr) = running();
    // v0.12-only paths: resource strings, the node wrapper, ten buckets.
    let apps = ok(&addr, "/ws/v1/apps");
    let a = apps
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["applicationID"] == "app-1")
        .unwrap();
    assert_eq!(a["usedResource"], "[memory:200 vcore:2]");
    assert!(a["allocations"][0]["uuid"].is_string());
    let nodes = ok(&addr, "/ws/v1/nodes");
    assert_eq!(nodes[0]["partitionName"], "default");
    assert!(nodes[0]["nodesInfo"][0]["capacity"].is_string());
    let docs: Vec<Value> = serde_json::Deserializer::from_str(&get(&addr, "/ws/v1/queues").body)
        .into_iter::<Value>()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(docs[0]["capacity"]["capacity"], "[memory:2000 vcore:20]");
    let u = ok(&addr, "/ws/v1/nodes/utilization");
    assert_eq!(u[0]["utilization"].as_array().unwrap().len(), 10);
    let cu = ok(&addr, "/ws/v1/clusters/utilization");
    assert!(cu[0]["utilization"][0]["usage"].is_string());
    // /clusters keeps every v0.12 string counter.
    let c = ok(&addr, "/ws/v1/clusters");
    assert_eq!(c[0]["runningContainers"], "2");
}

/// Hostile requests on the new paths: oversized names, escapes that do
/// not decode, a long `Accept-Encoding` and many compressed answers at
/// once are answered with bounded errors or normally, and health and
/// metrics stay reachable.
#[test]
fn hostile_requests_on_the_v1_paths_are_bounded() {
    let (_h, addr) = running();
    let long = "q".repeat(30_000);
    for (path, want) in [
        (format!("/ws/v1/partition/default/queue/root.{long}"), 400),
        (
            format!("/ws/v1/partition/default/queue/root.{long}/applications"),
            400,
        ),
        (format!("/ws/v1/partition/default/node/{long}"), 404),
        (format!("/ws/v1/partition/{long}/applications/active"), 404),
        (format!("/ws/v1/partition/default/application/{long}"), 404),
        (
            "/ws/v1/partition/default/queue/root.a%252/applications".to_string(),
            400,
        ),
        (
            format!("/ws/v1/partition/default/applications/active?status={long}"),
            400,
        ),
        (format!("/ws/v1/partition/default/applications/{long}"), 400),
    ] {
        let r = crate::restkit::try_http(&addr, "GET", &path, &[], b"").expect("an answer");
        assert_eq!(
            r.status,
            want,
            "{}: {}",
            &path[..60.min(path.len())],
            r.body
        );
        check(&r.json(), ERROR, "hostile");
    }
    let many = vec!["x-nothing;q=0.1"; 2000].join(", ") + ", gzip";
    let r = crate::restkit::http_raw(&addr, "/debug/fullstatedump", &[("Accept-Encoding", &many)]);
    assert_eq!(r.0, 200);
    let readers: Vec<_> = (0..16)
        .map(|_| {
            let addr = addr.clone();
            std::thread::spawn(move || {
                crate::restkit::http_raw(
                    &addr,
                    "/debug/fullstatedump",
                    &[("Accept-Encoding", "gzip")],
                )
                .0
            })
        })
        .collect();
    for r in readers {
        assert_eq!(r.join().unwrap(), 200);
    }
    assert_eq!(get(&addr, "/ws/v1/scheduler/healthcheck").status, 200);
    assert_eq!(get(&addr, "/ws/v1/metrics").status, 200);
}

/// Without nodes the utilisation chart still gets its array.
#[test]
fn node_utilizations_without_nodes_is_an_empty_list_per_partition() {
    let mut o = yaml_options(YAML);
    o.rest_address = "127.0.0.1:0".into();
    let h = Harness::configured(o, 0);
    let addr = crate::restkit::rest_address(h.sched);
    let nu = ok(&addr, "/ws/v1/scheduler/node-utilizations");
    check_type(&nu, T::Arr(NODE_UTILIZATIONS), "node-utilizations");
    assert_eq!(nu[0]["utilizations"], serde_json::json!([]));
    let p = ok(&addr, "/ws/v1/partitions");
    check_type(&p, T::Arr(PARTITION), "partitions");
    assert!(p[0].get("totalNodes").is_none(), "omitted when 0: {}", p[0]);
    assert_eq!(
        ok(&addr, "/ws/v1/partition/default/nodes"),
        serde_json::json!([])
    );
}
