//! Consistency checks on a state dump, shared by the invariant, soak and
//! concurrency tests and by the stateful fuzz target (`fuzz/`, which
//! includes this file by path). They only read the JSON, so they hold for
//! any scheduler state, whatever the operations that led to it.
//!
//! Sums are taken in `i128`, so a check never overflows where the
//! scheduler's own arithmetic might.

use std::collections::{BTreeMap, HashMap, HashSet};

use serde_json::Value;

/// A resource as the dump shows it: name to quantity.
pub type Res = BTreeMap<String, i128>;

fn quantity(v: &Value) -> Result<i128, String> {
    v.as_i64()
        .map(i128::from)
        .or_else(|| v.as_u64().map(i128::from))
        .ok_or_else(|| format!("quantity {v} is not an integer"))
}

/// Reads a resource object (null is empty); every quantity must be >= 0.
pub fn res(v: &Value, what: &dyn Fn() -> String) -> Result<Res, String> {
    let mut r = Res::new();
    if v.is_null() {
        return Ok(r);
    }
    let m = v
        .as_object()
        .ok_or_else(|| format!("{}: resource {v} is not an object", what()))?;
    for (k, q) in m {
        let q = quantity(q)?;
        if q < 0 {
            return Err(format!("{}: negative quantity {k}={q}", what()));
        }
        r.insert(k.clone(), q);
    }
    Ok(r)
}

/// Adds `b` into `a`.
pub fn add(a: &mut Res, b: &Res) {
    for (k, v) in b {
        *a.entry(k.clone()).or_default() += v;
    }
}

/// Equal, counting a missing name as zero.
pub fn same(a: &Res, b: &Res) -> bool {
    let keys: HashSet<&String> = a.keys().chain(b.keys()).collect();
    keys.into_iter()
        .all(|k| a.get(k).copied().unwrap_or(0) == b.get(k).copied().unwrap_or(0))
}

fn arr<'a>(v: &'a Value, field: &str) -> Result<&'a Vec<Value>, String> {
    v[field]
        .as_array()
        .ok_or_else(|| format!("field {field} is not a list"))
}

fn text<'a>(v: &'a Value, field: &str) -> Result<&'a str, String> {
    v[field]
        .as_str()
        .ok_or_else(|| format!("field {field} is not a string"))
}

/// What [`check_books`] learned about one partition.
#[derive(Debug, Default)]
pub struct PartitionBooks {
    /// Live allocations: uuid to (node, application).
    pub allocations: HashMap<String, (String, String)>,
    /// Node ids.
    pub nodes: HashSet<String>,
    /// Application ids.
    pub applications: HashSet<String>,
}

/// Checks every partition of a dump:
///
/// - no negative quantity in any node, application, queue or total;
/// - a node's `allocated` is the sum of its allocations, each allocation
///   sits on one node only and belongs to one application of the same
///   partition, whose `allocated` is the sum of what it holds;
/// - a leaf queue's `allocated` is the sum over its applications, a
///   parent's the sum over its children, root's the sum over the nodes
///   (a gang swap in flight counts by its excess); pending is never
///   negative;
/// - the partition total is the sum of the node capacities.
///
/// Returns per partition (keyed `rm_id/name`) what it holds.
pub fn check_books(dump: &Value) -> Result<BTreeMap<String, PartitionBooks>, String> {
    let mut out = BTreeMap::new();
    for p in arr(dump, "partitions")? {
        let key = format!("{}/{}", text(p, "rm_id")?, text(p, "name")?);
        let books = check_partition(p).map_err(|e| format!("partition {key}: {e}"))?;
        out.insert(key, books);
    }
    Ok(out)
}

fn check_partition(p: &Value) -> Result<PartitionBooks, String> {
    let mut books = PartitionBooks::default();
    let mut on_nodes: HashMap<String, Res> = HashMap::new();
    // Real allocations of gang swaps in flight: on a node, in no
    // application until the RM confirms the placeholder's release.
    let mut in_flight: HashSet<String> = HashSet::new();
    let mut capacity = Res::new();
    let mut node_alloc = Res::new();
    for n in arr(p, "nodes")? {
        let id = text(n, "id")?.to_string();
        let at = |f: &str| format!("node {id} {f}");
        let cap = res(&n["capacity"], &|| at("capacity"))?;
        let allocated = res(&n["allocated"], &|| at("allocated"))?;
        // Checked for sign only: an RM may shrink a node below its usage.
        res(&n["occupied"], &|| at("occupied"))?;
        add(&mut capacity, &cap);
        add(&mut node_alloc, &allocated);
        let mut sum = Res::new();
        for a in arr(n, "allocations")? {
            let uuid = text(a, "uuid")?.to_string();
            let r = res(&a["resource"], &|| format!("allocation {uuid}"))?;
            add(&mut sum, &r);
            let app = text(a, "application_id")?.to_string();
            if books
                .allocations
                .insert(uuid.clone(), (id.clone(), app))
                .is_some()
            {
                return Err(format!("allocation {uuid} is on two nodes"));
            }
            if !a["replacing"].is_null() {
                in_flight.insert(uuid.clone());
                // Not in the queues yet (only its excess, below).
                for (k, v) in &r {
                    *node_alloc.entry(k.clone()).or_default() -= v;
                }
            }
            on_nodes.insert(uuid, r);
        }
        if !same(&sum, &allocated) {
            return Err(format!(
                "node {id}: allocated {allocated:?} but its allocations hold {sum:?}"
            ));
        }
        books.nodes.insert(id);
    }
    let total = res(&p["total"], &|| "total".into())?;
    if !same(&total, &capacity) {
        return Err(format!(
            "total {total:?} is not the sum of the node capacities {capacity:?}"
        ));
    }
    // Applications hold exactly the allocations on the nodes.
    let mut held = HashSet::new();
    let mut app_res: HashMap<String, Res> = HashMap::new();
    let mut app_queue: HashMap<String, String> = HashMap::new();
    for a in arr(p, "applications")? {
        let id = text(a, "id")?.to_string();
        let at = |f: &str| format!("application {id} {f}");
        let mut sum = Res::new();
        for u in arr(a, "allocations")? {
            let u = u.as_str().ok_or("allocation uuid is not a string")?;
            let r = on_nodes
                .get(u)
                .ok_or_else(|| format!("application {id} holds {u}, which is on no node"))?;
            match books.allocations.get(u) {
                Some((_, owner)) if *owner == id => {}
                other => {
                    return Err(format!(
                        "application {id} holds {u}, whose node lists it for {other:?}"
                    ))
                }
            }
            if !held.insert(u.to_string()) {
                return Err(format!("allocation {u} is held by two applications"));
            }
            add(&mut sum, r);
        }
        // Real and placeholder allocations, each counted once.
        let allocated = res(&a["allocated"], &|| at("allocated"))?;
        let mut booked = allocated.clone();
        add(&mut booked, &res(&a["placeholder"], &|| at("placeholder"))?);
        if !same(&sum, &booked) {
            return Err(format!(
                "application {id}: allocated {allocated:?} (with placeholders {booked:?}) but it holds {sum:?}"
            ));
        }
        // A bigger real allocation in flight counts its excess in the queue.
        for r in a["replacements"].as_array().into_iter().flatten() {
            let excess = res(&r["queue_excess"], &|| at("queue_excess"))?;
            add(&mut sum, &excess);
            add(&mut node_alloc, &excess);
        }
        res(&a["pending"], &|| at("pending"))?;
        app_queue.insert(id.clone(), text(a, "queue")?.to_string());
        app_res.insert(id.clone(), sum);
        books.applications.insert(id);
    }
    let orphans: Vec<_> = on_nodes
        .keys()
        .filter(|u| !held.contains(*u) && !in_flight.contains(*u))
        .collect();
    if !orphans.is_empty() {
        return Err(format!("allocations without an application: {orphans:?}"));
    }
    let root_alloc = check_queue(&p["root"], &app_res, &app_queue)?;
    if !same(&root_alloc, &node_alloc) {
        return Err(format!(
            "root allocated {root_alloc:?} but the nodes hold {node_alloc:?} (swaps in flight counted by their excess)"
        ));
    }
    Ok(books)
}

/// Checks a queue and its subtree; returns its allocated resource.
fn check_queue(
    q: &Value,
    apps: &HashMap<String, Res>,
    app_queue: &HashMap<String, String>,
) -> Result<Res, String> {
    let path = text(q, "path")?;
    let allocated = res(&q["allocated"], &|| format!("queue {path} allocated"))?;
    // Pending is checked for sign only: with gang scheduling an
    // application's pending and its queue's differ by the asks that wait
    // for their placeholders.
    res(&q["pending"], &|| format!("queue {path} pending"))?;
    let mut sum_alloc = Res::new();
    if q["leaf"].as_bool() == Some(true) {
        for (app, queue) in app_queue {
            if queue == path {
                add(&mut sum_alloc, &apps[app]);
            }
        }
    } else {
        for c in arr(q, "children")? {
            add(&mut sum_alloc, &check_queue(c, apps, app_queue)?);
        }
    }
    if !same(&allocated, &sum_alloc) {
        return Err(format!(
            "queue {path}: allocated {allocated:?} but its members hold {sum_alloc:?}"
        ));
    }
    Ok(allocated)
}

/// Checks that every node and application in a partition of RM `r` was
/// created by `r`: `owner_of(id)` names the RM that submitted an id (the
/// tests give each RM its own id prefix).
pub fn check_ownership(
    dump: &Value,
    owner_of: &dyn Fn(&str) -> Option<String>,
) -> Result<(), String> {
    for p in arr(dump, "partitions")? {
        let rm = text(p, "rm_id")?;
        let name = text(p, "name")?;
        let ids = arr(p, "nodes")?.iter().map(|n| ("node", &n["id"])).chain(
            arr(p, "applications")?
                .iter()
                .map(|a| ("application", &a["id"])),
        );
        for (kind, id) in ids {
            let id = id.as_str().unwrap_or_default();
            if let Some(owner) = owner_of(id) {
                if owner != rm {
                    return Err(format!(
                        "{kind} {id} of RM {owner} sits in partition {name} of RM {rm}"
                    ));
                }
            }
        }
    }
    Ok(())
}
