//! User and group limits as an SI v1.x RM (the k8shim) sees them through
//! the v1 C family: the APP records of an application held in Accepted by
//! a user's `maxapplications` (limits.md 6.2) arrive with their change
//! type and detail, once per transition.

use std::time::Duration;

use crate::common::v1::{V1Rm, V1Seen};
use sicore::proto::si18::v1 as si18;
use sicore::proto::sicore::v1 as sicore_pb;
use sicore_c_rm::v1 as rmv1;

use si18::event_record::{ChangeDetail, ChangeType, Type};

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

/// A v1 RM registered with [`CONFIG`] on options that pass REQUEST, APP
/// and NODE records every 20 ms, with one node `n1` ready.
fn v1_rm() -> V1Rm {
    let options = sicore_pb::SchedulerOptions {
        event_flush_interval_ms: 20,
        scheduling_interval_ms: 10,
        event_types: vec!["REQUEST".into(), "APP".into(), "NODE".into()],
        ..Default::default()
    };
    let rm = V1Rm::with(options, CONFIG, false, |_| {});
    rm.node("n1", 1000);
    rm
}

/// The APP quota records the RM got, in order.
fn quota_records(s: &V1Seen) -> Vec<si18::EventRecord> {
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
    let rm = v1_rm();
    rm.app("app-1", "root.a");
    rm.allocate(vec![rmv1::ask("app-1", "k1", 100, 1)], vec![]);
    rm.rec.wait("app-1 allocated", |s| {
        s.new.iter().any(|a| a.allocation_key == "k1")
    });
    rm.app("app-2", "root.a");
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
