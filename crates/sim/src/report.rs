//! Samples for the `--html` report.
//!
//! The recorder listens to what the simulated RM is told (new and released
//! allocations, application state changes, rejections) and time-stamps each
//! message as it arrives. That costs one uncontended lock and a few pushes
//! per callback on the dispatcher thread and nothing on the core thread,
//! where a periodic `sicore_state_dump` would serialise every node and
//! allocation while scheduling waits. Time series are built afterwards, in
//! buckets sized to the run, so a 50 ms run and a 5 minute run both get a
//! readable resolution. One state dump at the end supplies what callbacks do
//! not carry (queue tree, guaranteed and max, node capacities) and is used
//! to cross-check the recorded usage.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::time::Instant;

use serde_json::Value;
use sicore::proto::si::v1 as si;

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

/// The hash map of the recording path: foldhash, as the scheduler's hot
/// maps (std's SipHash would be most of the recorder's cost).
type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

/// Interned names, so events hold small indices.
#[derive(Default)]
struct Names {
    index: FastMap<String, u32>,
    names: Vec<String>,
}

impl Names {
    fn id(&mut self, name: &str) -> u32 {
        if let Some(&i) = self.index.get(name) {
            return i;
        }
        let i = self.names.len() as u32;
        self.names.push(name.to_string());
        self.index.insert(name.to_string(), i);
        i
    }
}

struct AllocEvent {
    t_ns: u64,
    node: u32,
    queue: u32,
    resource: Vec<(u32, i64)>,
    release: bool,
}

#[derive(Default)]
struct Inner {
    nodes: Names,
    queues: Names,
    resources: Names,
    apps: Names,
    allocs: Vec<AllocEvent>,
    /// Allocations held now, by UUID: index into `allocs`, for releases.
    live: FastMap<String, usize>,
    /// Releases of allocations the recorder never saw allocated.
    unknown_releases: u64,
    app_events: Vec<(u64, u32, String)>,
    rejected_asks: Vec<u64>,
    marks: Vec<(u64, String)>,
    /// Time spent recording inside callbacks: the report's own cost.
    busy_ns: u64,
}

/// Collects time-stamped samples while the simulation runs.
pub struct Recorder {
    start: Instant,
    inner: Mutex<Inner>,
}

impl Recorder {
    /// `expected` allocations are reserved room for, so the recording
    /// path does not grow (and copy) its tables while the run is measured.
    pub fn new(expected: usize) -> Self {
        let mut inner = Inner::default();
        inner.allocs.reserve(expected);
        inner.live.reserve(expected);
        Recorder {
            start: Instant::now(),
            inner: Mutex::new(inner),
        }
    }

    fn now(&self) -> u64 {
        self.start.elapsed().as_nanos() as u64
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A panic while recording loses at most that sample; keep going.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A milestone of the run (drawn as a vertical line).
    pub fn mark(&self, label: &str) {
        let t = self.now();
        self.lock().marks.push((t, label.to_string()));
    }

    pub fn on_allocation(&self, m: &si::AllocationResponse) {
        let t = self.now();
        let mut g = self.lock();
        let g = &mut *g;
        Self::record_allocations(g, t, m);
        g.busy_ns += self.now().saturating_sub(t);
    }

    fn record_allocations(g: &mut Inner, t: u64, m: &si::AllocationResponse) {
        for a in &m.new {
            let event = AllocEvent {
                t_ns: t,
                node: g.nodes.id(&a.node_id),
                queue: g.queues.id(&a.queue_name),
                resource: a
                    .resource_per_alloc
                    .iter()
                    .flat_map(|r| r.resources.iter())
                    .map(|(k, q)| (g.resources.id(k), q.value))
                    .collect(),
                release: false,
            };
            g.live.insert(a.uuid.clone(), g.allocs.len());
            g.allocs.push(event);
        }
        for r in &m.released {
            match g.live.remove(&r.uuid) {
                Some(i) => {
                    let a = &g.allocs[i];
                    let event = AllocEvent {
                        t_ns: t,
                        node: a.node,
                        queue: a.queue,
                        resource: a.resource.clone(),
                        release: true,
                    };
                    g.allocs.push(event);
                }
                None => g.unknown_releases += 1,
            }
        }
        g.rejected_asks
            .extend(std::iter::repeat_n(t, m.rejected.len()));
    }

    pub fn on_application(&self, m: &si::ApplicationResponse) {
        let t = self.now();
        let mut g = self.lock();
        let g = &mut *g;
        Self::record_applications(g, t, m);
        g.busy_ns += self.now().saturating_sub(t);
    }

    fn record_applications(g: &mut Inner, t: u64, m: &si::ApplicationResponse) {
        for a in &m.accepted {
            let id = g.apps.id(&a.application_id);
            g.app_events.push((t, id, "New".into()));
        }
        for a in &m.rejected {
            let id = g.apps.id(&a.application_id);
            g.app_events.push((t, id, "Rejected".into()));
        }
        for a in &m.updated {
            let id = g.apps.id(&a.application_id);
            g.app_events.push((t, id, a.state.clone()));
        }
    }

    /// Builds the report's series from the samples and the final state dump.
    /// The timeline ends with the last sample or milestone, so the time
    /// taken afterwards (the final state dump of a large run can take
    /// seconds) does not stretch it.
    pub fn finish(&self, dump: &Value, meta: Vec<(String, String)>) -> Report {
        let g = self.lock();
        let end = g
            .allocs
            .iter()
            .map(|a| a.t_ns)
            .chain(g.app_events.iter().map(|e| e.0))
            .chain(g.rejected_asks.iter().copied())
            .chain(g.marks.iter().map(|m| m.0))
            .max()
            .unwrap_or(0)
            .max(1);
        build(&g, dump, meta, end)
    }
}

/// One queue of the tree with its usage per resource over time.
pub struct QueueSeries {
    pub path: String,
    pub depth: usize,
    pub leaf: bool,
    pub guaranteed: BTreeMap<String, i64>,
    pub max: BTreeMap<String, i64>,
    /// Asked for and not allocated when the run ended (from the state dump).
    pub pending: BTreeMap<String, i64>,
    /// Per resource (same order as `Report::resources`): usage at the end of each bucket.
    pub usage: Vec<Vec<i64>>,
    pub applications: u64,
}

/// One row of the heat map: a group of consecutive nodes.
pub struct HeatRow {
    pub first: String,
    pub last: String,
    pub nodes: usize,
    /// Per column: (mean, highest) dominant share of the group's nodes, 0..=1.
    pub cells: Vec<(f64, f64)>,
}

pub struct AppTimeline {
    pub id: String,
    pub queue: String,
    /// (from_ns, to_ns, state)
    pub segments: Vec<(u64, u64, String)>,
}

/// Everything the HTML page shows, already reduced to bounded series.
pub struct Report {
    pub meta: Vec<(String, String)>,
    /// Nanoseconds the callbacks spent recording.
    pub recording_ns: u64,
    pub end_ns: u64,
    pub bucket_ns: u64,
    pub buckets: usize,
    pub marks: Vec<(u64, String)>,
    pub resources: Vec<String>,
    pub allocs_per_s: Vec<f64>,
    pub releases_per_s: Vec<f64>,
    pub rejected_per_s: Vec<f64>,
    pub total_allocations: usize,
    pub queues: Vec<QueueSeries>,
    pub queues_left_out: usize,
    pub heat_col_ns: u64,
    pub heat: Vec<HeatRow>,
    pub node_count: usize,
    /// Per state (lifecycle order): applications in it at the end of each bucket.
    pub app_states: Vec<(String, Vec<u32>)>,
    pub app_count: usize,
    pub app_timelines: Vec<AppTimeline>,
    /// Differences between the recorded usage and the final state dump.
    pub mismatches: Vec<String>,
}

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

fn resource_map(v: &Value) -> Quantities {
    v.as_object()
        .into_iter()
        .flatten()
        .filter_map(|(k, q)| q.as_i64().map(|q| (k.clone(), q)))
        .collect()
}

/// Lifecycle order for the state chart; unknown states go after these.
const STATE_ORDER: [&str; 12] = [
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

fn build(g: &Inner, dump: &Value, meta: Vec<(String, String)>, end: u64) -> Report {
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

    fn alloc(uuid: &str, node: &str, queue: &str, memory: i64, vcore: i64) -> si::Allocation {
        si::Allocation {
            uuid: uuid.into(),
            node_id: node.into(),
            queue_name: queue.into(),
            resource_per_alloc: Some(si::Resource {
                resources: [("memory", memory), ("vcore", vcore)]
                    .into_iter()
                    .map(|(k, v)| (k.into(), si::Quantity { value: v }))
                    .collect(),
            }),
            ..Default::default()
        }
    }

    fn dump(x_memory: i64) -> Value {
        serde_json::json!({"partitions": [{
            "name": "default",
            "root": {"path": "root", "leaf": false, "guaranteed": null, "max": {"memory": 200, "vcore": 20},
                "allocated": {"memory": 40, "vcore": 4}, "pending": {}, "total_applications": 0,
                "children": [
                    {"path": "root.x", "leaf": true, "guaranteed": {"memory": 20}, "max": {"memory": 50},
                     "allocated": {"memory": x_memory, "vcore": 3}, "pending": {"memory": 5},
                     "total_applications": 1, "children": []},
                    {"path": "root.y", "leaf": true, "guaranteed": null, "max": null,
                     "allocated": {"memory": 10, "vcore": 1}, "pending": {}, "total_applications": 1,
                     "children": []}]},
            "nodes": [
                {"id": "node-b", "capacity": {"memory": 100, "vcore": 10}, "allocated": {"memory": 10, "vcore": 1}},
                {"id": "node-a", "capacity": {"memory": 100, "vcore": 10}, "allocated": {"memory": 30, "vcore": 3}}],
            "applications": [{"id": "app-1", "queue": "root.x"}, {"id": "app-2", "queue": "root.y"}]
        }]})
    }

    /// What an RM would be told: two applications, one running; four
    /// allocations and the release of one.
    fn recorded() -> Recorder {
        let r = Recorder::new(4);
        r.mark("start");
        r.on_application(&si::ApplicationResponse {
            accepted: ["app-1", "app-2"]
                .into_iter()
                .map(|id| si::AcceptedApplication {
                    application_id: id.into(),
                })
                .collect(),
            ..Default::default()
        });
        for state in ["Accepted", "Starting", "Running"] {
            r.on_application(&si::ApplicationResponse {
                updated: vec![si::UpdatedApplication {
                    application_id: "app-1".into(),
                    state: state.into(),
                    ..Default::default()
                }],
                ..Default::default()
            });
        }
        r.on_allocation(&si::AllocationResponse {
            new: vec![
                alloc("u1", "node-a", "root.x", 20, 2),
                alloc("u2", "node-a", "root.x", 15, 1),
                alloc("u3", "node-b", "root.y", 10, 1),
                alloc("u4", "node-a", "root.x", 10, 1),
            ],
            ..Default::default()
        });
        r.on_allocation(&si::AllocationResponse {
            released: vec![si::AllocationRelease {
                uuid: "u2".into(),
                ..Default::default()
            }],
            ..Default::default()
        });
        r
    }

    #[test]
    fn usage_is_replayed_per_queue_and_node() {
        let rep = recorded().finish(&dump(30), vec![]);
        assert_eq!(rep.mismatches, Vec::<String>::new());
        assert_eq!(rep.resources, ["memory", "vcore"]);
        assert_eq!(rep.total_allocations, 4);
        let seconds = rep.bucket_ns as f64 / 1e9;
        let made: f64 = rep.allocs_per_s.iter().map(|r| r * seconds).sum();
        let released: f64 = rep.releases_per_s.iter().map(|r| r * seconds).sum();
        assert_eq!((made.round(), released.round()), (4.0, 1.0));

        let paths: Vec<&str> = rep.queues.iter().map(|q| q.path.as_str()).collect();
        assert_eq!(paths, ["root", "root.x", "root.y"]);
        let end = |q: usize, r: usize| *rep.queues[q].usage[r].last().unwrap();
        assert_eq!((end(0, 0), end(0, 1)), (40, 4), "root counts its children");
        assert_eq!((end(1, 0), end(1, 1)), (30, 3));
        assert_eq!((end(2, 0), end(2, 1)), (10, 1));
        assert_eq!(rep.queues[1].guaranteed["memory"], 20);
        assert_eq!(rep.queues[1].pending["memory"], 5);
        assert!(rep.queues[2].max.is_empty());

        // Nodes sorted by id; node-a ends at 30% (memory and vcore alike).
        assert_eq!(rep.heat.len(), 2);
        assert_eq!(rep.heat[0].first, "node-a");
        let (mean, top) = *rep.heat[0].cells.last().unwrap();
        assert!((mean - 0.3).abs() < 1e-9 && (top - 0.3).abs() < 1e-9);

        let states: Vec<&str> = rep.app_states.iter().map(|(s, _)| s.as_str()).collect();
        assert_eq!(
            states,
            ["New", "Accepted", "Starting", "Running"],
            "lifecycle order"
        );
        let at_end: Vec<u32> = rep
            .app_states
            .iter()
            .map(|(_, c)| *c.last().unwrap())
            .collect();
        assert_eq!(at_end, [1, 0, 0, 1]);
        let app1 = &rep.app_timelines[0];
        assert_eq!((app1.id.as_str(), app1.queue.as_str()), ("app-1", "root.x"));
        let seq: Vec<&str> = app1.segments.iter().map(|s| s.2.as_str()).collect();
        assert_eq!(seq, ["New", "Accepted", "Starting", "Running"]);
        assert!(app1.segments.windows(2).all(|w| w[0].1 == w[1].0));
    }

    #[test]
    fn a_difference_from_the_state_dump_is_reported() {
        let rep = recorded().finish(&dump(45), vec![]);
        assert_eq!(
            rep.mismatches,
            ["queue root.x: memory recorded 30, state dump 45"]
        );
        let page = crate::html::render(&rep);
        assert!(page.contains(r#"id="consistency" class="bad""#));
        assert!(page.contains("queue root.x: memory recorded 30, state dump 45"));
    }

    #[test]
    fn page_names_every_queue_and_has_every_section() {
        let page = crate::html::render(&recorded().finish(&dump(30), vec![]));
        for needle in [
            "root.<wbr>x",
            "root.<wbr>y",
            r#"id="consistency" class="ok""#,
            r#"id="throughput""#,
            r#"id="queues""#,
            r#"id="nodes""#,
            r#"id="applications""#,
            r#"id="timelines""#,
            "releases/s",
        ] {
            assert!(page.contains(needle), "{needle}");
        }
        assert!(!page.contains("<script"), "the report needs no script");
        assert!(
            !page.contains("http://") && !page.contains("https://"),
            "nothing fetched"
        );
    }
}

#[cfg(test)]
mod cost {
    use super::*;

    /// CPU time of this thread (Linux), which a busy machine does not inflate.
    fn thread_cpu_ns() -> u64 {
        std::fs::read_to_string("/proc/thread-self/schedstat")
            .ok()
            .and_then(|s| s.split_whitespace().next()?.parse().ok())
            .unwrap_or(0)
    }

    /// Prints the recorder's cost per allocation (run by hand:
    /// `cargo test --release --bin sicore-sim -- --ignored --nocapture`).
    #[test]
    #[ignore]
    fn recording_cost() {
        let n = 100_000;
        let batches: Vec<si::AllocationResponse> = (0..n / 1000)
            .map(|b| si::AllocationResponse {
                new: (0..1000)
                    .map(|i| si::Allocation {
                        uuid: uuid::Uuid::new_v4().to_string(),
                        node_id: format!("node-{:05}", (b * 1000 + i) % 5000),
                        queue_name: "root.team-a".into(),
                        resource_per_alloc: Some(si::Resource {
                            resources: [("memory", 1024), ("vcore", 1)]
                                .into_iter()
                                .map(|(k, v)| (k.into(), si::Quantity { value: v }))
                                .collect(),
                        }),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            })
            .collect();
        // The second round reuses memory the first freed: the difference is
        // the cost of fresh pages from the kernel.
        for round in ["fresh memory", "reused memory"] {
            let r = Recorder::new(n);
            let (wall, cpu) = (Instant::now(), thread_cpu_ns());
            for b in &batches {
                r.on_allocation(b);
            }
            let cpu = thread_cpu_ns() - cpu;
            println!(
                "{round}: {n} allocations recorded in {:?} wall-clock, {:.0} ns of CPU each",
                wall.elapsed(),
                cpu as f64 / n as f64
            );
        }
    }
}
