//! Guarantee preemption driven step by step on a manual clock
//! (`shared/spec/policy/preemption.md` 19): what the RM would observe.

use crate::scheduler::port::PredicateCheck;
use std::collections::HashSet;
use std::sync::Mutex;
use std::time::Duration;

use crate::proto::si::v1::TerminationType;
use crate::scheduler::outcome::OutMsg;
use crate::scheduler::port::RmPort;
use crate::scheduler::testkit::{ask, res, Harness};

/// Leaves `a` (guarantee 500) and `b` (guarantee 500) under `root`, fifo,
/// `extra` appended to b's properties; `enabled` the partition switch.
fn config(enabled: Option<bool>, a_props: &str, b_props: &str, more: &str) -> String {
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
            resources: {{guaranteed: {{memory: 500}}}}
            properties: {{application.sort.policy: fifo{a_props}}}
          - name: b
            resources: {{guaranteed: {{memory: 500}}}}
            properties: {{application.sort.policy: fifo{b_props}}}
{more}"
    )
}

/// One node of 1000 filled by four allocations of 250 of `app-1` in
/// `root.a`, then `app-2` in `root.b` asking 250.
fn full(yaml: &str) -> Harness {
    let mut h = Harness::new(yaml);
    h.node("n1", 1000);
    h.app("app-1", "root.a");
    h.ask(ask("app-1", "a", 250, 4));
    assert_eq!(h.schedule().allocated.len(), 4);
    h.app("app-2", "root.b");
    h.ask(ask("app-2", "b", 250, 1));
    h
}

#[test]
fn a_queue_below_its_guarantee_takes_the_newest_allocation_after_the_delay() {
    let mut h = full(&config(Some(true), "", "", ""));
    let newest = h.p.allocations.iter().max_by_key(|(_, a)| {
        h.p.allocations
            .born(h.p.allocations.slot_of(&a.uuid).unwrap())
    });
    let newest = newest.unwrap().0.to_string();
    // Before preemption.delay (30 s): nothing.
    assert!(h.schedule().preempted().is_empty());
    h.advance(Duration::from_secs(29));
    assert!(h.schedule().preempted().is_empty());
    h.advance(Duration::from_secs(2));
    let seen = h.schedule();
    assert!(seen.allocated.is_empty());
    // One victim, one REQUEST event on it (spec 15).
    seen.assert_one_victim(
        &newest,
        "app-1",
        "a",
        "preempting allocations to free up resources to run ask: b",
        "Preempted by b from application app-2 in root.b",
    );
    // The preemptor holds the node; the victim still counts until confirmed.
    let a = h.p.queues.lookup("root.a").unwrap();
    assert_eq!(h.p.preempt.preempting[&a], res(&[("memory", 250)]));
    assert_eq!(h.p.queues.get(a).allocated, res(&[("memory", 1000)]));
    assert_eq!(h.p.reservations.iter().count(), 1);
    // At most one successful preemption per request.
    h.advance(Duration::from_secs(60));
    let seen = h.schedule();
    assert!(seen.preempted().is_empty() && seen.allocated.is_empty());
    // The RM confirms; the next pass allocates the preemptor on the node.
    let seen = h.release("app-1", &newest, TerminationType::PreemptedByScheduler);
    assert!(h.p.preempt.preempting.is_empty());
    assert!(h.p.preempt.victims.is_empty());
    assert_eq!(h.p.queues.get(a).allocated, res(&[("memory", 750)]));
    drop(seen);
    let seen = h.schedule();
    assert_eq!(seen.placed(), [("b".to_string(), "n1".to_string())]);
    assert!(h.p.reservations.is_empty());
    assert_eq!(h.p.preempt.counters.successes, 1);
    assert_eq!(h.p.preempt.counters.victims, 1);
}

#[test]
fn the_switch_absent_is_off_in_the_v012_edition_and_off_when_false() {
    for enabled in [None, Some(false)] {
        let mut h = full(&config(enabled, "", "", ""));
        h.advance(Duration::from_secs(60));
        let seen = h.schedule();
        assert!(seen.preempted().is_empty(), "{enabled:?}");
        assert_eq!(h.p.preempt.counters.attempts, 0);
    }
    // The v1.8 edition: absent means on.
    let mut h = full(&config(None, "", "", ""));
    h.p.edition = crate::scheduler::edition::Edition::V1;
    h.advance(Duration::from_secs(60));
    assert_eq!(h.schedule().preempted().len(), 1);
}

#[test]
fn disabled_protects_a_leaf_and_a_fence_on_the_preemptor_path_limits_victims() {
    let mut h = full(&config(Some(true), ", preemption.policy: disabled", "", ""));
    h.advance(Duration::from_secs(60));
    assert!(h.schedule().preempted().is_empty());
    let mut h = full(&config(Some(true), "", ", preemption.policy: fence", ""));
    h.advance(Duration::from_secs(60));
    assert!(h.schedule().preempted().is_empty());
    // A fence off the preemptor's path restricts nothing.
    let mut h = full(&config(Some(true), ", preemption.policy: fence", "", ""));
    h.advance(Duration::from_secs(60));
    assert_eq!(h.schedule().preempted().len(), 1);
}

#[test]
fn the_delay_comes_from_the_leaf_and_no_guarantee_means_no_preemption() {
    let mut h = full(&config(Some(true), "", ", preemption.delay: 2s", ""));
    h.advance(Duration::from_secs(1));
    assert!(h.schedule().preempted().is_empty());
    h.advance(Duration::from_secs(1));
    assert_eq!(h.schedule().preempted().len(), 1);

    // Leaf c has no guarantee and root none: never (spec 5).
    let more = "          - name: c\n            properties: {application.sort.policy: fifo}\n";
    let mut h = Harness::new(&config(Some(true), "", "", more));
    h.node("n1", 1000);
    h.app("app-1", "root.a");
    h.ask(ask("app-1", "a", 250, 4));
    h.schedule();
    h.app("app-3", "root.c");
    h.ask(ask("app-3", "c", 250, 1));
    h.advance(Duration::from_secs(60));
    assert!(h.schedule().preempted().is_empty());
    assert_eq!(h.p.preempt.counters.attempts, 0);
}

#[test]
fn victims_come_only_from_leaves_above_their_guarantee() {
    // a: guarantee 500 using 600 (over); c: guarantee 400 using 400
    // (within). b asks 200: the newest of a, never c, although c's are newer.
    let more = "          - name: c
            resources: {guaranteed: {memory: 400}}
            properties: {application.sort.policy: fifo}
";
    let mut h = Harness::new(&config(Some(true), "", "", more));
    h.node("n1", 1000);
    h.app("app-1", "root.a");
    h.ask(ask("app-1", "a", 200, 3));
    h.schedule();
    h.app("app-3", "root.c");
    h.ask(ask("app-3", "c", 200, 2));
    assert_eq!(h.schedule().allocated.len(), 2);
    h.app("app-2", "root.b");
    h.ask(ask("app-2", "b", 200, 1));
    h.advance(Duration::from_secs(31));
    let seen = h.schedule();
    let victims = seen.preempted();
    assert_eq!(victims.len(), 1);
    assert_eq!(seen.released[0].application_id, "app-1");
    // a is now at 400 in flight: a second ask of b takes nothing more
    // from a (it would fall below its guarantee), nor from c.
    h.ask(ask("app-2", "b2", 200, 1));
    h.advance(Duration::from_secs(31));
    assert!(h.schedule().preempted().is_empty());
}

/// Refuses `Predicates` on the listed nodes; records every call.
#[derive(Default)]
struct Refusing {
    refuse: HashSet<String>,
    calls: Mutex<Vec<(String, bool)>>,
}

impl RmPort for Refusing {
    fn predicates(&self, args: &PredicateCheck<'_>) -> Result<(), String> {
        self.calls
            .lock()
            .unwrap()
            .push((args.node_id.to_string(), args.allocate));
        if self.refuse.contains(args.node_id) {
            Err("refused".into())
        } else {
            Ok(())
        }
    }
}

#[test]
fn a_node_the_rm_refuses_loses_nothing_and_the_next_node_is_used() {
    let mut h = Harness::new(&config(Some(true), "", "", ""));
    h.node("n1", 500);
    h.node("n2", 500);
    h.app("app-1", "root.a");
    h.ask(ask("app-1", "a", 250, 4));
    assert_eq!(h.schedule().allocated.len(), 4);
    let on_n2: Vec<String> =
        h.p.allocations
            .iter()
            .filter(|(_, a)| &*a.node == "n2")
            .map(|(u, _)| u.to_string())
            .collect();
    h.app("app-2", "root.b");
    h.ask(ask("app-2", "b", 250, 1));
    let rm = std::sync::Arc::new(Refusing {
        refuse: ["n1".to_string()].into(),
        ..Default::default()
    });
    // The ordinary reservation first (after its 2 s delay).
    h.advance(Duration::from_secs(3));
    assert!(h.schedule_with(&rm).preempted().is_empty());
    rm.calls.lock().unwrap().clear();
    h.advance(Duration::from_secs(28));
    let seen = h.schedule_with(&rm);
    let victims = seen.preempted();
    assert_eq!(victims.len(), 1);
    assert!(on_n2.contains(&victims[0]), "{victims:?} not on n2");
    // The stand-in checks: allocate false, n1 first (check order), then n2.
    let checks: Vec<(String, bool)> = rm
        .calls
        .lock()
        .unwrap()
        .iter()
        .filter(|(_, allocate)| !allocate)
        .cloned()
        .collect();
    assert_eq!(
        checks,
        [("n1".to_string(), false), ("n2".to_string(), false)]
    );
    let n2 = h.p.nodes.slot_of("n2").unwrap();
    assert!(h.p.reservations.on_node(n2).is_some());
}

#[test]
fn a_refused_attempt_waits_15_seconds_before_the_next() {
    let mut h = full(&config(Some(true), "", "", ""));
    h.advance(Duration::from_secs(31));
    let rm = std::sync::Arc::new(Refusing {
        refuse: ["n1".to_string()].into(),
        ..Default::default()
    });
    assert!(h.schedule_with(&rm).preempted().is_empty());
    assert_eq!(h.p.preempt.counters.attempts, 1);
    h.advance(Duration::from_secs(14));
    h.schedule_with(&rm);
    assert_eq!(h.p.preempt.counters.attempts, 1);
    h.advance(Duration::from_secs(1));
    h.schedule_with(&rm);
    assert_eq!(h.p.preempt.counters.attempts, 2);
    // The RM relents: preemption happens on the next due attempt.
    let ok = std::sync::Arc::new(Refusing::default());
    h.advance(Duration::from_secs(15));
    assert_eq!(h.schedule_with(&ok).preempted().len(), 1);
    // Every attempt has exactly one outcome.
    let c = h.p.preempt.counters;
    assert_eq!(
        (c.attempts, c.rm_refused, c.successes, c.victims),
        (3, 2, 1, 1)
    );
    assert_eq!(
        c.guarantee_check_failed + c.no_candidate_node + c.short_of_resources,
        0
    );
}

#[test]
fn each_attempt_counts_one_outcome() {
    // No victim at all (the only leaf above its guarantee is disabled).
    let mut h = full(&config(Some(true), ", preemption.policy: disabled", "", ""));
    h.advance(Duration::from_secs(60));
    assert!(h.schedule().preempted().is_empty());
    let c = h.p.preempt.counters;
    assert_eq!((c.attempts, c.guarantee_check_failed), (1, 1), "{c:?}");
    // Victims exist but no node can hold the ask: nothing to ask the RM.
    let mut h = full(&config(Some(true), "", "", ""));
    h.app("app-3", "root.b");
    h.ask(ask("app-3", "big", 1500, 1));
    h.p.preempt.asks.clear();
    h.advance(Duration::from_secs(60));
    let seen = h.schedule();
    assert_eq!(seen.preempted().len(), 1, "the 250 ask still preempts");
    let c = h.p.preempt.counters;
    assert_eq!(
        c.attempts,
        c.successes + c.guarantee_check_failed + c.no_candidate_node,
        "{c:?}"
    );
    assert_eq!(c.successes, 1, "{c:?}");
    assert_eq!(c.victims, 1, "{c:?}");
}

#[test]
fn a_second_preemptor_in_the_same_pass_sees_the_first_ones_reservation() {
    let mut h = full(&config(Some(true), "", "", ""));
    h.ask(ask("app-2", "b2", 250, 1));
    h.advance(Duration::from_secs(31));
    let seen = h.schedule();
    let victims = seen.preempted();
    // Both fit b's guarantee (500): two distinct victims, one node
    // reservation (the second preemptor finds n1 reserved: none).
    assert_eq!(victims.len(), 1, "{victims:?}");
    let set: HashSet<&String> = victims.iter().collect();
    assert_eq!(set.len(), victims.len());
}

#[test]
fn a_queue_without_room_in_its_max_preempts_a_sibling() {
    // T1: parent p (max 1000) with leaves x (guarantee 500) and y
    // (guarantee 500); x uses the whole max on a large node.
    let yaml = "partitions:
  - name: default
    preemption: {enabled: true}
    queues:
      - name: root
        submitacl: '*'
        queues:
          - name: p
            resources: {max: {memory: 1000}}
            queues:
              - name: x
                resources: {guaranteed: {memory: 500}}
                properties: {application.sort.policy: fifo}
              - name: y
                resources: {guaranteed: {memory: 500}}
                properties: {application.sort.policy: fifo}
";
    let mut h = Harness::new(yaml);
    h.node("n1", 5000);
    h.app("app-1", "root.p.x");
    h.ask(ask("app-1", "x", 250, 4));
    assert_eq!(h.schedule().allocated.len(), 4);
    h.app("app-2", "root.p.y");
    h.ask(ask("app-2", "y", 250, 1));
    h.advance(Duration::from_secs(31));
    let seen = h.schedule();
    assert_eq!(seen.preempted().len(), 1);
    let uuid = seen.preempted()[0].clone();
    h.release("app-1", &uuid, TerminationType::PreemptedByScheduler);
    assert_eq!(h.schedule().placed(), [("y".to_string(), "n1".to_string())]);
}

#[test]
fn a_victim_of_higher_priority_than_the_preemptor_is_never_taken() {
    // PE10: a's first two allocations have priority 1000, the last two 0;
    // b (priority 0) takes one of the priority-0 ones only.
    let mut h = Harness::new(&config(Some(true), "", "", ""));
    h.node("n1", 1000);
    h.app("app-1", "root.a");
    let mut high = ask("app-1", "high", 250, 2);
    high.priority = 1000;
    h.ask(high);
    h.ask(ask("app-1", "low", 250, 2));
    assert_eq!(h.schedule().allocated.len(), 4);
    h.app("app-2", "root.b");
    h.ask(ask("app-2", "b", 250, 1));
    h.advance(Duration::from_secs(31));
    let seen = h.schedule();
    assert_eq!(seen.preempted().len(), 1);
    assert_eq!(
        seen.events
            .iter()
            .find(|e| e.reason == "Preempted")
            .unwrap()
            .object_id,
        "low"
    );

    // Only priority-1000 allocations: nothing to take.
    let mut h = Harness::new(&config(Some(true), "", "", ""));
    h.node("n1", 1000);
    h.app("app-1", "root.a");
    let mut high = ask("app-1", "high", 250, 4);
    high.priority = 1000;
    h.ask(high);
    h.schedule();
    h.app("app-2", "root.b");
    h.ask(ask("app-2", "b", 250, 1));
    h.advance(Duration::from_secs(31));
    assert!(h.schedule().preempted().is_empty());
}

/// Spec 16 Q19-16.
#[test]
fn a_full_parent_on_the_preemptor_path_is_the_fence_root() {
    // PE12: p1 (max 500) holds x (protected by `disabled`) and the
    // preemptor's leaf y; p1 is exactly at its max, so victims are looked
    // for only below p1: none. Leaf q outside p1 is above its guarantee
    // but out of reach (taking from it would not make room in p1).
    let yaml = "partitions:
  - name: default
    preemption: {enabled: true}
    queues:
      - name: root
        submitacl: '*'
        queues:
          - name: p1
            resources: {max: {memory: 500}}
            queues:
              - name: y
                resources: {guaranteed: {memory: 250}}
                properties: {application.sort.policy: fifo}
              - name: x
                resources: {guaranteed: {memory: 250}}
                properties: {application.sort.policy: fifo, preemption.policy: disabled}
          - name: q
            resources: {guaranteed: {memory: 100}}
            properties: {application.sort.policy: fifo}
";
    let mut h = Harness::new(yaml);
    h.node("n1", 1000);
    h.app("app-x", "root.p1.x");
    h.ask(ask("app-x", "x", 250, 2));
    h.app("app-q", "root.q");
    h.ask(ask("app-q", "q", 250, 2));
    assert_eq!(h.schedule().allocated.len(), 4);
    h.app("app-y", "root.p1.y");
    h.ask(ask("app-y", "y", 250, 1));
    h.advance(Duration::from_secs(31));
    assert!(h.schedule().preempted().is_empty());
}

#[test]
fn a_victim_stopped_by_the_rm_or_a_preemptor_removed_leaves_the_books_clean() {
    // The RM stops the victim itself (STOPPED_BY_RM) before confirming:
    // it stops counting as preempting, and the preemptor is allocated.
    let mut h = full(&config(Some(true), "", "", ""));
    h.advance(Duration::from_secs(31));
    let v = h.schedule().preempted()[0].clone();
    let seen = h.release("app-1", &v, TerminationType::StoppedByRm);
    assert_eq!(seen.released.len(), 1, "echoed as any RM release");
    assert!(h.p.preempt.victims.is_empty() && h.p.preempt.preempting.is_empty());
    assert_eq!(h.schedule().placed(), [("b".to_string(), "n1".to_string())]);

    // The preemptor's application leaves while its victim is in flight:
    // its reservation goes, the release stands, the confirmation clears it.
    let mut h = full(&config(Some(true), "", "", ""));
    h.advance(Duration::from_secs(31));
    let v = h.schedule().preempted()[0].clone();
    let mut out = crate::scheduler::outcome::Outcomes::default();
    h.p.remove_application("app-2", &mut out);
    assert!(h.p.reservations.is_empty());
    assert_eq!(h.p.preempt.victims.len(), 1);
    h.release("app-1", &v, TerminationType::PreemptedByScheduler);
    assert!(h.p.preempt.victims.is_empty() && h.p.preempt.preempting.is_empty());
    let a = h.p.queues.lookup("root.a").unwrap();
    assert_eq!(h.p.queues.get(a).allocated, res(&[("memory", 750)]));
}

/// Records, in order, what the barrier delivers and what is asked.
#[derive(Default)]
struct Ordered {
    log: Mutex<Vec<String>>,
}

impl RmPort for Ordered {
    fn predicates(&self, args: &PredicateCheck<'_>) -> Result<(), String> {
        self.log.lock().unwrap().push(format!(
            "predicates {} {} {}",
            args.allocation_key, args.node_id, args.allocate
        ));
        Ok(())
    }

    fn assume(
        &self,
        allocations: &[std::sync::Arc<crate::scheduler::outcome::NewAllocation>],
    ) -> Result<(), String> {
        for a in allocations {
            self.log.lock().unwrap().push(format!("assume {}", a.key));
        }
        Ok(())
    }
}

#[test]
fn the_rm_hears_of_the_pass_s_allocations_before_the_preemption_check() {
    let mut h = full(&config(Some(true), "", "", ""));
    h.node("n2", 250);
    // b waited past the delay; b1 (higher priority) arrives now and fits n2.
    h.advance(Duration::from_secs(31));
    let mut b1 = ask("app-2", "b1", 250, 1);
    b1.priority = 10;
    h.ask(b1);
    let rm = std::sync::Arc::new(Ordered::default());
    let seen = h.schedule_with(&rm);
    assert_eq!(seen.placed(), [("b1".to_string(), "n2".to_string())]);
    assert_eq!(seen.preempted().len(), 1);
    let log = rm.log.lock().unwrap();
    let assumed = log
        .iter()
        .position(|l| l == "assume b1")
        .expect("b1 assumed");
    let check = log
        .iter()
        .position(|l| l == "predicates b n1 false")
        .expect("the stand-in check");
    assert!(assumed < check, "{log:?}");
}

/// An SI v1.x RM with `PreemptionPredicates` and no `Predicates` (the
/// k8shim without its plugins): records, in order, each allocation it
/// learns of (`new` in one delivery, or `assume` ahead of its
/// announcement) and each check it is asked.
#[derive(Default)]
struct ChecksOnly {
    log: Mutex<Vec<String>>,
}

impl RmPort for ChecksOnly {
    fn deliver(&self, msg: &OutMsg) -> Result<(), String> {
        // A batch announced after an `assume` was learnt from the assume.
        if let OutMsg::NewAllocations(v) = msg {
            for a in v {
                self.log.lock().unwrap().push(format!("new {}", a.key));
            }
        }
        Ok(())
    }

    fn assume(
        &self,
        allocations: &[std::sync::Arc<crate::scheduler::outcome::NewAllocation>],
    ) -> Result<(), String> {
        for a in allocations {
            self.log.lock().unwrap().push(format!("assume {}", a.key));
        }
        Ok(())
    }

    fn has_predicates(&self) -> bool {
        false
    }

    fn preemption_predicates(
        &self,
        ask: &str,
        node: &str,
        _victims: &[String],
        start_index: i32,
    ) -> Option<Option<i32>> {
        self.log.lock().unwrap().push(format!("check {ask} {node}"));
        Some(Some(start_index))
    }

    fn has_preemption_predicates(&self) -> bool {
        true
    }
}

#[test]
fn a_checks_only_rm_hears_of_the_pass_s_allocations_before_its_check() {
    // Nothing waits past its delay: the barrier stays dormant, and the
    // allocations go as one plain batch (no `assume`, as without a
    // barrier).
    let mut h = full(&config(Some(true), "", "", ""));
    h.node("n2", 100);
    h.ask(ask("app-1", "a0", 100, 1));
    let rm = std::sync::Arc::new(ChecksOnly::default());
    let seen = h.schedule_with(&rm);
    assert_eq!(seen.placed(), [("a0".to_string(), "n2".to_string())]);
    assert_eq!(*rm.log.lock().unwrap(), ["new a0"]);
    assert!(seen.preempted().is_empty());

    // b waited past the delay; b1 (higher priority) arrives now and fits
    // a new node. One pass places b1, then asks the check for b: the RM
    // knew b1 by then, and learns of it once.
    h.advance(Duration::from_secs(31));
    h.node("n3", 250);
    let mut b1 = ask("app-2", "b1", 100, 1);
    b1.priority = 10;
    h.ask(b1);
    rm.log.lock().unwrap().clear();
    let seen = h.schedule_with(&rm);
    assert_eq!(seen.placed(), [("b1".to_string(), "n3".to_string())]);
    assert_eq!(seen.preempted().len(), 1);
    assert_eq!(*rm.log.lock().unwrap(), ["new b1", "check b n1"]);
}

/// Spec 16 Q19-16.
#[test]
fn a_parent_the_ask_would_push_past_its_max_is_the_fence_root() {
    // YuniKorn v1.9 (delta 6.1): p1 (max 600) holds 500 and the ask of 250
    // would take it to 750: victims are looked for only below p1 (none:
    // x is protected), although p1 is not exactly at its max, where v1.8
    // would have taken from q. A max whose types the ask and the usage do
    // not have fences nothing: with p1's max in vcore only, q gives way.
    let yaml = |max: &str| {
        format!(
            "partitions:
  - name: default
    preemption: {{enabled: true}}
    queues:
      - name: root
        submitacl: '*'
        queues:
          - name: p1
            resources: {{max: {max}}}
            queues:
              - name: y
                resources: {{guaranteed: {{memory: 250}}}}
                properties: {{application.sort.policy: fifo}}
              - name: x
                resources: {{guaranteed: {{memory: 250}}}}
                properties: {{application.sort.policy: fifo, preemption.policy: disabled}}
          - name: q
            resources: {{guaranteed: {{memory: 100}}}}
            properties: {{application.sort.policy: fifo}}
"
        )
    };
    for (max, victims) in [("{memory: 600}", 0), ("{vcore: 5}", 1)] {
        let mut h = Harness::new(&yaml(max));
        h.node("n1", 1000);
        h.app("app-x", "root.p1.x");
        h.ask(ask("app-x", "x", 250, 2));
        h.app("app-q", "root.q");
        h.ask(ask("app-q", "q", 250, 2));
        assert_eq!(h.schedule().allocated.len(), 4);
        h.app("app-y", "root.p1.y");
        h.ask(ask("app-y", "y", 250, 1));
        h.advance(Duration::from_secs(31));
        assert_eq!(h.schedule().preempted().len(), victims, "max {max}");
    }
}
