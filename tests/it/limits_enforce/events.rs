//! Limits: user quota events and application records, once per transition.

use super::*;

#[test]
fn user_quota_events_once_per_transition() {
    // L19
    let dir = temp_config_dir("limits-events");
    let capped = yaml(
        "- {users: [testuser], maxresources: {memory: 1, vcore: 1}}\n",
        "- name: a\n",
    );
    let mut o = dir_options(&dir, &capped);
    o.event_flush_interval_ms = 20;
    // Room for the ask once the cap goes (the event store keeps only the
    // latest record per ask, so a queue refusal would replace the "fits").
    let h = Harness::configured(o, 2);
    h.submit(app_by("app-1", "root.a", "testuser", &[]))
        .unwrap();
    assert_eq!(
        h.asks(vec![ask("app-1", "alloc-0", 100, 10, 1)]).0,
        SICORE_OK
    );
    h.wait("quota event", |s| {
        s.events.iter().any(|e| e.reason == "UserQuotaExceeded")
    });
    // More passes: no second event.
    h.submit(app_by("other", "root.a", "someone", &[])).unwrap();
    assert_eq!(h.asks(vec![ask("other", "o", 1, 1, 1)]).0, SICORE_OK);
    h.wait("other allocated", |s| s.allocations.len() == 1);
    h.settle();
    h.seen(|s| {
        let quota: Vec<&si::EventRecord> = s
            .events
            .iter()
            .filter(|e| e.reason.starts_with("UserQuota"))
            .collect();
        assert_eq!(quota.len(), 1, "{quota:?}");
        let e = quota[0];
        assert_eq!(e.r#type, si::event_record::Type::Request as i32);
        assert_eq!(e.object_id, "alloc-0");
        assert_eq!(e.group_id, "app-1");
        assert_eq!(
            e.message,
            "Request 'alloc-0' exceeds the available user quota (requested map[memory:100 vcore:10], available map[memory:1 vcore:1])"
        );
    });
    // The cap goes: one "fits" event, and the ask is allocated.
    std::fs::write(dir.join("queues.yaml"), yaml("", "- name: a\n")).unwrap();
    assert_eq!(h.reload("rm").0, SICORE_OK);
    h.wait("fits event", |s| {
        s.events.iter().any(|e| e.reason == "UserQuotaAvailable")
    });
    h.wait("allocated", |s| {
        s.allocations.iter().any(|a| a.allocation_key == "alloc-0")
    });
    h.settle();
    h.seen(|s| {
        let fits: Vec<&si::EventRecord> = s
            .events
            .iter()
            .filter(|e| e.reason == "UserQuotaAvailable")
            .collect();
        assert_eq!(fits.len(), 1);
        assert_eq!(
            fits[0].message,
            "Request 'alloc-0' fits in the available user quota"
        );
    });
}

#[test]
fn app_records_once_per_quota_transition() {
    // limits.md 6.2 / L20: an application held in Accepted by a user's
    // maxapplications gets one APP record when held and one when it may
    // run again, however many passes see it; the dump shows the state.
    let h = second_app_held_by_the_cap();
    // More passes (another user's work) see app-2 again: no repeat.
    h.submit(app_by("other", "root.default", "someone", &[]))
        .unwrap();
    assert_eq!(h.asks(vec![ask("other", "o", 10, 1, 1)]).0, SICORE_OK);
    h.wait("other allocated", |s| {
        s.allocations.iter().any(|a| a.application_id == "other")
    });
    h.settle();
    let quota = |s: &Seen| -> Vec<si::EventRecord> {
        s.events
            .iter()
            .filter(|e| e.reason.starts_with("App") && e.reason.ends_with("Quota"))
            .cloned()
            .collect()
    };
    let held = h.seen(quota);
    assert_eq!(held.len(), 1, "{held:?}");
    assert_eq!(held[0].r#type, si::event_record::Type::App as i32);
    assert_eq!(held[0].object_id, "app-2");
    assert!(
        held[0].message.contains("app-2") && held[0].message.contains("maxapplications"),
        "{:?}",
        held[0]
    );
    // Its state record of the same flush is not hidden by it.
    h.seen(|s| {
        assert!(s
            .events
            .iter()
            .any(|e| e.object_id == "app-2" && e.reason == "Accepted"));
    });
    let d = h.dump();
    assert_eq!(app_entry(&d, "app-2")["held_by_limits"], true);
    assert_eq!(app_entry(&d, "app-1")["held_by_limits"], false);
    // app-1 stops: app-2 is runnable (one record) and allocated.
    assert_eq!(
        h.releases(
            vec![si::AllocationRelease {
                partition_name: "default".into(),
                application_id: "app-1".into(),
                uuid: h.seen(|s| s.allocations[0].uuid.clone()),
                termination_type: si::TerminationType::StoppedByRm as i32,
                message: String::new(),
            }],
            vec![si::AllocationAskRelease {
                partition_name: "default".into(),
                application_id: "app-1".into(),
                allocationkey: String::new(),
                termination_type: si::TerminationType::StoppedByRm as i32,
                message: String::new(),
            }],
        )
        .0,
        SICORE_OK
    );
    h.wait("app-2 allocated", |s| {
        s.allocations.iter().any(|a| a.application_id == "app-2")
    });
    h.wait("runnable record", |s| {
        s.events.iter().any(|e| e.reason == "AppRunnableQuota")
    });
    h.settle();
    let all = h.seen(quota);
    let reasons: Vec<&str> = all.iter().map(|e| e.reason.as_str()).collect();
    assert_eq!(
        reasons,
        ["AppCannotRunQuota", "AppRunnableQuota"],
        "{all:?}"
    );
    assert!(all.iter().all(|e| e.object_id == "app-2"));
    assert_eq!(app_entry(&h.dump(), "app-2")["held_by_limits"], false);
}

#[test]
fn app_records_stay_off_by_default_and_the_dump_still_shows_the_hold() {
    // A v0.12 RM gets REQUEST and NODE records by default: no APP record
    // reaches it, the dump says which application is held.
    let queues = "- name: default\n  limits:\n    - {users: ['*'], maxapplications: 1}\n";
    let h = Harness::configured(options(&yaml("", queues)), 1);
    h.submit(app_by("app-1", "root.default", "u", &[])).unwrap();
    assert_eq!(h.asks(vec![ask("app-1", "k1", 10, 1, 1)]).0, SICORE_OK);
    h.wait("app-1 allocated", |s| s.allocations.len() == 1);
    h.submit(app_by("app-2", "root.default", "u", &[])).unwrap();
    assert_eq!(h.asks(vec![ask("app-2", "k2", 10, 1, 1)]).0, SICORE_OK);
    h.wait_dump("app-2 held", |d| {
        app_entry(d, "app-2")["held_by_limits"] == true
    });
    h.settle();
    h.seen(|s| {
        assert!(
            !s.events
                .iter()
                .any(|e| e.r#type == si::event_record::Type::App as i32),
            "{:?}",
            s.events
        )
    });
}

#[test]
fn a_fits_again_record_is_not_hidden_by_the_queue_refusal_of_the_same_pass() {
    // The user cap goes while the queue's max still refuses the ask: the
    // same pass says "fits in the user quota" and "does not fit the
    // queue" for one ask. Both reach the RM, the transition once.
    let dir = temp_config_dir("limits-fits-queue");
    let queue = "- name: a\n  resources:\n    max: {memory: 50, vcore: 10}\n";
    let capped = yaml("- {users: [testuser], maxresources: {memory: 1}}\n", queue);
    let mut o = dir_options(&dir, &capped);
    o.event_flush_interval_ms = 20;
    let h = Harness::configured(o, 1);
    h.submit(app_by("app-1", "root.a", "testuser", &[]))
        .unwrap();
    assert_eq!(h.asks(vec![ask("app-1", "big", 100, 1, 1)]).0, SICORE_OK);
    h.wait("exceeds record", |s| {
        s.events.iter().any(|e| e.reason == "UserQuotaExceeded")
    });
    std::fs::write(dir.join("queues.yaml"), yaml("", queue)).unwrap();
    assert_eq!(h.reload("rm").0, SICORE_OK);
    h.wait("queue refusal after the reload", |s| {
        let fits = s
            .events
            .iter()
            .position(|e| e.reason == "UserQuotaAvailable");
        fits.is_some_and(|i| {
            s.events[i..]
                .iter()
                .any(|e| e.reason == "InsufficientQueueResources" && e.object_id == "big")
        })
    });
    h.settle();
    h.seen(|s| {
        let fits: Vec<&si::EventRecord> = s
            .events
            .iter()
            .filter(|e| e.reason == "UserQuotaAvailable")
            .collect();
        assert_eq!(fits.len(), 1, "{fits:?}");
        assert_eq!(fits[0].object_id, "big");
    });
    assert_eq!(h.allocs_of("app-1"), 0);
}
