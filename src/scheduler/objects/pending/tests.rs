use super::*;
use crate::scheduler::resource::{intern, Resource};

fn ty(name: &str) -> ResId {
    intern(name).unwrap()
}

#[test]
fn node_counts_group_by_type_and_bound_the_types() {
    let mut c = NodeCounts::default();
    let names = ["memory", "vcore", "pods", "gpu", "ephemeral"];
    c.short_of(ty("memory"));
    c.short_of(ty("memory"));
    for n in &names[1..] {
        c.short_of(ty(n));
    }
    assert_eq!(c.shorts().len(), MAX_SHORT_TYPES);
    assert_eq!(c.shorts()[0], (ty("memory"), 2));
    assert_eq!(c.short_other, 1, "the fifth type is summed");
    assert_eq!(c.short_total(), 6);
}

#[test]
fn refusals_are_grouped_truncated_and_bounded() {
    let mut c = NodeCounts::default();
    c.refused_by_rm("port 8080 in use");
    c.refused_by_rm(" port 8080 in use ");
    for i in 0..10 {
        c.refused_by_rm(&format!("taint {i}"));
    }
    c.refused_by_rm(&"x".repeat(500));
    assert_eq!(c.refused, 13);
    assert_eq!(c.refusals().len(), MAX_REFUSAL_GROUPS);
    assert_eq!(&*c.refusals()[0].0, "port 8080 in use");
    assert_eq!(c.refusals()[0].1, 2);
    let mut long = NodeCounts::default();
    long.refused_by_rm(&"é".repeat(200));
    assert!(long.refusals()[0].0.len() <= MAX_REFUSAL_TEXT);
}

#[test]
fn first_short_names_the_type_lacking() {
    let ask = Resource::from_pairs([("memory", 10), ("vcore", 1)]).unwrap();
    let free = Resource::from_pairs([("memory", 20), ("vcore", 0)]).unwrap();
    assert_eq!(ask.first_short(&free), Some(ty("vcore")));
    assert_eq!(ask.first_short(&ask), None);
}

fn headroom(queue: &str, free: i64) -> Cause {
    Cause::QueueHeadroom {
        queue: Arc::from(queue),
        resource: ty("memory"),
        asked: 10,
        free,
    }
}

#[test]
fn same_cause_keeps_since_and_counts_passes() {
    let mut r = PendingReason::new(headroom("root.a", 5), 100);
    assert!(
        !r.update(headroom("root.a", 3), None, 200),
        "amounts change, cause stays"
    );
    assert_eq!((r.since_ns, r.at_ns, r.passes), (100, 200, 2));
    assert!(r.update(headroom("root.b", 3), None, 300), "another queue");
    assert_eq!((r.since_ns, r.passes), (300, 1));
    let log = r.log_entries();
    assert_eq!(log.len(), 1, "one entry per kind");
    assert_eq!((log[0].count, log[0].last_ns), (3, 300));
}

#[test]
fn reservation_keeps_its_first_sighting() {
    let res = |node: &str, since| Cause::Reserved {
        node: Arc::from(node),
        since_ns: since,
    };
    let mut r = PendingReason::new(res("n1", 10), 10);
    r.update(res("n1", 50), None, 50);
    assert_eq!(r.cause, res("n1", 10));
    r.update(res("n2", 60), None, 60);
    assert_eq!(r.cause, res("n2", 60));
}

#[test]
fn nodes_cause_changes_with_its_dominant_group() {
    let mut a = NodeCounts::default();
    a.short_of(ty("memory"));
    a.short_of(ty("memory"));
    a.refused_by_rm("port");
    let mut b = a.clone();
    b.short_of(ty("memory"));
    assert!(Cause::Nodes(a.clone()).same_as(&Cause::Nodes(b)));
    let mut c = a.clone();
    for _ in 0..3 {
        c.refused_by_rm("port");
    }
    assert!(!Cause::Nodes(a).same_as(&Cause::Nodes(c)));
}

#[test]
fn log_is_bounded_oldest_sighting_goes() {
    let mut r = PendingReason::new(headroom("root.a", 0), 1);
    let kinds = ["gpu", "a", "b", "c", "d", "e", "f"];
    for (i, k) in kinds.iter().enumerate() {
        let mut c = NodeCounts::default();
        c.short_of(ty(k));
        r.update(Cause::Nodes(c), Some(PreemptOutcome::Fence), 10 + i as i64);
    }
    let log = r.log_entries();
    assert_eq!(log.len(), MAX_LOG);
    assert!(log.windows(2).all(|w| w[0].last_ns <= w[1].last_ns));
    assert!(!log.iter().any(|e| e.what == LogWhat::Kind("queueHeadroom")));
    assert_eq!(r.preemption, Some((16, PreemptOutcome::Fence)));
}

#[test]
fn a_reason_is_small_and_bounded() {
    // docs/why-pending.md states this size.
    let size = std::mem::size_of::<PendingReason>();
    assert!(size <= 400, "PendingReason is {size} bytes");
}

fn gang(tg: &str, placed: u64, total: u64) -> GangCounts {
    GangCounts {
        task_group: Arc::from(tg),
        placed,
        total,
    }
}

#[test]
fn a_gang_cause_is_its_task_group_whatever_its_counts() {
    let mut r = PendingReason::held(Cause::GangPlaceholders(gang("tg", 1, 3)), 100);
    assert_eq!(r.at_ns, 0, "no pass tried it");
    assert!(
        !r.update_held(Cause::GangPlaceholders(gang("tg", 2, 3)), 200),
        "counts move, cause stays"
    );
    assert_eq!((r.since_ns, r.at_ns, r.passes), (100, 0, 2));
    assert_eq!(
        r.cause.message(0),
        "gang task group tg: 2 of 3 placeholders placed"
    );
    assert!(r.update_held(Cause::GangReplacement(gang("tg", 3, 3)), 300));
    assert!(r.update_held(Cause::GangReplacement(gang("other", 1, 1)), 400));
    // A pass tried it, then it was held: the pass's time stays.
    r.update(headroom("root.a", 0), None, 500);
    assert!(r.update_held(Cause::GangReplacement(gang("tg", 3, 3)), 600));
    assert_eq!((r.since_ns, r.at_ns), (600, 500));
    assert!(r.cause.is_held() && !headroom("root.a", 0).is_held());
}

#[test]
fn an_application_slot_names_whose_limit() {
    let slot = |scope, name: &str, limit| Cause::AppSlot {
        scope,
        name: Arc::from(name),
        queue: Arc::from("root.a"),
        limit,
    };
    assert_eq!(
        slot(Scope::Queue, "", 2).message(0),
        "application waits for a running slot: queue root.a is at maxapplications 2"
    );
    assert_eq!(
        slot(Scope::Group, "dev", 1).message(0),
        "application waits for a running slot: group dev is at maxapplications 1 in queue root.a"
    );
    assert!(!slot(Scope::User, "alice", 1).same_as(&slot(Scope::User, "alice", 2)));
}
