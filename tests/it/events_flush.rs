//! The event system (spec 13) and the outstanding-request report (spec
//! 8.12), through the C ABI.

use crate::common::*;
use sicore::ffi::sicore_status::*;
use sicore::proto::si::v1 as si;
use sicore::proto::sicore::v1::SchedulerOptions;

use si::event_record::Type;
use si::node_info::ActionFromRm;
use si::update_container_scheduling_state_request::SchedulingState;

/// `root.a` limited to 5000 memory; nodes have 1000.
const LIMITED: &str = r#"
partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: a
            resources:
              max: {memory: 5000, vcore: 100}
"#;

fn options(flush_ms: u64, check_ms: u64) -> SchedulerOptions {
    let mut o = SchedulerOptions {
        event_flush_interval_ms: flush_ms,
        outstanding_check_interval_ms: check_ms,
        ..Default::default()
    };
    o.policy_configs.insert("queues".into(), LIMITED.into());
    o
}

fn action(id: &str, a: ActionFromRm) -> si::NodeInfo {
    si::NodeInfo {
        node_id: id.into(),
        action: a as i32,
        ..Default::default()
    }
}

#[test]
fn events_come_in_batches_with_the_latest_record_per_object() {
    // APP records are opt-in.
    let mut o = options(50, 0);
    o.event_types = vec!["REQUEST".into(), "NODE".into(), "APP".into()];
    let h = Harness::standard(o, Behaviour::default(), 1);
    // One request, one core step: three records for node-x, one survives.
    let nodes = vec![
        node("node-x", 1000, 10),
        action("node-x", ActionFromRm::DrainNode),
        action("node-x", ActionFromRm::DrainToSchedulable),
    ];
    assert_eq!(h.nodes(nodes).0, SICORE_OK);
    h.wait("node-x event", |s| {
        s.events.iter().any(|e| e.object_id == "node-x")
    });
    h.seen(|s| {
        let x: Vec<&si::EventRecord> = s
            .events
            .iter()
            .filter(|e| e.object_id == "node-x")
            .collect();
        assert_eq!(x.len(), 1, "{x:?}");
        assert_eq!(x[0].r#type, Type::Node as i32);
        assert_eq!(x[0].reason, "NodeSchedulable");
        assert_eq!(x[0].group_id, "default");
        assert!(x[0].timestamp_nano > 0);
        // node-0 was created by the harness and reported too.
        assert!(s
            .events
            .iter()
            .any(|e| e.object_id == "node-0" && e.reason == "NodeAdded"));
    });
    // Application state changes are APP records.
    assert_eq!(h.asks(vec![ask("app-1", "k", 100, 1, 2)]).0, SICORE_OK);
    h.wait("app running record", |s| {
        s.events
            .iter()
            .any(|e| e.object_id == "app-1" && e.reason == "Running")
    });
    h.seen(|s| {
        let e = s
            .events
            .iter()
            .find(|e| e.object_id == "app-1" && e.reason == "Running")
            .unwrap();
        assert_eq!(e.r#type, Type::App as i32);
        assert_eq!(e.group_id, "root.a");
        assert!(e.message.contains("to Running"), "{}", e.message);
    });
    let d = h.dump();
    let ev = &d["events"];
    assert_eq!(ev["enabled"], true);
    assert_eq!(ev["flush_interval_ms"], 50);
    assert_eq!(ev["types"], serde_json::json!(["REQUEST", "APP", "NODE"]));
    assert!(ev["superseded"].as_u64().unwrap() >= 2);
    assert!(ev["batches"].as_u64().unwrap() >= 2);
    assert_eq!(ev["dropped_store_full"], 0);
    assert_eq!(ev["dropped_input"], 0);
    let published = ev["published"].as_u64().unwrap();
    let seen = h.seen(|s| s.events.len() as u64);
    assert!(published >= seen && published > 0);
}

#[test]
fn asks_over_the_queue_headroom_get_a_request_event() {
    let h = Harness::standard(options(50, 0), Behaviour::default(), 1);
    assert_eq!(
        h.asks(vec![ask("app-1", "too-big", 6000, 1, 1)]).0,
        SICORE_OK
    );
    h.wait("request event", |s| {
        s.events.iter().any(|e| e.object_id == "too-big")
    });
    h.seen(|s| {
        let e = s.events.iter().find(|e| e.object_id == "too-big").unwrap();
        assert_eq!(e.r#type, Type::Request as i32);
        assert_eq!(e.group_id, "app-1");
        assert_eq!(e.reason, "InsufficientQueueResources");
        assert_eq!(
            e.message,
            "Application app-1 does not fit into root.a queue"
        );
    });
}

#[test]
fn by_default_only_request_and_node_records_reach_the_rm() {
    let h = Harness::standard(options(20, 0), Behaviour::default(), 1);
    assert_eq!(
        h.dump()["events"]["types"],
        serde_json::json!(["REQUEST", "NODE"])
    );
    // An application goes Accepted -> Starting -> Running, an ask is over
    // the queue limit (REQUEST), then a node is drained (NODE).
    assert_eq!(
        h.asks(vec![
            ask("app-1", "k", 100, 1, 2),
            ask("app-1", "big", 6000, 1, 1)
        ])
        .0,
        SICORE_OK
    );
    h.wait("running", |s| {
        s.app_updates.iter().any(|u| u.state == "Running")
    });
    assert_eq!(
        h.nodes(vec![action("node-0", ActionFromRm::DrainNode)]).0,
        SICORE_OK
    );
    // The drain record was produced after every application change, and
    // the store flushes in creation order: once it arrives, an APP record
    // would have arrived too.
    h.wait("drain record", |s| {
        s.events
            .iter()
            .any(|e| e.object_id == "node-0" && e.reason == "NodeDraining")
    });
    h.seen(|s| {
        assert!(s
            .events
            .iter()
            .any(|e| e.r#type == Type::Request as i32 && e.object_id == "big"));
        assert!(
            s.events
                .iter()
                .all(|e| e.r#type == Type::Request as i32 || e.r#type == Type::Node as i32),
            "{:#?}",
            s.events
        );
    });
}

#[test]
fn unknown_event_types_fail_sicore_new() {
    let mut o = options(0, 0);
    o.event_types = vec!["NODE".into(), "ALLOCATION".into()];
    let bytes = options_bytes(&o);
    let mut sched = std::ptr::null_mut();
    let mut err = sicore::ffi::sicore_buffer::empty();
    let st = sicore::ffi::sicore_new(bytes.as_ptr(), bytes.len(), &mut sched, &mut err);
    assert_eq!(st, SICORE_INVALID_ARGUMENT);
    assert!(sched.is_null());
    let msg = take_string(err);
    assert!(
        msg.contains("event_types") && msg.contains("'ALLOCATION'"),
        "{msg}"
    );
}

#[test]
fn disabled_events_send_nothing() {
    let mut o = options(20, 0);
    o.disable_events = true;
    let h = Harness::standard(o, Behaviour::default(), 1);
    assert_eq!(h.asks(vec![ask("app-1", "k", 100, 1, 2)]).0, SICORE_OK);
    h.wait("running", |s| {
        s.app_updates.iter().any(|u| u.state == "Running")
    });
    // Many flush periods pass; nothing is stored, so nothing is sent.
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert!(h.seen(|s| s.events.is_empty()));
    let d = h.dump();
    assert_eq!(d["events"]["enabled"], false);
    assert_eq!(d["events"]["received"], 0);
}

#[test]
fn outstanding_asks_are_reported_until_allocated() {
    let h = Harness::standard(options(0, 20), Behaviour::default(), 1);
    let asks = vec![
        // Fits the queue (5000) but no node (1000): outstanding.
        ask("app-1", "waits", 2000, 1, 1),
        // Fits what is left of the queue's headroom after "small" and
        // "waits" (5000 - 100 - 2000), but no node: outstanding throughout.
        ask("app-1", "never", 2500, 1, 1),
        // Would fit the queue alone, not the headroom the others leave.
        ask("app-1", "crowded", 2500, 1, 1),
        // Over the queue limit: not outstanding.
        ask("app-1", "over", 6000, 1, 1),
        // Fits a node: allocated, never outstanding for long.
        ask("app-1", "small", 100, 1, 1),
    ];
    assert_eq!(h.asks(asks).0, SICORE_OK);
    h.wait("both reported twice", |s| {
        let n = |k: &str| {
            s.container_states
                .iter()
                .filter(|c| c.allocation_key == k)
                .count()
        };
        n("waits") >= 2 && n("never") >= 2
    });
    h.seen(|s| {
        assert!(s
            .container_states
            .iter()
            .all(|c| c.allocation_key != "over" && c.allocation_key != "crowded"));
        for c in &s.container_states {
            assert_eq!(c.applicartion_id, "app-1");
            assert_eq!(c.state, SchedulingState::Failed as i32);
            assert_eq!(
                c.reason,
                "request is waiting for cluster resources become available"
            );
        }
    });
    // A big node arrives: "waits" is allocated and no longer reported.
    assert_eq!(h.nodes(vec![node("node-big", 2500, 10)]).0, SICORE_OK);
    h.wait("waits allocated", |s| {
        s.allocations.iter().any(|a| a.allocation_key == "waits")
    });
    // The dispatcher delivers in order: what comes after the allocation
    // was produced after it.
    let mark = h.seen(|s| s.container_states.len());
    h.wait("never reported twice more", |s| {
        s.container_states[mark..]
            .iter()
            .filter(|c| c.allocation_key == "never")
            .count()
            >= 2
    });
    h.seen(|s| {
        assert!(s.container_states[mark..]
            .iter()
            .all(|c| c.allocation_key == "never"));
    });
}

/// Registers RM `quiet` on `h`'s scheduler with every callback but
/// `UpdateContainerSchedulingState`, recording into a new recorder.
fn register_without_container_state(h: &Harness) -> std::sync::Arc<Recorder> {
    use prost::Message;
    use sicore::ffi::*;
    let rec = new_recorder(h.sched, Behaviour::default());
    let mut cbs = callbacks_for(&rec);
    cbs.update_container_scheduling_state = None;
    let req = si::RegisterResourceManagerRequest {
        rm_id: "quiet".into(),
        version: "test".into(),
        policy_group: "queues".into(),
    }
    .encode_to_vec();
    let mut err = sicore_buffer::empty();
    let st = sicore_register_resource_manager(
        h.sched,
        req.as_ptr(),
        req.len(),
        &cbs,
        std::ptr::null_mut(),
        &mut err,
    );
    assert_eq!(st, SICORE_OK, "{}", take_string(err));
    rec
}

#[test]
fn an_rm_without_the_container_state_callback_schedules_as_before() {
    use prost::Message;
    use sicore::ffi::*;
    // "rm" registered the callback, "quiet" did not: the check is skipped
    // for "quiet" only (nothing could reach it), "rm" keeps its reports and
    // "quiet" schedules exactly as before.
    let h = Harness::standard(options(0, 20), Behaviour::default(), 1);
    let quiet = register_without_container_state(&h);
    let as_quiet = |f: extern "C" fn(
        *mut sicore_scheduler,
        *const u8,
        usize,
        *mut sicore_buffer,
    ) -> sicore_status,
                    bytes: Vec<u8>| {
        let (st, msg) = h.raw(f, &bytes);
        assert_eq!(st, SICORE_OK, "{msg}");
    };
    as_quiet(
        sicore_update_node,
        si::NodeRequest {
            nodes: vec![node("q-node", 1000, 10)],
            rm_id: "quiet".into(),
        }
        .encode_to_vec(),
    );
    quiet.wait("quiet's node", |s| s.nodes_accepted.len() == 1);
    as_quiet(
        sicore_update_application,
        si::ApplicationRequest {
            new: vec![app("q-app", "root.a")],
            rm_id: "quiet".into(),
            ..Default::default()
        }
        .encode_to_vec(),
    );
    quiet.wait("quiet's application", |s| s.apps_accepted.len() == 1);
    // Both RMs have an ask that no node fits yet.
    as_quiet(
        sicore_update_allocation,
        si::AllocationRequest {
            asks: vec![ask("q-app", "q-waits", 2000, 1, 1)],
            rm_id: "quiet".into(),
            ..Default::default()
        }
        .encode_to_vec(),
    );
    assert_eq!(h.asks(vec![ask("app-1", "waits", 2000, 1, 1)]).0, SICORE_OK);
    h.wait("rm's reports", |s| {
        s.container_states
            .iter()
            .filter(|c| c.allocation_key == "waits")
            .count()
            >= 2
    });
    h.seen(|s| {
        assert!(s
            .container_states
            .iter()
            .all(|c| c.allocation_key == "waits"));
    });
    // Capacity arrives for "quiet": its waiting ask is placed.
    as_quiet(
        sicore_update_node,
        si::NodeRequest {
            nodes: vec![node("q-big", 2500, 10)],
            rm_id: "quiet".into(),
        }
        .encode_to_vec(),
    );
    quiet.wait("quiet's allocation", |s| {
        s.allocations.iter().any(|a| a.allocation_key == "q-waits")
    });
    assert!(quiet.seen.lock().unwrap().container_states.is_empty());
}
