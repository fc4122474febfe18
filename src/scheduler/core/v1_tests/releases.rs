//! v1 releases by key, gang replacement and placeholder timeouts.

use super::*;

// ---------------------------------------------------------------- releases

#[test]
fn an_rm_release_removes_the_request_and_the_allocation_of_the_key() {
    let mut core = v1();
    asks(
        &mut core,
        vec![ask("app", "run", 100), ask("app", "wait", 5000)],
    );
    pass(&mut core);
    // The allocated key: echoed with STOPPED_BY_RM whatever the type.
    let s = releases(
        &mut core,
        vec![release("app", "run", T::UnknownTerminationType)],
    );
    assert_eq!(s.released_keys(T::StoppedByRm), ["run"]);
    assert_eq!(check_sums(&part(&core)), 0);
    // The pending key: its request goes, nothing to echo.
    let s = releases(&mut core, vec![release("app", "wait", T::StoppedByRm)]);
    assert!(s.released.is_empty(), "{s:?}");
    let p = part(&core);
    assert_eq!(memory_of(&p.apps[0].pending), 0);
    assert!(p.apps[0].pending_asks.is_empty());
    // Nothing is left: the application completes.
    assert_eq!(s.states_of("app"), ["Completing"]);
    // The key can be asked for again as a new request.
    asks(&mut core, vec![ask("app", "run", 100)]);
    assert_eq!(pass(&mut core).new.len(), 1);
}

#[test]
fn an_empty_key_releases_every_request_and_allocation_of_the_application() {
    let mut core = v1();
    asks(
        &mut core,
        vec![
            ask("app", "a", 100),
            ask("app", "b", 100),
            ask("app", "c", 5000),
        ],
    );
    pass(&mut core);
    let s = releases(&mut core, vec![release("app", "", T::StoppedByRm)]);
    let mut keys = s.released_keys(T::StoppedByRm);
    keys.sort();
    assert_eq!(keys, ["a", "b"]);
    let p = part(&core);
    assert_eq!(check_sums(&p), 0);
    assert_eq!(memory_of(&p.root.pending), 0);
    assert!(p.apps[0].pending_asks.is_empty());
}

/// A gang of two placeholders of 100 in `root.g`, placed on `n1`.
fn gang(core: &mut Core, placeholders: usize, want: i64) {
    add_app(core, "g", "root.g", Some(want));
    let phs = (0..placeholders)
        .map(|i| testkit::group_ask("g", &format!("ph{i}"), "tg", 100, 1, true))
        .collect();
    asks(core, phs);
}

#[test]
fn placeholder_replacement_is_confirmed_by_key() {
    let mut core = v1();
    gang(&mut core, 2, 200);
    let s = pass(&mut core);
    assert_eq!(s.new.len(), 2);
    assert_eq!(s.states_of("g"), ["Running"], "no Starting");
    asks(
        &mut core,
        vec![testkit::group_ask("g", "real0", "tg", 100, 1, false)],
    );
    let s = pass(&mut core);
    let replaced = s.released_keys(T::PlaceholderReplaced);
    assert_eq!(replaced.len(), 1);
    let ph = replaced[0].to_string();
    assert!(s.new.is_empty());
    // Re-sending the real request while the swap is in flight: nothing.
    assert!(asks(
        &mut core,
        vec![testkit::group_ask("g", "real0", "tg", 100, 1, false)]
    )
    .is_silent());
    assert!(pass(&mut core).is_silent());
    // The RM confirms: the real allocation is reported in `new`, by key.
    releases(&mut core, vec![release("g", &ph, T::PlaceholderReplaced)]);
    let s = pass(&mut core);
    assert_eq!(s.new, [("real0".into(), "real0".into(), "n1".into())]);
    assert!(s.released.is_empty());
    let p = part(&core);
    assert_eq!(check_sums(&p), 200);
    let g = p.apps.iter().find(|a| a.id == "g").unwrap();
    assert_eq!(g.allocated, m(100));
    assert_eq!(g.placeholder, m(100));
}

#[test]
fn stopping_the_real_allocation_of_a_swap_in_flight_undoes_the_swap() {
    let mut core = v1();
    gang(&mut core, 1, 100);
    pass(&mut core);
    asks(
        &mut core,
        vec![testkit::group_ask("g", "real", "tg", 100, 1, false)],
    );
    let s = pass(&mut core);
    assert_eq!(s.released_keys(T::PlaceholderReplaced), ["ph0"]);
    // The real pod is deleted before the placeholder is confirmed gone.
    let s = releases(&mut core, vec![release("g", "real", T::StoppedByRm)]);
    assert!(s.released.is_empty(), "{s:?}");
    // The placeholder's confirmation then removes it like a release; no
    // real allocation appears.
    let s = releases(&mut core, vec![release("g", "ph0", T::PlaceholderReplaced)]);
    assert_eq!(s.released_keys(T::StoppedByRm), ["ph0"]);
    assert!(pass(&mut core).new.is_empty());
    let p = part(&core);
    assert_eq!(check_sums(&p), 0);
    assert!(p.apps.iter().all(|a| a.allocations.is_empty()));
}

#[test]
fn a_confirmed_timeout_produces_no_further_message() {
    let (mut core, clock) = core_of(Edition::V1, |o| {
        o.placeholder_timeout = Duration::from_secs(60)
    });
    node_answers(&mut core, vec![(node("n1", 1), 1000)]);
    // Three placeholders of 100 wanted, two placed, one real allocation:
    // the gang runs, and the timeout releases the placeholders left.
    gang(&mut core, 2, 300);
    asks(&mut core, vec![ask("g", "plain", 100)]);
    let s = pass(&mut core);
    assert_eq!(s.new.len(), 3);
    clock.advance(Duration::from_secs(61));
    core.tick();
    let s = seen(&mut core);
    let mut timed_out = s.released_keys(T::Timeout);
    timed_out.sort();
    assert_eq!(timed_out, ["ph0", "ph1"], "{s:?}");
    // The RM deletes them and confirms: they go, silently.
    let s = releases(
        &mut core,
        vec![
            release("g", "ph0", T::Timeout),
            release("g", "ph1", T::Timeout),
        ],
    );
    assert!(s.released.is_empty() && s.new.is_empty(), "{s:?}");
    let p = part(&core);
    assert_eq!(check_sums(&p), 100);
    assert!(p.apps[0].placeholder.values().all(|v| *v == 0));
    // A second confirmation of the same key is harmless.
    assert!(releases(&mut core, vec![release("g", "ph0", T::Timeout)]).is_silent());
}

#[test]
fn the_timeout_of_a_pending_placeholder_is_an_ask_release_and_its_confirmation_is_silent() {
    let (mut core, clock) = core_of(Edition::V1, |o| {
        o.placeholder_timeout = Duration::from_secs(60)
    });
    node_answers(&mut core, vec![(node("n1", 1), 150)]);
    // Two placeholders of 100 on 150: one placed, one pending.
    gang(&mut core, 2, 200);
    let s = pass(&mut core);
    assert_eq!(s.new.len(), 1);
    let placed_ph = s.new[0].0.clone();
    let pending_ph = if placed_ph == "ph0" { "ph1" } else { "ph0" };
    clock.advance(Duration::from_secs(61));
    core.tick();
    let s = seen(&mut core);
    // One TIMEOUT per key: the pending request as an ask release, the
    // placed placeholder as an allocation release.
    let asks_released: Vec<&str> = s
        .released_asks
        .iter()
        .map(|r| r.allocationkey.as_str())
        .collect();
    assert_eq!(asks_released, [pending_ph]);
    assert!(s
        .released_asks
        .iter()
        .all(|r| r.termination_type == T::Timeout as i32));
    assert_eq!(s.released_keys(T::Timeout), [placed_ph.as_str()]);
    assert_eq!(s.states_of("g"), ["Resuming"]);
    // The RM confirms both keys with TIMEOUT.
    let s = releases(&mut core, vec![release("g", pending_ph, T::Timeout)]);
    assert!(s.is_silent(), "nothing left for the pending one: {s:?}");
    let s = releases(&mut core, vec![release("g", &placed_ph, T::Timeout)]);
    assert!(s.released.is_empty(), "{s:?}");
    assert_eq!(s.states_of("g"), ["Accepted"], "soft gang resumes");
    assert_eq!(check_sums(&part(&core)), 0);
}
