//! Required-node (DaemonSet) preemption through the C ABI, as RMs of both
//! editions see it (`shared/spec/policy/preemption.md` 12, 14, 15, 19
//! PE17): a pod pinned to a full node gets victims on that node released
//! with `PREEMPTED_BY_SCHEDULER` once the RM agrees (v0.12:
//! `Predicates{allocate: false}`, v1.8: `PreemptionPredicates`), and runs
//! there after the RM confirms; a refused node keeps its pods. Also: a v1
//! RM with `preemption_predicates` and no `predicates` is asked for
//! guarantee preemption.

mod common;

use std::collections::HashSet;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use common::*;
use sicore::ffi::sicore_status::SICORE_OK;
use sicore::ffi::*;
use sicore::proto::si::v1 as si;
use sicore::proto::si18::sicore::si18 as sicore18;
use sicore::proto::si18::v1 as si18;
use sicore::proto::sicore::v1 as sicore_pb;
use sicore_c_rm::v1::{self as rmv1, RmV1};
use sicore_c_rm::{call, Handle};

const TAG_REQUIRED_NODE: &str = "yunikorn.apache.org/requiredNode";
const DS_MESSAGE: &str = "preempting allocations to free up resources to run daemon set ask: ds";
const NO_VICTIM: &str =
    "Unschedulable request 'ds' with required node 'node-0', no preemption victim found";

/// Leaves `a` (the victims) and `ds` (the DaemonSet pods); `switch` is
/// the partition's preemption line, if any.
fn config(switch: &str) -> String {
    format!(
        "partitions:
  - name: default
{switch}    queues:
      - name: root
        submitacl: '*'
        queues:
          - name: a
            properties: {{application.sort.policy: fifo}}
          - name: ds
            properties: {{application.sort.policy: fifo}}
"
    )
}

// ---- The v0.12 edition ----

fn preempted(s: &Seen) -> Vec<si::AllocationRelease> {
    s.released
        .iter()
        .filter(|r| r.termination_type == si::TerminationType::PreemptedByScheduler as i32)
        .cloned()
        .collect()
}

/// node-0 full of four pods of `app-1` (250 memory, 1 vcore each), then
/// an empty node-1, then a DaemonSet pod for node-0; node-0 refused by
/// the RM's predicates when `refuse`.
fn v012_pinned(switch: &str, refuse: bool) -> Harness {
    let behaviour = Behaviour {
        with_predicates: true,
        ..Default::default()
    };
    let h = Harness::with_behaviour(yaml_options(&config(switch)), behaviour);
    assert_eq!(h.register("rm", "queues").0, SICORE_OK);
    assert_eq!(h.nodes(vec![node("node-0", 1000, 10)]).0, SICORE_OK);
    h.wait("node-0", |s| s.nodes_accepted.len() == 1);
    h.submit(app("app-1", "root.a")).unwrap();
    assert_eq!(h.asks(vec![ask("app-1", "a", 250, 1, 4)]).0, SICORE_OK);
    h.wait("app-1 fills node-0", |s| s.allocations.len() == 4);
    assert_eq!(h.nodes(vec![node("node-1", 1000, 10)]).0, SICORE_OK);
    h.wait("node-1", |s| s.nodes_accepted.len() == 2);
    if refuse {
        h.rec
            .behaviour
            .lock()
            .unwrap()
            .refuse_nodes
            .insert("node-0".into());
    }
    h.submit(app("app-ds", "root.ds")).unwrap();
    let mut ds = ask("app-ds", "ds", 250, 1, 1);
    ds.tags.insert(TAG_REQUIRED_NODE.into(), "node-0".into());
    assert_eq!(h.asks(vec![ds]).0, SICORE_OK);
    h
}

#[test]
fn v012_a_daemonset_pod_evicts_one_pod_on_its_node_and_runs_there() {
    let h = v012_pinned("    preemption: {enabled: true}\n", false);
    h.wait("a victim", |s| !preempted(s).is_empty());
    h.settle();
    let victims = h.seen(preempted);
    assert_eq!(victims.len(), 1, "{victims:?}");
    let v = victims[0].clone();
    assert_eq!(v.application_id, "app-1");
    assert_eq!(v.partition_name, "default");
    assert_eq!(v.message, DS_MESSAGE);
    h.seen(|s| {
        let newest = s
            .allocations
            .iter()
            .rfind(|a| a.node_id == "node-0")
            .unwrap();
        assert_eq!(v.uuid, newest.uuid, "the newest pod on node-0");
        // The stand-in check, on the pinned node only.
        let checks: Vec<&str> = s
            .predicate_calls
            .iter()
            .filter(|p| p.allocation_key == "ds" && !p.allocate)
            .map(|p| p.node_id.as_str())
            .collect();
        assert_eq!(checks, ["node-0"]);
        assert_eq!(s.allocations.len(), 4, "not placed on node-1");
    });
    let d = h.dump();
    assert_eq!(
        find_queue(&d, "default", "root.a").unwrap()["allocated"]["memory"],
        1000,
        "the victim counts until the RM confirms"
    );
    let confirm = si::AllocationRelease {
        partition_name: "default".into(),
        application_id: "app-1".into(),
        uuid: v.uuid.clone(),
        termination_type: si::TerminationType::PreemptedByScheduler as i32,
        ..Default::default()
    };
    assert_eq!(h.releases(vec![confirm], vec![]).0, SICORE_OK);
    h.wait("the DaemonSet pod", |s| s.allocations.len() == 5);
    h.settle();
    h.seen(|s| {
        let ds = s
            .allocations
            .iter()
            .find(|a| a.allocation_key == "ds")
            .unwrap();
        assert_eq!(ds.node_id, "node-0");
        assert_eq!(preempted(s).len(), 1, "exactly one preemption");
    });
    let d = h.dump();
    assert_eq!(
        find_queue(&d, "default", "root.a").unwrap()["allocated"]["memory"],
        750
    );
    assert_eq!(
        find_queue(&d, "default", "root.ds").unwrap()["allocated"]["memory"],
        250
    );
    assert_eq!(
        find_queue(&d, "default", "root").unwrap()["allocated"]["memory"],
        1000
    );
    h.wait("the victim's event", |s| {
        s.events.iter().any(|e| {
            e.object_id == "a"
                && e.group_id == "app-1"
                && e.message == "Preempted by ds from application app-ds in root.ds"
        })
    });
}

#[test]
fn v012_a_node_the_rm_refuses_keeps_its_pods_and_the_failure_is_an_event() {
    let h = v012_pinned("    preemption: {enabled: true}\n", true);
    h.wait("the failure event", |s| {
        s.events
            .iter()
            .any(|e| e.object_id == "ds" && e.message == NO_VICTIM)
    });
    h.settle();
    h.seen(|s| {
        assert!(preempted(s).is_empty(), "{:?}", s.released);
        assert!(s
            .predicate_calls
            .iter()
            .any(|p| p.allocation_key == "ds" && p.node_id == "node-0" && !p.allocate));
        assert_eq!(s.allocations.len(), 4);
    });
}

#[test]
fn v012_without_the_switch_a_daemonset_pod_never_evicts() {
    let h = v012_pinned("", false);
    h.settle();
    h.settle();
    h.seen(|s| {
        assert!(preempted(s).is_empty(), "{:?}", s.released);
        assert_eq!(s.allocations.len(), 4);
    });
}

// ---- The v1.8 edition ----

/// What a v1 RM has been told, and the preemption checks it was asked.
#[derive(Default, Debug, Clone)]
struct V1Seen {
    new: Vec<si18::Allocation>,
    released: Vec<si18::AllocationRelease>,
    events: Vec<si18::EventRecord>,
    nodes_accepted: Vec<String>,
    apps_accepted: Vec<String>,
    checks: Vec<si18::PreemptionPredicatesArgs>,
}

#[derive(Default)]
struct V1Recorder {
    seen: Mutex<V1Seen>,
    cv: Condvar,
    /// Nodes `PreemptionPredicates` refuses.
    refuse: Mutex<HashSet<String>>,
}

impl V1Recorder {
    fn record(&self, f: impl FnOnce(&mut V1Seen)) {
        f(&mut self.seen.lock().unwrap());
        self.cv.notify_all();
    }

    fn wait(&self, what: &str, cond: impl Fn(&V1Seen) -> bool) {
        let deadline = Instant::now() + WAIT;
        let mut s = self.seen.lock().unwrap();
        while !cond(&s) {
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(!left.is_zero(), "timed out waiting for {what}: {s:#?}");
            s = self.cv.wait_timeout(s, left).unwrap().0;
        }
    }

    fn copy(&self) -> V1Seen {
        self.seen.lock().unwrap().clone()
    }
}

impl RmV1 for V1Recorder {
    fn update_allocation(&self, m: si18::AllocationResponse) -> Result<(), String> {
        self.record(|s| {
            s.new.extend(m.new);
            s.released.extend(m.released);
        });
        Ok(())
    }

    fn update_application(&self, m: si18::ApplicationResponse) -> Result<(), String> {
        self.record(|s| {
            s.apps_accepted
                .extend(m.accepted.into_iter().map(|a| a.application_id))
        });
        Ok(())
    }

    fn update_node(&self, m: si18::NodeResponse) -> Result<(), String> {
        self.record(|s| {
            s.nodes_accepted
                .extend(m.accepted.into_iter().map(|a| a.node_id))
        });
        Ok(())
    }

    fn send_event(&self, m: sicore18::EventRecords) {
        self.record(|s| s.events.extend(m.events));
    }

    /// As the k8shim: victims before the start index are gone; the pod
    /// fits once the one at the start index is gone too, unless refused.
    fn preemption_predicates(
        &self,
        m: si18::PreemptionPredicatesArgs,
    ) -> si18::PreemptionPredicatesResponse {
        let ok = !self.refuse.lock().unwrap().contains(&m.node_id);
        let index = m.start_index;
        self.record(|s| s.checks.push(m));
        si18::PreemptionPredicatesResponse {
            success: ok,
            index: if ok { index } else { -1 },
        }
    }
}

/// A scheduler with one v1 RM registered with `config`; `predicates`
/// installs the `predicates` callback.
struct V1 {
    sched: *mut sicore_scheduler,
    _owner: Handle,
    rec: Arc<V1Recorder>,
}

impl V1 {
    fn new(config: &str, predicates: bool, refuse: &[&str]) -> Self {
        Self::with_table(config, predicates, refuse, |_| {})
    }

    /// As [`V1::new`], the callback table changed by `tweak` first.
    fn with_table(
        config: &str,
        predicates: bool,
        refuse: &[&str],
        tweak: impl FnOnce(&mut sicore_v1_callbacks),
    ) -> Self {
        let options = sicore_pb::SchedulerOptions {
            event_flush_interval_ms: 50,
            scheduling_interval_ms: 10,
            ..Default::default()
        };
        let sched = sicore_c_rm::new_scheduler(&options).unwrap();
        let owner = Handle(sched);
        let rec = Arc::new(V1Recorder::default());
        rec.refuse
            .lock()
            .unwrap()
            .extend(refuse.iter().map(|n| n.to_string()));
        let mut table = rmv1::table(&rec, predicates);
        tweak(&mut table);
        let req = si18::RegisterResourceManagerRequest {
            rm_id: "rm1".into(),
            version: "v1.8.0".into(),
            policy_group: "queues".into(),
            config: config.into(),
            ..Default::default()
        };
        let (st, msg) = rmv1::register(sched, &req, &table);
        assert_eq!(st, SICORE_OK, "{msg}");
        V1 {
            sched,
            _owner: owner,
            rec,
        }
    }

    /// CREATE_DRAIN, then DRAIN_TO_SCHEDULABLE (the k8shim way).
    fn node(&self, id: &str) {
        let (st, msg) = call(
            self.sched,
            sicore_v1_update_node,
            &si18::NodeRequest {
                nodes: vec![rmv1::node(id, 1000, 10)],
                rm_id: "rm1".into(),
            },
        );
        assert_eq!(st, SICORE_OK, "{msg}");
        self.rec.wait("node answered", |s| {
            s.nodes_accepted.iter().any(|n| n == id)
        });
        let ready = rmv1::node_action(id, si18::node_info::ActionFromRm::DrainToSchedulable);
        let (st, msg) = call(
            self.sched,
            sicore_v1_update_node,
            &si18::NodeRequest {
                nodes: vec![ready],
                rm_id: "rm1".into(),
            },
        );
        assert_eq!(st, SICORE_OK, "{msg}");
    }

    fn app(&self, id: &str, queue: &str) {
        let (st, msg) = call(
            self.sched,
            sicore_v1_update_application,
            &si18::ApplicationRequest {
                new: vec![rmv1::app(id, queue, "alice")],
                rm_id: "rm1".into(),
                ..Default::default()
            },
        );
        assert_eq!(st, SICORE_OK, "{msg}");
        self.rec
            .wait("app accepted", |s| s.apps_accepted.iter().any(|a| a == id));
    }

    fn allocate(&self, allocations: Vec<si18::Allocation>, releases: Vec<si18::AllocationRelease>) {
        let (st, msg) = call(
            self.sched,
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

    /// Lets the core finish what the last requests started.
    fn settle(&self) {
        let _ = sicore_c_rm::dump(self.sched);
        std::thread::sleep(Duration::from_millis(150));
        let _ = sicore_c_rm::dump(self.sched);
    }

    fn node_of(&self, key: &str) -> String {
        self.rec
            .copy()
            .new
            .iter()
            .find(|a| a.allocation_key == key)
            .map(|a| a.node_id.clone())
            .unwrap_or_default()
    }
}

fn v1_preempted(s: &V1Seen) -> Vec<si18::AllocationRelease> {
    s.released
        .iter()
        .filter(|r| r.termination_type == si18::TerminationType::PreemptedByScheduler as i32)
        .cloned()
        .collect()
}

/// node-0 full of four pods of `app-1`, an empty node-1, then a
/// DaemonSet pod pinned to node-0. The v1 edition: preemption is on
/// when the key is absent.
fn v1_pinned(predicates: bool, refuse: &[&str]) -> V1 {
    v1_pinned_on(V1::new(&config(""), predicates, refuse))
}

fn v1_pinned_on(rm: V1) -> V1 {
    rm.node("node-0");
    rm.app("app-1", "root.a");
    let pods = (0..4)
        .map(|i| rmv1::ask("app-1", &format!("pod-{i}"), 250, 1))
        .collect();
    rm.allocate(pods, vec![]);
    rm.rec.wait("node-0 full", |s| s.new.len() == 4);
    rm.node("node-1");
    rm.app("app-ds", "root.ds");
    let mut ds = rmv1::ask("app-ds", "ds", 250, 1);
    ds.allocation_tags
        .insert(TAG_REQUIRED_NODE.into(), "node-0".into());
    rm.allocate(vec![ds], vec![]);
    rm
}

#[test]
fn v1_a_daemonset_pod_asks_preemption_predicates_evicts_and_runs_on_its_node() {
    let rm = v1_pinned(true, &[]);
    rm.rec.wait("a victim", |s| !v1_preempted(s).is_empty());
    rm.settle();
    let s = rm.rec.copy();
    let victims = v1_preempted(&s);
    assert_eq!(victims.len(), 1, "{victims:?}");
    let v = &victims[0];
    assert_eq!(v.application_id, "app-1");
    assert_eq!(v.message, DS_MESSAGE);
    assert_eq!(rm.node_of(&v.allocation_key), "node-0");
    // One check: the node's victim list, the start index on its last entry.
    assert_eq!(s.checks.len(), 1, "{:?}", s.checks);
    let c = &s.checks[0];
    assert_eq!(c.allocation_key, "ds");
    assert_eq!(c.node_id, "node-0");
    assert_eq!(
        c.preempt_allocation_keys,
        std::slice::from_ref(&v.allocation_key)
    );
    assert_eq!(c.start_index, 0);
    assert!(s.new.iter().all(|a| a.allocation_key != "ds"));
    // The RM confirms (no echo in v1.8); the pod runs on node-0.
    let confirm = si18::AllocationRelease {
        application_id: "app-1".into(),
        allocation_key: v.allocation_key.clone(),
        termination_type: si18::TerminationType::PreemptedByScheduler as i32,
        ..Default::default()
    };
    rm.allocate(vec![], vec![confirm]);
    rm.rec.wait("the DaemonSet pod", |s| {
        s.new.iter().any(|a| a.allocation_key == "ds")
    });
    rm.settle();
    assert_eq!(rm.node_of("ds"), "node-0");
    let s = rm.rec.copy();
    assert_eq!(
        s.released.len(),
        1,
        "no echo, no second victim: {:?}",
        s.released
    );
    rm.rec.wait("the victim's event", |s| {
        s.events.iter().any(|e| {
            e.object_id == v.allocation_key
                && e.message == "Preempted by ds from application app-ds in root.ds"
        })
    });
}

#[test]
fn v1_a_node_the_rm_refuses_keeps_its_pods_and_the_failure_is_an_event() {
    let rm = v1_pinned(true, &["node-0"]);
    rm.rec.wait("the failure event", |s| {
        s.events
            .iter()
            .any(|e| e.object_id == "ds" && e.message == NO_VICTIM)
    });
    rm.settle();
    let s = rm.rec.copy();
    assert!(v1_preempted(&s).is_empty(), "{:?}", s.released);
    assert!(s.checks.iter().all(|c| c.node_id == "node-0"));
    assert!(!s.checks.is_empty());
    assert_eq!(s.new.len(), 4, "not placed on node-1");
}

#[test]
fn v1_an_rm_without_predicates_is_still_asked_preemption_predicates() {
    // Guarantee preemption: b (guarantee 1000) below, a (500) above. The
    // RM has no `predicates` and refuses node-0 in PreemptionPredicates:
    // the victim must come from node-1, and node-0 must have been asked.
    let yaml = "partitions:
  - name: default
    queues:
      - name: root
        submitacl: '*'
        queues:
          - name: a
            resources: {guaranteed: {memory: 500}}
            properties: {application.sort.policy: fifo}
          - name: b
            resources: {guaranteed: {memory: 1000}}
            properties: {application.sort.policy: fifo, preemption.delay: 1ms}
";
    let rm = V1::new(yaml, false, &["node-0"]);
    rm.node("node-0");
    rm.node("node-1");
    rm.app("app-1", "root.a");
    let pods = (0..4)
        .map(|i| rmv1::ask("app-1", &format!("pod-{i}"), 500, 1))
        .collect();
    rm.allocate(pods, vec![]);
    rm.rec.wait("both nodes full", |s| s.new.len() == 4);
    rm.app("app-2", "root.b");
    let mut b = rmv1::ask("app-2", "b", 500, 1);
    b.preemption_policy = Some(si18::PreemptionPolicy {
        allow_preempt_self: true,
        allow_preempt_other: true,
    });
    rm.allocate(vec![b], vec![]);
    rm.rec.wait("a victim", |s| !v1_preempted(s).is_empty());
    rm.settle();
    let s = rm.rec.copy();
    let victims = v1_preempted(&s);
    assert_eq!(victims.len(), 1, "{victims:?}");
    assert_eq!(rm.node_of(&victims[0].allocation_key), "node-1");
    let nodes: Vec<&str> = s.checks.iter().map(|c| c.node_id.as_str()).collect();
    assert_eq!(
        nodes,
        ["node-0", "node-1"],
        "checks in order, node-0 refused"
    );
}

#[test]
fn v1_an_rm_without_preemption_predicates_is_not_asked_and_the_check_succeeds() {
    // The header: a NULL callback is "not implemented", the core acts as
    // if it succeeded.
    let rm = v1_pinned_on(V1::with_table(&config(""), true, &["node-0"], |t| {
        t.preemption_predicates = None
    }));
    rm.rec.wait("a victim", |s| !v1_preempted(s).is_empty());
    rm.settle();
    let s = rm.rec.copy();
    assert_eq!(v1_preempted(&s).len(), 1);
    assert!(s.checks.is_empty(), "{:?}", s.checks);
}
