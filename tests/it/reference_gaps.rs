//! Issue 24 items 12-16, as an RM sees them through the C ABI: a gang
//! application holding its real allocation never completes, node removal
//! during a swap reports the placeholder, the quota tag takes part in gang
//! admission, a queue removed from the configuration drains until the
//! queue cleaner runs, and a `Completing` application whose last
//! placeholder goes waits for its timer (spec 3.5, 3.7, 6.3, 9.2, 11.5).

use std::io::{Read, Write};

use crate::common::*;
use serde_json::Value;
use sicore::ffi::*;
use sicore::proto::si::v1 as si;
use sicore::proto::sicore::v1::SchedulerOptions;

use sicore_status::*;

const PR: i32 = si::TerminationType::PlaceholderReplaced as i32;
const STOPPED: i32 = si::TerminationType::StoppedByRm as i32;

fn gang_app(id: &str, queue: &str, memory: i64) -> si::AddApplicationRequest {
    let mut a = app(id, queue);
    a.placeholder_ask = res(&[("memory", memory), ("vcore", memory / 100)]);
    a
}

fn placeholder_ask(app: &str, key: &str, memory: i64, repeat: i32) -> si::AllocationAsk {
    let mut a = ask(app, key, memory, memory / 100, repeat);
    a.task_group_name = "tg".into();
    a.placeholder = true;
    a
}

fn real_ask(app: &str, key: &str, memory: i64) -> si::AllocationAsk {
    let mut a = ask(app, key, memory, memory / 100, 1);
    a.task_group_name = "tg".into();
    a
}

fn release(app: &str, uuid: &str, termination_type: i32) -> si::AllocationRelease {
    si::AllocationRelease {
        partition_name: "default".into(),
        application_id: app.into(),
        uuid: uuid.into(),
        termination_type,
        message: "done by the RM".into(),
    }
}

fn ask_release(app: &str, key: &str) -> si::AllocationAskRelease {
    si::AllocationAskRelease {
        partition_name: "default".into(),
        application_id: app.into(),
        allocationkey: key.into(),
        termination_type: STOPPED,
        message: "ask withdrawn by the RM".into(),
    }
}

fn decommission(id: &str) -> si::NodeInfo {
    si::NodeInfo {
        action: si::node_info::ActionFromRm::Decomission as i32,
        ..node(id, 0, 0)
    }
}

fn states(h: &Harness, app: &str) -> Vec<String> {
    h.seen(|s| {
        s.app_updates
            .iter()
            .filter(|u| u.application_id == app)
            .map(|u| u.state.clone())
            .collect()
    })
}

fn app_dump(d: &Value, id: &str) -> Value {
    d["partitions"][0]["applications"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["id"] == id)
        .cloned()
        .unwrap_or(Value::Null)
}

fn with_predicates() -> Behaviour {
    Behaviour {
        with_predicates: true,
        ..Default::default()
    }
}

/// A scheduler on the embedded default configuration (provided rule,
/// dynamic queues), `nodes` nodes of 1000 memory / 10 vcore, and the gang
/// application `a` accepted.
fn gang_harness(
    o: SchedulerOptions,
    b: Behaviour,
    nodes: usize,
    a: si::AddApplicationRequest,
) -> Harness {
    let h = Harness::with_behaviour(o, b);
    assert_eq!(h.register("rm", "queues").0, SICORE_OK);
    let list = (0..nodes)
        .map(|i| node(&format!("node-{i}"), 1000, 10))
        .collect();
    assert_eq!(h.nodes(list).0, SICORE_OK);
    h.wait("nodes", |s| s.nodes_accepted.len() == nodes);
    h.submit(a).expect("gang application accepted");
    h
}

// ------------------------------------------------------------- item 12

#[test]
fn a_gang_application_holding_its_real_allocation_does_not_complete() {
    let o = SchedulerOptions {
        app_completing_timeout_ms: Some(50),
        ..Default::default()
    };
    let h = gang_harness(o, Behaviour::default(), 1, gang_app("g", "root.a", 100));
    assert_eq!(
        h.asks(vec![placeholder_ask("g", "ph", 100, 1)]).0,
        SICORE_OK
    );
    h.wait("placeholder", |s| s.allocations.len() == 1);
    assert_eq!(h.asks(vec![real_ask("g", "real", 100)]).0, SICORE_OK);
    h.wait("swap", |s| {
        s.released.iter().any(|r| r.termination_type == PR)
    });
    let (ph, real_uuid) = h.seen(|s| {
        let r = s
            .released
            .iter()
            .find(|r| r.termination_type == PR)
            .unwrap();
        let real = r.message.strip_prefix("replacing UUID: ").unwrap();
        (r.uuid.clone(), real.to_string())
    });
    // Mid-swap, the RM withdraws the real ask (its allocation is made
    // already), then confirms the placeholder gone.
    assert_eq!(
        h.releases(vec![], vec![ask_release("g", "real")]).0,
        SICORE_OK
    );
    h.settle();
    assert_eq!(h.releases(vec![release("g", &ph, PR)], vec![]).0, SICORE_OK);
    h.wait("real allocation", |s| {
        s.allocations.iter().any(|a| a.uuid == real_uuid)
    });
    // Well past the completing timeout: the application runs its real
    // allocation, and the core never takes it away.
    h.settle();
    h.settle();
    let seen = states(&h, "g");
    assert_ne!(
        seen.last().map(String::as_str),
        Some("Completing"),
        "{seen:?}"
    );
    assert!(!seen.iter().any(|s| s == "Completed"), "{seen:?}");
    let released = h.seen(|s| s.released.clone());
    assert!(
        !released.iter().any(|r| r.uuid == real_uuid),
        "the live real allocation was released: {released:?}"
    );
    let d = h.dump();
    let g = app_dump(&d, "g");
    // The first replacement leaves the gang in Starting (spec 6.3).
    assert_eq!(g["state"], "Starting", "{g:#}");
    assert_eq!(g["allocated"]["memory"], 100, "{g:#}");
}

// ------------------------------------------------------------- item 13

#[test]
fn node_removal_during_a_cross_node_swap_reports_the_placeholder() {
    let h = gang_harness(
        SchedulerOptions::default(),
        with_predicates(),
        2,
        gang_app("g", "root.a", 100),
    );
    assert_eq!(
        h.asks(vec![placeholder_ask("g", "ph", 100, 1)]).0,
        SICORE_OK
    );
    h.wait("placeholder", |s| s.allocations.len() == 1);
    let ph = h.seen(|s| s.allocations[0].clone());
    // The placeholder's node refuses the real ask: it goes to the other node.
    h.rec
        .behaviour
        .lock()
        .unwrap()
        .refuse_nodes
        .insert(ph.node_id.clone());
    assert_eq!(h.asks(vec![real_ask("g", "real", 100)]).0, SICORE_OK);
    h.wait("swap", |s| {
        s.released.iter().any(|r| r.termination_type == PR)
    });
    assert_eq!(h.nodes(vec![decommission(&ph.node_id)]).0, SICORE_OK);
    h.wait("real allocation", |s| s.allocations.len() == 2);
    let message = format!("Node {} Removed", ph.node_id);
    let (released, allocations) = h.seen(|s| (s.released.clone(), s.allocations.clone()));
    assert!(
        released.iter().any(|r| r.uuid == ph.uuid
            && r.termination_type == STOPPED
            && r.message == message
            && r.application_id == "g"
            && r.partition_name == "default"),
        "the placeholder is reported released with the node: {released:?}"
    );
    assert!(!allocations[1].placeholder);
    assert_ne!(allocations[1].node_id, ph.node_id);
}

// ------------------------------------------------------------- item 14

#[test]
fn the_quota_tag_of_a_dynamic_queue_takes_part_in_gang_admission() {
    let h = Harness::configured(SchedulerOptions::default(), 1);
    let quota = |memory: i64| {
        format!(r#"{{"resources":{{"memory":{{"value":{memory}}},"vcore":{{"value":10}}}}}}"#)
    };
    // The tag makes root.ns1's max 100 memory; the gang wants 200.
    let mut big = gang_app("big", "root.ns1", 200);
    big.tags
        .insert("namespace.resourcequota".into(), quota(100));
    let reason = h.submit(big).expect_err("a gang larger than its quota");
    assert!(
        reason.contains("queue root.ns1 cannot fit application big: task group request")
            && reason.contains("larger than max queue allocation"),
        "{reason}"
    );
    // The queue was made for that application only: it is gone again.
    assert!(find_queue(&h.dump(), "default", "root.ns1").is_none());
    // A gang within its quota is admitted, and the tag sets the max.
    let mut fits = gang_app("fits", "root.ns2", 200);
    fits.tags
        .insert("namespace.resourcequota".into(), quota(300));
    assert_eq!(h.submit(fits), Ok(()));
    let q = find_queue(&h.dump(), "default", "root.ns2").unwrap();
    assert_eq!(q["max"]["memory"], 300, "{q:#}");
}

// ------------------------------------------------------------- item 15

const TWO_QUEUES: &str = r#"
partitions:
  - name: default
    placementrules:
      - name: provided
        create: true
    queues:
      - name: root
        submitacl: "*"
        queues: [{name: a}, {name: b}]
"#;

const ONLY_A: &str = r#"
partitions:
  - name: default
    placementrules:
      - name: provided
        create: true
    queues:
      - name: root
        submitacl: "*"
        queues: [{name: a}]
"#;

fn rest_get(addr: &str, path: &str) -> Value {
    let mut s = std::net::TcpStream::connect(addr).expect("connect to the REST service");
    s.set_read_timeout(Some(WAIT)).unwrap();
    let req = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes()).unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").expect("a complete answer");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    serde_json::from_str(body).unwrap_or_else(|e| panic!("not JSON ({e}): {body}"))
}

#[test]
fn a_queue_removed_from_the_configuration_drains_until_the_cleaner_runs() {
    let dir = temp_config_dir("gaps-drain");
    let mut o = dir_options(&dir, TWO_QUEUES);
    o.rest_address = "127.0.0.1:0".into();
    o.queue_cleaner_interval_ms = Some(400);
    let h = Harness::configured(o, 1);
    let mut out = sicore_buffer::empty();
    let mut err = sicore_buffer::empty();
    assert_eq!(sicore_rest_address(h.sched, &mut out, &mut err), SICORE_OK);
    let addr = take_string(out);
    // root.b, empty, leaves the configuration.
    std::fs::write(dir.join("queues.yaml"), ONLY_A).unwrap();
    let (st, msg) = h.reload("rm");
    assert_eq!(st, SICORE_OK, "{msg}");
    let b = find_queue(&h.dump(), "default", "root.b").expect("root.b stays until the cleaner");
    assert_eq!(b["state"], "Draining", "{b:#}");
    let rest = rest_get(&addr, "/ws/v1/partition/default/queues");
    let listed = rest["children"]
        .as_array()
        .and_then(|c| c.iter().find(|q| q["queuename"] == "root.b").cloned());
    assert_eq!(
        listed.map(|q| q["status"].clone()),
        Some(Value::from("Draining")),
        "{rest:#}"
    );
    // A new application naming it is refused, not given a dynamic queue.
    let reason = h.submit(app("late", "root.b")).expect_err("draining queue");
    assert_eq!(
        reason,
        "queue root.b is draining, it does not accept new application late"
    );
    // The cleaner removes it; afterwards the name is free for the rules.
    h.wait_dump("root.b removed by the cleaner", |d| {
        find_queue(d, "default", "root.b").is_none()
    });
    assert_eq!(h.submit(app("later", "root.b")), Ok(()));
    let b = find_queue(&h.dump(), "default", "root.b").unwrap();
    assert_eq!(b["state"], "Active");
}

// ------------------------------------------------------------- item 16

/// A gang application with one placeholder whose (satisfied) placeholder
/// ask is withdrawn: it is `Completing` while it holds the placeholder.
fn completing_with_a_placeholder(o: SchedulerOptions) -> (Harness, String) {
    let h = gang_harness(o, Behaviour::default(), 1, gang_app("g", "root.a", 100));
    assert_eq!(
        h.asks(vec![placeholder_ask("g", "ph", 100, 1)]).0,
        SICORE_OK
    );
    h.wait("placeholder", |s| s.allocations.len() == 1);
    let ph = h.seen(|s| s.allocations[0].uuid.clone());
    assert_eq!(
        h.releases(vec![], vec![ask_release("g", "ph")]).0,
        SICORE_OK
    );
    h.wait("completing", |s| {
        s.app_updates
            .iter()
            .any(|u| u.application_id == "g" && u.state == "Completing")
    });
    (h, ph)
}

#[test]
fn the_last_placeholder_gone_waits_for_the_completing_timer() {
    // The default 30 s timer: still running throughout this part.
    let (h, ph) = completing_with_a_placeholder(SchedulerOptions::default());
    assert_eq!(
        h.releases(vec![release("g", &ph, STOPPED)], vec![]).0,
        SICORE_OK
    );
    h.wait("echo", |s| s.released.iter().any(|r| r.uuid == ph));
    h.settle();
    assert_eq!(app_dump(&h.dump(), "g")["state"], "Completing");
    assert!(!states(&h, "g").iter().any(|s| s == "Completed"));
    // Until the timer fires, a new ask is accepted and runs the application.
    assert_eq!(h.asks(vec![ask("g", "more", 100, 1, 1)]).0, SICORE_OK);
    h.wait("allocation", |s| {
        s.allocations.iter().any(|a| a.allocation_key == "more")
    });
    let rejected = h.seen(|s| s.rejected_asks.clone());
    assert!(rejected.is_empty(), "{rejected:?}");
    assert_eq!(states(&h, "g").last().map(String::as_str), Some("Running"));
}

#[test]
fn the_completing_timer_completes_once_the_last_placeholder_is_gone() {
    let o = SchedulerOptions {
        app_completing_timeout_ms: Some(300),
        ..Default::default()
    };
    let (h, ph) = completing_with_a_placeholder(o);
    assert_eq!(
        h.releases(vec![release("g", &ph, STOPPED)], vec![]).0,
        SICORE_OK
    );
    h.wait("completed", |s| {
        s.app_updates
            .iter()
            .any(|u| u.application_id == "g" && u.state == "Completed")
    });
    let seen = states(&h, "g");
    let at = seen.iter().position(|s| s == "Completing").unwrap();
    assert_eq!(seen[at..], ["Completing", "Completed"], "{seen:?}");
}
