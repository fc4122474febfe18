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

use serde::Serialize;

use super::objects::application::AppState;
use super::objects::queue::{PriorityPolicy, QueueId, ROOT};
use super::outcome::NewAllocation;
use super::partition::preempt::quota::quota_delay_of;
use super::partition::preempt::{delay_of, go_duration_string, PreemptionPolicy, DEFAULT_DELAY};
use super::partition::Partition;
use super::resource::{name_of, Resource};
use crate::events::EventStats;

mod build;
pub use build::{build, Stamp};
pub mod reason;
pub mod usage;
pub use reason::ReasonView;

/// Named quantities, sorted by name.
pub type Named = BTreeMap<String, i64>;

/// Named form of a resource.
pub fn named(r: &Resource) -> Named {
    r.to_named()
}

/// Most pending asks listed per application.
pub const MAX_LISTED_ASKS: usize = 1000;

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
    /// What it said of its build at registration (SI v1 `buildInfo`;
    /// v0.12: `buildVersion`, its version); left out when empty.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub build_info: BTreeMap<String, String>,
}

/// One RM's event settings in force (its own, SI v1.x `extraConfig`, or
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
    pub allocations: BTreeMap<crate::scheduler::alloc_uuid::AllocUuid, Arc<NewAllocation>>,
    /// UUIDs of the preemption victims in flight.
    #[serde(skip)]
    pub preempted: std::collections::BTreeSet<crate::scheduler::alloc_uuid::AllocUuid>,
    /// User and group trackers (limits.md 3), in the shapes of the REST
    /// usage endpoints.
    pub usage: usage::UsageSnap,
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
    pub allocations: Vec<crate::scheduler::alloc_uuid::AllocUuid>,
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
    pub tags: crate::scheduler::tags::Tags,
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
    /// Why it waits (docs/why-pending.md); absent before a pass tried it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pending_reason: Option<ReasonView>,
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
    /// SI v1.x: the foreign allocations on the node by key (their sum is
    /// `occupied`); left out of the dump when there are none.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub foreign: BTreeMap<String, Named>,
}

/// One allocation on a node.
#[derive(Serialize)]
pub struct AllocationSnap {
    /// UUID.
    pub uuid: crate::scheduler::alloc_uuid::AllocUuid,
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
    /// What it said of its build at registration.
    pub build_info: &'a BTreeMap<String, String>,
}
