//! User, group and queue `maxapplications` through the application state
//! machine, step by step (limits.md 4.1, spec 6.3): an application held by a
//! cap whose requests all go moves on to `Completing`, and a new request
//! then moves it to `Running` without any allocation. The cap must still
//! hold it back.

use std::time::Duration;

use crate::proto::si::v1 as si;
use crate::scheduler::edition::Edition;
use crate::scheduler::testkit::{ask, Harness};

/// One leaf `a` with `limits` (YAML list items, may be empty) and queue
/// properties `extra` (YAML lines of the leaf, may be empty).
fn config(limits: &str, extra: &str) -> String {
    let mut s = String::from(
        "partitions:
  - name: default
    queues:
      - name: root
        submitacl: '*'
        queues:
          - name: a
            properties: {application.sort.policy: fifo}
",
    );
    for l in extra.lines() {
        s.push_str("            ");
        s.push_str(l);
        s.push('\n');
    }
    if !limits.is_empty() {
        s.push_str("            limits:\n");
        for l in limits.lines() {
            s.push_str("              ");
            s.push_str(l);
            s.push('\n');
        }
    }
    s
}

/// Application `id` in `root.a` of user `alice` in group `dev`.
fn submit(h: &mut Harness, id: &str) {
    h.app_with(si::AddApplicationRequest {
        application_id: id.into(),
        queue_name: "root.a".into(),
        partition_name: "default".into(),
        ugi: Some(si::UserGroupInformation {
            user: "alice".into(),
            groups: vec!["dev".into()],
        }),
        ..Default::default()
    });
}

fn allocated_to(seen: &crate::scheduler::testkit::Seen, app: &str) -> usize {
    seen.allocated.iter().filter(|a| &**a.app() == app).count()
}

/// app-1 runs; app-2 is held by the cap, loses its request (Completing),
/// asks again (Running): it must get nothing while app-1 runs, and run
/// once app-1 is done.
fn completing_then_running_keeps_the_cap(limits: &str, extra: &str, edition: Edition) {
    let mut h = Harness::new(&config(limits, extra));
    h.p.edition = edition;
    h.node("n1", 1000);
    submit(&mut h, "app-1");
    h.ask(ask("app-1", "k1", 10, 1));
    assert_eq!(allocated_to(&h.schedule(), "app-1"), 1, "{limits}{extra}");
    submit(&mut h, "app-2");
    h.ask(ask("app-2", "k2", 10, 1));
    assert_eq!(
        h.schedule().allocated.len(),
        0,
        "app-2 held: {limits}{extra}"
    );
    assert_eq!(h.p.apps["app-2"].state.as_str(), "Accepted");

    let seen = h.release_ask("app-2", "k2");
    assert_eq!(seen.states_of("app-2"), ["Completing"]);
    let seen = h.ask(ask("app-2", "k3", 10, 1));
    assert_eq!(seen.states_of("app-2"), ["Running"]);
    for _ in 0..3 {
        let seen = h.schedule();
        assert_eq!(
            allocated_to(&seen, "app-2"),
            0,
            "a second running application for alice: {limits}{extra} {edition:?}"
        );
    }
    if !limits.is_empty() {
        assert!(
            h.p.ugm.held.contains(&h.p.apps["app-2"].seq),
            "app-2 is held by the limits"
        );
        let user = h.p.ugm.users.get("alice").expect("alice tracked");
        assert!(user.levels().all(|l| l.running <= 1), "{user:?}");
    }

    // app-1 finishes: the slot is app-2's. (A user's or group's slot goes
    // with app-1's last allocation; the queue's when app-1 is Completed.)
    let uuid = h.uuids_of("app-1")[0].to_string();
    h.release("app-1", &uuid, si::TerminationType::StoppedByRm);
    if limits.is_empty() {
        assert_eq!(h.schedule().allocated.len(), 0, "app-1 is Completing");
        let seen = h.advance(Duration::from_secs(31));
        assert_eq!(seen.states_of("app-1"), ["Completed"]);
    }
    assert_eq!(allocated_to(&h.schedule(), "app-2"), 1, "{limits}{extra}");
}

#[test]
fn a_user_cap_holds_an_application_that_came_back_from_completing() {
    for edition in [Edition::V012, Edition::V1] {
        completing_then_running_keeps_the_cap(
            "- {users: [alice], maxapplications: 1}\n",
            "",
            edition,
        );
        completing_then_running_keeps_the_cap(
            "- {users: ['*'], maxapplications: 1}\n",
            "",
            edition,
        );
    }
}

#[test]
fn a_group_cap_holds_an_application_that_came_back_from_completing() {
    for edition in [Edition::V012, Edition::V1] {
        completing_then_running_keeps_the_cap(
            "- {groups: [dev], maxapplications: 1}\n",
            "",
            edition,
        );
    }
}

#[test]
fn a_queue_cap_holds_an_application_that_came_back_from_completing() {
    for edition in [Edition::V012, Edition::V1] {
        completing_then_running_keeps_the_cap("", "maxapplications: 1\n", edition);
    }
}

#[test]
fn an_application_whose_slot_went_waits_for_one_when_it_asks_again() {
    // app-1 finishes its work (Completing: its user slot goes), app-2 takes
    // the slot, then app-1 asks again (Running): it waits for a slot.
    for edition in [Edition::V012, Edition::V1] {
        let mut h = Harness::new(&config("- {users: [alice], maxapplications: 1}\n", ""));
        h.p.edition = edition;
        h.node("n1", 1000);
        submit(&mut h, "app-1");
        h.ask(ask("app-1", "k1", 10, 1));
        assert_eq!(allocated_to(&h.schedule(), "app-1"), 1);
        submit(&mut h, "app-2");
        h.ask(ask("app-2", "k2", 10, 1));
        assert_eq!(h.schedule().allocated.len(), 0, "app-2 held");
        let uuid = h.uuids_of("app-1")[0].to_string();
        let seen = h.release("app-1", &uuid, si::TerminationType::StoppedByRm);
        assert_eq!(seen.states_of("app-1"), ["Completing"]);
        assert_eq!(allocated_to(&h.schedule(), "app-2"), 1, "{edition:?}");
        let seen = h.ask(ask("app-1", "k3", 10, 1));
        assert_eq!(seen.states_of("app-1"), ["Running"]);
        assert_eq!(h.schedule().allocated.len(), 0, "{edition:?}");
        assert!(h.p.ugm.held.contains(&h.p.apps["app-1"].seq));
        // app-2 is done: app-1 runs again.
        let uuid = h.uuids_of("app-2")[0].to_string();
        h.release("app-2", &uuid, si::TerminationType::StoppedByRm);
        assert_eq!(allocated_to(&h.schedule(), "app-1"), 1, "{edition:?}");
        assert!(!h.p.ugm.held.contains(&h.p.apps["app-1"].seq));
    }
}

/// The REQUEST records of `seen` about the user quota, as (key, reason).
fn quota_records(seen: &crate::scheduler::testkit::Seen) -> Vec<(String, String)> {
    seen.events
        .iter()
        .filter(|e| e.reason.starts_with("UserQuota"))
        .map(|e| (e.object_id.clone(), e.reason.clone()))
        .collect()
}

#[test]
fn a_removed_request_takes_its_user_quota_state_with_it() {
    // limits.md 6.1: an ask over the user's headroom is recorded once as
    // "user quota failed"; when the RM takes it back, the state goes.
    let mut h = Harness::new(&config(
        "- {users: [alice], maxresources: {memory: 5}}\n",
        "",
    ));
    h.node("n1", 1000);
    submit(&mut h, "app-1");
    h.ask(ask("app-1", "big", 10, 1));
    let seen = h.schedule();
    assert_eq!(
        quota_records(&seen),
        [("big".to_string(), "UserQuotaExceeded".to_string())]
    );
    assert_eq!(h.p.ugm.quota_failed.len(), 1);
    h.release_ask("app-1", "big");
    assert!(h.p.ugm.quota_failed.is_empty(), "freed with the ask");
    // A new request with the same key that fits is a new request: no
    // "fits again" for one that never failed.
    h.ask(ask("app-1", "big", 1, 1));
    let seen = h.schedule();
    assert_eq!(allocated_to(&seen, "app-1"), 1);
    assert_eq!(quota_records(&seen), []);
    // One that does not fit is told once, as a new request.
    h.ask(ask("app-1", "other", 10, 1));
    assert_eq!(
        quota_records(&h.schedule()),
        [("other".to_string(), "UserQuotaExceeded".to_string())]
    );
    h.release_ask("app-1", "other");
    h.ask(ask("app-1", "other", 10, 1));
    assert_eq!(
        quota_records(&h.schedule()),
        [("other".to_string(), "UserQuotaExceeded".to_string())]
    );
    assert_eq!(h.p.ugm.quota_failed.len(), 1);
}

#[test]
fn node_records_carry_the_capacity_for_si_v1() {
    // NODE ADD and capacity records: the v0.12 record names the partition
    // as before; the SI v1.x part is the node's capacity.
    let mut h = Harness::new(&config("", ""));
    let seen = h.node("n1", 1000);
    let added: Vec<_> = seen
        .records
        .iter()
        .filter(|r| r.base.reason == "NodeAdded")
        .collect();
    assert_eq!(added.len(), 1);
    assert_eq!(added[0].base.object_id, "n1");
    assert_eq!(added[0].base.group_id, "default");
    let cap = added[0].v1_resource.as_ref().expect("capacity");
    assert_eq!(cap.resources["memory"].value, 1000);
    let update = si::NodeInfo {
        node_id: "n1".into(),
        action: si::node_info::ActionFromRm::Update as i32,
        schedulable_resource: Some(crate::scheduler::testkit::res(&[("memory", 500)]).to_proto()),
        ..Default::default()
    };
    let mut out = crate::scheduler::outcome::Outcomes::default();
    h.p.update_node(&update, &mut out).expect("update accepted");
    let updated: Vec<_> = out
        .events
        .iter()
        .filter(|r| r.base.reason == "NodeUpdated")
        .collect();
    assert_eq!(updated.len(), 1);
    assert_eq!(
        updated[0].v1_resource.as_ref().unwrap().resources["memory"].value,
        500
    );
}
