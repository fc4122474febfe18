//! Required-node preemption (`shared/spec/policy/preemption.md` 12): an
//! ask pinned to one node (a DaemonSet pod, tag
//! `yunikorn.apache.org/requiredNode`) that does not fit there evicts
//! allocations on that node.
//!
//! Behind the same `preemption.enabled` switch as guarantee preemption
//! (issue 23's decision; v1.8 has no switch for it). The path:
//!
//! - regular step ([`Partition::required_node_step`]): the ask is tried
//!   on its node only; any reservation of another, non-required-node ask
//!   on that node is cancelled; when it does not fit it reserves the node
//!   at once (no reservation delay);
//! - reserved step ([`Partition::reserved_required_node`]): a reservation
//!   whose ask fits its headrooms but not the node's free resource, and
//!   which has not preempted yet, chooses victims on the node (12.3-12.5),
//!   asks the RM (unlike the reference, which asks nothing: v1.8
//!   `PreemptionPredicates`, v0.12 `Predicates{allocate: false}`), and
//!   releases them with `PREEMPTED_BY_SCHEDULER`. The ask then waits on its
//!   reservation until the node has room.
//!
//! Also here: the stale-reservation rule of guarantee preemption (7.1), by
//! which a preemptor may take a node reserved for a lower-priority ask.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::*;
use crate::scheduler::objects::allocs::AllocSlot;
use crate::scheduler::objects::application::TAG_REQUIRED_NODE;
use crate::scheduler::resync::ResyncBarrier;

/// Reason of the REQUEST event on a required-node ask that found no
/// victim (summary.md 3.3: proposed `NoPreemptionVictim`).
pub const REASON_NO_VICTIM: &str = "NoPreemptionVictim";
/// The reservation wait timeout of the stale-reservation rule (spec 18).
const RESERVATION_WAIT: Duration = Duration::from_secs(60 * 60);

/// What the regular step decided for a required-node ask, committed by
/// [`Partition::commit_required_step`].
pub(crate) struct RequiredStep {
    app_slot: Slot,
    ask_slot: Slot,
    app: Arc<str>,
    key: Arc<str>,
    node: NodeSlot,
    /// Another ask's (non-required-node) reservation on the node goes first.
    cancel: bool,
    /// Allocate now; else reserve the node.
    allocate: bool,
}

impl RequiredStep {
    /// Whether the step allocates (else it reserves).
    pub(crate) fn allocates(&self) -> bool {
        self.allocate
    }
}

/// What the reserved step does with one reservation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReservedRequired {
    /// Not a required-node case (or the ask fits): try it as any reservation.
    Ordinary,
    /// The ask waits on its node: nothing else to try this pass.
    Waits,
    /// Victims were released for it.
    Preempted,
}

impl Partition {
    /// Whether the reservation `r` holds a required-node ask.
    fn holds_required_ask(&self, r: &ReservedAsk) -> bool {
        self.apps
            .get(&r.app)
            .and_then(|a| a.asks.get(&r.key))
            .is_some_and(AskEntry::has_required_node)
    }

    /// Spec 12.1, the regular step of a required-node ask while preemption
    /// is on. `None`: nothing to do (node unknown, held by another
    /// required-node ask, never big enough, or this ask already waits on it).
    pub(in crate::scheduler::partition) fn required_node_step(
        &self,
        app_slot: Slot,
        app: &Application,
        ask_slot: Slot,
        ask: &Ask,
        cb: Option<&ResyncBarrier>,
        events: &mut Vec<si::EventRecord>,
    ) -> Option<RequiredStep> {
        let required = ask.required_node.as_deref()?;
        let node = self.nodes.get(required)?;
        let slot = node.key().slot();
        let held = self.reservations.on_node(slot);
        let mine = held.is_some_and(|r| r.app == app.id && r.key == ask.key);
        if held.is_some_and(|r| !mine && self.holds_required_ask(r)) {
            // One reservation per node: a second required-node ask waits
            // until the first one's reservation goes (v1.7+ shares nodes).
            return None;
        }
        let step = |allocate| RequiredStep {
            app_slot,
            ask_slot,
            app: app.id.clone(),
            key: ask.key.clone(),
            node: slot,
            cancel: held.is_some() && !mine,
            allocate,
        };
        if !node.fits_capacity(&ask.resource) {
            // Could never fit: reserving would only block the node.
            return None;
        }
        if self.try_node(&app.id, ask, node, cb, true, events) {
            return Some(step(true));
        }
        // Waiting on it already, or (draining) its reservation would be stale.
        (!mine && node.schedulable).then(|| step(false))
    }

    /// Commits a [`RequiredStep`]: cancels the other ask's reservation,
    /// then allocates or reserves.
    pub(crate) fn commit_required_step(
        &mut self,
        step: RequiredStep,
        barrier: Option<&ResyncBarrier>,
        out: &mut Outcomes,
    ) {
        if step.cancel {
            if let Some(other) = self.reservations.cancel_node(step.node) {
                log::info!(
                    "reservation of ask {} of {} on node {} cancelled for required-node ask {} of {}",
                    other.key,
                    other.app,
                    self.nodes[step.node].id,
                    step.key,
                    step.app
                );
            }
        }
        if step.allocate {
            self.commit(step.app_slot, step.ask_slot, step.node, barrier, out);
        } else {
            self.reservations.reserve(
                step.node,
                ReservedAsk {
                    app: step.app,
                    key: step.key,
                },
                self.clock.now(),
            );
        }
    }

    /// Spec 12.1 (reserved step) and 12.3-12.6 for the reservation `r` on
    /// node `slot`, whose ask fits its headrooms.
    pub(in crate::scheduler::partition) fn reserved_required_node(
        &mut self,
        slot: NodeSlot,
        r: &ReservedAsk,
        cb: Option<&ResyncBarrier>,
        now: Instant,
        out: &mut Outcomes,
    ) -> ReservedRequired {
        let id = (r.app.clone(), r.key.clone());
        let mark = self.preempt.asks.get(&id).copied().unwrap_or_default();
        let (victims, refused, failure) = {
            // A reserved ask is waiting: whole.
            let Some(ask) = self.apps.get(&r.app).and_then(|a| a.asks.whole(&r.key)) else {
                return ReservedRequired::Ordinary;
            };
            let node = &self.nodes[slot];
            if ask.required_node.as_deref() != Some(&*node.id) || node.fits_available(&ask.resource)
            {
                return ReservedRequired::Ordinary;
            }
            if mark.triggered {
                return ReservedRequired::Waits; // victims in flight
            }
            if mark
                .required_refused
                .is_some_and(|t| now.saturating_duration_since(t) < ATTEMPT_SPACING)
            {
                return ReservedRequired::Waits; // the RM refused the node lately
            }
            let victims = self.required_node_victims(ask, node);
            if !victims.is_empty() {
                // The check below may ask the RM (see `ResyncBarrier`).
                if let Some(b) = cb {
                    b.wake(out);
                }
            }
            let mut events = Vec::new();
            let refused = !victims.is_empty()
                && !self.required_node_check(&r.app, ask, node, &victims, cb, &mut events);
            out.events
                .extend(events.into_iter().map(crate::events::Record::from));
            // At most one failure event per 15 s per ask (spec 15, 18).
            let failure = (victims.is_empty() || refused)
                .then(|| {
                    log::debug!(
                        "ask {} of {}: no fit on required node {}, preemption does not help",
                        ask.key,
                        r.app,
                        node.id
                    );
                    mark.required_failed
                        .is_none_or(|t| now.saturating_duration_since(t) >= ATTEMPT_SPACING)
                        .then(|| {
                            crate::events::record(
                                si::event_record::Type::Request,
                                &ask.key,
                                &r.app,
                                REASON_NO_VICTIM,
                                format!(
                                    "Unschedulable request '{}' with required node '{}', no preemption victim found",
                                    ask.key, node.id
                                ),
                            )
                        })
                });
            (victims, refused, failure)
        };
        self.preempt.counters.attempts += 1;
        if let Some(event) = failure {
            let m = self.preempt.asks.entry(id).or_default();
            if let Some(event) = event {
                m.required_failed = Some(now);
                out.event(event);
            }
            if refused {
                m.required_refused = Some(now);
            }
            return ReservedRequired::Waits;
        }
        self.commit_required_preemption(r, &victims, out);
        ReservedRequired::Preempted
    }

    /// Spec 12.3-12.5: the victims on `node` for `ask`, in release order;
    /// empty when they cannot make room.
    fn required_node_victims(&self, ask: &Ask, node: &Node) -> Vec<AllocSlot> {
        let gang = &self.gang;
        let mut candidates: Vec<AllocSlot> = node
            .allocations
            .slots()
            .filter(|s| {
                // A swap's real allocation in flight belongs to no
                // application yet (allocs.rs): not a candidate.
                if !self.allocations.is_indexed(*s) {
                    return false;
                }
                let a = self.allocations.at(*s);
                !a.tags.contains_key(TAG_REQUIRED_NODE)
                    && a.priority <= ask.priority
                    && !self.preempt.is_victim(&a.uuid)
                    && a.resource.shares_positive_type(&ask.resource)
                    && !(a.placeholder && gang.placeholder_leaving(&a.uuid))
            })
            .collect();
        // 12.4: every allocation is of the ordinary class (no
        // allowPreemptSelf/originator yet); lower priority first, then
        // newest first. Entry order is unique, so the reference's last
        // key (the smaller resource) never decides.
        candidates.sort_by_key(|s| {
            (
                self.allocations.at(*s).priority,
                std::cmp::Reverse(self.allocations.born(*s)),
            )
        });
        // 12.5: take while the total is short of the ask in some type.
        let mut total = Resource::new();
        let mut victims = Vec::new();
        for s in candidates {
            if ask.resource.fits_in(&total) {
                break;
            }
            total.add_assign(&self.allocations.at(s).resource);
            victims.push(s);
        }
        total.add_assign(node.available());
        if victims.is_empty() || !ask.resource.fits_in(&total) {
            return Vec::new();
        }
        victims
    }

    /// The RM's check of the node once every victim is gone: v1.8
    /// `PreemptionPredicates` with the start index on the last victim (the
    /// list is the one section 12 chose: all of it goes), else
    /// `Predicates{allocate: false}` (spec 14.2); no barrier, no check.
    fn required_node_check(
        &self,
        app: &str,
        ask: &Ask,
        node: &Node,
        victims: &[AllocSlot],
        cb: Option<&ResyncBarrier>,
        events: &mut Vec<si::EventRecord>,
    ) -> bool {
        let Some(b) = cb else {
            return true;
        };
        let keys: Vec<String> = victims
            .iter()
            .map(|s| self.allocations.at(*s).uuid.to_string())
            .collect();
        let last = (keys.len() - 1) as i32;
        match b.preemption_predicates(&ask.key, &node.id, &keys, last) {
            Some(answer) => answer == Some(last),
            None => self.try_node(app, ask, node, cb, false, events),
        }
    }

    /// Spec 12.6: marks the victims, releases them in one response, one
    /// REQUEST event per victim, and flags the ask.
    fn commit_required_preemption(
        &mut self,
        r: &ReservedAsk,
        victims: &[AllocSlot],
        out: &mut Outcomes,
    ) {
        let message = format!(
            "preempting allocations to free up resources to run daemon set ask: {}",
            r.key
        );
        let node = victims
            .first()
            .map(|s| self.allocations.at(*s).node.clone())
            .unwrap_or_default();
        let cause = PreemptCause::RequiredNode(&node);
        self.release_victims_for(&r.app, &r.key, victims, &message, cause, out);
    }

    /// Spec 7.1 as YuniKorn v1.9 has it (delta 6.3, quirk Q4 fixed):
    /// whether guarantee preemption for `ask` may cancel the reservation
    /// `r` of another ask on `node`. Only an ask of lower priority, without
    /// a required node, that never preempted, whose reservation is older
    /// than the reservation wait (60 min). One reservation per node in
    /// sicore, so the node is then free of other reservations.
    pub(in crate::scheduler::partition) fn stale_for_preemptor(
        &self,
        node: NodeSlot,
        r: &ReservedAsk,
        ask: &Ask,
        now: Instant,
    ) -> bool {
        let Some(held) = self.apps.get(&r.app).and_then(|a| a.asks.get(&r.key)) else {
            return false;
        };
        if held.has_required_node() || held.priority() >= ask.priority {
            return false;
        }
        let triggered = !self.preempt.asks.is_empty()
            && self
                .preempt
                .asks
                .get(&(r.app.clone(), r.key.clone()))
                .is_some_and(|m| m.triggered);
        !triggered && self.reservation_older_than_wait(node, now)
    }

    /// Whether the reservation on `node` was made more than the
    /// reservation wait (60 min) before `now`.
    fn reservation_older_than_wait(&self, node: NodeSlot, now: Instant) -> bool {
        self.reservations
            .made_at(node)
            .is_some_and(|at| now.saturating_duration_since(at) > RESERVATION_WAIT)
    }

    /// YuniKorn v1.9 (delta 7.1): a reservation whose ask cannot be
    /// served now (the queue's or the user's headroom) is cancelled once
    /// it is older than the reservation wait, unless the ask needs that
    /// node; the ask stays pending and may reserve again later.
    pub(in crate::scheduler::partition) fn expire_reservation(
        &mut self,
        node: NodeSlot,
        r: &ReservedAsk,
        now: Instant,
    ) {
        let pinned = self
            .apps
            .get(&r.app)
            .and_then(|a| a.asks.get(&r.key))
            .is_none_or(AskEntry::has_required_node);
        if pinned || !self.reservation_older_than_wait(node, now) {
            return;
        }
        self.reservations.cancel_node(node);
        log::info!(
            "reservation of ask {} of {} on node {} cancelled: its wait expired while the ask does not fit the headroom",
            r.key,
            r.app,
            self.nodes[node].id
        );
    }

    /// Cancels the stale reservations guarantee attempts of this pass
    /// found (spec 7.1: cancelled even when the attempt then fails), each
    /// only if the same ask still holds the node.
    pub(in crate::scheduler::partition) fn cancel_stale_reservations(
        &mut self,
        stale: &mut Vec<(NodeSlot, ReservedAsk)>,
    ) {
        for (node, r) in stale.drain(..) {
            if self.reservations.on_node(node) == Some(&r) {
                self.reservations.cancel_node(node);
                log::info!(
                    "reservation of ask {} of {} on node {} cancelled to consider the node for preemption",
                    r.key,
                    r.app,
                    self.nodes[node].id
                );
            }
        }
    }
}
