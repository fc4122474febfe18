//! Quota-change preemption as YuniKorn v1.9 does it
//! (`shared/spec/si-v1.9-delta.md` 5): once a configured queue uses more
//! than its max and its `quota.preemption.delay` (v1.8:
//! `preemption.quota.delay`) has passed since it was armed, allocations in
//! that queue (a leaf, or the leaves below a parent, each taking a floored
//! share) are released to the RM with `PREEMPTED_BY_SCHEDULER`.
//!
//! Opt-in twice: the partition's `preemption.quotapreemptionenabled` and
//! a non-zero delay on the queue. No RM check is made (the victims free a
//! queue's quota, not a node). Victims join the guarantee preemption's
//! book ([`super::PreemptionBook`]): their resources count as `preempting`
//! until the RM confirms, so no later step picks them again or counts them
//! as usage.
//!
//! This file holds the queue states: arming at a reload (5.2), arming when
//! the RM grows a queue's usage (5.3) and the timer's walk (5.4). What one
//! run takes is in `quota_run.rs`. Where sicore differs from the reference
//! (docs/preemption.md): armed queues are looked at in every pass and the
//! core wakes at the earliest start time rather than on a 1-second tick;
//! usage is `allocated − preempting` throughout, so victims in flight are
//! never counted twice; a max set where there was none arms like a
//! lowering (quirk V7's recommendation).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::*;
use crate::scheduler::policies::parse_go_duration;

/// Queue property: how long after a lowering of the max quota-change
/// preemption starts; absent, invalid or zero = off for the queue. The
/// YuniKorn v1.9 name.
pub const PROP_QUOTA_DELAY: &str = "quota.preemption.delay";
/// The v1.8 name of [`PROP_QUOTA_DELAY`], still read for every RM (a v1.8
/// k8shim's configuration uses it); the v1.9 name wins when both are set.
pub const PROP_QUOTA_DELAY_V18: &str = "preemption.quota.delay";
/// Event message of a quota-change victim (spec 15), before the path.
pub const QUOTA_EVENT_PREFIX: &str = "Preempted by Quota change enforcement process in ";
/// Release message of a quota-change victim (spec 18), before the path.
pub const QUOTA_RELEASE_PREFIX: &str =
    "preempting allocations to enforce new max quota for queue : ";

/// A queue's quota delay: `quota.preemption.delay`, else the v1.8
/// `preemption.quota.delay`; a Go duration, zero when absent or invalid.
pub fn quota_delay_of(props: &BTreeMap<String, String>) -> Duration {
    props
        .get(PROP_QUOTA_DELAY)
        .or_else(|| props.get(PROP_QUOTA_DELAY_V18))
        .and_then(|v| parse_go_duration(v))
        .unwrap_or(Duration::ZERO)
}

/// Counters of quota-change preemption.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QuotaCounters {
    /// Runs started (a parent's run counts once).
    pub runs: u64,
    /// Victims released.
    pub victims: u64,
}

/// The partition's quota-change state.
#[derive(Debug, Default)]
pub struct QuotaBook {
    /// `preemption.quotapreemptionenabled` (absent = off).
    pub enabled: bool,
    /// Armed queues by path: when their preemption may start.
    pub armed: BTreeMap<Arc<str>, Instant>,
    /// Counters.
    pub counters: QuotaCounters,
}

/// A configured queue's max and delay before a reload, to compare with
/// after it.
pub(in crate::scheduler::partition) type QuotaBefore = Vec<(Arc<str>, Option<Resource>, Duration)>;

/// How a reload changed a max, with an absent max or type unlimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MaxChange {
    Same,
    /// Tighter or equal in every type, tighter in one.
    Lowered,
    /// Looser or equal in every type, looser in one.
    Raised,
    /// Some types tighter, some looser.
    Mixed,
}

fn max_change(old: Option<&Resource>, new: &Resource) -> MaxChange {
    let Some(old) = old.filter(|m| !m.is_zero()) else {
        return MaxChange::Lowered;
    };
    let (mut lower, mut higher) = (false, false);
    let types = old.iter().chain(new.iter()).map(|(t, _)| t);
    for t in types {
        // None is unlimited, above every value.
        match (old.lookup(t), new.lookup(t)) {
            (Some(o), Some(n)) if n < o => lower = true,
            (Some(o), Some(n)) if n > o => higher = true,
            (None, Some(_)) => lower = true,
            (Some(_), None) => higher = true,
            _ => {}
        }
    }
    match (lower, higher) {
        (false, false) => MaxChange::Same,
        (true, false) => MaxChange::Lowered,
        (false, true) => MaxChange::Raised,
        (true, true) => MaxChange::Mixed,
    }
}

/// The new start time of a queue after a reload (v1.9 delta 5.2). `armed`
/// is the current one; `within` says whether the queue's usage is at or
/// under the new max; the result replaces `armed`.
pub(crate) fn rearm(
    old_max: Option<&Resource>,
    new_max: Option<&Resource>,
    (old_delay, new_delay): (Duration, Duration),
    armed: Option<Instant>,
    within: bool,
    now: Instant,
) -> Option<Instant> {
    // A zero delay is not looked at: an armed queue keeps its time.
    if new_delay.is_zero() {
        return armed;
    }
    // No max any more, or usage within the new one: disarmed.
    let new_max = new_max.filter(|m| !m.is_zero())?;
    if within {
        return None;
    }
    // A changed delay moves the start time by the difference, possibly
    // into the past.
    let moved = |at: Instant| {
        if new_delay >= old_delay {
            at + (new_delay - old_delay)
        } else {
            at.checked_sub(old_delay - new_delay).unwrap_or(now)
        }
    };
    match (max_change(old_max, new_max), armed) {
        (MaxChange::Same, None) if old_delay.is_zero() => Some(now + new_delay),
        (MaxChange::Lowered, None) => Some(now + new_delay),
        (MaxChange::Same | MaxChange::Lowered | MaxChange::Raised, Some(at)) => Some(moved(at)),
        (_, armed) => armed,
    }
}

/// Whether `used` ≤ `max` in every type of the max (a missing type of
/// `used` is zero).
pub(super) fn within_max(used: &Resource, max: &Resource) -> bool {
    max.iter().all(|(t, m)| used.get(t) <= m)
}

/// used − max over the types of the max, positive values only.
pub(super) fn excess_over(used: &Resource, max: &Resource) -> Resource {
    let mut r = Resource::new();
    for (t, m) in max.iter() {
        let over = used.get(t).saturating_sub(m);
        if over > 0 {
            r.set(t, over);
        }
    }
    r
}

impl Partition {
    /// What [`Self::quota_after_reload`] compares with: every configured
    /// queue's max and delay, read before the tree changes.
    pub(in crate::scheduler::partition) fn quota_before_reload(&self) -> QuotaBefore {
        self.queues
            .iter()
            .filter(|(_, q)| q.managed)
            .map(|(_, q)| (q.path.clone(), q.max.clone(), quota_delay_of(&q.properties)))
            .collect()
    }

    /// Arms, shifts or disarms each configured queue after a reload (spec
    /// 13.2); queues that are no longer configured are disarmed.
    pub(in crate::scheduler::partition) fn quota_after_reload(&mut self, before: QuotaBefore) {
        let now = self.clock.now();
        let old: FastMap<&str, (Option<&Resource>, Duration)> = before
            .iter()
            .map(|(p, m, d)| (&**p, (m.as_ref(), *d)))
            .collect();
        let mut armed = BTreeMap::new();
        for (id, q) in self.queues.iter() {
            if !q.managed || q.parent.is_none() {
                continue; // root's max is the partition's size
            }
            let (old_max, old_delay) = old.get(&*q.path).copied().unwrap_or((None, Duration::ZERO));
            let current = self.preempt.quota.armed.get(&q.path).copied();
            let new_delay = quota_delay_of(&q.properties);
            if q.parent.is_some_and(|p| {
                !self
                    .queues
                    .get(p)
                    .properties
                    .contains_key(PROP_QUOTA_DELAY_V18)
            }) && q.properties.contains_key(PROP_QUOTA_DELAY_V18)
                && !q.properties.contains_key(PROP_QUOTA_DELAY)
            {
                log::warn!(
                    "queue {}: property {PROP_QUOTA_DELAY_V18} is the YuniKorn v1.8 name, which v1.9 no longer reads; use {PROP_QUOTA_DELAY}",
                    q.path
                );
            }
            let within = q
                .max
                .as_ref()
                .is_none_or(|m| within_max(&self.quota_used(id), m));
            let delays = (old_delay, new_delay);
            if let Some(at) = rearm(old_max, q.max.as_ref(), delays, current, within, now) {
                armed.insert(q.path.clone(), at);
            }
        }
        self.preempt.quota.armed = armed;
    }

    /// When the core must run a pass for quota-change preemption: the
    /// earliest start of an armed queue, while the switch is on.
    pub fn quota_wake(&self) -> Option<Instant> {
        // Without nodes the core skips the partition's pass (and there is
        // nothing allocated to take back).
        if !self.preempt.quota.enabled || self.nodes.is_empty() {
            return None;
        }
        self.preempt.quota.armed.values().min().copied()
    }

    /// The start of every pass: stamps the clock hour the pass's
    /// allocations are born in, and runs [`Self::quota_pass`] when a queue
    /// is armed. Returns the number of runs.
    pub(in crate::scheduler::partition) fn quota_step(&mut self, out: &mut Outcomes) -> usize {
        self.stamp_hour();
        if self.preempt.quota.armed.is_empty() {
            return 0;
        }
        let now = self.clock.now();
        self.quota_pass(now, out)
    }

    /// The quota step of a pass (v1.9 delta 5.4): each armed queue whose
    /// start time has passed, parents before their children, runs once and
    /// is disarmed; a queue back at or under its max is disarmed; a queue
    /// below one that ran in this pass waits for the next pass, which sees
    /// the victims in flight. Returns the number of runs.
    // Out of line: rare, and a profile of the run (docs/preemption-cost.md)
    // starts its count here.
    #[inline(never)]
    pub(in crate::scheduler::partition) fn quota_pass(
        &mut self,
        now: Instant,
        out: &mut Outcomes,
    ) -> usize {
        if !self.preempt.quota.enabled || self.preempt.quota.armed.is_empty() {
            return 0;
        }
        // Parents first: a shorter path cannot be below a longer one.
        let mut due: Vec<(usize, Arc<str>, Instant)> = self
            .preempt
            .quota
            .armed
            .iter()
            .map(|(p, at)| (p.split('.').count(), p.clone(), *at))
            .collect();
        due.sort();
        let mut ran: Vec<QueueId> = Vec::new();
        let mut runs = 0;
        for (_, path, at) in due {
            let Some(id) = self.queues.lookup(&path).filter(|id| {
                let q = self.queues.get(*id);
                q.managed && q.parent.is_some()
            }) else {
                self.preempt.quota.armed.remove(&path);
                continue;
            };
            let Some(max) = self.queues.get(id).max.clone() else {
                self.preempt.quota.armed.remove(&path);
                continue;
            };
            if within_max(&self.quota_used(id), &max) {
                self.preempt.quota.armed.remove(&path);
                continue;
            }
            // A run below an ancestor that ran in this pass waits for the
            // next pass, which sees the ancestor's victims in flight.
            if now < at || ran.iter().any(|r| self.queues.is_ancestor_or_self(*r, id)) {
                continue;
            }
            ran.push(id);
            runs += 1;
            // A run disarms its queue whatever it took (5.1, 5.7): only a
            // reload or growth the RM drives arms it again.
            self.preempt.quota.armed.remove(&path);
            self.quota_run(id, &max, out);
        }
        self.preempt.quota.counters.runs += runs as u64;
        runs
    }

    /// RM-driven growth (v1.9 delta 5.3): the RM placed, recovered or
    /// resized an allocation in leaf `leaf`. Each configured queue on the
    /// path below the root that is unarmed, has a delay and a max, and now
    /// uses more than the max is armed at now + its delay.
    pub(in crate::scheduler::partition) fn quota_arm_on_growth(&mut self, leaf: QueueId) {
        if !self.preempt.quota.enabled {
            return;
        }
        let now = self.clock.now();
        let mut at = Some(leaf);
        while let Some(id) = at {
            let q = self.queues.get(id);
            at = q.parent;
            if q.parent.is_none() || !q.managed || self.preempt.quota.armed.contains_key(&q.path) {
                continue;
            }
            let delay = quota_delay_of(&q.properties);
            let Some(max) = q.max.as_ref().filter(|m| !m.is_zero()) else {
                continue;
            };
            if delay.is_zero() || within_max(&self.quota_used(id), max) {
                continue;
            }
            log::info!(
                "queue {}: usage above its max after a change by the RM, quota preemption armed",
                q.path
            );
            let path = q.path.clone();
            self.preempt.quota.armed.insert(path, now + delay);
        }
    }

    /// Stamps the clock hour new allocations are born in (the victim
    /// order's age key, 5.5c).
    pub(in crate::scheduler::partition) fn stamp_hour(&mut self) {
        let hours = self.clock.unix_nanos().max(0) / 3_600_000_000_000;
        self.allocations
            .set_hour(u32::try_from(hours).unwrap_or(u32::MAX));
    }

    /// used = allocated − preempting.
    pub(super) fn quota_used(&self, q: QueueId) -> Resource {
        let mut used = self.queues.get(q).allocated.clone();
        if let Some(p) = self.preempt.preempting.get(&q) {
            used.sub_clamped_assign(p);
        }
        used
    }
}

#[cfg(test)]
#[path = "quota_tests.rs"]
mod step_tests;

#[cfg(test)]
mod tests {
    use super::*;

    fn r(pairs: &[(&str, i64)]) -> Resource {
        Resource::from_pairs(pairs.iter().copied()).unwrap()
    }

    /// Spec 16 Q19-5.
    #[test]
    fn arming_follows_the_v19_rules() {
        let now = Instant::now();
        let s = Duration::from_secs;
        let (m10, m20) = (r(&[("vcore", 10)]), r(&[("vcore", 20)]));
        let mixed = r(&[("vcore", 30), ("memory", 5)]);
        let over =
            |old, new, d: (u64, u64), armed| rearm(old, new, (s(d.0), s(d.1)), armed, false, now);
        // Lowered: armed at now + delay; within the new max: not armed.
        assert_eq!(over(Some(&m20), Some(&m10), (0, 5), None), Some(now + s(5)));
        assert_eq!(
            rearm(Some(&m20), Some(&m10), (s(5), s(5)), None, true, now),
            None
        );
        // A first max counts as a lowering (V7's recommendation).
        assert_eq!(over(None, Some(&m10), (5, 5), None), Some(now + s(5)));
        // Raised or mixed: not armed.
        assert_eq!(over(Some(&m10), Some(&m20), (5, 5), None), None);
        assert_eq!(over(Some(&m20), Some(&mixed), (5, 5), None), None);
        // Unchanged max, delay 0 -> 5: armed; delay unchanged: not.
        assert_eq!(over(Some(&m10), Some(&m10), (0, 5), None), Some(now + s(5)));
        assert_eq!(over(Some(&m10), Some(&m10), (5, 5), None), None);
        // Armed, delay changed: moved by the difference, either way, also
        // when the max was raised; a mixed change leaves it.
        let at = now + s(5);
        assert_eq!(
            over(Some(&m10), Some(&m10), (5, 8), Some(at)),
            Some(at + s(3))
        );
        assert_eq!(
            over(Some(&m20), Some(&m10), (5, 2), Some(at)),
            Some(now + s(2))
        );
        assert_eq!(
            over(Some(&m10), Some(&m20), (5, 10), Some(at)),
            Some(at + s(5))
        );
        assert_eq!(over(Some(&m20), Some(&mixed), (5, 10), Some(at)), Some(at));
        // Armed, lowered again with the same delay: kept.
        assert_eq!(over(Some(&m20), Some(&m10), (5, 5), Some(at)), Some(at));
        // Armed, raised, usage now within: disarmed.
        assert_eq!(
            rearm(Some(&m10), Some(&m20), (s(5), s(5)), Some(at), true, now),
            None
        );
        // The max removed: disarmed.
        assert_eq!(over(Some(&m10), None, (5, 5), Some(at)), None);
        // Delay 0 (or removed): an armed queue keeps its time, nothing arms.
        assert_eq!(over(Some(&m10), None, (5, 0), Some(at)), Some(at));
        assert_eq!(over(Some(&m20), Some(&m10), (0, 0), None), None);
    }

    #[test]
    fn excess_and_within_max_use_the_types_of_the_max() {
        let used = r(&[("vcore", 25), ("memory", 100)]);
        assert_eq!(
            excess_over(&used, &r(&[("vcore", 10)])),
            r(&[("vcore", 15)])
        );
        assert!(!within_max(&used, &r(&[("vcore", 10)])));
        assert!(within_max(&used, &r(&[("vcore", 25)])));
        assert!(within_max(&used, &r(&[("gpu", 1)])));
    }
}
