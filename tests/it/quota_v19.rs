//! Quota-change preemption as YuniKorn v1.9 runs it, through the SI v1 C
//! family (`shared/spec/si-v1.9-delta.md` 5, 2; scenarios of 16): the
//! RM's own placements arm a queue over its max, a run never takes past
//! what it set out to take back, that amount is bounded by the guarantees
//! on the path, the victims go by class, type match and size, a parent's
//! amount is split with flooring, and each run that had candidates sends
//! one `QUEUE_PREEMPTION` (407) record, which an RM that knows only the
//! v1.8 details drops, as the k8shim does.

use crate::common::v1::{v1_options, v1_preempted, V1Rm, V1Seen};
use crate::common::*;
use sicore::ffi::sicore_status::*;
use sicore::proto::si18::v1 as si18;
use sicore_c_rm::v1 as rmv1;

use si18::event_record::{ChangeDetail, ChangeType, Type};

pub(crate) const ON: &str = "    preemption: {quotapreemptionenabled: true}\n";
/// SI v1.9's `QUEUE_PREEMPTION` change detail.
pub(crate) const QUEUE_PREEMPTION: i32 = 407;

/// Leaf `a` (`a_res`, quota delay 1 ms) and leaf `b`.
fn leaf(switch: &str, a_res: &str) -> String {
    let queues = format!(
        "          - name: a
            resources: {a_res}
            properties: {{quota.preemption.delay: 1ms}}
          - name: b
"
    );
    partition_yaml(switch, &queues)
}

/// A v1 RM of SI v1.9 taking REQUEST and QUEUE records, node `n1` ready,
/// `app-1` in `queue`.
fn rm_with(config: &str, queue: &str) -> V1Rm {
    rm_at("1.9.0", config, queue)
}

/// [`rm_with`] for an RM registered with `version`.
pub(crate) fn rm_at(version: &str, config: &str, queue: &str) -> V1Rm {
    let mut o = v1_options();
    o.event_types = vec!["REQUEST".into(), "QUEUE".into(), "NODE".into()];
    let req = si18::RegisterResourceManagerRequest {
        rm_id: "rm1".into(),
        version: version.into(),
        policy_group: "queues".into(),
        config: config.into(),
        ..Default::default()
    };
    let rm = V1Rm::registered(o, &req, false, |_| {});
    rm.node("n1", 100_000);
    rm.app("app-1", queue);
    rm
}

/// A pod the RM already runs on `n1` with `pairs` as its resource.
pub(crate) fn running(app: &str, key: &str, pairs: &[(&str, i64)]) -> si18::Allocation {
    si18::Allocation {
        node_id: "n1".into(),
        resource_per_alloc: rmv1::res(pairs),
        ..rmv1::ask(app, key, 1, 1)
    }
}

/// Places `pods` and waits until all are echoed.
pub(crate) fn place(rm: &V1Rm, pods: Vec<si18::Allocation>) {
    let want = rm.rec.copy().new.len() + pods.len();
    rm.allocate(pods, vec![]);
    rm.rec.wait("placed pods echoed", |s| s.new.len() >= want);
}

pub(crate) fn victims(s: &V1Seen) -> Vec<String> {
    let mut v: Vec<String> = v1_preempted(s)
        .into_iter()
        .map(|r| r.allocation_key)
        .collect();
    v.sort();
    v
}

/// The QUEUE_PREEMPTION records seen.
pub(crate) fn summaries(s: &V1Seen) -> Vec<si18::EventRecord> {
    s.events
        .iter()
        .filter(|e| e.event_change_detail == QUEUE_PREEMPTION)
        .cloned()
        .collect()
}

pub(crate) fn summary(p: &str, c: &str, selected: usize, taken: usize) -> String {
    format!(
        "Quota Preemption results summary: preemptable resources: {p}, claimed resources: {c}, selected victims: {selected}, preempted victims: {taken}"
    )
}

/// What the k8shim's `SendEvent` acts on (pod events for REQUEST, node
/// events for NODE ADD and DECOMISSION); everything else is dropped.
fn shim_handles(e: &si18::EventRecord) -> bool {
    match Type::try_from(e.r#type) {
        Ok(Type::Request) => true,
        Ok(Type::Node) => matches!(
            (
                ChangeType::try_from(e.event_change_type),
                ChangeDetail::try_from(e.event_change_detail)
            ),
            (Ok(ChangeType::Add), Ok(ChangeDetail::DetailsNone))
                | (Ok(ChangeType::Remove), Ok(ChangeDetail::NodeDecomission))
        ),
        _ => false,
    }
}

/// Q19-9 and Q19-14: victims of 5, 6 and 9 over a max lowered to 10 (an
/// excess of 10): the 5 is taken, then neither the 6 nor the 9 fits what
/// is left, so the queue stays above its max. One summary record, which a
/// k8shim-like RM (it knows the v1.8 details only) drops without harm.
/// Spec 16 Q19-9, Q19-14.
#[test]
fn a_leaf_run_never_takes_past_its_amount_and_sends_one_summary() {
    let rm = rm_with(&leaf(ON, "{max: {memory: 100}}"), "root.a");
    place(
        &rm,
        vec![
            running("app-1", "v5", &[("memory", 5)]),
            running("app-1", "v9", &[("memory", 9)]),
            running("app-1", "v6", &[("memory", 6)]),
        ],
    );
    let (st, msg) = rm.update_config(&leaf(ON, "{max: {memory: 10}}"));
    assert_eq!(st, SICORE_OK, "{msg}");
    let s = rm.rec.wait("the summary", |s| !summaries(s).is_empty());
    assert_eq!(victims(&s), ["v5"]);
    let rec = &summaries(&s)[0];
    assert_eq!(rec.r#type, Type::Queue as i32);
    assert_eq!(rec.object_id, "root.a");
    assert_eq!(rec.reference_id, "");
    assert_eq!(rec.event_change_type, ChangeType::Set as i32);
    assert_eq!(rec.resource, rmv1::res(&[("memory", 10)]));
    assert_eq!(
        rec.message,
        summary("map[memory:10]", "map[memory:5]", 3, 1)
    );
    // The victim's REQUEST record comes before the summary.
    let at = |f: &dyn Fn(&si18::EventRecord) -> bool| s.events.iter().position(f).unwrap();
    assert!(
        at(&|e| e.object_id == "v5" && e.r#type == Type::Request as i32)
            < at(&|e| e.event_change_detail == QUEUE_PREEMPTION)
    );
    // A v1.8 decoder keeps 407 as a number it does not know; the k8shim
    // acts on the victim's record only.
    assert!(ChangeDetail::try_from(QUEUE_PREEMPTION).is_err());
    let acted: Vec<&str> = s
        .events
        .iter()
        .filter(|e| shim_handles(e))
        .filter(|e| e.r#type == Type::Request as i32)
        .map(|e| e.object_id.as_str())
        .collect();
    assert!(acted.contains(&"v5"), "{acted:?}");
    assert!(!acted.contains(&"root.a"));
    // The run disarmed the queue: no retry though 15 > 10 (quirk V6).
    rm.settle();
    rm.settle();
    let s = rm.rec.copy();
    assert_eq!(victims(&s), ["v5"]);
    assert_eq!(summaries(&s).len(), 1);
    // And the core goes on serving the RM.
    rm.allocate(vec![rmv1::ask("app-1", "later", 1, 1)], vec![]);
    rm.settle();
    assert_eq!(
        rm.update_config(&leaf(ON, "{max: {memory: 100}}")).0,
        SICORE_OK
    );
    rm.rec.wait("later placed", |s| {
        s.new.iter().any(|a| a.allocation_key == "later")
    });
}

/// An RM registered as SI v1.8.x gets the same run but not the v1.9
/// summary record, which v1.8 never sent (issue 32: the RM's version picks
/// the records where an RM can tell the two apart).
/// Spec 16 Q19-9, Q19-14.
#[test]
fn an_rm_of_v18_gets_the_run_without_the_summary() {
    let rm = rm_at("1.8.0", &leaf(ON, "{max: {memory: 100}}"), "root.a");
    place(
        &rm,
        vec![
            running("app-1", "v5", &[("memory", 5)]),
            running("app-1", "v9", &[("memory", 9)]),
            running("app-1", "v6", &[("memory", 6)]),
        ],
    );
    let (st, msg) = rm.update_config(&leaf(ON, "{max: {memory: 10}}"));
    assert_eq!(st, SICORE_OK, "{msg}");
    let s = rm.rec.wait("the victim", |s| !victims(s).is_empty());
    assert_eq!(victims(&s), ["v5"]);
    rm.settle();
    rm.settle();
    let s = rm.rec.copy();
    assert!(summaries(&s).is_empty(), "{:?}", summaries(&s));
    assert!(
        s.events
            .iter()
            .any(|e| e.object_id == "v5" && e.r#type == Type::Request as i32),
        "the victim's REQUEST record still goes"
    );
}

/// Q19-9 second half: victims 8 and 10 with an amount of 8: the 8 is
/// taken, the 10 skipped as too large on its own.
/// Spec 16 Q19-9.
#[test]
fn a_victim_larger_than_the_amount_is_skipped() {
    let rm = rm_with(&leaf(ON, "{max: {memory: 100}}"), "root.a");
    place(
        &rm,
        vec![
            running("app-1", "v10", &[("memory", 10)]),
            running("app-1", "v8", &[("memory", 8)]),
        ],
    );
    assert_eq!(
        rm.update_config(&leaf(ON, "{max: {memory: 10}}")).0,
        SICORE_OK
    );
    let s = rm.rec.wait("the summary", |s| !summaries(s).is_empty());
    assert_eq!(victims(&s), ["v8"]);
    assert_eq!(
        summaries(&s)[0].message,
        summary("map[memory:8]", "map[memory:8]", 2, 1)
    );
}

/// Q19-10 and Q19-14: the amount is bounded by how far the path is above
/// its guarantees. Parent guarantee 1200, leaf max 1000, usage 1500: the
/// amount is 300, no pod of 500 fits, nothing is taken, and the record
/// says so (`nil resource`). A guarantee equal to the max (10) over
/// victims 5, 6, 3, 4: the amount is 8, the 3 and the 4 are taken.
/// Spec 16 Q19-10, Q19-14.
#[test]
fn the_guarantee_on_the_path_bounds_the_amount() {
    let tree = |max: i64| {
        let queues = format!(
            "          - name: p
            resources: {{guaranteed: {{memory: 1200}}}}
            queues:
              - name: a
                resources: {{max: {{memory: {max}}}}}
                properties: {{quota.preemption.delay: 1ms}}
"
        );
        partition_yaml(ON, &queues)
    };
    let rm = rm_with(&tree(2000), "root.p.a");
    place(
        &rm,
        (0..3)
            .map(|i| running("app-1", &format!("p{i}"), &[("memory", 500)]))
            .collect(),
    );
    assert_eq!(rm.update_config(&tree(1000)).0, SICORE_OK);
    let s = rm.rec.wait("the summary", |s| !summaries(s).is_empty());
    assert!(victims(&s).is_empty());
    assert_eq!(summaries(&s)[0].object_id, "root.p.a");
    assert_eq!(
        summaries(&s)[0].message,
        summary("map[memory:300]", "nil resource", 3, 0)
    );

    let own = |max: i64| {
        leaf(
            ON,
            &format!("{{max: {{memory: {max}}}, guaranteed: {{memory: 10}}}}"),
        )
    };
    let rm = rm_with(&own(100), "root.a");
    place(
        &rm,
        [("v5", 5), ("v6", 6), ("v3", 3), ("v4", 4)]
            .iter()
            .map(|(k, m)| running("app-1", k, &[("memory", *m)]))
            .collect(),
    );
    assert_eq!(rm.update_config(&own(10)).0, SICORE_OK);
    let s = rm.rec.wait("the summary", |s| !summaries(s).is_empty());
    assert_eq!(victims(&s), ["v3", "v4"]);
    assert_eq!(
        summaries(&s)[0].message,
        summary("map[memory:8]", "map[memory:7]", 4, 2)
    );
}

/// Q19-11: an allocation whose types are all in the amount goes before
/// ones with types the amount lacks, however small those are; Q19-12:
/// regular pods go before opted-out ones, which go before originators
/// (V1's recommendation; the reference takes them the other way round).
/// Spec 16 Q19-11, Q19-12.
#[test]
fn victims_go_by_class_then_type_match_then_size() {
    let rm = rm_with(&leaf(ON, "{max: {memory: 100}}"), "root.a");
    place(
        &rm,
        vec![
            running("app-1", "m100", &[("memory", 13)]),
            running("app-1", "m50", &[("memory", 12), ("vcore", 10)]),
            running(
                "app-1",
                "m33",
                &[("memory", 11), ("vcore", 10), ("example.com/x", 10)],
            ),
            running(
                "app-1",
                "m25",
                &[
                    ("memory", 10),
                    ("vcore", 10),
                    ("example.com/x", 10),
                    ("example.com/y", 10),
                ],
            ),
        ],
    );
    // Usage 46 over 33: an amount of 13, which only one victim fills.
    assert_eq!(
        rm.update_config(&leaf(ON, "{max: {memory: 33}}")).0,
        SICORE_OK
    );
    let s = rm.rec.wait("the summary", |s| !summaries(s).is_empty());
    assert_eq!(victims(&s), ["m100"], "the full type match first");

    let rm = rm_with(&leaf(ON, "{max: {memory: 300}}"), "root.a");
    let pod = |key: &str, allow_self: bool, originator: bool| si18::Allocation {
        originator,
        preemption_policy: Some(si18::PreemptionPolicy {
            allow_preempt_self: allow_self,
            allow_preempt_other: true,
        }),
        ..running("app-1", key, &[("memory", 100)])
    };
    // Oldest first: the regular pod is the oldest, so age cannot be what
    // picks it.
    place(&rm, vec![pod("regular", true, false)]);
    place(&rm, vec![pod("opted-out", false, false)]);
    place(&rm, vec![pod("originator", true, true)]);
    assert_eq!(
        rm.update_config(&leaf(ON, "{max: {memory: 200}}")).0,
        SICORE_OK
    );
    let s = rm.rec.wait("the summary", |s| !summaries(s).is_empty());
    assert_eq!(victims(&s), ["regular"]);
    assert_eq!(
        summaries(&s)[0].message,
        summary("map[memory:100]", "map[memory:100]", 3, 1)
    );
}

/// 5.3 and Q19-6: a reload that lowers the max to a value the usage is
/// still within arms nothing; the RM then places pods that take the queue
/// over its max: they are accepted and echoed, and the queue is armed by
/// that growth, so after the delay a victim is released. Without the
/// partition switch the same growth arms nothing.
/// Spec 16 Q19-6.
#[test]
fn growth_the_rm_reports_arms_a_queue_over_its_max() {
    for switch in [ON, ""] {
        let rm = rm_with(&leaf(switch, "{max: {memory: 1000}}"), "root.a");
        place(
            &rm,
            (0..6)
                .map(|i| running("app-1", &format!("p{i}"), &[("memory", 100)]))
                .collect(),
        );
        assert_eq!(
            rm.update_config(&leaf(switch, "{max: {memory: 800}}")).0,
            SICORE_OK
        );
        rm.settle();
        rm.settle();
        assert!(victims(&rm.rec.copy()).is_empty(), "600 is within 800");
        // Recovery or pods bound outside the core: over the max, accepted.
        place(
            &rm,
            (6..9)
                .map(|i| running("app-1", &format!("p{i}"), &[("memory", 100)]))
                .collect(),
        );
        assert_eq!(rm.memory("root.a"), 900);
        if switch.is_empty() {
            rm.settle();
            rm.settle();
            assert!(victims(&rm.rec.copy()).is_empty(), "the switch is off");
            assert!(summaries(&rm.rec.copy()).is_empty());
            continue;
        }
        let s = rm.rec.wait("a victim", |s| !v1_preempted(s).is_empty());
        rm.settle();
        let s2 = rm.rec.copy();
        assert_eq!(victims(&s2).len(), 1, "{:?}", victims(&s));
        assert_eq!(
            summaries(&s2)[0].message,
            summary("map[memory:100]", "map[memory:100]", 9, 1)
        );
    }
}

/// Q19-13: a parent's amount split over five leaves with flooring; each
/// leaf takes its 12 and skips its 13; one record for the parent, none
/// for its leaves.
/// Spec 16 Q19-13.
#[test]
fn a_parent_run_splits_with_flooring_and_sends_one_record() {
    let tree = |max: i64| {
        let mut queues = format!(
            "          - name: p
            resources: {{max: {{memory: {max}}}, guaranteed: {{memory: 20}}}}
            properties: {{quota.preemption.delay: 1ms}}
            queues:
"
        );
        for i in 0..5 {
            queues.push_str(&format!("              - name: l{i}\n"));
        }
        partition_yaml(ON, &queues)
    };
    let rm = rm_with(&tree(150), "root.p.l0");
    for i in 1..5 {
        rm.app(&format!("app-{}", i + 1), &format!("root.p.l{i}"));
    }
    let mut pods = Vec::new();
    for i in 0..5 {
        let app = format!("app-{}", i + 1);
        pods.push(running(&app, &format!("l{i}-12"), &[("memory", 12)]));
        pods.push(running(&app, &format!("l{i}-13"), &[("memory", 13)]));
    }
    place(&rm, pods);
    assert_eq!(rm.update_config(&tree(20)).0, SICORE_OK);
    let s = rm.rec.wait("the summary", |s| !summaries(s).is_empty());
    rm.settle();
    let s = V1Seen {
        events: rm.rec.copy().events,
        ..s
    };
    let want: Vec<String> = (0..5).map(|i| format!("l{i}-12")).collect();
    assert_eq!(victims(&s), want);
    for v in v1_preempted(&s) {
        assert_eq!(
            v.message,
            "preempting allocations to enforce new max quota for queue : root.p"
        );
    }
    let recs = summaries(&s);
    assert_eq!(recs.len(), 1, "{recs:?}");
    assert_eq!(recs[0].object_id, "root.p");
    assert_eq!(recs[0].resource, rmv1::res(&[("memory", 20)]));
    // 125 over 20: 105 to take back, 21 for each leaf.
    assert_eq!(
        recs[0].message,
        summary("map[memory:105]", "map[memory:60]", 10, 5)
    );
}

/// Q19-14: a run with no candidate (every pod of `a` is pinned to its node
/// by the RM) sends no record and releases nothing; `b`'s run in the same
/// pass does send one.
/// Spec 16 Q19-14.
#[test]
fn a_run_without_candidates_sends_no_record() {
    let two = |a_max: i64, b_max: i64| {
        let queues = format!(
            "          - name: a
            resources: {{max: {{memory: {a_max}}}}}
            properties: {{quota.preemption.delay: 1ms}}
          - name: b
            resources: {{max: {{memory: {b_max}}}}}
            properties: {{quota.preemption.delay: 1ms}}
"
        );
        partition_yaml(ON, &queues)
    };
    let rm = rm_with(&two(100, 100), "root.a");
    rm.app("app-2", "root.b");
    let pinned = |key: &str| si18::Allocation {
        allocation_tags: [(
            "yunikorn.apache.org/requiredNode".to_string(),
            "n1".to_string(),
        )]
        .into(),
        ..running("app-1", key, &[("memory", 10)])
    };
    place(
        &rm,
        vec![
            pinned("ds-1"),
            pinned("ds-2"),
            running("app-2", "b-1", &[("memory", 10)]),
            running("app-2", "b-2", &[("memory", 10)]),
        ],
    );
    assert_eq!(rm.update_config(&two(10, 10)).0, SICORE_OK);
    let s = rm.rec.wait("b's summary", |s| !summaries(s).is_empty());
    rm.settle();
    let s = V1Seen {
        events: rm.rec.copy().events,
        ..s
    };
    let recs = summaries(&s);
    assert_eq!(recs.len(), 1, "{recs:?}");
    assert_eq!(recs[0].object_id, "root.b");
    assert_eq!(victims(&s).len(), 1);
    assert!(victims(&s)[0].starts_with("b-"));
}
