//! A copy of the scheduler state for the REST service.
//!
//! The core thread builds it on request (a closure queued like any other
//! request, so it sees the state every earlier request led to); the REST
//! thread then renders JSON and runs the health checks on the copy. No lock
//! on live state is ever held while a client is served. Allocation records
//! are the partition's shared records (`Arc`), so copying them is cheap.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use crate::scheduler::core::RmState;
use crate::scheduler::outcome::NewAllocation;
use crate::scheduler::partition::Partition;
use crate::scheduler::queue::{QueueId, ROOT};
use crate::scheduler::resource::{name_of, Resource};

/// Named quantities, sorted by name.
pub type Named = BTreeMap<String, i64>;

/// Named form of a resource.
pub fn named(r: &Resource) -> Named {
    r.iter()
        .map(|(id, v)| (name_of(id).to_string(), v))
        .collect()
}

/// The whole copy.
pub struct Snapshot {
    /// Unix time of the copy, ns.
    pub taken_ns: i64,
    /// Unix time the scheduler started, ns.
    pub started_ns: i64,
    /// Registered RMs, by id.
    pub rms: Vec<RmSnap>,
    /// Partitions, by internal name.
    pub partitions: Vec<PartitionSnap>,
}

/// One registered RM.
pub struct RmSnap {
    /// RM id.
    pub rm_id: String,
    /// Policy group.
    pub policy_group: String,
    /// Checksum of the configuration in force.
    pub checksum: String,
    /// Its text. (No callbacks: a cached snapshot must not keep a
    /// replaced registration's table alive.)
    pub config_text: String,
}

/// One partition.
pub struct PartitionSnap {
    /// Name without the `[rmID]` prefix.
    pub name: String,
    /// Owning RM.
    pub rm_id: String,
    /// Node sort policy name.
    pub node_policy: &'static str,
    /// Its resource weights.
    pub weights: BTreeMap<String, f64>,
    /// Sum of node capacities.
    pub total: Named,
    /// Queue tree.
    pub root: QueueSnap,
    /// Active applications, by id.
    pub apps: Vec<AppSnap>,
    /// Terminated applications kept in the history.
    pub finished: Vec<FinishedSnap>,
    /// Nodes, by id.
    pub nodes: Vec<NodeSnap>,
    /// Every allocation, by UUID (the partition's shared records).
    pub allocations: BTreeMap<Arc<str>, Arc<NewAllocation>>,
}

/// One queue.
pub struct QueueSnap {
    /// Short name.
    pub name: String,
    /// Full path.
    pub path: String,
    /// Parent's full path.
    pub parent: Option<String>,
    /// Leaf or parent.
    pub leaf: bool,
    /// From the configuration.
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
    /// Properties.
    pub properties: BTreeMap<String, String>,
    /// Child template.
    pub template: Option<TemplateSnap>,
    /// Children by name.
    pub children: Vec<QueueSnap>,
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
pub struct AppSnap {
    /// Id.
    pub id: String,
    /// Queue path.
    pub queue: String,
    /// State.
    pub state: &'static str,
    /// Unix time of submission, ns.
    pub submitted_ns: i64,
    /// Allocated.
    pub allocated: Named,
    /// Pending.
    pub pending: Named,
    /// Allocations still to make over all asks.
    pub pending_allocations: i64,
    /// UUIDs of its allocations, sorted.
    pub allocations: Vec<Arc<str>>,
}

/// A terminated application.
pub struct FinishedSnap {
    /// Id.
    pub id: String,
    /// Queue path.
    pub queue: String,
    /// Final state.
    pub state: &'static str,
    /// Unix time it terminated, ns.
    pub finished_ns: i64,
}

/// One node.
pub struct NodeSnap {
    /// Id.
    pub id: String,
    /// Attributes.
    pub attributes: BTreeMap<String, String>,
    /// Capacity.
    pub capacity: Named,
    /// Allocated.
    pub allocated: Named,
    /// Occupied.
    pub occupied: Named,
    /// Available.
    pub available: Named,
    /// Schedulable.
    pub schedulable: bool,
    /// UUIDs of the allocations it lists, sorted.
    pub allocations: Vec<Arc<str>>,
}

/// Unix time now, ns.
pub fn now_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

/// Converts a monotonic instant in the past to Unix ns.
fn unix_ns(at: Instant, now: Instant, now_unix: i64) -> i64 {
    let ago = now.saturating_duration_since(at).as_nanos();
    now_unix.saturating_sub(i64::try_from(ago).unwrap_or(i64::MAX))
}

fn queue_snap(p: &Partition, id: QueueId) -> QueueSnap {
    let q = p.queues.get(id);
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
        properties: q.properties.clone(),
        template: q.child_template.as_ref().map(|t| TemplateSnap {
            max: t.max.as_ref().map(named),
            guaranteed: t.guaranteed.as_ref().map(named),
            properties: t.properties.clone(),
        }),
        children: q.children.values().map(|c| queue_snap(p, *c)).collect(),
    }
}

fn partition_snap(p: &Partition, now: Instant, now_unix: i64) -> PartitionSnap {
    let mut apps: Vec<AppSnap> = p
        .apps
        .values()
        .map(|a| {
            let mut allocations: Vec<Arc<str>> =
                p.allocations.uuids(&a.allocations).cloned().collect();
            allocations.sort();
            AppSnap {
                id: a.id.to_string(),
                queue: p.queues.get(a.queue).path.to_string(),
                state: a.state.as_str(),
                submitted_ns: unix_ns(a.submitted, now, now_unix),
                allocated: named(&a.allocated),
                pending: named(&a.pending),
                pending_allocations: a
                    .asks
                    .values()
                    .map(|k| i64::from(k.pending_repeat.max(0)))
                    .sum(),
                allocations,
            }
        })
        .collect();
    apps.sort_by(|a, b| a.id.cmp(&b.id));
    let mut nodes: Vec<NodeSnap> = p
        .nodes
        .values()
        .map(|n| {
            let mut allocations: Vec<Arc<str>> =
                p.allocations.uuids(&n.allocations).cloned().collect();
            allocations.sort();
            NodeSnap {
                id: n.id.to_string(),
                attributes: n.attributes.clone(),
                capacity: named(&n.capacity),
                allocated: named(&n.allocated),
                occupied: named(&n.occupied),
                available: named(&n.available),
                schedulable: n.schedulable,
                allocations,
            }
        })
        .collect();
    nodes.sort_by(|a, b| a.id.cmp(&b.id));
    PartitionSnap {
        name: p.name.clone(),
        rm_id: p.rm_id.clone(),
        node_policy: p.node_policy.name(),
        weights: p
            .node_policy
            .weights
            .iter()
            .map(|(id, w)| (name_of(*id).to_string(), *w))
            .collect(),
        total: named(&p.total),
        root: queue_snap(p, ROOT),
        apps,
        finished: p
            .finished
            .iter()
            .map(|f| FinishedSnap {
                id: f.id.to_string(),
                queue: f.queue.clone(),
                state: f.state.as_str(),
                finished_ns: f.finished_ns,
            })
            .collect(),
        nodes,
        allocations: p
            .allocations
            .iter()
            .map(|(uuid, a)| (uuid.clone(), a.record.clone()))
            .collect(),
    }
}

/// Copies the state the core holds. Runs on the core thread.
pub fn build<K>(
    rms: &BTreeMap<String, RmState>,
    partitions: &BTreeMap<K, Partition>,
    started: Instant,
) -> Snapshot {
    let now = Instant::now();
    let now_unix = now_ns();
    Snapshot {
        taken_ns: now_unix,
        started_ns: unix_ns(started, now, now_unix),
        rms: rms
            .iter()
            .map(|(id, rm)| RmSnap {
                rm_id: id.clone(),
                policy_group: rm.policy_group.clone(),
                checksum: rm.checksum.clone(),
                config_text: rm.config_text.clone(),
            })
            .collect(),
        partitions: partitions
            .values()
            .map(|p| partition_snap(p, now, now_unix))
            .collect(),
    }
}
