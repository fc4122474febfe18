//! `/ws/v1/scheduler/healthcheck`: consistency checks over a snapshot.
//!
//! Each check recomputes a figure the core keeps incrementally from the
//! records it is derived from, with wide (i128) sums, and reports every
//! mismatch it finds (the first few, by name).

use crate::scheduler::alloc_uuid::AllocUuid;
use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::snapshot::{Named, PartitionSnap, QueueSnap, Snapshot};

/// One check's outcome, in the reference's field names.
#[derive(Debug, Serialize)]
pub struct HealthCheck {
    /// Check name.
    #[serde(rename = "Name")]
    pub name: &'static str,
    /// Passed?
    #[serde(rename = "Succeeded")]
    pub succeeded: bool,
    /// What it checks.
    #[serde(rename = "Description", skip_serializing_if = "str::is_empty")]
    pub description: &'static str,
    /// What was wrong (empty when it passed).
    #[serde(rename = "DiagnosisMessage", skip_serializing_if = "String::is_empty")]
    pub diagnosis: String,
}

/// The whole answer.
#[derive(Debug, Serialize)]
pub struct HealthInfo {
    /// All checks passed.
    #[serde(rename = "Healthy")]
    pub healthy: bool,
    /// The checks.
    #[serde(rename = "HealthChecks")]
    pub checks: Vec<HealthCheck>,
}

/// Most problems named per check.
const MAX_REPORTED: usize = 10;

type Wide = BTreeMap<String, i128>;

fn add(sum: &mut Wide, r: &Named) {
    for (k, v) in r {
        *sum.entry(k.clone()).or_default() += i128::from(*v);
    }
}

/// Equal when every type has the same quantity, a missing type being zero.
fn same(a: &Named, b: &Wide) -> bool {
    let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    keys.into_iter()
        .all(|k| i128::from(a.get(k).copied().unwrap_or(0)) == b.get(k).copied().unwrap_or(0))
}

fn wide_text(w: &Wide) -> String {
    let parts: Vec<String> = w.iter().map(|(k, v)| format!("{k}:{v}")).collect();
    format!("[{}]", parts.join(" "))
}

fn named_text(n: &Named) -> String {
    super::handlers::res_str(Some(n))
}

struct Problems(Vec<String>);

impl Problems {
    fn push(&mut self, p: String) {
        self.0.push(p);
    }
    fn into_check(self, name: &'static str, description: &'static str) -> HealthCheck {
        let total = self.0.len();
        let mut shown: Vec<String> = self.0.into_iter().take(MAX_REPORTED).collect();
        if total > MAX_REPORTED {
            shown.push(format!("and {} more", total - MAX_REPORTED));
        }
        HealthCheck {
            name,
            succeeded: total == 0,
            description,
            diagnosis: shown.join("; "),
        }
    }
}

fn negative(n: &Named) -> bool {
    n.values().any(|v| *v < 0)
}

fn walk_queues<'a>(q: &'a QueueSnap, out: &mut Vec<&'a QueueSnap>) {
    out.push(q);
    for c in &q.children {
        walk_queues(c, out);
    }
}

fn check_partition(
    p: &PartitionSnap,
    nodes_ok: &mut Problems,
    queues_ok: &mut Problems,
    apps_ok: &mut Problems,
    negatives: &mut Problems,
    orphans_node: &mut Problems,
    orphans_app: &mut Problems,
) {
    let part = &p.name;
    let mut queues = Vec::new();
    walk_queues(&p.root, &mut queues);

    // Negative resources anywhere.
    for q in &queues {
        for (what, r) in [("allocated", &q.allocated), ("pending", &q.pending)] {
            if negative(r) {
                negatives.push(format!("{part}: queue {} {what} {}", q.path, named_text(r)));
            }
        }
    }
    for n in &p.nodes {
        for (what, r) in [
            ("capacity", &n.capacity),
            ("allocated", &n.allocated),
            ("occupied", &n.occupied),
        ] {
            if negative(r) {
                negatives.push(format!("{part}: node {} {what} {}", n.id, named_text(r)));
            }
        }
    }
    for a in &p.apps {
        for (what, r) in [("allocated", &a.allocated), ("pending", &a.pending)] {
            if negative(r) {
                negatives.push(format!(
                    "{part}: application {} {what} {}",
                    a.id,
                    named_text(r)
                ));
            }
        }
    }

    // Node usage equals the sum of its allocations; every listed
    // allocation exists and names this node.
    let mut listed_on_node: BTreeSet<&AllocUuid> = BTreeSet::new();
    for n in &p.nodes {
        let mut sum = Wide::new();
        for uuid in n.allocations.iter().map(|a| &a.uuid) {
            listed_on_node.insert(uuid);
            match p.allocations.get(uuid) {
                Some(a) if &*a.node == n.id.as_str() => {
                    add(&mut sum, &super::snapshot::named(&a.resource))
                }
                Some(a) => orphans_node.push(format!(
                    "{part}: node {} lists allocation {uuid}, which is on node {}",
                    n.id, a.node
                )),
                None => orphans_node.push(format!(
                    "{part}: node {} lists unknown allocation {uuid}",
                    n.id
                )),
            }
        }
        if !same(&n.allocated, &sum) {
            nodes_ok.push(format!(
                "{part}: node {} allocated {} but its allocations sum to {}",
                n.id,
                named_text(&n.allocated),
                wide_text(&sum)
            ));
        }
    }
    let node_ids: BTreeSet<&str> = p.nodes.iter().map(|n| n.id.as_str()).collect();
    for (uuid, a) in &p.allocations {
        if !node_ids.contains(&*a.node) {
            orphans_node.push(format!(
                "{part}: allocation {uuid} is on unknown node {}",
                a.node
            ));
        } else if !listed_on_node.contains(uuid) {
            orphans_node.push(format!(
                "{part}: allocation {uuid} is not listed on its node {}",
                a.node
            ));
        }
    }

    // Application usage equals the sum of its allocations; allocations
    // belong to a known application that lists them.
    let mut listed_on_app: BTreeSet<&AllocUuid> = BTreeSet::new();
    let mut leaf_sums: BTreeMap<&str, Wide> = BTreeMap::new();
    for a in &p.apps {
        let mut sum = Wide::new();
        for uuid in &a.allocations {
            listed_on_app.insert(uuid);
            match p.allocations.get(uuid) {
                Some(rec) if &**rec.app() == a.id.as_str() => {
                    add(&mut sum, &super::snapshot::named(&rec.resource))
                }
                _ => orphans_app.push(format!(
                    "{part}: application {} lists allocation {uuid}, which is not its own",
                    a.id
                )),
            }
        }
        if !same(&a.allocated, &sum) {
            apps_ok.push(format!(
                "{part}: application {} allocated {} but its allocations sum to {}",
                a.id,
                named_text(&a.allocated),
                wide_text(&sum)
            ));
        }
        add(leaf_sums.entry(a.queue.as_str()).or_default(), &a.allocated);
    }
    let app_ids: BTreeSet<&str> = p.apps.iter().map(|a| a.id.as_str()).collect();
    for (uuid, a) in &p.allocations {
        if !app_ids.contains(&**a.app()) {
            orphans_app.push(format!(
                "{part}: allocation {uuid} belongs to unknown application {}",
                a.app()
            ));
        } else if !listed_on_app.contains(uuid) {
            orphans_app.push(format!(
                "{part}: allocation {uuid} is not listed by its application {}",
                a.app()
            ));
        }
    }

    // Queue usage equals the sum of its children's (parents) or its
    // applications' (leaves).
    for q in &queues {
        let sum = if q.leaf && q.children.is_empty() {
            leaf_sums.get(q.path.as_str()).cloned().unwrap_or_default()
        } else {
            let mut s = Wide::new();
            for c in &q.children {
                add(&mut s, &c.allocated);
            }
            s
        };
        if !same(&q.allocated, &sum) {
            queues_ok.push(format!(
                "{part}: queue {} allocated {} but its {} sum to {}",
                q.path,
                named_text(&q.allocated),
                if q.leaf { "applications" } else { "children" },
                wide_text(&sum)
            ));
        }
    }
}

/// Runs every check over `snap`.
pub fn check(snap: &Snapshot) -> HealthInfo {
    let mut nodes_ok = Problems(Vec::new());
    let mut queues_ok = Problems(Vec::new());
    let mut apps_ok = Problems(Vec::new());
    let mut negatives = Problems(Vec::new());
    let mut orphans_node = Problems(Vec::new());
    let mut orphans_app = Problems(Vec::new());
    for p in &snap.partitions {
        check_partition(
            p,
            &mut nodes_ok,
            &mut queues_ok,
            &mut apps_ok,
            &mut negatives,
            &mut orphans_node,
            &mut orphans_app,
        );
    }
    let checks = vec![
        negatives.into_check(
            "Negative resources",
            "Check for negative resources in the partitions, queues, nodes and applications",
        ),
        nodes_ok.into_check(
            "Consistency of data: node usage",
            "Check that each node's allocated resource equals the sum of its allocations",
        ),
        queues_ok.into_check(
            "Consistency of data: queue usage",
            "Check that each queue's allocated resource equals the sum of its children's or applications'",
        ),
        apps_ok.into_check(
            "Consistency of data: application usage",
            "Check that each application's allocated resource equals the sum of its allocations",
        ),
        orphans_node.into_check(
            "Orphan allocations on node",
            "Check that every allocation is on a known node that lists it",
        ),
        orphans_app.into_check(
            "Orphan allocations on application",
            "Check that every allocation belongs to a known application that lists it",
        ),
    ];
    HealthInfo {
        healthy: checks.iter().all(|c| c.succeeded),
        checks,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::rest::snapshot::{AllocationSnap, AppSnap, NodeSnap};
    use crate::scheduler::outcome::NewAllocation;
    use crate::scheduler::resource::Resource;

    fn named(pairs: &[(&str, i64)]) -> Named {
        pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    }

    fn queue(path: &str, leaf: bool, alloc: Named, children: Vec<QueueSnap>) -> QueueSnap {
        QueueSnap {
            name: path.rsplit('.').next().unwrap().into(),
            path: path.into(),
            parent: None,
            leaf,
            managed: true,
            state: "Active".into(),
            guaranteed: None,
            max: None,
            allocated: alloc,
            pending: Named::new(),
            properties: Default::default(),
            template: None,
            children,
            ..Default::default()
        }
    }

    fn partition(node_alloc: i64, queue_alloc: i64, orphan: bool) -> PartitionSnap {
        let rec = Arc::new(NewAllocation {
            resource: Resource::from_pairs([("memory", 10)]).unwrap(),
            ..NewAllocation::for_test("k", "u1", "n1", if orphan { "gone" } else { "app" })
        });
        PartitionSnap {
            name: "default".into(),
            rm_id: "rm".into(),
            node_policy: "fair",
            weights: Default::default(),
            total: named(&[("memory", 100)]),
            root: queue(
                "root",
                false,
                named(&[("memory", 10)]),
                vec![queue(
                    "root.a",
                    true,
                    named(&[("memory", queue_alloc)]),
                    vec![],
                )],
            ),
            apps: vec![AppSnap {
                id: "app".into(),
                queue: "root.a".into(),
                state: "Running",
                submitted_ns: 0,
                allocated: named(&[("memory", 10)]),
                pending: Named::new(),
                pending_allocations: 0,
                allocations: if orphan { vec![] } else { vec!["u1".into()] },
                ..Default::default()
            }],
            finished: vec![],
            nodes: vec![NodeSnap {
                id: "n1".into(),
                attributes: Default::default(),
                capacity: named(&[("memory", 100)]),
                allocated: named(&[("memory", node_alloc)]),
                occupied: Named::new(),
                available: named(&[("memory", 100 - node_alloc)]),
                foreign: Default::default(),
                schedulable: true,
                allocations: vec![AllocationSnap {
                    uuid: "u1".into(),
                    allocation_key: "k".into(),
                    application_id: "app".into(),
                    resource: named(&[("memory", 10)]),
                    placeholder: false,
                    replacing: None,
                }],
            }],
            allocations: [("u1".into(), rec)].into_iter().collect(),
            ..Default::default()
        }
    }

    fn run(p: PartitionSnap) -> HealthInfo {
        check(&Snapshot {
            taken_ns: 0,
            started_ns: 0,
            rms: vec![],
            partitions: vec![p],
            ..Default::default()
        })
    }

    #[test]
    fn consistent_state_is_healthy() {
        let h = run(partition(10, 10, false));
        assert!(h.healthy, "{h:?}");
    }

    #[test]
    fn each_inconsistency_fails_its_check() {
        let failed = |h: &HealthInfo| -> Vec<&str> {
            h.checks
                .iter()
                .filter(|c| !c.succeeded)
                .map(|c| c.name)
                .collect()
        };
        let h = run(partition(20, 10, false));
        assert_eq!(failed(&h), ["Consistency of data: node usage"]);
        let h = run(partition(10, 7, false));
        assert_eq!(failed(&h), ["Consistency of data: queue usage"]);
        let h = run(partition(10, 10, true));
        assert!(
            failed(&h).contains(&"Orphan allocations on application"),
            "{h:?}"
        );
        let h = run(partition(-5, 10, false));
        assert!(failed(&h).contains(&"Negative resources"), "{h:?}");
    }
}
