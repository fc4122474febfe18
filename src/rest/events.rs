//! `GET /ws/v1/events/batch` and `GET /ws/v1/events/stream` (YuniKorn
//! v1.x, spec sections 24, 25, 29.11), read from the scheduler's event
//! history (`events::ring`), never from the core thread.
//!
//! Records are shown in the SI v1.x form (numbers for the enums, the SI
//! resource form) plus two fields of sicore's own, `partition` and
//! `queue`: the REST record is its own type, so what an RM receives
//! through `SendEvent` is unchanged.
//!
//! A stream is a position in the history: its body is polled by the
//! connection, reads the records after its position and waits on the
//! history otherwise, so a client that does not read costs no buffer. A
//! stream whose client leaves records unread for [`STREAM_STALL`] (as
//! seen by checks a second apart) is dropped; one the history overtook ends with a closing error line. A
//! stream is exempt from the connection lifetime limit (it is meant to
//! last) but holds a connection slot, and the streams are bounded in all
//! and per client address (`event.maxStreams`, `event.maxStreamsPerHost`).

use std::convert::Infallible;
use std::future::Future;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};
use std::time::{Duration, Instant};

use http_body_util::combinators::BoxBody;
use http_body_util::BodyExt;
use hyper::body::{Body, Bytes, Frame, Incoming};
use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::{Request, Response, StatusCode};
use parking_lot::Mutex;
use serde_json::{json, Map, Value};

use super::response::{body, fail, query_param, Fail, JSON};
use super::{Context, Resp, Slot};
use crate::events::ring::{Entry, EventRing, Next, StreamRefusal, StreamTicket, STREAM_STALL};
use crate::scheduler::events_v1;

/// The body type of every answer: a whole buffer, or a stream.
pub(super) type AnyBody = BoxBody<Bytes, Infallible>;

/// Most records one stream write carries.
const STREAM_CHUNK: usize = 256;
/// How often a connection with a stream checks that it moves.
const STREAM_CHECK: Duration = Duration::from_secs(1);

/// The client address of a request (set by [`serve`]).
#[derive(Clone, Copy)]
struct Peer(IpAddr);

/// A stream the handler opened, handed to [`serve`] in the answer's
/// extensions to become its body.
#[derive(Clone)]
struct Opened(Arc<Mutex<Option<(StreamTicket, String)>>>);

/// What a connection's stream says about its progress.
struct Progress {
    ring: Arc<EventRing>,
    position: u64,
    last_poll: Instant,
    /// Since when the checks have seen records waiting for this stream
    /// with no read by the connection in between.
    pending_since: Option<Instant>,
}

/// A connection's view of the stream it serves, if any.
#[derive(Clone, Default)]
pub(super) struct ConnWatch(Arc<Mutex<Option<Progress>>>);

impl ConnWatch {
    fn streaming(&self) -> bool {
        self.0.lock().is_some()
    }

    /// Records have waited for the client for [`STREAM_STALL`] and the
    /// connection has read none since (a stream woken an instant ago is
    /// not stalled: the wait counts from the first check that saw them).
    fn stalled(&self) -> bool {
        let mut g = self.0.lock();
        let Some(p) = g.as_mut() else {
            return false;
        };
        let now = Instant::now();
        if p.ring.next_id() <= p.position {
            p.pending_since = None;
            return false;
        }
        match p.pending_since {
            Some(since) if p.last_poll < since => {
                now.saturating_duration_since(since) >= STREAM_STALL
            }
            _ => {
                p.pending_since = Some(now);
                false
            }
        }
    }
}

/// Serves one request through `answer` (the service's whole answer: access
/// checks, dispatch, encoding; passed in so that this file does not import
/// the server that calls it), with the stream an answer opened as its body.
pub(super) async fn serve<F, A>(
    ctx: Arc<Context>,
    slot: Slot,
    peer: IpAddr,
    watch: ConnWatch,
    mut req: Request<Incoming>,
    answer: F,
) -> Result<Response<AnyBody>, Infallible>
where
    F: FnOnce(Arc<Context>, Slot, Request<Incoming>) -> A,
    A: Future<Output = Result<Resp, Infallible>>,
{
    req.extensions_mut().insert(Peer(peer));
    let resp = match answer(ctx, slot, req).await {
        Ok(r) => r,
        Err(never) => match never {},
    };
    let opened = resp
        .extensions()
        .get::<Opened>()
        .and_then(|o| o.0.lock().take());
    let Some((ticket, uuid)) = opened else {
        return Ok(resp.map(|b| b.boxed()));
    };
    let (parts, _) = resp.into_parts();
    let ring = ticket.ring();
    *watch.0.lock() = Some(Progress {
        ring,
        position: ticket.position(),
        last_poll: Instant::now(),
        pending_since: None,
    });
    let first = json!({ "InstanceUUID": uuid }).to_string() + "\n";
    let stream = RingBody {
        ticket,
        first: Some(Bytes::from(first)),
        done: false,
        watch,
    };
    Ok(Response::from_parts(parts, stream.boxed()))
}

/// Runs a connection: ended at `lifetime` unless it serves a stream, in
/// which case it lasts while the stream moves.
pub(super) async fn drive<F: Future>(conn: F, lifetime: Duration, watch: &ConnWatch) {
    let deadline = Instant::now() + lifetime;
    tokio::pin!(conn);
    loop {
        let wait = if watch.streaming() {
            STREAM_CHECK
        } else {
            deadline.saturating_duration_since(Instant::now())
        };
        tokio::select! {
            _ = &mut conn => return,
            _ = tokio::time::sleep(wait) => {
                if watch.streaming() {
                    if watch.stalled() {
                        log::warn!(
                            "REST event stream dropped: its client left records unread for {} s",
                            STREAM_STALL.as_secs()
                        );
                        return;
                    }
                } else if Instant::now() >= deadline {
                    return;
                }
            }
        }
    }
}

/// The stream's body: the first line, then records as they come.
struct RingBody {
    ticket: StreamTicket,
    first: Option<Bytes>,
    done: bool,
    watch: ConnWatch,
}

impl Drop for RingBody {
    fn drop(&mut self) {
        *self.watch.0.lock() = None;
    }
}

/// The closing line of a stream (spec 30, status 200: the answer began).
fn closing_line(message: &str) -> Bytes {
    let v = json!({"status_code": 200, "message": message, "description": message});
    Bytes::from(v.to_string() + "\n")
}

impl Body for RingBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = &mut *self;
        if let Some(first) = this.first.take() {
            return Poll::Ready(Some(Ok(Frame::data(first))));
        }
        if this.done {
            return Poll::Ready(None);
        }
        let next = this.ticket.next(STREAM_CHUNK, cx.waker());
        if let Some(p) = this.watch.0.lock().as_mut() {
            p.position = this.ticket.position();
            p.last_poll = Instant::now();
        }
        let data = match next {
            Next::Wait => return Poll::Pending,
            Next::Records(records) => {
                let mut text = String::new();
                for e in &records {
                    text.push_str(&record(e).to_string());
                    text.push('\n');
                }
                Bytes::from(text)
            }
            Next::FellBehind => {
                this.done = true;
                closing_line("Event stream was closed: the client fell behind and records it had not read were overwritten")
            }
            Next::Closed => {
                this.done = true;
                closing_line("Event stream was closed by the producer")
            }
        };
        Poll::Ready(Some(Ok(Frame::data(data))))
    }
}

/// One record in the v1.x form, with sicore's `partition` and `queue`;
/// empty and zero fields are left out, as protobuf's JSON does.
pub fn record(e: &Entry) -> Value {
    let r = events_v1::translate(&e.record);
    let mut m = Map::new();
    let mut put = |k: &str, v: Value| {
        m.insert(k.to_string(), v);
    };
    if r.r#type != 0 {
        put("type", json!(r.r#type));
    }
    if !r.object_id.is_empty() {
        put("objectID", json!(r.object_id));
    }
    if !r.message.is_empty() {
        put("message", json!(r.message));
    }
    if r.timestamp_nano != 0 {
        put("timestampNano", json!(r.timestamp_nano));
    }
    if r.event_change_type != 0 {
        put("eventChangeType", json!(r.event_change_type));
    }
    if r.event_change_detail != 0 {
        put("eventChangeDetail", json!(r.event_change_detail));
    }
    if !r.reference_id.is_empty() {
        put("referenceID", json!(r.reference_id));
    }
    if let Some(res) = &r.resource {
        let quantities: Map<String, Value> = res
            .resources
            .iter()
            .map(|(k, q)| {
                let v = if q.value == 0 {
                    json!({})
                } else {
                    json!({ "value": q.value })
                };
                (k.clone(), v)
            })
            .collect();
        let mut o = Map::new();
        if !quantities.is_empty() {
            o.insert("resources".into(), Value::Object(quantities));
        }
        put("resource", Value::Object(o));
    }
    if !e.partition.is_empty() {
        put("partition", json!(e.partition));
    }
    if !e.queue.is_empty() {
        put("queue", json!(e.queue));
    }
    Value::Object(m)
}

/// An unsigned decimal query value, refused with the text Go's
/// `strconv.ParseUint` gives (the reference passes it on).
fn parse_u64(v: &str) -> Result<u64, Fail> {
    let syntax = || {
        fail(
            StatusCode::BAD_REQUEST,
            format!("strconv.ParseUint: parsing {v:?}: invalid syntax"),
        )
    };
    if v.is_empty() || !v.bytes().all(|b| b.is_ascii_digit()) {
        return Err(syntax());
    }
    v.parse::<u64>().map_err(|_| {
        fail(
            StatusCode::BAD_REQUEST,
            format!("strconv.ParseUint: parsing {v:?}: value out of range"),
        )
    })
}

/// The history, or 500 when event tracking is off.
async fn ring(ctx: &Context) -> Result<Arc<EventRing>, Fail> {
    let snap = ctx.snapshot(false).await?;
    match &snap.event_ring {
        Some(r) if r.enabled() => Ok(r.clone()),
        _ => Err(fail(
            StatusCode::INTERNAL_SERVER_ERROR,
            "Event tracking is disabled",
        )),
    }
}

/// `GET /ws/v1/events/batch`.
pub(super) async fn batch(ctx: &Context, req: &Request<Incoming>) -> Result<Resp, Fail> {
    let ring = ring(ctx).await?;
    let max = ring.limits().rest_response_size as u64;
    let count = match query_param(req, "count").filter(|c| !c.is_empty()) {
        None => max,
        Some(c) => {
            let n = parse_u64(&c)?.min(max);
            if n == 0 {
                return Err(fail(
                    StatusCode::BAD_REQUEST,
                    r#"0 is not a valid value for "count""#,
                ));
            }
            n
        }
    };
    let start = match query_param(req, "start").filter(|s| !s.is_empty()) {
        None => 0,
        Some(s) => parse_u64(&s)?,
    };
    let (records, low, high) = ring.batch(start, count);
    let records = match records {
        None => Value::Null,
        Some(v) => Value::Array(v.iter().map(|e| record(e)).collect()),
    };
    let v = json!({
        "InstanceUUID": ring.instance_uuid(),
        "LowestID": low,
        "HighestID": high,
        "EventRecords": records,
    });
    Ok(body(StatusCode::OK, JSON, v.to_string() + "\n"))
}

/// `GET /ws/v1/events/stream`: checks and opens the stream; [`serve`]
/// makes it the answer's body.
pub(super) async fn stream(ctx: &Context, req: &Request<Incoming>) -> Result<Resp, Fail> {
    let ring = ring(ctx).await?;
    let recent = match query_param(req, "count").filter(|c| !c.is_empty()) {
        None => 0,
        Some(c) => parse_u64(&c)?,
    };
    let Some(Peer(peer)) = req.extensions().get::<Peer>().copied() else {
        return Err(fail(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the event stream has no client address",
        ));
    };
    let created = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX));
    let ticket = ring
        .open_stream(peer, recent, created)
        .map_err(|refusal| match refusal {
            StreamRefusal::Disabled => fail(
                StatusCode::INTERNAL_SERVER_ERROR,
                "Event tracking is disabled",
            ),
            StreamRefusal::TooMany => {
                log::warn!("REST event stream of {peer} refused: stream limits reached");
                fail(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "Too many streaming connections",
                )
            }
        })?;
    log::info!("REST event stream opened for {peer}");
    let mut resp = Response::new(http_body_util::Full::new(Bytes::new()));
    resp.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(JSON));
    let mut resp = super::response::with_cors(resp);
    resp.extensions_mut()
        .insert(Opened(Arc::new(Mutex::new(Some((
            ticket,
            ring.instance_uuid().to_string(),
        ))))));
    Ok(resp)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::record;
    use crate::proto::si::v1::event_record::Type;

    fn watch_at(ring: &Arc<EventRing>, position: u64, last_poll: Instant) -> ConnWatch {
        let w = ConnWatch::default();
        *w.0.lock() = Some(Progress {
            ring: ring.clone(),
            position,
            last_poll,
            pending_since: None,
        });
        w
    }

    #[test]
    fn a_stream_is_stalled_only_when_records_wait_across_checks_unread() {
        let ring = Arc::new(EventRing::new(true));
        let long_ago = Instant::now() - 2 * STREAM_STALL;
        // Caught up (idle for long): never stalled.
        let w = watch_at(&ring, 0, long_ago);
        assert!(!w.stalled() && !w.stalled());
        // A record arrives: the first check only notes it, however long
        // the stream was idle before.
        ring.push_all([(
            record(Type::Node, "n1", "", "NodeAdded", String::new()).into(),
            "default".to_string(),
            String::new(),
        )]);
        assert!(!w.stalled());
        // Still unread STREAM_STALL after that check: stalled.
        if let Some(p) = w.0.lock().as_mut() {
            p.pending_since = Some(Instant::now() - STREAM_STALL);
        }
        assert!(w.stalled());
        // A read since the check restarts the wait.
        if let Some(p) = w.0.lock().as_mut() {
            p.last_poll = Instant::now();
        }
        assert!(!w.stalled());
        assert!(!ConnWatch::default().stalled(), "no stream");
    }

    #[test]
    fn records_render_in_the_v1_form_with_partition_and_queue() {
        let mut cap = crate::proto::si::v1::Resource::default();
        cap.resources.insert(
            "memory".into(),
            crate::proto::si::v1::Quantity { value: 64 },
        );
        cap.resources
            .insert("pods".into(), crate::proto::si::v1::Quantity { value: 0 });
        let node = Entry {
            id: 0,
            record: crate::events::Record::from(record(
                Type::Node,
                "n1",
                "default",
                "NodeAdded",
                "added".into(),
            ))
            .with_v1_resource(cap),
            partition: "default".into(),
            queue: String::new(),
        };
        assert_eq!(
            super::record(&node),
            json!({"type": 3, "objectID": "n1", "message": "added", "eventChangeType": 2,
                "resource": {"resources": {"memory": {"value": 64}, "pods": {}}},
                "partition": "default"})
        );
        let app = Entry {
            id: 1,
            record: record(Type::App, "app-1", "root.a", "Running", String::new()).into(),
            partition: "default".into(),
            queue: "root.a".into(),
        };
        let v = super::record(&app);
        assert_eq!(v["referenceID"], "root.a");
        assert_eq!(v["queue"], "root.a");
        assert_eq!(v["eventChangeType"], 1);
        assert!(v.get("message").is_none() && v.get("timestampNano").is_none());
    }
}
