//! The event store behind `SendEvent` (spec 13): records produced on the
//! core thread are collected here, only the latest record per object is
//! kept, the number of distinct objects between two flushes is bounded,
//! and a periodic flush hands everything collected to the RM as one batch.
//!
//! The store has no thread of its own: the core feeds it from
//! `Outcomes.events` and asks it for a batch when the flush period is up.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::proto::si::v1 as si;

/// Most records accepted from one step of the core before the rest are
/// dropped (the reference's event channel capacity).
pub const INPUT_CAPACITY: usize = 100_000;
/// Most distinct objects kept between two flushes, unless the RM sets
/// its own (SI v1.8 `event.requestCapacity`; the reference's default).
pub const STORE_CAPACITY: usize = 1_000;
/// The largest store capacity an RM may set: as many records as one core
/// step may hand in. A larger value is refused (logged and ignored).
pub const MAX_STORE_CAPACITY: usize = INPUT_CAPACITY;

/// Reason of the `REQUEST` record of an ask skipped for its queue's
/// headroom (spec 13.2).
pub const REASON_QUEUE_HEADROOM: &str = "InsufficientQueueResources";
/// Reason of the `REQUEST` record of an ask a node's predicates refused.
pub const REASON_PREDICATE_REFUSED: &str = "PredicateRefused";
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

/// The event settings one RM chose (SI v1.8 `extraConfig`); `None` is the
/// default: the scheduler's options, [`STORE_CAPACITY`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RmEventSettings {
    /// `event.trackingEnabled`: records for this RM at all.
    pub tracking: Option<bool>,
    /// `event.requestCapacity`: most distinct objects between two flushes.
    pub request_capacity: Option<usize>,
}

/// Reasons of records that mark a transition into or out of a state (the
/// user quota of a request, limits.md 6.1; the user/group application cap
/// of an application, 6.2). Each is sent once per transition, so none may
/// hide another record of its object in a flush, nor be hidden by one:
/// both editions keep them apart by reason.
pub const TRANSITION_REASONS: [&str; 4] = [
    "UserQuotaExceeded",
    "UserQuotaAvailable",
    "AppCannotRunQuota",
    "AppRunnableQuota",
];

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
/// other type, so those two are the default; `APP` and `QUEUE` are opt-in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventTypes(u8);

/// Record type names as the SI enum spells them, in enum order.
const TYPE_NAMES: [(&str, si::event_record::Type); 4] = [
    ("REQUEST", si::event_record::Type::Request),
    ("APP", si::event_record::Type::App),
    ("NODE", si::event_record::Type::Node),
    ("QUEUE", si::event_record::Type::Queue),
];

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
        if (1..=4).contains(&t) {
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
                    "SchedulerOptions.event_types: unknown event type '{name}', expected REQUEST, APP, NODE or QUEUE"
                ));
            };
            mask |= Self::bit(*t as i32);
        }
        Ok(EventTypes(mask))
    }

    /// Whether records of type `t` (the SI enum value) are sent.
    pub fn allows(self, t: i32) -> bool {
        self.0 & Self::bit(t) != 0
    }

    /// The names of the types sent, in enum order.
    pub fn names(self) -> Vec<String> {
        TYPE_NAMES
            .iter()
            .filter(|(_, t)| self.allows(*t as i32))
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

/// Record type, application (`REQUEST` records only), object id and kind.
type StoreKey = (i32, String, String, String);

/// A stored record: its arrival order, when it was made, the record.
type Stored = (u64, Instant, si::EventRecord);

/// Latest record per object, bounded, for one RM.
#[derive(Debug)]
pub struct EventStore {
    /// Keyed by record type and object id: an application and an ask may
    /// share an id without hiding each other.
    /// Each record with the order it arrived in (records of one step
    /// share a timestamp, and keep their creation order by this).
    /// SI v1.8: the reason is part of the key as well, so one object's
    /// records of different kinds in one flush all go out (a node's ADD is
    /// not hidden by the drain record of its CREATE_DRAIN; the v1 RM reads
    /// NODE ADD), while repeats of one kind still coalesce.
    /// A `REQUEST` record's object is its ask: the application (group id)
    /// and the allocation key, so two applications' asks of one key do not
    /// hide each other.
    latest: HashMap<StoreKey, Stored>,
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
    /// keeps the latest record per object and kind (reason), the SI v1.8
    /// edition's rule, instead of per object.
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

    /// The SI v1.8 edition's store with the default capacity.
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
    pub fn add_all(&mut self, records: Vec<si::EventRecord>, now: Instant) {
        let n = records.len();
        if n > INPUT_CAPACITY {
            self.stats.dropped_input += (n - INPUT_CAPACITY) as u64;
        }
        for r in records.into_iter().take(INPUT_CAPACITY) {
            self.add(r, now);
        }
    }

    /// Stores one record made at `now`, replacing an older one for the
    /// same object (and kind), unless it repeats a "not placed yet" record
    /// of its ask within [`REQUEST_EVENT_INTERVAL`].
    pub fn add(&mut self, r: si::EventRecord, now: Instant) {
        if r.object_id.is_empty() || r.reason.is_empty() {
            log::debug!("event record without object id or reason dropped: {r:?}");
            return;
        }
        let is_request = r.r#type == si::event_record::Type::Request as i32;
        if let Some(i) = repeating(r.r#type, &r.reason) {
            let ask = (r.group_id.clone(), r.object_id.clone());
            let recent = self.last_repeat.get(&ask).and_then(|at| at[i]);
            if recent.is_some_and(|at| now.saturating_duration_since(at) < REQUEST_EVENT_INTERVAL) {
                self.stats.rate_limited += 1;
                return;
            }
        }
        let kind = if self.by_kind || TRANSITION_REASONS.contains(&r.reason.as_str()) {
            r.reason.clone()
        } else {
            String::new()
        };
        let app = if is_request {
            r.group_id.clone()
        } else {
            String::new()
        };
        let key = (r.r#type, app, r.object_id.clone(), kind);
        self.next_seq += 1;
        let seq = self.next_seq;
        if let Some(slot) = self.latest.get_mut(&key) {
            *slot = (seq, now, r);
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
    pub fn take_batch(&mut self, now: Instant) -> Vec<si::EventRecord> {
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
            a.timestamp_nano.cmp(&b.timestamp_nano).then(sa.cmp(sb))
        });
        // The records of the repeating reasons that go out now start their
        // ask's interval, from when they were made.
        for (_, made, r) in &batch {
            if let Some(i) = repeating(r.r#type, &r.reason) {
                let ask = (r.group_id.clone(), r.object_id.clone());
                let slot = &mut self.last_repeat.entry(ask).or_default()[i];
                if slot.is_none_or(|at| at < *made) {
                    *slot = Some(*made);
                }
            }
        }
        let batch: Vec<si::EventRecord> = batch.into_iter().map(|(_, _, r)| r).collect();
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
mod tests {
    use super::*;
    use si::event_record::Type;

    fn now() -> Instant {
        Instant::now()
    }

    #[test]
    fn keeps_the_latest_record_per_object() {
        let mut s = EventStore::default();
        s.add(record(Type::App, "a", "", "first", String::new()), now());
        s.add(record(Type::App, "a", "", "second", String::new()), now());
        s.add(
            record(Type::Request, "a", "app", "other kind", String::new()),
            now(),
        );
        let b = s.take_batch(now());
        assert_eq!(b.len(), 2);
        assert!(b.iter().any(|r| r.reason == "second"));
        assert!(!b.iter().any(|r| r.reason == "first"));
        assert!(s.take_batch(now()).is_empty());
        let st = s.stats();
        assert_eq!(
            (st.received, st.superseded, st.published, st.batches),
            (3, 1, 2, 1)
        );
    }

    #[test]
    fn transition_records_are_kept_apart_in_both_editions() {
        for mut s in [EventStore::default(), EventStore::by_kind()] {
            s.add(
                record(
                    Type::Request,
                    "ask",
                    "app",
                    "UserQuotaAvailable",
                    String::new(),
                ),
                now(),
            );
            s.add(
                record(
                    Type::Request,
                    "ask",
                    "app",
                    "InsufficientQueueResources",
                    String::new(),
                ),
                now(),
            );
            s.add(
                record(Type::App, "app", "", "Accepted", String::new()),
                now(),
            );
            s.add(
                record(Type::App, "app", "", "AppCannotRunQuota", String::new()),
                now(),
            );
            let reasons: Vec<String> = s.take_batch(now()).into_iter().map(|r| r.reason).collect();
            assert_eq!(
                reasons,
                [
                    "UserQuotaAvailable",
                    "InsufficientQueueResources",
                    "Accepted",
                    "AppCannotRunQuota"
                ]
            );
        }
        // Other records of one object still coalesce in the v0.12 store.
        let mut s = EventStore::default();
        s.add(
            record(
                Type::Request,
                "ask",
                "app",
                "PredicateRefused",
                String::new(),
            ),
            now(),
        );
        s.add(
            record(
                Type::Request,
                "ask",
                "app",
                "InsufficientQueueResources",
                String::new(),
            ),
            now(),
        );
        assert_eq!(s.take_batch(now()).len(), 1);
    }

    #[test]
    fn event_types_parse_with_a_default_and_name_unknown_ones() {
        let d = EventTypes::parse(&[]).unwrap();
        assert_eq!(d.names(), ["REQUEST", "NODE"]);
        assert!(!d.allows(Type::App as i32) && !d.allows(Type::Queue as i32));
        let all = EventTypes::parse(&["app".into(), " Queue".into(), "NODE".into()]).unwrap();
        assert_eq!(all.names(), ["APP", "NODE", "QUEUE"]);
        assert!(!all.allows(Type::Request as i32));
        assert!(!all.allows(0) && !all.allows(99) && !all.allows(-1));
        let e = EventTypes::parse(&["NODE".into(), "APPLICATION".into()]).unwrap_err();
        assert!(
            e.contains("'APPLICATION'") && e.contains("event_types"),
            "{e}"
        );
    }

    #[test]
    fn bounds_distinct_objects_and_counts_drops() {
        let mut s = EventStore::default();
        let many = (0..STORE_CAPACITY + 5)
            .map(|i| record(Type::Node, &format!("n{i}"), "", "r", String::new()))
            .collect();
        s.add_all(many, now());
        assert_eq!(s.stats().stored, STORE_CAPACITY as u64);
        assert_eq!(s.stats().dropped_store_full, 5);
        // An object already stored is still updated when the store is full.
        s.add(record(Type::Node, "n0", "", "again", String::new()), now());
        assert_eq!(s.stats().dropped_store_full, 5);
        s.add(record(Type::Node, "", "", "r", String::new()), now());
        assert_eq!(s.take_batch(now()).len(), STORE_CAPACITY);
    }

    #[test]
    fn not_placed_records_repeat_once_per_interval_per_ask() {
        let t0 = Instant::now();
        let unfit = |key: &str, reason: &str| {
            record(Type::Request, key, "app", reason, format!("{key} waits"))
        };
        let mut s = EventStore::by_kind();
        s.add(unfit("k1", REASON_QUEUE_HEADROOM), t0);
        s.add(unfit("k1", REASON_PREDICATE_REFUSED), t0);
        s.add(unfit("k2", REASON_QUEUE_HEADROOM), t0);
        assert_eq!(s.take_batch(t0).len(), 3);
        // Every later flush inside the interval: nothing new for either ask.
        let mut at = t0;
        while at < t0 + REQUEST_EVENT_INTERVAL - Duration::from_secs(2) {
            at += Duration::from_secs(2);
            s.add(unfit("k1", REASON_QUEUE_HEADROOM), at);
            s.add(unfit("k1", REASON_PREDICATE_REFUSED), at);
            s.add(unfit("k2", REASON_QUEUE_HEADROOM), at);
            assert!(s.take_batch(at).is_empty(), "repeat inside the interval");
        }
        assert_eq!(s.stats().rate_limited, 3 * 7);
        // Other records of the ask are not limited.
        s.add(unfit("k1", "UserQuotaExceeded"), at);
        s.add(unfit("k1", "UserQuotaExceeded"), at);
        assert_eq!(s.take_batch(at).len(), 1);
        // Once the interval is over, one record per ask and reason again.
        let later = t0 + REQUEST_EVENT_INTERVAL;
        s.add(unfit("k1", REASON_QUEUE_HEADROOM), later);
        s.add(unfit("k1", REASON_QUEUE_HEADROOM), later);
        assert_eq!(s.take_batch(later).len(), 1);
        // The stamps of asks that went quiet are pruned at the flush.
        let quiet = later + REQUEST_EVENT_INTERVAL;
        assert!(s.take_batch(quiet).is_empty());
        assert!(s.last_repeat.is_empty(), "{:?}", s.last_repeat);
    }

    #[test]
    fn asks_of_one_key_in_two_applications_are_limited_and_kept_apart() {
        let t0 = Instant::now();
        for mut s in [EventStore::default(), EventStore::by_kind()] {
            let unfit = |app: &str| {
                record(
                    Type::Request,
                    "pod",
                    app,
                    REASON_PREDICATE_REFUSED,
                    format!("{app} waits"),
                )
            };
            s.add(unfit("app-a"), t0);
            s.add(unfit("app-b"), t0);
            let apps: Vec<String> = s.take_batch(t0).into_iter().map(|r| r.group_id).collect();
            assert_eq!(apps, ["app-a", "app-b"]);
            // Each application's ask has its own interval.
            let later = t0 + Duration::from_secs(2);
            s.add(unfit("app-a"), later);
            assert!(s.take_batch(later).is_empty());
            s.add(unfit("app-c"), later);
            assert_eq!(s.take_batch(later).len(), 1);
        }
    }

    #[test]
    fn a_replaced_record_that_never_went_out_does_not_hold_back_its_reason() {
        // SI v0.12: one record per object, so the headroom record replaces
        // the predicate one before the flush; the RM never got the latter.
        let t0 = Instant::now();
        let mut s = EventStore::default();
        let unfit = |reason: &str| record(Type::Request, "k1", "app", reason, String::new());
        s.add(unfit(REASON_PREDICATE_REFUSED), t0);
        s.add(unfit(REASON_QUEUE_HEADROOM), t0);
        let reasons: Vec<String> = s.take_batch(t0).into_iter().map(|r| r.reason).collect();
        assert_eq!(reasons, [REASON_QUEUE_HEADROOM]);
        let later = t0 + Duration::from_secs(2);
        s.add(unfit(REASON_PREDICATE_REFUSED), later);
        s.add(
            unfit(REASON_QUEUE_HEADROOM),
            later + Duration::from_millis(1),
        );
        // The predicate record goes now; the headroom one (sent at t0) is
        // held back and does not replace it.
        let reasons: Vec<String> = s.take_batch(later).into_iter().map(|r| r.reason).collect();
        assert_eq!(reasons, [REASON_PREDICATE_REFUSED]);
        assert_eq!(s.stats().rate_limited, 1);
    }

    #[test]
    fn a_record_dropped_for_a_full_store_does_not_start_the_interval() {
        let t0 = Instant::now();
        let mut s = EventStore::new(true, 1);
        s.add(record(Type::Node, "n1", "", "NodeAdded", String::new()), t0);
        let unfit = record(
            Type::Request,
            "k1",
            "app",
            REASON_QUEUE_HEADROOM,
            String::new(),
        );
        s.add(unfit.clone(), t0);
        assert_eq!(s.stats().dropped_store_full, 1);
        assert_eq!(s.take_batch(t0).len(), 1);
        s.add(unfit, t0 + Duration::from_secs(2));
        assert_eq!(
            s.take_batch(t0 + Duration::from_secs(2)).len(),
            1,
            "the ask's record goes in"
        );
        // A smaller capacity bounds the next flush.
        s.set_capacity(2);
        for i in 0..5 {
            s.add(
                record(Type::Node, &format!("n{i}"), "", "r", String::new()),
                t0,
            );
        }
        assert_eq!(s.take_batch(t0).len(), 2);
    }
}
