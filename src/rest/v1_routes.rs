//! The v1.x routes that select and filter (`rest-v1.9.md` 10–19, 28):
//! path parameters checked in the reference's order, with its messages.

use serde_json::{json, Map, Value};

use super::handlers::{find_queue, partition};
use super::snapshot::{PartitionSnap, QueueSnap, Snapshot};
use super::v1;
use crate::config::PlacementRuleConfig;

/// An answer that is not a document: HTTP status and message.
pub type RouteError = (u16, String);

fn err(code: u16, m: impl Into<String>) -> RouteError {
    (code, m.into())
}

const PARTITION_NOT_FOUND: &str = "Partition not found";
const QUEUE_NOT_FOUND: &str = "Queue not found";
const APP_NOT_FOUND: &str = "Application not found";
const INVALID_QUEUE: &str = "invalid queue name, max 64 characters consisting of alphanumeric characters and '-', '_', '#', '@', '/', ':' allowed";
/// The statuses `?status=` accepts with `active`.
const ACTIVE_STATUSES: [&str; 6] = [
    "new",
    "accepted",
    "running",
    "completing",
    "failing",
    "resuming",
];

fn part<'a>(snap: &'a Snapshot, p: &str) -> Result<&'a PartitionSnap, RouteError> {
    partition(snap, p).ok_or_else(|| err(404, PARTITION_NOT_FOUND))
}

/// A path parameter decoded once more (query-unescape: `+` is a space).
pub fn unescape(s: &str) -> Result<String, RouteError> {
    super::router::decode_segment(&s.replace('+', " "))
        .ok_or_else(|| err(400, format!("invalid URL escape in {s:?}")))
}

/// A queue path parameter, decoded once more and checked.
fn queue_name(raw: &str) -> Result<String, RouteError> {
    let q = unescape(raw)?;
    check_queue_name(&q)?;
    Ok(q)
}

/// A queue path whose every part is 1–64 of the allowed characters.
fn check_queue_name(q: &str) -> Result<(), RouteError> {
    let ok = q.split('.').all(|part| {
        (1..=64).contains(&part.len())
            && part
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"_:#/@-".contains(&b))
    });
    if ok {
        Ok(())
    } else {
        Err(err(400, INVALID_QUEUE))
    }
}

fn queue<'a>(p: &'a PartitionSnap, q: &str) -> Result<&'a QueueSnap, RouteError> {
    find_queue(&p.root, q).ok_or_else(|| err(404, QUEUE_NOT_FOUND))
}

/// `/partition/{p}/queues`: the root with every child.
pub fn partition_queues(snap: &Snapshot, p: &str) -> Result<Value, RouteError> {
    let p = part(snap, p)?;
    Ok(v1::queue(&p.root, true, Some(&p.name), None))
}

/// `/partition/{p}/queue/{q}[?subtree]`.
pub fn partition_queue(
    snap: &Snapshot,
    p: &str,
    q: &str,
    subtree: bool,
) -> Result<Value, RouteError> {
    let p = part(snap, p)?;
    let q = queue_name(q)?;
    let found = queue(p, &q)?;
    let above = v1::headroom_above(&p.root, &found.path);
    Ok(v1::queue(found, subtree, None, above.as_ref()))
}

/// `/partition/{p}/nodes`.
pub fn partition_nodes(snap: &Snapshot, p: &str) -> Result<Value, RouteError> {
    let p = part(snap, p)?;
    Ok(Value::Array(
        p.nodes.iter().map(|n| v1::node(p, n)).collect(),
    ))
}

/// `/partition/{p}/node/{n}`.
pub fn partition_node(snap: &Snapshot, p: &str, n: &str) -> Result<Value, RouteError> {
    let p = part(snap, p)?;
    let n = p
        .nodes
        .iter()
        .find(|x| x.id == n)
        .ok_or_else(|| err(404, "Node not found"))?;
    Ok(v1::node(p, n))
}

/// The applications a queue holds now, filtered by `status` (lower case).
fn held(p: &PartitionSnap, q: &QueueSnap, status: Option<&str>) -> Value {
    Value::Array(
        p.apps
            .iter()
            .filter(|a| a.queue == q.path)
            .filter(|a| status.is_none_or(|s| a.state.eq_ignore_ascii_case(s)))
            .map(|a| v1::app(p, a))
            .collect(),
    )
}

/// `/partition/{p}/queue/{q}/applications`.
pub fn queue_apps(snap: &Snapshot, p: &str, q: &str) -> Result<Value, RouteError> {
    let q = queue_name(q)?;
    let p = part(snap, p)?;
    Ok(held(p, queue(p, &q)?, None))
}

/// `/partition/{p}/queue/{q}/application/{app}`.
pub fn queue_app(snap: &Snapshot, p: &str, q: &str, app: &str) -> Result<Value, RouteError> {
    let q = unescape(q)?;
    let p = part(snap, p)?;
    check_queue_name(&q)?;
    let q = queue(p, &q)?;
    p.apps
        .iter()
        .find(|a| a.id == app && a.queue == q.path)
        .map(|a| v1::app(p, a))
        .ok_or_else(|| err(404, APP_NOT_FOUND))
}

fn status_filter(status: Option<&str>) -> Result<Option<String>, RouteError> {
    let Some(s) = status else {
        return Ok(None);
    };
    let s = s.to_ascii_lowercase();
    if !ACTIVE_STATUSES.contains(&s.as_str()) {
        return Err(err(
            400,
            format!(
                "Only following active statuses are allowed: {}",
                ACTIVE_STATUSES.join(",")
            ),
        ));
    }
    Ok(Some(s))
}

/// `/partition/{p}/queue/{q}/applications/{state}[?status=]`.
pub fn queue_apps_by_state(
    snap: &Snapshot,
    p: &str,
    q: &str,
    state: &str,
    status: Option<&str>,
) -> Result<Value, RouteError> {
    let p = part(snap, p)?;
    let q = queue_name(q)?;
    let q = queue(p, &q)?;
    if !state.eq_ignore_ascii_case("active") {
        return Err(err(
            400,
            "Only following application states are allowed: active",
        ));
    }
    let status = status_filter(status)?;
    Ok(held(p, q, status.as_deref()))
}

/// `/partition/{p}/application/{app}`: active applications only.
pub fn partition_app(snap: &Snapshot, p: &str, app: &str) -> Result<Value, RouteError> {
    let p = part(snap, p)?;
    p.apps
        .iter()
        .find(|a| a.id == app)
        .map(|a| v1::app(p, a))
        .ok_or_else(|| err(404, APP_NOT_FOUND))
}

/// `/partition/{p}/applications/{state}[?status=]`.
pub fn partition_apps_by_state(
    snap: &Snapshot,
    p: &str,
    state: &str,
    status: Option<&str>,
) -> Result<Value, RouteError> {
    let p = part(snap, p)?;
    let out: Vec<Value> = match state.to_ascii_lowercase().as_str() {
        "active" => {
            let status = status_filter(status)?;
            p.apps
                .iter()
                .filter(|a| {
                    status
                        .as_deref()
                        .is_none_or(|s| a.state.eq_ignore_ascii_case(s))
                })
                .map(|a| v1::app(p, a))
                .collect()
        }
        "completed" => v1::completed(p).map(|f| v1::finished_app(p, f)).collect(),
        "rejected" => v1::rejected(p, snap.taken_ns)
            .map(|f| v1::finished_app(p, f))
            .collect(),
        _ => {
            return Err(err(
                400,
                "Only following application states are allowed: active, rejected, completed",
            ))
        }
    };
    Ok(Value::Array(out))
}

fn rule(r: &PlacementRuleConfig) -> Value {
    let mut params = Map::new();
    params.insert("create".into(), json!(r.create.to_string()));
    match r.name.to_ascii_lowercase().as_str() {
        "fixed" => {
            params.insert("queue".into(), json!(r.value));
            params.insert(
                "qualified".into(),
                json!(r.value.starts_with("root.").to_string()),
            );
        }
        "tag" => {
            params.insert("tagName".into(), json!(r.value));
        }
        _ => {}
    }
    let mut m = Map::new();
    m.insert("name".into(), json!(r.name.to_ascii_lowercase()));
    m.insert("parameters".into(), Value::Object(params));
    let f = &r.filter;
    if !f.users.is_empty() || !f.groups.is_empty() {
        let deny = f.filter_type.eq_ignore_ascii_case("deny");
        let mut fm = Map::new();
        fm.insert("type".into(), json!(if deny { "deny" } else { "allow" }));
        if !f.users.is_empty() {
            fm.insert("userList".into(), json!(f.users));
        }
        if !f.groups.is_empty() {
            fm.insert("groupList".into(), json!(f.groups));
        }
        m.insert("filter".into(), Value::Object(fm));
    }
    if let Some(parent) = &r.parent {
        m.insert("parentRule".into(), rule(parent));
    }
    Value::Object(m)
}

/// The rules of partition `p` in evaluation order, from its RM's
/// configuration in force, ending with the implicit `recovery` rule. A
/// partition configured without rules places by the `provided` rule.
pub fn rules_of(snap: &Snapshot, p: &PartitionSnap) -> Vec<Value> {
    let conf = snap
        .rms
        .iter()
        .find(|r| r.rm_id == p.rm_id)
        .and_then(|rm| crate::config::parse_with(&rm.config_text, rm.grammar).ok());
    let configured: Vec<PlacementRuleConfig> = conf
        .and_then(|c| c.partitions.into_iter().find(|c| c.name == p.name))
        .map(|c| c.placement_rules)
        .unwrap_or_default();
    let mut out: Vec<Value> = if configured.is_empty() {
        vec![rule(&PlacementRuleConfig {
            name: "provided".into(),
            ..Default::default()
        })]
    } else {
        configured.iter().map(rule).collect()
    };
    out.push(json!({
        "name": "recovery",
        "parameters": {"create": "true", "queue": "root.@recovery@"},
    }));
    out
}

/// `/partition/{p}/placementrules`.
pub fn placement_rules(snap: &Snapshot, p: &str) -> Result<Value, RouteError> {
    let p = part(snap, p)?;
    Ok(Value::Array(rules_of(snap, p)))
}

/// `/debug/fullstatedump` (28): the v1.x dump object. `config` and
/// `logLevel` are the caller's, as they are not in the snapshot.
pub fn debug_dump(
    snap: &Snapshot,
    history: &[crate::metrics::HistorySample],
    config: Option<Value>,
    log_level: &str,
) -> Value {
    let mut apps = Vec::new();
    for p in &snap.partitions {
        apps.extend(p.apps.iter().map(|a| v1::app(p, a)));
    }
    for p in &snap.partitions {
        apps.extend(v1::completed(p).map(|f| v1::finished_app(p, f)));
    }
    for p in &snap.partitions {
        apps.extend(v1::rejected(p, snap.taken_ns).map(|f| v1::finished_app(p, f)));
    }
    let nodes: Vec<Value> = snap
        .partitions
        .iter()
        .map(|p| {
            let mut m = Map::new();
            m.insert("partitionName".into(), json!(p.name));
            if !p.nodes.is_empty() {
                m.insert(
                    "nodesInfo".into(),
                    Value::Array(p.nodes.iter().map(|n| v1::node(p, n)).collect()),
                );
            }
            Value::Object(m)
        })
        .collect();
    let rules: Vec<Value> = snap
        .partitions
        .iter()
        .map(|p| json!({"partition": p.name, "rules": rules_of(snap, p)}))
        .collect();
    let mut m = Map::new();
    m.insert("timestamp".into(), json!(snap.taken_ns));
    m.insert("partitions".into(), v1::partitions(snap));
    m.insert("applications".into(), Value::Array(apps));
    m.insert(
        "appHistory".into(),
        super::handlers::history(history, false),
    );
    m.insert(
        "containerHistory".into(),
        super::handlers::history(history, true),
    );
    m.insert("nodes".into(), Value::Array(nodes));
    m.insert("clusterInfo".into(), super::handlers::clusters(snap));
    m.insert(
        "queues".into(),
        Value::Array(
            snap.partitions
                .iter()
                .map(|p| v1::queue(&p.root, true, Some(&p.name), None))
                .collect(),
        ),
    );
    m.insert(
        "rmDiagnostics".into(),
        json!({"empty": "sicore does not ask the RM for its state dump"}),
    );
    m.insert("logLevel".into(), json!(log_level));
    if let Some(c) = config {
        m.insert("config".into(), c);
    }
    m.insert("placementRules".into(), Value::Array(rules));
    Value::Object(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queue_names_are_decoded_once_and_checked_per_part() {
        assert_eq!(queue_name("root.a%2Db").unwrap(), "root.a-b");
        assert_eq!(queue_name("root.with+space").unwrap_err().0, 400);
        assert_eq!(queue_name("root.%zz").unwrap_err().0, 400);
        assert_eq!(queue_name("root..a").unwrap_err().1, INVALID_QUEUE);
        let long = format!("root.{}", "x".repeat(65));
        assert_eq!(queue_name(&long).unwrap_err().1, INVALID_QUEUE);
        assert!(queue_name(&format!("root.{}", "x".repeat(64))).is_ok());
        assert!(check_queue_name("root.ns#1@a/b:c_d").is_ok());
    }

    #[test]
    fn statuses_are_checked_case_insensitively() {
        assert_eq!(status_filter(None).unwrap(), None);
        assert_eq!(
            status_filter(Some("Running")).unwrap().as_deref(),
            Some("running")
        );
        assert_eq!(status_filter(Some("completed")).unwrap_err().0, 400);
    }
}
