//! Why an ask waits: one bounded value per ask, written by the pass that
//! last tried it (docs/why-pending.md).
//!
//! Nodes are counted while the pass checks them, in a [`NodeCounts`] kept
//! on the stack: a few integers per cause, no allocation per node. Only a
//! refusal by the RM's predicates keeps text, and only a few grouped,
//! truncated texts.

use std::sync::Arc;

use super::super::resource::{name_of, ResId};

mod stamp;
pub use stamp::{CauseIds, ReasonStamp};

/// Resource types counted one by one; shortages of further types are summed.
pub const MAX_SHORT_TYPES: usize = 4;
/// RM refusal texts kept, grouped by text; further texts count in `refused`.
pub const MAX_REFUSAL_GROUPS: usize = 4;
/// Bytes kept of one refusal text.
pub const MAX_REFUSAL_TEXT: usize = 120;
/// Entries of an ask's allocation log (the oldest goes first).
pub const MAX_LOG: usize = 6;
/// Shortest time between two REQUEST records of one ask while its cause
/// stays the same (a change is recorded at once).
pub const RECORD_INTERVAL_NS: i64 = 60_000_000_000;
/// Shortest time between two reads of the causes no pass finds (held
/// applications, gang members; partition/held.rs): a change of such a
/// cause is recorded within this time.
pub const HELD_CHECK_INTERVAL_NS: i64 = 1_000_000_000;

/// Per cause, how many nodes turned an ask down in one pass.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct NodeCounts {
    /// Nodes checked (schedulable, or the required node).
    pub examined: u32,
    short: [(ResId, u32); MAX_SHORT_TYPES],
    short_len: u8,
    /// Nodes short of a type past the first [`MAX_SHORT_TYPES`].
    pub short_other: u32,
    /// Nodes whose predicates the RM refused.
    pub refused: u32,
    refusals: Vec<(Box<str>, u32)>,
    /// Nodes skipped as unschedulable (draining).
    pub unschedulable: u32,
    /// Nodes reserved for another ask.
    pub reserved_other: u32,
    /// The required node is not registered.
    pub required_missing: bool,
}

impl NodeCounts {
    /// One node lacks `ty` (the first type of the ask it lacks).
    #[inline(always)]
    pub fn short_of(&mut self, ty: ResId) {
        // The same ask mostly lacks the same type on every node: that
        // case stays inline in the node walk.
        if self.short_len > 0 && self.short[0].0 == ty {
            self.short[0].1 += 1;
        } else {
            self.short_of_another(ty);
        }
    }

    /// [`Self::short_of`] for a type other than the first one counted.
    #[inline(never)]
    fn short_of_another(&mut self, ty: ResId) {
        self.short_of_n(ty, 1);
    }

    /// `n` nodes lack `ty` (a walk that counted them itself).
    pub fn short_of_n(&mut self, ty: ResId, n: u32) {
        let len = usize::from(self.short_len);
        if let Some(e) = self.short[..len].iter_mut().find(|(t, _)| *t == ty) {
            e.1 = e.1.saturating_add(n);
        } else if len < MAX_SHORT_TYPES {
            self.short[len] = (ty, n);
            self.short_len += 1;
        } else {
            self.short_other = self.short_other.saturating_add(n);
        }
    }

    /// The RM refused one node with `reason`; texts are grouped, the first
    /// [`MAX_REFUSAL_GROUPS`] kept, each cut to [`MAX_REFUSAL_TEXT`] bytes.
    pub fn refused_by_rm(&mut self, reason: &str) {
        self.refused += 1;
        let text = truncate(reason.trim(), MAX_REFUSAL_TEXT);
        if let Some(e) = self.refusals.iter_mut().find(|(t, _)| &**t == text) {
            e.1 += 1;
        } else if self.refusals.len() < MAX_REFUSAL_GROUPS {
            self.refusals.push((text.into(), 1));
        }
    }

    /// Puts the types short on most nodes first (a walk's totals read
    /// the same whatever order it counted them in).
    pub fn most_first(&mut self) {
        let len = usize::from(self.short_len);
        self.short[..len].sort_by_key(|(_, n)| std::cmp::Reverse(*n));
    }

    /// Per type, the nodes short of it: in the order counted, most first
    /// after a node walk.
    pub fn shorts(&self) -> &[(ResId, u32)] {
        &self.short[..usize::from(self.short_len)]
    }

    /// The RM's refusal texts with their node counts.
    pub fn refusals(&self) -> &[(Box<str>, u32)] {
        &self.refusals
    }

    /// Nodes short of some resource.
    pub fn short_total(&self) -> u32 {
        self.shorts()
            .iter()
            .fold(self.short_other, |s, (_, n)| s.saturating_add(*n))
    }
}

/// Cuts `s` to at most `max` bytes on a character boundary.
fn truncate(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// Whose limit holds an ask.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scope {
    /// A queue's configured limit.
    Queue,
    /// A user's limit.
    User,
    /// A group's limit.
    Group,
    /// The partition (its nodes).
    Partition,
}

impl Scope {
    /// Lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Queue => "queue",
            Scope::User => "user",
            Scope::Group => "group",
            Scope::Partition => "partition",
        }
    }
}

/// What holds an ask.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Cause {
    /// Held before any node was tried: its application waits for a
    /// running slot under a `maxapplications` limit.
    AppSlot {
        /// Queue, user or group limit.
        scope: Scope,
        /// The user or group (empty for a queue limit).
        name: Arc<str>,
        /// The queue the limit is set on.
        queue: Arc<str>,
        /// The limit.
        limit: u64,
    },
    /// Held before any node was tried: a queue on the path lacks room.
    QueueHeadroom {
        /// The queue lacking room.
        queue: Arc<str>,
        /// The type it lacks.
        resource: ResId,
        /// Asked of it.
        asked: i64,
        /// Free in the queue.
        free: i64,
    },
    /// Held before any node was tried: a user or group limit lacks room.
    LimitHeadroom {
        /// User or group.
        scope: Scope,
        /// Its name.
        name: Arc<str>,
        /// The queue the limit is set on.
        queue: Arc<str>,
        /// The type it lacks.
        resource: ResId,
        /// Asked of it.
        asked: i64,
        /// Free under the limit.
        free: i64,
    },
    /// Held before any node was tried (queue) or on every node
    /// (partition): the type is not accepted there.
    ResourceType {
        /// Partition or queue.
        scope: Scope,
        /// The queue (empty for the partition).
        queue: Arc<str>,
        /// The type.
        resource: ResId,
    },
    /// Nodes were tried and none took it.
    Nodes(NodeCounts),
    /// A node is reserved for it.
    Reserved {
        /// The node.
        node: Arc<str>,
        /// Unix ns the reservation was first seen.
        since_ns: i64,
    },
    /// A real gang member: its task group still asks placeholders.
    GangPlaceholders(GangCounts),
    /// A real gang member waiting for a placeholder to be replaced.
    GangReplacement(GangCounts),
    /// The placeholder timeout fired (until a pass tries the ask again).
    GangTimeout {
        /// The task group's placeholders.
        gang: GangCounts,
        /// Unix ns it fired.
        at_ns: i64,
        /// What it did.
        outcome: &'static str,
    },
}

/// A task group's placeholders, for a gang cause.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct GangCounts {
    /// The task group.
    pub task_group: Arc<str>,
    /// Placeholders placed (held or replaced).
    pub placed: u64,
    /// Placeholders asked in all.
    pub total: u64,
}

impl Cause {
    /// Stable name of the cause's kind (REST `cause`, dump).
    pub fn kind(&self) -> &'static str {
        match self {
            Cause::AppSlot { .. } => "applicationLimit",
            Cause::QueueHeadroom { .. } => "queueHeadroom",
            Cause::LimitHeadroom { .. } => "userLimit",
            Cause::ResourceType { .. } => "resourceType",
            Cause::Nodes(c) if c.required_missing => "requiredNodeMissing",
            Cause::Nodes(_) => "nodes",
            Cause::Reserved { .. } => "reserved",
            Cause::GangPlaceholders(_) => "gangPlaceholders",
            Cause::GangReplacement(_) => "gangReplacement",
            Cause::GangTimeout { .. } => "gangTimeout",
        }
    }

    /// Whether the cause is one no pass finds: read from the state
    /// (partition/explain.rs `held_cause`).
    pub fn is_held(&self) -> bool {
        matches!(
            self,
            Cause::AppSlot { .. }
                | Cause::GangPlaceholders(_)
                | Cause::GangReplacement(_)
                | Cause::GangTimeout { .. }
        )
    }

    /// Whether `other` holds the ask for the same reason (kind and subject;
    /// amounts and node counts may differ).
    pub fn same_as(&self, other: &Cause) -> bool {
        match (self, other) {
            (Cause::Nodes(a), Cause::Nodes(b)) => {
                a.required_missing == b.required_missing && dominant(a) == dominant(b)
            }
            (
                Cause::QueueHeadroom {
                    queue: q1,
                    resource: r1,
                    ..
                },
                Cause::QueueHeadroom {
                    queue: q2,
                    resource: r2,
                    ..
                },
            ) => q1 == q2 && r1 == r2,
            (
                Cause::LimitHeadroom {
                    scope: s1,
                    name: n1,
                    queue: q1,
                    ..
                },
                Cause::LimitHeadroom {
                    scope: s2,
                    name: n2,
                    queue: q2,
                    ..
                },
            ) => s1 == s2 && n1 == n2 && q1 == q2,
            (Cause::Reserved { node: a, .. }, Cause::Reserved { node: b, .. }) => a == b,
            // A gang's counts move as placeholders are placed: the task
            // group is the subject.
            (Cause::GangPlaceholders(a), Cause::GangPlaceholders(b))
            | (Cause::GangReplacement(a), Cause::GangReplacement(b)) => {
                a.task_group == b.task_group
            }
            (
                Cause::GangTimeout {
                    gang: a, at_ns: t1, ..
                },
                Cause::GangTimeout {
                    gang: b, at_ns: t2, ..
                },
            ) => a.task_group == b.task_group && t1 == t2,
            (a, b) => a == b,
        }
    }
}

impl Cause {
    /// One line, worded as kube-scheduler words its `FailedScheduling`
    /// events ("0/5 nodes fit: 3 short of memory, 2 refused by the RM
    /// (port 8080 in use)"); `nodes` is the partition's node count.
    pub fn message(&self, nodes: usize) -> String {
        let name = |t: &ResId| name_of(*t);
        match self {
            Cause::AppSlot {
                scope,
                name,
                queue,
                limit,
            } => match scope {
                Scope::Queue => format!(
                    "application waits for a running slot: queue {queue} is at maxapplications {limit}"
                ),
                s => format!(
                    "application waits for a running slot: {} {name} is at maxapplications {limit} in queue {queue}",
                    s.as_str()
                ),
            },
            Cause::QueueHeadroom {
                queue,
                resource,
                asked,
                free,
            } => format!(
                "queue {queue} at max {}: asked {asked}, free {free}",
                name(resource)
            ),
            Cause::LimitHeadroom {
                scope,
                name: who,
                queue,
                resource,
                asked,
                free,
            } => format!(
                "{} {who} at its limit in queue {queue}: asked {} {asked}, free {free}",
                scope.as_str(),
                name(resource)
            ),
            Cause::ResourceType {
                scope,
                queue,
                resource,
            } => match scope {
                Scope::Partition => {
                    format!("no node of the partition has resource {}", name(resource))
                }
                _ => format!("queue {queue} does not accept resource {}", name(resource)),
            },
            Cause::Nodes(c) => nodes_message(c, nodes),
            Cause::Reserved { node, .. } => {
                format!("node {node} is reserved for it, waiting for room there")
            }
            Cause::GangPlaceholders(g) => format!(
                "gang task group {}: {} of {} placeholders placed",
                g.task_group, g.placed, g.total
            ),
            Cause::GangReplacement(g) => format!(
                "waits for a placeholder of task group {} to be replaced",
                g.task_group
            ),
            Cause::GangTimeout { gang, outcome, .. } => format!(
                "placeholder timeout of task group {}: {outcome}",
                gang.task_group
            ),
        }
    }
}

/// See [`Cause::message`].
fn nodes_message(c: &NodeCounts, total: usize) -> String {
    if c.required_missing {
        return "the required node is not registered".to_string();
    }
    let mut parts: Vec<String> = c
        .shorts()
        .iter()
        .map(|(t, n)| format!("{n} short of {}", name_of(*t)))
        .collect();
    if c.short_other > 0 {
        parts.push(format!("{} short of other resources", c.short_other));
    }
    if c.refused > 0 {
        let texts: Vec<String> = c
            .refusals()
            .iter()
            .map(|(t, n)| {
                if *n > 1 {
                    format!("{n}: {t}")
                } else {
                    t.to_string()
                }
            })
            .collect();
        parts.push(format!(
            "{} refused by the RM ({})",
            c.refused,
            texts.join("; ")
        ));
    }
    if c.unschedulable > 0 {
        parts.push(format!("{} unschedulable", c.unschedulable));
    }
    if c.reserved_other > 0 {
        parts.push(format!("{} reserved for another ask", c.reserved_other));
    }
    if parts.is_empty() {
        return format!("0/{total} nodes fit");
    }
    format!("0/{total} nodes fit: {}", parts.join(", "))
}

/// What turned most nodes down (for grouping and for "same cause"): a
/// short type, the RM, draining or reservations.
pub fn dominant(c: &NodeCounts) -> Dominant {
    let mut best = (0, Dominant::None);
    for (t, n) in c.shorts() {
        if *n > best.0 {
            best = (*n, Dominant::Short(*t));
        }
    }
    for (n, d) in [
        (c.refused, Dominant::Refused),
        (c.unschedulable, Dominant::Unschedulable),
        (c.reserved_other, Dominant::ReservedOther),
    ] {
        if n > best.0 {
            best = (n, d);
        }
    }
    best.1
}

/// See [`dominant`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dominant {
    /// Nothing counted (no node at all).
    None,
    /// Short of this type.
    Short(ResId),
    /// Refused by the RM.
    Refused,
    /// Draining.
    Unschedulable,
    /// Reserved for other asks.
    ReservedOther,
}

/// How the last preemption attempt for an ask ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PreemptOutcome {
    /// No victim, or preempting could not bring the queue within its
    /// guarantee.
    GuaranteeCheck,
    /// As `GuaranteeCheck`, with a fence on the ask's path keeping victims out.
    Fence,
    /// No node worth asking the RM about.
    NoVictims,
    /// The RM refused every node.
    RmRefused,
    /// The victims would free too little.
    ShortOfResources,
    /// The leaf's attempts of the pass were used up.
    AttemptsExhausted,
    /// Victims were released; the ask waits for them to go.
    WaitingForVictims,
}

impl PreemptOutcome {
    /// Stable name.
    pub fn as_str(self) -> &'static str {
        match self {
            PreemptOutcome::GuaranteeCheck => "guaranteeCheck",
            PreemptOutcome::Fence => "fence",
            PreemptOutcome::NoVictims => "noVictims",
            PreemptOutcome::RmRefused => "rmRefusedEveryNode",
            PreemptOutcome::ShortOfResources => "shortOfResources",
            PreemptOutcome::AttemptsExhausted => "attemptsExhausted",
            PreemptOutcome::WaitingForVictims => "waitingForVictims",
        }
    }
}

/// One line of the allocation log (YuniKorn's `allocationLog`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogEntry {
    /// What it says: a cause kind, with the type for a shortage.
    pub what: LogWhat,
    /// Unix ns of the last pass that saw it.
    pub last_ns: i64,
    /// Passes that saw it.
    pub count: u32,
}

/// The subject of a [`LogEntry`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogWhat {
    /// A held-before-nodes or reservation cause, by kind.
    Kind(&'static str),
    /// Nodes short of this type.
    Short(ResId),
    /// Refused by the RM's predicates.
    Refused,
    /// Nodes draining.
    Unschedulable,
    /// Nodes reserved for other asks.
    ReservedOther,
    /// The required node is missing.
    RequiredMissing,
}

/// Why one ask waits.
#[derive(Debug, Clone)]
pub struct PendingReason {
    /// The cause the last pass found.
    pub cause: Cause,
    /// Unix ns the same cause was first found (kept while it stays).
    pub since_ns: i64,
    /// Unix ns of the last pass that tried the ask.
    pub at_ns: i64,
    /// Passes that found this same cause.
    pub passes: u32,
    /// The last preemption attempt for the ask: Unix ns and outcome.
    pub preemption: Option<(i64, PreemptOutcome)>,
    /// Unix ns of its last REQUEST record (0: none yet).
    pub recorded_ns: i64,
    log: [Option<LogEntry>; MAX_LOG],
}

impl PendingReason {
    /// A first reason, found at `now_ns`.
    pub fn new(cause: Cause, now_ns: i64) -> Self {
        let mut r = PendingReason {
            cause: Cause::Nodes(NodeCounts::default()),
            since_ns: now_ns,
            at_ns: now_ns,
            passes: 0,
            preemption: None,
            recorded_ns: 0,
            log: [None; MAX_LOG],
        };
        r.update(cause, None, now_ns);
        r
    }

    /// A first reason read from the state (a held cause) at `now_ns`: no
    /// pass has tried the ask (`at_ns` 0).
    pub fn held(cause: Cause, now_ns: i64) -> Self {
        let mut r = Self::new(cause, now_ns);
        r.at_ns = 0;
        r
    }

    /// A held cause read from the state at `now_ns` (partition/held.rs):
    /// as [`Self::update`], but the last pass's time stays (no pass tried
    /// the ask). Returns whether the cause changed.
    pub fn update_held(&mut self, cause: Cause, now_ns: i64) -> bool {
        let tried = self.at_ns;
        let changed = self.update(cause, None, now_ns);
        self.at_ns = tried;
        changed
    }

    /// A later pass found `cause` (and tried preemption when `preempt` is
    /// set). Returns whether the cause changed.
    pub fn update(&mut self, cause: Cause, preempt: Option<PreemptOutcome>, now_ns: i64) -> bool {
        let changed = self.passes == 0 || !self.cause.same_as(&cause);
        let mut cause = cause;
        if !changed {
            // A reservation's age is its first sighting's.
            if let (Cause::Reserved { since_ns: old, .. }, Cause::Reserved { since_ns, .. }) =
                (&self.cause, &mut cause)
            {
                *since_ns = *old;
            }
        } else {
            self.since_ns = now_ns;
            self.passes = 0;
        }
        self.passes = self.passes.saturating_add(1);
        self.at_ns = now_ns;
        if let Some(p) = preempt {
            self.preemption = Some((now_ns, p));
        }
        Self::log_cause(&mut self.log, &cause, now_ns, 1);
        self.cause = cause;
        changed
    }

    /// `k` more passes found the same cause, the last at `last_ns`, with no
    /// preemption attempt: as `k` calls of [`Self::update`] with it.
    pub fn repeat(&mut self, k: u32, last_ns: i64) {
        self.passes = self.passes.saturating_add(k);
        self.at_ns = last_ns;
        Self::log_cause(&mut self.log, &self.cause, last_ns, k);
    }

    fn log_cause(log: &mut [Option<LogEntry>; MAX_LOG], cause: &Cause, now_ns: i64, k: u32) {
        match cause {
            Cause::Nodes(c) => {
                if c.required_missing {
                    Self::log(log, LogWhat::RequiredMissing, now_ns, k);
                }
                for (t, _) in c.shorts() {
                    Self::log(log, LogWhat::Short(*t), now_ns, k);
                }
                for (n, what) in [
                    (c.refused, LogWhat::Refused),
                    (c.unschedulable, LogWhat::Unschedulable),
                    (c.reserved_other, LogWhat::ReservedOther),
                ] {
                    if n > 0 {
                        Self::log(log, what, now_ns, k);
                    }
                }
            }
            other => Self::log(log, LogWhat::Kind(other.kind()), now_ns, k),
        }
    }

    fn log(log: &mut [Option<LogEntry>; MAX_LOG], what: LogWhat, now_ns: i64, k: u32) {
        if let Some(e) = log.iter_mut().flatten().find(|e| e.what == what) {
            e.last_ns = now_ns;
            e.count = e.count.saturating_add(k);
            return;
        }
        let entry = Some(LogEntry {
            what,
            last_ns: now_ns,
            count: k,
        });
        match log.iter_mut().find(|e| e.is_none()) {
            Some(free) => *free = entry,
            None => {
                // Full: the entry seen longest ago makes room.
                let oldest = log
                    .iter_mut()
                    .min_by_key(|e| e.map_or(i64::MIN, |e| e.last_ns))
                    .expect("the log is not empty");
                *oldest = entry;
            }
        }
    }

    /// Whether a REQUEST record is due after an update at `now_ns` that
    /// `changed` the cause or not: at once on a change, else once a
    /// [`RECORD_INTERVAL_NS`]. Marks it made.
    pub fn record_due(&mut self, changed: bool, now_ns: i64) -> bool {
        let due = changed
            || self.recorded_ns == 0
            || now_ns.saturating_sub(self.recorded_ns) >= RECORD_INTERVAL_NS;
        if due {
            self.recorded_ns = now_ns;
        }
        due
    }

    /// The allocation log, oldest last sighting first.
    pub fn log_entries(&self) -> Vec<LogEntry> {
        let mut v: Vec<LogEntry> = self.log.iter().flatten().copied().collect();
        v.sort_by_key(|e| e.last_ns);
        v
    }
}

#[cfg(test)]
mod tests;
