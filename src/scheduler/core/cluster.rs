//! The cluster the core holds: registered RMs, their partitions, and the
//! routing of each RM request to the partitions it names.

use std::sync::Arc;

use super::{Core, Registration};
use crate::config;
use crate::error::Error;
use crate::events::EventStats;
use crate::proto::si::v1 as si;
use crate::scheduler::objects::node;
use crate::scheduler::outcome::{OutMsg, Outcomes};
use crate::scheduler::partition::{AppTimeouts, Partition};
use crate::scheduler::partition_key::{resolve_partition, PartitionKey};
use crate::scheduler::port::RmPort;
use crate::scheduler::request::AllocationUpdate;
use crate::scheduler::resource;
use crate::scheduler::snapshot::{self, RmView, Snapshot, Stamp};

use si::node_info::ActionFromRm;

/// SI v1.x's `CREATE_DRAIN` node action, as the raw value the v1 edge
/// leaves in the v0.12 `NodeInfo.action` (the v0.12 enum lacks it): the
/// node is created unschedulable (CREATE then DRAIN_NODE, one answer).
///
/// The node contract for RMs of edition `V1`: every node of a
/// `NodeRequest` gets exactly one `accepted` or `rejected` entry, whatever
/// its action (CREATE, CREATE_DRAIN, UPDATE, DRAIN_NODE,
/// DRAIN_TO_SCHEDULABLE, DECOMISSION) and whatever goes wrong (duplicate
/// node, bad resource, unknown partition, node or action); an UPDATE sets
/// the schedulable resource only (occupied is the sum of the node's
/// foreign allocations). v0.12 answers CREATE only, and action 6 is no
/// action there.
pub const CREATE_DRAIN: i32 = 6;

use crate::events::{EventStore, EventTypes, Record, RmEventSettings, STORE_CAPACITY};
use crate::scheduler::edition::{ConfigOrigin, Edition};
use crate::scheduler::order::RmOrder;
use crate::scheduler::outcome::RmKey;

/// What the core keeps per registered RM.
pub struct RmState {
    /// The RM's callbacks, behind the order that keeps its messages in
    /// order and its callbacks one at a time (`scheduler::order`).
    pub callback: Arc<RmOrder>,
    /// Policy group of the configuration.
    pub policy_group: String,
    /// The interface edition it registered through.
    pub edition: Edition,
    /// Where the configuration came from.
    pub config_source: String,
    /// Checksum of the configuration in force.
    pub checksum: String,
    /// Text of the configuration in force (for `GET /ws/v1/config`).
    pub config_text: String,
    /// Keys of its partitions.
    pub partitions: Vec<PartitionKey>,
    /// What it said of its build at registration.
    pub build_info: std::collections::BTreeMap<String, String>,
    /// Whether it registered as SI v1.9 or later.
    pub v19: bool,
}

/// The rmIDs the core holds, with the edition each registered through,
/// shared read-only with the calling side; only the core writes it, as it
/// applies registrations.
pub type Registry = Arc<parking_lot::RwLock<std::collections::HashMap<String, Edition>>>;

impl Core {
    pub(super) fn timeouts(&self) -> AppTimeouts {
        AppTimeouts::from_options(&self.options)
    }

    /// The timers of a partition of `rm_id`, with the record types its
    /// store takes (none when the RM's events are off).
    pub(super) fn timeouts_for(&self, rm_id: &str) -> AppTimeouts {
        let mut t = self.timeouts();
        let (edition, v19) = self
            .rms
            .get(rm_id)
            .map_or((Edition::V012, true), |rm| (rm.edition, rm.v19));
        t.events = self
            .event_types_for(self.events.contains_key(rm_id), edition)
            .for_release(v19);
        t
    }

    /// The record types an RM's partitions make: none when its events are
    /// off; the structured ones (USERGROUP, QUEUE changes) only for SI v1.x.
    fn event_types_for(&self, on: bool, edition: Edition) -> EventTypes {
        if on {
            self.options
                .event_types
                .for_edition(edition == Edition::V1)
                .with_trace()
        } else {
            EventTypes::of(&[])
        }
    }

    /// The store bound an RM with `settings` gets, or `None` when its
    /// events are off: its own settings, else the scheduler's options.
    fn store_capacity(&self, settings: &RmEventSettings) -> Option<usize> {
        let on = settings.tracking.unwrap_or(!self.options.disable_events);
        on.then(|| settings.request_capacity.unwrap_or(STORE_CAPACITY))
    }

    /// Drops the RM's store; its records are not delivered, its counters
    /// stay in the totals.
    fn retire_events(&mut self, rm_id: &str) {
        if let Some(store) = self.events.remove(rm_id) {
            let stats = store.stats();
            self.events_retired
                .merge(&EventStats { stored: 0, ..stats });
        }
    }

    /// Applies new event settings of a registered RM: its store goes,
    /// comes or changes its bound, and its partitions build the record
    /// types it now takes. Only this RM's records are affected.
    pub(super) fn set_rm_events(&mut self, rm_id: &str, settings: RmEventSettings) {
        let Some(rm) = self.rms.get(rm_id) else {
            return;
        };
        let (edition, v19) = (rm.edition, rm.v19);
        let by_kind = edition == Edition::V1;
        match self.store_capacity(&settings) {
            None => self.retire_events(rm_id),
            Some(capacity) => match self.events.get_mut(rm_id) {
                Some(store) => store.set_capacity(capacity),
                None => {
                    self.events
                        .insert(rm_id.to_string(), EventStore::new(by_kind, capacity));
                }
            },
        }
        self.configure_ring(settings.ring);
        let types = self
            .event_types_for(self.events.contains_key(rm_id), edition)
            .for_release(v19);
        let rm = &self.rms[rm_id];
        for key in &rm.partitions {
            if let Some(p) = self.partitions.get_mut(key) {
                p.set_event_types(types);
            }
        }
    }

    pub(super) fn remove_rm(&mut self, rm_id: &str) {
        self.registry.write().remove(rm_id);
        if let Some(rm) = self.rms.remove(rm_id) {
            for p in rm.partitions {
                self.partitions.remove(&p);
            }
        }
        self.outcomes.remove(rm_id);
        // Records meant for the old registration are not delivered to the new one.
        self.retire_events(rm_id);
        self.sync_ring();
    }

    pub(super) fn register(
        &mut self,
        r: Registration,
        callback: Arc<dyn RmPort>,
    ) -> Result<(), Error> {
        let Registration {
            rm_id,
            policy_group,
            edition,
            config: origin,
            events,
            build_info,
            v19,
        } = r;
        let (rm_id, policy_group) = (rm_id.as_str(), policy_group.as_str());
        // Re-registration starts afresh (spec 1.4): the RM's old state goes
        // first, so a failed re-registration leaves it unregistered.
        self.remove_rm(rm_id);
        let grammar = edition.quantity_grammar();
        let loaded = match origin {
            ConfigOrigin::PolicyGroup => config::load_with(
                policy_group,
                &self.options.config_dir,
                &self.options.policy_configs,
                grammar,
            ),
            ConfigOrigin::Text(text) if text.trim().is_empty() => config::from_text_with(
                config::DEFAULT_CONFIG_V1.to_string(),
                "built-in SI v1.x default".to_string(),
                grammar,
            ),
            ConfigOrigin::Text(text) => config::from_text_with(
                text,
                "RegisterResourceManager request".to_string(),
                grammar,
            ),
        }
        .map_err(|e| {
                Error::rejected(format!(
                    "registration of RM {rm_id} failed: configuration for policy group '{policy_group}': {e}"
                ))
            })?;
        // The configuration's new resource names are charged to the policy
        // group only once every partition of it is built.
        let capacity = self.store_capacity(&events);
        let mut timeouts = self.timeouts();
        timeouts.events = self
            .event_types_for(capacity.is_some(), edition)
            .for_release(v19);
        let created = resource::configuration(policy_group, || {
            let mut created = Vec::new();
            for pc in &loaded.config.partitions {
                let p = Partition::new(rm_id, pc, timeouts, self.clock.clone()).map_err(|e| {
                    Error::rejected(format!(
                        "registration of RM {rm_id} failed: partition {}: {e}",
                        pc.name
                    ))
                })?;
                created.push(p);
            }
            resource::keep_configuration_names();
            Ok::<_, Error>(created)
        })?;
        let names = created.iter().map(|p| p.key().clone()).collect();
        for mut p in created {
            p.set_edition(edition);
            self.partitions.insert(p.key().clone(), p);
        }
        log::info!(
            "RM {rm_id} registered with policy group '{policy_group}' from {}",
            loaded.source
        );
        self.registrations += 1;
        let key = RmKey(self.registrations);
        self.rms.insert(
            rm_id.to_string(),
            RmState {
                callback: RmOrder::new(key, callback, self.wake.clone()),
                policy_group: policy_group.to_string(),
                edition,
                config_source: loaded.source,
                checksum: loaded.config.checksum,
                config_text: loaded.text,
                partitions: names,
                build_info,
                v19,
            },
        );
        if let Some(capacity) = capacity {
            // The store knows the edition's keying from here on.
            self.events.insert(
                rm_id.to_string(),
                EventStore::new(edition == Edition::V1, capacity),
            );
        }
        self.configure_ring(events.ring);
        self.registry.write().insert(rm_id.to_string(), edition);
        Ok(())
    }

    pub(super) fn allocation_request(&mut self, req: AllocationUpdate) {
        let rm = req.rm_id.clone();
        let mut out = self.outcomes.remove(&rm).unwrap_or_default();
        let mut rejected = Vec::new();
        // The per-RM limit on waiting asks, over all the RM's partitions.
        let limit = self.options.max_asks_per_rm;
        let mut waiting: u64 = self.rms.get(&rm).map_or(0, |r| {
            r.partitions
                .iter()
                .filter_map(|k| self.partitions.get(k))
                .map(|p| p.waiting_asks() as u64)
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
                Ok((_, Some(p))) if waiting >= limit && p.adds_waiting(&ask.app, &ask.key) =>
                {
                    Err(format!(
                        "ask {} of application {} rejected: RM {rm} already holds {waiting} waiting asks, the limit set by SchedulerOptions.max_asks_per_rm",
                        ask.key, ask.app
                    ))
                }
                Ok((_, Some(p))) => {
                    let before = p.waiting_asks() as u64;
                    let added = p.take_ask(ask, &mut out);
                    waiting = (waiting + p.waiting_asks() as u64).saturating_sub(before);
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
        // Each queue taken asks re-filed once (take_ask).
        for p in self.partitions.values_mut() {
            p.settle_queues();
        }
        // SI v1.x: allocations with a node, then foreign ones (both empty
        // from v0.12).
        for placed in &req.placed {
            let a = &placed.ask;
            let result = match self.own_partition(&rm, &a.partition) {
                None => Err(format!(
                    "Failed to find partition {}, for application {} and allocation {}",
                    a.partition, a.app, a.key
                )),
                Some(p) => p.add_placed(placed, &mut out),
            };
            if let Err(reason) = result {
                rejected.push(si::RejectedAllocationAsk {
                    allocation_key: a.key.to_string(),
                    application_id: a.app.to_string(),
                    reason,
                });
            }
        }
        for f in &req.foreign {
            let result = match self.own_partition(&rm, &f.partition) {
                None => Err(format!(
                    "Failed to find partition {}, for foreign allocation {}",
                    f.partition, f.key
                )),
                Some(p) => p.set_foreign(f),
            };
            if let Err(reason) = result {
                rejected.push(si::RejectedAllocationAsk {
                    allocation_key: f.key.to_string(),
                    application_id: String::new(),
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

    pub(super) fn application_request(&mut self, req: si::ApplicationRequest) {
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

    pub(super) fn node_request(&mut self, req: si::NodeRequest) {
        let rm = req.rm_id.clone();
        // SI v1.x: every node gets an answer (the k8shim waits for each),
        // and CREATE_DRAIN exists.
        let v1 = self.rms.get(&rm).is_some_and(|r| r.edition == Edition::V1);
        let mut out = self.outcomes.remove(&rm).unwrap_or_default();
        let mut response = si::NodeResponse::default();
        for n in &req.nodes {
            let key = resolve_partition(
                &rm,
                n.attributes
                    .get(node::ATTR_PARTITION)
                    .map_or("", String::as_str),
            );
            let p = key.as_ref().ok().and_then(|k| self.partitions.get_mut(k));
            let create = n.action == ActionFromRm::Create as i32;
            let create_drain = v1 && n.action == CREATE_DRAIN;
            let result = if create || create_drain {
                // An unlimited node must come alone (spec 11.6); the
                // partition's own rules follow in `add_node`.
                let unlimited = node::is_unlimited(&n.attributes);
                match (p, &key) {
                    (_, Err(e)) => Err(e.clone()),
                    _ if unlimited && req.nodes.len() > 1 => Err(
                        "There are other nodes as well, registering unlimited nodes is forbidden"
                            .to_string(),
                    ),
                    (None, Ok(k)) => Err(format!(
                        "Failed to find partition {k} for new node {}",
                        n.node_id
                    )),
                    (Some(p), Ok(_)) => p.add_node(n, &mut out).map(|()| {
                        if create_drain {
                            // The ADD and the drain record both go out: a v1
                            // RM's store keeps one record per node and kind.
                            p.drain_node(&n.node_id, &mut out);
                        }
                    }),
                }
            } else {
                match (p, &key) {
                    (Some(p), _) => p.update_node(n, &mut out),
                    (None, Err(e)) => Err(format!(
                        "node {} names an invalid partition: {e}",
                        n.node_id
                    )),
                    (None, Ok(k)) => Err(format!("node {} names unknown partition {k}", n.node_id)),
                }
            };
            match result {
                Ok(()) if create || v1 => response.accepted.push(si::AcceptedNode {
                    node_id: n.node_id.clone(),
                }),
                Err(reason) if create || v1 => response.rejected.push(si::RejectedNode {
                    node_id: n.node_id.clone(),
                    reason,
                }),
                Ok(()) => {}
                // v0.12 answers CREATE only; the rest is logged.
                Err(reason) => log::warn!("{reason}; ignored"),
            }
        }
        if !response.accepted.is_empty() || !response.rejected.is_empty() {
            out.messages.push(OutMsg::Node(response));
        }
        self.outcomes.insert(rm, out);
    }

    /// The partition `name` of RM `rm_id`; `None` when it does not exist or
    /// names another RM's partition (callers ignore such entries, as spec
    /// 7.4 does for unknown partitions; the request check refused them
    /// already).
    fn own_partition(&mut self, rm_id: &str, name: &str) -> Option<&mut Partition> {
        let key = resolve_partition(rm_id, name).ok()?;
        self.partitions.get_mut(&key)
    }

    /// Outcomes for `rm_id`, delivered at the next flush.
    pub(super) fn outcomes_for(&mut self, rm_id: &str) -> &mut Outcomes {
        self.outcomes.entry(rm_id.to_string()).or_default()
    }

    /// One pass over every partition, each within [`super::PASS_BUDGET`].
    pub(super) fn schedule(&mut self) -> usize {
        let mut made = 0;
        let names: Vec<PartitionKey> = self.partitions.keys().cloned().collect();
        let touched = std::mem::take(&mut self.touched);
        let all = std::mem::replace(&mut self.all_touched, false);
        for name in names {
            let p = self.partitions.get_mut(&name).expect("listed");
            if p.nodes().is_empty() && !all && !touched.contains(p.rm_id()) {
                continue;
            }
            let rm = p.rm_id().to_string();
            let cb = self.rms.get(&rm).map(|r| r.callback.clone());
            let mut out = self.outcomes.remove(&rm).unwrap_or_default();
            let started = self.clock.now();
            let n = p.schedule(cb.as_deref(), super::PASS_BUDGET, &mut out);
            if n > 0 {
                self.metrics
                    .observe_scheduling(self.clock.now().saturating_duration_since(started));
            }
            made += n;
            self.outcomes.insert(rm, out);
        }
        made
    }

    /// Stores the records of the types the RM asked for, stamping those
    /// not stamped yet with the core's clock (one read per batch).
    pub(super) fn add_events(&mut self, rm_id: &str, mut records: Vec<Record>) {
        if records.is_empty() {
            return;
        }
        // No store: the RM's events are off (or it is gone).
        if !self.events.contains_key(rm_id) {
            return;
        }
        let unix = self.clock.unix_nanos();
        for r in &mut records {
            if r.base.timestamp_nano == 0 {
                r.base.timestamp_nano = unix;
            }
        }
        // The history keeps every record (the trace: application states,
        // allocations got and lost, preemptions); the RM gets only the
        // types it asked for, and never a record made for the history.
        let mut records = self.feed_ring(rm_id, records, None);
        let types = self.options.event_types;
        records.retain(|r| types.allows(r.base.r#type));
        if !records.is_empty() {
            let Some(store) = self.events.get_mut(rm_id) else {
                return;
            };
            store.add_all(records, self.clock.now());
        }
    }

    /// Moves the structured records the partitions collected (USERGROUP
    /// and QUEUE changes, SI v1.x RMs only) into their RMs' stores. The
    /// partitions make none unless an option asks for such a type, so with
    /// the default types this is one check per step.
    pub(super) fn collect_partition_records(&mut self) {
        if !self.options.event_types.any_structured() {
            return;
        }
        let unix = self.clock.unix_nanos();
        let now = self.clock.now();
        let mut taken = Vec::new();
        for p in self.partitions.values_mut() {
            if p.has_records() {
                taken.push((p.key().clone(), p.take_records()));
            }
        }
        let types = self.options.event_types;
        for (key, mut records) in taken {
            if !self.events.contains_key(&key.rm_id) {
                continue;
            }
            records.retain(|r| types.allows(r.base.r#type));
            for r in &mut records {
                if r.base.timestamp_nano == 0 {
                    r.base.timestamp_nano = unix;
                }
            }
            let records = self.feed_ring(&key.rm_id, records, Some(&key));
            if let Some(store) = self.events.get_mut(&key.rm_id) {
                store.add_all(records, now);
            }
        }
    }

    /// Event counters for the state dump.
    pub(super) fn event_stats(&self) -> EventStats {
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

    /// The copy of the state every reader renders from.
    pub fn snapshot(&self) -> Snapshot {
        snapshot::build(
            self.rms.iter().map(|(id, rm)| RmView {
                rm_id: id,
                policy_group: &rm.policy_group,
                config_source: &rm.config_source,
                checksum: &rm.checksum,
                config_text: &rm.config_text,
                event_capacity: self.events.get(id.as_str()).map(EventStore::capacity),
                grammar: rm.edition.quantity_grammar(),
                build_info: &rm.build_info,
            }),
            self.partitions.values(),
            self.event_stats(),
            Stamp {
                now: self.clock.now(),
                now_unix: self.clock.unix_nanos(),
                started: self.started,
            },
        )
        .with_event_ring(self.ring.clone())
    }

    /// The state dump, the RMs' own dumps included (asked here, on the
    /// core thread: the RM's own synchronous `sicore_state_dump`).
    pub fn dump_json(&self) -> String {
        let parts = self
            .rm_dump_sources()
            .into_iter()
            .filter_map(|(id, cb)| cb.state_dump().map(|d| (id, d)))
            .collect();
        crate::scheduler::dump::with_rm_dumps(self.dump_core_json(), parts)
    }

    /// The state dump without the RMs' own parts.
    pub fn dump_core_json(&self) -> String {
        crate::scheduler::dump::render(&self.snapshot())
    }

    /// The RMs that may add a part of their own to the state dump.
    pub fn rm_dump_sources(&self) -> Vec<super::command::RmDumpSource> {
        self.rms
            .iter()
            .map(|(id, rm)| {
                let cb: Arc<dyn RmPort> = rm.callback.clone();
                (id.clone(), cb)
            })
            .collect()
    }
}

#[cfg(test)]
#[path = "v1_tests/mod.rs"]
mod v1_tests;
