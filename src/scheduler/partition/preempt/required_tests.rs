//! Required-node preemption, the stale-reservation rule and the marks of
//! a leaving application, driven step by step on a manual clock
//! (`shared/spec/policy/preemption.md` 7.1, 12, 19 PE15, PE17, PE18).

use crate::scheduler::port::PredicateCheck;
use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::required::REASON_NO_VICTIM;
use crate::proto::si::v1 as si;
use crate::proto::si::v1::TerminationType;
use crate::scheduler::objects::application::TAG_REQUIRED_NODE;
use crate::scheduler::outcome::Outcomes;
use crate::scheduler::port::RmPort;
use crate::scheduler::request::AskRequest;
use crate::scheduler::testkit::{ask, res, Harness, Seen};

/// Leaves `a` (the victims) and `ds` (the DaemonSet pods), fifo; the
/// partition switch as `enabled`.
fn config(enabled: Option<bool>) -> String {
    let switch = match enabled {
        Some(v) => format!("    preemption: {{enabled: {v}}}\n"),
        None => String::new(),
    };
    format!(
        "partitions:
  - name: default
{switch}    queues:
      - name: root
        submitacl: '*'
        queues:
          - name: a
            properties: {{application.sort.policy: fifo}}
          - name: ds
            properties: {{application.sort.policy: fifo}}
"
    )
}

/// An ask pinned to `node`, tagged as the k8shim does.
fn pinned(app: &str, key: &str, memory: i64, node: &str) -> AskRequest {
    AskRequest {
        required_node: Some(node.to_string()),
        tags: crate::scheduler::tags::Tags::from(BTreeMap::from([(
            TAG_REQUIRED_NODE.to_string(),
            node.to_string(),
        )])),
        ..ask(app, key, memory, 1)
    }
}

/// Adds nodes `o1` and `o2` (memory 400, gpu 1 each) used entirely by
/// something outside the scheduler: room in the queues (root's max is the
/// nodes' capacity) and none on any node, so that an ask gets past its
/// queue headroom to the node it is pinned to.
fn ballast(h: &mut Harness) {
    for id in ["o1", "o2"] {
        let r = res(&[("memory", 400), ("gpu", 1)]).to_proto();
        let info = si::NodeInfo {
            node_id: id.into(),
            schedulable_resource: Some(r.clone()),
            occupied_resource: Some(r),
            ..Default::default()
        };
        h.p.add_node(&info, &mut Outcomes::default()).unwrap();
    }
}

/// `n1` (1000) filled by four allocations of 250 of `app-1` in `root.a`,
/// the ballast, and `app-ds` in `root.ds`.
fn full(enabled: Option<bool>) -> Harness {
    let mut h = Harness::new(&config(enabled));
    h.node("n1", 1000);
    h.app("app-1", "root.a");
    h.ask(ask("app-1", "a", 250, 4));
    assert_eq!(h.schedule().allocated.len(), 4);
    ballast(&mut h);
    h.app("app-ds", "root.ds");
    h
}

fn newest_of(h: &Harness, app: &str) -> String {
    h.uuids_of(app)
        .into_iter()
        .max_by_key(|u| h.p.allocations.born(h.p.allocations.slot_of(u).unwrap()))
        .unwrap()
        .to_string()
}

fn holder(h: &Harness, node: &str) -> Option<String> {
    let slot = h.p.nodes.slot_of(node)?;
    h.p.reservations.on_node(slot).map(|r| r.key.to_string())
}

fn no_victim_events(seen: &Seen) -> Vec<&si::EventRecord> {
    seen.events
        .iter()
        .filter(|e| e.reason == REASON_NO_VICTIM)
        .collect()
}

#[test]
fn a_pinned_ask_reserves_its_node_at_once_then_preempts_once_and_runs_there() {
    // PE17.
    let mut h = full(Some(true));
    let newest = newest_of(&h, "app-1");
    h.ask(pinned("app-ds", "ds", 250, "n1"));
    // Regular step: no reservation delay for a pinned ask.
    let seen = h.schedule();
    assert!(seen.preempted().is_empty() && seen.allocated.is_empty());
    assert_eq!(holder(&h, "n1").as_deref(), Some("ds"));
    // Reserved step: one victim, the newest, released for the DaemonSet ask.
    let seen = h.schedule();
    seen.assert_one_victim(
        &newest,
        "app-1",
        "a",
        "preempting allocations to free up resources to run daemon set ask: ds",
        "Preempted by ds from application app-ds in root.ds",
    );
    let a = h.p.queues.lookup("root.a").unwrap();
    assert_eq!(h.p.preempt.preempting[&a], res(&[("memory", 250)]));
    // The reserved step runs again: no second release.
    for _ in 0..3 {
        h.advance(Duration::from_secs(20));
        let seen = h.schedule();
        assert!(seen.preempted().is_empty() && seen.allocated.is_empty());
    }
    assert_eq!(h.p.preempt.counters.successes, 1);
    // The RM confirms; the ask runs on its node.
    h.release("app-1", &newest, TerminationType::PreemptedByScheduler);
    assert!(h.p.preempt.victims.is_empty() && h.p.preempt.preempting.is_empty());
    assert_eq!(
        h.schedule().placed(),
        [("ds".to_string(), "n1".to_string())]
    );
    assert!(h.p.reservations.is_empty());
    assert_eq!(
        h.p.queues.get(a).allocated,
        res(&[("memory", 750)]),
        "no allocation counted twice"
    );
}

#[test]
fn victims_are_lower_priority_first_then_newest_and_only_as_many_as_needed() {
    // PE18 in sicore's classes (every allocation is an ordinary one).
    let mut h = Harness::new(&config(Some(true)));
    h.node("n1", 70);
    h.app("app-1", "root.a");
    // In order of age: p-5 of 5, p0 of 10, a pinned allocation of 10,
    // p5 of 10, p0 of 20, p0 of 15 (newest).
    let steps: [(&str, i64, i32, bool); 6] = [
        ("old-low", 5, -5, false),
        ("p0-10", 10, 0, false),
        ("daemon", 10, 0, true),
        ("high", 10, 5, false),
        ("p0-20", 20, 0, false),
        ("p0-15", 15, 0, false),
    ];
    for (key, memory, priority, pin) in steps {
        let mut a = if pin {
            pinned("app-1", key, memory, "n1")
        } else {
            ask("app-1", key, memory, 1)
        };
        a.priority = priority;
        h.ask(a);
        assert_eq!(h.schedule().allocated.len(), 1, "{key}");
    }
    ballast(&mut h);
    let key_of = |h: &Harness, uuid: &str| h.p.allocations.get(uuid).unwrap().key.to_string();
    // Ask 25: old-low (5), then p0-15 (newest, 20 in all), then p0-20.
    h.app("app-ds", "root.ds");
    h.ask(pinned("app-ds", "ds", 25, "n1"));
    h.schedule();
    let seen = h.schedule();
    let keys: Vec<String> = seen.preempted().iter().map(|u| key_of(&h, u)).collect();
    assert_eq!(keys, ["old-low", "p0-15", "p0-20"]);

    // Ask 5 on a fresh copy: one victim.
    let mut h2 = Harness::new(&config(Some(true)));
    h2.node("n1", 20);
    h2.app("app-1", "root.a");
    h2.ask(ask("app-1", "x", 10, 2));
    h2.schedule();
    ballast(&mut h2);
    h2.app("app-ds", "root.ds");
    h2.ask(pinned("app-ds", "ds", 5, "n1"));
    h2.schedule();
    assert_eq!(h2.schedule().preempted().len(), 1);
}

#[test]
fn higher_priority_and_pinned_allocations_are_never_taken_and_the_failure_is_told_every_15s() {
    let mut h = Harness::new(&config(Some(true)));
    h.node("n1", 500);
    h.app("app-1", "root.a");
    let mut high = ask("app-1", "high", 250, 1);
    high.priority = 10;
    h.ask(high);
    h.ask(pinned("app-1", "daemon", 250, "n1"));
    assert_eq!(h.schedule().allocated.len(), 2);
    ballast(&mut h);
    h.app("app-ds", "root.ds");
    h.ask(pinned("app-ds", "ds", 250, "n1"));
    h.schedule(); // reserves
    let seen = h.schedule();
    assert!(seen.preempted().is_empty());
    let ev = no_victim_events(&seen);
    assert_eq!(ev.len(), 1);
    assert_eq!(ev[0].object_id, "ds");
    assert_eq!(ev[0].group_id, "app-ds");
    assert_eq!(
        ev[0].message,
        "Unschedulable request 'ds' with required node 'n1', no preemption victim found"
    );
    // Tried again each pass (not flagged), told at most once per 15 s.
    h.advance(Duration::from_secs(14));
    assert!(no_victim_events(&h.schedule()).is_empty());
    h.advance(Duration::from_secs(1));
    assert_eq!(no_victim_events(&h.schedule()).len(), 1);
    assert_eq!(h.p.preempt.counters.attempts, 3);
    assert_eq!(h.p.preempt.counters.successes, 0);

    // An ask needing a type no allocation holds: nothing.
    let mut h = Harness::new(&config(Some(true)));
    let info = si::NodeInfo {
        node_id: "n1".into(),
        schedulable_resource: Some(res(&[("memory", 500), ("gpu", 1)]).to_proto()),
        ..Default::default()
    };
    h.p.add_node(&info, &mut Outcomes::default()).unwrap();
    h.app("app-1", "root.a");
    h.ask(ask("app-1", "a", 250, 2));
    h.app("app-2", "root.a");
    let mut gpu = ask("app-2", "gpu", 0, 1);
    gpu.resource = Ok(res(&[("gpu", 1)]));
    gpu.priority = 10;
    h.ask(gpu);
    assert_eq!(h.schedule().allocated.len(), 3);
    ballast(&mut h);
    h.app("app-ds", "root.ds");
    let mut ds = pinned("app-ds", "ds", 100, "n1");
    ds.resource = Ok(res(&[("memory", 100), ("gpu", 1)]));
    h.ask(ds);
    h.schedule();
    let seen = h.schedule();
    assert!(seen.preempted().is_empty());
    assert_eq!(no_victim_events(&seen).len(), 1);
}

#[test]
fn a_pinned_ask_cancels_another_ask_s_reservation_on_its_node() {
    let mut h = full(Some(true));
    h.app("app-2", "root.a");
    h.ask(ask("app-2", "big", 500, 1));
    h.advance(Duration::from_secs(3));
    h.schedule();
    assert_eq!(holder(&h, "n1").as_deref(), Some("big"));
    h.ask(pinned("app-ds", "ds", 250, "n1"));
    h.schedule();
    assert_eq!(holder(&h, "n1").as_deref(), Some("ds"));
    assert_eq!(h.p.reservations.iter().count(), 1);
    assert_eq!(h.schedule().preempted().len(), 1);
}

#[test]
fn without_the_switch_a_pinned_ask_only_reserves_after_the_delay_and_never_preempts() {
    for enabled in [None, Some(false)] {
        let mut h = full(enabled);
        h.ask(pinned("app-ds", "ds", 250, "n1"));
        h.schedule();
        assert!(h.p.reservations.is_empty(), "{enabled:?}: delay first");
        h.advance(Duration::from_secs(3));
        h.schedule();
        assert_eq!(holder(&h, "n1").as_deref(), Some("ds"));
        for _ in 0..3 {
            h.advance(Duration::from_secs(60));
            assert!(h.schedule().preempted().is_empty(), "{enabled:?}");
        }
        assert_eq!(h.p.preempt.counters.attempts, 0);
    }
}

#[test]
fn a_reserved_pinned_ask_is_never_placed_on_another_node() {
    // With the switch off too: the reserved step tried other nodes for
    // any reservation, a pinned one included.
    let mut h = full(None);
    h.ask(pinned("app-ds", "ds", 250, "n1"));
    h.advance(Duration::from_secs(3));
    h.schedule();
    assert_eq!(holder(&h, "n1").as_deref(), Some("ds"));
    h.node("n2", 1000);
    let seen = h.schedule();
    assert!(seen.allocated.is_empty(), "{:?}", seen.placed());
    assert_eq!(holder(&h, "n1").as_deref(), Some("ds"));
}

/// Refuses `Predicates` on the listed nodes; records every call.
#[derive(Default)]
struct Refusing {
    refuse: Mutex<HashSet<String>>,
    calls: Mutex<Vec<(String, String, bool)>>,
}

impl RmPort for Refusing {
    fn predicates(&self, args: &PredicateCheck<'_>) -> Result<(), String> {
        self.calls.lock().unwrap().push((
            args.allocation_key.to_string(),
            args.node_id.to_string(),
            args.allocate,
        ));
        if self.refuse.lock().unwrap().contains(args.node_id) {
            Err("refused".into())
        } else {
            Ok(())
        }
    }
}

impl Refusing {
    fn checks_of(&self, key: &str) -> usize {
        self.calls
            .lock()
            .unwrap()
            .iter()
            .filter(|(k, _, allocate)| k == key && !allocate)
            .count()
    }
}

#[test]
fn a_node_the_rm_refuses_keeps_its_allocations_and_is_asked_again_after_15s() {
    let mut h = full(Some(true));
    h.ask(pinned("app-ds", "ds", 250, "n1"));
    let rm = Arc::new(Refusing::default());
    rm.refuse.lock().unwrap().insert("n1".into());
    h.schedule_with(&rm); // reserves
    assert_eq!(holder(&h, "n1").as_deref(), Some("ds"));
    // The v0.12 stand-in: Predicates{allocate: false} on the node, refused.
    let seen = h.schedule_with(&rm);
    assert!(seen.preempted().is_empty());
    assert_eq!(rm.checks_of("ds"), 1);
    assert_eq!(no_victim_events(&seen).len(), 1);
    assert!(!h.p.preempt.asks.values().any(|m| m.triggered));
    // Not asked again before 15 s.
    h.advance(Duration::from_secs(14));
    h.schedule_with(&rm);
    assert_eq!(rm.checks_of("ds"), 1);
    // The RM relents: the next check preempts.
    rm.refuse.lock().unwrap().clear();
    h.advance(Duration::from_secs(1));
    let seen = h.schedule_with(&rm);
    assert_eq!(rm.checks_of("ds"), 2);
    assert_eq!(seen.preempted().len(), 1);
}

/// `a` holds the node, `b` (guarantee 500) preempts, `c` holds a
/// reservation on the node (neither `a` nor `c` has a guarantee).
const STALE: &str = "partitions:
  - name: default
    preemption: {enabled: true}
    queues:
      - name: root
        submitacl: '*'
        queues:
          - name: a
            properties: {application.sort.policy: fifo}
          - name: b
            resources: {guaranteed: {memory: 500}}
            properties: {application.sort.policy: fifo}
          - name: c
            properties: {application.sort.policy: fifo}
";

/// `n1` (1000, half used outside the scheduler) full of `a`, reserved by
/// `c`'s ask (priority `blocker`), and `b`'s ask of priority 10 past its
/// delay; the queues have room, the node none.
fn blocked(blocker: i32) -> Harness {
    let mut h = Harness::new(STALE);
    let info = si::NodeInfo {
        node_id: "n1".into(),
        schedulable_resource: Some(res(&[("memory", 1000)]).to_proto()),
        occupied_resource: Some(res(&[("memory", 500)]).to_proto()),
        ..Default::default()
    };
    h.p.add_node(&info, &mut Outcomes::default()).unwrap();
    h.app("app-1", "root.a");
    h.ask(ask("app-1", "a", 250, 2));
    assert_eq!(h.schedule().allocated.len(), 2);
    h.app("app-3", "root.c");
    let mut c = ask("app-3", "c", 500, 1);
    c.priority = blocker;
    h.ask(c);
    h.advance(Duration::from_secs(3));
    h.schedule();
    assert_eq!(holder(&h, "n1").as_deref(), Some("c"));
    h.app("app-2", "root.b");
    let mut b = ask("app-2", "b", 250, 1);
    b.priority = 10;
    h.ask(b);
    h.advance(Duration::from_secs(31));
    h
}

/// Spec 16 Q19-17.
#[test]
fn a_preemptor_cancels_a_stale_lower_priority_reservation_and_takes_the_node() {
    // PE15: not old enough yet (the blocker is 34 s old).
    let mut h = blocked(0);
    assert!(h.schedule().preempted().is_empty());
    assert_eq!(holder(&h, "n1").as_deref(), Some("c"));
    // The reservation older than 60 min (YuniKorn v1.9; v1.8 wanted the
    // ask older than 2 × 60 min + 2 s, quirk Q4): cancelled, then
    // preempted.
    h.advance(Duration::from_secs(3600));
    let seen = h.schedule();
    assert_eq!(seen.preempted().len(), 1);
    assert_eq!(holder(&h, "n1").as_deref(), Some("b"));
    assert_eq!(h.p.reservations.iter().count(), 1);
}

/// Spec 16 Q19-17.
#[test]
fn a_reservation_of_equal_priority_or_of_a_pinned_ask_is_never_cancelled() {
    let mut h = blocked(10);
    h.advance(Duration::from_secs(3 * 3600));
    assert!(h.schedule().preempted().is_empty());
    assert_eq!(holder(&h, "n1").as_deref(), Some("c"));

    // A pinned ask's reservation (switch on: made at once), of priority
    // -5: it cannot preempt a's allocations (priority 0), b (10) can.
    let mut h = Harness::new(STALE);
    h.node("n1", 1000);
    h.app("app-1", "root.a");
    h.ask(ask("app-1", "a", 250, 4));
    h.schedule();
    ballast(&mut h);
    h.app("app-3", "root.c");
    let mut c = pinned("app-3", "c", 500, "n1");
    c.priority = -5;
    h.ask(c);
    h.schedule();
    assert_eq!(holder(&h, "n1").as_deref(), Some("c"));
    h.app("app-2", "root.b");
    let mut b = ask("app-2", "b", 250, 1);
    b.priority = 10;
    h.ask(b);
    h.advance(Duration::from_secs(3 * 3600));
    assert!(h.schedule().preempted().is_empty());
    assert_eq!(holder(&h, "n1").as_deref(), Some("c"));
}

#[test]
fn a_terminated_application_leaves_no_preemption_marks() {
    // Guarantee preemption marks b (triggered); b runs; its application
    // completes and terminates: its marks go with it.
    let yaml = "partitions:
  - name: default
    preemption: {enabled: true}
    queues:
      - name: root
        submitacl: '*'
        queues:
          - name: a
            resources: {guaranteed: {memory: 500}}
            properties: {application.sort.policy: fifo}
          - name: b
            resources: {guaranteed: {memory: 500}}
            properties: {application.sort.policy: fifo}
";
    let mut h = Harness::new(yaml);
    h.node("n1", 1000);
    h.app("app-1", "root.a");
    h.ask(ask("app-1", "a", 250, 4));
    h.schedule();
    h.app("app-2", "root.b");
    h.ask(ask("app-2", "b", 250, 1));
    h.advance(Duration::from_secs(31));
    let v = h.schedule().preempted()[0].clone();
    assert_eq!(h.p.preempt.asks.len(), 1);
    h.release("app-1", &v, TerminationType::PreemptedByScheduler);
    let b = h.schedule().allocated[0].uuid.to_string();
    // The RM stops b: app-2 has nothing left, completes and terminates.
    h.release("app-2", &b, TerminationType::StoppedByRm);
    h.advance(Duration::from_secs(3600));
    assert!(!h.p.apps.contains_key("app-2"), "app-2 terminated");
    assert_eq!(h.p.preempt.asks.len(), 0, "{:?}", h.p.preempt.asks);

    // And a pinned ask's failure marks, when the RM removes its application.
    let mut h = Harness::new(&config(Some(true)));
    h.node("n1", 500);
    h.app("app-1", "root.a");
    let mut high = ask("app-1", "h", 250, 2);
    high.priority = 5;
    h.ask(high);
    h.schedule();
    ballast(&mut h);
    h.app("app-ds", "root.ds");
    h.ask(pinned("app-ds", "ds", 250, "n1"));
    h.schedule();
    h.schedule();
    assert_eq!(h.p.preempt.asks.len(), 1);
    h.p.remove_application("app-ds", &mut Outcomes::default());
    assert_eq!(h.p.preempt.asks.len(), 0);
}

/// Spec 16 Q19-18.
#[test]
fn a_reservation_over_the_headroom_expires_after_the_reservation_wait() {
    // YuniKorn v1.9 (delta 7.1): c reserved n1; a reload lowers c's max
    // below its ask. The reservation stays for 60 min, then goes; the ask
    // stays pending and reserves nothing while it does not fit.
    let with_c_max = |m: i64| {
        STALE.replace(
            "          - name: c\n            properties",
            &format!("          - name: c\n            resources: {{max: {{memory: {m}}}}}\n            properties"),
        )
    };
    let mut h = Harness::new(&with_c_max(600));
    let info = si::NodeInfo {
        node_id: "n1".into(),
        schedulable_resource: Some(res(&[("memory", 1000)]).to_proto()),
        occupied_resource: Some(res(&[("memory", 500)]).to_proto()),
        ..Default::default()
    };
    h.p.add_node(&info, &mut Outcomes::default()).unwrap();
    h.app("app-1", "root.a");
    h.ask(ask("app-1", "a", 250, 2));
    assert_eq!(h.schedule().allocated.len(), 2);
    h.app("app-3", "root.c");
    h.ask(ask("app-3", "c", 500, 1));
    h.advance(Duration::from_secs(3));
    h.schedule();
    assert_eq!(holder(&h, "n1").as_deref(), Some("c"));
    let cfg = crate::config::parse(&with_c_max(400)).unwrap();
    h.p.reconfigure(&cfg.partitions[0]).unwrap();
    h.advance(Duration::from_secs(59 * 60));
    h.schedule();
    assert_eq!(holder(&h, "n1").as_deref(), Some("c"), "not yet");
    h.advance(Duration::from_secs(2 * 60));
    h.schedule();
    assert_eq!(holder(&h, "n1"), None);
    assert_eq!(h.p.apps["app-3"].asks["c"].pending_repeat(), 1);
    h.advance(Duration::from_secs(60));
    h.schedule();
    assert_eq!(holder(&h, "n1"), None);
}
