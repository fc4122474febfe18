//! The parts of an answer every handler builds: JSON and text bodies with
//! the CORS headers, the reference's error body, the failure a handler
//! returns, and reading a request's headers and query. A leaf: it imports
//! no other file of the service.

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::{Request, Response, StatusCode};
use serde_json::{json, Value};

use super::router;
use super::Resp;

pub(super) fn with_cors(mut resp: Resp) -> Resp {
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

pub(super) fn body(status: StatusCode, content_type: &'static str, text: impl Into<Bytes>) -> Resp {
    let mut resp = Response::new(Full::new(text.into()));
    *resp.status_mut() = status;
    resp.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    with_cors(resp)
}

pub(super) const JSON: &str = "application/json; charset=UTF-8";
pub(super) const TEXT: &str = "text/plain; charset=UTF-8";

pub(super) fn json_resp(status: StatusCode, v: &Value) -> Resp {
    body(status, JSON, v.to_string())
}

/// The reference's error body.
pub(super) fn error(status: StatusCode, message: impl Into<String>) -> Resp {
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
pub(super) struct Fail {
    pub(super) status: StatusCode,
    pub(super) message: String,
}

pub(super) fn fail(status: StatusCode, message: impl Into<String>) -> Fail {
    Fail {
        status,
        message: message.into(),
    }
}

pub(super) fn header(req: &Request<Incoming>, name: hyper::header::HeaderName) -> Option<&str> {
    req.headers().get(name).and_then(|v| v.to_str().ok())
}

pub(super) fn query_param(req: &Request<Incoming>, name: &str) -> Option<String> {
    req.uri().query().and_then(|q| {
        q.split('&').find_map(|kv| {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            (k == name).then(|| router::decode_segment(&v.replace('+', " ")).unwrap_or_default())
        })
    })
}
