//! A Rust resource manager embeds sicore through the native traits, with no
//! FFI: the same flow as the C scenario, with prost messages.

use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use sicore::proto::si::v1 as si;
use sicore::{Options, ResourceManagerCallback, Scheduler, SchedulerApi, Status};

#[derive(Default)]
struct Rm {
    allocations: Mutex<Vec<si::Allocation>>,
    assumed_before: Mutex<Vec<bool>>,
    assumed: Mutex<Vec<String>>,
    cv: Condvar,
}

impl ResourceManagerCallback for Rm {
    fn update_allocation(&self, r: &si::AllocationResponse) -> Result<(), String> {
        let assumed = self.assumed.lock().unwrap().clone();
        let mut before = self.assumed_before.lock().unwrap();
        before.extend(r.new.iter().map(|a| assumed.contains(&a.allocation_key)));
        self.allocations
            .lock()
            .unwrap()
            .extend(r.new.iter().cloned());
        self.cv.notify_all();
        Ok(())
    }

    fn resync_scheduler_cache(&self, args: &si::ReSyncSchedulerCacheArgs) -> Result<(), String> {
        let mut a = self.assumed.lock().unwrap();
        a.extend(
            args.assumed_allocations
                .iter()
                .map(|x| x.allocation_key.clone()),
        );
        Ok(())
    }

    fn has_predicates(&self) -> bool {
        false
    }
}

fn resource(memory: i64, vcore: i64) -> Option<si::Resource> {
    Some(si::Resource {
        resources: [("memory", memory), ("vcore", vcore)]
            .into_iter()
            .map(|(k, v)| (k.to_string(), si::Quantity { value: v }))
            .collect(),
    })
}

#[test]
fn a_rust_rm_gets_allocations_without_ffi() {
    let sched = Scheduler::new(Options::default()).unwrap();
    let rm = Arc::new(Rm::default());
    let req = si::RegisterResourceManagerRequest {
        rm_id: "rust-rm".into(),
        version: "1".into(),
        policy_group: "queues".into(),
    };
    sched.register_resource_manager(req, rm.clone()).unwrap();
    sched
        .update_node(si::NodeRequest {
            rm_id: "rust-rm".into(),
            nodes: vec![si::NodeInfo {
                node_id: "n1".into(),
                action: si::node_info::ActionFromRm::Create as i32,
                schedulable_resource: resource(1000, 10),
                ..Default::default()
            }],
        })
        .unwrap();
    sched
        .update_application(si::ApplicationRequest {
            rm_id: "rust-rm".into(),
            new: vec![si::AddApplicationRequest {
                application_id: "app".into(),
                queue_name: "root.rust".into(),
                partition_name: "default".into(),
                ugi: Some(si::UserGroupInformation {
                    user: "ferris".into(),
                    groups: vec![],
                }),
                ..Default::default()
            }],
            ..Default::default()
        })
        .unwrap();
    sched
        .update_allocation(si::AllocationRequest {
            rm_id: "rust-rm".into(),
            asks: vec![si::AllocationAsk {
                allocation_key: "k".into(),
                application_id: "app".into(),
                resource_ask: resource(100, 1),
                max_allocations: 2,
                ..Default::default()
            }],
            ..Default::default()
        })
        .unwrap();
    let got = rm.cv.wait_timeout_while(
        rm.allocations.lock().unwrap(),
        Duration::from_secs(20),
        |a| a.len() < 2,
    );
    let allocs = got.unwrap().0.clone();
    assert_eq!(allocs.len(), 2);
    assert!(allocs
        .iter()
        .all(|a| a.node_id == "n1" && a.queue_name == "root.rust"));
    assert!(
        rm.assumed_before.lock().unwrap().iter().all(|b| *b),
        "ReSync came first"
    );
    let dump: serde_json::Value = serde_json::from_str(&sched.state_dump().unwrap()).unwrap();
    assert_eq!(dump["partitions"][0]["root"]["allocated"]["memory"], 200);
    let err = sched
        .update_node(si::NodeRequest {
            rm_id: "other".into(),
            nodes: vec![],
        })
        .unwrap_err();
    assert_eq!(err.status, Status::Rejected);
    sched.close().unwrap();
    assert_eq!(
        Arc::strong_count(&rm),
        1,
        "the scheduler let go of the callback"
    );
}

/// A Rust RM whose predicate refuses any node already holding an allocation
/// its ReSync-fed cache knows of; its ReSync callback may report an error.
struct CachedRm {
    cache: Mutex<std::collections::HashMap<String, String>>,
    placed: Mutex<Vec<(String, String)>>,
    /// Allocation keys announced before their ReSync.
    unannounced: Mutex<Vec<String>>,
    resync_fails: bool,
    cv: Condvar,
}

impl CachedRm {
    fn new(resync_fails: bool) -> Self {
        CachedRm {
            cache: Mutex::default(),
            placed: Mutex::default(),
            unannounced: Mutex::default(),
            resync_fails,
            cv: Condvar::new(),
        }
    }
}

impl ResourceManagerCallback for CachedRm {
    fn update_allocation(&self, r: &si::AllocationResponse) -> Result<(), String> {
        let cache = self.cache.lock().unwrap();
        for a in &r.new {
            if !cache.contains_key(&a.allocation_key) {
                self.unannounced
                    .lock()
                    .unwrap()
                    .push(a.allocation_key.clone());
            }
        }
        let mut placed = self.placed.lock().unwrap();
        placed.extend(
            r.new
                .iter()
                .map(|a| (a.allocation_key.clone(), a.node_id.clone())),
        );
        self.cv.notify_all();
        Ok(())
    }

    fn predicates(&self, args: &si::PredicatesArgs) -> Result<(), String> {
        let cache = self.cache.lock().unwrap();
        if cache.values().any(|n| *n == args.node_id) {
            return Err(format!("{} already holds an assumed pod", args.node_id));
        }
        Ok(())
    }

    fn resync_scheduler_cache(&self, args: &si::ReSyncSchedulerCacheArgs) -> Result<(), String> {
        let mut cache = self.cache.lock().unwrap();
        for a in &args.assumed_allocations {
            cache.insert(a.allocation_key.clone(), a.node_id.clone());
        }
        if self.resync_fails {
            return Err("cache update reported a failure".into());
        }
        Ok(())
    }
}

#[test]
fn two_rust_rms_each_see_only_their_own_assumptions_before_predicates() {
    let mut options = Options::default();
    let yaml = "
partitions:
  - name: default
    nodesortpolicy: {type: binpacking}
    placementrules: [{name: provided, create: true}]
    queues: [{name: root, submitacl: '*'}]
";
    options.policy_configs.insert("bp".into(), yaml.into());
    let sched = Scheduler::new(options).unwrap();
    let rms = [
        ("rm-a", Arc::new(CachedRm::new(false))),
        ("rm-b", Arc::new(CachedRm::new(true))),
    ];
    for (id, rm) in &rms {
        let req = si::RegisterResourceManagerRequest {
            rm_id: id.to_string(),
            version: "1".into(),
            policy_group: "bp".into(),
        };
        sched.register_resource_manager(req, rm.clone()).unwrap();
        let nodes = ["n1", "n2", "n3"]
            .iter()
            .map(|n| si::NodeInfo {
                node_id: format!("{id}-{n}"),
                action: si::node_info::ActionFromRm::Create as i32,
                schedulable_resource: resource(1000, 10),
                ..Default::default()
            })
            .collect();
        sched
            .update_node(si::NodeRequest {
                rm_id: id.to_string(),
                nodes,
            })
            .unwrap();
        sched
            .update_application(si::ApplicationRequest {
                rm_id: id.to_string(),
                new: vec![si::AddApplicationRequest {
                    application_id: "app".into(),
                    queue_name: "root.q".into(),
                    partition_name: "default".into(),
                    ugi: Some(si::UserGroupInformation {
                        user: "ferris".into(),
                        groups: vec![],
                    }),
                    ..Default::default()
                }],
                ..Default::default()
            })
            .unwrap();
    }
    for (id, _) in &rms {
        let asks = (1..=3)
            .map(|i| si::AllocationAsk {
                allocation_key: format!("{id}-k{i}"),
                application_id: "app".into(),
                resource_ask: resource(100, 1),
                max_allocations: 1,
                ..Default::default()
            })
            .collect();
        sched
            .update_allocation(si::AllocationRequest {
                rm_id: id.to_string(),
                asks,
                ..Default::default()
            })
            .unwrap();
    }
    for (id, rm) in &rms {
        let got =
            rm.cv
                .wait_timeout_while(rm.placed.lock().unwrap(), Duration::from_secs(20), |p| {
                    p.len() < 3
                });
        let mut placed = got.unwrap().0.clone();
        placed.sort();
        let want: Vec<(String, String)> = (1..=3)
            .map(|i| (format!("{id}-k{i}"), format!("{id}-n{i}")))
            .collect();
        // A failing ReSync is logged; the decisions stand and predicates
        // still saw the earlier ones.
        assert_eq!(placed, want, "{id}");
        assert!(rm.unannounced.lock().unwrap().is_empty(), "{id}");
        let cache = rm.cache.lock().unwrap();
        assert!(
            cache.keys().all(|k| k.starts_with(id)),
            "{id} heard of another RM's allocations: {cache:?}"
        );
    }
    sched.close().unwrap();
}
