//! The event history behind `/ws/v1/events/batch` and `/events/stream`
//! (YuniKorn v1.x): a bounded ring of every record the core makes while
//! event tracking is on, each with an ID that grows by one per record, the
//! partition and the queue it concerns.
//!
//! The core thread pushes (one short lock per step); REST readers copy out
//! reference-counted entries under the same short lock and render them on
//! their own thread, so a slow client never holds the core. A stream is a
//! position in the ring: it is woken when records arrive, reads from its
//! position, and is told when the ring has overtaken it (it fell behind).
//! Nothing is buffered per stream.

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::Arc;
use std::task::Waker;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::{repeating, Record, REQUEST_EVENT_INTERVAL};

/// Records kept unless the RM sets `event.ringBufferCapacity` (the
/// reference's default).
pub const DEFAULT_RING_CAPACITY: usize = 100_000;
/// The largest ring an RM may ask for: a record is a few hundred bytes,
/// so this bounds the history near a few hundred megabytes.
pub const MAX_RING_CAPACITY: usize = 1_000_000;
/// Streams served at once unless `event.maxStreams` says otherwise.
pub const DEFAULT_MAX_STREAMS: usize = 100;
/// Streams of one client address unless `event.maxStreamsPerHost` says.
pub const DEFAULT_MAX_STREAMS_PER_HOST: usize = 15;
/// The most records one batch answer carries unless
/// `event.RESTResponseSize` says otherwise.
pub const DEFAULT_REST_RESPONSE_SIZE: usize = 10_000;
/// The largest stream limit an RM may set: each stream holds a connection.
pub const MAX_STREAMS_LIMIT: usize = 10_000;

/// The ring's settings (SI v1.x `extraConfig` `event.*` keys; `None` is
/// the default). They are scheduler-wide, as the reference's are: the
/// last registration or configuration update that carries them wins.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RingSettings {
    /// `event.ringBufferCapacity`.
    pub capacity: Option<usize>,
    /// `event.maxStreams`.
    pub max_streams: Option<usize>,
    /// `event.maxStreamsPerHost`.
    pub max_streams_per_host: Option<usize>,
    /// `event.RESTResponseSize`.
    pub rest_response_size: Option<usize>,
}

/// The settings in force, defaults filled in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Records kept.
    pub capacity: usize,
    /// Streams in all.
    pub max_streams: usize,
    /// Streams per client address.
    pub max_streams_per_host: usize,
    /// Most records per batch answer.
    pub rest_response_size: usize,
}

impl From<RingSettings> for Limits {
    fn from(s: RingSettings) -> Self {
        Limits {
            capacity: s.capacity.unwrap_or(DEFAULT_RING_CAPACITY),
            max_streams: s.max_streams.unwrap_or(DEFAULT_MAX_STREAMS),
            max_streams_per_host: s
                .max_streams_per_host
                .unwrap_or(DEFAULT_MAX_STREAMS_PER_HOST),
            rest_response_size: s.rest_response_size.unwrap_or(DEFAULT_REST_RESPONSE_SIZE),
        }
    }
}

/// One stored record with its ID and where it happened: the partition
/// (plain name) and the queue path, empty when the record concerns none
/// (a node has no queue) or the object was gone before it could be found.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// Position in the history: 0 for the first record, one more per record.
    pub id: u64,
    /// The record as the core made it.
    pub record: Record,
    /// Partition name.
    pub partition: String,
    /// Queue path.
    pub queue: String,
}

/// Why a stream was not opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamRefusal {
    /// Event tracking is off.
    Disabled,
    /// `event.maxStreams` or `event.maxStreamsPerHost` reached.
    TooMany,
}

/// What a stream reads next.
#[derive(Debug)]
pub enum Next {
    /// Records from its position, in ID order.
    Records(Vec<Arc<Entry>>),
    /// The ring overtook its position: records it never saw are gone.
    FellBehind,
    /// Event tracking was turned off.
    Closed,
    /// Nothing new; the caller's waker is woken when there is.
    Wait,
}

/// An open stream, as the state dump lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamInfo {
    /// The client address.
    pub host: IpAddr,
    /// Unix time it opened, ns.
    pub created_ns: i64,
}

struct Inner {
    entries: VecDeque<Arc<Entry>>,
    /// The ID the next record gets.
    next_id: u64,
    limits: Limits,
    enabled: bool,
    streams: HashMap<u64, (StreamInfo, Option<Waker>)>,
    per_host: HashMap<IpAddr, usize>,
    next_stream: u64,
}

/// The scheduler's event history; see the module documentation.
pub struct EventRing {
    inner: Mutex<Inner>,
    uuid: String,
}

impl std::fmt::Debug for EventRing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventRing")
            .field("uuid", &self.uuid)
            .finish_non_exhaustive()
    }
}

impl EventRing {
    /// An empty ring with the default settings, on or off.
    pub fn new(enabled: bool) -> Self {
        EventRing {
            inner: Mutex::new(Inner {
                entries: VecDeque::new(),
                next_id: 0,
                limits: RingSettings::default().into(),
                enabled,
                streams: HashMap::new(),
                per_host: HashMap::new(),
                next_stream: 0,
            }),
            uuid: uuid::Uuid::new_v4().to_string(),
        }
    }

    /// The random ID of this history: a client seeing it change knows
    /// the IDs started again.
    pub fn instance_uuid(&self) -> &str {
        &self.uuid
    }

    /// Whether records are kept (event tracking is on).
    pub fn enabled(&self) -> bool {
        self.inner.lock().enabled
    }

    /// Turns tracking on or off. Off empties the history (as the
    /// reference's restart does) and ends every stream; IDs go on.
    pub fn set_enabled(&self, on: bool) {
        let mut g = self.inner.lock();
        if g.enabled == on {
            return;
        }
        g.enabled = on;
        if !on {
            g.entries.clear();
            wake_all(&mut g);
        }
    }

    /// The settings in force.
    pub fn limits(&self) -> Limits {
        self.inner.lock().limits
    }

    /// Applies new settings; a smaller capacity drops the oldest records
    /// (streams behind them learn they fell behind).
    pub fn configure(&self, settings: RingSettings) {
        let mut g = self.inner.lock();
        g.limits = settings.into();
        let cap = g.limits.capacity;
        if g.entries.len() > cap {
            let drop = g.entries.len() - cap;
            g.entries.drain(..drop);
            log::info!("event history shrunk to {cap} records: the {drop} oldest were dropped");
            wake_all(&mut g);
        }
    }

    /// Stores records in order; the oldest go when the ring is full.
    /// Streams waiting for records are woken.
    pub fn push_all(&self, records: impl IntoIterator<Item = (Record, String, String)>) {
        let mut g = self.inner.lock();
        if !g.enabled {
            return;
        }
        let cap = g.limits.capacity.max(1);
        let mut any = false;
        for (record, partition, queue) in records {
            if g.entries.len() >= cap {
                g.entries.pop_front();
            }
            let id = g.next_id;
            g.next_id += 1;
            g.entries.push_back(Arc::new(Entry {
                id,
                record,
                partition,
                queue,
            }));
            any = true;
        }
        if any {
            wake_all(&mut g);
        }
    }

    /// The lowest and highest ID stored (0 and 0 when empty, as the
    /// reference answers).
    pub fn bounds(&self) -> (u64, u64) {
        bounds(&self.inner.lock())
    }

    /// Up to `count` records from ID `start` (at most the REST response
    /// size), with the lowest and highest ID stored; `None` when `start`
    /// is not stored (older than the oldest, or not made yet).
    pub fn batch(&self, start: u64, count: u64) -> (Option<Vec<Arc<Entry>>>, u64, u64) {
        let g = self.inner.lock();
        let (low, high) = bounds(&g);
        let count = usize::try_from(count)
            .unwrap_or(usize::MAX)
            .min(g.limits.rest_response_size);
        (from(&g, start, count), low, high)
    }

    /// Opens a stream for client `host` at `created_ns`, positioned at the
    /// `recent` newest records; refused when tracking is off or a limit is
    /// reached. The ticket closes it when dropped.
    pub fn open_stream(
        self: &Arc<Self>,
        host: IpAddr,
        recent: u64,
        created_ns: i64,
    ) -> Result<StreamTicket, StreamRefusal> {
        let mut g = self.inner.lock();
        if !g.enabled {
            return Err(StreamRefusal::Disabled);
        }
        let of_host = g.per_host.get(&host).copied().unwrap_or(0);
        if g.streams.len() >= g.limits.max_streams || of_host >= g.limits.max_streams_per_host {
            return Err(StreamRefusal::TooMany);
        }
        g.next_stream += 1;
        let id = g.next_stream;
        g.streams
            .insert(id, (StreamInfo { host, created_ns }, None));
        *g.per_host.entry(host).or_default() += 1;
        let (low, _) = bounds(&g);
        let stored = g.next_id - low;
        let position = g.next_id - recent.min(stored).min(g.entries.len() as u64);
        Ok(StreamTicket {
            ring: self.clone(),
            id,
            host,
            position,
        })
    }

    /// The open streams.
    pub fn streams(&self) -> Vec<StreamInfo> {
        let g = self.inner.lock();
        let mut v: Vec<StreamInfo> = g.streams.values().map(|(s, _)| s.clone()).collect();
        v.sort_by_key(|s| s.created_ns);
        v
    }

    /// The ID the next record gets.
    pub fn next_id(&self) -> u64 {
        self.inner.lock().next_id
    }
}

fn bounds(g: &Inner) -> (u64, u64) {
    if g.entries.is_empty() {
        // Nothing stored: both are the last ID made (0 before the first).
        let last = g.next_id.saturating_sub(1);
        return (last, last);
    }
    let low = g.next_id - g.entries.len() as u64;
    (low, g.next_id - 1)
}

fn from(g: &Inner, start: u64, count: usize) -> Option<Vec<Arc<Entry>>> {
    let low = g.next_id - g.entries.len() as u64;
    if start < low || start >= g.next_id {
        return None;
    }
    let skip = (start - low) as usize;
    Some(g.entries.iter().skip(skip).take(count).cloned().collect())
}

fn wake_all(g: &mut Inner) {
    for (_, waker) in g.streams.values_mut() {
        if let Some(w) = waker.take() {
            w.wake();
        }
    }
}

/// One open stream: its position in the ring. Dropping it closes it.
#[derive(Debug)]
pub struct StreamTicket {
    ring: Arc<EventRing>,
    id: u64,
    host: IpAddr,
    position: u64,
}

impl StreamTicket {
    /// The history it reads.
    pub fn ring(&self) -> Arc<EventRing> {
        self.ring.clone()
    }

    /// The ID of the next record this stream sends.
    pub fn position(&self) -> u64 {
        self.position
    }

    /// Up to `max` records from the stream's position (which moves past
    /// them), or why there are none; on [`Next::Wait`] `waker` is woken
    /// when records arrive or the ring changes.
    pub fn next(&mut self, max: usize, waker: &Waker) -> Next {
        let mut g = self.ring.inner.lock();
        if !g.enabled {
            return Next::Closed;
        }
        if self.position >= g.next_id {
            if let Some((_, w)) = g.streams.get_mut(&self.id) {
                *w = Some(waker.clone());
            }
            return Next::Wait;
        }
        match from(&g, self.position, max) {
            Some(records) => {
                self.position += records.len() as u64;
                Next::Records(records)
            }
            None => Next::FellBehind,
        }
    }
}

impl Drop for StreamTicket {
    fn drop(&mut self) {
        let mut g = self.ring.inner.lock();
        g.streams.remove(&self.id);
        if let Some(n) = g.per_host.get_mut(&self.host) {
            *n -= 1;
            if *n == 0 {
                g.per_host.remove(&self.host);
            }
        }
    }
}

/// Which records enter the ring: every record the core makes, except
/// that a "not placed yet" record of an ask (made on every pass that
/// tries it) enters at most once per [`REQUEST_EVENT_INTERVAL`] per ask
/// and reason, as the reference limits its own.
#[derive(Debug, Default)]
pub struct RingFeed {
    /// By application, then ask: when each repeating reason last entered
    /// (nested so a record held back costs lookups, no allocation).
    last: HashMap<String, HashMap<String, [Option<Instant>; 2]>>,
    next_prune: Option<Instant>,
}

impl RingFeed {
    /// Whether `r`, made at `now`, enters the ring.
    pub fn admit(&mut self, r: &Record, now: Instant) -> bool {
        if self.next_prune.is_none_or(|at| now >= at) {
            let live = |at: &mut [Option<Instant>; 2]| {
                at.iter_mut().fold(false, |live, t| {
                    if t.is_some_and(|t| now.saturating_duration_since(t) >= REQUEST_EVENT_INTERVAL)
                    {
                        *t = None;
                    }
                    live | t.is_some()
                })
            };
            self.last.retain(|_, asks| {
                asks.retain(|_, at| live(at));
                !asks.is_empty()
            });
            self.next_prune = Some(now + REQUEST_EVENT_INTERVAL);
        }
        let Some(i) = repeating(r.base.r#type, &r.base.reason) else {
            return true;
        };
        let (app, ask) = (&r.base.group_id, &r.base.object_id);
        let recent = self
            .last
            .get(app)
            .and_then(|asks| asks.get(ask))
            .and_then(|at| at[i]);
        if recent.is_some_and(|at| now.saturating_duration_since(at) < REQUEST_EVENT_INTERVAL) {
            return false;
        }
        let asks = match self.last.get_mut(app) {
            Some(asks) => asks,
            None => self.last.entry(app.clone()).or_default(),
        };
        let slot = match asks.get_mut(ask) {
            Some(slot) => slot,
            None => asks.entry(ask.clone()).or_default(),
        };
        slot[i] = Some(now);
        true
    }
}

/// How long a stream may leave records unread before it is dropped (the
/// reference gives each write five seconds).
pub const STREAM_STALL: Duration = Duration::from_secs(5);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::{record, REASON_QUEUE_HEADROOM};
    use crate::proto::si::v1::event_record::Type;
    use std::task::Wake;

    fn rec(i: usize) -> (Record, String, String) {
        (
            record(Type::Node, &format!("n{i}"), "", "NodeAdded", String::new()).into(),
            "default".into(),
            String::new(),
        )
    }

    fn ids(v: &[Arc<Entry>]) -> Vec<u64> {
        v.iter().map(|e| e.id).collect()
    }

    #[test]
    fn ids_grow_and_old_records_fall_off() {
        let ring = EventRing::new(true);
        assert_eq!(ring.bounds(), (0, 0));
        assert_eq!(ring.batch(0, 10).0, None);
        ring.configure(RingSettings {
            capacity: Some(3),
            rest_response_size: Some(2),
            ..Default::default()
        });
        ring.push_all((0..5).map(rec));
        assert_eq!(ring.bounds(), (2, 4));
        let (got, low, high) = ring.batch(2, 100);
        assert_eq!((ids(&got.unwrap()), low, high), (vec![2, 3], 2, 4));
        assert_eq!(ring.batch(1, 10).0, None, "fell off");
        assert_eq!(ring.batch(5, 10).0, None, "not made yet");
        assert_eq!(ids(&ring.batch(4, u64::MAX).0.unwrap()), [4]);
        // Shrinking drops the oldest; IDs go on.
        ring.configure(RingSettings {
            capacity: Some(1),
            ..Default::default()
        });
        assert_eq!(ring.bounds(), (4, 4));
        ring.push_all([rec(9)]);
        assert_eq!(ids(&ring.batch(5, 9).0.unwrap()), [5]);
    }

    #[test]
    fn a_disabled_ring_keeps_nothing_and_refuses_streams() {
        let ring = Arc::new(EventRing::new(false));
        ring.push_all([rec(0)]);
        assert_eq!(ring.next_id(), 0);
        let host: IpAddr = "127.0.0.1".parse().unwrap();
        assert_eq!(
            ring.open_stream(host, 0, 0).unwrap_err(),
            StreamRefusal::Disabled
        );
    }

    struct Flag(std::sync::atomic::AtomicBool);
    impl Wake for Flag {
        fn wake(self: Arc<Self>) {
            self.0.store(true, std::sync::atomic::Ordering::SeqCst);
        }
    }

    #[test]
    fn streams_are_bounded_read_from_their_position_and_learn_they_fell_behind() {
        let ring = Arc::new(EventRing::new(true));
        ring.configure(RingSettings {
            capacity: Some(4),
            max_streams: Some(3),
            max_streams_per_host: Some(2),
            ..Default::default()
        });
        ring.push_all((0..3).map(rec));
        let a: IpAddr = "127.0.0.1".parse().unwrap();
        let b: IpAddr = "127.0.0.2".parse().unwrap();
        let mut s1 = ring.open_stream(a, 2, 1).unwrap();
        assert_eq!(s1.position(), 1, "the two newest first");
        let s2 = ring.open_stream(a, 0, 2).unwrap();
        assert_eq!(
            ring.open_stream(a, 0, 3).unwrap_err(),
            StreamRefusal::TooMany
        );
        let s3 = ring.open_stream(b, 99, 3).unwrap();
        assert_eq!(s3.position(), 0);
        assert_eq!(
            ring.open_stream(b, 0, 4).unwrap_err(),
            StreamRefusal::TooMany
        );
        drop(s2);
        assert_eq!(ring.streams().len(), 2);
        let flag = Arc::new(Flag(false.into()));
        let waker = Waker::from(flag.clone());
        match s1.next(10, &waker) {
            Next::Records(r) => assert_eq!(ids(&r), [1, 2]),
            other => panic!("{other:?}"),
        }
        assert!(matches!(s1.next(10, &waker), Next::Wait));
        ring.push_all([rec(3)]);
        assert!(flag.0.load(std::sync::atomic::Ordering::SeqCst), "woken");
        assert!(matches!(s1.next(10, &waker), Next::Records(r) if ids(&r) == [3]));
        ring.push_all((4..10).map(rec));
        assert!(matches!(s1.next(10, &waker), Next::FellBehind));
        ring.set_enabled(false);
        assert!(matches!(s1.next(10, &waker), Next::Closed));
        drop((s1, s3));
        assert!(ring.streams().is_empty());
    }

    #[test]
    fn repeating_records_enter_once_per_interval_per_ask() {
        let mut feed = RingFeed::default();
        let t0 = Instant::now();
        let unfit = |key: &str| -> Record {
            record(
                Type::Request,
                key,
                "app",
                REASON_QUEUE_HEADROOM,
                String::new(),
            )
            .into()
        };
        assert!(feed.admit(&unfit("k1"), t0));
        assert!(!feed.admit(&unfit("k1"), t0 + Duration::from_secs(1)));
        assert!(feed.admit(&unfit("k2"), t0 + Duration::from_secs(1)));
        assert!(feed.admit(&unfit("k1"), t0 + REQUEST_EVENT_INTERVAL));
        let other: Record = record(Type::App, "app", "", "Running", String::new()).into();
        assert!(feed.admit(&other, t0) && feed.admit(&other, t0));
        feed.admit(&other, t0 + 3 * REQUEST_EVENT_INTERVAL);
        assert!(feed.last.is_empty(), "pruned: {:?}", feed.last);
    }
}
