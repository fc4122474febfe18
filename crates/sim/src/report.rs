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

mod series;
mod waiting;
mod workloads;
use series::build;
pub use waiting::{WaitingSeries, QUIET};
pub use workloads::{GuaranteeView, PreemptionMark, TenantInput, TenantSeries};

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
    /// Index in `owners` (0 unless detailed).
    app: u32,
    resource: Vec<(u32, i64)>,
    release: bool,
}

#[derive(Default)]
struct Inner {
    nodes: Names,
    queues: Names,
    resources: Names,
    apps: Names,
    /// Applications named by allocations (apart from `apps`, which are
    /// those with state changes, the timelines' rows).
    owners: Names,
    allocs: Vec<AllocEvent>,
    /// Allocations held now, by UUID: index into `allocs`, for releases.
    live: FastMap<String, usize>,
    /// Releases of allocations the recorder never saw allocated.
    unknown_releases: u64,
    /// Allocations the RM stopped itself and freed when it decided to
    /// (see [`Recorder::on_rm_release`]), whose echo is still to come.
    rm_freed: std::collections::HashSet<String>,
    app_events: Vec<(u64, u32, String)>,
    rejected_asks: Vec<u64>,
    marks: Vec<(u64, String)>,
    /// Victims the core released with `PREEMPTED_BY_SCHEDULER`. A victim
    /// keeps its resources until its release is confirmed (v0.12: the
    /// core's `STOPPED_BY_RM` echo; v1: the RM's own confirmation).
    preemptions: Vec<PreemptEvent>,
    /// Allocation key -> queue, and each allocation's application in
    /// `owners`, kept only for the policy workloads ([`Recorder::detailed`]):
    /// the per-tenant replay needs the application, the preemption view
    /// places a preemptor named by its ask key. The default workload pays
    /// neither lookup.
    keys: Option<FastMap<String, u32>>,
    /// Time spent recording inside callbacks: the report's own cost.
    busy_ns: u64,
    /// The waiting asks' causes, sampled from state dumps.
    waiting: waiting::Samples,
}

struct PreemptEvent {
    t_ns: u64,
    victim: String,
    app: String,
    alloc: usize,
    /// The ask the victim made room for, from the release's message.
    preemptor: String,
    freed_ns: Option<u64>,
}

/// The message of a victim's release names its preemptor after this.
const PREEMPTOR_PREFIX: &str = "to run ask: ";

/// A quota-change victim's release names its queue after this.
const QUOTA_PREFIX: &str = "enforce new max quota for queue : ";

/// What a victim made room for, from its release's message: an ask's key,
/// or a queue's lowered max (quota-change preemption).
fn preemptor_of(message: &str) -> String {
    if let Some((_, k)) = message.split_once(PREEMPTOR_PREFIX) {
        k.to_string()
    } else if let Some((_, q)) = message.split_once(QUOTA_PREFIX) {
        format!("the max of {q}")
    } else {
        String::new()
    }
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
        Self::with_details(expected, false)
    }

    /// As [`Recorder::new`], also remembering each allocation's
    /// application and key (the policy workloads).
    pub fn detailed(expected: usize) -> Self {
        Self::with_details(expected, true)
    }

    fn with_details(expected: usize, detailed: bool) -> Self {
        let mut inner = Inner::default();
        if detailed {
            inner.keys = Some(FastMap::default());
        }
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
        // Releases first: a message that frees and allocates is replayed
        // without a transient overshoot the core never had.
        for r in &m.released {
            if r.termination_type == si::TerminationType::PreemptedByScheduler as i32 {
                match g.live.get(&r.uuid) {
                    // The victim holds its resources until confirmed.
                    Some(&i) if !g.preemptions.iter().any(|p| p.victim == r.uuid) => {
                        g.preemptions.push(PreemptEvent {
                            t_ns: t,
                            victim: r.uuid.clone(),
                            app: r.application_id.clone(),
                            alloc: i,
                            preemptor: preemptor_of(&r.message),
                            freed_ns: None,
                        });
                        continue;
                    }
                    // Told twice: still the one victim.
                    Some(_) => continue,
                    None => {
                        g.unknown_releases += 1;
                        continue;
                    }
                }
            }
            if g.rm_freed.remove(&r.uuid) {
                continue; // freed when the RM stopped it
            }
            Self::free(g, t, &r.uuid);
        }
        for a in &m.new {
            let app = match g.keys {
                Some(_) => g.owners.id(&a.application_id),
                None => 0,
            };
            let event = AllocEvent {
                t_ns: t,
                node: g.nodes.id(&a.node_id),
                queue: g.queues.id(&a.queue_name),
                app,
                resource: a
                    .resource_per_alloc
                    .iter()
                    .flat_map(|r| r.resources.iter())
                    .map(|(k, q)| (g.resources.id(k), q.value))
                    .collect(),
                release: false,
            };
            if let Some(keys) = &mut g.keys {
                keys.insert(a.allocation_key.clone(), event.queue);
            }
            g.live.insert(a.uuid.clone(), g.allocs.len());
            g.allocs.push(event);
        }
        g.rejected_asks
            .extend(std::iter::repeat_n(t, m.rejected.len()));
    }

    /// The allocation `uuid` is gone at `t`.
    fn free(g: &mut Inner, t: u64, uuid: &str) {
        match g.live.remove(uuid) {
            Some(i) => {
                let a = &g.allocs[i];
                let event = AllocEvent {
                    t_ns: t,
                    node: a.node,
                    queue: a.queue,
                    app: a.app,
                    resource: a.resource.clone(),
                    release: true,
                };
                g.allocs.push(event);
                if let Some(p) = g.preemptions.iter_mut().rev().find(|p| p.victim == uuid) {
                    p.freed_ns.get_or_insert(t);
                }
            }
            None => g.unknown_releases += 1,
        }
    }

    /// The RM stops allocation `uuid` itself: from its side the resources
    /// are free as it decides, before its request reaches the core. The
    /// core's echo may come after the `new` allocations that the freed room
    /// made possible (in SI v1.x with Predicates, `new` is delivered at the
    /// pass's barrier on the core thread, the echo by the dispatcher);
    /// replaying the echo as the moment of release would show an overshoot
    /// neither side had.
    pub fn on_rm_release(&self, uuid: &str) {
        let t = self.now();
        let mut g = self.lock();
        let g = &mut *g;
        if g.live.contains_key(uuid) {
            Self::free(g, t, uuid);
            g.rm_freed.insert(uuid.to_string());
        }
        g.busy_ns += self.now().saturating_sub(t);
    }

    /// The RM confirmed a victim's release (SI v1.x, where the core sends
    /// no echo): its resources are free from now.
    pub fn on_confirmed(&self, uuid: &str) {
        let t = self.now();
        let mut g = self.lock();
        let g = &mut *g;
        Self::free(g, t, uuid);
        g.busy_ns += self.now().saturating_sub(t);
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
        self.finish_with(dump, meta, None)
    }

    /// As [`Recorder::finish`], plus the per-tenant usage against caps
    /// when `tenants` is given, and the preemptions and guaranteed queues
    /// whenever a victim was released.
    pub fn finish_with(
        &self,
        dump: &Value,
        meta: Vec<(String, String)>,
        tenants: Option<&TenantInput>,
    ) -> Report {
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
        let mut report = build(&g, dump, meta, end);
        if let Some(t) = tenants {
            workloads::tenants(&g, t, &mut report);
        }
        workloads::preemptions(&g, dump, &mut report);
        report.waiting = waiting::series(&g.waiting, dump, end, report.bucket_ns, report.buckets);
        report
    }

    /// Samples why asks wait from a state dump `dump` gives, when a sample
    /// is due; `busy` while allocations are moving (see report/waiting.rs
    /// for the spacing). The dump is taken without the recorder's lock, so
    /// callbacks are not held up by it.
    pub fn sample_waiting(&self, busy: bool, dump: impl FnOnce() -> Result<Value, String>) {
        if !self.lock().waiting.due(Instant::now(), busy) {
            return;
        }
        let started = Instant::now();
        let Ok(d) = dump() else {
            return;
        };
        let took = started.elapsed();
        let t = self.now();
        self.lock().waiting.add(t, Instant::now(), took, &d);
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
    /// `--workload tenants`: each capped (tracker, level), in name order.
    pub tenants: Option<Vec<TenantSeries>>,
    /// Times a tenant's recorded usage went over a cap.
    pub cap_violations: Vec<String>,
    /// Each victim the core released with `PREEMPTED_BY_SCHEDULER`.
    pub preemptions: Vec<PreemptionMark>,
    /// The preemptors' queues, against their guarantees.
    pub guarantees: Vec<GuaranteeView>,
    /// Waiting asks per cause over time.
    pub waiting: WaitingSeries,
}
#[cfg(test)]
mod tests {
    use super::*;

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
            r#"id="waiting-none""#,
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

    #[test]
    fn waiting_asks_are_charted_per_cause() {
        let rec = recorded();
        let waits = serde_json::json!({"partitions": [{"name": "default", "applications": [
            {"id": "a", "pending_asks": [
                {"allocation_key": "k1", "pending_reason": {"cause": "queueHeadroom"}},
                {"allocation_key": "k2", "pending_reason": {"cause": "queueHeadroom"}},
                {"allocation_key": "k3"}]}]}]});
        rec.sample_waiting(false, || Ok(waits));
        // A sample in the timeline's last bucket is overruled there by the
        // final dump (no ask waiting), and the chart would be empty. The
        // buckets divide the time up to the last milestone: marked at once,
        // the sample's few microseconds before it were a bucket or less on
        // a fast run (CI failed so), so the milestone comes well after it.
        std::thread::sleep(std::time::Duration::from_millis(20));
        rec.mark("after the sample");
        let page = crate::html::render(&rec.finish(&dump(30), vec![]));
        assert!(page.contains(r#"aria-label="waiting asks by cause over time""#));
        assert!(page.contains(r#"data-cause="queueHeadroom" data-peak="2""#));
        assert!(page.contains(r#"data-cause="notTried" data-peak="1""#));
        assert!(page.contains("From 2 state dumps"));
    }

    /// The first sample at 60% of the run: the bands are all in the
    /// chart's right half, none drawn from 0 at the start.
    #[test]
    fn the_waiting_chart_is_empty_before_its_first_sample() {
        let mut rep = recorded().finish(&dump(30), vec![]);
        (rep.end_ns, rep.bucket_ns, rep.buckets) = (1000, 100, 10);
        let waits = serde_json::json!({"partitions": [{"name": "default", "applications": [
            {"id": "a", "pending_asks": [
                {"allocation_key": "k1", "pending_reason": {"cause": "queueHeadroom"}},
                {"allocation_key": "k2", "pending_reason": {"cause": "nodes"}}]}]}]});
        let mut s = waiting::Samples::default();
        s.add(600, Instant::now(), std::time::Duration::ZERO, &waits);
        rep.waiting = waiting::series(&s, &waits, 1000, 100, 10);
        let page = crate::html::render(&rep);
        let label = r#"aria-label="waiting asks by cause over time""#;
        let at = page.find(label).expect("the chart");
        let svg = &page[page[..at].rfind("<svg").unwrap()..];
        let attr = |text: &str, name: &str| -> String {
            let from = text.find(&format!(r#"{name}=""#)).unwrap() + name.len() + 2;
            text[from..from + text[from..].find('"').unwrap()].to_string()
        };
        let width: f64 = attr(svg, "width").parse().unwrap();
        let svg = &svg[..svg.find("</svg>").unwrap()];
        let bands: Vec<&str> = svg.split(r#"<polygon class="cause""#).skip(1).collect();
        assert_eq!(bands.len(), 2, "{svg}");
        for band in bands {
            let points = attr(band, "points");
            for xy in points.split(' ') {
                let x: f64 = xy.split(',').next().unwrap().parse().unwrap();
                assert!(x > width / 2.0, "drawn before the first sample: {points}");
            }
        }
        assert!(svg.contains(r#"<line class="first-sample""#), "{svg}");
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
