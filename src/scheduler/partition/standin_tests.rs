//! The stand-in a fully allocated ask leaves under its key
//! (objects/ask.rs): compact, and every reader of a stand-in still
//! answers as it did with the whole ask.

use std::collections::BTreeMap;

use crate::proto::si::v1::TerminationType;
use crate::scheduler::objects::ask::AskEntry;
use crate::scheduler::objects::queue::ROOT;
use crate::scheduler::testkit::{ask, group_ask, res, Harness, ONE_LEAF};

/// One node of 1000 memory, application `app` in `root.a`.
fn one_node() -> Harness {
    let mut h = Harness::new(ONE_LEAF);
    h.node("n1", 1000);
    h.app("app", "root.a");
    h
}

fn entry<'a>(h: &'a Harness, key: &str) -> &'a AskEntry {
    &h.p.apps["app"].asks[key]
}

/// The pending sums as listed (zero quantities included): the
/// application's, root's and the leaf's.
fn listed(h: &Harness) -> Vec<BTreeMap<String, i64>> {
    let leaf = h.p.apps["app"].queue;
    vec![
        h.p.apps["app"].pending.to_named(),
        h.p.queues.get(ROOT).pending.to_named(),
        h.p.queues.get(leaf).pending.to_named(),
    ]
}

#[test]
fn a_fully_allocated_ask_becomes_a_compact_stand_in() {
    let mut h = one_node();
    h.ask(ask("app", "x", 100, 2));
    let seq = entry(&h, "x").seq();
    let prio = entry(&h, "x").priority();
    // The first of two repeats: still whole, still waiting.
    let mut one = ask("app", "y", 900, 1);
    one.priority = 5;
    h.ask(one);
    assert_eq!(h.schedule().allocated.len(), 2, "y, then one of x");
    assert!(entry(&h, "x")
        .whole()
        .is_some_and(|a| a.pending_repeat == 1));
    assert!(entry(&h, "y").placed().is_some());
    h.release("app", "", TerminationType::StoppedByRm);
    h.ask(ask("app", "z", 100, 1));
    assert_eq!(h.schedule().allocated.len(), 2);
    let e = entry(&h, "x");
    assert!(matches!(e, AskEntry::Placed(p) if p.seq == seq && !p.required_node));
    assert_eq!((e.seq(), e.priority(), e.pending_repeat()), (seq, prio, 0));
    assert!(!e.has_required_node() && !e.placeholder());
    assert!(!h.p.is_waiting("app", "x") && h.p.waiting_asks == 0);
    // What the whole ask gave: no demand left, the types still listed.
    assert_eq!(listed(&h), vec![res(&[("memory", 0)]).to_named(); 3]);
}

#[test]
fn a_re_sent_key_replaces_its_stand_in() {
    let mut h = one_node();
    h.ask(ask("app", "x", 100, 1));
    h.schedule();
    assert!(entry(&h, "x").placed().is_some());
    // Replacing an allocated ask adds a waiting one (SI v0.12).
    assert!(h.p.adds_waiting("app", "x"));
    h.ask(ask("app", "x", 200, 1));
    let a = entry(&h, "x").whole().expect("whole again");
    assert_eq!(
        (a.pending_repeat, &a.resource),
        (1, &res(&[("memory", 200)]))
    );
    assert_eq!(listed(&h), vec![res(&[("memory", 200)]).to_named(); 3]);
    assert_eq!(h.p.waiting_asks, 1);
    let seen = h.schedule();
    assert_eq!(seen.allocated.len(), 1);
    assert_eq!(&*seen.allocated[0].key, "x");
    assert_eq!(h.uuids_of("app").len(), 2);
    assert!(entry(&h, "x").placed().is_some());
}

#[test]
fn removing_a_stand_in_changes_no_pending_sum() {
    let mut h = one_node();
    h.ask(ask("app", "x", 100, 1));
    h.ask(ask("app", "w", 2000, 1)); // never fits: demand stays
    h.schedule();
    assert!(entry(&h, "x").placed().is_some());
    let before = listed(&h);
    h.release_ask("app", "x");
    assert!(h.p.apps["app"].asks.get("x").is_none());
    assert_eq!(listed(&h), before);
    // Its allocation stays (an ask release takes no allocation).
    assert_eq!(h.uuids_of("app").len(), 1);
}

#[test]
fn a_resize_to_an_unlisted_type_keeps_the_stand_in_s_resource() {
    let mut h = one_node();
    h.ask(ask("app", "x", 100, 1));
    h.schedule();
    let uuid = h.uuids_of("app")[0].clone();
    // A resize within the listed types keeps the compact form.
    h.p.resize_allocation(&uuid, &res(&[("memory", 150)]))
        .expect("resized");
    assert!(matches!(entry(&h, "x"), AskEntry::Placed(_)));
    // A new type: the whole ask's removal would list it at zero, so the
    // stand-in keeps the resource for that.
    let grown = res(&[("memory", 150), ("vcore", 2)]);
    h.p.resize_allocation(&uuid, &grown).expect("resized");
    match entry(&h, "x") {
        AskEntry::PlacedListing(b) => assert_eq!(b.1, grown),
        e => panic!("not a listing stand-in: {e:?}"),
    }
    assert_eq!(listed(&h), vec![res(&[("memory", 0)]).to_named(); 3]);
    h.release_ask("app", "x");
    let zeros = res(&[("memory", 0), ("vcore", 0)]).to_named();
    assert_eq!(listed(&h), vec![zeros; 3]);
}

#[test]
fn placeholders_and_swapped_real_asks_stay_whole() {
    let mut h = Harness::new(ONE_LEAF);
    h.node("n1", 300);
    h.gang_app("g", "root.a", 300, "");
    h.ask(group_ask("g", "ph", "workers", 100, 3, true));
    assert_eq!(h.schedule().allocated.len(), 3);
    // The gang's counts read a placeholder's task group.
    let ph = &h.p.apps["g"].asks["ph"];
    assert!(ph
        .whole()
        .is_some_and(|a| a.placeholder && a.pending_repeat == 0));
    h.ask(group_ask("g", "worker", "workers", 100, 3, false));
    let swap = h.schedule();
    let replaced = swap.released_as(TerminationType::PlaceholderReplaced);
    assert_eq!(replaced.len(), 3);
    // An unlink may reopen a swap's real ask: it stays whole.
    let w = &h.p.apps["g"].asks["worker"];
    assert!(w.whole().is_some_and(|a| a.pending_repeat == 0));
    assert_eq!(
        crate::scheduler::partition::gang_waiting(&h.p.apps["g"]).len(),
        1
    );
}
