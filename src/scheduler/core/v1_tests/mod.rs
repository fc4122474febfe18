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

mod foreign;
mod keys;
mod nodes;
mod releases;

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
