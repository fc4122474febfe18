//! Building the copy on the core thread: the queue tree (iteratively),
//! applications, nodes and partitions, from the live objects.

use super::*;

fn finished_snap(f: &crate::scheduler::partition::FinishedApp) -> FinishedSnap {
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
        order.extend(p.queues().get(id).children.values().copied());
        next += 1;
    }
    // Breadth-first order reversed puts every child before its parent.
    let mut built = std::collections::HashMap::with_capacity(order.len());
    for &id in order.iter().rev() {
        let children = p
            .queues()
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
    let q = p.queues().get(id);
    let apps: Vec<_> = q.apps.values().filter_map(|a| p.apps().at(*a)).collect();
    QueueSnap {
        name: q.name.clone(),
        path: q.path.to_string(),
        parent: q.parent.map(|pid| p.queues().get(pid).path.to_string()),
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
        preempting: p
            .preempt()
            .preempting
            .get(&id)
            .map(named)
            .unwrap_or_default(),
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
            .ugm()
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
        .apps()
        .values()
        .map(|a| {
            let mut allocations: Vec<crate::scheduler::alloc_uuid::AllocUuid> =
                p.allocations().uuids(&a.allocations).cloned().collect();
            allocations.sort();
            let gang_waiting = crate::scheduler::partition::gang_waiting(a);
            let pending_asks = a
                .ask_order
                .values()
                .take(MAX_LISTED_ASKS)
                // The asks of the order are whole (never a stand-in).
                .filter_map(|k| a.asks.whole_at(k))
                .map(|ask| AskSnap {
                    allocation_key: ask.key.to_string(),
                    resource: named(&ask.resource),
                    pending_repeat: ask.pending_repeat,
                    priority: ask.priority,
                    tags: ask.tags.clone(),
                    placeholder: ask.placeholder,
                    task_group: ask.task_group.to_string(),
                    required_node: ask.required_node.as_deref().map(str::to_string),
                    created_ns: unix_ns(ask.created, now, now_unix),
                    pending_reason: super::reason::reason_of(p, a, ask, &gang_waiting),
                })
                .collect();
            let mut replacements: Vec<ReplacementSnap> = p
                .allocations()
                .uuids(&a.allocations)
                .filter_map(|u| Some((u, p.gang().swaps.get(u)?)))
                .map(|(u, s)| ReplacementSnap {
                    placeholder: u.to_string(),
                    placeholder_node: p
                        .allocations()
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
                .allocations()
                .uuids(&a.allocations)
                .filter(|u| p.gang().releasing.contains(*u))
                .map(|u| u.to_string())
                .collect();
            releasing_placeholders.sort();
            AppSnap {
                id: a.id.to_string(),
                queue: p.queues().get(a.queue).path.to_string(),
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
                    .map(|k| i64::from(k.pending_repeat().max(0)))
                    .sum(),
                allocations,
                started: a.started,
                held_by_limits: p.ugm().held.contains(&a.seq),
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
        .nodes()
        .values()
        .map(|n| {
            let mut allocations: Vec<AllocationSnap> = n
                .allocations
                .slots()
                .filter_map(|s| {
                    let a = p.allocations().at(s);
                    if p.allocations().is_indexed(s) {
                        return Some((&a.record, None));
                    }
                    // The real allocation of a cross-node swap in flight.
                    let ph = p.gang().by_real.get(&a.uuid)?;
                    Some((&p.gang().swaps.get(ph)?.real, Some(ph.to_string())))
                })
                .map(|(a, replacing)| AllocationSnap {
                    uuid: a.uuid.clone(),
                    allocation_key: a.key.to_string(),
                    application_id: a.app().to_string(),
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
        .reservations()
        .iter()
        .map(|(n, r)| ReservationSnap {
            node: p.nodes()[n].id.to_string(),
            application_id: r.app.to_string(),
            allocation_key: r.key.to_string(),
        })
        .collect();
    reservations.sort_by(|a, b| a.node.cmp(&b.node));
    PartitionSnap {
        name: p.name().to_string(),
        rm_id: p.rm_id().to_string(),
        node_policy: p.nodes().policy().name(),
        weights: p
            .nodes()
            .policy()
            .weights
            .iter()
            .map(|(id, w)| (name_of(*id).to_string(), *w))
            .collect(),
        total: named(p.total()),
        allocation_count: p.allocation_count(),
        root: queue_snap(p, ROOT),
        apps: app_snaps(p, now, now_unix),
        finished: p.finished().iter().map(finished_snap).collect(),
        rejected: p.rejected().iter().map(finished_snap).collect(),
        terminated_timeout_ns: i64::try_from(p.terminated_timeout().as_nanos()).unwrap_or(i64::MAX),
        preemption_enabled: p.preemption_on(),
        nodes: node_snaps(p),
        reservations,
        allocations: p
            .allocations()
            .iter()
            .map(|(uuid, a)| (uuid.clone(), a.record.clone()))
            .collect(),
        preempted: p.preempt().victims.keys().cloned().collect(),
        usage: super::usage::UsageSnap::of(p),
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
                build_info: rm.build_info.clone(),
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
