//! The test scenarios of `shared/spec/policy/preemption.md` section 19
//! that the other preemption tests do not show through the C ABI, as a
//! v0.12 RM sees them, and a few as a v1.8 RM sees them (docs/preemption.md maps every scenario to its
//! tests). Each test sets a situation up, lets the core run its passes and
//! checks what the RM was told: the victims' `PREEMPTED_BY_SCHEDULER`
//! releases, or none. A test that expects no victim has a contrast in it
//! that does preempt, so that it cannot pass by the core doing nothing.
//! The v1.8 section has the scenarios of the RM's `PreemptionPredicates`
//! answer (PE4, PE5), the switch (PE20) and `allowPreemptOther` (PE1).

mod common;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use common::*;
use sicore::ffi::sicore_status::SICORE_OK;
use sicore::ffi::*;
use sicore::proto::si::v1 as si;
use sicore::proto::si18::sicore::si18 as sicore18;
use sicore::proto::si18::v1 as si18;
use sicore::proto::sicore::v1 as sicore_pb;
use sicore_c_rm::v1::{self as rmv1, RmV1};
use sicore_c_rm::{call, Handle};

fn preempted(s: &Seen) -> Vec<si::AllocationRelease> {
    s.released
        .iter()
        .filter(|r| r.termination_type == si::TerminationType::PreemptedByScheduler as i32)
        .cloned()
        .collect()
}

/// A partition with preemption on and `queues` (YAML lines below root,
/// indented by 10).
fn yaml(queues: &str) -> String {
    format!(
        "partitions:
  - name: default
    preemption: {{enabled: true}}
    queues:
      - name: root
        submitacl: '*'
        queues:
{queues}"
    )
}

/// Registers with `yaml` and creates `nodes` (id, memory).
fn start(yaml: &str, nodes: &[(&str, i64)]) -> Harness {
    let behaviour = Behaviour {
        with_predicates: true,
        ..Default::default()
    };
    let h = Harness::with_behaviour(yaml_options(yaml), behaviour);
    let (st, msg) = h.register("rm", "queues");
    assert_eq!(st, sicore_status::SICORE_OK, "{msg}");
    let list = nodes.iter().map(|(id, m)| node(id, *m, 100)).collect();
    assert_eq!(h.nodes(list).0, sicore_status::SICORE_OK);
    h.wait("nodes", |s| s.nodes_accepted.len() == nodes.len());
    h
}

/// An ask of `memory` (and 1 vcore) with a priority.
fn ask_p(app: &str, key: &str, memory: i64, priority: i32) -> si::AllocationAsk {
    si::AllocationAsk {
        priority: Some(si::Priority {
            priority: Some(si::priority::Priority::PriorityValue(priority)),
        }),
        ..ask(app, key, memory, 1, 1)
    }
}

/// Submits `app` to `queue` and sends `asks`, waiting until the RM has
/// seen `total` allocations.
fn run(h: &Harness, app_id: &str, queue: &str, asks: Vec<si::AllocationAsk>, total: usize) {
    h.submit(app(app_id, queue)).unwrap();
    assert_eq!(h.asks(asks).0, sicore_status::SICORE_OK);
    h.wait(app_id, |s| s.allocations.len() == total);
}

/// Submits `app` to `queue` asking `a`, then lets several passes run.
fn preemptor(h: &Harness, app_id: &str, queue: &str, a: si::AllocationAsk) {
    h.submit(app(app_id, queue)).unwrap();
    assert_eq!(h.asks(vec![a]).0, sicore_status::SICORE_OK);
    h.settle();
    h.settle();
}

/// Allocation key of each allocation uuid the RM was told of.
fn keys(h: &Harness) -> HashMap<String, String> {
    h.seen(|s| {
        s.allocations
            .iter()
            .map(|a| (a.uuid.clone(), a.allocation_key.clone()))
            .collect()
    })
}

/// The keys of the victims, sorted.
fn victim_keys(h: &Harness) -> Vec<String> {
    let k = keys(h);
    let mut v: Vec<String> = h
        .seen(preempted)
        .iter()
        .map(|r| k[&r.uuid].clone())
        .collect();
    v.sort();
    v
}

/// The RM confirms every victim.
fn confirm(h: &Harness) {
    let confirms = h
        .seen(preempted)
        .into_iter()
        .map(|v| si::AllocationRelease {
            partition_name: "default".into(),
            application_id: v.application_id,
            uuid: v.uuid,
            termination_type: si::TerminationType::PreemptedByScheduler as i32,
            ..Default::default()
        })
        .collect();
    assert_eq!(h.releases(confirms, vec![]).0, sicore_status::SICORE_OK);
}

fn memory(h: &Harness, path: &str) -> i64 {
    find_queue(&h.dump(), "default", path).unwrap()["allocated"]["memory"]
        .as_i64()
        .unwrap_or(0)
}

/// `parent` (guarantee 1000, max 2000) with child1 and child2 (guarantee
/// 500 each), and `other` without a guarantee.
const PE2: &str = "          - name: parent
            resources: {guaranteed: {memory: 1000}, max: {memory: 2000}}
            queues:
              - name: child1
                resources: {guaranteed: {memory: 500}}
                properties: {application.sort.policy: fifo}
              - name: child2
                resources: {guaranteed: {memory: 500}}
                properties: {preemption.delay: 1ms}
          - name: other
            properties: {application.sort.policy: fifo}
";

/// One node of 3000: child1 holds two of 500, `other` four of 500.
fn pe2_full() -> Harness {
    let h = start(&yaml(PE2), &[("node-0", 3000)]);
    run(
        &h,
        "app-1",
        "root.parent.child1",
        vec![ask("app-1", "c1", 500, 1, 2)],
        2,
    );
    run(
        &h,
        "app-o",
        "root.other",
        vec![ask("app-o", "o", 500, 1, 4)],
        6,
    );
    h
}

#[test]
fn pe2_the_ask_queue_guarantee_decides() {
    // An ask within child2's guarantee takes one victim.
    let h = pe2_full();
    preemptor(
        &h,
        "app-2",
        "root.parent.child2",
        ask("app-2", "c2", 500, 1, 1),
    );
    h.wait("a victim", |s| !preempted(s).is_empty());
    h.settle();
    assert_eq!(h.seen(preempted).len(), 1);
    // An ask far beyond child2's guarantee: removing every victim never
    // brings child2 within it, so nothing is preempted (spec 5.3).
    let h = pe2_full();
    preemptor(
        &h,
        "app-2",
        "root.parent.child2",
        ask("app-2", "c2", 2500, 1, 1),
    );
    h.seen(|s| {
        assert!(preempted(s).is_empty(), "{:?}", s.released);
        assert_eq!(s.allocations.len(), 6);
    });
}

/// `parent` with child1 and child2 (no guarantee unless given) and
/// `other` outside it; one node of 1000 full of child1's three allocations
/// of 250 and then other's one.
fn pe3(parent: &str, child2: &str) -> Harness {
    let queues = format!(
        "          - name: parent
            resources: {{{parent}}}
            queues:
              - name: child1
                properties: {{application.sort.policy: fifo}}
              - name: child2
                resources: {{{child2}}}
                properties: {{preemption.delay: 1ms}}
          - name: other
"
    );
    let h = start(&yaml(&queues), &[("node-0", 1000)]);
    run(
        &h,
        "app-1",
        "root.parent.child1",
        vec![ask("app-1", "c1", 250, 1, 3)],
        3,
    );
    run(
        &h,
        "app-o",
        "root.other",
        vec![ask("app-o", "o", 250, 1, 1)],
        4,
    );
    preemptor(
        &h,
        "app-2",
        "root.parent.child2",
        ask("app-2", "c2", 250, 1, 1),
    );
    h
}

#[test]
fn pe3_no_guarantee_no_preemption() {
    // Neither parent nor child2 guaranteed: never.
    let h = pe3("", "");
    h.seen(|s| assert!(preempted(s).is_empty(), "{:?}", s.released));
    // A guarantee on the parent only, on child2 only, or on both: the
    // newest allocation goes (other's), then the preemptor runs on the
    // freed room. With the parent's guarantee only, child1 (within it,
    // spec 4.2) is protected and the victim must come from outside: a
    // parent guarantee of 1000 leaves room for child2's 250 once other's
    // is gone.
    for (parent, child2) in [
        ("guaranteed: {memory: 1000}", ""),
        ("", "guaranteed: {memory: 500}"),
        ("guaranteed: {memory: 1000}", "guaranteed: {memory: 500}"),
    ] {
        let h = pe3(parent, child2);
        h.wait(&format!("a victim ({parent:?}, {child2:?})"), |s| {
            !preempted(s).is_empty()
        });
        h.settle();
        assert_eq!(
            victim_keys(&h),
            ["o"],
            "parent {parent:?} child2 {child2:?}"
        );
        confirm(&h);
        h.wait("the preemptor", |s| {
            s.allocations.iter().any(|a| a.allocation_key == "c2")
        });
    }
}

/// child1 (guarantee 500) full of `victims` allocations of `size` on two
/// nodes of `node`, child2 (guarantee 500) asking `ask`.
fn guaranteed_siblings(node_size: i64, size: i64, victims: i32, ask_size: i64) -> Harness {
    let queues = "          - name: child1
            resources: {guaranteed: {memory: 500}}
            properties: {application.sort.policy: fifo}
          - name: child2
            resources: {guaranteed: {memory: 500}}
            properties: {preemption.delay: 1ms}
";
    let h = start(
        &yaml(queues),
        &[("node-0", node_size), ("node-1", node_size)],
    );
    run(
        &h,
        "app-1",
        "root.child1",
        vec![ask("app-1", "c1", size, 1, victims)],
        victims as usize,
    );
    preemptor(
        &h,
        "app-2",
        "root.child2",
        ask("app-2", "c2", ask_size, 1, 1),
    );
    h
}

#[test]
fn pe6_a_node_smaller_than_the_ask_is_no_candidate() {
    // Nodes of 500, an ask of 600: no node could ever hold it.
    let h = guaranteed_siblings(500, 250, 4, 600);
    h.seen(|s| {
        assert!(preempted(s).is_empty(), "{:?}", s.released);
        assert_eq!(s.allocations.len(), 4);
    });
    // The same with an ask of 500 preempts (two victims of 250).
    let h = guaranteed_siblings(500, 250, 4, 500);
    h.wait("victims", |s| preempted(s).len() == 2);
    h.settle();
    assert_eq!(h.seen(preempted).len(), 2);
}

/// One node of 1000: `keep` (within its guarantee) holds 600, child1
/// (guarantee 100) two of 200; child2 (guarantee 500) asks `ask_size`.
fn pe8(ask_size: i64) -> Harness {
    let queues = "          - name: keep
            resources: {guaranteed: {memory: 600}}
          - name: child1
            resources: {guaranteed: {memory: 100}}
            properties: {application.sort.policy: fifo}
          - name: child2
            resources: {guaranteed: {memory: 500}}
            properties: {preemption.delay: 1ms}
";
    let h = start(&yaml(queues), &[("node-0", 1000)]);
    run(
        &h,
        "app-k",
        "root.keep",
        vec![ask("app-k", "k", 600, 1, 1)],
        1,
    );
    run(
        &h,
        "app-1",
        "root.child1",
        vec![ask("app-1", "c1", 200, 1, 2)],
        3,
    );
    preemptor(
        &h,
        "app-2",
        "root.child2",
        ask("app-2", "c2", ask_size, 1, 1),
    );
    h
}

#[test]
fn pe8_victims_too_small_preempt_nothing() {
    // child1's two of 200 free 400 of the 500 asked: nothing is taken.
    let h = pe8(500);
    h.seen(|s| {
        assert!(preempted(s).is_empty(), "{:?}", s.released);
        assert_eq!(s.allocations.len(), 3);
    });
    // An ask of 400 takes both.
    let h = pe8(400);
    h.wait("victims", |s| preempted(s).len() == 2);
    h.settle();
    assert_eq!(victim_keys(&h), ["c1", "c1"]);
}

#[test]
fn pe10_a_higher_priority_allocation_is_protected() {
    // child3: one of priority 1000 on one node; child1: two of priority 0
    // on the other; child2 (guarantee 1500) asks 1000 at priority 0.
    let queues = "          - name: parent
            queues:
              - name: child1
                resources: {guaranteed: {memory: 100}}
                properties: {application.sort.policy: fifo}
              - name: child3
                resources: {guaranteed: {memory: 100}}
              - name: child2
                resources: {guaranteed: {memory: 1500}}
                properties: {preemption.delay: 1ms}
";
    let h = start(&yaml(queues), &[("node-0", 1000), ("node-1", 1000)]);
    run(
        &h,
        "app-3",
        "root.parent.child3",
        vec![ask_p("app-3", "high", 1000, 1000)],
        1,
    );
    run(
        &h,
        "app-1",
        "root.parent.child1",
        vec![
            ask_p("app-1", "low-1", 500, 0),
            ask_p("app-1", "low-2", 500, 0),
        ],
        3,
    );
    let node_of: HashMap<String, String> = h.seen(|s| {
        s.allocations
            .iter()
            .map(|a| (a.allocation_key.clone(), a.node_id.clone()))
            .collect()
    });
    assert_eq!(node_of["low-1"], node_of["low-2"]);
    preemptor(
        &h,
        "app-2",
        "root.parent.child2",
        ask_p("app-2", "c2", 1000, 0),
    );
    h.wait("victims", |s| preempted(s).len() == 2);
    h.settle();
    assert_eq!(victim_keys(&h), ["low-1", "low-2"]);
    confirm(&h);
    h.wait("the preemptor", |s| {
        s.allocations.iter().any(|a| a.allocation_key == "c2")
    });
    h.seen(|s| {
        let c2 = s
            .allocations
            .iter()
            .find(|a| a.allocation_key == "c2")
            .unwrap();
        assert_eq!(c2.node_id, node_of["low-1"], "on the node its victims left");
    });
    assert_eq!(memory(&h, "root.parent.child3"), 1000);
    assert_eq!(memory(&h, "root.parent.child2"), 1000);
    assert_eq!(memory(&h, "root.parent.child1"), 0);
}

/// parent1 (guarantee 1000) with child1 (no guarantee) holding four of 250
/// on one full node and child2 (guarantee `child2`, if any) asking 250.
fn pe11(child2: &str) -> Harness {
    let queues = format!(
        "          - name: parent1
            resources: {{guaranteed: {{memory: 1000}}}}
            queues:
              - name: child1
                properties: {{application.sort.policy: fifo}}
              - name: child2
                resources: {{{child2}}}
                properties: {{preemption.delay: 1ms}}
"
    );
    let h = start(&yaml(&queues), &[("node-0", 1000)]);
    run(
        &h,
        "app-1",
        "root.parent1.child1",
        vec![ask("app-1", "c1", 250, 1, 4)],
        4,
    );
    preemptor(
        &h,
        "app-2",
        "root.parent1.child2",
        ask("app-2", "c2", 250, 1, 1),
    );
    h
}

#[test]
fn pe11_unguaranteed_siblings_never_preempt_each_other() {
    // Both children inherit parent1's remaining guarantee: child1 counts
    // as within guarantee and is protected (spec 4.2).
    let h = pe11("");
    h.seen(|s| assert!(preempted(s).is_empty(), "{:?}", s.released));
    // child2 with a guarantee of its own ignores parent1's: one victim.
    let h = pe11("guaranteed: {memory: 250}");
    h.wait("a victim", |s| !preempted(s).is_empty());
    h.settle();
    assert_eq!(h.seen(preempted).len(), 1);
}

/// The ask in `root.parent1.leaf1`, two allocations in
/// `root.parent2.leaf2` (priority -1000) filling the only node; `props`
/// is (parent1, leaf1, parent2, leaf2)'s extra properties.
fn pe12(props: [&str; 4], leaf2_alloc_priority: i32) -> Harness {
    let queues = format!(
        "          - name: parent1
            properties: {{{}}}
            queues:
              - name: leaf1
                resources: {{guaranteed: {{memory: 500}}}}
                properties: {{preemption.delay: 1ms{}}}
          - name: parent2
            properties: {{{}}}
            queues:
              - name: leaf2
                properties: {{application.sort.policy: fifo{}}}
",
        props[0], props[1], props[2], props[3]
    );
    let h = start(&yaml(&queues), &[("node-0", 1000)]);
    run(
        &h,
        "app-2",
        "root.parent2.leaf2",
        vec![
            ask_p("app-2", "v1", 500, leaf2_alloc_priority),
            ask_p("app-2", "v2", 500, leaf2_alloc_priority),
        ],
        2,
    );
    preemptor(
        &h,
        "app-1",
        "root.parent1.leaf1",
        ask_p("app-1", "p", 500, 0),
    );
    h
}

#[test]
fn pe12_disabled_and_fences_filter_the_victims() {
    let none = |props: [&str; 4]| {
        let h = pe12(props, -1000);
        h.seen(|s| assert!(preempted(s).is_empty(), "{props:?}: {:?}", s.released));
    };
    let one = |props: [&str; 4]| {
        let h = pe12(props, -1000);
        h.wait("a victim", |s| !preempted(s).is_empty());
        h.settle();
        assert_eq!(h.seen(preempted).len(), 1, "{props:?}");
    };
    // Nothing set: a victim.
    one(["", "", "", ""]);
    // leaf2 disabled, or disabled inherited from parent2: none.
    none(["", "", "", ", preemption.policy: disabled"]);
    none(["", "", "preemption.policy: disabled", ""]);
    // A fence on the preemptor's path keeps it inside: none.
    none(["preemption.policy: fence", "", "", ""]);
    none(["", ", preemption.policy: fence", "", ""]);
    // A fence elsewhere restricts nothing.
    one(["", "", "preemption.policy: fence", ""]);
    one(["", "", "", ", preemption.policy: fence"]);
}

#[test]
fn pe12_priority_offsets_decide_the_victims() {
    // Victims of priority 10 are above the preemptor's 0: none.
    let h = pe12(["", "", "", ""], 10);
    h.seen(|s| assert!(preempted(s).is_empty(), "{:?}", s.released));
    // leaf2's offset of 20 raises them further: still none.
    let h = pe12(["", "", "", ", priority.offset: 20"], -10);
    h.seen(|s| assert!(preempted(s).is_empty(), "{:?}", s.released));
    // leaf1's offset of 20 raises the preemptor to 20: a victim.
    let h = pe12(["", ", priority.offset: 20", "", ""], 10);
    h.wait("a victim", |s| !preempted(s).is_empty());
    h.settle();
    assert_eq!(h.seen(preempted).len(), 1);
}

/// PE7: the parent's max, not the nodes, holds the preemptor back.
#[test]
fn pe7_a_queue_at_its_parents_max_preempts_the_newest_sibling_allocation() {
    let queues = "          - name: parent
            resources: {max: {memory: 1000}}
            queues:
              - name: child1
                resources: {guaranteed: {memory: 500}}
                properties: {application.sort.policy: fifo}
              - name: child2
                resources: {guaranteed: {memory: 500}}
                properties: {preemption.delay: 1ms}
";
    // Nodes of 1000 with room: parent's max is the limit.
    let h = start(&yaml(queues), &[("node-0", 1000), ("node-1", 1000)]);
    run(
        &h,
        "app-1",
        "root.parent.child1",
        vec![ask("app-1", "first", 500, 1, 1)],
        1,
    );
    run(
        &h,
        "app-1b",
        "root.parent.child1",
        vec![ask("app-1b", "second", 500, 1, 1)],
        2,
    );
    preemptor(
        &h,
        "app-2",
        "root.parent.child2",
        ask("app-2", "c2", 500, 1, 1),
    );
    h.wait("a victim", |s| !preempted(s).is_empty());
    h.settle();
    assert_eq!(victim_keys(&h), ["second"], "the newer one");
    confirm(&h);
    h.wait("the preemptor", |s| {
        s.allocations.iter().any(|a| a.allocation_key == "c2")
    });
    h.settle();
    assert_eq!(memory(&h, "root.parent"), 1000);
    assert_eq!(memory(&h, "root.parent.child2"), 500);
}

/// PE13/PE14: the leaf's delay holds an ask back; a short one does not.
#[test]
fn pe13_the_delay_holds_the_preemptor_back() {
    let queues = |delay: &str| {
        format!(
            "          - name: child1
            resources: {{guaranteed: {{memory: 500}}}}
            properties: {{application.sort.policy: fifo}}
          - name: child2
            resources: {{guaranteed: {{memory: 500}}}}
            properties: {{preemption.delay: {delay}}}
"
        )
    };
    for (delay, preempts) in [("1h", false), ("1ms", true)] {
        let h = start(&yaml(&queues(delay)), &[("node-0", 1000)]);
        run(
            &h,
            "app-1",
            "root.child1",
            vec![ask("app-1", "c1", 250, 1, 4)],
            4,
        );
        preemptor(&h, "app-2", "root.child2", ask("app-2", "c2", 250, 1, 1));
        if preempts {
            h.wait("a victim", |s| !preempted(s).is_empty());
        }
        h.settle();
        assert_eq!(h.seen(preempted).len(), preempts as usize, "delay {delay}");
    }
}

/// PE16 end to end: the higher-priority allocation stays, the victim is
/// kept booked until the RM confirms it, a later pass preempts nothing
/// more, and the preemptor is allocated from its reservation.
#[test]
fn pe16_end_to_end_from_victim_to_preemptor() {
    let queues = "          - name: parent
            resources: {max: {memory: 1000}}
            queues:
              - name: leaf1
                resources: {guaranteed: {memory: 500}}
                properties: {application.sort.policy: fifo}
              - name: leaf2
                resources: {guaranteed: {memory: 500}}
                properties: {preemption.delay: 1ms}
";
    let h = start(&yaml(queues), &[("node-0", 1000), ("node-1", 1000)]);
    run(
        &h,
        "app-1",
        "root.parent.leaf1",
        vec![
            ask_p("app-1", "alloc-1", 500, 2),
            ask_p("app-1", "alloc-2", 500, 1),
        ],
        2,
    );
    preemptor(
        &h,
        "app-2",
        "root.parent.leaf2",
        ask_p("app-2", "alloc-3", 500, 1),
    );
    h.wait("a victim", |s| !preempted(s).is_empty());
    h.settle();
    h.settle();
    assert_eq!(
        victim_keys(&h),
        ["alloc-2"],
        "alloc-1 outranks the preemptor"
    );
    // Still booked: nothing allocated, leaf1 still holds both.
    assert_eq!(memory(&h, "root.parent.leaf1"), 1000);
    h.seen(|s| assert_eq!(s.allocations.len(), 2));
    confirm(&h);
    h.wait("alloc-3", |s| {
        s.allocations.iter().any(|a| a.allocation_key == "alloc-3")
    });
    h.settle();
    assert_eq!(h.seen(preempted).len(), 1);
    assert_eq!(memory(&h, "root.parent.leaf1"), 500);
    assert_eq!(memory(&h, "root.parent.leaf2"), 500);
    assert_eq!(memory(&h, "root.parent"), 1000);
}

// ---- The v1.8 edition ----

/// What a v1 RM has been told, and the preemption checks it was asked.
#[derive(Default, Debug, Clone)]
struct V1Seen {
    new: Vec<si18::Allocation>,
    released: Vec<si18::AllocationRelease>,
    events: Vec<si18::EventRecord>,
    nodes_accepted: Vec<String>,
    apps_accepted: Vec<String>,
    checks: Vec<si18::PreemptionPredicatesArgs>,
}

#[derive(Default)]
struct V1Recorder {
    seen: Mutex<V1Seen>,
    cv: Condvar,
    /// The (allocation key, node) pairs `PreemptionPredicates` accepts
    /// (`("*", "*")`: every check); every other check fails (the spec's
    /// mock RM).
    accept: Mutex<HashSet<(String, String)>>,
}

impl V1Recorder {
    fn record(&self, f: impl FnOnce(&mut V1Seen)) {
        f(&mut self.seen.lock().unwrap());
        self.cv.notify_all();
    }

    fn wait(&self, what: &str, cond: impl Fn(&V1Seen) -> bool) {
        let deadline = Instant::now() + WAIT;
        let mut s = self.seen.lock().unwrap();
        while !cond(&s) {
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(!left.is_zero(), "timed out waiting for {what}: {s:#?}");
            s = self.cv.wait_timeout(s, left).unwrap().0;
        }
    }

    fn copy(&self) -> V1Seen {
        self.seen.lock().unwrap().clone()
    }
}

impl RmV1 for V1Recorder {
    fn update_allocation(&self, m: si18::AllocationResponse) -> Result<(), String> {
        self.record(|s| {
            s.new.extend(m.new);
            s.released.extend(m.released);
        });
        Ok(())
    }

    fn update_application(&self, m: si18::ApplicationResponse) -> Result<(), String> {
        self.record(|s| {
            s.apps_accepted
                .extend(m.accepted.into_iter().map(|a| a.application_id))
        });
        Ok(())
    }

    fn update_node(&self, m: si18::NodeResponse) -> Result<(), String> {
        self.record(|s| {
            s.nodes_accepted
                .extend(m.accepted.into_iter().map(|a| a.node_id))
        });
        Ok(())
    }

    fn send_event(&self, m: sicore18::EventRecords) {
        self.record(|s| s.events.extend(m.events));
    }

    /// Accepts only the listed pairs, at the core's start index.
    fn preemption_predicates(
        &self,
        m: si18::PreemptionPredicatesArgs,
    ) -> si18::PreemptionPredicatesResponse {
        let ok = {
            let accept = self.accept.lock().unwrap();
            accept.contains(&(m.allocation_key.clone(), m.node_id.clone()))
                || accept.contains(&("*".to_string(), "*".to_string()))
        };
        let index = m.start_index;
        self.record(|s| s.checks.push(m));
        si18::PreemptionPredicatesResponse {
            success: ok,
            index: if ok { index } else { -1 },
        }
    }
}

/// A scheduler with one v1 RM registered with `config`, no `predicates`;
/// `PreemptionPredicates` accepts nothing until pairs are added.
struct V1 {
    sched: *mut sicore_scheduler,
    _owner: Handle,
    rec: Arc<V1Recorder>,
}

impl V1 {
    fn new(config: &str) -> Self {
        let options = sicore_pb::SchedulerOptions {
            event_flush_interval_ms: 50,
            scheduling_interval_ms: 10,
            ..Default::default()
        };
        let sched = sicore_c_rm::new_scheduler(&options).unwrap();
        let owner = Handle(sched);
        let rec = Arc::new(V1Recorder::default());
        let table = rmv1::table(&rec, false);
        let req = si18::RegisterResourceManagerRequest {
            rm_id: "rm1".into(),
            version: "v1.8.0".into(),
            policy_group: "queues".into(),
            config: config.into(),
            ..Default::default()
        };
        let (st, msg) = rmv1::register(sched, &req, &table);
        assert_eq!(st, SICORE_OK, "{msg}");
        V1 {
            sched,
            _owner: owner,
            rec,
        }
    }

    /// CREATE_DRAIN, then DRAIN_TO_SCHEDULABLE (the k8shim way).
    fn node(&self, id: &str, memory: i64) {
        let (st, msg) = call(
            self.sched,
            sicore_v1_update_node,
            &si18::NodeRequest {
                nodes: vec![rmv1::node(id, memory, 10)],
                rm_id: "rm1".into(),
            },
        );
        assert_eq!(st, SICORE_OK, "{msg}");
        self.rec.wait("node answered", |s| {
            s.nodes_accepted.iter().any(|n| n == id)
        });
        let ready = rmv1::node_action(id, si18::node_info::ActionFromRm::DrainToSchedulable);
        let (st, msg) = call(
            self.sched,
            sicore_v1_update_node,
            &si18::NodeRequest {
                nodes: vec![ready],
                rm_id: "rm1".into(),
            },
        );
        assert_eq!(st, SICORE_OK, "{msg}");
    }

    fn app(&self, id: &str, queue: &str) {
        let (st, msg) = call(
            self.sched,
            sicore_v1_update_application,
            &si18::ApplicationRequest {
                new: vec![rmv1::app(id, queue, "alice")],
                rm_id: "rm1".into(),
                ..Default::default()
            },
        );
        assert_eq!(st, SICORE_OK, "{msg}");
        self.rec
            .wait("app accepted", |s| s.apps_accepted.iter().any(|a| a == id));
    }

    fn allocate(&self, allocations: Vec<si18::Allocation>, releases: Vec<si18::AllocationRelease>) {
        let (st, msg) = call(
            self.sched,
            sicore_v1_update_allocation,
            &si18::AllocationRequest {
                allocations,
                releases: (!releases.is_empty()).then_some(si18::AllocationReleasesRequest {
                    allocations_to_release: releases,
                }),
                rm_id: "rm1".into(),
            },
        );
        assert_eq!(st, SICORE_OK, "{msg}");
    }

    /// Lets the core finish what the last requests started.
    fn settle(&self) {
        let _ = sicore_c_rm::dump(self.sched);
        std::thread::sleep(Duration::from_millis(150));
        let _ = sicore_c_rm::dump(self.sched);
    }

    fn node_of(&self, key: &str) -> String {
        self.rec
            .copy()
            .new
            .iter()
            .find(|a| a.allocation_key == key)
            .map(|a| a.node_id.clone())
            .unwrap_or_default()
    }

    fn memory(&self, path: &str) -> i64 {
        let d = sicore_c_rm::dump(self.sched).unwrap();
        find_queue(&d, "default", path).unwrap()["allocated"]["memory"]
            .as_i64()
            .unwrap_or(0)
    }
}

fn v1_preempted(s: &V1Seen) -> Vec<si18::AllocationRelease> {
    s.released
        .iter()
        .filter(|r| r.termination_type == si18::TerminationType::PreemptedByScheduler as i32)
        .cloned()
        .collect()
}

/// A request that may preempt others (k8shim's default for a pod).
fn v1_preemptor(app: &str, key: &str, memory: i64, allow: bool) -> si18::Allocation {
    let mut a = rmv1::ask(app, key, memory, 1);
    if allow {
        a.preemption_policy = Some(si18::PreemptionPolicy {
            allow_preempt_self: true,
            allow_preempt_other: true,
        });
    }
    a
}

/// child1 and child2 (guarantee 500 each) under `parent`; `switch` is the
/// partition's preemption line, if any.
fn v1_config(switch: &str) -> String {
    format!(
        "partitions:
  - name: default
{switch}    queues:
      - name: root
        submitacl: '*'
        queues:
          - name: parent
            queues:
              - name: child1
                resources: {{guaranteed: {{memory: 500}}}}
                properties: {{application.sort.policy: fifo}}
              - name: child2
                resources: {{guaranteed: {{memory: 500}}}}
                properties: {{preemption.delay: 1ms}}
"
    )
}

/// Two full nodes of 500: alloc1 of child1 on one, the newer alloc2 on
/// the other; then child2 asks `alloc3` of 500, which the RM accepts on
/// the nodes of the allocations `accept_on`.
fn v1_pe4(switch: &str, accept_on: &[&str], allow: bool) -> V1 {
    let rm = V1::new(&v1_config(switch));
    rm.node("node-0", 500);
    rm.node("node-1", 500);
    rm.app("app-1", "root.parent.child1");
    rm.allocate(vec![rmv1::ask("app-1", "alloc1", 500, 1)], vec![]);
    rm.rec.wait("alloc1", |s| s.new.len() == 1);
    rm.allocate(vec![rmv1::ask("app-1", "alloc2", 500, 1)], vec![]);
    rm.rec.wait("alloc2", |s| s.new.len() == 2);
    assert_ne!(rm.node_of("alloc1"), rm.node_of("alloc2"));
    for key in accept_on {
        let n = rm.node_of(key);
        rm.rec.accept.lock().unwrap().insert(("alloc3".into(), n));
    }
    rm.app("app-2", "root.parent.child2");
    rm.allocate(vec![v1_preemptor("app-2", "alloc3", 500, allow)], vec![]);
    rm.settle();
    rm.settle();
    rm
}

#[test]
fn pe4_the_rms_answer_picks_the_node() {
    // An RM that accepts nothing is asked about both nodes.
    let probe = v1_pe4("", &[], true);
    let checks = probe.rec.copy().checks;
    // Both nodes were asked about and refused: nothing preempted.
    let mut asked: Vec<&str> = checks.iter().map(|c| c.node_id.as_str()).collect();
    asked.sort();
    asked.dedup();
    assert_eq!(asked, ["node-0", "node-1"]);
    assert!(v1_preempted(&probe.rec.copy()).is_empty());
    drop(probe);
    // The RM accepts alloc3 only on the node alloc2 (the newer) holds.
    let rm = v1_pe4("", &["alloc2"], true);
    let node2 = rm.node_of("alloc2");
    rm.rec.wait("a victim", |s| !v1_preempted(s).is_empty());
    rm.settle();
    let s = rm.rec.copy();
    let victims = v1_preempted(&s);
    assert_eq!(victims.len(), 1, "{victims:?}");
    assert_eq!(victims[0].allocation_key, "alloc2");
    assert_eq!(
        victims[0].message,
        "preempting allocations to free up resources to run ask: alloc3"
    );
    let check = s.checks.iter().find(|c| c.node_id == node2).unwrap();
    assert_eq!(check.preempt_allocation_keys, ["alloc2"]);
    assert_eq!(check.start_index, 0);
    // PE5: exactly one REQUEST event on the victim.
    rm.rec.wait("the victim's event", |s| {
        s.events.iter().any(|e| e.object_id == "alloc2")
    });
    let events: Vec<si18::EventRecord> = rm
        .rec
        .copy()
        .events
        .into_iter()
        .filter(|e| e.message.starts_with("Preempted by"))
        .collect();
    assert_eq!(events.len(), 1, "{events:?}");
    let e = &events[0];
    assert_eq!(e.r#type, si18::event_record::Type::Request as i32);
    assert_eq!(e.object_id, "alloc2");
    assert_eq!(e.reference_id, "app-1");
    assert_eq!(
        e.event_change_type,
        si18::event_record::ChangeType::None as i32
    );
    assert_eq!(
        e.event_change_detail,
        si18::event_record::ChangeDetail::DetailsNone as i32
    );
    assert_eq!(
        e.message,
        "Preempted by alloc3 from application app-2 in root.parent.child2"
    );
    // The RM confirms; alloc3 runs where alloc2 was, alloc1 stays.
    let mut confirm = rmv1::release("app-1", "alloc2");
    confirm.termination_type = si18::TerminationType::PreemptedByScheduler as i32;
    rm.allocate(vec![], vec![confirm]);
    rm.rec.wait("alloc3", |s| {
        s.new.iter().any(|a| a.allocation_key == "alloc3")
    });
    rm.settle();
    assert_eq!(rm.node_of("alloc3"), node2);
    assert_eq!(v1_preempted(&rm.rec.copy()).len(), 1);
    assert_eq!(rm.memory("root.parent.child1"), 500);
    assert_eq!(rm.memory("root.parent.child2"), 500);
}

/// PE20 in the v1.8 edition: the switch absent is on, an explicit false
/// is off; PE1's first precondition: no `allowPreemptOther`, no attempt.
#[test]
fn pe20_v1_the_switch_absent_is_on_and_pe1_allow_preempt_other_is_needed() {
    let accept = ["alloc1", "alloc2"];
    let on = v1_pe4("", &accept, true);
    on.rec.wait("a victim", |s| !v1_preempted(s).is_empty());
    for (switch, allow) in [("    preemption: {enabled: false}\n", true), ("", false)] {
        let rm = v1_pe4(switch, &accept, allow);
        let s = rm.rec.copy();
        assert!(
            v1_preempted(&s).is_empty(),
            "{switch:?} {allow}: {:?}",
            s.released
        );
        assert!(s.checks.is_empty(), "{switch:?} {allow}: never asked");
    }
}

/// A v1 RM registered with [`yaml`]`(queues)` whose `PreemptionPredicates`
/// accepts every check, with `nodes` (id, memory).
fn v1_start(queues: &str, nodes: &[(&str, i64)]) -> V1 {
    let rm = V1::new(&yaml(queues));
    rm.rec
        .accept
        .lock()
        .unwrap()
        .insert(("*".into(), "*".into()));
    for (id, memory) in nodes {
        rm.node(id, *memory);
    }
    rm
}

/// A v1 request of `memory` with a priority, allowed to preempt.
fn v1_ask_p(app: &str, key: &str, memory: i64, priority: i32) -> si18::Allocation {
    si18::Allocation {
        priority,
        ..v1_preemptor(app, key, memory, true)
    }
}

/// Submits `app` to `queue` and sends `asks`, waiting until the RM has
/// seen `total` allocations.
fn v1_run(rm: &V1, app_id: &str, queue: &str, asks: Vec<si18::Allocation>, total: usize) {
    rm.app(app_id, queue);
    rm.allocate(asks, vec![]);
    rm.rec.wait(app_id, |s| s.new.len() == total);
}

fn v1_victim_keys(rm: &V1) -> Vec<String> {
    let mut v: Vec<String> = v1_preempted(&rm.rec.copy())
        .into_iter()
        .map(|r| r.allocation_key)
        .collect();
    v.sort();
    v
}

/// The RM confirms every victim (`PREEMPTED_BY_SCHEDULER`, as the k8shim).
fn v1_confirm(rm: &V1) {
    let confirms = v1_preempted(&rm.rec.copy())
        .into_iter()
        .map(|v| {
            let mut r = rmv1::release(&v.application_id, &v.allocation_key);
            r.termination_type = si18::TerminationType::PreemptedByScheduler as i32;
            r
        })
        .collect();
    rm.allocate(vec![], confirms);
}

#[test]
fn pe10_v1_a_higher_priority_allocation_is_protected() {
    let queues = "          - name: parent
            queues:
              - name: child1
                resources: {guaranteed: {memory: 100}}
                properties: {application.sort.policy: fifo}
              - name: child3
                resources: {guaranteed: {memory: 100}}
              - name: child2
                resources: {guaranteed: {memory: 1500}}
                properties: {preemption.delay: 1ms}
";
    let rm = v1_start(queues, &[("node-0", 1000), ("node-1", 1000)]);
    v1_run(
        &rm,
        "app-3",
        "root.parent.child3",
        vec![v1_ask_p("app-3", "high", 1000, 1000)],
        1,
    );
    v1_run(
        &rm,
        "app-1",
        "root.parent.child1",
        vec![
            v1_ask_p("app-1", "low-1", 500, 0),
            v1_ask_p("app-1", "low-2", 500, 0),
        ],
        3,
    );
    assert_eq!(rm.node_of("low-1"), rm.node_of("low-2"));
    rm.app("app-2", "root.parent.child2");
    rm.allocate(vec![v1_ask_p("app-2", "c2", 1000, 0)], vec![]);
    rm.rec.wait("victims", |s| v1_preempted(s).len() == 2);
    rm.settle();
    assert_eq!(v1_victim_keys(&rm), ["low-1", "low-2"]);
    v1_confirm(&rm);
    rm.rec.wait("the preemptor", |s| {
        s.new.iter().any(|a| a.allocation_key == "c2")
    });
    assert_eq!(rm.node_of("c2"), rm.node_of("low-1"));
    assert_eq!(rm.memory("root.parent.child3"), 1000);
    assert_eq!(rm.memory("root.parent.child1"), 0);
}

#[test]
fn pe12_v1_disabled_and_fences_filter_the_victims() {
    let run = |props: [&str; 4]| -> usize {
        let queues = format!(
            "          - name: parent1
            properties: {{{}}}
            queues:
              - name: leaf1
                resources: {{guaranteed: {{memory: 500}}}}
                properties: {{preemption.delay: 1ms{}}}
          - name: parent2
            properties: {{{}}}
            queues:
              - name: leaf2
                properties: {{application.sort.policy: fifo{}}}
",
            props[0], props[1], props[2], props[3]
        );
        let rm = v1_start(&queues, &[("node-0", 1000)]);
        v1_run(
            &rm,
            "app-2",
            "root.parent2.leaf2",
            vec![
                v1_ask_p("app-2", "v1", 500, -1000),
                v1_ask_p("app-2", "v2", 500, -1000),
            ],
            2,
        );
        rm.app("app-1", "root.parent1.leaf1");
        rm.allocate(vec![v1_ask_p("app-1", "p", 500, 0)], vec![]);
        rm.settle();
        rm.settle();
        v1_preempted(&rm.rec.copy()).len()
    };
    assert_eq!(run(["", "", "", ""]), 1);
    assert_eq!(run(["", "", "", ", preemption.policy: disabled"]), 0);
    assert_eq!(run(["", "", "preemption.policy: disabled", ""]), 0);
    assert_eq!(run(["preemption.policy: fence", "", "", ""]), 0);
    assert_eq!(run(["", "", "", ", preemption.policy: fence"]), 1);
}

/// PE16 as a v1.8 RM sees it: the confirmation gets no echo.
#[test]
fn pe16_v1_end_to_end_from_victim_to_preemptor() {
    let queues = "          - name: parent
            resources: {max: {memory: 1000}}
            queues:
              - name: leaf1
                resources: {guaranteed: {memory: 500}}
                properties: {application.sort.policy: fifo}
              - name: leaf2
                resources: {guaranteed: {memory: 500}}
                properties: {preemption.delay: 1ms}
";
    let rm = v1_start(queues, &[("node-0", 1000), ("node-1", 1000)]);
    v1_run(
        &rm,
        "app-1",
        "root.parent.leaf1",
        vec![
            v1_ask_p("app-1", "alloc-1", 500, 2),
            v1_ask_p("app-1", "alloc-2", 500, 1),
        ],
        2,
    );
    rm.app("app-2", "root.parent.leaf2");
    rm.allocate(vec![v1_ask_p("app-2", "alloc-3", 500, 1)], vec![]);
    rm.rec.wait("a victim", |s| !v1_preempted(s).is_empty());
    rm.settle();
    rm.settle();
    assert_eq!(
        v1_victim_keys(&rm),
        ["alloc-2"],
        "alloc-1 outranks the preemptor"
    );
    assert_eq!(rm.memory("root.parent.leaf1"), 1000);
    v1_confirm(&rm);
    rm.rec.wait("alloc-3", |s| {
        s.new.iter().any(|a| a.allocation_key == "alloc-3")
    });
    rm.settle();
    let s = rm.rec.copy();
    assert_eq!(v1_preempted(&s).len(), 1);
    assert!(
        s.released.iter().all(|r| r.allocation_key != "alloc-2"
            || r.termination_type == si18::TerminationType::PreemptedByScheduler as i32),
        "no echo of the confirmation: {:?}",
        s.released
    );
    assert_eq!(rm.memory("root.parent.leaf1"), 500);
    assert_eq!(rm.memory("root.parent.leaf2"), 500);
    assert_eq!(rm.memory("root.parent"), 1000);
}

/// PE7 as a v1.8 RM without `predicates` sees it: both nodes have room,
/// so the node needs no victim; the newest sibling allocation goes for the
/// parent's max.
#[test]
fn pe7_v1_a_queue_at_its_parents_max_preempts_the_newest_sibling_allocation() {
    let queues = "          - name: parent
            resources: {max: {memory: 1000}}
            queues:
              - name: child1
                resources: {guaranteed: {memory: 500}}
                properties: {application.sort.policy: fifo}
              - name: child2
                resources: {guaranteed: {memory: 500}}
                properties: {preemption.delay: 1ms}
";
    let rm = v1_start(queues, &[("node-0", 1000), ("node-1", 1000)]);
    v1_run(
        &rm,
        "app-1",
        "root.parent.child1",
        vec![v1_ask_p("app-1", "first", 500, 0)],
        1,
    );
    v1_run(
        &rm,
        "app-1b",
        "root.parent.child1",
        vec![v1_ask_p("app-1b", "second", 500, 0)],
        2,
    );
    rm.app("app-2", "root.parent.child2");
    rm.allocate(vec![v1_ask_p("app-2", "c2", 500, 0)], vec![]);
    rm.rec.wait("a victim", |s| !v1_preempted(s).is_empty());
    rm.settle();
    assert_eq!(v1_victim_keys(&rm), ["second"], "the newer one");
    v1_confirm(&rm);
    rm.rec.wait("the preemptor", |s| {
        s.new.iter().any(|a| a.allocation_key == "c2")
    });
    rm.settle();
    assert_eq!(rm.memory("root.parent"), 1000);
    assert_eq!(rm.memory("root.parent.child2"), 500);
}

/// One allocation set of a v1 scenario: application, queue, key prefix,
/// memory and count.
type Fill<'a> = (&'a str, &'a str, &'a str, i64, usize);

/// A v1 scenario: `fills` allocated in order (key `<prefix>-<i>`), then
/// `app-p` in `queue` asks `p` of `memory`; several passes run.
fn v1_scenario(queues: &str, nodes: &[(&str, i64)], fills: &[Fill], p: (&str, i64)) -> V1 {
    let rm = v1_start(queues, nodes);
    let mut total = 0;
    for (app, queue, prefix, memory, n) in fills {
        total += n;
        let asks = (0..*n)
            .map(|i| v1_ask_p(app, &format!("{prefix}-{i}"), *memory, 0))
            .collect();
        v1_run(&rm, app, queue, asks, total);
    }
    rm.app("app-p", p.0);
    rm.allocate(vec![v1_ask_p("app-p", "p", p.1, 0)], vec![]);
    rm.settle();
    rm.settle();
    rm
}

fn v1_victims_now(rm: &V1) -> usize {
    v1_preempted(&rm.rec.copy()).len()
}

#[test]
fn pe2_v1_the_ask_queue_guarantee_decides() {
    let fills: [Fill; 2] = [
        ("app-1", "root.parent.child1", "c1", 500, 2),
        ("app-o", "root.other", "o", 500, 4),
    ];
    let rm = v1_scenario(
        PE2,
        &[("node-0", 3000)],
        &fills,
        ("root.parent.child2", 500),
    );
    rm.rec.wait("a victim", |s| !v1_preempted(s).is_empty());
    rm.settle();
    assert_eq!(v1_victims_now(&rm), 1);
    let rm = v1_scenario(
        PE2,
        &[("node-0", 3000)],
        &fills,
        ("root.parent.child2", 2500),
    );
    assert_eq!(v1_victims_now(&rm), 0);
}

#[test]
fn pe3_v1_no_guarantee_no_preemption() {
    for (parent, child2, victims) in [
        ("", "", 0),
        ("guaranteed: {memory: 1000}", "", 1),
        ("", "guaranteed: {memory: 500}", 1),
        ("guaranteed: {memory: 1000}", "guaranteed: {memory: 500}", 1),
    ] {
        let queues = format!(
            "          - name: parent
            resources: {{{parent}}}
            queues:
              - name: child1
                properties: {{application.sort.policy: fifo}}
              - name: child2
                resources: {{{child2}}}
                properties: {{preemption.delay: 1ms}}
          - name: other
"
        );
        let fills: [Fill; 2] = [
            ("app-1", "root.parent.child1", "c1", 250, 3),
            ("app-o", "root.other", "o", 250, 1),
        ];
        let rm = v1_scenario(
            &queues,
            &[("node-0", 1000)],
            &fills,
            ("root.parent.child2", 250),
        );
        if victims > 0 {
            rm.rec.wait("a victim", |s| !v1_preempted(s).is_empty());
            rm.settle();
            assert_eq!(v1_victim_keys(&rm), ["o-0"], "{parent:?} {child2:?}");
        } else {
            assert_eq!(v1_victims_now(&rm), 0, "{parent:?} {child2:?}");
        }
    }
}

const SIBLINGS: &str = "          - name: child1
            resources: {guaranteed: {memory: 500}}
            properties: {application.sort.policy: fifo}
          - name: child2
            resources: {guaranteed: {memory: 500}}
            properties: {preemption.delay: 1ms}
";

#[test]
fn pe6_v1_a_node_smaller_than_the_ask_is_no_candidate() {
    let nodes = [("node-0", 500), ("node-1", 500)];
    let fills: [Fill; 1] = [("app-1", "root.child1", "c1", 250, 4)];
    let rm = v1_scenario(SIBLINGS, &nodes, &fills, ("root.child2", 600));
    assert_eq!(v1_victims_now(&rm), 0);
    assert!(rm.rec.copy().checks.is_empty(), "no node to ask about");
    let rm = v1_scenario(SIBLINGS, &nodes, &fills, ("root.child2", 500));
    rm.rec.wait("victims", |s| v1_preempted(s).len() == 2);
    rm.settle();
    assert_eq!(v1_victims_now(&rm), 2);
}

#[test]
fn pe8_v1_victims_too_small_preempt_nothing() {
    let queues = "          - name: keep
            resources: {guaranteed: {memory: 600}}
          - name: child1
            resources: {guaranteed: {memory: 100}}
            properties: {application.sort.policy: fifo}
          - name: child2
            resources: {guaranteed: {memory: 500}}
            properties: {preemption.delay: 1ms}
";
    let fills: [Fill; 2] = [
        ("app-k", "root.keep", "k", 600, 1),
        ("app-1", "root.child1", "c1", 200, 2),
    ];
    let rm = v1_scenario(queues, &[("node-0", 1000)], &fills, ("root.child2", 500));
    assert_eq!(v1_victims_now(&rm), 0);
    let rm = v1_scenario(queues, &[("node-0", 1000)], &fills, ("root.child2", 400));
    rm.rec.wait("victims", |s| v1_preempted(s).len() == 2);
    rm.settle();
    assert_eq!(v1_victim_keys(&rm), ["c1-0", "c1-1"]);
}

#[test]
fn pe11_v1_unguaranteed_siblings_never_preempt_each_other() {
    for (child2, victims) in [("", 0), ("guaranteed: {memory: 250}", 1)] {
        let queues = format!(
            "          - name: parent1
            resources: {{guaranteed: {{memory: 1000}}}}
            queues:
              - name: child1
                properties: {{application.sort.policy: fifo}}
              - name: child2
                resources: {{{child2}}}
                properties: {{preemption.delay: 1ms}}
"
        );
        let fills: [Fill; 1] = [("app-1", "root.parent1.child1", "c1", 250, 4)];
        let rm = v1_scenario(
            &queues,
            &[("node-0", 1000)],
            &fills,
            ("root.parent1.child2", 250),
        );
        if victims > 0 {
            rm.rec.wait("a victim", |s| !v1_preempted(s).is_empty());
            rm.settle();
        }
        assert_eq!(v1_victims_now(&rm), victims, "{child2:?}");
    }
}

#[test]
fn pe13_v1_the_delay_holds_the_preemptor_back() {
    for (delay, victims) in [("1h", 0), ("1ms", 1)] {
        let queues = SIBLINGS.replace("1ms", delay);
        let fills: [Fill; 1] = [("app-1", "root.child1", "c1", 250, 4)];
        let rm = v1_scenario(&queues, &[("node-0", 1000)], &fills, ("root.child2", 250));
        if victims > 0 {
            rm.rec.wait("a victim", |s| !v1_preempted(s).is_empty());
            rm.settle();
        }
        assert_eq!(v1_victims_now(&rm), victims, "delay {delay}");
    }
}

/// PE9's guard as sicore has it: the search and the commit are one step
/// of the pass, so a victim cannot be released in between; a placeholder
/// being released (its gang swap in flight) is never picked (spec 6.3),
/// even when it is the newest allocation of a queue over its guarantee.
#[test]
fn pe9_a_placeholder_being_released_is_never_a_victim() {
    let queues = "          - name: child1
            resources: {guaranteed: {memory: 500}}
            properties: {application.sort.policy: fifo}
          - name: child2
            resources: {guaranteed: {memory: 500}}
            properties: {preemption.delay: 1ms}
";
    let h = start(&yaml(queues), &[("node-0", 1000)]);
    run(
        &h,
        "app-1",
        "root.child1",
        vec![ask("app-1", "c1", 250, 1, 3)],
        3,
    );
    // A gang of one placeholder, the newest allocation on the node.
    let mut g = app("app-g", "root.child1");
    g.placeholder_ask = res(&[("memory", 250), ("vcore", 1)]);
    g.gang_scheduling_style = "Soft".into();
    h.submit(g).unwrap();
    let mut ph = ask("app-g", "ph", 250, 1, 1);
    ph.placeholder = true;
    ph.task_group_name = "tg".into();
    assert_eq!(h.asks(vec![ph]).0, sicore_status::SICORE_OK);
    h.wait("the placeholder", |s| s.allocations.len() == 4);
    let ph_uuid = h.seen(|s| s.allocations[3].uuid.clone());
    // Its real allocation arrives: the placeholder is released for the
    // swap, and the RM does not confirm it.
    let mut real = ask("app-g", "real", 250, 1, 1);
    real.task_group_name = "tg".into();
    assert_eq!(h.asks(vec![real]).0, sicore_status::SICORE_OK);
    h.wait("the swap", |s| {
        s.released.iter().any(|r| {
            r.uuid == ph_uuid
                && r.termination_type == si::TerminationType::PlaceholderReplaced as i32
        })
    });
    preemptor(&h, "app-2", "root.child2", ask("app-2", "c2", 250, 1, 1));
    h.wait("a victim", |s| !preempted(s).is_empty());
    h.settle();
    let victims = h.seen(preempted);
    assert_eq!(victims.len(), 1, "{victims:?}");
    assert_eq!(victims[0].application_id, "app-1", "not the placeholder");
    assert_ne!(victims[0].uuid, ph_uuid);
}

/// PE12's "one victim with a required node": the newest allocation of
/// leaf2 is pinned to the node (a DaemonSet pod) and is passed over; the
/// older one goes.
#[test]
fn pe12_a_pinned_allocation_is_no_guarantee_victim() {
    let queues = "          - name: leaf1
            resources: {guaranteed: {memory: 500}}
            properties: {preemption.delay: 1ms}
          - name: leaf2
            properties: {application.sort.policy: fifo}
";
    let h = start(&yaml(queues), &[("node-0", 1000)]);
    run(
        &h,
        "app-2",
        "root.leaf2",
        vec![ask("app-2", "older", 500, 1, 1)],
        1,
    );
    let mut pinned = ask("app-2", "pinned", 500, 1, 1);
    pinned
        .tags
        .insert("yunikorn.apache.org/requiredNode".into(), "node-0".into());
    assert_eq!(h.asks(vec![pinned]).0, sicore_status::SICORE_OK);
    h.wait("the pinned pod", |s| s.allocations.len() == 2);
    preemptor(&h, "app-1", "root.leaf1", ask("app-1", "p", 500, 1, 1));
    h.wait("a victim", |s| !preempted(s).is_empty());
    h.settle();
    assert_eq!(victim_keys(&h), ["older"]);
}

/// Spec 11.6, the other way round: a placeholder that is a preemption
/// victim in flight is never swapped for its real allocation; the real
/// allocation waits for room of its own.
#[test]
fn a_preempted_placeholder_is_never_used_for_a_gang_swap() {
    let queues = "          - name: child1
            resources: {guaranteed: {memory: 500}}
            properties: {application.sort.policy: fifo}
          - name: child2
            resources: {guaranteed: {memory: 500}}
            properties: {preemption.delay: 1ms}
";
    let h = start(&yaml(queues), &[("node-0", 1000)]);
    run(
        &h,
        "app-1",
        "root.child1",
        vec![ask("app-1", "c1", 250, 1, 3)],
        3,
    );
    // A gang of one placeholder, the newest allocation on the node: the
    // first victim a preemptor of child2 picks.
    let mut g = app("app-g", "root.child1");
    g.placeholder_ask = res(&[("memory", 250), ("vcore", 1)]);
    g.gang_scheduling_style = "Soft".into();
    h.submit(g).unwrap();
    let mut ph = ask("app-g", "ph", 250, 1, 1);
    ph.placeholder = true;
    ph.task_group_name = "tg".into();
    assert_eq!(h.asks(vec![ph]).0, sicore_status::SICORE_OK);
    h.wait("the placeholder", |s| s.allocations.len() == 4);
    let ph_uuid = h.seen(|s| s.allocations[3].uuid.clone());
    preemptor(&h, "app-2", "root.child2", ask("app-2", "c2", 250, 1, 1));
    h.wait("a victim", |s| !preempted(s).is_empty());
    h.settle();
    let victims = h.seen(preempted);
    assert_eq!(victims.len(), 1, "{victims:?}");
    assert_eq!(
        victims[0].uuid, ph_uuid,
        "the newest allocation: the placeholder"
    );
    // Its real allocation arrives before the RM confirms the preemption:
    // no swap into the victim.
    let mut real = ask("app-g", "real", 250, 1, 1);
    real.task_group_name = "tg".into();
    assert_eq!(h.asks(vec![real]).0, sicore_status::SICORE_OK);
    h.settle();
    h.settle();
    let replaced = h.seen(|s| {
        s.released
            .iter()
            .filter(|r| r.termination_type == si::TerminationType::PlaceholderReplaced as i32)
            .count()
    });
    assert_eq!(replaced, 0, "a preempted placeholder is not swapped");
}
