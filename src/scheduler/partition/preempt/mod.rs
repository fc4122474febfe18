//! Preemption: a partition takes resources back from running allocations
//! for a request that has a claim to them. Three kinds, one book:
//!
//! - [`guarantee`]: a request in a queue below its guaranteed resource
//!   (`shared/spec/policy/preemption.md` 2-11);
//! - [`required`]: a request pinned to one node that does not fit there
//!   (12);
//! - [`quota`]: a queue above its max once its quota delay has passed
//!   (13; the v1.9 rules of `si-v1.9-delta.md` 5, run by [`quota_run`]).
//!
//! This module is the book they share ([`PreemptionBook`]: the marks of
//! the requests, the victims in flight and what they count as
//! `preempting`, the counters) and the commit every kind ends in: victims
//! marked, released to the RM with `PREEMPTED_BY_SCHEDULER`, and for the
//! first two the node reserved for the preemptor.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::trace::PreemptCause;
use super::*;
use crate::scheduler::objects::allocs::AllocSlot;
// snapshot.rs reads the queue properties through these names.
pub use crate::scheduler::policies::{
    delay_of, go_duration_string, PreemptionPolicy, DEFAULT_DELAY,
};

mod guarantee;
#[cfg(test)]
mod guarantee_index_tests;
#[cfg(test)]
mod guarantee_oracle;
#[cfg(test)]
mod guarantee_tests;
pub mod quota;
pub mod quota_run;
mod required;
#[cfg(test)]
mod required_tests;
mod snap;

pub(crate) use required::RequiredStep;
pub(crate) use required::ReservedRequired;

/// Minimum spacing of two attempts of one request (spec 3 step 5).
pub const ATTEMPT_SPACING: Duration = Duration::from_secs(15);
/// Attempts per leaf queue per pass (spec 2.3).
pub const ATTEMPTS_PER_LEAF: u32 = 10;

/// Per-request preemption state (spec 3 steps 2 and 5).
#[derive(Debug, Clone, Copy, Default)]
pub struct AskMark {
    /// A successful attempt happened (permanent, spec 10.5).
    pub triggered: bool,
    /// The last time the preconditions passed.
    pub checked: Option<Instant>,
    /// Required-node preemption: the last failure event (at most one per
    /// 15 s, spec 15).
    pub required_failed: Option<Instant>,
    /// Required-node preemption: the last time the RM refused the node
    /// (the next check waits 15 s).
    pub required_refused: Option<Instant>,
}

/// Counters of the partition's preemption, exported as the
/// `yunikorn_scheduler_preemption_*` metrics (docs/preemption.md).
/// `attempts` is the sum of the five outcomes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PreemptionCounters {
    /// Attempts that passed the preconditions.
    pub attempts: u64,
    /// Attempts that released victims.
    pub successes: u64,
    /// Victims released.
    pub victims: u64,
    /// Attempts stopped by step 1 (spec 5): no potential victim, or
    /// preempting cannot bring the ask queue within its guarantee
    /// ("Preemption queue guarantees check failed").
    pub guarantee_check_failed: u64,
    /// Attempts that found no node worth asking the RM about.
    pub no_candidate_node: u64,
    /// Attempts whose every node check the RM refused.
    pub rm_refused: u64,
    /// Attempts whose final victim list would free too little (spec 10.1,
    /// 10.2: "Preemption helped but short of resources").
    pub short_of_resources: u64,
    /// Requests that passed the other preconditions but found their leaf's
    /// 10 attempts of the pass used ("Preemption max attempts exhausted";
    /// not attempts).
    pub attempts_exhausted: u64,
}

impl PreemptionCounters {
    fn add(&mut self, o: &PreemptionCounters) {
        self.attempts += o.attempts;
        self.successes += o.successes;
        self.victims += o.victims;
        self.guarantee_check_failed += o.guarantee_check_failed;
        self.no_candidate_node += o.no_candidate_node;
        self.rm_refused += o.rm_refused;
        self.short_of_resources += o.short_of_resources;
        self.attempts_exhausted += o.attempts_exhausted;
    }
}

/// The partition's preemption bookkeeping.
#[derive(Debug, Default)]
pub struct PreemptionBook {
    /// `preemption.enabled` as configured; `None` = absent (off in the
    /// v0.12 edition, on in the v1.8 edition).
    pub configured: Option<bool>,
    /// Requests that preempted or were checked, by (application, key).
    pub asks: FastMap<(Arc<str>, Arc<str>), AskMark>,
    /// Victims released and not yet confirmed: UUID -> leaf queue and
    /// the resources counted in `preempting`.
    pub victims: FastMap<crate::scheduler::alloc_uuid::AllocUuid, (QueueId, Resource)>,
    /// Resources of the victims in flight, per queue (leaf and ancestors).
    pub preempting: FastMap<QueueId, Resource>,
    /// Counters.
    pub counters: PreemptionCounters,
    /// Quota-change preemption (quota.rs).
    pub quota: quota::QuotaBook,
    /// Unique per partition made: the metrics tell a partition made anew
    /// (counters from zero) from the one it replaces.
    pub instance: u64,
}

/// A fresh [`PreemptionBook::instance`].
pub fn next_instance() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

impl PreemptionBook {
    /// Whether `uuid` is a victim in flight.
    pub fn is_victim(&self, uuid: &crate::scheduler::alloc_uuid::AllocUuid) -> bool {
        !self.victims.is_empty() && self.victims.contains_key(uuid)
    }

    /// A victim left (the RM confirmed, or it went another way): its
    /// resources stop counting as preempting.
    fn forget_victim(&mut self, tree: &QueueTree, uuid: &crate::scheduler::alloc_uuid::AllocUuid) {
        let Some((q, res)) = self.victims.remove(uuid) else {
            return;
        };
        let mut at = Some(q);
        while let Some(id) = at {
            if let Some(p) = self.preempting.get_mut(&id) {
                p.sub_clamped_assign(&res);
                if p.is_zero() {
                    self.preempting.remove(&id);
                }
            }
            at = tree.get(id).parent;
        }
    }
}

/// What one attempt decided, committed by [`Partition::commit_preemption`].
pub(crate) struct PreemptionPlan {
    app: Arc<str>,
    key: Arc<str>,
    node: NodeSlot,
    victims: Vec<AllocSlot>,
}

/// Why an attempt was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Trigger {
    /// T1: the ask does not fit the queue's headroom (nodes not tried).
    QueueBound,
    /// T2: the ask fits, no node took it (every node tried).
    NodeBound,
}

impl Partition {
    /// Marks `a` (of leaf `leaf`) a victim in flight: counted in
    /// `preempting` up the tree until the RM confirms. A placeholder
    /// leaves its group's free set (spec 11.6): it is neither swapped for a
    /// real allocation nor released again by the placeholder timeout.
    pub(in crate::scheduler::partition) fn mark_victim(&mut self, a: &Allocation, leaf: QueueId) {
        self.preempt
            .victims
            .insert(a.uuid.clone(), (leaf, a.resource.clone()));
        let mut at = Some(leaf);
        while let Some(id) = at {
            self.preempt
                .preempting
                .entry(id)
                .or_default()
                .add_assign(&a.resource);
            at = self.queues.get(id).parent;
        }
        if a.placeholder {
            if let Some(app) = self.apps.get_mut(a.app()) {
                app.gang.take_free(a.task_group(), &a.uuid);
            }
            self.sync_holder(a.app());
        }
    }

    /// Marks the allocation at `slot` (of leaf `leaf`) a victim, records
    /// the REQUEST event `event` on it (spec 15) and returns its release:
    /// `PREEMPTED_BY_SCHEDULER` with `message`. Every kind of preemption
    /// tells the RM of its victims in this one shape.
    pub(in crate::scheduler::partition) fn release_victim(
        &mut self,
        slot: AllocSlot,
        leaf: QueueId,
        event: &str,
        message: &str,
        out: &mut Outcomes,
    ) -> si::AllocationRelease {
        let a = self.allocations.at(slot).clone();
        self.mark_victim(&a, leaf);
        out.event(crate::events::record(
            si::event_record::Type::Request,
            &a.key,
            a.app(),
            "Preempted",
            event.to_string(),
        ));
        si::AllocationRelease {
            partition_name: self.name.clone(),
            application_id: a.app().to_string(),
            uuid: a.uuid.to_string(),
            termination_type: si::TerminationType::PreemptedByScheduler as i32,
            message: message.to_string(),
        }
    }

    /// Spec 10.4 and 12.6: releases `victims` for the preemptor ask `key`
    /// of `app` in one response (each release saying `message`, each
    /// victim's event naming the preemptor and its queue), counts the
    /// success and flags the ask.
    pub(in crate::scheduler::partition) fn release_victims_for(
        &mut self,
        app: &Arc<str>,
        key: &Arc<str>,
        victims: &[AllocSlot],
        message: &str,
        cause: PreemptCause<'_>,
        out: &mut Outcomes,
    ) {
        if self.tracing() {
            self.trace_preemption(Some((app.as_ref(), key.as_ref())), victims, cause, out);
        }
        let event = {
            let ask_queue = self
                .apps
                .get(app)
                .map(|a| self.queues.get(a.queue).path.to_string())
                .unwrap_or_default();
            format!("Preempted by {key} from application {app} in {ask_queue}")
        };
        let mut released = Vec::with_capacity(victims.len());
        for slot in victims {
            let leaf = self.allocations.at(*slot).queue;
            released.push(self.release_victim(*slot, leaf, &event, message, out));
        }
        self.preempt.counters.successes += 1;
        self.preempt.counters.victims += victims.len() as u64;
        self.preempt
            .asks
            .entry((app.clone(), key.clone()))
            .or_default()
            .triggered = true;
        out.new_allocation_message(si::AllocationResponse {
            released,
            ..Default::default()
        });
    }

    /// Spec 10.3-10.6: marks the victims, releases them to the RM with
    /// `PREEMPTED_BY_SCHEDULER`, flags the ask and reserves the node.
    pub(crate) fn commit_preemption(&mut self, plan: PreemptionPlan, out: &mut Outcomes) {
        let message = format!(
            "preempting allocations to free up resources to run ask: {}",
            plan.key
        );
        self.release_victims_for(
            &plan.app,
            &plan.key,
            &plan.victims,
            &message,
            PreemptCause::Guarantee,
            out,
        );
        let me = ReservedAsk {
            app: plan.app,
            key: plan.key,
        };
        self.reservations.cancel_ask(&me);
        if self.reservations.on_node(plan.node).is_none() {
            let now = self.clock.now();
            self.reservations.reserve(plan.node, me, now);
        }
    }

    /// Applies what the pass's attempts changed: the check times.
    pub(in crate::scheduler::partition) fn preemption_pass_done(
        &mut self,
        pass: &mut PassState,
        now: Instant,
    ) {
        let attempts: u64 = pass.preempt_attempts.values().map(|v| u64::from(*v)).sum();
        self.preempt.counters.attempts += attempts;
        self.preempt
            .counters
            .add(&std::mem::take(&mut pass.preempt_counts));
        for id in pass.preempt_checked.drain(..) {
            self.preempt.asks.entry(id).or_default().checked = Some(now);
        }
    }

    /// A victim's allocation is gone: it stops counting as preempting.
    pub(crate) fn preemption_released(&mut self, uuid: &crate::scheduler::alloc_uuid::AllocUuid) {
        if self.preempt.is_victim(uuid) {
            self.preempt.forget_victim(&self.queues, uuid);
        }
    }

    /// Forgets victims whose allocation left by a path that bypasses
    /// [`Self::preemption_released`] (a gang swap of a placeholder victim):
    /// their resources stop counting as preempting. Only runs while
    /// victims are in flight.
    pub(crate) fn preemption_sweep(&mut self) {
        let gone: Vec<crate::scheduler::alloc_uuid::AllocUuid> = self
            .preempt
            .victims
            .keys()
            .filter(|u| !self.allocations.contains_key(u))
            .cloned()
            .collect();
        for u in gone {
            self.preempt.forget_victim(&self.queues, &u);
        }
    }

    /// Forgets the marks of a request that left.
    pub(crate) fn preemption_ask_gone(&mut self, app: &str, key: &str) {
        if !self.preempt.asks.is_empty() {
            self.preempt.asks.remove(&(Arc::from(app), Arc::from(key)));
        }
    }

    /// Forgets the marks of every request of an application that leaves
    /// with its asks (termination does not remove them one by one).
    pub(crate) fn preemption_app_gone(&mut self, app: &Application) {
        if self.preempt.asks.is_empty() {
            return;
        }
        for key in app.asks.keys() {
            self.preempt.asks.remove(&(app.id.clone(), key.clone()));
        }
    }
}
