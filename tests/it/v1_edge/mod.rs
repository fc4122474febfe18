//! The SI v1.x edition through its C family, as a v1 RM (the k8shim)
//! drives it: registration with config and extraConfig, configuration
//! updates, the edition bound to the rmID, CREATE_DRAIN, requests and
//! releases by key, the `new` barrier before Predicates, v1 events, and
//! RMs of both editions in one scheduler.

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use prost::Message;
use sicore::ffi::sicore_status::*;
use sicore::ffi::*;
use sicore::proto::si::v1 as si;
use sicore::proto::si18::sicore::si18 as sicore18;
use sicore::proto::si18::v1 as si18;
use sicore::proto::sicore::v1 as sicore_pb;
use sicore_c_rm::v1::{self as rmv1, RmV1};
use sicore_c_rm::{call, Handle};

use crate::common::ONE_QUEUE as CONFIG;

mod editions;
mod registration;
mod requests;

const WAIT: Duration = Duration::from_secs(20);

/// What a v1 RM has been told.
#[derive(Default, Debug, Clone)]
struct Seen {
    new: Vec<si18::Allocation>,
    released: Vec<si18::AllocationRelease>,
    rejected: Vec<si18::RejectedAllocation>,
    apps_accepted: Vec<String>,
    nodes_accepted: Vec<String>,
    nodes_rejected: Vec<si18::RejectedNode>,
    events: Vec<si18::EventRecord>,
    /// The RM's assumed pods, filled in `update_allocation` as the k8shim
    /// does: key -> node.
    assumed: HashMap<String, String>,
    /// Predicate calls that found the node already holding a pod.
    refused: usize,
    predicate_calls: usize,
    /// Pods assumed on a node that already had one (a stale cache).
    violations: Vec<String>,
}

#[derive(Default)]
struct Recorder {
    seen: Mutex<Seen>,
    cv: Condvar,
}

impl Recorder {
    fn record(&self, f: impl FnOnce(&mut Seen)) {
        f(&mut self.seen.lock().unwrap());
        self.cv.notify_all();
    }

    fn wait(&self, what: &str, cond: impl Fn(&Seen) -> bool) {
        let deadline = Instant::now() + WAIT;
        let mut s = self.seen.lock().unwrap();
        while !cond(&s) {
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(!left.is_zero(), "timed out waiting for {what}: {s:#?}");
            s = self.cv.wait_timeout(s, left).unwrap().0;
        }
    }

    fn copy(&self) -> Seen {
        self.seen.lock().unwrap().clone()
    }
}

impl RmV1 for Recorder {
    fn update_allocation(&self, m: si18::AllocationResponse) -> Result<(), String> {
        self.record(|s| {
            for a in &m.new {
                let held = s.assumed.values().filter(|n| **n == a.node_id).count();
                if held > 0 {
                    s.violations.push(format!(
                        "{} on {} which holds {held}",
                        a.allocation_key, a.node_id
                    ));
                }
                s.assumed
                    .insert(a.allocation_key.clone(), a.node_id.clone());
            }
            for r in &m.released {
                s.assumed.remove(&r.allocation_key);
            }
            s.new.extend(m.new);
            s.released.extend(m.released);
            s.rejected.extend(m.rejected_allocations);
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
                .extend(m.accepted.into_iter().map(|a| a.node_id));
            s.nodes_rejected.extend(m.rejected);
        });
        Ok(())
    }

    /// One pod per node, judged from the assumed cache alone.
    fn predicates(&self, m: si18::PredicatesArgs) -> Result<(), String> {
        let mut s = self.seen.lock().unwrap();
        s.predicate_calls += 1;
        if s.assumed.values().any(|n| *n == m.node_id) {
            s.refused += 1;
            Err(format!("node {} already runs a pod", m.node_id))
        } else {
            Ok(())
        }
    }

    fn send_event(&self, m: sicore18::EventRecords) {
        self.record(|s| s.events.extend(m.events));
    }
}

struct V1Rm {
    sched: *mut sicore_scheduler,
    /// Frees the scheduler when this RM made it.
    _owner: Option<Handle>,
    rec: Arc<Recorder>,
    rm_id: String,
}

fn options() -> sicore_pb::SchedulerOptions {
    sicore_pb::SchedulerOptions {
        event_flush_interval_ms: 50,
        scheduling_interval_ms: 10,
        ..Default::default()
    }
}

fn register_req(rm_id: &str, config: &str) -> si18::RegisterResourceManagerRequest {
    si18::RegisterResourceManagerRequest {
        rm_id: rm_id.into(),
        version: "v1.8.0".into(),
        policy_group: "queues".into(),
        build_info: [("buildVersion".to_string(), "test".to_string())].into(),
        config: config.into(),
        extra_config: [
            ("log.level".to_string(), "info".to_string()),
            ("some.unknown.key".to_string(), "x".to_string()),
        ]
        .into(),
    }
}

/// Registers a v1 RM on `sched`; panics with the library's message on failure.
fn register_on(
    sched: *mut sicore_scheduler,
    rm_id: &str,
    config: &str,
    predicates: bool,
) -> Arc<Recorder> {
    let rec = Arc::new(Recorder::default());
    let table = rmv1::table(&rec, predicates);
    let (st, msg) = rmv1::register(sched, &register_req(rm_id, config), &table);
    assert_eq!(st, SICORE_OK, "{msg}");
    rec
}

impl V1Rm {
    fn new(config: &str, predicates: bool) -> Self {
        let sched = sicore_c_rm::new_scheduler(&options()).unwrap();
        let owner = Handle(sched);
        let rec = register_on(sched, "rm1", config, predicates);
        V1Rm {
            sched,
            _owner: Some(owner),
            rec,
            rm_id: "rm1".into(),
        }
    }

    fn nodes(&self, nodes: Vec<si18::NodeInfo>) -> (sicore_status, String) {
        call(
            self.sched,
            sicore_v1_update_node,
            &si18::NodeRequest {
                nodes,
                rm_id: self.rm_id.clone(),
            },
        )
    }

    fn app(&self, id: &str, queue: &str) {
        let (st, msg) = call(
            self.sched,
            sicore_v1_update_application,
            &si18::ApplicationRequest {
                new: vec![rmv1::app(id, queue, "alice")],
                rm_id: self.rm_id.clone(),
                ..Default::default()
            },
        );
        assert_eq!(st, SICORE_OK, "{msg}");
        self.rec
            .wait("app accepted", |s| s.apps_accepted.iter().any(|a| a == id));
    }

    fn allocate(
        &self,
        allocations: Vec<si18::Allocation>,
        releases: Vec<si18::AllocationRelease>,
    ) -> (sicore_status, String) {
        call(
            self.sched,
            sicore_v1_update_allocation,
            &si18::AllocationRequest {
                allocations,
                releases: (!releases.is_empty()).then_some(si18::AllocationReleasesRequest {
                    allocations_to_release: releases,
                }),
                rm_id: self.rm_id.clone(),
            },
        )
    }

    /// CREATE_DRAIN nodes, each answered, then DRAIN_TO_SCHEDULABLE.
    fn ready_nodes(&self, ids: &[&str]) {
        let nodes = ids.iter().map(|n| rmv1::node(n, 1000, 10)).collect();
        assert_eq!(self.nodes(nodes).0, SICORE_OK);
        self.rec.wait("every node answered", |s| {
            ids.iter().all(|n| s.nodes_accepted.iter().any(|a| a == n))
        });
        let schedulable = ids
            .iter()
            .map(|n| rmv1::node_action(n, si18::node_info::ActionFromRm::DrainToSchedulable))
            .collect();
        assert_eq!(self.nodes(schedulable).0, SICORE_OK);
    }

    fn dump(&self) -> serde_json::Value {
        sicore_c_rm::dump(self.sched).unwrap()
    }

    fn update_config(&self, config: &str) -> (sicore_status, String) {
        rmv1::update_configuration(
            self.sched,
            &si18::UpdateConfigurationRequest {
                rm_id: self.rm_id.clone(),
                policy_group: "queues".into(),
                config: config.into(),
                extra_config: [("log.level".to_string(), "INFO".to_string())].into(),
            },
        )
    }
}

fn rm_entry<'a>(dump: &'a serde_json::Value, rm_id: &str) -> &'a serde_json::Value {
    dump["rms"]
        .as_array()
        .and_then(|rms| rms.iter().find(|r| r["rm_id"] == rm_id))
        .unwrap_or_else(|| panic!("RM {rm_id} in the dump: {dump}"))
}
