//! User and group limits through the C ABI (limits.md 9, YuniKorn v1.8
//! semantics): what the RM sees (allocations, application states, events)
//! and what the state dump shows of the trackers.

use crate::common::*;
use serde_json::Value;
use sicore::ffi::sicore_status::*;
use sicore::proto::si::v1 as si;
use sicore::proto::sicore::v1::SchedulerOptions;

mod events;
mod groups;
mod max_applications;
mod user_caps;

/// A partition whose root has `root_limits` (YAML list, may be empty) and
/// children `queues` (indented for root's `queues:`).
fn yaml(root_limits: &str, queues: &str) -> String {
    let mut s = String::from(
        "partitions:\n  - name: default\n    queues:\n      - name: root\n        submitacl: '*'\n",
    );
    if !root_limits.is_empty() {
        s.push_str("        limits:\n");
        for l in root_limits.lines() {
            s.push_str("          ");
            s.push_str(l);
            s.push('\n');
        }
    }
    s.push_str("        queues:\n");
    for l in queues.lines() {
        s.push_str("          ");
        s.push_str(l);
        s.push('\n');
    }
    s
}

fn options(text: &str) -> SchedulerOptions {
    let mut o = yaml_options(text);
    o.event_flush_interval_ms = 20;
    o
}

fn started(h: &Harness, app: &str) -> bool {
    h.seen(|s| {
        s.app_updates
            .iter()
            .any(|u| u.application_id == app && (u.state == "Starting" || u.state == "Running"))
    })
}

fn user<'a>(d: &'a Value, name: &str) -> Option<&'a Value> {
    d["partitions"][0]["usage"]["users"]
        .as_array()?
        .iter()
        .find(|u| u["userName"] == name)
}

fn group<'a>(d: &'a Value, name: &str) -> Option<&'a Value> {
    d["partitions"][0]["usage"]["groups"]
        .as_array()?
        .iter()
        .find(|u| u["groupName"] == name)
}

/// The level at `path` of a tracker's queue tree.
fn level<'a>(t: &'a Value, path: &str) -> Option<&'a Value> {
    fn walk<'a>(q: &'a Value, path: &str) -> Option<&'a Value> {
        if q["queuePath"] == path {
            return Some(q);
        }
        q["children"].as_array()?.iter().find_map(|c| walk(c, path))
    }
    walk(&t["queues"], path)
}

fn mem(v: &Value) -> i64 {
    v["resourceUsage"]["memory"].as_i64().unwrap_or(0)
}

/// The application's entry in the state dump.
fn app_entry(d: &Value, id: &str) -> Value {
    d["partitions"][0]["applications"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["id"] == id)
        .unwrap_or_else(|| panic!("{id} in the dump"))
        .clone()
}

/// testuser may run one application (APP records on): app-1 runs and
/// holds the slot; app-2 asks and is held, its `AppCannotRunQuota` record
/// seen.
fn second_app_held_by_the_cap() -> Harness {
    let queues = "- name: default\n  limits:\n    - {users: [testuser], maxapplications: 1}\n";
    let mut o = options(&yaml("", queues));
    o.event_types = vec!["REQUEST".into(), "APP".into()];
    let h = Harness::configured(o, 1);
    h.submit(app_by("app-1", "root.default", "testuser", &[]))
        .unwrap();
    assert_eq!(h.asks(vec![ask("app-1", "k1", 10, 1, 1)]).0, SICORE_OK);
    h.wait("app-1 allocated", |s| s.allocations.len() == 1);
    h.submit(app_by("app-2", "root.default", "testuser", &[]))
        .unwrap();
    assert_eq!(h.asks(vec![ask("app-2", "k2", 10, 1, 1)]).0, SICORE_OK);
    h.wait("held record", |s| {
        s.events.iter().any(|e| e.reason == "AppCannotRunQuota")
    });
    h
}
