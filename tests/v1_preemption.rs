//! Guarantee preemption through the SI v1.8 C family, as the k8shim drives
//! it: the per-request `preemptionPolicy` and `originator` reach the core
//! (policy/preemption.md 1.3), order each node's victims (7.2) and score
//! the RM's answers (9.3), so an `allowPreemptSelf: false` allocation or an
//! originator is taken only as a last resort; the victim is released with
//! `PREEMPTED_BY_SCHEDULER`, the RM confirms by releasing it with the same
//! type, and the preemptor gets the node.

use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use sicore::ffi::sicore_status::*;
use sicore::ffi::*;
use sicore::proto::si18::v1 as si18;
use sicore::proto::sicore::v1 as sicore_pb;
use sicore_c_rm::v1::{self as rmv1, RmV1};
use sicore_c_rm::{call, Handle};

const WAIT: Duration = Duration::from_secs(20);

/// `a` holds the victims; `b` is below its guarantee and may preempt after
/// 1 ms. Preemption is on by default in the v1.8 edition.
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

#[derive(Default, Debug, Clone)]
struct Seen {
    new: Vec<si18::Allocation>,
    released: Vec<si18::AllocationRelease>,
    apps: usize,
    nodes: usize,
    checks: Vec<si18::PreemptionPredicatesArgs>,
}

#[derive(Default)]
struct Rm {
    seen: Mutex<Seen>,
    cv: Condvar,
}

impl Rm {
    fn record(&self, f: impl FnOnce(&mut Seen)) {
        f(&mut self.seen.lock().unwrap());
        self.cv.notify_all();
    }

    fn wait(&self, what: &str, cond: impl Fn(&Seen) -> bool) -> Seen {
        let deadline = Instant::now() + WAIT;
        let mut s = self.seen.lock().unwrap();
        while !cond(&s) {
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(!left.is_zero(), "timed out waiting for {what}: {s:#?}");
            s = self.cv.wait_timeout(s, left).unwrap().0;
        }
        s.clone()
    }
}

impl RmV1 for Rm {
    fn update_allocation(&self, m: si18::AllocationResponse) -> Result<(), String> {
        self.record(|s| {
            s.new.extend(m.new);
            s.released.extend(m.released);
        });
        Ok(())
    }

    fn update_application(&self, m: si18::ApplicationResponse) -> Result<(), String> {
        self.record(|s| s.apps += m.accepted.len());
        Ok(())
    }

    fn update_node(&self, m: si18::NodeResponse) -> Result<(), String> {
        self.record(|s| s.nodes += m.accepted.len());
        Ok(())
    }

    /// The k8shim's answer when nothing but resources stands in the way:
    /// the request fits once the victims up to the start index are gone.
    fn preemption_predicates(
        &self,
        m: si18::PreemptionPredicatesArgs,
    ) -> si18::PreemptionPredicatesResponse {
        let index = m.start_index;
        self.record(|s| s.checks.push(m));
        si18::PreemptionPredicatesResponse {
            success: true,
            index,
        }
    }
}

fn request(
    sched: *mut sicore_scheduler,
    allocations: Vec<si18::Allocation>,
    releases: Vec<si18::AllocationRelease>,
) {
    let (st, msg) = call(
        sched,
        sicore_v1_update_allocation,
        &si18::AllocationRequest {
            allocations,
            releases: (!releases.is_empty()).then_some(si18::AllocationReleasesRequest {
                allocations_to_release: releases,
            }),
            rm_id: "rm1".into(),
        },
    );
    assert_eq!(st, SICORE_OK, "{msg}");
}

/// A pod the RM already runs on `node`, with its preemption fields.
fn running(key: &str, node: &str, allow_self: bool, originator: bool) -> si18::Allocation {
    si18::Allocation {
        node_id: node.into(),
        originator,
        preemption_policy: Some(si18::PreemptionPolicy {
            allow_preempt_self: allow_self,
            allow_preempt_other: true,
        }),
        ..rmv1::ask("app-1", key, 250, 1)
    }
}

/// Two nodes of 500 memory, each filled by two running pods of `app-1`
/// in `root.a`: on n1 two opted out (`allowPreemptSelf: false`), on n2
/// one opted in and, newer, an opted-in originator.
fn set_up() -> (Handle, Arc<Rm>) {
    let opts = sicore_pb::SchedulerOptions {
        scheduling_interval_ms: 10,
        ..Default::default()
    };
    let sched = sicore_c_rm::new_scheduler(&opts).unwrap();
    let owner = Handle(sched);
    let rm = Arc::new(Rm::default());
    let table = rmv1::table(&rm, true);
    let (st, msg) = rmv1::register(
        sched,
        &si18::RegisterResourceManagerRequest {
            rm_id: "rm1".into(),
            version: "v1.8.0".into(),
            policy_group: "queues".into(),
            config: CONFIG.into(),
            ..Default::default()
        },
        &table,
    );
    assert_eq!(st, SICORE_OK, "{msg}");
    let nodes = ["n1", "n2"].map(|n| si18::NodeInfo {
        action: si18::node_info::ActionFromRm::Create as i32,
        ..rmv1::node(n, 500, 10)
    });
    let (st, msg) = call(
        sched,
        sicore_v1_update_node,
        &si18::NodeRequest {
            nodes: nodes.to_vec(),
            rm_id: "rm1".into(),
        },
    );
    assert_eq!(st, SICORE_OK, "{msg}");
    rm.wait("nodes", |s| s.nodes == 2);
    let (st, msg) = call(
        sched,
        sicore_v1_update_application,
        &si18::ApplicationRequest {
            new: vec![
                rmv1::app("app-1", "root.a", "alice"),
                rmv1::app("app-2", "root.b", "bob"),
            ],
            rm_id: "rm1".into(),
            ..Default::default()
        },
    );
    assert_eq!(st, SICORE_OK, "{msg}");
    rm.wait("apps", |s| s.apps == 2);
    // Placement order is age: a4 is older than the originator a3.
    request(
        sched,
        vec![
            running("a1", "n1", false, false),
            running("a2", "n1", false, false),
            running("a4", "n2", true, false),
            running("a3", "n2", true, true),
        ],
        vec![],
    );
    rm.wait("the running pods echoed", |s| s.new.len() == 4);
    (owner, rm)
}

fn preempted(s: &Seen) -> Vec<String> {
    s.released
        .iter()
        .filter(|r| r.termination_type == si18::TerminationType::PreemptedByScheduler as i32)
        .map(|r| r.allocation_key.clone())
        .collect()
}

#[test]
fn opted_out_pods_and_originators_are_last_resort_victims() {
    let (owner, rm) = set_up();
    let seen = rm.wait("echoes", |s| s.new.len() == 4);
    // The echo carries the fields as the request sent them.
    let echo = |k: &str| seen.new.iter().find(|a| a.allocation_key == k).unwrap();
    assert_eq!(
        echo("a1").preemption_policy,
        Some(si18::PreemptionPolicy {
            allow_preempt_self: false,
            allow_preempt_other: true,
        })
    );
    assert!(echo("a3").originator);
    assert!(!echo("a4").originator);

    let preemptor = si18::Allocation {
        preemption_policy: Some(si18::PreemptionPolicy {
            allow_preempt_self: true,
            allow_preempt_other: true,
        }),
        ..rmv1::ask("app-2", "b1", 250, 1)
    };
    request(owner.0, vec![preemptor], vec![]);
    let s = rm.wait("a victim", |s| !preempted(s).is_empty());
    // n1 is checked first (same start index, lower node id) and accepted,
    // but taking an opted-out pod scores worse than n2's opted-in one;
    // on n2 the older non-originator goes before the newer originator.
    let checks: Vec<(&str, Vec<&str>, i32)> = s
        .checks
        .iter()
        .map(|c| {
            (
                c.node_id.as_str(),
                c.preempt_allocation_keys
                    .iter()
                    .map(|k| k.as_str())
                    .collect(),
                c.start_index,
            )
        })
        .collect();
    assert_eq!(
        checks,
        [("n1", vec!["a2", "a1"], 0), ("n2", vec!["a4", "a3"], 0)]
    );
    assert_eq!(preempted(&s), ["a4"]);
    let r = s
        .released
        .iter()
        .find(|r| r.allocation_key == "a4")
        .unwrap();
    assert_eq!(r.application_id, "app-1");
    assert_eq!(
        r.message,
        "preempting allocations to free up resources to run ask: b1"
    );

    // The RM confirms; the preemptor gets the node its victim left.
    let confirm = si18::AllocationRelease {
        application_id: "app-1".into(),
        allocation_key: "a4".into(),
        termination_type: si18::TerminationType::PreemptedByScheduler as i32,
        ..Default::default()
    };
    request(owner.0, vec![], vec![confirm]);
    let s = rm.wait("the preemptor", |s| {
        s.new.iter().any(|a| a.allocation_key == "b1")
    });
    let b1 = s.new.iter().find(|a| a.allocation_key == "b1").unwrap();
    assert_eq!(b1.node_id, "n2");
    assert_eq!(preempted(&s), ["a4"], "exactly one victim");
    let d = sicore_c_rm::dump(owner.0).unwrap();
    let queue = |path: &str| {
        fn find<'a>(q: &'a serde_json::Value, path: &str) -> Option<&'a serde_json::Value> {
            if q["path"] == path {
                return Some(q);
            }
            q["children"].as_array()?.iter().find_map(|c| find(c, path))
        }
        d["partitions"]
            .as_array()
            .unwrap()
            .iter()
            .find_map(|p| find(&p["root"], path))
            .unwrap_or_else(|| panic!("{path} in {d}"))
            .clone()
    };
    assert_eq!(queue("root.a")["allocated"]["memory"], 750);
    assert_eq!(queue("root.b")["allocated"]["memory"], 250);
}

#[test]
fn a_request_without_allow_preempt_other_never_preempts() {
    let (owner, rm) = set_up();
    // No preemptionPolicy at all: allowPreemptOther is false (quirk Q1).
    request(owner.0, vec![rmv1::ask("app-2", "b1", 250, 1)], vec![]);
    // Give the core passes well past the 1 ms delay.
    std::thread::sleep(Duration::from_millis(300));
    let s = rm.wait("nothing", |_| true);
    assert!(preempted(&s).is_empty(), "{:?}", s.released);
    assert!(s.checks.is_empty(), "{:?}", s.checks);
}
