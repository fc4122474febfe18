//! The YuniKorn v1.x shapes (`rest-v1.9.md` 29): resources as objects of
//! integers, times in Unix nanoseconds, empty fields left out except where
//! the web UI needs them. Rendered from a [`Snapshot`]; the routes that
//! select and filter are in `v1_routes.rs`.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use super::snapshot::{
    AppSnap, AskSnap, FinishedSnap, Named, NodeSnap, PartitionSnap, QueueSnap, Snapshot,
};
use crate::scheduler::outcome::NewAllocation;

/// A resource as an object, `None` (left out) when it has no type.
pub fn resource(n: &Named) -> Option<Value> {
    (!n.is_empty()).then(|| json!(n))
}

/// Inserts `key` when `v` is present.
fn put(m: &mut Map<String, Value>, key: &str, v: Option<Value>) {
    if let Some(v) = v {
        m.insert(key.to_string(), v);
    }
}

/// Inserts `key: true` when `b` holds (a `bool` the reference omits when
/// false).
fn put_true(m: &mut Map<String, Value>, key: &str, b: bool) {
    if b {
        m.insert(key.to_string(), Value::Bool(true));
    }
}

/// Inserts a string unless it is empty.
fn put_str(m: &mut Map<String, Value>, key: &str, s: &str) {
    if !s.is_empty() {
        m.insert(key.to_string(), Value::String(s.to_string()));
    }
}

/// Percent of `used` against `cap` for one type (`rest-v1.9.md` 29.1).
pub fn percent_of(used: i64, cap: i64) -> i64 {
    if used <= 0 {
        0
    } else if cap <= 0 {
        100
    } else {
        let p = (used as f64 * 100.0 / cap as f64).trunc();
        p.min(f64::from(i32::MAX)) as i64
    }
}

/// Per type of `cap` that `used` also has, the percent (29.1); `None`
/// when no type qualifies.
pub fn percent(used: &Named, cap: &Named) -> Option<Value> {
    let pct: BTreeMap<&str, i64> = cap
        .iter()
        .filter_map(|(k, c)| Some((k.as_str(), percent_of(*used.get(k)?, *c))))
        .collect();
    (!pct.is_empty()).then(|| json!(pct))
}

/// An allocation (29.2).
pub fn allocation(a: &NewAllocation, preempted: bool) -> Value {
    let mut m = Map::new();
    m.insert("allocationKey".into(), json!(&*a.key));
    if !a.tags.is_empty() {
        m.insert("allocationTags".into(), json!(&a.tags));
    }
    put(
        &mut m,
        "resource",
        resource(&super::snapshot::named(&a.resource)),
    );
    m.insert("priority".into(), json!(a.priority.to_string()));
    put_str(&mut m, "nodeId", &a.node);
    put_str(&mut m, "applicationId", a.app());
    put_true(&mut m, "placeholder", a.placeholder);
    put_str(&mut m, "taskGroupName", a.task_group());
    put_true(&mut m, "preempted", preempted);
    put_true(&mut m, "originator", a.originator);
    Value::Object(m)
}

/// A pending ask (29.3).
fn ask(app_id: &str, a: &AskSnap) -> Value {
    let mut m = Map::new();
    m.insert("allocationKey".into(), json!(a.allocation_key));
    if !a.tags.is_empty() {
        m.insert("allocationTags".into(), json!(&a.tags));
    }
    if a.created_ns > 0 {
        m.insert("requestTime".into(), json!(a.created_ns));
    }
    put(&mut m, "resource", resource(&a.resource));
    m.insert("priority".into(), json!(a.priority.to_string()));
    if let Some(n) = &a.required_node {
        put_str(&mut m, "requiredNodeId", n);
    }
    m.insert("applicationId".into(), json!(app_id));
    put_true(&mut m, "placeholder", a.placeholder);
    put_str(&mut m, "taskGroupName", &a.task_group);
    if let Some(r) = &a.pending_reason {
        put(&mut m, "allocationLog", super::pending::allocation_log(r));
        m.insert("pendingReason".into(), super::pending::reason_json(r));
        put_true(&mut m, "schedulingAttempted", r.last_tried > 0);
    }
    Value::Object(m)
}

fn state_log(log: &[(&'static str, i64)]) -> Value {
    Value::Array(
        log.iter()
            .map(|(s, t)| json!({"time": t, "applicationState": s}))
            .collect(),
    )
}

/// An active application (29.5).
pub fn app(p: &PartitionSnap, a: &AppSnap) -> Value {
    let mut m = Map::new();
    m.insert("applicationID".into(), json!(a.id));
    put(&mut m, "usedResource", resource(&a.allocated));
    put(&mut m, "maxUsedResource", resource(&a.max_used));
    put(&mut m, "pendingResource", resource(&a.pending));
    m.insert("partition".into(), json!(p.name));
    m.insert("queueName".into(), json!(a.queue));
    m.insert("submissionTime".into(), json!(a.submitted_ns));
    let requests: Vec<Value> = a.pending_asks.iter().map(|k| ask(&a.id, k)).collect();
    if !requests.is_empty() {
        m.insert("requests".into(), Value::Array(requests));
    }
    let allocations: Vec<Value> = a
        .allocations
        .iter()
        .filter_map(|u| p.allocations.get(u))
        .map(|r| allocation(r, p.preempted.contains(&r.uuid)))
        .collect();
    if !allocations.is_empty() {
        m.insert("allocations".into(), Value::Array(allocations));
    }
    m.insert("applicationState".into(), json!(a.state));
    put_str(&mut m, "user", &a.user);
    if !a.groups.is_empty() {
        m.insert("groups".into(), json!(a.groups));
    }
    m.insert("stateLog".into(), state_log(&a.state_log));
    let reserved: Vec<&str> = p
        .reservations
        .iter()
        .filter(|r| r.application_id == a.id)
        .map(|r| r.allocation_key.as_str())
        .collect();
    if !reserved.is_empty() {
        m.insert("hasReserved".into(), json!(true));
        m.insert("reservations".into(), json!(reserved));
    }
    if a.max_request_priority != 0 && a.max_request_priority != i32::MIN {
        m.insert("maxRequestPriority".into(), json!(a.max_request_priority));
    }
    // Milliseconds, as the reference: when it last entered Running.
    if let Some((_, t)) = a.state_log.iter().rev().find(|(s, _)| *s == "Running") {
        m.insert("startTime".into(), json!(t / 1_000_000));
    }
    m.insert("resourceHistory".into(), json!({}));
    Value::Object(m)
}

/// A completed, failed or rejected application (29.5): no resources left.
pub fn finished_app(p: &PartitionSnap, f: &FinishedSnap) -> Value {
    let mut m = Map::new();
    m.insert("applicationID".into(), json!(f.id));
    m.insert("partition".into(), json!(p.name));
    m.insert("queueName".into(), json!(f.queue));
    if f.submitted_ns > 0 {
        m.insert("submissionTime".into(), json!(f.submitted_ns));
    }
    m.insert("finishedTime".into(), json!(f.finished_ns));
    m.insert("applicationState".into(), json!(f.state));
    put_str(&mut m, "user", &f.user);
    if !f.groups.is_empty() {
        m.insert("groups".into(), json!(f.groups));
    }
    put_str(&mut m, "rejectedMessage", &f.message);
    m.insert("stateLog".into(), state_log(&f.state_log));
    if let Some((_, t)) = f.state_log.iter().rev().find(|(s, _)| *s == "Running") {
        m.insert("startTime".into(), json!(t / 1_000_000));
    }
    m.insert("resourceHistory".into(), json!({}));
    Value::Object(m)
}

/// The queue's `headroom` (29.6) given its parent's (`above`): per type
/// that some max on the path limits, the least `max - allocated` over the
/// queue and its ancestors (root's max is the partition's size); `None`
/// when no max applies.
pub fn headroom(q: &QueueSnap, above: Option<&Named>) -> Option<Named> {
    let mut room: Option<Named> = q.max.as_ref().map(|max| {
        max.iter()
            .map(|(k, m)| {
                let used = q.allocated.get(k).copied().unwrap_or(0);
                (k.clone(), m.saturating_sub(used))
            })
            .collect()
    });
    if let Some(above) = above {
        let own = room.get_or_insert_with(Named::new);
        for (k, v) in above {
            own.entry(k.clone())
                .and_modify(|x| *x = (*x).min(*v))
                .or_insert(*v);
        }
    }
    room
}

/// The headroom of the parent of the queue at `path`, walking down from
/// the root (queue paths are bounded in depth).
pub fn headroom_above(root: &QueueSnap, path: &str) -> Option<Named> {
    let mut cur = root;
    let mut acc: Option<Named> = None;
    while !cur.path.eq_ignore_ascii_case(path) {
        acc = headroom(cur, acc.as_ref());
        cur = cur.children.iter().find(|c| {
            path.len() > c.path.len()
                && path.is_char_boundary(c.path.len())
                && path[..c.path.len()].eq_ignore_ascii_case(&c.path)
                && path.as_bytes()[c.path.len()] == b'.'
                || c.path.eq_ignore_ascii_case(path)
        })?;
    }
    acc
}

/// A queue (29.6); `children` recursively when `subtree`, else only
/// `childNames`. `partition` is set on the queue the answer starts at
/// when `top` names it; `above` is its parent's headroom.
pub fn queue(q: &QueueSnap, subtree: bool, top: Option<&str>, above: Option<&Named>) -> Value {
    let room = headroom(q, above);
    let mut m = Map::new();
    m.insert("queuename".into(), json!(q.path));
    put_str(&mut m, "status", &q.state);
    m.insert("partition".into(), json!(top.unwrap_or("")));
    put(&mut m, "pendingResource", resource(&q.pending));
    put(&mut m, "maxResource", q.max.as_ref().and_then(resource));
    put(
        &mut m,
        "guaranteedResource",
        q.guaranteed.as_ref().and_then(resource),
    );
    put(&mut m, "allocatedResource", resource(&q.allocated));
    put(&mut m, "preemptingResource", resource(&q.preempting));
    put(&mut m, "headroom", room.as_ref().and_then(resource));
    m.insert("isLeaf".into(), json!(q.leaf));
    m.insert("isManaged".into(), json!(q.managed));
    if !q.properties.is_empty() {
        m.insert("properties".into(), json!(q.properties));
    }
    if let Some(parent) = &q.parent {
        put_str(&mut m, "parent", parent);
    }
    if let Some(t) = &q.template {
        let mut tm = Map::new();
        put(&mut tm, "maxResource", t.max.as_ref().and_then(resource));
        put(
            &mut tm,
            "guaranteedResource",
            t.guaranteed.as_ref().and_then(resource),
        );
        if !t.properties.is_empty() {
            tm.insert("properties".into(), json!(t.properties));
        }
        m.insert("template".into(), Value::Object(tm));
    }
    if subtree && !q.children.is_empty() {
        m.insert(
            "children".into(),
            Value::Array(
                q.children
                    .iter()
                    .map(|c| queue(c, true, None, room.as_ref()))
                    .collect(),
            ),
        );
    }
    if !q.children.is_empty() {
        let names: Vec<&str> = q.children.iter().map(|c| c.path.as_str()).collect();
        m.insert("childNames".into(), json!(names));
    }
    put(
        &mut m,
        "absUsedCapacity",
        q.max.as_ref().and_then(|max| percent(&q.allocated, max)),
    );
    if q.max_applications > 0 {
        m.insert("maxRunningApps".into(), json!(q.max_applications));
    }
    if q.active_applications > 0 {
        m.insert("runningApps".into(), json!(q.active_applications));
    }
    m.insert("currentPriority".into(), json!(q.current_priority));
    if q.leaf {
        put_str(&mut m, "sortingPolicy", &q.sort_policy);
    }
    m.insert("prioritySorting".into(), json!(q.priority_sort));
    m.insert("preemptionEnabled".into(), json!(q.preemption_enabled));
    m.insert("isPreemptionFence".into(), json!(q.preemption_fence));
    put_str(&mut m, "preemptionDelay", &q.preemption_delay);
    put_str(&mut m, "quotaPreemptionDelay", &q.quota_preemption_delay);
    m.insert("isPriorityFence".into(), json!(q.priority_fence));
    if q.priority_offset != 0 {
        m.insert("priorityOffset".into(), json!(q.priority_offset));
    }
    // sicore's addition: the queue's user/group limits as configured.
    if !q.limits.is_empty() {
        m.insert("limits".into(), json!(q.limits));
    }
    Value::Object(m)
}

/// The node's host and rack names from its attributes (SI v1.x keys
/// first, then the v0.12 ones).
fn attribute<'a>(n: &'a NodeSnap, keys: &[&str]) -> &'a str {
    keys.iter()
        .find_map(|k| n.attributes.get(*k))
        .map_or("", String::as_str)
}

/// A node (29.7); `attributes` always, `{}` when none (the UI's filter
/// reads it).
pub fn node(p: &PartitionSnap, n: &NodeSnap) -> Value {
    let mut m = Map::new();
    m.insert("nodeID".into(), json!(n.id));
    put_str(
        &mut m,
        "hostName",
        attribute(n, &["si/hostname", "si.io/hostname"]),
    );
    put_str(
        &mut m,
        "rackName",
        attribute(n, &["si/rackname", "si.io/rackname"]),
    );
    m.insert("partition".into(), json!(p.name));
    m.insert("attributes".into(), json!(n.attributes));
    put(&mut m, "capacity", resource(&n.capacity));
    put(&mut m, "allocated", resource(&n.allocated));
    put(&mut m, "occupied", resource(&n.occupied));
    put(&mut m, "available", resource(&n.available));
    let cap: Named = n
        .capacity
        .iter()
        .filter(|(_, c)| **c > 0)
        .map(|(k, c)| (k.clone(), *c))
        .collect();
    put(&mut m, "utilized", percent(&n.allocated, &cap));
    let allocations: Vec<Value> = n
        .allocations
        .iter()
        .filter_map(|a| p.allocations.get(&a.uuid))
        .map(|r| allocation(r, p.preempted.contains(&r.uuid)))
        .collect();
    if !allocations.is_empty() {
        m.insert("allocations".into(), Value::Array(allocations));
    }
    let foreign: Vec<Value> = n
        .foreign
        .iter()
        .map(|(k, r)| {
            let mut f = Map::new();
            f.insert("allocationKey".into(), json!(k));
            put(&mut f, "resource", resource(r));
            f.insert("nodeId".into(), json!(n.id));
            Value::Object(f)
        })
        .collect();
    if !foreign.is_empty() {
        m.insert("foreignAllocations".into(), Value::Array(foreign));
    }
    m.insert("schedulable".into(), json!(n.schedulable));
    let reservations: Vec<String> = p
        .reservations
        .iter()
        .filter(|r| r.node == n.id)
        .map(|r| r.allocation_key.clone())
        .collect();
    m.insert("isReserved".into(), json!(!reservations.is_empty()));
    if !reservations.is_empty() {
        m.insert("reservations".into(), json!(reservations));
    }
    Value::Object(m)
}

/// Completed and failed applications still listed: not yet expired.
pub fn completed(p: &PartitionSnap) -> impl Iterator<Item = &FinishedSnap> {
    p.finished
        .iter()
        .filter(|f| matches!(f.state, "Completed" | "Failed"))
}

/// Rejected applications still listed: younger than the terminated
/// timeout.
pub fn rejected(p: &PartitionSnap, now_ns: i64) -> impl Iterator<Item = &FinishedSnap> {
    let since = now_ns.saturating_sub(p.terminated_timeout_ns);
    p.rejected.iter().filter(move |f| f.finished_ns >= since)
}

/// One partition (29.8); shared with the v0.12 UI, which reads only
/// `nodeSortingPolicy` (`rest-v1.9.md` 33.2).
pub fn partition(snap: &Snapshot, p: &PartitionSnap) -> Value {
    let mut apps: BTreeMap<String, usize> = BTreeMap::new();
    for a in &p.apps {
        *apps.entry(a.state.to_string()).or_default() += 1;
    }
    for f in completed(p).chain(rejected(p, snap.taken_ns)) {
        *apps.entry(f.state.to_string()).or_default() += 1;
    }
    let total: usize = apps.values().sum();
    apps.insert("total".into(), total);
    let mut capacity = Map::new();
    put(&mut capacity, "capacity", resource(&p.total));
    put(&mut capacity, "usedCapacity", resource(&p.root.allocated));
    put(
        &mut capacity,
        "utilization",
        percent(&p.root.allocated, &p.total),
    );
    let mut policy = Map::new();
    put_str(&mut policy, "type", p.node_policy);
    if !p.weights.is_empty() {
        policy.insert("resourceWeights".into(), json!(p.weights));
    }
    let mut m = Map::new();
    m.insert("clusterId".into(), json!(p.rm_id));
    m.insert("name".into(), json!(p.name));
    m.insert("capacity".into(), Value::Object(capacity));
    m.insert("nodeSortingPolicy".into(), Value::Object(policy));
    m.insert("preemptionEnabled".into(), json!(p.preemption_enabled));
    m.insert("quotaPreemptionEnabled".into(), json!(false));
    if !p.nodes.is_empty() {
        m.insert("totalNodes".into(), json!(p.nodes.len()));
    }
    m.insert("applications".into(), json!(apps));
    if !p.allocations.is_empty() {
        m.insert("totalContainers".into(), json!(p.allocations.len()));
    }
    m.insert("state".into(), json!("Active"));
    if snap.started_ns > 0 {
        m.insert("lastStateTransitionTime".into(), json!(snap.started_ns));
    }
    Value::Object(m)
}

/// `GET /ws/v1/partitions`.
pub fn partitions(snap: &Snapshot) -> Value {
    Value::Array(snap.partitions.iter().map(|p| partition(snap, p)).collect())
}

/// `GET /ws/v1/scheduler/node-utilizations` (27): per partition, per
/// resource type a node advertises, the nodes in ten usage buckets.
pub fn node_utilizations(snap: &Snapshot) -> Value {
    let per_partition = snap.partitions.iter().map(|p| {
        let mut per_type: BTreeMap<&str, Vec<Vec<&str>>> = BTreeMap::new();
        for n in &p.nodes {
            for (k, cap) in &n.capacity {
                let pct = percent_of(n.allocated.get(k).copied().unwrap_or(0), *cap);
                // 1-10 % is the first bucket, as 0 %; overcommit the last.
                let b = usize::try_from((pct + 9) / 10 - 1).unwrap_or(0).min(9);
                per_type
                    .entry(k.as_str())
                    .or_insert_with(|| vec![Vec::new(); 10])[b]
                    .push(n.id.as_str());
            }
        }
        let utilizations: Vec<Value> = per_type
            .into_iter()
            .map(|(k, buckets)| {
                let util: Vec<Value> = buckets
                    .into_iter()
                    .enumerate()
                    .map(|(i, names)| {
                        let mut b = Map::new();
                        b.insert(
                            "bucketName".into(),
                            json!(format!("{}-{}%", i * 10, (i + 1) * 10)),
                        );
                        b.insert("numOfNodes".into(), json!(names.len()));
                        if !names.is_empty() {
                            b.insert("nodeNames".into(), json!(names));
                        }
                        Value::Object(b)
                    })
                    .collect();
                json!({"type": k, "utilization": util})
            })
            .collect();
        json!({"clusterId": p.rm_id, "partition": p.name, "utilizations": utilizations})
    });
    Value::Array(per_partition.collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(pairs: &[(&str, i64)]) -> Named {
        pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    }

    #[test]
    fn headroom_is_the_least_room_on_the_path() {
        let leaf = QueueSnap {
            path: "root.p.leaf".into(),
            max: Some(named(&[("memory", 100)])),
            allocated: named(&[("memory", 30), ("vcore", 1)]),
            ..Default::default()
        };
        let parent = QueueSnap {
            path: "root.p".into(),
            max: Some(named(&[("memory", 1000), ("gpu", 2)])),
            allocated: named(&[("memory", 900), ("gpu", 3)]),
            children: vec![leaf],
            ..Default::default()
        };
        let root = QueueSnap {
            path: "root".into(),
            max: Some(named(&[("memory", 5000), ("vcore", 10)])),
            allocated: named(&[("memory", 900), ("vcore", 4)]),
            children: vec![parent],
            ..Default::default()
        };
        // Root: its own room. The parent: 100 memory left (tighter than
        // root), gpu over its max (negative, as the reference shows), vcore
        // from root. The leaf: its own 70 memory, the rest from above.
        assert_eq!(
            headroom(&root, None),
            Some(named(&[("memory", 4100), ("vcore", 6)]))
        );
        let above_leaf = headroom_above(&root, "ROOT.p.leaf").unwrap();
        assert_eq!(
            above_leaf,
            named(&[("memory", 100), ("gpu", -1), ("vcore", 6)])
        );
        let leaf = &root.children[0].children[0];
        assert_eq!(
            headroom(leaf, Some(&above_leaf)),
            Some(named(&[("memory", 70), ("gpu", -1), ("vcore", 6)]))
        );
        assert_eq!(headroom_above(&root, "root"), None);
        assert_eq!(headroom_above(&root, "root.pq"), None, "no such queue");
        // No max anywhere: no headroom.
        assert_eq!(headroom(&QueueSnap::default(), None), None);
    }

    #[test]
    fn percentages_follow_the_reference_rules() {
        assert_eq!(percent_of(0, 100), 0);
        assert_eq!(percent_of(-5, 100), 0);
        assert_eq!(percent_of(5, 0), 100);
        assert_eq!(percent_of(1, 3), 33);
        assert_eq!(percent_of(250, 100), 250);
        assert_eq!(percent_of(i64::MAX, 1), i64::from(i32::MAX));
        let used: Named = [("memory".to_string(), 50)].into_iter().collect();
        let cap: Named = [("memory".to_string(), 200), ("vcore".to_string(), 4)]
            .into_iter()
            .collect();
        // A type `used` lacks is left out, not 0.
        assert_eq!(percent(&used, &cap), Some(json!({"memory": 25})));
        assert_eq!(percent(&Named::new(), &cap), None);
    }

    #[test]
    fn nodes_fall_in_the_reference_buckets() {
        let node = |used: i64| NodeSnap {
            id: format!("n{used}"),
            capacity: [("memory".to_string(), 100)].into_iter().collect(),
            allocated: [("memory".to_string(), used)].into_iter().collect(),
            ..Default::default()
        };
        let snap = Snapshot {
            partitions: vec![PartitionSnap {
                name: "default".into(),
                nodes: vec![node(0), node(10), node(11), node(100), node(150)],
                ..Default::default()
            }],
            ..Default::default()
        };
        let v = node_utilizations(&snap);
        let buckets = &v[0]["utilizations"][0]["utilization"];
        assert_eq!(buckets[0]["nodeNames"], json!(["n0", "n10"]));
        assert_eq!(buckets[1]["nodeNames"], json!(["n11"]));
        assert_eq!(buckets[9]["nodeNames"], json!(["n100", "n150"]));
        assert_eq!(buckets[5]["numOfNodes"], 0);
        assert!(buckets[5].get("nodeNames").is_none());
    }
}
