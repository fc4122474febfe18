//! Gang scheduling as an RM sees it through the C ABI (spec 9): admission,
//! placeholders, replacement on the same or another node, confirmation,
//! placeholder timeouts, node removal during a swap and bad input.

use std::collections::HashSet;

use crate::common::*;
use serde_json::Value;
use sicore::ffi::sicore_status::*;
use sicore::proto::si::v1 as si;
use sicore::proto::sicore::v1::SchedulerOptions;

mod admission;
mod node_removal;
mod replacement;
mod timeouts;

const PR: i32 = si::TerminationType::PlaceholderReplaced as i32;
const TIMEOUT: i32 = si::TerminationType::Timeout as i32;
const STOPPED: i32 = si::TerminationType::StoppedByRm as i32;

/// A gang application: `placeholder_memory` of memory (and one vcore per
/// 100) in total for its placeholders.
fn gang_app(
    id: &str,
    queue: &str,
    placeholder_memory: i64,
    style: &str,
) -> si::AddApplicationRequest {
    let mut a = app(id, queue);
    a.placeholder_ask = res(&[
        ("memory", placeholder_memory),
        ("vcore", placeholder_memory / 100),
    ]);
    a.gang_scheduling_style = style.into();
    a
}

fn placeholder_ask(
    app: &str,
    key: &str,
    group: &str,
    memory: i64,
    repeat: i32,
) -> si::AllocationAsk {
    let mut a = ask(app, key, memory, memory / 100, repeat);
    a.task_group_name = group.into();
    a.placeholder = true;
    a
}

fn real_ask(app: &str, key: &str, group: &str, memory: i64, repeat: i32) -> si::AllocationAsk {
    let mut a = ask(app, key, memory, memory / 100, repeat);
    a.task_group_name = group.into();
    a
}

fn confirm(app: &str, uuid: &str) -> si::AllocationRelease {
    si::AllocationRelease {
        partition_name: "default".into(),
        application_id: app.into(),
        uuid: uuid.into(),
        termination_type: PR,
        message: "placeholder stopped".into(),
    }
}

fn stopped(app: &str, uuid: &str) -> si::AllocationRelease {
    si::AllocationRelease {
        termination_type: STOPPED,
        ..confirm(app, uuid)
    }
}

/// The real UUID named by a `PLACEHOLDER_REPLACED` release.
fn real_of(r: &si::AllocationRelease) -> String {
    r.message
        .strip_prefix("replacing UUID: ")
        .unwrap_or_else(|| panic!("unexpected message {:?}", r.message))
        .to_string()
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

fn node_dump(d: &Value, id: &str) -> Value {
    d["partitions"][0]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["id"] == id)
        .cloned()
        .unwrap_or(Value::Null)
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

fn placeholders_of(h: &Harness, app: &str) -> Vec<si::Allocation> {
    h.seen(|s| {
        s.allocations
            .iter()
            .filter(|a| a.application_id == app && a.placeholder)
            .cloned()
            .collect()
    })
}

fn replaced(h: &Harness) -> Vec<si::AllocationRelease> {
    h.seen(|s| {
        s.released
            .iter()
            .filter(|r| r.termination_type == PR)
            .cloned()
            .collect()
    })
}

/// Options with a fast event flush, so APP records arrive quickly.
fn fast_events() -> SchedulerOptions {
    SchedulerOptions {
        event_flush_interval_ms: 20,
        event_types: vec!["REQUEST".into(), "APP".into()],
        ..Default::default()
    }
}

fn with_predicates() -> Behaviour {
    Behaviour {
        with_predicates: true,
        ..Default::default()
    }
}

/// Registers, adds `nodes` nodes of 1000 memory / 10 vcore, submits `a`.
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

/// Submits `n` placeholders of 100 memory for gang `g` (task group `tg`)
/// and waits until the RM holds them.
fn place_placeholders(h: &Harness, n: usize) {
    assert_eq!(
        h.asks(vec![placeholder_ask("g", "ph", "tg", 100, n as i32)])
            .0,
        SICORE_OK
    );
    h.wait("placeholders", |s| s.allocations.len() == n);
}

/// Submits gang `g`'s real ask of 100 memory and waits for the first
/// placeholder release that starts its swap.
fn submit_real_and_wait_for_swap(h: &Harness) {
    assert_eq!(
        h.asks(vec![real_ask("g", "real", "tg", 100, 1)]).0,
        SICORE_OK
    );
    h.wait("replacement", |s| s.released.len() == 1);
}

/// Two nodes, one placeholder of gang `g` on one of them, and the real ask
/// `real` submitted while the RM's predicates refuse the placeholder's node:
/// the swap must go to the other node. Returns the harness, the placeholder
/// and the other node's id.
fn vetoed_swap() -> (Harness, si::Allocation, &'static str) {
    let h = gang_harness(
        SchedulerOptions::default(),
        with_predicates(),
        2,
        gang_app("g", "root.a", 100, ""),
    );
    place_placeholders(&h, 1);
    let ph = placeholders_of(&h, "g").remove(0);
    let other = if ph.node_id == "node-0" {
        "node-1"
    } else {
        "node-0"
    };
    h.rec
        .behaviour
        .lock()
        .unwrap()
        .refuse_nodes
        .insert(ph.node_id.clone());
    assert_eq!(
        h.asks(vec![real_ask("g", "real", "tg", 100, 1)]).0,
        SICORE_OK
    );
    (h, ph, other)
}
