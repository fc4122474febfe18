//! Guarantee preemption through the C ABI, as a v0.12 RM sees it
//! (`shared/spec/policy/preemption.md`, `summary.md` 3.3): the victims'
//! releases with `PREEMPTED_BY_SCHEDULER`, the stand-in
//! `Predicates{allocate: false}` checks, the RM's confirmation and the
//! preemptor's allocation; no allocation lost or counted twice.

use std::collections::HashMap;

use crate::common::preempt::{assert_no_preemption, confirmation, predicates_rm, preempted};
use crate::common::*;
use serde_json::Value;
use sicore::ffi::*;

/// Leaves `a` (guarantee 500) and `b` (guarantee 1000, delay 1 ms, so the
/// test never waits the default 30 s); preemption as `switch`.
fn config(switch: &str) -> String {
    config_with(switch, "")
}

/// [`config`] with more leaves under root.
fn config_with(switch: &str, more: &str) -> String {
    let queues = "          - name: a
            resources: {guaranteed: {memory: 500}}
            properties: {application.sort.policy: fifo}
          - name: b
            resources: {guaranteed: {memory: 1000}}
            properties: {application.sort.policy: fifo, preemption.delay: 1ms}
";
    partition_yaml(switch, &format!("{queues}{more}"))
}

/// Two nodes of 1000 filled by four allocations of 500 of `app-1` in
/// `root.a`; the RM then refuses `Predicates` on node-0.
fn filled(switch: &str) -> Harness {
    filled_with(yaml_options(&config(switch)))
}

fn filled_with(options: sicore::proto::sicore::v1::SchedulerOptions) -> Harness {
    let h = predicates_rm(options, &[("node-0", 1000, 10), ("node-1", 1000, 10)]);
    h.submit(app("app-1", "root.a")).unwrap();
    assert_eq!(
        h.asks(vec![ask("app-1", "a", 500, 1, 4)]).0,
        sicore_status::SICORE_OK
    );
    h.wait("app-1 fills the nodes", |s| s.allocations.len() == 4);
    h.rec
        .behaviour
        .lock()
        .unwrap()
        .refuse_nodes
        .insert("node-0".into());
    h.submit(app("app-2", "root.b")).unwrap();
    assert_eq!(
        h.asks(vec![ask("app-2", "b", 500, 1, 1)]).0,
        sicore_status::SICORE_OK
    );
    h
}

#[test]
fn a_refused_node_keeps_its_allocations_and_the_preemptor_gets_the_next_node() {
    let h = filled("    preemption: {enabled: true}\n");
    h.wait("a victim", |s| !preempted(s).is_empty());
    h.settle();
    let node_of: HashMap<String, String> = h.seen(|s| {
        s.allocations
            .iter()
            .map(|a| (a.uuid.clone(), a.node_id.clone()))
            .collect()
    });
    let victims = h.seen(preempted);
    assert_eq!(victims.len(), 1, "{victims:?}");
    let v = &victims[0];
    assert_eq!(v.application_id, "app-1");
    assert_eq!(v.partition_name, "default");
    assert_eq!(
        node_of[&v.uuid], "node-1",
        "nothing goes on the refused node"
    );
    assert_eq!(
        v.message,
        "preempting allocations to free up resources to run ask: b"
    );
    h.seen(|s| {
        // The stand-in check asked about node-0 (refused) and node-1.
        let checks: Vec<&str> = s
            .predicate_calls
            .iter()
            .filter(|p| p.allocation_key == "b" && !p.allocate)
            .map(|p| p.node_id.as_str())
            .collect();
        assert!(
            checks.contains(&"node-0") && checks.contains(&"node-1"),
            "{checks:?}"
        );
        // Nothing allocated yet: the victim still holds its resources.
        assert_eq!(s.allocations.len(), 4);
    });
    // The victim is still counted in its queue until the RM confirms.
    let d = h.dump();
    assert_eq!(memory_of(&d, "root.a"), 2000);
    // The RM confirms; the preemptor gets the freed node.
    let confirm = confirmation("app-1", &v.uuid);
    assert_eq!(
        h.releases(vec![confirm], vec![]).0,
        sicore_status::SICORE_OK
    );
    h.wait("the preemptor's allocation", |s| s.allocations.len() == 5);
    h.settle();
    h.seen(|s| {
        let b = s
            .allocations
            .iter()
            .find(|a| a.allocation_key == "b")
            .unwrap();
        assert_eq!(b.node_id, "node-1");
        assert_eq!(b.application_id, "app-2");
        // Exactly one preemption: a second would release another victim.
        assert_eq!(preempted(s).len(), 1);
    });
    // No allocation lost or counted twice.
    let d = h.dump();
    assert_eq!(memory_of(&d, "root.a"), 1500);
    assert_eq!(memory_of(&d, "root.b"), 500);
    assert_eq!(memory_of(&d, "root"), 2000);
    // A REQUEST event on the victim (spec 15).
    h.wait("the victim's event", |s| {
        s.events.iter().any(|e| {
            e.object_id == "a"
                && e.group_id == "app-1"
                && e.message == "Preempted by b from application app-2 in root.b"
        })
    });
}

#[test]
fn without_the_switch_a_v012_partition_never_preempts() {
    let h = filled("");
    // Passes run while app-2 waits; give several of them time.
    assert_no_preemption(&h, 4);
}

/// The books across victim release, confirmation and the preemptors'
/// allocations: three preemptors of two queues in one pass take three
/// distinct victims on three distinct nodes, each is allocated on the node
/// its victim left, and every queue's allocated equals what the RM holds.
#[test]
fn three_preemptors_in_one_pass_balance_the_books() {
    let queues = "          - name: a
            resources: {guaranteed: {memory: 1000}}
            properties: {application.sort.policy: fifo}
          - name: b
            resources: {guaranteed: {memory: 1000}}
            properties: {application.sort.policy: fifo, preemption.delay: 1ms}
          - name: c
            resources: {guaranteed: {memory: 1000}}
            properties: {application.sort.policy: fifo, preemption.delay: 1ms}
";
    let nodes = [
        ("node-0", 1000, 10),
        ("node-1", 1000, 10),
        ("node-2", 1000, 10),
    ];
    let yaml = partition_yaml("    preemption: {enabled: true}\n", queues);
    let h = predicates_rm(yaml_options(&yaml), &nodes);
    h.submit(app("app-1", "root.a")).unwrap();
    assert_eq!(
        h.asks(vec![ask("app-1", "a", 250, 1, 12)]).0,
        sicore_status::SICORE_OK
    );
    h.wait("app-1 fills the nodes", |s| s.allocations.len() == 12);
    h.submit(app("app-2", "root.b")).unwrap();
    h.submit(app("app-3", "root.c")).unwrap();
    let asks = vec![
        ask("app-2", "b1", 250, 1, 1),
        ask("app-2", "b2", 250, 1, 1),
        ask("app-3", "c1", 250, 1, 1),
    ];
    assert_eq!(h.asks(asks).0, sicore_status::SICORE_OK);
    h.wait("three victims", |s| preempted(s).len() >= 3);
    h.settle();
    let victims = h.seen(preempted);
    assert_eq!(victims.len(), 3, "{victims:?}");
    let node_of: HashMap<String, String> = h.seen(|s| {
        s.allocations
            .iter()
            .map(|a| (a.uuid.clone(), a.node_id.clone()))
            .collect()
    });
    let mut victim_nodes: Vec<&str> = victims.iter().map(|v| node_of[&v.uuid].as_str()).collect();
    victim_nodes.sort();
    assert_eq!(victim_nodes, ["node-0", "node-1", "node-2"]);
    let confirms = victims
        .iter()
        .map(|v| confirmation(&v.application_id, &v.uuid))
        .collect();
    assert_eq!(h.releases(confirms, vec![]).0, sicore_status::SICORE_OK);
    h.wait("the preemptors' allocations", |s| s.allocations.len() == 15);
    h.settle();
    let (live, per_app) = h.seen(|s| {
        assert_eq!(preempted(s).len(), 3, "no further victim");
        let gone: std::collections::HashSet<&str> =
            s.released.iter().map(|r| r.uuid.as_str()).collect();
        let mut per_app: HashMap<String, i64> = HashMap::new();
        let mut live = 0;
        for a in &s.allocations {
            if !gone.contains(a.uuid.as_str()) {
                live += 1;
                *per_app.entry(a.application_id.clone()).or_default() += 250;
            }
        }
        // Each preemptor landed where its victim left.
        let mut pre_nodes: Vec<&str> = s
            .allocations
            .iter()
            .filter(|a| a.application_id != "app-1")
            .map(|a| a.node_id.as_str())
            .collect();
        pre_nodes.sort();
        assert_eq!(pre_nodes, ["node-0", "node-1", "node-2"]);
        (live, per_app)
    });
    assert_eq!(live, 12);
    let d = h.dump();
    for (q, app) in [
        ("root.a", "app-1"),
        ("root.b", "app-2"),
        ("root.c", "app-3"),
    ] {
        assert_eq!(memory_of(&d, q), per_app[app], "{q}");
    }
    assert_eq!(per_app["app-1"], 2250);
    assert_eq!(memory_of(&d, "root"), 3000);
}

fn metrics_text(h: &Harness) -> String {
    let mut out = sicore_buffer::empty();
    let mut err = sicore_buffer::empty();
    assert_eq!(
        sicore_metrics(h.sched, &mut out, &mut err),
        sicore_status::SICORE_OK
    );
    take_string(out)
}

/// Polls the metrics (refreshed once a second) until every line is there.
fn metrics_until(h: &Harness, lines: &[&str]) -> String {
    crate::restkit::scrape_until(
        lines,
        || metrics_text(h),
        |text, l| text.lines().any(|t| t == l),
    )
}

/// What an operator sees of one preemption: the REST queue entries
/// (the reference's v1.8 preemption fields, the victims' resources in
/// `preemptingResource` until the RM confirms), the victim's allocation
/// entry marked `preempted`, and the metrics counting the attempt, its
/// outcome and its victim, with the per-queue preempting gauge.
#[test]
fn an_operator_sees_the_preemption_in_rest_and_metrics() {
    let more = "          - name: c
            properties: {preemption.policy: disabled, preemption.quota.delay: 2m}
          - name: d
            properties: {preemption.policy: Fence}
";
    let mut o = yaml_options(&config_with("    preemption: {enabled: true}\n", more));
    o.rest_address = "127.0.0.1:0".into();
    let h = filled_with(o);
    let addr = crate::restkit::rest_address(h.sched);
    h.wait("a victim", |s| !preempted(s).is_empty());
    let victim = h.seen(preempted)[0].uuid.clone();

    // REST serves a snapshot a moment old: polled until the victim shows.
    let tree = crate::restkit::poll("REST to show the victim", || {
        let t = crate::restkit::get_json(&addr, "/ws/v1/partition/default/queues");
        crate::restkit::queue_entry(&t, "root.a")?.get("preemptingResource")?;
        Some(t)
    });
    let a = crate::restkit::queue_entry(&tree, "root.a").unwrap();
    assert_eq!(
        a["preemptingResource"],
        serde_json::json!({"memory": 500, "vcore": 1}),
        "{a}"
    );
    assert_eq!(a["preemptionEnabled"], true);
    assert_eq!(a["isPreemptionFence"], false);
    assert_eq!(a["preemptionDelay"], "30s");
    assert_eq!(a["quotaPreemptionDelay"], "0s");
    let root = crate::restkit::queue_entry(&tree, "root").unwrap();
    assert_eq!(
        root["preemptingResource"],
        serde_json::json!({"memory": 500, "vcore": 1}),
        "{root}"
    );
    let b = crate::restkit::queue_entry(&tree, "root.b").unwrap();
    assert_eq!(b["preemptionDelay"], "1ms");
    assert!(b.get("preemptingResource").is_none(), "{b}");
    let c = crate::restkit::queue_entry(&tree, "root.c").unwrap();
    assert_eq!(c["preemptionEnabled"], false);
    assert_eq!(c["quotaPreemptionDelay"], "2m0s");
    let d = crate::restkit::queue_entry(&tree, "root.d").unwrap();
    assert_eq!(d["isPreemptionFence"], true);
    assert_eq!(d["preemptionEnabled"], true);

    let apps =
        crate::restkit::get_json(&addr, "/ws/v1/partition/default/queue/root.a/applications");
    let allocs: Vec<&Value> = apps
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|a| a["allocations"].as_array().unwrap())
        .collect();
    assert_eq!(allocs.len(), 4);
    // v1.x allocations carry no UUID: the one victim is the one marked.
    let marked: Vec<&&Value> = allocs
        .iter()
        .filter(|a| a.get("preempted") == Some(&Value::Bool(true)))
        .collect();
    assert_eq!(marked.len(), 1, "{allocs:?}");

    // One attempt (node-0 refused, node-1 taken), one victim. The refresh
    // creates the outcome series one by one: every line checked is waited for.
    let zero: Vec<String> = [
        "rm_refused",
        "no_candidate_node",
        "queue_guarantee_check_failed",
        "short_of_resources",
    ]
    .iter()
    .map(|r| {
        format!(
            "yunikorn_scheduler_preemption_attempt_total{{partition=\"default\",result=\"{r}\"}} 0"
        )
    })
    .collect();
    let mut lines = vec![
        "yunikorn_scheduler_preemption_attempt_total{partition=\"default\",result=\"success\"} 1",
        "yunikorn_scheduler_preemption_victim_total{partition=\"default\"} 1",
        "yunikorn_queue_root_a_preempting_resource{resource=\"memory\"} 500",
        "yunikorn_queue_root_preempting_resource{resource=\"memory\"} 500",
    ];
    lines.extend(zero.iter().map(String::as_str));
    let text = metrics_until(&h, &lines);
    for line in &zero {
        assert!(text.lines().any(|t| t == line), "{line} in\n{text}");
    }
    assert!(text.contains("# TYPE yunikorn_scheduler_preemption_attempt_total counter"));

    // The RM confirms: nothing is preempting any more.
    let confirm = confirmation("app-1", &victim);
    assert_eq!(
        h.releases(vec![confirm], vec![]).0,
        sicore_status::SICORE_OK
    );
    h.wait("the preemptor's allocation", |s| s.allocations.len() == 5);
    metrics_until(
        &h,
        &["yunikorn_queue_root_a_preempting_resource{resource=\"memory\"} 0"],
    );
    crate::restkit::poll("REST to drop preemptingResource", || {
        let t = crate::restkit::get_json(&addr, "/ws/v1/partition/default/queues");
        crate::restkit::queue_entry(&t, "root.a")?
            .get("preemptingResource")
            .is_none()
            .then_some(())
    });
    let text = metrics_text(&h);
    assert!(
        text.contains("yunikorn_scheduler_preemption_victim_total{partition=\"default\"} 1\n"),
        "{text}"
    );
}
