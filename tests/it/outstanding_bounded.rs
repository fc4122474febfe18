//! Issue 24 item 4, as RMs see it through the C ABI: waiting asks are
//! capped per RM (`SchedulerOptions.max_asks_per_rm`), the outstanding
//! check reports only asks a scheduling pass tried, and one RM's backlog of
//! waiting asks neither floods it with reports nor holds back another RM.

use std::sync::Arc;

use crate::common::*;
use prost::Message;
use sicore::ffi::*;
use sicore::proto::si::v1 as si;
use sicore::proto::sicore::v1::SchedulerOptions;

use sicore_status::*;

fn with_yaml(mut o: SchedulerOptions, yaml: &str) -> SchedulerOptions {
    o.policy_configs.insert("queues".into(), yaml.into());
    o
}

const ROOT_ONLY: &str = "
partitions:
  - name: default
    placementrules:
      - name: provided
        create: true
    queues:
      - name: root
        submitacl: '*'
";

/// Registers RM `rm_id` on `h`'s scheduler with its own recorder.
fn register_other(h: &Harness, rm_id: &str) -> Arc<Recorder> {
    let rec = new_recorder(h.sched, Behaviour::default());
    let cbs = callbacks_for(&rec);
    let req = si::RegisterResourceManagerRequest {
        rm_id: rm_id.into(),
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

type Entry =
    extern "C" fn(*mut sicore_scheduler, *const u8, usize, *mut sicore_buffer) -> sicore_status;

fn call(h: &Harness, f: Entry, bytes: Vec<u8>) {
    let (st, msg) = h.raw(f, &bytes);
    assert_eq!(st, SICORE_OK, "{msg}");
}

fn rejected_keys(h: &Harness) -> Vec<(String, String)> {
    h.seen(|s| {
        s.rejected_asks
            .iter()
            .map(|r| (r.allocation_key.clone(), r.reason.clone()))
            .collect()
    })
}

#[test]
fn asks_beyond_the_per_rm_limit_are_rejected_with_a_reason_naming_it() {
    let o = SchedulerOptions {
        max_asks_per_rm: Some(3),
        ..Default::default()
    };
    // No node: every ask keeps waiting.
    let h = Harness::configured(with_yaml(o, ROOT_ONLY), 0);
    assert_eq!(h.submit(app("app-1", "root.a")), Ok(()));
    assert_eq!(h.submit(app("app-2", "root.b")), Ok(()));
    let asks = vec![
        ask("app-1", "k0", 100, 1, 1),
        ask("app-1", "k1", 100, 1, 5),
        ask("app-2", "k2", 100, 1, 1),
        ask("app-2", "k3", 100, 1, 1),
        ask("app-1", "k4", 100, 1, 1),
    ];
    assert_eq!(h.asks(asks).0, SICORE_OK);
    h.wait("two rejections", |s| s.rejected_asks.len() == 2);
    let rejected = rejected_keys(&h);
    assert_eq!(
        rejected.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(),
        ["k3", "k4"]
    );
    for (_, reason) in &rejected {
        assert!(
            reason.contains("RM rm already holds 3 waiting asks")
                && reason.contains("SchedulerOptions.max_asks_per_rm"),
            "{reason}"
        );
    }
    let d = h.dump();
    let root = find_queue(&d, "default", "root").unwrap();
    // k0 + 5 x k1 + k2: what was accepted is pending, nothing more.
    assert_eq!(root["pending"]["memory"], 700, "{root:#}");
    // Replacing a waiting ask (same key) is not a new one.
    assert_eq!(h.asks(vec![ask("app-1", "k1", 100, 1, 2)]).0, SICORE_OK);
    h.settle();
    assert_eq!(h.seen(|s| s.rejected_asks.len()), 2);
    // A withdrawn ask makes room for another.
    let release = si::AllocationAskRelease {
        partition_name: "default".into(),
        application_id: "app-2".into(),
        allocationkey: "k2".into(),
        termination_type: si::TerminationType::StoppedByRm as i32,
        message: String::new(),
    };
    assert_eq!(h.releases(vec![], vec![release]).0, SICORE_OK);
    assert_eq!(h.asks(vec![ask("app-2", "k5", 100, 1, 1)]).0, SICORE_OK);
    h.settle();
    assert_eq!(h.seen(|s| s.rejected_asks.len()), 2);
    // A node arrives: allocated asks stop counting as waiting.
    assert_eq!(h.nodes(vec![node("n", 10_000, 100)]).0, SICORE_OK);
    h.wait("all allocated", |s| s.allocations.len() == 4);
    let more = (6..9)
        .map(|i| ask("app-1", &format!("k{i}"), 100, 1, 1))
        .collect();
    assert_eq!(h.asks(more).0, SICORE_OK);
    h.wait("three more", |s| s.allocations.len() == 7);
    assert_eq!(h.seen(|s| s.rejected_asks.len()), 2);
}

#[test]
fn a_zero_ask_limit_is_refused() {
    let o = SchedulerOptions {
        max_asks_per_rm: Some(0),
        ..Default::default()
    };
    let bytes = options_bytes(&o);
    let mut sched = std::ptr::null_mut();
    let mut err = sicore_buffer::empty();
    let st = sicore_new(bytes.as_ptr(), bytes.len(), &mut sched, &mut err);
    assert_eq!(st, SICORE_INVALID_ARGUMENT);
    assert!(take_string(err).contains("max_asks_per_rm"));
    assert!(sched.is_null());
}

const LIMITED: &str = "
partitions:
  - name: default
    queues:
      - name: root
        submitacl: '*'
        queues:
          - name: a
            maxapplications: 1
";

#[test]
fn only_asks_a_pass_tried_are_reported_outstanding() {
    let o = SchedulerOptions {
        outstanding_check_interval_ms: 5,
        ..Default::default()
    };
    let h = Harness::configured(with_yaml(o, LIMITED), 1);
    assert_eq!(h.submit(app("app-1", "root.a")), Ok(()));
    assert_eq!(h.asks(vec![ask("app-1", "runs", 100, 1, 1)]).0, SICORE_OK);
    h.wait("app-1 runs", |s| s.allocations.len() == 1);
    // root.a is at its maxapplications: app-2 is held back, its ask never
    // tried. app-1's second ask is tried every pass and fits no node.
    assert_eq!(h.submit(app("app-2", "root.a")), Ok(()));
    let asks = vec![
        ask("app-2", "held", 100, 1, 1),
        ask("app-1", "waits", 2000, 1, 1),
    ];
    assert_eq!(h.asks(asks).0, SICORE_OK);
    h.wait("waits reported a few times", |s| {
        s.container_states
            .iter()
            .filter(|c| c.allocation_key == "waits")
            .count()
            >= 3
    });
    h.settle();
    let reported = h.seen(|s| s.container_states.clone());
    assert!(
        reported
            .iter()
            .all(|c| c.allocation_key == "waits" && c.applicartion_id == "app-1"),
        "{reported:?}"
    );
}

#[test]
fn one_rms_waiting_asks_neither_flood_it_nor_hold_back_another_rm() {
    const WAITING: usize = 5_000;
    let o = SchedulerOptions {
        outstanding_check_interval_ms: 5,
        ..Default::default()
    };
    // RM "rm" has no node yet (the autoscaler case) and many waiting asks.
    let h = Harness::configured(with_yaml(o, ROOT_ONLY), 0);
    assert_eq!(h.submit(app("waiting", "root.w")), Ok(()));
    let asks = (0..WAITING)
        .map(|i| ask("waiting", &format!("w{i}"), 100, 1, 1))
        .collect();
    assert_eq!(h.asks(asks).0, SICORE_OK);
    // The pass after the request tried them all: each is reported.
    h.wait("every waiting ask reported", |s| {
        s.container_states.len() >= WAITING
    });
    // RM "b" schedules on its own node meanwhile: every ask is placed by
    // the pass its request triggers (a dump answers after that pass).
    let b = register_other(&h, "b");
    call(
        &h,
        sicore_update_node,
        si::NodeRequest {
            nodes: vec![node("b-node", 100_000, 1000)],
            rm_id: "b".into(),
        }
        .encode_to_vec(),
    );
    b.wait("b's node", |s| s.nodes_accepted.len() == 1);
    call(
        &h,
        sicore_update_application,
        si::ApplicationRequest {
            new: vec![app("b-app", "root.b")],
            rm_id: "b".into(),
            ..Default::default()
        }
        .encode_to_vec(),
    );
    b.wait("b's application", |s| s.apps_accepted.len() == 1);
    for round in 0..20 {
        call(
            &h,
            sicore_update_allocation,
            si::AllocationRequest {
                asks: vec![ask("b-app", &format!("b{round}"), 10, 1, 1)],
                rm_id: "b".into(),
                ..Default::default()
            }
            .encode_to_vec(),
        );
        let d = h.dump();
        let b_part = d["partitions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["rm_id"] == "b")
            .cloned();
        let allocated = b_part
            .map(|p| p["root"]["allocated"]["memory"].as_i64().unwrap_or(0))
            .unwrap_or(0);
        assert_eq!(allocated, 10 * (round + 1), "round {round}: {d:#}");
    }
    b.wait("b's allocations", |s| s.allocations.len() == 20);
    // Nothing changed for "rm" since its pass: nothing is tried again, so
    // each waiting ask was reported once, however many checks ran.
    h.settle();
    let mut per_ask = std::collections::HashMap::new();
    for c in h.seen(|s| s.container_states.clone()) {
        *per_ask.entry(c.allocation_key).or_insert(0usize) += 1;
    }
    assert_eq!(per_ask.len(), WAITING);
    let most = per_ask.values().max().copied();
    assert_eq!(most, Some(1), "an ask was reported more than once");
    assert!(b.seen.lock().unwrap().container_states.is_empty());
}
