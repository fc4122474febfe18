//! v1 requests by key: one allocation per request, resizes, placed allocations.

use super::*;

// ---------------------------------------------------------------- identity

#[test]
fn the_allocation_key_is_the_uuid_and_one_request_gives_one_allocation() {
    let mut core = v1();
    let s = asks(&mut core, vec![ask("app", "pod-1", 100)]);
    assert!(s.new.is_empty() && s.rejected.is_empty());
    assert_eq!(s.states_of("app"), ["Accepted"]);
    let s = pass(&mut core);
    assert_eq!(s.new, [("pod-1".into(), "pod-1".into(), "n1".into())]);
    // The RM re-sends the same allocation on any change: nothing new.
    let again = asks(&mut core, vec![ask("app", "pod-1", 100)]);
    assert!(again.is_silent(), "{again:?}");
    assert!(pass(&mut core).new.is_empty(), "never a second allocation");
    let p = part(&core);
    assert_eq!(check_sums(&p), 100);
    assert!(memory_of(&p.apps[0].pending) == 0 && memory_of(&p.root.pending) == 0);
}

#[test]
fn a_request_for_more_than_one_allocation_is_rejected() {
    let mut core = v1();
    let s = asks(&mut core, vec![testkit::ask("app", "k", 100, 2)]);
    assert_eq!(s.rejected.len(), 1);
    assert_eq!(s.rejected[0].allocation_key, "k");
    assert!(s.rejected[0].reason.contains("maxAllocations 2"), "{s:?}");
    assert!(pass(&mut core).new.is_empty());
}

#[test]
fn v012_partitions_keep_minting_uuids_and_repeats() {
    let (mut core, _) = core_of(Edition::V012, |_| {});
    node_answers(&mut core, vec![(node("n1", 1), 1000)]);
    add_app(&mut core, "app", "root.a", None);
    seen(&mut core);
    assert!(asks(&mut core, vec![testkit::ask("app", "k", 100, 2)])
        .rejected
        .is_empty());
    let s = pass(&mut core);
    assert_eq!(s.new.len(), 2);
    assert!(s.new.iter().all(|(k, u, _)| k == "k" && u != "k"));
    assert_ne!(s.new[0].1, s.new[1].1);
    // The state machine still has Starting.
    assert_eq!(s.states_of("app"), ["Starting", "Running"]);
}

// ------------------------------------------------------------------ resize

#[test]
fn an_allocated_key_with_other_resources_is_resized_everywhere() {
    let mut core = v1();
    asks(&mut core, vec![ask("app", "k", 100)]);
    pass(&mut core);
    // Grow past the node's capacity: the RM runs it, so it counts.
    let s = asks(&mut core, vec![ask("app", "k", 1500)]);
    assert!(s.is_silent(), "{s:?}");
    let p = part(&core);
    assert_eq!(check_sums(&p), 1500);
    let n = node_snap(&p, "n1");
    assert_eq!(n.allocated, m(1500));
    assert_eq!(memory_of(&n.available), -500);
    assert_eq!(p.apps[0].allocated, m(1500));
    assert_eq!(queue_allocated(&p, "root.a"), m(1500));
    assert_eq!(memory_of(&p.root.pending), 0);
    // A new ask finds no room; the shrink gives it back.
    asks(&mut core, vec![ask("app", "k2", 200)]);
    assert!(pass(&mut core).new.is_empty());
    asks(&mut core, vec![ask("app", "k", 50)]);
    let p = part(&core);
    assert_eq!(check_sums(&p), 50);
    assert_eq!(p.apps[0].allocated, m(50));
    assert_eq!(pass(&mut core).new.len(), 1);
    assert_eq!(check_sums(&part(&core)), 250);
}

#[test]
fn a_pending_key_with_other_resources_replaces_the_request() {
    let mut core = v1();
    asks(&mut core, vec![ask("app", "k", 2000)]);
    assert!(pass(&mut core).new.is_empty(), "does not fit");
    assert_eq!(part(&core).root.pending, m(2000));
    asks(&mut core, vec![ask("app", "k", 300)]);
    assert_eq!(part(&core).root.pending, m(300));
    let s = pass(&mut core);
    assert_eq!(s.new, [("k".into(), "k".into(), "n1".into())]);
    assert_eq!(check_sums(&part(&core)), 300);
}

#[test]
fn a_resize_past_an_i64_is_rejected_and_changes_nothing() {
    let mut core = v1();
    place(&mut core, vec![placed("app", "big", i64::MAX - 10, "n1")]);
    asks(&mut core, vec![ask("app", "k", 100)]);
    // k is pending (the node is full); place it with the RM.
    place(&mut core, vec![placed("app", "k", 5, "n1")]);
    let s = asks(&mut core, vec![ask("app", "k", 100)]);
    assert_eq!(s.rejected.len(), 1, "{s:?}");
    assert!(s.rejected[0].reason.contains("overflow"), "{s:?}");
    let p = part(&core);
    assert_eq!(check_sums(&p), i64::MAX - 5);
}

// ------------------------------------------------------------------ placed

#[test]
fn a_placed_allocation_is_added_at_once_and_echoed() {
    let mut core = v1();
    // Over the node's capacity, and on a draining node: it runs already.
    node_answers(&mut core, vec![(node("n2", CREATE_DRAIN), 100)]);
    let s = place(&mut core, vec![placed("app", "p1", 400, "n2")]);
    assert_eq!(s.new, [("p1".into(), "p1".into(), "n2".into())]);
    assert!(s.rejected.is_empty());
    assert_eq!(s.states_of("app"), ["Accepted", "Running"], "no Starting");
    let p = part(&core);
    assert_eq!(check_sums(&p), 400);
    assert_eq!(node_snap(&p, "n2").allocated, m(400));
    assert_eq!(p.apps[0].allocated, m(400));
    // The same message again, and again with another node: nothing.
    assert!(place(&mut core, vec![placed("app", "p1", 400, "n2")]).is_silent());
    assert!(place(&mut core, vec![placed("app", "p1", 400, "n1")]).is_silent());
    // Other resources: a resize, not echoed.
    assert!(place(&mut core, vec![placed("app", "p1", 40, "n2")]).is_silent());
    assert_eq!(check_sums(&part(&core)), 40);
    // Released by key like any other.
    let s = releases(&mut core, vec![release("app", "p1", T::StoppedByRm)]);
    assert_eq!(s.released_keys(T::StoppedByRm), ["p1"]);
    assert_eq!(check_sums(&part(&core)), 0);
}

#[test]
fn a_pending_request_placed_by_the_rm_becomes_its_allocation() {
    let mut core = v1();
    asks(&mut core, vec![ask("app", "k", 5000)]);
    pass(&mut core);
    assert_eq!(part(&core).apps[0].pending, m(5000));
    let s = place(&mut core, vec![placed("app", "k", 5000, "n1")]);
    assert_eq!(s.new, [("k".into(), "k".into(), "n1".into())]);
    let p = part(&core);
    assert_eq!(memory_of(&p.apps[0].pending), 0);
    assert_eq!(memory_of(&p.root.pending), 0);
    assert_eq!(check_sums(&p), 5000);
    assert!(pass(&mut core).new.is_empty(), "nothing left to schedule");
}

#[test]
fn placed_allocations_that_cannot_be_taken_are_rejected() {
    let mut core = v1();
    let mut placeholder_without_group = placed("app", "ph", 10, "n1");
    placeholder_without_group.ask.placeholder = true;
    let mut elsewhere = placed("app", "other-partition", 10, "n1");
    elsewhere.ask.partition = Arc::from("nowhere");
    let s = place(
        &mut core,
        vec![
            placed("nope", "k1", 10, "n1"),
            placed("app", "k2", 10, "n9"),
            placed("app", "k3", 0, "n1"),
            placed("app", "k4", -5, "n1"),
            elsewhere,
            placeholder_without_group,
        ],
    );
    let keys: Vec<&str> = s
        .rejected
        .iter()
        .map(|r| r.allocation_key.as_str())
        .collect();
    assert_eq!(keys, ["k1", "k2", "k3", "k4", "other-partition"], "{s:?}");
    assert!(s.rejected[0].reason.contains("application nope"));
    assert!(s.rejected[1].reason.contains("node n9"));
    assert!(s.rejected[4].reason.contains("partition"));
    assert!(s.new.is_empty());
    assert_eq!(check_sums(&part(&core)), 0);
    assert_eq!(app_state(&core, "app"), "New");
}

#[test]
fn placed_placeholders_follow_the_gang_rules() {
    let (mut core, clock) = core_of(Edition::V1, |o| {
        o.placeholder_timeout = Duration::from_secs(60)
    });
    node_answers(&mut core, vec![(node("n1", 1), 1000)]);
    add_app(&mut core, "g", "root.g", Some(200));
    let ph = |key: &str| PlacedAllocation {
        ask: testkit::group_ask("g", key, "tg", 100, 1, true),
        node: Arc::from("n1"),
    };
    let s = place(&mut core, vec![ph("ph0")]);
    assert_eq!(s.states_of("g"), ["Accepted"], "not all placeholders yet");
    let s = place(&mut core, vec![ph("ph1")]);
    assert_eq!(s.new, [("ph1".into(), "ph1".into(), "n1".into())]);
    assert_eq!(s.states_of("g"), ["Running"], "the gang assembled");
    let p = part(&core);
    assert_eq!(p.apps[0].placeholder, m(200));
    assert!(memory_of(&p.apps[0].allocated) == 0);
    assert_eq!(check_sums(&p), 200);
    // Real members replace them as for placeholders the core placed.
    asks(
        &mut core,
        vec![testkit::group_ask("g", "r0", "tg", 100, 1, false)],
    );
    assert_eq!(
        pass(&mut core).released_keys(T::PlaceholderReplaced).len(),
        1
    );
    // The placeholder timer was armed by the first one: the unused
    // placeholder goes back on timeout.
    clock.advance(Duration::from_secs(61));
    core.tick();
    assert_eq!(seen(&mut core).released_keys(T::Timeout).len(), 1);
}

#[test]
fn v012_partitions_refuse_v1_shapes() {
    let (mut core, _) = core_of(Edition::V012, |_| {});
    node_answers(&mut core, vec![(node("n1", 1), 1000)]);
    add_app(&mut core, "app", "root.a", None);
    seen(&mut core);
    let s = send(
        &mut core,
        Update {
            placed: vec![placed("app", "p", 10, "n1")],
            foreign: vec![foreign("f", "n1", 10)],
            ..Default::default()
        },
    );
    assert_eq!(s.rejected.len(), 2);
    assert!(
        s.rejected.iter().all(|r| r.reason.contains("SI v0.12")),
        "{s:?}"
    );
    let p = part(&core);
    assert_eq!(check_sums(&p), 0);
    assert!(node_snap(&p, "n1").occupied.is_empty());
}

#[test]
fn a_placed_allocation_past_an_i64_is_rejected_and_changes_nothing() {
    let mut core = v1();
    place(&mut core, vec![placed("app", "a", i64::MAX, "n1")]);
    let s = place(&mut core, vec![placed("app", "b", 1, "n1")]);
    assert_eq!(s.rejected.len(), 1);
    assert!(s.rejected[0].reason.contains("overflow"), "{s:?}");
    assert!(s.new.is_empty());
    assert_eq!(check_sums(&part(&core)), i64::MAX);
}

#[test]
fn a_key_used_by_another_application_is_rejected() {
    let mut core = v1();
    add_app(&mut core, "other", "root.a", None);
    place(&mut core, vec![placed("app", "k", 10, "n1")]);
    seen(&mut core);
    let s = place(&mut core, vec![placed("other", "k", 10, "n1")]);
    assert_eq!(s.rejected.len(), 1);
    assert!(s.rejected[0]
        .reason
        .contains("allocated to application app"));
    let s = asks(&mut core, vec![ask("other", "k", 20)]);
    assert_eq!(s.rejected.len(), 1);
    assert_eq!(check_sums(&part(&core)), 10);
}
