//! Gang: soft and hard placeholder timeouts, before, after and during swaps.

use super::*;

#[test]
fn soft_gang_timeout_resumes_and_returns_to_accepted() {
    let mut a = gang_app("g", "root.a", 300, "Soft");
    a.execution_timeout_milli_seconds = 150;
    let h = gang_harness(fast_events(), Behaviour::default(), 1, a);
    // Only two of the three placeholders are asked for: the gang never completes.
    assert_eq!(
        h.asks(vec![
            placeholder_ask("g", "ph", "tg", 100, 2),
            // Another group's real ask waits while placeholders are held.
            real_ask("g", "real", "other", 100, 3)
        ])
        .0,
        SICORE_OK
    );
    h.wait("placeholders", |s| s.allocations.len() == 2);
    h.wait("resuming", |s| {
        s.app_updates.iter().any(|u| u.state == "Resuming")
    });
    h.wait("releases", |s| {
        s.released_asks.len() == 2 && s.released.len() == 2
    });
    h.seen(|s| {
        let u = s
            .app_updates
            .iter()
            .find(|u| u.state == "Resuming")
            .unwrap();
        assert_eq!(u.message, "ResourceReservationTimeout");
        let keys: HashSet<&str> = s
            .released_asks
            .iter()
            .map(|r| r.allocationkey.as_str())
            .collect();
        assert_eq!(keys, HashSet::from(["ph", "real"]));
        for r in &s.released_asks {
            assert_eq!(r.termination_type, TIMEOUT);
            assert_eq!(r.partition_name, "[rm]default");
            assert_eq!(
                r.message,
                "releasing placeholders asks on placeholder timeout"
            );
        }
        for r in &s.released {
            assert_eq!(r.termination_type, TIMEOUT);
            assert_eq!(
                r.message,
                "releasing allocated placeholders on placeholder timeout"
            );
        }
    });
    h.wait("timeout event", |s| {
        s.events.iter().any(|e| {
            e.object_id == "g" && (e.reason == "PlaceholderTimeout" || e.reason == "Resuming")
        })
    });
    let d = h.dump();
    let ad = app_dump(&d, "g");
    assert_eq!(ad["state"], "Resuming");
    assert!(ad["pending_asks"].as_array().unwrap().is_empty());
    assert_eq!(ad["releasing_placeholders"].as_array().unwrap().len(), 2);
    // The RM stops the placeholders; once the last is gone: Accepted.
    let rels: Vec<si::AllocationRelease> =
        h.seen(|s| s.released.iter().map(|r| stopped("g", &r.uuid)).collect());
    assert_eq!(h.releases(vec![rels[0].clone()], vec![]).0, SICORE_OK);
    h.wait("first echo", |s| s.released.len() == 3);
    assert_eq!(app_dump(&h.dump(), "g")["state"], "Resuming");
    assert_eq!(h.releases(vec![rels[1].clone()], vec![]).0, SICORE_OK);
    h.wait("accepted again", |s| {
        s.app_updates
            .iter()
            .filter(|u| u.state == "Accepted")
            .count()
            == 2
    });
    assert_eq!(states(&h, "g"), ["Accepted", "Resuming", "Accepted"]);
    let d = h.dump();
    assert!(
        d["partitions"][0]["root"]["allocated"]["memory"].is_null()
            || d["partitions"][0]["root"]["allocated"]["memory"] == 0
    );
    // Resubmitted as ordinary asks, the real ones are scheduled normally.
    assert_eq!(
        h.asks(vec![real_ask("g", "real", "tg", 100, 1)]).0,
        SICORE_OK
    );
    h.wait("ordinary allocation", |s| {
        s.allocations.iter().any(|a| a.allocation_key == "real")
    });
}

#[test]
fn hard_gang_timeout_fails_the_application() {
    let o = SchedulerOptions {
        placeholder_timeout_ms: Some(150),
        ..Default::default()
    };
    let h = gang_harness(
        o,
        Behaviour::default(),
        1,
        gang_app("g", "root.a", 300, "Hard"),
    );
    assert_eq!(
        h.dump()["partitions"][0]["applications"][0]["gang_style"],
        "Hard"
    );
    place_placeholders(&h, 1);
    h.wait("failing", |s| {
        s.app_updates.iter().any(|u| u.state == "Failing")
    });
    h.wait("release", |s| {
        s.released.len() == 1 && s.released_asks.len() == 1
    });
    let uuid = h.seen(|s| s.released[0].uuid.clone());
    assert_eq!(h.releases(vec![stopped("g", &uuid)], vec![]).0, SICORE_OK);
    h.wait("failed", |s| {
        s.app_updates.iter().any(|u| u.state == "Failed")
    });
    assert_eq!(states(&h, "g"), ["Accepted", "Failing", "Failed"]);
    let d = h.dump();
    assert!(d["partitions"][0]["applications"]
        .as_array()
        .unwrap()
        .is_empty());
    assert_eq!(
        d["partitions"][0]["completed_applications"][0]["state"],
        "Failed"
    );
    assert!(node_dump(&d, "node-0")["allocations"]
        .as_array()
        .unwrap()
        .is_empty());
}

#[test]
fn timeout_after_the_gang_started_releases_only_unused_placeholders() {
    let mut a = gang_app("g", "root.a", 200, "Hard");
    a.execution_timeout_milli_seconds = 2000;
    let h = gang_harness(SchedulerOptions::default(), Behaviour::default(), 1, a);
    assert_eq!(
        h.asks(vec![placeholder_ask("g", "ph", "tg", 100, 2)]).0,
        SICORE_OK
    );
    h.wait("starting", |s| {
        s.app_updates.iter().any(|u| u.state == "Starting")
    });
    assert_eq!(
        h.asks(vec![real_ask("g", "real", "tg", 100, 1)]).0,
        SICORE_OK
    );
    h.wait("replacement", |s| {
        s.released.iter().any(|r| r.termination_type == PR)
    });
    let rel = replaced(&h).remove(0);
    assert_eq!(
        h.releases(vec![confirm("g", &rel.uuid)], vec![]).0,
        SICORE_OK
    );
    h.wait("real", |s| s.allocations.len() == 3);
    h.wait("leftover released", |s| {
        s.released.iter().any(|r| r.termination_type == TIMEOUT)
    });
    h.seen(|s| {
        let t: Vec<&si::AllocationRelease> = s
            .released
            .iter()
            .filter(|r| r.termination_type == TIMEOUT)
            .collect();
        assert_eq!(t.len(), 1);
        assert_ne!(t[0].uuid, rel.uuid);
        assert_eq!(
            t[0].message,
            "releasing allocated placeholders on placeholder timeout"
        );
        assert!(s.released_asks.is_empty(), "no ask release once started");
    });
    assert_eq!(states(&h, "g"), ["Accepted", "Starting"]);
}

#[test]
fn timeout_undoes_swaps_in_flight_and_late_confirmations_release() {
    let mut a = gang_app("g", "root.a", 300, "Soft");
    a.execution_timeout_milli_seconds = 1500;
    let h = gang_harness(SchedulerOptions::default(), with_predicates(), 3, a);
    place_placeholders(&h, 2);
    let phs = placeholders_of(&h, "g");
    // Cross-node swap in flight when the timer fires.
    h.rec.behaviour.lock().unwrap().refuse_nodes = phs.iter().map(|p| p.node_id.clone()).collect();
    assert_eq!(
        h.asks(vec![real_ask("g", "real", "tg", 100, 1)]).0,
        SICORE_OK
    );
    h.wait("replacement", |s| {
        s.released.iter().any(|r| r.termination_type == PR)
    });
    let rel = replaced(&h).remove(0);
    h.wait("timeout releases", |s| {
        s.released
            .iter()
            .filter(|r| r.termination_type == TIMEOUT)
            .count()
            == 2
    });
    let d = h.dump();
    let ad = app_dump(&d, "g");
    assert_eq!(ad["state"], "Resuming");
    assert!(
        ad["replacements"].as_array().unwrap().is_empty(),
        "swap undone"
    );
    let used: i64 = d["partitions"][0]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["allocated"]["memory"].as_i64().unwrap_or(0))
        .sum();
    assert_eq!(used, 200, "the real allocation left its node");
    // The RM confirms the replacement late: released like a normal release.
    let others: Vec<si::AllocationRelease> = phs
        .iter()
        .filter(|p| p.uuid != rel.uuid)
        .map(|p| stopped("g", &p.uuid))
        .collect();
    assert_eq!(
        h.releases(vec![confirm("g", &rel.uuid)], vec![]).0,
        SICORE_OK
    );
    assert_eq!(h.releases(others, vec![]).0, SICORE_OK);
    h.wait("accepted", |s| {
        s.app_updates
            .iter()
            .filter(|u| u.state == "Accepted")
            .count()
            == 2
    });
    assert_eq!(
        h.seen(|s| s
            .released
            .iter()
            .filter(|r| r.termination_type == STOPPED)
            .count()),
        2
    );
    assert_eq!(
        h.seen(|s| s.allocations.len()),
        2,
        "the real allocation never landed"
    );
    let d = h.dump();
    assert!(d["partitions"][0]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .all(|n| n["allocations"].as_array().unwrap().is_empty()));
}
