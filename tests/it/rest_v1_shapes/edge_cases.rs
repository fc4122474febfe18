//! gzip, the v0.12 paths, hostile requests and node utilizations without nodes.

use super::*;

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
