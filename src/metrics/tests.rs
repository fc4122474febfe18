use super::*;

#[test]
fn buckets_follow_the_reference_ranges() {
    assert_eq!(usage_bucket(0, 100), 0);
    assert_eq!(usage_bucket(10, 100), 0);
    assert_eq!(usage_bucket(11, 100), 1);
    assert_eq!(usage_bucket(100, 100), 9);
    assert_eq!(usage_bucket(150, 100), 9);
}

#[test]
fn usage_buckets_are_exact_at_their_edges() {
    for (used, total, bucket) in [
        (0, 10, 0),
        (1, 10, 0),
        (11, 100, 1),
        (90, 100, 8),
        (91, 100, 9),
        (100, 100, 9),
        (5, 3, 9),
        (i64::MAX, i64::MAX, 9),
        (i64::MAX / 10, i64::MAX, 0),
    ] {
        assert_eq!(usage_bucket(used, total), bucket, "{used}/{total}");
    }
}

#[test]
fn exposition_is_prometheus_text_0_0_4() {
    let om = "# HELP a_b Allocations.\n# TYPE a_b counter\n# UNIT a_b seconds\n\
              a_b_total{s=\"x\"} 3\n# HELP g A gauge.\n# TYPE g gauge\ng 1\n\
              # HELP h_total Already suffixed.\n# TYPE h_total counter\nh_total 2\n# EOF\n";
    assert_eq!(
        openmetrics_to_prometheus(om),
        "# HELP a_b_total Allocations.\n# TYPE a_b_total counter\n\
         a_b_total{s=\"x\"} 3\n# HELP g A gauge.\n# TYPE g gauge\ng 1\n\
         # HELP h_total Already suffixed.\n# TYPE h_total counter\nh_total 2\n"
    );
    let m = Metrics::new();
    m.allocated.inc_by(1);
    let text = m.encode().unwrap();
    assert!(!text.contains("# EOF"), "{text}");
    assert!(
        text.contains("# TYPE yunikorn_scheduler_container_allocation_attempt_total counter"),
        "{text}"
    );
}

#[test]
fn preemption_counters_grow_by_differences_and_queue_gauges_fall_to_zero() {
    let m = Metrics::new();
    let sample = |instance: u64, results: [u64; 5], victims: u64, preempting: i64| StateSample {
        queue_usage: vec![("root.a".into(), vec![])],
        queue_parents: vec!["root".into()],
        preemption: vec![PreemptionSample {
            partition: "default".into(),
            rm: None,
            instance,
            results,
            victims,
            attempts_exhausted: 0,
        }],
        queue_preempting: if preempting > 0 {
            vec![
                ("root".into(), vec![("memory".into(), preempting)]),
                ("root.a".into(), vec![("memory".into(), preempting)]),
            ]
        } else {
            vec![]
        },
        ..Default::default()
    };
    let attempt = |r: &str| {
        format!(
            "yunikorn_scheduler_preemption_attempt_total{{partition=\"default\",result=\"{r}\"}}"
        )
    };
    m.refresh(&sample(1, [0; 5], 0, 0));
    let text = m.encode().unwrap();
    for r in PREEMPTION_RESULTS {
        assert!(text.contains(&format!("{} 0\n", attempt(r))), "{text}");
    }
    assert!(text.contains("# TYPE yunikorn_scheduler_preemption_victim_total counter"));
    assert!(!text.contains("preempting_resource{"), "{text}");

    m.refresh(&sample(1, [1, 0, 0, 2, 0], 3, 250));
    m.refresh(&sample(1, [1, 0, 0, 2, 0], 3, 250));
    let text = m.encode().unwrap();
    assert!(
        text.contains(&format!("{} 1\n", attempt("success"))),
        "{text}"
    );
    assert!(
        text.contains(&format!("{} 2\n", attempt("rm_refused"))),
        "{text}"
    );
    assert!(
        text.contains("yunikorn_scheduler_preemption_victim_total{partition=\"default\"} 3\n"),
        "{text}"
    );
    assert!(
        text.contains("yunikorn_queue_root_a_preempting_resource{resource=\"memory\"} 250\n"),
        "{text}"
    );
    assert!(
        text.contains("yunikorn_queue_root_preempting_resource{resource=\"memory\"} 250\n"),
        "{text}"
    );
    // Confirmed: the gauges read 0. A partition made anew counts on.
    m.refresh(&sample(2, [1, 0, 0, 0, 0], 1, 0));
    let text = m.encode().unwrap();
    assert!(
        text.contains("yunikorn_queue_root_a_preempting_resource{resource=\"memory\"} 0\n"),
        "{text}"
    );
    assert!(
        text.contains(&format!("{} 2\n", attempt("success"))),
        "{text}"
    );
    assert!(
        text.contains(&format!("{} 2\n", attempt("rm_refused"))),
        "{text}"
    );
    assert!(
        text.contains("yunikorn_scheduler_preemption_victim_total{partition=\"default\"} 4\n"),
        "{text}"
    );
    // The queue is gone: no stale gauge.
    m.refresh(&StateSample::default());
    let text = m.encode().unwrap();
    assert!(!text.contains("preempting_resource{"), "{text}");
}

#[test]
fn exposition_has_reference_names() {
    let m = Metrics::new();
    m.allocated.inc_by(3);
    m.refresh(&StateSample {
        nodes: 2,
        node_usage: vec![("memory".into(), [1, 0, 0, 0, 0, 0, 0, 0, 0, 1])],
        queue_usage: vec![("root.a-b".into(), vec![("vcore".into(), 5)])],
        user_usage: vec![(
            UserLabel {
                partition: "default".into(),
                rm: None,
                user: "alice".into(),
                queue: "root.a".into(),
                resource: "memory".into(),
            },
            40,
        )],
        ..Default::default()
    });
    let text = m.encode().unwrap();
    for needle in [
        "yunikorn_scheduler_container_allocation_attempt_total{state=\"allocated\"} 3",
        "yunikorn_scheduler_node_active_total 2",
        "yunikorn_scheduler_memory_node_usage_total{range=\"(90%,100%]\"} 1",
        "yunikorn_queue_root_a_b_used_resource{resource=\"vcore\"} 5",
        "yunikorn_scheduler_user_resource_usage{partition=\"default\",user=\"alice\",queue=\"root.a\",resource=\"memory\"} 40",
        "yunikorn_scheduler_scheduling_latency_seconds_bucket{le=\"0.0001\"} 0",
        "yunikorn_event_total_created 0",
    ] {
        assert!(text.contains(needle), "missing {needle} in\n{text}");
    }
    // The queue goes away: no stale values remain.
    m.refresh(&StateSample::default());
    let text = m.encode().unwrap();
    assert!(
        !text.contains("yunikorn_queue_root_a_b_used_resource{"),
        "{text}"
    );
}
