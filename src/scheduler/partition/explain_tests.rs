//! A pass that finds an ask's cause again only counts it on the ask
//! (objects/pending/stamp.rs): what the reason reads, and the REQUEST
//! records made, are those of writing the reason on every pass.

use std::time::Duration;

use crate::scheduler::objects::pending::{Cause, LogWhat, PendingReason};
use crate::scheduler::resource::intern;
use crate::scheduler::testkit::{ask, Harness, Seen, ONE_LEAF};

fn waiting() -> Harness {
    let mut h = Harness::new(ONE_LEAF);
    for n in 0..3 {
        h.node(&format!("n{n}"), 1000);
    }
    h.app("app", "root.a");
    h.ask(ask("app", "big", 2000, 1));
    h
}

fn reason(h: &Harness) -> PendingReason {
    let app = h.p.apps().get("app").expect("app");
    let ask = app.asks.whole("big").expect("ask");
    ask.reason().expect("a reason").into_owned()
}

fn why_records(s: &Seen) -> Vec<String> {
    s.events
        .iter()
        .filter(|e| e.reason == crate::events::REASON_PENDING)
        .map(|e| e.message.clone())
        .collect()
}

fn now_ns(h: &Harness) -> i64 {
    use crate::scheduler::clock::Clock;
    h.clock.unix_nanos()
}

#[test]
fn passes_that_find_the_same_cause_read_as_if_each_wrote_it() {
    let mut h = waiting();
    let first = h.schedule();
    assert_eq!(
        why_records(&first),
        ["Request 'big' waits: 0/3 nodes fit: 3 short of memory"]
    );
    let r1 = reason(&h);
    let mut expected = r1.clone();
    for _ in 0..4 {
        h.advance(Duration::from_secs(1));
        let s = h.schedule();
        assert!(
            why_records(&s).is_empty(),
            "no record while the cause stays"
        );
        let at = now_ns(&h);
        // What writing the reason on this pass would have made.
        expected.update(expected.cause.clone(), None, at);
        let got = reason(&h);
        assert_eq!(got.passes, expected.passes);
        assert_eq!(got.at_ns, at);
        assert_eq!(got.since_ns, r1.since_ns);
        assert_eq!(got.log_entries(), expected.log_entries());
        assert_eq!(got.cause, expected.cause);
    }
    assert_eq!(reason(&h).passes, 5);
    let short = LogWhat::Short(intern("memory").unwrap());
    let log = reason(&h).log_entries();
    assert_eq!(log.len(), 1);
    assert_eq!((log[0].what, log[0].count), (short, 5));
}

#[test]
fn the_minute_record_and_a_change_are_still_made() {
    let mut h = waiting();
    h.schedule();
    h.advance(Duration::from_secs(30));
    assert!(why_records(&h.schedule()).is_empty());
    // A minute after the last record: the same cause is told again.
    h.advance(Duration::from_secs(31));
    assert_eq!(
        why_records(&h.schedule()),
        ["Request 'big' waits: 0/3 nodes fit: 3 short of memory"]
    );
    assert!(why_records(&h.schedule()).is_empty());
    // The counted passes were taken in when the record was written.
    assert_eq!(reason(&h).passes, 4);
    // A fourth node changes the counts, not the kind of cause: the reason
    // reads the new counts (a new cause id), no record before the minute.
    h.node("n3", 1000);
    assert!(why_records(&h.schedule()).is_empty());
    let r = reason(&h);
    assert_eq!(r.passes, 5);
    assert!(matches!(&r.cause, Cause::Nodes(c) if c.examined == 4));
    assert_eq!(r.cause.message(4), "0/4 nodes fit: 4 short of memory");
    // A node that fits ends the wait.
    h.node("n4", 4000);
    assert_eq!(h.schedule().placed(), [("big".into(), "n4".into())]);
}

#[test]
fn the_counted_passes_are_kept_when_the_cause_changes() {
    let mut h = waiting();
    for _ in 0..3 {
        h.advance(Duration::from_secs(1));
        h.schedule();
    }
    let before = reason(&h);
    assert_eq!(before.passes, 3);
    // A new node changes the cause's counts: the reason is written.
    h.advance(Duration::from_secs(1));
    h.schedule();
    let after = reason(&h);
    let log = after.log_entries();
    // The short-of-memory line counted every pass, written or not.
    assert_eq!(log[0].count, 4);
    assert_eq!(log[0].last_ns, now_ns(&h));
}

#[test]
fn a_node_reserved_for_another_ask_is_told_only_where_it_had_room() {
    let mut h = Harness::with(ONE_LEAF, |t| {
        t.reservation_delay = Some(Duration::from_secs(2));
    });
    h.node("n0", 1000);
    h.node("n1", 300);
    h.app("app", "root.a");
    h.ask(ask("app", "fill", 600, 1));
    assert_eq!(h.schedule().placed(), [("fill".into(), "n0".into())]);
    // 400 free on n0: "big" fits n0 but not now, and reserves it once old
    // enough (n1 is too small for it).
    h.app("b", "root.a");
    h.ask(ask("b", "big", 500, 1));
    h.schedule();
    h.advance(Duration::from_secs(2));
    h.schedule();
    let n0 = h.p.nodes().slot_of("n0").unwrap();
    assert_eq!(h.p.reservations().on_node(n0).map(|r| &*r.key), Some("big"));
    // "small" would fit the room the reservation holds on n0; "mid" would
    // not. Neither fits n1.
    h.app("c", "root.a");
    h.ask(ask("c", "small", 350, 1));
    h.ask(ask("c", "mid", 450, 1));
    assert!(h.schedule().placed().is_empty());
    let view = |key: &str| {
        let app = h.p.apps().get("c").expect("app");
        let ask = app.asks.whole(key).expect("ask");
        ask.reason().expect("a reason").cause.message(2)
    };
    assert_eq!(
        view("small"),
        "0/2 nodes fit: 1 short of memory, 1 reserved for another ask"
    );
    assert_eq!(view("mid"), "0/2 nodes fit: 2 short of memory");
}
