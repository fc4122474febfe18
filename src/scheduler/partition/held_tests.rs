//! The held check (held.rs) on a partition with a manual clock: records
//! by the pass's rules, and the watch it walks.

use std::time::Duration;

use crate::scheduler::testkit::{ask, Harness, Seen};

const CONFIG: &str = "partitions:
  - name: default
    queues:
      - name: root
        submitacl: '*'
        queues:
          - name: a
            maxapplications: 1
";

const HELD: &str =
    "Request 'w' waits: application waits for a running slot: queue root.a is at maxapplications 1";

fn why(s: &Seen, key: &str) -> Vec<String> {
    s.events
        .iter()
        .filter(|e| e.object_id == key && e.reason == crate::events::REASON_PENDING)
        .map(|e| e.message.clone())
        .collect()
}

/// app-1 runs in root.a (maxapplications 1), app-2 waits with ask `w`.
fn held() -> Harness {
    let mut h = Harness::new(CONFIG);
    h.node("n1", 1000);
    h.app("app-1", "root.a");
    h.ask(ask("app-1", "f", 100, 1));
    assert_eq!(h.schedule().placed().len(), 1);
    h.app("app-2", "root.a");
    h.ask(ask("app-2", "w", 100, 1));
    // The pass above checked: the next check is a second later.
    h.advance(Duration::from_secs(1));
    h
}

#[test]
fn a_held_cause_is_recorded_once_then_once_a_minute() {
    let mut h = held();
    assert_eq!(why(&h.schedule(), "w"), [HELD]);
    // Passes and checks (one a second) for 50 s: nothing new.
    for _ in 0..50 {
        h.advance(Duration::from_secs(1));
        assert!(why(&h.schedule(), "w").is_empty());
    }
    // A minute after the first: the same line again, once.
    h.advance(Duration::from_secs(11));
    assert_eq!(why(&h.schedule(), "w"), [HELD]);
    h.advance(Duration::from_secs(1));
    assert!(why(&h.schedule(), "w").is_empty());
}

#[test]
fn the_check_runs_at_most_once_a_second() {
    let mut h = held();
    h.schedule();
    let w = h.p.apps.get("app-2").unwrap().asks.whole("w").unwrap();
    assert_eq!(w.pending.as_ref().map(|r| r.passes), Some(1), "checked");
    for _ in 0..20 {
        h.schedule();
    }
    let w = h.p.apps.get("app-2").unwrap().asks.whole("w").unwrap();
    assert_eq!(
        w.pending.as_ref().map(|r| r.passes),
        Some(1),
        "no clock move, no check"
    );
    assert_eq!(
        w.pending.as_ref().map(|r| r.at_ns),
        Some(0),
        "no pass tried it"
    );
    h.advance(Duration::from_secs(1));
    h.schedule();
    let w = h.p.apps.get("app-2").unwrap().asks.whole("w").unwrap();
    assert_eq!(w.pending.as_ref().map(|r| r.passes), Some(2));
}

#[test]
fn the_watch_keeps_only_what_may_be_held() {
    let mut h = held();
    h.schedule();
    // app-1 runs: it left the watch; app-2 is held: it stays.
    let watched: Vec<&str> = h.p.held_watch.iter().map(|k| &**k).collect();
    assert_eq!(watched, ["app-2"]);
    assert_eq!(h.p.apps.get("app-1").unwrap().held_watch, None);
    assert_eq!(h.p.apps.get("app-2").unwrap().held_watch, Some(false));
    // app-2's ask goes: nothing left to wait for, it leaves.
    h.release_ask("app-2", "w");
    h.ask(ask("app-1", "more", 2000, 1));
    h.advance(Duration::from_secs(1));
    h.schedule();
    assert!(h.p.held_watch.is_empty(), "{:?}", h.p.held_watch);
}
