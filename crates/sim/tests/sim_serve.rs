//! `sicore-sim --serve ADDR`: after the workload the scheduler and its REST
//! service stay up until the process is interrupted, then it exits cleanly.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::Duration;

fn get(addr: &str, path: &str) -> String {
    let mut s = TcpStream::connect(addr).expect("the REST service is up");
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

/// The body of a response, chunked transfer encoding undone.
fn body(response: &str) -> String {
    let (head, rest) = response.split_once("\r\n\r\n").expect("a header block");
    if !head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        return rest.to_string();
    }
    let mut out = String::new();
    let mut rest = rest;
    loop {
        let (size, after) = rest.split_once("\r\n").expect("a chunk size line");
        let size = usize::from_str_radix(size.trim(), 16).expect("a hex chunk size");
        if size == 0 {
            return out;
        }
        out.push_str(&after[..size]);
        rest = &after[size + 2..];
    }
}

fn get_json(addr: &str, path: &str) -> serde_json::Value {
    let response = get(addr, path);
    assert!(response.starts_with("HTTP/1.1 200"), "{path}: {response}");
    serde_json::from_str(&body(&response)).unwrap_or_else(|e| panic!("{path}: {e}: {response}"))
}

/// Starts `sicore-sim --serve` on a free port with `args`; returns the
/// child and the REST service's address, once the workload has run.
fn start_serving(args: &[&str]) -> (std::process::Child, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_sicore-sim"))
        .args(args)
        .args(["--serve", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start sicore-sim");
    let stdout = child.stdout.take().unwrap();
    let mut lines = BufReader::new(stdout).lines();
    let addr = loop {
        let line = lines
            .next()
            .expect("sicore-sim announces the REST service before exiting")
            .unwrap();
        if let Some(rest) = line.strip_prefix("REST service on http://") {
            break rest.split('/').next().unwrap().to_string();
        }
    };
    (child, addr)
}

fn interrupt(child: std::process::Child) {
    stop_with(child, "-INT");
}

/// Sends `signal` (a `kill` option) and expects a clean exit.
fn stop_with(mut child: std::process::Child, signal: &str) {
    let status = Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status()
        .expect("run kill");
    assert!(status.success());
    let exit = child.wait().unwrap();
    assert!(
        exit.success(),
        "sicore-sim exits cleanly on {signal}: {exit:?}"
    );
}

/// A service manager stops the simulator with SIGTERM: it stops the
/// scheduler and exits cleanly, as on Ctrl-C, and the port is closed.
#[test]
fn serve_stops_cleanly_on_sigterm() {
    let (child, addr) = start_serving(&["--nodes", "5", "--asks", "10"]);
    get_json(&addr, "/ws/v1/partition/default/nodes");
    stop_with(child, "-TERM");
    assert!(TcpStream::connect(&addr).is_err(), "the port is closed");
}

/// The web UI's node list shows `hostName` and `rackName`, and its
/// allocation lists a display name built from the namespace and pod-name
/// tags (issue 24): the simulator sends what a Kubernetes shim sends.
#[test]
fn serve_fills_the_web_uis_host_rack_and_display_name_columns() {
    let (child, addr) = start_serving(&["--nodes", "30", "--asks", "40"]);
    let nodes = get_json(&addr, "/ws/v1/partition/default/nodes");
    let nodes = nodes.as_array().expect("an array of nodes");
    assert_eq!(nodes.len(), 30);
    let mut racks = std::collections::BTreeSet::new();
    let mut on_nodes = 0;
    for n in nodes {
        assert_eq!(n["hostName"], n["nodeID"], "{n}");
        let rack = n["rackName"].as_str().unwrap_or_default();
        assert!(rack.starts_with("/rack-"), "{n}");
        racks.insert(rack.to_string());
        // v1.x leaves `allocations` out on a node that has none.
        for a in n["allocations"].as_array().into_iter().flatten() {
            on_nodes += 1;
            let tags = &a["allocationTags"];
            assert_eq!(tags["kubernetes.io/meta/namespace"], "sim", "{a}");
            let pod = tags["kubernetes.io/meta/podName"]
                .as_str()
                .unwrap_or_default();
            assert!(pod.starts_with(a["applicationId"].as_str().unwrap()), "{a}");
        }
    }
    assert_eq!(on_nodes, 40);
    assert!(racks.len() > 1, "nodes spread over racks: {racks:?}");
    let apps = get_json(&addr, "/ws/v1/apps");
    let mut pods = std::collections::BTreeSet::new();
    for app in apps.as_array().expect("an array of applications") {
        for a in app["allocations"].as_array().unwrap() {
            let tags = &a["allocationTags"];
            assert_eq!(tags["kubernetes.io/meta/namespace"], "sim", "{a}");
            pods.insert(
                tags["kubernetes.io/meta/podName"]
                    .as_str()
                    .unwrap()
                    .to_string(),
            );
        }
    }
    assert_eq!(pods.len(), 40, "one pod name per allocation: {pods:?}");
    interrupt(child);
}

#[test]
fn serve_keeps_the_rest_service_up_until_interrupted() {
    let (mut child, addr) = start_serving(&["--nodes", "10", "--asks", "50"]);

    let clusters = get(&addr, "/ws/v1/clusters");
    assert!(clusters.starts_with("HTTP/1.1 200"), "{clusters}");
    assert!(
        clusters.contains("\"runningContainers\":\"50\""),
        "{clusters}"
    );
    let metrics = get(&addr, "/metrics");
    assert!(
        metrics.contains(
            "yunikorn_scheduler_container_allocation_attempt_total{state=\"allocated\"} 50"
        ),
        "{metrics}"
    );
    // Still serving: the process waits for the interrupt.
    assert!(child.try_wait().unwrap().is_none());

    interrupt(child);
    assert!(TcpStream::connect(&addr).is_err(), "the port is closed");
}
