//! The SI v1.x edition through the Rust API (`sicore::v1`), as an RM
//! embedding the library: register with a config text, a node created
//! draining and made schedulable, a request answered by key, a refused
//! call of the other edition, and `stop()`.

use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use sicore::proto::si18::v1 as si18;
use sicore::v1::{ResourceManagerCallbackV1, SchedulerApiV1};
use sicore::{Options, Scheduler, SchedulerApi, Status};

#[derive(Default)]
struct Rm {
    seen: Mutex<(Vec<String>, Vec<si18::Allocation>)>,
    cv: Condvar,
}

impl ResourceManagerCallbackV1 for Rm {
    fn update_allocation(&self, r: &si18::AllocationResponse) -> Result<(), String> {
        self.seen.lock().unwrap().1.extend(r.new.iter().cloned());
        self.cv.notify_all();
        Ok(())
    }

    fn update_node(&self, r: &si18::NodeResponse) -> Result<(), String> {
        let mut s = self.seen.lock().unwrap();
        s.0.extend(r.accepted.iter().map(|a| a.node_id.clone()));
        self.cv.notify_all();
        Ok(())
    }

    fn has_predicates(&self) -> bool {
        false
    }
}

impl Rm {
    fn wait(&self, what: &str, cond: impl Fn(&(Vec<String>, Vec<si18::Allocation>)) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut s = self.seen.lock().unwrap();
        while !cond(&s) {
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(!left.is_zero(), "timed out waiting for {what}");
            s = self.cv.wait_timeout(s, left).unwrap().0;
        }
    }
}

fn res(memory: i64) -> Option<si18::Resource> {
    Some(si18::Resource {
        resources: [("memory".to_string(), si18::Quantity { value: memory })].into(),
    })
}

#[test]
fn a_rust_v1_rm_registers_allocates_by_key_and_stops() {
    let sched = Scheduler::new(Options::default()).unwrap();
    let rm = Arc::new(Rm::default());
    sched
        .register_resource_manager_v1(
            si18::RegisterResourceManagerRequest {
                rm_id: "rm".into(),
                policy_group: "queues".into(),
                config: String::new(),
                ..Default::default()
            },
            rm.clone(),
        )
        .unwrap();
    sched
        .update_node_v1(si18::NodeRequest {
            rm_id: "rm".into(),
            nodes: vec![si18::NodeInfo {
                node_id: "n1".into(),
                action: si18::node_info::ActionFromRm::CreateDrain as i32,
                schedulable_resource: res(1000),
                ..Default::default()
            }],
        })
        .unwrap();
    rm.wait("node answered", |s| s.0 == ["n1"]);
    sched
        .update_node_v1(si18::NodeRequest {
            rm_id: "rm".into(),
            nodes: vec![si18::NodeInfo {
                node_id: "n1".into(),
                action: si18::node_info::ActionFromRm::DrainToSchedulable as i32,
                ..Default::default()
            }],
        })
        .unwrap();
    sched
        .update_application_v1(si18::ApplicationRequest {
            rm_id: "rm".into(),
            new: vec![si18::AddApplicationRequest {
                application_id: "app".into(),
                tags: [("namespace".to_string(), "ns".to_string())].into(),
                ugi: Some(si18::UserGroupInformation {
                    user: "u".into(),
                    groups: vec![],
                }),
                ..Default::default()
            }],
            ..Default::default()
        })
        .unwrap();
    sched
        .update_allocation_v1(si18::AllocationRequest {
            rm_id: "rm".into(),
            allocations: vec![si18::Allocation {
                allocation_key: "pod".into(),
                application_id: "app".into(),
                resource_per_alloc: res(10),
                priority: 7,
                ..Default::default()
            }],
            releases: None,
        })
        .unwrap();
    rm.wait("pod allocated", |s| s.1.len() == 1);
    let a = rm.seen.lock().unwrap().1[0].clone();
    assert_eq!(
        (a.allocation_key.as_str(), a.node_id.as_str(), a.priority),
        ("pod", "n1", 7)
    );

    // The v0.12 API refuses this RM, naming its edition.
    let e = sched
        .update_node(sicore::proto::si::v1::NodeRequest {
            rm_id: "rm".into(),
            nodes: vec![],
        })
        .unwrap_err();
    assert_eq!(e.status, Status::Rejected);
    assert!(e.message.contains("SI v1.x"), "{}", e.message);

    sched.stop().unwrap();
    let e = sched
        .update_node_v1(si18::NodeRequest {
            rm_id: "rm".into(),
            nodes: vec![],
        })
        .unwrap_err();
    assert_eq!(e.status, Status::Stopped);
    // Stopped: the scheduler no longer holds the RM's callbacks.
    assert_eq!(Arc::strong_count(&rm), 1);
}

/// An RM with the v1.8 `StateDumpPlugin`: its JSON (or its error) is part
/// of the full state dump, by rmID; an RM without one adds nothing.
struct DumpRm(Result<String, String>);

impl ResourceManagerCallbackV1 for DumpRm {
    fn has_predicates(&self) -> bool {
        false
    }
    fn get_state_dump(&self) -> Option<Result<String, String>> {
        Some(self.0.clone())
    }
}

#[test]
fn the_state_dump_includes_each_v1_rms_own_dump() {
    let sched = Scheduler::new(Options::default()).unwrap();
    let before: serde_json::Value = serde_json::from_str(&sched.state_dump().unwrap()).unwrap();
    assert!(before.get("resourceManagerDumps").is_none());
    for (id, dump) in [
        ("good", Ok(r#"{"shim":"test","pods":3}"#.to_string())),
        ("bad", Err("cache locked".to_string())),
    ] {
        sched
            .register_resource_manager_v1(
                si18::RegisterResourceManagerRequest {
                    rm_id: id.into(),
                    policy_group: format!("q-{id}"),
                    ..Default::default()
                },
                Arc::new(DumpRm(dump)),
            )
            .unwrap();
    }
    let dump: serde_json::Value = serde_json::from_str(&sched.state_dump().unwrap()).unwrap();
    let rms = &dump["resourceManagerDumps"];
    assert_eq!(rms["good"]["shim"], "test");
    assert_eq!(rms["good"]["pods"], 3);
    assert_eq!(rms["bad"]["error"], "cache locked");
    // The core's own fields are still there.
    assert!(dump.get("partitions").is_some());
}
