//! The v0.12 shapes (`rest-v0.12.md`) of the paths only the v0.12 web UI
//! reads, and the configuration text helpers, rendered from a [`Snapshot`].

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use super::snapshot::{AppSnap, AskSnap, Named, NodeSnap, PartitionSnap, QueueSnap, Snapshot};
use crate::scheduler::outcome::NewAllocation;

/// A resource as Go map text without `map`: `[memory:2048 vcore:1000]`;
/// unset or empty is `[]`.
pub fn res_str(r: Option<&Named>) -> String {
    match r {
        None => "[]".to_string(),
        Some(r) => {
            let parts: Vec<String> = r.iter().map(|(k, v)| format!("{k}:{v}")).collect();
            format!("[{}]", parts.join(" "))
        }
    }
}

/// Per type `used * 100 / max` (integer), for the types `max` sets.
fn abs_used(max: Option<&Named>, used: &Named) -> String {
    let Some(max) = max else {
        return "[]".to_string();
    };
    let pct: Named = max
        .iter()
        .filter(|(_, m)| **m > 0)
        .map(|(k, m)| {
            let u = i128::from(used.get(k).copied().unwrap_or(0));
            let v = u * 100 / i128::from(*m);
            (k.clone(), i64::try_from(v).unwrap_or(i64::MAX))
        })
        .collect();
    res_str(Some(&pct))
}

fn queue_info(q: &QueueSnap) -> Value {
    json!({
        "queuename": q.name,
        "status": q.state,
        "capacities": {
            "capacity": res_str(q.guaranteed.as_ref()),
            "maxCapacity": res_str(q.max.as_ref()),
            "usedCapacity": res_str(Some(&q.allocated)),
            "absUsedCapacity": abs_used(q.max.as_ref(), &q.allocated),
        },
        "queues": if q.children.is_empty() {
            Value::Null
        } else {
            Value::Array(q.children.iter().map(queue_info).collect())
        },
        "properties": q.properties,
    })
}

/// `GET /ws/v1/queues`: one document per partition, each ended by a
/// newline (as the reference's JSON encoder writes them).
pub fn queues(snap: &Snapshot) -> String {
    snap.partitions
        .iter()
        .map(|p| {
            json!({
                "partitionName": p.name,
                "capacity": {
                    "capacity": res_str(Some(&p.total)),
                    "usedCapacity": res_str(Some(&p.root.allocated)),
                },
                "nodes": Value::Null,
                "queues": queue_info(&p.root),
            })
            .to_string()
                + "\n"
        })
        .collect()
}

fn count_finished(p: &PartitionSnap, state: &str) -> usize {
    p.finished.iter().filter(|f| f.state == state).count()
}

/// A partition's `rmBuildInformation`: what its RM said of its build at
/// registration, with its `rmId` (the web UI's dashboard shows
/// `buildVersion` and `buildDate` of the first entry).
fn build_information(snap: &Snapshot, rm_id: &str) -> Value {
    let entries = snap.rms.iter().filter(|rm| rm.rm_id == rm_id).map(|rm| {
        let mut m: serde_json::Map<String, Value> = rm
            .build_info
            .iter()
            .map(|(k, v)| (k.clone(), Value::from(v.as_str())))
            .collect();
        m.insert("rmId".into(), Value::from(rm.rm_id.as_str()));
        Value::Object(m)
    });
    Value::Array(entries.collect())
}

/// `GET /ws/v1/clusters`.
pub fn clusters(snap: &Snapshot) -> Value {
    Value::Array(
        snap.partitions
            .iter()
            .map(|p| {
                let running = p.apps.iter().filter(|a| a.state == "Running").count();
                let pending = p
                    .apps
                    .iter()
                    .filter(|a| matches!(a.state, "New" | "Accepted"))
                    .count();
                let pending_containers: i64 = p.apps.iter().map(|a| a.pending_allocations).sum();
                let active_nodes = p.nodes.iter().filter(|n| n.schedulable).count();
                json!({
                    "partition": p.name,
                    "clusterName": "kubernetes",
                    "totalApplications": (p.apps.len() + p.finished.len()).to_string(),
                    "failedApplications": count_finished(p, "Failed").to_string(),
                    "pendingApplications": pending.to_string(),
                    "runningApplications": running.to_string(),
                    "completedApplications": count_finished(p, "Completed").to_string(),
                    "totalContainers": p.allocations.len().to_string(),
                    "failedContainers": "0",
                    "pendingContainers": pending_containers.to_string(),
                    "runningContainers": p.allocations.len().to_string(),
                    "activeNodes": active_nodes.to_string(),
                    "totalNodes": p.nodes.len().to_string(),
                    "failedNodes": "0",
                    // YuniKorn v1.x (rest-v1.9.md 29.9).
                    "startTime": snap.started_ns,
                    "rmBuildInformation": build_information(snap, &p.rm_id),
                })
            })
            .collect(),
    )
}

/// `GET /ws/v1/clusters/utilization`.
pub fn cluster_utilization(snap: &Snapshot) -> Value {
    Value::Array(
        snap.partitions
            .iter()
            .map(|p| {
                let used = &p.root.allocated;
                let mut entries: Vec<Value> = p
                    .total
                    .iter()
                    .filter(|(_, t)| **t > 0)
                    .map(|(k, t)| {
                        let u = used.get(k).copied().unwrap_or(0);
                        let pct = i128::from(u) * 100 / i128::from(*t);
                        json!({"type": k, "total": t, "used": u, "usage": format!("{pct}%")})
                    })
                    .collect();
                if p.nodes.is_empty() || used.values().all(|v| *v == 0) || entries.is_empty() {
                    entries = vec![json!({"type": "N/A", "total": -1, "used": -1, "usage": "N/A"})];
                }
                json!({"partition": p.name, "utilization": entries})
            })
            .collect(),
    )
}

fn allocation(a: &NewAllocation, preempted: bool) -> Value {
    let mut v = json!({
        "allocationKey": &*a.key,
        "allocationTags": &a.tags,
        "uuid": &a.uuid,
        "resource": res_str(Some(&super::snapshot::named(&a.resource))),
        "priority": a.priority.to_string(),
        "queueName": &**a.queue(),
        "nodeId": &*a.node,
        "applicationId": &**a.app(),
        "partition": &**a.partition(),
    });
    // YuniKorn v1.8's allocation entry (omitted when false there).
    if preempted {
        v["preempted"] = json!(true);
    }
    if a.originator {
        v["originator"] = json!(true);
    }
    v
}

fn app_info(p: &PartitionSnap, a: &AppSnap) -> Value {
    let mut v = json!({
        "applicationID": a.id,
        "usedResource": res_str(Some(&a.allocated)),
        "partition": p.name,
        "queueName": a.queue,
        "submissionTime": a.submitted_ns,
        "allocations": a
            .allocations
            .iter()
            .filter_map(|u| p.allocations.get(u))
            .map(|r| allocation(r, p.preempted.contains(&r.uuid)))
            .collect::<Vec<_>>(),
        "applicationState": a.state,
        // YuniKorn v1.8 (omitted there when 0).
        "maxRequestPriority": a.max_request_priority,
    });
    // Not in the v0.12 shape: the waiting asks with why they wait, so that
    // a v0.12-era client can answer "why is it pending" too (a field its
    // readers do not know is one they skip).
    if !a.pending_asks.is_empty() {
        v["requests"] = Value::Array(a.pending_asks.iter().map(|r| request(&a.id, r)).collect());
    }
    if a.max_request_priority == 0 {
        if let Some(m) = v.as_object_mut() {
            m.remove("maxRequestPriority");
        }
    }
    v
}

/// A waiting ask in the v0.12 style (resource and priority as strings),
/// with the v1.x `pendingReason` and `allocationLog` once a pass tried it.
fn request(app_id: &str, r: &AskSnap) -> Value {
    let mut v = json!({
        "allocationKey": r.allocation_key,
        "applicationId": app_id,
        "resource": res_str(Some(&r.resource)),
        "priority": r.priority.to_string(),
        "pendingCount": r.pending_repeat,
    });
    if let Some(reason) = &r.pending_reason {
        v["pendingReason"] = super::pending::reason_json(reason);
        if let Some(log) = super::pending::allocation_log(reason) {
            v["allocationLog"] = log;
        }
    }
    v
}

/// Applications (active, then terminated) of `p` whose queue path
/// satisfies `keep`.
fn apps_of(p: &PartitionSnap, keep: &dyn Fn(&str) -> bool, out: &mut Vec<Value>) {
    for a in p.apps.iter().filter(|a| keep(&a.queue)) {
        out.push(app_info(p, a));
    }
    // Terminated applications keep no allocations; their submission time
    // is not kept either, so it reads as their termination time.
    for f in p.finished.iter().filter(|f| keep(&f.queue)) {
        out.push(json!({
            "applicationID": f.id,
            "usedResource": "[]",
            "partition": p.name,
            "queueName": f.queue,
            "submissionTime": f.finished_ns,
            "allocations": [],
            "applicationState": f.state,
        }));
    }
}

pub(crate) fn find_queue<'a>(q: &'a QueueSnap, path: &str) -> Option<&'a QueueSnap> {
    if q.path.eq_ignore_ascii_case(path) {
        return Some(q);
    }
    q.children.iter().find_map(|c| find_queue(c, path))
}

/// `GET /ws/v1/apps[?queue=path]`; `Err` names an unknown queue.
pub fn apps(snap: &Snapshot, queue: Option<&str>) -> Result<Value, String> {
    if let Some(q) = queue {
        if !snap
            .partitions
            .iter()
            .any(|p| find_queue(&p.root, q).is_some())
        {
            return Err(format!("queue {q} not found"));
        }
    }
    let keep = |path: &str| queue.is_none_or(|q| path.eq_ignore_ascii_case(q));
    let mut out = Vec::new();
    for p in &snap.partitions {
        apps_of(p, &keep, &mut out);
    }
    Ok(Value::Array(out))
}

/// A partition by its plain name or `[rmID]name`.
pub fn partition<'a>(snap: &'a Snapshot, name: &str) -> Option<&'a PartitionSnap> {
    super::partition_address::resolve(snap, name)
}

fn node_info(p: &PartitionSnap, n: &NodeSnap) -> Value {
    let attr = |k: &str| n.attributes.get(k).cloned().unwrap_or_default();
    json!({
        "nodeID": n.id,
        "hostName": attr("si.io/hostname"),
        "rackName": attr("si.io/rackname"),
        "capacity": res_str(Some(&n.capacity)),
        "allocated": res_str(Some(&n.allocated)),
        "occupied": res_str(Some(&n.occupied)),
        "available": res_str(Some(&n.available)),
        "allocations": n
            .allocations
            .iter()
            .filter_map(|a| p.allocations.get(&a.uuid))
            .map(|r| allocation(r, p.preempted.contains(&r.uuid)))
            .collect::<Vec<_>>(),
        "schedulable": n.schedulable,
    })
}

/// A partition's nodes in the v0.12 shape.
fn partition_nodes(p: &PartitionSnap) -> Value {
    Value::Array(p.nodes.iter().map(|n| node_info(p, n)).collect())
}

/// `GET /ws/v1/nodes`.
pub fn nodes(snap: &Snapshot) -> Value {
    Value::Array(
        snap.partitions
            .iter()
            .map(|p| json!({"partitionName": p.name, "nodesInfo": partition_nodes(p)}))
            .collect(),
    )
}

/// `GET /ws/v1/nodes/utilization`: per resource type, nodes over ten
/// usage buckets (all partitions).
pub fn node_utilization(snap: &Snapshot) -> Value {
    let mut per_type: BTreeMap<&str, Vec<Vec<&str>>> = BTreeMap::new();
    for p in &snap.partitions {
        for n in &p.nodes {
            for (k, cap) in n.capacity.iter().filter(|(_, c)| **c > 0) {
                let used = n.allocated.get(k).copied().unwrap_or(0);
                let b = crate::metrics::usage_bucket(used, *cap);
                per_type
                    .entry(k.as_str())
                    .or_insert_with(|| vec![Vec::new(); 10])[b]
                    .push(n.id.as_str());
            }
        }
    }
    Value::Array(
        per_type
            .into_iter()
            .map(|(k, buckets)| {
                let util: Vec<Value> = buckets
                    .into_iter()
                    .enumerate()
                    .map(|(i, names)| {
                        json!({
                            "bucketName": format!("{}-{}%", i * 10, (i + 1) * 10),
                            "numOfNodes": names.len(),
                            "nodeNames": names,
                        })
                    })
                    .collect();
                json!({"type": k, "utilization": util})
            })
            .collect(),
    )
}

/// `GET /ws/v1/history/apps` or `/containers`.
pub fn history(samples: &[crate::metrics::HistorySample], containers: bool) -> Value {
    Value::Array(
        samples
            .iter()
            .map(|s| {
                let mut m = Map::new();
                m.insert("timestamp".into(), json!(s.timestamp_ns));
                if containers {
                    m.insert("totalContainers".into(), json!(s.containers.to_string()));
                } else {
                    m.insert(
                        "totalApplications".into(),
                        json!(s.applications.to_string()),
                    );
                }
                Value::Object(m)
            })
            .collect(),
    )
}

/// The configuration text with a `checksum:` line stating `checksum`
/// (replacing one the text may carry).
pub fn config_with_checksum(text: &str, checksum: &str) -> String {
    let mut out = strip_checksum(text).unwrap_or_else(|_| strip_checksum_line(text));
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&format!("checksum: {checksum}\n"));
    out
}

/// The text without its top-level `checksum:` entry.
pub fn strip_checksum_line(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        if !line.starts_with("checksum:") {
            out.push_str(line);
        }
    }
    out
}

/// The document without its top-level `checksum` key, whatever its YAML
/// style. The text is kept as written when dropping the block-style
/// `checksum:` line removes exactly that key; otherwise (flow style, a
/// quoted key, ...) the parsed document without the key is written out.
pub fn strip_checksum(text: &str) -> Result<String, String> {
    let parse =
        |t: &str| serde_yaml_ng::from_str::<serde_yaml_ng::Value>(t).map_err(|e| e.to_string());
    let mut doc = parse(text)?;
    let removed = doc
        .as_mapping_mut()
        .and_then(|m| m.remove("checksum"))
        .is_some();
    if !removed {
        return Ok(text.to_string());
    }
    let lined = strip_checksum_line(text);
    if parse(&lined).is_ok_and(|v| v == doc) {
        return Ok(lined);
    }
    serde_yaml_ng::to_string(&doc).map_err(|e| e.to_string())
}

/// The `checksum:` entry of a YAML document, if it has one.
pub fn checksum_entry(text: &str) -> Option<String> {
    let v: serde_yaml_ng::Value = serde_yaml_ng::from_str(text).ok()?;
    match v.get("checksum")? {
        serde_yaml_ng::Value::String(s) => Some(s.clone()),
        other => serde_yaml_ng::to_string(other)
            .ok()
            .map(|s| s.trim().to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resource_text() {
        let r: Named = [("vcore".to_string(), 1000), ("memory".to_string(), 2048)]
            .into_iter()
            .collect();
        assert_eq!(res_str(Some(&r)), "[memory:2048 vcore:1000]");
        assert_eq!(res_str(None), "[]");
        let used: Named = [("memory".to_string(), 1024)].into_iter().collect();
        assert_eq!(abs_used(Some(&r), &used), "[memory:50 vcore:0]");
    }

    #[test]
    fn flow_style_checksum_is_stripped() {
        let t = "{partitions: [{name: default, queues: [{name: root}]}], checksum: ABC}";
        assert_eq!(checksum_entry(t).as_deref(), Some("ABC"));
        let stripped = strip_checksum(t).unwrap();
        assert!(!stripped.contains("checksum"), "{stripped}");
        assert!(!stripped.contains("ABC"), "{stripped}");
        let v: serde_yaml_ng::Value = serde_yaml_ng::from_str(&stripped).unwrap();
        assert_eq!(v["partitions"][0]["name"], "default");
        // Block style keeps the text as written.
        let b = "# comment\npartitions: []\nchecksum: ABC\n";
        assert_eq!(strip_checksum(b).unwrap(), "# comment\npartitions: []\n");
        // A nested key of that name stays.
        let n = "partitions:\n  - name: x\n    checksum: keep\n";
        assert_eq!(strip_checksum(n).unwrap(), n);
    }

    #[test]
    fn checksum_lines() {
        let t = "partitions: []\nchecksum: ABC\n";
        assert_eq!(checksum_entry(t).as_deref(), Some("ABC"));
        assert_eq!(strip_checksum_line(t), "partitions: []\n");
        assert_eq!(
            config_with_checksum(t, "D"),
            "partitions: []\nchecksum: D\n"
        );
    }
}
