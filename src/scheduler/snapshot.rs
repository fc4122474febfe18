//! What the scheduler publishes: one copy of its state, built on the core
//! thread, that every reader renders from.
//!
//! The state dump (`scheduler::dump`) is this model serialised as it stands
//! (the field names are the dump's stable names; fields only the REST
//! service reads are skipped); the REST service renders its YuniKorn
//! shaped documents and runs its health checks on the same copy, off the
//! core thread. No lock on live state is ever held while a client is
//! served. Allocation records are the partition's shared records (`Arc`),
//! so copying them is cheap.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use serde::{Serialize, Serializer};

use super::objects::application::AppState;
use super::objects::queue::{PriorityPolicy, QueueId, ROOT};
use super::outcome::NewAllocation;
use super::partition::preempt::quota::quota_delay_of;
use super::partition::preempt::{delay_of, go_duration_string, PreemptionPolicy, DEFAULT_DELAY};
use super::partition::Partition;
use super::resource::{name_of, Resource};
use crate::events::EventStats;

/// Named quantities, sorted by name.
pub type Named = BTreeMap<String, i64>;

/// Named form of a resource.
pub fn named(r: &Resource) -> Named {
    r.to_named()
}

/// Most pending asks listed per application.
pub const MAX_LISTED_ASKS: usize = 1000;

fn shared_strs<S: Serializer>(v: &[Arc<str>], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(v.iter().map(|u| &**u))
}

fn shared_str<S: Serializer>(v: &Arc<str>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(v)
}

/// The whole copy.
#[derive(Serialize, Default)]
pub struct Snapshot {
    /// Unix time of the copy, ns.
    #[serde(skip)]
    pub taken_ns: i64,
    /// Unix time the scheduler started, ns.
    #[serde(skip)]
    pub started_ns: i64,
    /// Seconds since the scheduler started.
    pub uptime_seconds: f64,
    /// Registered RMs, by id.
    pub rms: Vec<RmSnap>,
    /// Partitions, by internal name.
    pub partitions: Vec<PartitionSnap>,
    /// Event system counters.
    pub events: EventStats,
    /// The event history (`/ws/v1/events`): a handle, read directly by
    /// REST without asking the core again.
    #[serde(skip)]
    pub event_ring: Option<std::sync::Arc<crate::events::ring::EventRing>>,
}

impl Snapshot {
    /// The snapshot with the handle of the event history.
    pub fn with_event_ring(mut self, ring: std::sync::Arc<crate::events::ring::EventRing>) -> Self {
        self.event_ring = Some(ring);
        self
    }
}

/// One registered RM.
#[derive(Serialize)]
pub struct RmSnap {
    /// RM id.
    pub rm_id: String,
    /// Policy group.
    pub policy_group: String,
    /// Where the configuration came from.
    pub config_source: String,
    /// SHA-256 checksum of the configuration in force.
    #[serde(rename = "config_checksum")]
    pub checksum: String,
    /// Its text. (No callbacks: a cached snapshot must not keep a
    /// replaced registration's table alive.)
    #[serde(skip)]
    pub config_text: String,
    /// Its event settings in force.
    pub events: RmEventsSnap,
    /// How its configuration writes quantities (its SI edition's way).
    #[serde(skip)]
    pub grammar: crate::config::QuantityGrammar,
}

/// One RM's event settings in force (its own, SI v1.8 `extraConfig`, or
/// the scheduler's options).
#[derive(Serialize, Default, Clone, Debug, PartialEq, Eq)]
pub struct RmEventsSnap {
    /// Records are collected and sent for this RM.
    pub enabled: bool,
    /// Most distinct objects between two flushes (0 while disabled).
    pub request_capacity: u64,
}

/// One partition.
#[derive(Serialize, Default)]
pub struct PartitionSnap {
    /// Name without the `[rmID]` prefix.
    pub name: String,
    /// Owning RM.
    pub rm_id: String,
    /// Node sort policy name.
    #[serde(rename = "node_sort_policy")]
    pub node_policy: &'static str,
    /// Its resource weights.
    #[serde(skip)]
    pub weights: BTreeMap<String, f64>,
    /// Sum of node capacities.
    pub total: Named,
    /// Allocations made since creation.
    pub allocation_count: u64,
    /// Queue tree.
    pub root: QueueSnap,
    /// Active applications, by id.
    #[serde(rename = "applications")]
    pub apps: Vec<AppSnap>,
    /// Recently terminated applications, oldest first.
    #[serde(rename = "completed_applications")]
    pub finished: Vec<FinishedSnap>,
    /// Nodes, by id.
    pub nodes: Vec<NodeSnap>,
    /// Reservations, by node id.
    pub reservations: Vec<ReservationSnap>,
    /// Recently rejected applications, oldest first (REST only).
    #[serde(skip)]
    pub rejected: Vec<FinishedSnap>,
    /// How long terminated and rejected applications stay listed, ns.
    #[serde(skip)]
    pub terminated_timeout_ns: i64,
    /// Partition preemption is on.
    #[serde(skip)]
    pub preemption_enabled: bool,
    /// Every allocation, by UUID (the partition's shared records).
    #[serde(skip)]
    pub allocations: BTreeMap<Arc<str>, Arc<NewAllocation>>,
    /// UUIDs of the preemption victims in flight.
    #[serde(skip)]
    pub preempted: std::collections::BTreeSet<Arc<str>>,
    /// User and group trackers (limits.md 3), in the shapes of the REST
    /// usage endpoints.
    pub usage: super::ugm::UsageSnap,
}

/// A node held for one ask.
#[derive(Serialize)]
pub struct ReservationSnap {
    /// The reserved node.
    pub node: String,
    /// Application holding it.
    pub application_id: String,
    /// Its ask.
    pub allocation_key: String,
}

/// One queue.
#[derive(Serialize, Default)]
pub struct QueueSnap {
    /// Short name.
    pub name: String,
    /// Full path.
    pub path: String,
    /// Parent's full path.
    #[serde(skip)]
    pub parent: Option<String>,
    /// Leaf or parent.
    pub leaf: bool,
    /// From the configuration (false: created by placement).
    pub managed: bool,
    /// `Active` or `Draining`.
    pub state: String,
    /// Guarantee.
    pub guaranteed: Option<Named>,
    /// Max (root: the partition size).
    pub max: Option<Named>,
    /// Allocated below the queue.
    pub allocated: Named,
    /// Pending below the queue.
    pub pending: Named,
    /// Applications directly in this leaf.
    pub total_applications: usize,
    /// Of those, the ones in `Running`.
    pub running_applications: usize,
    /// Applications at or below this queue that count against
    /// `maxapplications` (started and not finished).
    pub active_applications: u64,
    /// Configured `maxapplications` (0: no limit).
    pub max_applications: u64,
    /// Application sort policy (leaves).
    pub sort_policy: String,
    /// Properties after inheritance.
    pub properties: BTreeMap<String, String>,
    /// The priority the queue reports to its parent (`i32::MIN`: none).
    pub current_priority: i32,
    /// `application.sort.priority` is enabled.
    pub priority_sort: bool,
    /// `priority.policy` is `fence`.
    pub priority_fence: bool,
    /// `priority.offset`.
    pub priority_offset: i32,
    /// Submit ACL as configured.
    pub submit_acl: String,
    /// Admin ACL as configured.
    pub admin_acl: String,
    /// Child template.
    #[serde(skip)]
    pub template: Option<TemplateSnap>,
    /// Children by name.
    pub children: Vec<QueueSnap>,
    /// The queue's user/group `limits` as configured (partition limits
    /// are root's).
    pub limits: Vec<LimitSnap>,
    /// Resources of the preemption victims in flight below the queue
    /// (released to the RM, not yet confirmed).
    pub preempting: Named,
    /// Its allocations may be guarantee-preemption victims:
    /// `preemption.policy` is not `disabled` (own or inherited).
    pub preemption_enabled: bool,
    /// `preemption.policy: fence` set on this queue (not inherited).
    pub preemption_fence: bool,
    /// `preemption.delay` as a Go duration (`30s`); parents always show
    /// the default, as only leaves read it.
    pub preemption_delay: String,
    /// `quota.preemption.delay` (or the v1.8 `preemption.quota.delay`) as a
    /// Go duration (`0s`: off).
    pub quota_preemption_delay: String,
}

/// One configured limit entry of a queue.
#[derive(Serialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct LimitSnap {
    /// Free-text description.
    pub limit: String,
    /// User names or `*`.
    pub users: Vec<String>,
    /// Group names or `*`.
    pub groups: Vec<String>,
    /// Resource cap.
    pub max_resources: Named,
    /// Application cap (0 = none).
    pub max_applications: u64,
}

/// A parent queue's child template.
pub struct TemplateSnap {
    /// Max given to dynamic leaves.
    pub max: Option<Named>,
    /// Guarantee given to dynamic leaves.
    pub guaranteed: Option<Named>,
    /// Properties given to dynamic leaves.
    pub properties: BTreeMap<String, String>,
}

/// One active application.
#[derive(Serialize, Default)]
pub struct AppSnap {
    /// Id.
    pub id: String,
    /// Queue path.
    pub queue: String,
    /// State.
    pub state: &'static str,
    /// Unix time of submission, ns.
    #[serde(skip)]
    pub submitted_ns: i64,
    /// States entered with their Unix ns times, oldest first.
    #[serde(skip)]
    pub state_log: Vec<(&'static str, i64)>,
    /// Submitting user.
    pub user: String,
    /// Its groups.
    pub groups: Vec<String>,
    /// Allocated.
    pub allocated: Named,
    /// Pending.
    pub pending: Named,
    /// Per type the highest allocated seen (REST only).
    #[serde(skip)]
    pub max_used: Named,
    /// The highest priority of its pending asks (`i32::MIN`: none).
    pub max_request_priority: i32,
    /// Asks with allocations still to make, in scheduling order (at most
    /// [`MAX_LISTED_ASKS`]).
    pub pending_asks: Vec<AskSnap>,
    /// Allocations still to make over all asks.
    #[serde(skip)]
    pub pending_allocations: i64,
    /// UUIDs of its allocations, sorted.
    #[serde(serialize_with = "shared_strs")]
    pub allocations: Vec<Arc<str>>,
    /// Whether it has ever held an allocation.
    pub started: bool,
    /// Whether it is held back (usually in Accepted) by a user or group
    /// `maxapplications` (limits.md 4.1: the state the APP records
    /// `AppCannotRunQuota` / `AppRunnableQuota` announce).
    pub held_by_limits: bool,
    /// Gang: the placeholder allocations held (not in `allocated`).
    pub placeholder: Named,
    /// Gang: `placeholderAsk` as sent (null when none).
    pub placeholder_ask: Option<Named>,
    /// Gang: `Soft` or `Hard`.
    pub gang_style: &'static str,
    /// Gang: task groups by name.
    pub task_groups: Vec<TaskGroupSnap>,
    /// Gang: swaps decided and not yet confirmed by the RM.
    pub replacements: Vec<ReplacementSnap>,
    /// Gang: placeholders released with `TIMEOUT`, awaiting the RM.
    pub releasing_placeholders: Vec<String>,
}

/// One task group of an application.
#[derive(Serialize)]
pub struct TaskGroupSnap {
    /// Task group name.
    pub name: String,
    /// Placeholder allocations held.
    pub placeholders: usize,
    /// Of those, free to be replaced.
    pub free_placeholders: usize,
    /// Real allocations that replaced a placeholder.
    pub real: usize,
}

/// A swap in flight.
#[derive(Serialize)]
pub struct ReplacementSnap {
    /// The placeholder being replaced.
    pub placeholder: String,
    /// Its node.
    pub placeholder_node: String,
    /// The real allocation (not yet the application's).
    pub real: String,
    /// The real ask.
    pub allocation_key: String,
    /// The real allocation's node.
    pub node: String,
    /// The real allocation's resource.
    pub resource: Named,
    /// What it needs beyond the placeholder, already in queue usage.
    pub queue_excess: Named,
}

/// One ask.
#[derive(Serialize)]
pub struct AskSnap {
    /// Allocation key.
    pub allocation_key: String,
    /// Resource per allocation.
    pub resource: Named,
    /// Allocations still to make.
    pub pending_repeat: i32,
    /// Priority.
    pub priority: i32,
    /// Tags as sent (REST only).
    #[serde(skip)]
    pub tags: Arc<BTreeMap<String, String>>,
    /// A gang placeholder ask.
    #[serde(skip)]
    pub placeholder: bool,
    /// Its task group.
    #[serde(skip)]
    pub task_group: String,
    /// The node it must run on.
    #[serde(skip)]
    pub required_node: Option<String>,
    /// Unix ns it was created.
    #[serde(skip)]
    pub created_ns: i64,
}

/// A terminated application.
#[derive(Serialize)]
pub struct FinishedSnap {
    /// Id.
    pub id: String,
    /// Queue path.
    pub queue: String,
    /// Final state.
    pub state: &'static str,
    /// Unix time it terminated, ns.
    pub finished_ns: i64,
    /// Submitting user (REST only, like the fields below).
    #[serde(skip)]
    pub user: String,
    /// The user's groups.
    #[serde(skip)]
    pub groups: Vec<String>,
    /// Unix ns of submission.
    #[serde(skip)]
    pub submitted_ns: i64,
    /// States entered with their times.
    #[serde(skip)]
    pub state_log: Vec<(&'static str, i64)>,
    /// Why it was rejected.
    #[serde(skip)]
    pub message: String,
}

fn finished_snap(f: &super::partition::FinishedApp) -> FinishedSnap {
    FinishedSnap {
        id: f.id.to_string(),
        queue: f.queue.clone(),
        state: f.state.as_str(),
        finished_ns: f.finished_ns,
        user: f.user.clone(),
        groups: f.groups.clone(),
        submitted_ns: f.submitted_ns,
        state_log: f.state_log.iter().map(|(s, t)| (s.as_str(), *t)).collect(),
        message: f.message.clone(),
    }
}

/// One node.
#[derive(Serialize, Default)]
pub struct NodeSnap {
    /// Id.
    pub id: String,
    /// Schedulable capacity.
    pub capacity: Named,
    /// Allocated.
    pub allocated: Named,
    /// Occupied by things outside the scheduler.
    pub occupied: Named,
    /// `capacity - allocated - occupied`.
    pub available: Named,
    /// False while draining.
    pub schedulable: bool,
    /// Attributes.
    pub attributes: BTreeMap<String, String>,
    /// Allocations on the node, by UUID.
    pub allocations: Vec<AllocationSnap>,
    /// SI v1.8: the foreign allocations on the node by key (their sum is
    /// `occupied`); left out of the dump when there are none.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub foreign: BTreeMap<String, Named>,
}

/// One allocation on a node.
#[derive(Serialize)]
pub struct AllocationSnap {
    /// UUID.
    #[serde(serialize_with = "shared_str")]
    pub uuid: Arc<str>,
    /// Allocation key.
    pub allocation_key: String,
    /// Application id.
    pub application_id: String,
    /// Resource held.
    pub resource: Named,
    /// A gang placeholder.
    pub placeholder: bool,
    /// For the real allocation of a swap in flight (not yet its
    /// application's): the placeholder it replaces.
    pub replacing: Option<String>,
}

/// What the core holds of one registered RM, as the snapshot reads it.
pub struct RmView<'a> {
    /// RM id.
    pub rm_id: &'a str,
    /// Policy group.
    pub policy_group: &'a str,
    /// Where the configuration came from.
    pub config_source: &'a str,
    /// Checksum in force.
    pub checksum: &'a str,
    /// Text in force.
    pub config_text: &'a str,
    /// Its event store's bound; `None` while its events are off.
    pub event_capacity: Option<usize>,
    /// How its configuration writes quantities (its SI edition's way).
    pub grammar: crate::config::QuantityGrammar,
}

/// Converts a monotonic instant in the past to Unix ns.
fn unix_ns(at: Instant, now: Instant, now_unix: i64) -> i64 {
    let ago = now.saturating_duration_since(at).as_nanos();
    now_unix.saturating_sub(i64::try_from(ago).unwrap_or(i64::MAX))
}

/// The queue tree below `root` as nested snaps, built bottom-up in a loop
/// so that a deep tree costs heap, not stack.
fn queue_snap(p: &Partition, root: QueueId) -> QueueSnap {
    let mut order = vec![root];
    let mut next = 0;
    while let Some(&id) = order.get(next) {
        order.extend(p.queues.get(id).children.values().copied());
        next += 1;
    }
    // Breadth-first order reversed puts every child before its parent.
    let mut built = std::collections::HashMap::with_capacity(order.len());
    for &id in order.iter().rev() {
        let children = p
            .queues
            .get(id)
            .children
            .values()
            .filter_map(|c| built.remove(c))
            .collect();
        built.insert(id, queue_node(p, id, children));
    }
    built.remove(&root).expect("root is built last")
}

fn queue_node(p: &Partition, id: QueueId, children: Vec<QueueSnap>) -> QueueSnap {
    let q = p.queues.get(id);
    let apps: Vec<_> = q.apps.values().filter_map(|a| p.apps.at(*a)).collect();
    QueueSnap {
        name: q.name.clone(),
        path: q.path.to_string(),
        parent: q.parent.map(|pid| p.queues.get(pid).path.to_string()),
        leaf: q.leaf,
        managed: q.managed,
        state: format!("{:?}", q.state),
        guaranteed: q.guaranteed.as_ref().map(named),
        max: q.max.as_ref().map(named),
        allocated: named(&q.allocated),
        pending: named(&q.pending),
        total_applications: apps.len(),
        running_applications: apps.iter().filter(|a| a.state == AppState::Running).count(),
        active_applications: q.active_apps,
        max_applications: q.max_applications,
        sort_policy: q.sort_policy.name().to_string(),
        properties: q.properties.clone(),
        current_priority: q.current_priority(),
        priority_sort: q.priority.sort,
        priority_fence: q.priority.policy == PriorityPolicy::Fence,
        priority_offset: q.priority.offset,
        submit_acl: q.submit_acl.0.clone(),
        admin_acl: q.admin_acl.0.clone(),
        template: q.child_template.as_ref().map(|t| TemplateSnap {
            max: t.max.as_ref().map(named),
            guaranteed: t.guaranteed.as_ref().map(named),
            properties: t.properties.clone(),
        }),
        children,
        preempting: p.preempt.preempting.get(&id).map(named).unwrap_or_default(),
        preemption_enabled: PreemptionPolicy::of(&q.properties) != PreemptionPolicy::Disabled,
        preemption_fence: PreemptionPolicy::of(&q.properties) == PreemptionPolicy::Fence
            && !p.inherited_policy(id),
        preemption_delay: go_duration_string(if q.leaf {
            delay_of(&q.properties)
        } else {
            DEFAULT_DELAY
        }),
        // Read on any queue and inherited; bad or absent is 0 (off).
        quota_preemption_delay: go_duration_string(quota_delay_of(&q.properties)),
        limits: p
            .ugm
            .caps
            .levels
            .get(&id)
            .map(|l| {
                l.config
                    .iter()
                    .map(|c| LimitSnap {
                        limit: c.limit.clone(),
                        users: c.users.clone(),
                        groups: c.groups.clone(),
                        max_resources: c.max_resources.clone(),
                        max_applications: c.max_applications,
                    })
                    .collect()
            })
            .unwrap_or_default(),
    }
}

fn app_snaps(p: &Partition, now: Instant, now_unix: i64) -> Vec<AppSnap> {
    let mut apps: Vec<AppSnap> = p
        .apps
        .values()
        .map(|a| {
            let mut allocations: Vec<Arc<str>> =
                p.allocations.uuids(&a.allocations).cloned().collect();
            allocations.sort();
            let pending_asks = a
                .ask_order
                .values()
                .take(MAX_LISTED_ASKS)
                .map(|k| {
                    let ask = &a.asks[*k];
                    AskSnap {
                        allocation_key: ask.key.to_string(),
                        resource: named(&ask.resource),
                        pending_repeat: ask.pending_repeat,
                        priority: ask.priority,
                        tags: ask.tags.clone(),
                        placeholder: ask.placeholder,
                        task_group: ask.task_group.to_string(),
                        required_node: ask.required_node.clone(),
                        created_ns: unix_ns(ask.created, now, now_unix),
                    }
                })
                .collect();
            let mut replacements: Vec<ReplacementSnap> = p
                .allocations
                .uuids(&a.allocations)
                .filter_map(|u| Some((u, p.gang.swaps.get(u)?)))
                .map(|(u, s)| ReplacementSnap {
                    placeholder: u.to_string(),
                    placeholder_node: p
                        .allocations
                        .get(u)
                        .map(|a| a.node.to_string())
                        .unwrap_or_default(),
                    real: s.real.uuid.to_string(),
                    allocation_key: s.real.key.to_string(),
                    node: s.real.node.to_string(),
                    resource: named(&s.real.resource),
                    queue_excess: named(&s.excess),
                })
                .collect();
            replacements.sort_by(|x, y| x.placeholder.cmp(&y.placeholder));
            let mut releasing_placeholders: Vec<String> = p
                .allocations
                .uuids(&a.allocations)
                .filter(|u| p.gang.releasing.contains(*u))
                .map(|u| u.to_string())
                .collect();
            releasing_placeholders.sort();
            AppSnap {
                id: a.id.to_string(),
                queue: p.queues.get(a.queue).path.to_string(),
                state: a.state.as_str(),
                submitted_ns: if a.submitted_ns != 0 {
                    a.submitted_ns
                } else {
                    unix_ns(a.submitted, now, now_unix)
                },
                state_log: a.state_log.iter().map(|(s, t)| (s.as_str(), *t)).collect(),
                user: a.user.user.clone(),
                groups: a.user.groups.clone(),
                allocated: named(a.allocated()),
                pending: named(&a.pending),
                max_used: named(&a.max_used),
                max_request_priority: a.priority(),
                pending_asks,
                pending_allocations: a
                    .asks
                    .values()
                    .map(|k| i64::from(k.pending_repeat.max(0)))
                    .sum(),
                allocations,
                started: a.started,
                held_by_limits: p.ugm.held.contains(&a.seq),
                placeholder: named(&a.gang.placeholder_allocated),
                placeholder_ask: a.placeholder_ask.as_ref().map(named),
                gang_style: a.gang.style.as_str(),
                task_groups: a
                    .gang
                    .groups
                    .iter()
                    .map(|(name, g)| TaskGroupSnap {
                        name: name.to_string(),
                        placeholders: g.placeholders,
                        free_placeholders: g.free.len(),
                        real: g.real,
                    })
                    .collect(),
                replacements,
                releasing_placeholders,
            }
        })
        .collect();
    apps.sort_by(|a, b| a.id.cmp(&b.id));
    apps
}

fn node_snaps(p: &Partition) -> Vec<NodeSnap> {
    let mut nodes: Vec<NodeSnap> = p
        .nodes
        .values()
        .map(|n| {
            let mut allocations: Vec<AllocationSnap> = n
                .allocations
                .slots()
                .filter_map(|s| {
                    let a = p.allocations.at(s);
                    if p.allocations.is_indexed(s) {
                        return Some((&a.record, None));
                    }
                    // The real allocation of a cross-node swap in flight.
                    let ph = p.gang.by_real.get(&a.uuid)?;
                    Some((&p.gang.swaps.get(ph)?.real, Some(ph.to_string())))
                })
                .map(|(a, replacing)| AllocationSnap {
                    uuid: a.uuid.clone(),
                    allocation_key: a.key.to_string(),
                    application_id: a.app.to_string(),
                    resource: named(&a.resource),
                    placeholder: a.placeholder,
                    replacing,
                })
                .collect();
            allocations.sort_by(|x, y| x.uuid.cmp(&y.uuid));
            NodeSnap {
                id: n.id.to_string(),
                capacity: named(n.capacity()),
                allocated: named(n.allocated()),
                occupied: named(n.occupied()),
                available: named(n.available()),
                schedulable: n.schedulable,
                attributes: n.attributes.clone(),
                allocations,
                foreign: n
                    .foreign()
                    .map(|(k, r)| (k.to_string(), named(r)))
                    .collect(),
            }
        })
        .collect();
    nodes.sort_by(|a, b| a.id.cmp(&b.id));
    nodes
}

fn partition_snap(p: &Partition, now: Instant, now_unix: i64) -> PartitionSnap {
    let mut reservations: Vec<ReservationSnap> = p
        .reservations
        .iter()
        .map(|(n, r)| ReservationSnap {
            node: p.nodes[n].id.to_string(),
            application_id: r.app.to_string(),
            allocation_key: r.key.to_string(),
        })
        .collect();
    reservations.sort_by(|a, b| a.node.cmp(&b.node));
    PartitionSnap {
        name: p.name.clone(),
        rm_id: p.rm_id.clone(),
        node_policy: p.nodes.policy().name(),
        weights: p
            .nodes
            .policy()
            .weights
            .iter()
            .map(|(id, w)| (name_of(*id).to_string(), *w))
            .collect(),
        total: named(&p.total),
        allocation_count: p.allocation_count,
        root: queue_snap(p, ROOT),
        apps: app_snaps(p, now, now_unix),
        finished: p.finished.iter().map(finished_snap).collect(),
        rejected: p.rejected.iter().map(finished_snap).collect(),
        terminated_timeout_ns: i64::try_from(p.timeouts.terminated.as_nanos()).unwrap_or(i64::MAX),
        preemption_enabled: p.preemption_on(),
        nodes: node_snaps(p),
        reservations,
        allocations: p
            .allocations
            .iter()
            .map(|(uuid, a)| (uuid.clone(), a.record.clone()))
            .collect(),
        preempted: p.preempt.victims.keys().cloned().collect(),
        usage: super::ugm::UsageSnap::of(p),
    }
}

/// The moments a snapshot is stamped with, read once from the core's clock.
#[derive(Debug, Clone, Copy)]
pub struct Stamp {
    /// Monotonic now.
    pub now: Instant,
    /// Unix ns now.
    pub now_unix: i64,
    /// When the core started (monotonic).
    pub started: Instant,
}

/// Copies the state the core holds. Runs on the core thread.
pub fn build<'a>(
    rms: impl Iterator<Item = RmView<'a>>,
    partitions: impl Iterator<Item = &'a Partition>,
    events: EventStats,
    at: Stamp,
) -> Snapshot {
    Snapshot {
        taken_ns: at.now_unix,
        started_ns: unix_ns(at.started, at.now, at.now_unix),
        uptime_seconds: at.now.saturating_duration_since(at.started).as_secs_f64(),
        rms: rms
            .map(|rm| RmSnap {
                rm_id: rm.rm_id.to_string(),
                policy_group: rm.policy_group.to_string(),
                config_source: rm.config_source.to_string(),
                checksum: rm.checksum.to_string(),
                config_text: rm.config_text.to_string(),
                grammar: rm.grammar,
                events: RmEventsSnap {
                    enabled: rm.event_capacity.is_some(),
                    request_capacity: rm.event_capacity.unwrap_or(0) as u64,
                },
            })
            .collect(),
        partitions: partitions
            .map(|p| partition_snap(p, at.now, at.now_unix))
            .collect(),
        events,
        event_ring: None,
    }
}
