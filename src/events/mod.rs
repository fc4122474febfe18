//! The event store behind `SendEvent` (spec 13): records produced on the
//! core thread are collected here, only the latest record per object is
//! kept, the number of distinct objects between two flushes is bounded,
//! and a periodic flush hands everything collected to the RM as one batch.
//!
//! The store has no thread of its own: the core feeds it from
//! `Outcomes.events` and asks it for a batch when the flush period is up.
//!
//! A [`Record`] is the v0.12 message the core has always made (type,
//! object, group, reason, message), plus, for the records only SI v1.x can
//! express (USERGROUP and the structured QUEUE records), a [`Structured`]
//! part: the change type, detail and resource. Each edition's edge maps
//! it; the v0.12 edge never sends a structured record.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::proto::si::v1 as si;

pub mod ring;

/// Most records accepted from one step of the core before the rest are
/// dropped (the reference's event channel capacity).
pub const INPUT_CAPACITY: usize = 100_000;
/// Most distinct objects kept between two flushes, unless the RM sets
/// its own (SI v1.x `event.requestCapacity`; the reference's default).
pub const STORE_CAPACITY: usize = 1_000;
/// The largest store capacity an RM may set: as many records as one core
/// step may hand in. A larger value is refused (logged and ignored).
pub const MAX_STORE_CAPACITY: usize = INPUT_CAPACITY;

/// Reason of the `REQUEST` record of an ask skipped for its queue's
/// headroom (spec 13.2).
pub const REASON_QUEUE_HEADROOM: &str = "InsufficientQueueResources";
/// Reason of the `REQUEST` record of an ask a node's predicates refused.
pub const REASON_PREDICATE_REFUSED: &str = "PredicateRefused";
/// Reason of the `REQUEST` record that says why an ask waits
/// (docs/why-pending.md): one when its cause changes, at most one a
/// minute while it stays.
pub const REASON_PENDING: &str = "WhyPending";
/// Shortest time between two records of one of the "not placed yet"
/// reasons ([`REASON_QUEUE_HEADROOM`], [`REASON_PREDICATE_REFUSED`]) for
/// the same ask: the reference v1.8 limits its predicate-failure records
/// to one per 15 seconds per ask. Every pass that tries an unplaceable ask
/// makes such a record, and the RM turns each into a pod event.
pub const REQUEST_EVENT_INTERVAL: Duration = Duration::from_secs(15);

/// Which of the reasons that repeat while an ask waits (and so are
/// limited to one per [`REQUEST_EVENT_INTERVAL`] per ask) a record has.
fn repeating(kind: i32, reason: &str) -> Option<usize> {
    if kind != si::event_record::Type::Request as i32 {
        return None;
    }
    match reason {
        REASON_QUEUE_HEADROOM => Some(0),
        REASON_PREDICATE_REFUSED => Some(1),
        _ => None,
    }
}

/// The event settings one RM chose (SI v1.x `extraConfig`); `None` is the
/// default: the scheduler's options, [`STORE_CAPACITY`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RmEventSettings {
    /// `event.trackingEnabled`: records for this RM at all.
    pub tracking: Option<bool>,
    /// `event.requestCapacity`: most distinct objects between two flushes.
    pub request_capacity: Option<usize>,
    /// The REST history's keys (`event.ringBufferCapacity`, the stream
    /// limits, `event.RESTResponseSize`): scheduler-wide, see [`ring`].
    pub ring: ring::RingSettings,
}

/// Reasons of records that mark a transition into or out of a state (the
/// user quota of a request, limits.md 6.1; the user/group application cap
/// of an application, 6.2). Each is sent once per transition, so none may
/// hide another record of its object in a flush, nor be hidden by one:
/// both editions keep them apart by reason. A request's cause changing
/// ([`REASON_PENDING`]) is such a transition too.
pub const TRANSITION_REASONS: [&str; 5] = [
    "UserQuotaExceeded",
    "UserQuotaAvailable",
    "AppCannotRunQuota",
    "AppRunnableQuota",
    REASON_PENDING,
];

/// The record type of user and group records (SI v1.x `USERGROUP`; SI
/// v0.12 has no such type, so its enum does not name it).
pub const TYPE_USERGROUP: i32 = 5;
/// The record type of queue records (both editions).
pub const TYPE_QUEUE: i32 = si::event_record::Type::Queue as i32;

/// What a structured record says changed (SI v1.x `ChangeType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Change {
    /// A value was set (SET).
    Set,
    /// Something was added (ADD).
    Add,
    /// Something was removed or cleared (REMOVE).
    Remove,
}

/// The detail of a structured record (SI v1.x `ChangeDetail`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Detail {
    /// DETAILS_NONE (a configured queue added or removed).
    None,
    /// QUEUE_DYNAMIC: a dynamic queue added or removed.
    QueueDynamic,
    /// QUEUE_TYPE: a queue turned leaf or parent.
    QueueType,
    /// QUEUE_MAX: a queue's max changed (the resource is the new one).
    QueueMax,
    /// QUEUE_GUARANTEED: a queue's guarantee changed.
    QueueGuaranteed,
    /// QUEUE_APP: an application added to or removed from a queue.
    QueueApp,
    /// UG_USER_LIMIT: a user's cap at a queue set or cleared.
    UserLimit,
    /// UG_GROUP_LIMIT: a group's cap at a queue set or cleared.
    GroupLimit,
    /// UG_APP_LINK: an application linked to or unlinked from a group.
    AppLink,
    /// UG_USER_RESOURCE: a user's usage grew (ADD) or shrank (REMOVE) by
    /// the record's resource.
    UserResource,
    /// UG_GROUP_RESOURCE: the same for a group.
    GroupResource,
    /// QUEUE_PREEMPTION (SI v1.9): the summary of a quota-change
    /// preemption run (the resource is the queue's max).
    QueuePreemption,
    /// APP_ALLOC: an application got an allocation (the reference is its
    /// key, the resource its size).
    AppAlloc,
    /// ALLOC_CANCEL: an allocation went because the RM released it or its
    /// application ended.
    AllocCancel,
    /// ALLOC_PREEMPT: an allocation was taken back by preemption.
    AllocPreempt,
    /// ALLOC_NODEREMOVED: an allocation went with its node.
    AllocNodeRemoved,
}

impl Detail {
    /// Whether the record's resource is a change of usage: two such
    /// records of one tracker, queue and direction add up.
    pub fn is_delta(self) -> bool {
        matches!(self, Detail::UserResource | Detail::GroupResource)
    }
}

/// The part of a record only SI v1.x can carry.
#[derive(Debug, Clone, PartialEq)]
pub struct Structured {
    /// The change type.
    pub change: Change,
    /// The change detail.
    pub detail: Detail,
    /// The resource it concerns (a usage delta, a queue's new max).
    pub resource: Option<si::Resource>,
}

/// One record as the core makes it, edition-neutral: `base` is what SI
/// v0.12 sends (for a structured record `group_id` is the v1.8
/// `referenceID` and the reason is empty); `structured` is set only on
/// records that exist in SI v1.x alone.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    /// The v0.12 fields.
    pub base: si::EventRecord,
    /// The SI v1.x change, detail and resource, for records SI v0.12
    /// cannot express.
    pub structured: Option<Structured>,
    /// For a record both editions send, the resource only SI v1.x has a
    /// field for (a NODE record's capacity); the v0.12 edge drops it.
    pub v1_resource: Option<si::Resource>,
    /// A trace record the RM did not ask for (docs/why-pending.md,
    /// "Trace"): it enters the REST history only, never `SendEvent`.
    pub ring_only: bool,
}

impl Record {
    /// The record with `resource` for the SI v1.x edge.
    pub fn with_v1_resource(mut self, resource: si::Resource) -> Self {
        self.v1_resource = Some(resource);
        self
    }
}

impl From<si::EventRecord> for Record {
    fn from(base: si::EventRecord) -> Self {
        Record {
            base,
            structured: None,
            v1_resource: None,
            ring_only: false,
        }
    }
}

/// Builds one SI v1.x structured record (type [`TYPE_QUEUE`] or
/// [`TYPE_USERGROUP`]), stamped when stored as [`record`]'s are.
pub fn structured(
    kind: i32,
    object_id: &str,
    reference_id: &str,
    change: Change,
    detail: Detail,
    resource: Option<si::Resource>,
    message: String,
) -> Record {
    Record {
        base: si::EventRecord {
            r#type: kind,
            object_id: object_id.to_string(),
            group_id: reference_id.to_string(),
            reason: String::new(),
            message,
            timestamp_nano: 0,
        },
        structured: Some(Structured {
            change,
            detail,
            resource,
        }),
        v1_resource: None,
        ring_only: false,
    }
}

/// Adds the quantities of `from` to `into`, saturating.
fn add_resource(into: &mut si::Resource, from: &si::Resource) {
    for (name, q) in &from.resources {
        let v = &mut into.resources.entry(name.clone()).or_default().value;
        *v = v.saturating_add(q.value);
    }
}

/// Builds one record. It is stamped when the core stores it, from the
/// core's clock (one read per step), so this layer reads no time itself.
pub fn record(
    kind: si::event_record::Type,
    object_id: &str,
    group_id: &str,
    reason: &str,
    message: String,
) -> si::EventRecord {
    si::EventRecord {
        r#type: kind as i32,
        object_id: object_id.to_string(),
        group_id: group_id.to_string(),
        reason: reason.to_string(),
        message,
        timestamp_nano: 0,
    }
}

/// The record types that reach `SendEvent` (`SchedulerOptions.event_types`).
///
/// A v0.12 RM handles `REQUEST` and `NODE` records and warns about any
/// other type, so those two are the default; `APP`, `QUEUE` and
/// `USERGROUP` are opt-in. `USERGROUP` records, and the structured `QUEUE`
/// records, are made only for SI v1.x RMs: the set a partition of a v1.8
/// RM holds says so ([`EventTypes::for_edition`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventTypes(u8);

/// Record type names as the SI enums spell them, in enum order.
const TYPE_NAMES: [(&str, i32); 5] = [
    ("REQUEST", si::event_record::Type::Request as i32),
    ("APP", si::event_record::Type::App as i32),
    ("NODE", si::event_record::Type::Node as i32),
    ("QUEUE", TYPE_QUEUE),
    ("USERGROUP", TYPE_USERGROUP),
];

/// The bit that says the records go to an SI v1.x RM.
const STRUCTURED: u8 = 1 << 7;

/// The bit that says that RM registered as SI v1.9 or later, and takes
/// the records v1.9 added (the `QUEUE_PREEMPTION` summary).
const SI_1_9: u8 = 1 << 6;

/// The bit that says the RM's events are on, so the REST history keeps
/// its trace (allocations got and lost, preemptions), whatever types the
/// RM takes. Bit 0: no record type has the value 0.
const TRACE: u8 = 1;

impl Default for EventTypes {
    fn default() -> Self {
        EventTypes::of(&[
            si::event_record::Type::Request,
            si::event_record::Type::Node,
        ])
    }
}

impl EventTypes {
    /// The set of the given types.
    pub fn of(types: &[si::event_record::Type]) -> Self {
        EventTypes(types.iter().fold(0, |m, t| m | Self::bit(*t as i32)))
    }

    fn bit(t: i32) -> u8 {
        if (1..=TYPE_USERGROUP).contains(&t) {
            1 << t
        } else {
            0
        }
    }

    /// Parses the option's names (case-insensitive); an empty list means
    /// the default. An unknown name is an error naming it.
    pub fn parse(names: &[String]) -> Result<Self, String> {
        if names.is_empty() {
            return Ok(EventTypes::default());
        }
        let mut mask = 0;
        for name in names {
            let Some((_, t)) = TYPE_NAMES
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(name.trim()))
            else {
                return Err(format!(
                    "SchedulerOptions.event_types: unknown event type '{name}', expected REQUEST, APP, NODE, QUEUE or USERGROUP"
                ));
            };
            mask |= Self::bit(*t);
        }
        Ok(EventTypes(mask))
    }

    /// Whether records of type `t` (the SI enum value) are sent.
    pub fn allows(self, t: i32) -> bool {
        self.0 & Self::bit(t) != 0
    }

    /// The set one RM's partitions make: for an SI v1.x RM (`structured`)
    /// the structured records of the types allowed too; for an SI v0.12
    /// RM no `USERGROUP` record, whatever the option lists.
    pub fn for_edition(self, structured: bool) -> Self {
        if structured {
            EventTypes(self.0 | STRUCTURED)
        } else {
            EventTypes(self.0 & !STRUCTURED & !Self::bit(TYPE_USERGROUP))
        }
    }

    /// The set for an RM of SI v1.9 or later (`v19`) or of v1.8.
    pub fn for_release(self, v19: bool) -> Self {
        if v19 {
            EventTypes(self.0 | SI_1_9)
        } else {
            EventTypes(self.0 & !SI_1_9)
        }
    }

    /// The set with the trace on (the RM's events are on).
    pub fn with_trace(self) -> Self {
        EventTypes(self.0 | TRACE)
    }

    /// Whether the trace records are made (they enter the REST history;
    /// only those of a type the RM takes reach it).
    #[inline]
    pub fn trace(self) -> bool {
        self.0 & TRACE != 0
    }

    /// Whether quota-change runs send their `QUEUE_PREEMPTION` summary:
    /// an RM of SI v1.9 or later that takes QUEUE records.
    #[inline]
    pub fn queue_preemption(self) -> bool {
        self.0 & SI_1_9 != 0 && self.structured(TYPE_QUEUE)
    }

    /// Whether structured records of type `t` are made (an SI v1.x RM
    /// that takes type `t`): the gate checked before building one.
    #[inline]
    pub fn structured(self, t: i32) -> bool {
        self.0 & STRUCTURED != 0 && self.allows(t)
    }

    /// Whether some structured record may be made for any RM.
    pub fn any_structured(self) -> bool {
        self.allows(TYPE_QUEUE) || self.allows(TYPE_USERGROUP)
    }

    /// The names of the types sent, in enum order.
    pub fn names(self) -> Vec<String> {
        TYPE_NAMES
            .iter()
            .filter(|(_, t)| self.allows(*t))
            .map(|(n, _)| n.to_string())
            .collect()
    }
}

/// Counters shown in the state dump.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct EventStats {
    /// Whether the event system is on.
    pub enabled: bool,
    /// Flush period in milliseconds.
    pub flush_interval_ms: u64,
    /// Record types sent (`SchedulerOptions.event_types`).
    pub types: Vec<String>,
    /// Records accepted into the store.
    pub received: u64,
    /// Records that replaced an older record of the same object.
    pub superseded: u64,
    /// Records dropped because one step produced more than the input capacity.
    pub dropped_input: u64,
    /// Records dropped because the store already held the most objects.
    pub dropped_store_full: u64,
    /// "Not placed yet" records dropped because the same ask had one less
    /// than [`REQUEST_EVENT_INTERVAL`] before.
    pub rate_limited: u64,
    /// Records handed to `SendEvent`.
    pub published: u64,
    /// `SendEvent` batches.
    pub batches: u64,
    /// Records waiting for the next flush.
    pub stored: u64,
}

impl EventStats {
    /// Adds another store's counters to these.
    pub fn merge(&mut self, o: &EventStats) {
        self.received += o.received;
        self.superseded += o.superseded;
        self.dropped_input += o.dropped_input;
        self.dropped_store_full += o.dropped_store_full;
        self.rate_limited += o.rate_limited;
        self.published += o.published;
        self.batches += o.batches;
        self.stored += o.stored;
    }
}

/// What the store keeps one record of: type, application (`REQUEST`
/// records only), object, the kind (reason, where the edition keeps kinds
/// apart) and, for a structured record, its change and detail and its
/// reference (so one user's usage at two queues, or one group's links to
/// two applications, stay apart).
type Key = (
    i32,
    String,
    String,
    String,
    Option<(Change, Detail)>,
    String,
);

/// A stored record: its arrival order, when it was made, the record.
type Stored = (u64, Instant, Record);

/// Latest record per object, bounded, for one RM.
#[derive(Debug)]
pub struct EventStore {
    /// Keyed by record type and object id: an application and an ask may
    /// share an id without hiding each other.
    /// Each record with the order it arrived in (records of one step
    /// share a timestamp, and keep their creation order by this).
    /// SI v1.x: the reason is part of the key as well, so one object's
    /// records of different kinds in one flush all go out (a node's ADD is
    /// not hidden by the drain record of its CREATE_DRAIN; the v1 RM reads
    /// NODE ADD), while repeats of one kind still coalesce. Structured
    /// records are keyed by change, detail and reference too; usage
    /// records of one key add up instead of replacing each other.
    /// A `REQUEST` record's object is its ask: the application (group id)
    /// and the allocation key, so two applications' asks of one key do not
    /// hide each other.
    latest: HashMap<Key, Stored>,
    /// When each ask (application, allocation key) last had a record of
    /// each repeating reason sent (the time the record was made); entries
    /// older than the interval are pruned at every flush, so this holds at
    /// most the asks of one interval. Stamped when the record goes out, not
    /// when it is stored: a stored record that a newer one of its object
    /// replaced (SI v0.12: one record per object) never reached the RM, so
    /// it must not hold back the next record of its reason.
    last_repeat: HashMap<(String, String), [Option<Instant>; 2]>,
    next_seq: u64,
    stats: EventStats,
    by_kind: bool,
    capacity: usize,
}

impl Default for EventStore {
    /// The SI v0.12 edition's store: the latest record per object.
    fn default() -> Self {
        EventStore::new(false, STORE_CAPACITY)
    }
}

impl EventStore {
    /// A store of at most `capacity` records between flushes; `by_kind`
    /// keeps the latest record per object and kind (reason), the SI v1.x
    /// edition's rule, instead of per object, and takes structured records
    /// (the SI v0.12 store drops them: that edition has no such record).
    pub fn new(by_kind: bool, capacity: usize) -> Self {
        EventStore {
            latest: HashMap::new(),
            last_repeat: HashMap::new(),
            next_seq: 0,
            stats: EventStats::default(),
            by_kind,
            capacity,
        }
    }

    /// The SI v1.x edition's store with the default capacity.
    pub fn by_kind() -> Self {
        EventStore::new(true, STORE_CAPACITY)
    }

    /// Changes the bound on distinct objects. Records already held stay
    /// until the next flush even when there are more than the new bound.
    pub fn set_capacity(&mut self, capacity: usize) {
        self.capacity = capacity;
    }

    /// The bound on distinct objects between flushes.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Takes the records of one core step, made at `now`.
    pub fn add_all<I>(&mut self, records: I, now: Instant)
    where
        I: IntoIterator<Item = Record>,
        I::IntoIter: ExactSizeIterator,
    {
        let records = records.into_iter();
        let n = records.len();
        if n > INPUT_CAPACITY {
            self.stats.dropped_input += (n - INPUT_CAPACITY) as u64;
        }
        for r in records.take(INPUT_CAPACITY) {
            self.add(r, now);
        }
    }

    /// Stores one record made at `now`, replacing an older one for the
    /// same object (and kind), unless it repeats a "not placed yet" record
    /// of its ask within [`REQUEST_EVENT_INTERVAL`]. A usage record is
    /// added to the one of its key instead.
    pub fn add(&mut self, r: impl Into<Record>, now: Instant) {
        let r = r.into();
        let shape = r.structured.as_ref().map(|s| (s.change, s.detail));
        if shape.is_some() && !self.by_kind {
            log::debug!("SI v1.x record dropped for an SI v0.12 RM: {r:?}");
            return;
        }
        if r.base.object_id.is_empty() || (shape.is_none() && r.base.reason.is_empty()) {
            log::debug!("event record without object id or reason dropped: {r:?}");
            return;
        }
        let is_request = r.base.r#type == si::event_record::Type::Request as i32;
        if let Some(i) = repeating(r.base.r#type, &r.base.reason) {
            let ask = (r.base.group_id.clone(), r.base.object_id.clone());
            let recent = self.last_repeat.get(&ask).and_then(|at| at[i]);
            if recent.is_some_and(|at| now.saturating_duration_since(at) < REQUEST_EVENT_INTERVAL) {
                self.stats.rate_limited += 1;
                return;
            }
        }
        let kind = if self.by_kind || TRANSITION_REASONS.contains(&r.base.reason.as_str()) {
            r.base.reason.clone()
        } else {
            String::new()
        };
        let app = if is_request {
            r.base.group_id.clone()
        } else {
            String::new()
        };
        let reference = if shape.is_some() {
            r.base.group_id.clone()
        } else {
            String::new()
        };
        let key = (
            r.base.r#type,
            app,
            r.base.object_id.clone(),
            kind,
            shape,
            reference,
        );
        self.next_seq += 1;
        let seq = self.next_seq;
        if let Some(slot) = self.latest.get_mut(&key) {
            let delta = r
                .structured
                .as_ref()
                .filter(|s| s.detail.is_delta())
                .and_then(|s| s.resource.as_ref());
            let held = slot.2.structured.as_mut().and_then(|s| s.resource.as_mut());
            match (delta, held) {
                // Usage of one tracker, queue and direction: the sum goes.
                (Some(d), Some(h)) => {
                    add_resource(h, d);
                    slot.0 = seq;
                    slot.2.base.timestamp_nano = r.base.timestamp_nano;
                }
                _ => *slot = (seq, now, r),
            }
            self.stats.superseded += 1;
            self.stats.received += 1;
        } else if self.latest.len() >= self.capacity {
            self.stats.dropped_store_full += 1;
        } else {
            self.latest.insert(key, (seq, now, r));
            self.stats.received += 1;
        }
    }

    /// Empties the store at `now`; the records in creation order.
    pub fn take_batch(&mut self, now: Instant) -> Vec<Record> {
        if !self.last_repeat.is_empty() {
            let live = |at: &mut Option<Instant>| {
                if at.is_some_and(|t| now.saturating_duration_since(t) >= REQUEST_EVENT_INTERVAL) {
                    *at = None;
                }
                at.is_some()
            };
            self.last_repeat
                .retain(|_, at| at.iter_mut().fold(false, |any, t| live(t) | any));
        }
        let mut batch: Vec<Stored> = self.latest.drain().map(|(_, r)| r).collect();
        batch.sort_by(|(sa, _, a), (sb, _, b)| {
            a.base
                .timestamp_nano
                .cmp(&b.base.timestamp_nano)
                .then(sa.cmp(sb))
        });
        // The records of the repeating reasons that go out now start their
        // ask's interval, from when they were made.
        for (_, made, r) in &batch {
            if let Some(i) = repeating(r.base.r#type, &r.base.reason) {
                let ask = (r.base.group_id.clone(), r.base.object_id.clone());
                let slot = &mut self.last_repeat.entry(ask).or_default()[i];
                if slot.is_none_or(|at| at < *made) {
                    *slot = Some(*made);
                }
            }
        }
        let batch: Vec<Record> = batch.into_iter().map(|(_, _, r)| r).collect();
        if !batch.is_empty() {
            self.stats.published += batch.len() as u64;
            self.stats.batches += 1;
        }
        batch
    }

    /// Counters (without the enabled flag and period).
    pub fn stats(&self) -> EventStats {
        EventStats {
            stored: self.latest.len() as u64,
            ..self.stats.clone()
        }
    }
}

#[cfg(test)]
mod tests;
