//! Dispatch: each endpoint's handler, with the snapshot and dump caches
//! they read from and the configuration routes.

use std::sync::Arc;
use std::time::Instant;

use http_body_util::{BodyExt, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::{Method, Request, StatusCode};
use parking_lot::Mutex;
use serde_json::{json, Value};

use super::config_txn::Refusal;
use super::response::{body, fail, json_resp, query_param, Fail, JSON, TEXT};
use super::router::Endpoint;
use super::snapshot::{self, Snapshot};
use super::{
    events, handlers, health, parse_guard, pending, usage, v1, v1_routes, Context, Resp,
    CORE_TIMEOUT, MAX_BODY_BYTES,
};
use crate::config::QuantityGrammar;
use crate::scheduler::core::{Command, Reply};

/// How long an RM's own dump part is reused before its plugin is asked
/// again.
const RM_DUMP_REUSE: std::time::Duration = std::time::Duration::from_secs(1);

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
    pub(super) async fn snapshot(&self, fresh: bool) -> Result<Arc<Snapshot>, Fail> {
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
        let _turn = self.dumping.lock().await;
        if let Some(d) = Self::cached(&self.dump_cache, since) {
            return Ok(d);
        }
        let taken = Instant::now();
        // The core's part on the core thread; the RMs' own parts here,
        // off it, so a slow dump plugin holds only this reader (and its
        // own RM's callbacks), never the scheduling of every RM.
        let (core, sources) = self.on_core(|reply| Command::DumpParts { reply }).await?;
        let mut parts = Vec::with_capacity(sources.len());
        for (id, callback) in sources {
            if let Some(part) = self.rm_dump(id.clone(), callback).await? {
                parts.push((id, part));
            }
        }
        let dump = Bytes::from(crate::scheduler::dump::with_rm_dumps(core, parts));
        *self.dump_cache.lock() = Some((taken, dump.clone()));
        Ok(dump)
    }

    /// RM `id`'s own dump part: fetched on a blocking thread through its
    /// callbacks (one call at a time with its others), and reused for
    /// [`RM_DUMP_REUSE`], so readers polling the dump ask a slow plugin at
    /// most once a second.
    async fn rm_dump(
        &self,
        id: String,
        callback: std::sync::Arc<dyn crate::scheduler::port::RmPort>,
    ) -> Result<Option<Result<String, String>>, Fail> {
        let now = Instant::now();
        if let Some((at, part)) = self.rm_dumps.lock().get(&id) {
            if now.saturating_duration_since(*at) < RM_DUMP_REUSE {
                return Ok(part.clone());
            }
        }
        let part = tokio::task::spawn_blocking(move || callback.state_dump())
            .await
            .map_err(|e| {
                fail(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    format!("the state dump of RM {id} failed: {e}"),
                )
            })?;
        // Reused from when it arrived: a slow plugin is asked again only
        // a second after its last answer.
        let done = Instant::now();
        let mut cache = self.rm_dumps.lock();
        cache.retain(|_, (at, _)| done.saturating_duration_since(*at) < RM_DUMP_REUSE);
        cache.insert(id, (done, part.clone()));
        Ok(part)
    }

    fn invalidate(&self) {
        *self.cache.lock() = None;
        *self.dump_cache.lock() = None;
    }
}

pub(super) async fn dispatch(
    ctx: &Context,
    endpoint: Endpoint,
    req: Request<Incoming>,
) -> Result<Resp, Fail> {
    let ok = |v: Value| Ok(json_resp(StatusCode::OK, &v));
    let routed = |r: Result<Value, v1_routes::RouteError>| match r {
        Ok(v) => Ok(json_resp(StatusCode::OK, &v)),
        Err((code, m)) => Err(fail(
            StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            m,
        )),
    };
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
        Endpoint::Partitions => ok(v1::partitions(&*ctx.snapshot(false).await?)),
        Endpoint::NodeUtilizations => ok(v1::node_utilizations(&*ctx.snapshot(false).await?)),
        Endpoint::PlacementRules(p) => {
            routed(v1_routes::placement_rules(&*ctx.snapshot(false).await?, &p))
        }
        Endpoint::PartitionQueues(p) => routed(v1_routes::partition_queues(
            &*ctx.snapshot(false).await?,
            &p,
        )),
        Endpoint::PartitionQueue(p, q) => {
            let subtree = query_param(&req, "subtree").is_some();
            let snap = ctx.snapshot(false).await?;
            routed(v1_routes::partition_queue(&snap, &p, &q, subtree))
        }
        Endpoint::PartitionPending(p) => {
            routed(pending::partition_pending(&*ctx.snapshot(false).await?, &p))
        }
        Endpoint::PartitionNodes(p) => {
            routed(v1_routes::partition_nodes(&*ctx.snapshot(false).await?, &p))
        }
        Endpoint::PartitionNode(p, n) => routed(v1_routes::partition_node(
            &*ctx.snapshot(false).await?,
            &p,
            &n,
        )),
        Endpoint::QueueApps(p, q) => {
            routed(v1_routes::queue_apps(&*ctx.snapshot(false).await?, &p, &q))
        }
        Endpoint::QueueApp(p, q, a) => routed(v1_routes::queue_app(
            &*ctx.snapshot(false).await?,
            &p,
            &q,
            &a,
        )),
        Endpoint::QueueAppsByState(p, q, st) => {
            let status = query_param(&req, "status");
            let snap = ctx.snapshot(false).await?;
            routed(v1_routes::queue_apps_by_state(
                &snap,
                &p,
                &q,
                &st,
                status.as_deref(),
            ))
        }
        Endpoint::PartitionApp(p, a) => routed(v1_routes::partition_app(
            &*ctx.snapshot(false).await?,
            &p,
            &a,
        )),
        Endpoint::PartitionAppsByState(p, st) => {
            let status = query_param(&req, "status");
            let snap = ctx.snapshot(false).await?;
            routed(v1_routes::partition_apps_by_state(
                &snap,
                &p,
                &st,
                status.as_deref(),
            ))
        }
        Endpoint::DebugStateDump => {
            let snap = ctx.snapshot(false).await?;
            let config = config_rm(&snap).ok().map(config_object);
            let level = crate::loglevel::get().to_string().to_ascii_lowercase();
            let v = v1_routes::debug_dump(&snap, &ctx.metrics.history(), config, &level);
            let text = serde_json::to_string_pretty(&v).unwrap_or_default() + "\n";
            Ok(body(StatusCode::OK, JSON, text))
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
            // 200 also when unhealthy, as YuniKorn v1.x (rest-v1.9.md 26).
            let info = health::check(&snap);
            let text = serde_json::to_string(&info).unwrap_or_default() + "\n";
            Ok(body(StatusCode::OK, JSON, text))
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
pub(super) async fn dump_response(ctx: &Context) -> Result<Resp, Fail> {
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

/// The configuration in force as the v1.x JSON object (`rest-v1.9.md` 5):
/// the document's own keys (`partitions`) plus the v1.x additions, and
/// the lower-case `checksum` v0.12 clients read.
fn config_object(rm: &snapshot::RmSnap) -> Value {
    let text = handlers::strip_checksum(&rm.config_text).unwrap_or_else(|_| rm.config_text.clone());
    let mut v: Value = serde_yaml_ng::from_str(&text).unwrap_or_else(|_| json!({}));
    if let Value::Object(m) = &mut v {
        if let Some(parts) = m.get("partitions").cloned() {
            m.insert("Partitions".into(), parts);
        }
        m.insert("checksum".into(), Value::String(rm.checksum.clone()));
        m.insert("Checksum".into(), Value::String(rm.checksum.clone()));
        m.insert("DeadlockDetectionEnabled".into(), json!(false));
        m.insert("DeadlockTimeoutSeconds".into(), json!(0));
    }
    v
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
        return Ok(json_resp(StatusCode::OK, &config_object(rm)));
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
        Ok(_) => json!({"allowed": true}),
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
