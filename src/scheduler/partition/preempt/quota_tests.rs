//! Quota-change preemption driven step by step on a manual clock
//! (`shared/spec/policy/preemption.md` 13, 19 PE21): what the RM would
//! observe after a reload lowers a max.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use crate::proto::si::v1::TerminationType;
use crate::scheduler::objects::application::TAG_REQUIRED_NODE;
use crate::scheduler::testkit::{ask, Harness, Seen};

/// `root.p` (max `p_max`) holding leaves `a` and `b`; `a_extra` and
/// `b_extra` are extra lines of each leaf (resources, properties).
fn config(switch: &str, p_max: &str, a_extra: &str, b_extra: &str) -> String {
    format!(
        "partitions:
  - name: default
{switch}    queues:
      - name: root
        submitacl: '*'
        queues:
          - name: p
            {p_max}
            queues:
              - name: a
                properties: {{application.sort.policy: fifo, preemption.quota.delay: 5s}}
                {a_extra}
              - name: b
                properties: {{application.sort.policy: fifo}}
                {b_extra}
"
    )
}

const ON: &str = "    preemption: {quotapreemptionenabled: true}\n";

fn reload(h: &mut Harness, yaml: &str) {
    let cfg = crate::config::parse(yaml).expect("valid configuration");
    h.p.reconfigure(&cfg.partitions[0]).expect("reload applies");
}

fn allocated(h: &Harness, path: &str) -> i64 {
    let q = h.p.queues.lookup(path).unwrap();
    h.p.queues
        .get(q)
        .allocated
        .get(crate::scheduler::resource::intern("memory").unwrap())
}

/// `app-1` in `root.p.a` holding `n` allocations of `size`, the newest
/// last in the returned UUIDs.
fn filled(yaml: &str, n: i32, size: i64) -> (Harness, Vec<Arc<str>>) {
    let mut h = Harness::new(yaml);
    h.node("n1", 1000);
    h.app("app-1", "root.p.a");
    let mut uuids = Vec::new();
    for i in 0..n {
        h.ask(ask("app-1", &format!("a{i}"), size, 1));
        let seen = h.schedule();
        assert_eq!(seen.allocated.len(), 1);
        uuids.push(Arc::from(seen.allocated[0].uuid.to_string()));
    }
    (h, uuids)
}

#[test]
fn a_lowered_leaf_max_preempts_one_of_two_after_the_delay() {
    let before = config(ON, "", "resources: {max: {memory: 20}}", "");
    let (mut h, uuids) = filled(&before, 2, 10);
    reload(
        &mut h,
        &config(ON, "", "resources: {max: {memory: 10}}", ""),
    );
    // Armed, not due: nothing.
    assert!(h.schedule().preempted().is_empty());
    h.advance(Duration::from_secs(4));
    assert!(h.schedule().preempted().is_empty());
    h.advance(Duration::from_secs(1));
    let seen = h.schedule();
    // The newest goes; the older stays (usage back at the max).
    assert_eq!(seen.preempted(), vec![uuids[1].to_string()]);
    let r = &seen.released[0];
    assert_eq!(r.application_id, "app-1");
    assert_eq!(r.partition_name, "default");
    assert_eq!(
        r.message,
        "preempting allocations to enforce new max quota for queue : root.p.a"
    );
    let events: Vec<_> = seen
        .events
        .iter()
        .filter(|e| e.message.starts_with("Preempted by Quota"))
        .collect();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].object_id, "a1");
    assert_eq!(events[0].group_id, "app-1");
    assert_eq!(
        events[0].message,
        "Preempted by Quota change enforcement process in root.p.a"
    );
    // In flight: still booked until the RM confirms, never picked again.
    assert_eq!(allocated(&h, "root.p.a"), 20);
    for _ in 0..3 {
        h.advance(Duration::from_secs(10));
        assert!(h.schedule().preempted().is_empty());
    }
    assert!(h.p.preempt.quota.armed.is_empty(), "disarmed");
    h.release("app-1", &uuids[1], TerminationType::PreemptedByScheduler);
    assert_eq!(allocated(&h, "root.p.a"), 10);
    assert!(h.p.preempt.preempting.is_empty());
    assert_eq!(h.p.preempt.quota.counters.victims, 1);
}

/// Spec 16 Q19-2.
#[test]
fn without_the_switch_or_the_delay_nothing_is_preempted() {
    for (switch, delay) in [("", "5s"), (ON, "0s"), (ON, "nonsense")] {
        let props = format!(
            "properties: {{application.sort.policy: fifo, preemption.quota.delay: {delay}}}"
        );
        let yaml = |max: i64| {
            format!(
                "partitions:
  - name: default
{switch}    queues:
      - name: root
        submitacl: '*'
        queues:
          - name: p
            queues:
              - name: a
                {props}
                resources: {{max: {{memory: {max}}}}}
"
            )
        };
        let (mut h, _) = filled(&yaml(20), 2, 10);
        reload(&mut h, &yaml(10));
        h.advance(Duration::from_secs(60));
        assert!(h.schedule().preempted().is_empty(), "{switch} {delay}");
        assert_eq!(allocated(&h, "root.p.a"), 20);
    }
}

#[test]
fn the_switch_turned_on_later_fires_an_armed_queue() {
    let (mut h, _) = filled(&config("", "", "resources: {max: {memory: 20}}", ""), 2, 10);
    reload(
        &mut h,
        &config("", "", "resources: {max: {memory: 10}}", ""),
    );
    h.advance(Duration::from_secs(10));
    assert!(h.schedule().preempted().is_empty());
    reload(
        &mut h,
        &config(ON, "", "resources: {max: {memory: 10}}", ""),
    );
    assert_eq!(h.schedule().preempted().len(), 1);
}

/// Spec 16 Q19-9.
#[test]
fn victims_larger_than_the_excess_are_skipped() {
    // Allocations 15 (older) and 5 (newer) = 20, max lowered to 12: the
    // excess is 8, 15 does not fit it, 5 does.
    let mut h = Harness::new(&config(ON, "", "resources: {max: {memory: 20}}", ""));
    h.node("n1", 1000);
    h.app("app-1", "root.p.a");
    h.ask(ask("app-1", "big", 15, 1));
    h.schedule();
    h.ask(ask("app-1", "small", 5, 1));
    let small = h.schedule().allocated[0].uuid.to_string();
    reload(
        &mut h,
        &config(ON, "", "resources: {max: {memory: 12}}", ""),
    );
    h.advance(Duration::from_secs(5));
    assert_eq!(h.schedule().preempted(), vec![small]);
    // Still over (15 > 12) but nothing fits the excess of 3: the next run
    // takes nothing and disarms the queue.
    h.advance(Duration::from_secs(5));
    assert!(h.schedule().preempted().is_empty());
    assert!(h.p.preempt.quota.armed.is_empty());
}

/// Spec 16 Q19-9, Q19-10.
#[test]
fn the_walk_never_passes_the_amount_and_the_guarantee_bounds_it() {
    // Three allocations of 6 = 18, max lowered to 8: excess 10. v1.9 never
    // takes past it: one victim (the newest of equals), usage 12 stays
    // above the max (quirk V6), and the run disarms the queue.
    let (mut h, uuids) = filled(&config(ON, "", "resources: {max: {memory: 20}}", ""), 3, 6);
    reload(&mut h, &config(ON, "", "resources: {max: {memory: 8}}", ""));
    h.advance(Duration::from_secs(5));
    assert_eq!(h.schedule().preempted(), vec![uuids[2].to_string()]);
    assert!(h.p.preempt.quota.armed.is_empty());
    h.advance(Duration::from_secs(5));
    assert!(h.schedule().preempted().is_empty());

    // Guarantee 14 on the parent: 18 is 4 above it, so the amount is 4
    // and no victim of 6 fits it.
    let with_g14 = |max: i64| {
        config(
            ON,
            "resources: {guaranteed: {memory: 14}}",
            &format!("resources: {{max: {{memory: {max}}}}}"),
            "",
        )
    };
    let (mut h, _) = filled(&with_g14(20), 3, 6);
    reload(&mut h, &with_g14(8));
    h.advance(Duration::from_secs(5));
    assert!(h.schedule().preempted().is_empty());

    // With guarantee = new max = 8 the amount stays 10: one victim.
    let with_g = |max: i64| {
        config(
            ON,
            "",
            &format!("resources: {{max: {{memory: {max}}}, guaranteed: {{memory: 8}}}}"),
            "",
        )
    };
    let (mut h, uuids) = filled(&with_g(20), 3, 6);
    reload(&mut h, &with_g(8));
    h.advance(Duration::from_secs(5));
    assert_eq!(h.schedule().preempted(), vec![uuids[2].to_string()]);
}

#[test]
fn lower_priority_goes_first_and_required_node_allocations_are_exempt() {
    let mut h = Harness::new(&config(ON, "", "resources: {max: {memory: 30}}", ""));
    h.node("n1", 1000);
    h.app("app-1", "root.p.a");
    let mut pinned = ask("app-1", "pinned", 10, 1);
    pinned.required_node = Some("n1".into());
    pinned.tags = crate::scheduler::tags::Tags::from(BTreeMap::from([(
        TAG_REQUIRED_NODE.to_string(),
        "n1".to_string(),
    )]));
    let mut low = ask("app-1", "low", 10, 1);
    low.priority = -5;
    let mut high = ask("app-1", "high", 10, 1);
    high.priority = 5;
    let mut uuid = BTreeMap::new();
    // Oldest first: low, pinned (newer), high (newest).
    for a in [low, pinned, high] {
        let key = a.key.to_string();
        h.ask(a);
        uuid.insert(key, h.schedule().allocated[0].uuid.to_string());
    }
    reload(
        &mut h,
        &config(ON, "", "resources: {max: {memory: 10}}", ""),
    );
    h.advance(Duration::from_secs(5));
    // Excess 20: the low-priority one first although it is the oldest,
    // then the high one; the pinned one never.
    let seen = h.schedule();
    assert_eq!(
        seen.preempted(),
        vec![uuid["low"].clone(), uuid["high"].clone()]
    );
}

/// Spec 16 Q19-5.
#[test]
fn usage_back_under_the_max_before_the_delay_disarms() {
    let (mut h, uuids) = filled(&config(ON, "", "resources: {max: {memory: 20}}", ""), 2, 10);
    reload(
        &mut h,
        &config(ON, "", "resources: {max: {memory: 10}}", ""),
    );
    h.release("app-1", &uuids[0], TerminationType::StoppedByRm);
    h.advance(Duration::from_secs(5));
    assert!(h.schedule().preempted().is_empty());
    assert!(h.p.preempt.quota.armed.is_empty());
}

/// Spec 16 Q19-13.
#[test]
fn a_parent_splits_its_excess_by_usage_above_guarantee() {
    // root.p max 40 -> 20 with a 5 s delay; a uses 30, b uses 10 (no
    // guarantees): shares 15 and 5 of the excess of 20.
    let p_max = |m: i64| {
        format!(
            "resources: {{max: {{memory: {m}}}}}\n            properties: {{preemption.quota.delay: 5s}}"
        )
    };
    let mut h = Harness::new(&config(ON, &p_max(40), "", ""));
    h.node("n1", 1000);
    h.app("app-1", "root.p.a");
    h.app("app-2", "root.p.b");
    h.ask(ask("app-1", "a", 5, 6));
    h.ask(ask("app-2", "b", 5, 2));
    assert_eq!(h.schedule().allocated.len(), 8);
    reload(&mut h, &config(ON, &p_max(20), "", ""));
    h.advance(Duration::from_secs(5));
    let seen = h.schedule();
    let released = seen.released_as(TerminationType::PreemptedByScheduler);
    let of = |app: &str| released.iter().filter(|r| r.application_id == app).count();
    assert_eq!((of("app-1"), of("app-2")), (3, 1));
    for r in &released {
        assert_eq!(
            r.message,
            "preempting allocations to enforce new max quota for queue : root.p"
        );
    }
    assert_eq!(seen.released.len(), 4);
    // Back at the max counting the victims in flight: the next pass
    // disarms, takes nothing more.
    assert!(h.schedule().preempted().is_empty());
    assert!(h.p.preempt.quota.armed.is_empty());

    // b within its guarantee of 10: a takes the whole excess.
    let mut h = Harness::new(&config(
        ON,
        &p_max(40),
        "",
        "resources: {guaranteed: {memory: 10}}",
    ));
    h.node("n1", 1000);
    h.app("app-1", "root.p.a");
    h.app("app-2", "root.p.b");
    h.ask(ask("app-1", "a", 5, 6));
    h.ask(ask("app-2", "b", 5, 2));
    h.schedule();
    reload(
        &mut h,
        &config(ON, &p_max(20), "", "resources: {guaranteed: {memory: 10}}"),
    );
    h.advance(Duration::from_secs(5));
    let seen = h.schedule();
    let released = seen.released_as(TerminationType::PreemptedByScheduler);
    assert_eq!(released.len(), 4);
    assert!(released.iter().all(|r| r.application_id == "app-1"));
}

/// Spec 16 Q19-5.
#[test]
fn a_raised_max_or_an_unchanged_one_does_not_arm() {
    let (mut h, _) = filled(&config(ON, "", "resources: {max: {memory: 20}}", ""), 2, 10);
    reload(
        &mut h,
        &config(ON, "", "resources: {max: {memory: 30}}", ""),
    );
    assert!(h.p.preempt.quota.armed.is_empty());
    reload(
        &mut h,
        &config(ON, "", "resources: {max: {memory: 30}}", ""),
    );
    assert!(h.p.preempt.quota.armed.is_empty());
    // Lowered, but still above the usage: v1.9 does not arm at all.
    reload(
        &mut h,
        &config(ON, "", "resources: {max: {memory: 25}}", ""),
    );
    assert!(h.p.preempt.quota.armed.is_empty());
    // Lowered below the usage: armed.
    reload(
        &mut h,
        &config(ON, "", "resources: {max: {memory: 15}}", ""),
    );
    assert_eq!(h.p.preempt.quota.armed.len(), 1);
}

/// Spec 16 Q19-15.
#[test]
fn an_armed_parent_runs_first_and_its_armed_leaf_in_the_next_pass() {
    let p_max = |m: i64| {
        format!(
            "resources: {{max: {{memory: {m}}}}}\n            properties: {{preemption.quota.delay: 5s}}"
        )
    };
    let a_max = |m: i64| format!("resources: {{max: {{memory: {m}}}}}");
    let mut h = Harness::new(&config(ON, &p_max(40), &a_max(30), ""));
    h.node("n1", 1000);
    h.app("app-1", "root.p.a");
    h.app("app-2", "root.p.b");
    h.ask(ask("app-1", "a", 5, 6));
    h.ask(ask("app-2", "b", 5, 2));
    assert_eq!(h.schedule().allocated.len(), 8);
    // p: 40 -> 20 (excess 20, shares 15 and 5); a: 30 -> 10.
    reload(&mut h, &config(ON, &p_max(20), &a_max(10), ""));
    assert_eq!(h.p.preempt.quota.armed.len(), 2);
    h.advance(Duration::from_secs(5));
    let first = h.schedule();
    let of = |seen: &Seen, app: &str| {
        seen.released_as(TerminationType::PreemptedByScheduler)
            .iter()
            .filter(|r| r.application_id == app)
            .count()
    };
    assert_eq!((of(&first, "app-1"), of(&first, "app-2")), (3, 1));
    // a still uses 15 (counting its victims as gone) over its max of 10.
    let second = h.schedule();
    assert_eq!((of(&second, "app-1"), of(&second, "app-2")), (1, 0));
    for r in second.released_as(TerminationType::PreemptedByScheduler) {
        assert_eq!(
            r.message,
            "preempting allocations to enforce new max quota for queue : root.p.a"
        );
    }
    assert!(h.schedule().preempted().is_empty());
    assert!(h.p.preempt.quota.armed.is_empty());
    assert_eq!(h.p.preempt.quota.counters.victims, 5);
}

/// Spec 16 Q19-13.
#[test]
fn shares_are_floored_and_may_leave_a_parent_over_its_max() {
    // a and b use 10 each; p 20 -> 15: the excess of 5 splits 2.5 / 2.5,
    // floored to 2 and 2 (v1.9 delta 5.6).
    let p_max = |m: i64| {
        format!(
            "resources: {{max: {{memory: {m}}}}}\n            properties: {{preemption.quota.delay: 5s}}"
        )
    };
    let mut h = Harness::new(&config(ON, &p_max(20), "", ""));
    h.node("n1", 1000);
    h.app("app-1", "root.p.a");
    h.app("app-2", "root.p.b");
    h.ask(ask("app-1", "a", 1, 10));
    h.ask(ask("app-2", "b", 1, 10));
    assert_eq!(h.schedule().allocated.len(), 20);
    reload(&mut h, &config(ON, &p_max(15), "", ""));
    h.advance(Duration::from_secs(5));
    let seen = h.schedule();
    let released = seen.released_as(TerminationType::PreemptedByScheduler);
    let of = |app: &str| released.iter().filter(|r| r.application_id == app).count();
    assert_eq!((of("app-1"), of("app-2")), (2, 2));
    // One over, but the run disarmed the parent: no retry (quirk V6).
    assert!(h.schedule().preempted().is_empty());
    assert!(h.p.preempt.quota.armed.is_empty());
}
