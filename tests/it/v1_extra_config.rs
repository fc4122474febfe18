//! The `extraConfig` keys of the SI v1.x edition through its C family, as
//! the k8shim sends them (at registration and in every
//! `UpdateConfiguration`): `event.trackingEnabled` and
//! `event.requestCapacity` are the sending RM's own, reloadable, and a
//! value that cannot be read is logged and falls back to the default;
//! `log.level` is process-wide. Also the rate limit of the REQUEST records
//! of an ask that stays unplaced, and the records of a CREATE_DRAIN.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use sicore::ffi::sicore_status::*;
use sicore::ffi::*;
use sicore::proto::si18::v1 as si18;
use sicore::proto::sicore::v1 as sicore_pb;
use sicore_c_rm::v1 as rmv1;

use crate::common::v1::V1Recorder;
use sicore_c_rm::{call, Handle};

use si18::event_record::{ChangeDetail, ChangeType, Type};

/// Queue `a` is open; queue `small` holds 50 memory, less than any ask here.
const CONFIG: &str = "
partitions:
  - name: default
    placementrules:
      - name: provided
        create: true
    queues:
      - name: root
        submitacl: '*'
        queues:
          - name: a
          - name: small
            resources:
              max:
                memory: 50
";

fn extra(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Made under [`serial::log`](crate::common::serial::log), since making a
/// scheduler may set the process's log level, which two tests here assert.
fn scheduler(rest: bool) -> Handle {
    let _level = crate::common::serial::log();
    new_scheduler(rest)
}

fn new_scheduler(rest: bool) -> Handle {
    let o = sicore_pb::SchedulerOptions {
        event_flush_interval_ms: 50,
        scheduling_interval_ms: 10,
        rest_address: if rest {
            "127.0.0.1:0".into()
        } else {
            String::new()
        },
        ..Default::default()
    };
    Handle(sicore_c_rm::new_scheduler(&o).unwrap())
}

struct Rm {
    sched: *mut sicore_scheduler,
    id: String,
    rec: Arc<V1Recorder>,
    /// Nodes added so far, to name the next one.
    nodes: Mutex<usize>,
}

impl Rm {
    fn register(sched: &Handle, id: &str, extra_config: &[(&str, &str)]) -> Rm {
        Rm::register_as(sched, id, extra_config, V1Recorder::default())
    }

    fn register_as(sched: &Handle, id: &str, extra_config: &[(&str, &str)], rec: V1Recorder) -> Rm {
        let rec = Arc::new(rec);
        let table = rmv1::table(&rec, rec.refuse_predicates);
        let req = si18::RegisterResourceManagerRequest {
            rm_id: id.into(),
            version: "v1.8.0".into(),
            policy_group: "queues".into(),
            config: CONFIG.into(),
            extra_config: extra(extra_config),
            ..Default::default()
        };
        let (st, msg) = rmv1::register(sched.0, &req, &table);
        assert_eq!(st, SICORE_OK, "{msg}");
        Rm {
            sched: sched.0,
            id: id.into(),
            rec,
            nodes: Mutex::new(0),
        }
    }

    /// An `UpdateConfiguration` with the same queues and `extra_config`.
    fn update(&self, extra_config: &[(&str, &str)]) {
        let (st, msg) = rmv1::update_configuration(
            self.sched,
            &si18::UpdateConfigurationRequest {
                rm_id: self.id.clone(),
                policy_group: "queues".into(),
                config: CONFIG.into(),
                extra_config: extra(extra_config),
            },
        );
        assert_eq!(st, SICORE_OK, "{msg}");
    }

    fn send_nodes(&self, ids: &[String]) {
        let nodes = ids.iter().map(|n| rmv1::node(n, 1000, 10)).collect();
        let (st, msg) = call(
            self.sched,
            sicore_v1_update_node,
            &si18::NodeRequest {
                nodes,
                rm_id: self.id.clone(),
            },
        );
        assert_eq!(st, SICORE_OK, "{msg}");
        self.rec.wait("nodes answered", |s| {
            ids.iter().all(|n| s.nodes_accepted.contains(n))
        });
    }

    /// Adds `n` fresh nodes in one request; returns their ids.
    fn add_nodes(&self, n: usize) -> Vec<String> {
        let mut next = self.nodes.lock().unwrap();
        let ids: Vec<String> = (*next..*next + n)
            .map(|i| format!("{}-n{i}", self.id))
            .collect();
        *next += n;
        drop(next);
        self.send_nodes(&ids);
        ids
    }

    /// Returns once every record stored before the call, for any RM, has
    /// been delivered: a node added now has its ADD in a flush at or after
    /// the one holding those records (maybe the same one, whose batches
    /// for other RMs may come later), and a second node added after that
    /// ADD arrived is in a strictly later flush. One dispatcher delivers
    /// everything in order.
    fn sync(&self) {
        for _ in 0..2 {
            let id = self.add_nodes(1).remove(0);
            self.rec.wait("the node's ADD", |s| has_add(&s.events, &id));
        }
    }

    fn node_records(&self) -> Vec<si18::EventRecord> {
        self.rec
            .copy()
            .events
            .into_iter()
            .filter(|e| e.r#type == Type::Node as i32)
            .collect()
    }

    fn settings(&self) -> serde_json::Value {
        let dump = sicore_c_rm::dump(self.sched).unwrap();
        dump["rms"]
            .as_array()
            .and_then(|rms| rms.iter().find(|r| r["rm_id"] == self.id.as_str()))
            .unwrap_or_else(|| panic!("RM {} in the dump: {dump}", self.id))["events"]
            .clone()
    }
}

fn has_add(events: &[si18::EventRecord], node: &str) -> bool {
    events.iter().any(|e| {
        e.r#type == Type::Node as i32
            && e.object_id == node
            && e.event_change_type == ChangeType::Add as i32
    })
}

#[test]
fn event_tracking_is_each_rms_own_and_follows_its_updates() {
    let sched = scheduler(false);
    let quiet = Rm::register(&sched, "quiet", &[("event.trackingEnabled", "false")]);
    let loud = Rm::register(&sched, "loud", &[]);
    assert_eq!(
        quiet.settings(),
        serde_json::json!({"enabled": false, "request_capacity": 0})
    );
    assert_eq!(
        loud.settings(),
        serde_json::json!({"enabled": true, "request_capacity": 1000})
    );

    // The quiet RM's nodes make no records; the other RM's still do.
    let silent = quiet.add_nodes(2);
    loud.sync();
    assert!(
        quiet.rec.copy().events.is_empty(),
        "{:?}",
        quiet.rec.copy().events
    );

    // Its update turns them on (for its later records only)...
    quiet.update(&[("event.trackingEnabled", "T")]);
    assert_eq!(quiet.settings()["enabled"], true);
    quiet.sync();
    assert!(
        !silent.iter().any(|n| has_add(&quiet.rec.copy().events, n)),
        "records made while off are never sent"
    );
    // ... and off again, without touching the other RM.
    quiet.update(&[("event.trackingEnabled", "0")]);
    let before = quiet.rec.copy().events.len();
    quiet.add_nodes(1);
    loud.sync();
    assert_eq!(quiet.rec.copy().events.len(), before);
    assert_eq!(loud.settings()["enabled"], true);

    // A value that cannot be read is logged and the default applies, as
    // in the reference; so does leaving the key out.
    quiet.update(&[("event.trackingEnabled", "nope")]);
    assert_eq!(quiet.settings()["enabled"], true);
    quiet.sync();
    quiet.update(&[("event.trackingEnabled", "false")]);
    quiet.update(&[]);
    assert_eq!(quiet.settings()["enabled"], true);
    quiet.sync();
}

#[test]
fn the_request_capacity_bounds_the_rms_records_per_flush() {
    let sched = scheduler(false);
    let small = Rm::register(&sched, "small", &[("event.requestCapacity", "2")]);
    let other = Rm::register(&sched, "other", &[]);
    assert_eq!(small.settings()["request_capacity"], 2);
    assert_eq!(other.settings()["request_capacity"], 1000);

    // Five nodes in one request: one flush, two records (one per node and
    // kind: each CREATE_DRAIN makes an ADD and a drain record).
    small.add_nodes(5);
    other.add_nodes(5);
    other.sync();
    assert_eq!(small.node_records().len(), 2, "{:?}", small.node_records());
    let other_adds = other
        .node_records()
        .iter()
        .filter(|e| e.event_change_type == ChangeType::Add as i32)
        .count();
    assert_eq!(other_adds, 7, "the other RM's store is its own");

    // Reloadable: back to the default when the key goes, and bad values
    // (negative, not a number, zero, absurd) fall back to it as well.
    small.update(&[("event.requestCapacity", "3")]);
    assert_eq!(small.settings()["request_capacity"], 3);
    for bad in ["-1", "many", "0", "100001", "18446744073709551616"] {
        small.update(&[("event.requestCapacity", "3")]);
        small.update(&[("event.requestCapacity", bad)]);
        assert_eq!(small.settings()["request_capacity"], 1000, "{bad}");
    }
    small.update(&[("event.requestCapacity", "4")]);
    small.update(&[]);
    assert_eq!(small.settings()["request_capacity"], 1000);
    let before = small.node_records().len();
    small.add_nodes(5);
    small.sync();
    assert_eq!(small.node_records().len(), before + 14);
}

#[test]
fn extra_config_applies_even_when_the_update_text_is_refused() {
    let sched = scheduler(false);
    let rm = Rm::register(&sched, "rm1", &[]);
    let (st, _) = rmv1::update_configuration(
        rm.sched,
        &si18::UpdateConfigurationRequest {
            rm_id: "rm1".into(),
            policy_group: "queues".into(),
            config: "partitions: [\n  - name".into(),
            extra_config: extra(&[("event.requestCapacity", "7")]),
        },
    );
    assert_eq!(st, SICORE_REJECTED);
    assert_eq!(rm.settings()["request_capacity"], 7);
}

#[test]
fn log_level_is_process_wide_whichever_rm_sets_it() {
    // No other test's scheduler resets the level meanwhile.
    let _level = crate::common::serial::log();
    let sched = new_scheduler(true);
    let mut out = sicore_buffer::empty();
    let mut err = sicore_buffer::empty();
    assert_eq!(sicore_rest_address(sched.0, &mut out, &mut err), SICORE_OK);
    let addr = sicore_c_rm::take_string(out);
    let level = || {
        let r = crate::restkit::http(&addr, "GET", "/ws/v1/loglevel", &[], b"");
        r.body.trim().to_string()
    };
    let first = Rm::register(&sched, "first", &[("log.level", "warn")]);
    assert_eq!(level(), "warn");
    // Another RM without the key leaves it; with the key it sets it for all.
    let second = Rm::register(&sched, "second", &[]);
    assert_eq!(level(), "warn");
    second.update(&[("log.level", "-1")]);
    assert_eq!(level(), "debug");
    // An unknown level changes nothing.
    first.update(&[("log.level", "loudest")]);
    assert_eq!(level(), "debug");
    first.update(&[("log.level", "INFO")]);
    assert_eq!(level(), "info");
}

#[test]
fn a_new_scheduler_leaves_the_level_an_rm_set_unless_its_options_name_one() {
    let _level = crate::common::serial::log();
    let sched = new_scheduler(true);
    let mut out = sicore_buffer::empty();
    let mut err = sicore_buffer::empty();
    assert_eq!(sicore_rest_address(sched.0, &mut out, &mut err), SICORE_OK);
    let addr = sicore_c_rm::take_string(out);
    let level = || {
        let r = crate::restkit::http(&addr, "GET", "/ws/v1/loglevel", &[], b"");
        r.body.trim().to_string()
    };
    let rm = Rm::register(&sched, "rm1", &[("log.level", "warn")]);
    assert_eq!(level(), "warn");
    // Another scheduler without a level: the RM's stays.
    let other = new_scheduler(false);
    assert_eq!(level(), "warn");
    drop(other);
    // One whose options name a level sets it, for the process.
    let o = sicore_pb::SchedulerOptions {
        log_level: "error".into(),
        ..Default::default()
    };
    let third = Handle(sicore_c_rm::new_scheduler(&o).unwrap());
    assert_eq!(level(), "error");
    drop(third);
    rm.update(&[("log.level", "info")]);
    assert_eq!(level(), "info");
}

/// Sends one pod to `queue` that never gets placed and shows that its
/// REQUEST record, with `reason_text` in the message, reaches the RM once
/// over many flushes.
fn unplaced_pod_is_reported_once(rec: V1Recorder, queue: &str, reason_text: &str) {
    let sched = scheduler(false);
    let rm = Rm::register_as(&sched, "rm1", &[], rec);
    let nodes = rm.add_nodes(3);
    let schedulable = nodes
        .iter()
        .map(|n| rmv1::node_action(n, si18::node_info::ActionFromRm::DrainToSchedulable))
        .collect();
    let (st, msg) = call(
        rm.sched,
        sicore_v1_update_node,
        &si18::NodeRequest {
            nodes: schedulable,
            rm_id: "rm1".into(),
        },
    );
    assert_eq!(st, SICORE_OK, "{msg}");
    let (st, msg) = call(
        rm.sched,
        sicore_v1_update_application,
        &si18::ApplicationRequest {
            new: vec![rmv1::app("app-1", queue, "alice")],
            rm_id: "rm1".into(),
            ..Default::default()
        },
    );
    assert_eq!(st, SICORE_OK, "{msg}");
    let (st, msg) = call(
        rm.sched,
        sicore_v1_update_allocation,
        &si18::AllocationRequest {
            allocations: vec![rmv1::ask("app-1", "pod-1", 100, 1)],
            rm_id: "rm1".into(),
            ..Default::default()
        },
    );
    assert_eq!(st, SICORE_OK, "{msg}");
    let for_pod = |ev: &[si18::EventRecord]| {
        ev.iter()
            // The "why pending" records have their own rule (one per
            // cause change; tests/it/why_pending.rs).
            .filter(|e| e.r#type == Type::Request as i32 && e.object_id == "pod-1")
            .filter(|e| !e.message.starts_with("Request 'pod-1' waits: "))
            .cloned()
            .collect::<Vec<_>>()
    };
    rm.rec
        .wait("the pod's record", |s| !for_pod(&s.events).is_empty());
    // Many flushes later (each sync is at least one more flush, with
    // scheduling passes trying the pod in between), still one record.
    for _ in 0..10 {
        rm.sync();
    }
    let records = for_pod(&rm.rec.copy().events);
    assert_eq!(records.len(), 1, "{records:?}");
    let r = &records[0];
    assert_eq!(r.reference_id, "app-1");
    assert!(r.message.contains(reason_text), "{r:?}");
    let dump = sicore_c_rm::dump(rm.sched).unwrap();
    assert!(
        dump["events"]["rate_limited"].as_u64().unwrap() > 0,
        "{}",
        dump["events"]
    );
}

#[test]
fn an_unplaced_asks_queue_record_is_not_repeated_every_flush() {
    unplaced_pod_is_reported_once(V1Recorder::default(), "root.small", "does not fit");
}

#[test]
fn an_unplaced_asks_predicate_record_is_not_repeated_every_flush() {
    let rec = V1Recorder::refusing_predicates();
    unplaced_pod_is_reported_once(rec, "root.a", "cordoned by the test RM");
}

#[test]
fn a_create_drain_sends_its_add_and_its_drain_record() {
    let sched = scheduler(false);
    let rm = Rm::register(&sched, "rm1", &[]);
    let id = rm.add_nodes(1).remove(0);
    rm.rec.wait("ADD and drain of one CREATE_DRAIN", |s| {
        let ev = &s.events;
        let of = |change: ChangeType, detail: ChangeDetail| {
            ev.iter().any(|e| {
                e.object_id == id
                    && e.event_change_type == change as i32
                    && e.event_change_detail == detail as i32
            })
        };
        of(ChangeType::Add, ChangeDetail::DetailsNone)
            && of(ChangeType::Set, ChangeDetail::NodeSchedulable)
    });
    let recs = rm.node_records();
    assert_eq!(recs.len(), 2, "{recs:?}");
    assert_eq!(
        recs[0].event_change_type,
        ChangeType::Add as i32,
        "{recs:?}"
    );
}
