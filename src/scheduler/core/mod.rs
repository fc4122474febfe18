//! The core: owns every partition, applies RM requests in the order the
//! RM made them, runs scheduling passes and fires timers.
//!
//! [`Core`] is a state machine with no thread and no clock of its own (the
//! shape of raft-rs's `RawNode`): the host hands it a command
//! ([`Core::step`]), asks for one scheduling pass ([`Core::schedule_pass`]),
//! lets due timers fire ([`Core::tick`]) and takes what should go to the
//! RMs ([`Core::take_outbound`]). The service thread ([`run`]) is a thin
//! loop around those calls; unit tests drive them directly with a
//! [`ManualClock`](super::clock::ManualClock), with no threads and no
//! waits.
//!
//! The work is split by job: [`cluster`] (the RMs and their partitions,
//! and routing requests to them), [`configure`] (loading, reloading and
//! replacing configuration), [`run`] (the thread loop and timers).

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::Instant;

use super::clock::SharedClock;
use super::config_txn::ApplyRefused;
use super::observe::{CoreMetrics, NoMetrics};
use super::order::{deliver_posted, Posted, RmOrder};
use super::outcome::{AppTimer, Outbound, Outcomes};
use super::partition::Partition;
use super::partition_key::PartitionKey;
use super::resource::charged_to;
use crate::error::Error;
use crate::events::ring::{EventRing, RingFeed};
use crate::events::{EventStats, EventStore};
use crate::options::Options;

pub mod cluster;
mod command;
pub mod configure;
mod ring_feed;
pub mod run;
#[cfg(test)]
mod tests;

pub use cluster::{Registry, RmState};
pub use command::{
    Command, Registration, ReloadOutcome, Reply, WatchVerdict, CONFIG_REJECTED_REASON,
};
pub use run::run;

/// Most allocations one partition makes before the core flushes them to
/// the RM and looks at new requests again.
pub const PASS_BUDGET: usize = 2048;

/// Fewest pending timers at which [`Core::sweep_timers`] runs.
const TIMER_SWEEP_MIN: usize = 1024;

/// The core's state. Only its owner (the core thread, or a test) touches it.
pub struct Core {
    options: Options,
    clock: SharedClock,
    rms: BTreeMap<String, RmState>,
    partitions: BTreeMap<PartitionKey, Partition>,
    timers: BinaryHeap<Reverse<(Instant, u64)>>,
    timer_data: HashMap<u64, AppTimer>,
    timer_seq: u64,
    /// Size of `timer_data` at which dead timers are swept (see
    /// [`Core::sweep_timers`]).
    timer_sweep_at: usize,
    outcomes: HashMap<String, Outcomes>,
    /// What the last steps produced for the RMs, in order, until the host
    /// takes it.
    outbox: Vec<Outbound>,
    started: Instant,
    /// Event stores per RM (spec 13), made at registration; an RM whose
    /// events are off (the `disable_events` option, or its own
    /// `event.trackingEnabled`) has none.
    events: HashMap<String, EventStore>,
    /// Counters of stores that went with their RM.
    events_retired: EventStats,
    /// The REST event history (`events::ring`), shared with the readers
    /// through the snapshot; fed while any RM's events are on.
    ring: Arc<EventRing>,
    /// Which records enter the history.
    ring_feed: RingFeed,
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
    metrics: Arc<dyn CoreMetrics>,
    next_metrics_refresh: Instant,
    next_history_sample: Instant,
    registry: Registry,
    /// The dispatcher's inbox, for the RMs' orders (none when stepped by a
    /// test).
    wake: Option<crossbeam_channel::Sender<super::order::Posted>>,
    /// Registrations so far: the last one's [`super::outcome::RmKey`].
    registrations: u64,
}

/// Text of a caught panic payload.
fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<String>()
        .cloned()
        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "unknown panic".into())
}

impl Core {
    /// A core with no RM registered, reading time from `clock`.
    pub fn new(options: Options, clock: SharedClock) -> Self {
        let now = clock.now();
        Core {
            rms: BTreeMap::new(),
            partitions: BTreeMap::new(),
            timers: BinaryHeap::new(),
            timer_data: HashMap::new(),
            timer_seq: 0,
            timer_sweep_at: TIMER_SWEEP_MIN,
            outcomes: HashMap::new(),
            outbox: Vec::new(),
            started: now,
            events: HashMap::new(),
            events_retired: EventStats::default(),
            ring: Arc::new(EventRing::new(!options.disable_events)),
            ring_feed: RingFeed::default(),
            next_event_flush: now + options.event_flush_interval,
            next_outstanding_check: now + options.outstanding_check_interval,
            next_queue_clean: now + options.queue_cleaner_interval,
            touched: Default::default(),
            all_touched: true,
            metrics: Arc::new(NoMetrics),
            next_metrics_refresh: now,
            next_history_sample: now,
            options,
            clock,
            registry: Registry::default(),
            wake: None,
            registrations: 0,
        }
    }

    /// Lets the RMs' orders wake the dispatcher through `inbox` (the thread
    /// loop does, before any registration).
    pub fn set_dispatcher(&mut self, inbox: crossbeam_channel::Sender<super::order::Posted>) {
        self.wake = Some(inbox);
    }

    /// Reports to `metrics` (shared with the scheduler's readers) instead
    /// of nowhere.
    pub fn with_metrics(mut self, metrics: Arc<dyn CoreMetrics>) -> Self {
        self.metrics = metrics;
        self
    }

    /// Publishes the set of registered RMs into `registry`.
    pub fn with_registry(mut self, registry: Registry) -> Self {
        self.registry = registry;
        self
    }

    /// Applies one command (anything but [`Command::Shutdown`], which only
    /// the host acts on). A panic is logged, or answered to a synchronous
    /// caller, and the core goes on.
    pub fn step(&mut self, cmd: Command) {
        self.guarded("request", |core| core.handle(cmd));
        self.flush();
    }

    /// Runs one scheduling pass over every partition; returns how many
    /// allocations it made.
    pub fn schedule_pass(&mut self) -> usize {
        let mut made = 0;
        self.guarded("scheduling", |core| made = core.schedule());
        self.flush();
        made
    }

    /// Fires the timers that are due by the clock, then the periodic jobs
    /// (outstanding check, event flush, metrics refresh) that are due.
    pub fn tick(&mut self) {
        self.guarded("timers", Core::fire_timers);
        self.flush();
        self.guarded("periodic work", Core::periodic);
    }

    /// Whether any partition has asks left to try.
    pub fn has_pending(&self) -> bool {
        self.partitions.values().any(Partition::has_pending)
    }

    /// Takes what the steps so far produced for the RMs, in order (the
    /// thread loop drains instead, keeping the buffer).
    #[cfg_attr(not(test), allow(dead_code))]
    pub fn take_outbound(&mut self) -> Vec<Outbound> {
        std::mem::take(&mut self.outbox)
    }

    /// Posts what the steps so far produced to the orders of the RMs it
    /// is for, in order, and hands each wake-up to `wake`, keeping the
    /// buffer for the next step. What was made for a registration that
    /// is gone is dropped.
    pub fn post_outbound(&mut self, mut wake: impl FnMut(Posted)) {
        let rms = &self.rms;
        let mut last: Option<&Arc<RmOrder>> = None;
        for o in self.outbox.drain(..) {
            let key = o.key();
            let order = match last {
                Some(order) if order.key() == key => order,
                _ => match rms.values().find(|rm| rm.callback.key() == key) {
                    Some(rm) => last.insert(&rm.callback),
                    None => continue,
                },
            };
            wake(order.post(o));
        }
    }

    /// Delivers what the steps so far produced, on this thread, through
    /// the same orders the dispatcher delivers from (a test stepping the
    /// core).
    #[cfg_attr(not(test), allow(dead_code))]
    pub fn deliver_outbound(&mut self) {
        self.post_outbound(deliver_posted);
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
                crate::error::Status::Internal,
                format!("internal error (panic) while handling {what}: {msg}"),
            ))
        })
    }

    fn handle(&mut self, cmd: Command) {
        match &cmd {
            Command::Allocation(r) => self.touch(&r.rm_id),
            Command::Application(r) => self.touch(&r.rm_id),
            Command::Node(r) => self.touch(&r.rm_id),
            Command::Register { registration, .. } => self.touch(&registration.rm_id),
            Command::Reload { rm_id, .. }
            | Command::ApplyConfigText { rm_id, .. }
            | Command::WatchApply { rm_id, .. }
            | Command::RmEvents { rm_id, .. } => self.touch(rm_id),
            // Observers and dry runs only read.
            Command::Dump { .. }
            | Command::DumpParts { .. }
            | Command::Snapshot(_)
            | Command::ConfigTarget { .. }
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
                registration,
                callback,
                reply,
            } => reply.send(self.answer("RegisterResourceManager", |core| {
                core.register(registration, callback)
            })),
            Command::RmEvents { rm_id, events } => self.set_rm_events(&rm_id, events),
            Command::Reload { rm_id, reply } => {
                reply.send(self.answer("UpdateConfiguration", |core| core.reload(&rm_id)))
            }
            // Resource names converted here are charged to the sending RM.
            Command::Allocation(req) => {
                let rm = req.rm_id.clone();
                charged_to(&rm, || self.allocation_request(req))
            }
            Command::Application(req) => {
                let rm = req.rm_id.clone();
                charged_to(&rm, || self.application_request(req))
            }
            Command::Node(req) => {
                let rm = req.rm_id.clone();
                charged_to(&rm, || self.node_request(req))
            }
            Command::SetPolicyConfig {
                policy_group,
                yaml,
                reply,
            } => reply.send(self.answer("SetPolicyConfig", |core| {
                core.set_policy_config(&policy_group, yaml)
            })),
            Command::ConfigTarget { text, reply } => {
                reply.send(self.answer("PUT /ws/v1/config", |core| core.config_target(&text)))
            }
            Command::ApplyConfigText {
                rm_id,
                text,
                expected_checksum,
                registration,
                reply,
            } => {
                let applied = self.answer("PUT /ws/v1/config", |core| {
                    Ok(core.apply_config_txn(
                        &rm_id,
                        text,
                        expected_checksum.as_deref(),
                        &registration,
                    ))
                });
                // A panic is a failed apply too: the caller still learns
                // the text in force, to give the RM back.
                reply.send(applied.unwrap_or_else(|error| {
                    Err(ApplyRefused::Failed {
                        in_force: self.config_text_of(&rm_id),
                        error,
                    })
                }))
            }
            Command::WatchApply {
                rm_id,
                policy_group,
                loaded,
                reply,
            } => reply.send(self.watch_apply(&rm_id, &policy_group, *loaded)),
            Command::WatchRejected {
                rm_id,
                policy_group,
                source,
                reason,
            } => self.watch_rejected(&rm_id, &policy_group, &source, &reason),
            Command::Dump { settle, reply } => reply.send(self.answer("state dump", |core| {
                if settle {
                    core.schedule();
                    core.flush();
                }
                Ok(core.dump_json())
            })),
            Command::DumpParts { reply } => {
                reply.send((self.dump_core_json(), self.rm_dump_sources()))
            }
            Command::Snapshot(reply) => reply.send(self.snapshot()),
            Command::Shutdown => {}
        }
    }

    /// Notes that `rm_id`'s partitions may have changed.
    fn touch(&mut self, rm_id: &str) {
        if !self.touched.contains(rm_id) {
            self.touched.insert(rm_id.to_string());
        }
    }

    /// Drops the timers that can no longer do anything: their application
    /// left the state they were set for, or is gone. Timers are not
    /// cancelled when that happens (a state change is the hot path), so a
    /// busy cluster would hold every start timer until it fires, minutes
    /// later. Sweeping when the pending set has doubled since the last sweep
    /// keeps it at most twice the live timers, at amortised O(1) a timer.
    fn sweep_timers(&mut self) {
        let partitions = &self.partitions;
        self.timer_data.retain(|_, t| {
            partitions
                .get(&t.partition)
                .is_some_and(|p| p.timer_is_live(t))
        });
        let live = &self.timer_data;
        self.timers
            .retain(|Reverse((_, seq))| live.contains_key(seq));
        self.timer_sweep_at = (2 * self.timer_data.len()).max(TIMER_SWEEP_MIN);
    }

    /// Hands what the last step produced to the outbox, in order. The
    /// dispatcher announces new allocations through `ReSyncSchedulerCache`
    /// right before the `UpdateAllocation` that carries them, so the core
    /// never waits on the RM for either (except through the `new` barrier
    /// of an RM with `Predicates`, `scheduler::resync`).
    fn flush(&mut self) {
        for (rm_id, out) in std::mem::take(&mut self.outcomes) {
            for t in out.timers {
                self.timer_seq += 1;
                self.timers.push(Reverse((t.at, self.timer_seq)));
                self.timer_data.insert(self.timer_seq, t);
            }
            if self.timer_data.len() >= self.timer_sweep_at {
                self.sweep_timers();
            }
            let Some(rm) = self.rms.get(&rm_id) else {
                continue;
            };
            let cb = rm.callback.key();
            self.metrics.count_messages(&out.messages);
            self.add_events(&rm_id, out.events);
            // What the barrier delivered on the core thread stays out of
            // the dispatcher's way.
            let skip = out.delivered.min(out.messages.len());
            for msg in out.messages.into_iter().skip(skip) {
                self.outbox.push(Outbound::Message(cb, msg));
            }
            // Released allocations are forgotten after their echo (spec 10.2).
            if !out.forget.is_empty() {
                let args = crate::proto::si::v1::ReSyncSchedulerCacheArgs {
                    assumed_allocations: Vec::new(),
                    forget_allocations: out.forget,
                };
                self.outbox.push(Outbound::Resync(cb, args));
            }
        }
        // After the step's own records: a queue's record of an application
        // follows the application's.
        self.collect_partition_records();
    }
}
