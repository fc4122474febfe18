//! Access control and limits of the REST service (`docs/rest-access.md`):
//! the options as the service uses them, the Host check against DNS
//! rebinding, and the bearer token of mutating requests.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use crate::error::Error;
use crate::proto::sicore::v1::RestOptions;

/// Time a client has to send its request headers, by default.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// Time a client has to send its request body, by default.
pub const BODY_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest life of one connection (keep-alive included), by default.
pub const CONNECTION_TIMEOUT: Duration = Duration::from_secs(60);
/// Most connections served at once, by default.
pub const MAX_CONNECTIONS: usize = 64;
/// Most connections from one client address, by default.
pub const MAX_CONNECTIONS_PER_PEER: usize = 32;
/// Connections beyond the limits that may still reach the health check
/// and the metrics (and nothing else).
pub const RESERVED_CONNECTIONS: usize = 8;

/// The service's settings, defaults applied and checked.
pub struct Settings {
    /// Bearer token of mutating requests; `None` when unset.
    token: Option<String>,
    /// Names the Host header may carry besides the bound address, lower
    /// case, with or without a port.
    names: Vec<String>,
    /// Address bound.
    bound: SocketAddr,
    /// See [`HEADER_TIMEOUT`].
    pub header_timeout: Duration,
    /// See [`BODY_TIMEOUT`].
    pub body_timeout: Duration,
    /// See [`CONNECTION_TIMEOUT`].
    pub connection_timeout: Duration,
    /// See [`MAX_CONNECTIONS`].
    pub max_connections: usize,
    /// See [`MAX_CONNECTIONS_PER_PEER`].
    pub max_per_peer: usize,
}

fn millis_or(ms: u64, default: Duration) -> Duration {
    if ms == 0 {
        default
    } else {
        Duration::from_millis(ms)
    }
}

fn count_or(n: u32, default: usize) -> usize {
    if n == 0 {
        default
    } else {
        n as usize
    }
}

impl Settings {
    /// Checks `o` for the service bound to `bound`; `address` is the
    /// `rest_address` as configured (its host part is a name clients may
    /// use). Binding beyond loopback needs a token.
    pub fn new(o: &RestOptions, address: &str, bound: SocketAddr) -> Result<Self, Error> {
        let token = o.token.trim();
        if token.chars().any(|c| !c.is_ascii_graphic()) {
            return Err(Error::invalid(
                "SchedulerOptions.rest.token: only visible ASCII characters are allowed",
            ));
        }
        if token.is_empty() && !bound.ip().is_loopback() {
            return Err(Error::invalid(format!(
                "SchedulerOptions.rest_address: '{address}' binds {} beyond loopback, which needs SchedulerOptions.rest.token so that configuration and log-level updates are not open to the network (see docs/rest-access.md)",
                bound.ip()
            )));
        }
        let mut names = Vec::new();
        for n in &o.allowed_hosts {
            let n = n.trim().to_ascii_lowercase();
            if n.is_empty() || n.contains(['/', ' ', '@']) {
                return Err(Error::invalid(format!(
                    "SchedulerOptions.rest.allowed_hosts: '{n}' is not a host name or name:port"
                )));
            }
            names.push(n);
        }
        if let Some((host, _)) = address.rsplit_once(':') {
            let host = host.trim_start_matches('[').trim_end_matches(']');
            if !host.is_empty() && host.parse::<IpAddr>().is_err() {
                names.push(host.to_ascii_lowercase());
            }
        }
        if bound.ip().is_loopback() {
            names.push("localhost".into());
        }
        Ok(Settings {
            token: (!token.is_empty()).then(|| token.to_string()),
            names,
            bound,
            header_timeout: millis_or(o.header_timeout_ms, HEADER_TIMEOUT),
            body_timeout: millis_or(o.body_timeout_ms, BODY_TIMEOUT),
            connection_timeout: millis_or(o.connection_timeout_ms, CONNECTION_TIMEOUT),
            max_connections: count_or(o.max_connections, MAX_CONNECTIONS),
            max_per_peer: count_or(o.max_connections_per_peer, MAX_CONNECTIONS_PER_PEER),
        })
    }

    /// Whether a request with this `Host` header is for this service: the
    /// bound IP (any IP when bound to all addresses) or a configured name,
    /// with no port or the bound one. A name that is neither is how a DNS
    /// rebinding page reaches a service on loopback.
    pub fn host_allowed(&self, host: Option<&str>) -> bool {
        let Some(host) = host.map(str::trim).filter(|h| !h.is_empty()) else {
            return false;
        };
        let host = host.to_ascii_lowercase();
        if self.names.contains(&host) {
            return true;
        }
        let (name, port) = split_host(&host);
        if port.is_some_and(|p| p != self.bound.port()) {
            return false;
        }
        if let Ok(ip) = name.parse::<IpAddr>() {
            return ip == self.bound.ip() || self.bound.ip().is_unspecified();
        }
        self.names.iter().any(|n| n == name)
    }

    /// Whether a mutating request may proceed: with a token set, it must
    /// carry `Authorization: Bearer <token>`; without one the service is
    /// bound to loopback (checked at start) and needs none.
    pub fn authorized(&self, authorization: Option<&str>) -> bool {
        let Some(token) = &self.token else {
            return true;
        };
        let Some(given) = authorization.and_then(|a| {
            let (scheme, value) = a.trim().split_once(' ')?;
            scheme.eq_ignore_ascii_case("bearer").then(|| value.trim())
        }) else {
            return false;
        };
        constant_time_eq(given.as_bytes(), token.as_bytes())
    }
}

/// `host[:port]` or `[v6][:port]`, split.
fn split_host(host: &str) -> (&str, Option<u16>) {
    if let Some(rest) = host.strip_prefix('[') {
        let Some((ip, after)) = rest.split_once(']') else {
            return (host, None);
        };
        let port = after.strip_prefix(':').and_then(|p| p.parse().ok());
        return (ip, port);
    }
    match host.rsplit_once(':') {
        Some((name, port)) if !name.contains(':') => match port.parse() {
            Ok(p) => (name, Some(p)),
            Err(_) => (host, Some(0)),
        },
        _ => (host, None),
    }
}

/// Compares without stopping at the first difference, so the time taken
/// does not tell how much of a guess was right.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(token: &str, address: &str, bound: &str) -> Result<Settings, Error> {
        let o = RestOptions {
            token: token.into(),
            allowed_hosts: vec!["sched.example:9080".into(), "ui.example".into()],
            ..Default::default()
        };
        Settings::new(&o, address, bound.parse().unwrap())
    }

    #[test]
    fn hosts() {
        let s = settings("", "localhost:9080", "127.0.0.1:9080").unwrap();
        for ok in [
            "127.0.0.1:9080",
            "127.0.0.1",
            "localhost:9080",
            "LOCALHOST",
            "sched.example:9080",
            "ui.example",
            "ui.example:9080",
        ] {
            assert!(s.host_allowed(Some(ok)), "{ok}");
        }
        for bad in [
            "evil.example",
            "evil.example:9080",
            "127.0.0.2:9080",
            "127.0.0.1:9081",
            "sched.example",
            "localhost:80",
            "",
            "127.0.0.1:x",
        ] {
            assert!(!s.host_allowed(Some(bad)), "{bad}");
        }
        assert!(!s.host_allowed(None));
        let s = settings("t", "[::]:9080", "[::]:9080").unwrap();
        assert!(s.host_allowed(Some("[fe80::1]:9080")));
        assert!(s.host_allowed(Some("10.1.2.3")));
        assert!(!s.host_allowed(Some("localhost")));
    }

    #[test]
    fn token_and_bind() {
        let e = settings("", "0.0.0.0:9080", "0.0.0.0:9080").err().unwrap();
        assert!(e.message.contains("rest.token"), "{}", e.message);
        assert!(settings("bad token", "127.0.0.1:1", "127.0.0.1:1").is_err());
        let s = settings("s3cret", "0.0.0.0:9080", "0.0.0.0:9080").unwrap();
        assert!(s.authorized(Some("Bearer s3cret")));
        assert!(s.authorized(Some("bearer  s3cret ")));
        assert!(!s.authorized(Some("Bearer s3cre")));
        assert!(!s.authorized(Some("Basic s3cret")));
        assert!(!s.authorized(None));
        let open = settings("", "127.0.0.1:1", "127.0.0.1:1").unwrap();
        assert!(open.authorized(None));
    }
}
