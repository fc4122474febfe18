//! The SI v1.x model (edition `V1` partitions), stepped by hand: what the
//! RM would observe (the outbox) and the state (the snapshot) after each
//! request the v1 edge translates: asks, placed and foreign allocations,
//! releases by key, node actions. v0.12 partitions are checked to keep
//! their behaviour where the rules differ.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use crossbeam_channel::bounded;

use super::*;
use crate::options::Options;
use crate::proto::si::v1 as si;
use crate::scheduler::clock::ManualClock;
use crate::scheduler::core::Command;
use crate::scheduler::edition::{ConfigOrigin, Edition};
use crate::scheduler::outcome::OutMsg;
use crate::scheduler::outcome::Outbound;
use crate::scheduler::port::RmPort;
use crate::scheduler::request::{
    AllocationUpdate, AskRequest, ForeignAllocation, PlacedAllocation,
};
use crate::scheduler::snapshot::{Named, NodeSnap, PartitionSnap};
use crate::scheduler::testkit::{self, res};

use si::TerminationType as T;

const RM: &str = "rm";

/// Queue `a` (fair) and `g` (fifo, for gangs).
const YAML: &str = "partitions:
  - name: default
    queues:
      - name: root
        submitacl: '*'
        queues:
          - name: a
          - name: g
            properties:
              application.sort.policy: fifo
";

struct Rm;

impl RmPort for Rm {
    fn has_predicates(&self) -> bool {
        false
    }
}

fn register(core: &mut Core, edition: Edition) {
    let (tx, rx) = bounded(1);
    let mut o_config = ConfigOrigin::Text(YAML.into());
    if edition == Edition::V012 {
        o_config = ConfigOrigin::PolicyGroup;
    }
    core.step(Command::Register {
        registration: crate::scheduler::core::Registration {
            rm_id: RM.into(),
            policy_group: "queues".into(),
            edition,
            config: o_config,
            events: Default::default(),
            build_info: Default::default(),
            v19: true,
        },
        callback: Arc::new(Rm),
        reply: tx.into(),
    });
    rx.try_recv().expect("answered").expect("registered");
}

fn core_of(edition: Edition, tweak: impl FnOnce(&mut Options)) -> (Core, Arc<ManualClock>) {
    let mut o = Options::default();
    o.policy_configs.insert("queues".into(), YAML.into());
    tweak(&mut o);
    let clock = ManualClock::new();
    let mut core = Core::new(o, clock.clone());
    register(&mut core, edition);
    core.take_outbound();
    (core, clock)
}

/// A V1 core with node `n1` of 1000 memory and application `app` in
/// `root.a`.
fn v1() -> Core {
    let (mut core, _) = core_of(Edition::V1, |_| {});
    assert_eq!(
        node_answers(&mut core, vec![(node("n1", 1), 1000)]).0,
        ["n1"]
    );
    add_app(&mut core, "app", "root.a", None);
    core.take_outbound();
    core
}

fn mem(m: i64) -> Option<si::Resource> {
    Some(res(&[("memory", m)]).to_proto())
}

fn node(id: &str, action: i32) -> si::NodeInfo {
    si::NodeInfo {
        node_id: id.into(),
        action,
        ..Default::default()
    }
}

/// Sends nodes (each `(info, memory)`) and returns the (accepted, rejected)
/// answers.
fn node_answers(core: &mut Core, nodes: Vec<(si::NodeInfo, i64)>) -> (Vec<String>, Vec<String>) {
    let nodes = nodes
        .into_iter()
        .map(|(mut n, m)| {
            if m > 0 {
                n.schedulable_resource = mem(m);
            }
            n
        })
        .collect();
    core.step(Command::Node(si::NodeRequest {
        rm_id: RM.into(),
        nodes,
    }));
    let seen = seen(core);
    (seen.accepted_nodes, seen.rejected_nodes)
}

fn add_app(core: &mut Core, app: &str, queue: &str, gang: Option<i64>) {
    core.step(Command::Application(si::ApplicationRequest {
        rm_id: RM.into(),
        new: vec![si::AddApplicationRequest {
            application_id: app.into(),
            queue_name: queue.into(),
            partition_name: "default".into(),
            ugi: Some(si::UserGroupInformation {
                user: "u".into(),
                groups: vec![],
            }),
            placeholder_ask: gang.and_then(mem),
            ..Default::default()
        }],
        ..Default::default()
    }));
}

fn ask(app: &str, key: &str, memory: i64) -> AskRequest {
    testkit::ask(app, key, memory, 1)
}

fn placed(app: &str, key: &str, memory: i64, node: &str) -> PlacedAllocation {
    PlacedAllocation {
        ask: ask(app, key, memory),
        node: Arc::from(node),
    }
}

fn foreign(key: &str, node: &str, memory: i64) -> ForeignAllocation {
    ForeignAllocation {
        key: Arc::from(key),
        partition: Arc::from("default"),
        node: Arc::from(node),
        resource: Ok(res(&[("memory", memory)])),
        preemptable: true,
    }
}

fn release(app: &str, key: &str, t: T) -> si::AllocationRelease {
    si::AllocationRelease {
        partition_name: "default".into(),
        application_id: app.into(),
        uuid: key.into(),
        termination_type: t as i32,
        message: "from the test RM".into(),
    }
}

#[derive(Default)]
struct Update {
    asks: Vec<AskRequest>,
    placed: Vec<PlacedAllocation>,
    foreign: Vec<ForeignAllocation>,
    releases: Vec<si::AllocationRelease>,
}

fn send(core: &mut Core, u: Update) -> Seen {
    core.step(Command::Allocation(AllocationUpdate {
        rm_id: RM.into(),
        asks: u.asks,
        placed: u.placed,
        foreign: u.foreign,
        releases: (!u.releases.is_empty()).then(|| si::AllocationReleasesRequest {
            allocations_to_release: u.releases,
            ..Default::default()
        }),
    }));
    seen(core)
}

fn asks(core: &mut Core, a: Vec<AskRequest>) -> Seen {
    send(
        core,
        Update {
            asks: a,
            ..Default::default()
        },
    )
}

fn place(core: &mut Core, p: Vec<PlacedAllocation>) -> Seen {
    send(
        core,
        Update {
            placed: p,
            ..Default::default()
        },
    )
}

fn set_foreign(core: &mut Core, f: Vec<ForeignAllocation>) -> Seen {
    send(
        core,
        Update {
            foreign: f,
            ..Default::default()
        },
    )
}

fn releases(core: &mut Core, r: Vec<si::AllocationRelease>) -> Seen {
    send(
        core,
        Update {
            releases: r,
            ..Default::default()
        },
    )
}

fn pass(core: &mut Core) -> Seen {
    core.schedule_pass();
    seen(core)
}

/// What the RM observed.
#[derive(Debug, Default)]
struct Seen {
    /// New allocations: (key, uuid, node).
    new: Vec<(String, String, String)>,
    released: Vec<si::AllocationRelease>,
    released_asks: Vec<si::AllocationAskRelease>,
    rejected: Vec<si::RejectedAllocationAsk>,
    accepted_nodes: Vec<String>,
    rejected_nodes: Vec<String>,
    node_reasons: Vec<String>,
    states: Vec<(String, String)>,
    messages: usize,
}

impl Seen {
    fn is_silent(&self) -> bool {
        self.messages == 0
    }
    fn states_of(&self, app: &str) -> Vec<&str> {
        self.states
            .iter()
            .filter(|(a, _)| a == app)
            .map(|(_, s)| s.as_str())
            .collect()
    }
    fn released_keys(&self, t: T) -> Vec<&str> {
        self.released
            .iter()
            .filter(|r| r.termination_type == t as i32)
            .map(|r| r.uuid.as_str())
            .collect()
    }
}

fn seen(core: &mut Core) -> Seen {
    let mut s = Seen::default();
    for o in core.take_outbound() {
        let Outbound::Message(_, m) = o else {
            continue;
        };
        // The cache's half of an announcement counted next.
        if matches!(m, OutMsg::Assume(_)) {
            continue;
        }
        s.messages += 1;
        match m {
            OutMsg::NewAllocations(v) | OutMsg::NewAllocationsResynced(v) => s.new.extend(
                v.iter()
                    .map(|a| (a.key.to_string(), a.uuid.to_string(), a.node.to_string())),
            ),
            OutMsg::Allocation(r) => {
                s.released.extend(r.released);
                s.released_asks.extend(r.released_asks);
                s.rejected.extend(r.rejected);
            }
            OutMsg::Application(r) => s
                .states
                .extend(r.updated.into_iter().map(|u| (u.application_id, u.state))),
            OutMsg::Assume(_) => {}
            OutMsg::Node(r) => {
                s.accepted_nodes
                    .extend(r.accepted.into_iter().map(|n| n.node_id));
                for n in r.rejected {
                    s.rejected_nodes.push(n.node_id);
                    s.node_reasons.push(n.reason);
                }
            }
        }
    }
    s
}

fn part(core: &Core) -> PartitionSnap {
    core.snapshot().partitions.remove(0)
}

fn node_snap<'a>(p: &'a PartitionSnap, id: &str) -> &'a NodeSnap {
    p.nodes.iter().find(|n| n.id == id).expect("node")
}

fn m(v: i64) -> Named {
    BTreeMap::from([("memory".to_string(), v)])
}

fn memory_of(r: &Named) -> i64 {
    r.get("memory").copied().unwrap_or(0)
}

/// The usage sums agree: each node's allocated is the sum of its
/// allocations, root's allocated the sum of all, each application's
/// allocated the sum of its real ones. Returns root's allocated memory.
fn check_sums(p: &PartitionSnap) -> i64 {
    let mut total = 0i64;
    for n in &p.nodes {
        let sum: i64 = n.allocations.iter().map(|a| memory_of(&a.resource)).sum();
        assert_eq!(memory_of(&n.allocated), sum, "node {}", n.id);
        total += sum;
    }
    assert_eq!(memory_of(&p.root.allocated), total, "root allocated");
    for a in &p.apps {
        let real: i64 = a
            .allocations
            .iter()
            .filter_map(|u| p.allocations.get(u))
            .filter(|r| !r.placeholder)
            .map(|r| r.resource.get_named("memory"))
            .sum();
        assert_eq!(memory_of(&a.allocated), real, "application {}", a.id);
    }
    total
}

trait NamedGet {
    fn get_named(&self, name: &str) -> i64;
}

impl NamedGet for crate::scheduler::resource::Resource {
    fn get_named(&self, name: &str) -> i64 {
        self.to_named().get(name).copied().unwrap_or(0)
    }
}

fn queue_allocated(p: &PartitionSnap, path: &str) -> Named {
    fn find<'a>(
        q: &'a crate::scheduler::snapshot::QueueSnap,
        path: &str,
    ) -> Option<&'a crate::scheduler::snapshot::QueueSnap> {
        if q.path == path {
            return Some(q);
        }
        q.children.iter().find_map(|c| find(c, path))
    }
    find(&p.root, path).expect("queue").allocated.clone()
}

fn app_state(core: &Core, app: &str) -> String {
    part(core)
        .apps
        .iter()
        .find(|a| a.id == app)
        .map(|a| a.state.to_string())
        .unwrap_or_default()
}

// ---------------------------------------------------------------- identity

#[test]
fn the_allocation_key_is_the_uuid_and_one_request_gives_one_allocation() {
    let mut core = v1();
    let s = asks(&mut core, vec![ask("app", "pod-1", 100)]);
    assert!(s.new.is_empty() && s.rejected.is_empty());
    assert_eq!(s.states_of("app"), ["Accepted"]);
    let s = pass(&mut core);
    assert_eq!(s.new, [("pod-1".into(), "pod-1".into(), "n1".into())]);
    // The RM re-sends the same allocation on any change: nothing new.
    let again = asks(&mut core, vec![ask("app", "pod-1", 100)]);
    assert!(again.is_silent(), "{again:?}");
    assert!(pass(&mut core).new.is_empty(), "never a second allocation");
    let p = part(&core);
    assert_eq!(check_sums(&p), 100);
    assert!(memory_of(&p.apps[0].pending) == 0 && memory_of(&p.root.pending) == 0);
}

#[test]
fn a_request_for_more_than_one_allocation_is_rejected() {
    let mut core = v1();
    let s = asks(&mut core, vec![testkit::ask("app", "k", 100, 2)]);
    assert_eq!(s.rejected.len(), 1);
    assert_eq!(s.rejected[0].allocation_key, "k");
    assert!(s.rejected[0].reason.contains("maxAllocations 2"), "{s:?}");
    assert!(pass(&mut core).new.is_empty());
}

#[test]
fn v012_partitions_keep_minting_uuids_and_repeats() {
    let (mut core, _) = core_of(Edition::V012, |_| {});
    node_answers(&mut core, vec![(node("n1", 1), 1000)]);
    add_app(&mut core, "app", "root.a", None);
    seen(&mut core);
    assert!(asks(&mut core, vec![testkit::ask("app", "k", 100, 2)])
        .rejected
        .is_empty());
    let s = pass(&mut core);
    assert_eq!(s.new.len(), 2);
    assert!(s.new.iter().all(|(k, u, _)| k == "k" && u != "k"));
    assert_ne!(s.new[0].1, s.new[1].1);
    // The state machine still has Starting.
    assert_eq!(s.states_of("app"), ["Starting", "Running"]);
}

// ------------------------------------------------------------------ resize

#[test]
fn an_allocated_key_with_other_resources_is_resized_everywhere() {
    let mut core = v1();
    asks(&mut core, vec![ask("app", "k", 100)]);
    pass(&mut core);
    // Grow past the node's capacity: the RM runs it, so it counts.
    let s = asks(&mut core, vec![ask("app", "k", 1500)]);
    assert!(s.is_silent(), "{s:?}");
    let p = part(&core);
    assert_eq!(check_sums(&p), 1500);
    let n = node_snap(&p, "n1");
    assert_eq!(n.allocated, m(1500));
    assert_eq!(memory_of(&n.available), -500);
    assert_eq!(p.apps[0].allocated, m(1500));
    assert_eq!(queue_allocated(&p, "root.a"), m(1500));
    assert_eq!(memory_of(&p.root.pending), 0);
    // A new ask finds no room; the shrink gives it back.
    asks(&mut core, vec![ask("app", "k2", 200)]);
    assert!(pass(&mut core).new.is_empty());
    asks(&mut core, vec![ask("app", "k", 50)]);
    let p = part(&core);
    assert_eq!(check_sums(&p), 50);
    assert_eq!(p.apps[0].allocated, m(50));
    assert_eq!(pass(&mut core).new.len(), 1);
    assert_eq!(check_sums(&part(&core)), 250);
}

#[test]
fn a_pending_key_with_other_resources_replaces_the_request() {
    let mut core = v1();
    asks(&mut core, vec![ask("app", "k", 2000)]);
    assert!(pass(&mut core).new.is_empty(), "does not fit");
    assert_eq!(part(&core).root.pending, m(2000));
    asks(&mut core, vec![ask("app", "k", 300)]);
    assert_eq!(part(&core).root.pending, m(300));
    let s = pass(&mut core);
    assert_eq!(s.new, [("k".into(), "k".into(), "n1".into())]);
    assert_eq!(check_sums(&part(&core)), 300);
}

#[test]
fn a_resize_past_an_i64_is_rejected_and_changes_nothing() {
    let mut core = v1();
    place(&mut core, vec![placed("app", "big", i64::MAX - 10, "n1")]);
    asks(&mut core, vec![ask("app", "k", 100)]);
    // k is pending (the node is full); place it with the RM.
    place(&mut core, vec![placed("app", "k", 5, "n1")]);
    let s = asks(&mut core, vec![ask("app", "k", 100)]);
    assert_eq!(s.rejected.len(), 1, "{s:?}");
    assert!(s.rejected[0].reason.contains("overflow"), "{s:?}");
    let p = part(&core);
    assert_eq!(check_sums(&p), i64::MAX - 5);
}

// ------------------------------------------------------------------ placed

#[test]
fn a_placed_allocation_is_added_at_once_and_echoed() {
    let mut core = v1();
    // Over the node's capacity, and on a draining node: it runs already.
    node_answers(&mut core, vec![(node("n2", CREATE_DRAIN), 100)]);
    let s = place(&mut core, vec![placed("app", "p1", 400, "n2")]);
    assert_eq!(s.new, [("p1".into(), "p1".into(), "n2".into())]);
    assert!(s.rejected.is_empty());
    assert_eq!(s.states_of("app"), ["Accepted", "Running"], "no Starting");
    let p = part(&core);
    assert_eq!(check_sums(&p), 400);
    assert_eq!(node_snap(&p, "n2").allocated, m(400));
    assert_eq!(p.apps[0].allocated, m(400));
    // The same message again, and again with another node: nothing.
    assert!(place(&mut core, vec![placed("app", "p1", 400, "n2")]).is_silent());
    assert!(place(&mut core, vec![placed("app", "p1", 400, "n1")]).is_silent());
    // Other resources: a resize, not echoed.
    assert!(place(&mut core, vec![placed("app", "p1", 40, "n2")]).is_silent());
    assert_eq!(check_sums(&part(&core)), 40);
    // Released by key like any other.
    let s = releases(&mut core, vec![release("app", "p1", T::StoppedByRm)]);
    assert_eq!(s.released_keys(T::StoppedByRm), ["p1"]);
    assert_eq!(check_sums(&part(&core)), 0);
}

#[test]
fn a_pending_request_placed_by_the_rm_becomes_its_allocation() {
    let mut core = v1();
    asks(&mut core, vec![ask("app", "k", 5000)]);
    pass(&mut core);
    assert_eq!(part(&core).apps[0].pending, m(5000));
    let s = place(&mut core, vec![placed("app", "k", 5000, "n1")]);
    assert_eq!(s.new, [("k".into(), "k".into(), "n1".into())]);
    let p = part(&core);
    assert_eq!(memory_of(&p.apps[0].pending), 0);
    assert_eq!(memory_of(&p.root.pending), 0);
    assert_eq!(check_sums(&p), 5000);
    assert!(pass(&mut core).new.is_empty(), "nothing left to schedule");
}

#[test]
fn placed_allocations_that_cannot_be_taken_are_rejected() {
    let mut core = v1();
    let mut placeholder_without_group = placed("app", "ph", 10, "n1");
    placeholder_without_group.ask.placeholder = true;
    let mut elsewhere = placed("app", "other-partition", 10, "n1");
    elsewhere.ask.partition = Arc::from("nowhere");
    let s = place(
        &mut core,
        vec![
            placed("nope", "k1", 10, "n1"),
            placed("app", "k2", 10, "n9"),
            placed("app", "k3", 0, "n1"),
            placed("app", "k4", -5, "n1"),
            elsewhere,
            placeholder_without_group,
        ],
    );
    let keys: Vec<&str> = s
        .rejected
        .iter()
        .map(|r| r.allocation_key.as_str())
        .collect();
    assert_eq!(keys, ["k1", "k2", "k3", "k4", "other-partition"], "{s:?}");
    assert!(s.rejected[0].reason.contains("application nope"));
    assert!(s.rejected[1].reason.contains("node n9"));
    assert!(s.rejected[4].reason.contains("partition"));
    assert!(s.new.is_empty());
    assert_eq!(check_sums(&part(&core)), 0);
    assert_eq!(app_state(&core, "app"), "New");
}

#[test]
fn placed_placeholders_follow_the_gang_rules() {
    let (mut core, clock) = core_of(Edition::V1, |o| {
        o.placeholder_timeout = Duration::from_secs(60)
    });
    node_answers(&mut core, vec![(node("n1", 1), 1000)]);
    add_app(&mut core, "g", "root.g", Some(200));
    let ph = |key: &str| PlacedAllocation {
        ask: testkit::group_ask("g", key, "tg", 100, 1, true),
        node: Arc::from("n1"),
    };
    let s = place(&mut core, vec![ph("ph0")]);
    assert_eq!(s.states_of("g"), ["Accepted"], "not all placeholders yet");
    let s = place(&mut core, vec![ph("ph1")]);
    assert_eq!(s.new, [("ph1".into(), "ph1".into(), "n1".into())]);
    assert_eq!(s.states_of("g"), ["Running"], "the gang assembled");
    let p = part(&core);
    assert_eq!(p.apps[0].placeholder, m(200));
    assert!(memory_of(&p.apps[0].allocated) == 0);
    assert_eq!(check_sums(&p), 200);
    // Real members replace them as for placeholders the core placed.
    asks(
        &mut core,
        vec![testkit::group_ask("g", "r0", "tg", 100, 1, false)],
    );
    assert_eq!(
        pass(&mut core).released_keys(T::PlaceholderReplaced).len(),
        1
    );
    // The placeholder timer was armed by the first one: the unused
    // placeholder goes back on timeout.
    clock.advance(Duration::from_secs(61));
    core.tick();
    assert_eq!(seen(&mut core).released_keys(T::Timeout).len(), 1);
}

#[test]
fn v012_partitions_refuse_v1_shapes() {
    let (mut core, _) = core_of(Edition::V012, |_| {});
    node_answers(&mut core, vec![(node("n1", 1), 1000)]);
    add_app(&mut core, "app", "root.a", None);
    seen(&mut core);
    let s = send(
        &mut core,
        Update {
            placed: vec![placed("app", "p", 10, "n1")],
            foreign: vec![foreign("f", "n1", 10)],
            ..Default::default()
        },
    );
    assert_eq!(s.rejected.len(), 2);
    assert!(
        s.rejected.iter().all(|r| r.reason.contains("SI v0.12")),
        "{s:?}"
    );
    let p = part(&core);
    assert_eq!(check_sums(&p), 0);
    assert!(node_snap(&p, "n1").occupied.is_empty());
}

#[test]
fn a_placed_allocation_past_an_i64_is_rejected_and_changes_nothing() {
    let mut core = v1();
    place(&mut core, vec![placed("app", "a", i64::MAX, "n1")]);
    let s = place(&mut core, vec![placed("app", "b", 1, "n1")]);
    assert_eq!(s.rejected.len(), 1);
    assert!(s.rejected[0].reason.contains("overflow"), "{s:?}");
    assert!(s.new.is_empty());
    assert_eq!(check_sums(&part(&core)), i64::MAX);
}

#[test]
fn a_key_used_by_another_application_is_rejected() {
    let mut core = v1();
    add_app(&mut core, "other", "root.a", None);
    place(&mut core, vec![placed("app", "k", 10, "n1")]);
    seen(&mut core);
    let s = place(&mut core, vec![placed("other", "k", 10, "n1")]);
    assert_eq!(s.rejected.len(), 1);
    assert!(s.rejected[0]
        .reason
        .contains("allocated to application app"));
    let s = asks(&mut core, vec![ask("other", "k", 20)]);
    assert_eq!(s.rejected.len(), 1);
    assert_eq!(check_sums(&part(&core)), 10);
}

// ----------------------------------------------------------------- foreign

#[test]
fn foreign_allocations_are_the_nodes_occupied_resource() {
    let mut core = v1();
    let s = set_foreign(
        &mut core,
        vec![foreign("f1", "n1", 300), foreign("f2", "n1", 500)],
    );
    assert!(s.is_silent(), "never echoed: {s:?}");
    let p = part(&core);
    let n = node_snap(&p, "n1");
    assert_eq!(n.occupied, m(800));
    assert_eq!(n.available, m(200));
    let keys: Vec<&str> = n.foreign.keys().map(String::as_str).collect();
    assert_eq!(keys, ["f1", "f2"]);
    assert_eq!(n.foreign["f2"], m(500));
    let dump: serde_json::Value = serde_json::from_str(&core.dump_json()).unwrap();
    let dumped = &dump["partitions"][0]["nodes"][0]["foreign"];
    assert_eq!(dumped["f1"]["memory"], 300, "{dumped}");
    assert_eq!(check_sums(&p), 0, "not the core's allocations");
    // A request that only fits without them waits.
    asks(&mut core, vec![ask("app", "k", 300)]);
    assert!(pass(&mut core).new.is_empty());
    // Re-sending resizes; releasing (no application) removes.
    assert!(set_foreign(&mut core, vec![foreign("f2", "n1", 100)]).is_silent());
    assert_eq!(node_snap(&part(&core), "n1").occupied, m(400));
    assert_eq!(pass(&mut core).new.len(), 1);
    let s = releases(&mut core, vec![release("", "f1", T::StoppedByRm)]);
    assert!(s.is_silent(), "{s:?}");
    let p = part(&core);
    assert_eq!(node_snap(&p, "n1").occupied, m(100));
    assert_eq!(node_snap(&p, "n1").available, m(600));
    // Unknown keys are ignored.
    assert!(releases(&mut core, vec![release("", "f1", T::StoppedByRm)]).is_silent());
}

#[test]
fn foreign_allocations_that_cannot_be_tracked_are_rejected() {
    let mut core = v1();
    place(&mut core, vec![placed("app", "mine", 10, "n1")]);
    seen(&mut core);
    let mut bad = foreign("neg", "n1", 1);
    bad.resource = Ok(res(&[("memory", -1)]));
    let s = set_foreign(
        &mut core,
        vec![
            foreign("nowhere", "", 10),
            foreign("lost", "n7", 10),
            foreign("mine", "n1", 10),
            bad,
        ],
    );
    let keys: Vec<&str> = s
        .rejected
        .iter()
        .map(|r| r.allocation_key.as_str())
        .collect();
    assert_eq!(keys, ["nowhere", "lost", "mine", "neg"]);
    assert!(s.rejected.iter().all(|r| r.application_id.is_empty()));
    assert!(s.rejected[0].reason.contains("no node ID"));
    assert!(s.rejected[1].reason.contains("node n7"));
    assert!(node_snap(&part(&core), "n1").occupied.is_empty());
    // And the other way round: an ask for a foreign key.
    set_foreign(&mut core, vec![foreign("f", "n1", 10)]);
    let s = asks(&mut core, vec![ask("app", "f", 10)]);
    assert_eq!(s.rejected.len(), 1);
    assert!(s.rejected[0].reason.contains("foreign"));
}

#[test]
fn foreign_sums_past_an_i64_are_rejected_and_change_nothing() {
    let mut core = v1();
    set_foreign(&mut core, vec![foreign("f1", "n1", i64::MAX - 1)]);
    let s = set_foreign(&mut core, vec![foreign("f2", "n1", 2)]);
    assert_eq!(s.rejected.len(), 1);
    assert!(s.rejected[0].reason.contains("overflow"), "{s:?}");
    assert_eq!(node_snap(&part(&core), "n1").occupied, m(i64::MAX - 1));
    // Resizing the one there is exact (its old size is taken out first).
    assert!(set_foreign(&mut core, vec![foreign("f1", "n1", i64::MAX)])
        .rejected
        .is_empty());
    assert_eq!(node_snap(&part(&core), "n1").occupied, m(i64::MAX));
    // The node's free resource saturates; nothing fits.
    asks(&mut core, vec![ask("app", "k", 1)]);
    assert!(pass(&mut core).new.is_empty());
    releases(&mut core, vec![release("", "f1", T::StoppedByRm)]);
    assert!(node_snap(&part(&core), "n1")
        .occupied
        .values()
        .all(|v| *v == 0));
    assert_eq!(pass(&mut core).new.len(), 1);
}

#[test]
fn a_removed_node_takes_its_foreign_allocations() {
    let mut core = v1();
    set_foreign(&mut core, vec![foreign("f1", "n1", 10)]);
    node_answers(&mut core, vec![(node("n1", 4), 0)]);
    node_answers(&mut core, vec![(node("n1", 1), 1000)]);
    assert!(node_snap(&part(&core), "n1").occupied.is_empty());
    // The key is free for a new node.
    assert!(set_foreign(&mut core, vec![foreign("f1", "n1", 10)])
        .rejected
        .is_empty());
    assert_eq!(node_snap(&part(&core), "n1").occupied, m(10));
}

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

// ------------------------------------------------------------------- nodes

#[test]
fn create_drain_creates_an_unschedulable_node_with_one_answer() {
    let mut core = v1();
    let (ok, bad) = node_answers(&mut core, vec![(node("n2", CREATE_DRAIN), 1000)]);
    assert_eq!((ok, bad.len()), (vec!["n2".to_string()], 0));
    assert!(!node_snap(&part(&core), "n2").schedulable);
    // Fill n1 so only n2 could take the next request.
    place(&mut core, vec![placed("app", "fill", 1000, "n1")]);
    asks(&mut core, vec![ask("app", "k", 100)]);
    assert!(pass(&mut core).new.is_empty(), "n2 is draining");
    let (ok, _) = node_answers(&mut core, vec![(node("n2", 5), 0)]);
    assert_eq!(ok, ["n2"], "DRAIN_TO_SCHEDULABLE is answered too");
    assert!(node_snap(&part(&core), "n2").schedulable);
    assert_eq!(pass(&mut core).new, [("k".into(), "k".into(), "n2".into())]);
}

#[test]
fn every_node_of_a_v1_request_gets_exactly_one_answer() {
    let mut core = v1();
    let mut bad_partition = node("np", 1);
    bad_partition
        .attributes
        .insert(node::ATTR_PARTITION.into(), "nowhere".into());
    let mut negative = node("neg", CREATE_DRAIN);
    negative.schedulable_resource = mem(-1);
    let mut update = node("n1", 2);
    update.schedulable_resource = mem(2000);
    let infos = vec![
        (node("n2", CREATE_DRAIN), 100),
        (node("n2", CREATE_DRAIN), 100), // duplicate
        (bad_partition, 100),
        (negative, 0),
        (node("n3", 0), 100),    // unknown action
        (node("n4", 42), 100),   // unknown action
        (node("ghost", 2), 100), // update of an unknown node
        (update, 0),
        (node("n2", 3), 0), // DRAIN_NODE
        (node("n1", 9), 0), // unknown action, known node
    ];
    let (ok, bad) = node_answers(&mut core, infos);
    assert_eq!(ok, ["n2", "n1", "n2"]);
    assert_eq!(bad, ["n2", "np", "neg", "n3", "n4", "ghost", "n1"]);
    let p = part(&core);
    assert_eq!(p.nodes.len(), 2);
    assert_eq!(node_snap(&p, "n1").capacity, m(2000));
    assert_eq!(p.total, m(2100));
}

#[test]
fn v012_partitions_answer_create_only_and_ignore_create_drain() {
    let (mut core, _) = core_of(Edition::V012, |_| {});
    let (ok, bad) = node_answers(
        &mut core,
        vec![
            (node("n1", 1), 100),
            (node("n2", CREATE_DRAIN), 100),
            (node("n1", 2), 200),
            (node("ghost", 2), 200),
        ],
    );
    assert_eq!((ok, bad), (vec!["n1".to_string()], vec![]));
    let p = part(&core);
    assert_eq!(p.nodes.len(), 1, "action 6 is no action in v0.12");
}

#[test]
fn decommission_releases_the_nodes_allocations_and_is_answered() {
    let mut core = v1();
    place(&mut core, vec![placed("app", "a", 100, "n1")]);
    asks(&mut core, vec![ask("app", "b", 100)]);
    pass(&mut core);
    core.step(Command::Node(si::NodeRequest {
        rm_id: RM.into(),
        nodes: vec![node("n1", 4)],
    }));
    let s = seen(&mut core);
    assert_eq!(s.accepted_nodes, ["n1"]);
    let mut keys = s.released_keys(T::StoppedByRm);
    keys.sort();
    assert_eq!(keys, ["a", "b"]);
    assert!(part(&core).nodes.is_empty());
    // The pod is recreated and asked for again: a new request.
    node_answers(&mut core, vec![(node("n1", 1), 1000)]);
    asks(&mut core, vec![ask("app", "b", 100)]);
    assert_eq!(pass(&mut core).new.len(), 1);
}

// ------------------------------------------------------------ app states

#[test]
fn v1_applications_go_from_accepted_to_running_with_no_timer() {
    let (mut core, clock) = core_of(Edition::V1, |o| {
        o.app_start_timeout = Duration::from_secs(300)
    });
    node_answers(&mut core, vec![(node("n1", 1), 1000)]);
    add_app(&mut core, "app", "root.a", None);
    asks(
        &mut core,
        vec![ask("app", "k1", 100), ask("app", "k2", 100)],
    );
    let s = pass(&mut core);
    assert_eq!(
        s.states_of("app"),
        ["Running"],
        "Accepted came with the ask"
    );
    assert_eq!(app_state(&core, "app"), "Running");
    clock.advance(Duration::from_secs(301));
    core.tick();
    assert!(seen(&mut core).states.is_empty(), "no start timer fired");
}

#[test]
fn a_resize_at_the_waiting_ask_limit_is_no_new_waiting_ask() {
    let (mut core, _) = core_of(Edition::V1, |o| o.max_asks_per_rm = 1);
    node_answers(&mut core, vec![(node("n1", 1), 1000)]);
    add_app(&mut core, "app", "root.a", None);
    asks(&mut core, vec![ask("app", "k", 100)]);
    pass(&mut core);
    asks(&mut core, vec![ask("app", "big", 5000)]);
    // One waiting ask: the limit. Resizing the allocated key is allowed,
    // and so is replacing the waiting one; a new request is not.
    let s = asks(
        &mut core,
        vec![
            ask("app", "k", 200),
            ask("app", "big", 4000),
            ask("app", "new", 1),
        ],
    );
    let keys: Vec<&str> = s
        .rejected
        .iter()
        .map(|r| r.allocation_key.as_str())
        .collect();
    assert_eq!(keys, ["new"], "{s:?}");
    let p = part(&core);
    assert_eq!(check_sums(&p), 200);
    assert_eq!(p.root.pending, m(4000));
}
