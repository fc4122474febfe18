//! One scenario, both editions: [`EditionRm`] drives a v0.12 RM (a
//! [`Harness`] with `predicates`) or a v1.8 RM (a [`V1Rm`]) through the
//! same steps and reads back what either was told in one shape, so that a
//! scenario is written once and runs, by name, as each edition's test.

use std::collections::HashMap;

use sicore::ffi::sicore_status::SICORE_OK;
use sicore::proto::si::v1 as si;
use sicore::proto::si18::v1 as si18;
use sicore_c_rm::v1 as rmv1;

use super::preempt::{confirmation, predicates_rm, preempted};
use super::v1::{v1_confirmation, v1_options, v1_preempted, V1Rm};
use super::{app, ask, memory_of, yaml_options, Harness};

/// The SI edition an RM speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Edition {
    V012,
    V1,
}

/// A request set of a scenario: `count` allocations of `memory` and one
/// vcore under `key`, at `priority`. A v0.12 RM sends it as one ask of
/// `count` (every allocation keyed `key`, no priority unless given); a
/// v1.8 RM as one request per allocation (keyed `key-<i>` when `count` is
/// more than one, priority 0 unless given), each allowed to preempt.
#[derive(Clone, Copy, Debug)]
pub struct Req<'a> {
    pub key: &'a str,
    pub memory: i64,
    pub count: usize,
    pub priority: Option<i32>,
}

/// `count` allocations of `memory` under `key`.
pub fn req(key: &str, memory: i64, count: usize) -> Req<'_> {
    Req {
        key,
        memory,
        count,
        priority: None,
    }
}

/// One allocation of `memory` under `key` at `priority`.
pub fn req_p(key: &str, memory: i64, priority: i32) -> Req<'_> {
    Req {
        key,
        memory,
        count: 1,
        priority: Some(priority),
    }
}

/// A v1 request of `memory` at `priority` that may preempt others (the
/// k8shim's default for a pod).
pub fn v1_preemptor(app: &str, key: &str, memory: i64, priority: i32) -> si18::Allocation {
    si18::Allocation {
        priority,
        preemption_policy: Some(si18::PreemptionPolicy {
            allow_preempt_self: true,
            allow_preempt_other: true,
        }),
        ..rmv1::ask(app, key, memory, 1)
    }
}

/// A victim as either edition tells it.
#[derive(Clone, Debug)]
pub struct Victim {
    pub app: String,
    pub key: String,
    /// The node the RM was told the victim runs on.
    pub node: String,
    pub message: String,
}

/// An event record as either edition tells it: the object, its
/// application (v0.12 `groupID`, v1.8 `referenceID`) and the message.
#[derive(Clone, Debug)]
pub struct Event {
    pub object: String,
    pub app: String,
    pub message: String,
}

/// An RM of either edition, registered with one configuration.
pub enum EditionRm {
    V012(Harness),
    V1(V1Rm),
}

impl EditionRm {
    /// An RM of `edition` registered with `yaml`: v0.12 with `predicates`;
    /// v1.8 without it, its `PreemptionPredicates` accepting every check.
    pub fn new(edition: Edition, yaml: &str) -> Self {
        match edition {
            Edition::V012 => EditionRm::V012(predicates_rm(yaml_options(yaml), &[])),
            Edition::V1 => {
                let rm = V1Rm::with(v1_options(), yaml, false, |_| {});
                rm.rec.accept_all();
                EditionRm::V1(rm)
            }
        }
    }

    /// As [`EditionRm::new`] with the REST service on a free port, both
    /// editions asking `Predicates`, which refuse `refused` nodes.
    pub fn with_rest(edition: Edition, yaml: &str, refused: &[&str]) -> Self {
        match edition {
            Edition::V012 => {
                let mut o = yaml_options(yaml);
                o.rest_address = "127.0.0.1:0".into();
                let h = predicates_rm(o, &[]);
                h.rec.behaviour.lock().unwrap().refuse_nodes =
                    refused.iter().map(|n| n.to_string()).collect();
                EditionRm::V012(h)
            }
            Edition::V1 => {
                let mut o = v1_options();
                o.rest_address = "127.0.0.1:0".into();
                let rm = V1Rm::with(o, yaml, true, |_| {});
                rm.rec.accept_all();
                rm.rec
                    .refuse_nodes
                    .lock()
                    .unwrap()
                    .extend(refused.iter().map(|n| n.to_string()));
                EditionRm::V1(rm)
            }
        }
    }

    /// The scheduler handle.
    pub fn sched(&self) -> *mut sicore::ffi::sicore_scheduler {
        match self {
            EditionRm::V012(h) => h.sched,
            EditionRm::V1(rm) => rm.sched,
        }
    }

    /// The state dump.
    pub fn dump(&self) -> serde_json::Value {
        match self {
            EditionRm::V012(h) => h.dump(),
            EditionRm::V1(rm) => rm.dump(),
        }
    }

    /// The v0.12 RM, for a step only that edition has.
    pub fn harness(&self) -> &Harness {
        match self {
            EditionRm::V012(h) => h,
            EditionRm::V1(_) => panic!("a v0.12 step on a v1.8 RM"),
        }
    }

    /// Adds `nodes` (id, memory): a v0.12 RM in one request, each of
    /// `v012_vcore` vcores; a v1.8 RM one by one the k8shim way, 10 vcores.
    pub fn nodes(&self, nodes: &[(&str, i64)], v012_vcore: i64) {
        match self {
            EditionRm::V012(h) => {
                let before = h.seen(|s| s.nodes_accepted.len());
                let list = nodes
                    .iter()
                    .map(|(id, m)| super::node(id, *m, v012_vcore))
                    .collect();
                assert_eq!(h.nodes(list).0, SICORE_OK);
                h.wait("nodes", |s| s.nodes_accepted.len() == before + nodes.len());
            }
            EditionRm::V1(rm) => {
                for (id, memory) in nodes {
                    rm.node(id, *memory);
                }
            }
        }
    }

    /// Submits `app_id` to `queue` and waits until it is accepted.
    pub fn submit(&self, app_id: &str, queue: &str) {
        match self {
            EditionRm::V012(h) => h.submit(app(app_id, queue)).unwrap(),
            EditionRm::V1(rm) => rm.app(app_id, queue),
        }
    }

    /// Sends the requests `reqs` of `app_id`, in one call.
    pub fn request(&self, app_id: &str, reqs: &[Req]) {
        match self {
            EditionRm::V012(h) => {
                let asks = reqs
                    .iter()
                    .map(|r| {
                        let a = ask(app_id, r.key, r.memory, 1, r.count as i32);
                        match r.priority {
                            None => a,
                            Some(p) => si::AllocationAsk {
                                priority: Some(si::Priority {
                                    priority: Some(si::priority::Priority::PriorityValue(p)),
                                }),
                                ..a
                            },
                        }
                    })
                    .collect();
                assert_eq!(h.asks(asks).0, SICORE_OK);
            }
            EditionRm::V1(rm) => {
                let asks = reqs
                    .iter()
                    .flat_map(|r| {
                        self.keys(*r).into_iter().map(move |k| {
                            v1_preemptor(app_id, &k, r.memory, r.priority.unwrap_or(0))
                        })
                    })
                    .collect();
                rm.allocate(asks, vec![]);
            }
        }
    }

    /// Submits `app_id` to `queue` and sends `reqs`, waiting until the RM
    /// has been told of `total` allocations.
    pub fn fill(&self, app_id: &str, queue: &str, reqs: &[Req], total: usize) {
        self.submit(app_id, queue);
        self.request(app_id, reqs);
        self.wait_allocations(app_id, total);
    }

    /// Submits `app_id` to `queue` asking `r`: the preemptor.
    pub fn preemptor(&self, app_id: &str, queue: &str, r: Req) {
        self.submit(app_id, queue);
        self.request(app_id, &[r]);
    }

    /// The allocation keys this edition gives the allocations of `r`.
    pub fn keys(&self, r: Req) -> Vec<String> {
        match self {
            EditionRm::V1(_) if r.count > 1 => {
                (0..r.count).map(|i| format!("{}-{i}", r.key)).collect()
            }
            _ => vec![r.key.to_string(); r.count],
        }
    }

    /// How many allocations the RM has been told of.
    pub fn allocations(&self) -> usize {
        match self {
            EditionRm::V012(h) => h.seen(|s| s.allocations.len()),
            EditionRm::V1(rm) => rm.rec.copy().new.len(),
        }
    }

    /// Waits until the RM has been told of `total` allocations.
    pub fn wait_allocations(&self, what: &str, total: usize) {
        match self {
            EditionRm::V012(h) => h.wait(what, |s| s.allocations.len() == total),
            EditionRm::V1(rm) => {
                rm.rec.wait(what, |s| s.new.len() == total);
            }
        }
    }

    /// Waits until the RM has been told of an allocation keyed `key`.
    pub fn wait_allocated(&self, key: &str) {
        match self {
            EditionRm::V012(h) => h.wait(key, |s| {
                s.allocations.iter().any(|a| a.allocation_key == key)
            }),
            EditionRm::V1(rm) => {
                rm.rec
                    .wait(key, |s| s.new.iter().any(|a| a.allocation_key == key));
            }
        }
    }

    /// The node of the first allocation keyed `key` ("" if none).
    pub fn node_of(&self, key: &str) -> String {
        match self {
            EditionRm::V012(h) => h.seen(|s| {
                s.allocations
                    .iter()
                    .find(|a| a.allocation_key == key)
                    .map(|a| a.node_id.clone())
                    .unwrap_or_default()
            }),
            EditionRm::V1(rm) => rm.node_of(key),
        }
    }

    /// The victims the RM was told of, in order.
    pub fn victims(&self) -> Vec<Victim> {
        match self {
            EditionRm::V012(h) => h.seen(|s| {
                let by_uuid: HashMap<&str, &si::Allocation> =
                    s.allocations.iter().map(|a| (a.uuid.as_str(), a)).collect();
                preempted(s)
                    .into_iter()
                    .map(|r| Victim {
                        key: by_uuid[r.uuid.as_str()].allocation_key.clone(),
                        node: by_uuid[r.uuid.as_str()].node_id.clone(),
                        app: r.application_id,
                        message: r.message,
                    })
                    .collect()
            }),
            EditionRm::V1(rm) => v1_preempted(&rm.rec.copy())
                .into_iter()
                .map(|r| Victim {
                    node: rm.node_of(&r.allocation_key),
                    app: r.application_id,
                    key: r.allocation_key,
                    message: r.message,
                })
                .collect(),
        }
    }

    /// The victims' keys, sorted.
    pub fn victim_keys(&self) -> Vec<String> {
        let mut v: Vec<String> = self.victims().into_iter().map(|v| v.key).collect();
        v.sort();
        v
    }

    /// Waits until the RM has been told of at least `n` victims.
    pub fn wait_victims(&self, n: usize) {
        match self {
            EditionRm::V012(h) => h.wait("victims", |s| preempted(s).len() >= n),
            EditionRm::V1(rm) => {
                rm.rec.wait("victims", |s| v1_preempted(s).len() >= n);
            }
        }
    }

    /// Every release the RM was told of, for a failure's message.
    pub fn released(&self) -> String {
        match self {
            EditionRm::V012(h) => h.seen(|s| format!("{:?}", s.released)),
            EditionRm::V1(rm) => format!("{:?}", rm.rec.copy().released),
        }
    }

    /// Asserts that the RM was told of no victim.
    pub fn assert_no_victim(&self, what: &str) {
        assert!(self.victims().is_empty(), "{what}: {}", self.released());
    }

    /// The nodes the RM was asked the preemption check of `key` about, in
    /// order (v0.12: `Predicates{allocate: false}`, v1.8:
    /// `PreemptionPredicates`).
    pub fn checked_nodes(&self, key: &str) -> Vec<String> {
        match self {
            EditionRm::V012(h) => h.seen(|s| {
                s.predicate_calls
                    .iter()
                    .filter(|p| p.allocation_key == key && !p.allocate)
                    .map(|p| p.node_id.clone())
                    .collect()
            }),
            EditionRm::V1(rm) => rm
                .rec
                .copy()
                .checks
                .iter()
                .filter(|c| c.allocation_key == key)
                .map(|c| c.node_id.clone())
                .collect(),
        }
    }

    /// How many preemption checks the RM was asked, of any request.
    pub fn checks_asked(&self) -> usize {
        match self {
            EditionRm::V012(h) => {
                h.seen(|s| s.predicate_calls.iter().filter(|p| !p.allocate).count())
            }
            EditionRm::V1(rm) => rm.rec.copy().checks.len(),
        }
    }

    /// The RM confirms every victim it was told of, as each edition's
    /// k8shim does (v0.12 by UUID, v1.8 by key).
    pub fn confirm(&self) {
        match self {
            EditionRm::V012(h) => {
                let confirms = h
                    .seen(preempted)
                    .iter()
                    .map(|v| confirmation(&v.application_id, &v.uuid))
                    .collect();
                assert_eq!(h.releases(confirms, vec![]).0, SICORE_OK);
            }
            EditionRm::V1(rm) => {
                let confirms = v1_preempted(&rm.rec.copy())
                    .iter()
                    .map(|v| v1_confirmation(&v.application_id, &v.allocation_key))
                    .collect();
                rm.allocate(vec![], confirms);
            }
        }
    }

    /// Waits until the RM has been told of an event `cond` accepts.
    pub fn wait_event(&self, what: &str, cond: impl Fn(&Event) -> bool) {
        match self {
            EditionRm::V012(h) => h.wait(what, |s| {
                s.events.iter().any(|e| {
                    cond(&Event {
                        object: e.object_id.clone(),
                        app: e.group_id.clone(),
                        message: e.message.clone(),
                    })
                })
            }),
            EditionRm::V1(rm) => {
                rm.rec.wait(what, |s| {
                    s.events.iter().any(|e| {
                        cond(&Event {
                            object: e.object_id.clone(),
                            app: e.reference_id.clone(),
                            message: e.message.clone(),
                        })
                    })
                });
            }
        }
    }

    /// The allocated memory of the queue at `path` in `default`.
    pub fn memory(&self, path: &str) -> i64 {
        match self {
            EditionRm::V012(h) => memory_of(&h.dump(), path),
            EditionRm::V1(rm) => rm.memory(path),
        }
    }

    /// Lets the core finish what the last requests started.
    pub fn settle(&self) {
        match self {
            EditionRm::V012(h) => h.settle(),
            EditionRm::V1(rm) => rm.settle(),
        }
    }
}
