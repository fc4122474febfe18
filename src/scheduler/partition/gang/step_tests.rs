//! Gang swaps, their confirmation and the placeholder timeout, driven step
//! by step (see `scheduler::testkit`).

use std::collections::BTreeSet;
use std::time::Duration;

use crate::proto::si::v1::TerminationType;
use crate::scheduler::gang::{MSG_ASK_TIMEOUT, MSG_PLACEHOLDER_TIMEOUT};
use crate::scheduler::testkit::{group_ask, Harness, Seen, ONE_LEAF};

/// Two nodes of 300 memory; gang application `g` wanting 300 of
/// placeholders, three of 100 placed.
fn gang(style: &str, timeout: Option<Duration>) -> (Harness, Seen) {
    let mut h = Harness::with(ONE_LEAF, |t| {
        if let Some(d) = timeout {
            t.placeholder = d;
        }
    });
    h.node("n1", 300);
    h.node("n2", 300);
    h.gang_app("g", "root.a", 300, style);
    h.ask(group_ask("g", "ph", "workers", 100, 3, true));
    let seen = h.schedule();
    (h, seen)
}

fn uuids(seen: &[&crate::proto::si::v1::AllocationRelease]) -> BTreeSet<String> {
    seen.iter().map(|r| r.uuid.clone()).collect()
}

#[test]
fn placeholders_start_the_gang_and_real_asks_swap_in_on_confirmation() {
    let (mut h, seen) = gang("", None);
    assert_eq!(seen.allocated.len(), 3);
    assert!(seen.allocated.iter().all(|a| a.placeholder));
    // The placeholders add up to placeholderAsk: the gang starts.
    assert_eq!(seen.states_of("g"), ["Starting"]);
    let phs: BTreeSet<String> = seen.allocated.iter().map(|a| a.uuid.to_string()).collect();
    let node_of = |u: &str| {
        let a = seen.allocated.iter().find(|a| a.uuid == *u).unwrap();
        a.node.to_string()
    };

    // Real members replace the placeholders: the RM is told to stop each
    // one, and gets no real allocation yet.
    h.ask(group_ask("g", "worker", "workers", 100, 3, false));
    let swap = h.schedule();
    assert!(swap.allocated.is_empty());
    let replaced = swap.released_as(TerminationType::PlaceholderReplaced);
    assert_eq!(uuids(&replaced), phs);
    let reals: Vec<String> = replaced
        .iter()
        .map(|r| {
            r.message
                .strip_prefix("replacing UUID: ")
                .unwrap()
                .to_string()
        })
        .collect();

    // Confirmation: the real allocation lands on its placeholder's node at
    // the start of the next pass.
    for r in &replaced {
        let seen = h.release("g", &r.uuid, TerminationType::PlaceholderReplaced);
        assert!(seen.released.is_empty() && seen.allocated.is_empty());
    }
    let landed = h.schedule();
    assert_eq!(landed.allocated.len(), 3);
    for (r, real) in replaced.iter().zip(&reals) {
        let a = landed.allocated.iter().find(|a| a.uuid == **real).unwrap();
        assert!(!a.placeholder);
        assert_eq!(&*a.key, "worker");
        assert_eq!(a.node.to_string(), node_of(&r.uuid));
    }
    assert_eq!(h.uuids_of("g").len(), 3);
    assert_eq!(h.p.apps["g"].gang.placeholders, 0);
    assert_eq!(
        h.p.apps["g"].allocated(),
        &crate::scheduler::testkit::res(&[("memory", 300)])
    );
}

#[test]
fn a_confirmation_that_matches_no_swap_changes_nothing() {
    let (mut h, seen) = gang("", None);
    let ph = seen.allocated[0].uuid.to_string();
    let seen = h.release("g", &ph, TerminationType::PlaceholderReplaced);
    assert!(seen.released.is_empty() && seen.allocated.is_empty());
    assert_eq!(h.uuids_of("g").len(), 3);
    assert!(h.schedule().allocated.is_empty());
}

#[test]
fn a_hard_gang_that_never_assembles_fails_on_the_placeholder_timeout() {
    let mut h = Harness::with(ONE_LEAF, |t| t.placeholder = Duration::from_secs(60));
    h.node("n1", 300);
    h.gang_app("g", "root.a", 300, "Hard");
    // Two of the three placeholders: the gang never completes.
    h.ask(group_ask("g", "ph", "workers", 100, 2, true));
    let placed = h.schedule();
    assert_eq!(placed.allocated.len(), 2);
    assert!(h.advance(Duration::from_secs(59)).states.is_empty());
    let seen = h.advance(Duration::from_secs(1));
    let (_, state, message) = seen.states.first().expect("a state change");
    assert_eq!(
        (state.as_str(), message.as_str()),
        ("Failing", "ResourceReservationTimeout")
    );
    let asks: Vec<&str> = seen
        .released_asks
        .iter()
        .map(|r| r.allocationkey.as_str())
        .collect();
    assert_eq!(asks, ["ph"]);
    assert!(seen
        .released_asks
        .iter()
        .all(|r| r.termination_type == TerminationType::Timeout as i32
            && r.message == MSG_ASK_TIMEOUT));
    let released = seen.released_as(TerminationType::Timeout);
    let want: BTreeSet<String> = placed
        .allocated
        .iter()
        .map(|a| a.uuid.to_string())
        .collect();
    assert_eq!(uuids(&released), want);
    assert!(released
        .iter()
        .all(|r| r.message == MSG_PLACEHOLDER_TIMEOUT));
    // The placeholders stay until the RM confirms them gone.
    assert_eq!(h.uuids_of("g").len(), 2);
}

#[test]
fn after_the_gang_started_the_timeout_releases_only_unused_placeholders() {
    let (mut h, seen) = gang("Soft", Some(Duration::from_secs(30)));
    assert_eq!(seen.states_of("g"), ["Starting"]);
    // One real member replaces one placeholder and is confirmed.
    h.ask(group_ask("g", "worker", "workers", 100, 1, false));
    let swap = h.schedule();
    let replaced = swap.released_as(TerminationType::PlaceholderReplaced);
    assert_eq!(replaced.len(), 1);
    let used = replaced[0].uuid.clone();
    h.release("g", &used, TerminationType::PlaceholderReplaced);
    assert_eq!(h.schedule().allocated.len(), 1);
    let seen = h.advance(Duration::from_secs(30));
    let released = seen.released_as(TerminationType::Timeout);
    let want: BTreeSet<String> = h
        .uuids_of("g")
        .iter()
        .filter(|u| h.p.allocations.get(u).is_some_and(|a| a.placeholder))
        .map(|u| u.to_string())
        .collect();
    assert_eq!(want.len(), 2);
    assert_eq!(uuids(&released), want);
    assert!(!want.contains(&used));
    assert!(seen.released_asks.is_empty());
    assert!(seen.states.is_empty(), "the application keeps its state");
}
