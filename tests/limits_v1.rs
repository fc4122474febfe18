//! User and group limits as an SI v1.8 RM (the k8shim) sees them through
//! the v1 C family: the APP records of an application held in Accepted by
//! a user's `maxapplications` (limits.md 6.2) arrive with their change
//! type and detail, once per transition.

use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use sicore::ffi::sicore_status::*;
use sicore::ffi::*;
use sicore::proto::si18::sicore::si18 as sicore18;
use sicore::proto::si18::v1 as si18;
use sicore::proto::sicore::v1 as sicore_pb;
use sicore_c_rm::v1::{self as rmv1, RmV1};
use sicore_c_rm::{call, Handle};

use si18::event_record::{ChangeDetail, ChangeType, Type};

const WAIT: Duration = Duration::from_secs(20);

const CONFIG: &str = "
partitions:
  - name: default
    queues:
      - name: root
        submitacl: '*'
        queues:
          - name: a
            limits:
              - {users: [alice], maxapplications: 1}
";

#[derive(Default, Debug, Clone)]
struct Seen {
    new: Vec<si18::Allocation>,
    apps_accepted: Vec<String>,
    nodes_accepted: Vec<String>,
    events: Vec<si18::EventRecord>,
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
        self.record(|s| s.new.extend(m.new));
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

    fn send_event(&self, m: sicore18::EventRecords) {
        self.record(|s| s.events.extend(m.events));
    }
}

struct V1Rm {
    sched: *mut sicore_scheduler,
    _owner: Handle,
    rec: Arc<Recorder>,
}

impl V1Rm {
    fn new() -> Self {
        let options = sicore_pb::SchedulerOptions {
            event_flush_interval_ms: 20,
            scheduling_interval_ms: 10,
            event_types: vec!["REQUEST".into(), "APP".into(), "NODE".into()],
            ..Default::default()
        };
        let sched = sicore_c_rm::new_scheduler(&options).unwrap();
        let owner = Handle(sched);
        let rec = Arc::new(Recorder::default());
        let table = rmv1::table(&rec, false);
        let req = si18::RegisterResourceManagerRequest {
            rm_id: "rm1".into(),
            version: "v1.8.0".into(),
            policy_group: "queues".into(),
            config: CONFIG.into(),
            ..Default::default()
        };
        let (st, msg) = rmv1::register(sched, &req, &table);
        assert_eq!(st, SICORE_OK, "{msg}");
        V1Rm {
            sched,
            _owner: owner,
            rec,
        }
    }

    fn app(&self, id: &str) {
        let (st, msg) = call(
            self.sched,
            sicore_v1_update_application,
            &si18::ApplicationRequest {
                new: vec![rmv1::app(id, "root.a", "alice")],
                rm_id: "rm1".into(),
                ..Default::default()
            },
        );
        assert_eq!(st, SICORE_OK, "{msg}");
        self.rec
            .wait("app accepted", |s| s.apps_accepted.iter().any(|a| a == id));
    }

    fn allocate(&self, allocations: Vec<si18::Allocation>, releases: Vec<si18::AllocationRelease>) {
        let (st, msg) = call(
            self.sched,
            sicore_v1_update_allocation,
            &si18::AllocationRequest {
                allocations,
                releases: (!releases.is_empty()).then_some(si18::AllocationReleasesRequest {
                    allocations_to_release: releases,
                }),
                rm_id: "rm1".into(),
            },
        );
        assert_eq!(st, SICORE_OK, "{msg}");
    }

    fn ready_node(&self, id: &str) {
        let (st, _) = call(
            self.sched,
            sicore_v1_update_node,
            &si18::NodeRequest {
                nodes: vec![rmv1::node(id, 1000, 10)],
                rm_id: "rm1".into(),
            },
        );
        assert_eq!(st, SICORE_OK);
        self.rec.wait("node answered", |s| {
            s.nodes_accepted.iter().any(|n| n == id)
        });
        let (st, _) = call(
            self.sched,
            sicore_v1_update_node,
            &si18::NodeRequest {
                nodes: vec![rmv1::node_action(
                    id,
                    si18::node_info::ActionFromRm::DrainToSchedulable,
                )],
                rm_id: "rm1".into(),
            },
        );
        assert_eq!(st, SICORE_OK);
    }
}

/// The APP quota records the RM got, in order.
fn quota_records(s: &Seen) -> Vec<si18::EventRecord> {
    let quota = [
        ChangeDetail::AppCannotrunQuota as i32,
        ChangeDetail::AppRunnableQuota as i32,
    ];
    s.events
        .iter()
        .filter(|e| e.r#type == Type::App as i32 && quota.contains(&e.event_change_detail))
        .cloned()
        .collect()
}

#[test]
fn an_application_held_by_a_user_cap_gets_app_cannotrun_and_runnable_quota_records() {
    let rm = V1Rm::new();
    rm.ready_node("n1");
    rm.app("app-1");
    rm.allocate(vec![rmv1::ask("app-1", "k1", 100, 1)], vec![]);
    rm.rec.wait("app-1 allocated", |s| {
        s.new.iter().any(|a| a.allocation_key == "k1")
    });
    rm.app("app-2");
    rm.allocate(vec![rmv1::ask("app-2", "k2", 100, 1)], vec![]);
    rm.rec
        .wait("APP_CANNOTRUN_QUOTA", |s| !quota_records(s).is_empty());
    // Passes go on (a new request of app-1): no second record.
    rm.allocate(vec![rmv1::ask("app-1", "k1b", 100, 1)], vec![]);
    rm.rec.wait("app-1's second allocation", |s| {
        s.new.iter().any(|a| a.allocation_key == "k1b")
    });
    std::thread::sleep(Duration::from_millis(100));
    let held = quota_records(&rm.rec.copy());
    assert_eq!(held.len(), 1, "{held:?}");
    let e = &held[0];
    assert_eq!(e.object_id, "app-2");
    assert_eq!(
        (e.event_change_type, e.event_change_detail),
        (
            ChangeType::None as i32,
            ChangeDetail::AppCannotrunQuota as i32
        )
    );
    assert!(rm
        .rec
        .copy()
        .new
        .iter()
        .all(|a| a.application_id != "app-2"));
    // app-1 lets go of everything: app-2 may run, one record says so.
    rm.allocate(vec![], vec![rmv1::release("app-1", "")]);
    rm.rec.wait("app-2 allocated", |s| {
        s.new.iter().any(|a| a.allocation_key == "k2")
    });
    rm.rec
        .wait("APP_RUNNABLE_QUOTA", |s| quota_records(s).len() == 2);
    std::thread::sleep(Duration::from_millis(100));
    let all = quota_records(&rm.rec.copy());
    let details: Vec<i32> = all.iter().map(|e| e.event_change_detail).collect();
    assert_eq!(
        details,
        [
            ChangeDetail::AppCannotrunQuota as i32,
            ChangeDetail::AppRunnableQuota as i32
        ],
        "{all:?}"
    );
    assert!(all
        .iter()
        .all(|e| e.object_id == "app-2" && e.event_change_type == ChangeType::None as i32));
}
