//! The trace the REST event history keeps (docs/why-pending.md, "Trace"),
//! read as an operator reads it after the fact: an application's states
//! and the allocations it got and lost, a preemption's victim and
//! preemptor naming each other, a quota-change run's summary, each with
//! its partition and queue, in a history that stays bounded. The RMs
//! played here mostly take the default record types (REQUEST and NODE, as
//! the k8shim and a v0.12 RM do): they see none of the new records; an
//! SI v1.x RM that lists `APP` gets them.

use std::time::Duration;

use crate::common::editions::{req, v1_preemptor, Edition, EditionRm, Req};
use crate::common::preempt::{predicates_rm, preempted};
use crate::common::v1::{v1_options, v1_preempted, V1Rm};
use crate::common::*;
use crate::restkit::*;
use serde_json::Value;
use sicore::ffi::sicore_status::SICORE_OK;
use sicore::proto::si::v1 as si;
use sicore::proto::si18::v1 as si18;
use sicore::proto::sicore::v1 as sicore_pb;
use sicore_c_rm::v1 as rmv1;

use si18::event_record::{ChangeDetail as D, Type};

/// The change details of the trace records.
const TRACE_DETAILS: [D; 4] = [
    D::AppAlloc,
    D::AllocCancel,
    D::AllocPreempt,
    D::AllocNoderemoved,
];

const CONFIG: &str = "
partitions:
  - name: default
    queues:
      - name: root
        submitacl: '*'
        queues:
          - name: a
            resources: {guaranteed: {memory: 100}}
          - name: b
            resources: {guaranteed: {memory: 500}}
            properties: {preemption.delay: 1ms}
";

/// v1 options with REST on loopback and a short completing timeout; the
/// record types are the default ones.
fn options() -> sicore_pb::SchedulerOptions {
    let mut o = v1_options();
    o.rest_address = "127.0.0.1:0".into();
    o.app_completing_timeout_ms = Some(100);
    o.rest = Some(sicore_pb::RestOptions {
        connection_timeout_ms: 2_000,
        max_connections_per_peer: 64,
        ..Default::default()
    });
    o
}

/// Every record the history holds, from its oldest (a batch from the
/// default start, 0, is empty once the ring has dropped record 0).
fn history(addr: &str) -> Vec<Value> {
    let low = get_json(addr, "/ws/v1/events/batch")["LowestID"]
        .as_u64()
        .unwrap_or(0);
    let path = format!("/ws/v1/events/batch?start={low}&count=10000");
    get_json(addr, &path)["EventRecords"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// The records of `kind` about `object`, in history order.
fn about(records: &[Value], kind: Type, object: &str) -> Vec<Value> {
    records
        .iter()
        .filter(|r| r["type"] == kind as i32 && r["objectID"] == object)
        .cloned()
        .collect()
}

fn detail(r: &Value) -> i64 {
    r["eventChangeDetail"].as_i64().unwrap_or(0)
}

/// Waits until the history holds a record `pred` accepts; all records.
fn wait_history(addr: &str, what: &str, pred: impl Fn(&Value) -> bool) -> Vec<Value> {
    poll(what, || {
        let all = history(addr);
        all.iter().any(&pred).then_some(all)
    })
}

/// What a default v1 RM (the k8shim) was sent holds no trace record: only
/// REQUEST and NODE records, none with a trace detail.
fn rm_saw_nothing_new(events: &[si18::EventRecord]) {
    for e in events {
        assert!(
            e.r#type == Type::Request as i32 || e.r#type == Type::Node as i32,
            "the RM got a record of a type it did not ask for: {e:?}"
        );
        assert!(
            !TRACE_DETAILS
                .iter()
                .any(|d| *d as i32 == e.event_change_detail),
            "the RM got a trace record: {e:?}"
        );
        assert_ne!(e.event_change_detail, 407, "{e:?}");
    }
}

/// Runs app-1's life on `rm`: one allocation, released by the RM, so the
/// application completes; returns the history once it has.
fn one_life(rm: &V1Rm, addr: &str) -> Vec<Value> {
    rm.node("n1", 1000);
    rm.app("app-1", "root.a");
    rm.allocate(vec![rmv1::ask("app-1", "a1", 100, 1)], vec![]);
    rm.rec.wait("a1 placed", |s| {
        s.new.iter().any(|a| a.allocation_key == "a1")
    });
    let release = si18::AllocationRelease {
        application_id: "app-1".into(),
        allocation_key: "a1".into(),
        termination_type: si18::TerminationType::StoppedByRm as i32,
        ..Default::default()
    };
    rm.allocate(vec![], vec![release]);
    wait_history(addr, "app-1 completed", |r| {
        r["objectID"] == "app-1" && detail(r) == D::AppCompleted as i64
    })
}

/// Whether `want` appears in `details` in order (other details between).
fn in_order(details: &[i64], want: &[D]) -> bool {
    let mut at = 0;
    for d in details {
        if at < want.len() && *d == want[at] as i64 {
            at += 1;
        }
    }
    at == want.len()
}

#[test]
fn an_application_life_is_in_the_history_with_partition_and_queue() {
    let rm = V1Rm::with(options(), CONFIG, false, |_| {});
    let addr = rest_address(rm.sched);
    let all = one_life(&rm, &addr);
    let mine = about(&all, Type::App, "app-1");
    for r in &mine {
        assert_eq!(r["partition"], "default", "{r}");
        assert_eq!(r["queue"], "root.a", "{r}");
        assert!(r["timestampNano"].as_i64().unwrap() > 0, "{r}");
    }
    let details: Vec<i64> = mine.iter().map(detail).collect();
    let log = [
        D::AppAccepted,
        D::AppRunning,
        D::AppCompleting,
        D::AppCompleted,
    ];
    assert!(
        in_order(&details, &log),
        "{details:?} lacks {log:?} in order"
    );
    // The per-allocation records wait for `APP` in the options.
    assert!(
        !details.contains(&(D::AppAlloc as i64)),
        "APP_ALLOC without APP in the options: {details:?}"
    );
    // The RM, taking the default types, was sent none of it.
    rm.settle();
    rm_saw_nothing_new(&rm.rec.copy().events);
}

/// With `APP` among the record types, every allocation got and released
/// is in the history too, and an SI v1.x RM, which asked for `APP`
/// records, gets them as YuniKorn v1.x sends them.
#[test]
fn with_app_records_the_allocations_got_and_lost_are_traced() {
    let mut o = options();
    o.event_types = vec!["REQUEST".into(), "NODE".into(), "APP".into()];
    let rm = V1Rm::with(o, CONFIG, false, |_| {});
    let addr = rest_address(rm.sched);
    let all = one_life(&rm, &addr);
    let mine = about(&all, Type::App, "app-1");
    let details: Vec<i64> = mine.iter().map(detail).collect();
    let log = [
        D::AppAccepted,
        D::AppAlloc,
        D::AppRunning,
        D::AllocCancel,
        D::AppCompleting,
        D::AppCompleted,
    ];
    assert!(
        in_order(&details, &log),
        "{details:?} lacks {log:?} in order"
    );
    let got = mine
        .iter()
        .find(|r| detail(r) == D::AppAlloc as i64)
        .unwrap();
    assert_eq!(got["referenceID"], "a1");
    assert_eq!(got["eventChangeType"], 2, "ADD");
    assert_eq!(got["resource"]["resources"]["memory"]["value"], 100);
    assert_eq!(got["queue"], "root.a");
    assert!(got["message"].as_str().unwrap().contains("on node n1"));
    let lost = mine
        .iter()
        .find(|r| detail(r) == D::AllocCancel as i64)
        .unwrap();
    assert_eq!(lost["referenceID"], "a1");
    assert_eq!(lost["eventChangeType"], 3, "REMOVE");
    let s = rm.rec.wait("the RM's APP_ALLOC", |s| {
        s.events
            .iter()
            .any(|e| e.event_change_detail == D::AllocCancel as i32)
    });
    let sent = s
        .events
        .iter()
        .find(|e| e.event_change_detail == D::AppAlloc as i32)
        .unwrap();
    assert_eq!(
        (
            sent.r#type,
            sent.object_id.as_str(),
            sent.reference_id.as_str()
        ),
        (Type::App as i32, "app-1", "a1")
    );
}

/// Two pods of app-1 fill n1 in `root.a`; app-2 in `root.b`, below its
/// guarantee, asks for room and preempts one of them.
#[test]
fn a_preemption_names_victim_and_preemptor_in_both_records() {
    let rm = V1Rm::with(options(), CONFIG, true, |_| {});
    let addr = rest_address(rm.sched);
    rm.rec.accept_all();
    rm.node("n1", 500);
    rm.app("app-1", "root.a");
    rm.app("app-2", "root.b");
    let policy = Some(si18::PreemptionPolicy {
        allow_preempt_self: true,
        allow_preempt_other: true,
    });
    let running = |key: &str| si18::Allocation {
        node_id: "n1".into(),
        preemption_policy: policy,
        ..rmv1::ask("app-1", key, 250, 1)
    };
    rm.allocate(vec![running("a1"), running("a2")], vec![]);
    rm.rec.wait("pods echoed", |s| s.new.len() == 2);
    let b1 = si18::Allocation {
        preemption_policy: policy,
        ..rmv1::ask("app-2", "b1", 250, 1)
    };
    rm.allocate(vec![b1], vec![]);
    let s = rm.rec.wait("a victim", |s| !v1_preempted(s).is_empty());
    let victim = v1_preempted(&s)[0].allocation_key.clone();
    let all = wait_history(&addr, "the preemptor's record", |r| {
        r["objectID"] == "app-2" && r["referenceID"] == "b1"
    });
    let lost = about(&all, Type::App, "app-1")
        .into_iter()
        .find(|r| detail(r) == D::AllocPreempt as i64)
        .expect("the victim's record");
    assert_eq!(lost["referenceID"], victim.as_str());
    assert_eq!(lost["queue"], "root.a");
    assert_eq!(lost["partition"], "default");
    let text = lost["message"].as_str().unwrap();
    assert!(
        text.contains("ask b1 of application app-2") && text.contains("(guarantee)"),
        "{text}"
    );
    let by = about(&all, Type::App, "app-2")
        .into_iter()
        .find(|r| r["referenceID"] == "b1")
        .unwrap();
    assert_eq!(by["queue"], "root.b");
    let text = by["message"].as_str().unwrap();
    assert!(text.contains(&format!("app-1/{victim}")), "{text}");
    assert!(text.contains("guarantee"), "{text}");
    assert_eq!(by["resource"]["resources"]["memory"]["value"], 250);
    rm.settle();
    rm_saw_nothing_new(&rm.rec.copy().events);
}

fn quota_config(max: i64) -> String {
    let queues = format!(
        "          - name: a
            resources: {{max: {{memory: {max}}}}}
            properties: {{quota.preemption.delay: 1ms}}
"
    );
    partition_yaml("    preemption: {quotapreemptionenabled: true}\n", &queues)
}

/// A v1.8 RM with the default types: the run's summary is not sent to
/// it, but the history keeps it, with the victims' records beside.
#[test]
fn a_quota_run_is_in_the_history_with_what_it_took() {
    let rm = V1Rm::with(options(), &quota_config(100), false, |_| {});
    let addr = rest_address(rm.sched);
    rm.node("n1", 100_000);
    rm.app("app-1", "root.a");
    let running = |key: &str, m: i64| si18::Allocation {
        node_id: "n1".into(),
        ..rmv1::ask("app-1", key, m, 1)
    };
    rm.allocate(
        vec![running("v5", 5), running("v9", 9), running("v6", 6)],
        vec![],
    );
    rm.rec.wait("pods echoed", |s| s.new.len() == 3);
    let (st, msg) = rm.update_config(&quota_config(10));
    assert_eq!(st, SICORE_OK, "{msg}");
    rm.rec.wait("the victim", |s| !v1_preempted(s).is_empty());
    let all = wait_history(&addr, "the run's summary", |r| {
        r["eventChangeDetail"] == 407
    });
    let runs: Vec<&Value> = all
        .iter()
        .filter(|r| r["eventChangeDetail"] == 407)
        .collect();
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0]["objectID"], "root.a");
    assert_eq!(runs[0]["queue"], "root.a");
    assert_eq!(runs[0]["partition"], "default");
    let text = runs[0]["message"].as_str().unwrap();
    assert!(
        text.contains("claimed resources: map[memory:5 vcore:1]")
            && text.contains("preempted victims: 1"),
        "{text}"
    );
    let taken: Vec<Value> = about(&all, Type::App, "app-1")
        .into_iter()
        .filter(|r| detail(r) == D::AllocPreempt as i64)
        .collect();
    assert_eq!(taken.len(), 1, "{taken:?}");
    assert_eq!(taken[0]["referenceID"], "v5");
    assert!(
        taken[0]["message"]
            .as_str()
            .unwrap()
            .contains("quota change of root.a"),
        "{}",
        taken[0]
    );
    rm.settle();
    rm_saw_nothing_new(&rm.rec.copy().events);
}

/// With `event.ringBufferCapacity` small, many applications' records
/// leave the history at its bound, the newest kept.
#[test]
fn the_history_stays_bounded() {
    let req = si18::RegisterResourceManagerRequest {
        rm_id: "rm1".into(),
        version: "v1.8.0".into(),
        policy_group: "queues".into(),
        config: CONFIG.into(),
        extra_config: [("event.ringBufferCapacity".to_string(), "20".to_string())]
            .into_iter()
            .collect(),
        ..Default::default()
    };
    let rm = V1Rm::registered(options(), &req, false, |_| {});
    let addr = rest_address(rm.sched);
    rm.node("n1", 100_000);
    let ids: Vec<String> = (0..15).map(|i| format!("app-{i}")).collect();
    let (st, msg) = rm.apps(
        ids.iter()
            .map(|id| rmv1::app(id, "root.a", "alice"))
            .collect(),
    );
    assert_eq!(st, SICORE_OK, "{msg}");
    rm.allocate(
        ids.iter()
            .map(|id| rmv1::ask(id, &format!("{id}-k"), 1, 0))
            .collect(),
        vec![],
    );
    rm.rec.wait("all placed", |s| s.new.len() == ids.len());
    // Every application is Running: at least Accepted and Running each,
    // with the asks' and the node's records, more than the bound.
    poll("the last app running in the history", || {
        history(&addr)
            .iter()
            .any(|r| detail(r) == D::AppRunning as i64)
            .then_some(())
    });
    rm.settle();
    let v = get_json(&addr, "/ws/v1/events/batch");
    let (low, high) = (
        v["LowestID"].as_u64().unwrap(),
        v["HighestID"].as_u64().unwrap(),
    );
    assert_eq!(high - low + 1, 20, "the bound: {v}");
    assert!(low > 0, "older records left the history");
    assert_eq!(history(&addr).len(), 20);
    rm_saw_nothing_new(&rm.rec.copy().events);
}

/// A v0.12 RM warns about any record type but REQUEST and NODE: with the
/// default types, the trace reaches the REST history and not the RM.
#[test]
fn a_v012_rm_sees_no_new_record_types() {
    let yaml = partition_yaml("", "          - name: a\n");
    let mut o = yaml_options(&yaml);
    o.rest_address = "127.0.0.1:0".into();
    o.event_flush_interval_ms = 50;
    o.scheduling_interval_ms = 10;
    o.app_completing_timeout_ms = Some(100);
    let h = Harness::standard(o, Behaviour::default(), 1);
    let addr = rest_address(h.sched);
    let ask = sicore_c_rm::ask("app-1", "k1", 10, 1, 1);
    assert_eq!(h.asks(vec![ask]).0, SICORE_OK);
    h.wait("allocated", |s| !s.allocations.is_empty());
    let uuid = h.seen(|s| s.allocations[0].uuid.clone());
    let release = si::AllocationRelease {
        partition_name: "default".into(),
        application_id: "app-1".into(),
        uuid,
        termination_type: si::TerminationType::StoppedByRm as i32,
        ..Default::default()
    };
    assert_eq!(h.releases(vec![release], vec![]).0, SICORE_OK);
    let all = wait_history(&addr, "app-1 completed", |r| {
        r["objectID"] == "app-1" && detail(r) == D::AppCompleted as i64
    });
    let mine = about(&all, Type::App, "app-1");
    let details: Vec<i64> = mine.iter().map(detail).collect();
    // (v0.12's Starting has no SI v1.x detail.)
    let log = [D::AppAccepted, D::AppCompleting, D::AppCompleted];
    assert!(in_order(&details, &log), "{details:?}");
    assert!(mine.iter().all(|r| r["queue"] == "root.a"), "{mine:?}");
    std::thread::sleep(Duration::from_millis(200));
    let types: Vec<i32> = h.seen(|s| s.events.iter().map(|e| e.r#type).collect());
    assert!(
        types
            .iter()
            .all(|t| *t == si::event_record::Type::Request as i32
                || *t == si::event_record::Type::Node as i32),
        "{types:?}"
    );
}

// ---- Required-node preemption, both editions ----

const REQUIRED_NODE: &str = "yunikorn.apache.org/requiredNode";

/// Leaves `a` (the victims) and `ds` (the DaemonSet pods), preemption on.
fn required_config() -> String {
    let queues = "          - name: a
            properties: {application.sort.policy: fifo}
          - name: ds
            properties: {application.sort.policy: fifo}
";
    partition_yaml("    preemption: {enabled: true}\n", queues)
}

/// An RM of `edition` asking `Predicates` (the stand-in check of v0.12,
/// `PreemptionPredicates` in v1.8, both accepting), with REST on and
/// records flushed every 50 ms; `types` its record types (none: the
/// default ones).
fn required_rm(edition: Edition, types: &[&str]) -> EditionRm {
    let yaml = required_config();
    let types: Vec<String> = types.iter().map(|t| t.to_string()).collect();
    match edition {
        Edition::V012 => {
            let mut o = yaml_options(&yaml);
            o.rest_address = "127.0.0.1:0".into();
            o.event_flush_interval_ms = 50;
            o.scheduling_interval_ms = 10;
            o.event_types = types;
            EditionRm::V012(predicates_rm(o, &[]))
        }
        Edition::V1 => {
            let mut o = options();
            o.event_types = types;
            let rm = V1Rm::with(o, &yaml, true, |_| {});
            rm.rec.accept_all();
            EditionRm::V1(rm)
        }
    }
}

/// node-0 full of four pods of app-1 in `root.a` (`pod-0` to `pod-3`,
/// 250 memory each), an empty node-1, then the DaemonSet pod `ds` of
/// app-ds in `root.ds`, pinned to node-0.
fn pin_a_daemonset_pod(rm: &EditionRm) {
    rm.nodes(&[("node-0", 1000)], 10);
    let keys: Vec<String> = (0..4).map(|i| format!("pod-{i}")).collect();
    let pods: Vec<Req> = keys.iter().map(|k| req(k, 250, 1)).collect();
    rm.fill("app-1", "root.a", &pods, 4);
    rm.nodes(&[("node-1", 1000)], 10);
    rm.submit("app-ds", "root.ds");
    match rm {
        EditionRm::V012(h) => {
            let mut ds = ask("app-ds", "ds", 250, 1, 1);
            ds.tags.insert(REQUIRED_NODE.into(), "node-0".into());
            assert_eq!(h.asks(vec![ds]).0, SICORE_OK);
        }
        EditionRm::V1(v1) => {
            let mut ds = v1_preemptor("app-ds", "ds", 250, 0);
            ds.allocation_tags
                .insert(REQUIRED_NODE.into(), "node-0".into());
            v1.allocate(vec![ds], vec![]);
        }
    }
}

/// The `ALLOC_PREEMPT` records of victim `key` of app-1, in history order.
fn preempt_records(all: &[Value], key: &str) -> Vec<Value> {
    about(all, Type::App, "app-1")
        .into_iter()
        .filter(|r| detail(r) == D::AllocPreempt as i64 && r["referenceID"] == key)
        .collect()
}

/// What a DaemonSet pod's preemption leaves in the history, and what
/// reaches the RM: the victim's `ALLOC_PREEMPT` naming the preemptor and
/// the cause `required node node-0`, the preemptor's record naming its
/// victim, both with their partition and queue; once the RM confirms, a
/// second `ALLOC_PREEMPT` on the victim, as YuniKorn v1.x records a
/// confirmed release. `types` are the RM's record types.
/// A record of the history in partition `default`, queue `queue`, for 250
/// of memory, reading `message`.
fn assert_record(r: &Value, queue: &str, message: &str) {
    assert_eq!(r["partition"], "default", "{r}");
    assert_eq!(r["queue"], queue, "{r}");
    assert_eq!(r["resource"]["resources"]["memory"]["value"], 250, "{r}");
    assert_eq!(r["message"].as_str().unwrap(), message, "{r}");
}

fn a_required_node_preemption_is_traced(edition: Edition, types: &[&str]) {
    let rm = required_rm(edition, types);
    let addr = rest_address(rm.sched());
    pin_a_daemonset_pod(&rm);
    rm.wait_victims(1);
    let v = rm.victims()[0].clone();
    assert_eq!((v.app.as_str(), v.node.as_str()), ("app-1", "node-0"));
    let all = wait_history(&addr, "the preemptor's record", |r| {
        r["objectID"] == "app-ds" && r["referenceID"] == "ds" && r["eventChangeType"] == 1
    });

    // The victim's record: who took it, why, from where.
    let taken = preempt_records(&all, &v.key);
    assert_eq!(taken.len(), 1, "one record per victim chosen: {taken:?}");
    let lost = &taken[0];
    assert_eq!(lost["eventChangeType"], 3, "REMOVE: {lost}");
    assert!(lost["timestampNano"].as_i64().unwrap() > 0, "{lost}");
    assert_record(
        lost,
        "root.a",
        &format!(
            "allocation {} on node node-0 preempted by ask ds of application app-ds (required node node-0)",
            v.key
        ),
    );

    // The preemptor's record: its victims and what they free.
    let by: Vec<Value> = about(&all, Type::App, "app-ds")
        .into_iter()
        .filter(|r| r["referenceID"] == "ds")
        .collect();
    assert_eq!(by.len(), 1, "{by:?}");
    let by = &by[0];
    assert_eq!(detail(by), D::DetailsNone as i64, "{by}");
    assert_record(
        by,
        "root.ds",
        &format!(
            "ask ds preempted 1 allocation(s) (required node node-0): app-1/{}",
            v.key
        ),
    );

    // The victim's REQUEST record is unchanged, whatever the types.
    rm.wait_event("the victim's REQUEST record", |e| {
        e.object == v.key
            && e.app == "app-1"
            && e.message == "Preempted by ds from application app-ds in root.ds"
    });

    // The RM confirms: the victim's story ends with a second record.
    rm.confirm();
    rm.wait_allocated("ds");
    assert_eq!(rm.node_of("ds"), "node-0");
    let all = wait_history(&addr, "the confirmation's record", |r| {
        r["objectID"] == "app-1" && r["referenceID"] == v.key.as_str() && {
            let m = r["message"].as_str().unwrap_or("");
            m.contains("the RM confirmed its preemption")
        }
    });
    let taken = preempt_records(&all, &v.key);
    assert_eq!(taken.len(), 2, "chosen, then confirmed: {taken:?}");
    let gone = &taken[1];
    assert_eq!(gone["eventChangeType"], 3, "REMOVE: {gone}");
    assert_record(
        gone,
        "root.a",
        &format!(
            "allocation {} on node node-0 removed: the RM confirmed its preemption",
            v.key
        ),
    );
    let cancels = about(&all, Type::App, "app-1")
        .into_iter()
        .filter(|r| detail(r) == D::AllocCancel as i64)
        .count();
    assert_eq!(cancels, 0, "a confirmation is no cancel");

    // What reached the RM.
    rm.settle();
    let trace: Vec<&str> = [lost, by, gone]
        .iter()
        .map(|r| r["message"].as_str().unwrap())
        .collect();
    let app_records = types.contains(&"APP");
    match &rm {
        EditionRm::V012(h) => {
            // SI v0.12 has no field for a trace record's change: never sent.
            let sent = h.seen(|s| s.events.clone());
            assert!(
                sent.iter().all(|e| !trace.contains(&e.message.as_str())),
                "a v0.12 RM got a trace record: {sent:?}"
            );
            if !app_records {
                assert!(
                    sent.iter()
                        .all(|e| e.r#type == si::event_record::Type::Request as i32
                            || e.r#type == si::event_record::Type::Node as i32),
                    "{sent:?}"
                );
            }
        }
        EditionRm::V1(v1) if app_records => {
            // Asked for: the three records, as the history has them.
            let s = v1.rec.wait("the trace records", |s| {
                s.events
                    .iter()
                    .filter(|e| trace.contains(&e.message.as_str()))
                    .count()
                    == 3
            });
            let sent: Vec<&si18::EventRecord> = s
                .events
                .iter()
                .filter(|e| trace.contains(&e.message.as_str()))
                .collect();
            let shape = |e: &si18::EventRecord| {
                (
                    e.r#type,
                    e.object_id.clone(),
                    e.reference_id.clone(),
                    e.event_change_type,
                    e.event_change_detail,
                )
            };
            let preempt = (
                Type::App as i32,
                "app-1".to_string(),
                v.key.clone(),
                3,
                D::AllocPreempt as i32,
            );
            let preemptor = (
                Type::App as i32,
                "app-ds".to_string(),
                "ds".to_string(),
                1,
                D::DetailsNone as i32,
            );
            assert_eq!(
                sent.iter().map(|e| shape(e)).collect::<Vec<_>>(),
                [preempt.clone(), preemptor, preempt],
                "{sent:?}"
            );
        }
        EditionRm::V1(v1) => rm_saw_nothing_new(&v1.rec.copy().events),
    }
}

#[test]
fn v012_a_required_node_preemption_is_in_the_history_not_sent() {
    a_required_node_preemption_is_traced(Edition::V012, &[]);
}

#[test]
fn v1_a_required_node_preemption_is_in_the_history_not_sent() {
    a_required_node_preemption_is_traced(Edition::V1, &[]);
}

/// A v0.12 RM listing `APP` still gets no trace record: its SI cannot
/// carry one.
#[test]
fn v012_with_app_records_a_required_node_preemption_stays_in_the_history() {
    a_required_node_preemption_is_traced(Edition::V012, &["REQUEST", "NODE", "APP"]);
}

/// An SI v1.x RM listing `APP` gets the trace records.
#[test]
fn v1_with_app_records_the_rm_gets_the_required_node_trace() {
    a_required_node_preemption_is_traced(Edition::V1, &["REQUEST", "NODE", "APP"]);
}

/// The RM stops a victim itself before confirming it (its pod deleted by
/// someone else): the victim's story ends with an `ALLOC_CANCEL`, made
/// with the default record types too, and no second `ALLOC_PREEMPT`.
fn a_victim_the_rm_stops_first_ends_with_a_cancel(edition: Edition) {
    let rm = required_rm(edition, &[]);
    let addr = rest_address(rm.sched());
    pin_a_daemonset_pod(&rm);
    rm.wait_victims(1);
    let v = rm.victims()[0].clone();
    match &rm {
        EditionRm::V012(h) => {
            let uuid = h.seen(|s| preempted(s)[0].uuid.clone());
            let release = si::AllocationRelease {
                partition_name: "default".into(),
                application_id: "app-1".into(),
                uuid,
                termination_type: si::TerminationType::StoppedByRm as i32,
                ..Default::default()
            };
            assert_eq!(h.releases(vec![release], vec![]).0, SICORE_OK);
        }
        EditionRm::V1(v1) => {
            let release = si18::AllocationRelease {
                application_id: "app-1".into(),
                allocation_key: v.key.clone(),
                termination_type: si18::TerminationType::StoppedByRm as i32,
                ..Default::default()
            };
            v1.allocate(vec![], vec![release]);
        }
    }
    let all = wait_history(&addr, "the victim's cancel", |r| {
        r["objectID"] == "app-1"
            && r["referenceID"] == v.key.as_str()
            && detail(r) == D::AllocCancel as i64
    });
    let cancel = about(&all, Type::App, "app-1")
        .into_iter()
        .find(|r| detail(r) == D::AllocCancel as i64)
        .unwrap();
    assert_record(
        &cancel,
        "root.a",
        &format!(
            "allocation {} on node node-0 removed: released by the RM before its preemption was confirmed",
            v.key
        ),
    );
    assert_eq!(preempt_records(&all, &v.key).len(), 1, "only the choice");
    rm.wait_allocated("ds");
}

#[test]
fn v012_a_victim_the_rm_stops_first_ends_with_a_cancel() {
    a_victim_the_rm_stops_first_ends_with_a_cancel(Edition::V012);
}

#[test]
fn v1_a_victim_the_rm_stops_first_ends_with_a_cancel() {
    a_victim_the_rm_stops_first_ends_with_a_cancel(Edition::V1);
}
