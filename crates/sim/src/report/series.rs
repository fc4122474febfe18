//! The report's series, built once the run is over: the recorded samples
//! replayed into time buckets sized to the run (allocations and releases
//! per second, queue and node usage, application states), checked against
//! the final state dump and cut to sizes the page can draw.

use std::collections::{BTreeMap, HashMap};

use serde_json::Value;

use super::{AppTimeline, HeatRow, Inner, QueueSeries, Report};

/// Line charts get at most this many time buckets.
const MAX_BUCKETS: u64 = 150;
/// The heat map gets at most this many columns (time) ...
const MAX_HEAT_COLUMNS: usize = 60;
/// ... and rows (groups of nodes), so its size does not grow with the run.
const MAX_HEAT_ROWS: usize = 40;
/// Queues drawn; a larger tree is cut (the report says so).
const MAX_QUEUES: usize = 60;
/// Applications drawn one by one on the timeline; more are shown as counts only.
const MAX_APP_TIMELINES: usize = 40;

/// 1, 2 or 5 times a power of ten, in nanoseconds, giving at most `MAX_BUCKETS` buckets.
fn bucket_width(end_ns: u64) -> u64 {
    let mut scale = 1_000u64; // at least a microsecond
    loop {
        for m in [1, 2, 5] {
            let w = scale * m;
            if end_ns.div_ceil(w) <= MAX_BUCKETS {
                return w;
            }
        }
        scale *= 10;
    }
}

/// Resource name to quantity, as the state dump writes resources.
type Quantities = BTreeMap<String, i64>;

pub(super) fn resource_map(v: &Value) -> Quantities {
    v.as_object()
        .into_iter()
        .flatten()
        .filter_map(|(k, q)| q.as_i64().map(|q| (k.clone(), q)))
        .collect()
}

/// Lifecycle order for the state chart; unknown states go after these.
pub(super) const STATE_ORDER: [&str; 12] = [
    "New",
    "Accepted",
    "Starting",
    "Running",
    "Resuming",
    "Completing",
    "Completed",
    "Rejected",
    "Failing",
    "Failed",
    "Expired",
    "Killed",
];

fn state_rank(s: &str) -> usize {
    STATE_ORDER
        .iter()
        .position(|x| *x == s)
        .unwrap_or(STATE_ORDER.len())
}

/// The page's series from the samples `g`, the final state dump and the
/// run's end (`end` nanoseconds after the start).
pub(super) fn build(g: &Inner, dump: &Value, meta: Vec<(String, String)>, end: u64) -> Report {
    const NONE: &Value = &Value::Null;
    let partition = dump["partitions"]
        .as_array()
        .and_then(|ps| {
            ps.iter()
                .find(|p| p["name"] == "default")
                .or_else(|| ps.first())
        })
        .unwrap_or(NONE);

    let bucket_ns = bucket_width(end);
    let buckets = end.div_ceil(bucket_ns).max(1) as usize;
    let bucket_of = |t: u64| ((t / bucket_ns) as usize).min(buckets - 1);

    // Nodes in id order, with capacities from the dump; resource order:
    // memory and vcore first (what operators look at), then by name.
    // (id, capacity, allocated)
    let mut node_list: Vec<(String, Quantities, Quantities)> = partition["nodes"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|n| {
            (
                n["id"].as_str().unwrap_or("?").to_string(),
                resource_map(&n["capacity"]),
                resource_map(&n["allocated"]),
            )
        })
        .collect();
    node_list.sort_by(|a, b| a.0.cmp(&b.0));
    let mut resources: Vec<String> = node_list
        .iter()
        .flat_map(|n| n.1.keys().cloned())
        .chain(g.resources.names.iter().cloned())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    resources.sort_by_key(|r| (!matches!(r.as_str(), "memory" | "vcore"), r.clone()));
    let res_pos: Vec<usize> = g
        .resources
        .names
        .iter()
        .map(|r| resources.iter().position(|x| x == r).unwrap_or(0))
        .collect();
    let nres = resources.len().max(1);

    // Queues in tree order.
    let mut queues = Vec::new();
    fn walk(q: &Value, depth: usize, out: &mut Vec<QueueSeries>) {
        out.push(QueueSeries {
            path: q["path"].as_str().unwrap_or("?").to_string(),
            depth,
            leaf: q["leaf"].as_bool().unwrap_or(false),
            guaranteed: resource_map(&q["guaranteed"]),
            max: resource_map(&q["max"]),
            pending: resource_map(&q["pending"])
                .into_iter()
                .filter(|(_, v)| *v != 0)
                .collect(),
            usage: Vec::new(),
            applications: q["total_applications"].as_u64().unwrap_or(0),
        });
        for c in q["children"].as_array().into_iter().flatten() {
            walk(c, depth + 1, out);
        }
    }
    if !partition["root"].is_null() {
        walk(&partition["root"], 0, &mut queues);
    }
    let dump_queue_alloc: HashMap<String, BTreeMap<String, i64>> = {
        let mut m = HashMap::new();
        fn collect(q: &Value, m: &mut HashMap<String, BTreeMap<String, i64>>) {
            m.insert(
                q["path"].as_str().unwrap_or("?").to_string(),
                resource_map(&q["allocated"]),
            );
            for c in q["children"].as_array().into_iter().flatten() {
                collect(c, m);
            }
        }
        collect(&partition["root"], &mut m);
        m
    };
    // Queues the allocations named that the dump no longer has.
    for name in &g.queues.names {
        if !queues.iter().any(|q| &q.path == name) {
            queues.push(QueueSeries {
                path: name.clone(),
                depth: name.matches('.').count(),
                leaf: true,
                guaranteed: BTreeMap::new(),
                max: BTreeMap::new(),
                pending: BTreeMap::new(),
                usage: Vec::new(),
                applications: 0,
            });
        }
    }
    let queue_pos: HashMap<&str, usize> = queues
        .iter()
        .enumerate()
        .map(|(i, q)| (q.path.as_str(), i))
        .collect();
    // For each recorded queue name: it and its ancestors, as queue positions.
    let lineage: Vec<Vec<usize>> = g
        .queues
        .names
        .iter()
        .map(|name| {
            let mut v = Vec::new();
            let mut p = name.as_str();
            loop {
                if let Some(&i) = queue_pos.get(p) {
                    v.push(i);
                }
                match p.rfind('.') {
                    Some(k) => p = &p[..k],
                    None => break,
                }
            }
            v
        })
        .collect();

    // Node groups for the heat map.
    let node_pos: HashMap<&str, usize> = node_list
        .iter()
        .enumerate()
        .map(|(i, n)| (n.0.as_str(), i))
        .collect();
    let recorded_node: Vec<Option<usize>> = g
        .nodes
        .names
        .iter()
        .map(|n| node_pos.get(n.as_str()).copied())
        .collect();
    let group = node_list.len().div_ceil(MAX_HEAT_ROWS).max(1);
    let per_col = buckets.div_ceil(MAX_HEAT_COLUMNS).max(1);
    let mut heat: Vec<HeatRow> = node_list
        .chunks(group)
        .map(|c| HeatRow {
            first: c[0].0.clone(),
            last: c[c.len() - 1].0.clone(),
            nodes: c.len(),
            cells: Vec::new(),
        })
        .collect();
    let caps: Vec<Vec<i64>> = node_list
        .iter()
        .map(|n| {
            resources
                .iter()
                .map(|r| n.1.get(r).copied().unwrap_or(0))
                .collect()
        })
        .collect();

    // Replay the allocations bucket by bucket.
    let mut order: Vec<usize> = (0..g.allocs.len()).collect();
    order.sort_by_key(|&i| g.allocs[i].t_ns);
    let mut queue_used = vec![vec![0i64; nres]; queues.len()];
    let mut node_used = vec![vec![0i64; nres]; node_list.len()];
    let mut allocs_per_s = vec![0f64; buckets];
    let mut releases_per_s = vec![0f64; buckets];
    let mut rejected_per_s = vec![0f64; buckets];
    let per_s = 1e9 / bucket_ns as f64;
    for &t in &g.rejected_asks {
        rejected_per_s[bucket_of(t)] += per_s;
    }
    for q in &mut queues {
        q.usage = vec![Vec::with_capacity(buckets); nres];
    }
    let mut next = 0;
    for b in 0..buckets {
        let limit = (b as u64 + 1) * bucket_ns;
        while next < order.len() && (g.allocs[order[next]].t_ns < limit || b + 1 == buckets) {
            let e = &g.allocs[order[next]];
            next += 1;
            let sign = if e.release { -1 } else { 1 };
            if e.release {
                releases_per_s[b] += per_s;
            } else {
                allocs_per_s[b] += per_s;
            }
            for &(r, q) in &e.resource {
                let r = res_pos[r as usize];
                let d = q.saturating_mul(sign);
                for &qi in &lineage[e.queue as usize] {
                    queue_used[qi][r] = queue_used[qi][r].saturating_add(d);
                }
                if let Some(n) = recorded_node[e.node as usize] {
                    node_used[n][r] = node_used[n][r].saturating_add(d);
                }
            }
        }
        for (q, used) in queues.iter_mut().zip(&queue_used) {
            for (series, &u) in q.usage.iter_mut().zip(used) {
                series.push(u);
            }
        }
        if (b + 1) % per_col == 0 || b + 1 == buckets {
            for (row, nodes) in heat
                .iter_mut()
                .zip(node_used.chunks(group).zip(caps.chunks(group)))
            {
                let shares: Vec<f64> = nodes
                    .0
                    .iter()
                    .zip(nodes.1)
                    .map(|(used, cap)| {
                        used.iter()
                            .zip(cap)
                            .filter(|(_, &c)| c > 0)
                            .map(|(&u, &c)| u as f64 / c as f64)
                            .fold(0.0, f64::max)
                    })
                    .collect();
                let mean = shares.iter().sum::<f64>() / shares.len().max(1) as f64;
                let top = shares.iter().copied().fold(0.0, f64::max);
                row.cells.push((mean, top));
            }
        }
    }

    // Cross-check the replay against the scheduler's own view.
    let mut mismatches = Vec::new();
    for (q, used) in queues.iter().zip(&queue_used) {
        if let Some(d) = dump_queue_alloc.get(&q.path) {
            for (r, &u) in resources.iter().zip(used) {
                let want = d.get(r).copied().unwrap_or(0);
                if want != u {
                    mismatches.push(format!(
                        "queue {}: {r} recorded {u}, state dump {want}",
                        q.path
                    ));
                }
            }
        }
    }
    for (n, used) in node_list.iter().zip(&node_used) {
        for (r, &u) in resources.iter().zip(used) {
            let want = n.2.get(r).copied().unwrap_or(0);
            if want != u {
                mismatches.push(format!("node {}: {r} recorded {u}, state dump {want}", n.0));
            }
        }
    }
    if g.unknown_releases > 0 {
        mismatches.push(format!(
            "{} releases of allocations never reported as new",
            g.unknown_releases
        ));
    }
    let queues_left_out = queues.len().saturating_sub(MAX_QUEUES);
    queues.truncate(MAX_QUEUES);

    // Application states: per app, its state after each event.
    let mut app_events: Vec<&(u64, u32, String)> = g.app_events.iter().collect();
    app_events.sort_by_key(|e| e.0);
    let mut state_names: Vec<String> = app_events
        .iter()
        .map(|e| e.2.clone())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    state_names.sort_by_key(|s| (state_rank(s), s.clone()));
    let mut current: Vec<Option<usize>> = vec![None; g.apps.names.len()];
    let mut counts = vec![vec![0u32; buckets]; state_names.len()];
    let mut live = vec![0u32; state_names.len()];
    let mut next = 0;
    for b in 0..buckets {
        let limit = (b as u64 + 1) * bucket_ns;
        while next < app_events.len() && (app_events[next].0 < limit || b + 1 == buckets) {
            let (_, app, state) = app_events[next];
            next += 1;
            let s = state_names.iter().position(|x| x == state).unwrap_or(0);
            if let Some(old) = current[*app as usize] {
                live[old] -= 1;
            }
            live[s] += 1;
            current[*app as usize] = Some(s);
        }
        for (c, &n) in counts.iter_mut().zip(&live) {
            c[b] = n;
        }
    }
    let app_states: Vec<(String, Vec<u32>)> = state_names.into_iter().zip(counts).collect();

    let app_queue: HashMap<&str, &str> = partition["applications"]
        .as_array()
        .into_iter()
        .flatten()
        .chain(
            partition["completed_applications"]
                .as_array()
                .into_iter()
                .flatten(),
        )
        .filter_map(|a| Some((a["id"].as_str()?, a["queue"].as_str()?)))
        .collect();
    let mut app_timelines = Vec::new();
    if g.apps.names.len() <= MAX_APP_TIMELINES {
        for (i, id) in g.apps.names.iter().enumerate() {
            let mut segments: Vec<(u64, u64, String)> = Vec::new();
            for e in app_events.iter().filter(|e| e.1 as usize == i) {
                if let Some(last) = segments.last_mut() {
                    last.1 = e.0;
                }
                segments.push((e.0, end, e.2.clone()));
            }
            app_timelines.push(AppTimeline {
                id: id.clone(),
                queue: app_queue.get(id.as_str()).unwrap_or(&"").to_string(),
                segments,
            });
        }
        app_timelines.sort_by(|a, b| a.id.cmp(&b.id));
    }

    let mut marks = g.marks.clone();
    marks.sort_by_key(|m| m.0);
    Report {
        meta,
        recording_ns: g.busy_ns,
        end_ns: end,
        bucket_ns,
        buckets,
        marks,
        resources,
        allocs_per_s,
        releases_per_s,
        rejected_per_s,
        total_allocations: g.allocs.iter().filter(|a| !a.release).count(),
        queues,
        queues_left_out,
        heat_col_ns: bucket_ns * per_col as u64,
        heat,
        node_count: node_list.len(),
        app_states,
        app_count: g.apps.names.len(),
        app_timelines,
        mismatches,
        tenants: None,
        cap_violations: Vec::new(),
        preemptions: Vec::new(),
        guarantees: Vec::new(),
        waiting: Default::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_width_is_the_smallest_round_width_within_the_bound() {
        for end in [
            1,
            999,
            50_000_000,
            208_000_000,
            3_000_000_000,
            600_000_000_000,
        ] {
            let w = bucket_width(end);
            assert!(end.div_ceil(w) <= MAX_BUCKETS, "{end} -> {w}");
            let digits = w.to_string();
            assert!(
                matches!(&digits[..1], "1" | "2" | "5") && digits[1..].chars().all(|c| c == '0'),
                "{w} is not 1, 2 or 5 times a power of ten"
            );
            // The next smaller round width would give too many buckets.
            let smaller = if digits.starts_with('5') {
                w * 2 / 5
            } else {
                w / 2
            };
            assert!(
                w == 1_000 || end.div_ceil(smaller) > MAX_BUCKETS,
                "{end} -> {w}"
            );
        }
    }
}
