//! The core thread: owns every partition, applies RM requests in the order
//! the RM made them, runs scheduling passes and fires timers.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};

use super::dump;
use super::outcome::{AppTimer, OutMsg, Outcomes};
use super::partition::{AppTimeouts, Partition};
use crate::api::ResourceManagerCallback;
use crate::config;
use crate::error::Error;
use crate::events::{EventStats, EventStore};
use crate::options::Options;
use crate::proto::si::v1 as si;
use crate::rmproxy::current_scheduler;
use crate::rmproxy::dispatch::Outbound;
use crate::scheduler::request::AllocationUpdate;
use crate::scheduler::resource::charged_to;

use si::node_info::ActionFromRm;

/// Most allocations one partition makes before the core flushes them to
/// the RM and looks at new requests again.
pub const PASS_BUDGET: usize = 2048;

/// A request for the core thread.
pub enum Command {
    /// RegisterResourceManager, already checked for shape.
    Register {
        /// RM id.
        rm_id: String,
        /// Policy group naming the configuration.
        policy_group: String,
        /// The RM's callbacks.
        callback: Arc<dyn ResourceManagerCallback>,
        /// Where the outcome goes.
        reply: Sender<Result<(), Error>>,
    },
    /// UpdateAllocation, converted on the caller's thread.
    Allocation(AllocationUpdate),
    /// UpdateApplication.
    Application(si::ApplicationRequest),
    /// UpdateNode.
    Node(si::NodeRequest),
    /// UpdateConfiguration(clusterID).
    Reload {
        /// RM id.
        rm_id: String,
        /// Where the outcome goes.
        reply: Sender<Result<ReloadOutcome, Error>>,
    },
    /// Replace (non-empty `yaml`) or drop (empty) the in-memory
    /// configuration of a policy group and reload every RM using it.
    SetPolicyConfig {
        /// Policy group.
        policy_group: String,
        /// queues.yaml text; empty removes the in-memory text.
        yaml: String,
        /// Where the outcome goes.
        reply: Sender<Result<(), Error>>,
    },
    /// The reload watcher found a changed, valid file (read and parsed on
    /// the watcher's thread).
    WatchApply {
        /// RM id the watcher serves.
        rm_id: String,
        /// Policy group it reads.
        policy_group: String,
        /// The new configuration.
        loaded: Box<config::LoadedConfig>,
        /// What became of it.
        reply: Sender<WatchVerdict>,
    },
    /// The reload watcher found a version it cannot apply: logged and
    /// reported as an event.
    WatchRejected {
        /// RM id the watcher serves.
        rm_id: String,
        /// Policy group it reads.
        policy_group: String,
        /// Where the text came from.
        source: String,
        /// Why it was refused.
        reason: String,
    },
    /// State dump as JSON.
    Dump(Sender<Result<String, Error>>),
    /// Work for an observer outside the core (the REST service): runs on
    /// the core thread, in order with the requests before it, and hands
    /// its result back through its own channel.
    Inspect(Box<dyn FnOnce(&mut Core) + Send>),
    /// Stop the thread.
    Shutdown,
}

/// What a synchronous `UpdateConfiguration` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReloadOutcome {
    /// A changed configuration is now in force.
    Applied,
    /// The source has the checksum in force: nothing changed.
    Unchanged {
        /// The RM's policy group.
        policy_group: String,
        /// The checksum in force.
        checksum: String,
        /// Whether the source is a file (or the search for one) that may
        /// still change: in-memory text only changes through
        /// `SetPolicyConfig`, so it is never watched.
        watch: bool,
    },
}

/// The core's answer to [`Command::WatchApply`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatchVerdict {
    /// The watcher's version is now in force.
    Applied,
    /// That version was already in force (applied by another call).
    Current,
    /// The RM is gone, uses another policy group, or in-memory text now
    /// wins over the file: nothing left to watch.
    Gone,
    /// The version was refused (reported); the old one stays.
    Failed,
}

/// Event reason of a configuration the reload watcher refused.
pub const CONFIG_REJECTED_REASON: &str = "ConfigurationRejected";

/// What the core keeps per registered RM.
pub struct RmState {
    /// The RM's callbacks.
    pub callback: Arc<dyn ResourceManagerCallback>,
    /// Policy group of the configuration.
    pub policy_group: String,
    /// Where the configuration came from.
    pub config_source: String,
    /// Checksum of the configuration in force.
    pub checksum: String,
    /// Text of the configuration in force (for `GET /ws/v1/config`).
    pub config_text: String,
    /// Keys of its partitions.
    pub partitions: Vec<PartitionKey>,
}

/// The rmIDs the core holds, shared read-only with the calling side; only
/// the core thread writes it, as it applies registrations.
pub type Registry = Arc<parking_lot::RwLock<std::collections::HashSet<String>>>;

/// The core's state. Only the core thread touches it.
pub struct Core {
    options: Options,
    rms: BTreeMap<String, RmState>,
    partitions: BTreeMap<PartitionKey, Partition>,
    timers: BinaryHeap<Reverse<(Instant, u64)>>,
    timer_data: HashMap<u64, AppTimer>,
    timer_seq: u64,
    outcomes: HashMap<String, Outcomes>,
    outbox: Sender<Outbound>,
    started: Instant,
    /// Event stores per RM (spec 13); empty while events are disabled.
    events: HashMap<String, EventStore>,
    /// Counters of stores that went with their RM.
    events_retired: EventStats,
    next_event_flush: Instant,
    next_outstanding_check: Instant,
    next_queue_clean: Instant,
    /// RMs whose partitions changed since the last scheduling step (their
    /// requests, timers); `all_touched` stands for every RM. A partition
    /// without nodes is passed over unless its RM is here: nothing can be
    /// placed there, and its asks were tried when they came.
    touched: std::collections::HashSet<String>,
    all_touched: bool,
    /// Prometheus metrics (spec 15.2), shared with readers.
    metrics: Arc<crate::metrics::Metrics>,
    next_metrics_refresh: Instant,
    next_history_sample: Instant,
    registry: Registry,
}

/// Text of a caught panic payload.
fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<String>()
        .cloned()
        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "unknown panic".into())
}

/// A partition's identity inside the core: the owning RM and the plain
/// partition name, kept apart. The display form `[rmID]name` is ambiguous
/// (`]` may occur in both parts), so it is never used as a key.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PartitionKey {
    /// Owning RM.
    pub rm_id: String,
    /// Plain partition name, as configured.
    pub name: String,
}

impl std::fmt::Display for PartitionKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "[{}]{}", self.rm_id, self.name)
    }
}

/// Resolves a partition name from RM `rm_id` to its key (spec 1.5): empty
/// means `default`; a name starting with `[` is taken as already normalised
/// and must carry the caller's own `[rmID]` prefix, so a request can only
/// ever reach its own RM's partitions.
pub fn resolve_partition(rm_id: &str, name: &str) -> Result<PartitionKey, String> {
    let plain = if let Some(rest) = name.strip_prefix('[') {
        rest.strip_prefix(rm_id)
            .and_then(|r| r.strip_prefix(']'))
            .ok_or_else(|| {
                format!("partition {name} does not belong to RM {rm_id}: a request may only name its own RM's partitions")
            })?
    } else {
        name
    };
    Ok(PartitionKey {
        rm_id: rm_id.to_string(),
        name: if plain.is_empty() { "default" } else { plain }.to_string(),
    })
}

impl Core {
    /// A core with no RM registered.
    pub fn new(options: Options, outbox: Sender<Outbound>) -> Self {
        Core {
            rms: BTreeMap::new(),
            partitions: BTreeMap::new(),
            timers: BinaryHeap::new(),
            timer_data: HashMap::new(),
            timer_seq: 0,
            outcomes: HashMap::new(),
            outbox,
            started: Instant::now(),
            events: HashMap::new(),
            events_retired: EventStats::default(),
            next_event_flush: Instant::now() + options.event_flush_interval,
            next_outstanding_check: Instant::now() + options.outstanding_check_interval,
            next_queue_clean: Instant::now() + options.queue_cleaner_interval,
            touched: Default::default(),
            all_touched: true,
            metrics: Arc::default(),
            next_metrics_refresh: Instant::now(),
            next_history_sample: Instant::now(),
            options,
            registry: Registry::default(),
        }
    }

    /// Uses `metrics` (shared with the scheduler's readers) instead of a
    /// private set.
    pub fn with_metrics(mut self, metrics: Arc<crate::metrics::Metrics>) -> Self {
        self.metrics = metrics;
        self
    }

    /// Publishes the set of registered RMs into `registry`.
    pub fn with_registry(mut self, registry: Registry) -> Self {
        self.registry = registry;
        self
    }

    /// Runs until `Shutdown` or until every sender is gone.
    pub fn run(mut self, inbox: Receiver<Command>) {
        let mut work = false;
        loop {
            let wait = if work {
                Duration::ZERO
            } else {
                let next_timer = self
                    .timers
                    .peek()
                    .map(|Reverse((at, _))| at.saturating_duration_since(Instant::now()));
                let idle = if self.has_pending() {
                    self.options.scheduling_interval
                } else {
                    Duration::from_secs(3600)
                };
                let periodic = self
                    .next_periodic()
                    .saturating_duration_since(Instant::now());
                next_timer.map_or(idle, |t| t.min(idle)).min(periodic)
            };
            let first = match inbox.recv_timeout(wait) {
                Ok(cmd) => Some(cmd),
                Err(RecvTimeoutError::Timeout) => None,
                Err(RecvTimeoutError::Disconnected) => return,
            };
            let mut batch: Vec<Command> = first.into_iter().collect();
            batch.extend(inbox.try_iter().take(1024));
            let had_requests = !batch.is_empty();
            for cmd in batch {
                if matches!(cmd, Command::Shutdown) {
                    return;
                }
                self.guarded("request", |core| core.handle(cmd));
                self.flush();
            }
            self.guarded("timers", Core::fire_timers);
            self.flush();
            self.guarded("periodic work", Core::periodic);
            let mut made = 0;
            if had_requests || work || self.has_pending() {
                self.guarded("scheduling", |core| made = core.schedule());
                self.flush();
            }
            work = made > 0;
        }
    }

    /// Runs `f`, logging a panic instead of killing the core thread.
    fn guarded(&mut self, what: &str, f: impl FnOnce(&mut Core)) {
        if let Err(p) = catch_unwind(AssertUnwindSafe(|| f(self))) {
            log::error!("internal error while handling {what}: {}", panic_text(&*p));
        }
    }

    /// Runs the body of a synchronous call; a panic becomes
    /// [`Status::Internal`](crate::Status::Internal) with its message.
    fn answer<T>(
        &mut self,
        what: &str,
        f: impl FnOnce(&mut Core) -> Result<T, Error>,
    ) -> Result<T, Error> {
        catch_unwind(AssertUnwindSafe(|| f(self))).unwrap_or_else(|p| {
            let msg = panic_text(&*p);
            log::error!("internal error while handling {what}: {msg}");
            Err(Error::new(
                crate::Status::Internal,
                format!("internal error (panic) while handling {what}: {msg}"),
            ))
        })
    }

    /// When the next periodic job (event flush, outstanding check) is due.
    fn next_periodic(&self) -> Instant {
        let next = self
            .next_outstanding_check
            .min(self.next_metrics_refresh)
            .min(self.next_queue_clean);
        if self.options.disable_events {
            next
        } else {
            next.min(self.next_event_flush)
        }
    }

    /// The outstanding-request check (spec 8.12), the queue cleaner (spec
    /// 3.7) and the event flush (spec 13.1), each at its own cadence.
    fn periodic(&mut self) {
        let now = Instant::now();
        if now >= self.next_outstanding_check {
            self.next_outstanding_check = now + self.options.outstanding_check_interval;
            self.report_outstanding();
        }
        if now >= self.next_queue_clean {
            self.next_queue_clean = now + self.options.queue_cleaner_interval;
            for p in self.partitions.values_mut() {
                p.clean_queues();
            }
        }
        if now >= self.next_event_flush {
            self.next_event_flush = now + self.options.event_flush_interval;
            self.flush_events();
        }
        if now >= self.next_metrics_refresh {
            self.next_metrics_refresh = now + crate::metrics::REFRESH_INTERVAL;
            let history = now >= self.next_history_sample;
            if history {
                self.next_history_sample = now + crate::metrics::HISTORY_INTERVAL;
            }
            crate::metrics::gauges::refresh(
                &self.metrics,
                &self.partitions,
                self.event_stats(),
                history,
            );
        }
    }

    /// Sends `FAILED` for the asks passes tried and could not place since
    /// the last check (spec 8.12), at most
    /// [`OUTSTANDING_REPORT_BUDGET`](crate::scheduler::partition::OUTSTANDING_REPORT_BUDGET)
    /// per partition: the check costs what the passes noted, never a walk
    /// over every waiting ask.
    fn report_outstanding(&mut self) {
        for p in self.partitions.values_mut() {
            let Some(rm) = self.rms.get(&p.rm_id) else {
                continue;
            };
            if !rm.callback.has_container_scheduling_state() || p.tried.is_empty() {
                continue; // nobody to tell, or nothing tried
            }
            let budget = crate::scheduler::partition::OUTSTANDING_REPORT_BUDGET;
            for (app, key) in p.outstanding_requests(budget) {
                let req = si::UpdateContainerSchedulingStateRequest {
                    applicartion_id: app.to_string(),
                    allocation_key: key.to_string(),
                    state: si::update_container_scheduling_state_request::SchedulingState::Failed
                        as i32,
                    reason: crate::scheduler::partition::OUTSTANDING_REASON.to_string(),
                };
                let _ = self
                    .outbox
                    .send(Outbound::ContainerState(rm.callback.clone(), req));
            }
        }
    }

    /// Hands each RM everything its store collected, as one batch.
    fn flush_events(&mut self) {
        for (rm_id, store) in &mut self.events {
            let Some(rm) = self.rms.get(rm_id) else {
                continue;
            };
            let batch = store.take_batch();
            if !batch.is_empty() {
                let _ = self
                    .outbox
                    .send(Outbound::Events(rm.callback.clone(), batch));
            }
        }
    }

    /// Stores the records of the types the RM asked for.
    fn add_events(&mut self, rm_id: &str, mut records: Vec<si::EventRecord>) {
        if self.options.disable_events || records.is_empty() {
            return;
        }
        let types = self.options.event_types;
        records.retain(|r| types.allows(r.r#type));
        if !records.is_empty() {
            self.events
                .entry(rm_id.to_string())
                .or_default()
                .add_all(records);
        }
    }

    /// Event counters for the state dump.
    fn event_stats(&self) -> EventStats {
        let mut stats = EventStats {
            enabled: !self.options.disable_events,
            flush_interval_ms: self.options.event_flush_interval.as_millis() as u64,
            types: self.options.event_types.names(),
            ..Default::default()
        };
        stats.merge(&self.events_retired);
        for store in self.events.values() {
            stats.merge(&store.stats());
        }
        stats
    }

    fn has_pending(&self) -> bool {
        self.partitions.values().any(Partition::has_pending)
    }

    /// Hands what the last step produced to the dispatcher, in order. The
    /// dispatcher announces new allocations through `ReSyncSchedulerCache`
    /// right before the `UpdateAllocation` that carries them, so the core
    /// thread never waits on the RM for either.
    fn flush(&mut self) {
        for (rm_id, out) in std::mem::take(&mut self.outcomes) {
            for t in out.timers {
                self.timer_seq += 1;
                self.timers.push(Reverse((t.at, self.timer_seq)));
                self.timer_data.insert(self.timer_seq, t);
            }
            let Some(rm) = self.rms.get(&rm_id) else {
                continue;
            };
            let cb = rm.callback.clone();
            self.metrics.count_messages(&out.messages);
            self.add_events(&rm_id, out.events);
            for msg in out.messages {
                let _ = self.outbox.send(Outbound::Message(cb.clone(), msg));
            }
            // Released allocations are forgotten after their echo (spec 10.2).
            if !out.forget.is_empty() {
                let args = si::ReSyncSchedulerCacheArgs {
                    assumed_allocations: Vec::new(),
                    forget_allocations: out.forget,
                };
                let _ = self.outbox.send(Outbound::Resync(cb, args));
            }
        }
    }

    fn fire_timers(&mut self) {
        let now = Instant::now();
        while let Some(Reverse((at, seq))) = self.timers.peek().copied() {
            if at > now {
                break;
            }
            self.timers.pop();
            let Some(t) = self.timer_data.remove(&seq) else {
                continue;
            };
            if let Some(p) = self.partitions.get_mut(&t.partition) {
                if !self.touched.contains(&p.rm_id) {
                    self.touched.insert(p.rm_id.clone());
                }
                let out = self.outcomes.entry(p.rm_id.clone()).or_default();
                p.on_timer(&t, out);
            }
        }
    }

    fn schedule(&mut self) -> usize {
        let mut made = 0;
        let names: Vec<PartitionKey> = self.partitions.keys().cloned().collect();
        let touched = std::mem::take(&mut self.touched);
        let all = std::mem::replace(&mut self.all_touched, false);
        for name in names {
            let p = self.partitions.get_mut(&name).expect("listed");
            if p.nodes.is_empty() && !all && !touched.contains(&p.rm_id) {
                continue;
            }
            let rm = p.rm_id.clone();
            let cb = self.rms.get(&rm).map(|r| r.callback.clone());
            let mut out = self.outcomes.remove(&rm).unwrap_or_default();
            let started = Instant::now();
            let n = p.schedule(cb.as_deref(), PASS_BUDGET, &mut out);
            if n > 0 {
                self.metrics.observe_scheduling(started.elapsed());
            }
            made += n;
            self.outcomes.insert(rm, out);
        }
        made
    }

    fn handle(&mut self, cmd: Command) {
        match &cmd {
            Command::Allocation(r) => self.touch(&r.rm_id),
            Command::Application(r) => self.touch(&r.rm_id),
            Command::Node(r) => self.touch(&r.rm_id),
            Command::Register { rm_id, .. }
            | Command::Reload { rm_id, .. }
            | Command::WatchApply { rm_id, .. } => self.touch(rm_id),
            // Observers only read; a configuration the REST service applies
            // marks what it changes itself (`apply_config_text`).
            Command::Dump(_)
            | Command::Inspect(_)
            | Command::Shutdown
            | Command::WatchRejected { .. } => {}
            // A policy group's text: any RM's partitions.
            Command::SetPolicyConfig { .. } => self.all_touched = true,
        }
        match cmd {
            // A panic in a synchronous call is answered, not left as a
            // dropped reply: the caller learns it was a bug, with the
            // panic's message, and the core goes on.
            Command::Register {
                rm_id,
                policy_group,
                callback,
                reply,
            } => {
                let _ = reply.send(self.answer("RegisterResourceManager", |core| {
                    core.register(&rm_id, &policy_group, callback)
                }));
            }
            Command::Reload { rm_id, reply } => {
                let _ = reply.send(self.answer("UpdateConfiguration", |core| core.reload(&rm_id)));
            }
            // Resource names converted here are charged to the sending RM.
            Command::Allocation(req) => {
                let rm = req.rm_id.clone();
                charged_to(current_scheduler(), &rm, || self.allocation_request(req))
            }
            Command::Application(req) => {
                let rm = req.rm_id.clone();
                charged_to(current_scheduler(), &rm, || self.application_request(req))
            }
            Command::Node(req) => {
                let rm = req.rm_id.clone();
                charged_to(current_scheduler(), &rm, || self.node_request(req))
            }
            Command::SetPolicyConfig {
                policy_group,
                yaml,
                reply,
            } => {
                let _ = reply.send(self.answer("SetPolicyConfig", |core| {
                    core.set_policy_config(&policy_group, yaml)
                }));
            }
            Command::WatchApply {
                rm_id,
                policy_group,
                loaded,
                reply,
            } => {
                let _ = reply.send(self.watch_apply(&rm_id, &policy_group, *loaded));
            }
            Command::WatchRejected {
                rm_id,
                policy_group,
                source,
                reason,
            } => self.watch_rejected(&rm_id, &policy_group, &source, &reason),
            Command::Dump(reply) => {
                let _ = reply.send(self.answer("state dump", |core| {
                    // Answer with the state the earlier requests lead to:
                    // run the pass they trigger first, so a dump right after
                    // a request shows its outcome.
                    core.schedule();
                    core.flush();
                    Ok(dump::render(
                        &core.rms,
                        &core.partitions,
                        core.started,
                        core.event_stats(),
                    ))
                }));
            }
            Command::Inspect(f) => f(self),
            Command::Shutdown => {}
        }
    }

    /// Notes that `rm_id`'s partitions may have changed.
    fn touch(&mut self, rm_id: &str) {
        if !self.touched.contains(rm_id) {
            self.touched.insert(rm_id.to_string());
        }
    }

    fn timeouts(&self) -> AppTimeouts {
        AppTimeouts::from_options(&self.options)
    }

    fn remove_rm(&mut self, rm_id: &str) {
        self.registry.write().remove(rm_id);
        if let Some(rm) = self.rms.remove(rm_id) {
            for p in rm.partitions {
                self.partitions.remove(&p);
            }
        }
        self.outcomes.remove(rm_id);
        // Records meant for the old registration are not delivered to the new one.
        if let Some(store) = self.events.remove(rm_id) {
            let stats = store.stats();
            self.events_retired
                .merge(&EventStats { stored: 0, ..stats });
        }
    }

    fn register(
        &mut self,
        rm_id: &str,
        policy_group: &str,
        callback: Arc<dyn ResourceManagerCallback>,
    ) -> Result<(), Error> {
        // Re-registration starts afresh (spec 1.4): the RM's old state goes
        // first, so a failed re-registration leaves it unregistered.
        self.remove_rm(rm_id);
        let loaded = config::load(policy_group, &self.options.config_dir, &self.options.policy_configs)
            .map_err(|e| {
                Error::rejected(format!(
                    "registration of RM {rm_id} failed: configuration for policy group '{policy_group}': {e}"
                ))
            })?;
        let mut created = Vec::new();
        for pc in &loaded.config.partitions {
            let p = Partition::new(rm_id, pc, self.timeouts()).map_err(|e| {
                Error::rejected(format!(
                    "registration of RM {rm_id} failed: partition {}: {e}",
                    pc.name
                ))
            })?;
            created.push(p);
        }
        let names = created.iter().map(|p| p.key.clone()).collect();
        for p in created {
            self.partitions.insert(p.key.clone(), p);
        }
        log::info!(
            "RM {rm_id} registered with policy group '{policy_group}' from {}",
            loaded.source
        );
        self.rms.insert(
            rm_id.to_string(),
            RmState {
                callback,
                policy_group: policy_group.to_string(),
                config_source: loaded.source,
                checksum: loaded.config.checksum,
                config_text: loaded.text,
                partitions: names,
            },
        );
        self.registry.write().insert(rm_id.to_string());
        Ok(())
    }

    fn reload(&mut self, rm_id: &str) -> Result<ReloadOutcome, Error> {
        let Some(rm) = self.rms.get(rm_id) else {
            return Err(Error::rejected(format!(
                "failed to reload configuration, because RM {rm_id} is unknown to the scheduler"
            )));
        };
        let loaded = config::load(
            &rm.policy_group,
            &self.options.config_dir,
            &self.options.policy_configs,
        )
        .map_err(|e| Error::rejected(format!("configuration reload for RM {rm_id} failed: {e}")))?;
        if loaded.config.checksum == rm.checksum {
            return Ok(ReloadOutcome::Unchanged {
                policy_group: rm.policy_group.clone(),
                checksum: rm.checksum.clone(),
                watch: loaded.source != config::SOURCE_IN_MEMORY,
            });
        }
        super::reload::apply(self, rm_id, loaded)?;
        Ok(ReloadOutcome::Applied)
    }

    /// Replaces (or, with empty `yaml`, drops) the in-memory text of
    /// `policy_group` and reloads every RM that uses it. All or nothing:
    /// the text and every RM's reload are checked before anything changes.
    fn set_policy_config(&mut self, policy_group: &str, yaml: String) -> Result<(), Error> {
        let failed = |e: String| {
            Error::rejected(format!(
                "configuration of policy group '{policy_group}' not changed: {e}"
            ))
        };
        let mut configs = self.options.policy_configs.clone();
        if yaml.is_empty() {
            if configs.remove(policy_group).is_none() {
                return Ok(());
            }
        } else {
            configs.insert(policy_group.to_string(), yaml);
        }
        let users: Vec<String> = self
            .rms
            .iter()
            .filter(|(_, rm)| rm.policy_group == policy_group)
            .map(|(id, _)| id.clone())
            .collect();
        if users.is_empty() && !configs.contains_key(policy_group) {
            // Dropping the text of a group no RM uses: nothing to reload.
            self.options.policy_configs = configs;
            log::info!("in-memory configuration of policy group '{policy_group}' removed");
            return Ok(());
        }
        // Without an RM the text is still checked, so a later registration
        // cannot be the first to find it broken.
        let loaded = config::load(policy_group, &self.options.config_dir, &configs)
            .map_err(|e| failed(e.to_string()))?;
        for rm_id in &users {
            super::reload::check(self, rm_id, &loaded).map_err(|e| failed(e.message))?;
        }
        self.options.policy_configs = configs;
        log::info!(
            "configuration of policy group '{policy_group}' set from {} ({} RM(s) reloaded)",
            loaded.source,
            users.len()
        );
        for rm_id in &users {
            super::reload::apply(self, rm_id, loaded.clone()).map_err(|e| failed(e.message))?;
        }
        Ok(())
    }

    fn watch_apply(
        &mut self,
        rm_id: &str,
        policy_group: &str,
        loaded: config::LoadedConfig,
    ) -> WatchVerdict {
        let Some(rm) = self.rms.get(rm_id) else {
            return WatchVerdict::Gone;
        };
        if rm.policy_group != policy_group || self.options.policy_configs.contains_key(policy_group)
        {
            return WatchVerdict::Gone;
        }
        if rm.checksum == loaded.config.checksum {
            return WatchVerdict::Current;
        }
        let source = loaded.source.clone();
        match super::reload::apply(self, rm_id, loaded) {
            Ok(()) => {
                log::info!("configuration of RM {rm_id} reloaded from {source} by the watcher");
                WatchVerdict::Applied
            }
            Err(e) => {
                self.watch_rejected(rm_id, policy_group, &source, &e.message);
                WatchVerdict::Failed
            }
        }
    }

    /// Logs a version the watcher could not apply and reports it to the RM
    /// as a `QUEUE` record on its root queue.
    fn watch_rejected(&mut self, rm_id: &str, policy_group: &str, source: &str, reason: &str) {
        if !self.rms.contains_key(rm_id) {
            return;
        }
        log::warn!(
            "configuration of RM {rm_id} (policy group '{policy_group}') from {source} not applied, the configuration in force stays: {reason}"
        );
        let record = crate::events::record(
            si::event_record::Type::Queue,
            config::ROOT_QUEUE,
            policy_group,
            CONFIG_REJECTED_REASON,
            format!("{source}: {reason}"),
        );
        self.add_events(rm_id, vec![record]);
    }

    fn allocation_request(&mut self, req: AllocationUpdate) {
        let rm = req.rm_id.clone();
        let mut out = self.outcomes.remove(&rm).unwrap_or_default();
        let mut rejected = Vec::new();
        // The per-RM limit on waiting asks, over all the RM's partitions.
        let limit = self.options.max_asks_per_rm;
        let mut waiting: u64 = self.rms.get(&rm).map_or(0, |r| {
            r.partitions
                .iter()
                .filter_map(|k| self.partitions.get(k))
                .map(|p| p.waiting_asks as u64)
                .sum()
        });
        // Asks of one request nearly always share a partition: resolve its
        // internal name once.
        let mut last: Option<(&str, Result<PartitionKey, String>)> = None;
        for ask in &req.asks {
            if last.as_ref().is_none_or(|(raw, _)| *raw != &*ask.partition) {
                last = Some((&ask.partition, resolve_partition(&rm, &ask.partition)));
            }
            let Some((_, key)) = &last else { continue };
            let result = match key.as_ref().map(|k| (k, self.partitions.get_mut(k))) {
                Err(e) => Err(e.clone()),
                Ok((k, None)) => Err(format!(
                    "Failed to find partition {k}, for application {} and allocation {}",
                    ask.app, ask.key
                )),
                Ok((_, Some(p)))
                    if waiting >= limit && !p.is_waiting(&ask.app, &ask.key) =>
                {
                    Err(format!(
                        "ask {} of application {} rejected: RM {rm} already holds {waiting} waiting asks, the limit set by SchedulerOptions.max_asks_per_rm",
                        ask.key, ask.app
                    ))
                }
                Ok((_, Some(p))) => {
                    let before = p.waiting_asks as u64;
                    let added = p.add_ask(ask, &mut out);
                    waiting = (waiting + p.waiting_asks as u64).saturating_sub(before);
                    added
                }
            };
            if let Err(reason) = result {
                rejected.push(si::RejectedAllocationAsk {
                    allocation_key: ask.key.to_string(),
                    application_id: ask.app.to_string(),
                    reason,
                });
            }
        }
        if !rejected.is_empty() {
            out.new_allocation_message(si::AllocationResponse {
                rejected,
                ..Default::default()
            });
        }
        if let Some(rel) = &req.releases {
            for r in &rel.allocation_asks_to_release {
                if let Some(p) = self.own_partition(&rm, &r.partition_name) {
                    p.release_asks(r, &mut out);
                }
            }
            for r in &rel.allocations_to_release {
                if let Some(p) = self.own_partition(&rm, &r.partition_name) {
                    p.release_allocations(r, &mut out);
                }
            }
        }
        self.outcomes.insert(rm, out);
    }

    fn application_request(&mut self, req: si::ApplicationRequest) {
        let rm = req.rm_id.clone();
        let mut out = self.outcomes.remove(&rm).unwrap_or_default();
        let mut response = si::ApplicationResponse::default();
        for app in &req.new {
            let key = resolve_partition(&rm, &app.partition_name);
            let result = match key.as_ref().map(|k| (k, self.partitions.get_mut(k))) {
                Err(e) => Err(e.clone()),
                Ok((k, None)) => Err(format!(
                    "Failed to add application {} to partition {k}, partition doesn't exist",
                    app.application_id
                )),
                Ok((_, Some(p))) => p.add_application(app),
            };
            match result {
                Ok(()) => response.accepted.push(si::AcceptedApplication {
                    application_id: app.application_id.clone(),
                }),
                Err(reason) => response.rejected.push(si::RejectedApplication {
                    application_id: app.application_id.clone(),
                    reason,
                }),
            }
        }
        if !response.accepted.is_empty() || !response.rejected.is_empty() {
            out.messages.push(OutMsg::Application(response));
        }
        for r in &req.remove {
            if let Some(p) = self.own_partition(&rm, &r.partition_name) {
                p.remove_application(&r.application_id, &mut out);
            }
        }
        self.outcomes.insert(rm, out);
    }

    fn node_request(&mut self, req: si::NodeRequest) {
        let rm = req.rm_id.clone();
        let mut out = self.outcomes.remove(&rm).unwrap_or_default();
        let mut response = si::NodeResponse::default();
        for node in &req.nodes {
            let key = resolve_partition(
                &rm,
                node.attributes
                    .get(super::node::ATTR_PARTITION)
                    .map_or("", String::as_str),
            );
            let pname = match &key {
                Ok(k) => k.to_string(),
                Err(e) => e.clone(),
            };
            let p = key.as_ref().ok().and_then(|k| self.partitions.get_mut(k));
            if node.action == ActionFromRm::Create as i32 {
                // An unlimited node must come alone (spec 11.6); the
                // partition's own rules follow in `add_node`.
                let unlimited = super::node::is_unlimited(&node.attributes);
                let result = match (p, &key) {
                    (_, Err(e)) => Err(e.clone()),
                    _ if unlimited && req.nodes.len() > 1 => Err(
                        "There are other nodes as well, registering unlimited nodes is forbidden"
                            .to_string(),
                    ),
                    (None, Ok(k)) => Err(format!(
                        "Failed to find partition {k} for new node {}",
                        node.node_id
                    )),
                    (Some(p), Ok(_)) => p.add_node(node, &mut out),
                };
                match result {
                    Ok(()) => response.accepted.push(si::AcceptedNode {
                        node_id: node.node_id.clone(),
                    }),
                    Err(reason) => response.rejected.push(si::RejectedNode {
                        node_id: node.node_id.clone(),
                        reason,
                    }),
                }
            } else if let Some(p) = p {
                p.update_node(node, &mut out);
            } else {
                log::warn!(
                    "node {} names unknown partition {pname}; ignored",
                    node.node_id
                );
            }
        }
        if !response.accepted.is_empty() || !response.rejected.is_empty() {
            out.messages.push(OutMsg::Node(response));
        }
        self.outcomes.insert(rm, out);
    }

    /// Builds a copy of the state for the REST service.
    pub(crate) fn snapshot(&self) -> crate::rest::snapshot::Snapshot {
        crate::rest::snapshot::build(&self.rms, &self.partitions, self.started)
    }

    /// Applies configuration text that arrived through the REST service
    /// (spec 2.9) to the partitions of `rm_id`, as a reload would.
    pub(crate) fn apply_config_text(
        &mut self,
        rm_id: &str,
        text: String,
        expected_checksum: Option<&str>,
    ) -> Result<(), Error> {
        let Some(rm) = self.rms.get(rm_id) else {
            return Err(Error::rejected(format!(
                "RM {rm_id} has no active partitions, make sure it is registered"
            )));
        };
        if expected_checksum.is_some_and(|c| c != rm.checksum) {
            return Err(Error::rejected(
                "the base configuration is changed: it was reloaded during the update",
            ));
        }
        let config = config::parse(&text).map_err(|e| Error::rejected(e.to_string()))?;
        self.touch(rm_id);
        super::reload::apply(
            self,
            rm_id,
            config::LoadedConfig {
                config,
                text,
                source: "REST /ws/v1/config".to_string(),
            },
        )
    }

    /// The state dump (for the REST service).
    pub(crate) fn dump_json(&self) -> String {
        dump::render(
            &self.rms,
            &self.partitions,
            self.started,
            self.event_stats(),
        )
    }

    /// The partition `name` of RM `rm_id`; `None` when it does not exist or
    /// names another RM's partition (callers ignore such entries, as spec
    /// 7.4 does for unknown partitions; the request check refused them
    /// already).
    fn own_partition(&mut self, rm_id: &str, name: &str) -> Option<&mut Partition> {
        let key = resolve_partition(rm_id, name).ok()?;
        self.partitions.get_mut(&key)
    }

    /// Outcomes for `rm_id`, delivered at the next flush (for the reload module).
    pub(super) fn outcomes_for(&mut self, rm_id: &str) -> &mut Outcomes {
        self.outcomes.entry(rm_id.to_string()).or_default()
    }

    /// Read access for the reload module.
    pub(super) fn parts(
        &self,
    ) -> (
        &Options,
        &BTreeMap<String, RmState>,
        &BTreeMap<PartitionKey, Partition>,
    ) {
        (&self.options, &self.rms, &self.partitions)
    }

    /// Mutable access for the reload module.
    pub(super) fn parts_mut(
        &mut self,
    ) -> (
        &Options,
        &mut BTreeMap<String, RmState>,
        &mut BTreeMap<PartitionKey, Partition>,
    ) {
        (&self.options, &mut self.rms, &mut self.partitions)
    }
}
