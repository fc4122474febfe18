//! The indexed guarantee-preemption decision against the full walk it
//! replaced (`guarantee_oracle.rs`) on seeded random partitions: the same
//! node, the same victims in the same order, the same counters and the
//! same stale reservations, for every waiting request, as victims pile up.

use std::sync::Arc;
use std::time::Duration;

use super::super::{Outcomes, PassState};
use super::Trigger;
use crate::proto::si::v1 as si;
use crate::scheduler::request::AskRequest;
use crate::scheduler::testkit::{ask, res, Harness};

/// A random tree: parents with and without guarantees, leaves with
/// guarantees in one or two types, some fenced or disabled, priority
/// offsets and fences.
fn config(rng: &mut fastrand::Rng) -> (String, Vec<String>) {
    let mut yaml = String::from(
        "partitions:\n  - name: default\n    preemption: {enabled: true}\n    queues:\n      - name: root\n        submitacl: '*'\n        queues:\n",
    );
    let mut leaves = Vec::new();
    // (memory, vcore) of a guarantee, either possibly absent.
    let guarantee = |rng: &mut fastrand::Rng| match rng.u8(0..4) {
        0 => (None, None),
        1 => (Some(rng.i64(0..400)), None),
        2 => (None, Some(rng.i64(0..40))),
        _ => (Some(rng.i64(0..400)), Some(rng.i64(0..40))),
    };
    let yaml_of = |g: (Option<i64>, Option<i64>)| match g {
        (None, None) => String::new(),
        (Some(m), None) => format!("{{memory: {m}}}"),
        (None, Some(v)) => format!("{{vcore: {v}}}"),
        (Some(m), Some(v)) => format!("{{memory: {m}, vcore: {v}}}"),
    };
    let props = |rng: &mut fastrand::Rng| {
        let mut p = vec!["preemption.delay: 1s".to_string()];
        match rng.u8(0..8) {
            0 => p.push("preemption.policy: fence".into()),
            1 => p.push("preemption.policy: disabled".into()),
            _ => {}
        }
        match rng.u8(0..6) {
            0 => p.push(format!("priority.offset: '{}'", rng.i32(-5..5))),
            1 => p.push("priority.policy: fence".into()),
            _ => {}
        }
        format!("{{{}}}", p.join(", "))
    };
    for pi in 0..rng.usize(1..4) {
        let mut children = String::new();
        let (mut mem, mut vcore) = (0, 0);
        for li in 0..rng.usize(1..5) {
            children.push_str(&format!("              - name: q{li}\n"));
            let g = guarantee(rng);
            mem += g.0.unwrap_or(0);
            vcore += g.1.unwrap_or(0);
            if g != (None, None) {
                children.push_str(&format!(
                    "                resources: {{guaranteed: {}}}\n",
                    yaml_of(g)
                ));
            }
            children.push_str(&format!("                properties: {}\n", props(rng)));
            leaves.push(format!("root.p{pi}.q{li}"));
        }
        yaml.push_str(&format!("          - name: p{pi}\n"));
        // A parent's guarantee, when it has one, at least its children's.
        if rng.bool() {
            let g = (Some(mem + rng.i64(0..200)), Some(vcore + rng.i64(0..20)));
            yaml.push_str(&format!(
                "            resources: {{guaranteed: {}}}\n",
                yaml_of(g)
            ));
        }
        yaml.push_str(&format!("            properties: {}\n", props(rng)));
        yaml.push_str("            queues:\n");
        yaml.push_str(&children);
    }
    (yaml, leaves)
}

/// An ask of `repeat` allocations of random memory and vcore.
fn random_ask(rng: &mut fastrand::Rng, app: &str, key: &str, repeat: i32) -> AskRequest {
    let resource = match rng.u8(0..3) {
        0 => res(&[("memory", rng.i64(1..60))]),
        1 => res(&[("vcore", rng.i64(1..6))]),
        _ => res(&[("memory", rng.i64(1..60)), ("vcore", rng.i64(1..6))]),
    };
    AskRequest {
        resource: Ok(resource),
        priority: rng.i32(-3..4),
        preempt_self: rng.u8(0..4) != 0,
        originator: rng.u8(0..5) == 0,
        ..ask(app, key, 1, repeat)
    }
}

/// Both decisions for every waiting request of the partition, each from a
/// fresh pass; the indexed one's plan is committed when both agree, so
/// later requests see victims in flight and reservations.
fn compare_all(h: &mut Harness, checked: &mut usize, seen: &mut super::PreemptionCounters) {
    let now = h.p.clock.now();
    let mut waiting: Vec<(Arc<str>, Arc<str>)> = Vec::new();
    for app in h.p.apps.values() {
        for a in app
            .asks
            .values()
            .filter_map(crate::scheduler::objects::ask::AskEntry::whole)
        {
            if a.pending_repeat > 0 {
                waiting.push((app.id.clone(), a.key.clone()));
            }
        }
    }
    waiting.sort();
    for (app_id, key) in waiting {
        for trigger in [Trigger::QueueBound, Trigger::NodeBound] {
            let app = h.p.apps.get(&app_id).expect("app");
            let Some(a) = app.asks.whole(&key) else {
                continue;
            };
            let mut pass = PassState::default();
            let mut oracle_pass = PassState::default();
            let plan = h.p.plan_preemption(app, a, trigger, None, &mut pass, now);
            let oracle =
                h.p.oracle_plan_preemption(app, a, trigger, None, &mut oracle_pass, now);
            let shape = |p: &Option<super::PreemptionPlan>| {
                p.as_ref()
                    .map(|p| (p.app.clone(), p.key.clone(), p.node, p.victims.clone()))
            };
            assert_eq!(shape(&plan), shape(&oracle), "{app_id}/{key} {trigger:?}");
            assert_eq!(pass.preempt_counts, oracle_pass.preempt_counts);
            seen.add(&pass.preempt_counts);
            assert_eq!(pass.preempt_stale, oracle_pass.preempt_stale);
            assert_eq!(pass.preempt_checked, oracle_pass.preempt_checked);
            *checked += usize::from(plan.is_some());
            if let Some(plan) = plan {
                if trigger == Trigger::NodeBound {
                    let mut out = Outcomes::default();
                    h.p.commit_preemption(plan, &mut out);
                }
            }
        }
    }
}

#[test]
fn the_indexed_decision_matches_the_full_walk() {
    let mut checked = 0;
    let mut seen = super::PreemptionCounters::default();
    for seed in 0..1000u64 {
        let mut rng = fastrand::Rng::with_seed(seed);
        let (yaml, leaves) = config(&mut rng);
        let mut h = Harness::new(&yaml);
        for n in 0..rng.usize(1..7) {
            let info = si::NodeInfo {
                node_id: format!("node-{}", rng.u32(0..1000)),
                schedulable_resource: Some(
                    res(&[("memory", rng.i64(50..300)), ("vcore", rng.i64(5..30))]).to_proto(),
                ),
                ..Default::default()
            };
            if h.p.nodes.contains_key(&info.node_id) {
                continue;
            }
            let mut out = Outcomes::default();
            h.p.add_node(&info, &mut out).expect("node accepted");
            let _ = n;
        }
        // Fill: applications in random leaves, each with a few asks.
        for i in 0..rng.usize(2..10) {
            let app = format!("app-{i}");
            let leaf = &leaves[rng.usize(0..leaves.len())];
            h.app(&app, leaf);
            for k in 0..rng.usize(1..4) {
                let repeat = rng.i32(1..8);
                let a = random_ask(&mut rng, &app, &format!("k{k}"), repeat);
                h.ask(a);
            }
            h.schedule();
        }
        // Later requests, old enough to preempt.
        for i in 0..rng.usize(1..5) {
            let app = format!("late-{i}");
            let leaf = &leaves[rng.usize(0..leaves.len())];
            h.app(&app, leaf);
            let repeat = rng.i32(1..4);
            let a = random_ask(&mut rng, &app, "w", repeat);
            h.ask(a);
        }
        h.schedule();
        h.advance(Duration::from_secs(120));
        compare_all(&mut h, &mut checked, &mut seen);
        compare_all(&mut h, &mut checked, &mut seen);
    }
    // The states must make decisions and fail in each way, or the
    // comparison says little.
    eprintln!("{checked} plans; failures {seen:?}");
    assert!(checked > 50, "only {checked} plans");
    assert!(seen.guarantee_check_failed > 0 && seen.no_candidate_node > 0);
    assert!(seen.short_of_resources > 0, "{seen:?}");
}
