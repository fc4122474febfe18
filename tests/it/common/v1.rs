//! A resource manager of the SI v1.x edition over the v1 C family, for
//! the integration tests: on the shared RM of `crates/c-rm` (its v1
//! trampolines and registration), it records, decoded, what the scheduler
//! tells it and answers `PreemptionPredicates` as the test set it up.

use std::collections::HashSet;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use sicore::ffi::sicore_status::SICORE_OK;
use sicore::ffi::*;
use sicore::proto::si18::sicore::si18 as sicore18;
use sicore::proto::si18::v1 as si18;
use sicore::proto::sicore::v1 as sicore_pb;
use sicore_c_rm::v1::{self as rmv1, RmV1};
use sicore_c_rm::{call, Handle};

use super::wait_until;

/// Everything a v1 RM has been told, in arrival order per kind.
#[derive(Default, Debug, Clone)]
pub struct V1Seen {
    pub new: Vec<si18::Allocation>,
    pub released: Vec<si18::AllocationRelease>,
    pub rejected: Vec<si18::RejectedAllocation>,
    pub apps_accepted: Vec<String>,
    pub nodes_accepted: Vec<String>,
    pub events: Vec<si18::EventRecord>,
    /// The `PreemptionPredicates` checks it was asked.
    pub checks: Vec<si18::PreemptionPredicatesArgs>,
    /// How many `Predicates` calls it answered.
    pub predicate_calls: usize,
    /// How many new allocations each `UpdateAllocation` carrying any had.
    pub new_batches: Vec<usize>,
}

/// The recording callbacks of a [`V1Rm`].
#[derive(Default)]
pub struct V1Recorder {
    seen: Mutex<V1Seen>,
    cv: Condvar,
    /// The (allocation key, node) pairs `PreemptionPredicates` accepts
    /// (`("*", "*")`: every pair); every other check fails, as the spec's
    /// mock RM does.
    pub accept: Mutex<HashSet<(String, String)>>,
    /// Nodes `PreemptionPredicates` refuses whatever `accept` says.
    pub refuse: Mutex<HashSet<String>>,
    /// `Predicates` refuses every node (a cordoned cluster); else it
    /// accepts every one.
    pub refuse_predicates: bool,
    /// Nodes `Predicates` refuses ("port 8080 in use").
    pub refuse_nodes: Mutex<HashSet<String>>,
}

impl V1Recorder {
    /// A recorder whose `Predicates` refuses every node.
    pub fn refusing_predicates() -> Self {
        V1Recorder {
            refuse_predicates: true,
            ..Default::default()
        }
    }

    fn record(&self, f: impl FnOnce(&mut V1Seen)) {
        f(&mut self.seen.lock().unwrap());
        self.cv.notify_all();
    }

    /// Waits until `cond` holds on what the RM has seen, and returns that.
    pub fn wait(&self, what: &str, cond: impl Fn(&V1Seen) -> bool) -> V1Seen {
        wait_until(&self.seen, &self.cv, what, cond).clone()
    }

    /// What the RM has seen so far.
    pub fn copy(&self) -> V1Seen {
        self.seen.lock().unwrap().clone()
    }

    /// `PreemptionPredicates` accepts every check from now on.
    pub fn accept_all(&self) {
        self.accept.lock().unwrap().insert(("*".into(), "*".into()));
    }
}

impl RmV1 for V1Recorder {
    fn update_allocation(&self, m: si18::AllocationResponse) -> Result<(), String> {
        self.record(|s| {
            if !m.new.is_empty() {
                s.new_batches.push(m.new.len());
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
                .extend(m.accepted.into_iter().map(|a| a.node_id))
        });
        Ok(())
    }

    fn predicates(&self, m: si18::PredicatesArgs) -> Result<(), String> {
        self.record(|s| s.predicate_calls += 1);
        if self.refuse_predicates {
            Err(format!("node {} is cordoned by the test RM", m.node_id))
        } else if self.refuse_nodes.lock().unwrap().contains(&m.node_id) {
            Err("port 8080 in use".to_string())
        } else {
            Ok(())
        }
    }

    fn send_event(&self, m: sicore18::EventRecords) {
        self.record(|s| s.events.extend(m.events));
    }

    /// As the k8shim when nothing but resources stands in the way: the
    /// request fits once the victims up to the start index are gone, on
    /// the accepted pairs of nodes not refused.
    fn preemption_predicates(
        &self,
        m: si18::PreemptionPredicatesArgs,
    ) -> si18::PreemptionPredicatesResponse {
        let ok = !self.refuse.lock().unwrap().contains(&m.node_id) && {
            let accept = self.accept.lock().unwrap();
            accept.contains(&(m.allocation_key.clone(), m.node_id.clone()))
                || accept.contains(&("*".to_string(), "*".to_string()))
        };
        let index = m.start_index;
        self.record(|s| s.checks.push(m));
        si18::PreemptionPredicatesResponse {
            success: ok,
            index: if ok { index } else { -1 },
        }
    }
}

/// The scheduler options of most v1 tests: records flushed every 50 ms,
/// a pass every 10 ms.
pub fn v1_options() -> sicore_pb::SchedulerOptions {
    sicore_pb::SchedulerOptions {
        event_flush_interval_ms: 50,
        scheduling_interval_ms: 10,
        ..Default::default()
    }
}

/// A scheduler with one v1 RM `rm1` registered (policy group `queues`).
pub struct V1Rm {
    pub sched: *mut sicore_scheduler,
    _owner: Handle,
    pub rec: Arc<V1Recorder>,
}

impl V1Rm {
    /// Registered with `config` on [`v1_options`], without `predicates`.
    pub fn new(config: &str) -> Self {
        Self::with(v1_options(), config, false, |_| {})
    }

    /// Registered with `config` on `options`; `predicates` installs that
    /// callback, and `tweak` changes the table before registration.
    pub fn with(
        options: sicore_pb::SchedulerOptions,
        config: &str,
        predicates: bool,
        tweak: impl FnOnce(&mut sicore_v1_callbacks),
    ) -> Self {
        let req = si18::RegisterResourceManagerRequest {
            rm_id: "rm1".into(),
            version: "v1.8.0".into(),
            policy_group: "queues".into(),
            config: config.into(),
            ..Default::default()
        };
        Self::registered(options, &req, predicates, tweak)
    }

    /// Registered by `req` (its rmID must be `rm1`) on `options`.
    pub fn registered(
        options: sicore_pb::SchedulerOptions,
        req: &si18::RegisterResourceManagerRequest,
        predicates: bool,
        tweak: impl FnOnce(&mut sicore_v1_callbacks),
    ) -> Self {
        let sched = sicore_c_rm::new_scheduler(&options).unwrap();
        let owner = Handle(sched);
        let rec = Arc::new(V1Recorder::default());
        let mut table = rmv1::table(&rec, predicates);
        tweak(&mut table);
        let (st, msg) = rmv1::register(sched, req, &table);
        assert_eq!(st, SICORE_OK, "{msg}");
        V1Rm {
            sched,
            _owner: owner,
            rec,
        }
    }

    /// `sicore_v1_update_node` with `nodes`.
    pub fn nodes(&self, nodes: Vec<si18::NodeInfo>) -> (sicore_status, String) {
        call(
            self.sched,
            sicore_v1_update_node,
            &si18::NodeRequest {
                nodes,
                rm_id: "rm1".into(),
            },
        )
    }

    /// A node of `memory` and 10 vcores the k8shim way: CREATE_DRAIN,
    /// answered, then DRAIN_TO_SCHEDULABLE.
    pub fn node(&self, id: &str, memory: i64) {
        let (st, msg) = self.nodes(vec![rmv1::node(id, memory, 10)]);
        assert_eq!(st, SICORE_OK, "{msg}");
        self.rec.wait("node answered", |s| {
            s.nodes_accepted.iter().any(|n| n == id)
        });
        let ready = rmv1::node_action(id, si18::node_info::ActionFromRm::DrainToSchedulable);
        let (st, msg) = self.nodes(vec![ready]);
        assert_eq!(st, SICORE_OK, "{msg}");
    }

    /// `sicore_v1_update_application` with `new` applications.
    pub fn apps(&self, new: Vec<si18::AddApplicationRequest>) -> (sicore_status, String) {
        call(
            self.sched,
            sicore_v1_update_application,
            &si18::ApplicationRequest {
                new,
                rm_id: "rm1".into(),
                ..Default::default()
            },
        )
    }

    /// Submits application `id` of alice to `queue` and waits until it is
    /// accepted.
    pub fn app(&self, id: &str, queue: &str) {
        let (st, msg) = self.apps(vec![rmv1::app(id, queue, "alice")]);
        assert_eq!(st, SICORE_OK, "{msg}");
        self.rec
            .wait("app accepted", |s| s.apps_accepted.iter().any(|a| a == id));
    }

    /// `sicore_v1_update_allocation` with requests and releases.
    pub fn try_allocate(
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
                rm_id: "rm1".into(),
            },
        )
    }

    /// As [`V1Rm::try_allocate`], asserting that the call succeeds.
    pub fn allocate(
        &self,
        allocations: Vec<si18::Allocation>,
        releases: Vec<si18::AllocationRelease>,
    ) {
        let (st, msg) = self.try_allocate(allocations, releases);
        assert_eq!(st, SICORE_OK, "{msg}");
    }

    /// `sicore_v1_update_configuration` with `config` for `queues`.
    pub fn update_config(&self, config: &str) -> (sicore_status, String) {
        rmv1::update_configuration(
            self.sched,
            &si18::UpdateConfigurationRequest {
                rm_id: "rm1".into(),
                policy_group: "queues".into(),
                config: config.into(),
                ..Default::default()
            },
        )
    }

    /// The state dump.
    pub fn dump(&self) -> serde_json::Value {
        sicore_c_rm::dump(self.sched).unwrap()
    }

    /// Lets the core finish what the last requests started: a dump is
    /// answered only after every earlier request and the pass after it.
    pub fn settle(&self) {
        let _ = self.dump();
        std::thread::sleep(Duration::from_millis(150));
        let _ = self.dump();
    }

    /// The node of the allocation `key` the RM was told of ("" if none).
    pub fn node_of(&self, key: &str) -> String {
        self.rec
            .copy()
            .new
            .iter()
            .find(|a| a.allocation_key == key)
            .map(|a| a.node_id.clone())
            .unwrap_or_default()
    }

    /// The allocated memory of the queue at `path` in `default`.
    pub fn memory(&self, path: &str) -> i64 {
        super::memory_of(&self.dump(), path)
    }
}

/// The releases of preemption victims (`PREEMPTED_BY_SCHEDULER`) the RM
/// was told of.
pub fn v1_preempted(s: &V1Seen) -> Vec<si18::AllocationRelease> {
    s.released
        .iter()
        .filter(|r| r.termination_type == si18::TerminationType::PreemptedByScheduler as i32)
        .cloned()
        .collect()
}

/// The RM's confirmation of the victim `key` of `app`, as the k8shim
/// sends it: a release by key with `PREEMPTED_BY_SCHEDULER`.
pub fn v1_confirmation(app: &str, key: &str) -> si18::AllocationRelease {
    si18::AllocationRelease {
        application_id: app.into(),
        allocation_key: key.into(),
        termination_type: si18::TerminationType::PreemptedByScheduler as i32,
        ..Default::default()
    }
}
