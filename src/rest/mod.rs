//! The opt-in REST service (spec 15.1): the YuniKorn v0.12 `/ws/v1`
//! endpoints, `/metrics`, and the configuration update of spec 2.9.
//!
//! One library thread runs a current-thread tokio runtime with hyper's
//! HTTP/1 server: every connection is a task on that thread, so a slow or
//! idle client holds a socket, never a thread. Connections are capped in
//! all and per client address, with reserved slots beyond the caps for
//! the health check and the metrics; headers, bodies and connections each
//! have a time limit, and bodies are limited to [`MAX_BODY_BYTES`]
//! ([`settings`], `docs/rest-access.md`). The Host header must name this
//! service, and mutating requests need the operator's token unless the
//! service is bound to loopback. State is read from a
//! [`snapshot::Snapshot`] the core thread copies on request (waiting at
//! most [`CORE_TIMEOUT`]), then rendered without any lock on live state.
//! A configuration update runs as one transaction on its own library
//! thread ([`config_txn`]).

pub mod config_txn;
pub mod events;
pub(crate) mod handlers;
pub mod health;
mod parse_guard;
mod partition_address;
pub mod settings;
pub mod usage;
pub use crate::scheduler::snapshot;

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr, TcpListener, ToSocketAddrs};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::Sender;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::header::{HeaderValue, ALLOW, CONTENT_TYPE};
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use parking_lot::Mutex;
use serde_json::{json, Value};

use crate::config::QuantityGrammar;
use crate::error::{Error, Status};
use crate::metrics::Metrics;
use crate::proto::sicore::v1::RestOptions;
use crate::scheduler::config_txn::ConfigLock;
use crate::scheduler::core::{Command, Reply};
use config_txn::{ConfigWorker, Refusal};
use handlers::Endpoint;
use settings::{Mutation, Settings};
use snapshot::Snapshot;

pub use settings::{CONNECTION_TIMEOUT, HEADER_TIMEOUT, MAX_CONNECTIONS};

/// Largest request body (a configuration is a few kilobytes).
pub const MAX_BODY_BYTES: usize = 1 << 20;
/// Longest wait for the core thread's answer.
pub const CORE_TIMEOUT: Duration = Duration::from_secs(5);
/// A snapshot this young is served again instead of asking the core, so a
/// client polling in a tight loop costs the core at most a few copies a
/// second.
pub const SNAPSHOT_REUSE: Duration = Duration::from_millis(200);

type Resp = Response<Full<Bytes>>;

/// What the handlers share.
struct Context {
    scheduler_id: u64,
    core: Sender<Command>,
    metrics: Arc<Metrics>,
    settings: Settings,
    /// How long a snapshot or dump is served again ([`SNAPSHOT_REUSE`]).
    reuse: Duration,
    cache: Mutex<Option<(Instant, Arc<Snapshot>)>>,
    /// The dump as one shared buffer: every reader's response body is a
    /// reference to it, never a copy.
    dump_cache: Mutex<Option<(Instant, Bytes)>>,
    /// Held while a copy is requested from the core, so concurrent
    /// requests wait for that one copy instead of asking for their own.
    fetching: tokio::sync::Mutex<()>,
    slots: Mutex<Slots>,
    config: ConfigWorker,
}

/// Open connections: in the general pool, per client address, and on
/// reserved slots.
#[derive(Default)]
struct Slots {
    general: usize,
    per_peer: HashMap<IpAddr, usize>,
    reserved: usize,
}

/// Which pool a connection holds a slot of.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Slot {
    General(IpAddr),
    /// Beyond the limits: serves the health check and the metrics only.
    Reserved,
}

impl Context {
    /// A slot for a new connection from `peer`, or `None` (close it).
    fn take_slot(&self, peer: IpAddr) -> Option<Slot> {
        let mut s = self.slots.lock();
        let from_peer = s.per_peer.get(&peer).copied().unwrap_or(0);
        if s.general < self.settings.max_connections && from_peer < self.settings.max_per_peer {
            s.general += 1;
            *s.per_peer.entry(peer).or_default() += 1;
            Some(Slot::General(peer))
        } else if s.reserved < settings::RESERVED_CONNECTIONS {
            s.reserved += 1;
            Some(Slot::Reserved)
        } else {
            None
        }
    }

    fn give_slot(&self, slot: Slot) {
        let mut s = self.slots.lock();
        match slot {
            Slot::General(peer) => {
                s.general -= 1;
                if let Some(n) = s.per_peer.get_mut(&peer) {
                    *n -= 1;
                    if *n == 0 {
                        s.per_peer.remove(&peer);
                    }
                }
            }
            Slot::Reserved => s.reserved -= 1,
        }
    }
}

/// The addresses `address` names: `host:port`, or `:port` for every
/// address (IPv6 and IPv4 where the host has IPv6, IPv4 alone otherwise),
/// as Go's `net.Listen` reads it and so as the YuniKorn core's `:9080`.
fn resolve(address: &str) -> Result<Vec<SocketAddr>, Error> {
    let bad = |e: &dyn std::fmt::Display| {
        Error::invalid(format!(
            "SchedulerOptions.rest_address: '{address}' is not host:port or :port: {e}"
        ))
    };
    if let Some(port) = address.strip_prefix(':') {
        let port: u16 = port.parse().map_err(|e| bad(&e))?;
        return Ok(vec![
            SocketAddr::from((std::net::Ipv6Addr::UNSPECIFIED, port)),
            SocketAddr::from((std::net::Ipv4Addr::UNSPECIFIED, port)),
        ]);
    }
    let addrs: Vec<SocketAddr> = address.to_socket_addrs().map_err(|e| bad(&e))?.collect();
    if addrs.is_empty() {
        return Err(bad(&"it names no address"));
    }
    Ok(addrs)
}

/// A running REST service. [`RestServer::stop`] (or drop) ends it and
/// joins its thread.
pub struct RestServer {
    addr: SocketAddr,
    shutdown: Arc<tokio::sync::Notify>,
    thread: Option<JoinHandle<()>>,
}

impl RestServer {
    /// Binds `address` (`host:port`; port 0 picks a free one) and starts
    /// serving. `scheduler_id` marks the service's threads as the
    /// scheduler's own (synchronous calls from the RM's callback are
    /// refused as from any callback).
    /// `options` are checked here (binding beyond loopback needs a
    /// token); `config_lock` is the scheduler's lock of configuration
    /// changes, held by the configuration update.
    pub fn start(
        address: &str,
        options: &RestOptions,
        scheduler_id: u64,
        core: Sender<Command>,
        metrics: Arc<Metrics>,
        config_lock: ConfigLock,
    ) -> Result<Self, Error> {
        let addrs = resolve(address)?;
        // Checked before binding, so a refused address is never opened.
        for a in &addrs {
            Settings::new(options, address, *a)?;
        }
        let listener = TcpListener::bind(&addrs[..]).map_err(|e| {
            Error::rejected(format!(
                "SchedulerOptions.rest_address: cannot listen on '{address}': {e}"
            ))
        })?;
        let addr = listener
            .local_addr()
            .map_err(|e| Error::new(Status::Internal, format!("REST listener address: {e}")))?;
        listener
            .set_nonblocking(true)
            .map_err(|e| Error::new(Status::Internal, format!("REST listener: {e}")))?;
        let settings = Settings::new(options, address, addr)?;
        let config = ConfigWorker::start(scheduler_id, core.clone(), config_lock)?;
        let ctx = Arc::new(Context {
            scheduler_id,
            core,
            metrics,
            settings,
            reuse: SNAPSHOT_REUSE,
            cache: Mutex::new(None),
            dump_cache: Mutex::new(None),
            fetching: tokio::sync::Mutex::new(()),
            slots: Mutex::new(Slots::default()),
            config,
        });
        let shutdown = Arc::new(tokio::sync::Notify::new());
        let stop = shutdown.clone();
        let thread = std::thread::Builder::new()
            .name(format!("sicore-rest-{scheduler_id}"))
            .spawn(move || serve(listener, ctx, stop))
            .map_err(|e| Error::new(Status::Internal, format!("cannot start a thread: {e}")))?;
        log::info!("REST service listening on http://{addr}");
        Ok(RestServer {
            addr,
            shutdown,
            thread: Some(thread),
        })
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops accepting, drops open connections and joins the thread.
    pub fn stop(&mut self) {
        if let Some(t) = self.thread.take() {
            self.shutdown.notify_one();
            if t.join().is_err() {
                log::error!("the REST service thread ended with a panic");
            }
        }
    }
}

impl Drop for RestServer {
    fn drop(&mut self) {
        self.stop();
    }
}

fn serve(listener: TcpListener, ctx: Arc<Context>, shutdown: Arc<tokio::sync::Notify>) {
    let id = ctx.scheduler_id;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build();
    let runtime = match runtime {
        Ok(r) => r,
        Err(e) => {
            log::error!("REST service cannot start its runtime: {e}");
            return;
        }
    };
    crate::scheduler::owner::mark_library_thread(id);
    runtime.block_on(async move {
        let listener = match tokio::net::TcpListener::from_std(listener) {
            Ok(l) => l,
            Err(e) => {
                log::error!("REST service cannot use its listener: {e}");
                return;
            }
        };
        loop {
            let (stream, peer) = tokio::select! {
                _ = shutdown.notified() => break,
                accepted = listener.accept() => match accepted {
                    Ok(a) => a,
                    Err(e) => {
                        log::warn!("REST service: accept failed: {e}");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                },
            };
            let Some(slot) = ctx.take_slot(peer.ip()) else {
                log::warn!(
                    "REST service: connection limits reached; closing a new one from {peer}"
                );
                drop(stream);
                continue;
            };
            let ctx = ctx.clone();
            tokio::spawn(async move {
                let service_ctx = ctx.clone();
                let watch = events::ConnWatch::default();
                let conn_watch = watch.clone();
                let conn = hyper::server::conn::http1::Builder::new()
                    .timer(TokioTimer::new())
                    .header_read_timeout(ctx.settings.header_timeout)
                    .keep_alive(slot != Slot::Reserved)
                    .max_buf_size(64 * 1024)
                    .serve_connection(
                        TokioIo::new(stream),
                        service_fn(move |req| {
                            events::serve(service_ctx.clone(), slot, peer.ip(), watch.clone(), req)
                        }),
                    );
                // The lifetime limit, except for a connection serving an event stream.
                events::drive(conn, ctx.settings.connection_timeout, &conn_watch).await;
                ctx.give_slot(slot);
            });
        }
    });
    // Dropping the runtime cancels the connection tasks and with them the
    // last references to the context, whose configuration thread then
    // finishes a running update and is joined: no RM callback runs after
    // the scheduler is freed.
    drop(runtime);
}

fn with_cors(mut resp: Resp) -> Resp {
    let h = resp.headers_mut();
    h.insert("Access-Control-Allow-Origin", HeaderValue::from_static("*"));
    h.insert(
        "Access-Control-Allow-Credentials",
        HeaderValue::from_static("true"),
    );
    h.insert(
        "Access-Control-Allow-Methods",
        HeaderValue::from_static("GET,POST,HEAD,OPTIONS"),
    );
    h.insert(
        "Access-Control-Allow-Headers",
        HeaderValue::from_static("X-Requested-With,Content-Type,Accept,Origin"),
    );
    resp
}

fn body(status: StatusCode, content_type: &'static str, text: impl Into<Bytes>) -> Resp {
    let mut resp = Response::new(Full::new(text.into()));
    *resp.status_mut() = status;
    resp.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    with_cors(resp)
}

const JSON: &str = "application/json; charset=UTF-8";
const TEXT: &str = "text/plain; charset=UTF-8";

fn json_resp(status: StatusCode, v: &Value) -> Resp {
    body(status, JSON, v.to_string())
}

/// The reference's error body.
fn error(status: StatusCode, message: impl Into<String>) -> Resp {
    let message = message.into();
    json_resp(
        status,
        &json!({
            "status_code": status.as_u16(),
            "message": message,
            "description": message,
        }),
    )
}

/// A failed request: its status and the reason, answered with [`error`].
struct Fail {
    status: StatusCode,
    message: String,
}

fn fail(status: StatusCode, message: impl Into<String>) -> Fail {
    Fail {
        status,
        message: message.into(),
    }
}

fn header(req: &Request<Incoming>, name: hyper::header::HeaderName) -> Option<&str> {
    req.headers().get(name).and_then(|v| v.to_str().ok())
}

async fn handle(ctx: Arc<Context>, slot: Slot, req: Request<Incoming>) -> Result<Resp, Infallible> {
    // A Host that is not this service is a page on another site reaching
    // it through DNS rebinding (or a misdirected request): never served.
    if !ctx.settings.host_allowed(header(&req, hyper::header::HOST)) {
        return Ok(error(
            StatusCode::FORBIDDEN,
            format!(
                "Host '{}' is not this service's address or a configured name (SchedulerOptions.rest.allowed_hosts)",
                header(&req, hyper::header::HOST).unwrap_or("")
            ),
        ));
    }
    let Some(endpoint) = handlers::route(req.uri().path()) else {
        return Ok(error(
            StatusCode::NOT_FOUND,
            format!("no such endpoint: {}", req.uri().path()),
        ));
    };
    if let Endpoint::NotProvided(reason) = endpoint {
        return Ok(error(StatusCode::NOT_FOUND, reason));
    }
    if slot == Slot::Reserved && !matches!(endpoint, Endpoint::HealthCheck | Endpoint::Metrics) {
        let mut resp = error(
            StatusCode::SERVICE_UNAVAILABLE,
            "the REST service is at its connection limits; only the health check and the metrics are served now",
        );
        resp.headers_mut()
            .insert(hyper::header::RETRY_AFTER, HeaderValue::from_static("1"));
        return Ok(resp);
    }
    let allowed = handlers::methods(&endpoint);
    if req.method() == Method::OPTIONS {
        let mut resp = body(StatusCode::OK, TEXT, "");
        resp.headers_mut().insert(
            ALLOW,
            HeaderValue::from_str(&format!("{},OPTIONS", allowed.join(",")))
                .unwrap_or(HeaderValue::from_static("GET")),
        );
        return Ok(resp);
    }
    // HEAD is GET without the body (hyper leaves the body out).
    let method_ok = allowed.contains(&req.method().as_str())
        || (req.method() == Method::HEAD && allowed.contains(&"GET"));
    if !method_ok {
        let mut resp = error(
            StatusCode::METHOD_NOT_ALLOWED,
            format!(
                "method {} is not allowed on {}; allowed: {}",
                req.method(),
                req.uri().path(),
                allowed.join(", ")
            ),
        );
        resp.headers_mut().insert(
            ALLOW,
            HeaderValue::from_str(&allowed.join(", ")).unwrap_or(HeaderValue::from_static("GET")),
        );
        return Ok(resp);
    }
    let mutation = if handlers::mutates(req.method()) {
        ctx.settings
            .mutation(header(&req, hyper::header::AUTHORIZATION))
    } else {
        Mutation::Allowed
    };
    if mutation == Mutation::Disabled {
        return Ok(error(
            StatusCode::FORBIDDEN,
            format!(
                "{} {} is refused: this service is reachable beyond loopback and no token is set, so it only serves reads; set SchedulerOptions.rest.token (SICORE_REST_TOKEN for the yunikorn-core drop-in) to enable changes",
                req.method(),
                req.uri().path()
            ),
        ));
    }
    if mutation == Mutation::WrongToken {
        let mut resp = error(
            StatusCode::UNAUTHORIZED,
            format!(
                "{} {} needs 'Authorization: Bearer <token>' with the token the operator set (SchedulerOptions.rest.token)",
                req.method(),
                req.uri().path()
            ),
        );
        resp.headers_mut().insert(
            hyper::header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Bearer"),
        );
        return Ok(resp);
    }
    Ok(match dispatch(&ctx, endpoint, req).await {
        Ok(r) => r,
        Err(f) => error(f.status, f.message),
    })
}

fn query_param(req: &Request<Incoming>, name: &str) -> Option<String> {
    req.uri().query().and_then(|q| {
        q.split('&').find_map(|kv| {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            (k == name).then(|| handlers::decode_segment(&v.replace('+', " ")).unwrap_or_default())
        })
    })
}

/// Reads the body within the size and time limits; 413 beyond the size,
/// 408 beyond the time, 400 when it is not UTF-8.
async fn read_body(ctx: &Context, req: Request<Incoming>) -> Result<String, Fail> {
    let declared = req
        .headers()
        .get(hyper::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    let too_large = || {
        fail(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("request body is larger than the limit of {MAX_BODY_BYTES} bytes"),
        )
    };
    if declared.is_some_and(|n| n > MAX_BODY_BYTES as u64) {
        return Err(too_large());
    }
    let limit = ctx.settings.body_timeout;
    let collected = tokio::time::timeout(
        limit,
        Limited::new(req.into_body(), MAX_BODY_BYTES).collect(),
    )
    .await
    .map_err(|_| {
        fail(
            StatusCode::REQUEST_TIMEOUT,
            format!(
                "the request body did not arrive within {} ms",
                limit.as_millis()
            ),
        )
    })?;
    let bytes = match collected {
        Ok(c) => c.to_bytes(),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => return Err(too_large()),
        Err(e) => {
            return Err(fail(
                StatusCode::BAD_REQUEST,
                format!("cannot read the request body: {e}"),
            ))
        }
    };
    String::from_utf8(bytes.to_vec())
        .map_err(|_| fail(StatusCode::BAD_REQUEST, "request body is not UTF-8 text"))
}

impl Context {
    /// Sends the command `make` builds to the core and waits (bounded)
    /// for its answer.
    async fn on_core<T: Send + 'static>(
        &self,
        make: impl FnOnce(Reply<T>) -> Command,
    ) -> Result<T, Fail> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let cmd = make(Reply::new(move |v| {
            let _ = tx.send(v);
        }));
        let unavailable = || fail(StatusCode::SERVICE_UNAVAILABLE, "the scheduler is stopping");
        self.core.send(cmd).map_err(|_| unavailable())?;
        match tokio::time::timeout(CORE_TIMEOUT, rx).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(_)) => Err(fail(
                StatusCode::INTERNAL_SERVER_ERROR,
                "the scheduler failed to answer (see its log)",
            )),
            Err(_) => Err(fail(
                StatusCode::SERVICE_UNAVAILABLE,
                format!(
                    "the scheduler did not answer within {} s",
                    CORE_TIMEOUT.as_secs()
                ),
            )),
        }
    }

    fn cached<T: Clone>(cache: &Mutex<Option<(Instant, T)>>, since: Instant) -> Option<T> {
        match &*cache.lock() {
            Some((at, v)) if *at >= since => Some(v.clone()),
            _ => None,
        }
    }

    /// A recent snapshot: one taken after `now - SNAPSHOT_REUSE`, or with
    /// `fresh`, one taken after this call began. Concurrent callers share
    /// one request to the core.
    async fn snapshot(&self, fresh: bool) -> Result<Arc<Snapshot>, Fail> {
        let asked = Instant::now();
        let since = if fresh {
            asked
        } else {
            asked.checked_sub(self.reuse).unwrap_or(asked)
        };
        if let Some(s) = Self::cached(&self.cache, since) {
            return Ok(s);
        }
        let _turn = self.fetching.lock().await;
        if let Some(s) = Self::cached(&self.cache, since) {
            return Ok(s);
        }
        let taken = Instant::now();
        let snap = Arc::new(self.on_core(Command::Snapshot).await?);
        *self.cache.lock() = Some((taken, snap.clone()));
        Ok(snap)
    }

    /// The state dump, reused like snapshots: one buffer shared by every
    /// reader while it is fresh.
    async fn dump(&self) -> Result<Bytes, Fail> {
        let asked = Instant::now();
        let since = asked.checked_sub(self.reuse).unwrap_or(asked);
        if let Some(d) = Self::cached(&self.dump_cache, since) {
            return Ok(d);
        }
        let _turn = self.fetching.lock().await;
        if let Some(d) = Self::cached(&self.dump_cache, since) {
            return Ok(d);
        }
        let taken = Instant::now();
        let dump = self
            .on_core(|reply| Command::Dump {
                settle: false,
                reply,
            })
            .await?
            .map_err(|e| fail(StatusCode::INTERNAL_SERVER_ERROR, e.message))?;
        let dump = Bytes::from(dump);
        *self.dump_cache.lock() = Some((taken, dump.clone()));
        Ok(dump)
    }

    fn invalidate(&self) {
        *self.cache.lock() = None;
        *self.dump_cache.lock() = None;
    }
}

async fn dispatch(ctx: &Context, endpoint: Endpoint, req: Request<Incoming>) -> Result<Resp, Fail> {
    let ok = |v: Value| Ok(json_resp(StatusCode::OK, &v));
    match endpoint {
        Endpoint::Queues => {
            let snap = ctx.snapshot(false).await?;
            Ok(body(StatusCode::OK, JSON, handlers::queues(&snap)))
        }
        Endpoint::Clusters => ok(handlers::clusters(&*ctx.snapshot(false).await?)),
        Endpoint::ClusterUtilization => {
            ok(handlers::cluster_utilization(&*ctx.snapshot(false).await?))
        }
        Endpoint::Apps => {
            let queue = query_param(&req, "queue");
            let snap = ctx.snapshot(false).await?;
            handlers::apps(&snap, queue.as_deref())
                .map(|v| json_resp(StatusCode::OK, &v))
                .map_err(|e| fail(StatusCode::BAD_REQUEST, e))
        }
        Endpoint::Nodes => ok(handlers::nodes(&*ctx.snapshot(false).await?)),
        Endpoint::NodeUtilization => ok(handlers::node_utilization(&*ctx.snapshot(false).await?)),
        Endpoint::Partitions => ok(handlers::partitions(&*ctx.snapshot(false).await?)),
        Endpoint::PartitionQueues(p) => {
            let snap = ctx.snapshot(false).await?;
            let part = handlers::partition(&snap, &p)
                .ok_or_else(|| fail(StatusCode::NOT_FOUND, format!("partition {p} not found")))?;
            ok(handlers::partition_queues(part))
        }
        Endpoint::PartitionNodes(p) => {
            let snap = ctx.snapshot(false).await?;
            let part = handlers::partition(&snap, &p)
                .ok_or_else(|| fail(StatusCode::NOT_FOUND, format!("partition {p} not found")))?;
            ok(handlers::partition_nodes(part))
        }
        Endpoint::QueueApps(p, q) => {
            let snap = ctx.snapshot(false).await?;
            handlers::queue_apps(&snap, &p, &q)
                .map(|v| json_resp(StatusCode::OK, &v))
                .map_err(|e| fail(StatusCode::NOT_FOUND, e))
        }
        Endpoint::Usage(p, q) => {
            let snap = ctx.snapshot(false).await?;
            let part = handlers::partition(&snap, &p)
                .ok_or_else(|| fail(StatusCode::NOT_FOUND, format!("partition {p} not found")))?;
            usage::render(part, &q)
                .map(|v| json_resp(StatusCode::OK, &v))
                .map_err(|(code, m)| {
                    fail(
                        StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
                        m,
                    )
                })
        }
        Endpoint::Config => match *req.method() {
            Method::GET | Method::HEAD => get_config(ctx, &req).await,
            Method::PUT => put_config(ctx, req).await,
            _ => {
                if query_param(&req, "dry_run").as_deref() != Some("1") {
                    return Err(fail(
                        StatusCode::BAD_REQUEST,
                        "POST /ws/v1/config only validates: add ?dry_run=1 (use PUT to update)",
                    ));
                }
                validate(ctx, req).await
            }
        },
        Endpoint::ValidateConf => validate(ctx, req).await,
        Endpoint::FullStateDump => dump_response(ctx).await,
        Endpoint::HealthCheck => {
            let snap = ctx.snapshot(false).await?;
            let info = health::check(&snap);
            let status = if info.healthy {
                StatusCode::OK
            } else {
                StatusCode::SERVICE_UNAVAILABLE
            };
            let text = serde_json::to_string(&info).unwrap_or_default();
            Ok(body(status, JSON, text))
        }
        Endpoint::LogLevel => Ok(body(
            StatusCode::OK,
            TEXT,
            crate::loglevel::get().to_string().to_ascii_lowercase(),
        )),
        Endpoint::SetLogLevel(level) => {
            let filter = crate::options::parse_log_level(&level)
                .map_err(|e| fail(StatusCode::BAD_REQUEST, e.message))?;
            crate::loglevel::set(filter);
            Ok(body(
                StatusCode::OK,
                TEXT,
                format!(
                    "log level set to {}",
                    filter.to_string().to_ascii_lowercase()
                ),
            ))
        }
        Endpoint::Metrics => {
            let text = ctx.metrics.encode().map_err(|e| {
                fail(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    format!("cannot encode metrics: {e}"),
                )
            })?;
            Ok(body(
                StatusCode::OK,
                "text/plain; version=0.0.4; charset=utf-8",
                text,
            ))
        }
        Endpoint::HistoryApps => ok(handlers::history(&ctx.metrics.history(), false)),
        Endpoint::HistoryContainers => ok(handlers::history(&ctx.metrics.history(), true)),
        Endpoint::EventBatch => events::batch(ctx, &req).await,
        Endpoint::EventStream => events::stream(ctx, &req).await,
        Endpoint::NotProvided(reason) => Err(fail(StatusCode::NOT_FOUND, reason)),
    }
}

/// `GET /ws/v1/fullstatedump`: the body is the cached buffer itself
/// (reference-counted), so readers, slow ones included, share one copy.
async fn dump_response(ctx: &Context) -> Result<Resp, Fail> {
    Ok(body(StatusCode::OK, JSON, ctx.dump().await?))
}

/// The RM whose configuration `/ws/v1/config` shows and updates: the
/// owner of the first partition (spec 2.9).
fn config_rm(snap: &Snapshot) -> Result<&snapshot::RmSnap, Fail> {
    let rm_id = snap
        .partitions
        .first()
        .map(|p| p.rm_id.as_str())
        .ok_or_else(|| {
            fail(
                StatusCode::BAD_REQUEST,
                "no active partitions: no resource manager is registered",
            )
        })?;
    snap.rms.iter().find(|r| r.rm_id == rm_id).ok_or_else(|| {
        fail(
            StatusCode::BAD_REQUEST,
            format!("RM {rm_id} is not registered"),
        )
    })
}

async fn get_config(ctx: &Context, req: &Request<Incoming>) -> Result<Resp, Fail> {
    let snap = ctx.snapshot(false).await?;
    let rm = config_rm(&snap)?;
    let wants_json = req
        .headers()
        .get(hyper::header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("application/json"));
    if wants_json {
        let mut v: Value = serde_yaml_ng::from_str(
            &handlers::strip_checksum(&rm.config_text).unwrap_or_else(|_| rm.config_text.clone()),
        )
        .map_err(|e| {
            fail(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("configuration in force is not YAML: {e}"),
            )
        })?;
        if let Value::Object(m) = &mut v {
            m.insert("checksum".into(), Value::String(rm.checksum.clone()));
        }
        return Ok(json_resp(StatusCode::OK, &v));
    }
    Ok(body(
        StatusCode::OK,
        "application/x-yaml; charset=UTF-8",
        handlers::config_with_checksum(&rm.config_text, &rm.checksum),
    ))
}

/// How posted configuration text writes its quantities: as the v0.12
/// edition does when every registered RM is a v0.12 one, else as YuniKorn
/// v1.x does (the k8shim's admission controller may post before its
/// scheduler has registered).
async fn validation_grammar(ctx: &Context) -> Result<QuantityGrammar, Fail> {
    let snap = ctx.snapshot(false).await?;
    let all_v012 = !snap.rms.is_empty()
        && snap
            .rms
            .iter()
            .all(|rm| rm.grammar == QuantityGrammar::Integer);
    Ok(if all_v012 {
        QuantityGrammar::Integer
    } else {
        QuantityGrammar::Units
    })
}

/// `{"allowed": bool, "reason": string}`, HTTP 200 either way.
async fn validate(ctx: &Context, req: Request<Incoming>) -> Result<Resp, Fail> {
    let text = read_body(ctx, req).await?;
    let grammar = validation_grammar(ctx).await?;
    let v = match parse_guard::check_posted(&text, grammar).await? {
        Ok(_) => json!({"allowed": true, "reason": ""}),
        Err(e) => json!({"allowed": false, "reason": e.to_string()}),
    };
    Ok(json_resp(StatusCode::OK, &v))
}

/// `PUT /ws/v1/config` (spec 2.9): the body is read and checked here, then
/// the update runs as one transaction on the configuration thread
/// ([`config_txn`]), which carries it to the end even if this request is
/// dropped (the client went away).
async fn put_config(ctx: &Context, req: Request<Incoming>) -> Result<Resp, Fail> {
    let text = read_body(ctx, req).await?;
    let grammar = validation_grammar(ctx).await?;
    parse_guard::check_posted(&text, grammar)
        .await?
        .map_err(|e| {
            fail(
                StatusCode::BAD_REQUEST,
                format!("invalid configuration: {e}"),
            )
        })?;
    let base = handlers::checksum_entry(&text).unwrap_or_default();
    let new_text = handlers::strip_checksum(&text).map_err(|e| {
        fail(
            StatusCode::BAD_REQUEST,
            format!("invalid configuration: {e}"),
        )
    })?;
    let verdict = ctx.config.submit(new_text, base).await;
    ctx.invalidate();
    match verdict {
        Ok(Ok(())) => Ok(body(
            StatusCode::OK,
            TEXT,
            "Configuration updated successfully",
        )),
        Ok(Err(Refusal::Conflict(m))) => Err(fail(StatusCode::CONFLICT, m)),
        Ok(Err(Refusal::Invalid(m))) => Err(fail(StatusCode::BAD_REQUEST, m)),
        Ok(Err(Refusal::Unavailable(m))) => Err(fail(StatusCode::SERVICE_UNAVAILABLE, m)),
        Err(_) => Err(fail(
            StatusCode::SERVICE_UNAVAILABLE,
            "the scheduler is stopping",
        )),
    }
}

#[cfg(test)]
mod tests;
