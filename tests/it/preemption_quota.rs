//! Quota-change preemption through the C ABI (`shared/spec/policy/
//! preemption.md` 13, 15, 19 PE21, with the YuniKorn v1.9 rules of
//! `si-v1.9-delta.md` 5): a reload lowers a queue's max below its usage,
//! and after `preemption.quota.delay` the RM is told to release
//! allocations of that queue with `PREEMPTED_BY_SCHEDULER`, as many as fit
//! within the excess; nothing without the switch. Both
//! editions: a v0.12 RM reloading its configuration file, a v1.8 RM
//! sending `UpdateConfiguration`.

use crate::common::preempt::{confirmation, preempted};
use crate::common::v1::{v1_confirmation, v1_options, v1_preempted, V1Rm};
use crate::common::*;
use sicore::ffi::sicore_status::*;
use sicore::proto::si::v1 as si;
use sicore::proto::si18::v1 as si18;
use sicore_c_rm::v1 as rmv1;

/// Leaf `a` (max `max` memory, quota delay 1 ms) and leaf `b`.
fn yaml(switch: &str, max: i64) -> String {
    yaml_delay(switch, max, "1ms")
}

/// As [`yaml`] with the quota delay `delay`.
fn yaml_delay(switch: &str, max: i64, delay: &str) -> String {
    let queues = format!(
        "          - name: a
            resources: {{max: {{memory: {max}}}}}
            properties: {{application.sort.policy: fifo, preemption.quota.delay: {delay}}}
          - name: b
"
    );
    partition_yaml(switch, &queues)
}

const ON: &str = "    preemption: {quotapreemptionenabled: true}\n";

/// A v0.12 RM whose `app-1` holds four allocations of 200 in `root.a`
/// (max 800), with one more request of 200 pending there.
fn v012(switch: &str, tag: &str) -> (Harness, std::path::PathBuf) {
    let dir = temp_config_dir(tag);
    let h = Harness::configured(dir_options(&dir, &yaml(switch, 800)), 1);
    h.submit(app("app-1", "root.a")).unwrap();
    // Distinct keys: a v0.12 event store keeps one record per object.
    let asks = (0..4).map(|i| ask("app-1", &format!("a{i}"), 200, 1, 1));
    assert_eq!(h.asks(asks.collect()).0, SICORE_OK);
    h.wait("app-1 at its max", |s| s.allocations.len() == 4);
    assert_eq!(h.asks(vec![ask("app-1", "p", 200, 1, 1)]).0, SICORE_OK);
    (h, dir)
}

#[test]
fn v012_a_lowered_max_releases_the_newest_until_usage_is_at_the_max() {
    let (h, dir) = v012(ON, "quota-v012");
    let order: Vec<String> = h.seen(|s| s.allocations.iter().map(|a| a.uuid.clone()).collect());
    std::fs::write(dir.join("queues.yaml"), yaml(ON, 400)).unwrap();
    let (st, msg) = h.reload("rm");
    assert_eq!(st, SICORE_OK, "{msg}");
    h.wait("two victims", |s| preempted(s).len() >= 2);
    h.settle();
    let victims = h.seen(preempted);
    // Exactly the excess of 400: the two newest, nothing more.
    assert_eq!(victims.len(), 2, "{victims:?}");
    let mut uuids: Vec<&str> = victims.iter().map(|v| v.uuid.as_str()).collect();
    uuids.sort();
    let mut newest = vec![order[2].as_str(), order[3].as_str()];
    newest.sort();
    assert_eq!(uuids, newest);
    for v in &victims {
        assert_eq!(v.application_id, "app-1");
        assert_eq!(v.partition_name, "default");
        assert_eq!(
            v.message,
            "preempting allocations to enforce new max quota for queue : root.a"
        );
    }
    // In flight: still booked until the RM confirms; nothing allocated.
    let d = h.dump();
    assert_eq!(memory_of(&d, "root.a"), 800);
    books::check_books(&d).unwrap();
    h.wait("the victims' events", |s| {
        victims.iter().all(|v| {
            s.events.iter().any(|e| {
                e.r#type == si::event_record::Type::Request as i32
                    && e.group_id == "app-1"
                    && e.message == "Preempted by Quota change enforcement process in root.a"
                    && s.allocations
                        .iter()
                        .any(|a| a.uuid == v.uuid && a.allocation_key == e.object_id)
            })
        })
    });
    // The RM confirms as k8shim v0.12.2 does (same UUID and type).
    let confirms = victims
        .iter()
        .map(|v| confirmation("app-1", &v.uuid))
        .collect();
    assert_eq!(h.releases(confirms, vec![]).0, SICORE_OK);
    h.wait_dump("the victims gone", |d| memory_of(d, "root.a") == 400);
    h.settle();
    h.seen(|s| {
        // No further victim, and the pending request stays pending: the
        // queue is at its new max.
        assert_eq!(preempted(s).len(), 2, "{:?}", s.released);
        assert_eq!(s.allocations.len(), 4);
    });
    let d = h.dump();
    assert_eq!(memory_of(&d, "root.a"), 400);
    assert_eq!(memory_of(&d, "root"), 400);
    books::check_books(&d).unwrap();
}

#[test]
fn v012_without_the_switch_a_lowered_max_releases_nothing() {
    let (h, dir) = v012("", "quota-v012-off");
    std::fs::write(dir.join("queues.yaml"), yaml("", 400)).unwrap();
    assert_eq!(h.reload("rm").0, SICORE_OK);
    h.settle();
    h.settle();
    h.seen(|s| assert!(s.released.is_empty(), "{:?}", s.released));
    let d = h.dump();
    assert_eq!(memory_of(&d, "root.a"), 800);
    books::check_books(&d).unwrap();
}

#[test]
fn an_unknown_key_in_the_preemption_section_is_still_refused() {
    let dir = temp_config_dir("quota-bad");
    let h = Harness::configured(dir_options(&dir, &yaml(ON, 800)), 1);
    let bad = yaml("    preemption: {quotapreemption: true}\n", 400);
    std::fs::write(dir.join("queues.yaml"), bad).unwrap();
    let (st, msg) = h.reload("rm");
    assert_ne!(st, SICORE_OK);
    assert!(msg.contains("unknown field"), "{msg}");
}

// ---- SI v1.x ----

/// A v1 RM (with `predicates`) registered with `config`, one node `n1`
/// of 1000 memory ready and `app-1` submitted to `root.a`.
fn v1_rm(config: &str) -> V1Rm {
    let rm = V1Rm::with(v1_options(), config, true, |_| {});
    rm.node("n1", 1000);
    rm.app("app-1", "root.a");
    rm
}

/// `app-1` holding five pods of 200 in `root.a` (max 1000).
fn v1_filled(switch: &str) -> V1Rm {
    let rm = v1_rm(&yaml(switch, 1000));
    let pods = (0..5)
        .map(|i| rmv1::ask("app-1", &format!("pod-{i}"), 200, 1))
        .collect();
    rm.allocate(pods, vec![]);
    rm.rec.wait("five pods placed", |s| s.new.len() == 5);
    rm.settle();
    rm
}

#[test]
fn v1_update_configuration_lowering_a_max_preempts_without_asking_the_rm() {
    let rm = v1_filled(ON);
    let order: Vec<String> = rm
        .rec
        .copy()
        .new
        .iter()
        .map(|a| a.allocation_key.clone())
        .collect();
    let before = rm.rec.copy();
    // 1000 -> 500: an excess of 500; victims of 200 are taken while the
    // total stays within it (YuniKorn v1.9): 200, 400, not 600.
    let (st, msg) = rm.update_config(&yaml(ON, 500));
    assert_eq!(st, SICORE_OK, "{msg}");
    rm.rec.wait("two victims", |s| v1_preempted(s).len() >= 2);
    rm.settle();
    let s = rm.rec.copy();
    let victims = v1_preempted(&s);
    assert_eq!(victims.len(), 2, "{victims:?}");
    let mut keys: Vec<&str> = victims.iter().map(|v| v.allocation_key.as_str()).collect();
    keys.sort();
    let mut newest: Vec<&str> = order[3..].iter().map(String::as_str).collect();
    newest.sort();
    assert_eq!(keys, newest, "the newest two of equals");
    for v in &victims {
        assert_eq!(v.application_id, "app-1");
        assert_eq!(
            v.message,
            "preempting allocations to enforce new max quota for queue : root.a"
        );
    }
    // No Predicates or PreemptionPredicates for this kind (spec 13).
    assert_eq!(s.predicate_calls, before.predicate_calls);
    assert_eq!(s.checks.len(), before.checks.len(), "{:?}", s.checks);
    rm.rec.wait("the victims' events", |s| {
        keys.iter().all(|k| {
            s.events.iter().any(|e| {
                e.object_id == *k
                    && e.reference_id == "app-1"
                    && e.message == "Preempted by Quota change enforcement process in root.a"
            })
        })
    });
    let d = rm.dump();
    assert_eq!(memory_of(&d, "root.a"), 1000, "booked until confirmed");
    books::check_books(&d).unwrap();
    // The RM confirms each with PREEMPTED_BY_SCHEDULER: no echo (v1.8).
    let confirms = victims
        .iter()
        .map(|v| v1_confirmation("app-1", &v.allocation_key))
        .collect();
    rm.allocate(vec![], confirms);
    rm.settle();
    let d = rm.dump();
    // 600 stays above 500: the run disarmed the queue (quirk V6).
    assert_eq!(memory_of(&d, "root.a"), 600);
    books::check_books(&d).unwrap();
    let s = rm.rec.copy();
    assert_eq!(s.released.len(), 2, "no echo, no further victim: {s:#?}");
}

#[test]
fn v1_without_the_switch_nothing_is_preempted() {
    let rm = v1_filled("");
    assert_eq!(rm.update_config(&yaml("", 500)).0, SICORE_OK);
    rm.settle();
    rm.settle();
    assert!(rm.rec.copy().released.is_empty());
    let d = rm.dump();
    assert_eq!(memory_of(&d, "root.a"), 1000);
    books::check_books(&d).unwrap();
}

/// Nothing pending anywhere, so no pass would run for weeks: the core
/// wakes up when the delay of the armed queue ends (quirk Q9's
/// recommendation; the reference waits for a request in the queue).
/// Spec 16 Q19-8.
#[test]
fn v1_an_idle_queue_is_enforced_when_its_delay_ends() {
    let rm = v1_filled(ON);
    let (st, msg) = rm.update_config(&yaml_delay(ON, 500, "300ms"));
    assert_eq!(st, SICORE_OK, "{msg}");
    rm.rec.wait("two victims", |s| v1_preempted(s).len() >= 2);
    rm.settle();
    assert_eq!(v1_preempted(&rm.rec.copy()).len(), 2);
}

/// A parent's excess is split over its leaves by usage (spec 13.5):
/// `root.p` 1000 -> 600 with `a` using 600 and `b` 400 gives shares of 240
/// and 160; `a` gives one pod of 200 (a second would pass its 240, which
/// YuniKorn v1.9 never does), `b` none (a pod of 200 does not fit its 160).
/// Spec 16 Q19-13.
#[test]
fn v1_a_lowered_parent_max_is_split_over_its_leaves() {
    let tree = |max: i64| {
        let queues = format!(
            "          - name: p
            resources: {{max: {{memory: {max}}}}}
            properties: {{preemption.quota.delay: 1ms}}
            queues:
              - name: a
              - name: b
          - name: a
"
        );
        partition_yaml(ON, &queues)
    };
    let rm = v1_rm(&tree(1000));
    rm.app("app-2", "root.p.a");
    rm.app("app-3", "root.p.b");
    let mut pods: Vec<si18::Allocation> = (0..3)
        .map(|i| rmv1::ask("app-2", &format!("a-{i}"), 200, 1))
        .collect();
    pods.extend((0..2).map(|i| rmv1::ask("app-3", &format!("b-{i}"), 200, 1)));
    rm.allocate(pods, vec![]);
    rm.rec.wait("five pods placed", |s| s.new.len() == 5);
    assert_eq!(rm.update_config(&tree(600)).0, SICORE_OK);
    rm.rec.wait("a victim", |s| !v1_preempted(s).is_empty());
    rm.settle();
    let victims = v1_preempted(&rm.rec.copy());
    assert_eq!(victims.len(), 1, "{victims:?}");
    for v in &victims {
        assert_eq!(v.application_id, "app-2");
        assert_eq!(
            v.message,
            "preempting allocations to enforce new max quota for queue : root.p"
        );
    }
    let confirms = victims
        .iter()
        .map(|v| v1_confirmation(&v.application_id, &v.allocation_key))
        .collect();
    rm.allocate(vec![], confirms);
    rm.settle();
    let d = rm.dump();
    assert_eq!(memory_of(&d, "root.p"), 800);
    assert_eq!(memory_of(&d, "root.p.a"), 400);
    assert_eq!(memory_of(&d, "root.p.b"), 400);
    books::check_books(&d).unwrap();
    assert_eq!(rm.rec.copy().released.len(), 1);
}

/// YuniKorn v1.9 renamed the queue's delay to `quota.preemption.delay`;
/// sicore reads both names for every RM, and the new one wins when a queue
/// sets both (delta spec 3.1).
/// Spec 16 Q19-1, Q19-2.
#[test]
fn v1_the_v19_delay_key_is_read_and_wins_over_the_v18_one() {
    let with = |props: &str, max: i64| {
        let queues = format!(
            "          - name: a
            resources: {{max: {{memory: {max}}}}}
            properties: {{application.sort.policy: fifo, {props}}}
          - name: b
"
        );
        partition_yaml(ON, &queues)
    };
    // The new name alone enforces a lowered max.
    let new_key = "quota.preemption.delay: 1ms";
    let rm = v1_rm(&with(new_key, 1000));
    let pods = (0..5)
        .map(|i| rmv1::ask("app-1", &format!("pod-{i}"), 200, 1))
        .collect();
    rm.allocate(pods, vec![]);
    rm.rec.wait("five pods placed", |s| s.new.len() == 5);
    rm.settle();
    assert_eq!(rm.update_config(&with(new_key, 500)).0, SICORE_OK);
    rm.rec.wait("victims", |s| v1_preempted(s).len() >= 2);
    let d = rm.dump();
    let a = find_queue(&d, "default", "root.a").unwrap();
    assert_eq!(a["quota_preemption_delay"], "1ms", "{a}");

    // Both names: the new one (0 = off) wins over the old one.
    let both = "quota.preemption.delay: 0s, preemption.quota.delay: 1ms";
    let rm = v1_rm(&with(both, 1000));
    let pods = (0..5)
        .map(|i| rmv1::ask("app-1", &format!("pod-{i}"), 200, 1))
        .collect();
    rm.allocate(pods, vec![]);
    rm.rec.wait("five pods placed", |s| s.new.len() == 5);
    rm.settle();
    assert_eq!(rm.update_config(&with(both, 500)).0, SICORE_OK);
    rm.settle();
    rm.settle();
    assert!(
        v1_preempted(&rm.rec.copy()).is_empty(),
        "the v1.9 key said off"
    );
}
