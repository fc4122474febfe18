//! The state dump: a JSON document for operators and tests, in the spirit
//! of YuniKorn's `/ws/v1/fullstatedump`. The field names below are stable;
//! they are documented in the README ("State dump").

use std::collections::BTreeMap;
use std::time::Instant;

use serde::Serialize;

use super::core::RmState;
use super::objects::application::AppState;
use super::objects::queue::{QueueId, ROOT};
use super::partition::Partition;
use super::resource::Resource;

type Res = BTreeMap<String, i64>;

fn res(r: &Resource) -> Res {
    r.to_named()
}

/// Top level.
#[derive(Serialize)]
pub struct StateDump {
    /// Seconds since the scheduler started.
    pub uptime_seconds: f64,
    /// Registered RMs.
    pub rms: Vec<RmDump>,
    /// Partitions, by internal name order.
    pub partitions: Vec<PartitionDump>,
    /// Event system counters.
    pub events: crate::events::EventStats,
}

/// One registered RM.
#[derive(Serialize)]
pub struct RmDump {
    /// RM id.
    pub rm_id: String,
    /// Policy group.
    pub policy_group: String,
    /// Where the configuration came from.
    pub config_source: String,
    /// SHA-256 checksum of the configuration text.
    pub config_checksum: String,
}

/// One partition.
#[derive(Serialize)]
pub struct PartitionDump {
    /// Name as the RM uses it.
    pub name: String,
    /// RM that owns it.
    pub rm_id: String,
    /// Node sorting policy.
    pub node_sort_policy: String,
    /// Sum of node capacities.
    pub total: Res,
    /// Allocations made since creation.
    pub allocation_count: u64,
    /// Queue tree from root.
    pub root: QueueDump,
    /// Active applications, by id.
    pub applications: Vec<AppDump>,
    /// Recently terminated applications, oldest first.
    pub completed_applications: Vec<FinishedDump>,
    /// Nodes, by id.
    pub nodes: Vec<NodeDump>,
    /// Reservations, by node id.
    pub reservations: Vec<ReservationDump>,
}

/// A node held for one ask.
#[derive(Serialize)]
pub struct ReservationDump {
    /// The reserved node.
    pub node: String,
    /// Application holding it.
    pub application_id: String,
    /// Its ask.
    pub allocation_key: String,
}

/// One queue.
#[derive(Serialize)]
pub struct QueueDump {
    /// Short name.
    pub name: String,
    /// Full path.
    pub path: String,
    /// Leaf or parent.
    pub leaf: bool,
    /// From configuration (false: created by placement).
    pub managed: bool,
    /// `Active` or `Draining`.
    pub state: String,
    /// Configured guarantee, if any.
    pub guaranteed: Option<Res>,
    /// Max (for root: the partition size), if any.
    pub max: Option<Res>,
    /// Allocated below this queue.
    pub allocated: Res,
    /// Outstanding demand below this queue.
    pub pending: Res,
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
    /// Submit ACL as configured.
    pub submit_acl: String,
    /// Admin ACL as configured.
    pub admin_acl: String,
    /// Child queues by name.
    pub children: Vec<QueueDump>,
}

/// One application.
#[derive(Serialize)]
pub struct AppDump {
    /// Application id.
    pub id: String,
    /// Queue path.
    pub queue: String,
    /// State string.
    pub state: String,
    /// Submitting user.
    pub user: String,
    /// Its groups.
    pub groups: Vec<String>,
    /// Allocated resource.
    pub allocated: Res,
    /// Outstanding demand.
    pub pending: Res,
    /// Asks with allocations still to make.
    pub pending_asks: Vec<AskDump>,
    /// UUIDs of its allocations.
    pub allocations: Vec<String>,
    /// Whether it has ever held an allocation.
    pub started: bool,
    /// Gang: the placeholder allocations held (not in `allocated`).
    pub placeholder: Res,
    /// Gang: `placeholderAsk` as sent (null when none).
    pub placeholder_ask: Option<Res>,
    /// Gang: `Soft` or `Hard`.
    pub gang_style: String,
    /// Gang: task groups by name.
    pub task_groups: Vec<TaskGroupDump>,
    /// Gang: swaps decided and not yet confirmed by the RM.
    pub replacements: Vec<ReplacementDump>,
    /// Gang: placeholders released with `TIMEOUT`, awaiting the RM.
    pub releasing_placeholders: Vec<String>,
}

/// One task group of an application.
#[derive(Serialize)]
pub struct TaskGroupDump {
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
pub struct ReplacementDump {
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
    pub resource: Res,
    /// What it needs beyond the placeholder, already in queue usage.
    pub queue_excess: Res,
}

/// One ask.
#[derive(Serialize)]
pub struct AskDump {
    /// Allocation key.
    pub allocation_key: String,
    /// Resource per allocation.
    pub resource: Res,
    /// Allocations still to make.
    pub pending_repeat: i32,
    /// Priority.
    pub priority: i32,
}

/// A terminated application.
#[derive(Serialize)]
pub struct FinishedDump {
    /// Application id.
    pub id: String,
    /// Queue path.
    pub queue: String,
    /// Final state.
    pub state: String,
    /// When it terminated, ns since the epoch.
    pub finished_ns: i64,
}

/// One node.
#[derive(Serialize)]
pub struct NodeDump {
    /// Node id.
    pub id: String,
    /// Schedulable capacity.
    pub capacity: Res,
    /// Allocated.
    pub allocated: Res,
    /// Occupied by things outside the scheduler.
    pub occupied: Res,
    /// `capacity - allocated - occupied`.
    pub available: Res,
    /// False while draining.
    pub schedulable: bool,
    /// Attributes.
    pub attributes: BTreeMap<String, String>,
    /// Allocations on the node.
    pub allocations: Vec<AllocationDump>,
}

/// One allocation.
#[derive(Serialize)]
pub struct AllocationDump {
    /// UUID.
    pub uuid: String,
    /// Allocation key.
    pub allocation_key: String,
    /// Application id.
    pub application_id: String,
    /// Resource held.
    pub resource: Res,
    /// A gang placeholder.
    pub placeholder: bool,
    /// For the real allocation of a swap in flight (not yet its
    /// application's): the placeholder it replaces.
    pub replacing: Option<String>,
}

fn queue_dump(p: &Partition, id: QueueId) -> QueueDump {
    let q = p.queues.get(id);
    let apps: Vec<_> = q.apps.values().filter_map(|a| p.apps.at(*a)).collect();
    QueueDump {
        name: q.name.clone(),
        path: q.path.to_string(),
        leaf: q.leaf,
        managed: q.managed,
        state: format!("{:?}", q.state),
        guaranteed: q.guaranteed.as_ref().map(res),
        max: q.max.as_ref().map(res),
        allocated: res(&q.allocated),
        pending: res(&q.pending),
        total_applications: apps.len(),
        running_applications: apps.iter().filter(|a| a.state == AppState::Running).count(),
        active_applications: q.active_apps,
        max_applications: q.max_applications,
        sort_policy: q.sort_policy.name().to_string(),
        properties: q.properties.clone(),
        submit_acl: q.submit_acl.0.clone(),
        admin_acl: q.admin_acl.0.clone(),
        children: q.children.values().map(|c| queue_dump(p, *c)).collect(),
    }
}

fn partition_dump(p: &Partition) -> PartitionDump {
    let mut applications: Vec<AppDump> = p
        .apps
        .values()
        .map(|a| {
            let mut pending_asks: Vec<AskDump> = a
                .ask_order
                .values()
                .map(|k| {
                    let ask = &a.asks[*k];
                    AskDump {
                        allocation_key: ask.key.to_string(),
                        resource: res(&ask.resource),
                        pending_repeat: ask.pending_repeat,
                        priority: ask.priority,
                    }
                })
                .collect();
            pending_asks.truncate(1000);
            AppDump {
                id: a.id.to_string(),
                queue: p.queues.get(a.queue).path.to_string(),
                state: a.state.as_str().to_string(),
                user: a.user.user.clone(),
                groups: a.user.groups.clone(),
                allocated: res(a.allocated()),
                pending: res(&a.pending),
                pending_asks,
                allocations: {
                    let mut v: Vec<String> = p
                        .allocations
                        .uuids(&a.allocations)
                        .map(|u| u.to_string())
                        .collect();
                    v.sort();
                    v
                },
                started: a.started,
                placeholder: res(&a.gang.placeholder_allocated),
                placeholder_ask: a.placeholder_ask.as_ref().map(res),
                gang_style: a.gang.style.as_str().to_string(),
                task_groups: a
                    .gang
                    .groups
                    .iter()
                    .map(|(name, g)| TaskGroupDump {
                        name: name.to_string(),
                        placeholders: g.placeholders,
                        free_placeholders: g.free.len(),
                        real: g.real,
                    })
                    .collect(),
                replacements: {
                    let mut v: Vec<ReplacementDump> = p
                        .allocations
                        .uuids(&a.allocations)
                        .filter_map(|u| Some((u, p.gang.swaps.get(u)?)))
                        .map(|(u, s)| ReplacementDump {
                            placeholder: u.to_string(),
                            placeholder_node: p
                                .allocations
                                .get(u)
                                .map(|a| a.node.to_string())
                                .unwrap_or_default(),
                            real: s.real.uuid.to_string(),
                            allocation_key: s.real.key.to_string(),
                            node: s.real.node.to_string(),
                            resource: res(&s.real.resource),
                            queue_excess: res(&s.excess),
                        })
                        .collect();
                    v.sort_by(|x, y| x.placeholder.cmp(&y.placeholder));
                    v
                },
                releasing_placeholders: {
                    let mut v: Vec<String> = p
                        .allocations
                        .uuids(&a.allocations)
                        .filter(|u| p.gang.releasing.contains(*u))
                        .map(|u| u.to_string())
                        .collect();
                    v.sort();
                    v
                },
            }
        })
        .collect();
    applications.sort_by(|a, b| a.id.cmp(&b.id));
    let mut nodes: Vec<NodeDump> = p
        .nodes
        .values()
        .map(|n| NodeDump {
            id: n.id.to_string(),
            capacity: res(n.capacity()),
            allocated: res(n.allocated()),
            occupied: res(n.occupied()),
            available: res(n.available()),
            schedulable: n.schedulable,
            attributes: n
                .attributes
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            allocations: {
                let mut v: Vec<AllocationDump> = n
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
                    .map(|(a, replacing)| AllocationDump {
                        uuid: a.uuid.to_string(),
                        allocation_key: a.key.to_string(),
                        application_id: a.app.to_string(),
                        resource: res(&a.resource),
                        placeholder: a.placeholder,
                        replacing,
                    })
                    .collect();
                v.sort_by(|x, y| x.uuid.cmp(&y.uuid));
                v
            },
        })
        .collect();
    nodes.sort_by(|a, b| a.id.cmp(&b.id));
    PartitionDump {
        name: p.name.clone(),
        rm_id: p.rm_id.clone(),
        node_sort_policy: p.nodes.policy().name().to_string(),
        total: res(&p.total),
        allocation_count: p.allocation_count,
        root: queue_dump(p, ROOT),
        applications,
        completed_applications: p
            .finished
            .iter()
            .map(|f| FinishedDump {
                id: f.id.to_string(),
                queue: f.queue.clone(),
                state: f.state.as_str().to_string(),
                finished_ns: f.finished_ns,
            })
            .collect(),
        nodes,
        reservations: {
            let mut v: Vec<ReservationDump> = p
                .reservations
                .iter()
                .map(|(n, r)| ReservationDump {
                    node: p.nodes[n].id.to_string(),
                    application_id: r.app.to_string(),
                    allocation_key: r.key.to_string(),
                })
                .collect();
            v.sort_by(|a, b| a.node.cmp(&b.node));
            v
        },
    }
}

/// Renders the whole state as JSON.
pub fn render(
    rms: &BTreeMap<String, RmState>,
    partitions: &BTreeMap<super::core::PartitionKey, Partition>,
    started: Instant,
    events: crate::events::EventStats,
) -> String {
    let dump = StateDump {
        uptime_seconds: started.elapsed().as_secs_f64(),
        rms: rms
            .iter()
            .map(|(id, rm)| RmDump {
                rm_id: id.clone(),
                policy_group: rm.policy_group.clone(),
                config_source: rm.config_source.clone(),
                config_checksum: rm.checksum.clone(),
            })
            .collect(),
        partitions: partitions.values().map(partition_dump).collect(),
        events,
    };
    serde_json::to_string_pretty(&dump).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
}
