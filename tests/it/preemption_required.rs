//! Required-node (DaemonSet) preemption through the C ABI, as RMs of both
//! editions see it (`shared/spec/policy/preemption.md` 12, 14, 15, 19
//! PE17): a pod pinned to a full node gets victims on that node released
//! with `PREEMPTED_BY_SCHEDULER` once the RM agrees (v0.12:
//! `Predicates{allocate: false}`, v1.8: `PreemptionPredicates`), and runs
//! there after the RM confirms; a refused node keeps its pods. Also: a v1
//! RM with `preemption_predicates` and no `predicates` is asked for
//! guarantee preemption. The scenarios both editions show are written
//! once over [`EditionRm`] and run by one test per edition.

use crate::common::editions::{v1_preemptor, EditionRm};
use crate::common::preempt::{assert_no_preemption, predicates_rm, preempted};
use crate::common::v1::{v1_options, v1_preempted, V1Rm};
use crate::common::*;
use sicore::ffi::sicore_status::SICORE_OK;
use sicore::ffi::*;
use sicore_c_rm::v1 as rmv1;

const TAG_REQUIRED_NODE: &str = "yunikorn.apache.org/requiredNode";
const DS_MESSAGE: &str = "preempting allocations to free up resources to run daemon set ask: ds";
const NO_VICTIM: &str =
    "Unschedulable request 'ds' with required node 'node-0', no preemption victim found";

/// Leaves `a` (the victims) and `ds` (the DaemonSet pods); `switch` is
/// the partition's preemption line, if any.
fn config(switch: &str) -> String {
    let queues = "          - name: a
            properties: {application.sort.policy: fifo}
          - name: ds
            properties: {application.sort.policy: fifo}
";
    partition_yaml(switch, queues)
}

const ON: &str = "    preemption: {enabled: true}\n";

// ---- The set-ups of each edition ----

/// node-0 full of four pods of `app-1` (250 memory, 1 vcore each), then
/// an empty node-1, then a DaemonSet pod for node-0; node-0 refused by
/// the RM's predicates when `refuse`.
fn v012_pinned(switch: &str, refuse: bool) -> Harness {
    let h = predicates_rm(yaml_options(&config(switch)), &[("node-0", 1000, 10)]);
    h.submit(app("app-1", "root.a")).unwrap();
    assert_eq!(h.asks(vec![ask("app-1", "a", 250, 1, 4)]).0, SICORE_OK);
    h.wait("app-1 fills node-0", |s| s.allocations.len() == 4);
    assert_eq!(h.nodes(vec![node("node-1", 1000, 10)]).0, SICORE_OK);
    h.wait("node-1", |s| s.nodes_accepted.len() == 2);
    if refuse {
        h.rec
            .behaviour
            .lock()
            .unwrap()
            .refuse_nodes
            .insert("node-0".into());
    }
    h.submit(app("app-ds", "root.ds")).unwrap();
    let mut ds = ask("app-ds", "ds", 250, 1, 1);
    ds.tags.insert(TAG_REQUIRED_NODE.into(), "node-0".into());
    assert_eq!(h.asks(vec![ds]).0, SICORE_OK);
    h
}

/// A v1 RM registered with `config` (`predicates` installed when asked,
/// the table changed by `tweak`) whose `PreemptionPredicates` accepts
/// every node but `refuse`.
fn v1_rm(
    config: &str,
    predicates: bool,
    refuse: &[&str],
    tweak: impl FnOnce(&mut sicore_v1_callbacks),
) -> V1Rm {
    let rm = V1Rm::with(v1_options(), config, predicates, tweak);
    rm.rec.accept_all();
    rm.rec
        .refuse
        .lock()
        .unwrap()
        .extend(refuse.iter().map(|n| n.to_string()));
    rm
}

/// node-0 full of four pods of `app-1`, an empty node-1, then a
/// DaemonSet pod pinned to node-0. The v1 edition: preemption is on
/// when the key is absent.
fn v1_pinned(predicates: bool, refuse: &[&str]) -> V1Rm {
    v1_pinned_on(v1_rm(&config(""), predicates, refuse, |_| {}))
}

fn v1_pinned_on(rm: V1Rm) -> V1Rm {
    rm.node("node-0", 1000);
    rm.app("app-1", "root.a");
    let pods = (0..4)
        .map(|i| rmv1::ask("app-1", &format!("pod-{i}"), 250, 1))
        .collect();
    rm.allocate(pods, vec![]);
    rm.rec.wait("node-0 full", |s| s.new.len() == 4);
    rm.node("node-1", 1000);
    rm.app("app-ds", "root.ds");
    let mut ds = rmv1::ask("app-ds", "ds", 250, 1);
    ds.allocation_tags
        .insert(TAG_REQUIRED_NODE.into(), "node-0".into());
    rm.allocate(vec![ds], vec![]);
    rm
}

// ---- The scenarios of both editions ----

/// The DaemonSet pod gets one victim on its node, the newest pod there,
/// after one check of that node; it runs there once the RM confirms.
fn a_daemonset_pod_evicts_one_pod_on_its_node_and_runs_there(rm: EditionRm) {
    rm.wait_victims(1);
    rm.settle();
    let victims = rm.victims();
    assert_eq!(victims.len(), 1, "{victims:?}");
    let v = victims[0].clone();
    assert_eq!(v.app, "app-1");
    assert_eq!(v.message, DS_MESSAGE);
    assert_eq!(v.node, "node-0");
    // The stand-in check, on the pinned node only, and no other.
    assert_eq!(rm.checked_nodes("ds"), ["node-0"]);
    assert_eq!(rm.checks_asked(), 1);
    assert_eq!(rm.allocations(), 4, "not placed on node-1");
    match &rm {
        EditionRm::V012(h) => h.seen(|s| {
            let r = &preempted(s)[0];
            assert_eq!(r.partition_name, "default");
            let newest = s
                .allocations
                .iter()
                .rfind(|a| a.node_id == "node-0")
                .unwrap();
            assert_eq!(r.uuid, newest.uuid, "the newest pod on node-0");
        }),
        EditionRm::V1(v1) => {
            // The node's victim list, the start index on its last entry.
            let c = &v1.rec.copy().checks[0];
            assert_eq!(c.preempt_allocation_keys, std::slice::from_ref(&v.key));
            assert_eq!(c.start_index, 0);
        }
    }
    assert_eq!(
        rm.memory("root.a"),
        1000,
        "the victim counts until the RM confirms"
    );
    rm.confirm();
    rm.wait_allocated("ds");
    rm.settle();
    assert_eq!(rm.node_of("ds"), "node-0");
    assert_eq!(rm.victims().len(), 1, "exactly one preemption");
    if let EditionRm::V1(v1) = &rm {
        let s = v1.rec.copy();
        assert_eq!(s.released.len(), 1, "no echo: {:?}", s.released);
    }
    assert_eq!(rm.memory("root.a"), 750);
    assert_eq!(rm.memory("root.ds"), 250);
    assert_eq!(rm.memory("root"), 1000);
    rm.wait_event("the victim's event", |e| {
        e.object == v.key
            && e.app == "app-1"
            && e.message == "Preempted by ds from application app-ds in root.ds"
    });
}

/// A node the RM refuses in the check keeps its pods; the pod's failure
/// is an event.
fn a_node_the_rm_refuses_keeps_its_pods_and_the_failure_is_an_event(rm: EditionRm) {
    rm.wait_event("the failure event", |e| {
        e.object == "ds" && e.message == NO_VICTIM
    });
    rm.settle();
    rm.assert_no_victim("a refused node");
    let checked = rm.checked_nodes("ds");
    assert!(!checked.is_empty(), "node-0 was asked about");
    assert!(checked.iter().all(|n| n == "node-0"), "{checked:?}");
    assert_eq!(rm.checks_asked(), checked.len(), "only the pod's checks");
    assert_eq!(rm.allocations(), 4, "not placed on node-1");
}

#[test]
fn v012_a_daemonset_pod_evicts_one_pod_on_its_node_and_runs_there() {
    let rm = EditionRm::V012(v012_pinned(ON, false));
    a_daemonset_pod_evicts_one_pod_on_its_node_and_runs_there(rm);
}

#[test]
fn v1_a_daemonset_pod_asks_preemption_predicates_evicts_and_runs_on_its_node() {
    let rm = EditionRm::V1(v1_pinned(true, &[]));
    a_daemonset_pod_evicts_one_pod_on_its_node_and_runs_there(rm);
}

#[test]
fn v012_a_node_the_rm_refuses_keeps_its_pods_and_the_failure_is_an_event() {
    let rm = EditionRm::V012(v012_pinned(ON, true));
    a_node_the_rm_refuses_keeps_its_pods_and_the_failure_is_an_event(rm);
}

#[test]
fn v1_a_node_the_rm_refuses_keeps_its_pods_and_the_failure_is_an_event() {
    let rm = EditionRm::V1(v1_pinned(true, &["node-0"]));
    a_node_the_rm_refuses_keeps_its_pods_and_the_failure_is_an_event(rm);
}

#[test]
fn v012_without_the_switch_a_daemonset_pod_never_evicts() {
    let h = v012_pinned("", false);
    assert_no_preemption(&h, 4);
}

// ---- The v1.8 edition only ----

#[test]
fn v1_an_rm_without_predicates_is_still_asked_preemption_predicates() {
    // Guarantee preemption: b (guarantee 1000) below, a (500) above. The
    // RM has no `predicates` and refuses node-0 in PreemptionPredicates:
    // the victim must come from node-1, and node-0 must have been asked.
    let queues = "          - name: a
            resources: {guaranteed: {memory: 500}}
            properties: {application.sort.policy: fifo}
          - name: b
            resources: {guaranteed: {memory: 1000}}
            properties: {application.sort.policy: fifo, preemption.delay: 1ms}
";
    let rm = v1_rm(&partition_yaml("", queues), false, &["node-0"], |_| {});
    rm.node("node-0", 1000);
    rm.node("node-1", 1000);
    rm.app("app-1", "root.a");
    let pods = (0..4)
        .map(|i| rmv1::ask("app-1", &format!("pod-{i}"), 500, 1))
        .collect();
    rm.allocate(pods, vec![]);
    rm.rec.wait("both nodes full", |s| s.new.len() == 4);
    rm.app("app-2", "root.b");
    rm.allocate(vec![v1_preemptor("app-2", "b", 500, 0)], vec![]);
    rm.rec.wait("a victim", |s| !v1_preempted(s).is_empty());
    rm.settle();
    let s = rm.rec.copy();
    let victims = v1_preempted(&s);
    assert_eq!(victims.len(), 1, "{victims:?}");
    assert_eq!(rm.node_of(&victims[0].allocation_key), "node-1");
    let nodes: Vec<&str> = s.checks.iter().map(|c| c.node_id.as_str()).collect();
    assert_eq!(
        nodes,
        ["node-0", "node-1"],
        "checks in order, node-0 refused"
    );
}

#[test]
fn v1_an_rm_without_preemption_predicates_is_not_asked_and_the_check_succeeds() {
    // The header: a NULL callback is "not implemented", the core acts as
    // if it succeeded.
    let rm = v1_pinned_on(v1_rm(&config(""), true, &["node-0"], |t| {
        t.preemption_predicates = None
    }));
    rm.rec.wait("a victim", |s| !v1_preempted(s).is_empty());
    rm.settle();
    let s = rm.rec.copy();
    assert_eq!(v1_preempted(&s).len(), 1);
    assert!(s.checks.is_empty(), "{:?}", s.checks);
}
