//! The reason an ask waits, as the dump and REST show it: the pass's
//! `PendingReason`, or the held cause the partition reads from the state
//! (`Partition::held_cause`, the same its REQUEST records say;
//! docs/why-pending.md). Names are the dump's (REST writes them in
//! camelCase).

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Serialize;

use crate::scheduler::objects::application::{Application, Ask};
use crate::scheduler::objects::pending::{
    dominant, Cause, Dominant, LogWhat, NodeCounts, PendingReason, Scope,
};
use crate::scheduler::partition::{gang_counts, Partition};
use crate::scheduler::resource::name_of;

/// Why one ask waits.
#[derive(Serialize, Clone, Default, Debug)]
pub struct ReasonView {
    /// The cause's kind (docs/why-pending.md lists them).
    pub cause: &'static str,
    /// The grouping key of `/partition/{p}/pending`: kind and subject.
    pub group: String,
    /// One line, as kube-scheduler words it.
    pub message: String,
    /// Unix ns the cause was first found (0: read from the state now).
    pub since: i64,
    /// Unix ns of the last pass that tried the ask (0: none did).
    pub last_tried: i64,
    /// Passes that found the same cause.
    pub passes: u32,
    /// `queue`, `user`, `group` or `partition`: whose limit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<&'static str>,
    /// The user or group named.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The queue named.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue: Option<String>,
    /// A `maxapplications` limit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<u64>,
    /// The resource type lacking.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource: Option<String>,
    /// Asked of that type.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub asked: Option<i64>,
    /// Free of that type.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub free: Option<i64>,
    /// Nodes tried.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nodes: Option<NodesView>,
    /// The node reserved for it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reserved_node: Option<String>,
    /// Gang state.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gang: Option<GangView>,
    /// The last preemption attempt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preemption: Option<PreemptionView>,
    /// YuniKorn's `allocationLog`, oldest first.
    pub allocation_log: Vec<LogView>,
}

/// Node counts of one pass.
#[derive(Serialize, Clone, Default, Debug)]
pub struct NodesView {
    /// Nodes in the partition.
    pub total: usize,
    /// Nodes the pass examined.
    pub examined: u32,
    /// Per type, nodes short of it.
    pub insufficient: BTreeMap<String, u32>,
    /// Refused by the RM's predicates.
    pub refused: u32,
    /// The RM's texts with their counts.
    pub refusals: Vec<RefusalView>,
    /// Draining.
    pub unschedulable: u32,
    /// Reserved for another ask.
    pub reserved_for_other: u32,
    /// The required node is not registered.
    pub required_node_missing: bool,
}

/// One RM refusal text.
#[derive(Serialize, Clone, Debug)]
pub struct RefusalView {
    /// The text.
    pub reason: String,
    /// Nodes that gave it.
    pub count: u32,
}

/// Gang state of an ask's application.
#[derive(Serialize, Clone, Default, Debug)]
pub struct GangView {
    /// The ask's task group.
    pub task_group: String,
    /// Placeholders placed (held or replaced).
    pub placed: u64,
    /// Placeholders asked in all.
    pub total: u64,
    /// `placeholders` or `replacement`.
    pub waiting_for: &'static str,
    /// Unix ns the placeholder timeout fired (0: not).
    pub timeout_at: i64,
    /// What the timeout did.
    #[serde(skip_serializing_if = "str::is_empty")]
    pub timeout_outcome: &'static str,
}

/// The last preemption attempt.
#[derive(Serialize, Clone, Debug)]
pub struct PreemptionView {
    /// Unix ns.
    pub attempted: i64,
    /// How it ended.
    pub outcome: &'static str,
}

/// One `allocationLog` entry.
#[derive(Serialize, Clone, Debug)]
pub struct LogView {
    /// What it says.
    pub message: String,
    /// Unix ns last seen.
    pub last_occurrence: i64,
    /// Times seen.
    pub count: u32,
}

/// Why `ask` of `app` waits; `None` when nothing holds it yet (no pass
/// has tried it, or its held cause went and no pass has tried it since).
/// `waiting` is `partition::gang_waiting` of `app`. A held cause is the one the
/// partition decides (`Partition::held_cause`), as its records say.
pub fn reason_of(
    p: &Partition,
    app: &Application,
    ask: &Ask,
    waiting: &BTreeMap<Arc<str>, u64>,
) -> Option<ReasonView> {
    let stored = ask.reason();
    let stored = stored.as_deref();
    let tried = stored.map_or(0, |r| r.at_ns);
    let mut v = match p.held_cause(app, ask, waiting, tried) {
        Some(cause) => {
            let mut v = view_of(p, &cause);
            if let Some(r) = stored {
                v.allocation_log = log_views(r);
                v.preemption = preemption(r);
                v.last_tried = r.at_ns;
                if r.cause.same_as(&cause) {
                    v.since = r.since_ns;
                    v.passes = r.passes;
                }
            }
            if let Cause::GangTimeout { at_ns, .. } = cause {
                v.since = at_ns;
            }
            v
        }
        None => match stored {
            Some(r) if !r.cause.is_held() => from_stored(p, r),
            _ => return None,
        },
    };
    if let Some(g) = gang_view(app, ask, waiting) {
        if v.gang.is_none() {
            v.gang = Some(g);
        }
    }
    if let Some(pv) = &v.preemption {
        v.message = format!("{}; preemption: {}", v.message, pv.outcome);
    }
    Some(v)
}

/// The gang state of a task-group ask, `None` outside a gang.
fn gang_view(app: &Application, ask: &Ask, waiting: &BTreeMap<Arc<str>, u64>) -> Option<GangView> {
    let g = gang_counts(app, ask, waiting)?;
    let (timeout_at, timeout_outcome) = app.gang.timed_out.unwrap_or((0, ""));
    Some(GangView {
        task_group: g.task_group.to_string(),
        placed: g.placed,
        total: g.total,
        waiting_for: if g.total > g.placed {
            "placeholders"
        } else {
            "replacement"
        },
        timeout_at,
        timeout_outcome,
    })
}

fn preemption(r: &PendingReason) -> Option<PreemptionView> {
    r.preemption.map(|(at, o)| PreemptionView {
        attempted: at,
        outcome: o.as_str(),
    })
}

fn log_views(r: &PendingReason) -> Vec<LogView> {
    r.log_entries()
        .into_iter()
        .map(|e| LogView {
            message: match e.what {
                LogWhat::Kind("queueHeadroom") => "Not enough queue quota".to_string(),
                LogWhat::Kind("userLimit") => "Not enough user quota".to_string(),
                LogWhat::Kind("reserved") => "Waiting on a reserved node".to_string(),
                LogWhat::Kind("resourceType") => "Resource type not accepted".to_string(),
                LogWhat::Kind("applicationLimit") => "Waiting for a running slot".to_string(),
                LogWhat::Kind("gangPlaceholders") => "Waiting for gang placeholders".to_string(),
                LogWhat::Kind("gangReplacement") => {
                    "Waiting for a placeholder to be replaced".to_string()
                }
                LogWhat::Kind("gangTimeout") => "Placeholder timeout".to_string(),
                LogWhat::Kind(k) => k.to_string(),
                LogWhat::Short(t) => format!("Insufficient {}", name_of(t)),
                LogWhat::Refused => "Refused by the RM's predicates".to_string(),
                LogWhat::Unschedulable => "Node(s) unschedulable".to_string(),
                LogWhat::ReservedOther => "Node(s) reserved for another ask".to_string(),
                LogWhat::RequiredMissing => "Required node not found".to_string(),
            },
            last_occurrence: e.last_ns,
            count: e.count,
        })
        .collect()
}

fn from_stored(p: &Partition, r: &PendingReason) -> ReasonView {
    let mut v = view_of(p, &r.cause);
    v.since = r.since_ns;
    v.last_tried = r.at_ns;
    v.passes = r.passes;
    v.preemption = preemption(r);
    v.allocation_log = log_views(r);
    if let Cause::Reserved { since_ns, .. } = &r.cause {
        v.since = *since_ns;
    }
    v
}

/// The cause's own fields, its group and its line.
fn view_of(p: &Partition, cause: &Cause) -> ReasonView {
    let mut v = ReasonView {
        cause: cause.kind(),
        message: cause.message(p.nodes().len()),
        ..Default::default()
    };
    match cause {
        Cause::AppSlot {
            scope,
            name,
            queue,
            limit,
        } => {
            v.group = match scope {
                Scope::Queue => format!("applicationLimit queue {queue}"),
                s => format!("applicationLimit {} {name} {queue}", s.as_str()),
            };
            v.scope = Some(scope.as_str());
            v.name = (!name.is_empty()).then(|| name.to_string());
            v.queue = Some(queue.to_string());
            v.limit = Some(*limit);
        }
        Cause::QueueHeadroom {
            queue,
            resource,
            asked,
            free,
        } => {
            let res = name_of(*resource);
            v.group = format!("queueHeadroom {queue} {res}");
            v.scope = Some("queue");
            v.queue = Some(queue.to_string());
            v.resource = Some(res.to_string());
            v.asked = Some(*asked);
            v.free = Some(*free);
        }
        Cause::LimitHeadroom {
            scope,
            name,
            queue,
            resource,
            asked,
            free,
        } => {
            let res = name_of(*resource);
            let scope = scope.as_str();
            v.group = format!("userLimit {scope} {name} {queue}");
            v.scope = Some(scope);
            v.name = Some(name.to_string());
            v.queue = Some(queue.to_string());
            v.resource = Some(res.to_string());
            v.asked = Some(*asked);
            v.free = Some(*free);
        }
        Cause::ResourceType {
            scope,
            queue,
            resource,
        } => {
            let res = name_of(*resource);
            v.group = format!("resourceType {} {queue} {res}", scope.as_str());
            v.scope = Some(scope.as_str());
            v.queue = (!queue.is_empty()).then(|| queue.to_string());
            v.resource = Some(res.to_string());
        }
        Cause::Nodes(c) => {
            v.group = nodes_group(c);
            v.nodes = Some(nodes_view(c, p.nodes().len()));
        }
        Cause::Reserved { node, .. } => {
            v.group = "reserved".to_string();
            v.reserved_node = Some(node.to_string());
        }
        // The gang's state is the ask's `gang` (`reason_of`).
        Cause::GangPlaceholders(_) => v.group = "gang placeholders".to_string(),
        Cause::GangReplacement(_) => v.group = "gang replacement".to_string(),
        Cause::GangTimeout { .. } => v.group = "gang timeout".to_string(),
    }
    v
}

fn nodes_group(c: &NodeCounts) -> String {
    if c.required_missing {
        return "requiredNodeMissing".to_string();
    }
    match dominant(c) {
        Dominant::None => "nodes none".to_string(),
        Dominant::Short(t) => format!("nodes insufficient {}", name_of(t)),
        Dominant::Refused => "nodes refused by the RM".to_string(),
        Dominant::Unschedulable => "nodes unschedulable".to_string(),
        Dominant::ReservedOther => "nodes reserved for other asks".to_string(),
    }
}

fn nodes_view(c: &NodeCounts, total: usize) -> NodesView {
    NodesView {
        total,
        examined: c.examined,
        insufficient: c
            .shorts()
            .iter()
            .map(|(t, n)| (name_of(*t).to_string(), *n))
            .chain((c.short_other > 0).then(|| ("other".to_string(), c.short_other)))
            .collect(),
        refused: c.refused,
        refusals: c
            .refusals()
            .iter()
            .map(|(t, n)| RefusalView {
                reason: t.to_string(),
                count: *n,
            })
            .collect(),
        unschedulable: c.unschedulable,
        reserved_for_other: c.reserved_other,
        required_node_missing: c.required_missing,
    }
}
