//! The REQUEST records of the causes no pass finds (issue 31, item 2;
//! docs/why-pending.md): an application held for a running slot by a
//! queue or user `maxapplications`, and a gang member waiting for its
//! task group's placeholders. An RM of each edition sees one record per
//! cause, as for the pass's causes, and REST says the same.

use std::time::Duration;

use crate::common::editions::{req, Edition, EditionRm};
use crate::common::partition_yaml;
use crate::restkit::{http, poll, rest_address};
use serde_json::Value;
use sicore::ffi::sicore_status::SICORE_OK;

/// An RM of `edition` with REST, passes every 10 ms and event flushes
/// every 50 ms (a record per pass would show at once).
fn rm(edition: Edition, queues: &str) -> EditionRm {
    let yaml = partition_yaml("", queues);
    match edition {
        Edition::V012 => {
            let mut o = crate::common::yaml_options(&yaml);
            o.rest_address = "127.0.0.1:0".into();
            o.event_flush_interval_ms = 50;
            o.scheduling_interval_ms = 10;
            EditionRm::V012(crate::common::preempt::predicates_rm(o, &[]))
        }
        Edition::V1 => {
            let mut o = crate::common::v1::v1_options();
            o.rest_address = "127.0.0.1:0".into();
            let rm = crate::common::v1::V1Rm::with(o, &yaml, false, |_| {});
            rm.rec.accept_all();
            EditionRm::V1(rm)
        }
    }
}

/// The lines of the "why pending" REQUEST records of `key` of `app` the
/// RM was told of, in order.
fn why(rm: &EditionRm, app: &str, key: &str) -> Vec<String> {
    let prefix = format!("Request '{key}' waits: ");
    let keep = |object: &str, reference: &str, kind: i32, message: &str| {
        object == key
            && reference == app
            && kind == sicore::proto::si::v1::event_record::Type::Request as i32
            && message.starts_with(&prefix)
    };
    match rm {
        EditionRm::V012(h) => h.seen(|s| {
            s.events
                .iter()
                .filter(|e| keep(&e.object_id, &e.group_id, e.r#type, &e.message))
                .map(|e| e.message[prefix.len()..].to_string())
                .collect()
        }),
        EditionRm::V1(rm) => rm
            .rec
            .copy()
            .events
            .iter()
            .filter(|e| keep(&e.object_id, &e.reference_id, e.r#type, &e.message))
            .map(|e| e.message[prefix.len()..].to_string())
            .collect(),
    }
}

/// Waits until the RM has been told `n` lines for `key`.
fn wait_why(rm: &EditionRm, app: &str, key: &str, n: usize) -> Vec<String> {
    poll(&format!("{n} record(s) for {key}"), || {
        let lines = why(rm, app, key);
        (lines.len() >= n).then_some(lines)
    })
}

/// Lets many passes, several checks of held causes and flushes go by,
/// then says what the RM was told for `key`.
fn after_a_while(rm: &EditionRm, app: &str, key: &str) -> Vec<String> {
    std::thread::sleep(Duration::from_millis(2500));
    rm.settle();
    why(rm, app, key)
}

/// The `pendingReason` of `key` of `app` as REST shows it.
fn reason(rm: &EditionRm, app: &str, key: &str) -> Value {
    let r = http(
        &rest_address(rm.sched()),
        "GET",
        &format!("/ws/v1/partition/default/application/{app}"),
        &[],
        b"",
    );
    assert_eq!(r.status, 200, "{}", r.body);
    r.json()["requests"]
        .as_array()
        .and_then(|q| q.iter().find(|q| q["allocationKey"] == key).cloned())
        .map_or(Value::Null, |q| q["pendingReason"].clone())
}

/// Replaces the partition's queues (both editions reload).
fn update_queues(rm: &EditionRm, queues: &str) {
    let yaml = partition_yaml("", queues);
    let (st, msg) = match rm {
        EditionRm::V012(h) => h.set_config("queues", &yaml),
        EditionRm::V1(rm) => rm.update_config(&yaml),
    };
    assert_eq!(st, SICORE_OK, "{msg}");
}

fn queue_a_max_apps(n: u32) -> String {
    format!("          - name: a\n            maxapplications: {n}\n")
}

const HELD_BY_QUEUE: &str =
    "application waits for a running slot: queue root.a is at maxapplications 1";

/// Held by its queue's maxapplications, then short of room in the
/// partition, then placed: one record per cause, however many passes and
/// checks ran.
fn queue_held_then_nodes_then_placed(e: Edition) {
    let rm = rm(e, &queue_a_max_apps(1));
    rm.nodes(&[("n1", 150)], 100);
    rm.fill("app-1", "root.a", &[req("f", 100, 1)], 1);
    rm.submit("app-2", "root.a");
    rm.request("app-2", &[req("w", 200, 1)]);
    assert_eq!(wait_why(&rm, "app-2", "w", 1), [HELD_BY_QUEUE]);
    // REST names the same cause, and its age is the first reading's.
    let p = reason(&rm, "app-2", "w");
    assert_eq!(p["cause"], "applicationLimit", "{p}");
    assert_eq!(p["message"], HELD_BY_QUEUE, "{p}");
    assert!(p["since"].as_i64() > Some(0), "{p}");
    assert_eq!(
        after_a_while(&rm, "app-2", "w"),
        [HELD_BY_QUEUE],
        "one record while the cause stays"
    );
    assert_eq!(reason(&rm, "app-2", "w")["since"], p["since"]);
    // A second slot: the pass tries it, the partition is short.
    update_queues(&rm, &queue_a_max_apps(2));
    let full = "queue root at max memory: asked 200, free 50";
    assert_eq!(wait_why(&rm, "app-2", "w", 2)[1], full);
    assert_eq!(after_a_while(&rm, "app-2", "w"), [HELD_BY_QUEUE, full]);
    // Room: placed, nothing more to say. (A v1.8 RM adds the node
    // unschedulable first, the k8shim way: a cause of its own.)
    rm.nodes(&[("n2", 1000)], 100);
    rm.wait_allocated("w");
    rm.settle();
    let placed = why(&rm, "app-2", "w");
    assert_eq!(placed[..2], [HELD_BY_QUEUE, full]);
    assert!(placed.len() <= 3, "{placed:?}");
    assert!(placed.windows(2).all(|w| w[0] != w[1]), "{placed:?}");
    assert_eq!(after_a_while(&rm, "app-2", "w"), placed);
}

#[test]
fn queue_max_applications_records_each_cause_once() {
    queue_held_then_nodes_then_placed(Edition::V012);
}

#[test]
fn queue_max_applications_records_each_cause_once_v1() {
    queue_held_then_nodes_then_placed(Edition::V1);
}

fn user_held(e: Edition) {
    let queues = "          - name: a
            limits:
              - {limit: one-app, users: [alice], maxapplications: 1}
";
    let rm = rm(e, queues);
    rm.nodes(&[("n1", 4000)], 100);
    rm.fill("app-1", "root.a", &[req("f", 100, 1)], 1);
    rm.submit("app-2", "root.a");
    rm.request("app-2", &[req("w", 100, 1)]);
    let line =
        "application waits for a running slot: user alice is at maxapplications 1 in queue root.a";
    assert_eq!(wait_why(&rm, "app-2", "w", 1), [line]);
    let p = reason(&rm, "app-2", "w");
    assert_eq!(p["scope"], "user", "{p}");
    assert_eq!(p["name"], "alice", "{p}");
    assert_eq!(p["message"], line, "{p}");
    assert_eq!(after_a_while(&rm, "app-2", "w"), [line]);
}

#[test]
fn user_max_applications_record_names_the_user() {
    user_held(Edition::V012);
}

#[test]
fn user_max_applications_record_names_the_user_v1() {
    user_held(Edition::V1);
}

/// A gang of three placeholders of 100 in task group `tg` where only one
/// fits, and a real member of 120 (bigger than its placeholder, so not
/// swapped in its place, and no node has room for it).
fn gang_one_of_three(e: Edition) {
    let rm = rm(e, "          - name: a\n");
    rm.nodes(&[("n1", 150), ("n2", 50)], 100);
    match &rm {
        EditionRm::V012(h) => {
            use crate::common::{ask, res};
            let mut a = crate::common::app("gang-1", "root.a");
            a.placeholder_ask = res(&[("memory", 300), ("vcore", 3)]);
            h.submit(a).unwrap();
            let mut ph = ask("gang-1", "ph", 100, 1, 3);
            ph.task_group_name = "tg".into();
            ph.placeholder = true;
            assert_eq!(h.asks(vec![ph]).0, SICORE_OK);
            h.wait("a placeholder", |s| s.allocations.len() == 1);
            let mut real = ask("gang-1", "real", 120, 1, 1);
            real.task_group_name = "tg".into();
            assert_eq!(h.asks(vec![real]).0, SICORE_OK);
        }
        EditionRm::V1(rm) => {
            use sicore::proto::si18::v1 as si18;
            use sicore_c_rm::v1 as rmv1;
            let mut app = rmv1::app("gang-1", "root.a", "alice");
            app.placeholder_ask = Some(si18::Resource {
                resources: [
                    ("memory".to_string(), si18::Quantity { value: 300 }),
                    ("vcore".to_string(), si18::Quantity { value: 3 }),
                ]
                .into(),
            });
            let (st, msg) = rm.apps(vec![app]);
            assert_eq!(st, SICORE_OK, "{msg}");
            rm.rec.wait("gang accepted", |s| {
                s.apps_accepted.iter().any(|a| a == "gang-1")
            });
            let placeholders = (0..3)
                .map(|i| {
                    let mut a = rmv1::ask("gang-1", &format!("ph-{i}"), 100, 1);
                    a.placeholder = true;
                    a.task_group_name = "tg".into();
                    a
                })
                .collect();
            rm.allocate(placeholders, vec![]);
            rm.rec.wait("a placeholder", |s| s.new.len() == 1);
            let mut real = rmv1::ask("gang-1", "real", 120, 1);
            real.task_group_name = "tg".into();
            rm.allocate(vec![real], vec![]);
        }
    }
    let line = "gang task group tg: 1 of 3 placeholders placed";
    assert_eq!(wait_why(&rm, "gang-1", "real", 1), [line]);
    let p = reason(&rm, "gang-1", "real");
    assert_eq!(p["cause"], "gangPlaceholders", "{p}");
    assert_eq!(p["gang"]["placed"], 1, "{p}");
    assert_eq!(p["gang"]["total"], 3, "{p}");
    assert_eq!(p["message"], line, "{p}");
    assert_eq!(after_a_while(&rm, "gang-1", "real"), [line]);
}

#[test]
fn a_gang_member_at_one_of_three_placeholders_gets_a_record() {
    gang_one_of_three(Edition::V012);
}

#[test]
fn a_gang_member_at_one_of_three_placeholders_gets_a_record_v1() {
    gang_one_of_three(Edition::V1);
}
