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

mod edge_cases;
mod every_route;

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
