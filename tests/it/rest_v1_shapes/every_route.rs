//! Every v1 route of the running scheduler against its v1.9 schema.

use super::*;

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
