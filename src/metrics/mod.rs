//! Prometheus metrics with the reference's names, kinds, labels and buckets
//! (spec 15.2), kept with the `prometheus-client` data model and encoder.
//!
//! Counters that follow requests and decisions are atomics the core thread
//! bumps once per flushed batch (never per allocation inside the pass).
//! Gauges that describe state (nodes, application states, node usage
//! buckets, per-queue usage, event counters) are refreshed by the core
//! thread once a second, as the reference refreshes its node usage; the
//! same tick records the one-a-minute history samples of
//! `/ws/v1/history/*`. Reading the metrics never waits for the core.

pub mod gauges;
mod labels;
mod queues;

pub use labels::{GroupLabel, QueueKey, UserLabel};
use labels::{PartitionLabel, PreemptionLabel};
use queues::QueueGauges;

use std::collections::{HashMap, VecDeque};
use std::time::Duration;

use parking_lot::Mutex;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use crate::events::EventStats;
use crate::scheduler::outcome::OutMsg;

/// 24 hours of samples.
pub const HISTORY_LEN: usize = 1440;

/// Label set of one `key="value"` pair.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StateLabel {
    state: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResultLabel {
    result: String,
}

/// The `result` label values of `preemption_attempt_total`, in the order
/// of [`PreemptionSample::results`].
pub const PREEMPTION_RESULTS: [&str; 5] = [
    "success",
    "queue_guarantee_check_failed",
    "no_candidate_node",
    "rm_refused",
    "short_of_resources",
];

/// One partition's preemption counters, as the core keeps them (monotone
/// per instance).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PreemptionSample {
    /// Partition name.
    pub partition: String,
    /// The owning RM, when partitions of several RMs exist.
    pub rm: Option<String>,
    /// Which partition of that name (a partition made anew starts from
    /// zero under a new instance).
    pub instance: u64,
    /// Attempts by outcome, in the order of [`PREEMPTION_RESULTS`].
    pub results: [u64; 5],
    /// Victims released.
    pub victims: u64,
    /// Requests stopped by the per-leaf cap of 10 attempts per pass.
    pub attempts_exhausted: u64,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RangeLabel {
    range: String,
}

/// The reference's node usage bucket labels, lowest first.
pub const USAGE_RANGES: [&str; 10] = [
    "[0,10%]",
    "(10%, 20%]",
    "(20%,30%]",
    "(30%,40%]",
    "(40%,50%]",
    "(50%,60%]",
    "(60%,70%]",
    "(70%,80%]",
    "(80%,90%]",
    "(90%,100%]",
];

/// The usage bucket (0..=9) of `used` out of `total` (`total > 0`): zero
/// and up to 10 % go to the first, as in the reference.
pub fn usage_bucket(used: i64, total: i64) -> usize {
    if total <= 0 || used <= 0 {
        return 0;
    }
    // ceil(used * 10 / total) in integers: exact, and no libm (`ceil`) for
    // static links to resolve.
    let (used, total) = (i128::from(used), i128::from(total));
    let tenths = (used * 10 + total - 1) / total;
    (tenths - 1).clamp(0, 9) as usize
}

/// Replaces characters Prometheus does not allow in a metric name.
pub fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// One history sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HistorySample {
    /// Unix time, ns.
    pub timestamp_ns: i64,
    /// Applications known to the scheduler (active).
    pub applications: u64,
    /// Allocations held.
    pub containers: u64,
}

/// Gauge values the core computes on its refresh tick.
#[derive(Debug, Default)]
pub struct StateSample {
    /// Registered nodes.
    pub nodes: i64,
    /// Applications in `Running`.
    pub running_apps: i64,
    /// Applications that completed (kept in the history).
    pub completed_apps: i64,
    /// Per resource type: node counts in the ten usage buckets.
    pub node_usage: Vec<(String, [i64; 10])>,
    /// Per queue: allocated quantity per resource type.
    pub queue_usage: Vec<(QueueKey, Vec<(String, i64)>)>,
    /// Per queue: pending quantity per resource type.
    pub queue_pending: Vec<(QueueKey, Vec<(String, i64)>)>,
    /// Event system counters.
    pub events: EventStats,
    /// User usage per level (only partitions with limits track it live).
    pub user_usage: Vec<(UserLabel, i64)>,
    /// Group usage per level.
    pub group_usage: Vec<(GroupLabel, i64)>,
    /// Per partition: the preemption counters.
    pub preemption: Vec<PreemptionSample>,
    /// Per queue path (leaves and parents) with victims in flight or a
    /// gauge already shown: resources of the victims released and not yet
    /// confirmed, per type.
    pub queue_preempting: Vec<(QueueKey, Vec<(String, i64)>)>,
    /// The parent queues (leaves are those of `queue_usage`).
    pub queue_parents: Vec<QueueKey>,
    /// Active applications (history).
    pub applications: u64,
    /// Allocations held (history).
    pub containers: u64,
}

/// Families created on first sight of a resource type.
#[derive(Default)]
struct Dynamic {
    node_usage: HashMap<String, Family<RangeLabel, Gauge>>,
    /// The last raw value seen per counter (partition, instance, name):
    /// counters grow by the difference. A partition made anew adds into
    /// the series of its name; two RMs' partitions have series of their own
    /// (the `rm` label).
    preemption_seen: HashMap<(Option<String>, String, u64, &'static str), u64>,
}

/// Every metric of one scheduler instance.
pub struct Metrics {
    registry: Mutex<Registry>,
    dynamic: Mutex<Dynamic>,
    queues: std::sync::Arc<QueueGauges>,
    history: Mutex<VecDeque<HistorySample>>,
    allocated: Counter,
    rejected: Counter,
    released: Counter,
    app_accepted: Counter,
    app_rejected: Counter,
    app_running: Gauge,
    app_completed: Gauge,
    node_active: Gauge,
    node_failed: Gauge,
    scheduling_latency: Histogram,
    event_created: Gauge,
    event_channeled: Gauge,
    event_not_channeled: Gauge,
    event_processed: Gauge,
    event_collected: Gauge,
    user_usage: Family<UserLabel, Gauge>,
    group_usage: Family<GroupLabel, Gauge>,
    preemption_attempts: Family<PreemptionLabel, Counter>,
    preemption_victims: Family<PartitionLabel, Counter>,
    preemption_exhausted: Family<PartitionLabel, Counter>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Metrics")
    }
}

fn latency_histogram() -> Histogram {
    // The reference's buckets: 0.1 ms, then ten times more, six buckets.
    // Written out: `exponential_buckets` calls `powf`, which would make
    // every static link of the library need an explicit, late `-lm`.
    Histogram::new([0.0001, 0.001, 0.01, 0.1, 1.0, 10.0])
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// A fresh set of metrics, all zero.
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("yunikorn");
        let sched = registry.sub_registry_with_prefix("scheduler");

        let attempts = Family::<StateLabel, Counter>::default();
        let label = |s: &str| StateLabel {
            state: s.to_string(),
        };
        let allocated = attempts.get_or_create(&label("allocated")).clone();
        let rejected = attempts.get_or_create(&label("rejected")).clone();
        // Shown as 0: a node whose existing allocations cannot be
        // recovered is refused whole (counted in node_failed_total).
        let _ = attempts.get_or_create(&label("error"));
        let released = attempts.get_or_create(&label("released")).clone();
        // The encoder adds `_total` to counter names.
        sched.register(
            "container_allocation_attempt",
            "Container allocation attempts by outcome",
            attempts,
        );

        let submissions = Family::<ResultLabel, Counter>::default();
        let result = |s: &str| ResultLabel {
            result: s.to_string(),
        };
        let app_accepted = submissions.get_or_create(&result("accepted")).clone();
        let app_rejected = submissions.get_or_create(&result("rejected")).clone();
        sched.register(
            "application_submission",
            "Application submissions by result",
            submissions,
        );

        let status = Family::<StateLabel, Gauge>::default();
        let app_running = status.get_or_create(&label("running")).clone();
        let app_completed = status.get_or_create(&label("completed")).clone();
        sched.register("application_status_total", "Applications by state", status);

        let node_active = Gauge::default();
        sched.register("node_active_total", "Registered nodes", node_active.clone());
        let node_failed = Gauge::default();
        sched.register(
            "node_failed_total",
            "Node registrations that failed",
            node_failed.clone(),
        );

        let user_usage = Family::<UserLabel, Gauge>::default();
        sched.register(
            "user_resource_usage",
            "Usage of a user at a queue level, under user/group limits",
            user_usage.clone(),
        );
        let group_usage = Family::<GroupLabel, Gauge>::default();
        sched.register(
            "group_resource_usage",
            "Usage of a group at a queue level, under user/group limits",
            group_usage.clone(),
        );

        // sicore's own (the reference counts none of these; its v1.8 queue
        // gauge's `preempting` state is the per-queue `preempting_resource`).
        let preemption_attempts = Family::<PreemptionLabel, Counter>::default();
        sched.register(
            "preemption_attempt",
            "Guarantee preemption attempts (requests past the preconditions) by partition and result",
            preemption_attempts.clone(),
        );
        let preemption_victims = Family::<PartitionLabel, Counter>::default();
        sched.register(
            "preemption_victim",
            "Allocations released to the RM as preemption victims, by partition",
            preemption_victims.clone(),
        );
        let preemption_exhausted = Family::<PartitionLabel, Counter>::default();
        sched.register(
            "preemption_attempts_exhausted",
            "Requests not tried because their leaf queue used its 10 preemption attempts of the pass",
            preemption_exhausted.clone(),
        );

        let scheduling_latency = latency_histogram();
        sched.register(
            "scheduling_latency_seconds",
            "Duration of a scheduling pass that made at least one decision",
            scheduling_latency.clone(),
        );

        let events = registry.sub_registry_with_prefix("event");
        let mut event_gauge = |name: &str, help: &str| {
            let g = Gauge::default();
            events.register(name, help, g.clone());
            g
        };
        let event_created = event_gauge("total_created", "Event records created");
        let event_channeled = event_gauge(
            "total_channeled",
            "Event records accepted by the event store",
        );
        let event_not_channeled = event_gauge(
            "total_not_channeled",
            "Event records dropped before the store",
        );
        let event_processed = event_gauge("total_processed", "Event records handed to the RM");
        let event_collected = event_gauge(
            "total_collected",
            "Event records collected for the next flush",
        );

        let queues = std::sync::Arc::new(QueueGauges::default());
        registry
            .sub_registry_with_prefix("queue")
            .register_collector(Box::new(queues.clone()));

        Metrics {
            registry: Mutex::new(registry),
            dynamic: Mutex::new(Dynamic::default()),
            queues,
            history: Mutex::new(VecDeque::with_capacity(HISTORY_LEN)),
            allocated,
            rejected,
            released,
            app_accepted,
            app_rejected,
            app_running,
            app_completed,
            node_active,
            node_failed,
            scheduling_latency,
            event_created,
            event_channeled,
            event_not_channeled,
            event_processed,
            event_collected,
            user_usage,
            group_usage,
            preemption_attempts,
            preemption_victims,
            preemption_exhausted,
        }
    }

    /// Counts what one batch of outgoing messages reports: allocations
    /// made, asks rejected, releases sent, applications accepted and
    /// rejected, node registrations refused. A handful of atomic adds per
    /// batch.
    pub fn count_messages(&self, messages: &[OutMsg]) {
        let (mut new, mut rejected, mut released) = (0u64, 0u64, 0u64);
        for m in messages {
            match m {
                OutMsg::NewAllocations(v) | OutMsg::NewAllocationsResynced(v) => {
                    new += v.len() as u64
                }
                OutMsg::Allocation(r) => {
                    new += r.new.len() as u64;
                    rejected += r.rejected.len() as u64;
                    released += r.released.len() as u64;
                }
                OutMsg::Application(r) => {
                    if !r.accepted.is_empty() {
                        self.app_accepted.inc_by(r.accepted.len() as u64);
                    }
                    if !r.rejected.is_empty() {
                        self.app_rejected.inc_by(r.rejected.len() as u64);
                    }
                }
                OutMsg::Node(r) => {
                    if !r.rejected.is_empty() {
                        self.node_failed.inc_by(r.rejected.len() as i64);
                    }
                }
                // Counted with their announcement.
                OutMsg::Assume(_) => {}
            }
        }
        if new > 0 {
            self.allocated.inc_by(new);
        }
        if rejected > 0 {
            self.rejected.inc_by(rejected);
        }
        if released > 0 {
            self.released.inc_by(released);
        }
    }

    /// Records the duration of a pass that made a decision.
    pub fn observe_scheduling(&self, d: Duration) {
        self.scheduling_latency.observe(d.as_secs_f64());
    }

    /// Applies the core's refresh sample.
    pub fn refresh(&self, s: &StateSample) {
        // Trackers come and go: the families hold exactly this sample's.
        self.user_usage.clear();
        for (label, v) in &s.user_usage {
            self.user_usage.get_or_create(label).set(*v);
        }
        self.group_usage.clear();
        for (label, v) in &s.group_usage {
            self.group_usage.get_or_create(label).set(*v);
        }
        self.node_active.set(s.nodes);
        self.app_running.set(s.running_apps);
        self.app_completed.set(s.completed_apps);
        let e = &s.events;
        let not_channeled = e.dropped_input.saturating_add(e.dropped_store_full);
        self.event_created
            .set(clamp(e.received.saturating_add(not_channeled)));
        self.event_channeled.set(clamp(e.received));
        self.event_not_channeled.set(clamp(not_channeled));
        self.event_processed.set(clamp(e.published));
        self.event_collected.set(clamp(e.stored));

        let mut dynamic = self.dynamic.lock();
        let preemption_seen = &mut dynamic.preemption_seen;
        for p in &s.preemption {
            let mut grow = |name: &'static str, raw: u64, counter: &Counter| {
                let last = preemption_seen
                    .insert((p.rm.clone(), p.partition.clone(), p.instance, name), raw)
                    .unwrap_or(0);
                counter.inc_by(raw.saturating_sub(last));
            };
            for (i, result) in PREEMPTION_RESULTS.iter().enumerate() {
                let c = self
                    .preemption_attempts
                    .get_or_create(&PreemptionLabel {
                        partition: p.partition.clone(),
                        rm: p.rm.clone(),
                        result: result.to_string(),
                    })
                    .clone();
                grow(result, p.results[i], &c);
            }
            let label = PartitionLabel {
                partition: p.partition.clone(),
                rm: p.rm.clone(),
            };
            let c = self.preemption_victims.get_or_create(&label).clone();
            grow("victims", p.victims, &c);
            let c = self.preemption_exhausted.get_or_create(&label).clone();
            grow("attempts_exhausted", p.attempts_exhausted, &c);
        }
        for (res, buckets) in &s.node_usage {
            let family = dynamic.node_usage.entry(res.clone()).or_insert_with(|| {
                let f = Family::<RangeLabel, Gauge>::default();
                self.registry
                    .lock()
                    .sub_registry_with_prefix("scheduler")
                    .register(
                        format!("{}_node_usage_total", sanitize(res)),
                        format!("Nodes per {res} usage range"),
                        f.clone(),
                    );
                f
            });
            for (i, n) in buckets.iter().enumerate() {
                family
                    .get_or_create(&RangeLabel {
                        range: USAGE_RANGES[i].to_string(),
                    })
                    .set(*n);
            }
        }
        drop(dynamic);
        self.queues.update(s);
    }

    /// Appends a history sample, dropping the oldest beyond 24 hours.
    pub fn record_history(&self, sample: HistorySample) {
        let mut h = self.history.lock();
        if h.len() == HISTORY_LEN {
            h.pop_front();
        }
        h.push_back(sample);
    }

    /// The history samples, oldest first.
    pub fn history(&self) -> Vec<HistorySample> {
        self.history.lock().iter().copied().collect()
    }

    /// The Prometheus text exposition, format 0.0.4 (the C ABI contract's
    /// format, and what the reference serves).
    pub fn encode(&self) -> Result<String, std::fmt::Error> {
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &self.registry.lock())?;
        Ok(openmetrics_to_prometheus(&out))
    }
}

/// Turns the encoder's OpenMetrics 1.0 text into Prometheus format 0.0.4.
/// The two differ only where this mends: OpenMetrics names a counter family
/// without its `_total` suffix in `# HELP`/`# TYPE` (0.0.4 names the samples'
/// metric), and has `# UNIT` and `# EOF` lines. Without this, an RM that
/// appends our text to its own 0.0.4 output would show our counters untyped.
fn openmetrics_to_prometheus(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut help: Option<&str> = None;
    for line in text.lines() {
        if line == "# EOF" || line.starts_with("# UNIT ") {
            continue;
        }
        if line.starts_with("# HELP ") {
            if let Some(h) = help.replace(line) {
                out.push_str(h);
                out.push('\n');
            }
            continue;
        }
        if let Some(decl) = line.strip_prefix("# TYPE ") {
            let (name, kind) = decl.rsplit_once(' ').unwrap_or((decl, "untyped"));
            let suffix = if kind == "counter" && !name.ends_with("_total") {
                "_total"
            } else {
                ""
            };
            if let Some(h) = help.take() {
                let rest = h["# HELP ".len()..].strip_prefix(name).unwrap_or("");
                out.push_str(&format!("# HELP {name}{suffix}{rest}\n"));
            }
            out.push_str(&format!("# TYPE {name}{suffix} {kind}\n"));
            continue;
        }
        if let Some(h) = help.take() {
            out.push_str(h);
            out.push('\n');
        }
        out.push_str(line);
        out.push('\n');
    }
    if let Some(h) = help {
        out.push_str(h);
        out.push('\n');
    }
    out
}

fn clamp(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests;
