//! A resource manager written against the C ABI, for the integration
//! tests: on the shared RM of `crates/c-rm` (its trampolines, registration
//! and calls), it records, decoded, everything the scheduler tells it.
//! One module per further job: [`v1`] the same for an SI v1.x RM,
//! [`preempt`] what the v0.12 preemption tests share, [`editions`] one
//! scenario driving an RM of either edition, [`books`] the dump's books
//! and [`rms`] random RMs on the public Rust API.

pub mod books;
pub mod editions;
pub mod preempt;
pub mod rms;
pub mod serial;
pub mod v1;

use std::collections::HashSet;
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use prost::Message;
use sicore::ffi::*;
use sicore::proto::si::v1 as si;
use sicore::proto::sicore::v1 as sicore_pb;
use sicore_c_rm::{Installed, Rm};

pub const WAIT: Duration = Duration::from_secs(20);

/// One open queue, `root.a`, and applications placed where they say.
pub const ONE_QUEUE: &str = "
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
";

/// Every `alloc:<key>` in the RM's log comes after an `assume:<key>`.
pub fn assert_resync_before_announcement(s: &Seen) {
    let mut assumed = HashSet::new();
    for entry in &s.log {
        if let Some(k) = entry.strip_prefix("assume:") {
            assumed.insert(k.to_string());
        } else if let Some(k) = entry.strip_prefix("alloc:") {
            assert!(
                assumed.contains(k),
                "UpdateAllocation announced {k} before its ReSyncSchedulerCache"
            );
        }
    }
}

/// Everything the RM has been told, in arrival order per kind.
#[derive(Default, Debug, Clone)]
pub struct Seen {
    pub allocations: Vec<si::Allocation>,
    pub released: Vec<si::AllocationRelease>,
    pub released_asks: Vec<si::AllocationAskRelease>,
    pub rejected_asks: Vec<si::RejectedAllocationAsk>,
    pub apps_accepted: Vec<String>,
    pub apps_rejected: Vec<si::RejectedApplication>,
    pub app_updates: Vec<si::UpdatedApplication>,
    pub nodes_accepted: Vec<String>,
    pub nodes_rejected: Vec<si::RejectedNode>,
    pub predicate_calls: Vec<si::PredicatesArgs>,
    pub assumed: Vec<si::AssumedAllocation>,
    pub forgotten: Vec<si::ForgotAllocation>,
    pub events: Vec<si::EventRecord>,
    pub container_states: Vec<si::UpdateContainerSchedulingStateRequest>,
    /// Allocation keys in the order ReSync(assumed) and UpdateAllocation saw them.
    pub log: Vec<String>,
    /// How many new allocations each `UpdateAllocation` carrying any had.
    pub alloc_batches: Vec<usize>,
    /// How many assumed allocations each `ReSyncSchedulerCache` carrying any had.
    pub assume_batches: Vec<usize>,
    /// Statuses returned by calls the RM made from inside callbacks.
    pub reentrant_statuses: Vec<sicore_status>,
    /// Texts passed to `UpdateConfiguration`, in order.
    pub config_updates: Vec<String>,
    /// The RM's cache as `ReSyncSchedulerCache` alone feeds it:
    /// allocation key -> node (assumed, not yet forgotten).
    pub cache: std::collections::HashMap<String, String>,
    /// Breaches of `Behaviour::max_per_node` found when a ReSync arrived.
    pub violations: Vec<String>,
    /// Predicate calls answered with a refusal.
    pub refused: usize,
    /// Reservation checks (`allocate: false`) the predicate approved: each
    /// is a reservation the scheduler makes.
    pub reservations_approved: usize,
}

impl Seen {
    /// Allocations on `node` in the ReSync-fed cache.
    pub fn cached_on(&self, node: &str) -> usize {
        self.cache.values().filter(|n| *n == node).count()
    }
}

/// What a callback does besides recording.
#[derive(Default)]
pub struct Behaviour {
    /// Nodes the predicates callback refuses.
    pub refuse_nodes: HashSet<String>,
    /// Install a predicates callback at all.
    pub with_predicates: bool,
    /// From inside `update_allocation`, release every new allocation again
    /// (async call) and try a synchronous call.
    pub reenter: bool,
    /// Sleep this long in `update_allocation`.
    pub slow: Option<Duration>,
    /// Answer `UpdateConfiguration` with failure and this reason.
    pub reject_config: Option<String>,
    /// Sleep this long in `update_container_scheduling_state`.
    pub slow_container_state: Option<Duration>,
    /// The predicate refuses a node that already holds this many
    /// allocations in the ReSync-fed cache (`Seen::cache`), like a
    /// Kubernetes filter reading the pods assumed on a node.
    pub max_per_node: Option<usize>,
}

pub struct Recorder {
    pub seen: Mutex<Seen>,
    cv: Condvar,
    pub behaviour: Mutex<Behaviour>,
    pub sched: AtomicPtr<sicore_scheduler>,
    pub releases: AtomicUsize,
    pub calls_after_release: AtomicUsize,
}

impl Recorder {
    fn record(&self, f: impl FnOnce(&mut Seen)) {
        if self.releases.load(Ordering::SeqCst) > 0 {
            self.calls_after_release.fetch_add(1, Ordering::SeqCst);
        }
        f(&mut self.seen.lock().unwrap());
        self.cv.notify_all();
    }
}

impl Rm for Recorder {
    fn update_allocation(&self, m: si::AllocationResponse) -> Result<(), String> {
        let (reenter, slow) = {
            let b = self.behaviour.lock().unwrap();
            (b.reenter, b.slow)
        };
        if let Some(d) = slow {
            std::thread::sleep(d);
        }
        let mut statuses = Vec::new();
        if reenter && !m.new.is_empty() {
            let s = self.sched.load(Ordering::SeqCst);
            let req = si::AllocationRequest {
                rm_id: "rm".into(),
                releases: Some(si::AllocationReleasesRequest {
                    allocations_to_release: m
                        .new
                        .iter()
                        .map(|a| si::AllocationRelease {
                            application_id: a.application_id.clone(),
                            uuid: a.uuid.clone(),
                            termination_type: si::TerminationType::StoppedByRm as i32,
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                }),
                ..Default::default()
            };
            statuses.push(sicore_c_rm::raw(s, sicore_update_allocation, &req.encode_to_vec()).0);
            statuses.push(sicore_c_rm::reload(s, "rm").0);
        }
        self.record(|s| {
            s.reentrant_statuses.extend(statuses);
            for a in &m.new {
                s.log.push(format!("alloc:{}", a.allocation_key));
            }
            if !m.new.is_empty() {
                s.alloc_batches.push(m.new.len());
            }
            s.allocations.extend(m.new);
            s.released.extend(m.released);
            s.released_asks.extend(m.released_asks);
            s.rejected_asks.extend(m.rejected);
        });
        Ok(())
    }

    fn update_application(&self, m: si::ApplicationResponse) -> Result<(), String> {
        self.record(|s| {
            s.apps_accepted
                .extend(m.accepted.into_iter().map(|a| a.application_id));
            s.apps_rejected.extend(m.rejected);
            s.app_updates.extend(m.updated);
        });
        Ok(())
    }

    fn update_node(&self, m: si::NodeResponse) -> Result<(), String> {
        self.record(|s| {
            s.nodes_accepted
                .extend(m.accepted.into_iter().map(|a| a.node_id));
            s.nodes_rejected.extend(m.rejected);
        });
        Ok(())
    }

    fn predicates(&self, m: si::PredicatesArgs) -> Result<(), String> {
        let (listed, max_per_node) = {
            let b = self.behaviour.lock().unwrap();
            (b.refuse_nodes.contains(&m.node_id), b.max_per_node)
        };
        let full =
            max_per_node.is_some_and(|k| self.seen.lock().unwrap().cached_on(&m.node_id) >= k);
        let refuse = listed || full;
        self.record(|s| {
            s.refused += refuse as usize;
            s.reservations_approved += (!refuse && !m.allocate) as usize;
            s.predicate_calls.push(m);
        });
        if refuse {
            Err("node refused by the test RM".into())
        } else {
            Ok(())
        }
    }

    fn resync_scheduler_cache(&self, m: si::ReSyncSchedulerCacheArgs) -> Result<(), String> {
        let max_per_node = self.behaviour.lock().unwrap().max_per_node;
        self.record(|s| {
            for f in &m.forget_allocations {
                s.cache.remove(&f.allocation_key);
            }
            for a in &m.assumed_allocations {
                s.log.push(format!("assume:{}", a.allocation_key));
                s.cache.insert(a.allocation_key.clone(), a.node_id.clone());
                let held = s.cached_on(&a.node_id);
                if let Some(k) = max_per_node.filter(|k| held > *k) {
                    s.violations.push(format!(
                        "{} assumed on {} which now holds {held} > {k}",
                        a.allocation_key, a.node_id
                    ));
                }
            }
            if !m.assumed_allocations.is_empty() {
                s.assume_batches.push(m.assumed_allocations.len());
            }
            s.assumed.extend(m.assumed_allocations);
            s.forgotten.extend(m.forget_allocations);
        });
        Ok(())
    }

    fn send_event(&self, m: sicore_pb::EventRecords) {
        self.record(|s| s.events.extend(m.events));
    }

    fn update_container_scheduling_state(&self, m: si::UpdateContainerSchedulingStateRequest) {
        let slow = self.behaviour.lock().unwrap().slow_container_state;
        if let Some(d) = slow {
            std::thread::sleep(d);
        }
        self.record(|s| s.container_states.push(m));
    }

    fn update_configuration(
        &self,
        m: si::UpdateConfigurationRequest,
    ) -> si::UpdateConfigurationResponse {
        let reject = self.behaviour.lock().unwrap().reject_config.clone();
        self.record(|s| s.config_updates.push(m.configs));
        si::UpdateConfigurationResponse {
            success: reject.is_none(),
            reason: reject.unwrap_or_default(),
            ..Default::default()
        }
    }

    fn released(&self) {
        self.releases.fetch_add(1, Ordering::SeqCst);
    }
}

/// A recorder for a further RM on the same scheduler (multi-RM tests).
pub fn new_recorder(sched: *mut sicore_scheduler, behaviour: Behaviour) -> Arc<Recorder> {
    Arc::new(Recorder {
        seen: Mutex::new(Seen::default()),
        cv: Condvar::new(),
        behaviour: Mutex::new(behaviour),
        sched: AtomicPtr::new(sched),
        releases: AtomicUsize::new(0),
        calls_after_release: AtomicUsize::new(0),
    })
}

/// The test RM's callback table, recording into `rec`.
pub fn callbacks_for(rec: &Arc<Recorder>) -> sicore_callbacks {
    let with_predicates = rec.behaviour.lock().unwrap().with_predicates;
    sicore_c_rm::table(
        rec,
        Installed {
            predicates: with_predicates,
            ..Installed::all()
        },
    )
}

impl Recorder {
    /// Waits until `cond` holds on what this RM has seen.
    pub fn wait(&self, what: &str, cond: impl Fn(&Seen) -> bool) {
        drop(wait_until(&self.seen, &self.cv, what, cond));
    }
}

/// Waits until `cond` holds on what `seen` holds, woken by `cv`, for
/// [`WAIT`] at the most; the guard it returns still holds the lock.
pub fn wait_until<'a, T: std::fmt::Debug>(
    seen: &'a Mutex<T>,
    cv: &Condvar,
    what: &str,
    cond: impl Fn(&T) -> bool,
) -> std::sync::MutexGuard<'a, T> {
    let deadline = Instant::now() + WAIT;
    let mut guard = seen.lock().unwrap();
    while !cond(&guard) {
        let left = deadline.saturating_duration_since(Instant::now());
        assert!(
            !left.is_zero(),
            "timed out waiting for {what}; seen: {guard:#?}"
        );
        guard = cv.wait_timeout(guard, left).unwrap().0;
    }
    guard
}

/// A scheduler plus one recording RM.
pub struct Harness {
    pub sched: *mut sicore_scheduler,
    pub rec: Arc<Recorder>,
    /// A scheduler with a configuration directory may start a watcher
    /// thread: held until after the scheduler is freed ([`serial`]).
    _watcher: Option<serial::Watcher>,
}

// SAFETY: the scheduler handle is thread-safe by contract.
unsafe impl Send for Harness {}
// SAFETY: as above.
unsafe impl Sync for Harness {}

// Not every test uses every helper.
#[allow(unused_imports)]
pub use sicore_c_rm::{ask, node, res, take_string};

pub fn options_bytes(o: &sicore_pb::SchedulerOptions) -> Vec<u8> {
    o.encode_to_vec()
}

pub fn app(id: &str, queue: &str) -> si::AddApplicationRequest {
    sicore_c_rm::app(id, queue, "alice")
}

impl Harness {
    /// A scheduler with these options and no RM yet.
    pub fn new(options: sicore_pb::SchedulerOptions) -> Self {
        Self::with_behaviour(options, Behaviour::default())
    }

    pub fn with_behaviour(options: sicore_pb::SchedulerOptions, behaviour: Behaviour) -> Self {
        let watcher = (!options.config_dir.is_empty()).then(serial::watchers);
        let sched = sicore_c_rm::new_scheduler(&options).unwrap_or_else(|e| panic!("{e}"));
        let rec = Arc::new(Recorder {
            seen: Mutex::new(Seen::default()),
            cv: Condvar::new(),
            behaviour: Mutex::new(behaviour),
            sched: AtomicPtr::new(sched),
            releases: AtomicUsize::new(0),
            calls_after_release: AtomicUsize::new(0),
        });
        Harness {
            sched,
            rec,
            _watcher: watcher,
        }
    }

    pub fn callbacks(&self) -> sicore_callbacks {
        callbacks_for(&self.rec)
    }

    /// Registers RM `rm` with a policy group; returns the status and message.
    pub fn register(&self, rm: &str, policy_group: &str) -> (sicore_status, String) {
        let cbs = self.callbacks();
        let (st, msg) = sicore_c_rm::register(self.sched, rm, policy_group, "test", &cbs);
        if st != sicore_status::SICORE_OK {
            // The library released the refused table already; do not count
            // that as the end of the live registration.
            assert!(
                self.rec.releases.load(Ordering::SeqCst) > 0,
                "a refused table is released at once"
            );
            self.rec.releases.fetch_sub(1, Ordering::SeqCst);
        }
        (st, msg)
    }

    /// Calls one of the asynchronous update entry points with raw bytes.
    pub fn raw(
        &self,
        f: extern "C" fn(
            *mut sicore_scheduler,
            *const u8,
            usize,
            *mut sicore_buffer,
        ) -> sicore_status,
        bytes: &[u8],
    ) -> (sicore_status, String) {
        sicore_c_rm::raw(self.sched, f, bytes)
    }

    pub fn nodes(&self, nodes: Vec<si::NodeInfo>) -> (sicore_status, String) {
        let req = si::NodeRequest {
            nodes,
            rm_id: "rm".into(),
        }
        .encode_to_vec();
        self.raw(sicore_update_node, &req)
    }

    pub fn apps(
        &self,
        new: Vec<si::AddApplicationRequest>,
        remove: Vec<si::RemoveApplicationRequest>,
    ) -> (sicore_status, String) {
        let req = si::ApplicationRequest {
            new,
            remove,
            rm_id: "rm".into(),
        }
        .encode_to_vec();
        self.raw(sicore_update_application, &req)
    }

    pub fn asks(&self, asks: Vec<si::AllocationAsk>) -> (sicore_status, String) {
        let req = si::AllocationRequest {
            asks,
            rm_id: "rm".into(),
            ..Default::default()
        }
        .encode_to_vec();
        self.raw(sicore_update_allocation, &req)
    }

    pub fn releases(
        &self,
        allocs: Vec<si::AllocationRelease>,
        asks: Vec<si::AllocationAskRelease>,
    ) -> (sicore_status, String) {
        let req = si::AllocationRequest {
            rm_id: "rm".into(),
            releases: Some(si::AllocationReleasesRequest {
                allocations_to_release: allocs,
                allocation_asks_to_release: asks,
            }),
            ..Default::default()
        }
        .encode_to_vec();
        self.raw(sicore_update_allocation, &req)
    }

    pub fn reload(&self, rm: &str) -> (sicore_status, String) {
        sicore_c_rm::reload(self.sched, rm)
    }

    /// Replaces the in-memory configuration of policy group `group` and
    /// reloads its RMs, as `sicore_set_policy_config` does.
    pub fn set_config(&self, group: &str, yaml: &str) -> (sicore_status, String) {
        let mut err = sicore_buffer::empty();
        let st = sicore_set_policy_config(
            self.sched,
            group.as_ptr(),
            group.len(),
            yaml.as_ptr(),
            yaml.len(),
            &mut err,
        );
        (st, sicore_c_rm::take_string(err))
    }

    pub fn dump(&self) -> serde_json::Value {
        sicore_c_rm::dump(self.sched).unwrap_or_else(|e| panic!("{e}"))
    }

    /// Waits until `cond` holds on what the RM has seen.
    pub fn wait(&self, what: &str, cond: impl Fn(&Seen) -> bool) {
        self.rec.wait(what, cond);
    }

    pub fn seen<T>(&self, f: impl FnOnce(&Seen) -> T) -> T {
        f(&self.rec.seen.lock().unwrap())
    }

    /// Registers `rm`, adds nodes and one application in `root.a`.
    pub fn standard(
        options: sicore_pb::SchedulerOptions,
        behaviour: Behaviour,
        nodes: usize,
    ) -> Self {
        let h = Harness::with_behaviour(options, behaviour);
        let (st, msg) = h.register("rm", "queues");
        assert_eq!(st, sicore_status::SICORE_OK, "{msg}");
        let list = (0..nodes)
            .map(|i| node(&format!("node-{i}"), 1000, 10))
            .collect();
        assert_eq!(h.nodes(list).0, sicore_status::SICORE_OK);
        h.wait("nodes accepted", |s| s.nodes_accepted.len() == nodes);
        assert_eq!(
            h.apps(vec![app("app-1", "root.a")], vec![]).0,
            sicore_status::SICORE_OK
        );
        h.wait("app accepted", |s| {
            s.apps_accepted.contains(&"app-1".to_string())
        });
        h
    }
}

impl Drop for Harness {
    fn drop(&mut self) {
        sicore_free(self.sched);
    }
}

// ---- Helpers for the queue, configuration and placement tests ----

/// The configuration of one partition, `default`: `switch` (its lines
/// before `queues`, each indented by 4, such as a preemption line) and
/// `queues` (the YAML lines below root, each indented by 10), root open to
/// every submitter.
pub fn partition_yaml(switch: &str, queues: &str) -> String {
    format!(
        "partitions:
  - name: default
{switch}    queues:
      - name: root
        submitacl: '*'
        queues:
{queues}"
    )
}

/// Options carrying `yaml` as the in-memory config of policy group `queues`.
pub fn yaml_options(yaml: &str) -> sicore_pb::SchedulerOptions {
    let mut o = sicore_pb::SchedulerOptions::default();
    o.policy_configs.insert("queues".into(), yaml.into());
    o
}

/// A fresh, empty directory under the system temp dir.
pub fn temp_config_dir(tag: &str) -> std::path::PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "sicore-{tag}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Writes `<dir>/queues.yaml` and returns options pointing at `dir`.
pub fn dir_options(dir: &std::path::Path, yaml: &str) -> sicore_pb::SchedulerOptions {
    std::fs::write(dir.join("queues.yaml"), yaml).unwrap();
    sicore_pb::SchedulerOptions {
        config_dir: dir.display().to_string(),
        ..Default::default()
    }
}

/// An application submitted by `user` (with `groups`) to `queue`.
pub fn app_by(id: &str, queue: &str, user: &str, groups: &[&str]) -> si::AddApplicationRequest {
    let mut a = app(id, queue);
    a.ugi = Some(si::UserGroupInformation {
        user: user.into(),
        groups: groups.iter().map(|g| g.to_string()).collect(),
    });
    a
}

/// A node in partition `partition`.
pub fn node_in(id: &str, partition: &str, memory: i64, vcore: i64) -> si::NodeInfo {
    let mut n = node(id, memory, vcore);
    n.attributes
        .insert("si/node-partition".into(), partition.into());
    n
}

/// The queue at `path` in the partition named `partition` of a dump.
pub fn find_queue(
    dump: &serde_json::Value,
    partition: &str,
    path: &str,
) -> Option<serde_json::Value> {
    fn walk(q: &serde_json::Value, path: &str) -> Option<serde_json::Value> {
        if q["path"] == path {
            return Some(q.clone());
        }
        q["children"].as_array()?.iter().find_map(|c| walk(c, path))
    }
    let p = dump["partitions"]
        .as_array()?
        .iter()
        .find(|p| p["name"] == partition)?;
    walk(&p["root"], path)
}

/// The allocated memory of the queue at `path` in partition `default` of
/// a dump (0 when it holds none); panics when there is no such queue.
pub fn memory_of(dump: &serde_json::Value, path: &str) -> i64 {
    find_queue(dump, "default", path).unwrap_or_else(|| panic!("no queue {path}"))["allocated"]
        ["memory"]
        .as_i64()
        .unwrap_or(0)
}

impl Harness {
    /// Registers RM `rm` (policy group `queues`), asserting success, and
    /// adds `nodes` (memory 1000, vcore 10 each) to partition `default`.
    pub fn configured(options: sicore_pb::SchedulerOptions, nodes: usize) -> Self {
        let h = Harness::new(options);
        let (st, msg) = h.register("rm", "queues");
        assert_eq!(st, sicore_status::SICORE_OK, "{msg}");
        if nodes > 0 {
            let list = (0..nodes)
                .map(|i| node(&format!("node-{i}"), 1000, 10))
                .collect();
            assert_eq!(h.nodes(list).0, sicore_status::SICORE_OK);
            h.wait("nodes accepted", |s| s.nodes_accepted.len() == nodes);
        }
        h
    }

    /// Submits one application and waits for its verdict: `Ok(())` when
    /// accepted, `Err(reason)` when rejected.
    pub fn submit(&self, a: si::AddApplicationRequest) -> Result<(), String> {
        let id = a.application_id.clone();
        assert_eq!(self.apps(vec![a], vec![]).0, sicore_status::SICORE_OK);
        self.wait("application verdict", |s| {
            s.apps_accepted.contains(&id) || s.apps_rejected.iter().any(|r| r.application_id == id)
        });
        self.seen(|s| {
            if s.apps_accepted.contains(&id) {
                Ok(())
            } else {
                Err(s
                    .apps_rejected
                    .iter()
                    .find(|r| r.application_id == id)
                    .unwrap()
                    .reason
                    .clone())
            }
        })
    }

    /// Number of allocations the RM has seen for `app`.
    pub fn allocs_of(&self, app: &str) -> usize {
        self.seen(|s| {
            s.allocations
                .iter()
                .filter(|a| a.application_id == app)
                .count()
        })
    }

    /// Waits until the state dump satisfies `cond`.
    pub fn wait_dump(&self, what: &str, cond: impl Fn(&serde_json::Value) -> bool) {
        let deadline = Instant::now() + WAIT;
        loop {
            let d = self.dump();
            if cond(&d) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}; dump: {d:#}"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Lets the core finish what the last requests started: a dump is
    /// answered only after every earlier request and the pass after it.
    pub fn settle(&self) {
        let _ = self.dump();
        std::thread::sleep(Duration::from_millis(150));
        let _ = self.dump();
    }
}
