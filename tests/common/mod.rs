//! A resource manager written against the C ABI, for the integration
//! tests: it registers a callback table of `extern "C"` functions and
//! records, decoded, everything the scheduler tells it.

#![allow(dead_code)]

pub mod books;
pub mod rms;

use std::collections::HashSet;
use std::ffi::c_void;
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use prost::Message;
use sicore::ffi::*;
use sicore::proto::si::v1 as si;
use sicore::proto::sicore::v1 as sicore_pb;

pub const WAIT: Duration = Duration::from_secs(20);

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

/// Decodes the borrowed message of a callback.
fn msg<M: Message + Default>(p: *const u8, len: usize) -> M {
    // SAFETY: the library passes a message valid for the duration of the call.
    let bytes = unsafe { std::slice::from_raw_parts(p, len) };
    M::decode(bytes).expect("the library sends valid messages")
}

fn rec<'a>(ud: *mut c_void) -> &'a Recorder {
    // SAFETY: user_data is the Arc<Recorder> leaked at registration, kept
    // alive until `release` runs.
    unsafe { &*(ud as *const Recorder) }
}

unsafe extern "C" fn on_allocation(
    ud: *mut c_void,
    p: *const u8,
    len: usize,
    _e: *mut sicore_reply,
) -> i32 {
    let r = rec(ud);
    let m: si::AllocationResponse = msg(p, len);
    let (reenter, slow) = {
        let b = r.behaviour.lock().unwrap();
        (b.reenter, b.slow)
    };
    if let Some(d) = slow {
        std::thread::sleep(d);
    }
    let mut statuses = Vec::new();
    if reenter && !m.new.is_empty() {
        let s = r.sched.load(Ordering::SeqCst);
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
        let bytes = req.encode_to_vec();
        statuses.push(sicore_update_allocation(
            s,
            bytes.as_ptr(),
            bytes.len(),
            std::ptr::null_mut(),
        ));
        let mut err = sicore_buffer::empty();
        statuses.push(sicore_update_configuration(s, b"rm".as_ptr(), 2, &mut err));
        sicore_buffer_free(err);
    }
    r.record(|s| {
        s.reentrant_statuses.extend(statuses);
        for a in &m.new {
            s.log.push(format!("alloc:{}", a.allocation_key));
        }
        s.allocations.extend(m.new);
        s.released.extend(m.released);
        s.released_asks.extend(m.released_asks);
        s.rejected_asks.extend(m.rejected);
    });
    0
}

unsafe extern "C" fn on_application(
    ud: *mut c_void,
    p: *const u8,
    len: usize,
    _e: *mut sicore_reply,
) -> i32 {
    let m: si::ApplicationResponse = msg(p, len);
    rec(ud).record(|s| {
        s.apps_accepted
            .extend(m.accepted.into_iter().map(|a| a.application_id));
        s.apps_rejected.extend(m.rejected);
        s.app_updates.extend(m.updated);
    });
    0
}

unsafe extern "C" fn on_node(
    ud: *mut c_void,
    p: *const u8,
    len: usize,
    _e: *mut sicore_reply,
) -> i32 {
    let m: si::NodeResponse = msg(p, len);
    rec(ud).record(|s| {
        s.nodes_accepted
            .extend(m.accepted.into_iter().map(|a| a.node_id));
        s.nodes_rejected.extend(m.rejected);
    });
    0
}

unsafe extern "C" fn on_predicates(
    ud: *mut c_void,
    p: *const u8,
    len: usize,
    e: *mut sicore_reply,
) -> i32 {
    let r = rec(ud);
    let m: si::PredicatesArgs = msg(p, len);
    let (listed, max_per_node) = {
        let b = r.behaviour.lock().unwrap();
        (b.refuse_nodes.contains(&m.node_id), b.max_per_node)
    };
    let full = max_per_node.is_some_and(|k| r.seen.lock().unwrap().cached_on(&m.node_id) >= k);
    let refuse = listed || full;
    r.record(|s| {
        s.refused += refuse as usize;
        s.reservations_approved += (!refuse && !m.allocate) as usize;
        s.predicate_calls.push(m);
    });
    if refuse {
        let reason = b"node refused by the test RM";
        sicore_reply_set(e, reason.as_ptr(), reason.len());
        1
    } else {
        0
    }
}

unsafe extern "C" fn on_resync(
    ud: *mut c_void,
    p: *const u8,
    len: usize,
    _e: *mut sicore_reply,
) -> i32 {
    let m: si::ReSyncSchedulerCacheArgs = msg(p, len);
    let max_per_node = rec(ud).behaviour.lock().unwrap().max_per_node;
    rec(ud).record(|s| {
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
        s.assumed.extend(m.assumed_allocations);
        s.forgotten.extend(m.forget_allocations);
    });
    0
}

unsafe extern "C" fn on_event(ud: *mut c_void, p: *const u8, len: usize) {
    let m: sicore_pb::EventRecords = msg(p, len);
    rec(ud).record(|s| s.events.extend(m.events));
}

unsafe extern "C" fn on_container_state(ud: *mut c_void, p: *const u8, len: usize) {
    let m: si::UpdateContainerSchedulingStateRequest = msg(p, len);
    let r = rec(ud);
    let slow = r.behaviour.lock().unwrap().slow_container_state;
    if let Some(d) = slow {
        std::thread::sleep(d);
    }
    r.record(|s| s.container_states.push(m));
}

unsafe extern "C" fn on_update_configuration(
    ud: *mut c_void,
    p: *const u8,
    len: usize,
    reply: *mut sicore_reply,
) {
    let m: si::UpdateConfigurationRequest = msg(p, len);
    let r = rec(ud);
    let reject = r.behaviour.lock().unwrap().reject_config.clone();
    r.record(|s| s.config_updates.push(m.configs));
    let answer = si::UpdateConfigurationResponse {
        success: reject.is_none(),
        reason: reject.unwrap_or_default(),
        ..Default::default()
    }
    .encode_to_vec();
    sicore_reply_set(reply, answer.as_ptr(), answer.len());
}

unsafe extern "C" fn on_release(ud: *mut c_void) {
    // SAFETY: the Arc leaked at registration; released exactly once.
    let r = Arc::from_raw(ud as *const Recorder);
    r.releases.fetch_add(1, Ordering::SeqCst);
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
    sicore_callbacks {
        struct_size: std::mem::size_of::<sicore_callbacks>(),
        user_data: Arc::into_raw(rec.clone()) as *mut c_void,
        update_allocation: Some(on_allocation),
        update_application: Some(on_application),
        update_node: Some(on_node),
        predicates: if with_predicates {
            Some(on_predicates)
        } else {
            None
        },
        resync_scheduler_cache: Some(on_resync),
        send_event: Some(on_event),
        update_container_scheduling_state: Some(on_container_state),
        update_configuration: Some(on_update_configuration),
        release: Some(on_release),
    }
}

impl Recorder {
    /// Waits until `cond` holds on what this RM has seen.
    pub fn wait(&self, what: &str, cond: impl Fn(&Seen) -> bool) {
        let deadline = Instant::now() + WAIT;
        let mut seen = self.seen.lock().unwrap();
        while !cond(&seen) {
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(
                !left.is_zero(),
                "timed out waiting for {what}; seen: {seen:#?}"
            );
            seen = self.cv.wait_timeout(seen, left).unwrap().0;
        }
    }
}

/// A scheduler plus one recording RM.
pub struct Harness {
    pub sched: *mut sicore_scheduler,
    pub rec: Arc<Recorder>,
}

// SAFETY: the scheduler handle is thread-safe by contract.
unsafe impl Send for Harness {}
// SAFETY: as above.
unsafe impl Sync for Harness {}

pub fn take_string(buf: sicore_buffer) -> String {
    if buf.data.is_null() {
        return String::new();
    }
    // SAFETY: a buffer the library returned, read before it is freed.
    let s = String::from_utf8_lossy(unsafe { std::slice::from_raw_parts(buf.data, buf.len) })
        .into_owned();
    sicore_buffer_free(buf);
    s
}

pub fn options_bytes(o: &sicore_pb::SchedulerOptions) -> Vec<u8> {
    o.encode_to_vec()
}

pub fn res(pairs: &[(&str, i64)]) -> Option<si::Resource> {
    Some(si::Resource {
        resources: pairs
            .iter()
            .map(|(k, v)| (k.to_string(), si::Quantity { value: *v }))
            .collect(),
    })
}

pub fn node(id: &str, memory: i64, vcore: i64) -> si::NodeInfo {
    si::NodeInfo {
        node_id: id.into(),
        action: si::node_info::ActionFromRm::Create as i32,
        schedulable_resource: res(&[("memory", memory), ("vcore", vcore)]),
        ..Default::default()
    }
}

pub fn app(id: &str, queue: &str) -> si::AddApplicationRequest {
    si::AddApplicationRequest {
        application_id: id.into(),
        queue_name: queue.into(),
        partition_name: "default".into(),
        ugi: Some(si::UserGroupInformation {
            user: "alice".into(),
            groups: vec![],
        }),
        ..Default::default()
    }
}

pub fn ask(app: &str, key: &str, memory: i64, vcore: i64, repeat: i32) -> si::AllocationAsk {
    si::AllocationAsk {
        allocation_key: key.into(),
        application_id: app.into(),
        partition_name: "default".into(),
        resource_ask: res(&[("memory", memory), ("vcore", vcore)]),
        max_allocations: repeat,
        ..Default::default()
    }
}

impl Harness {
    /// A scheduler with these options and no RM yet.
    pub fn new(options: sicore_pb::SchedulerOptions) -> Self {
        Self::with_behaviour(options, Behaviour::default())
    }

    pub fn with_behaviour(options: sicore_pb::SchedulerOptions, behaviour: Behaviour) -> Self {
        let bytes = options_bytes(&options);
        let mut sched = std::ptr::null_mut();
        let mut err = sicore_buffer::empty();
        let st = sicore_new(bytes.as_ptr(), bytes.len(), &mut sched, &mut err);
        assert_eq!(
            st,
            sicore_status::SICORE_OK,
            "sicore_new: {}",
            take_string(err)
        );
        let rec = Arc::new(Recorder {
            seen: Mutex::new(Seen::default()),
            cv: Condvar::new(),
            behaviour: Mutex::new(behaviour),
            sched: AtomicPtr::new(sched),
            releases: AtomicUsize::new(0),
            calls_after_release: AtomicUsize::new(0),
        });
        Harness { sched, rec }
    }

    pub fn callbacks(&self) -> sicore_callbacks {
        callbacks_for(&self.rec)
    }

    /// Registers RM `rm` with a policy group; returns the status and message.
    pub fn register(&self, rm: &str, policy_group: &str) -> (sicore_status, String) {
        let req = si::RegisterResourceManagerRequest {
            rm_id: rm.into(),
            version: "test".into(),
            policy_group: policy_group.into(),
        }
        .encode_to_vec();
        let cbs = self.callbacks();
        let mut resp = sicore_buffer::empty();
        let mut err = sicore_buffer::empty();
        let st = sicore_register_resource_manager(
            self.sched,
            req.as_ptr(),
            req.len(),
            &cbs,
            &mut resp,
            &mut err,
        );
        if st != sicore_status::SICORE_OK {
            // The library released the refused table already; do not count
            // that as the end of the live registration.
            assert!(
                self.rec.releases.load(Ordering::SeqCst) > 0,
                "a refused table is released at once"
            );
            self.rec.releases.fetch_sub(1, Ordering::SeqCst);
        }
        sicore_buffer_free(resp);
        (st, take_string(err))
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
        let mut err = sicore_buffer::empty();
        let st = f(self.sched, bytes.as_ptr(), bytes.len(), &mut err);
        (st, take_string(err))
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
        let mut err = sicore_buffer::empty();
        let st = sicore_update_configuration(self.sched, rm.as_ptr(), rm.len(), &mut err);
        (st, take_string(err))
    }

    pub fn dump(&self) -> serde_json::Value {
        let mut json = sicore_buffer::empty();
        let mut err = sicore_buffer::empty();
        let st = sicore_state_dump(self.sched, &mut json, &mut err);
        assert_eq!(
            st,
            sicore_status::SICORE_OK,
            "state dump: {}",
            take_string(err)
        );
        serde_json::from_str(&take_string(json)).expect("the dump is JSON")
    }

    /// Waits until `cond` holds on what the RM has seen.
    pub fn wait(&self, what: &str, cond: impl Fn(&Seen) -> bool) {
        let deadline = Instant::now() + WAIT;
        let mut seen = self.rec.seen.lock().unwrap();
        while !cond(&seen) {
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(
                !left.is_zero(),
                "timed out waiting for {what}; seen: {seen:#?}"
            );
            seen = self.rec.cv.wait_timeout(seen, left).unwrap().0;
        }
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
