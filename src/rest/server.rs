//! Connection handling: the accept loop with its connection slots and
//! time limits, the access checks every request passes (Host, reserved
//! slots, methods, the token) before the router's endpoint is dispatched,
//! and the answer's encoding (JSON bodies, CORS headers, gzip).

use std::convert::Infallible;
use std::io::Write;
use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::header::{HeaderValue, ALLOW};
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};

use super::dispatch::dispatch;
use super::events;
use super::response::{body, error, header, TEXT};
use super::router::{self, Endpoint};
use super::settings::Mutation;
use super::{Context, Resp, Slot};

pub(super) fn serve(listener: TcpListener, ctx: Arc<Context>, shutdown: Arc<tokio::sync::Notify>) {
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
                            events::serve(
                                service_ctx.clone(),
                                slot,
                                peer.ip(),
                                watch.clone(),
                                req,
                                answer,
                            )
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
    let Some(endpoint) = router::route(req.uri().path()) else {
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
    let allowed = router::methods(&endpoint);
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
    let mutation = if router::mutates(req.method()) {
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

/// Whether `Accept-Encoding` lists `gzip` with a q-value above 0.
pub(super) fn accepts_gzip(header: Option<&str>) -> bool {
    header.is_some_and(|h| {
        h.split(',').any(|item| {
            let mut parts = item.split(';');
            let coding = parts.next().unwrap_or("").trim();
            if !coding.eq_ignore_ascii_case("gzip") {
                return false;
            }
            parts.all(|p| {
                let p = p.trim();
                match p.split_once('=') {
                    Some((k, v)) if k.trim().eq_ignore_ascii_case("q") => {
                        v.trim().parse::<f32>().is_ok_and(|q| q > 0.0)
                    }
                    _ => true,
                }
            })
        })
    })
}

/// Smallest body worth compressing (YuniKorn v1.9's threshold: about one
/// network packet).
pub(super) const GZIP_MIN_BYTES: usize = 1400;

/// Compresses a finished answer when the client asked for gzip and the
/// body is large enough (`rest-v1.9.md` 31).
pub(super) async fn answer(
    ctx: Arc<Context>,
    slot: Slot,
    req: Request<Incoming>,
) -> Result<Resp, Infallible> {
    let gzip = accepts_gzip(header(&req, hyper::header::ACCEPT_ENCODING));
    let head = req.method() == Method::HEAD;
    let resp = handle(ctx, slot, req).await?;
    if !gzip || head {
        return Ok(resp);
    }
    let (mut parts, body) = resp.into_parts();
    let Ok(collected) = body.collect().await;
    let plain = collected.to_bytes();
    if plain.len() < GZIP_MIN_BYTES {
        return Ok(Response::from_parts(parts, Full::new(plain)));
    }
    let mut enc = flate2::write::GzEncoder::new(
        Vec::with_capacity(plain.len() / 4),
        flate2::Compression::fast(),
    );
    let packed = enc.write_all(&plain).and_then(|_| enc.finish());
    let Ok(packed) = packed else {
        return Ok(Response::from_parts(parts, Full::new(plain)));
    };
    let h = &mut parts.headers;
    h.insert(
        hyper::header::CONTENT_ENCODING,
        HeaderValue::from_static("gzip"),
    );
    h.insert(
        hyper::header::VARY,
        HeaderValue::from_static("Accept-Encoding"),
    );
    h.remove(hyper::header::CONTENT_LENGTH);
    Ok(Response::from_parts(parts, Full::new(Bytes::from(packed))))
}

#[cfg(test)]
mod tests {
    use super::accepts_gzip;

    #[test]
    fn gzip_negotiation() {
        assert!(accepts_gzip(Some("gzip")));
        assert!(accepts_gzip(Some("deflate, GZIP;q=0.5")));
        assert!(accepts_gzip(Some("br, gzip, deflate")));
        assert!(!accepts_gzip(Some("gzip;q=0")));
        assert!(!accepts_gzip(Some("gzip; q=0.0")));
        assert!(!accepts_gzip(Some("deflate")));
        assert!(!accepts_gzip(Some("x-gzip")));
        assert!(!accepts_gzip(None));
    }
}
