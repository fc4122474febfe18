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

#[test]
fn registration_takes_config_text_and_ignores_unknown_extra_keys() {
    let rm = V1Rm::new(CONFIG, false);
    let dump = rm.dump();
    assert_eq!(
        rm_entry(&dump, "rm1")["config_source"],
        "RegisterResourceManager request"
    );
    let text = dump.to_string();
    assert!(
        text.contains("root.a"),
        "the sent queue is configured: {text}"
    );
}

#[test]
fn an_empty_config_is_the_built_in_v1_default() {
    let rm = V1Rm::new("", false);
    let dump = rm.dump();
    assert_eq!(
        rm_entry(&dump, "rm1")["config_source"],
        "built-in SI v1.x default"
    );
    // The default places by namespace tag, creating the queue.
    let (st, msg) = call(
        rm.sched,
        sicore_v1_update_application,
        &si18::ApplicationRequest {
            new: vec![si18::AddApplicationRequest {
                tags: [("namespace".to_string(), "ns1".to_string())].into(),
                ..rmv1::app("app-1", "", "alice")
            }],
            rm_id: "rm1".into(),
            ..Default::default()
        },
    );
    assert_eq!(st, SICORE_OK, "{msg}");
    rm.rec.wait("app accepted", |s| {
        s.apps_accepted.iter().any(|a| a == "app-1")
    });
    let text = rm.dump().to_string();
    assert!(text.contains("root.ns1"), "placed by namespace: {text}");
}

#[test]
fn invalid_yaml_fails_registration_and_update_and_the_old_queues_stay() {
    let sched = Handle(sicore_c_rm::new_scheduler(&options()).unwrap());
    let rec = Arc::new(Recorder::default());
    let table = rmv1::table(&rec, false);
    let (st, msg) = rmv1::register(
        sched.0,
        &register_req("rm1", "partitions: [\n  - name"),
        &table,
    );
    assert_eq!(st, SICORE_REJECTED);
    assert!(msg.contains("rm1"), "{msg}");
    // Not registered: its calls are refused.
    let (st, _) = call(
        sched.0,
        sicore_v1_update_node,
        &si18::NodeRequest {
            nodes: vec![rmv1::node("n1", 10, 1)],
            rm_id: "rm1".into(),
        },
    );
    assert_eq!(st, SICORE_REJECTED);

    let rm = V1Rm::new(CONFIG, false);
    let before = rm_entry(&rm.dump(), "rm1")["config_checksum"].clone();
    let (st, msg) = rm.update_config("partitions:\n  - name: default\n    queues: {{{");
    assert_eq!(st, SICORE_REJECTED, "{msg}");
    assert!(msg.contains("old configuration stays"), "{msg}");
    let dump = rm.dump();
    assert_eq!(rm_entry(&dump, "rm1")["config_checksum"], before);
    assert!(dump.to_string().contains("root.a"));

    // The same text again: a no-op, the source label included.
    assert_eq!(rm.update_config(CONFIG).0, SICORE_OK);
    let dump = rm.dump();
    assert_eq!(rm_entry(&dump, "rm1")["config_checksum"], before);
    assert_eq!(
        rm_entry(&dump, "rm1")["config_source"],
        "RegisterResourceManager request"
    );

    // A changed text applies.
    let changed = CONFIG.replace("- name: a", "- name: b");
    let (st, msg) = rm.update_config(&changed);
    assert_eq!(st, SICORE_OK, "{msg}");
    let dump = rm.dump();
    assert_ne!(rm_entry(&dump, "rm1")["config_checksum"], before);
    assert_eq!(
        rm_entry(&dump, "rm1")["config_source"],
        "UpdateConfiguration request"
    );
    assert!(dump.to_string().contains("root.b"), "{dump}");
}

#[test]
fn each_family_refuses_the_other_editions_rm_naming_its_edition() {
    let mut o = options();
    o.policy_configs.insert("queues".into(), CONFIG.into());
    let sched = Handle(sicore_c_rm::new_scheduler(&o).unwrap());
    let v1 = register_on(sched.0, "rm1", CONFIG, false);
    let v0 = Arc::new(NoopV0);
    let table = sicore_c_rm::table(&v0, sicore_c_rm::Installed::default());
    let (st, msg) = sicore_c_rm::register(sched.0, "rm0", "queues", "0.12", &table);
    assert_eq!(st, SICORE_OK, "{msg}");

    // Each entry point with its own message, naming the v1 RM.
    let v0_calls: [(sicore_c_rm::UpdateFn, Vec<u8>); 3] = [
        (
            sicore_update_node,
            si::NodeRequest {
                nodes: vec![sicore_c_rm::node("n1", 10, 1)],
                rm_id: "rm1".into(),
            }
            .encode_to_vec(),
        ),
        (
            sicore_update_allocation,
            si::AllocationRequest {
                rm_id: "rm1".into(),
                ..Default::default()
            }
            .encode_to_vec(),
        ),
        (
            sicore_update_application,
            si::ApplicationRequest {
                rm_id: "rm1".into(),
                ..Default::default()
            }
            .encode_to_vec(),
        ),
    ];
    for (f, bytes) in v0_calls {
        let (st, msg) = sicore_c_rm::raw(sched.0, f, &bytes);
        assert_eq!(st, SICORE_REJECTED, "v0.12 call for a v1 RM: {msg}");
        assert!(msg.contains("SI v1.x"), "{msg}");
    }
    let (st, msg) = sicore_c_rm::reload(sched.0, "rm1");
    assert_eq!(st, SICORE_REJECTED);
    assert!(msg.contains("SI v1.x"), "{msg}");

    let v1_calls: [(sicore_c_rm::UpdateFn, Vec<u8>); 3] = [
        (
            sicore_v1_update_node,
            si18::NodeRequest {
                nodes: vec![rmv1::node("n1", 10, 1)],
                rm_id: "rm0".into(),
            }
            .encode_to_vec(),
        ),
        (
            sicore_v1_update_allocation,
            si18::AllocationRequest {
                rm_id: "rm0".into(),
                ..Default::default()
            }
            .encode_to_vec(),
        ),
        (
            sicore_v1_update_application,
            si18::ApplicationRequest {
                rm_id: "rm0".into(),
                ..Default::default()
            }
            .encode_to_vec(),
        ),
    ];
    for (f, bytes) in v1_calls {
        let (st, msg) = sicore_c_rm::raw(sched.0, f, &bytes);
        assert_eq!(st, SICORE_REJECTED, "v1 call for a v0.12 RM: {msg}");
        assert!(msg.contains("SI v0.12"), "{msg}");
    }
    let (st, msg) = rmv1::update_configuration(
        sched.0,
        &si18::UpdateConfigurationRequest {
            rm_id: "rm0".into(),
            config: CONFIG.into(),
            ..Default::default()
        },
    );
    assert_eq!(st, SICORE_REJECTED);
    assert!(msg.contains("SI v0.12"), "{msg}");
    // Nothing reached either RM's nodes.
    std::thread::sleep(Duration::from_millis(100));
    assert!(v1.copy().nodes_accepted.is_empty());
}

struct NoopV0;
impl sicore_c_rm::Rm for NoopV0 {}

#[test]
fn a_short_v1_table_is_refused_and_not_taken() {
    let sched = Handle(sicore_c_rm::new_scheduler(&options()).unwrap());
    let rec = Arc::new(Recorder::default());
    let mut table = rmv1::table(&rec, false);
    table.struct_size = std::mem::offset_of!(sicore_v1_callbacks, update_node);
    let (st, msg) = rmv1::register(sched.0, &register_req("rm1", CONFIG), &table);
    assert_eq!(st, SICORE_INVALID_ARGUMENT);
    assert!(msg.contains("struct_size"), "{msg}");
    // Not taken: the test still owns the reference the table holds.
    // SAFETY: the pointer `table` made for a Recorder; the library refused it.
    drop(unsafe { Arc::from_raw(table.user_data as *const Recorder) });
    assert_eq!(Arc::strong_count(&rec), 1);
}

#[test]
fn create_drain_is_answered_and_requests_get_new_and_release_by_key() {
    let rm = V1Rm::new(CONFIG, false);
    assert_eq!(rm.nodes(vec![rmv1::node("n1", 1000, 10)]).0, SICORE_OK);
    rm.rec
        .wait("CREATE_DRAIN answered", |s| s.nodes_accepted == ["n1"]);
    rm.app("app-1", "root.a");
    // Unschedulable until the RM says so.
    assert_eq!(
        rm.allocate(vec![rmv1::ask("app-1", "pod-1", 100, 1)], vec![])
            .0,
        SICORE_OK
    );
    std::thread::sleep(Duration::from_millis(200));
    assert!(rm.rec.copy().new.is_empty(), "placed on a draining node");
    let ready = rmv1::node_action("n1", si18::node_info::ActionFromRm::DrainToSchedulable);
    assert_eq!(rm.nodes(vec![ready]).0, SICORE_OK);
    rm.rec.wait("pod-1 allocated", |s| s.new.len() == 1);
    let a = rm.rec.copy().new[0].clone();
    assert_eq!(
        (
            a.allocation_key.as_str(),
            a.application_id.as_str(),
            a.node_id.as_str()
        ),
        ("pod-1", "app-1", "n1")
    );
    // The same message again changes nothing (merge by key).
    assert_eq!(
        rm.allocate(vec![rmv1::ask("app-1", "pod-1", 100, 1)], vec![])
            .0,
        SICORE_OK
    );
    assert_eq!(
        rm.allocate(vec![], vec![rmv1::release("app-1", "pod-1")]).0,
        SICORE_OK
    );
    rm.rec.wait("pod-1 released", |s| !s.released.is_empty());
    let s = rm.rec.copy();
    assert_eq!(s.new.len(), 1, "{s:#?}");
    assert_eq!(s.released[0].allocation_key, "pod-1");
    assert_eq!(
        s.released[0].termination_type,
        si18::TerminationType::StoppedByRm as i32
    );
}

#[test]
fn a_placed_allocation_is_echoed_in_new() {
    let rm = V1Rm::new(CONFIG, false);
    rm.ready_nodes(&["n1"]);
    rm.app("app-1", "root.a");
    let mut placed = rmv1::ask("app-1", "running-pod", 100, 1);
    placed.node_id = "n1".into();
    assert_eq!(rm.allocate(vec![placed], vec![]).0, SICORE_OK);
    rm.rec.wait("echo", |s| s.new.len() == 1);
    let a = rm.rec.copy().new[0].clone();
    assert_eq!(
        (a.allocation_key.as_str(), a.node_id.as_str()),
        ("running-pod", "n1")
    );
    // An unknown application is rejected through the callbacks, by key.
    assert_eq!(
        rm.allocate(vec![rmv1::ask("nope", "k9", 1, 1)], vec![]).0,
        SICORE_OK
    );
    rm.rec.wait("rejection", |s| !s.rejected.is_empty());
    assert_eq!(rm.rec.copy().rejected[0].allocation_key, "k9");
}

#[test]
fn new_reaches_the_rm_before_the_next_predicates_call() {
    // Bin packing would put every pod on the first node: only a current
    // cache keeps them apart.
    let packing = CONFIG.replace(
        "  - name: default\n",
        "  - name: default\n    nodesortpolicy: {type: binpacking}\n",
    );
    let rm = V1Rm::new(&packing, true);
    let nodes = ["n1", "n2", "n3", "n4"];
    rm.ready_nodes(&nodes);
    rm.app("app-1", "root.a");
    let asks = (1..=4)
        .map(|i| rmv1::ask("app-1", &format!("pod-{i}"), 100, 1))
        .collect();
    assert_eq!(rm.allocate(asks, vec![]).0, SICORE_OK);
    rm.rec.wait("four pods placed", |s| s.new.len() == 4);
    let s = rm.rec.copy();
    assert!(s.violations.is_empty(), "stale cache: {:?}", s.violations);
    let mut used: Vec<&str> = s.new.iter().map(|a| a.node_id.as_str()).collect();
    used.sort();
    assert_eq!(used, nodes, "one pod per node");
    assert!(s.predicate_calls >= 4);
    // A fifth pod finds every node taken.
    assert_eq!(
        rm.allocate(vec![rmv1::ask("app-1", "pod-5", 100, 1)], vec![])
            .0,
        SICORE_OK
    );
    rm.rec.wait("pod-5 refused everywhere", |s| s.refused >= 4);
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(rm.rec.copy().new.len(), 4);
}

#[test]
fn node_events_arrive_as_v1_records() {
    let rm = V1Rm::new(CONFIG, false);
    use si18::event_record::{ChangeDetail, ChangeType, Type};
    let has = |s: &Seen, change: ChangeType, detail: ChangeDetail| {
        s.events.iter().any(|e| {
            e.r#type == Type::Node as i32
                && e.object_id == "n1"
                && e.event_change_type == change as i32
                && e.event_change_detail == detail as i32
        })
    };
    // The store keeps the latest record per object between flushes, so
    // each record is awaited before the next change of the node.
    assert_eq!(rm.nodes(vec![rmv1::node("n1", 1000, 10)]).0, SICORE_OK);
    rm.rec.wait("node ADD", |s| {
        has(s, ChangeType::Add, ChangeDetail::DetailsNone)
    });
    assert_eq!(
        rm.nodes(vec![rmv1::node_action(
            "n1",
            si18::node_info::ActionFromRm::Decomission
        )])
        .0,
        SICORE_OK
    );
    rm.rec.wait("node REMOVE/NODE_DECOMISSION", |s| {
        has(s, ChangeType::Remove, ChangeDetail::NodeDecomission)
    });
    let s = rm.rec.copy();
    let add = s
        .events
        .iter()
        .find(|e| e.event_change_type == ChangeType::Add as i32)
        .unwrap();
    assert!(add.message.contains("n1"), "{add:?}");
}

#[test]
fn rms_of_both_editions_share_a_scheduler_and_see_only_their_own() {
    let mut o = options();
    o.policy_configs.insert("queues".into(), CONFIG.into());
    let sched = Handle(sicore_c_rm::new_scheduler(&o).unwrap());
    let v1 = register_on(sched.0, "rm1", CONFIG, false);
    let v0 = Arc::new(V0Recorder::default());
    let table = sicore_c_rm::table(&v0, sicore_c_rm::Installed::default());
    let (st, msg) = sicore_c_rm::register(sched.0, "rm0", "queues", "0.12", &table);
    assert_eq!(st, SICORE_OK, "{msg}");

    // The same node and application ids on both sides.
    let v1rm = V1Rm {
        sched: sched.0,
        _owner: None,
        rec: v1.clone(),
        rm_id: "rm1".into(),
    };
    v1rm.ready_nodes(&["n1"]);
    v1rm.app("app-1", "root.a");
    let st = call(
        sched.0,
        sicore_update_node,
        &si::NodeRequest {
            nodes: vec![sicore_c_rm::node("n1", 1000, 10)],
            rm_id: "rm0".into(),
        },
    );
    assert_eq!(st.0, SICORE_OK, "{}", st.1);
    let st = call(
        sched.0,
        sicore_update_application,
        &si::ApplicationRequest {
            new: vec![sicore_c_rm::app("app-1", "root.a", "bob")],
            rm_id: "rm0".into(),
            ..Default::default()
        },
    );
    assert_eq!(st.0, SICORE_OK, "{}", st.1);
    let ask0 = si::AllocationAsk {
        allocation_key: "v0-ask".into(),
        application_id: "app-1".into(),
        resource_ask: sicore_c_rm::res(&[("memory", 100), ("vcore", 1)]),
        max_allocations: 1,
        ..Default::default()
    };
    let st = call(
        sched.0,
        sicore_update_allocation,
        &si::AllocationRequest {
            asks: vec![ask0],
            rm_id: "rm0".into(),
            ..Default::default()
        },
    );
    assert_eq!(st.0, SICORE_OK, "{}", st.1);
    assert_eq!(
        v1rm.allocate(vec![rmv1::ask("app-1", "v1-pod", 100, 1)], vec![])
            .0,
        SICORE_OK
    );
    v1.wait("v1 pod placed", |s| s.new.len() == 1);
    let deadline = Instant::now() + WAIT;
    while v0.keys.lock().unwrap().is_empty() {
        assert!(Instant::now() < deadline, "the v0.12 ask was not placed");
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(*v0.keys.lock().unwrap(), ["v0-ask"]);
    assert_eq!(v1.copy().new[0].allocation_key, "v1-pod");
    // Each RM's partition holds its own allocation only.
    let dump = sicore_c_rm::dump(sched.0).unwrap();
    let parts = dump["partitions"].as_array().unwrap();
    let keys_of = |rm: &str| -> Vec<String> {
        parts
            .iter()
            .filter(|p| p["rm_id"] == rm)
            .flat_map(|p| p["nodes"].as_array().unwrap().iter())
            .flat_map(|n| n["allocations"].as_array().unwrap().iter())
            .map(|a| a["allocation_key"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(keys_of("rm0"), ["v0-ask"], "{dump}");
    assert_eq!(keys_of("rm1"), ["v1-pod"], "{dump}");
}

#[derive(Default)]
struct V0Recorder {
    keys: Mutex<Vec<String>>,
}

impl sicore_c_rm::Rm for V0Recorder {
    fn update_allocation(&self, m: si::AllocationResponse) -> Result<(), String> {
        self.keys
            .lock()
            .unwrap()
            .extend(m.new.into_iter().map(|a| a.allocation_key));
        Ok(())
    }
}

#[test]
fn rest_config_updates_are_refused_for_a_v1_rm_and_change_nothing() {
    let mut o = options();
    o.rest_address = "127.0.0.1:0".into();
    let sched = Handle(sicore_c_rm::new_scheduler(&o).unwrap());
    let _rec = register_on(sched.0, "rm1", CONFIG, false);
    let addr = crate::restkit::rest_address(sched.0);
    let base = crate::restkit::config_checksum(&addr);
    let text = format!(
        "{}          - name: b\nchecksum: {base}\n",
        CONFIG.trim_start()
    );
    let r = crate::restkit::http(&addr, "PUT", "/ws/v1/config", &[], text.as_bytes());
    assert_ne!(r.status, 200, "{}", r.body);
    assert!(r.body.contains("SI v1.x"), "{}", r.body);
    assert_eq!(crate::restkit::config_checksum(&addr), base);
    let dump = sicore_c_rm::dump(sched.0).unwrap();
    assert!(!dump.to_string().contains("root.b"), "{dump}");
}

#[test]
fn a_malformed_or_refused_v1_request_gets_its_error_and_interns_nothing() {
    let rm = V1Rm::new(CONFIG, false);
    let name = "example.com/v1-edge-refused";
    let with_name = |key: &str| si18::Allocation {
        allocation_key: key.into(),
        application_id: "app-1".into(),
        resource_per_alloc: Some(si18::Resource {
            resources: [(name.to_string(), si18::Quantity { value: 1 })].into(),
        }),
        ..Default::default()
    };
    let request = |rm_id: &str, allocations: Vec<si18::Allocation>| {
        si18::AllocationRequest {
            rm_id: rm_id.into(),
            allocations,
            releases: None,
        }
        .encode_to_vec()
    };
    let mut no_key = with_name("");
    no_key.allocation_key.clear();
    let mut other_partition = with_name("k2");
    other_partition.partition_name = "[other]default".into();
    // A truncated allocation at the end.
    let truncated = |mut b: Vec<u8>| {
        b.extend_from_slice(&[0x22, 0x05, b'x']);
        b
    };
    let cases = [
        (
            request("rm1", vec![with_name("k1"), no_key.clone()]),
            SICORE_INVALID_ARGUMENT,
            "allocations[1].allocationKey must not be empty",
        ),
        (
            request("rm1", vec![with_name("k1"), other_partition]),
            SICORE_REJECTED,
            "allocations[1].partitionName",
        ),
        // Malformed bytes come first, before the checks and the rmID.
        (
            truncated(request("rm1", vec![no_key.clone()])),
            SICORE_DECODE_ERROR,
            "request (SI v1.x AllocationRequest): not a valid encoding",
        ),
        (
            truncated(request("nobody", vec![with_name("k1")])),
            SICORE_DECODE_ERROR,
            "not a valid encoding",
        ),
        (
            request("nobody", vec![with_name("k1")]),
            SICORE_REJECTED,
            "nobody",
        ),
    ];
    for (bytes, status, text) in cases {
        let (st, msg) = sicore_c_rm::raw(rm.sched, sicore_v1_update_allocation, &bytes);
        assert_eq!(st, status, "{msg}");
        assert!(msg.contains(text), "{msg}");
        assert!(
            !sicore::testing::process_holds_name(name),
            "a refused request left {name} behind ({msg})"
        );
    }
    let mut err = sicore_buffer::empty();
    let st = sicore_v1_update_allocation(rm.sched, std::ptr::null(), 1, &mut err);
    assert_eq!(st, SICORE_INVALID_ARGUMENT);
    sicore_buffer_free(err);
    // The same allocation in a valid request is taken in.
    let (st, msg) = sicore_c_rm::raw(
        rm.sched,
        sicore_v1_update_allocation,
        &request("rm1", vec![with_name("k1")]),
    );
    assert_eq!(st, SICORE_OK, "{msg}");
    assert!(sicore::testing::process_holds_name(name));
}
