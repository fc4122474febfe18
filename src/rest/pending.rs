//! Why asks wait, in REST (docs/why-pending.md): each pending request's
//! `pendingReason` and YuniKorn's `allocationLog`, and
//! `/ws/v1/partition/{p}/pending`, the waiting asks grouped by cause.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use super::snapshot::{ReasonView, Snapshot};

/// An answer that is not a document (`v1_routes::RouteError`, spelled
/// here: the routes' module renders requests through this one).
type RouteError = (u16, String);

/// Most asks named per group of the `pending` answer.
pub const MAX_LISTED_PER_GROUP: usize = 20;

/// A dump name (`last_tried`) in REST's spelling (`lastTried`).
fn camel(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut up = false;
    for c in s.chars() {
        if c == '_' {
            up = true;
        } else if up {
            out.extend(c.to_uppercase());
            up = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// Renames object keys to camelCase; the depth is the view's own (three
/// levels), never the user's.
fn camel_keys(v: Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.into_iter()
                .map(|(k, v)| (camel(&k), camel_keys(v)))
                .collect::<Map<String, Value>>(),
        ),
        Value::Array(a) => Value::Array(a.into_iter().map(camel_keys).collect()),
        other => other,
    }
}

/// The `pendingReason` object of a request.
pub fn reason_json(v: &ReasonView) -> Value {
    let mut value = camel_keys(serde_json::to_value(v).unwrap_or(Value::Null));
    if let Value::Object(m) = &mut value {
        // Served on its own as `allocationLog`.
        m.remove("allocationLog");
    }
    value
}

/// YuniKorn's `allocationLog` of a request (`rest-v1.9.md` 29.3).
pub fn allocation_log(v: &ReasonView) -> Option<Value> {
    (!v.allocation_log.is_empty()).then(|| {
        Value::Array(
            v.allocation_log
                .iter()
                .map(|e| {
                    json!({
                        "message": e.message,
                        "lastOccurrence": e.last_occurrence,
                        "count": e.count,
                    })
                })
                .collect(),
        )
    })
}

/// `/partition/{p}/pending`: every waiting ask (as listed per
/// application) in exactly one group, the largest group first.
pub fn partition_pending(snap: &Snapshot, partition: &str) -> Result<Value, RouteError> {
    let p = super::partition_address::resolve(snap, partition)
        .ok_or_else(|| (404, "Partition not found".to_string()))?;
    struct Group<'a> {
        cause: &'static str,
        message: &'a str,
        asks: usize,
        repeats: i64,
        listed: Vec<Value>,
    }
    let mut groups: BTreeMap<&str, Group> = BTreeMap::new();
    let mut waiting = 0usize;
    for app in &p.apps {
        for ask in &app.pending_asks {
            waiting += 1;
            let (key, cause, message) = match &ask.pending_reason {
                Some(r) => (r.group.as_str(), r.cause, r.message.as_str()),
                None => ("notTried", "notTried", "no pass has tried it yet"),
            };
            let g = groups.entry(key).or_insert(Group {
                cause,
                message,
                asks: 0,
                repeats: 0,
                listed: Vec::new(),
            });
            g.asks += 1;
            g.repeats = g.repeats.saturating_add(i64::from(ask.pending_repeat));
            if g.listed.len() < MAX_LISTED_PER_GROUP {
                g.listed.push(json!({
                    "applicationId": app.id,
                    "allocationKey": ask.allocation_key,
                    "queueName": app.queue,
                }));
            }
        }
    }
    let mut list: Vec<(&str, Group)> = groups.into_iter().collect();
    list.sort_by(|a, b| b.1.asks.cmp(&a.1.asks).then(a.0.cmp(b.0)));
    let groups: Vec<Value> = list
        .into_iter()
        .map(|(key, g)| {
            json!({
                "group": key,
                "cause": g.cause,
                "example": g.message,
                "asks": g.asks,
                "allocations": g.repeats,
                "requests": g.listed,
            })
        })
        .collect();
    Ok(json!({
        "partition": p.name,
        "waitingAsks": waiting,
        "groups": groups,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn camel_case_names() {
        assert_eq!(camel("last_tried"), "lastTried");
        assert_eq!(camel("reserved_for_other"), "reservedForOther");
        assert_eq!(camel("cause"), "cause");
    }

    #[test]
    fn reason_object_is_camel_case_without_the_log() {
        let v = ReasonView {
            cause: "queueHeadroom",
            last_tried: 5,
            allocation_log: vec![],
            ..Default::default()
        };
        let j = reason_json(&v);
        assert_eq!(j["lastTried"], 5);
        assert!(j.get("allocationLog").is_none());
        assert!(allocation_log(&v).is_none());
    }
}
