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
