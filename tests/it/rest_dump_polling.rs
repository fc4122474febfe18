//! Polling the full state dump over REST does not hold the scheduler
//! behind one RM's slow dump plugin (hardening round four, item 5): the
//! RMs' own dump parts are fetched off the core thread, each RM's part is
//! reused for a second, and concurrent readers share one fetch.
//!
//! RM `slow` has a `StateDumpPlugin` that blocks until the test opens a
//! gate. While REST readers wait in it, RM `busy` is scheduled as usual:
//! on a core thread held by the plugin its node would never be answered
//! and its pod never placed.

use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use sicore::proto::si18::v1 as si18;
use sicore::v1::{ResourceManagerCallbackV1, SchedulerApiV1};
use sicore::{Options, Scheduler};

const PATIENCE: Duration = Duration::from_secs(20);

/// A dump plugin held at a gate; counts its calls.
#[derive(Default)]
struct SlowDump {
    state: Mutex<(bool, usize)>, // (gate open, calls)
    cv: Condvar,
}

impl ResourceManagerCallbackV1 for SlowDump {
    fn has_predicates(&self) -> bool {
        false
    }
    fn get_state_dump(&self) -> Option<Result<String, String>> {
        let mut s = self.state.lock().unwrap();
        s.1 += 1;
        self.cv.notify_all();
        while !s.0 {
            s = self.cv.wait(s).unwrap();
        }
        Some(Ok(format!(r#"{{"calls":{}}}"#, s.1)))
    }
}

impl SlowDump {
    fn wait_calls(&self, n: usize) {
        let deadline = Instant::now() + PATIENCE;
        let mut s = self.state.lock().unwrap();
        while s.1 < n {
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(!left.is_zero(), "the dump plugin was not called");
            s = self.cv.wait_timeout(s, left).unwrap().0;
        }
    }
    fn open(&self) {
        self.state.lock().unwrap().0 = true;
        self.cv.notify_all();
    }
    fn calls(&self) -> usize {
        self.state.lock().unwrap().1
    }
}

/// Opens the gate when the test ends, passed or failed, so that a core
/// thread held by the plugin (the defect this guards against) is let go and
/// the scheduler can be freed: a failure, not a hang.
struct OpenOnDrop(Arc<SlowDump>);

impl Drop for OpenOnDrop {
    fn drop(&mut self) {
        self.0.open();
    }
}

/// An RM that records its node answers and new allocations.
#[derive(Default)]
struct Busy {
    seen: Mutex<(usize, usize)>, // (nodes accepted, allocations)
    cv: Condvar,
}

impl ResourceManagerCallbackV1 for Busy {
    fn has_predicates(&self) -> bool {
        false
    }
    fn update_node(&self, r: &si18::NodeResponse) -> Result<(), String> {
        self.seen.lock().unwrap().0 += r.accepted.len();
        self.cv.notify_all();
        Ok(())
    }
    fn update_allocation(&self, r: &si18::AllocationResponse) -> Result<(), String> {
        self.seen.lock().unwrap().1 += r.new.len();
        self.cv.notify_all();
        Ok(())
    }
}

impl Busy {
    fn wait(&self, what: &str, cond: impl Fn(&(usize, usize)) -> bool) {
        let deadline = Instant::now() + PATIENCE;
        let mut s = self.seen.lock().unwrap();
        while !cond(&s) {
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(
                !left.is_zero(),
                "timed out waiting for {what}: the core thread is held"
            );
            s = self.cv.wait_timeout(s, left).unwrap().0;
        }
    }
}

fn register(sched: &Scheduler, id: &str, rm: Arc<dyn ResourceManagerCallbackV1>) {
    sched
        .register_resource_manager_v1(
            si18::RegisterResourceManagerRequest {
                rm_id: id.into(),
                policy_group: format!("q-{id}"),
                ..Default::default()
            },
            rm,
        )
        .unwrap();
}

fn memory(m: i64) -> Option<si18::Resource> {
    Some(si18::Resource {
        resources: [("memory".to_string(), si18::Quantity { value: m })].into(),
    })
}

#[test]
fn a_slow_dump_plugin_holds_neither_the_core_nor_other_rms() {
    let sched = Scheduler::new(Options {
        rest_address: "127.0.0.1:0".into(),
        ..Default::default()
    })
    .unwrap();
    let addr = sched.rest_address().unwrap().to_string();
    let slow = Arc::new(SlowDump::default());
    register(&sched, "slow", slow.clone());
    let _gate = OpenOnDrop(slow.clone());
    let busy = Arc::new(Busy::default());
    register(&sched, "busy", busy.clone());

    // Four readers poll the dump; the first fetch blocks in the plugin.
    let readers: Vec<_> = (0..4)
        .map(|_| {
            let addr = addr.clone();
            std::thread::spawn(move || {
                crate::restkit::http(&addr, "GET", "/ws/v1/fullstatedump", &[], b"")
            })
        })
        .collect();
    slow.wait_calls(1);

    // Meanwhile the other RM is answered and scheduled.
    let rm = "busy".to_string();
    sched
        .update_node_v1(si18::NodeRequest {
            rm_id: rm.clone(),
            nodes: vec![si18::NodeInfo {
                node_id: "n1".into(),
                action: si18::node_info::ActionFromRm::CreateDrain as i32,
                schedulable_resource: memory(100),
                ..Default::default()
            }],
        })
        .unwrap();
    busy.wait("the node answered", |s| s.0 == 1);
    sched
        .update_node_v1(si18::NodeRequest {
            rm_id: rm.clone(),
            nodes: vec![si18::NodeInfo {
                node_id: "n1".into(),
                action: si18::node_info::ActionFromRm::DrainToSchedulable as i32,
                ..Default::default()
            }],
        })
        .unwrap();
    sched
        .update_application_v1(si18::ApplicationRequest {
            rm_id: rm.clone(),
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
            rm_id: rm,
            allocations: vec![si18::Allocation {
                allocation_key: "pod".into(),
                application_id: "app".into(),
                resource_per_alloc: memory(10),
                ..Default::default()
            }],
            releases: None,
        })
        .unwrap();
    busy.wait("the pod placed", |s| s.1 == 1);

    // However many readers wait, one fetch is in progress: the others wait
    // for it instead of calling the plugin themselves.
    assert_eq!(slow.calls(), 1);
    slow.open();
    for r in readers {
        let reply = r.join().unwrap();
        assert_eq!(reply.status, 200, "{}", reply.body);
        let dump = reply.json();
        assert!(
            dump["resourceManagerDumps"]["slow"]["calls"].as_u64() >= Some(1),
            "{dump}"
        );
        assert!(dump.get("partitions").is_some());
    }
}
