//! The test scenarios of `shared/spec/policy/preemption.md` section 19
//! that the other preemption tests do not show through the C ABI, as a
//! v0.12 RM and, most of them, as a v1.8 RM sees them (docs/preemption.md
//! maps every scenario to its tests). A scenario shown by both editions is
//! written once, over [`EditionRm`], and run by one test per edition (the
//! v1.8 one named `..._v1_...`). Each test sets a situation up, lets the
//! core run its passes and checks what the RM was told: the victims'
//! `PREEMPTED_BY_SCHEDULER` releases, or none. A test that expects no
//! victim has a contrast in it that does preempt, so that it cannot pass
//! by the core doing nothing. The v1.8 section has the scenarios of the
//! RM's `PreemptionPredicates` answer (PE4, PE5), the switch (PE20) and
//! `allowPreemptOther` (PE1).

use crate::common::editions::{req, req_p, v1_preemptor, Edition, EditionRm};
use crate::common::preempt::preempted;
use crate::common::v1::{v1_confirmation, v1_preempted, V1Rm};
use crate::common::*;
use sicore::ffi::sicore_status::SICORE_OK;
use sicore::proto::si::v1 as si;
use sicore::proto::si18::v1 as si18;
use sicore_c_rm::v1 as rmv1;

/// A partition with preemption on and `queues` (YAML lines below root,
/// indented by 10).
fn yaml(queues: &str) -> String {
    partition_yaml("    preemption: {enabled: true}\n", queues)
}

/// An RM of `edition` registered with `yaml`, with `nodes` (id, memory;
/// 100 vcores for a v0.12 RM).
fn start(edition: Edition, yaml: &str, nodes: &[(&str, i64)]) -> EditionRm {
    let rm = EditionRm::new(edition, yaml);
    rm.nodes(nodes, 100);
    rm
}

/// Lets several passes run, then asserts that no victim was told.
fn no_victim_after_passes(rm: &EditionRm, what: &str) {
    rm.settle();
    rm.settle();
    rm.assert_no_victim(what);
}

/// Waits for `n` victims, lets a pass more run and asserts that there
/// are exactly `n`.
fn exactly_victims(rm: &EditionRm, n: usize, what: &str) {
    rm.wait_victims(n);
    rm.settle();
    assert_eq!(rm.victims().len(), n, "{what}: {}", rm.released());
}

/// child1 and child2, guarantee 500 each; child2 may preempt after 1 ms.
const SIBLINGS: &str = "          - name: child1
            resources: {guaranteed: {memory: 500}}
            properties: {application.sort.policy: fifo}
          - name: child2
            resources: {guaranteed: {memory: 500}}
            properties: {preemption.delay: 1ms}
";

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

/// One node of 3000: child1 holds two of 500, `other` four of 500; then
/// child2 asks `ask_size`.
fn pe2_full(e: Edition, ask_size: i64) -> EditionRm {
    let rm = start(e, &yaml(PE2), &[("node-0", 3000)]);
    rm.fill("app-1", "root.parent.child1", &[req("c1", 500, 2)], 2);
    rm.fill("app-o", "root.other", &[req("o", 500, 4)], 6);
    rm.preemptor("app-2", "root.parent.child2", req("c2", ask_size, 1));
    rm
}

fn pe2(e: Edition) {
    // An ask within child2's guarantee takes one victim.
    exactly_victims(&pe2_full(e, 500), 1, "an ask within the guarantee");
    // An ask far beyond child2's guarantee: removing every victim never
    // brings child2 within it, so nothing is preempted (spec 5.3).
    let rm = pe2_full(e, 2500);
    no_victim_after_passes(&rm, "an ask beyond the guarantee");
    assert_eq!(rm.allocations(), 6);
}

#[test]
fn pe2_the_ask_queue_guarantee_decides() {
    pe2(Edition::V012);
}

#[test]
fn pe2_v1_the_ask_queue_guarantee_decides() {
    pe2(Edition::V1);
}

/// `parent` with child1 and child2 (no guarantee unless given) and
/// `other` outside it; one node of 1000 full of child1's three allocations
/// of 250 and then other's one; child2 asks 250.
fn pe3_full(e: Edition, parent: &str, child2: &str) -> EditionRm {
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
    let rm = start(e, &yaml(&queues), &[("node-0", 1000)]);
    rm.fill("app-1", "root.parent.child1", &[req("c1", 250, 3)], 3);
    rm.fill("app-o", "root.other", &[req("o", 250, 1)], 4);
    rm.preemptor("app-2", "root.parent.child2", req("c2", 250, 1));
    rm
}

fn pe3(e: Edition) {
    // Neither parent nor child2 guaranteed: never.
    no_victim_after_passes(&pe3_full(e, "", ""), "no guarantee");
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
        let rm = pe3_full(e, parent, child2);
        rm.wait_victims(1);
        rm.settle();
        assert_eq!(
            rm.victim_keys(),
            ["o"],
            "parent {parent:?} child2 {child2:?}"
        );
        rm.confirm();
        rm.wait_allocated("c2");
    }
}

#[test]
fn pe3_no_guarantee_no_preemption() {
    pe3(Edition::V012);
}

#[test]
fn pe3_v1_no_guarantee_no_preemption() {
    pe3(Edition::V1);
}

/// child1 (guarantee 500) full of `victims` allocations of `size` on two
/// nodes of `node_size`, child2 (guarantee 500) asking `ask_size`.
fn guaranteed_siblings(
    e: Edition,
    node_size: i64,
    size: i64,
    victims: usize,
    ask_size: i64,
) -> EditionRm {
    let rm = start(
        e,
        &yaml(SIBLINGS),
        &[("node-0", node_size), ("node-1", node_size)],
    );
    rm.fill("app-1", "root.child1", &[req("c1", size, victims)], victims);
    rm.preemptor("app-2", "root.child2", req("c2", ask_size, 1));
    rm
}

fn pe6(e: Edition) {
    // Nodes of 500, an ask of 600: no node could ever hold it, none is
    // asked about.
    let rm = guaranteed_siblings(e, 500, 250, 4, 600);
    no_victim_after_passes(&rm, "an ask larger than any node");
    assert_eq!(rm.allocations(), 4);
    assert_eq!(rm.checks_asked(), 0, "no node to ask about");
    // The same with an ask of 500 preempts (two victims of 250).
    exactly_victims(
        &guaranteed_siblings(e, 500, 250, 4, 500),
        2,
        "an ask of 500",
    );
}

#[test]
fn pe6_a_node_smaller_than_the_ask_is_no_candidate() {
    pe6(Edition::V012);
}

#[test]
fn pe6_v1_a_node_smaller_than_the_ask_is_no_candidate() {
    pe6(Edition::V1);
}

/// One node of 1000: `keep` (within its guarantee) holds 600, child1
/// (guarantee 100) two of 200; child2 (guarantee 500) asks `ask_size`.
fn pe8_full(e: Edition, ask_size: i64) -> EditionRm {
    let queues = "          - name: keep
            resources: {guaranteed: {memory: 600}}
          - name: child1
            resources: {guaranteed: {memory: 100}}
            properties: {application.sort.policy: fifo}
          - name: child2
            resources: {guaranteed: {memory: 500}}
            properties: {preemption.delay: 1ms}
";
    let rm = start(e, &yaml(queues), &[("node-0", 1000)]);
    rm.fill("app-k", "root.keep", &[req("k", 600, 1)], 1);
    rm.fill("app-1", "root.child1", &[req("c1", 200, 2)], 3);
    rm.preemptor("app-2", "root.child2", req("c2", ask_size, 1));
    rm
}

fn pe8(e: Edition) {
    // child1's two of 200 free 400 of the 500 asked: nothing is taken.
    let rm = pe8_full(e, 500);
    no_victim_after_passes(&rm, "victims too small");
    assert_eq!(rm.allocations(), 3);
    // An ask of 400 takes both.
    let rm = pe8_full(e, 400);
    exactly_victims(&rm, 2, "an ask of 400");
    assert_eq!(rm.victim_keys(), rm.keys(req("c1", 200, 2)));
}

#[test]
fn pe8_victims_too_small_preempt_nothing() {
    pe8(Edition::V012);
}

#[test]
fn pe8_v1_victims_too_small_preempt_nothing() {
    pe8(Edition::V1);
}

fn pe10(e: Edition) {
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
    let rm = start(e, &yaml(queues), &[("node-0", 1000), ("node-1", 1000)]);
    rm.fill(
        "app-3",
        "root.parent.child3",
        &[req_p("high", 1000, 1000)],
        1,
    );
    rm.fill(
        "app-1",
        "root.parent.child1",
        &[req_p("low-1", 500, 0), req_p("low-2", 500, 0)],
        3,
    );
    let low = rm.node_of("low-1");
    assert_eq!(low, rm.node_of("low-2"));
    rm.preemptor("app-2", "root.parent.child2", req_p("c2", 1000, 0));
    exactly_victims(&rm, 2, "the two of priority 0");
    assert_eq!(rm.victim_keys(), ["low-1", "low-2"]);
    rm.confirm();
    rm.wait_allocated("c2");
    assert_eq!(rm.node_of("c2"), low, "on the node its victims left");
    assert_eq!(rm.memory("root.parent.child3"), 1000);
    assert_eq!(rm.memory("root.parent.child2"), 1000);
    assert_eq!(rm.memory("root.parent.child1"), 0);
}

#[test]
fn pe10_a_higher_priority_allocation_is_protected() {
    pe10(Edition::V012);
}

#[test]
fn pe10_v1_a_higher_priority_allocation_is_protected() {
    pe10(Edition::V1);
}

/// parent1 (guarantee 1000) with child1 (no guarantee) holding four of 250
/// on one full node and child2 (guarantee `child2`, if any) asking 250.
fn pe11_full(e: Edition, child2: &str) -> EditionRm {
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
    let rm = start(e, &yaml(&queues), &[("node-0", 1000)]);
    rm.fill("app-1", "root.parent1.child1", &[req("c1", 250, 4)], 4);
    rm.preemptor("app-2", "root.parent1.child2", req("c2", 250, 1));
    rm
}

fn pe11(e: Edition) {
    // Both children inherit parent1's remaining guarantee: child1 counts
    // as within guarantee and is protected (spec 4.2).
    no_victim_after_passes(&pe11_full(e, ""), "child2 without a guarantee");
    // child2 with a guarantee of its own ignores parent1's: one victim.
    let rm = pe11_full(e, "guaranteed: {memory: 250}");
    exactly_victims(&rm, 1, "child2 with a guarantee");
}

#[test]
fn pe11_unguaranteed_siblings_never_preempt_each_other() {
    pe11(Edition::V012);
}

#[test]
fn pe11_v1_unguaranteed_siblings_never_preempt_each_other() {
    pe11(Edition::V1);
}

/// The ask in `root.parent1.leaf1`, two allocations in
/// `root.parent2.leaf2` (priority `leaf2_priority`) filling the only node;
/// `props` is (parent1, leaf1, parent2, leaf2)'s extra properties.
fn pe12_full(e: Edition, props: [&str; 4], leaf2_priority: i32) -> EditionRm {
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
    let rm = start(e, &yaml(&queues), &[("node-0", 1000)]);
    rm.fill(
        "app-2",
        "root.parent2.leaf2",
        &[
            req_p("v1", 500, leaf2_priority),
            req_p("v2", 500, leaf2_priority),
        ],
        2,
    );
    rm.preemptor("app-1", "root.parent1.leaf1", req_p("p", 500, 0));
    rm
}

/// [`pe12_full`] with victims of priority -1000: none or exactly one.
fn pe12_victims(e: Edition, props: [&str; 4], victims: usize) {
    let rm = pe12_full(e, props, -1000);
    if victims == 0 {
        no_victim_after_passes(&rm, &format!("{props:?}"));
    } else {
        exactly_victims(&rm, victims, &format!("{props:?}"));
    }
}

fn pe12_fences(e: Edition) {
    // Nothing set: a victim.
    pe12_victims(e, ["", "", "", ""], 1);
    // leaf2 disabled, or disabled inherited from parent2: none.
    pe12_victims(e, ["", "", "", ", preemption.policy: disabled"], 0);
    pe12_victims(e, ["", "", "preemption.policy: disabled", ""], 0);
    // A fence on the preemptor's path keeps it inside: none.
    pe12_victims(e, ["preemption.policy: fence", "", "", ""], 0);
    pe12_victims(e, ["", ", preemption.policy: fence", "", ""], 0);
    // A fence elsewhere restricts nothing.
    pe12_victims(e, ["", "", "preemption.policy: fence", ""], 1);
    pe12_victims(e, ["", "", "", ", preemption.policy: fence"], 1);
}

#[test]
fn pe12_disabled_and_fences_filter_the_victims() {
    pe12_fences(Edition::V012);
}

#[test]
fn pe12_v1_disabled_and_fences_filter_the_victims() {
    pe12_fences(Edition::V1);
}

#[test]
fn pe12_priority_offsets_decide_the_victims() {
    let e = Edition::V012;
    // Victims of priority 10 are above the preemptor's 0: none.
    no_victim_after_passes(&pe12_full(e, ["", "", "", ""], 10), "priority 10");
    // leaf2's offset of 20 raises them further: still none.
    let rm = pe12_full(e, ["", "", "", ", priority.offset: 20"], -10);
    no_victim_after_passes(&rm, "leaf2's offset");
    // leaf1's offset of 20 raises the preemptor to 20: a victim.
    let rm = pe12_full(e, ["", ", priority.offset: 20", "", ""], 10);
    exactly_victims(&rm, 1, "leaf1's offset");
}

/// PE7: the parent's max, not the nodes, holds the preemptor back (both
/// nodes have room, so the node needs no victim; the newest sibling
/// allocation goes for the parent's max).
fn pe7(e: Edition) {
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
    let rm = start(e, &yaml(queues), &[("node-0", 1000), ("node-1", 1000)]);
    rm.fill("app-1", "root.parent.child1", &[req("first", 500, 1)], 1);
    rm.fill("app-1b", "root.parent.child1", &[req("second", 500, 1)], 2);
    rm.preemptor("app-2", "root.parent.child2", req("c2", 500, 1));
    rm.wait_victims(1);
    rm.settle();
    assert_eq!(rm.victim_keys(), ["second"], "the newer one");
    rm.confirm();
    rm.wait_allocated("c2");
    rm.settle();
    assert_eq!(rm.memory("root.parent"), 1000);
    assert_eq!(rm.memory("root.parent.child2"), 500);
}

#[test]
fn pe7_a_queue_at_its_parents_max_preempts_the_newest_sibling_allocation() {
    pe7(Edition::V012);
}

#[test]
fn pe7_v1_a_queue_at_its_parents_max_preempts_the_newest_sibling_allocation() {
    pe7(Edition::V1);
}

/// PE13/PE14: the leaf's delay holds an ask back; a short one does not.
fn pe13(e: Edition) {
    for (delay, victims) in [("1h", 0), ("1ms", 1)] {
        let queues = SIBLINGS.replace("1ms", delay);
        let rm = start(e, &yaml(&queues), &[("node-0", 1000)]);
        rm.fill("app-1", "root.child1", &[req("c1", 250, 4)], 4);
        rm.preemptor("app-2", "root.child2", req("c2", 250, 1));
        if victims == 0 {
            no_victim_after_passes(&rm, &format!("delay {delay}"));
        } else {
            exactly_victims(&rm, victims, &format!("delay {delay}"));
        }
    }
}

#[test]
fn pe13_the_delay_holds_the_preemptor_back() {
    pe13(Edition::V012);
}

#[test]
fn pe13_v1_the_delay_holds_the_preemptor_back() {
    pe13(Edition::V1);
}

/// PE16 end to end: the higher-priority allocation stays, the victim is
/// kept booked until the RM confirms it, a later pass preempts nothing
/// more, and the preemptor is allocated from its reservation; a v1.8 RM
/// gets no echo of its confirmation.
fn pe16(e: Edition) {
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
    let rm = start(e, &yaml(queues), &[("node-0", 1000), ("node-1", 1000)]);
    rm.fill(
        "app-1",
        "root.parent.leaf1",
        &[req_p("alloc-1", 500, 2), req_p("alloc-2", 500, 1)],
        2,
    );
    rm.preemptor("app-2", "root.parent.leaf2", req_p("alloc-3", 500, 1));
    rm.wait_victims(1);
    rm.settle();
    rm.settle();
    assert_eq!(
        rm.victim_keys(),
        ["alloc-2"],
        "alloc-1 outranks the preemptor"
    );
    // Still booked: nothing allocated, leaf1 still holds both.
    assert_eq!(rm.memory("root.parent.leaf1"), 1000);
    assert_eq!(rm.allocations(), 2);
    rm.confirm();
    rm.wait_allocated("alloc-3");
    rm.settle();
    assert_eq!(rm.victims().len(), 1, "{}", rm.released());
    if let EditionRm::V1(v1) = &rm {
        let s = v1.rec.copy();
        assert!(
            s.released.iter().all(|r| r.allocation_key != "alloc-2"
                || r.termination_type == si18::TerminationType::PreemptedByScheduler as i32),
            "no echo of the confirmation: {:?}",
            s.released
        );
    }
    assert_eq!(rm.memory("root.parent.leaf1"), 500);
    assert_eq!(rm.memory("root.parent.leaf2"), 500);
    assert_eq!(rm.memory("root.parent"), 1000);
}

#[test]
fn pe16_end_to_end_from_victim_to_preemptor() {
    pe16(Edition::V012);
}

#[test]
fn pe16_v1_end_to_end_from_victim_to_preemptor() {
    pe16(Edition::V1);
}

// ---- The v1.8 edition only ----

/// child1 and child2 (guarantee 500 each) under `parent`; `switch` is the
/// partition's preemption line, if any.
fn v1_config(switch: &str) -> String {
    let queues = "          - name: parent
            queues:
              - name: child1
                resources: {guaranteed: {memory: 500}}
                properties: {application.sort.policy: fifo}
              - name: child2
                resources: {guaranteed: {memory: 500}}
                properties: {preemption.delay: 1ms}
";
    partition_yaml(switch, queues)
}

/// Two full nodes of 500: alloc1 of child1 on one, the newer alloc2 on
/// the other; then child2 asks `alloc3` of 500 (allowed to preempt others
/// when `allow`), which the RM accepts on the nodes of the allocations
/// `accept_on`.
fn v1_pe4(switch: &str, accept_on: &[&str], allow: bool) -> V1Rm {
    let rm = V1Rm::new(&v1_config(switch));
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
    let alloc3 = if allow {
        v1_preemptor("app-2", "alloc3", 500, 0)
    } else {
        rmv1::ask("app-2", "alloc3", 500, 1)
    };
    rm.allocate(vec![alloc3], vec![]);
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
    rm.allocate(vec![], vec![v1_confirmation("app-1", "alloc2")]);
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

/// A soft gang `app-g` in child1 with one placeholder of 250, placed as
/// the RM's fourth allocation; returns the placeholder's UUID.
fn gang_of_one_placeholder(h: &Harness) -> String {
    let mut g = app("app-g", "root.child1");
    g.placeholder_ask = res(&[("memory", 250), ("vcore", 1)]);
    g.gang_scheduling_style = "Soft".into();
    h.submit(g).unwrap();
    let mut ph = ask("app-g", "ph", 250, 1, 1);
    ph.placeholder = true;
    ph.task_group_name = "tg".into();
    assert_eq!(h.asks(vec![ph]).0, SICORE_OK);
    h.wait("the placeholder", |s| s.allocations.len() == 4);
    h.seen(|s| s.allocations[3].uuid.clone())
}

/// The real allocation of the gang's task group arrives.
fn real_allocation(h: &Harness) {
    let mut real = ask("app-g", "real", 250, 1, 1);
    real.task_group_name = "tg".into();
    assert_eq!(h.asks(vec![real]).0, SICORE_OK);
}

/// PE9's guard as sicore has it: the search and the commit are one step
/// of the pass, so a victim cannot be released in between; a placeholder
/// being released (its gang swap in flight) is never picked (spec 6.3),
/// even when it is the newest allocation of a queue over its guarantee.
#[test]
fn pe9_a_placeholder_being_released_is_never_a_victim() {
    let rm = start(Edition::V012, &yaml(SIBLINGS), &[("node-0", 1000)]);
    rm.fill("app-1", "root.child1", &[req("c1", 250, 3)], 3);
    let h = rm.harness();
    // A gang of one placeholder, the newest allocation on the node.
    let ph_uuid = gang_of_one_placeholder(h);
    // Its real allocation arrives: the placeholder is released for the
    // swap, and the RM does not confirm it.
    real_allocation(h);
    h.wait("the swap", |s| {
        s.released.iter().any(|r| {
            r.uuid == ph_uuid
                && r.termination_type == si::TerminationType::PlaceholderReplaced as i32
        })
    });
    rm.preemptor("app-2", "root.child2", req("c2", 250, 1));
    rm.wait_victims(1);
    rm.settle();
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
    let rm = start(Edition::V012, &yaml(queues), &[("node-0", 1000)]);
    rm.fill("app-2", "root.leaf2", &[req("older", 500, 1)], 1);
    let h = rm.harness();
    let mut pinned = ask("app-2", "pinned", 500, 1, 1);
    pinned
        .tags
        .insert("yunikorn.apache.org/requiredNode".into(), "node-0".into());
    assert_eq!(h.asks(vec![pinned]).0, SICORE_OK);
    h.wait("the pinned pod", |s| s.allocations.len() == 2);
    rm.preemptor("app-1", "root.leaf1", req("p", 500, 1));
    rm.wait_victims(1);
    rm.settle();
    assert_eq!(rm.victim_keys(), ["older"]);
}

/// Spec 11.6, the other way round: a placeholder that is a preemption
/// victim in flight is never swapped for its real allocation; the real
/// allocation waits for room of its own.
#[test]
fn a_preempted_placeholder_is_never_used_for_a_gang_swap() {
    let rm = start(Edition::V012, &yaml(SIBLINGS), &[("node-0", 1000)]);
    rm.fill("app-1", "root.child1", &[req("c1", 250, 3)], 3);
    let h = rm.harness();
    // A gang of one placeholder, the newest allocation on the node: the
    // first victim a preemptor of child2 picks.
    let ph_uuid = gang_of_one_placeholder(h);
    rm.preemptor("app-2", "root.child2", req("c2", 250, 1));
    rm.wait_victims(1);
    rm.settle();
    let victims = h.seen(preempted);
    assert_eq!(victims.len(), 1, "{victims:?}");
    assert_eq!(
        victims[0].uuid, ph_uuid,
        "the newest allocation: the placeholder"
    );
    // Its real allocation arrives before the RM confirms the preemption:
    // no swap into the victim.
    real_allocation(h);
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
