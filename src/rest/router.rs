//! The router: which endpoint a path names, the methods it answers and
//! whether a method changes state. Path segments are percent-decoded once
//! here, as the reference's router does; handlers decode queue, user and
//! group names once more (`rest-v1.9.md` 1).

use super::usage::UsageQuery;

/// What a path names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// v0.12 only: every partition's queue tree.
    Queues,
    Clusters,
    /// v0.12 only.
    ClusterUtilization,
    /// v0.12 only.
    Apps,
    /// v0.12 only.
    Nodes,
    /// v0.12 only.
    NodeUtilization,
    /// v1.x: per partition, nodes by usage bucket.
    NodeUtilizations,
    Partitions,
    PlacementRules(String),
    PartitionQueues(String),
    PartitionQueue(String, String),
    PartitionNodes(String),
    PartitionNode(String, String),
    QueueApps(String, String),
    QueueApp(String, String, String),
    QueueAppsByState(String, String, String),
    PartitionApp(String, String),
    PartitionAppsByState(String, String),
    /// The partition's waiting asks grouped by cause (`pending.rs`).
    PartitionPending(String),
    /// User/group usage of a partition (`usage.rs`).
    Usage(String, UsageQuery),
    Config,
    ValidateConf,
    /// sicore's own state dump (`/ws/v1/fullstatedump`).
    FullStateDump,
    /// The v1.x dump object (`/debug/fullstatedump`).
    DebugStateDump,
    HealthCheck,
    LogLevel,
    SetLogLevel(String),
    Metrics,
    HistoryApps,
    HistoryContainers,
    /// `/ws/v1/events/batch` (`events.rs`).
    EventBatch,
    /// `/ws/v1/events/stream` (`events.rs`).
    EventStream,
    /// A reference endpoint sicore does not provide, with the reason.
    NotProvided(&'static str),
}

/// Whether a request with `method` changes state, and so needs the
/// operator's token when one is set (`POST` only validates here).
pub fn mutates(method: &hyper::Method) -> bool {
    !matches!(
        *method,
        hyper::Method::GET | hyper::Method::HEAD | hyper::Method::OPTIONS | hyper::Method::POST
    )
}

/// Methods each endpoint answers.
pub fn methods(e: &Endpoint) -> &'static [&'static str] {
    match e {
        Endpoint::Config => &["GET", "PUT", "POST"],
        Endpoint::ValidateConf => &["POST"],
        Endpoint::SetLogLevel(_) => &["PUT"],
        Endpoint::NotProvided(_) => &["GET", "PUT", "POST", "DELETE"],
        _ => &["GET"],
    }
}

/// Percent-decodes one path segment or query value; `None` when it is not
/// valid escapes of UTF-8.
pub fn decode_segment(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

const NO_GOROUTINES: &str =
    "/debug/stack lists goroutine stacks; sicore is not a Go program and has none";

/// Maps a path to its endpoint; `None` for an unknown path.
pub fn route(path: &str) -> Option<Endpoint> {
    let trimmed = path.trim_end_matches('/');
    if trimmed == "/metrics" {
        return Some(Endpoint::Metrics);
    }
    if trimmed == "/debug/pprof" || trimmed.starts_with("/debug/pprof/") {
        return Some(Endpoint::NotProvided(
            "/debug/pprof is the Go profiler; sicore is not a Go program (use perf or valgrind on the host process)",
        ));
    }
    match trimmed {
        "/debug/fullstatedump" => return Some(Endpoint::DebugStateDump),
        "/debug/stack" => return Some(Endpoint::NotProvided(NO_GOROUTINES)),
        _ => {}
    }
    let rest = trimmed.strip_prefix("/ws/v1/")?;
    let segs: Vec<String> = rest
        .split('/')
        .map(decode_segment)
        .collect::<Option<Vec<_>>>()?;
    let s: Vec<&str> = segs.iter().map(String::as_str).collect();
    let o = |x: &&str| x.to_string();
    Some(match s.as_slice() {
        ["queues"] => Endpoint::Queues,
        ["clusters"] => Endpoint::Clusters,
        ["clusters", "utilization"] => Endpoint::ClusterUtilization,
        ["apps"] => Endpoint::Apps,
        ["nodes"] => Endpoint::Nodes,
        ["nodes", "utilization"] => Endpoint::NodeUtilization,
        ["scheduler", "node-utilizations"] => Endpoint::NodeUtilizations,
        ["partitions"] => Endpoint::Partitions,
        ["partition", p, "placementrules"] => Endpoint::PlacementRules(o(p)),
        ["partition", p, "queues"] => Endpoint::PartitionQueues(o(p)),
        ["partition", p, "queue", q] => Endpoint::PartitionQueue(o(p), o(q)),
        ["partition", p, "nodes"] => Endpoint::PartitionNodes(o(p)),
        ["partition", p, "node", n] => Endpoint::PartitionNode(o(p), o(n)),
        ["partition", p, "queue", q, "applications"] => Endpoint::QueueApps(o(p), o(q)),
        ["partition", p, "queue", q, "application", a] => Endpoint::QueueApp(o(p), o(q), o(a)),
        ["partition", p, "queue", q, "applications", st] => {
            Endpoint::QueueAppsByState(o(p), o(q), o(st))
        }
        ["partition", p, "application", a] => Endpoint::PartitionApp(o(p), o(a)),
        ["partition", p, "applications", st] => Endpoint::PartitionAppsByState(o(p), o(st)),
        ["partition", p, "pending"] => Endpoint::PartitionPending(o(p)),
        ["partition", p, "usage", "users"] => Endpoint::Usage(o(p), UsageQuery::Users),
        ["partition", p, "usage", "user", u] => Endpoint::Usage(o(p), UsageQuery::User(o(u))),
        ["partition", p, "usage", "groups"] => Endpoint::Usage(o(p), UsageQuery::Groups),
        ["partition", p, "usage", "group", g] => Endpoint::Usage(o(p), UsageQuery::Group(o(g))),
        ["config"] => Endpoint::Config,
        ["validate-conf"] => Endpoint::ValidateConf,
        ["fullstatedump"] => Endpoint::FullStateDump,
        ["scheduler", "healthcheck"] => Endpoint::HealthCheck,
        ["loglevel"] => Endpoint::LogLevel,
        ["loglevel", level] => Endpoint::SetLogLevel(o(level)),
        ["metrics"] => Endpoint::Metrics,
        ["history", "apps"] => Endpoint::HistoryApps,
        ["history", "containers"] => Endpoint::HistoryContainers,
        ["events", "batch"] => Endpoint::EventBatch,
        ["events", "stream"] => Endpoint::EventStream,
        ["stack"] => Endpoint::NotProvided(NO_GOROUTINES),
        ["periodicstatedump", ..] => Endpoint::NotProvided(
            "periodic state dumps to a file are not provided by sicore; read /ws/v1/fullstatedump instead",
        ),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes() {
        assert_eq!(route("/ws/v1/queues"), Some(Endpoint::Queues));
        assert_eq!(route("/ws/v1/queues/"), Some(Endpoint::Queues));
        assert_eq!(
            route("/ws/v1/partition/default/queue/root.a%2Db/applications"),
            Some(Endpoint::QueueApps("default".into(), "root.a-b".into()))
        );
        assert_eq!(
            route("/ws/v1/partition/default/applications/active"),
            Some(Endpoint::PartitionAppsByState(
                "default".into(),
                "active".into()
            ))
        );
        assert_eq!(
            route("/ws/v1/scheduler/node-utilizations"),
            Some(Endpoint::NodeUtilizations)
        );
        assert_eq!(
            route("/debug/fullstatedump"),
            Some(Endpoint::DebugStateDump)
        );
        assert!(matches!(
            route("/debug/pprof/heap"),
            Some(Endpoint::NotProvided(_))
        ));
        assert_eq!(route("/ws/v1/scheduler/node-utilization"), None);
        assert_eq!(route("/ws/v1/nope"), None);
        assert_eq!(route("/ws/v2/queues"), None);
    }
}
