//! The scenarios of `shared/spec/si-v1.9-delta.md` 16 that no other module
//! ran through the SI v1 C family, as an RM observes them. sicore tells RM
//! versions apart in one place only: an RM registered as SI v1.9 or later
//! (that takes QUEUE records) gets the `QUEUE_PREEMPTION` (407) summary of
//! each quota-change run, a v1.8.x RM does not. So every quota scenario
//! here runs at both versions: same victims, the record only at v1.9.
//! Delays are scaled down (50 ms to 2 s) where the point survives; the
//! arming table's long timers are also checked in `preempt/quota.rs`'s
//! unit test. The map of scenario to test is in docs/testing.md.

use std::time::Duration;

use crate::common::v1::{v1_options, V1Rm, V1Seen};
use crate::common::*;
use crate::quota_v19::{place, rm_at, running, summaries, summary, victims, ON};
use sicore::ffi::sicore_status::*;
use sicore::ffi::*;
use sicore::proto::si18::v1 as si18;
use sicore_c_rm::call;
use sicore_c_rm::v1 as rmv1;

use si18::node_info::ActionFromRm;

/// The RM versions an RM can tell apart.
const VERSIONS: [&str; 2] = ["1.8.0", "1.9.0"];

/// Leaf `a` with `res` and the properties `props` (YAML flow entries),
/// and leaf `b`.
fn leaf_with(res: &str, props: &str) -> String {
    let queues = format!(
        "          - name: a
            resources: {res}
            properties: {{{props}}}
          - name: b
"
    );
    partition_yaml(ON, &queues)
}

fn max_mem(max: i64) -> String {
    format!("{{max: {{memory: {max}}}}}")
}

/// `n` pods of `size` memory the RM runs for `app-1`, keys `{tag}{i}`.
fn pods(tag: &str, n: usize, size: i64) -> Vec<si18::Allocation> {
    (0..n)
        .map(|i| running("app-1", &format!("{tag}{i}"), &[("memory", size)]))
        .collect()
}

/// Lets the core finish what is under way, twice, and returns what the RM
/// has seen.
fn quiet(rm: &V1Rm) -> V1Seen {
    rm.settle();
    rm.settle();
    rm.rec.copy()
}

/// A reload that must be taken.
fn reload(rm: &V1Rm, config: &str) {
    let (st, msg) = rm.update_config(config);
    assert_eq!(st, SICORE_OK, "{msg}");
}

/// The run's summary as the RM of `version` sees it: one record with
/// `message` for `queue` at v1.9, none at v1.8.
fn check_summary(version: &str, s: &V1Seen, queue: &str, message: &str) {
    let recs = summaries(s);
    if version.starts_with("1.8") {
        assert!(recs.is_empty(), "v1.8 RM: {recs:?}");
        return;
    }
    assert_eq!(recs.len(), 1, "{recs:?}");
    assert_eq!(recs[0].object_id, queue);
    assert_eq!(recs[0].message, message);
}

fn queue_of(rm: &V1Rm, path: &str) -> serde_json::Value {
    find_queue(&rm.dump(), "default", path).unwrap_or_else(|| panic!("no queue {path}"))
}

/// Spec 16 Q19-1. The same max again arms nothing; a max lowered from 20
/// to 10 over a usage of 15 releases one pod of 5 after the delay. The
/// v1.8 key alone does the same (sicore's leniency, 3.1; the v1.9
/// reference ignores it), for both RM versions.
#[test]
fn q19_1_the_new_key_and_the_old_one_enforce_a_lowered_max() {
    for v in VERSIONS {
        for key in ["quota.preemption.delay", "preemption.quota.delay"] {
            let cfg = |max| leaf_with(&max_mem(max), &format!("{key}: 50ms"));
            let rm = rm_at(v, &cfg(20), "root.a");
            place(&rm, pods("p", 3, 5));
            reload(&rm, &cfg(20));
            std::thread::sleep(Duration::from_millis(200));
            let s = quiet(&rm);
            assert!(victims(&s).is_empty(), "{v} {key}: same max");
            assert!(summaries(&s).is_empty());
            assert_eq!(queue_of(&rm, "root.a")["quota_preemption_delay"], "50ms");
            reload(&rm, &cfg(10));
            rm.rec.wait("a victim", |s| !victims(s).is_empty());
            let s = quiet(&rm);
            assert_eq!(victims(&s).len(), 1, "{v} {key}");
            let want = summary("map[memory:5]", "map[memory:5]", 3, 1);
            check_summary(v, &s, "root.a", &want);
        }
    }
}

/// Spec 16 Q19-2. Delays `0`, `0s`, `-1s` and `abc` mean off: a lowered
/// max over the usage arms nothing, releases nothing, sends no record.
#[test]
fn q19_2_zero_and_invalid_delays_never_arm() {
    for v in VERSIONS {
        for d in ["0", "0s", "-1s", "abc"] {
            let cfg = |max| leaf_with(&max_mem(max), &format!("quota.preemption.delay: {d}"));
            let rm = rm_at(v, &cfg(20), "root.a");
            place(&rm, pods("p", 3, 5));
            reload(&rm, &cfg(10));
            std::thread::sleep(Duration::from_millis(200));
            let s = quiet(&rm);
            assert!(victims(&s).is_empty(), "{v} delay {d}");
            assert!(summaries(&s).is_empty(), "{v} delay {d}");
            assert_eq!(queue_of(&rm, "root.a")["quota_preemption_delay"], "0s");
            assert_eq!(rm.memory("root.a"), 15);
        }
    }
}

/// Spec 16 Q19-3 (20 s scaled to 2 s). A delay set on the parent only is
/// the leaf's; a reload lowering the leaf's max from 300 to 200 releases
/// nothing at once, then one pod of 100 after the delay.
#[test]
fn q19_3_a_parents_delay_is_inherited_at_a_reload() {
    for v in VERSIONS {
        let tree = |max: i64| {
            let queues = format!(
                "          - name: p
            properties: {{quota.preemption.delay: 2s}}
            queues:
              - name: a
                resources: {{max: {{memory: {max}}}}}
"
            );
            partition_yaml(ON, &queues)
        };
        let rm = rm_at(v, &tree(300), "root.p.a");
        place(&rm, pods("p", 3, 100));
        reload(&rm, &tree(200));
        let s = quiet(&rm);
        assert!(victims(&s).is_empty(), "{v}: not before the delay");
        assert_eq!(queue_of(&rm, "root.p.a")["quota_preemption_delay"], "2s");
        rm.rec.wait("a victim", |s| !victims(s).is_empty());
        let s = quiet(&rm);
        assert_eq!(victims(&s).len(), 1, "{v}");
        let want = summary("map[memory:100]", "map[memory:100]", 3, 1);
        check_summary(v, &s, "root.p.a", &want);
        assert_eq!(rm.memory("root.p.a"), 300, "in flight until confirmed");
    }
}

/// Spec 16 Q19-4. A parent's property reaches an existing leaf, and so
/// does its new value at a reload (the v1.8 reference kept the leaf's old
/// map); `preemption.policy: disabled` added to the parent at a reload
/// makes the leaf's allocations no longer guarantee-preemption victims.
#[test]
fn q19_4_inherited_properties_are_applied_again_at_a_reload() {
    for v in VERSIONS {
        let tree = |props: &str| {
            let queues = format!(
                "          - name: p
            properties: {{{props}}}
            queues:
              - name: a
"
            );
            partition_yaml(ON, &queues)
        };
        let rm = rm_at(v, &tree("custom.test.property: value1"), "root.p.a");
        let a = queue_of(&rm, "root.p.a");
        assert_eq!(a["properties"]["custom.test.property"], "value1", "{a}");
        assert_eq!(a["preemption_enabled"], true);
        reload(&rm, &tree("custom.test.property: value2"));
        let a = queue_of(&rm, "root.p.a");
        assert_eq!(a["properties"]["custom.test.property"], "value2", "{a}");
        reload(
            &rm,
            &tree("custom.test.property: value2, preemption.policy: disabled"),
        );
        let a = queue_of(&rm, "root.p.a");
        assert_eq!(a["preemption_enabled"], false, "{v}: {a}");
        assert_eq!(a["properties"]["preemption.policy"], "disabled", "{a}");
    }
}

/// Spec 16 Q19-5, the rows an RM can tell apart with short delays (the
/// whole table, timers included, is `rearm`'s unit test in
/// `preempt/quota.rs`). Usage 110 in pods of 10.
///
/// One test per version: each waits out delays of about ten seconds.
#[test]
fn q19_5_arming_at_a_reload_1_8() {
    q19_5_arming_at_a_reload(VERSIONS[0]);
}

#[test]
fn q19_5_arming_at_a_reload_1_9() {
    q19_5_arming_at_a_reload(VERSIONS[1]);
}

fn q19_5_arming_at_a_reload(v: &str) {
    let cfg = |max: Option<i64>, delay: &str| {
        let res = max.map_or("{}".to_string(), max_mem);
        leaf_with(&res, &format!("quota.preemption.delay: {delay}"))
    };
    // `pods` pods of 10 placed under a max of 200, then max `first` (arms
    // it when below the usage) and `then` at a delay of 1s: past the
    // delay, nothing was released and no run was reported.
    let disarmed = |pods_n: usize, first: Option<i64>, then: Option<i64>, why: &str| {
        let rm = rm_at(v, &cfg(Some(200), "1s"), "root.a");
        place(&rm, pods("p", pods_n, 10));
        reload(&rm, &cfg(first, "1s"));
        reload(&rm, &cfg(then, "1s"));
        std::thread::sleep(Duration::from_millis(1300));
        let s = quiet(&rm);
        assert!(victims(&s).is_empty(), "{v}: {why}");
        assert!(summaries(&s).is_empty(), "{v}: {why}");
    };
    // 100 -> unset while armed: disarmed, nothing ever released.
    disarmed(11, Some(100), None, "unset max disarms");

    // 10 -> 100 while armed, usage 110: kept; the run takes 10.
    let rm = rm_at(v, &cfg(Some(200), "300ms"), "root.a");
    place(&rm, pods("p", 11, 10));
    reload(&rm, &cfg(Some(10), "300ms"));
    reload(&rm, &cfg(Some(100), "300ms"));
    rm.rec.wait("a victim", |s| !victims(s).is_empty());
    let s = quiet(&rm);
    assert_eq!(victims(&s).len(), 1, "{v}: raised but still over");
    let want = summary("map[memory:10]", "map[memory:10]", 11, 1);
    check_summary(v, &s, "root.a", &want);

    // 10 -> 100 while armed, usage 90: disarmed.
    disarmed(9, Some(10), Some(100), "raised above the usage");

    // Max unchanged, delay 0 -> 300ms, usage above: armed now.
    let rm = rm_at(v, &cfg(Some(100), "0s"), "root.a");
    place(&rm, pods("p", 11, 10));
    let s = quiet(&rm);
    assert!(victims(&s).is_empty(), "{v}: delay 0 arms nothing");
    reload(&rm, &cfg(Some(100), "300ms"));
    rm.rec.wait("a victim", |s| !victims(s).is_empty());
    assert_eq!(quiet(&rm).released.len(), 1, "{v}");

    // A lowering that leaves the usage within: unarmed.
    let rm = rm_at(v, &cfg(Some(200), "50ms"), "root.a");
    place(&rm, pods("p", 1, 5));
    reload(&rm, &cfg(Some(10), "50ms"));
    std::thread::sleep(Duration::from_millis(200));
    assert!(victims(&quiet(&rm)).is_empty(), "{v}: within the new max");

    // Armed at a lowering with 1 s, the delay then set to 4 s: the
    // start moves 3 s later, so nothing at 1.5 s; the run follows.
    let rm = rm_at(v, &cfg(Some(200), "1s"), "root.a");
    place(&rm, pods("p", 11, 10));
    reload(&rm, &cfg(Some(100), "1s"));
    reload(&rm, &cfg(Some(100), "4s"));
    std::thread::sleep(Duration::from_millis(1500));
    assert!(victims(&quiet(&rm)).is_empty(), "{v}: start moved");
    rm.rec.wait("a victim", |s| !victims(s).is_empty());

    // unset -> 50 over a usage of 80: the v1.9 reference does not arm
    // (quirk V7); sicore follows the recommendation and arms at now +
    // delay, so the run takes 30.
    let rm = rm_at(v, &cfg(None, "50ms"), "root.a");
    place(&rm, pods("p", 8, 10));
    reload(&rm, &cfg(Some(50), "50ms"));
    rm.rec.wait("victims", |s| victims(s).len() >= 3);
    let s = quiet(&rm);
    assert_eq!(victims(&s).len(), 3, "{v}: a first max arms (V7)");
    let want = summary("map[memory:30]", "map[memory:30]", 8, 3);
    check_summary(v, &s, "root.a", &want);
}

/// Spec 16 Q19-6 (5.3 ii and iii; the RM's placement of new keys is
/// `quota_v19::growth_the_rm_reports_arms_a_queue_over_its_max`). A
/// pending request the core holds back at the max is placed by the RM:
/// accepted, echoed, the queue armed, and after the delay that pod of 1
/// is the victim. A resize within the max arms nothing; one past it arms.
#[test]
fn q19_6_placing_a_pending_request_or_resizing_arms() {
    for v in VERSIONS {
        let cfg = leaf_with(&max_mem(10), "quota.preemption.delay: 50ms");
        let rm = rm_at(v, &cfg, "root.a");
        place(&rm, pods("p", 5, 2));
        rm.allocate(vec![rmv1::ask("app-1", "late", 1, 0)], vec![]);
        let s = quiet(&rm);
        assert!(!s.new.iter().any(|a| a.allocation_key == "late"), "at max");
        // The RM binds it itself.
        place(&rm, vec![running("app-1", "late", &[("memory", 1)])]);
        assert_eq!(rm.memory("root.a"), 11);
        rm.rec.wait("a victim", |s| !victims(s).is_empty());
        let s = quiet(&rm);
        assert_eq!(victims(&s), ["late"], "{v}");
        check_summary(
            v,
            &s,
            "root.a",
            &summary("map[memory:1]", "map[memory:1]", 6, 1),
        );

        let cfg = leaf_with(&max_mem(12), "quota.preemption.delay: 50ms");
        let rm = rm_at(v, &cfg, "root.a");
        let mut all = pods("p", 5, 2);
        all.push(running("app-1", "one", &[("memory", 1)]));
        place(&rm, all);
        // 2 -> 3: 12, within.
        rm.allocate(vec![running("app-1", "p0", &[("memory", 3)])], vec![]);
        std::thread::sleep(Duration::from_millis(200));
        let s = quiet(&rm);
        assert!(victims(&s).is_empty(), "{v}: resized within the max");
        assert_eq!(rm.memory("root.a"), 12);
        // 2 -> 4: 14 over 12 arms; the amount of 2 takes the pod of 1 (a
        // second pod, of 2, would pass it).
        rm.allocate(vec![running("app-1", "p1", &[("memory", 4)])], vec![]);
        rm.rec.wait("a victim", |s| !victims(s).is_empty());
        let s = quiet(&rm);
        assert_eq!(victims(&s), ["one"], "{v}");
        check_summary(
            v,
            &s,
            "root.a",
            &summary("map[memory:2]", "map[memory:1]", 6, 1),
        );
    }
}

/// Spec 16 Q19-7 (15 min scaled to 300 ms). After a restart the RM
/// reports pods totalling 6 under a max and guarantee of 5: all are
/// accepted and echoed; the delay starts again, then one run takes 1.
#[test]
fn q19_7_recovered_usage_over_the_max_is_accepted_then_enforced() {
    for v in VERSIONS {
        let cfg = leaf_with(
            "{max: {memory: 5, vcore: 2}, guaranteed: {memory: 5, vcore: 2}}",
            "quota.preemption.delay: 300ms",
        );
        let rm = rm_at(v, &cfg, "root.a");
        place(&rm, pods("r", 6, 1));
        assert_eq!(rm.rec.copy().new.len(), 6);
        assert!(rm.rec.copy().rejected.is_empty());
        rm.rec.wait("a victim", |s| !victims(s).is_empty());
        let s = quiet(&rm);
        assert_eq!(victims(&s).len(), 1, "{v}");
        // The record carries the max at the start of the run.
        check_summary(
            v,
            &s,
            "root.a",
            &summary("map[memory:1]", "map[memory:1]", 6, 1),
        );
    }
}

/// Spec 16 Q19-10 (second case), at both versions: parent guarantee 900,
/// leaf max 1000, usage 1500: the amount is 500 (the path is 600 over a
/// guarantee), so one pod of 500 goes.
#[test]
fn q19_10_a_parent_guarantee_below_the_usage_leaves_the_excess() {
    for v in VERSIONS {
        let tree = |max: i64| {
            let queues = format!(
                "          - name: p
            resources: {{guaranteed: {{memory: 900}}}}
            queues:
              - name: a
                resources: {{max: {{memory: {max}}}}}
                properties: {{quota.preemption.delay: 1ms}}
"
            );
            partition_yaml(ON, &queues)
        };
        let rm = rm_at(v, &tree(2000), "root.p.a");
        place(&rm, pods("p", 3, 500));
        reload(&rm, &tree(1000));
        rm.rec.wait("a victim", |s| !victims(s).is_empty());
        let s = quiet(&rm);
        assert_eq!(victims(&s).len(), 1, "{v}");
        let want = summary("map[memory:500]", "map[memory:500]", 3, 1);
        check_summary(v, &s, "root.p.a", &want);
    }
}

/// Spec 16 Q19-13 at both versions (the record's content is in
/// `quota_v19`): five leaves each give their 12; one record for the
/// parent at v1.9, none at v1.8; the parent is disarmed after its run, so
/// nothing more goes though it stays above its max (V6).
#[test]
fn q19_13_a_parent_split_at_both_versions() {
    for v in VERSIONS {
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
        let rm = rm_at(v, &tree(150), "root.p.l0");
        for i in 1..5 {
            rm.app(&format!("app-{}", i + 1), &format!("root.p.l{i}"));
        }
        let mut all = Vec::new();
        for i in 0..5 {
            let app = format!("app-{}", i + 1);
            all.push(running(&app, &format!("l{i}-12"), &[("memory", 12)]));
            all.push(running(&app, &format!("l{i}-13"), &[("memory", 13)]));
        }
        place(&rm, all);
        reload(&rm, &tree(20));
        rm.rec.wait("five victims", |s| victims(s).len() >= 5);
        let s = quiet(&rm);
        let want: Vec<String> = (0..5).map(|i| format!("l{i}-12")).collect();
        assert_eq!(victims(&s), want, "{v}");
        let msg = summary("map[memory:105]", "map[memory:60]", 10, 5);
        check_summary(v, &s, "root.p", &msg);
    }
}

/// Spec 16 Q19-14, event tracking off: an RM of v1.9 that does not take
/// QUEUE records gets the victims and no summary.
#[test]
fn q19_14_no_record_without_queue_records() {
    let mut o = v1_options();
    o.event_types = vec!["REQUEST".into()];
    let req = si18::RegisterResourceManagerRequest {
        rm_id: "rm1".into(),
        version: "1.9.0".into(),
        policy_group: "queues".into(),
        config: leaf_with(&max_mem(20), "quota.preemption.delay: 1ms"),
        ..Default::default()
    };
    let rm = V1Rm::registered(o, &req, false, |_| {});
    rm.node("n1", 100_000);
    rm.app("app-1", "root.a");
    place(&rm, pods("p", 3, 5));
    reload(&rm, &leaf_with(&max_mem(10), "quota.preemption.delay: 1ms"));
    rm.rec.wait("a victim", |s| !victims(s).is_empty());
    let s = quiet(&rm);
    assert_eq!(victims(&s).len(), 1);
    let queue = si18::event_record::Type::Queue as i32;
    assert!(s.events.iter().all(|e| e.r#type != queue), "{:?}", s.events);
}

/// Spec 16 Q19-20. DRAIN_NODE keeps new pods off the node and leaves the
/// running one; DRAIN_TO_SCHEDULABLE lets them back. A node registered
/// with CREATE_DRAIN and never enabled takes nothing.
#[test]
fn q19_20_cordon_and_uncordon() {
    let rm = rm_at("1.9.0", &leaf_with("{}", ""), "root.a");
    rm.allocate(vec![rmv1::ask("app-1", "first", 10, 1)], vec![]);
    rm.rec.wait("first placed", |s| s.new.len() == 1);
    let (st, msg) = rm.nodes(vec![rmv1::node_action("n1", ActionFromRm::DrainNode)]);
    assert_eq!(st, SICORE_OK, "{msg}");
    let (st, msg) = rm.nodes(vec![rmv1::node("n2", 100_000, 10)]);
    assert_eq!(st, SICORE_OK, "{msg}");
    rm.rec.wait("n2 answered", |s| {
        s.nodes_accepted.iter().any(|n| n == "n2")
    });
    rm.allocate(vec![rmv1::ask("app-1", "second", 10, 1)], vec![]);
    let s = quiet(&rm);
    assert_eq!(s.new.len(), 1, "no node takes pods: {:?}", s.new);
    assert!(s.released.is_empty(), "the running pod stays");
    assert_eq!(rm.memory("root.a"), 10);
    let (st, msg) = rm.nodes(vec![rmv1::node_action(
        "n1",
        ActionFromRm::DrainToSchedulable,
    )]);
    assert_eq!(st, SICORE_OK, "{msg}");
    rm.rec.wait("second placed", |s| s.new.len() == 2);
    assert_eq!(rm.node_of("second"), "n1");
}

/// Spec 16 Q19-21 (the core's half; holding releases before acceptance is
/// the shim's). A release and the RemoveApplication right after it, in
/// one go: the application leaves cleanly, with no error; the release is
/// confirmed once (`STOPPED_BY_RM`) and nothing else comes back.
#[test]
fn q19_21_a_release_then_remove_back_to_back() {
    let rm = rm_at("1.9.0", &leaf_with("{}", ""), "root.a");
    rm.allocate(vec![rmv1::ask("app-1", "pod", 10, 1)], vec![]);
    rm.rec.wait("pod placed", |s| s.new.len() == 1);
    rm.allocate(vec![], vec![rmv1::release("app-1", "pod")]);
    let (st, msg) = call(
        rm.sched,
        sicore_v1_update_application,
        &si18::ApplicationRequest {
            remove: vec![si18::RemoveApplicationRequest {
                application_id: "app-1".into(),
                partition_name: "default".into(),
            }],
            rm_id: "rm1".into(),
            ..Default::default()
        },
    );
    assert_eq!(st, SICORE_OK, "{msg}");
    let s = quiet(&rm);
    // The release is confirmed once, as the reference does; the removal
    // adds nothing.
    assert_eq!(s.released.len(), 1, "{:?}", s.released);
    assert_eq!(s.released[0].allocation_key, "pod");
    assert_eq!(
        s.released[0].termination_type,
        si18::TerminationType::StoppedByRm as i32
    );
    assert!(s.rejected.is_empty());
    assert!(rm.dump()["partitions"][0]["applications"]
        .as_array()
        .unwrap()
        .iter()
        .all(|a| a["id"] != "app-1"));
    let d = rm.dump();
    assert_eq!(memory_of(&d, "root.a"), 0);
    books::check_books(&d).unwrap();
}

/// Spec 16 Q19-22. sicore keeps no user/group cache: application B of
/// user u, sent without groups right after A of u with groups [g1], gets
/// [u] at once (the v1.9 reference gives [g1] for 300 s, v1.8 for ever;
/// documented difference, delta 10.2), for both RM versions.
#[test]
fn q19_22_groups_are_never_borrowed_from_an_earlier_application() {
    for v in VERSIONS {
        let rm = rm_at(v, &leaf_with("{}", ""), "root.a");
        let mut a = rmv1::app("app-a", "root.a", "u");
        a.ugi.as_mut().unwrap().groups = vec!["g1".into()];
        let b = rmv1::app("app-b", "root.a", "u");
        let (st, msg) = rm.apps(vec![a]);
        assert_eq!(st, SICORE_OK, "{msg}");
        let (st, msg) = rm.apps(vec![b]);
        assert_eq!(st, SICORE_OK, "{msg}");
        rm.rec.wait("both accepted", |s| {
            ["app-a", "app-b"]
                .iter()
                .all(|id| s.apps_accepted.iter().any(|a| a == id))
        });
        let d = rm.dump();
        let groups = |id: &str| {
            d["partitions"][0]["applications"]
                .as_array()
                .unwrap()
                .iter()
                .find(|a| a["id"] == id)
                .unwrap_or_else(|| panic!("no {id} in {d}"))["groups"]
                .clone()
        };
        assert_eq!(groups("app-a"), serde_json::json!(["g1"]), "{v}");
        assert_eq!(groups("app-b"), serde_json::json!(["u"]), "{v}");
    }
}

/// Spec 16 Q19-15. A reload lowers both `root.p` (100 -> 60) and its leaf
/// `a` (usage 60); both are armed and due at once. Only the parent runs
/// first: its 40 splits 24 / 16 by usage, so `a` gives 20 and `b` 10.
/// Then `a` is looked at alone: within a max of 50 it is disarmed, with
/// no run and no record; over a max of 30 it runs again and takes 10.
#[test]
fn q19_15_a_parent_runs_before_its_armed_leaf() {
    for v in VERSIONS {
        for a_max in [50, 30] {
            let tree = |p_max: i64, a_max: i64| {
                let queues = format!(
                    "          - name: p
            resources: {{max: {{memory: {p_max}}}}}
            properties: {{quota.preemption.delay: 1ms}}
            queues:
              - name: a
                resources: {{max: {{memory: {a_max}}}}}
              - name: b
"
                );
                partition_yaml(ON, &queues)
            };
            let rm = rm_at(v, &tree(100, 100), "root.p.a");
            rm.app("app-2", "root.p.b");
            let mut all = pods("a", 6, 10);
            all.extend((0..4).map(|i| running("app-2", &format!("b{i}"), &[("memory", 10)])));
            place(&rm, all);
            reload(&rm, &tree(60, a_max));
            let want = if a_max == 50 { 3 } else { 4 };
            rm.rec.wait("the victims", |s| victims(s).len() >= want);
            let s = quiet(&rm);
            let got = victims(&s);
            assert_eq!(got.len(), want, "{v} a max {a_max}: {got:?}");
            let from_b = got.iter().filter(|k| k.starts_with('b')).count();
            assert_eq!(from_b, 1, "{got:?}");
            let recs = summaries(&s);
            if v.starts_with("1.8") {
                assert!(recs.is_empty(), "{recs:?}");
                continue;
            }
            let parent = summary("map[memory:40]", "map[memory:30]", 10, 3);
            assert_eq!(recs[0].object_id, "root.p");
            assert_eq!(recs[0].message, parent);
            if a_max == 50 {
                assert_eq!(recs.len(), 1, "{recs:?}");
            } else {
                assert_eq!(recs.len(), 2, "{recs:?}");
                assert_eq!(recs[1].object_id, "root.p.a");
                assert_eq!(
                    recs[1].message,
                    summary("map[memory:10]", "map[memory:10]", 4, 1)
                );
            }
        }
    }
}

/// Spec 16 Q19-12 at both versions (V1): of a regular pod, an opted-out
/// one and an originator of equal size and priority, with room for one,
/// sicore takes the regular pod, the oldest, so age is not what picks it
/// (the v1.9 reference would take the originator).
#[test]
fn q19_12_the_regular_pod_goes_first_at_both_versions() {
    for v in VERSIONS {
        let cfg = |max| leaf_with(&max_mem(max), "quota.preemption.delay: 1ms");
        let rm = rm_at(v, &cfg(300), "root.a");
        let pod = |key: &str, allow_self: bool, originator: bool| si18::Allocation {
            originator,
            preemption_policy: Some(si18::PreemptionPolicy {
                allow_preempt_self: allow_self,
                allow_preempt_other: true,
            }),
            ..running("app-1", key, &[("memory", 100)])
        };
        place(&rm, vec![pod("regular", true, false)]);
        place(&rm, vec![pod("opted-out", false, false)]);
        place(&rm, vec![pod("originator", true, true)]);
        reload(&rm, &cfg(200));
        rm.rec.wait("a victim", |s| !victims(s).is_empty());
        let s = quiet(&rm);
        assert_eq!(victims(&s), ["regular"], "{v}");
        let want = summary("map[memory:100]", "map[memory:100]", 3, 1);
        check_summary(v, &s, "root.a", &want);
    }
}
