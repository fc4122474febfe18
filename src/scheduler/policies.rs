//! The scheduling policies a configuration names, in one place: how
//! nodes are ordered (`nodesortpolicy`), how a leaf orders its
//! applications (`application.sort.policy`), how a queue's priority is
//! seen from outside it (`priority.policy`) and where preemption may look
//! (`preemption.policy`, `preemption.delay`), with the Go durations those
//! properties are written in.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::scheduler::resource::{intern, intern_builtin, ResId, Resource};

// ---- Node sorting ----

/// Which nodes go first (spec 8.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeSortKind {
    /// Least used first: spreads load.
    Fair,
    /// Most used first: packs nodes.
    BinPacking,
}

/// The partition's node sorting policy with its resource weights.
#[derive(Debug, Clone)]
pub struct NodeSortPolicy {
    /// Fair or bin-packing.
    pub kind: NodeSortKind,
    /// Positive weights per resource type.
    pub weights: Vec<(ResId, f64)>,
}

impl Default for NodeSortPolicy {
    fn default() -> Self {
        NodeSortPolicy::new("fair", &Default::default()).expect("default policy")
    }
}

impl NodeSortPolicy {
    /// Builds the policy; no weights means `{vcore: 1, memory: 1}`.
    pub fn new(kind: &str, weights: &BTreeMap<String, f64>) -> Result<Self, String> {
        let kind = match kind {
            "binpacking" => NodeSortKind::BinPacking,
            _ => NodeSortKind::Fair,
        };
        let mut w = Vec::new();
        if weights.is_empty() {
            w.push((intern_builtin("vcore")?, 1.0));
            w.push((intern_builtin("memory")?, 1.0));
        } else {
            for (name, v) in weights {
                if *v > 0.0 {
                    w.push((intern(name)?, *v));
                }
            }
        }
        Ok(NodeSortPolicy { kind, weights: w })
    }

    /// The policy name as configured.
    pub fn name(&self) -> &'static str {
        match self.kind {
            NodeSortKind::Fair => "fair",
            NodeSortKind::BinPacking => "binpacking",
        }
    }

    /// The node's score: weighted usage for fair, its complement for
    /// bin-packing; lower goes first.
    pub fn score(&self, capacity: &Resource, available: &Resource) -> f64 {
        let (mut sum, mut wsum) = (0.0, 0.0);
        for (id, w) in &self.weights {
            let cap = match capacity.lookup(*id) {
                Some(c) if c != 0 => c,
                _ => continue,
            };
            let usage = 1.0 - available.get(*id) as f64 / cap as f64;
            sum += w * usage;
            wsum += w;
        }
        let u = if wsum > 0.0 { sum / wsum } else { 0.0 };
        match self.kind {
            NodeSortKind::Fair => u,
            NodeSortKind::BinPacking => 1.0 - u,
        }
    }
}

// ---- Application sorting ----

/// The property that selects a leaf's application order.
pub const PROP_APP_SORT_POLICY: &str = "application.sort.policy";

/// How a leaf queue orders its applications (spec 8.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AppSortPolicy {
    /// Oldest submission first.
    Fifo,
    /// Lowest usage relative to the queue's guarantee first.
    Fair,
    /// One application at a time out of `Accepted`, then fifo.
    StateAware,
}

impl AppSortPolicy {
    /// Absent, empty or unknown values mean fifo.
    pub fn from_property(value: Option<&String>) -> Self {
        match value.map(String::as_str) {
            Some("fair") => AppSortPolicy::Fair,
            Some("stateaware") => AppSortPolicy::StateAware,
            _ => AppSortPolicy::Fifo,
        }
    }

    /// The configured name.
    pub fn name(self) -> &'static str {
        match self {
            AppSortPolicy::Fifo => "fifo",
            AppSortPolicy::Fair => "fair",
            AppSortPolicy::StateAware => "stateaware",
        }
    }
}

// ---- Priority ----

/// Queue property: `default` or `fence`.
pub const PROP_PRIORITY_POLICY: &str = "priority.policy";

/// How a queue's priority is seen from outside it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PriorityPolicy {
    /// The highest priority below the queue plus its offset.
    #[default]
    Default,
    /// Exactly the offset, whatever happens inside.
    Fence,
}

impl PriorityPolicy {
    /// `default`/empty or `fence`, case-insensitively; anything else is
    /// an error the caller logs before using the default.
    pub fn parse(value: &str) -> Result<Self, String> {
        if value.is_empty() || value.eq_ignore_ascii_case("default") {
            Ok(PriorityPolicy::Default)
        } else if value.eq_ignore_ascii_case("fence") {
            Ok(PriorityPolicy::Fence)
        } else {
            Err(format!("unknown priority policy: {value}"))
        }
    }

    /// The configured name.
    pub fn name(self) -> &'static str {
        match self {
            PriorityPolicy::Default => "default",
            PriorityPolicy::Fence => "fence",
        }
    }
}

// ---- Preemption ----

/// Queue property: `default`, `fence` or `disabled`.
pub const PROP_PREEMPTION_POLICY: &str = "preemption.policy";
/// Leaf queue property: how long a request waits before it may preempt.
pub const PROP_PREEMPTION_DELAY: &str = "preemption.delay";
/// `preemption.delay` when absent or invalid (spec 18).
pub const DEFAULT_DELAY: Duration = Duration::from_secs(30);

/// A queue's `preemption.policy` (spec 1.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PreemptionPolicy {
    /// No restriction.
    Default,
    /// On the preemptor's path: victims only inside this subtree.
    Fence,
    /// On a leaf: its allocations are never victims.
    Disabled,
}

impl PreemptionPolicy {
    /// The policy of a queue's effective properties; bad values are the
    /// default (nothing is validated).
    pub fn of(props: &BTreeMap<String, String>) -> Self {
        match props.get(PROP_PREEMPTION_POLICY) {
            Some(v) if v.eq_ignore_ascii_case("fence") => PreemptionPolicy::Fence,
            Some(v) if v.eq_ignore_ascii_case("disabled") => PreemptionPolicy::Disabled,
            _ => PreemptionPolicy::Default,
        }
    }
}

/// A leaf's `preemption.delay`: a Go duration > 0, else 30 s.
pub fn delay_of(props: &BTreeMap<String, String>) -> Duration {
    props
        .get(PROP_PREEMPTION_DELAY)
        .and_then(|v| parse_go_duration(v))
        .filter(|d| !d.is_zero())
        .unwrap_or(DEFAULT_DELAY)
}

/// A Go duration string (`30s`, `1m30s`, `500ms`, `1.5h`); `None` when it
/// is not one or is negative.
pub fn parse_go_duration(s: &str) -> Option<Duration> {
    let s = s.trim();
    if s.is_empty() || s.starts_with('-') {
        return None;
    }
    let s = s.strip_prefix('+').unwrap_or(s);
    if s == "0" {
        return Some(Duration::ZERO);
    }
    let mut rest = s;
    let mut total = 0f64;
    while !rest.is_empty() {
        let num_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let value: f64 = rest[..num_end].parse().ok()?;
        rest = &rest[num_end..];
        let unit_end = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let nanos = match &rest[..unit_end] {
            "ns" => 1.0,
            "us" | "µs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return None,
        };
        rest = &rest[unit_end..];
        total += value * nanos;
    }
    (total.is_finite() && total < 1e19).then(|| Duration::from_nanos(total as u64))
}

/// A duration as Go's `time.Duration.String` writes it (`0s`, `500ms`,
/// `1.5µs`, `30s`, `1m30s`, `2h0m0s`): what the reference's REST shows.
pub fn go_duration_string(d: Duration) -> String {
    let ns = d.as_nanos();
    // ".xyz" of `v` out of 10^digits, trailing zeros dropped.
    let frac = |v: u128, digits: usize| {
        if v == 0 {
            return String::new();
        }
        let s = format!("{v:0digits$}");
        format!(".{}", s.trim_end_matches('0'))
    };
    if ns == 0 {
        return "0s".into();
    }
    if ns < 1_000_000_000 {
        let (unit, div, digits) = match ns {
            0..1_000 => ("ns", 1, 0),
            1_000..1_000_000 => ("µs", 1_000, 3),
            _ => ("ms", 1_000_000, 6),
        };
        return format!("{}{}{unit}", ns / div, frac(ns % div, digits));
    }
    let f = frac(ns % 1_000_000_000, 9);
    let secs = ns / 1_000_000_000;
    let (h, m, s) = (secs / 3600, secs / 60 % 60, secs % 60);
    match (h, m) {
        (0, 0) => format!("{s}{f}s"),
        (0, _) => format!("{m}m{s}{f}s"),
        _ => format!("{h}h{m}m{s}{f}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations_parse() {
        assert_eq!(parse_go_duration("30s"), Some(Duration::from_secs(30)));
        assert_eq!(parse_go_duration("1m30s"), Some(Duration::from_secs(90)));
        assert_eq!(parse_go_duration("500ms"), Some(Duration::from_millis(500)));
        assert_eq!(parse_go_duration("1ms"), Some(Duration::from_millis(1)));
        assert_eq!(parse_go_duration("1.5h"), Some(Duration::from_secs(5400)));
        assert_eq!(parse_go_duration("-1s"), None);
        assert_eq!(parse_go_duration("10"), None);
        assert_eq!(parse_go_duration("abc"), None);
    }

    #[test]
    fn durations_print_as_go_does() {
        for (d, s) in [
            (Duration::ZERO, "0s"),
            (Duration::from_nanos(1), "1ns"),
            (Duration::from_nanos(1_500), "1.5µs"),
            (Duration::from_millis(500), "500ms"),
            (Duration::from_micros(1_250), "1.25ms"),
            (Duration::from_secs(30), "30s"),
            (Duration::from_millis(1_500), "1.5s"),
            (Duration::from_secs(90), "1m30s"),
            (Duration::from_secs(3600), "1h0m0s"),
            (Duration::from_millis(7_384_005), "2h3m4.005s"),
        ] {
            assert_eq!(go_duration_string(d), s);
            assert_eq!(parse_go_duration(s), Some(d), "{s}");
        }
    }

    #[test]
    fn bad_or_zero_delay_is_the_default() {
        let mut p = std::collections::BTreeMap::new();
        assert_eq!(delay_of(&p), DEFAULT_DELAY);
        p.insert(PROP_PREEMPTION_DELAY.to_string(), "0s".to_string());
        assert_eq!(delay_of(&p), DEFAULT_DELAY);
        p.insert(PROP_PREEMPTION_DELAY.to_string(), "2s".to_string());
        assert_eq!(delay_of(&p), Duration::from_secs(2));
    }
}
