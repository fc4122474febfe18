//! Access control and limits of the REST service (`docs/rest-and-metrics.md`):
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
    /// The host of `rest_address` when it is a name, lower case.
    names: Vec<String>,
    /// `rest.allowed_hosts`.
    patterns: Vec<HostPattern>,
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

/// What a mutating request may do, by the token it carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mutation {
    /// It may proceed.
    Allowed,
    /// A token is set and the request does not carry it (401).
    WrongToken,
    /// No token is set and the service is reachable beyond loopback, so
    /// nothing may change through it (403).
    Disabled,
}

/// One `rest.allowed_hosts` entry: `name`, `name:port` or `name:*`, where
/// `name` may start with `*.` for any subdomain.
struct HostPattern {
    /// Lower case; for `*.example.com` this is `.example.com`.
    name: String,
    /// Whether `name` is a suffix (`*.` was given).
    subdomains: bool,
    /// `None`: no port or the bound one; `Some(None)`: any port;
    /// `Some(Some(p))`: exactly `p`.
    port: Option<Option<u16>>,
}

impl HostPattern {
    fn parse(entry: &str) -> Result<HostPattern, Error> {
        let bad = || {
            Error::invalid(format!(
                "SchedulerOptions.rest.allowed_hosts: '{entry}' is not a host name, name:port, name:* or *.domain"
            ))
        };
        let e = entry.trim().to_ascii_lowercase();
        if e.is_empty() || e.contains(['/', ' ', '@', '?', '#']) {
            return Err(bad());
        }
        let (host, port) = match split_host(&e) {
            (h, Some(0)) if e.ends_with(":*") => (h.trim_end_matches(":*").to_string(), Some(None)),
            (_, Some(0)) => return Err(bad()),
            (h, Some(p)) => (h.to_string(), Some(Some(p))),
            (h, None) => (h.to_string(), None),
        };
        let (name, subdomains) = match host.strip_prefix("*.") {
            Some(rest) if !rest.is_empty() && !rest.contains('*') => (format!(".{rest}"), true),
            _ if host.contains('*') || host.is_empty() => return Err(bad()),
            _ => (host, false),
        };
        Ok(HostPattern {
            name,
            subdomains,
            port,
        })
    }

    fn matches(&self, name: &str, port: Option<u16>, bound_port: u16) -> bool {
        let name_ok = if self.subdomains {
            name.len() > self.name.len() && name.ends_with(&self.name)
        } else {
            name == self.name
        };
        name_ok
            && match self.port {
                None => port.is_none_or(|p| p == bound_port),
                Some(None) => true,
                Some(Some(want)) => port == Some(want),
            }
    }
}

impl Settings {
    /// Checks `o` for the service bound to `bound`; `address` is the
    /// `rest_address` as configured (its host part is a name clients may
    /// use).
    pub fn new(o: &RestOptions, address: &str, bound: SocketAddr) -> Result<Self, Error> {
        let token = o.token.trim();
        if token.chars().any(|c| !c.is_ascii_graphic()) {
            return Err(Error::invalid(
                "SchedulerOptions.rest.token: only visible ASCII characters are allowed",
            ));
        }
        let mut patterns = Vec::new();
        for n in &o.allowed_hosts {
            patterns.push(HostPattern::parse(n)?);
        }
        let mut names = Vec::new();
        if let Some((host, _)) = address.rsplit_once(':') {
            let host = host.trim_start_matches('[').trim_end_matches(']');
            if !host.is_empty() && host.parse::<IpAddr>().is_err() {
                names.push(host.to_ascii_lowercase());
            }
        }
        Ok(Settings {
            token: (!token.is_empty()).then(|| token.to_string()),
            names,
            patterns,
            bound,
            header_timeout: millis_or(o.header_timeout_ms, HEADER_TIMEOUT),
            body_timeout: millis_or(o.body_timeout_ms, BODY_TIMEOUT),
            connection_timeout: millis_or(o.connection_timeout_ms, CONNECTION_TIMEOUT),
            max_connections: count_or(o.max_connections, MAX_CONNECTIONS),
            max_per_peer: count_or(o.max_connections_per_peer, MAX_CONNECTIONS_PER_PEER),
        })
    }

    /// Whether the service is reachable only from this machine.
    fn loopback_only(&self) -> bool {
        self.bound.ip().is_loopback()
    }

    /// Whether a request with this `Host` header is for this service
    /// (docs/rest-and-metrics.md has the threat model):
    ///
    /// - `localhost` and loopback addresses, with any port (a browser or
    ///   `kubectl port-forward` on this machine; a DNS-rebinding page
    ///   never sends these);
    /// - the bound IP (any IP when bound to all addresses) and the host of
    ///   `rest_address`, with no port or the bound one;
    /// - the `allowed_hosts` patterns;
    /// - when the service is bound beyond loopback and no `allowed_hosts`
    ///   are set, any name: it is reachable from the network anyway, and a
    ///   proxy in front (YuniKorn's web server, an ingress) passes the
    ///   browser's `Host` through.
    pub fn host_allowed(&self, host: Option<&str>) -> bool {
        let Some(host) = host.map(str::trim).filter(|h| !h.is_empty()) else {
            return false;
        };
        let host = host.to_ascii_lowercase();
        let (name, port) = split_host(&host);
        if port == Some(0) || name.is_empty() {
            return false;
        }
        let bound_port = self.bound.port();
        if self
            .patterns
            .iter()
            .any(|p| p.matches(name, port, bound_port))
        {
            return true;
        }
        let ip = name.parse::<IpAddr>().ok();
        let any_ip = self.bound.ip().is_unspecified();
        if name == "localhost"
            || ip.is_some_and(|ip| ip.is_loopback() && (ip == self.bound.ip() || any_ip))
        {
            return true;
        }
        if !self.loopback_only() && self.patterns.is_empty() {
            return true;
        }
        if port.is_some_and(|p| p != bound_port) {
            return false;
        }
        if let Some(ip) = ip {
            return ip == self.bound.ip() || any_ip;
        }
        self.names.iter().any(|n| n == name)
    }

    /// Whether a mutating request may proceed. With a token set it must
    /// carry `Authorization: Bearer <token>`. Without one, a service bound
    /// to loopback accepts it (only this machine reaches it) and any other
    /// refuses every mutation.
    pub fn mutation(&self, authorization: Option<&str>) -> Mutation {
        let Some(token) = &self.token else {
            return if self.loopback_only() {
                Mutation::Allowed
            } else {
                Mutation::Disabled
            };
        };
        let Some(given) = authorization.and_then(|a| {
            let (scheme, value) = a.trim().split_once(' ')?;
            scheme.eq_ignore_ascii_case("bearer").then(|| value.trim())
        }) else {
            return Mutation::WrongToken;
        };
        if constant_time_eq(given.as_bytes(), token.as_bytes()) {
            Mutation::Allowed
        } else {
            Mutation::WrongToken
        }
    }
}

/// `host[:port]` or `[v6][:port]`, split.
fn split_host(host: &str) -> (&str, Option<u16>) {
    if let Some(rest) = host.strip_prefix('[') {
        let Some((ip, after)) = rest.split_once(']') else {
            return (host, None);
        };
        let port = match after {
            "" => None,
            a => Some(
                a.strip_prefix(':')
                    .and_then(|p| p.parse().ok())
                    .unwrap_or(0),
            ),
        };
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
            allowed_hosts: vec![
                "sched.example:9080".into(),
                "ui.example".into(),
                "*.wild.example".into(),
                "any.example:*".into(),
            ],
            ..Default::default()
        };
        Settings::new(&o, address, bound.parse().unwrap())
    }

    #[test]
    fn hosts_on_loopback() {
        let s = settings("", "localhost:9080", "127.0.0.1:9080").unwrap();
        for ok in [
            "127.0.0.1:9080",
            "127.0.0.1",
            "localhost:9080",
            "LOCALHOST",
            // kubectl port-forward and local proxies use their own port.
            "localhost:8080",
            "127.0.0.1:9081",
            "sched.example:9080",
            "ui.example",
            "ui.example:9080",
            "a.wild.example:9080",
            "any.example:1234",
        ] {
            assert!(s.host_allowed(Some(ok)), "{ok}");
        }
        for bad in [
            // DNS rebinding: an attacker's name resolving to 127.0.0.1.
            "evil.example",
            "evil.example:9080",
            "127.0.0.2:9080",
            "sched.example",
            "ui.example:80",
            "wild.example",
            "",
            "127.0.0.1:x",
            "[::1]:x",
        ] {
            assert!(!s.host_allowed(Some(bad)), "{bad}");
        }
        assert!(!s.host_allowed(None));
    }

    #[test]
    fn hosts_beyond_loopback() {
        // Bound to every address with no allowed_hosts: any name, as behind
        // YuniKorn's web server or a Kubernetes service.
        let o = RestOptions::default();
        let s = Settings::new(&o, ":9080", "[::]:9080".parse().unwrap()).unwrap();
        for ok in [
            "[fe80::1]:9080",
            "10.1.2.3",
            "localhost",
            "yunikorn-service.yunikorn.svc:9080",
            "ui.example.com",
        ] {
            assert!(s.host_allowed(Some(ok)), "{ok}");
        }
        assert!(!s.host_allowed(None));
        assert!(!s.host_allowed(Some("x:y")));
        // With allowed_hosts, only those (and addresses) are served.
        let s = settings("t", "[::]:9080", "[::]:9080").unwrap();
        assert!(s.host_allowed(Some("10.1.2.3")));
        assert!(s.host_allowed(Some("ui.example")));
        assert!(!s.host_allowed(Some("evil.example")));
    }

    #[test]
    fn allowed_host_patterns() {
        for bad in ["", "a b", "*", "*.", "a.*.b", "x:y", "a/b", "*:80"] {
            let o = RestOptions {
                allowed_hosts: vec![bad.into()],
                ..Default::default()
            };
            assert!(
                Settings::new(&o, "127.0.0.1:1", "127.0.0.1:1".parse().unwrap()).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn token_and_bind() {
        assert!(settings("bad token", "127.0.0.1:1", "127.0.0.1:1").is_err());
        let s = settings("s3cret", "0.0.0.0:9080", "0.0.0.0:9080").unwrap();
        assert_eq!(s.mutation(Some("Bearer s3cret")), Mutation::Allowed);
        assert_eq!(s.mutation(Some("bearer  s3cret ")), Mutation::Allowed);
        assert_eq!(s.mutation(Some("Bearer s3cre")), Mutation::WrongToken);
        assert_eq!(s.mutation(Some("Basic s3cret")), Mutation::WrongToken);
        assert_eq!(s.mutation(None), Mutation::WrongToken);
        let open = settings("", "127.0.0.1:1", "127.0.0.1:1").unwrap();
        assert_eq!(open.mutation(None), Mutation::Allowed);
        // Beyond loopback without a token: reads only.
        let exposed = settings("", "0.0.0.0:9080", "0.0.0.0:9080").unwrap();
        assert_eq!(exposed.mutation(None), Mutation::Disabled);
        assert_eq!(exposed.mutation(Some("Bearer x")), Mutation::Disabled);
    }
}
