//! Why asks wait (docs/why-pending.md): the pass notes a [`Cause`] for
//! each ask it tried and did not place, from what it already knows, and
//! gives the asks their reasons when it ends. The causes the pass never
//! reaches (applications held by `maxapplications`, gang members waiting
//! for placeholders) are read from the state by [`Partition::held_cause`],
//! the one place that decides them: the snapshot when asked (`reason_of`),
//! the pass for the gang members it tries, and the periodic check of
//! held applications (held.rs) that records them.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::preempt::{PreemptionCounters, PreemptionPolicy};
use super::*;
use crate::scheduler::objects::pending::{
    Cause, GangCounts, NodeCounts, PendingReason, PreemptOutcome, Scope,
};

/// One ask's cause, found by the pass: the ask by slot and sequence
/// number (a slot reused within the pass is told apart), and the cause's
/// id.
pub(super) struct Noted {
    at: (Slot, u64, Slot, u64),
    cause: Cause,
    id: u64,
    preempt: Option<PreemptOutcome>,
}

/// An ask shape no node took in this pass: the cause, made once for every
/// ask of the shape, and its id.
pub(super) struct UnfitShape {
    pub(super) id: u64,
    pub(super) cause: Cause,
}

impl PassState {
    /// Notes why `ask` (at `at`: application slot and seq, ask slot and
    /// seq) was not placed, for cause `id`. When its reason holds that
    /// cause already, the pass made no preemption attempt for it, no
    /// record is due and `may_count` (the ask holds no reservation), the
    /// pass is only counted on the ask; else `cause` makes the cause.
    pub(super) fn note(
        &mut self,
        ask: &Ask,
        at: (Slot, u64, Slot, u64),
        id: u64,
        preempt: Option<PreemptOutcome>,
        may_count: bool,
        cause: impl FnOnce(&Self) -> Cause,
    ) {
        if may_count
            && preempt.is_none()
            && ask
                .pending
                .as_deref()
                .is_some_and(|r| r.stamp.repeat(id, self.now_ns, self.records))
        {
            return;
        }
        let cause = cause(self);
        self.reasons.push(Noted {
            at,
            cause,
            id,
            preempt,
        });
    }

    /// [`Self::note`] with the cause at hand.
    pub(super) fn note_cause(
        &mut self,
        ask: &Ask,
        at: (Slot, u64, Slot, u64),
        cause: Cause,
        preempt: Option<PreemptOutcome>,
        may_count: bool,
    ) {
        let id = self.cause_ids.id_of(&cause);
        self.note(ask, at, id, preempt, may_count, |_| cause);
    }
}

/// Per task group of an application, its placeholder allocations still
/// to make: one walk over its asks, made once per application.
pub fn gang_waiting(app: &Application) -> BTreeMap<Arc<str>, u64> {
    let mut out = BTreeMap::new();
    // A stand-in is never a placeholder.
    let whole = app.asks.values().filter_map(AskEntry::whole);
    for a in whole.filter(|a| a.placeholder) {
        *out.entry(a.task_group.clone()).or_insert(0) += a.pending_repeat.max(0) as u64;
    }
    out
}

/// The placeholders of the task group of `ask`, `None` outside a gang.
/// `waiting` is [`gang_waiting`] of `app`.
pub fn gang_counts(
    app: &Application,
    ask: &Ask,
    waiting: &BTreeMap<Arc<str>, u64>,
) -> Option<GangCounts> {
    if ask.task_group.is_empty() {
        return None;
    }
    let group = app.gang.groups.get(&ask.task_group);
    let placed = group.map_or(0, |g| g.placeholders + g.real) as u64;
    let waiting = waiting.get(&ask.task_group).copied().unwrap_or(0);
    Some(GangCounts {
        task_group: ask.task_group.clone(),
        placed,
        total: placed.saturating_add(waiting),
    })
}

/// Whether `ask` is a real (not placeholder) member of a task group.
pub(super) fn is_gang_member(ask: &Ask) -> bool {
    !ask.placeholder && !ask.task_group.is_empty()
}

/// The gang cause of a real member `ask` of `app`, `None` when it has none.
/// `tried_ns` is when a pass last tried the ask: the timeout is told
/// until a pass tries it after the timeout fired.
fn gang_cause(
    app: &Application,
    ask: &Ask,
    waiting: &BTreeMap<Arc<str>, u64>,
    tried_ns: i64,
) -> Option<Cause> {
    let g = gang_counts(app, ask, waiting)?;
    if ask.placeholder {
        return None;
    }
    if let Some((at_ns, outcome)) = app.gang.timed_out {
        if tried_ns > at_ns {
            return None;
        }
        return Some(Cause::GangTimeout {
            gang: g,
            at_ns,
            outcome,
        });
    }
    if g.total > g.placed {
        Some(Cause::GangPlaceholders(g))
    } else if app.gang.placeholders > 0 {
        Some(Cause::GangReplacement(g))
    } else {
        None
    }
}

impl Partition {
    /// The running slot `app` waits for: a queue on its path at its
    /// `maxapplications` (it is not counted as running), or its user or
    /// group at theirs (held by the pass's admission check).
    pub fn app_held(&self, app: &Application) -> Option<Cause> {
        if !app.counted_active {
            if let Some((q, limit)) = self
                .queues
                .app_limits(app.queue)
                .into_iter()
                .find(|(q, max)| self.queues.get(*q).active_apps >= *max)
            {
                return Some(Cause::AppSlot {
                    scope: Scope::Queue,
                    name: Arc::from(""),
                    queue: self.queues.get(q).path.clone(),
                    limit,
                });
            }
        }
        if self.ugm.admission_active() && self.ugm.held.contains(&app.seq) {
            if let Some(h) = self.ugm.explain_held(app) {
                return Some(Cause::AppSlot {
                    scope: h.scope,
                    name: h.name,
                    queue: self.queues.get(h.queue).path.clone(),
                    limit: h.limit,
                });
            }
        }
        None
    }

    /// Why `ask` of `app` waits where no pass decides: its application
    /// waits for a running slot, or it is a real gang member waiting for
    /// its task group's placeholders, for their replacement, or told of
    /// the placeholder timeout. `None`: the pass's cause stands.
    /// `waiting` is [`gang_waiting`] of `app` (empty when `ask` has no
    /// task group); `tried_ns` when a pass last tried the ask (0: never).
    pub fn held_cause(
        &self,
        app: &Application,
        ask: &Ask,
        waiting: &BTreeMap<Arc<str>, u64>,
        tried_ns: i64,
    ) -> Option<Cause> {
        self.app_held(app)
            .or_else(|| gang_cause(app, ask, waiting, tried_ns))
    }

    /// The queue on the ask's path (leaf first) that lacks room for it:
    /// the type, the amount asked and free. A max of zero for the type
    /// means the queue does not accept it.
    pub(super) fn queue_cause(&self, leaf: QueueId, ask: &Ask) -> Cause {
        let mut cur = Some(leaf);
        while let Some(q) = cur {
            let queue = self.queues.get(q);
            if let Some(max) = &queue.max {
                for (t, want) in ask.resource.iter() {
                    let Some(m) = max.lookup(t) else { continue };
                    let free = m.saturating_sub(queue.allocated.get(t)).max(0);
                    if want <= 0 || want <= free {
                        continue;
                    }
                    if m <= 0 {
                        return Cause::ResourceType {
                            scope: Scope::Queue,
                            queue: queue.path.clone(),
                            resource: t,
                        };
                    }
                    return Cause::QueueHeadroom {
                        queue: queue.path.clone(),
                        resource: t,
                        asked: want,
                        free,
                    };
                }
            }
            cur = queue.parent;
        }
        // The headroom said no but no single queue does: name the leaf.
        let t = ask.resource.iter().next().map_or(0, |(t, _)| t);
        Cause::QueueHeadroom {
            queue: self.queues.get(leaf).path.clone(),
            resource: t,
            asked: ask.resource.get(t),
            free: 0,
        }
    }

    /// The user or group limit the ask is over.
    pub(super) fn limit_cause(&self, app: &Application, ask: &Ask) -> Cause {
        match self.ugm.explain_over(app, &ask.resource) {
            Some(s) => Cause::LimitHeadroom {
                scope: s.scope,
                name: s.name,
                queue: self.queues.get(s.queue).path.clone(),
                resource: s.resource,
                asked: s.asked,
                free: s.free,
            },
            // Over by the pass's own allocations, not yet at the levels.
            None => Cause::LimitHeadroom {
                scope: Scope::User,
                name: Arc::from(app.user.user.as_str()),
                queue: self.queues.get(app.queue).path.clone(),
                resource: 0,
                asked: 0,
                free: 0,
            },
        }
    }

    /// Nodes were tried: their counts, or the type no node of the
    /// partition has at all.
    pub(super) fn nodes_cause(&self, counts: NodeCounts) -> Cause {
        if !self.has_unlimited_node() {
            if let Some((t, _)) = counts
                .shorts()
                .iter()
                .find(|(t, _)| self.total.lookup(*t).is_none_or(|v| v <= 0))
            {
                return Cause::ResourceType {
                    scope: Scope::Partition,
                    queue: Arc::from(""),
                    resource: *t,
                };
            }
        }
        Cause::Nodes(counts)
    }

    /// A node reserved for the ask (the age is kept by the reason).
    pub(super) fn reserved_cause(&self, node: NodeSlot) -> Cause {
        Cause::Reserved {
            node: self.nodes[node].id.clone(),
            since_ns: 0,
        }
    }

    /// How an attempt ended, from the pass's counters before and after it.
    pub(super) fn preempt_outcome(
        &self,
        leaf: QueueId,
        before: &PreemptionCounters,
        after: &PreemptionCounters,
        planned: bool,
    ) -> Option<PreemptOutcome> {
        if planned {
            return Some(PreemptOutcome::WaitingForVictims);
        }
        if after.guarantee_check_failed > before.guarantee_check_failed {
            return Some(if self.fenced(leaf) {
                PreemptOutcome::Fence
            } else {
                PreemptOutcome::GuaranteeCheck
            });
        }
        [
            (
                after.rm_refused,
                before.rm_refused,
                PreemptOutcome::RmRefused,
            ),
            (
                after.no_candidate_node,
                before.no_candidate_node,
                PreemptOutcome::NoVictims,
            ),
            (
                after.short_of_resources,
                before.short_of_resources,
                PreemptOutcome::ShortOfResources,
            ),
            (
                after.attempts_exhausted,
                before.attempts_exhausted,
                PreemptOutcome::AttemptsExhausted,
            ),
        ]
        .into_iter()
        .find(|(a, b, _)| a > b)
        .map(|(_, _, o)| o)
    }

    /// Whether a fence on the path from `leaf` up keeps victims out.
    fn fenced(&self, leaf: QueueId) -> bool {
        let mut cur = Some(leaf);
        while let Some(q) = cur {
            let queue = self.queues.get(q);
            if PreemptionPolicy::of(&queue.properties) == PreemptionPolicy::Fence {
                return true;
            }
            cur = queue.parent;
        }
        false
    }

    /// The pass ends: each noted ask gets its reason; an ask holding a
    /// reservation, which the reserved pass tried, gets "reserved". An ask
    /// whose cause changed, or stayed a minute, gets a REQUEST record in
    /// `records` (when that type is wanted).
    pub(super) fn apply_reasons(
        &mut self,
        noted: &mut Vec<Noted>,
        now_ns: i64,
        records: &mut Vec<si::EventRecord>,
    ) {
        let wanted = self
            .timeouts
            .events
            .allows(si::event_record::Type::Request as i32);
        let nodes = self.nodes.len();
        // The placeholders of the last gang application seen.
        let mut gang: Option<(u64, BTreeMap<Arc<str>, u64>)> = None;
        for n in noted.drain(..) {
            let (app_slot, app_seq, ask_slot, ask_seq) = n.at;
            let mut cause = n.cause;
            // The id of the cause the pass found; 0 when the reason is
            // written with another (held, reserved): such an ask is never
            // only counted.
            let mut id = n.id;
            // A gang member the pass tried may still wait for its group's
            // placeholders: the held cause wins, as the snapshot shows.
            if let Some((app, ask)) = self
                .apps
                .at(app_slot)
                .filter(|a| a.seq == app_seq)
                .and_then(|a| Some((a, a.asks.whole_at(ask_slot).filter(|k| k.seq == ask_seq)?)))
                .filter(|(_, ask)| is_gang_member(ask))
            {
                if gang.as_ref().is_none_or(|(seq, _)| *seq != app_seq) {
                    gang = Some((app_seq, gang_waiting(app)));
                }
                if let Some((_, waiting)) = &gang {
                    if let Some(held) = self.held_cause(app, ask, waiting, now_ns) {
                        cause = held;
                        id = 0;
                    }
                }
            }
            let Some(app) = self.apps.try_at_mut(app_slot).filter(|a| a.seq == app_seq) else {
                continue;
            };
            let Some(ask) = app.asks.whole_at_mut(ask_slot).filter(|a| a.seq == ask_seq) else {
                continue;
            };
            // An ask holding a node waits for room there, whatever the
            // regular search found on the other nodes.
            if !self.reservations.is_empty()
                && !matches!(cause, Cause::Reserved { .. })
                && !cause.is_held()
            {
                let me = ReservedAsk {
                    app: app.id.clone(),
                    key: ask.key.clone(),
                };
                if let Some(node) = self.reservations.nodes_of(&me).first() {
                    cause = Cause::Reserved {
                        node: self.nodes[*node].id.clone(),
                        since_ns: now_ns,
                    };
                }
            }
            if matches!(cause, Cause::Reserved { .. }) {
                // Its age is kept by an update: never only counted.
                id = 0;
            }
            let changed = set_reason(ask, cause, n.preempt, now_ns);
            if wanted {
                record_reason(ask, &app.id, changed, nodes, now_ns, records);
            }
            if let Some(r) = ask.pending.as_deref() {
                r.stamp.written(id, r.recorded_ns);
            }
        }
        if self.reservations.is_empty() {
            return;
        }
        for (node, r) in self.reservations.iter() {
            let Some(app) = self.apps.get_mut(&r.app) else {
                continue;
            };
            // A reserved ask is waiting: whole.
            let Some(ask) = app.asks.whole_mut(&r.key) else {
                continue;
            };
            let node = self.nodes[node].id.clone();
            // Noted by this pass already (it reserved the node now).
            let fresh = ask.pending.as_ref().is_some_and(|p| {
                p.at_ns == now_ns
                    && matches!(&p.cause, Cause::Reserved { node: n, .. } if *n == node)
            });
            if !fresh {
                set_reason(
                    ask,
                    Cause::Reserved {
                        node,
                        since_ns: now_ns,
                    },
                    None,
                    now_ns,
                );
                if let Some(r) = ask.pending.as_deref() {
                    r.stamp.written(0, r.recorded_ns);
                }
            }
        }
    }
}

/// Replaces an ask's reason (its box is made once, at its first wait).
/// Returns whether the cause changed.
pub(super) fn set_reason(
    ask: &mut Ask,
    cause: Cause,
    preempt: Option<PreemptOutcome>,
    now_ns: i64,
) -> bool {
    match &mut ask.pending {
        Some(r) => {
            // The passes that only counted come first.
            r.settle();
            r.update(cause, preempt, now_ns)
        }
        None => {
            let mut r = PendingReason::new(cause, now_ns);
            if let Some(p) = preempt {
                r.preemption = Some((now_ns, p));
            }
            ask.pending = Some(crate::scheduler::objects::ask::StampedReason::new(r));
            true
        }
    }
}

/// The REQUEST record of an ask's reason, when one is due: at once on a
/// change, else once a minute. Its message is the reason's line.
pub(super) fn record_reason(
    ask: &mut Ask,
    app: &str,
    changed: bool,
    nodes: usize,
    now_ns: i64,
    records: &mut Vec<si::EventRecord>,
) {
    let Some(r) = ask.pending.as_deref_mut() else {
        return;
    };
    if !r.record_due(changed, now_ns) {
        return;
    }
    let mut message = r.cause.message(nodes);
    if let Some((_, outcome)) = r.preemption.filter(|(at, _)| *at == now_ns) {
        message.push_str("; preemption: ");
        message.push_str(outcome.as_str());
    }
    records.push(crate::events::record(
        si::event_record::Type::Request,
        &ask.key,
        app,
        crate::events::REASON_PENDING,
        format!("Request '{}' waits: {message}", ask.key),
    ));
}
