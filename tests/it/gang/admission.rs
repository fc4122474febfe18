//! Gang: admission checks, bad placeholder asks and confirmations that match nothing.

use super::*;

#[test]
fn admission_checks_and_bad_placeholder_asks() {
    let yaml = "
partitions:
  - name: default
    queues:
      - name: root
        submitacl: '*'
        queues:
          - name: fairq
            properties: {application.sort.policy: fair}
          - name: small
            resources:
              max: {memory: 500}
            queues:
              - name: leaf
                resources:
                  max: {vcore: 3}
";
    let h = Harness::configured(yaml_options(yaml), 1);
    let err = h.submit(gang_app("f", "root.fairq", 100, "")).unwrap_err();
    assert_eq!(
        err,
        "queue root.fairq cannot run application f with task group request: unsupported sort type"
    );
    // The max set combines the leaf's vcore and the parent's memory.
    let err = h
        .submit(gang_app("m", "root.small.leaf", 600, ""))
        .unwrap_err();
    assert!(
        err.starts_with("queue root.small.leaf cannot fit application m: task group request"),
        "{err}"
    );
    assert!(err.contains("larger than max queue allocation"), "{err}");
    let err = h
        .submit(gang_app("v", "root.small.leaf", 400, ""))
        .unwrap_err();
    assert!(err.contains("larger than max queue allocation"), "{err}");
    h.submit(gang_app("ok", "root.small.leaf", 300, "Hard"))
        .unwrap();
    h.submit(gang_app("soft", "root.small.leaf", 300, "hard"))
        .unwrap();
    // No placeholderAsk: a fair queue is fine.
    h.submit(app("plain", "root.fairq")).unwrap();
    let d = h.dump();
    assert_eq!(app_dump(&d, "ok")["gang_style"], "Hard");
    assert_eq!(
        app_dump(&d, "soft")["gang_style"],
        "Soft",
        "style is case-sensitive"
    );
    assert!(app_dump(&d, "f").is_null() && app_dump(&d, "m").is_null());

    // A placeholder ask without a task group is rejected with the reason.
    let mut bad = placeholder_ask("ok", "nogroup", "", 100, 1);
    bad.task_group_name.clear();
    assert_eq!(h.asks(vec![bad]).0, SICORE_OK);
    h.wait("rejected ask", |s| !s.rejected_asks.is_empty());
    h.seen(|s| {
        assert_eq!(s.rejected_asks[0].allocation_key, "nogroup");
        assert!(
            s.rejected_asks[0].reason.contains("no taskGroupName"),
            "{}",
            s.rejected_asks[0].reason
        );
    });
    // A real ask whose task group has no placeholders is an ordinary ask.
    assert_eq!(
        h.asks(vec![real_ask("ok", "lonely", "nobody", 100, 1)]).0,
        SICORE_OK
    );
    h.wait("ordinary", |s| {
        s.allocations.iter().any(|a| a.allocation_key == "lonely")
    });
    assert!(h.seen(|s| s.released.is_empty()));
}

#[test]
fn confirmations_that_match_nothing_change_nothing() {
    let h = gang_harness(
        SchedulerOptions::default(),
        Behaviour::default(),
        1,
        gang_app("g", "root.a", 200, ""),
    );
    place_placeholders(&h, 2);
    let phs = placeholders_of(&h, "g");
    // Unknown UUID, and a placeholder that is not being replaced.
    assert_eq!(
        h.releases(
            vec![confirm("g", "no-such-uuid"), confirm("g", &phs[0].uuid)],
            vec![]
        )
        .0,
        SICORE_OK
    );
    h.settle();
    let d = h.dump();
    assert_eq!(
        app_dump(&d, "g")["allocations"].as_array().unwrap().len(),
        2
    );
    assert!(h.seen(|s| s.released.is_empty()));

    submit_real_and_wait_for_swap(&h);
    let rel = replaced(&h).remove(0);
    // The same confirmation twice: one real allocation.
    assert_eq!(
        h.releases(
            vec![confirm("g", &rel.uuid), confirm("g", &rel.uuid)],
            vec![]
        )
        .0,
        SICORE_OK
    );
    assert_eq!(
        h.releases(vec![confirm("g", &rel.uuid)], vec![]).0,
        SICORE_OK
    );
    h.wait("real", |s| s.allocations.len() == 3);
    h.settle();
    assert_eq!(h.seen(|s| s.allocations.len()), 3);
    assert_eq!(h.seen(|s| s.released.len()), 1, "nothing echoed");
    let d = h.dump();
    assert_eq!(d["partitions"][0]["root"]["allocated"]["memory"], 200);
    assert_eq!(node_dump(&d, "node-0")["allocated"]["memory"], 200);
    assert_eq!(
        app_dump(&d, "g")["allocations"].as_array().unwrap().len(),
        2
    );
}
