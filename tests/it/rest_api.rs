//! The REST service and metrics through the C ABI: a scheduler started with
//! `rest_address = 127.0.0.1:0` serves the v0.12 endpoints on a free
//! loopback port; every endpoint's status and JSON shape is checked against
//! `rest-v0.12.md`, including the configuration update round trip with an
//! RM that accepts and one that rejects.

use std::io::{Read, Write};
use std::net::TcpStream;

use crate::common::*;
use serde_json::Value;
use sicore::ffi::*;

const YAML: &str = "partitions:
  - name: default
    queues:
      - name: root
        submitacl: '*'
        queues:
          - name: a
            resources:
              guaranteed: {memory: 500, vcore: 5}
              max: {memory: 4000, vcore: 40}
";

struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Reply {
    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// An error answer has the reference's error body.
    fn assert_error(&self, status: u16) {
        assert_eq!(self.status, status, "{}", self.body);
        let v = self.json();
        assert_eq!(v["status_code"], status, "{v}");
        assert!(v["message"].as_str().is_some_and(|m| !m.is_empty()), "{v}");
        assert!(v["description"].is_string(), "{v}");
    }
}

/// One HTTP/1.1 request on a fresh connection.
fn http(addr: &str, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Reply {
    let mut s = TcpStream::connect(addr).expect("connect to the REST service");
    s.set_read_timeout(Some(WAIT)).unwrap();
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    s.write_all(req.as_bytes()).unwrap();
    let _ = s.write_all(body);
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    let text = String::from_utf8(raw).expect("UTF-8 answer");
    let (head, body) = text.split_once("\r\n\r\n").expect("a complete answer");
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers = lines
        .filter_map(|l| l.split_once(": "))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Reply {
        status,
        headers,
        body: body.to_string(),
    }
}

fn get(addr: &str, path: &str) -> Reply {
    http(addr, "GET", path, &[], b"")
}

fn rest_options(yaml: &str) -> sicore::proto::sicore::v1::SchedulerOptions {
    let mut o = yaml_options(yaml);
    o.rest_address = "127.0.0.1:0".into();
    o
}

fn rest_address(h: &Harness) -> String {
    let mut out = sicore_buffer::empty();
    let mut err = sicore_buffer::empty();
    assert_eq!(
        sicore_rest_address(h.sched, &mut out, &mut err),
        sicore_status::SICORE_OK
    );
    let addr = take_string(out);
    assert!(addr.starts_with("127.0.0.1:"), "{addr}");
    addr
}

fn metrics_text(h: &Harness) -> String {
    let mut out = sicore_buffer::empty();
    let mut err = sicore_buffer::empty();
    let st = sicore_metrics(h.sched, &mut out, &mut err);
    assert_eq!(st, sicore_status::SICORE_OK, "{}", take_string(err));
    take_string(out)
}

/// A registered RM with two nodes and one application holding two
/// allocations in `root.a`.
fn running() -> (Harness, String) {
    let h = Harness::configured(rest_options(YAML), 2);
    assert_eq!(h.submit(app("app-1", "root.a")), Ok(()));
    let mut a = ask("app-1", "ask-1", 100, 1, 2);
    a.tags
        .insert("kubernetes.io/meta/podName".into(), "pod-1".into());
    assert_eq!(h.asks(vec![a]).0, sicore_status::SICORE_OK);
    h.wait("two allocations", |s| s.allocations.len() == 2);
    let addr = rest_address(&h);
    (h, addr)
}

fn is_res_string(v: &Value) -> bool {
    v.as_str()
        .is_some_and(|s| s.starts_with('[') && s.ends_with(']'))
}

#[test]
fn queues_and_clusters_have_the_reference_shapes() {
    let (_h, addr) = running();

    let r = get(&addr, "/ws/v1/queues");
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        r.header("Content-Type"),
        Some("application/json; charset=UTF-8")
    );
    assert_eq!(r.header("Access-Control-Allow-Origin"), Some("*"));
    let docs: Vec<Value> = serde_json::Deserializer::from_str(&r.body)
        .into_iter::<Value>()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(docs.len(), 1);
    let p = &docs[0];
    assert_eq!(p["partitionName"], "default");
    assert_eq!(p["capacity"]["capacity"], "[memory:2000 vcore:20]");
    assert_eq!(p["capacity"]["usedCapacity"], "[memory:200 vcore:2]");
    assert!(p["nodes"].is_null());
    let root = &p["queues"];
    assert_eq!(root["queuename"], "root");
    assert_eq!(root["status"], "Active");
    let a = &root["queues"][0];
    assert_eq!(a["queuename"], "a");
    assert!(a["queues"].is_null(), "a leaf has no child list: {a}");
    assert_eq!(a["capacities"]["capacity"], "[memory:500 vcore:5]");
    assert_eq!(a["capacities"]["maxCapacity"], "[memory:4000 vcore:40]");
    assert_eq!(a["capacities"]["usedCapacity"], "[memory:200 vcore:2]");
    assert_eq!(a["capacities"]["absUsedCapacity"], "[memory:5 vcore:5]");
    assert!(a["properties"].is_object());

    let r = get(&addr, "/ws/v1/clusters");
    assert_eq!(r.status, 200);
    let c = &r.json()[0];
    assert_eq!(c["partition"], "default");
    assert_eq!(c["clusterName"], "kubernetes");
    for f in [
        "totalApplications",
        "failedApplications",
        "pendingApplications",
        "runningApplications",
        "completedApplications",
        "totalContainers",
        "failedContainers",
        "pendingContainers",
        "runningContainers",
        "activeNodes",
        "totalNodes",
        "failedNodes",
    ] {
        assert!(c[f].is_string(), "{f} must be a string: {c}");
    }
    assert_eq!(c["totalApplications"], "1");
    assert_eq!(c["runningContainers"], "2");
    assert_eq!(c["totalNodes"], "2");
    assert_eq!(c["activeNodes"], "2");

    let r = get(&addr, "/ws/v1/clusters/utilization");
    assert_eq!(r.status, 200);
    let u = &r.json()[0];
    assert_eq!(u["partition"], "default");
    let mem = u["utilization"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["type"] == "memory")
        .expect("memory utilization");
    assert_eq!(mem["total"], 2000);
    assert_eq!(mem["used"], 200);
    assert_eq!(mem["usage"], "10%");

    let r = get(&addr, "/ws/v1/partitions");
    assert_eq!(r.status, 200);
    let p = &r.json()[0];
    assert_eq!(p["clusterId"], "rm");
    assert_eq!(p["name"], "default");
    // YuniKorn v1.x shapes (rest-v1.9.md 33.2): resource objects and
    // Unix ns; the v0.12 UI reads only nodeSortingPolicy here.
    assert_eq!(
        p["capacity"]["capacity"],
        serde_json::json!({"memory": 2000, "vcore": 20})
    );
    assert_eq!(
        p["capacity"]["utilization"],
        serde_json::json!({"memory": 10, "vcore": 10})
    );
    assert!(p["nodeSortingPolicy"]["type"].is_string());
    assert!(p["nodeSortingPolicy"]["resourceWeights"].is_object());
    assert_eq!(p["applications"]["total"], 1);
    assert_eq!(p["totalNodes"], 2);
    assert_eq!(p["totalContainers"], 2);
    assert_eq!(p["state"], "Active");
    let t = p["lastStateTransitionTime"].as_i64().expect("Unix ns");
    assert!(t > 1_600_000_000_000_000_000, "{t}");

    let r = get(&addr, "/ws/v1/partition/default/queues");
    assert_eq!(r.status, 200);
    let q = r.json();
    assert_eq!(q["queuename"], "root");
    assert_eq!(q["partition"], "default");
    assert_eq!(q["isLeaf"], false);
    let a = &q["children"][0];
    assert_eq!(a["queuename"], "root.a");
    assert_eq!(a["parent"], "root");
    assert_eq!(a["isLeaf"], true);
    assert_eq!(a["isManaged"], true);
    assert_eq!(
        a["maxResource"],
        serde_json::json!({"memory": 4000, "vcore": 40})
    );
    assert_eq!(
        a["guaranteedResource"],
        serde_json::json!({"memory": 500, "vcore": 5})
    );
    assert_eq!(
        a["allocatedResource"],
        serde_json::json!({"memory": 200, "vcore": 2})
    );
    assert_eq!(
        a["absUsedCapacity"],
        serde_json::json!({"memory": 5, "vcore": 5})
    );
    assert!(a["template"].is_null());

    get(&addr, "/ws/v1/partition/nope/queues").assert_error(404);
}

#[test]
fn apps_and_nodes_have_the_reference_shapes() {
    let (_h, addr) = running();

    let r = get(&addr, "/ws/v1/apps");
    assert_eq!(r.status, 200);
    let apps = r.json();
    let app = &apps[0];
    assert_eq!(app["applicationID"], "app-1");
    assert_eq!(app["partition"], "default");
    assert_eq!(app["queueName"], "root.a");
    assert_eq!(app["usedResource"], "[memory:200 vcore:2]");
    assert!(app["submissionTime"].as_i64().unwrap() > 1_600_000_000_000_000_000);
    assert!(app["applicationState"].is_string());
    let allocs = app["allocations"].as_array().unwrap();
    assert_eq!(allocs.len(), 2);
    let al = &allocs[0];
    assert_eq!(al["allocationKey"], "ask-1");
    assert_eq!(al["allocationTags"]["kubernetes.io/meta/podName"], "pod-1");
    assert!(al["uuid"].as_str().is_some_and(|u| !u.is_empty()));
    assert_eq!(al["resource"], "[memory:100 vcore:1]");
    assert_eq!(al["priority"], "0");
    assert_eq!(al["queueName"], "root.a");
    assert!(al["nodeId"].as_str().unwrap().starts_with("node-"));
    assert_eq!(al["applicationId"], "app-1");
    assert_eq!(al["partition"], "default");

    let r = get(&addr, "/ws/v1/apps?queue=ROOT%2EA");
    assert_eq!(r.status, 200);
    assert_eq!(r.json().as_array().unwrap().len(), 1);
    get(&addr, "/ws/v1/apps?queue=root.nope").assert_error(400);

    let r = get(&addr, "/ws/v1/partition/default/queue/root.a/applications");
    assert_eq!(r.status, 200);
    assert_eq!(r.json()[0]["applicationID"], "app-1");
    get(
        &addr,
        "/ws/v1/partition/default/queue/root.zzz/applications",
    )
    .assert_error(404);

    let r = get(&addr, "/ws/v1/nodes");
    assert_eq!(r.status, 200);
    let n = &r.json()[0];
    assert_eq!(n["partitionName"], "default");
    let infos = n["nodesInfo"].as_array().unwrap();
    assert_eq!(infos.len(), 2);
    let mut held = 0;
    for i in infos {
        assert!(i["nodeID"].as_str().unwrap().starts_with("node-"));
        assert!(i["hostName"].is_string() && i["rackName"].is_string());
        assert_eq!(i["capacity"], "[memory:1000 vcore:10]");
        for f in ["allocated", "occupied", "available"] {
            assert!(is_res_string(&i[f]), "{f}: {i}");
        }
        assert_eq!(i["schedulable"], true);
        held += i["allocations"].as_array().unwrap().len();
    }
    assert_eq!(held, 2);

    let r = get(&addr, "/ws/v1/partition/default/nodes");
    assert_eq!(r.status, 200);
    assert_eq!(r.json().as_array().unwrap().len(), 2);

    let r = get(&addr, "/ws/v1/nodes/utilization");
    assert_eq!(r.status, 200);
    let per_type = r.json();
    let mem = per_type
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["type"] == "memory")
        .expect("memory");
    let buckets = mem["utilization"].as_array().unwrap();
    assert_eq!(buckets.len(), 10);
    assert_eq!(buckets[0]["bucketName"], "0-10%");
    assert_eq!(buckets[9]["bucketName"], "90-100%");
    let nodes: u64 = buckets
        .iter()
        .map(|b| b["numOfNodes"].as_u64().unwrap())
        .sum();
    assert_eq!(nodes, 2);
}

#[test]
fn health_dump_history_metrics_and_loglevel() {
    // It sets the process's log level and reads it back.
    let _log = crate::common::serial::log();
    let (h, addr) = running();

    let r = get(&addr, "/ws/v1/scheduler/healthcheck");
    assert_eq!(r.status, 200, "{}", r.body);
    let v = r.json();
    assert_eq!(v["Healthy"], true);
    let checks = v["HealthChecks"].as_array().unwrap();
    assert!(checks.len() >= 5);
    for c in checks {
        assert!(c["Name"].is_string() && c["Description"].is_string());
        assert_eq!(c["Succeeded"], true, "{c}");
        // Left out when empty, as YuniKorn v1.x.
        assert!(c.get("DiagnosisMessage").is_none_or(Value::is_string));
    }

    let r = get(&addr, "/ws/v1/fullstatedump");
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["partitions"][0]["name"], "default");

    // The first history sample is taken when the scheduler starts.
    for (path, field) in [
        ("/ws/v1/history/apps", "totalApplications"),
        ("/ws/v1/history/containers", "totalContainers"),
    ] {
        let r = get(&addr, path);
        assert_eq!(r.status, 200);
        let samples = r.json();
        let first = &samples.as_array().unwrap()[0];
        assert!(first["timestamp"].as_i64().unwrap() > 0);
        assert!(first[field].is_string(), "{first}");
    }

    // Counters move with the decisions; gauges follow within a refresh, and
    // a refresh taken between the node registrations and the allocations
    // shows the nodes with an empty queue, so wait for every series checked.
    let needles = [
        "yunikorn_scheduler_node_active_total 2",
        "yunikorn_scheduler_container_allocation_attempt_total{state=\"allocated\"} 2",
        "yunikorn_scheduler_application_submission_total{result=\"accepted\"} 1",
        "yunikorn_scheduler_scheduling_latency_seconds_count",
        "yunikorn_scheduler_memory_node_usage_total{range=\"[0,10%]\"} 2",
        "yunikorn_queue_root_a_used_resource{resource=\"memory\"} 200",
        "yunikorn_event_total_created",
        "# TYPE yunikorn_scheduler_scheduling_latency_seconds histogram",
    ];
    crate::restkit::scrape_until(&needles, || metrics_text(&h), |t, n| t.contains(n));
    for path in ["/ws/v1/metrics", "/metrics"] {
        let r = get(&addr, path);
        assert_eq!(r.status, 200);
        assert!(r
            .header("Content-Type")
            .unwrap()
            .contains("text/plain; version=0.0.4"));
        assert!(r
            .body
            .contains("yunikorn_scheduler_container_allocation_attempt_total"));
    }

    let r = get(&addr, "/ws/v1/loglevel");
    assert_eq!(r.status, 200);
    assert!(["error", "warn", "info", "debug", "trace", "off"].contains(&r.body.as_str()));
    let before = r.body;
    let r = http(&addr, "PUT", "/ws/v1/loglevel/debug", &[], b"");
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(get(&addr, "/ws/v1/loglevel").body, "debug");
    http(&addr, "PUT", "/ws/v1/loglevel/loud", &[], b"").assert_error(400);
    http(&addr, "PUT", &format!("/ws/v1/loglevel/{before}"), &[], b"");
}

#[test]
fn bad_requests_get_json_errors() {
    let (_h, addr) = running();
    get(&addr, "/ws/v1/nothing").assert_error(404);
    get(&addr, "/").assert_error(404);
    for path in ["/ws/v1/stack", "/debug/pprof/", "/debug/pprof/heap"] {
        let r = get(&addr, path);
        r.assert_error(404);
        assert!(
            r.json()["message"].as_str().unwrap().contains("Go"),
            "{}",
            r.body
        );
    }
    let r = http(&addr, "HEAD", "/ws/v1/clusters", &[], b"");
    assert_eq!(r.status, 200);
    assert!(r.body.is_empty(), "HEAD has no body: {}", r.body);
    let r = http(&addr, "OPTIONS", "/ws/v1/config", &[], b"");
    assert_eq!(r.status, 200);
    assert_eq!(r.header("Access-Control-Allow-Origin"), Some("*"));
    let r = http(&addr, "POST", "/ws/v1/queues", &[], b"{}");
    r.assert_error(405);
    assert_eq!(r.header("Allow"), Some("GET"));
    http(&addr, "DELETE", "/ws/v1/config", &[], b"").assert_error(405);
    http(&addr, "GET", "/ws/v1/validate-conf", &[], b"").assert_error(405);
    // Malformed bodies.
    http(&addr, "PUT", "/ws/v1/config", &[], b"partitions: [ {").assert_error(400);
    http(&addr, "PUT", "/ws/v1/config", &[], &[0xff, 0xfe, 0x00]).assert_error(400);
    // The size limit: a body declared larger than the limit is refused
    // before it is sent (the client sends only the headers here, so the
    // answer is not lost to a reset of unread data).
    let mut s = TcpStream::connect(&addr).unwrap();
    s.set_read_timeout(Some(WAIT)).unwrap();
    write!(
        s,
        "PUT /ws/v1/config HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n\r\n",
        sicore::rest::MAX_BODY_BYTES + 1
    )
    .unwrap();
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    let text = String::from_utf8_lossy(&raw);
    assert!(text.starts_with("HTTP/1.1 413"), "{text}");
    assert!(text.contains("\"status_code\":413"), "{text}");
    // Validation only.
    let r = http(
        &addr,
        "POST",
        "/ws/v1/validate-conf",
        &[],
        b"partitions: nope",
    );
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["allowed"], false);
    assert!(!r.json()["reason"].as_str().unwrap().is_empty());
    let r = http(&addr, "POST", "/ws/v1/validate-conf", &[], YAML.as_bytes());
    assert_eq!(r.json()["allowed"], true, "{}", r.body);
    let r = http(
        &addr,
        "POST",
        "/ws/v1/config?dry_run=1",
        &[],
        YAML.as_bytes(),
    );
    assert_eq!(r.json()["allowed"], true);
    http(&addr, "POST", "/ws/v1/config", &[], YAML.as_bytes()).assert_error(400);
}

#[test]
fn config_update_round_trip_with_an_accepting_and_a_rejecting_rm() {
    let (h, addr) = running();

    let r = get(&addr, "/ws/v1/config");
    assert_eq!(r.status, 200);
    let current = r.body;
    let checksum = current
        .lines()
        .find_map(|l| l.strip_prefix("checksum: "))
        .expect("the config carries its checksum")
        .to_string();
    assert_eq!(checksum.len(), 64);
    let r = http(
        &addr,
        "GET",
        "/ws/v1/config",
        &[("Accept", "application/json")],
        b"",
    );
    assert_eq!(r.json()["checksum"], checksum.as_str());
    assert_eq!(r.json()["partitions"][0]["name"], "default");

    // Accepted: the RM gets the text without the checksum, then it applies.
    let updated = format!(
        "{YAML}          - name: b\n            resources:\n              max: {{memory: 300}}\nchecksum: {checksum}\n"
    );
    let r = http(&addr, "PUT", "/ws/v1/config", &[], updated.as_bytes());
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body, "Configuration updated successfully");
    let sent = h.seen(|s| s.config_updates.clone());
    assert_eq!(sent.len(), 1);
    assert!(sent[0].contains("name: b") && !sent[0].contains("checksum"));
    let dump = h.dump();
    let b = find_queue(&dump, "default", "root.b").expect("root.b after the update");
    assert_eq!(b["max"]["memory"], 300);
    let new_checksum = dump["rms"][0]["config_checksum"]
        .as_str()
        .unwrap()
        .to_string();
    assert_ne!(new_checksum, checksum);
    assert!(get(&addr, "/ws/v1/config").body.contains(&new_checksum));

    // A stale base checksum is a conflict; nothing reaches the RM.
    let stale = format!("{YAML}checksum: {checksum}\n");
    http(&addr, "PUT", "/ws/v1/config", &[], stale.as_bytes()).assert_error(409);
    assert_eq!(h.seen(|s| s.config_updates.len()), 1);

    // An invalid configuration never reaches the RM.
    let invalid = format!("partitions:\n  - name: default\n    queues:\n      - name: root\n        queues:\n          - name: 'bad name!'\nchecksum: {new_checksum}\n");
    let r = http(&addr, "PUT", "/ws/v1/config", &[], invalid.as_bytes());
    r.assert_error(400);
    assert_eq!(h.seen(|s| s.config_updates.len()), 1);

    // Not applicable (root.a holds an application and cannot become a
    // parent): 400 from the dry run, before the RM is asked.
    let reparent =
        format!("{YAML}            queues:\n              - name: x\nchecksum: {new_checksum}\n");
    let r = http(&addr, "PUT", "/ws/v1/config", &[], reparent.as_bytes());
    r.assert_error(400);
    assert!(
        r.json()["message"]
            .as_str()
            .unwrap()
            .contains("cannot become a parent"),
        "{}",
        r.body
    );
    assert_eq!(h.seen(|s| s.config_updates.len()), 1, "the RM is not asked");
    assert_eq!(h.dump()["rms"][0]["config_checksum"], new_checksum.as_str());

    // Rejected by the RM: 400 with its reason, the old configuration stays.
    h.rec.behaviour.lock().unwrap().reject_config = Some("configmap is read-only".into());
    let without_b = format!("{YAML}checksum: {new_checksum}\n");
    let r = http(&addr, "PUT", "/ws/v1/config", &[], without_b.as_bytes());
    r.assert_error(400);
    assert!(r.json()["message"]
        .as_str()
        .unwrap()
        .contains("configmap is read-only"));
    assert_eq!(h.seen(|s| s.config_updates.len()), 2);
    let dump = h.dump();
    assert!(
        find_queue(&dump, "default", "root.b").is_some(),
        "old config stays"
    );
    assert_eq!(dump["rms"][0]["config_checksum"], new_checksum.as_str());
}

#[test]
fn slow_clients_do_not_stall_scheduling_or_other_clients() {
    let (h, addr) = running();
    // Clients that open a request and never finish it.
    let mut idle = Vec::new();
    for _ in 0..16 {
        let mut s = TcpStream::connect(&addr).unwrap();
        write!(s, "GET /ws/v1/queues HTTP/1.1\r\nHost: {addr}\r\n").unwrap();
        idle.push(s);
    }
    // Scheduling goes on...
    assert_eq!(
        h.asks(vec![ask("app-1", "ask-2", 100, 1, 3)]).0,
        sicore_status::SICORE_OK
    );
    h.wait("three more allocations", |s| s.allocations.len() == 5);
    // ... and other clients are served.
    let r = get(&addr, "/ws/v1/clusters");
    assert_eq!(r.status, 200);
    let running = crate::restkit::poll("fresh snapshot", || {
        let v = get(&addr, "/ws/v1/clusters").json();
        (v[0]["runningContainers"] == "5").then_some(v)
    });
    assert_eq!(running[0]["totalContainers"], "5");
    drop(idle);
}

#[test]
fn no_server_unless_asked_and_bad_addresses_are_refused() {
    let h = Harness::new(yaml_options(YAML));
    let mut out = sicore_buffer::empty();
    let mut err = sicore_buffer::empty();
    assert_eq!(
        sicore_rest_address(h.sched, &mut out, &mut err),
        sicore_status::SICORE_OK
    );
    assert_eq!(take_string(out), "");
    // Metrics work without the REST service.
    assert!(metrics_text(&h).contains("yunikorn_scheduler_node_active_total"));

    let mut o = yaml_options(YAML);
    o.rest_address = "not an address".into();
    let bytes = options_bytes(&o);
    let mut sched = std::ptr::null_mut();
    let mut err = sicore_buffer::empty();
    let st = sicore_new(bytes.as_ptr(), bytes.len(), &mut sched, &mut err);
    assert_eq!(st, sicore_status::SICORE_INVALID_ARGUMENT);
    assert!(take_string(err).contains("rest_address"));
    assert!(sched.is_null());

    // A port in use is refused with the reason.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let mut o = yaml_options(YAML);
    o.rest_address = taken.local_addr().unwrap().to_string();
    let bytes = options_bytes(&o);
    let mut err = sicore_buffer::empty();
    let st = sicore_new(bytes.as_ptr(), bytes.len(), &mut sched, &mut err);
    assert_eq!(st, sicore_status::SICORE_REJECTED);
    assert!(take_string(err).contains("cannot listen"));

    let mut out = sicore_buffer::empty();
    assert_eq!(
        sicore_metrics(std::ptr::null_mut(), &mut out, std::ptr::null_mut()),
        sicore_status::SICORE_INVALID_ARGUMENT
    );
}

#[test]
fn free_stops_the_server() {
    let (h, addr) = running();
    assert_eq!(get(&addr, "/ws/v1/queues").status, 200);
    drop(h);
    // The port is closed once sicore_free returns.
    assert!(TcpStream::connect(&addr).is_err());
}

#[test]
fn queues_of_two_partitions_are_newline_ended_documents() {
    let two = "partitions:
  - name: default
    queues:
      - name: root
  - name: gpu
    queues:
      - name: root
";
    let h = Harness::configured(rest_options(two), 0);
    let addr = rest_address(&h);
    let r = get(&addr, "/ws/v1/queues");
    assert_eq!(r.status, 200, "{}", r.body);
    // As the reference's encoder writes them: each document, then "\n".
    assert!(r.body.ends_with("}\n"), "{}", r.body);
    let docs: Vec<Value> = r
        .body
        .split_terminator('\n')
        .map(|d| serde_json::from_str(d).unwrap_or_else(|e| panic!("{e}: {d}")))
        .collect();
    let names: Vec<&str> = docs
        .iter()
        .map(|d| d["partitionName"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["default", "gpu"], "{}", r.body);
}
