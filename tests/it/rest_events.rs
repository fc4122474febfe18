//! The REST event history (`/ws/v1/events/batch`, `/ws/v1/events/stream`)
//! as an SI v1.x RM and its operator see it: records in the v1.x form with
//! the partition and queue, IDs and the ring bound from the RM's
//! `extraConfig`, parameters checked as the reference does, and streams
//! that are bounded in number and cannot hold the service: a client that
//! never reads, and clients beyond the limits, leave the health check and
//! the metrics reachable. Everything runs on loopback, bounded in count
//! and time.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use crate::common::v1::{v1_options, V1Rm};
use crate::restkit::*;
use serde_json::Value;
use sicore::ffi::sicore_status::SICORE_OK;
use sicore::proto::si18::v1 as si18;
use sicore::proto::sicore::v1::{RestOptions, SchedulerOptions};
use sicore_c_rm::v1 as rmv1;

const CONFIG: &str = "partitions:
  - name: default
    queues:
      - name: root
        submitacl: '*'
        queues:
          - name: a
";

fn extra(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn options() -> SchedulerOptions {
    let mut o = v1_options();
    o.rest_address = "127.0.0.1:0".into();
    o.event_types = vec!["REQUEST".into(), "APP".into(), "NODE".into()];
    o.rest = Some(RestOptions {
        connection_timeout_ms: 2_000,
        max_connections_per_peer: 64,
        ..Default::default()
    });
    o
}

/// An SI v1.x RM `rm1` with REST, registered with `pairs` as extraConfig.
fn rm_with(pairs: &[(&str, &str)]) -> (V1Rm, String) {
    let req = si18::RegisterResourceManagerRequest {
        rm_id: "rm1".into(),
        version: "v1.8.0".into(),
        policy_group: "queues".into(),
        config: CONFIG.into(),
        extra_config: extra(pairs),
        ..Default::default()
    };
    let rm = V1Rm::registered(options(), &req, false, |_| {});
    let addr = rest_address(rm.sched);
    (rm, addr)
}

/// Sends the configuration again with `pairs` as the RM's extraConfig.
fn set_extra(rm: &V1Rm, pairs: &[(&str, &str)]) {
    let (st, msg) = rmv1::update_configuration(
        rm.sched,
        &si18::UpdateConfigurationRequest {
            rm_id: "rm1".into(),
            policy_group: "queues".into(),
            config: CONFIG.into(),
            extra_config: extra(pairs),
        },
    );
    assert_eq!(st, SICORE_OK, "{msg}");
}

/// Submits applications `prefix0..prefixN` to `root.a` in one request,
/// each with one ask (an application changes state, and so makes its
/// APP records, once it asks).
fn apps(rm: &V1Rm, prefix: &str, n: usize) {
    let ids: Vec<String> = (0..n).map(|i| format!("{prefix}{i}")).collect();
    let new = ids
        .iter()
        .map(|id| rmv1::app(id, "root.a", "alice"))
        .collect();
    let (st, msg) = rm.apps(new);
    assert_eq!(st, SICORE_OK, "{msg}");
    rm.allocate(
        ids.iter()
            .map(|id| rmv1::ask(id, &format!("{id}-k"), 1, 0))
            .collect(),
        vec![],
    );
}

fn batch(addr: &str, query: &str) -> Value {
    get_json(addr, &format!("/ws/v1/events/batch{query}"))
}

fn records(v: &Value) -> Vec<Value> {
    v["EventRecords"].as_array().cloned().unwrap_or_default()
}

/// Waits until the history holds a record that `pred` accepts.
fn wait_record(addr: &str, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
    poll(what, || records(&batch(addr, "")).into_iter().find(&pred))
}

/// An open event stream: the raw connection and what arrived so far.
struct Stream {
    s: TcpStream,
    text: String,
}

impl Stream {
    /// Sends the request; does not read.
    fn open(addr: &str, query: &str) -> Stream {
        let mut s = TcpStream::connect(addr).unwrap();
        let req = format!("GET /ws/v1/events/stream{query} HTTP/1.1\r\nHost: {addr}\r\n\r\n");
        s.write_all(req.as_bytes()).unwrap();
        Stream {
            s,
            text: String::new(),
        }
    }

    /// Reads until `done` holds on the JSON lines received (at most
    /// [`PATIENCE`]); the status line's code and the lines.
    fn read_until(&mut self, done: impl Fn(&[Value]) -> bool) -> (u16, Vec<Value>) {
        let deadline = Instant::now() + PATIENCE;
        self.s
            .set_read_timeout(Some(Duration::from_millis(100)))
            .unwrap();
        let mut buf = [0u8; 16 * 1024];
        loop {
            let lines = self.lines();
            if done(&lines) || Instant::now() >= deadline {
                return (self.status(), lines);
            }
            match self.s.read(&mut buf) {
                Ok(0) => return (self.status(), self.lines()),
                Ok(n) => self.text.push_str(&String::from_utf8_lossy(&buf[..n])),
                Err(_) => {}
            }
        }
    }

    fn status(&self) -> u16 {
        self.text
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0)
    }

    /// The JSON lines of the body (chunk sizes and headers left out:
    /// each chunk is whole lines).
    fn lines(&self) -> Vec<Value> {
        let body = self.text.split_once("\r\n\r\n").map_or("", |(_, b)| b);
        body.split(['\r', '\n'])
            .filter(|l| l.starts_with('{'))
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }
}

#[test]
fn batches_carry_v1_records_with_partition_and_queue_and_check_their_parameters() {
    let (rm, addr) = rm_with(&[
        ("event.ringBufferCapacity", "40"),
        ("event.RESTResponseSize", "25"),
    ]);
    rm.node("n1", 1 << 30);
    apps(&rm, "app-", 2);
    let app = wait_record(&addr, "the APP record", |r| r["objectID"] == "app-1");
    assert_eq!(app["type"], 2, "enums are numbers: {app}");
    assert_eq!(app["partition"], "default", "{app}");
    assert_eq!(app["queue"], "root.a", "{app}");
    assert!(app["timestampNano"].as_i64().unwrap() > 0, "{app}");
    assert!(app["eventChangeDetail"].as_i64().is_some(), "{app}");
    let node = wait_record(&addr, "the NODE record", |r| r["objectID"] == "n1");
    assert_eq!(node["type"], 3, "{node}");
    assert_eq!(node["partition"], "default", "{node}");
    assert!(node.get("queue").is_none(), "a node has no queue: {node}");
    assert!(
        node["resource"]["resources"]["memory"]["value"].as_i64() == Some(1 << 30),
        "the SI resource form: {node}"
    );

    let all = batch(&addr, "");
    let uuid = all["InstanceUUID"].as_str().unwrap().to_string();
    assert!(!uuid.is_empty());
    let (low, high) = (
        all["LowestID"].as_u64().unwrap(),
        all["HighestID"].as_u64().unwrap(),
    );
    assert_eq!(low, 0);
    assert_eq!(records(&all).len() as u64, high + 1, "{all}");

    // start and count pick a window; a huge count is lowered silently.
    let one = batch(&addr, "?start=1&count=1");
    assert_eq!(records(&one).len(), 1);
    assert_eq!(records(&one)[0], records(&all)[1]);
    // (Records may still arrive meanwhile: compare with this batch's IDs.)
    let huge = batch(&addr, "?count=18446744073709551615");
    let stored = huge["HighestID"].as_u64().unwrap() - huge["LowestID"].as_u64().unwrap() + 1;
    assert_eq!(records(&huge).len() as u64, stored.min(25));
    // A start not stored: null records, the IDs say where to restart.
    let ahead = batch(&addr, &format!("?start={}", high + 1000));
    assert!(ahead["EventRecords"].is_null(), "{ahead}");
    assert!(ahead["HighestID"].as_u64().unwrap() >= high, "{ahead}");
    assert_eq!(ahead["InstanceUUID"], uuid.as_str());

    // Bad parameters: 400 in the v1 error shape, with the reference's texts.
    for (query, text) in [
        ("?count=0", r#"0 is not a valid value for "count""#),
        ("?count=abc", "invalid syntax"),
        ("?start=-1", "invalid syntax"),
        ("?start=1e3", "invalid syntax"),
        ("?count=99999999999999999999999", "value out of range"),
    ] {
        let r = http(
            &addr,
            "GET",
            &format!("/ws/v1/events/batch{query}"),
            &[],
            b"",
        );
        assert_eq!(r.status, 400, "{query}: {}", r.body);
        let e = r.json();
        assert_eq!(e["status_code"], 400);
        assert!(
            e["message"].as_str().unwrap().contains(text),
            "{query}: {e}"
        );
        assert_eq!(e["message"], e["description"]);
    }

    // More records than the ring holds: the oldest IDs fall off, the
    // batch is bounded by event.RESTResponseSize.
    apps(&rm, "many-", 60);
    // The core emits these events on its own thread: wait until the ring
    // has wrapped and no record came for a while, so the IDs below hold.
    let later = poll("the ring to wrap and settle", || {
        let v = batch(&addr, "");
        std::thread::sleep(std::time::Duration::from_millis(300));
        let again = batch(&addr, "");
        (v["LowestID"].as_u64().unwrap() > 0 && v["HighestID"] == again["HighestID"])
            .then_some(again)
    });
    let (low, high) = (
        later["LowestID"].as_u64().unwrap(),
        later["HighestID"].as_u64().unwrap(),
    );
    assert_eq!(high - low + 1, 40, "event.ringBufferCapacity: {later}");
    // The default start, 0, fell off: null, as the reference answers.
    assert!(later["EventRecords"].is_null(), "{later}");
    let window = batch(&addr, &format!("?start={low}"));
    assert_eq!(
        records(&window).len(),
        25,
        "event.RESTResponseSize: {window}"
    );
    let tail = batch(&addr, &format!("?start={}", high));
    assert_eq!(records(&tail).len(), 1);
}

#[test]
fn tracking_off_answers_500_for_both_paths() {
    let (_rm, addr) = rm_with(&[("event.trackingEnabled", "false")]);
    for path in ["/ws/v1/events/batch", "/ws/v1/events/stream"] {
        let r = http(&addr, "GET", path, &[], b"");
        assert_eq!(r.status, 500, "{path}: {}", r.body);
        assert_eq!(r.json()["message"], "Event tracking is disabled");
    }
}

#[test]
fn a_stream_sends_recent_records_then_new_ones_and_streams_are_bounded() {
    let (rm, addr) = rm_with(&[("event.maxStreams", "3"), ("event.maxStreamsPerHost", "2")]);
    apps(&rm, "first", 1);
    wait_record(&addr, "the first record", |r| r["objectID"] == "first0");

    let mut s1 = Stream::open(&addr, "?count=1");
    let (status, lines) = s1.read_until(|l| l.len() >= 2);
    assert_eq!(status, 200, "{}", s1.text);
    assert!(lines[0]["InstanceUUID"].as_str().is_some(), "{lines:?}");
    assert_eq!(lines.len(), 2, "the newest record first: {lines:?}");
    apps(&rm, "second", 1);
    let (_, lines) = s1.read_until(|l| l.iter().any(|r| r["objectID"] == "second0"));
    let second = lines.iter().find(|r| r["objectID"] == "second0").unwrap();
    assert_eq!(second["queue"], "root.a", "{second}");
    assert!(lines.len() >= 3, "{lines:?}");

    // A second stream of this host is served; a third is refused with
    // the v1 error shape, while health and metrics stay reachable.
    let mut s2 = Stream::open(&addr, "");
    assert_eq!(s2.read_until(|l| !l.is_empty()).0, 200);
    let refused = http(&addr, "GET", "/ws/v1/events/stream", &[], b"");
    assert_eq!(refused.status, 503, "{}", refused.body);
    let e = refused.json();
    assert_eq!(e["status_code"], 503);
    assert_eq!(e["message"], "Too many streaming connections");
    assert_eq!(
        http(&addr, "GET", "/ws/v1/scheduler/healthcheck", &[], b"").status,
        200
    );
    assert_eq!(http(&addr, "GET", "/ws/v1/metrics", &[], b"").status, 200);
    // A bad count is refused before anything streams.
    let bad = http(&addr, "GET", "/ws/v1/events/stream?count=x", &[], b"");
    assert!(bad.status == 400 || bad.status == 503, "{}", bad.body);

    // A closed stream frees its place; a new limit applies to new streams.
    drop(s2);
    let mut s3 = poll("a freed stream place", || {
        let mut s = Stream::open(&addr, "");
        (s.read_until(|l| !l.is_empty()).0 == 200).then_some(s)
    });
    set_extra(
        &rm,
        &[("event.maxStreams", "2"), ("event.maxStreamsPerHost", "9")],
    );
    poll("the new stream limit", || {
        (http(&addr, "GET", "/ws/v1/events/stream", &[], b"").status == 503).then_some(())
    });
    // Streams outlive the connection lifetime limit (2 s here) and go on.
    std::thread::sleep(Duration::from_millis(2_500));
    apps(&rm, "third", 1);
    let (_, lines) = s3.read_until(|l| l.iter().any(|r| r["objectID"] == "third0"));
    assert!(lines.iter().any(|r| r["objectID"] == "third0"), "{lines:?}");
    drop(s1);
}

#[test]
fn a_stream_whose_client_never_reads_is_dropped_and_holds_nothing_else() {
    let (rm, addr) = rm_with(&[
        ("event.maxStreams", "1"),
        ("event.ringBufferCapacity", "1000"),
    ]);
    apps(&rm, "warm", 1);
    wait_record(&addr, "a record", |r| r["objectID"] == "warm0");
    // The client sends its request and never reads a byte.
    let silent = Stream::open(&addr, "");
    let started = Instant::now();
    let mut batches = 0;
    // Records keep coming until the socket buffers fill and the stream
    // stalls; the service drops it and the place is free again.
    let freed = loop {
        apps(&rm, &format!("b{batches}-"), 1000);
        batches += 1;
        for path in ["/ws/v1/scheduler/healthcheck", "/ws/v1/metrics"] {
            let r = http(&addr, "GET", path, &[], b"");
            assert_eq!(r.status, 200, "{path} while a stream stalls: {}", r.body);
        }
        let mut probe = Stream::open(&addr, "");
        let (status, lines) = probe.read_until(|l| !l.is_empty());
        if status == 200 || batches >= 40 || started.elapsed() > Duration::from_secs(60) {
            break status;
        }
        assert_eq!(status, 503, "{lines:?}");
        std::thread::sleep(Duration::from_millis(200));
    };
    drop(silent);
    assert_eq!(freed, 200, "the stalled stream was never dropped");
}
