//! A gang of an SI v1 RM keeps its first deadline across a scheduler
//! restart: the `yunikorn.apache.org/creationTime` tag (Unix seconds, set
//! by the k8shim from the pod) shortens the placeholder timeout to what is
//! left of it, as the YuniKorn v1.x core does.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::common::v1::{V1Rm, V1Seen};
use sicore::proto::si18::v1 as si18;
use sicore_c_rm::v1 as rmv1;

const CONFIG: &str = "
partitions:
  - name: default
    queues:
      - name: root
        submitacl: '*'
        queues:
          - name: a
";

fn now_s() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// A gang application of two placeholders of 100 with a 60 s timeout,
/// created `age_s` seconds ago (no tag when `None`), its placeholders
/// asked and placed.
fn gang(age_s: Option<i64>) -> V1Rm {
    let rm = V1Rm::new(CONFIG);
    rm.node("n1", 1000);
    let mut app = rmv1::app("g", "root.a", "alice");
    app.placeholder_ask = Some(si18::Resource {
        resources: [("memory".to_string(), si18::Quantity { value: 200 })].into(),
    });
    app.gang_scheduling_style = "Soft".into();
    app.execution_timeout_milli_seconds = 60_000;
    if let Some(age) = age_s {
        app.tags.insert(
            "yunikorn.apache.org/creationTime".into(),
            (now_s() - age).to_string(),
        );
    }
    let (st, msg) = rm.apps(vec![app]);
    assert_eq!(st, sicore::ffi::sicore_status::SICORE_OK, "{msg}");
    rm.rec
        .wait("app accepted", |s| s.apps_accepted.iter().any(|a| a == "g"));
    let placeholders = (0..2)
        .map(|i| {
            let mut a = rmv1::ask("g", &format!("ph-{i}"), 100, 0);
            a.placeholder = true;
            a.task_group_name = "tg".into();
            a
        })
        .collect();
    rm.allocate(placeholders, vec![]);
    rm.rec.wait("placeholders placed", |s| s.new.len() == 2);
    rm
}

fn timed_out(s: &V1Seen) -> usize {
    s.released
        .iter()
        .filter(|r| r.termination_type == si18::TerminationType::Timeout as i32)
        .count()
}

#[test]
fn a_gang_created_before_a_restart_times_out_at_its_first_deadline() {
    // Created 59 s ago: about a second of its 60 s is left.
    let rm = gang(Some(59));
    let s = rm
        .rec
        .wait("placeholders released on timeout", |s| timed_out(s) == 2);
    assert!(s.released.iter().all(|r| r.application_id == "g"));
    // Past its deadline altogether: released at once.
    let rm = gang(Some(3600));
    rm.rec
        .wait("placeholders released at once", |s| timed_out(s) == 2);
}

#[test]
fn a_fresh_gang_keeps_its_whole_timeout() {
    for age in [None, Some(0)] {
        let rm = gang(age);
        std::thread::sleep(Duration::from_millis(1500));
        rm.settle();
        assert_eq!(timed_out(&rm.rec.copy()), 0, "creation age {age:?}");
    }
}
